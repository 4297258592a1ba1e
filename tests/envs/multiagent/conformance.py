"""Shared helpers for the registry-driven multi-agent conformance matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rllm_envs
from rllm_envs.error import DependencyNotInstalled

ALL_ENTRIES = list(rllm_envs.MULTIAGENT_ENVS)
ALL_IDS = [e.id for e in ALL_ENTRIES]

GARBAGE = "qwzx ☃ <tool_call>{not json</tool_call> \\boxed{"

Policy = Callable[[Any, str, str, dict[str, Any]], Any]


def make_or_skip(env_id: str, **kwargs: Any):
    """Make the parallel env, skipping (with the reason) when its optional extra is missing."""
    try:
        return rllm_envs.make_parallel(env_id, **kwargs)
    except DependencyNotInstalled as e:
        pytest.skip(f"{env_id}: {e}")


def make_aec_or_skip(env_id: str, **kwargs: Any):
    try:
        return rllm_envs.make_aec(env_id, **kwargs)
    except DependencyNotInstalled as e:
        pytest.skip(f"{env_id}: {e}")


def run_parallel(env, policy: Policy, *, seed: int, options=None, limit: int = 1_000):
    """Run one episode of a parallel env; ``policy(env, agent, obs, info) -> action``.

    Only acting agents are asked. Returns ``[(obs, rewards, terms, truncs, infos), ...]`` with
    the reset as the first entry (rewards empty).
    """
    obs, infos = env.reset(seed=seed, options=options)
    steps = [(obs, {}, {}, {}, infos)]
    for _ in range(limit):
        actions = {a: policy(env, a, obs[a], infos[a]) for a in env.agents if infos[a]["acting"]}
        obs, rewards, terms, truncs, infos = env.step(actions)
        steps.append((obs, rewards, terms, truncs, infos))
        if not env.agents:
            return steps
    raise AssertionError(f"episode did not end within {limit} steps")


def returns(steps) -> dict[str, float]:
    """Each agent's total reward over an episode."""
    total: dict[str, float] = {}
    for _, rewards, *_ in steps:
        for agent, reward in rewards.items():
            total[agent] = total.get(agent, 0.0) + reward
    return total


def final_infos(steps) -> dict[str, dict[str, Any]]:
    """Each agent's info at the step its episode ended."""
    last: dict[str, dict[str, Any]] = {}
    for _, _, terms, truncs, infos in steps[1:]:
        for agent, info in infos.items():
            if terms.get(agent) or truncs.get(agent):
                last[agent] = info
    return last


def scripted(kind: str, seed: int = 0) -> Policy:
    policy = rllm_envs.multiagent.ScriptedPolicy(kind, seed=seed)

    def act(env, agent, obs, info):
        return policy(env, agent)

    return act


def garbage(env, agent, obs, info):
    return GARBAGE
