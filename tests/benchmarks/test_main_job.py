from __future__ import annotations

import json

import pytest

from benchmarks import main as main_job


def test_main_job_scripted_policies_only(tmp_path):
    argv = [
        "--envs",
        "rllm/FrozenLake-v1",
        "rllm/TicTacToe-v0",
        "--n-tasks",
        "3",
        "--out",
        str(tmp_path),
        "--skip-train",
        "--real-model",
        "none",
        "--results",
        str(tmp_path / "results" / "main_leaderboard.json"),
    ]
    assert main_job.main(argv) == 0
    md = (tmp_path / "leaderboard.md").read_text()
    assert "| oracle | " in md and "| random | " in md
    page = (tmp_path / "index.html").read_text()
    # Transcripts of what each policy did, and the committed real-model RL result, labelled.
    assert "id='transcripts'" in page and "class='episode'" in page
    assert "committed result of `python -m benchmarks.real_model_rl" in page
    # The machine-readable summary: scores, per-stage timings, machine, load, versions, commit.
    summary = json.loads((tmp_path / "main_leaderboard.json").read_text())
    assert summary == json.loads((tmp_path / "results" / "main_leaderboard.json").read_text())
    assert set(summary["policies"]) == {"oracle", "random"}
    assert summary["policies"]["oracle"]["envs"]["rllm/FrozenLake-v1"]["pass@1"] == 1.0
    assert {"setup", "leaderboard:oracle", "leaderboard:random", "report"} <= set(
        summary["stages_s"]
    )
    machine = summary["machine"]
    assert machine["load_average_1m_during"]["samples"] >= 1 and "numpy" in machine["versions"]
    assert summary["command"].startswith("python -m benchmarks.main ") and summary["commit"]
    assert summary["settings"]["envs"] == ["rllm/FrozenLake-v1", "rllm/TicTacToe-v0"]
    assert summary["real_model_rl"]["source"] == "benchmarks/results/real_model_rl.json"


def test_readme_renders_the_main_job_summary(tmp_path, monkeypatch):
    from benchmarks import readme

    argv = ["--envs", "rllm/Math-v1", "--n-tasks", "2", "--out", str(tmp_path)]
    assert main_job.main([*argv, "--skip-train", "--real-model", "none"]) == 0
    (tmp_path / "results").mkdir()
    (tmp_path / "main_leaderboard.json").rename(tmp_path / "results" / "main_leaderboard.json")
    monkeypatch.setattr(readme, "RESULTS", tmp_path / "results")
    table = readme.render("main_leaderboard")
    assert "| oracle | 1.000 | 1.00 |" in table and "| random | 0.000 | 0.00 |" in table
    assert "Format rate" in table and "min** in all" in table
    assert "not rerun by the job" in table
    assert "The file now holds a later run" not in table
    # A real-model run committed after the job: the README line says the file moved on.
    path = tmp_path / "results" / "main_leaderboard.json"
    data = json.loads(path.read_text())
    data["real_model_rl"]["time"] = "2000-01-01T00:00:00Z"
    path.write_text(json.dumps(data))
    assert "The file now holds a later run" in readme.render("main_leaderboard")


def test_main_job_trains_then_evaluates_the_checkpoint(tmp_path):
    """The whole pipeline on a tiny budget: 1 PPO iteration, then the trained policy is ranked."""
    pytest.importorskip("vllm")
    pytest.importorskip("deepspeed")
    argv = [
        "--envs",
        "rllm/FrozenLake-v1",
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
        "--real-model",
        "none",
    ]
    assert main_job.main(argv) == 0
    assert (tmp_path / "train" / "final_model" / "config.json").exists()
    assert (tmp_path / "train" / "learning_curve.png").stat().st_size > 10_000
    meta = json.loads((tmp_path / "runs" / "trained-ppo" / "meta.json").read_text())
    assert meta["policy"]["backend"] == "vllm" and meta["policy"]["temperature"] == 0.0
    # Trained decoding on its env only; the env's own agent and a real budget elsewhere.
    lake = meta["policy"]["env_settings"]["rllm/FrozenLake-v1"]
    assert lake["agent"] == "frozenlake-board"
    # Elsewhere no global cap: each env's agent family sets its own limit (max_tokens None).
    assert lake["max_tokens"] == 1 and meta["policy"]["max_tokens"] is None
    # Every policy plays the trained map and random maps of its size.
    oracle = json.loads((tmp_path / "runs" / "oracle" / "meta.json").read_text())
    assert oracle["config"]["env_kwargs"] == {
        "rllm/FrozenLake-v1@trained-map": {"map_name": "4x4", "is_slippery": False},
        "rllm/FrozenLake-v1@random-4x4": {"size": 4, "is_slippery": False},
    }
    baseline = json.loads((tmp_path / "train" / "random_baseline.json").read_text())
    assert baseline["episodes"] == 300 and 0 <= baseline["success_rate"] < 0.1
    # Rerunning with other settings restarts the affected runs instead of failing.
    assert main_job.main([*argv[:3], "3", *argv[4:]]) == 0
    page = (tmp_path / "index.html").read_text()
    assert "trained-ppo" in page and "data:image/png;base64," in page
