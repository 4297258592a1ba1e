"""Training throughput: our GRPO step (DeepSpeed ZeRO-0, fp32) vs TRL's ``GRPOTrainer`` step.

Same tiny model (hidden 128, 2 layers), same batch: 4 prompts x 4 samples of fixed token ids
(64 prompt + 32 completion tokens) with fixed rewards. Both run one optimizer step over the
whole batch per round, generation excluded (TRL gets the completions from a ``rollout_func``,
ours from a ``rollout_fn``). Ours does strictly more work per step: it recomputes the old
policy's logprobs in an extra forward pass (TRL skips that when ``num_iterations == 1``).
Metric: tokens/s of ours over TRL's (goal >= 1.0).

``RLLM_BENCH_MODEL=smollm2-135m-instruct`` runs the same comparison on the real model
(:mod:`adapters.models`; same batch and lengths, fewer rounds).
"""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
trl = pytest.importorskip("trl")

PROMPTS, GROUP, PROMPT_LEN, COMPLETION_LEN = 4, 4, 64, 32
BATCH = PROMPTS * GROUP
TOKENS = BATCH * (PROMPT_LEN + COMPLETION_LEN)
#: A model name or folder (``adapters.models``).
MODEL = os.environ.get("RLLM_BENCH_MODEL", "tiny")
ROUNDS, WARMUP = (10, 2) if MODEL == "tiny" else (3, 1)


def _data(vocab: int):
    gen = torch.Generator().manual_seed(0)
    prompts = [
        torch.randint(10, vocab, (PROMPT_LEN,), generator=gen).tolist() for _ in range(PROMPTS)
    ]
    completions = [
        torch.randint(10, vocab, (COMPLETION_LEN,), generator=gen).tolist() for _ in range(BATCH)
    ]
    rewards = [float(i % 3 == 0) for i in range(BATCH)]
    return prompts, completions, rewards


@pytest.fixture(scope="module")
def tiny():
    from adapters.models import resolve_model

    return resolve_model(MODEL)


def _vocab(path: str) -> int:
    import json
    from pathlib import Path

    # Token ids stay inside the vocabulary of both models (the tiny BPE has about 780).
    return min(780, json.loads((Path(path) / "config.json").read_text())["vocab_size"])


@pytest.fixture(scope="module")
def ours(tiny, tmp_path_factory):
    from adapters.trainer.config import config_from_dict
    from adapters.trainer.trainer import PPOTrainer
    from rllm_agents.trajectory import Step, Trajectory

    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    config = config_from_dict(
        {
            "model": tiny,
            "algorithm": {
                "advantage": "grpo",
                "ppo_epochs": 1,
                "mini_batch_size": BATCH,
                "micro_batch_size": BATCH,
            },
            "rollout": {"num_tasks": PROMPTS, "group_size": GROUP},
            "optim": {"lr": 1e-5},
            "train": {"output_dir": str(tmp_path_factory.mktemp("ours")), "resume": False},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    prompts, completions, rewards = _data(_vocab(tiny))
    trajectories = []
    for i, (completion, reward) in enumerate(zip(completions, rewards, strict=True)):
        step = Step(
            prompt_ids=prompts[i // GROUP],
            completion_ids=completion,
            logprobs=[-1.0] * COMPLETION_LEN,
            response="",
            action="",
            reward=reward,
            terminated=True,
        )
        trajectories.append(Trajectory(env_id="bench", group=i // GROUP, steps=[step]))
    trainer = PPOTrainer(config, rollout_fn=lambda policy, it: trajectories)
    yield trainer
    trainer.close()


@pytest.fixture(scope="module")
def theirs(tiny, tmp_path_factory):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    prompts, completions, rewards = _data(_vocab(tiny))
    texts = [f"prompt {i}" for i in range(PROMPTS)]

    def rollout_func(batch_prompts, trainer):
        # One completion per prompt entry (the batch already holds each prompt GROUP times).
        index = {t: i for i, t in enumerate(texts)}
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for j, text in enumerate(batch_prompts):
            out["prompt_ids"].append(prompts[index[text]])
            out["completion_ids"].append(completions[j % BATCH])
            out["logprobs"].append([-1.0] * COMPLETION_LEN)
        return out

    def reward(prompts, completions, **kw):
        return [rewards[i % BATCH] for i in range(len(completions))]

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    args = GRPOConfig(
        output_dir=str(tmp_path_factory.mktemp("trl")),
        use_cpu=True,
        bf16=False,
        report_to="none",
        per_device_train_batch_size=BATCH,
        num_generations=GROUP,
        max_completion_length=COMPLETION_LEN,
        learning_rate=1e-5,
        beta=0.0,
        max_steps=1000,
        logging_steps=1000,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=tiny,
        reward_funcs=reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": texts * GROUP}),
        rollout_func=rollout_func,
    )
    trainer.create_optimizer()
    # Set by `train()` in the HF loop; we drive the steps ourselves.
    trainer.current_gradient_accumulation_steps = 1
    trainer.model.train()
    rows = [{"prompt": t} for t in texts for _ in range(GROUP)]

    def step():
        trainer.training_step(trainer.model, rows, None)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad()

    return step


def test_trl_grpo_step(benchmark, theirs):
    benchmark.extra_info.update(tokens=TOKENS, model=MODEL)
    benchmark.pedantic(theirs, rounds=ROUNDS, warmup_rounds=WARMUP, iterations=1)


def test_ours_grpo_step(benchmark, ours):
    benchmark.extra_info.update(
        baseline="test_trl_grpo_step", metric="speedup", goal=1.0, tokens=TOKENS, model=MODEL
    )
    benchmark.pedantic(ours.step, rounds=ROUNDS, warmup_rounds=WARMUP, iterations=1)
