"""rllm-envs: Gymnasium and PettingZoo text environments for RL of language models.

``import rllm_envs`` registers every environment under the ``rllm/`` namespace::

    import gymnasium as gym
    import rllm_envs

    env = gym.make("rllm/FrozenLake-v1")
    observation, info = env.reset(seed=0)

Each family registers its ids in its own folder (``rllm_envs/<family>/registration.py``, see
:mod:`rllm_envs.registry`); the test-suite's conformance matrix is built from the rows, so
registering an env enrols it in every contract test.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import pettingzoo

from rllm_envs.error import (
    DependencyNotInstalled,
    InvalidDataset,
    InvalidEnvConfig,
    RllmEnvsError,
    UnknownEnvironment,
    VersionMovedWarning,
    did_you_mean,
)
from rllm_envs.registry import EnvEntry, family_rows, resolve
from rllm_envs.spec import AgentSpec

if TYPE_CHECKING:
    from rllm_envs.multiagent.base import MultiAgentTextEnv

__version__ = "0.1.0"

__all__ = [
    "AgentSpec",
    "EnvEntry",
    "ENVS",
    "env_entry",
    "current_id",
    "agent_spec",
    "resolve",
    "list_envs",
    "make",
    "make_vec",
    "MULTIAGENT_ENVS",
    "list_multiagent_envs",
    "make_parallel",
    "make_aec",
    "DependencyNotInstalled",
    "InvalidDataset",
    "InvalidEnvConfig",
    "RllmEnvsError",
    "UnknownEnvironment",
    "VersionMovedWarning",
]


# =============================================================================================
# The registry: each family's rows live in its folder (rllm_envs/<family>/registration.py).
# =============================================================================================
ENVS, MULTIAGENT_ENVS = family_rows()
#: Old id -> the row of the version that replaced it (see ``EnvEntry.previous``).
_MOVED: dict[str, EnvEntry] = {
    old: row for row in (*ENVS, *MULTIAGENT_ENVS) for old in row.previous
}


def current_id(env_id: str) -> str:
    """``env_id``, or the current id of an old version (with a :class:`VersionMovedWarning`).

    An env whose behaviour changes gets a new ``-vN``; its old id keeps working so pinned code
    runs, but makes the current version, and says what changed.
    """
    row = _MOVED.get(env_id)
    if row is None:
        return env_id
    warnings.warn(
        f"`{env_id}` is an old version: {row.previous[env_id]}. It now makes `{row.id}`; "
        f"use `{row.id}` (results of `{env_id}` are not comparable with it).",
        VersionMovedWarning,
        stacklevel=3,
    )
    return row.id


def _moved_creator(old_id: str) -> Callable[..., gym.Env]:
    def create(**kwargs: Any) -> gym.Env:
        row = _entry(current_id(old_id))
        env: gym.Env = resolve(row.entry_point)(**kwargs)
        return env

    return create


for _row in ENVS:
    for _old in (_row.id, *_row.previous):
        if _old not in gym.registry:
            gym.register(
                id=_old,
                entry_point=_row.entry_point if _old == _row.id else _moved_creator(_old),
                kwargs=dict(_row.kwargs),
                nondeterministic=_row.nondeterministic,
                # Gymnasium's PassiveEnvChecker marks its one checked reset done before that
                # reset runs: a refused first reset (a bad option) left it without data, and
                # every later step raised TypeError (issue #31, F1). Our envs are checked by
                # rllm_envs.testing.check_text_env (which runs the passive checker itself);
                # `disable_env_checker=False` in make still adds Gymnasium's wrapper.
                disable_env_checker=True,
                # Our spaces write real Unicode text through shared memory (see
                # rllm_envs.spaces), so AsyncVectorEnv's default shared memory works.
            )


# Multi-agent (PettingZoo) ids are made with `make_parallel` / `make_aec` and registered in
# PettingZoo's own registry (`pettingzoo.make("parallel", id)`) at the bottom. The entry point
# is the `ParallelEnv` class; the AEC form is PettingZoo's `parallel_to_aec`.


def list_envs() -> dict[str, str]:
    """Return ``{env_id: one-line description}`` for every registered environment."""
    return {entry.id: entry.description for entry in ENVS}


def env_entry(env_id: str) -> EnvEntry:
    """The registry row of a single- or multi-agent env id (``"rllm_envs:"`` prefix allowed).

    Raises:
        UnknownEnvironment: For an id in neither table (with the closest ids).
    """
    key = current_id(env_id.split(":", 1)[1] if env_id.startswith("rllm_envs:") else env_id)
    for row in (*ENVS, *MULTIAGENT_ENVS):
        if row.id == key:
            return row
    known = {**list_envs(), **list_multiagent_envs()}
    raise UnknownEnvironment(
        f"No rllm-envs environment with id `{env_id}`; known ids: {sorted(known)}."
        + did_you_mean(key, known)
    )


def agent_spec(env_id: str) -> AgentSpec:
    """The agent-facing spec of a registered id (:class:`rllm_envs.spec.AgentSpec`).

    Raises:
        UnknownEnvironment: For an id in neither table (with the closest ids).
    """
    spec = resolve(env_entry(env_id).spec)
    if not isinstance(spec, AgentSpec):
        raise InvalidEnvConfig(f"Expects {env_entry(env_id).spec!r} to name an AgentSpec.")
    return spec


def _entry(env_id: str) -> EnvEntry:
    env_id = current_id(env_id)
    for row in ENVS:
        if row.id == env_id:
            return row
    raise UnknownEnvironment(
        f"No rllm-envs environment with id `{env_id}`; known ids: {sorted(list_envs())}."
        + did_you_mean(env_id, list_envs())
    )


def _check_kwargs(entry: EnvEntry, kwargs: dict[str, Any]) -> None:
    """Reject unknown constructor kwargs early, with a suggestion."""
    module, _, name = entry.entry_point.partition(":")
    cls = getattr(__import__(module, fromlist=[name]), name)
    params = inspect.signature(cls.__init__).parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    allowed = [p for p in params if p != "self"]
    for key in kwargs:
        if key not in allowed:
            raise InvalidEnvConfig(
                f"`{entry.id}` has no argument `{key}`.{did_you_mean(key, allowed)} "
                f"Its arguments: {allowed}."
            )


def make(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make`` with rllm-envs errors: unknown ids and kwargs get suggestions."""
    entry = _entry(env_id)
    _check_kwargs(entry, kwargs)
    return gym.make(entry.id, **kwargs)


def make_vec(
    env_id: str,
    num_envs: int = 1,
    vectorization_mode: str = "sync",
    vector_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> gym.vector.VectorEnv:
    """``gymnasium.make_vec`` with rllm-envs errors; ``"async"`` works with its defaults."""
    entry = _entry(env_id)
    _check_kwargs(entry, kwargs)
    return gym.make_vec(
        entry.id,
        num_envs=num_envs,
        vectorization_mode=vectorization_mode,
        vector_kwargs=vector_kwargs,
        **kwargs,
    )


# ------------------------------------------------------------------------- multi-agent API


def list_multiagent_envs() -> dict[str, str]:
    """Return ``{env_id: one-line description}`` for every multi-agent environment."""
    return {entry.id: entry.description for entry in MULTIAGENT_ENVS}


def _multiagent_entry(env_id: str) -> EnvEntry:
    env_id = current_id(env_id)
    for entry in MULTIAGENT_ENVS:
        if entry.id == env_id:
            return entry
    hint = " (it is a single-agent env: use `rllm_envs.make`)" if env_id in list_envs() else ""
    raise UnknownEnvironment(
        f"No rllm-envs multi-agent environment with id `{env_id}`{hint}; known ids: "
        f"{sorted(list_multiagent_envs())}." + did_you_mean(env_id, list_multiagent_envs())
    )


def make_parallel(env_id: str, **kwargs: Any) -> MultiAgentTextEnv:
    """Make a multi-agent env in PettingZoo's parallel form (every live agent steps at once).

    Args:
        env_id: A multi-agent id, e.g. ``"rllm/Debate-v1"`` (see :func:`list_multiagent_envs`).
        **kwargs: Constructor arguments (documented in the env class docstring).

    Returns:
        The ``pettingzoo.ParallelEnv``.

    Raises:
        UnknownEnvironment: For an unknown id (with the closest ids).
        InvalidEnvConfig: For an unknown or invalid argument.
    """
    entry = _multiagent_entry(env_id)
    _check_kwargs(entry, kwargs)
    module, _, name = entry.entry_point.partition(":")
    cls = getattr(importlib.import_module(module), name)
    env: MultiAgentTextEnv = cls(**{**entry.kwargs, **kwargs})
    return env


def make_aec(env_id: str, **kwargs: Any) -> pettingzoo.AECEnv[str, str, str | None]:
    """Make a multi-agent env in PettingZoo's AEC form (agents step one after another).

    This is PettingZoo's ``parallel_to_aec`` of :func:`make_parallel`: in each cycle every live
    agent steps once; a waiting agent's action (``infos[agent]["acting"]`` false) is ignored,
    so step it with ``None``. Arguments and errors as :func:`make_parallel`.
    """
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(make_parallel(env_id, **kwargs))


for _row in MULTIAGENT_ENVS:
    # Creators resolve the env module only when called, so `import rllm_envs` stays light.
    for _old in (_row.id, *_row.previous):
        if _old not in pettingzoo.parallel_registry:
            pettingzoo.register("parallel", _old, entry_point=partial(make_parallel, _old))
        if _old not in pettingzoo.aec_registry:
            pettingzoo.register("aec", _old, entry_point=partial(make_aec, _old))
