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


def _tasks(family: str, n: int = N, size: int = 100) -> list[dict]:
    # Size 100 as the scorer-safety tests draw: one universe probe per family and process
    # (puzzle24's probe of a size-1000 source drew 256 puzzles, 12 s).
    source = ReasoningGymTasks(family, size=size, task_seed=0)
    return [source.task(i) for i in range(n)]


def _paid(family: str, template) -> int:
    return sum(grade(f"<answer>{template(t)}</answer>", t).correct for t in _tasks(family))


def _sum(task) -> str:
    return "(" + "+".join(map(str, task["metadata"]["numbers"])) + ")"


def _integral(task) -> str:
    return f"Integral({task['metadata']['integrand']}, {task['metadata']['variable']})"


TEMPLATES = {
    # (On the puzzle of 1, 2, 3, 4 that constant is a solution: there, a wrong one.)
    "puzzle24 constant": (
        "puzzle24",
        lambda t: "1+2+3+4" if sorted(t["metadata"]["numbers"]) == [1, 2, 3, 4] else "1*2*3*4",
    ),
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


#: Templates whose families take 10-20 s to draw and score: the full suite runs them.
_SLOW_TEMPLATES = {"puzzle24 constant", "intermediate_integration Integral padded"}


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=[pytest.mark.slow] if n in _SLOW_TEMPLATES else []) for n in TEMPLATES],
)
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


# --------------------------------------------------------------- att31b F4: numbers by value


@pytest.mark.parametrize("answer", ["0.000000", "0.000000000000", "000000000000", "0/1"])
def test_coin_flip_pays_no_zero_by_its_text_prefix(answer):
    tasks = _tasks("coin_flip", 40)
    paid = [t["answer"] for t in tasks if grade(f"<answer>{answer}</answer>", t).correct]
    assert all(float(r) == 0 for r in paid), paid


def test_a_number_is_paid_by_its_value():
    # A probability of some size: 5e-5 off is within coin_flip's own 1e-4 there and within
    # the value check's relative tolerance.
    task = next(t for t in _tasks("coin_flip", 40, size=1000) if float(t["answer"]) >= 0.05)
    reference = float(task["answer"])
    assert grade(f"<answer>{reference:.12f}</answer>", task).correct
    assert grade(f"<answer>{reference + 5e-5}</answer>", task).correct  # coin_flip's own 1e-4
    wrong = grade(f"<answer>{task['answer'][:1]}{'0' * 12}</answer>", task)
    assert not wrong.correct and wrong.verdict in ("constant", "wrong", "truncated")


@pytest.mark.parametrize(
    ("family", "constant"),
    [
        pytest.param("polynomial_equations", "0.000000", marks=pytest.mark.slow),  # 9 s
        ("power_function", "1.000000"),
    ],
)
def test_a_frequent_constant_reference_is_balanced_in_the_env(family, constant):
    import rllm_envs

    env = rllm_envs.make("rllm/ReasoningGym-v0", dataset=family, size=1000)
    tasks = env.unwrapped.tasks
    assigned = tasks.answer_balance().assigned
    (slot,) = (s for a, s in assigned.items() if float(a) == float(constant))  # its own slot
    for index in range(100):
        env.reset(options={"index": index})
        paid = env.step(f"<answer>{constant}</answer>")[1] == 1.0
        # Paid only on a task of the constant's slot: one in 20 in expectation.
        assert not paid or tasks.answer_slot(index) == slot, (family, index)
    env.close()


# ------------------------------------------ att31b F3: no prefix oracle with a hidden reference


def test_a_hidden_reference_is_not_told_how_much_of_an_answer_matched():
    import rllm_envs

    shown = rllm_envs.make("rllm/ReasoningGym-v0", dataset="letter_jumble", size=100)
    hidden = rllm_envs.make(
        "rllm/ReasoningGym-v0", dataset="letter_jumble", size=100, reveal_reference=False
    )
    for env in (shown, hidden):
        env.reset(options={"index": 0})
    prefix = shown.unwrapped.task["answer"][:-2]
    text, reward, *_, info = shown.step(f"<answer>{prefix}</answer>")
    assert info["verdict"] == "truncated" and reward == 0.0
    text, reward, *_, info = hidden.step(f"<answer>{prefix}</answer>")
    assert info["verdict"] == "wrong" and reward == 0.0
    assert "start" not in text and prefix not in text


# ----------------------------------------------- att31b H1: a malformed custom task is refused


@pytest.mark.parametrize(
    "change",
    [{"metadata": [1, 2]}, {"metadata": "x"}, {"question": ["q"]}, {"question": 3}, {"answer": 5}],
)
def test_a_custom_task_of_the_wrong_types_is_refused_with_a_message(change):
    import rllm_envs
    from rllm_envs.error import InvalidEnvConfig

    env = rllm_envs.make("rllm/ReasoningGym-v0", dataset="simple_integration", size=10)
    env.reset(options={"index": 0})
    record = {k: env.unwrapped.task[k] for k in ("dataset", "question", "answer", "metadata")}
    record.update(change)
    (key,) = change
    with pytest.raises(InvalidEnvConfig, match=key):
        env.reset(options={"task": record})
    env.close()


# ----------------------------------------------- att31b D1: an answer's derivative is bounded


def test_an_answer_whose_derivative_is_too_large_to_build_is_refused_before_building():
    import sympy

    from rllm_envs.reasoning_gym.safe_scoring import (
        MAX_DIFF_WORK,
        _diff_work,
        parse_math,
        safe_scorer,
    )

    task = _tasks("simple_integration", 1)[0]
    name = task["metadata"]["variable"]
    x = sympy.Symbol(name)
    product = "*".join(f"sin({k}*{name})" for k in range(2, 362))  # att31b: 12 s of CPU
    assert _diff_work(parse_math(product, {name: x}), x) > MAX_DIFF_WORK
    assert safe_scorer("simple_integration")(product, dict(task)) == 0.0
    # References stay far under the bound (at most 41 on 400 tasks).
    assert _diff_work(parse_math(task["answer"], {name: x, "C": sympy.Symbol("C")}), x) < 100
    assert safe_scorer("simple_integration")(task["answer"], dict(task)) == 1.0


def test_a_reference_longer_than_the_answer_cut_is_paid():
    """tower_of_hanoi with 7 disks: 127 moves, 4,064 characters. Answers were cut at 4,000
    before scoring, so the reference itself earned 0.05 (found on a redrawn universe)."""
    from rllm_envs.reasoning_gym.scoring import MAX_ANSWER_CHARS

    config = {"min_disks": 7, "max_disks": 7, "min_pegs": 3, "max_pegs": 3}
    source = ReasoningGymTasks("tower_of_hanoi", size=4, config=config)
    task = source[0]
    assert len(task["answer"]) > MAX_ANSWER_CHARS
    assert grade(f"<answer>{task['answer']}</answer>", task).correct
    cut = task["answer"].rsplit("\n", 1)[0]  # one move short
    assert not grade(f"<answer>{cut}</answer>", task).correct
