"""What a server shows of an operator's seeds (rllm_adapters/private_seeds.py)."""

from __future__ import annotations

import hashlib
import json

from rllm_adapters.private_seeds import WITHHELD, SeedMask, is_seed_name


def test_seed_kwargs_are_named_as_seeds():
    assert all(map(is_seed_name, ["seed", "task_seed", "kb_seed"]))
    assert not any(map(is_seed_name, ["seeds", "difficulty", 3, "seeded"]))


def test_task_ids_are_keyed_by_the_seeds_and_cost_a_guess_its_key():
    """att29v F3 (low): the id was a plain sha256 of the seeds and the env's id, so a guessed
    seed was checked against one shown id with one hash (a date-like seed in 0.05 s)."""
    seed = 20240917
    mask = SeedMask({"task_seed": seed, "difficulty": 2})
    own = f"math-d1-s{seed}-0"
    shown = mask.task_id(own)
    assert shown.startswith("task-") and len(shown) == len("task-") + 16
    assert shown == SeedMask({"difficulty": 2, "task_seed": seed}).task_id(own)  # stable
    assert shown != SeedMask({"task_seed": seed + 1}).task_id(own)
    key = json.dumps({"task_seed": seed}, sort_keys=True, default=str)
    plain = hashlib.sha256(f"{key}\0{own}".encode()).hexdigest()[:16]
    assert shown != f"task-{plain}"  # not one plain hash a guess
    assert mask.task_id("custom-0123456789abcdef") == "custom-0123456789abcdef"


def test_without_seeds_nothing_is_masked():
    mask = SeedMask({"difficulty": 2})
    assert not mask.active and mask.task_id("math-d1-s0-3") == "math-d1-s0-3"
    assert mask.text("index 12345 out of range") == "index 12345 out of range"


def test_messages_lose_the_seeds_digits():
    mask = SeedMask({"task_seed": 8_675_309_123, "kb_seed": 7})
    text = mask.text("no task 5 in reasoning-gym-chain_sum-s8675309123 (kb 7)")
    assert "8675309123" not in text and WITHHELD in text
    assert text.endswith("(kb 7)")  # a seed of a few digits is left (found by trying them all)
