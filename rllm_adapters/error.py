"""Errors of the adapter layer (backends, rollouts, trainers, servers, framework adapters).

Each derives from :class:`AdapterError`, an :class:`rllm_envs.error.RllmEnvsError`, so
``except RllmEnvsError`` still catches the errors of every layer. Errors of the envs and agents
they drive stay those layers' errors.
"""

from __future__ import annotations

from rllm_envs.error import RllmEnvsError

__all__ = ["AdapterConfigError", "AdapterError"]


class AdapterError(RllmEnvsError):
    """Base class of every error raised by ``rllm_adapters``."""


class AdapterConfigError(AdapterError, ValueError):
    """A backend, rollout, trainer or server setting is invalid; the message says the fix."""
