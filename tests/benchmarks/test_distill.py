"""The distillation recipe's parts: the oracle teacher's episodes, the held-out split, Wilson."""

from __future__ import annotations

import pytest

from benchmarks.distill import ENV_KWARGS, RL_CONFIG, rl_task_indices, wilson


@pytest.fixture(scope="module")
def tiny_path():
    pytest.importorskip("transformers")
    from rllm_adapters.tiny_model import tiny_model_path

    return tiny_model_path()


def test_wilson_interval():
    low, high = wilson(50, 100)
    assert low == pytest.approx(0.4038, abs=1e-3) and high == pytest.approx(0.5962, abs=1e-3)
    assert wilson(0, 200)[0] == 0.0 and 0.0 < wilson(0, 200)[1] < 0.02
    assert wilson(200, 200)[1] == pytest.approx(1.0)
    assert wilson(0, 0) == (0.0, 1.0)


def test_oracle_teacher_episodes_are_solved_and_token_exact_for_the_student(tiny_path):
    pytest.importorskip("transformers")
    from transformers import AutoTokenizer

    from benchmarks.distill import oracle_episodes

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    episodes = oracle_episodes(range(5), tokenizer)
    assert len(episodes) == 5
    for t in episodes:
        t.check_token_exact()
        assert t.is_correct and t.total_reward == 1.0
        # Random 4x4 maps: S and G at least 3 steps apart; the oracle walks a shortest path.
        rows = t.initial_info["map"]
        (sr, sc), (gr, gc) = (
            next((r, c) for r, row in enumerate(rows) for c, ch in enumerate(row) if ch == cell)
            for cell in "SG"
        )
        assert t.num_turns >= max(3, abs(sr - gr) + abs(sc - gc))
        assert t.initial_info["map"] != ["SFFF", "FHFH", "FFFH", "HFFG"]
        for step in t.steps:
            text = tokenizer.decode(step.completion_ids, skip_special_tokens=False)
            assert text == f"{step.action}<|im_end|>"
    maps = {tuple(t.initial_info["map"]) for t in episodes}
    assert len(maps) > 1


def test_rl_task_draws_replayed_from_the_trainer_seeds():
    pytest.importorskip("yaml")
    from rllm_adapters.trainer.config import load_config

    config = load_config(RL_CONFIG, ["train.iterations=3"])
    assert config.env_kwargs["difficulty"] == ENV_KWARGS["difficulty"]
    drawn = rl_task_indices(config, 3)
    assert len(drawn) == 3 * config.rollout.num_tasks
    assert rl_task_indices(config, 3) == drawn
