"""What crosses the wire.

OpenEnv's action, observation and state models for text envs, and the JSON-safe form of an
env's ``info``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rllm_adapters.private_seeds import WITHHELD, is_seed_name
from rllm_envs.core import HIDDEN_TASK_FIELDS
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


#: Longest ``episode_id`` a reset accepts (characters).
MAX_EPISODE_ID_CHARS = 256


class TextState(_types.State):  # type: ignore[name-defined]
    """The session's state: the env id and the current episode (``step_count`` = turns).

    ``custom_task`` is true when the episode plays a task record the client passed
    (``options={"task": ...}``): its ``task_id`` is then ``custom-<digest>``, never one of the
    source's ids, and ``client_task_id`` is the id the client gave the record (if any).
    ``env_kwargs`` names every constructor kwarg of the served env but shows only the values
    of numbers, booleans and ``None`` (:func:`public_kwargs`); any other value (a dataset and
    its answers, a path, a field map, judge settings) reads ``"<withheld>"``.
    """

    env_id: str = ""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = None
    custom_task: bool = False
    client_task_id: str | None = None
    seed: int | None = None
    done: bool = True


def public_kwargs(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """The env kwargs a client may see: every name, and only scalar values (rule in TextState).

    The ``state`` message returned the operator's kwargs verbatim, so a dataset passed as
    records gave every client its answers (issue #31, F5). Values of the task-record fields
    :data:`rllm_envs.core.HIDDEN_TASK_FIELDS` are withheld even when they are scalars, and so
    are seeds (:func:`is_seed_name`): with an operator's seed, a client rebuilt a procedural
    env's tasks, and their answers, from the public package (issue #31, att31s24 F1).
    """
    shown: dict[str, Any] = {}
    for name, value in kwargs.items():
        scalar = value is None or isinstance(value, bool | int | float)
        hidden = name in HIDDEN_TASK_FIELDS or is_seed_name(name)
        shown[str(name)] = value if scalar and not hidden else WITHHELD
    return shown


def check_reset_args(seed: Any, episode_id: Any, options: Any) -> None:
    """Raise ``ValueError`` naming the first bad ``reset`` argument (before anything changes).

    ``seed``: an int or ``None``; ``episode_id``: a string of at most
    :data:`MAX_EPISODE_ID_CHARS` characters or ``None``; ``options``: an object or ``None``.
    """
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
        raise ValueError(f"Expects `seed` to be an int or null, actual: {_shown(seed)}")
    if episode_id is not None and (
        not isinstance(episode_id, str) or len(episode_id) > MAX_EPISODE_ID_CHARS
    ):
        raise ValueError(
            f"Expects `episode_id` to be a string of at most {MAX_EPISODE_ID_CHARS} characters "
            f"or null, actual: {_shown(episode_id)}"
        )
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"Expects `options` to be an object or null, actual: {_shown(options)}")


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, (int, float, str, bool)) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


def jsonable(value: Any) -> Any:
    """``value`` as strict JSON data (the wire has no ``inf``/``nan``): see ``to_jsonable``."""
    return to_jsonable(value, finite=True)
