"""Behaviour of rllm/ToolUse-v1 beyond the shared conformance matrix."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest

import rllm_envs
from rllm_envs.tooluse import FAMILIES, ToolUseEnv
from tests.envs.conformance import oracle, run_episode


def _call(name, **arguments):
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"


def test_first_observation_lists_tools_and_call_format():
    env = gym.make("rllm/ToolUse-v1")
    obs, info = env.reset(seed=0)
    assert "Task:" in obs and "Tools:" in obs and "<tool_call>" in obs and "final_answer" in obs
    names = [t["function"]["name"] for t in info["tools"]]
    assert names[-2:] == ["python", "final_answer"]
    for name in names:
        assert f"- {name}(" in obs
    *_, info = env.step(env.unwrapped.oracle_action())
    assert [t["function"]["name"] for t in info["tools"]] == names


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "program"])
@pytest.mark.parametrize("difficulty", [1, 3, 5])
def test_oracle_solves_every_family_through_the_tools(family, difficulty):
    env = gym.make("rllm/ToolUse-v1", families=[family], difficulty=difficulty)
    for seed in range(3):
        steps = run_episode(env, oracle, seed=seed)
        assert steps[-1][4]["is_correct"] and sum(s[1] for s in steps) == 1.0
        assert all(not s[4]["invalid_action"] for s in steps[1:])
        # Every turn before the answer ran tools, and the last result states the answer.
        assert all(s[4]["tool_results"] for s in steps[1:-1])
        assert env.unwrapped.task["answer"] in steps[-2][0]


def test_tool_results_come_back_as_the_next_observation():
    env = ToolUseEnv(families=["arith"])
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(
        _call("calculator", expression="2^10") + _call("calculator", expression="1/4")
    )
    assert "[calculator result]\n1024" in obs and "1/4 = 0.25" in obs
    assert reward == 0.0 and not terminated and not info["invalid_action"]
    assert info["tool_calls"] == [
        {"name": "calculator", "arguments": {"expression": "2^10"}},
        {"name": "calculator", "arguments": {"expression": "1/4"}},
    ]
    assert info["tool_results"] == [{"name": "calculator", "ok": True, "error": None}] * 2


@pytest.mark.parametrize(
    "reply, fragment",
    [
        ("<tool_call>{not json</tool_call>", "not valid JSON"),
        (
            _call("calculater", expression="1"),
            "unknown tool `calculater`. Did you mean `calculator`",
        ),
        (_call("calculator", expression=12), "expected string, got integer 12"),
        (_call("calculator"), "missing required argument `expression`"),
        (_call("final_answer"), "missing required argument `answer`"),
    ],
)
def test_invalid_calls_are_explained_and_flagged(reply, fragment):
    env = ToolUseEnv(families=["arith"])
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(reply)
    assert fragment in obs and fragment in info["invalid_reason"]
    assert info["invalid_action"] and reward == 0.0 and not terminated
    assert info["reward_components"]["invalid_call"] == 1.0


def test_tool_errors_are_feedback_not_invalid_actions():
    env = ToolUseEnv(families=["arith"])
    env.reset(seed=0)
    obs, _, _, _, info = env.step(_call("calculator", expression="__import__('os')"))
    assert "[calculator result (error)]" in obs and "not available" in obs
    assert not info["invalid_action"]
    assert info["tool_results"][0]["error"] == "tool_error"


def test_reply_without_call_or_answer_gets_a_clear_observation():
    env = ToolUseEnv()
    env.reset(seed=0)
    obs, reward, _, _, info = env.step("I think the answer is probably 42.")
    assert "No tool call or final answer" in obs and "<tool_call>" in obs
    assert info["invalid_action"] and reward == 0.0


def test_never_calling_a_tool_truncates_with_zero():
    env = gym.make("rllm/ToolUse-v1", max_turns=3)
    steps = run_episode(env, lambda *_: "Let me think more.", seed=0)
    assert steps[-1][3] and not steps[-1][2] and sum(s[1] for s in steps) == 0.0


def test_invalid_call_penalty_is_an_option():
    env = ToolUseEnv(reward_weights={"invalid_call": -0.05})
    env.reset(seed=0)
    assert env.step("<tool_call>{bad</tool_call><tool_call>{bad</tool_call>")[1] == -0.1


def test_answer_tag_and_wrong_answer_end_the_episode():
    env = ToolUseEnv()
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(f"<answer>{env.task['answer']}</answer>")
    assert terminated and reward == 1.0 and info["call_format"] == "answer_tag"
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(_call("final_answer", answer="Atlantis"))
    assert terminated and reward == 0.0 and not info["is_correct"] and "not correct" in obs
    assert info["answer"] == "Atlantis"


def test_openai_style_and_bare_json_calls_work():
    env = ToolUseEnv(families=["arith"])
    env.reset(seed=0)
    message = {
        "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "calculator", "arguments": json.dumps({"expression": "6*7"})}}
        ]
    }  # fmt: skip
    obs, *_, info = env.step(json.dumps(message))
    assert "42" in obs and info["call_format"] == "openai"
    obs, *_, info = env.step('{"name": "calculator", "arguments": {"expression": "6*8"}}')
    assert "48" in obs and info["call_format"] == "json"


def test_calls_after_the_answer_do_not_run_and_calls_are_capped():
    env = ToolUseEnv(families=["arith"], max_calls_per_turn=2)
    env.reset(seed=0)
    obs, *_, info = env.step("".join(_call("calculator", expression=str(i)) for i in range(4)))
    assert len(info["tool_results"]) == 2 and "only 2 tool calls" in obs
    env.reset(seed=0)
    reply = _call("final_answer", answer=env.task["answer"]) + _call("calculator", expression="1")
    _, reward, terminated, _, info = env.step(reply)
    assert terminated and reward == 1.0 and info["tool_results"] == []


def test_mixed_oracle_and_noise_is_seeded_deterministic():
    # Registered nondeterministic (the Python tool); without Python calls it is deterministic.
    def make_policy(rng):
        def policy(env, obs, info):
            if rng.random() < 0.6:
                return env.unwrapped.oracle_action()
            return env.action_space.sample()

        return policy

    runs = []
    for _ in range(2):
        env = gym.make("rllm/ToolUse-v1")
        env.action_space.seed(7)
        policy = make_policy(np.random.default_rng(7))
        runs.append([run_episode(env, policy, seed=s) for s in range(4)])
    assert runs[0] == runs[1]


def test_pickled_env_continues_identically():
    env = ToolUseEnv(families=["chain"], difficulty=3)
    env.reset(seed=1)
    env.step(env.oracle_action())
    clone = pickle.loads(pickle.dumps(env))
    action = env.oracle_action()
    assert clone.oracle_action() == action and env.step(action) == clone.step(action)


def test_python_can_be_left_out():
    env = ToolUseEnv(python=False)
    _, info = env.reset(seed=0)
    assert "python" not in [t["function"]["name"] for t in info["tools"]]


def test_math_dataset_with_field_map(tmp_path):
    path = tmp_path / "math.jsonl"
    rows = [{"problem": "What is 2^100 mod 7?", "solution": "...", "answer": "2"},
            {"problem": "Simplify 6/8.", "answer": "\\frac{3}{4}"}]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows))
    env = gym.make("rllm/ToolUse-v1", dataset=str(path), field_map={"question": "problem"})
    obs, info = env.reset(options={"index": 1})
    assert "Simplify 6/8." in obs and info["family"] == "math"
    _, reward, terminated, _, _ = env.step(_call("final_answer", answer="0.75"))
    assert terminated and reward == 1.0
    for seed in range(2):
        assert run_episode(env, oracle, seed=seed)[-1][4]["is_correct"]


def test_configuration_errors_say_how_to_fix(tmp_path):
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Unknown task family `lookups`"):
        ToolUseEnv(families=["lookups"])
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="difficulty"):
        ToolUseEnv(difficulty=0)
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="field_map"):
        ToolUseEnv(field_map={"question": "problem"})
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Python tool"):
        ToolUseEnv(families=["program"], python=False)
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({"problem": "x"}))
    with pytest.raises(rllm_envs.InvalidDataset, match="field_map"):
        ToolUseEnv(dataset=path)
    env = ToolUseEnv()
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="needs fields"):
        env.reset(options={"task": {"question": "q"}})


def _sandbox_available():
    from rllm_envs.sandbox import available_backends

    return bool(available_backends())


@pytest.mark.skipif(not _sandbox_available(), reason="no sandbox backend (firejail/bubblewrap)")
def test_python_tool_runs_in_the_sandbox():
    env = ToolUseEnv(families=["arith"], python_time_limit=2.0)
    env.reset(seed=0)
    obs, *_, info = env.step(_call("python", code="print(sum(i * i for i in range(10)))"))
    assert "285" in obs and info["tool_results"][0]["ok"]
    obs, *_ = env.step(
        _call("python", code="import os; print(os.listdir(os.path.expanduser('~')))")
    )
    assert "/work" not in obs
    obs, *_ = env.step(_call("python", code="while True: pass"))
    assert "Time limit exceeded" in obs


@pytest.mark.skipif(not _sandbox_available(), reason="no sandbox backend (firejail/bubblewrap)")
def test_program_family_oracle_runs_python_in_the_sandbox():
    env = gym.make("rllm/ToolUse-v1", families=["program"], difficulty=3)
    assert env.unwrapped.families == ("program",)
    for seed in range(3):
        steps = run_episode(env, oracle, seed=seed)
        assert steps[-1][4]["is_correct"] and sum(s[1] for s in steps) == 1.0
        assert steps[1][4]["tool_calls"][0]["name"] == "python"
        assert env.unwrapped.task["answer"] in steps[1][0]


def test_default_families_leave_out_program():
    env = ToolUseEnv()
    assert "program" not in env.families


# --------------------------------------------------------------------------- ungameable
# Each reward component must stay below its best value unless the reply does what the
# component names: `correct` needs the right answer, `invalid_call` (a penalty, best 0)
# needs every call to be a real one.

EXAMPLE_CALL = _call("calculator", expression="12 * (3 + 4)")


@pytest.mark.parametrize(
    "reply",
    [
        _call("final_answer", answer="..."),
        _call("final_answer", answer="<your answer>"),
        _call("final_answer", answer=""),
        "<answer>...</answer>",
        "<answer></answer>",
        "<answer>your answer</answer>",
    ],
    ids=["dots", "example", "empty", "tag-dots", "tag-empty", "tag-words"],
)
def test_parroted_placeholder_answers_are_refused(reply):
    env = ToolUseEnv(families=["lookup"])
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert not terminated and not truncated and reward == 0.0
    assert info["answer"] is None and info["invalid_action"]
    assert info["reward_components"] == {"correct": 0.0, "invalid_call": 1.0}
    assert "placeholder" in obs
    # The episode goes on: the real answer is still taken.
    *_, info = env.step(_call("final_answer", answer=env.task["answer"]))
    assert info["is_correct"]


@pytest.mark.parametrize(
    "reply",
    [
        EXAMPLE_CALL,
        "<tool_call></tool_call>",
        "<tool_call>{}</tool_call>",
        "<tool_call>",
        _call("calculator", expression=""),
        _call("calculator", expression="..."),
        '<tool_call>{"name": "get_product", "arguments": {"name": "<name>"}}</tool_call>',
    ],
    ids=["example-call", "empty-tag", "empty-object", "open-tag", "empty-arg", "dots-arg",
         "placeholder-arg"],
)  # fmt: skip
def test_empty_and_example_calls_are_invalid_and_not_run(reply):
    env = ToolUseEnv(families=["lookup"])
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(reply)
    assert not terminated and reward == 0.0
    assert info["tool_results"] == []
    assert info["reward_components"]["invalid_call"] >= 1.0 and info["invalid_action"]


def test_a_format_only_reply_copied_from_the_prompt_earns_nothing():
    env = ToolUseEnv(families=["lookup"], python=False)
    obs, _ = env.reset(seed=0)
    help_text = obs[obs.index("To call a tool") :]
    _, reward, terminated, _, info = env.step(help_text)
    assert not terminated and reward == 0.0
    assert info["reward_components"]["invalid_call"] >= 1.0
    assert info["tool_results"] == []


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "program"])
def test_prompt_examples_are_neutral(family):
    env = ToolUseEnv(families=[family])
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        first = env.task["plan"][0][0]
        assert json.dumps({"name": first["name"], "arguments": first["arguments"]}) not in obs
        assert json.dumps({"answer": env.task["answer"]}) not in obs


def test_math_records_do_not_leak_their_answer_into_the_prompt(tmp_path):
    path = tmp_path / "math.jsonl"
    path.write_text(json.dumps({"question": "What is 17 * 23?", "answer": "391"}))
    env = ToolUseEnv(dataset=str(path))
    obs, _ = env.reset(seed=0)
    assert "391" not in obs


@pytest.mark.parametrize("family", [f for f in FAMILIES if f != "program"])  # python tool
def test_the_format_example_has_arguments_of_the_schema_types(family):
    """Models copy the example's form: a quoted number for an integer argument would teach the
    type error the schema check refuses. String arguments are refused placeholders."""
    from rllm_envs.tools import validate_arguments

    env = ToolUseEnv(families=[family], python=False)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        block = obs[obs.index("<tool_call>") + len("<tool_call>") : obs.index("</tool_call>")]
        call = json.loads(block)
        schema = next(t["function"]["parameters"] for t in info["tools"]
                      if t["function"]["name"] == call["name"])  # fmt: skip
        assert validate_arguments(schema, call["arguments"]) == []
        strings = [v for v in call["arguments"].values() if isinstance(v, str)]
        if strings and call["name"] != "calculator":
            *_, step_info = env.step(f"<tool_call>{block}</tool_call>")
            assert step_info["invalid_action"] and step_info["tool_results"] == []


def test_the_format_example_value_follows_the_argument_type():
    from rllm_envs.tooluse.tooluse_env import _example_value

    assert _example_value("days", {"type": "integer"}) == 7
    assert _example_value("x", {"type": ["number", "null"]}) == 2.5
    # A string is accepted: the refused placeholder, so the example never runs as sent.
    assert _example_value("value", {"type": ["number", "string"]}) == "<value>"
    assert _example_value("date", {"type": "string"}) == "<date>"
    assert _example_value("any", {}) == "<any>"
