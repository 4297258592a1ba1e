"""The main job on the embedded defaults: a leaderboard of scripted policies over every env.

Run with ``bash scripts/main.sh`` (sets up, then ``python -m benchmarks.main``). Writes one run
directory per policy and ``leaderboard.md`` + ``index.html`` under ``--out`` (default
``runs/main``). No network, no GPU.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console

import rllm_envs
from benchmarks.leaderboard.report import write_report
from benchmarks.leaderboard.runner import RunConfig, run


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.main``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", default=[], help="env ids (default: all)")
    parser.add_argument("--policies", nargs="*", default=["oracle", "random"])
    parser.add_argument("--n-tasks", type=int, default=10, help="evaluation tasks per env")
    parser.add_argument("-k", type=int, default=1, help="samples per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/main"))
    args = parser.parse_args(argv)

    console = Console()
    env_ids = args.envs or [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()]
    console.print(
        f"[bold]rllm-envs main job[/]: {len(env_ids)} envs x {args.policies} x "
        f"{args.n_tasks} tasks x k={args.k}"
    )
    start = time.perf_counter()
    run_dirs = []
    for policy in args.policies:
        config = RunConfig(
            policy=policy, envs=env_ids, n_tasks=args.n_tasks, k=args.k, seed=args.seed
        )
        summary = run(config, args.out)
        console.print(f"{policy}: overall pass@1 {summary['overall_pass@1']:.3f}")
        run_dirs.append(args.out / config.name)
    md, page = write_report(run_dirs, args.out)
    console.print(md.read_text(encoding="utf-8"))
    console.print(f"wrote {page} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
