"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    # A dataset file whose columns have other names, read through `field_map`.
    (
        "rllm/Countdown-v1",
        {
            "dataset": "tests/envs/countdown/data/renamed_columns.jsonl",
            "field_map": {"nums": "numbers", "target": "goal"},
        },
    ),
)
