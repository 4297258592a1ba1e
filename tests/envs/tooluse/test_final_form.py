"""ToolUse pays for the task's value in final form, never for its expression (issue #25)."""

from __future__ import annotations

import re
from fractions import Fraction

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the envs)
from rllm_envs.tasks import task_rng
from rllm_envs.tooluse import FAMILIES, MAX_DIFFICULTY, generate, score_answer
from rllm_envs.tooluse.tasks import answers_match

CASES = [(f, d) for f in FAMILIES for d in range(1, MAX_DIFFICULTY + 1)]


def _task(family, difficulty, i):
    return generate(task_rng(3, i), families=(family,), difficulty=difficulty)


def _expressions(task):
    """The calculator expressions of the task's plan: what a model would copy or type."""
    return [
        call["arguments"]["expression"]
        for turn in task["plan"]
        for call in turn
        if call["name"] == "calculator"
    ]


@pytest.mark.parametrize("family, difficulty", CASES, ids=[f"{f}-d{d}" for f, d in CASES])
def test_reference_scores_one_and_work_scores_zero(family, difficulty):
    for i in range(15):
        task = _task(family, difficulty, i)
        assert score_answer(task["answer"], task) == 1.0, task
        assert score_answer("qwzx ☃ <answer>", task) == 0.0
        for expression in _expressions(task):
            assert score_answer(expression, task) == 0.0, (task["question"], expression)
        # Echoing a number of the question, or their sum, never answers it.
        numbers = re.findall(r"\d+(?:\.\d+)?", task["question"])
        echoes = set(numbers)
        if len(numbers) >= 2:
            total = sum((Fraction(n) for n in numbers), Fraction(0))
            echoes.add(str(total.numerator) if total.denominator == 1 else str(float(total)))
        for echo in echoes:
            assert score_answer(echo, task) == 0.0, (task["question"], echo)


@pytest.mark.parametrize("difficulty", range(1, MAX_DIFFICULTY + 1))
def test_arith_copies_of_the_question_score_zero_in_the_env(difficulty):
    env = gym.make("rllm/ToolUse-v1", families=["arith"], difficulty=difficulty)
    copied = 0
    for seed in range(25):
        obs, _ = env.reset(seed=seed)
        task = env.unwrapped.task
        question = task["question"]
        m = re.search(r"Compute (.+?)\. Give", question) or re.search(
            r"What is (.+?) as a fraction", question
        )
        if m is None:
            continue
        expression = m.group(1).replace(" ... ", " ")
        _, reward, terminated, _, info = env.step(f"<answer>{expression}</answer>")
        assert terminated and reward == 0.0, (question, info["answer"])
        copied += 1
        # The plan's calculator expression, written out, scores 0 too.
        env.reset(seed=seed)
        _, reward, *_ = env.step(f"<answer>{_expressions(task)[0]}</answer>")
        assert reward == 0.0
    assert copied >= 3


@pytest.mark.parametrize(
    "prediction, expected",
    [
        ("7", True),
        ("3 + 4", False),
        ("14 / 2", False),
        ("\\frac{14}{2}", False),
        ("7.0", False),  # the question asks for the exact value: no decimal point
    ],
)
def test_answers_match_needs_the_final_value(prediction, expected):
    question = "Compute 3 + 4. Give the exact value."
    assert answers_match(prediction, "7", "math", question) is expected
