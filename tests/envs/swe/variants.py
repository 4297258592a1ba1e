"""Variants of this family the conformance matrix runs besides its registered id."""

from __future__ import annotations

from typing import Any

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    # A module with no bug added (3); two bugs and two such modules (5).
    *(("rllm/SWE-v0", {"difficulty": d}) for d in (3, 5)),
    ("rllm/SWE-v0", {"partial_credit": True}),
)
