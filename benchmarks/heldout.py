r"""Held-out evaluation: pass@1 of a model on task indices no training run draws from.

Training runs draw procedural tasks from the universe of ``task_seed`` 0 (the env default);
evaluation here uses another universe (``--task-seed``, default 1_000_003) and its first
``--num-tasks`` indices, so no evaluated task index was trained on (in a small task space the
same *problem text* can still occur in both: arithmetic on small numbers has few distinct
problems)::

    python -m benchmarks.heldout --model smollm2-135m-instruct --env rllm/Math-v0 \
        --env-kwargs '{"difficulty": 1, "families": ["arithmetic"]}' --num-tasks 200 \
        --out runs/heldout/base.json

Decoding is greedy (temperature 0), one sample per task; pass@1 comes with a 95% Wilson
interval. Format (the env's ``format`` reward component, where it has one) is reported next to
correctness.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["wilson_interval", "evaluate", "main"]

#: The universe of evaluation tasks (training uses the env's default ``task_seed``, 0).
HELDOUT_TASK_SEED = 1_000_003


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def evaluate(
    model: str,
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    num_tasks: int = 200,
    task_seed: int = HELDOUT_TASK_SEED,
    max_tokens: int = 256,
    backend: str = "vllm",
    engine_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Greedy pass@1 of ``model`` on the first ``num_tasks`` tasks of ``task_seed``."""
    from adapters.backends import make_policy
    from adapters.backends.base import SamplingParams
    from adapters.rollout import RolloutConfig, rollout
    from adapters.rollout.config import family_sampling

    kwargs = {**dict(env_kwargs or {}), "task_seed": task_seed}
    policy = make_policy(backend, model, **dict(engine_kwargs or {}))
    config = RolloutConfig(
        num_envs=32,
        group_size=1,
        # The family's stop strings (e.g. FrozenLake's ``</action>``), as in training.
        sampling=family_sampling(
            env_id,
            SamplingParams(temperature=0.0),
            max_tokens=max_tokens,
            agent_kwargs=agent_kwargs,
        ),
        agent_kwargs=dict(agent_kwargs or {}),
        progress=False,
    )
    start = time.perf_counter()
    try:
        trajectories = rollout(
            env_id, policy, config, tasks=list(range(num_tasks)), env_kwargs=kwargs
        )
    finally:
        close = getattr(policy, "close", None)
        if close is not None:
            close()
    elapsed = time.perf_counter() - start
    correct = sum(t.is_correct for t in trajectories)
    formats = [
        float(t.steps[-1].info.get("reward_components", {}).get("format", math.nan))
        for t in trajectories
        if t.steps
    ]
    formats = [f for f in formats if not math.isnan(f)]
    low, high = wilson_interval(correct, len(trajectories))
    examples = [
        {
            "task_id": t.steps[0].info.get("task_id") if t.steps else None,
            "response": t.steps[-1].response if t.steps else "",
            "correct": t.is_correct,
        }
        for t in trajectories[:5]
    ]
    return {
        "model": str(model),
        "env": env_id,
        "env_kwargs": kwargs,
        "num_tasks": len(trajectories),
        "correct": correct,
        "pass_at_1": correct / max(len(trajectories), 1),
        "ci95": [low, high],
        "format_rate": sum(formats) / len(formats) if formats else None,
        "max_tokens": max_tokens,
        "seconds": round(elapsed, 1),
        "examples": examples,
    }


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.heldout``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.heldout", description=__doc__)
    parser.add_argument("--model", required=True, help="model name, folder or checkpoint")
    parser.add_argument("--env", default="rllm/Math-v0")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object of env kwargs")
    parser.add_argument("--num-tasks", type=int, default=200)
    parser.add_argument("--task-seed", type=int, default=HELDOUT_TASK_SEED)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--backend", default="vllm")
    parser.add_argument("--engine-kwargs", default="{}", help="JSON object for the engine")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    result = evaluate(
        args.model,
        args.env,
        json.loads(args.env_kwargs),
        num_tasks=args.num_tasks,
        task_seed=args.task_seed,
        max_tokens=args.max_tokens,
        backend=args.backend,
        engine_kwargs=json.loads(args.engine_kwargs),
    )
    result["machine"] = {"python": platform.python_version(), "platform": platform.platform()}
    result["commit"] = _commit()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    low, high = result["ci95"]
    print(
        f"{args.env} {result['num_tasks']} held-out tasks: pass@1 {result['pass_at_1']:.3f} "
        f"[{low:.3f}, {high:.3f}], format {result['format_rate']}, {result['seconds']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
