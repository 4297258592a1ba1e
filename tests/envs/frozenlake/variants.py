"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("rllm/FrozenLake-v1", {"difficulty": d}) for d in (2, 3, 4, 5)),
    ("rllm/FrozenLake-v1", {"is_slippery": True}),
    ("rllm/FrozenLake-v1", {"map_name": "8x8"}),
    ("rllm/FrozenLake-v1", {"invalid_ends": True}),
)
