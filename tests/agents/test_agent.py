"""Agents: selection from env ids, messages, tools, think handling, pickling."""

from __future__ import annotations

import pickle

import gymnasium as gym
import pytest

import rllm_envs
from rllm_agents import (
    AGENTS,
    Agent,
    FrozenLakeAgent,
    GenericAgent,
    MathAgent,
    ToolAgent,
    agent_class_for,
    env_family,
    make_agent,
    strip_think,
)
from rllm_envs.error import DependencyNotInstalled, InvalidEnvConfig


@pytest.mark.parametrize(
    ("env_id", "family"),
    [
        ("rllm/Math-v0", "Math"),
        ("rllm/FrozenLake-v12", "FrozenLake"),
        ("rllm_envs:rllm/Code-v0", "Code"),
        ("CartPole-v1", "CartPole"),
        ("Plain", "Plain"),
    ],
)
def test_env_family(env_id, family):
    assert env_family(env_id) == family


def test_agent_selection_and_override():
    assert agent_class_for("rllm/FrozenLake-v0") is FrozenLakeAgent
    assert agent_class_for("rllm/Math-v0") is MathAgent
    assert agent_class_for("rllm/Search-v0") is ToolAgent
    assert agent_class_for("rllm/Unknown-v0") is GenericAgent
    assert isinstance(make_agent("rllm/Math-v0", "generic"), GenericAgent)
    assert isinstance(make_agent("rllm/Math-v0", ToolAgent), ToolAgent)
    mine = MathAgent(system_prompt=None)
    assert make_agent("rllm/FrozenLake-v0", mine) is mine
    assert make_agent("rllm/Math-v0", system_prompt="custom").system_prompt == "custom"
    with pytest.raises(InvalidEnvConfig, match="Did you mean"):
        make_agent("rllm/Math-v0", "maths")
    with pytest.raises(InvalidEnvConfig):
        make_agent("rllm/Math-v0", 42)  # type: ignore[arg-type]
    with pytest.raises(InvalidEnvConfig, match="think"):
        Agent(think="drop")


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
    assert set(AGENTS) >= {"FrozenLake", "Math", "Code", "ToolUse", "Search"}


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


def test_tool_agent_sends_tool_results_as_tool_messages():
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    agent = ToolAgent()
    agent.reset("task", {"tools": tools})
    assert agent.tools == tools
    agent.act('<tool_call>{"name": "f", "arguments": {}}</tool_call>')
    assert agent.observe("result", 0.0, False, False, {})[0]["role"] == "tool"
    agent.act("final answer")
    assert agent.observe("not done", 0.0, False, False, {})[0]["role"] == "user"


def test_agents_pickle():
    agent = make_agent("rllm/FrozenLake-v0")
    agent.reset("obs", {})
    clone = pickle.loads(pickle.dumps(agent))
    assert clone.messages == agent.messages and type(clone) is FrozenLakeAgent
