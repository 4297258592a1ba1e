"""What a server shows of an operator's seeds: nothing.

A procedural env's tasks come from its seed and the public package, and its task ids spell the
seed out (``math-d1-s<seed>-<index>``): a client that learns an evaluation's seed rebuilds every
task, answer included. The OpenEnv server and the gateway show such an env's task ids keyed by
its seeds instead, and keep the seeds out of anything else they answer.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from collections.abc import Mapping
from typing import Any

from rllm_envs.core import CUSTOM_ID_PREFIX

__all__ = ["WITHHELD", "SeedMask", "is_seed_name"]

#: What a withheld value reads as (in ``state.env_kwargs``, in messages).
WITHHELD = "<withheld>"


def is_seed_name(name: Any) -> bool:
    """Whether an env kwarg picks a procedural universe (``task_seed``, ``kb_seed``, ``seed``)."""
    return name == "seed" or (isinstance(name, str) and name.endswith("_seed"))


class SeedMask:
    """Task ids and messages of an env made with ``env_kwargs``, as a client may see them.

    Without seed kwargs every id and message is shown as it is (the default universe is the
    package's own, public anyway).
    """

    def __init__(self, env_kwargs: Mapping[str, Any]) -> None:
        seeds = {str(k): v for k, v in env_kwargs.items() if is_seed_name(k)}
        key = json.dumps(seeds, sort_keys=True, default=str) if seeds else None
        self._key = None if key is None else _stretched(key)
        # Their digits, for messages. A seed of a few digits is found by trying them all.
        self._texts = sorted({str(v) for v in seeds.values() if len(str(v)) >= 4}, key=len)[::-1]

    @property
    def active(self) -> bool:
        """Whether the env has seeds to hide."""
        return self._key is not None

    def task_id(self, task_id: Any) -> str:
        """``task_id`` keyed by the seeds: ``task-`` and 16 hex digits.

        One task, one id, on every server with the same seeds; a client's own task keeps its
        ``custom-`` id.
        """
        text = str(task_id)
        if self._key is None or text.startswith(CUSTOM_ID_PREFIX):
            return text
        digest = hmac.new(self._key, text.encode(), hashlib.sha256).hexdigest()
        return f"task-{digest[:16]}"

    def text(self, message: str) -> str:
        """``message`` (an error for a client) with the seeds' digits withheld."""
        for seed in self._texts:
            message = message.replace(seed, WITHHELD)
        return message


@functools.lru_cache(maxsize=64)
def _stretched(key: str) -> bytes:
    """The key of a set of seeds' task ids: scrypt of the seeds (tens of ms, once a process).

    A plain hash let a client test a guessed seed against one shown id with one hash (a date
    as the seed was found in 9,027 guesses, 0.05 s: s24 att29v F3); each guess now costs as
    much as making the guessed seed's tasks would.
    """
    return hashlib.scrypt(key.encode(), salt=b"rllm-envs task id", n=2**14, r=8, p=1, dklen=32)
