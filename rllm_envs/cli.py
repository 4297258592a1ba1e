"""The ``rllm-envs`` command: list environments, show a first observation, play in a terminal.

Examples::

    rllm-envs list
    rllm-envs show rllm/FrozenLake-v1 --seed 3
    rllm-envs play rllm/FrozenLake-v1 --seed 3 --kwarg difficulty=2
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import rllm_envs


def _parse_kwargs(pairs: Sequence[str]) -> dict[str, Any]:
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"error: expects --kwarg KEY=VALUE, got {pair!r}")
        try:
            kwargs[key] = json.loads(value)
        except json.JSONDecodeError:
            kwargs[key] = value  # bare strings, e.g. map_name=4x4
    return kwargs


def _cmd_list(args: argparse.Namespace) -> int:
    groups = {
        "Single-agent (Gymnasium)": rllm_envs.list_envs(),
        "Multi-agent (PettingZoo)": rllm_envs.list_multiagent_envs(),
    }
    width = max(len(i) for envs in groups.values() for i in envs)
    for title, envs in groups.items():
        print(f"{title}:")
        for env_id, description in envs.items():
            print(f"  {env_id.ljust(width)}  {description}")
    return 0


def _is_multiagent(env_id: str) -> bool:
    return env_id in rllm_envs.list_multiagent_envs()


def _make(args: argparse.Namespace) -> Any:
    if _is_multiagent(args.env_id):
        return rllm_envs.make_parallel(args.env_id, **_parse_kwargs(args.kwarg))
    return rllm_envs.make(args.env_id, **_parse_kwargs(args.kwarg))


def _reset(env: Any, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    options = None if args.index is None else {"index": args.index}
    return env.reset(seed=args.seed, options=options)


def _cmd_show(args: argparse.Namespace) -> int:
    env = _make(args)
    observation, info = _reset(env, args)
    if _is_multiagent(args.env_id):
        for agent in env.possible_agents:
            print(f"=== {agent} ===\n{observation[agent]}\n")
    else:
        print(observation)
    print("\n--- info ---")
    print(json.dumps(info, indent=2, ensure_ascii=False, default=str))
    env.close()
    return 0


def _play_multiagent(env: Any, args: argparse.Namespace) -> int:
    """Play every acting agent in turn (hot-seat)."""
    observations, infos = _reset(env, args)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {}
        for agent in [a for a in env.agents if infos[a]["acting"]]:
            print(f"\n=== {agent} ({infos[agent]['role']}) ===\n{observations[agent]}")
            try:
                actions[agent] = input(f"{agent}> ")
            except EOFError:
                print()
                return 0
            if actions[agent].strip() == ":quit":
                return 0
        observations, rewards, _, _, infos = env.step(actions)
        for agent, reward in rewards.items():
            totals[agent] += float(reward)
    print("\nEpisode over. Returns: " + ", ".join(f"{a} {r:+.3f}" for a, r in totals.items()))
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    env = _make(args)
    if _is_multiagent(args.env_id):
        try:
            return _play_multiagent(env, args)
        finally:
            env.close()
    observation, info = _reset(env, args)
    total = 0.0
    print(observation)
    print("\n(type your action; ':hint' shows the oracle's action, ':quit' leaves)")
    while True:
        try:
            action = input("> ")
        except EOFError:
            print()
            break
        if action.strip() == ":quit":
            break
        if action.strip() == ":hint":
            print(f"oracle: {env.unwrapped.oracle_action()}")
            continue
        observation, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        print(observation)
        flag = f"  [invalid: {info['invalid_reason']}]" if info.get("invalid_action") else ""
        print(f"\nreward {float(reward):+.3f}  (total {total:+.3f}){flag}")
        if terminated or truncated:
            result = "solved" if info.get("is_correct") else "not solved"
            ended = "terminated" if terminated else "truncated (turn limit)"
            print(f"Episode {ended}: {result}, return {total:+.3f}.")
            break
    env.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``rllm-envs``."""
    parser = argparse.ArgumentParser(prog="rllm-envs", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list environment ids with one-line descriptions")
    for name, helptext in (
        ("show", "print the first observation and info of an env"),
        ("play", "play an env in the terminal, typing actions"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("env_id", help="e.g. rllm/FrozenLake-v1")
        p.add_argument("--seed", type=int, default=0, help="reset seed (default 0)")
        p.add_argument("--index", type=int, default=None, help="pick task INDEX instead")
        p.add_argument(
            "--kwarg",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="env constructor argument (JSON value or bare string); repeatable",
        )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rllm-envs`` command."""
    args = build_parser().parse_args(argv)
    handlers = {"list": _cmd_list, "show": _cmd_show, "play": _cmd_play}
    try:
        return handlers[args.command](args)
    except rllm_envs.RllmEnvsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
