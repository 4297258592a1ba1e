"""Errors of the agent layer (agents, trajectories, the episode store).

Each derives from :class:`AgentError`, an :class:`rllm_envs.error.RllmEnvsError`, so
``except RllmEnvsError`` still catches the errors of every layer. Errors of the envs themselves
(an unknown id, a bad env argument) stay ``rllm_envs`` errors.
"""

from __future__ import annotations

from rllm_envs.error import RllmEnvsError

__all__ = ["AgentConfigError", "AgentError"]


class AgentError(RllmEnvsError):
    """Base class of every error raised by ``rllm_agents``."""


class AgentConfigError(AgentError, ValueError):
    """An agent, trajectory or episode-store argument is invalid; the message says the fix."""
