"""Typed errors for programmer mistakes. Each message says how to fix the problem.

Model output never raises (it becomes a normal transition with an ``info`` flag); these
errors are for wrong ids, wrong arguments, missing extras and unusable datasets, and are
raised as early as possible.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterable
from types import ModuleType

import gymnasium

__all__ = [
    "RllmEnvsError",
    "DependencyNotInstalled",
    "UnknownEnvironment",
    "InvalidEnvConfig",
    "InvalidDataset",
    "VersionMovedWarning",
    "did_you_mean",
    "require",
]


class RllmEnvsError(gymnasium.error.Error):
    """Base class of every error raised by rllm-envs."""


class DependencyNotInstalled(RllmEnvsError, gymnasium.error.DependencyNotInstalled, ImportError):
    """An optional dependency is missing; the message names the extra to install."""


class UnknownEnvironment(RllmEnvsError, gymnasium.error.NameNotFound):
    """An environment id is not registered; the message suggests the closest ids."""


class InvalidEnvConfig(RllmEnvsError, ValueError):
    """An environment or config argument is invalid; the message says what is expected."""


class InvalidDataset(RllmEnvsError, ValueError):
    """A dataset cannot be read or lacks required fields; the message says how to fix it."""


class VersionMovedWarning(FutureWarning):
    """An old ``-vN`` id was used: it makes the current version, whose behaviour differs."""


def did_you_mean(name: str, candidates: Iterable[str], n: int = 3) -> str:
    """Return a `` Did you mean ...?`` suffix for ``name`` (empty if nothing is close)."""
    matches = difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.5)
    if not matches:
        return ""
    return " Did you mean " + " or ".join(f"`{m}`" for m in matches) + "?"


def require(module: str, extra: str, *, feature: str | None = None) -> ModuleType:
    """Import ``module`` or raise :class:`DependencyNotInstalled` naming the extra.

    Args:
        module: The module to import, e.g. ``"pyarrow.parquet"``.
        extra: The ``rllm-envs`` extra that installs it, e.g. ``"datasets"``.
        feature: What needs the module, for the message (defaults to ``module``).

    Returns:
        The imported module.
    """
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise DependencyNotInstalled(
            f"{feature or module} needs the optional dependency `{module.split('.')[0]}`, "
            f'which is not installed. Run `pip install "rllm-envs[{extra}]"`.'
        ) from e
