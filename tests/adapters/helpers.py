"""Assertions and settings shared by the adapter tests."""

from __future__ import annotations

import pytest


def assert_token_exact(trajectory, tokenizer=None):
    """The invariant plus per-step alignment; with a tokenizer, observations are in the ids."""
    trajectory.check_token_exact()
    assert trajectory.token_exact
    mask = trajectory.loss_mask()
    assert sum(mask) == trajectory.num_completion_tokens
    assert len(trajectory.logprobs()) == len(trajectory.token_ids()) == len(mask)
    for index, step in enumerate(trajectory.steps):
        assert len(step.logprobs) == len(step.completion_ids)
        assert all(lp <= 1e-4 for lp in step.logprobs)
        if tokenizer is not None and index + 1 < len(trajectory.steps):
            nxt = trajectory.steps[index + 1].prompt_ids
            appended = nxt[len(step.prompt_ids) + len(step.completion_ids) :]
            text = tokenizer.decode(appended)
            assert step.observation in text
            # The appended part never carries loss.
            start = len(step.prompt_ids) + len(step.completion_ids)
            assert not any(trajectory.loss_mask()[start : start + len(appended)])
    if tokenizer is not None and trajectory.steps:
        first = tokenizer.decode(trajectory.steps[0].prompt_ids)
        assert trajectory.initial_observation in first


def hf_greedy(model, prompt, n):
    """Greedy ``n`` new tokens of a transformers model (no end-of-sequence stop)."""
    import torch

    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=n,
            do_sample=False,
            eos_token_id=None,
            pad_token_id=0,
        )
    return out[0, len(prompt) :].tolist()


def grpo_args(tmp_path, **overrides):
    """TRL ``GRPOConfig`` for a few CPU steps of the tiny model: 2 steps of 4 prompts x 4
    generations of 8 tokens, no saving, no reporting; ``overrides`` replace any of them."""
    trl = pytest.importorskip("trl")
    settings = dict(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        report_to="none",
        max_steps=2,
        per_device_train_batch_size=4,
        num_generations=4,
        max_completion_length=8,
        logging_steps=1,
        save_strategy="no",
        learning_rate=1e-3,
        seed=0,
    )
    settings.update(overrides)
    return trl.GRPOConfig(**settings)


def lora_grpo_config(output_dir, max_turns=3, **train):
    """A one-iteration GRPO run of the tiny model with LoRA adapters on 4x4 FrozenLake."""
    from rllm_adapters.trainer.config import config_from_dict

    return config_from_dict(
        {
            "model": "tiny",
            "env": "rllm/FrozenLake-v1",
            "env_kwargs": {"map_name": "4x4", "is_slippery": False, "max_turns": max_turns},
            "rollout": {
                "backend": "transformers",
                "num_tasks": 2,
                "group_size": 2,
                "max_tokens": 2,
                "agent": "rllm_agents.agent:FrozenLakeBoardAgent",
                "agent_kwargs": {"system_prompt": None},
            },
            "algorithm": {
                "advantage": "grpo",
                "ppo_epochs": 1,
                "mini_batch_size": 2,
                "micro_batch_size": 2,
                "entropy_coef": 0.01,
                "skip_zero_signal_groups": False,
            },
            "lora": {"r": 4, "alpha": 8.0},
            "optim": {"lr": 5e-2},
            "train": {"iterations": 1, "output_dir": str(output_dir), "seed": 0, **train},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
