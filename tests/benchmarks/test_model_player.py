from __future__ import annotations

import json

import pytest

import rllm_envs
from benchmarks.leaderboard import LeaderboardConfig, run
from benchmarks.leaderboard.model_player import ModelPlayer, parse_spec
from benchmarks.leaderboard.players import make_player


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("vllm:Qwen/Qwen3-0.6B", ("vllm", "Qwen/Qwen3-0.6B", None)),
        ("hf:/models/ckpt-10", ("transformers", "/models/ckpt-10", None)),
        ("openai:http://127.0.0.1:8000/v1:tiny", ("openai", "tiny", "http://127.0.0.1:8000/v1")),
        (
            "openai:https://api.example.com/v1:gpt-x",
            ("openai", "gpt-x", "https://api.example.com/v1"),
        ),
    ],
)
def test_parse_spec(spec, expected):
    assert parse_spec(spec) == expected
    assert isinstance(make_player(spec), ModelPlayer)


@pytest.mark.parametrize("spec", ["vllm:", "openai:tiny", "openai:http://x:8000/v1:", "gpt:x"])
def test_bad_specs_are_rejected(spec):
    with pytest.raises(rllm_envs.InvalidEnvConfig):
        make_player(spec)


def test_tiny_model_on_single_and_multi_agent_envs(tmp_path):
    pytest.importorskip("transformers")
    envs = ["rllm/Math-v1", "rllm/TicTacToe-v0"]
    config = LeaderboardConfig(
        policy="hf:tiny", envs=envs, n_tasks=2, k=2, policy_kwargs={"max_tokens": 8}
    )
    summary = run(config, tmp_path, progress=False)
    records = [json.loads(line) for line in (tmp_path / "hf_tiny" / "episodes.jsonl").open()]
    assert len(records) == 8
    assert all(r["tokens"] > 0 for r in records)
    meta = json.loads((tmp_path / "hf_tiny" / "meta.json").read_text())
    assert meta["policy"]["backend"] == "transformers" and meta["policy"]["max_tokens"] == 8
    # An untrained tiny model solves nothing; the point is that it is evaluated end to end.
    assert summary["envs"]["rllm/Math-v1"]["episodes"] == 4
    assert summary["envs"]["rllm/TicTacToe-v0"]["mean_turns"] >= 1


def test_agent_override_by_module_path():
    from rllm_agents.agent import FrozenLakeBoardAgent, make_agent

    agent = make_agent("rllm/FrozenLake-v1", "rllm_agents.agent:FrozenLakeBoardAgent")
    assert type(agent) is FrozenLakeBoardAgent
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Cannot import"):
        make_agent("rllm/FrozenLake-v1", "rllm_agents.agent:Nope")


def test_scripted_players_take_no_settings():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="takes no settings"):
        make_player("oracle", temperature=0.5)


def _imports(module) -> set[str]:
    import ast
    import inspect

    tree = ast.parse(inspect.getsource(module))
    found = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    return found | {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


def test_players_and_model_player_do_not_import_each_other():
    from benchmarks.leaderboard import model_player, players, protocol

    assert "benchmarks.leaderboard.players" not in _imports(model_player)
    assert not {"benchmarks.leaderboard.players", "benchmarks.leaderboard.model_player"} & (
        _imports(protocol)
    )
    # Opponents are the registry's, not a leaderboard table.
    assert not hasattr(players, "OPPONENTS")


def test_play_yields_each_env_and_columns_run_together(tmp_path):
    """``play`` (one env) streams records; ``play_columns`` plays several columns at once."""
    pytest.importorskip("transformers")
    from benchmarks.leaderboard.protocol import ColumnJob, EvalEpisode

    lake = [EvalEpisode("rllm/FrozenLake-v1", i, i, 0, i) for i in range(2)]
    math = [EvalEpisode("rllm/Math-v1", i, i, 0, 10 + i, "rllm/Math-v1@x") for i in range(2)]
    policy = ModelPlayer("hf:tiny", max_tokens=2, temperature=0.0, transcripts=tmp_path / "t.jsonl")
    try:
        assert sorted(r.row for r in policy.play(lake, {"max_turns": 2})) == [0, 1]
        seen: list[tuple[str, int]] = []
        jobs = [ColumnJob("rllm/FrozenLake-v1", lake, {}), ColumnJob("rllm/Math-v1@x", math, {})]
        policy.play_columns(jobs, lambda column, record: seen.append((column, record.row)))
    finally:
        policy.close()
    assert sorted(seen) == [("rllm/FrozenLake-v1", 0), ("rllm/FrozenLake-v1", 1)] + [
        ("rllm/Math-v1@x", 0),
        ("rllm/Math-v1@x", 1),
    ]
    columns = [json.loads(line)["column"] for line in (tmp_path / "t.jsonl").open()]
    assert sorted(columns) == ["rllm/FrozenLake-v1"] * 4 + ["rllm/Math-v1@x"] * 2
