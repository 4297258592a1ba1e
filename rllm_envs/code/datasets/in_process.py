"""Tasks judged inside the submission's process (assert kind): drop, zero or allow them."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rllm_envs.code.datasets._records import Task

#: What to do with tasks whose verdict is decided inside the submission's process
#: (``verdict_trust == "in_process"``: assert kind, which a submission can disarm).
IN_PROCESS_OPTIONS = ("drop", "zero", "allow")

_log = logging.getLogger("rllm_envs.code")


def in_process_share(tasks: Sequence[Mapping[str, Any]]) -> float:
    """The share of ``tasks`` whose verdict is decided in the submission's process."""
    if not tasks:
        return 0.0
    return sum(t.get("verdict_trust") == "in_process" for t in tasks) / len(tasks)


def apply_in_process(tasks: list[Task], in_process: str, *, name: str = "dataset") -> list[Task]:
    """Apply an ``in_process`` choice to loaded tasks and report their share.

    ``"drop"`` removes in-process tasks (the safe choice for RL: a submission that disarms
    the asserts would be rewarded), ``"zero"`` keeps them with ``in_process="zero"`` set on
    each (the code env then gives them reward 0) and ``"allow"`` keeps them as they are.
    The share is logged (logger ``rllm_envs.code``, level INFO, WARNING when allowed).

    Raises:
        InvalidEnvConfig: For an unknown choice.
    """
    from rllm_envs.error import InvalidEnvConfig

    if in_process not in IN_PROCESS_OPTIONS:
        raise InvalidEnvConfig(
            f"Expects `in_process` in {IN_PROCESS_OPTIONS}, actual: {in_process!r}."
        )
    share = in_process_share(tasks)
    if share:
        count = round(share * len(tasks))
        level = logging.WARNING if in_process == "allow" else logging.INFO
        _log.log(
            level,
            "%s: %d of %d tasks (%.1f%%) are assert kind, judged inside the submission's "
            "process (forgeable): in_process=%r",
            name,
            count,
            len(tasks),
            100 * share,
            in_process,
        )
    if in_process == "drop":
        return [t for t in tasks if t.get("verdict_trust") != "in_process"]
    if in_process == "zero":
        return [
            {**t, "in_process": "zero"} if t.get("verdict_trust") == "in_process" else t
            for t in tasks
        ]
    return tasks
