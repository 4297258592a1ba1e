"""Answers that solve nothing earn nothing in rllm/ReasoningGym-v0 (issues #25/#31, att31b).

att31b paid these on the env's own tasks: puzzle24's constant ``1*2*3*4`` (any 4 numbers),
number literals the number check could not see (``0x0``, ``0e0``, ``1_2_3``) hiding a free
target in puzzle24/countdown, ``Integral(<integrand>, x)`` as an antiderivative, and
``[NaN, ...]`` as a sorted list. Each template is graded on 20 tasks and must earn nothing.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

from rllm_envs.reasoning_gym.scoring import grade  # noqa: E402
from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks  # noqa: E402

N = 20


def _tasks(family: str, n: int = N) -> list[dict]:
    source = ReasoningGymTasks(family, size=1000, task_seed=0)
    return [source.task(i) for i in range(n)]


def _paid(family: str, template) -> int:
    return sum(grade(f"<answer>{template(t)}</answer>", t).correct for t in _tasks(family))


def _sum(task) -> str:
    return "(" + "+".join(map(str, task["metadata"]["numbers"])) + ")"


def _integral(task) -> str:
    return f"Integral({task['metadata']['integrand']}, {task['metadata']['variable']})"


TEMPLATES = {
    "puzzle24 constant": ("puzzle24", lambda t: "1*2*3*4"),
    "puzzle24 hex": ("puzzle24", lambda t: _sum(t) + "*0x0 + 0x18"),
    "puzzle24 exponent": ("puzzle24", lambda t: _sum(t) + "*0e0 + 24e0"),
    "countdown hex": ("countdown", lambda t: _sum(t) + "*0x0 + " + hex(t["metadata"]["target"])),
    "countdown exponent": ("countdown", lambda t: _sum(t) + f"*0e0 + {t['metadata']['target']}e0"),
    "countdown underscores": (
        "countdown",
        lambda t: _sum(t) + "*0x0 + " + "_".join(str(t["metadata"]["target"])),
    ),
    "countdown octal zero": (
        "countdown",
        lambda t: _sum(t) + "*0o0 + " + str(t["metadata"]["target"]),
    ),
    "countdown float": ("countdown", lambda t: _sum(t) + "*0.0 + " + str(t["metadata"]["target"])),
    "simple_integration Integral": ("simple_integration", _integral),
    "simple_integration Integral + C": (
        "simple_integration",
        lambda t: f"Integral(({t['metadata']['integrand']})*1, {t['metadata']['variable']}) + C",
    ),
    "intermediate_integration Integral padded": (
        "intermediate_integration",
        lambda t: _integral(t) + "+0" * (len(t["answer"]) // 2),
    ),
    "number_sorting NaN": (
        "number_sorting",
        lambda t: "[" + ", ".join(["NaN"] * len(json.loads(t["answer"].replace("'", '"')))) + "]",
    ),
    "number_sorting Infinity": (
        "number_sorting",
        lambda t: (
            "[" + ", ".join(["Infinity"] * len(json.loads(t["answer"].replace("'", '"')))) + "]"
        ),
    ),
}


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_answers_that_solve_nothing_earn_nothing(name):
    family, template = TEMPLATES[name]
    assert _paid(family, template) == 0, name


@pytest.mark.parametrize("family", ["puzzle24", "countdown"])
def test_the_reference_and_a_solution_in_plain_integers_still_pay(family):
    for task in _tasks(family, 5):
        assert grade(f"<answer>{task['answer']}</answer>", task).correct
    task = _tasks("countdown", 1)[0]
    expression = task["metadata"]["expression"]
    assert grade(f"<answer>{expression}</answer>", task).correct


def test_puzzle24_counts_the_tasks_numbers_as_a_multiset():
    task = _tasks("puzzle24", 1)[0]
    numbers = sorted(task["metadata"]["numbers"])
    assert grade(f"<answer>{task['answer']}</answer>", task).correct
    others = [n for n in range(1, 11) if n not in numbers][:1]
    swapped = task["answer"].replace(str(numbers[0]), str(others[0]), 1)
    assert not grade(f"<answer>{swapped}</answer>", task).correct
