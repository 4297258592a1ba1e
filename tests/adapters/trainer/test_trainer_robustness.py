"""The FrozenLake robustness grid at tiny scale: one layout, one seed, one iteration per run.

The full grid (``python -m benchmarks.frozenlake_robustness``: 5 seeds x 3 unseen layouts of
``configs/frozenlake_ppo.yaml``) runs for hours; this checks the command trains on the layout
it names and writes the results file.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("deepspeed")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def test_grid_writes_one_summary_per_run(tmp_path):
    from benchmarks.frozenlake_robustness import LAYOUTS, main

    out = tmp_path / "robustness.json"
    code = main(
        [
            "--seeds",
            "0",
            "--layouts",
            "corridor",
            "--workdir",
            str(tmp_path / "runs"),
            "--out",
            str(out),
            "train.iterations=1",
            "train.max_wall_s=null",
            "rollout.backend=transformers",
            "rollout.group_size=4",
            "algorithm.mini_batch_size=4",
            "algorithm.micro_batch_size=4",
        ]
    )
    assert code == 0
    record = json.loads(out.read_text())
    assert record["layouts"] == {"corridor": LAYOUTS["corridor"]}
    (run,) = record["runs"]
    assert run["layout"] == "corridor" and run["seed"] == 0 and run["iterations"] == 1
    assert record["per_layout"]["corridor"]["runs"] == 1
    assert 0.0 <= run["final_fall_rate"] <= 1.0
    # The run trained with the hole component (the env's default weight next to the config's
    # invalid-action penalty) and the config's progress shaping: its metrics carry both.
    rows = (tmp_path / "runs" / "corridor-seed0" / "metrics.jsonl").read_text().splitlines()
    for row in (json.loads(r) for r in rows if r.strip()):
        assert "reward_components/hole" in row and "reward_components/progress" in row
    # The run played the named layout, not the config's 4x4 map.
    config = json.loads((tmp_path / "runs" / "corridor-seed0" / "config.json").read_text())
    assert config["env_kwargs"]["desc"] == LAYOUTS["corridor"]
    assert config["env_kwargs"]["map_name"] is None


def test_summary_finds_the_first_iteration_at_the_bar():
    from benchmarks.frozenlake_robustness import summarize

    rows = [
        {"rollout/success": s, "rollout/invalid_action_rate": 0.1, "rollout/finish_terminated": 1.0}
        for s in (0, 0.5, 0.95, 1)
    ]
    summary = summarize(rows)
    assert summary["reached_0_9_at"] == 3
    assert summary["final_success"] == pytest.approx(0.6125, abs=1e-3)
    # Terminated without the goal: fell into a hole.
    assert summary["final_fall_rate"] == pytest.approx(1 - 0.6125, abs=1e-3)
    assert summarize([{"rollout/success": 0.0}])["reached_0_9_at"] is None
    assert summary["steps_undone"] == 0
    assert (
        summarize([{"policy/step_undone": 1.0}, {"policy/step_undone": 0.0}])["steps_undone"] == 1
    )
