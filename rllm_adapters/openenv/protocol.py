"""What crosses the wire.

OpenEnv's action, observation and state models for text envs, and the JSON-safe form of an
env's ``info``.
"""

from __future__ import annotations

from typing import Any

from rllm_envs.error import require
from rllm_envs.utils import to_jsonable

_types = require("openenv.core.env_server.types", "openenv", feature="The OpenEnv adapter")

from pydantic import Field  # noqa: E402  (a dependency of openenv, checked above)


class TextAction(_types.Action):  # type: ignore[name-defined]
    """A model's reply: any text (the env cuts what is over its action limit and says so)."""

    text: str = Field(description="The model output, passed to the env's step() unchanged")


class TextObservation(_types.Observation):  # type: ignore[name-defined]
    """What the env returned: the text, Gymnasium's two end flags and the env's ``info``.

    ``done`` (OpenEnv's field) is ``terminated or truncated``; ``reward`` is the step reward
    (``None`` after reset). ``info`` is the env's documented info dict made JSON-safe.
    """

    text: str = Field(description="The observation string")
    terminated: bool = Field(default=False, description="The episode reached a terminal state")
    truncated: bool = Field(default=False, description="The episode hit its turn limit")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info dict")


class TextState(_types.State):  # type: ignore[name-defined]
    """The session's state: the env id and the current episode (``step_count`` = turns)."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = None
    seed: int | None = None
    done: bool = True


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data (the wire has no ``inf``/``nan``): see ``to_jsonable``."""
    return to_jsonable(value, finite=True)
