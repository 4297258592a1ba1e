"""A served ReasoningGym question must not give away the generator seed of other tasks.

reasoning-gym makes item ``i`` of a dataset with ``Random(seed + i)``. With a 32-bit dataset
seed, a client searched the public generator for the seed that makes a question it was served
and then made (and answered) every other task of that draw (session 24 att31u: 229 of 1,000
``chain_sum`` tasks paid after about 7 CPU-minutes). These tests pin the three parts of the
fix: draw seeds of 128 bits, a 32-bit seed per item for the families that take no more, and
the global generators seeded from the whole task seed.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import numpy as np  # noqa: E402
import reasoning_gym  # noqa: E402

from rllm_envs.reasoning_gym import tasks as rg_tasks  # noqa: E402
from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks  # noqa: E402


@pytest.mark.parametrize("family", ["chain_sum", "basic_arithmetic", "mini_sudoku"])
def test_a_draws_generator_seed_is_far_beyond_a_search(family: str) -> None:
    for task_seed in (0, 1, 7, 2**40 + 3):
        source = ReasoningGymTasks(family, size=50, task_seed=task_seed)
        seed = source._datasets[0].seed
        assert seed.bit_length() > 96, (family, task_seed, seed)
        # ... and that is the seed the served questions come from.
        rebuilt = reasoning_gym.create_dataset(family, seed=seed, size=50, **source.config)
        for i in (0, 1, 49):
            assert source._draw(i, 0)["question"] == rebuilt[i]["question"]


def test_a_narrow_familys_items_are_seeded_apart() -> None:
    """pool_matrix seeds NumPy's legacy generator (32 bits only): the attacker's best case, the
    seed of one item, must not make another item of the draw."""
    source = ReasoningGymTasks("pool_matrix", size=40, task_seed=11)
    fields = source.config
    served = [source._draw(i, 0)["question"] for i in range(12)]

    def made(seed: int, index: int) -> str:
        dataset = reasoning_gym.create_dataset("pool_matrix", seed=seed, size=40, **fields)
        return dataset[index]["question"]

    for i in range(12):
        seed_i = rg_tasks._item_seed(11, 0, i, source._stream())
        assert 0 <= seed_i < 2**32
        assert made(seed_i - i, i) == served[i]  # the item's own seed makes it
        for j in range(12):
            if j != i:
                assert made(seed_i - i, j) != served[j], (i, j)  # and no other
    assert len(set(served)) == len(served)


class _GlobalRngDataset:
    """A fake reasoning-gym dataset (test-only) whose items come from the global generators."""

    seed = 0

    def __getitem__(self, index: int) -> dict:
        return {"question": f"{np.random.randint(2**31)} {random.getrandbits(64)}", "answer": "0"}


def test_global_generators_are_seeded_from_the_whole_task_seed() -> None:
    source = ReasoningGymTasks("chain_sum", size=10, task_seed=0)
    fake = _GlobalRngDataset()
    low = 12345
    questions = {
        source._item(fake, 0, task_seed, 0)["question"].split()[0]
        for task_seed in (low, low + 2**32, low + 2**33)
    }
    assert len(questions) == 3  # the NumPy draws differ when only high bits of the seed do
    again = source._item(fake, 0, low, 0)["question"]
    assert again == source._item(fake, 0, low, 0)["question"]  # and stay a pure function


def test_a_composites_parts_are_seeded_apart() -> None:
    config = {
        "datasets": [
            {"name": "chain_sum", "weight": 1, "config": {}},
            {"name": "pool_matrix", "weight": 1, "config": {}},
        ]
    }
    source = ReasoningGymTasks("composite", size=30, task_seed=5, config=config)
    composite = source._datasets[0]
    assert composite.seed.bit_length() > 96
    # reasoning-gym's default would seed the parts composite.seed + 1, + 2: one 32-bit search
    # for the narrow part would give the chain_sum part too.
    assert composite.datasets["chain_sum"].seed.bit_length() > 96
    assert composite.datasets["pool_matrix"].seed < 2**32
    families = {source._draw(i, 0)["metadata"]["source_dataset"] for i in range(12)}
    assert families == {"chain_sum", "pool_matrix"}


def test_a_composite_part_seed_is_refused() -> None:
    from rllm_envs.error import InvalidEnvConfig

    config = {"datasets": [{"name": "chain_sum", "weight": 1, "config": {"seed": 3}}]}
    with pytest.raises(InvalidEnvConfig, match="task_seed"):
        ReasoningGymTasks("composite", size=30, config=config)


def test_one_seed_served_with_another_config_or_family_draws_other_tasks() -> None:
    """s26 att26 F2: the draw seeds hashed the task seed and size only, so one private seed
    served with two configs of a family gave 14 of 200 tasks alike (question and answer): a
    training server's revealed answers were an evaluation server's."""
    seed, size = 2**61 + 12_345, 200
    default = ReasoningGymTasks("count_bits", size=size, task_seed=seed)
    wide = ReasoningGymTasks("count_bits", size=size, task_seed=seed, config={"max_n": 2**31 - 2})
    assert default._datasets[0].seed != wide._datasets[0].seed
    questions = {default._draw(i, 0)["question"] for i in range(size)}
    assert not questions & {wide._draw(i, 0)["question"] for i in range(size)}
    other = ReasoningGymTasks("basic_arithmetic", size=size, task_seed=seed)
    assert other._datasets[0].seed != default._datasets[0].seed
