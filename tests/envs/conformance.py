"""Shared helpers for the registry-driven conformance matrix."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.error import DependencyNotInstalled
from rllm_envs.testing import DOC_SECTIONS, GARBAGE, ConformanceReport

__all__ = ["DOC_SECTIONS", "GARBAGE", "ALL_ENTRIES", "ALL_IDS", "VARIANTS", "case_id"]

ALL_ENTRIES = list(rllm_envs.ENVS)
ALL_IDS = [e.id for e in ALL_ENTRIES]


def _family_variants() -> tuple[tuple[str, dict[str, Any]], ...]:
    """Every family's ``tests/envs/<family>/variants.py`` ``VARIANTS``, by folder name."""
    found: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(Path(__file__).parent.glob("*/variants.py")):
        module = importlib.import_module(f"tests.envs.{path.parent.name}.variants")
        found += module.VARIANTS
    return tuple(found)


#: Variants the matrix runs besides each id's registered defaults (every difficulty, the
#: switches that change the rules, dataset files read through ``field_map``); each family
#: lists its own in ``tests/envs/<family>/variants.py``.
VARIANTS = _family_variants()


def case_id(env_id: str, kwargs: dict[str, Any]) -> str:
    """A test id for a variant: ``rllm/Math-v1[difficulty=3]``."""
    if not kwargs:
        return env_id
    return env_id + "[" + ",".join(f"{k}={v}" for k, v in kwargs.items()) + "]"


def skip_if_skipped(report: ConformanceReport, rule: str) -> None:
    """Turn a rule the kit skipped into a pytest skip with the kit's reason."""
    if rule in report.skipped:
        pytest.skip(f"{report.env}: {report.skipped[rule]}")


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
    return GARBAGE
