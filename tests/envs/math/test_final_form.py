"""Final-form answers (issue #25): the reward pays for the asked value, not a computation of it."""

from __future__ import annotations

import math
import re

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the envs)
from rllm_envs.math import (
    FAMILIES,
    FINAL_FORM_ISSUES,
    final_form_issue,
    format_issue,
    grade_answer,
    is_equivalent,
    procedural_tasks,
    score_response,
)

DIFFICULTIES = (1, 2, 3, 4, 5)
SEEDS = 12


def _tasks(family: str, difficulty: int):
    source = procedural_tasks(seed=21, difficulty=difficulty, families=[family])
    return [source[i] for i in range(SEEDS)]


def _first_part(answer: str) -> tuple[str, str, str]:
    """``(before, scalar, after)``: the first scalar of a tuple or list answer."""
    m = re.match(r"^(\(?)([^,()]+|\\frac\{[^}]*\}\{[^}]*\}|[^,]+?)(,.*|\))?$", answer)
    if answer.startswith("("):
        inner = answer[1:-1].split(", ")
        return "(", inner[0], ", " + ", ".join(inner[1:]) + ")" if len(inner) > 1 else ")"
    if ", " in answer:
        head, *rest = answer.split(", ")
        return "", head, ", " + ", ".join(rest)
    assert m is not None
    return "", answer, ""


def _partials(answer: str) -> list[str]:
    """The value with work left in it: a zero term, a factor 1, a fraction to cancel."""
    before, x, after = _first_part(answer)
    return [
        f"{before}{x} + 0{after}",
        f"{before}1 \\cdot ({x}){after}",
        f"{before}\\frac{{2 ({x})}}{{2}}{after}",
        f"{before}({x}) + 1 - 1{after}",
    ]


# -------------------------------------------------------------- every family, every level


#: The contributors' lane checks the easiest and the hardest difficulty; the difficulties in
#: between take the same code paths and run in the full suite.
EASIEST_AND_HARDEST_IN_THE_LANE = [
    d if d in (min(DIFFICULTIES), max(DIFFICULTIES)) else pytest.param(d, marks=pytest.mark.slow)
    for d in DIFFICULTIES
]


@pytest.mark.parametrize("difficulty", EASIEST_AND_HARDEST_IN_THE_LANE)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_reference_scores_one_and_is_final(family, difficulty):
    for task in _tasks(family, difficulty):
        gold, problem = task["answer"], task["problem"]
        assert final_form_issue(gold, problem=problem) is None, task
        for fmt in ("boxed", "any"):
            reply = f"So \\boxed{{{gold}}}."
            assert score_response(reply, gold, problem=problem, answer_format=fmt) == (
                1.0,
                "correct",
            ), (task, fmt)
        assert score_response("qwzx ☃ \\boxed{", gold, problem=problem)[0] == 0.0
        for other in _equivalents(family, gold):
            score = score_response(f"\\boxed{{{other}}}", gold, problem=problem)
            assert score == (1.0, "correct"), (task, other)


def _equivalents(family: str, gold: str) -> list[str]:
    """Other final-form spellings of the same value."""
    out = [gold.replace(" ", ""), gold.replace("\\frac", "\\dfrac")]
    if family == "linear_equation":
        out.append(f"x = {gold}")
    if family == "quadratic_equation" and ", " in gold:
        out.append(", ".join(reversed(gold.split(", "))))
    if re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", gold):
        out.append(gold.replace("\\frac{", "").replace("}{", "/").rstrip("}"))
    if re.fullmatch(r"-?\d+", gold):
        out.append(f"{{{gold}}}")
    return out


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_copied_problem_expressions_score_zero(family, difficulty):
    for task in _tasks(family, difficulty):
        gold, problem = task["answer"], task["problem"]
        for region in re.findall(r"\$([^$]+)\$", problem):
            boxed = score_response(f"\\boxed{{{region}}}", gold, problem=problem)
            bare = score_response(region, gold, problem=problem, answer_format="any")
            assert boxed[0] == 0.0 and bare[0] == 0.0, (task, region)
        # The problem sentence verbatim, read leniently, is not an answer either.
        assert score_response(problem, gold, problem=problem, answer_format="any")[0] == 0.0


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_echoing_the_problems_numbers_scores_zero(family, difficulty):
    for task in _tasks(family, difficulty):
        numbers = [int(n) for n in re.findall(r"\d+", task["problem"])]
        echoes = {str(n) for n in numbers} | {str(-n) for n in numbers}
        if len(numbers) >= 2:
            echoes |= {str(sum(numbers)), str(math.prod(numbers))}
        for echo in echoes:
            reply = f"\\boxed{{{echo}}}"
            assert score_response(reply, task["answer"], problem=task["problem"])[0] == 0.0, (
                task,
                echo,
            )


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_partially_evaluated_answers_score_zero(family, difficulty):
    for task in _tasks(family, difficulty):
        gold, problem = task["answer"], task["problem"]
        for partial in _partials(gold):
            # Still the value (the grader agrees), but not in final form.
            assert is_equivalent(partial, gold), (partial, gold)
            for fmt in ("boxed", "any"):
                reply = f"\\boxed{{{partial}}}"
                score, reason = score_response(reply, gold, problem=problem, answer_format=fmt)
                assert (score, reason) == (0.0, "not_final_form"), (task, partial, fmt)


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_arithmetic_and_fractions_copies_score_zero_in_the_env(difficulty):
    # The issue's first row: copying the `$...$` expression into the box earned 1 on 100%.
    for mode in ("boxed", "any"):
        env = gym.make(
            "rllm/Math-v1",
            difficulty=difficulty,
            families=["arithmetic", "fractions"],
            answer_format=mode,
            reward_weights={"correct": 1.0, "format": 0.1},
        )
        for seed in range(10):
            obs, _ = env.reset(seed=seed)
            expression = obs.split("$")[1]
            action = f"\\boxed{{{expression}}}" if mode == "boxed" else obs.split("\n")[0]
            _, reward, terminated, _, info = env.step(action)
            assert terminated and reward == 0.0, (obs, info)
            assert info["reward_components"] == {"correct": 0.0, "format": 0.0}
            env.reset(seed=seed)
            _, reward, *_ = env.step(env.unwrapped.oracle_action())
            assert reward == pytest.approx(1.1)


def test_env_reports_why_an_answer_is_not_final():
    env = gym.make("rllm/Math-v1")
    env.reset(options={"task": {"problem": "Compute $12 \\times 5 - 7$.", "answer": "53"}})
    _, reward, _, _, info = env.step("\\boxed{60 - 7}")
    assert reward == 0.0 and info["grade"] == "not_final_form"
    assert info["final_form_issue"] == "unevaluated_arithmetic"
    assert info["format_issue"] == "not_final_form"
    env.reset(options={"task": {"problem": "Compute $12 \\times 5 - 7$.", "answer": "53"}})
    _, reward, _, _, info = env.step("\\boxed{53}")
    assert reward == 1.0 and info["final_form_issue"] is None and info["format_issue"] is None


# ------------------------------------------------------------------ the issue's table rows


def test_committee_binomial_scores_zero():
    problem = "In how many ways can a committee of 3 people be chosen from 7 people?"
    assert score_response("\\boxed{\\binom{7}{3}}", "35", problem=problem)[1] == "not_final_form"
    assert score_response("\\boxed{\\frac{7!}{3!4!}}", "35", problem=problem)[0] == 0.0
    assert score_response("\\boxed{35}", "35", problem=problem)[0] == 1.0


def test_decimal_scores_zero_where_pi_is_asked_for():
    problem = "What is the area of a circle of radius 9? Express it in terms of $\\pi$."
    assert score_response("\\boxed{254.469}", "81 \\pi", problem=problem)[0] == 0.0
    assert grade_answer("254.469", "81 \\pi", problem=problem).issue == "not_exact"
    assert score_response("\\boxed{81\\pi}", "81 \\pi", problem=problem)[0] == 1.0
    assert score_response("\\boxed{\\pi \\cdot 81}", "81 \\pi", problem=problem)[0] == 1.0


def test_an_exact_decimal_asked_for_is_not_an_exact_form_asked_for():
    """att32b F3: ToolUse's "Give the exact decimal value" refused `518400.0` for 518400 (14
    of 14 whole-number unit conversions) as a decimal where an exact form was asked."""
    problem = "Convert 6 day to second. Give the exact decimal value (no rounding), number only."
    assert grade_answer("518400.0", "518400", problem=problem).equal
    assert grade_answer("390.5", "390.5", problem=problem).equal
    exact = "What is the circle's area? Give the exact value."
    assert grade_answer("254.469", "81 \\pi", problem=exact).issue == "not_exact"


def test_fraction_and_radical_forms_where_asked_for():
    frac = "Compute $\\frac{1}{4} + \\frac{1}{4}$. Give the answer as a fraction in lowest terms."
    assert score_response("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", problem=frac)[0] == 1.0
    assert score_response("\\boxed{1/2}", "\\frac{1}{2}", problem=frac)[0] == 1.0
    assert score_response("\\boxed{0.5}", "\\frac{1}{2}", problem=frac)[0] == 0.0
    assert score_response("\\boxed{0.5}", "\\frac{1}{2}", problem="What is half of one?")[0] == 1
    radical = "Express $\\frac{1}{\\sqrt{2}}$ in simplest radical form."
    gold = "\\frac{\\sqrt{2}}{2}"
    assert score_response("\\boxed{\\frac{\\sqrt2}{2}}", gold, problem=radical)[0] == 1.0
    assert score_response("\\boxed{\\frac{1}{\\sqrt2}}", gold, problem=radical)[0] == 0.0
    assert score_response("\\boxed{\\sqrt{\\frac12}}", gold, problem=radical)[0] == 0.0


@pytest.mark.parametrize(
    "reply, expected",
    [
        ("y=1, x=3", 1.0),
        ("x = 3, y = 1", 1.0),
        ("(3, 1)", 1.0),
        ("y=3, x=1", 0.0),
        ("(1, 3)", 0.0),
        ("a=3, b=1", 0.0),  # not the names the problem announces
        ("x=3", 0.0),
    ],
)
def test_tuple_answers_match_names(reply, expected):
    problem = "Solve $x + y = 4$ and $x - y = 2$. Give the answer as an ordered tuple $(x, y)$."
    assert score_response(f"\\boxed{{{reply}}}", "(3, 1)", problem=problem)[0] == expected
    # Without the problem, names are read in alphabetical order; position otherwise.
    if reply not in ("a=3, b=1",):
        assert score_response(f"\\boxed{{{reply}}}", "(3, 1)")[0] == expected


def test_named_roots_of_an_unordered_list_match_in_any_order():
    assert score_response("\\boxed{x_1 = 3, x_2 = 1}", "1, 3")[0] == 1.0
    assert score_response("\\boxed{x_1 = 1, x_2 = 3}", "1, 3")[0] == 1.0
    # A list the problem names in order is a tuple after all.
    assert score_response("\\boxed{y=3, x=1}", "3, 1", problem="Give $(x, y)$.")[0] == 0.0


def test_linear_system_named_answers_every_difficulty():
    for difficulty in DIFFICULTIES:
        for task in _tasks("linear_system", difficulty):
            values = task["answer"].strip("()").split(", ")
            names = "xyz"[: len(values)]
            named = ", ".join(
                f"{n} = {v}" for n, v in reversed(list(zip(names, values, strict=True)))
            )
            problem = task["problem"]
            assert score_response(f"\\boxed{{{named}}}", task["answer"], problem=problem)[0] == 1
            if values != values[::-1]:
                swapped = ", ".join(f"{n} = {v}" for n, v in zip(names, values[::-1], strict=True))
                score = score_response(f"\\boxed{{{swapped}}}", task["answer"], problem=problem)
                assert score[0] == 0.0, (swapped, task["answer"])


# --------------------------------------------------------------------- the rule itself


@pytest.mark.parametrize(
    "answer, issue",
    [
        ("3+4", "unevaluated_arithmetic"),
        ("12*5-7", "unevaluated_arithmetic"),
        ("12 \\times 5 - 7", "unevaluated_arithmetic"),
        ("(3/4)+(1/6)", "unevaluated_arithmetic"),
        ("\\frac{3}{4}+\\frac{1}{6}", "unevaluated_arithmetic"),
        ("2^{10}", "unevaluated_power"),
        ("2^10", "unevaluated_power"),
        ("2^{-3}", "unevaluated_power"),
        ("(1+\\sqrt{2})^2", "unevaluated_power"),
        ("x^1", "unevaluated_power"),
        ("5!", "unevaluated_factorial"),
        ("\\binom{5}{2}", "unevaluated_binomial"),
        ("\\dbinom{5}{2}", "unevaluated_binomial"),
        ("\\sqrt{8}", "reducible_radical"),
        ("\\sqrt{4}", "reducible_radical"),
        ("3\\sqrt{12}", "reducible_radical"),
        ("\\sqrt[3]{16}", "reducible_radical"),
        ("\\frac{4}{8}", "unreduced_fraction"),
        ("\\frac{6}{1}", "unreduced_fraction"),
        ("4/8", "unreduced_fraction"),
        ("\\frac{2\\sqrt{2}}{4}", "unreduced_fraction"),
        ("\\sin\\frac{\\pi}{6}", "unevaluated_function"),
        ("\\log_2 8", "unevaluated_function"),
        ("|-3|", "unevaluated_arithmetic"),
        ("\\sqrt{2}\\sqrt{3}", "unevaluated_arithmetic"),
        ("\\sqrt{2} + \\sqrt{2}", "unevaluated_arithmetic"),
        ("2x + 3x", "unevaluated_arithmetic"),
        ("x \\cdot 2 \\cdot 3", "unevaluated_arithmetic"),
        ("1\\pi", "unevaluated_arithmetic"),
        ("x + 0", "unevaluated_arithmetic"),
        ("--3", "unevaluated_arithmetic"),
        ("x = 3 + 4", "unevaluated_arithmetic"),
        ("(3+4, 1)", "unevaluated_arithmetic"),
        ("[1+1, 3]", "unevaluated_arithmetic"),
        ("\\begin{pmatrix} 1+1 \\\\ 2 \\end{pmatrix}", "unevaluated_arithmetic"),
        ("123 * 456 - 789 ** 2", "unevaluated_arithmetic"),
        # the problem's own `3 \div 2` passed for the fraction 3/2 (s11 att25 F6)
        ("3 \\div 2", "unevaluated_arithmetic"),
        ("-1 ÷ 2", "unevaluated_arithmetic"),
    ],
)
def test_not_final_forms(answer, issue):
    assert final_form_issue(answer) == issue
    assert issue in FINAL_FORM_ISSUES


@pytest.mark.parametrize(
    "answer",
    [
        "7",
        "-3",
        "0.5",
        "\\frac{1}{2}",
        "\\dfrac{1}{2}",
        "-\\frac{71}{15}",
        "\\frac{-71}{15}",
        "3/4",
        "4\\frac{2}{3}",
        "2\\sqrt{2}",
        "\\frac{\\sqrt{3}}{2}",
        "\\frac{3\\sqrt{5}}{2}",
        "\\frac{1}{2}\\sqrt{3}",
        "81\\pi",
        "\\pi^2",
        "3 + 2\\sqrt{2}",
        "6 - 5i",
        "1.2 \\times 10^{3}",
        "10^{-45}",
        "2.5e3",
        "0.\\overline{3}",
        "x^2 + 7x + 10",
        "(x+2)(x+5)",
        "y = 2x + 3",
        "(3, 1)",
        "[-2, 7]",
        "(-\\infty, -3) \\cup (3, \\infty)",
        "\\{1, 3, 5\\}",
        "\\text{Evelyn}",
        "50\\%",
        "17^\\circ",
        "\\$32,348",
        "12 \\text{ cm}",
        "\\sqrt{2}",
        "e^{2}",
        "\\log 2",
    ],
)
def test_final_forms(answer):
    assert final_form_issue(answer) is None


def test_a_form_the_gold_uses_is_accepted():
    assert final_form_issue("2^{100}") == "unevaluated_power"
    assert final_form_issue("2^{100}", gold="2^{100}") is None
    assert score_response("\\boxed{2^{100}}", "2^{100}") == (1.0, "correct")
    assert score_response("\\boxed{\\sqrt{8}}", "\\sqrt{8}") == (1.0, "correct")
    assert score_response("\\boxed{\\sqrt{8}}", "2\\sqrt{2}") == (0.0, "not_final_form")


def test_copies_of_the_problems_expression_with_variables():
    problem = "Expand $(x+1)^2$."
    assert final_form_issue("(x+1)^2", problem=problem) == "copied_expression"
    assert score_response("\\boxed{(x+1)^2}", "x^2+2x+1", problem=problem)[0] == 0.0
    assert score_response("\\boxed{x^2 + 2x + 1}", "x^2+2x+1", problem=problem)[0] == 1.0
    # Reordered terms or factors are the same expression.
    assert final_form_issue("(1 + x)^{2}", problem=problem) == "copied_expression"
    # An atom written in the problem is no copy: the gcd of 12 and 36 is 12.
    assert final_form_issue("12", problem="Find the gcd of $12$ and $36$.") is None


def test_matrix_arithmetic_and_unnormalised_scientific_notation_are_not_final():
    total = "\\begin{pmatrix}1\\\\2\\end{pmatrix} + \\begin{pmatrix}3\\\\4\\end{pmatrix}"
    gold = "\\begin{pmatrix}4\\\\6\\end{pmatrix}"
    assert score_response(total, gold, answer_format="any") == (0.0, "not_final_form")
    assert score_response(gold, gold, answer_format="any") == (1.0, "correct")
    assert final_form_issue("12 \\times 10^{3}") is not None
    assert final_form_issue("1.2 \\times 10^{4}") is None


def test_worked_chain_ending_on_the_value_counts_in_any_mode():
    assert score_response("$2 \\times 3 = 6$", "6", answer_format="any")[0] == 1.0
    assert score_response("So $2 \\times 3$.", "6", answer_format="any")[0] == 0.0


@pytest.mark.parametrize(
    "answer, gold", [("5^2", "25"), ("2^2", "4"), ("2^{2}", "4"), ("3^2", "9"), ("2^3", "8")]
)
def test_small_powers_are_not_final_in_any_mode_either(answer, gold):
    # att25 F4: "any" mode read `^2`/`^3` after a bare number as a unit's exponent (as in
    # `25 m^2`), dropped it, and paid `5^2` for 25; boxed mode refused it.
    for fmt in ("boxed", "any"):
        verdict = grade_answer(answer, gold, answer_format=fmt)
        assert not verdict.equal and verdict.issue == "unevaluated_power", (fmt, verdict)
        assert score_response(f"$${answer}$$", gold, answer_format=fmt)[0] == 0.0
    # A unit's exponent is still a unit: the number is the answer.
    for unit in ("25 m^2", "25 m²", "25 \\text{ cm}^2", "25 sq units"):
        assert grade_answer(unit, "25", answer_format="any").equal, unit


def test_format_needs_a_final_form_value():
    assert format_issue("\\boxed{3 + 4}") == "not_final_form"
    assert format_issue("\\boxed{7}") is None
    assert format_issue("\\boxed{x+1}", problem="Simplify $x+1$.") == "not_final_form"


def test_garbage_never_raises():
    for junk in ["", "\\frac{", "^^^", "\\sqrt{" * 50, "1/0", "0^0", "9^9^9^9", "x" * 5000]:
        assert final_form_issue(junk) in (None, *FINAL_FORM_ISSUES)
        assert score_response(f"\\boxed{{{junk}}}", "7")[0] == 0.0


@pytest.mark.parametrize(
    ("answer", "gold", "problem"),
    [
        ("e^{2\\pi i}", "1", None),
        ("-e^{i\\pi}", "1", None),
        ("6^{e^{2\\pi i}}\\cdot 4^{e^{4\\pi i}}+5", "29", "Compute $6 \\times 4 + 5$."),
        (
            "\\frac{7^{e^{2\\pi i}}}{3^{e^{4\\pi i}}}+\\frac{8^{e^{6\\pi i}}}{5^{e^{8\\pi i}}}",
            "\\frac{59}{15}",
            None,
        ),
        ("\\sqrt{3^{e^{2\\pi i}\\cdot 2}+7^{2e^{4\\pi i}}}", "\\sqrt{58}", None),
    ],
)
def test_arithmetic_written_with_complex_constants_is_not_final(answer, gold, problem):
    """att32e F1: `n^{e^{2k pi i}}` is n, but the rational-value rule skipped complex values,
    so a copy of the problem's arithmetic with every number so wrapped was paid (86/100
    procedural "Compute" tasks at difficulty 1, 43/43 ToolUse products)."""
    verdict = grade_answer(answer, gold, problem=problem)
    assert not verdict.equal and verdict.reason == "not_final_form", verdict
    assert grade_answer("3+4i", "3+4i").equal and grade_answer("2i", "2i").equal


@pytest.mark.parametrize(
    ("answer", "gold", "issue"),
    [
        ("\\cos\\frac{\\pi}{5}", "\\frac{1+\\sqrt{5}}{4}", "unevaluated_function"),
        ("\\sin\\frac{\\pi}{12}", "\\frac{\\sqrt{6}-\\sqrt{2}}{4}", "unevaluated_function"),
        ("\\arctan\\sqrt{3}", "\\frac{\\pi}{3}", "unevaluated_function"),
        ("2^{1/2}", "\\sqrt{2}", "unevaluated_power"),
        ("\\sqrt{2}\\cdot 3^{1/2}", "\\sqrt{6}", "unevaluated_power"),
        ("\\sqrt[4]{4}", "\\sqrt{2}", "reducible_radical"),
        ("\\sqrt[6]{8}", "\\sqrt{2}", "reducible_radical"),
        ("290e-1", "29", "unevaluated_arithmetic"),
        ("10^{0}", "1", "unevaluated_arithmetic"),
        ("10^{1}", "10", "unevaluated_arithmetic"),
        ("1\\cdot 10^{2}", "100", "unevaluated_arithmetic"),
    ],
)
def test_rewritten_values_are_not_final(answer, gold, issue):
    """att32e F2/F3: an equivalent rewrite of the value (a function of a constant, a
    fractional power, a root of a lower index, an e-notation or power of ten with nothing to
    write) was paid; a gold written so still accepts its own form."""
    verdict = grade_answer(answer, gold)
    assert not verdict.equal and verdict.issue == issue, verdict
    assert grade_answer(answer, answer).equal  # the form a dataset's gold uses


@pytest.mark.parametrize(
    "answer",
    ["\\frac{1+\\sqrt{5}}{4}", "\\sqrt[3]{2}", "\\sqrt[4]{8}", "2.5e3", "10^{6}", "e^{2}"],
)
def test_final_forms_near_the_new_rules_stay_final(answer):
    assert grade_answer(answer, answer).equal


@pytest.mark.parametrize(
    "answer",
    [
        "(3+\\frac{x^2}{x}-x)+(4+\\frac{x^2}{x}-x)(5+\\frac{x^2}{x}-x)",  # att32g F1
        "\\frac{23x^2}{x x}",
        "23(\\sin^2 x+\\cos^2 x)",
        "\\frac{23x+23}{x+1}",
        "\\frac{x^2-1}{x-1}-x+22",
        "\\frac{23 e^{300}}{e^{299} e}",  # att32g F2: past the evaluator's magnitude bound
        "(3+e^{300}-e^{299}e)+(4+e^{300}-e^{299}e)(5+e^{300}-e^{299}e)",
    ],
)
def test_arithmetic_hidden_by_a_cancelling_variable_or_a_huge_constant_is_not_final(answer):
    problem = "Compute $3 + 4 \\cdot 5$."
    verdict = grade_answer(answer, "23", problem=problem)
    # A value past the evaluator's bound is unequal without sympy (att33g), else not final.
    assert not verdict.equal and verdict.reason in ("not_final_form", "not_equal"), verdict
    assert grade_answer("23", "23", problem=problem).equal
    assert grade_answer("x = 23", "23").equal and grade_answer("2x+1", "2x+1").equal
    assert grade_answer("(x, y) = (3, 1)", "(3, 1)").equal


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("\\frac{1}{x}", "x^{-1}"),  # att32g: a numerator 1 is not a factor 1
        ("\\frac{1}{x+1}", "(x+1)^{-1}"),
        ("\\frac{1}{\\pi}", "\\pi^{-1}"),
        ("\\frac{1}{2\\pi}", "\\frac{0.5}{\\pi}"),
        ("\\tan^{-1} 2", "\\arctan 2"),  # MATH writes the inverse so
        ("\\arctan 2", "\\tan^{-1} 2"),
    ],
)
def test_honest_forms_att32g_found_refused_are_paid(answer, gold):
    assert grade_answer(answer, gold).equal, grade_answer(answer, gold)


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("3^{0^{+0}} - 6^{0^{0.00}} - 8^{0^{0.000}}", "-11"),  # att32h F1: 39/100 paid
        ("-11\\cdot 0^{+0}", "-11"),
        ("0^{0}", "1"),
        ("-11 + \\exp(-600)", "-11"),  # att32h F2: a value that is not the gold, paid
        ("23 + \\exp(-700)", "23"),
    ],
)
def test_exponents_of_zero_and_values_past_the_bound_are_not_final(answer, gold):
    verdict = grade_answer(answer, gold, problem="Compute $3 - 6 - 8$.")
    assert not verdict.equal and verdict.reason in ("not_final_form", "not_equal"), verdict
    assert grade_answer("\\sqrt[3]{2}", "\\sqrt[3]{2}").equal  # a root the evaluator now reads
    assert grade_answer("\\sqrt[3]{8}", "2").issue == "reducible_radical"


def test_arithmetic_behind_cancelling_imaginary_terms_is_not_final():
    """att32j: a huge imaginary term added and cancelled left a residue above the 1e-30 cut
    in 50 digits (sympy saw 12 exactly): the copied computation was not taken as rational."""
    problem = "Chen buys 3 notebooks at 4 dollars each and pays with 24 dollars. How much change?"
    big = "0" * 28
    answer = f"24-3(4+\\frac{{1{big}\\pi i}}{{7}})+\\frac{{3{big}\\pi i}}{{7}}"
    verdict = grade_answer(answer, "12", problem=problem)
    assert not verdict.equal and verdict.reason == "not_final_form", verdict
    assert grade_answer("3+4i", "3+4i").equal and grade_answer("e^{10}", "e^{10}").equal


def test_a_value_within_the_equality_tolerance_of_a_rational_is_a_rational():
    """att32l: `n^{e^{e^{-64}}}` is n to 1e-28: past the old 1e-30 cut it was "irrational",
    so final, while the exact comparison (1e-25) called it equal: a copy of the problem's
    arithmetic so wrapped earned correct on 64/100 procedural tasks at d1, 66 at d3."""
    problem = "Compute $7 \\times 2 - 3$."
    answer = "\\boxed{7^{e^{e^{-64}}} \\cdot 2^{e^{e^{-63}}} - 3^{e^{e^{-62}}}}"
    # Not final, or (since att34b: a gap that 150 digits keep is real) not 11 at all.
    assert score_response(answer, "11", problem=problem) in (
        (0.0, "not_final_form"),
        (0.0, "incorrect"),
    )
    assert grade_answer("e^{-64}", "e^{-64}").equal and grade_answer("\\pi", "\\pi").equal


def test_reducible_radicals_are_found_by_bounded_trial_division():
    """att33a F1: the reducible-radical test divided by every number up to the root: a reply of
    98 square roots of primes near 10**12 cost 12 s of host CPU in one step. Now up to the
    cube root (the rest has at most two prime factors): the same verdicts, 1,000 such radicands
    in a fraction of a second."""
    from rllm_envs.math._final_form import _square_part

    def by_every_divisor(n: int, k: int) -> bool:
        return any(n % p**k == 0 for p in range(2, math.isqrt(n) + 1) if p**k <= n)

    for n in [*range(2, 3000), 999_983**2 // 10**6, 7**3 * 11, 2 * 3 * 5 * 7 * 11 * 13]:
        for k in (2, 3, 4, 5):
            assert _square_part(n, k) is by_every_divisor(n, k), (n, k)
    from sympy import prevprime

    p, q = prevprime(10**6), prevprime(570_000)
    assert _square_part(p**2) and _square_part(3 * q**2) and _square_part(q**2 * 2, 2)
    assert not _square_part(p * prevprime(p)) and not _square_part(prevprime(10**12))
    assert not _square_part(3 * q**2, 3) and _square_part(7 * prevprime(5000) ** 3, 3)


@pytest.mark.timeout(60)  # a hang guard, not a speed goal: it took about 130 s before
def test_a_reply_of_many_large_radicals_is_graded_in_bounded_work():
    from sympy import primerange

    primes = list(primerange(10**12 - 40_000, 10**12))[:1000]
    assert len(primes) == 1000
    for start in range(0, 1000, 40):
        answer = "+".join(f"\\sqrt{{{p}}}" for p in primes[start : start + 40])
        assert final_form_issue(answer) is None
        assert not grade_answer(answer, "23", problem="Compute $3 + 4 \\times 5$.").equal


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        # att33a F2: the quadratic formula's usual spelling (a sign inside the fraction)
        (
            "\\frac{-5 \\pm \\sqrt{13}}{2}",
            "-\\frac{5}{2} - \\frac{\\sqrt{13}}{2}, -\\frac{5}{2} + \\frac{\\sqrt{13}}{2}",
        ),
        (
            "x = \\frac{-5 \\pm \\sqrt{13}}{2}",
            "\\frac{-5 + \\sqrt{13}}{2}, \\frac{-5 - \\sqrt{13}}{2}",
        ),
        ("\\frac{-5 \\mp \\sqrt{13}}{2}", "\\frac{-5 \\pm \\sqrt{13}}{2}"),
        ("3 \\frac12", "\\frac{7}{2}"),  # F3: a mixed number with a brace-less fraction
        ("9\\pi \\text{ square units}", "9\\pi"),  # F3: a unit after pi
        ("9\\pi\\,\\text{cm}^2", "9\\pi"),
    ],
)
def test_honest_forms_att33a_found_refused_are_paid(answer, gold):
    assert grade_answer(answer, gold).equal, grade_answer(answer, gold)


@pytest.mark.parametrize(
    ("answer", "gold", "reason"),
    [
        ("\\frac{-5 \\pm \\sqrt{13}}{2}", "\\frac{-5 + \\sqrt{13}}{2}", "not_equal"),  # one root
        ("\\frac{7 \\pm 0}{1}", "7", "not_equal"),  # two values are not one
        ("\\frac{1 \\pm 1}{2}", "0, 1", "not_final_form"),  # the sign's arithmetic is left
        ("22.\\overline{9}", "23", "not_final_form"),  # att33a F4: 23 written as a limit
        ("0.1\\overline{9}", "0.2", "not_final_form"),
    ],
)
def test_a_sign_inside_a_fraction_or_repeating_nines_are_not_paid(answer, gold, reason):
    verdict = grade_answer(answer, gold)
    assert not verdict.equal and verdict.reason == reason, verdict


def test_a_constant_whose_rounding_error_cancellations_blow_up_is_not_final():
    """att33e: `Z = 1 + D(D(2/sqrt2 - sqrt2 + sqrt3/D) - sqrt3 + sqrt5/D) - sqrt5` is exactly 1
    but 1 + 3e-19 in 50 digits: too far from 1 for the rational test, too close for the
    comparison to call it unequal (sympy then did). The problem's numbers raised to Z were
    final and equal: 100/100 arithmetic and fractions tasks at d1 and d3, 95/100 at d5."""
    big = "1" + "0" * 16
    z = (
        f"1+{big}({big}(\\frac{{2}}{{\\sqrt{{2}}}}-\\sqrt{{2}}+\\frac{{\\sqrt{{3}}}}{{{big}}})"
        f"-\\sqrt{{3}}+\\frac{{\\sqrt{{5}}}}{{{big}}})-\\sqrt{{5}}"
    )
    problem = "Compute $3 + 4 \\times 5$."
    for answer in [f"3 + 4 \\times 5^{{{z}}}", f"23^{{{z}}}", f"3^{{{z}}} + 4^{{{z}}} \\times 5"]:
        verdict = grade_answer(answer, "23", problem=problem)
        assert not verdict.equal and verdict.reason == "not_final_form", verdict
    for honest in ["\\sqrt{2}", "e^{2}", "\\frac{\\pi}{3}", "2^{\\sqrt{2}}", "3\\pi + \\sqrt{5}"]:
        assert final_form_issue(honest) is None, honest


@pytest.mark.timeout(60)  # a hang guard, not a speed goal: each reply took 5 s or more before
def test_replies_past_the_evaluators_bound_or_deeply_nested_are_graded_in_bounded_work():
    """att33g F1: `\\exp` nested 8 deep passes the evaluator's bound, so sympy was asked and
    held its worker for the whole 5 s timeout at every step; a nest of 190 functions was
    evaluated once per subexpression (18,000 evaluations, 1.5 s). Past the bound where the
    gold is not, the answer is unequal without sympy; each subexpression is evaluated once."""
    from rllm_envs.math._numeric import too_large

    problem = "Compute $3 + 4 \\times 5$."
    for depth in (6, 8, 12, 20, 40):
        tower = "\\exp" * depth + " {-9}"
        assert too_large(tower)
        assert not grade_answer(tower, "23", problem=problem).equal
    for nest in ("\\cot" * 190 + " 2", "\\sinh\\ln" * 90 + " 3", "\\arcsin" * 120 + " 2"):
        final_form_issue(nest)  # its verdict is not the point here: its cost is
        assert not grade_answer(nest, "23", problem=problem).equal
    assert grade_answer("2^{1000}", "2^{1000}").equal  # a gold written so keeps sympy
    assert not too_large("\\exp 5") and not too_large("x^{x^{x}}")


@pytest.mark.parametrize(
    ("answer", "gold"),
    [("7 \\times 10^{1}", "70"), ("7e1", "70"), ("7e0", "7"), ("7 \\cdot 10^{0}", "7")],
)
def test_a_mantissa_times_ten_to_the_zero_or_one_is_left_to_compute(answer, gold):
    """att33g F2: `7 \\times 10^{1}` was paid for "Compute 7 x 10"."""
    verdict = grade_answer(answer, gold)
    assert not verdict.equal and verdict.reason == "not_final_form", verdict
    assert grade_answer("1.5 \\times 10^{3}", "1500").equal and grade_answer("7e2", "700").equal


@pytest.mark.parametrize("offset", ["0", "1e-17", "5e-17", "1.2e-16"])
def test_a_value_within_a_float_of_the_equality_cut_is_a_rational(offset):
    """att33i: each number n of the problem written n(1 + E), E = 1e-25 (1 + 5e-17): past the
    final-form rule's 1e-25 cut (irrational, so final) yet equal to sympy, whose 1e-25 is a
    float: 71/54/40 of 100 arithmetic and fractions tasks at d1/d3/d5. The rule's cut is now
    a hundred times the comparison's."""
    import mpmath

    with mpmath.workdps(60):
        exponent = (25 * mpmath.log(10) - mpmath.log(1 + mpmath.mpf(offset))) / mpmath.pi
    small = f"e^{{-{mpmath.nstr(exponent, 35)}\\pi}}"
    answer = f"37(1+{small}) + 45({small}+1)"
    verdict = grade_answer(answer, "82", problem="Compute $37 + 45$.")
    assert not verdict.equal, verdict


@pytest.mark.parametrize(
    "answer", ["(3+4) \\cdot \\cdot 1", "(3+4) * * 1", "(3+4)\\times\\times 1", "(3+4) / / 1"]
)
def test_two_operators_in_a_row_are_no_expression(answer):
    """att33k: `\\cdot \\cdot` became `* *`, which `ast` refuses (so the final-form rule saw
    nothing to refuse) and sympy joined into `**`: copied arithmetic as `(E) \\cdot\\cdot 1`
    paid 17/17 copyable tasks at d1/d3/d5, a formula template 14/14 linear equations."""
    from rllm_envs.math._latex import Unsupported, to_python

    with pytest.raises(Unsupported):
        to_python(answer)
    assert not grade_answer(answer, "7", problem="Compute $3 + 4$.").equal
    assert grade_answer("x**2", "x^2").equal  # Python's power is still a power


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("-\\sqrt[3]{2}", "\\sqrt[3]{-2}"),
        ("\\sqrt[3]{-2}", "-\\sqrt[3]{2}"),
        ("-2", "\\sqrt[3]{-8}"),
    ],
)
def test_an_odd_root_of_a_negative_number_is_real(answer, gold):
    """att33k F2: a principal-power branch shadowed the real one (both refused as unequal)."""
    assert grade_answer(answer, gold).equal


def test_a_decimal_inside_an_expression_is_no_approximation():
    """att33m F1: a decimal anywhere turned on the 1e-6 tolerance: each number n of the problem
    written `\\exp(\\log n + 0.0000000k)` was within 1e-6 of a 13/21-like gold, so equal, and
    no part was left to compute (6/8 dataset records). Only a number written with a decimal
    point is an approximation."""
    copy = (
        "\\frac{\\exp(0.00000001)}{\\exp(\\log 3 + 0.00000002)} + "
        "\\frac{\\exp(\\log 2 + 0.00000003)}{\\exp(\\log 7 + 0.00000004)}"
    )
    problem = "What is $\\frac{1}{3} + \\frac{2}{7}$?"
    assert not grade_answer(copy, "\\frac{13}{21}", problem=problem).equal
    assert is_equivalent("0.619048", "\\frac{13}{21}")  # a rounded decimal still is
    assert final_form_issue("-" * 998 + "7") is not None  # too deep to read: not final


def test_constancy_is_read_once_per_tree_and_agrees_with_a_walk():
    """att33m: each subexpression walked its whole subtree to tell whether it was constant
    (998 nested signs: 1 s of host CPU per step); one pass per tree now gives the same."""
    import ast

    from rllm_envs.math._final_form import _constant, _constants, _parse

    for text in ("3 + x\\sqrt{2}", "\\frac{\\pi}{y+1} - 4", "2^{3} + \\infty", "-" * 300 + "7"):
        tree = _parse(text)
        assert tree is not None
        found = _constants(tree.body)
        for node in ast.walk(tree.body):
            assert found[id(node)] == _constant(node), (text, ast.dump(node)[:80])


def _wrapped(n: int, k: int) -> str:
    """att34b's wrapper: ``n`` as ``e^{\\log n + X/D_k}``, ``X`` the difference of two cube
    roots of -2 (0 for a principal root, -1.9 - 1.1i for the real one), ``D_k`` about 1e18."""
    x = "(\\sqrt[3]{-2}-\\sqrt[3]{2}e^{i\\pi/3})"
    return f"e^{{\\log {n}+{x}/{10**18 // (k + 2) + 1}}}"


@pytest.mark.parametrize(
    ("answer", "gold", "problem"),
    [
        (f"{_wrapped(3, 0)} + {_wrapped(4, 1)}", "7", "Compute $3 + 4$."),
        (f"{_wrapped(12, 0)} \\cdot {_wrapped(5, 1)} - {_wrapped(7, 2)}", "53", None),
    ],
)
def test_a_gap_that_more_digits_do_not_shrink_is_real(answer, gold, problem):
    """att34b: the in-process evaluator reads `\\sqrt[3]{-2}` as the real root, sympy as the
    principal one; a gap of 1e-18 built from their difference was too small for 50 digits to
    call, so sympy (reading it as 0) called the copy equal: half of all tasks at d1/d3/d5.
    Such a gap is now read again at 150 digits (it stays: unequal), and sympy's root of an odd
    index is real too."""
    from rllm_envs.math._numeric import decide
    from rllm_envs.math._symbolic import expressions_equal

    assert decide(answer, gold) is False
    assert not grade_answer(answer, gold, problem=problem).equal
    x = "\\sqrt[3]{-2}-\\sqrt[3]{2}e^{i\\pi/3}"
    assert not expressions_equal(x, "0")  # the two sides read a root alike
    assert expressions_equal("\\sqrt[3]{-2}", "-\\sqrt[3]{2}")
    assert expressions_equal("\\sqrt[3]{x^3}", "x") and expressions_equal("\\sqrt[4]{16}", "2")
    # A long decimal's rounding is no real gap: still left to the tolerance.
    assert grade_answer("0.3333333333333333333333333", "\\frac{1}{3}").equal
    assert grade_answer("1.41421356237309504880168872", "\\sqrt{2}").equal


@pytest.mark.timeout(60)
def test_a_huge_root_index_costs_nothing():
    """att34e F1: `\\sqrt[10^9]{3}` made the reducible-radical test compute 2**(10**9 + 1):
    10-70 s of host CPU on every step, right or wrong (the final form is read at each)."""
    for index in ("1000000000", "4000000000"):
        assert final_form_issue(f"\\sqrt[{index}]{{3}}") is None
    # 3 to the power 1e-29 is 1 within the rational slack: read as the rational it nearly is.
    assert final_form_issue("5 + \\sqrt[" + "10" * 15 + "]{3}") is not None
    assert final_form_issue("\\sqrt[3]{16}") == "reducible_radical"


def _nudge(n: int, k: int) -> str:
    return f"e^{{\\ln {n} + \\frac{{\\pi}}{{{10**13 + k}}}}}"


@pytest.mark.parametrize(
    ("answer", "gold", "problem"),
    [
        (f"{_nudge(3, 0)} \\cdot {_nudge(5, 1)}", "15.0", "Compute $3 \\cdot 5$."),
        ("2 + \\frac{\\pi}{10000000000000}", "2.0", None),
        (f"\\frac{{{_nudge(22, 0)}}}{{7}} + {_nudge(1, 1)}", "4.142857", "Compute $22 / 7 + 1$."),
        (f"{_nudge(22, 0)} \\cdot \\frac{{1}}{{7}}", "3.142857", "What is $22 \\div 7$?"),
    ],
)
def test_a_decimal_gold_pays_no_nudged_copy(answer, gold, problem):
    """att34e F2: where the gold is a decimal, an exact answer within 1e-6 of it was paid: the
    problem's arithmetic with each number nudged by an irrational hair (final in form) paid
    100/100 dataset records. A short decimal is exact as written; near a long (rounded) one,
    an answer carrying the problem's values each a hair off is not final."""
    assert not grade_answer(answer, gold, problem=problem).equal


@pytest.mark.parametrize(
    ("answer", "gold", "problem"),
    [
        ("\\frac{29}{7}", "4.142857", "Compute $\\frac{22}{7} + 1$ to six decimal places."),
        ("\\frac{\\pi}{4}", "0.785398", "A quarter of the unit circle's area?"),
        ("2\\pi", "6.283185", "The circumference of a circle of radius 1?"),
        ("\\frac{5}{2}", "2.5", "Compute $5 \\div 2$."),
        ("\\frac{1}{7}", "0.142857", "Compute $1 \\div 7$."),
    ],
)
def test_an_exact_answer_to_a_decimal_gold_is_still_paid(answer, gold, problem):
    assert grade_answer(answer, gold, problem=problem).equal


def test_an_infinite_endpoint_does_not_turn_off_the_variables_rule():
    """att34e F3: `\\infty` counted as a variable of the gold, so an interval with one let the
    finite endpoint hide arithmetic behind a cancelling variable (100/100 records)."""
    hidden = "(\\frac{8t - \\frac{3t^2}{t}}{t}, \\infty)"
    assert not grade_answer(hidden, "(5, \\infty)", problem="Solve $x + 3 > 8$.").equal
    assert grade_answer("(5, \\infty)", "(5, \\infty)", problem="Solve $x + 3 > 8$.").equal
    assert grade_answer("(-\\infty, x+1]", "(-\\infty, x+1]").equal
    assert grade_answer("\\text{(C)}", "\\text{C}").equal  # a gold it cannot read: no rule


@pytest.mark.parametrize(
    "answer",
    [
        "3^{1+\\frac{1}{\\infty}} + 2^{1+\\frac{1}{\\infty}} - 5^{1+\\frac{1}{\\infty}} + 7",
        "7 + e^{-\\infty}",
        "7^{\\tanh\\infty}",
        "3^{1-\\frac{1}{-\\infty}} + 4^{1+e^{-\\infty}}",
    ],
)
def test_infinity_inside_a_value_is_a_limit_left_to_take(answer):
    """att34h: `\\infty` was a variable to the final-form rule (so its parts were never read
    as the rational they are) and a limit to sympy: each number n of the problem written
    `n^{1+\\frac{1}{\\infty}}` paid 75-88/100 copyable tasks, 34-45/100 ToolUse arithmetic."""
    verdict = grade_answer(answer, "7", problem="Compute $3 + 2 - 5 + 7$.")
    assert not verdict.equal and verdict.reason == "not_final_form", verdict


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("(4, \\infty)", "(4, \\infty)"),
        ("-\\infty", "-\\infty"),
        ("\\infty", "\\infty"),
        ("(-\\infty, 3) \\cup (5, \\infty)", "(-\\infty,3)\\cup(5,\\infty)"),
    ],
)
def test_infinity_as_a_value_is_still_final(answer, gold):
    assert grade_answer(answer, gold).equal


def test_a_problem_asking_for_the_exact_decimal_gets_no_tolerance():
    """att34k: ToolUse's unit tasks ask for "the exact decimal value (no rounding)", yet a
    long gold (`680.388555`) was taken for a rounding: a fraction off by 4e-7 was paid on
    33-64 of 100 tasks. Such a gold is exact as written; a rounded-looking one elsewhere
    still matches the exact value it rounds."""
    question = "Convert 1.5 pound to g. Give the exact decimal value (no rounding), number only."
    assert not grade_answer("\\frac{4082333}{6000}", "680.388555", problem=question).equal
    assert grade_answer("680.388555", "680.388555", problem=question).equal
    assert grade_answer("\\frac{136077711}{200000}", "680.388555", problem=question).equal
    assert grade_answer("\\frac{1}{7}", "0.142857", problem="Compute $1 \\div 7$.").equal
    assert not grade_answer("\\frac{1}{3}", "0.3333").equal  # 4 places: exact as written


@pytest.mark.parametrize(
    ("answer", "gold"),
    [
        ("11\\pi + \\frac{11\\pi^{2}}{\\pi}", "22\\pi"),
        ("5 e^{\\ln 5 + \\ln\\pi}", "25\\pi"),
        ("7\\sqrt{2}\\frac{\\pi}{\\exp\\ln\\pi}", "7\\sqrt{2}"),
        ("\\frac{\\sqrt{3 e^{\\ln 3+\\ln\\pi} + 4 e^{\\ln 4+\\ln\\pi}}}{\\sqrt{\\pi}}", "5"),
    ],
)
def test_arithmetic_hidden_among_parts_of_an_irrational_answer_is_not_final(answer, gold):
    """att34m: only a flattened sum or product and each of its parts were value-checked, so
    where the gold is irrational, like terms spelled apart, a factor group worth 1, or a
    product written through logarithms passed (7/7, 7/7, 9/9 circle and hypotenuse tasks)."""
    verdict = grade_answer(answer, gold)
    assert not verdict.equal and verdict.reason == "not_final_form", verdict


@pytest.mark.parametrize(
    "answer",
    [
        "3 + 2\\sqrt{2}",
        "\\sqrt{2} + \\sqrt{3}",
        "\\frac{\\pi}{\\sqrt{2}}",
        "2\\sqrt{2}\\pi",
        "\\pi + \\pi^{2}",
        "e + \\frac{1}{e}",
        "\\frac{1}{2} + \\frac{\\sqrt{3}}{2}",
        "\\ln 2 + \\ln 3",
    ],
)
def test_irrational_parts_that_do_not_combine_are_final(answer):
    assert final_form_issue(answer) is None


def test_a_value_too_deep_to_read_is_not_final(monkeypatch):
    """att34n: a RecursionError in the value check read as "not rational", so final (hidden
    by the 1,000-character limit today). A fake evaluator that overflows stands in for depth."""
    from rllm_envs.math import _final_form

    def overflow(self, node):
        raise RecursionError

    tree = _final_form._parse("\\sqrt{2} + \\sqrt{3}")
    assert tree is not None and not _final_form._left_to_compute(tree.body)
    monkeypatch.setattr(_final_form._Evaluator, "eval", overflow)
    assert _final_form._left_to_compute(tree.body)
