"""Honest evaluation: variant columns (trained map next to random maps), per-env decoding of a
trained checkpoint, a measured random baseline, engine/agent flags and transcripts."""

from __future__ import annotations

import json

import pytest

from benchmarks import main as main_job
from benchmarks.leaderboard import LeaderboardConfig, run
from benchmarks.leaderboard.__main__ import main as cli
from benchmarks.leaderboard.model_player import ModelPlayer
from benchmarks.leaderboard.report import load_run, markdown
from rllm_envs.error import InvalidEnvConfig

FL = "rllm/FrozenLake-v1"
TRAINED = f"{FL}@trained-map"
RANDOM = f"{FL}@random-4x4"
COLUMNS = {TRAINED: {"map_name": "4x4", "is_slippery": False}, RANDOM: {"size": 4}}


def test_variant_columns_play_their_own_maps(tmp_path):
    config = LeaderboardConfig(policy="oracle", envs=list(COLUMNS), n_tasks=4, env_kwargs=COLUMNS)
    summary = run(config, tmp_path, progress=False)
    assert set(summary["envs"]) == set(COLUMNS)
    records = [json.loads(x) for x in (tmp_path / "oracle" / "episodes.jsonl").open()]
    tasks = {c: {r["task_id"] for r in records if r["env_id"] == c} for c in COLUMNS}
    assert len(tasks[TRAINED]) == 1  # one fixed map
    assert len(tasks[RANDOM]) == 4  # a new map per row
    assert f"`{RANDOM}`" in markdown([load_run(tmp_path / "oracle")])
    # Resuming the same config skips everything recorded.
    assert run(config, tmp_path, progress=False) == summary


def test_unknown_variant_base_id_is_rejected():
    with pytest.raises(InvalidEnvConfig, match="Unknown env id"):
        LeaderboardConfig(policy="oracle", envs=["rllm/FrozenLak-v0@x"])


def test_env_settings_give_each_env_its_decoding():
    policy = ModelPlayer(
        "hf:tiny",
        max_tokens=256,
        agent_kwargs={"think": "keep"},
        env_settings={FL: {"max_tokens": 1, "agent": "frozenlake-board", "agent_kwargs": {}}},
    )
    lake, math = policy.decoding(FL), policy.decoding("rllm/Math-v1")
    assert (lake.max_tokens, lake.agent, lake.agent_kwargs) == (1, "frozenlake-board", {})
    assert (math.max_tokens, math.agent, math.agent_kwargs) == (256, None, {"think": "keep"})
    with pytest.raises(InvalidEnvConfig, match="env_settings"):
        ModelPlayer("hf:tiny", env_settings={FL: {"max_token": 1}})


def test_trained_checkpoint_keeps_its_budget_on_its_env_only(tmp_path):
    rollout = {
        "max_tokens": 1,
        "agent": "frozenlake-board",
        "agent_kwargs": {"system_prompt": None},
        "engine_kwargs": {"dtype": "float32"},
    }
    trained = {"env": FL, "env_kwargs": {**COLUMNS[TRAINED], "reward_weights": {}}}
    (tmp_path / "config.json").write_text(json.dumps({**trained, "rollout": rollout}))
    kwargs = main_job.trained_policy_kwargs(tmp_path)
    assert "max_tokens" not in kwargs and "agent" not in kwargs  # leaderboard defaults elsewhere
    assert kwargs["env_settings"][FL]["max_tokens"] == 1
    assert kwargs["engine_kwargs"] == {"dtype": "float32"}
    columns = main_job.training_columns(tmp_path)
    assert columns == {TRAINED: COLUMNS[TRAINED], RANDOM: {"size": 4, "is_slippery": False}}


def test_random_baseline_is_measured(tmp_path):
    result = main_job.measure_random_success(FL, COLUMNS[TRAINED], 400)
    assert result["episodes"] == 400 and result["successes"] == round(result["success_rate"] * 400)
    assert 0 < result["success_rate"] < 0.05  # about 1% on the 4x4 map
    again = main_job.measure_random_success(FL, COLUMNS[TRAINED], 400)
    assert again == result  # seeded


def test_cli_engine_agent_flags_and_transcripts(tmp_path):
    pytest.importorskip("transformers")
    argv = ["run", "--policy", "hf:tiny", "--envs", FL, "--n-tasks", "2", "--out", str(tmp_path)]
    flags = [
        "--max-tokens",
        "2",
        "--dtype",
        "float32",
        "--max-model-len",
        "2048",
        "--agent",
        "generic",
        "--system-prompt",
        "One move.",
        "--transcripts",
    ]
    assert cli([*argv, *flags]) == 0
    meta = json.loads((tmp_path / "hf_tiny" / "meta.json").read_text())
    assert meta["policy"]["engine_kwargs"] == {"dtype": "float32", "max_model_len": 2048}
    assert meta["policy"]["agent"] == "generic"
    assert meta["policy"]["agent_kwargs"] == {"system_prompt": "One move."}
    lines = (tmp_path / "hf_tiny" / "transcripts.jsonl").read_text().splitlines()
    records = [json.loads(x) for x in lines]
    assert sorted(r["row"] for r in records) == [0, 1]  # written as episodes end
    assert all(r["messages"][0] == {"role": "system", "content": "One move."} for r in records)
    assert all(r["agent"] == "GenericAgent" for r in records)


def test_cli_model_flags_need_a_model_policy(tmp_path):
    with pytest.raises(SystemExit):
        cli(["run", "--policy", "random", "--envs", FL, "--dtype", "float32"])
