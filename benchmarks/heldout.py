r"""Held-out evaluation: pass@1 of a model on task indices no training run draws from.

Training runs draw procedural tasks from the training universe (the env default
``task_seed=0``, any seed below :data:`rllm_envs.tasks.EVAL_SEED_START`); evaluation here uses
the evaluation universe (``--task-seed``, default :data:`rllm_envs.tasks.EVAL_TASK_SEED`) and its
first ``--num-tasks`` indices. The two universes share no question (a question belongs to one
by a hash of its text) and Search's worlds share no name, so nothing evaluated here can have
been memorised in training; ``python -m benchmarks.heldout overlap`` measures it::

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
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rllm_envs.tasks import EVAL_TASK_SEED

__all__ = [
    "wilson_interval",
    "evaluate",
    "main",
    "measure_overlap",
    "overlap_report",
    "HELDOUT_TASK_SEED",
]

#: The universe of evaluation tasks (training uses the env's default ``task_seed``, 0).
HELDOUT_TASK_SEED = EVAL_TASK_SEED


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
    from rllm_adapters.backends import make_policy
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.rollout import RolloutConfig, rollout
    from rllm_adapters.rollout.config import family_sampling

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


#: A word of three or more letters that is no LaTeX command: a name, not a value.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_MATH_WORDS = {"sqrt", "frac", "dfrac", "pi", "infty", "cup", "cap", "text"}


def _is_entity(answer: str) -> bool:
    """Whether an answer names something (a word), rather than stating a value."""
    return any(w.lower() not in _MATH_WORDS for w in _WORD.findall(answer))


def _answers(task: Mapping[str, Any]) -> list[str]:
    for key in ("answer", "answers", "target"):
        value = task.get(key)
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value]
        if value is not None:
            return [str(value)]
    return []


def _facts(task: Mapping[str, Any]) -> list[str]:
    """World facts in a task record (ToolUse's table rows; Search's are its passages)."""
    rows = [
        json.dumps(r, sort_keys=True) for t in task.get("tables") or [] for r in t.get("rows", [])
    ]
    return rows


def _sources(env_id: str, kwargs: Mapping[str, Any], seed: int) -> tuple[Any, Any]:
    """The env (closed by the caller) and its task source for ``task_seed=seed``."""
    import gymnasium as gym

    import rllm_envs

    kw = {**kwargs, "task_seed": seed}
    if env_id in rllm_envs.list_multiagent_envs():
        parallel = rllm_envs.make_parallel(env_id, **kw)
        return parallel, parallel.tasks
    env = gym.make(env_id, **kw)
    return env, getattr(env.unwrapped, "tasks")  # noqa: B009 (every rllm env has tasks)


def _takes_task_seed(env_id: str) -> bool:
    import inspect

    import rllm_envs

    cls = rllm_envs.resolve(rllm_envs.env_entry(env_id).entry_point)
    return "task_seed" in inspect.signature(cls.__init__).parameters


def measure_overlap(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    num_tasks: int = 500,
    train_seed: int = 0,
    eval_seed: int = HELDOUT_TASK_SEED,
) -> dict[str, Any]:
    """What the first ``num_tasks`` tasks of the training and evaluation universes share.

    Returns:
        ``{"questions", "keys", "answers", "entity_answers", "facts"}``: each the number of
        distinct items found in both universes (``keys``: the canonical universe keys of the
        questions, :func:`rllm_envs.tasks.question_key` or the family's own, so a
        near-duplicate that differs only in names or order counts; ``facts``: Search passages
        and ToolUse table rows, ``None`` for an env without world facts), next to the distinct
        counts of each side.
        ``entity_answers`` counts only answers that name something (a word of three or more
        letters, not a LaTeX command): a value recurs in any two arithmetic universes, a name
        must not.
    """
    from rllm_envs.tasks import question_text

    sides: list[dict[str, set[str]]] = []
    for seed in (train_seed, eval_seed):
        env, tasks = _sources(env_id, dict(env_kwargs or {}), seed)
        side: dict[str, set[str]] = {
            "questions": set(),
            "keys": set(),
            "answers": set(),
            "facts": set(),
        }
        for i in range(min(num_tasks, len(tasks))):
            task = tasks[i]
            side["questions"].add(question_text(task))
            side["keys"].add(tasks.universe_key(task))
            side["answers"].update(_answers(task))
            side["facts"].update(_facts(task))
        passages = getattr(getattr(env, "unwrapped", env), "retriever", None)
        if passages is not None and hasattr(passages, "passages"):
            side["facts"].update(str(p["text"]) for p in passages.passages)
        env.close()
        sides.append(side)
    train, heldout = sides
    entity = {a for a in train["answers"] & heldout["answers"] if _is_entity(a)}
    has_facts = bool(train["facts"] or heldout["facts"])
    return {
        "env": env_id,
        "env_kwargs": dict(env_kwargs or {}),
        "train_seed": train_seed,
        "eval_seed": eval_seed,
        "num_tasks": num_tasks,
        "distinct": {
            k: [len(train[k]), len(heldout[k])] for k in ("questions", "keys", "answers", "facts")
        },
        "questions": len(train["questions"] & heldout["questions"]),
        "keys": len(train["keys"] & heldout["keys"]),
        "answers": len(train["answers"] & heldout["answers"]),
        "entity_answers": len(entity),
        "facts": len(train["facts"] & heldout["facts"]) if has_facts else None,
    }


def overlap_report(num_tasks: int = 500) -> dict[str, Any]:
    """:func:`measure_overlap` for every registered id (and variant) with a task seed."""
    import rllm_envs

    rows, no_seed = [], []
    for env_id in [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()]:
        if not _takes_task_seed(env_id):
            no_seed.append(env_id)
            continue
        for kwargs in OVERLAP_VARIANTS.get(env_id, ({},)):
            rows.append(measure_overlap(env_id, kwargs, num_tasks=num_tasks))
    return {
        "command": f"python -m benchmarks.heldout overlap --num-tasks {num_tasks}",
        "eval_seed_start": rllm_envs.tasks.EVAL_SEED_START,
        "note": "Counts of distinct questions, canonical question keys (names masked, case and "
        "whitespace folded; Countdown: sorted numbers and target), answers, entity answers "
        "(names, not values) and world facts found both in the first num_tasks tasks of "
        "task_seed 0 and in those of the evaluation seed. Values recur in any two arithmetic "
        "universes; questions, keys, entity answers and facts must not.",
        "envs": rows,
        "without_task_seed": no_seed,
    }


#: Settings measured besides each id's defaults (the hardest and the smallest task spaces).
OVERLAP_VARIANTS: dict[str, tuple[dict[str, Any], ...]] = {
    "rllm/Math-v0": (
        {},
        {"families": ["arithmetic"]},
        {"families": ["word_problem"]},
        {"difficulty": 5},
    ),
    "rllm/Countdown-v0": ({}, {"difficulty": 2}),
    "rllm/ReasoningGym-v0": (
        {},
        {"dataset": "aiw"},
        {"dataset": "coin_flip"},
        {"dataset": "string_insertion"},
    ),
    "rllm/Search-v0": ({}, {"difficulty": 1}, {"difficulty": 5}),
    "rllm/FrozenLake-v0": ({}, {"difficulty": 3}),
}


def _commit() -> str:
    try:
        return subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _overlap_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.heldout overlap",
        description="Measure what the training and evaluation universes share, per env.",
    )
    parser.add_argument("--num-tasks", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/heldout_overlap.json"))
    args = parser.parse_args(argv)
    report = overlap_report(args.num_tasks)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for row in report["envs"]:
        print(
            f"{row['env']} {row['env_kwargs'] or ''}: questions {row['questions']}, keys "
            f"{row['keys']}, answers "
            f"{row['answers']} (entities {row['entity_answers']}), facts {row['facts']}"
        )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.heldout`` (``overlap`` measures the universes)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["overlap"]:
        return _overlap_main(argv[1:])
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
