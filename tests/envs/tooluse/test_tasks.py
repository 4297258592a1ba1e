"""Tool-use task generators, their plans (run through the real tools) and the scorer."""

from __future__ import annotations

import re

import pytest

from rllm_envs.sandbox import available_backends
from rllm_envs.tasks import task_rng
from rllm_envs.tools import ToolCall, ToolRegistry, python_tool, table_tool
from rllm_envs.tooluse import BUILTIN_TOOLS, FAMILIES, MAX_DIFFICULTY, generate, score_answer
from rllm_envs.tooluse.tasks import _fib_mod, _program, answers_match

CASES = [(f, d) for f in FAMILIES for d in range(1, MAX_DIFFICULTY + 1)]


def _task(family, difficulty, i):
    return generate(task_rng(0, i), families=(family,), difficulty=difficulty)


def _registry(task):
    tools = [table_tool(spec) for spec in task["tables"]]
    tools += [BUILTIN_TOOLS[name] for name in task["tools"]]
    if task.get("needs_python"):
        tools.append(python_tool(time_limit=10))
    return ToolRegistry(tools)


@pytest.mark.parametrize("family, difficulty", CASES, ids=[f"{f}-d{d}" for f, d in CASES])
def test_plan_through_the_tools_reaches_the_answer(family, difficulty):
    if family == "program" and not available_backends():
        pytest.skip("the program family's plan runs Python in the sandbox (firejail/bubblewrap)")
    for i in range(2 if family == "program" else 6):
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


def test_program_answers_match_brute_force():
    x, y = 0, 1
    for n in range(300):
        assert _fib_mod(n, 1009) == x
        x, y = y, (x + y) % 1009
    import numpy as np

    seen = set()
    for i in range(200):
        task = _program(np.random.default_rng(i), 1)
        q = task["question"]
        if q.startswith("How many integers"):
            _, size, a, b, c = map(int, re.findall(r"\d+", q))
            brute = sum(1 for n in range(1, size + 1) if (n % a == 0 or n % b == 0) and n % c)
            assert task["answer"] == str(brute), q
            seen.add("count")
        if q.startswith("How many prime"):
            (size,) = map(int, re.findall(r"\d+", q))
            brute = sum(all(n % d for d in range(2, int(n**0.5) + 1)) for n in range(2, size + 1))
            assert task["answer"] == str(brute), q
            seen.add("primes")
    assert seen == {"count", "primes"}


@pytest.mark.parametrize(
    "prediction, gold, kind, expected",
    [
        ("47.85", "47.85", "math", True),
        ("$47.850", "47.85", "math", True),
        ("\\frac{1}{2}", "1/2", "math", True),
        ("47.8", "47.85", "math", False),
        ("2031-03-05", "2031-03-05", "date", True),
        ("2031-3-5", "2031-03-05", "date", True),
        ("garbage", "2031-03-05", "date", False),
        ("tuesday.", "Tuesday", "text", True),
        ("  Breir  Keiszen ", "breir keiszen", "text", True),
        ("Monday", "Tuesday", "text", False),
        # att33f: markdown bold and a currency code around a right value
        ("**47.85**", "47.85", "math", True),
        ("47.85 USD", "47.85", "math", True),
        ("**2031-03-05**", "2031-03-05", "date", True),
        ("**47.8**", "47.85", "math", False),
        ("****", "47.85", "math", False),
        # att36c: Markdown code around a right value
        ("`9044`", "9044", "math", True),
        ("`2053-11-21`", "2053-11-21", "date", True),
        ("`9045`", "9044", "math", False),
        ("``", "9044", "math", False),
        # att37g F6: a date in any unambiguous form, in a sentence; a lead-in before an answer
        ("November 21, 2053", "2053-11-21", "date", True),
        ("Fri, 21st of Nov. 2053", "2053-11-21", "date", True),
        ("2053-11-21 (Friday)", "2053-11-21", "date", True),
        ("It ends on 2053/11/21.", "2053-11-21", "date", True),
        ("11/21/2053", "2053-11-21", "date", True),
        ("Saturday, 2053-11-21", "2053-11-21", "date", False),  # not that date's weekday
        ("2053-11-21 or 2053-11-22", "2053-11-21", "date", False),  # two dates
        ("from 2053-05-07 to 2053-11-21", "2053-11-21", "date", False),
        ("03/05/2031", "2031-03-05", "date", False),  # March 5 or May 3
        ("2053-02-30", "2053-03-02", "date", False),  # no such day
        ("The answer is 9044.", "9044", "math", True),
        ("The total price of the order is 47.85", "47.85", "math", True),
        ("Final answer: Breir Keiszen", "breir keiszen", "text", True),
        ("The answer is 9045.", "9044", "math", False),
        ("The answer is 9000 + 44", "9044", "math", False),  # arithmetic after a lead-in
        # att38c: day-first and dashed digits, weekdays in a sentence or abbreviated
        ("21.11.2053", "2053-11-21", "date", True),
        ("11-21-2053", "2053-11-21", "date", True),
        ("It ends on a Friday.", "Friday", "text", True),
        ("Fri", "Friday", "text", True),
        ("Friday or Saturday", "Friday", "text", False),
    ],
)
def test_answers_match(prediction, gold, kind, expected):
    assert answers_match(prediction, gold, kind) is expected


@pytest.mark.parametrize(
    ("prediction", "expected"),
    [
        ("The department is located in Breir Keiszen.", True),
        ("Breir Keiszen is the city.", True),
        ("Breir Keiszen or Paris", False),  # a second candidate is not read as the answer
        ("Paris, Breir Keiszen", False),
        ("Breir Keiszen, not Breir Keiszen", False),
        ("The capital of the world is Breir Keiszen, obviously", False),  # words of no question
    ],
)
def test_a_name_in_a_sentence_of_the_questions_words_is_the_answer(prediction, expected):
    """att38c (honest): "The department is located in X." and "X is the city." scored 0."""
    question = "In which city is the department of the manager of Raixsou Thanbo located?"
    assert answers_match(prediction, "Breir Keiszen", "text", question) is expected


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("Sunday" + " " * 300 + "is Monday", "Monday"),
        ("Sunday" + " " * 300 + "is Monday", "Sunday"),
        ("Sunday\n\n\n\n\nis Monday", "Monday"),
        ("Breir Keiszen" + " " * 300 + "is Paris", "Paris"),
        ("Breir Keiszen" + " " * 300 + "is Paris", "Breir Keiszen"),
        ("Paris is Breir Keiszen", "Breir Keiszen"),  # a name is no lead-in
        ("Sunday: Monday", "Monday"),
    ],
)
def test_one_reply_is_not_read_as_two_answers(prediction, gold):
    """att38f F2: `Sunday<300 spaces>is Monday` was Sunday to the weekday rule and Monday
    after its lead-in: paid for two weekdays (0.414 against the best constant's 0.257)."""
    question = "On which day of the week, or in which city of the department, does it end?"
    assert not answers_match(prediction, gold, "text", question)


def test_it_s_in_a_city_is_an_answer():
    """att38f F3 (honest): "It's in X." scored 0 on 60/60."""
    question = "In which city is the department of the manager of Raixsou Thanbo located?"
    assert answers_match("It's in Breir Keiszen.", "Breir Keiszen", "text", question)
