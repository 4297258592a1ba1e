"""Demonstrations: one worked exchange of an invented task between the system prompt and the
task, chosen per family (and per role or tool set), replaceable and removable, never a task."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401
from rllm_agents import make_agent
from rllm_agents.agent import (
    MATH_DEMONSTRATION,
    SEARCH_DEMONSTRATION,
    TOOL_DEMONSTRATION,
    GenericAgent,
)
from rllm_agents.multiagent import JUDGE_DEMONSTRATION
from rllm_envs.error import InvalidEnvConfig


def _first_messages(env_id: str, **env_kwargs):
    env = gym.make(env_id, **env_kwargs)
    observation, info = env.reset(seed=0, options={"index": 0})
    env.close()
    return make_agent(env_id).reset(observation, info), observation


@pytest.mark.parametrize(
    ("env_id", "demo"),
    [
        ("rllm/Math-v0", MATH_DEMONSTRATION),
        ("rllm/ToolUse-v0", TOOL_DEMONSTRATION),
        ("rllm/Search-v0", SEARCH_DEMONSTRATION),
    ],
)
def test_family_demonstration_sits_between_system_prompt_and_task(env_id, demo):
    messages, observation = _first_messages(env_id)
    assert messages[0]["role"] == "system"
    assert messages[1 : 1 + len(demo)] == [dict(m) for m in demo]
    assert messages[-1] == {"role": "user", "content": observation}
    assert len(messages) == len(demo) + 2


def test_families_without_a_demonstration_open_as_before():
    messages, observation = _first_messages("rllm/FrozenLake-v0")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[-1]["content"] == observation


def test_role_agents_pick_the_demonstration_of_their_role():
    agent = make_agent("rllm/SolverJudge-v0")
    judge = agent.reset("You are the judge.", {"role": "judge"})
    assert judge[1 : 1 + len(JUDGE_DEMONSTRATION)] == [dict(m) for m in JUDGE_DEMONSTRATION]
    solver = make_agent("rllm/SolverJudge-v0").reset("Problem", {"role": "solver"})
    assert solver[1 : 1 + len(MATH_DEMONSTRATION)] == [dict(m) for m in MATH_DEMONSTRATION]
    ttt = make_agent("rllm/TicTacToe-v0").reset("Board", {"role": "x"})
    assert [m["role"] for m in ttt] == ["system", "user"]


def test_demonstration_can_be_replaced_or_dropped():
    own = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "\\boxed{4}"}]
    assert make_agent("rllm/Math-v0", demonstration=own).reset("q", {})[1:3] == own
    for none in (None, ()):
        messages = make_agent("rllm/Math-v0", demonstration=none).reset("q", {})
        assert [m["role"] for m in messages] == ["system", "user"]
    # A demonstration given to the constructor wins over the per-task choice.
    tool = make_agent("rllm/Search-v0", demonstration=own)
    assert tool.reset("q", {"tools": [{"function": {"name": "search"}}]})[1:3] == own


def test_the_conversation_is_a_copy_of_the_demonstration():
    agent = make_agent("rllm/Math-v0")
    agent.reset("q", {})[1]["content"] = "changed"
    agent.messages[1]["content"] = "changed"
    assert make_agent("rllm/Math-v0").reset("q", {})[1] == dict(MATH_DEMONSTRATION[0])


@pytest.mark.parametrize(
    "bad",
    [
        "Compute 2+2",
        [{"role": "user", "content": "q"}],  # ends before the reply
        [{"role": "narrator", "content": "q"}, {"role": "assistant", "content": "a"}],
        [{"role": "user", "content": 3}, {"role": "assistant", "content": "a"}],
        [("user", "q")],
    ],
)
def test_malformed_demonstrations_raise_early(bad):
    with pytest.raises(InvalidEnvConfig, match="demonstration"):
        GenericAgent(demonstration=bad)


def test_demonstrations_are_no_task_of_the_env():
    """A shown answer must never be a task's answer: the demos are outside the task spaces."""
    import numpy as np

    from rllm_envs.math.generators import arithmetic

    problem = MATH_DEMONSTRATION[0]["content"]
    rng = np.random.default_rng(0)
    assert all(arithmetic(rng, d)["problem"] != problem for d in range(1, 6) for _ in range(2000))
    # The search demo's person and city are in no passage; its tool is in no ToolUse task.
    search = gym.make("rllm/Search-v0")
    search.reset(seed=0, options={"index": 0})
    for query in ("Oskar Melvane", "Dravik"):
        observation, *_ = search.step(f"<search>{query}</search>")
        assert "Melvane" not in observation and "Dravik" not in observation
    tool = gym.make("rllm/ToolUse-v0", python=False).unwrapped
    for index in range(50):
        _, info = tool.reset(seed=0, options={"index": index})
        assert "word_count" not in {t["function"]["name"] for t in info["tools"]}
