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
    ]
    assert main_job.main(argv) == 0
    assert (tmp_path / "train" / "final_model" / "config.json").exists()
    assert (tmp_path / "train" / "learning_curve.png").stat().st_size > 10_000
    meta = json.loads((tmp_path / "runs" / "trained-ppo" / "meta.json").read_text())
    assert meta["policy"]["backend"] == "vllm" and meta["policy"]["temperature"] == 0.0
    assert meta["policy"]["agent"] == "adapters.trainer.agents:FrozenLakeBoardAgent"
    # Every policy plays the training env as trained: the fixed 4x4 map, not slippery.
    oracle = json.loads((tmp_path / "runs" / "oracle" / "meta.json").read_text())
    assert oracle["config"]["env_kwargs"]["rllm/FrozenLake-v0"] == {
        "map_name": "4x4",
        "is_slippery": False,
    }
    # Rerunning with other settings restarts the affected runs instead of failing.
    assert main_job.main([*argv[:3], "3", *argv[4:]]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "trained-ppo" in page and "data:image/png;base64," in page
