"""The trainer with a curriculum and kept env pools: real rollouts (tiny model, transformers)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

from rllm_adapters.trainer.config import config_from_dict  # noqa: E402
from rllm_adapters.trainer.metrics import read_metrics  # noqa: E402
from rllm_envs.error import InvalidEnvConfig  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _config(tmp_path, curriculum, **train):
    return config_from_dict(
        {
            "model": "tiny",
            "env": "rllm/FrozenLake-v1",
            # Random maps; the curriculum sets `difficulty` (map size and hole density).
            "env_kwargs": {"max_turns": 2, "reward_weights": {"invalid_action": -0.1}},
            "rollout": {
                "backend": "transformers",
                "num_tasks": 2,
                "group_size": 2,
                "max_tokens": 2,
                "agent": "rllm_agents.agent:FrozenLakeBoardAgent",
                "agent_kwargs": {"system_prompt": None},
                "curriculum": curriculum,
            },
            "algorithm": {
                "advantage": "grpo",
                "skip_zero_signal_groups": False,
                "ppo_epochs": 1,
                "mini_batch_size": 4,
                "micro_batch_size": 2,
            },
            "optim": {"lr": 1e-3},
            "train": {"iterations": 2, "output_dir": str(tmp_path / "run"), "seed": 0, **train},
            "logging": {"progress": False, "tensorboard": False, "samples_per_iteration": 0},
        }
    )


def _worker_ids(trainer):
    return {level: [id(w) for w in pool.workers] for level, pool in trainer.rollouts.pools.items()}


def test_uniform_curriculum_passes_each_level_and_keeps_one_pool_per_level(tmp_path):
    from rllm_adapters.trainer.trainer import PPOTrainer

    config = _config(tmp_path, {"kind": "uniform", "levels": [1, 2]})
    with PPOTrainer(config) as trainer:
        seen = []
        original = trainer.rollouts.collect

        def spy(policy, iteration, extra_round=0):
            out = original(policy, iteration, extra_round)
            seen.append(out)
            return out

        trainer.rollouts.collect = spy
        first = trainer.step()
        workers = _worker_ids(trainer)
        second = trainer.step()
        # The env workers of the first iteration run the second one too.
        assert _worker_ids(trainer) == workers
        assert sorted(workers) == [0, 1]  # one pool per level index
        pools = list(trainer.rollouts.pools.values())
    # Closed with the trainer.
    assert not trainer.rollouts.pools
    assert all(not pool.workers for pool in pools)
    for metrics in (first, second):
        assert metrics["curriculum/episodes/1"] == 2.0
        assert metrics["curriculum/episodes/2"] == 2.0
        assert metrics["curriculum/level"] == 2.0
        assert 0.0 <= metrics["curriculum/success/2"] <= 1.0
    for trajectories in seen:
        assert [t.group for t in trajectories] == [0, 0, 1, 1]
        levels = [t.metadata["curriculum"]["difficulty"] for t in trajectories]
        assert levels == [1, 1, 2, 2]
        # The level reaches the env: difficulty 1 is a 4x4 lake, difficulty 2 a 5x5 one.
        assert all("-d1-4x4-" in t.task_id for t in trajectories[:2])
        assert all("-d2-5x5-" in t.task_id for t in trajectories[2:])


def test_adaptive_curriculum_is_logged_checkpointed_and_resumed(tmp_path):
    from rllm_adapters.trainer.trainer import PPOTrainer

    # band [0, 0]: any success promotes, none stays; window 4 = one iteration's episodes.
    curriculum = {"kind": "adaptive", "levels": [1, 2, 3], "band": [0.0, 0.0], "window": 4}
    config = _config(tmp_path, curriculum)
    with PPOTrainer(config) as trainer:
        history = trainer.train()
        state = trainer.rollouts.state_dict()
    rows = read_metrics(tmp_path / "run" / "metrics.jsonl")
    assert len(rows) == len(history) == 2
    assert all("curriculum/level" in r and "curriculum/success/1" in r for r in rows)
    saved = json.loads((tmp_path / "run" / "checkpoint" / "trainer_state.json").read_text())
    assert saved["curriculum"] == json.loads(json.dumps(state))
    resumed_config = _config(tmp_path, curriculum, iterations=3)
    with PPOTrainer(resumed_config) as resumed:
        assert resumed.iteration == 2
        assert resumed.rollouts.state_dict() == json.loads(json.dumps(state))


def test_without_a_curriculum_one_pool_serves_every_iteration(tmp_path):
    from rllm_adapters.trainer.trainer import PPOTrainer

    with PPOTrainer(_config(tmp_path, None)) as trainer:
        first = trainer.step()
        workers = _worker_ids(trainer)
        trainer.step()
        assert list(workers) == [-1] and len(workers[-1]) == 4
        assert _worker_ids(trainer) == workers
    assert not any(key.startswith("curriculum/") for key in first)


def test_a_level_the_env_rejects_raises_before_training(tmp_path):
    from rllm_adapters.trainer.trainer import PPOTrainer

    with pytest.raises(InvalidEnvConfig, match="difficulty"):
        PPOTrainer(_config(tmp_path, {"kind": "uniform", "levels": [1, 9]}))
