"""Tool use (``rllm/ToolUse-v1``): procedural tasks that need tools, solved by calling them.

The task generators, their scripted tool plans and the scorer live in
:mod:`rllm_envs.tooluse.tasks` (no Gymnasium import); the environment class in
:mod:`rllm_envs.tooluse.tooluse_env`.
"""

from __future__ import annotations

from rllm_envs.tooluse.tasks import (
    DEFAULT_FAMILIES,
    FAMILIES,
    MAX_DIFFICULTY,
    answers_match,
    generate,
    score,
    score_answer,
)
from rllm_envs.tooluse.tooluse_env import BUILTIN_TOOLS, ToolUseEnv

__all__ = [
    "ToolUseEnv",
    "BUILTIN_TOOLS",
    "FAMILIES",
    "DEFAULT_FAMILIES",
    "MAX_DIFFICULTY",
    "generate",
    "score",
    "score_answer",
    "answers_match",
]
