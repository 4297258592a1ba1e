from __future__ import annotations

from benchmarks import main as main_job


def test_main_job_writes_a_leaderboard(tmp_path):
    argv = ["--envs", "rllm/FrozenLake-v0", "--n-tasks", "3", "--out", str(tmp_path)]
    assert main_job.main(argv) == 0
    md = (tmp_path / "leaderboard.md").read_text()
    assert "| oracle | 1.000" in md and "random" in md
    assert (tmp_path / "index.html").exists()
