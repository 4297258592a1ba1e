from __future__ import annotations

import json

import pytest

import rllm_envs
from benchmarks import main as main_job
from benchmarks.evaluate import evaluate


def test_oracle_solves_and_random_mostly_fails_on_frozenlake():
    oracle = evaluate("rllm/FrozenLake-v0", "oracle", episodes=10)
    rand = evaluate("rllm/FrozenLake-v0", "random", episodes=30)
    assert oracle.success_rate == 1.0 and oracle.mean_reward == 1.0
    assert rand.success_rate < 0.5


def test_evaluation_is_reproducible():
    a = evaluate("rllm/FrozenLake-v0", "random", episodes=15, seed=4)
    b = evaluate("rllm/FrozenLake-v0", "random", episodes=15, seed=4)
    assert (a.success_rate, a.mean_reward, a.mean_turns) == (
        b.success_rate,
        b.mean_reward,
        b.mean_turns,
    )


def test_unknown_policy_is_rejected():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Unknown policy"):
        evaluate("rllm/FrozenLake-v0", "genius")


def test_main_job_writes_results(tmp_path):
    assert (
        main_job.main(["--envs", "rllm/FrozenLake-v0", "--episodes", "3", "--out", str(tmp_path)])
        == 0
    )
    payload = json.loads((tmp_path / "results.json").read_text())
    assert {r["policy"] for r in payload["results"]} == {"oracle", "random"}
