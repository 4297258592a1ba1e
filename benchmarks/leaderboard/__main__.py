"""Command line of the leaderboard: ``run`` a policy, ``report`` several runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from benchmarks.leaderboard.report import write_report
from benchmarks.leaderboard.runner import RunConfig, run
from rllm_envs.error import RllmEnvsError


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.leaderboard``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.leaderboard")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="evaluate one policy on every (or the chosen) env")
    p.add_argument(
        "--policy",
        required=True,
        help="oracle | random | vllm:<model> | hf:<path> | openai:<base url>:<model>",
    )
    p.add_argument("--temperature", type=float, default=0.6, help="model policies")
    p.add_argument("--max-tokens", type=int, default=256, help="per model turn")
    p.add_argument("--concurrency", type=int, default=16, help="episodes in flight")
    p.add_argument("--envs", nargs="*", default=[], help="env ids (default: all)")
    p.add_argument("--n-tasks", type=int, default=20)
    p.add_argument("-k", type=int, default=1, help="samples per task (pass@k)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--env-kwargs", type=json.loads, default={}, help='JSON {"env_id": {...}}')
    p.add_argument("--name", default="", help="run name (default: from the policy)")
    p.add_argument("--out", type=Path, default=Path("runs/leaderboard"))
    r = sub.add_parser("report", help="merge runs into leaderboard.md and index.html")
    r.add_argument("runs", nargs="+", type=Path, help="run directories")
    r.add_argument("--out", type=Path, default=Path("runs/leaderboard"))
    args = parser.parse_args(argv)
    console = Console()
    try:
        if args.command == "run":
            config = RunConfig(
                policy=args.policy,
                envs=args.envs,
                n_tasks=args.n_tasks,
                k=args.k,
                seed=args.seed,
                env_kwargs=args.env_kwargs,
                name=args.name,
                policy_kwargs={
                    "temperature": args.temperature,
                    "max_tokens": args.max_tokens,
                    "concurrency": args.concurrency,
                }
                if ":" in args.policy
                else {},
            )
            summary = run(config, args.out)
            console.print_json(json.dumps(summary))
        else:
            md, page = write_report(args.runs, args.out)
            console.print(md.read_text(encoding="utf-8"))
            console.print(f"wrote {md} and {page}")
    except RllmEnvsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
