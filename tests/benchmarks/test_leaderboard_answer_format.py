"""``--answer-format`` of the leaderboard: sets ``answer_format`` for math-family envs only."""

from __future__ import annotations

import pytest

from benchmarks.leaderboard import __main__ as cli


def test_answer_format_reaches_math_envs_only() -> None:
    assert "rllm/Math-v1" in cli.math_env_ids()
    kwargs = cli.with_answer_format({"rllm/FrozenLake-v1": {"size": 4}}, "any")
    assert kwargs["rllm/Math-v1"] == {"answer_format": "any"}
    assert kwargs["rllm/FrozenLake-v1"] == {"size": 4}
    assert all(k in cli.math_env_ids() or k == "rllm/FrozenLake-v1" for k in kwargs)


def test_env_kwargs_win_and_no_flag_changes_nothing() -> None:
    given = {"rllm/Math-v1": {"answer_format": "boxed", "difficulty": 2}}
    assert cli.with_answer_format(given, "any") == given
    assert cli.with_answer_format(given, None) is given


def test_flag_is_parsed_and_checked(monkeypatch, tmp_path) -> None:
    seen = {}

    def fake_run(config, out):
        seen["env_kwargs"] = config.env_kwargs
        return {}

    monkeypatch.setattr(cli, "run", fake_run)
    argv = ["run", "--policy", "oracle", "--envs", "rllm/Math-v1", "--out", str(tmp_path)]
    assert cli.main([*argv, "--answer-format", "any"]) == 0
    assert seen["env_kwargs"]["rllm/Math-v1"]["answer_format"] == "any"
    with pytest.raises(SystemExit):
        cli.main([*argv, "--answer-format", "lenient"])
