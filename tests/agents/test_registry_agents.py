"""Conformance: every registered id (single- and multi-agent) gets its family's spec and prompt.

The spec is named by the env's registry row and lives in the family's folder; these tests read
the row, build the env, and check that :func:`rllm_agents.make_agent` follows the spec and that
the conversation opens with a system prompt that fits the task.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs
from rllm_agents import agent_names, make_agent
from rllm_envs.error import DependencyNotInstalled, RllmEnvsError

ALL_ROWS = (*rllm_envs.ENVS, *rllm_envs.MULTIAGENT_ENVS)
MULTI = {row.id for row in rllm_envs.MULTIAGENT_ENVS}


def _first_observations(row: rllm_envs.EnvEntry) -> list[tuple[str, dict]]:
    """``(observation, info)`` of every agent of the env's first task (one for single-agent)."""
    try:
        if row.id in MULTI:
            env = rllm_envs.make_parallel(row.id)
            observations, infos = env.reset(seed=0)
            pairs = [(observations[a], infos[a]) for a in env.possible_agents]
        else:
            env = gym.make(row.id)
            observation, info = env.reset(seed=0)
            pairs = [(observation, info)]
    except DependencyNotInstalled as e:
        pytest.skip(f"{row.id} needs a missing dependency: {e}")
    except RllmEnvsError as e:  # e.g. no g++ for rllm/CodeCpp-v0
        if "g++" in str(e) or "install" in str(e):
            pytest.skip(f"{row.id} needs a missing system dependency: {e}")
        raise
    env.close()
    return pairs


@pytest.mark.parametrize("row", ALL_ROWS, ids=[row.id for row in ALL_ROWS])
def test_every_id_gets_its_family_spec_and_a_system_prompt(row):
    spec = rllm_envs.agent_spec(row.id)
    # The spec lives in the family's folder.
    assert row.spec.startswith(row.entry_point.rsplit(".", 1)[0].rsplit(".", 1)[0] + ".")
    agent = make_agent(row.id)
    assert type(agent) is agent_names()[spec.turns] and agent.spec is spec
    for observation, info in _first_observations(row):
        messages = make_agent(row.id).reset(observation, info)
        assert messages[0]["role"] == "system", f"{row.id} opens without a system prompt"
        assert len(messages[0]["content"]) > 20
        assert messages[-1] == {"role": "user", "content": observation}


@pytest.mark.parametrize("row", ALL_ROWS, ids=[row.id for row in ALL_ROWS])
def test_scorer_paths_resolve_to_functions(row):
    if row.scorer is not None:
        assert callable(rllm_envs.resolve(row.scorer))


def test_a_row_must_name_paths():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="module:name"):
        rllm_envs.EnvEntry(
            id="rllm/X-v0", entry_point="x:X", description="x", family="X", spec="NotAPath"
        )


def _code_prompt(env_id: str, kind: str) -> str:
    env = gym.make(env_id)
    try:
        for index in range(len(env.unwrapped.tasks)):
            observation, info = env.reset(seed=0, options={"index": index})
            if info["kind"] == kind:
                return make_agent(env_id).reset(observation, info)[0]["content"]
    except RllmEnvsError as e:
        if "g++" in str(e):
            pytest.skip(str(e))
        raise
    finally:
        env.close()
    raise AssertionError(f"no {kind} task in {env_id}")


def test_code_prompt_follows_the_task_kind_and_language():
    stdin = _code_prompt("rllm/Code-v0", "stdin")
    assert "standard input" in stdin and "Python" in stdin
    functional = _code_prompt("rllm/Code-v0", "functional")
    assert "returns the answer" in functional and "does not read input" in functional
    assert "standard output" not in functional
    cpp = make_agent("rllm/CodeCpp-v0").reset("t", {"kind": "stdin", "language": "cpp"})[0]
    assert "C++" in cpp["content"] and "```cpp" in cpp["content"]
    # What the env reports decides: a Python id made with language="cpp".
    made_cpp = make_agent("rllm/Code-v0").reset("t", {"kind": "stdin", "language": "cpp"})[0]
    assert made_cpp == cpp
    # A prompt the user gives is used as is.
    assert make_agent("rllm/Code-v0", system_prompt="mine").reset("t", {"kind": "stdin"})[0] == {
        "role": "system",
        "content": "mine",
    }


def test_multiagent_prompts_follow_the_role():
    pairs = _first_observations(rllm_envs.env_entry("rllm/SolverJudge-v1"))
    prompts = {
        info["role"]: make_agent("rllm/SolverJudge-v1").reset(o, info)[0]["content"]
        for o, info in pairs
    }
    assert set(prompts) == {"solver", "judge"}
    assert "judge" in prompts["judge"] and prompts["judge"] != prompts["solver"]
