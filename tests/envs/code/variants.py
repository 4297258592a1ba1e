"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

# Code envs are slow to judge: besides their registered ids they get two variants.
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("rllm/Code-v0", {"reward_mode": "fraction"}),
    # A dataset file whose columns have other names, read through `field_map`.
    (
        "rllm/Code-v0",
        {
            "dataset": "tests/envs/code/data/renamed_columns.jsonl",
            "field_map": {"question": "statement"},
        },
    ),
)
