"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("rllm/ToolUse-v1", {"difficulty": d}) for d in (2, 3, 4, 5)),
    ("rllm/ToolUse-v1", {"python": False}),
)
