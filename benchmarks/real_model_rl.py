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

The goal (issue #27): the trained pass@1 at least :data:`GOAL_RATIO` times the base and the
two 95% intervals apart. The file records whether it was met and, either way, what the hour
bought: updates done, seconds per update, the mean seconds of each trainer stage, the wall
time of each phase and the machine's load averages sampled through the experiment.

``python -m benchmarks.readme`` renders the before/after table in README from the JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.provenance import LoadSampler, gpu_names, provenance

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "math_smollm2_grpo.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "real_model_rl.json"
CURVE = ROOT / "docs" / "real_model" / "learning_curve.png"
#: The trained held-out pass@1 must reach this multiple of the base's (and the intervals part).
GOAL_RATIO = 1.5


def goal(base: dict[str, Any], trained: dict[str, Any]) -> dict[str, Any]:
    """Whether the trained pass@1 is ``GOAL_RATIO`` x the base's with the 95% intervals apart."""
    b, t = float(base["pass_at_1"]), float(trained["pass_at_1"])
    ratio = t / b if b > 0 else (float("inf") if t > 0 else 1.0)
    apart = float(trained["ci95"][0]) > float(base["ci95"][1])
    return {
        "ratio_target": GOAL_RATIO,
        "ratio": round(ratio, 3) if ratio != float("inf") else None,
        "ratio_met": ratio >= GOAL_RATIO,
        "intervals_apart": apart,
        "met": ratio >= GOAL_RATIO and apart,
    }


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
        "--backend",
        str(rollout.get("backend", "vllm")),
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
    updates_skipped = sum(int(bool(r.get("batch/update_skipped", 0))) for r in rows)
    updates = len(rows) - updates_skipped
    wall = rows[-1].get("time_s")
    return {
        "iterations": len(rows),
        "updates": updates,
        "wall_s": wall,
        # Wall clock of the training loop (rollouts, scoring, updates, syncs) per update done.
        "seconds_per_update": round(float(wall) / updates, 1) if wall and updates else None,
        # Mean seconds per iteration of each stage (the iterations that ran it).
        "stages_s": {
            k[len("perf/") :]: round(
                sum(float(r[k]) for r in rows if k in r) / sum(1 for r in rows if k in r), 2
            )
            for k in stages
        },
        "episodes": rows[-1].get("episodes"),  # cumulative in the trainer's metrics
        "groups_skipped": sum(int(r.get("batch/groups_skipped", 0) or 0) for r in rows),
        "updates_skipped": updates_skipped,
        # Sampled (temperature) reward and success per iteration: what training saw.
        "reward_curve": [round(float(r.get("rollout/reward", 0.0)), 4) for r in rows],
        "success_curve": [round(float(r.get("rollout/success", 0.0)), 4) for r in rows],
        "length_cut_curve": [round(float(r.get("rollout/length_cut_rate", 0.0)), 4) for r in rows],
        "first_rows": rows[:2],
        "last_rows": rows[-2:],
    }


def _device_label() -> str:
    gpus = gpu_names()
    return gpus[0] if gpus else "CPU"


def curve_path(out: Path) -> Path:
    """The learning curve of the results file ``out``.

    Another file than the committed run's (a short run, a variant) gets its own curve, so it
    never overwrites the committed one.
    """
    return CURVE if out.resolve() == RESULTS else CURVE.with_name(f"{out.stem}.png")


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
    phases: dict[str, float] = {}
    with LoadSampler() as load:
        base = _evaluate(str(config["model"]), config, args.num_tasks, evals / "base.json")
        phases["base_eval_s"] = round(time.time() - started, 1)
        if not args.skip_train:
            mark = time.time()
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
            # The trainer process end to end: engine start, the loop, the final save.
            phases["train_process_s"] = round(time.time() - mark, 1)
        mark = time.time()
        trained = _evaluate(
            str(output_dir / "final_model"), config, args.num_tasks, evals / "trained.json"
        )
        phases["trained_eval_s"] = round(time.time() - mark, 1)
    curve = curve_path(args.out)
    curve.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rllm_adapters.train",
            "--plot",
            str(output_dir / "metrics.jsonl"),
            "--out",
            str(curve),
            "--title",
            f"GRPO, {config['model']} on {config['env']} ({_device_label()})",
        ],
        check=False,
        cwd=ROOT,
    )
    result = {
        **provenance("benchmarks.real_model_rl", argv, load=load),
        "config": str(args.config),
        "overrides": list(args.overrides),
        "experiment_s": round(time.time() - started, 1),
        "phases_s": phases,
        "base": base,
        "trained": trained,
        "goal": goal(base, trained),
        "training": _training_summary(output_dir),
        "curve": str(curve.relative_to(ROOT)),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name in ("base", "trained"):
        r = result[name]
        print(f"{name}: pass@1 {r['pass_at_1']:.3f} [{r['ci95'][0]:.3f}, {r['ci95'][1]:.3f}]")
    print(f"goal: {result['goal']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
