"""Small helpers every layer shares (no Gymnasium import)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

__all__ = ["to_jsonable"]


def to_jsonable(value: Any, *, finite: bool = False) -> Any:
    """``value`` as JSON types (NumPy values as Python numbers and lists, anything else a str).

    Mappings, sequences and sets become dicts and lists. ``finite=True`` also writes
    non-finite floats as strings, for wire formats held to strict JSON (which has no ``inf``
    or ``nan``); the episode store keeps them exact.
    ``info`` dicts, tool-call arguments and trajectory metadata go through this before they
    are logged, stored or sent; a value nested too deeply to walk becomes a short string
    instead of an exception (model-written arguments reach here).
    """
    try:
        return _convert(value, finite)
    except RecursionError:
        # str() of such a value recurses too.
        return f"<{type(value).__name__} nested too deeply>"


def _convert(value: Any, finite: bool) -> Any:
    if isinstance(value, float):
        return str(value) if finite and not math.isfinite(value) else value
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _convert(v, finite) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_convert(v, finite) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # NumPy arrays and scalars (a scalar's tolist() is the scalar)
        return _convert(tolist(), finite)
    item = getattr(value, "item", None)
    if callable(item):
        return _convert(item(), finite)
    return str(value)
