"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    *(("rllm/Math-v1", {"difficulty": d}) for d in (2, 3, 4, 5)),
    ("rllm/Math-v1", {"max_turns": 3}),
    # A dataset file whose columns have other names, read through `field_map`.
    (
        "rllm/Math-v1",
        {
            "dataset": "tests/envs/math/data/renamed_columns.jsonl",
            "field_map": {"problem": "statement", "answer": "final"},
        },
    ),
)
