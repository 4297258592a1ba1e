"""Training throughput: one GRPO iteration of ours (DeepSpeed ZeRO-0) vs TRL's ``GRPOTrainer``.

Same model, same batch: 4 prompts x 4 samples of fixed token ids (64 prompt + 32 completion
tokens, no padding) with fixed rewards, one optimizer step over the whole batch per iteration,
and the same torch thread count on both sides (set once for the process, recorded per row).
Each side is driven through its public entry point:

* ours: :meth:`PPOTrainer.step` (one iteration), episodes from a ``rollout_fn``;
* TRL: ``GRPOTrainer.train()`` on a dataset of the 4 prompts, with a ``reward_funcs`` and the
  completions from its public ``rollout_func``; each step is timed by a ``TrainerCallback``
  (``on_step_begin`` to ``on_step_end``: inputs, rewards, advantages, forward, backward,
  clipping, optimizer and scheduler step).

The work per iteration is the same: one forward and backward of the 16 sequences, logits only
for the completion tokens, logprobs and entropies, a clipped policy loss, gradient clipping at
1.0 and an AdamW step. Neither side runs a separate scoring pass: ours skips it when one epoch
of one mini-batch has no critic, no reward-KL and no rollout logprobs, TRL when
``num_iterations == 1`` without vLLM; ``beta = 0`` and ``kl_coef = 0`` (no reference model).
Checked on both sides: a forward hook counts exactly one forward of the model per step.

What differs, left as each library does it: TRL's default ``gradient_checkpointing=True`` is
turned off (ours does not checkpoint, and recomputing activations is extra work); TRL keeps
its fused AdamW (``adamw_torch_fused``) and linear LR decay, ours uses torch's AdamW through
DeepSpeed with a constant LR; TRL decodes the completions and calls the reward function in its
step, ours writes a few samples to ``samples.jsonl``.

Rows: ``ours_grpo_step`` (speedup over TRL, warm steps; goal >= 1.0) and
``ours_grpo_step_bf16`` (ours in bf16 over ours in fp32: chooses the dtype). The first step of
each side is reported as ``cold``, the rest as ``warm``.

``RLLM_BENCH_MODEL=smollm2-135m-instruct`` runs the same comparison on the real model
(:mod:`rllm_adapters.models`; same batch and lengths, fewer steps).
"""

from __future__ import annotations

import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.provenance import load_1m

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
trl = pytest.importorskip("trl")

PROMPTS, GROUP, PROMPT_LEN, COMPLETION_LEN = 4, 4, 64, 32
BATCH = PROMPTS * GROUP
TOKENS = BATCH * (PROMPT_LEN + COMPLETION_LEN)
#: A model name or folder (``rllm_adapters.models``).
MODEL = os.environ.get("RLLM_BENCH_MODEL", "tiny")
#: Warm steps measured after the first (cold) one.
WARM_STEPS = 8 if MODEL == "tiny" else 2
#: One torch thread count for the whole process, so both trainers run with it.
THREADS = max(1, min(2, os.cpu_count() or 1))
torch.set_num_threads(THREADS)
#: What one benchmark measured, for the next one's ratio (pytest runs the file in order).
RESULTS: dict[str, dict[str, Any]] = {}


def _steps(benchmark, warm: int = WARM_STEPS) -> int:
    return 2 if benchmark.disabled else 1 + warm


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
def model_path():
    from rllm_adapters.models import resolve_model

    return resolve_model(MODEL)


def _vocab(path: str) -> int:
    # Token ids stay inside the vocabulary of both models (the tiny BPE has about 780).
    return min(780, json.loads((Path(path) / "config.json").read_text())["vocab_size"])


def _summary(times: list[float]) -> dict[str, Any]:
    """Cold (first step) and warm (the others) seconds per step."""
    warm = times[1:] or times
    return {
        "cold_s": round(times[0], 4),
        "warm_mean_s": round(statistics.fmean(warm), 4),
        "warm_median_s": round(statistics.median(warm), 4),
        "steps": len(times),
        "threads": torch.get_num_threads(),
    }


def _ours(model_path: str, output_dir: Path, bf16: bool):
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer
    from rllm_agents.trajectory import Step, Trajectory

    config = config_from_dict(
        {
            "model": model_path,
            "algorithm": {
                "advantage": "grpo",
                "ppo_epochs": 1,
                "mini_batch_size": BATCH,
                "micro_batch_size": BATCH,
                "kl_coef": 0.0,
            },
            "rollout": {"num_tasks": PROMPTS, "group_size": GROUP},
            "optim": {"lr": 1e-5, "max_grad_norm": 1.0},
            "deepspeed": {"zero_stage": 0, "bf16": bf16},
            "train": {"output_dir": str(output_dir), "resume": False},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    prompts, completions, rewards = _data(_vocab(model_path))
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
    return PPOTrainer(config, rollout_fn=lambda policy, it: trajectories)


def _run_ours(
    benchmark, model_path: str, output_dir: Path, bf16: bool, warm: int = WARM_STEPS
) -> dict[str, Any]:
    start = time.perf_counter()
    trainer = _ours(model_path, output_dir, bf16)
    setup_s = time.perf_counter() - start
    torch.set_num_threads(THREADS)  # whatever the construction did
    times: list[float] = []
    forwards = _count_forwards(trainer.actor.module)

    def run() -> None:
        for _ in range(_steps(benchmark, warm)):
            t0 = time.perf_counter()
            trainer.step()
            times.append(time.perf_counter() - t0)

    try:
        benchmark.pedantic(run, rounds=1, iterations=1)
    finally:
        trainer.close()
    _check_one_forward(forwards, len(times), "ours")
    return {**_summary(times), "setup_s": round(setup_s, 2), "forwards_per_step": 1}


def _count_forwards(module: Any) -> list[int]:
    """Count the model's forward passes (a scoring pass would be a second one per step)."""
    calls = [0]

    def hook(*_: Any) -> None:
        calls[0] += 1

    module.register_forward_pre_hook(hook)
    return calls


def _check_one_forward(calls: list[int], steps: int, side: str) -> None:
    if calls[0] != steps:
        raise AssertionError(f"{side} ran {calls[0]} forward passes in {steps} steps, not one each")


def _trl_trainer(model_path: str, output_dir: Path, steps: int, callback: Any):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    prompts, completions, rewards = _data(_vocab(model_path))
    texts = [f"prompt {i}" for i in range(PROMPTS)]
    index = {t: i for i, t in enumerate(texts)}

    def rollout_func(batch_prompts: list[str], trainer: Any) -> dict[str, list]:
        # The batch holds each prompt GROUP times in a row (unshuffled): entry j gets
        # completion j, exactly as ours pairs trajectory j with prompt j // GROUP.
        out: dict[str, list] = {"prompt_ids": [], "completion_ids": [], "logprobs": []}
        for j, text in enumerate(batch_prompts):
            out["prompt_ids"].append(prompts[index[text]])
            out["completion_ids"].append(completions[j % BATCH])
            out["logprobs"].append([-1.0] * COMPLETION_LEN)
        return out

    def reward(prompts: list[str], completions: list[str], **kw: Any) -> list[float]:
        return [rewards[i % BATCH] for i in range(len(completions))]

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    args = GRPOConfig(
        output_dir=str(output_dir),
        use_cpu=True,
        bf16=False,
        report_to="none",
        per_device_train_batch_size=BATCH,
        num_generations=GROUP,
        max_completion_length=COMPLETION_LEN,
        learning_rate=1e-5,
        max_grad_norm=1.0,
        beta=0.0,
        num_iterations=1,
        gradient_checkpointing=False,
        shuffle_dataset=False,
        max_steps=steps,
        logging_steps=10**6,
        save_strategy="no",
        disable_tqdm=True,
    )
    return GRPOTrainer(
        model=model_path,
        reward_funcs=reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": texts}),
        rollout_func=rollout_func,
        callbacks=[callback],
    )


def _step_timer() -> Any:
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        """Seconds from ``on_step_begin`` to ``on_step_end`` of every optimizer step."""

        def __init__(self) -> None:
            self.times: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):  # noqa: D102
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):  # noqa: D102
            self.times.append(time.perf_counter() - self._start)

    return StepTimer()


def test_trl_grpo_step(benchmark, model_path, tmp_path):
    timer = _step_timer()
    start = time.perf_counter()
    trainer = _trl_trainer(model_path, tmp_path, _steps(benchmark), timer)
    setup_s = time.perf_counter() - start
    args = trainer.args
    # TRL skips the old-policy scoring pass exactly when this holds (and vLLM is off).
    if args.gradient_accumulation_steps % (args.steps_per_generation * args.num_iterations):
        raise AssertionError("TRL would run a scoring pass: the work would differ")
    torch.set_num_threads(THREADS)
    forwards = _count_forwards(trainer.model)
    benchmark.pedantic(trainer.train, rounds=1, iterations=1)
    _check_one_forward(forwards, len(timer.times), "TRL")
    RESULTS["trl"] = {**_summary(timer.times), "setup_s": round(setup_s, 2), "forwards_per_step": 1}
    benchmark.extra_info.update(tokens=TOKENS, model=MODEL, **RESULTS["trl"])


def test_ours_grpo_step(benchmark, model_path, tmp_path):
    RESULTS["ours"] = ours = _run_ours(benchmark, model_path, tmp_path, bf16=False)
    trl_ = RESULTS.get("trl", {})
    nan = float("nan")
    benchmark.extra_info.update(
        baseline="test_trl_grpo_step",
        metric="speedup",
        ratio=trl_.get("warm_mean_s", nan) / ours["warm_mean_s"],
        goal=1.0,
        warm={"unit": "s/step", "ours": ours["warm_mean_s"], "baseline": trl_.get("warm_mean_s")},
        cold={"unit": "s/step", "ours": ours["cold_s"], "baseline": trl_.get("cold_s")},
        cold_ratio=round(trl_.get("cold_s", nan) / ours["cold_s"], 3),
        ours=ours,
        trl=trl_,
        tokens=TOKENS,
        model=MODEL,
        dtype="float32",
        load_1m=load_1m(),
        note=(
            f"{BATCH} sequences x ({PROMPT_LEN} + {COMPLETION_LEN}) tokens, `{MODEL}` in "
            f"float32, {ours['threads']} torch threads on both sides, {ours['steps'] - 1} warm "
            f"steps a side, one forward per step on both (checked); setup (model, engine): ours "
            f"{ours['setup_s']} s, TRL {trl_.get('setup_s')} s"
        ),
    )


def test_ours_grpo_step_bf16(benchmark, model_path, tmp_path):
    # bf16 matmuls are emulated on an AVX2 CPU (no AVX512-BF16/AMX): one warm step suffices.
    warm = WARM_STEPS if MODEL == "tiny" else 1
    bf16 = _run_ours(benchmark, model_path, tmp_path, bf16=True, warm=warm)
    fp32 = RESULTS.get("ours", {})
    nan = float("nan")
    benchmark.extra_info.update(
        bound="ours in float32 (test_ours_grpo_step)",
        metric="speedup",
        ratio=fp32.get("warm_mean_s", nan) / bf16["warm_mean_s"],
        warm={"unit": "s/step", "ours": bf16["warm_mean_s"], "baseline": fp32.get("warm_mean_s")},
        cold={"unit": "s/step", "ours": bf16["cold_s"], "baseline": fp32.get("cold_s")},
        ours=bf16,
        tokens=TOKENS,
        model=MODEL,
        dtype="bfloat16",
        baseline_dtype="float32",
        load_1m=load_1m(),
        note=(
            f"ours in bf16 (DeepSpeed bf16, fp32 master weights; measured) vs ours in float32 "
            f"(baseline), the batch above, {bf16['threads']} torch threads, measured one after "
            "the other"
        ),
    )
