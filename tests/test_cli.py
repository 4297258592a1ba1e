from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from rllm_envs.cli import main


def test_list_prints_every_id(capsys):
    import rllm_envs

    assert main(["list"]) == 0
    out = capsys.readouterr().out
    for env_id in rllm_envs.list_envs():
        assert env_id in out


def test_show_prints_observation_and_info(capsys):
    assert main(["show", "rllm/FrozenLake-v1", "--seed", "3", "--kwarg", "map_name=4x4"]) == 0
    out = capsys.readouterr().out
    observation, info = out.split("--- info ---")
    assert "FrozenLake" in observation
    assert json.loads(info)["map"] == ["SFFF", "FHFH", "FFFH", "HFFG"]


def test_play_with_typed_actions_reaches_the_goal(monkeypatch, capsys):
    moves = ["hello?", ":hint", "Right", "Right", "Down", "Down", "Down", "Right"]
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(moves) + "\n"))
    assert main(["play", "rllm/FrozenLake-v1", "--kwarg", "map_name=4x4"]) == 0
    out = capsys.readouterr().out
    assert "[invalid:" in out and "oracle: Down" in out
    assert "Episode terminated: solved, return +1.000." in out


def test_unknown_id_is_a_clean_error(capsys):
    assert main(["show", "rllm/FrozenLak-v0"]) == 2
    assert "Did you mean" in capsys.readouterr().err


def test_console_script_is_installed():
    out = subprocess.run(
        [sys.executable, "-m", "rllm_envs.cli", "list"], capture_output=True, text=True, check=True
    )
    assert "rllm/FrozenLake-v1" in out.stdout


@pytest.mark.parametrize("bad", ["novalue", "=3"])
def test_bad_kwarg_syntax_exits(bad):
    with pytest.raises(SystemExit):
        main(["show", "rllm/FrozenLake-v1", "--kwarg", bad])


def test_list_includes_multiagent_envs(capsys):
    import rllm_envs

    main(["list"])
    out = capsys.readouterr().out
    assert "Multi-agent (PettingZoo):" in out
    for env_id in rllm_envs.list_multiagent_envs():
        assert env_id in out


def test_show_and_play_a_multiagent_env(monkeypatch, capsys):
    assert main(["show", "rllm/TicTacToe-v0", "--seed", "1"]) == 0
    assert "=== player_0 ===" in capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("garbage\n" * 4))
    assert main(["play", "rllm/TicTacToe-v0", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert "Episode over. Returns:" in out and "-1.000" in out
