"""Smoke run of ``python -m benchmarks.curriculum`` with a tiny budget, in a subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("deepspeed")

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_curriculum_benchmark_runs_both_arms_and_writes_the_comparison(tmp_path):
    out = tmp_path / "curriculum.json"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.curriculum",
            "--iterations",
            "1",
            "--runs",
            str(tmp_path / "runs"),
            "--out",
            str(out),
            # The transformers backend: no vLLM engine in a test.
            "rollout.backend=transformers",
            "rollout.engine_kwargs={}",
            "rollout.num_tasks=2",
            "rollout.group_size=2",
            "algorithm.mini_batch_size=4",
            "algorithm.micro_batch_size=4",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    data = json.loads(out.read_text())
    assert set(data["episodes_to_target"]) == {"adaptive", "uniform"}
    for kind in ("adaptive", "uniform"):
        arm = data["runs"]["0"]["arms"][kind]
        assert arm["kind"] == kind and len(arm["curve"]) == 1
        assert arm["curve"][0]["episodes"] == 4
    assert 0 <= data["baselines_at_hardest"]["random_move"] <= 1
    assert data["commit"] and data["machine"]["versions"]
