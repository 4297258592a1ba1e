from __future__ import annotations

import json

import pytest

from benchmarks import main as main_job


def test_main_job_scripted_policies_only(tmp_path):
    argv = [
        "--envs",
        "rllm/FrozenLake-v0",
        "rllm/TicTacToe-v0",
        "--n-tasks",
        "3",
        "--out",
        str(tmp_path),
        "--skip-train",
    ]
    assert main_job.main(argv) == 0
    md = (tmp_path / "leaderboard.md").read_text()
    assert "| oracle | " in md and "| random | " in md
    assert (tmp_path / "index.html").exists()


def test_main_job_trains_then_evaluates_the_checkpoint(tmp_path):
    """The whole pipeline on a tiny budget: 1 PPO iteration, then the trained policy is ranked."""
    pytest.importorskip("vllm")
    pytest.importorskip("deepspeed")
    argv = [
        "--envs",
        "rllm/FrozenLake-v0",
        "--n-tasks",
        "2",
        "--out",
        str(tmp_path),
        "--train-override",
        "train.iterations=1",
        "--train-override",
        "rollout.group_size=16",
        "--random-baseline-episodes",
        "300",
    ]
    assert main_job.main(argv) == 0
    assert (tmp_path / "train" / "final_model" / "config.json").exists()
    assert (tmp_path / "train" / "learning_curve.png").stat().st_size > 10_000
    meta = json.loads((tmp_path / "runs" / "trained-ppo" / "meta.json").read_text())
    assert meta["policy"]["backend"] == "vllm" and meta["policy"]["temperature"] == 0.0
    # Trained decoding on its env only; the env's own agent and a real budget elsewhere.
    lake = meta["policy"]["env_settings"]["rllm/FrozenLake-v0"]
    assert lake["agent"] == "adapters.trainer.agents:FrozenLakeBoardAgent"
    # Elsewhere no global cap: each env's agent family sets its own limit (max_tokens None).
    assert lake["max_tokens"] == 1 and meta["policy"]["max_tokens"] is None
    # Every policy plays the trained map and random maps of its size.
    oracle = json.loads((tmp_path / "runs" / "oracle" / "meta.json").read_text())
    assert oracle["config"]["env_kwargs"] == {
        "rllm/FrozenLake-v0@trained-map": {"map_name": "4x4", "is_slippery": False},
        "rllm/FrozenLake-v0@random-4x4": {"size": 4, "is_slippery": False},
    }
    baseline = json.loads((tmp_path / "train" / "random_baseline.json").read_text())
    assert baseline["episodes"] == 300 and 0 <= baseline["success_rate"] < 0.1
    # Rerunning with other settings restarts the affected runs instead of failing.
    assert main_job.main([*argv[:3], "3", *argv[4:]]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "trained-ppo" in page and "data:image/png;base64," in page
