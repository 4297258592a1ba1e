"""A positive weight on a component that counts mistakes is refused by every env (s37 att37b).

ToolUse (``invalid_call``), Search and SolverJudge (``invalid_action``) accepted one: a sign
slip (``+0.05`` for ``-0.05``) paid 40 bad tool calls 6.0 an episode, and "no idea" 0.5 to
every SolverJudge agent. FrozenLake and TicTacToe already refused theirs.
"""

from __future__ import annotations

import importlib

import pytest

import rllm_envs
from rllm_envs.core import PENALTY_COMPONENTS, resolve_reward_weights
from rllm_envs.error import InvalidEnvConfig


def _classes() -> dict[str, type]:
    found = {}
    for entry in rllm_envs.ENVS:
        module, _, name = entry.entry_point.partition(":")
        cls = getattr(importlib.import_module(module), name)
        if PENALTY_COMPONENTS & set(getattr(cls, "default_reward_weights", {})):
            found[cls.__name__] = cls
    return found


CLASSES = _classes()


def test_the_envs_with_penalties_are_found():
    assert {"ToolUseEnv", "SearchEnv", "FrozenLakeEnv", "CodeEnv"} <= set(CLASSES)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_a_positive_penalty_weight_is_refused(name):
    cls = CLASSES[name]
    for component in sorted(PENALTY_COMPONENTS & set(cls.default_reward_weights)):
        with pytest.raises(InvalidEnvConfig, match="must be <= 0"):
            resolve_reward_weights(cls, {component: 0.05})
        assert resolve_reward_weights(cls, {component: -0.05})[component] == -0.05


def test_through_gym_make():
    import gymnasium as gym

    with pytest.raises(InvalidEnvConfig, match="invalid_call"):
        gym.make("rllm/ToolUse-v1", reward_weights={"invalid_call": 0.05})
