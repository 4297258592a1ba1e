"""Where a real-model GRPO iteration goes: per-stage seconds for several trainer variants.

Runs ``python -m rllm_adapters.train`` on the real-model config for a few iterations per variant
and records the mean of each ``perf/*_s`` stage (rollout, old log-prob pass, reference,
advantages, forward/backward, optimizer, weight sync) with the machine's load average::

    python -m benchmarks.real_model_stages                       # every variant, 3 iterations
    python -m benchmarks.real_model_stages --variants full lora --iterations 2

Variants (overrides of ``configs/math_smollm2_grpo.yaml``):

* ``two_steps``: two optimizer steps per iteration (one epoch, mini-batches of half the
  batch), which needs the separate old log-prob pass, prompts shared;
* ``no_share``: one optimizer step per iteration (the update's own forward is the old
  policy), every episode's prompt run through forward and backward;
* ``full``: as ``no_share``, with a group's shared prompt run once
  (``algorithm.share_prompt``, the default);
* ``lora``: as ``full`` with LoRA adapters (rank 16) instead of full fine-tuning.

Writes ``benchmarks/results/real_model_stages.json``. Timings on a shared machine vary with
its load; compare variants from the same run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.provenance import load_1m, provenance

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CONFIG = ROOT / "configs" / "math_smollm2_grpo.yaml"
RESULTS = ROOT / "benchmarks" / "results" / "real_model_stages.json"

#: The variants (see the module docstring).
VARIANTS = ("two_steps", "no_share", "full", "lora")


def variant_overrides(name: str, batch: int) -> list[str]:
    """``key=value`` overrides of variant ``name`` for a rollout batch of ``batch`` episodes."""
    if name == "two_steps":
        return ["algorithm.ppo_epochs=1", f"algorithm.mini_batch_size={batch // 2}"]
    one_step = ["algorithm.ppo_epochs=1", f"algorithm.mini_batch_size={batch}"]
    if name == "no_share":
        return one_step + ["algorithm.share_prompt=false"]
    if name == "full":
        return one_step
    if name == "lora":
        return one_step + ["lora.r=16", "lora.alpha=32", "optim.lr=2.0e-4"]
    raise ValueError(f"Expects a variant in {VARIANTS}, actual: {name!r}.")


STAGES = (
    "rollout",
    "old_logprob",
    "reference",
    "critic_values",
    "advantages",
    "forward_backward",
    "optimizer",
    "sync",
    "iteration",
)


def _mean(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if isinstance(r.get(key), (int, float))]
    return round(sum(values) / len(values), 3) if values else None


def run_variant(
    name: str, config: Path, iterations: int, extra: Sequence[str], workdir: Path
) -> dict[str, Any]:
    """Train ``iterations`` iterations of one variant; return its mean stage seconds."""
    from rllm_adapters.trainer.config import RolloutSettings, read_config_mapping

    # Read without validating: the variant's own mini-batch makes the config valid.
    rollout = read_config_mapping(config, list(extra)).get("rollout") or {}
    defaults = RolloutSettings()
    batch = int(rollout.get("num_tasks", defaults.num_tasks)) * int(
        rollout.get("group_size", defaults.group_size)
    )
    overrides = variant_overrides(name, batch)
    out = workdir / name
    command = [
        sys.executable,
        "-m",
        "rllm_adapters.train",
        "--config",
        str(config),
        *extra,
        *overrides,
        f"train.iterations={iterations}",
        "train.max_wall_s=null",
        "train.save_every=0",
        "train.save_final_model=false",
        "train.resume=false",
        f"train.output_dir={out}",
        "logging.progress=false",
        "logging.tensorboard=false",
    ]
    load_before = load_1m()
    started = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT)
    rows = [
        json.loads(line)
        for line in (out / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    # The first iteration includes the engine's warm-up: report it apart.
    steady = rows[1:] or rows
    return {
        "overrides": list(extra) + overrides,
        "iterations": len(rows),
        "wall_s": round(time.perf_counter() - started, 1),
        "load_average_1m": [load_before, load_1m()],
        "stages_s": {stage: _mean(steady, f"perf/{stage}_s") for stage in STAGES},
        "first_iteration_s": rows[0].get("perf/iteration_s") if rows else None,
        "train_tokens": _mean(steady, "perf/train_tokens"),
        # Peak resident memory of the trainer process (the in-process vLLM engine included).
        "max_rss_gib": max((float(r.get("perf/max_rss_gib", 0.0)) for r in rows), default=None),
        "rollout_tokens_per_s": _mean(steady, "perf/rollout_tokens_per_s"),
        "reward": [r.get("rollout/reward") for r in rows],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.real_model_stages``."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.real_model_stages", description=__doc__
    )
    parser.add_argument("--config", type=Path, default=DEFAULT_CONFIG)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "overrides", nargs="*", help="extra `key=value` overrides for every variant"
    )
    args = parser.parse_args(argv)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rllm-stages-") as tmp:
        for name in args.variants:
            results[name] = run_variant(
                name, args.config, args.iterations, args.overrides, Path(tmp)
            )
    record = {
        **provenance("benchmarks.real_model_stages", argv),
        "config": str(args.config.resolve().relative_to(ROOT))
        if args.config.resolve().is_relative_to(ROOT)
        else str(args.config),
        # Each variant records the load before and after it: compare variants of one run.
        "variants": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    for name, r in results.items():
        stages = ", ".join(f"{k} {v}" for k, v in r["stages_s"].items() if v)
        print(f"{name}: {stages}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
