"""Agents: selection from env ids, messages, tools, think handling, pickling."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

import rllm_envs
from rllm_agents import (
    Agent,
    FrozenLakeBoardAgent,
    GenericAgent,
    ToolAgent,
    agent_class_for,
    agent_names,
    make_agent,
    strip_think,
)
from rllm_agents.error import AgentConfigError
from rllm_envs.error import DependencyNotInstalled, InvalidEnvConfig
from rllm_envs.spec import AgentSpec


def test_agent_selection_and_override():
    assert agent_class_for("rllm/FrozenLake-v1") is GenericAgent
    assert agent_class_for("rllm/Math-v1") is GenericAgent
    assert agent_class_for("rllm/Search-v1") is ToolAgent
    assert agent_class_for("rllm_envs:rllm/Code-v0") is GenericAgent
    assert agent_class_for("rllm/Unknown-v0") is GenericAgent
    assert agent_class_for("CartPole-v1") is GenericAgent
    assert isinstance(make_agent("rllm/FrozenLake-v1", "frozenlake-board"), FrozenLakeBoardAgent)
    assert isinstance(make_agent("rllm/Math-v1", "generic"), GenericAgent)
    assert isinstance(make_agent("rllm/Math-v1", ToolAgent), ToolAgent)
    # The env's spec gives the defaults whatever the turn logic.
    math = rllm_envs.agent_spec("rllm/Math-v1")
    assert make_agent("rllm/Math-v1", ToolAgent).system_prompt == math.system_prompt
    assert make_agent("rllm/Math-v1").sampling_hints() == {"max_tokens": math.max_tokens}
    assert make_agent("CartPole-v1").system_prompt is None
    mine = GenericAgent(system_prompt=None)
    assert make_agent("rllm/FrozenLake-v1", mine) is mine
    assert make_agent("rllm/Math-v1", system_prompt="custom").system_prompt == "custom"
    with pytest.raises(AgentConfigError, match="Did you mean"):
        make_agent("rllm/Math-v1", "tools")
    with pytest.raises(AgentConfigError):
        make_agent("rllm/Math-v1", 42)  # type: ignore[arg-type]
    with pytest.raises(AgentConfigError, match="think"):
        Agent(think="drop")


@pytest.mark.slow  # 11 s: every id made and reset, SWE and Code included
def test_every_registered_env_gets_an_agent_that_builds_messages():
    for entry in rllm_envs.ENVS:
        try:
            env = gym.make(entry.id)
        except DependencyNotInstalled:
            continue
        obs, info = env.reset(seed=0)
        agent = make_agent(entry.id)
        messages = agent.reset(obs, info)
        assert messages[-1] == {"role": "user", "content": obs}
        if agent.system_prompt:
            assert messages[0]["role"] == "system"
        if info.get("tools"):
            assert agent.tools == list(info["tools"])
        env.close()
    assert set(agent_names()) == {"generic", "tool", "frozenlake-board"}


def test_code_prompt_follows_the_task_kind_and_the_rows_language():
    python, cpp = make_agent("rllm/Code-v0"), make_agent("rllm/CodeCpp-v0")
    stdin = python.reset("task", {"kind": "stdin", "language": "python"})[0]["content"]
    assert "standard input" in stdin and "Python 3" in stdin
    assert "C++17" in cpp.reset("task", {"kind": "functional", "language": "cpp"})[0]["content"]
    assert (
        python.reset("task", {})[0]["content"] == rllm_envs.agent_spec("rllm/Code-v0").system_prompt
    )


def test_role_prompts_and_demonstrations_follow_info_role():
    spec = AgentSpec(
        system_prompt="default",
        select="role",
        system_prompts={"judge": "judge prompt"},
        demonstrations={
            "judge": ({"role": "user", "content": "q"}, {"role": "assistant", "content": "a"})
        },
    )
    judge = GenericAgent(spec).reset("obs", {"role": "judge"})
    assert [m["content"] for m in judge] == ["judge prompt", "q", "a", "obs"]
    solver = GenericAgent(spec).reset("obs", {"role": "solver"})
    assert [m["content"] for m in solver] == ["default", "obs"]
    assert (
        GenericAgent(spec, system_prompt="mine").reset("o", {"role": "judge"})[0]["content"]
        == "mine"
    )


def test_a_spec_that_cannot_work_raises_early():
    with pytest.raises(InvalidEnvConfig, match="turns"):
        AgentSpec(turns="telepathy")
    with pytest.raises(InvalidEnvConfig, match="assistant"):
        AgentSpec(demonstration=({"role": "user", "content": "q"},))
    with pytest.raises(InvalidEnvConfig, match="max_tokens"):
        AgentSpec(max_tokens=0)


def test_conversation_flow_and_think_handling():
    agent = GenericAgent(system_prompt="sys")
    agent.reset("start", {})
    assert agent.act("<think>hmm</think> Right") == "Right"
    assert agent.messages[-1] == {"role": "assistant", "content": "<think>hmm</think> Right"}
    new = agent.observe("moved", 0.0, False, False, {})
    assert new == [{"role": "user", "content": "moved"}]
    assert [m["role"] for m in agent.messages] == ["system", "user", "assistant", "user"]
    # A reply cut inside its thinking has no answer.
    assert agent.act("<think>still thinking about") == ""
    assert GenericAgent(think="keep").act("<think>a</think>b") == "<think>a</think>b"
    assert strip_think("plain") == "plain"


def test_tool_agent_follows_the_calls_the_env_read():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    agent = ToolAgent()
    agent.reset("task", {"tools": tools})
    assert agent.tools == tools
    agent.act('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    read = {"tool_calls": [{"name": "f", "arguments": {}}]}
    assert agent.observe("result", 0.0, False, False, read)[0]["role"] == "tool"
    # The reply looks like a call, but the env read none (e.g. invalid JSON): a user turn.
    agent.act("<tool_call>{oops</tool_call>")
    assert agent.observe("error", 0.0, False, False, {"tool_calls": []})[0]["role"] == "user"
    # No tag in the text, but the env read a call (bare JSON, <search>): a tool turn.
    agent.act("<search>river of Kora</search>")
    searched = {"tool_calls": [{"name": "search", "arguments": {"query": "river of Kora"}}]}
    assert agent.observe("passages", 0.0, False, False, searched)[0]["role"] == "tool"


def test_frozenlake_board_agent_by_name_or_path():
    agent = make_agent("rllm/FrozenLake-v1", "rllm_agents.agent:FrozenLakeBoardAgent")
    assert type(agent) is FrozenLakeBoardAgent
    info = {"map": ["SF", "FG"], "position": [0, 1]}
    assert agent.reset("long prose", info)[-1]["content"].splitlines()[1:] == ["SP", "FG"]


def test_frozenlake_board_agent_can_say_where_the_player_is():
    """``show_position``: the cell in words after the board, counted from 1 as the env's prose."""
    env = rllm_envs.make("rllm/FrozenLake-v1", map_name="4x4", is_slippery=False)
    agent = make_agent("rllm/FrozenLake-v1", "frozenlake-board", show_position=True)
    observation, info = env.reset(seed=0)
    assert agent.reset(observation, info)[-1]["content"].splitlines()[-1] == "At row 1, column 1."
    observation, reward, terminated, truncated, info = env.step("Down")
    lines = agent.observe(observation, reward, terminated, truncated, info)[-1]["content"]
    assert lines.splitlines()[2] == "PHFH" and lines.splitlines()[-1] == "At row 2, column 1."
    plain = make_agent("rllm/FrozenLake-v1", "frozenlake-board")
    assert "At row" not in plain.reset(*env.reset(seed=0))[-1]["content"]
    env.close()


def test_agents_pickle():
    agent = make_agent("rllm/FrozenLake-v1")
    agent.reset("obs", {})
    clone = pickle.loads(pickle.dumps(agent))
    assert clone.messages == agent.messages and clone.spec == agent.spec
