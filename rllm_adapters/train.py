"""Command line: train a policy from a YAML config (RL, or SFT for ``kind: sft`` configs).

::

    python -m rllm_adapters.train --config configs/frozenlake_ppo.yaml
    python -m rllm_adapters.train --config configs/frozenlake_sft.yaml        # SFT (kind: sft)
    python -m rllm_adapters.train --config configs/frozenlake_distill_rl.yaml # RL from its model
    python -m rllm_adapters.train --config configs/frozenlake_ppo.yaml optim.lr=3e-4
    deepspeed --num_gpus 8 -m rllm_adapters.train --config configs/my_run.yaml   # multi-GPU
    torchrun --nproc_per_node 2 -m rllm_adapters.train --config configs/my_run.yaml
    python -m rllm_adapters.train --plot runs/frozenlake_ppo/metrics.jsonl --out curve.png
    python -m rllm_adapters.train --samples runs/frozenlake_ppo/samples.jsonl --out samples.md

The first SIGINT (Ctrl-C) or SIGTERM finishes the current iteration, writes the checkpoint and
the final model and exits with status 0; the same command resumes from the checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m rllm_adapters.train",
        description="PPO/GRPO/RLOO training of a language model on an rllm-envs environment, "
        "or SFT on stored episodes (a config with `kind: sft` or an `sft:` section).",
    )
    parser.add_argument("--config", help="YAML config file (see configs/)")
    parser.add_argument(
        "overrides", nargs="*", help="dotted overrides, e.g. optim.lr=3e-4 train.iterations=5"
    )
    parser.add_argument("--local_rank", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--print-config", action="store_true", help="print the resolved config and exit"
    )
    parser.add_argument("--plot", metavar="METRICS_JSONL", help="plot a run's learning curve")
    parser.add_argument(
        "--samples", metavar="SAMPLES_JSONL", help="render a run's samples.jsonl as Markdown"
    )
    parser.add_argument(
        "--last", type=int, default=None, help="--samples: only the last N iterations"
    )
    parser.add_argument(
        "--out",
        default=None,
        help="file written by --plot (default learning_curve.png) or --samples (default: stdout)",
    )
    parser.add_argument("--title", default="", help="title of the --plot figure")
    parser.add_argument(
        "--random-success", type=float, default=None, help="reference line for --plot"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.plot:
        from rllm_adapters.trainer.metrics import plot_learning_curve

        out = plot_learning_curve(
            args.plot,
            args.out or "learning_curve.png",
            title=args.title,
            random_success=args.random_success,
        )
        print(f"[train] wrote {out}", file=sys.stderr)
        return 0
    if args.samples:
        from rllm_adapters.trainer.metrics import render_samples_markdown

        text = render_samples_markdown(args.samples, iterations=args.last)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
            print(f"[train] wrote {args.out}", file=sys.stderr)
        else:
            sys.stdout.write(text)
        return 0
    if not args.config:
        parser.error("--config is required (or --plot, --samples)")
    from rllm_adapters.trainer.config import config_from_dict, read_config_mapping
    from rllm_adapters.trainer.sft_config import SFTConfig, is_sft_config, sft_config_from_dict

    # One loader for both kinds; the kind picks the dataclass and the trainer.
    data = read_config_mapping(args.config, args.overrides)
    config = sft_config_from_dict(data) if is_sft_config(data) else config_from_dict(data)
    if args.print_config:
        print(json.dumps(config.to_dict(), indent=2))
        return 0
    if isinstance(config, SFTConfig):
        from rllm_adapters.trainer.sft import SFTTrainer, sft_summary

        _run(SFTTrainer(config), sft_summary, _sft_result)
    else:
        from rllm_adapters.trainer.trainer import PPOTrainer, config_summary

        _run(PPOTrainer(config), lambda config, trainer: config_summary(config), _rl_result)
    return 0


def _run(
    trainer: Any, summary: Callable[[Any, Any], str], result: Callable[[Any, Any], str]
) -> None:
    with trainer:
        if trainer.is_main:
            print(f"[train] {summary(trainer.config, trainer)}", file=sys.stderr)
        history = trainer.train()
        if trainer.is_main and history:
            print(f"[train] {result(trainer, history[-1])}", file=sys.stderr)


def _rl_result(trainer: Any, last: dict[str, Any]) -> str:
    return (
        f"{trainer.iteration} iterations, {trainer.episodes} episodes, "
        f"{trainer.elapsed:.0f}s; last success {last.get('rollout/success', 0):.3f}, "
        f"reward {last.get('rollout/reward', 0):.3f} -> {trainer.output_dir}"
    )


def _sft_result(trainer: Any, last: dict[str, Any]) -> str:
    return (
        f"sft: {trainer.iteration} steps, {trainer.episodes} episodes, "
        f"{trainer.elapsed:.0f}s; last loss {last.get('sft/loss', 0):.4f}, token "
        f"accuracy {last.get('sft/token_accuracy', 0):.3f} -> "
        f"{trainer.output_dir / 'final_model'}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
