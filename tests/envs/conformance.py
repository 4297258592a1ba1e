"""Shared helpers for the registry-driven conformance matrix."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.error import DependencyNotInstalled

#: The sections every env docstring has (Gymnasium's documentation layout).
DOC_SECTIONS = (
    "## Description",
    "## Observation",
    "## Action",
    "## Reward",
    "## Episode End",
    "## Information",
    "## Arguments",
    "## Version History",
)

ALL_ENTRIES = list(rllm_envs.ENVS)
ALL_IDS = [e.id for e in ALL_ENTRIES]


def make_or_skip(env_id: str, **kwargs: Any) -> gym.Env:
    """Make an env, skipping (with the reason) when its optional extra is not installed."""
    try:
        return gym.make(env_id, **kwargs)
    except DependencyNotInstalled as e:
        pytest.skip(f"{env_id}: {e}")


def run_episode(env: gym.Env, policy, *, seed: int, options=None, limit: int = 10_000):
    """Run one episode; ``policy(env, obs, info) -> action``. Returns the transitions."""
    obs, info = env.reset(seed=seed, options=options)
    steps = [(obs, 0.0, False, False, info)]
    for _ in range(limit):
        action = policy(env, obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        steps.append((obs, reward, terminated, truncated, info))
        if terminated or truncated:
            return steps
    raise AssertionError(f"episode did not end within {limit} steps")


def oracle(env, obs, info):
    return env.unwrapped.oracle_action()


def garbage(env, obs, info):
    return "qwzx ☃ <tool_call>{not json</tool_call> \\boxed{"
