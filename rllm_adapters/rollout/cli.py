"""``python -m rllm_adapters.rollout``: roll a policy out on envs and write trajectories.

Also the engine and agent flags the leaderboard CLI shares (:func:`add_model_arguments`).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from rllm_adapters.backends.base import SamplingParams
from rllm_adapters.rollout.config import ENV_BACKENDS, RolloutConfig, RolloutStats, family_sampling
from rllm_adapters.rollout.loop import rollout_stream

__all__ = [
    "add_model_arguments",
    "agent_kwargs_from_args",
    "engine_kwargs_from_args",
    "main",
    "single_agent_env_ids",
]


def single_agent_env_ids() -> list[str]:
    """Every registered single-agent id of ``rllm_envs`` (the registry table)."""
    import rllm_envs

    return [entry.id for entry in rllm_envs.ENVS]


def _iter_envs(spec: str) -> Iterator[str]:
    if spec == "all":
        yield from single_agent_env_ids()
    else:
        yield from (s.strip() for s in spec.split(",") if s.strip())


def add_model_arguments(parser: argparse.ArgumentParser, *, max_model_len: int | None) -> None:
    """Engine, agent and transcript flags shared by the rollout and leaderboard CLIs."""
    group = parser.add_argument_group("engine and agent")
    group.add_argument(
        "--dtype",
        default=None,
        help="weights dtype (float32, bfloat16, ...; default: the checkpoint's own)",
    )
    group.add_argument(
        "--max-model-len", type=int, default=max_model_len, help="context length (tokens)"
    )
    group.add_argument(
        "--agent", default=None, help="agent name or module:Class (default: the env's own)"
    )
    prompt = group.add_mutually_exclusive_group()
    prompt.add_argument("--system-prompt", default=None, help="replace the agent's system prompt")
    prompt.add_argument(
        "--no-system-prompt", action="store_true", help="send no system message at all"
    )
    group.add_argument(
        "--transcripts",
        action="store_true",
        help="also write readable transcripts (messages, replies, rewards) as JSONL",
    )


def engine_kwargs_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The backend settings the flags of :func:`add_model_arguments` ask for."""
    kwargs: dict[str, Any] = {}
    if args.dtype is not None:
        kwargs["dtype"] = args.dtype
    if args.max_model_len is not None:
        kwargs["max_model_len"] = args.max_model_len
    return kwargs


def agent_kwargs_from_args(args: argparse.Namespace) -> dict[str, Any]:
    """The agent settings the flags of :func:`add_model_arguments` ask for."""
    if args.no_system_prompt:
        return {"system_prompt": None}
    if args.system_prompt is not None:
        return {"system_prompt": args.system_prompt}
    return {}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rllm_adapters.rollout",
        description="Roll out a policy on rllm-envs environments and write trajectories.",
    )
    parser.add_argument("--env", default="all", help="env id, comma-separated ids, or 'all'")
    parser.add_argument(
        "--backend", default="transformers", choices=["transformers", "vllm", "openai"]
    )
    parser.add_argument(
        "--model", default="tiny", help="HF folder or hub id; 'tiny' builds the tiny model"
    )
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server (openai)")
    parser.add_argument("--api", default="completions", choices=["completions", "chat"])
    parser.add_argument("--num-tasks", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        help="tokens per model turn (default: what the env family's agent asks for)",
    )
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-turns", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-backend", default="thread", choices=list(ENV_BACKENDS))
    parser.add_argument("--out", default="rollouts", help="output folder")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    parser.add_argument("--no-progress", action="store_true")
    add_model_arguments(parser, max_model_len=4096)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    from rllm_adapters.backends import make_policy
    from rllm_envs.error import DependencyNotInstalled

    args = _parser().parse_args(argv)
    policy = make_policy(
        args.backend,
        args.model,
        base_url=args.base_url,
        api=args.api,
        seed=args.seed,
        **engine_kwargs_from_args(args),
    )
    config = RolloutConfig(
        num_envs=args.num_envs,
        group_size=args.group_size,
        sampling=SamplingParams(temperature=args.temperature, seed=args.seed),
        env_backend=args.env_backend,
        seed=args.seed,
        max_turns=args.max_turns,
        agent_kwargs=agent_kwargs_from_args(args),
        progress=not args.no_progress,
    )
    out = Path(args.out)
    try:
        for env_id in _iter_envs(args.env):
            stem = env_id.replace("/", "_")
            path = out / f"{stem}.{args.format}"
            transcripts = out / f"{stem}.transcripts.jsonl" if args.transcripts else None
            stats = RolloutStats()
            env_config = replace(
                config,
                sampling=family_sampling(
                    env_id,
                    config.sampling,
                    max_tokens=args.max_tokens,
                    agent=args.agent,
                    agent_kwargs=config.agent_kwargs,
                ),
            )
            try:
                asyncio.run(_write_env(env_id, policy, env_config, args, stats, path, transcripts))
            except DependencyNotInstalled as e:
                print(f"[rollout] skipped {env_id}: {e}", file=sys.stderr)
                path.unlink(missing_ok=True)
                continue
            tok_s = stats.tokens_per_second if math.isfinite(stats.tokens_per_second) else 0.0
            print(
                f"[rollout] {env_id}: {stats.episodes} episodes, {stats.turns} turns, "
                f"{stats.completion_tokens} tokens ({tok_s:.0f} tok/s), mean reward "
                f"{stats.mean_reward:.3f}, correct {stats.correct}/{stats.episodes} -> {path}"
            )
    finally:
        policy.close()
    return 0


async def _write_env(
    env_id: str,
    policy: Any,
    config: RolloutConfig,
    args: argparse.Namespace,
    stats: RolloutStats,
    path: Path,
    transcripts: Path | None,
) -> None:
    from contextlib import ExitStack

    from rllm_adapters.rollout.transcripts import TranscriptWriter
    from rllm_agents.writers import TrajectoryWriter

    with ExitStack() as stack:
        writer = stack.enter_context(TrajectoryWriter(path))
        readable = stack.enter_context(TranscriptWriter(transcripts)) if transcripts else None
        async for trajectory in rollout_stream(
            env_id, policy, config, num_tasks=args.num_tasks, agent=args.agent, stats=stats
        ):
            writer.write(trajectory)
            if readable is not None:
                readable.write(trajectory)
