"""The registry of rllm-envs: one :class:`EnvEntry` row per environment id.

Each family declares its rows in its own folder (``rllm_envs/<family>/registration.py``, with
``ENVS`` for Gymnasium ids and ``MULTIAGENT_ENVS`` for PettingZoo ids), so adding a family
touches only its folder. The files are plain data read here without importing the family's
package, so ``import rllm_envs`` imports no env, spec or scorer module.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_envs.error import InvalidEnvConfig

__all__ = ["EnvEntry", "family_rows", "resolve"]


@dataclass(frozen=True)
class EnvEntry:
    """One row of the registry.

    The row is the env's identity: besides how to build it, it names the family, the family's
    agent-facing spec (:class:`rllm_envs.spec.AgentSpec`, read by the agent layer), the
    scripted opponents of a competitive multi-agent env and the family's pure scorer. Paths
    are ``"module:name"`` strings resolved only when used (:func:`resolve`), so
    ``import rllm_envs`` imports no spec, scorer or env module.

    Attributes:
        id: Namespaced, versioned id, e.g. ``"rllm/FrozenLake-v1"``.
        entry_point: Lazy ``"module:Class"`` path.
        description: One line for ``rllm-envs list`` and the README.
        family: The task family (``"Code"`` for every code variant); rows of one family
            share their scorer.
        spec: ``"module:NAME"`` of the :class:`rllm_envs.spec.AgentSpec` of this variant
            (prompt, demonstration, token limit, stops), in the family's folder.
        scorer: ``"module:function"`` of the family's ``score(answer, task) -> float`` in
            [0, 1], or ``None`` for a family scored only by playing it (FrozenLake, games).
        opponents: Multi-agent only: ``{agent name: scripted policy kind}`` for the agents a
            scripted player plays (``"heuristic"``, ``"oracle"``, ``"random"``); the other
            agents are the evaluated policy's. Empty: the policy plays every agent.
        kwargs: Default constructor kwargs (variants are kwargs, not classes).
        nondeterministic: True for envs touching sandboxes, networks or clocks.
        extra: The pip extra the env needs, if any (tests skip it when missing).
        previous: Earlier ids of this env whose behaviour (rewards, tasks) this version
            changed, each with what changed. They still make this version, with a
            :class:`~rllm_envs.error.VersionMovedWarning`, so code pinned to an old id keeps
            running and is told that its numbers are not comparable; they are not listed.
    """

    id: str
    entry_point: str
    description: str
    family: str
    spec: str
    scorer: str | None = None
    opponents: dict[str, str] = field(default_factory=dict)
    kwargs: dict[str, Any] = field(default_factory=dict)
    nondeterministic: bool = False
    extra: str | None = None
    previous: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("entry_point", "spec", "scorer"):
            value = getattr(self, name)
            if value is not None and not _is_path(value):
                raise InvalidEnvConfig(
                    f"Expects `{name}` of `{self.id}` to be a 'module:name' path, actual: "
                    f"{value!r}."
                )


def _is_path(value: object) -> bool:
    module, sep, name = str(value).partition(":")
    return bool(isinstance(value, str) and sep and module and name)


def resolve(path: str) -> Any:
    """Import the object a ``"module:name"`` path names (a spec, a scorer, an env).

    Raises:
        InvalidEnvConfig: When the module or the name does not exist.
    """
    module, _, name = path.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise InvalidEnvConfig(f"Cannot import {path!r}: {e}") from e


def family_rows() -> tuple[tuple[EnvEntry, ...], tuple[EnvEntry, ...]]:
    """``(single-agent rows, multi-agent rows)`` of every family folder, by folder name."""
    single: list[EnvEntry] = []
    multi: list[EnvEntry] = []
    for folder in sorted(Path(__file__).parent.iterdir()):
        path = folder / "registration.py"
        if not path.is_file():
            continue
        # Loaded as a file, not as `rllm_envs.<family>.registration`, which would run the
        # family package's __init__ (its env modules) on `import rllm_envs`.
        name = f"rllm_envs._registration_{folder.name}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise InvalidEnvConfig(f"Cannot read the registry rows of {path}.")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        single += getattr(module, "ENVS", ())
        multi += getattr(module, "MULTIAGENT_ENVS", ())
    ids = [row.id for row in (*single, *multi)]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise InvalidEnvConfig(
            f"Expects each env id registered once, actual duplicates: {duplicated}."
        )
    return tuple(single), tuple(multi)
