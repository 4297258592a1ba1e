"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("rllm/FrozenLake-v0", {"difficulty": d}) for d in (2, 3, 4, 5)),
    ("rllm/FrozenLake-v0", {"is_slippery": True}),
    ("rllm/FrozenLake-v0", {"map_name": "8x8"}),
)
