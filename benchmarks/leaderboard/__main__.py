"""Command line of the leaderboard: ``run`` a policy, ``report`` several runs."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
from rich.console import Console

from benchmarks.leaderboard.report import write_report
from benchmarks.leaderboard.runner import LeaderboardConfig, run
from rllm_adapters.rollout.cli import (
    add_model_arguments,
    agent_kwargs_from_args,
    engine_kwargs_from_args,
)
from rllm_envs.error import RllmEnvsError


def math_env_ids() -> list[str]:
    """Registered envs of the math family (entry points in :mod:`rllm_envs.math`).

    Importing :mod:`rllm_envs` registers them.
    """
    return [
        spec.id
        for spec in gym.registry.values()
        if isinstance(spec.entry_point, str) and spec.entry_point.startswith("rllm_envs.math.")
    ]


def with_answer_format(
    env_kwargs: dict[str, dict[str, Any]], answer_format: str | None
) -> dict[str, dict[str, Any]]:
    """``env_kwargs`` with ``answer_format`` set for every math-family env.

    An ``answer_format`` already given in ``env_kwargs`` for an env wins; other envs are
    untouched (their constructors do not take the argument).
    """
    if answer_format is None:
        return env_kwargs
    out = {k: dict(v) for k, v in env_kwargs.items()}
    for env_id in math_env_ids():
        out.setdefault(env_id, {}).setdefault("answer_format", answer_format)
    return out


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
    p.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="per model turn (default: the env family's own limit and stop strings)",
    )
    p.add_argument("--concurrency", type=int, default=16, help="episodes in flight")
    p.add_argument("--envs", nargs="*", default=[], help="env ids (default: all)")
    p.add_argument("--n-tasks", type=int, default=20)
    p.add_argument("-k", type=int, default=1, help="samples per task (pass@k)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--env-kwargs", type=json.loads, default={}, help='JSON {"env_id": {...}}')
    p.add_argument(
        "--answer-format",
        choices=("boxed", "any"),
        default=None,
        help="math envs: answer extraction mode (boxed: strict RL default; any: lenient)",
    )
    p.add_argument(
        "--split",
        choices=("eval", "train"),
        default="eval",
        help="task universe of envs with a task seed (eval: shares nothing with training)",
    )
    p.add_argument("--name", default="", help="run name (default: from the policy)")
    p.add_argument("--out", type=Path, default=Path("runs/leaderboard"))
    add_model_arguments(p, max_model_len=None)
    r = sub.add_parser("report", help="merge runs into leaderboard.md and index.html")
    r.add_argument("runs", nargs="+", type=Path, help="run directories")
    r.add_argument("--out", type=Path, default=Path("runs/leaderboard"))
    args = parser.parse_args(argv)
    console = Console()
    try:
        if args.command == "run":
            model = ":" in args.policy
            if not model and _model_flags_given(args):
                parser.error(f"--{_model_flags_given(args)} applies to model policies only")
            config = LeaderboardConfig(
                policy=args.policy,
                envs=args.envs,
                n_tasks=args.n_tasks,
                k=args.k,
                seed=args.seed,
                env_kwargs=with_answer_format(args.env_kwargs, args.answer_format),
                name=args.name,
                policy_kwargs=_model_kwargs(args) if model else {},
                transcripts=args.transcripts,
                split=args.split,
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


def _model_kwargs(args: argparse.Namespace) -> dict[str, object]:
    kwargs: dict[str, object] = {
        "temperature": args.temperature,
        "max_tokens": args.max_tokens,
        "concurrency": args.concurrency,
    }
    if args.agent is not None:
        kwargs["agent"] = args.agent
    if agent_kwargs_from_args(args):
        kwargs["agent_kwargs"] = agent_kwargs_from_args(args)
    if engine_kwargs_from_args(args):
        kwargs["engine_kwargs"] = engine_kwargs_from_args(args)
    return kwargs


def _model_flags_given(args: argparse.Namespace) -> str | None:
    for flag in ("dtype", "max_model_len", "agent", "system_prompt"):
        if getattr(args, flag) is not None:
            return flag.replace("_", "-")
    if args.no_system_prompt:
        return "no-system-prompt"
    return None


if __name__ == "__main__":
    raise SystemExit(main())
