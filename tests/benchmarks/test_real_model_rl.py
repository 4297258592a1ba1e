"""The real-model RL results file: the goal, what the hour bought, and its README block."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import readme, real_model_rl
from benchmarks.real_model_rl import GOAL_RATIO, _training_summary, goal


def _eval(correct: int, n: int = 200) -> dict:
    from benchmarks.heldout import wilson_interval

    return {
        "pass_at_1": correct / n,
        "ci95": list(wilson_interval(correct, n)),
        "correct": correct,
        "num_tasks": n,
        "format_rate": 0.9,
    }


def test_goal_needs_the_ratio_and_intervals_apart():
    assert GOAL_RATIO == 1.5
    # 8% -> 12%: 1.5x, but the intervals overlap at n=200.
    assert goal(_eval(16), _eval(24)) == {
        "ratio_target": 1.5,
        "ratio": 1.5,
        "ratio_met": True,
        "intervals_apart": False,
        "met": False,
    }
    assert goal(_eval(16), _eval(40))["met"]
    assert not goal(_eval(16), _eval(20))["ratio_met"]
    # A base of zero: any correct answer is an unbounded ratio.
    assert goal(_eval(0), _eval(12))["ratio"] is None and goal(_eval(0), _eval(12))["ratio_met"]


def test_training_summary_counts_updates_and_their_pace(tmp_path):
    rows = [
        {"iteration": 1, "time_s": 100.0, "rollout/success": 0.05, "perf/update_s": 40.0},
        {"iteration": 2, "time_s": 250.0, "batch/update_skipped": 1.0, "rollout/success": 0.0},
        {"iteration": 3, "time_s": 400.0, "rollout/success": 0.1, "perf/update_s": 50.0},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = _training_summary(tmp_path)
    assert summary["iterations"] == 3 and summary["updates"] == 2
    assert summary["updates_skipped"] == 1 and summary["seconds_per_update"] == 200.0
    assert summary["stages_s"]["update_s"] == 45.0
    assert summary["success_curve"] == [0.05, 0.0, 0.1]


def test_readme_block_says_whether_the_goal_was_met(tmp_path, monkeypatch):
    base, trained = _eval(16), _eval(24)
    record = {
        "time": "2026-12-01T00:00:00Z",
        "command": "python -m benchmarks.real_model_rl",
        "config": "configs/math_smollm2_grpo_fast.yaml",
        "machine": {
            "cpu_count": 2,
            "load_average_1m_during": {"min": 2.0, "mean": 5.0, "max": 9.0, "samples": 3},
        },
        "base": base,
        "trained": trained,
        "goal": goal(base, trained),
        "training": {"iterations": 12, "updates": 11, "seconds_per_update": 240.0},
    }
    (tmp_path / "real_model_rl.json").write_text(json.dumps(record))
    monkeypatch.setattr(readme, "RESULTS", tmp_path)
    block = readme.render("real_model_rl")
    assert "| before (base model) | **8.0%** (16/200)" in block
    assert ">= 1.5x the base, 95% intervals apart): **missed** (ratio 1.50x" in block
    assert "(11 updates, 240 s per update)" in block and "load 2.0-9.0 (mean 5.0)" in block


@pytest.mark.parametrize("key", ["base", "trained"])
def test_committed_results_file_renders(key):
    # The committed file (old or new layout) renders without error.
    data = json.loads((readme.RESULTS / "real_model_rl.json").read_text())
    assert key in data
    assert "held-out pass@1" in readme.render("real_model_rl")


def test_held_out_evaluation_uses_the_runs_backend(tmp_path, monkeypatch):
    # A run generating with transformers (a GPU machine without vLLM) is evaluated with it too.
    seen = []

    def fake_run(command, **kwargs):  # a stand-in for the evaluation subprocess
        seen.append(command)
        out = Path(command[command.index("--out") + 1])
        out.write_text('{"pass_at_1": 0.5}')

    monkeypatch.setattr(real_model_rl.subprocess, "run", fake_run)
    config = {
        "env": "rllm/Math-v1",
        "rollout": {"backend": "transformers", "engine_kwargs": {"device": "cuda"}},
    }
    assert real_model_rl._evaluate("m", config, 4, tmp_path / "e.json") == {"pass_at_1": 0.5}
    command = seen[0]
    assert command[command.index("--backend") + 1] == "transformers"
    assert json.loads(command[command.index("--engine-kwargs") + 1]) == {"device": "cuda"}


def test_another_results_file_gets_its_own_curve():
    from benchmarks.real_model_rl import CURVE, RESULTS, ROOT, curve_path

    assert curve_path(RESULTS) == CURVE
    short = curve_path(ROOT / "benchmarks" / "results" / "real_model_rl_short.json")
    assert short != CURVE and short.name == "real_model_rl_short.png"


def test_a_lora_run_is_set_against_the_full_runs_first_iterations(tmp_path, monkeypatch):
    def record(overrides, rewards, update_s):
        return {
            "time": "2026-12-01T00:00:00Z",
            "command": "python -m benchmarks.real_model_rl",
            "config": "configs/math_smollm2_grpo_fast.yaml",
            "overrides": overrides,
            "machine": {"cpu_count": 2},
            "base": _eval(16),
            "trained": _eval(20),
            "training": {
                "iterations": len(rewards),
                "updates": len(rewards),
                "seconds_per_update": 20.0,
                "reward_curve": rewards,
                "success_curve": [r / 2 for r in rewards],
                "stages_s": {"update_s": update_s},
            },
        }

    full = record([], [0.1, 0.2, 0.3, 0.9], 7.5)
    lora = record(["lora.r=16", "lora.alpha=32", "optim.lr=2.0e-4"], [0.1, 0.1, 0.4], 3.0)
    (tmp_path / "real_model_rl.json").write_text(json.dumps(full))
    (tmp_path / "real_model_rl_lora.json").write_text(json.dumps(lora))
    monkeypatch.setattr(readme, "RESULTS", tmp_path)
    block = readme.render("real_model_rl_lora")
    # The full run's first 3 iterations (same tasks), not its whole curve.
    assert "| training reward, mean of iterations 1-3 | 0.200 | 0.200 |" in block
    assert "| sampled success, mean of iterations 1-3 | 0.100 | 0.100 |" in block
    assert "all its 4) | 7.5 | 3.0 |" in block
    assert "LoRA (lora.r=16, lora.alpha=32, optim.lr=2.0e-4)" in block
    # The full run's own block has no such table.
    assert "first 4 iterations" not in readme.render("real_model_rl")
