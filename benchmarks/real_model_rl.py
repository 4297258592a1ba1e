"""RL that lifts a real model: held-out pass@1 before and after GRPO, with 95% intervals.

One command runs the whole experiment on CPU, offline::

    python -m benchmarks.real_model_rl            # eval base, train, eval trained, write results
    python -m benchmarks.real_model_rl --skip-train   # reuse the run in the config's output_dir
    python -m benchmarks.real_model_rl --config configs/math_smollm2_grpo_fast.yaml lora.r=16

Trailing ``key=value`` arguments override the config (as for ``python -m rllm_adapters.train``).

1. the base model (the config's ``model``) on ``--num-tasks`` held-out tasks
   (:mod:`benchmarks.heldout`: another task universe than training's, greedy, one sample);
2. ``python -m rllm_adapters.train --config CONFIG`` (the trainer stops at the config's
   ``train.max_wall_s``);
3. the trained model (``<output_dir>/final_model``) on the same held-out tasks;
4. ``benchmarks/results/real_model_rl.json`` (both evaluations, the training summary, the
   machine and commit) and the learning curve ``docs/real_model/learning_curve.png``.

``python -m benchmarks.readme`` renders the before/after table in README from the JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "math_smollm2_grpo.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "real_model_rl.json"
CURVE = ROOT / "docs" / "real_model" / "learning_curve.png"


def _evaluate(model: str, config: dict[str, Any], num_tasks: int, out: Path) -> dict[str, Any]:
    env_kwargs = {
        k: v for k, v in (config.get("env_kwargs") or {}).items() if k != "reward_weights"
    }
    rollout = config.get("rollout") or {}
    command = [
        sys.executable,
        "-m",
        "benchmarks.heldout",
        "--model",
        model,
        "--env",
        config["env"],
        "--env-kwargs",
        json.dumps(env_kwargs),
        "--num-tasks",
        str(num_tasks),
        "--max-tokens",
        str(rollout.get("max_tokens", 256)),
        "--engine-kwargs",
        json.dumps(rollout.get("engine_kwargs") or {}),
        "--out",
        str(out),
    ]
    subprocess.run(command, check=True, cwd=ROOT)
    return json.loads(out.read_text(encoding="utf-8"))


def _training_summary(output_dir: Path) -> dict[str, Any]:
    rows = [
        json.loads(line)
        for line in (output_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    if not rows:
        return {"iterations": 0}

    stages = sorted({k for r in rows for k in r if k.startswith("perf/") and k.endswith("_s")})
    return {
        "iterations": len(rows),
        "wall_s": rows[-1].get("time_s"),
        # Mean seconds per iteration of each stage (the iterations that ran it).
        "stages_s": {
            k[len("perf/") :]: round(
                sum(float(r[k]) for r in rows if k in r) / sum(1 for r in rows if k in r), 2
            )
            for k in stages
        },
        "episodes": rows[-1].get("episodes"),  # cumulative in the trainer's metrics
        "groups_skipped": sum(int(r.get("batch/groups_skipped", 0) or 0) for r in rows),
        "updates_skipped": sum(int(bool(r.get("batch/update_skipped", 0))) for r in rows),
        "first_rows": rows[:2],
        "last_rows": rows[-2:],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.real_model_rl``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.real_model_rl", description=__doc__)
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--num-tasks", type=int, default=200)
    parser.add_argument("--skip-train", action="store_true", help="reuse the existing run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("overrides", nargs="*", help="`key=value` overrides of the config")
    args = parser.parse_args(argv)
    from rllm_adapters.trainer.config import read_config_mapping

    config = read_config_mapping(args.config, args.overrides)
    output_dir = ROOT / config["train"]["output_dir"]
    evals = output_dir / "heldout"
    evals.mkdir(parents=True, exist_ok=True)
    started = time.time()
    base = _evaluate(str(config["model"]), config, args.num_tasks, evals / "base.json")
    if not args.skip_train:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "rllm_adapters.train",
                "--config",
                str(args.config),
                *args.overrides,
            ],
            check=True,
            cwd=ROOT,
        )
    trained = _evaluate(
        str(output_dir / "final_model"), config, args.num_tasks, evals / "trained.json"
    )
    CURVE.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rllm_adapters.train",
            "--plot",
            str(output_dir / "metrics.jsonl"),
            "--out",
            str(CURVE),
            "--title",
            f"GRPO, {config['model']} on {config['env']} (CPU)",
        ],
        check=False,
        cwd=ROOT,
    )
    result = {
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": git_commit(),
        "config": str(args.config),
        "overrides": list(args.overrides),
        "command": "python -m benchmarks.real_model_rl " + " ".join(argv or sys.argv[1:]),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_average_1m": round(os.getloadavg()[0], 2),
        },
        "experiment_s": round(time.time() - started, 1),
        "base": base,
        "trained": trained,
        "training": _training_summary(output_dir),
        "curve": str(CURVE.relative_to(ROOT)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name in ("base", "trained"):
        r = result[name]
        print(f"{name}: pass@1 {r['pass_at_1']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
