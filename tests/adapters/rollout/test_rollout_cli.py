"""``python -m rllm_adapters.rollout`` flags: agent, system prompt, engine settings, transcripts."""

from __future__ import annotations

import json

import pytest

from rllm_adapters.rollout import main
from rllm_agents import read_trajectories

pytest.importorskip("torch")


def run_cli(tmp_path, *flags):
    return main(
        [
            "--env",
            "rllm/FrozenLake-v1",
            "--backend",
            "transformers",
            "--num-tasks",
            "1",
            "--group-size",
            "1",
            "--num-envs",
            "1",
            "--max-tokens",
            "3",
            "--max-turns",
            "2",
            "--out",
            str(tmp_path),
            "--no-progress",
            *flags,
        ]
    )


def test_command_line_writes_trajectories(tmp_path, tiny_path, capsys):
    status = run_cli(tmp_path, "--group-size", "2", "--max-turns", "1", "--format", "parquet")
    assert status == 0
    trajectories = read_trajectories(tmp_path / "rllm_FrozenLake-v1.parquet")
    assert len(trajectories) == 2
    assert "rllm/FrozenLake-v1: 2 episodes" in capsys.readouterr().out


def test_agent_system_prompt_dtype_and_transcripts(tmp_path, tiny_path):
    status = run_cli(
        tmp_path,
        "--agent",
        "generic",
        "--system-prompt",
        "Answer with one move.",
        "--dtype",
        "float32",
        "--max-model-len",
        "1024",
        "--transcripts",
    )
    assert status == 0
    (t,) = read_trajectories(tmp_path / "rllm_FrozenLake-v1.jsonl")
    assert t.metadata["agent"] == "GenericAgent"
    assert t.messages[0] == {"role": "system", "content": "Answer with one move."}
    lines = (tmp_path / "rllm_FrozenLake-v1.transcripts.jsonl").read_text().splitlines()
    (record,) = [json.loads(line) for line in lines]
    assert record["messages"] == t.messages
    assert [turn["action"] for turn in record["turns"]] == [s.action for s in t.steps]
    assert record["token_source"] == "engine" and record["agent"] == "GenericAgent"


def test_no_system_prompt(tmp_path, tiny_path):
    assert run_cli(tmp_path, "--no-system-prompt") == 0
    (t,) = read_trajectories(tmp_path / "rllm_FrozenLake-v1.jsonl")
    assert t.messages[0]["role"] == "user"
    assert not (tmp_path / "rllm_FrozenLake-v1.transcripts.jsonl").exists()
