"""The text space shared by every environment.

Gymnasium's :class:`~gymnasium.spaces.Text` only contains strings made of its charset
(alphanumeric by default), so "What is 85 + 63?" would not be a member. :class:`UnicodeText`
contains *any* Python string whose length is within bounds; its charset is used only for
sampling (fuzzing). It also teaches Gymnasium's vector utilities to move real Unicode text
through shared memory (as code points), so ``AsyncVectorEnv`` works with its defaults.
"""

from __future__ import annotations

import multiprocessing as mp
import string
from collections.abc import Sequence
from ctypes import c_int32
from multiprocessing.sharedctypes import SynchronizedArray
from types import ModuleType
from typing import Any, overload

import numpy as np
from gymnasium.spaces import Box, Text
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)

__all__ = [
    "OBSERVATION_MAX_LENGTH",
    "ACTION_MAX_LENGTH",
    "SAMPLE_CHARSET",
    "UnicodeText",
    "observation_space",
    "action_space",
]

#: Maximum observation length in characters. Observations longer than this are cut by the
#: environment with a visible marker. 64 Ki characters is ~16k tokens of prompt.
OBSERVATION_MAX_LENGTH = 65_536
#: Maximum action length in characters. Longer model outputs are not an error: the
#: environment reads the first ``ACTION_MAX_LENGTH`` characters and sets
#: ``info["action_truncated"]``.
ACTION_MAX_LENGTH = 262_144

#: Characters used by :meth:`UnicodeText.sample`: printable ASCII plus accents, Greek,
#: CJK, emoji, math symbols, zero-width and control characters -- a fuzzing alphabet.
SAMPLE_CHARSET = (
    string.printable
    + "àéîõüßçñÀÉÎÕÜ"
    + "αβγδπΣΩ∑∫√∞≤≥≠±×÷"
    + "中文字日本語한국어"
    + "😀🚀🔥✅❌"
    + "\u200b\u200d\u00a0\ufeff\x00\x07\x1b"
    + "<>{}[]\\/`|$#@&*^~\"'"
)

# Padding value for the flattened/shared-memory form: -1 is not a code point.
_PAD = -1


class UnicodeText(Text):
    """A :class:`~gymnasium.spaces.Text` space that contains any Unicode string.

    Membership only checks the type and the length bounds. ``charset`` only shapes
    :meth:`sample`.

    Example:
        >>> space = UnicodeText(max_length=64)
        >>> "What is 85 + 63? ½ 中文 😀" in space
        True
        >>> "x" * 65 in space
        False
    """

    def __init__(
        self,
        max_length: int = OBSERVATION_MAX_LENGTH,
        *,
        min_length: int = 0,
        charset: str = SAMPLE_CHARSET,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(max_length, min_length=min_length, charset=charset, seed=seed)

    def contains(self, x: Any) -> bool:
        """Return whether ``x`` is a string within the length bounds (any characters)."""
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object, /) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.min_length, self.max_length))


def observation_space(max_length: int = OBSERVATION_MAX_LENGTH) -> UnicodeText:
    """The observation space of every rllm-envs environment."""
    return UnicodeText(max_length)


def action_space(max_length: int = ACTION_MAX_LENGTH) -> UnicodeText:
    """The action space of every rllm-envs environment."""
    return UnicodeText(max_length)


def _encode(space: UnicodeText, text: str) -> np.ndarray:
    out = np.full(space.max_length, _PAD, dtype=np.int32)
    codes = np.frombuffer(
        text[: space.max_length].encode("utf-32-le", "surrogatepass"), dtype=np.uint32
    )
    out[: len(codes)] = codes
    return out


def _decode(codes: np.ndarray) -> str:
    codes = codes[codes != _PAD].astype(np.uint32)
    return codes.tobytes().decode("utf-32-le", "surrogatepass")


# --- Gymnasium integration: flattening and vector-env shared memory as code points. ---


@flatten_space.register(UnicodeText)
def _flatten_space_unicode(space: UnicodeText) -> Box:
    return Box(low=_PAD, high=0x10FFFF, shape=(space.max_length,), dtype=np.int32)


@flatten.register(UnicodeText)
def _flatten_unicode(space: UnicodeText, x: str) -> np.ndarray:  # type: ignore[misc]
    return _encode(space, x)


@unflatten.register(UnicodeText)
def _unflatten_unicode(space: UnicodeText, x: np.ndarray) -> str:  # type: ignore[misc]
    return _decode(np.asarray(x, dtype=np.int32))


@create_shared_memory.register(UnicodeText)
def _create_unicode_shared_memory(
    space: UnicodeText, n: int = 1, ctx: ModuleType = mp
) -> SynchronizedArray[c_int32]:
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


class SharedTextBatch(Sequence[str]):
    """A live, read-only view of ``n`` texts in a vector env's shared memory.

    Gymnasium reads shared memory once, when the vector env is built, and relies on getting
    a *view* that later writes show through (true for arrays). Strings are immutable, which is
    why Gymnasium's own ``Text`` comes back as zeros; this view decodes on access instead.
    ``AsyncVectorEnv(copy=True)`` (the default) deep-copies it, which yields a plain tuple.
    """

    def __init__(self, buffer: np.ndarray) -> None:
        self._buffer = buffer

    def __len__(self) -> int:
        return len(self._buffer)

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...
    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:
        if isinstance(index, slice):
            return tuple(_decode(row) for row in self._buffer[index])
        return _decode(self._buffer[index])

    def __deepcopy__(self, memo: dict[int, Any]) -> tuple[str, ...]:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, (Sequence)) and tuple(self) == tuple(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(tuple(self))


def _as_array(shared_memory: SynchronizedArray[c_int32]) -> np.ndarray:
    # typeshed's ctypes Array lacks the buffer protocol, hence the ignore.
    return np.frombuffer(shared_memory.get_obj(), dtype=np.int32)  # type: ignore[call-overload]


@read_from_shared_memory.register(UnicodeText)
def _read_unicode_from_shared_memory(
    space: UnicodeText, shared_memory: SynchronizedArray[c_int32], n: int = 1
) -> SharedTextBatch:
    return SharedTextBatch(_as_array(shared_memory).reshape((n, space.max_length)))


@write_to_shared_memory.register(UnicodeText)
def _write_unicode_to_shared_memory(
    space: UnicodeText, index: int, values: str, shared_memory: SynchronizedArray[c_int32]
) -> None:
    size = space.max_length
    destination = _as_array(shared_memory)
    destination[index * size : (index + 1) * size] = _encode(space, values)
