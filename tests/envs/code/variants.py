"""Variants of this family the conformance matrix runs besides its registered ids."""

from __future__ import annotations

from typing import Any

# Code envs are slow to judge: besides their registered ids they get three variants.
VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("rllm/Code-v0", {"reward_mode": "fraction"}),
    # Multi-turn in fraction mode: the last turn runs the hidden tests even after a public
    # failure; earlier ones only once the public tests pass (then the episode ends).
    ("rllm/CodeMultiTurn-v1", {"reward_mode": "fraction", "max_turns": 2}),
    # A dataset file whose columns have other names, read through `field_map`.
    (
        "rllm/Code-v0",
        {
            "dataset": "tests/envs/code/data/renamed_columns.jsonl",
            "field_map": {"question": "statement"},
        },
    ),
)
