"""The main job on the embedded defaults: oracle and random policies over every env.

Run with ``bash scripts/main.sh`` (sets up, then ``python -m benchmarks.main``). Prints a table
and writes ``runs/main/results.json``. No network, no GPU.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

import rllm_envs
from benchmarks.evaluate import POLICIES, as_records, evaluate_all


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.main``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="*", default=None, help="env ids (default: all)")
    parser.add_argument("--policies", nargs="*", default=sorted(POLICIES))
    parser.add_argument("--episodes", type=int, default=20, help="episodes per env and policy")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/main"))
    args = parser.parse_args(argv)

    env_ids = args.envs or list(rllm_envs.list_envs())
    console = Console()
    console.print(
        f"[bold]rllm-envs main job[/]: {len(env_ids)} envs x {args.policies} x "
        f"{args.episodes} episodes"
    )
    start = time.perf_counter()
    results = evaluate_all(env_ids, args.policies, episodes=args.episodes, seed=args.seed)
    table = Table(title="Scripted policies on the embedded defaults")
    for column in ("env", "policy", "success", "mean reward", "mean turns", "wall s"):
        table.add_column(column, justify="left" if column in ("env", "policy") else "right")
    for r in results:
        table.add_row(
            r.env_id,
            r.policy,
            f"{r.success_rate:.2f}",
            f"{r.mean_reward:.3f}",
            f"{r.mean_turns:.1f}",
            f"{r.wall_s:.2f}",
        )
    console.print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "rllm_envs_version": rllm_envs.__version__,
        "python": platform.python_version(),
        "episodes": args.episodes,
        "seed": args.seed,
        "results": as_records(results),
    }
    out = args.out / "results.json"
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    console.print(f"wrote {out} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
