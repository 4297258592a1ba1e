"""Tool-use task generators, their plans (run through the real tools) and the scorer."""

from __future__ import annotations

import pytest

from rllm_envs.tasks import task_rng
from rllm_envs.tools import ToolCall, ToolRegistry, table_tool
from rllm_envs.tooluse import BUILTIN_TOOLS, FAMILIES, MAX_DIFFICULTY, generate, score_answer
from rllm_envs.tooluse.tasks import answers_match

CASES = [(f, d) for f in FAMILIES for d in range(1, MAX_DIFFICULTY + 1)]


def _task(family, difficulty, i):
    return generate(task_rng(0, i), families=(family,), difficulty=difficulty)


def _registry(task):
    tools = [table_tool(spec) for spec in task["tables"]]
    return ToolRegistry(tools + [BUILTIN_TOOLS[name] for name in task["tools"]])


@pytest.mark.parametrize("family, difficulty", CASES, ids=[f"{f}-d{d}" for f, d in CASES])
def test_plan_through_the_tools_reaches_the_answer(family, difficulty):
    for i in range(6):
        task = _task(family, difficulty, i)
        registry = _registry(task)
        *tool_turns, final = task["plan"]
        outputs = []
        for turn in tool_turns:
            for call in turn:
                result = registry.execute(ToolCall(call["name"], call["arguments"]))
                assert result.ok, (task["question"], call, result.output)
                outputs.append(result.output)
        # The last tool output states the answer: the plan solves the task through the tools.
        assert task["answer"] in outputs[-1], (task["question"], outputs)
        assert final == [{"name": "final_answer", "arguments": {"answer": task["answer"]}}]


@pytest.mark.parametrize("family, difficulty", CASES, ids=[f"{f}-d{d}" for f, d in CASES])
def test_reference_scores_one_and_garbage_zero(family, difficulty):
    for i in range(4):
        task = _task(family, difficulty, i)
        assert score_answer(task["answer"], task) == 1.0
        assert score_answer("qwzx ☃ \\boxed{", task) == 0.0
        assert score_answer(None, task) == 0.0
        assert score_answer("", task) == 0.0


def test_tasks_are_pure_functions_of_seed_and_index():
    a = generate(task_rng(3, 17), families=tuple(FAMILIES), difficulty=2)
    b = generate(task_rng(3, 17), families=tuple(FAMILIES), difficulty=2)
    c = generate(task_rng(3, 18), families=tuple(FAMILIES), difficulty=2)
    assert a == b and a != c


def test_difficulty_lengthens_plans():
    for family in ("lookup", "chain", "dates"):
        easy = [
            len(_task(family, 1, i)["plan"]) + len(_task(family, 1, i)["plan"][0]) for i in range(5)
        ]
        hard = [
            len(_task(family, 5, i)["plan"]) + len(_task(family, 5, i)["plan"][0]) for i in range(5)
        ]
        assert sum(hard) > sum(easy), family


@pytest.mark.parametrize(
    "prediction, gold, kind, expected",
    [
        ("47.85", "47.85", "math", True),
        ("$47.850", "47.85", "math", True),
        ("\\frac{1}{2}", "1/2", "math", True),
        ("47.8", "47.85", "math", False),
        ("2031-03-05", "2031-03-05", "date", True),
        ("2031-3-5", "2031-03-05", "date", False),
        ("garbage", "2031-03-05", "date", False),
        ("tuesday.", "Tuesday", "text", True),
        ("  Breir  Keiszen ", "breir keiszen", "text", True),
        ("Monday", "Tuesday", "text", False),
    ],
)
def test_answers_match(prediction, gold, kind, expected):
    assert answers_match(prediction, gold, kind) is expected
