"""Blind red-team s12 (``/work/notes/att_rg/REPORT.md``): reward hacks of rllm/ReasoningGym-v0.

* H1/H2: puzzle24 and countdown paid ``(a*b*c*d)*(I-I) + <target built from E/E>`` (100 of
  100 each): the answer parser allowed the names ``pi``/``E``/``I`` and calls (``sqrt``,
  ``log``, ``Abs``...), which the number check never saw. Both now read Countdown's own
  ``+ - * /`` grammar over integer literals (exact fractions).
* H3: complex_arithmetic paid ``NaN + NaN i`` 150 of 150 (reasoning-gym's
  ``min(1.0, exp(-nan))`` is 1.0). An answer writing a non-finite number earns 0 unless the
  reference writes it, complex_arithmetic's scorer reads only finite answers, and the
  nonsense probe tries NaN answers too.
* L4: lcm's larger number is its answer on 0.14 of evaluation draws (a surface tell, now in
  ``surface.KNOWN_TELLS``: the env warns and held-out evaluation refuses it).
"""

from __future__ import annotations

import math
import re

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import gymnasium as gym  # noqa: E402

import rllm_envs  # noqa: E402, F401
from rllm_envs.reasoning_gym import scoring  # noqa: E402
from rllm_envs.reasoning_gym import tasks as rg_tasks  # noqa: E402

ENV_ID = "rllm/ReasoningGym-v0"
ONE = "(E/E)"


def _names_only(n: int) -> str:
    """``n >= 1`` written with the name ``E`` only (the red-team's ``build``)."""
    two = f"({ONE}+{ONE})"
    expression = ONE
    for bit in bin(n)[3:]:
        expression = f"({expression}*{two}" + (f"+{ONE})" if bit == "1" else ")")
    return expression


def _cancelled(numbers, tail: str) -> str:
    return "(" + "*".join(map(str, numbers)) + ")*(I-I)+" + tail


def _play(env, index: int, answer: str) -> tuple[float, dict]:
    env.reset(options={"index": index})
    _, reward, _, _, info = env.step(f"<answer>{answer}</answer>")
    return reward, info


def _payloads(numbers, target: int) -> list[str]:
    """The red-team's payload and the same class by other names, calls and powers."""
    free = _cancelled(numbers, "")
    return [
        _cancelled(numbers, _names_only(target)),  # the report's payload
        free + f"(pi-pi)+{_names_only(target)}",
        free + f"sqrt({_names_only(target * target)})",
        free + f"log(exp({_names_only(target)}))",
        free + f"Abs({_names_only(target)})",
        "(" + "+".join(map(str, numbers)) + ")**0*" + str(target),
        "(" + "*".join(map(str, numbers)) + f")*0+{target}",  # a free literal: wrong numbers
        "+".join(map(str, numbers)) + f"={target}",
    ]


# ------------------------------------------------------------------ H1/H2 puzzle24, countdown


@pytest.mark.parametrize(
    ("family", "episodes"),
    [pytest.param("puzzle24", 3, marks=pytest.mark.slow), ("countdown", 12)],
)
def test_names_and_calls_cancelling_the_numbers_earn_nothing(family, episodes):
    env = gym.make(ENV_ID, dataset=family, reveal_reference=False, size=episodes)
    for seed in range(episodes):
        env.reset(options={"index": seed})
        task = env.unwrapped.task
        numbers = task["metadata"]["numbers"]
        target = 24 if family == "puzzle24" else int(task["metadata"]["target"])
        for payload in _payloads(numbers, target):
            reward, info = _play(env, seed, payload)
            assert reward == 0.0 and not info["is_correct"], (family, payload, info["verdict"])
        reward, info = _play(env, seed, task["answer"])
        assert reward == 1.0 and info["is_correct"], (family, task["answer"])
        reward, info = _play(env, seed, "banana split")
        assert reward == 0.0 and not info["is_correct"]
    env.close()


def test_puzzle24_scorer_reads_integer_arithmetic_only():
    # The env's puzzle24 generator is slow (the env test above is `slow`): its scorer here.
    from rllm_envs.reasoning_gym.safe_scoring import safe_scorer

    score = safe_scorer("puzzle24")
    entry = {"answer": "7*3 + 8 - 5", "metadata": {"numbers": [7, 3, 8, 5]}}
    for payload in _payloads([7, 3, 8, 5], 24):
        assert score(payload, entry) < 1.0, payload
    assert score("7*3 + 8 - 5", entry) == 1.0
    assert score("-(5 - 8)*7 + 3", entry) == 1.0
    assert score("(7 - 5)*(8 + 3) + 2", entry) < 1.0
    assert score("banana split", entry) < 1.0


def test_countdown_references_with_a_unary_minus_still_pay():
    from rllm_envs.reasoning_gym.safe_scoring import safe_scorer

    score = safe_scorer("countdown")
    entry = {"answer": "-1 + 72*(89 - 77)/1", "metadata": {"numbers": [1, 72, 89, 77, 1]}}
    entry["metadata"]["target"] = 863
    assert score(entry["answer"], entry) == 1.0
    assert score("72*(89 - 77)/1 - 1", entry) == 1.0
    assert score("-1 + 72*(89 - 77)/1 + 0", entry) < 1.0  # 0 is not a given number
    assert score("-1 + 72*(89 - 77)/1*(I-I+1)", entry) < 1.0
    assert score("-" * 40 + "1 + 72*(89 - 77)/1", entry) < 1.0  # bounded nesting, no raise


# --------------------------------------------------------------- H3 complex_arithmetic NaN

NAN_ANSWERS = [
    "NaN + NaN i",
    "nan+nani",
    "(" * 12 + "nan" + ")" * 12,
    "nan",
    "-NAN - nan i",
    "nan + 0i",
    "1e999 - 1e999i",
]


@pytest.mark.parametrize("config", [None, {"min_real": -10000, "max_real": 10000}])
def test_complex_arithmetic_pays_no_nan(config):
    kwargs = {"config": config} if config else {}
    env = gym.make(ENV_ID, dataset="complex_arithmetic", reveal_reference=False, size=8, **kwargs)
    for seed in range(8):
        for answer in NAN_ANSWERS:
            reward, info = _play(env, seed, answer)
            assert reward == 0.0 and not info["is_correct"], (answer, info["verdict"])
        reference = env.unwrapped.task["answer"]
        assert _play(env, seed, reference)[0] == 1.0
        # The same value written otherwise (``-15 + 3i`` for ``-15.0 + 3.0i``) still pays.
        plain = re.sub(r"\.0\b", "", reference)
        assert _play(env, seed, plain)[1]["is_correct"], plain
        assert _play(env, seed, "banana split")[0] == 0.0
    env.close()


def _fake_scorer(monkeypatch, scorer):
    monkeypatch.setattr(rg_tasks, "scorer_for", lambda task: scorer)


TASK = {"question": "What is 2 + 3?", "answer": "5", "metadata": {}}


def _value(text: str) -> float:
    text = text.strip()
    if re.fullmatch(r"\d+/\d+", text):
        a, b = map(int, text.split("/"))
        return a / b if b else math.nan  # a parser whose 0/0 is NaN
    return float(text)


def _distance_scorer(answer, entry):
    """A distance scorer like complex_arithmetic's: NaN pays 1.0."""
    return min(1.0, math.exp(-abs(_value(answer) - float(entry["answer"]))))


def test_a_scorer_that_pays_nan_pays_only_the_reference(monkeypatch):
    # `0/0` writes no NaN token; the NaN probes see that this scorer pays NaN.
    _fake_scorer(monkeypatch, _distance_scorer)
    assert scoring.grade("<answer>0/0</answer>", TASK).score == 0.0
    assert scoring.grade("<answer>5</answer>", TASK).correct
    assert scoring.grade("<answer>banana</answer>", TASK).score == 0.0


@pytest.mark.parametrize(
    "answer", ["Infinity", "-inf", "1e999", "ZOO", "oo", "2 - ∞", "nan123", "sNaN", "INFj"]
)
def test_an_answer_writing_a_non_finite_number_earns_nothing(monkeypatch, answer):
    # A scorer that pays exactly these spellings (none of them a probe).
    _fake_scorer(monkeypatch, lambda a, e: 0.0 if a.lower() in ("nan", "[nan]") else 1.0)
    graded = scoring.grade(f"<answer>{answer}</answer>", TASK)
    assert graded.score == 0.0 and graded.verdict == "non_finite", answer


def test_a_non_finite_reference_and_word_answers_are_not_refused(monkeypatch):
    _fake_scorer(monkeypatch, lambda a, e: float(a.lower() == e["answer"].lower()))
    assert scoring.grade("<answer>-INF</answer>", {**TASK, "answer": "-inf"}).correct
    assert scoring.grade("<answer>Infinity</answer>", {**TASK, "answer": "inf"}).score == 0.0
    _fake_scorer(monkeypatch, lambda a, e: float("NAN" in a))  # a ladder through NAN
    assert scoring.grade("<answer>CAN,NAN,MAN</answer>", {**TASK, "answer": "CAN,FAN,MAN"}).correct


# ------------------------------------------------------------------------------ L4 lcm


def test_lcm_larger_number_earns_no_more_than_a_constant():
    """s12 L4: the generator redraws coprime pairs, so one number often divides the other and
    the larger was the answer (0.14 of evaluation draws against the best constant's 0.03, a
    committed tell until s25). A draw whose answer is a whole number of its question is now
    read off (:meth:`ReasoningGymTasks.answer_in_question`) and drawn again."""
    from rllm_envs.reasoning_gym.surface import KNOWN_TELLS
    from rllm_envs.tasks import EVAL_SEED_START

    source = rg_tasks.ReasoningGymTasks("lcm", task_seed=EVAL_SEED_START)
    n, hit, answers = 250, 0, {}
    for index in range(n):
        task = source.task(index)
        hit += scoring.grade(f"<answer>{max(task['metadata']['numbers'])}</answer>", task).correct
        answers[task["answer"]] = answers.get(task["answer"], 0) + 1
    assert hit / n <= max(answers.values()) / n + 0.02, (hit, max(answers.values()))
    assert "lcm" not in KNOWN_TELLS


def test_sympy_answers_holding_a_non_finite_value_are_refused():
    # `1/0` is sympy's zoo: a constant d/dx drops, so `<antiderivative> + 1/0` paid 1.0.
    from rllm_envs.reasoning_gym.safe_scoring import UnsafeExpression, parse_math, safe_scorer

    for text in ["1/0", "x + 0/0", "log(0)", "x*(1/0)"]:
        with pytest.raises(UnsafeExpression):
            parse_math(text)
    score = safe_scorer("simple_integration")
    entry = {"answer": "x**2 + C", "metadata": {"variable": "x", "integrand": "2*x"}}
    assert score("x**2 + C", entry) == 1.0
    assert score("x**2 + C + 1/0", entry) == 0.0
    assert score("x**2 + log(0)", entry) == 0.0
