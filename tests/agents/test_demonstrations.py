"""Demonstrations: one worked exchange of an invented task between the system prompt and the
task, chosen per family (and per role or tool set), replaceable and removable, never a task."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401
from rllm_agents import make_agent
from rllm_agents.agent import GenericAgent
from rllm_envs import demonstrations
from rllm_envs.error import InvalidEnvConfig

MATH_DEMONSTRATION = demonstrations.MATH.messages
TOOL_DEMONSTRATION = demonstrations.TOOL.messages
SEARCH_DEMONSTRATION = demonstrations.SEARCH.messages
JUDGE_DEMONSTRATION = demonstrations.JUDGE.messages


def _first_messages(env_id: str, **env_kwargs):
    env = gym.make(env_id, **env_kwargs)
    observation, info = env.reset(seed=0, options={"index": 0})
    env.close()
    return make_agent(env_id).reset(observation, info), observation


@pytest.mark.parametrize(
    ("env_id", "demo"),
    [
        ("rllm/Math-v1", MATH_DEMONSTRATION),
        ("rllm/ToolUse-v1", TOOL_DEMONSTRATION),
        ("rllm/Search-v1", SEARCH_DEMONSTRATION),
    ],
)
def test_family_demonstration_sits_between_system_prompt_and_task(env_id, demo):
    messages, observation = _first_messages(env_id)
    assert messages[0]["role"] == "system"
    assert messages[1 : 1 + len(demo)] == [dict(m) for m in demo]
    assert messages[-1] == {"role": "user", "content": observation}
    assert len(messages) == len(demo) + 2


def test_families_without_a_demonstration_open_as_before():
    messages, observation = _first_messages("rllm/FrozenLake-v1")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert messages[-1]["content"] == observation


def test_role_agents_pick_the_demonstration_of_their_role():
    agent = make_agent("rllm/SolverJudge-v1")
    judge = agent.reset("You are the judge.", {"role": "judge"})
    assert judge[1 : 1 + len(JUDGE_DEMONSTRATION)] == [dict(m) for m in JUDGE_DEMONSTRATION]
    solver = make_agent("rllm/SolverJudge-v1").reset("Problem", {"role": "solver"})
    assert solver[1 : 1 + len(MATH_DEMONSTRATION)] == [dict(m) for m in MATH_DEMONSTRATION]
    ttt = make_agent("rllm/TicTacToe-v0").reset("Board", {"role": "x"})
    assert [m["role"] for m in ttt] == ["system", "user"]


def test_demonstration_can_be_replaced_or_dropped():
    own = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "\\boxed{4}"}]
    assert make_agent("rllm/Math-v1", demonstration=own).reset("q", {})[1:3] == own
    for none in (None, ()):
        messages = make_agent("rllm/Math-v1", demonstration=none).reset("q", {})
        assert [m["role"] for m in messages] == ["system", "user"]
    # A demonstration given to the constructor wins over the per-task choice.
    tool = make_agent("rllm/Search-v1", demonstration=own)
    assert tool.reset("q", {"tools": [{"function": {"name": "search"}}]})[1:3] == own


def test_the_conversation_is_a_copy_of_the_demonstration():
    agent = make_agent("rllm/Math-v1")
    agent.reset("q", {})[1]["content"] = "changed"
    agent.messages[1]["content"] = "changed"
    assert make_agent("rllm/Math-v1").reset("q", {})[1] == dict(MATH_DEMONSTRATION[0])


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
    search = gym.make("rllm/Search-v1")
    search.reset(seed=0, options={"index": 0})
    for query in ("Oskar Melvane", "Dravik"):
        observation, *_ = search.step(f"<search>{query}</search>")
        assert "Melvane" not in observation and "Dravik" not in observation
    tool = gym.make("rllm/ToolUse-v1", python=False).unwrapped
    for index in range(50):
        _, info = tool.reset(seed=0, options={"index": index})
        assert "word_count" not in {t["function"]["name"] for t in info["tools"]}


# --------------------------------------------------------- a copied demonstration earns nothing

_ENVS = [e.id for e in rllm_envs.ENVS]


def _copies(env_id: str, info) -> list[str]:
    """What a policy copying the prompt's worked examples would send: every shown reply, and
    each demonstration's bare final answer."""
    from rllm_envs.demonstrations import DEMONSTRATIONS

    agent = make_agent(env_id)
    shown = [m["content"] for m in agent.demonstration_for(info) if m["role"] == "assistant"]
    every = [r for d in DEMONSTRATIONS for r in d.replies]
    answers = [a for d in DEMONSTRATIONS for a in d.answers]
    boxed_answers = [f"The answer is {a}." for a in answers]
    return list(dict.fromkeys([*shown, *every, *answers, *boxed_answers]))


@pytest.mark.parametrize("env_id", _ENVS)
def test_a_copied_demonstration_earns_nothing(env_id):
    """Nothing a copy does pays; what it costs it still costs (att35n: a FrozenLake move
    with a demonstration's answer in the reply was free, its fall and its step away from
    the goal included, so stepping back and forth with it earned the progress twice)."""
    env = gym.make(env_id)
    weights = env.unwrapped.reward_weights
    n_tasks = 2 if env_id.startswith("rllm/Code") else 6
    for index in range(n_tasks):
        _, info = env.reset(seed=index, options={"index": index})
        for reply in _copies(env_id, info):
            env.reset(seed=index, options={"index": index})
            _, reward, _, _, step_info = env.step(reply)
            assert reward <= 0.0, (env_id, index, reply)
            paying = {
                k: v for k, v in step_info["reward_components"].items() if weights.get(k, 0) > 0
            }
            assert set(paying.values()) <= {0.0}, (reply, step_info)
            assert step_info["copied_demonstration"], reply
            assert step_info["invalid_action"] and not step_info["is_correct"]
    env.close()


def test_a_demonstration_answer_that_is_right_still_counts():
    """The rule pays nothing for a copy, not for a right answer that happens to be 67."""
    env = gym.make("rllm/Math-v1")
    task = {"problem": "Compute $60 + 7$.", "answer": "67"}
    env.reset(options={"task": task})
    _, reward, *_, info = env.step("\\boxed{67}")
    assert reward == 1.0 and info["is_correct"] and "copied_demonstration" not in info
    # ...but the whole worked reply is a copy even then.
    env.reset(options={"task": task})
    _, reward, *_, info = env.step(MATH_DEMONSTRATION[1]["content"])
    assert reward == 0.0 and info["copied_demonstration"] == "math"


def test_the_copy_rule_reads_the_answer_part_and_ignores_whitespace_and_case():
    from rllm_envs.demonstrations import copied_demonstration

    reply = MATH_DEMONSTRATION[1]["content"]
    assert copied_demonstration("<think>plan</think>\n" + reply.upper().replace(" ", "\n"))
    assert copied_demonstration(f"<think>{reply}</think> \\boxed{{12}}") is None
    assert copied_demonstration("\\boxed{670}") is None and copied_demonstration("\\boxed{6 7}")
    assert copied_demonstration("", correct=False) is None


def test_a_registered_id_knows_the_worked_examples_of_its_spec():
    """A family's own worked example (in its spec, not in the shared list) is caught too."""
    from rllm_envs.core import spec_demonstrations
    from rllm_envs.demonstrations import DEMONSTRATIONS

    swe = spec_demonstrations("rllm/SWE-v0")
    assert [d.name for d in swe] == ["rllm/SWE-v0:default"]
    assert swe[0].replies[0].startswith("<tool_call>")
    assert spec_demonstrations("rllm/Math-v1", DEMONSTRATIONS) == ()  # already shared
    assert spec_demonstrations("rllm/Nope-v0") == () and spec_demonstrations(None) == ()
    # Its copy earns nothing, whatever the class attribute lists.
    env = gym.make("rllm/Math-v1")
    env.unwrapped.__dict__["_demonstrations_known"] = (*DEMONSTRATIONS, *swe)
    env.reset(seed=0)
    _, reward, *_, info = env.step(swe[0].replies[0])
    assert reward == 0.0 and info["copied_demonstration"] == "rllm/SWE-v0:default"


@pytest.mark.parametrize(
    "spelling", ["\\boxed{67.0}", "\\boxed{\\text{67}}", "\\boxed{+067}", "\\fbox{67}"]
)
def test_the_demonstration_answer_spelled_another_way_is_still_a_copy(spelling):
    env = gym.make("rllm/Math-v1")
    env.reset(seed=3)
    _, reward, *_, info = env.step(spelling)
    assert reward == 0.0 and set(info["reward_components"].values()) == {0.0}
    assert info["copied_demonstration"] == "math"
    env.reset(seed=3)
    assert "copied_demonstration" not in env.step("\\boxed{670}")[-1]
