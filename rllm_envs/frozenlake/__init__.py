"""FrozenLake as text (``rllm/FrozenLake-v1``)."""

from rllm_envs.frozenlake.frozenlake_env import DIFFICULTY_PRESETS, FrozenLakeEnv
from rllm_envs.frozenlake.lake import ACTION_NAMES, parse_action

__all__ = ["FrozenLakeEnv", "DIFFICULTY_PRESETS", "ACTION_NAMES", "parse_action"]
