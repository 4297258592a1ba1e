"""Countdown rules: the parser, exact arithmetic, the component ladder, hostile input."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rllm_envs.countdown import procedural_tasks
from rllm_envs.countdown.rules import (
    COMPONENTS,
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_EXPRESSION_LENGTH,
    MAX_NUMBERS,
    extract_answer,
    grade,
    parse_expression,
    prompt,
    score,
)
from rllm_envs.countdown.tasks import trivial_targets

TASK = {"nums": [2, 3, 4], "target": 20}


def answer(expr: str) -> str:
    return f"<answer>{expr}</answer>"


def components(response: str, task=TASK, **kw) -> tuple[float, ...]:
    g = grade(response, task, **kw)
    return tuple(g.components[c] for c in COMPONENTS)


# ------------------------------------------------------------------ gold and garbage


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("use_all", [True, False])
def test_reference_solution_scores_one(difficulty, use_all):
    source = procedural_tasks(seed=3, difficulty=difficulty)
    for i in range(40):
        task = source[i]
        assert score(answer(task["solution"]), task, use_all=use_all) == 1.0, task


GARBAGE = [
    None,
    "",
    "qwzx ☃ <tool_call>{not json</tool_call> \\boxed{",
    "(2 + 3) * 4",  # right expression, no tags: no answer
    "<answer>(2 + 3) * 4",  # unclosed
    "<answer></answer>",
    "<answer>twenty</answer>",
    "<think><answer>(2 + 3) * 4</answer></think>",  # only in the reasoning
    "<answer>(2 + 3) * 4</answer> <think>wait, let me check",  # cut while thinking
    "\\boxed{20}",
    "<answer>20</answer>",  # the target itself is not a given number
]


@pytest.mark.parametrize("response", GARBAGE)
def test_garbage_scores_zero_and_never_raises(response):
    assert score(response, TASK) == 0.0
    assert not grade(response, TASK).correct


# --------------------------------------------------------------------- the ladder


@pytest.mark.parametrize(
    ("response", "expected", "verdict"),
    [
        (answer("(2 + 3) * 4"), (1, 1, 1, 1), "correct"),
        (answer("4 * (3 + 2) = 20"), (1, 1, 1, 1), "correct"),
        (answer("2 * 3 * 4"), (1, 1, 1, 0), "wrong_value"),
        # Numbers the task does not give (or gives fewer times): not an attempt, no credit.
        (answer("(2 + 3) * 4 * 4"), (0, 0, 0, 0), "illegal_numbers"),  # 4 reused
        (answer("(2 + 3) * 5 - 5 + 4 - 4"), (0, 0, 0, 0), "illegal_numbers"),  # 5 not given
        (answer("5 * 4"), (0, 0, 0, 0), "illegal_numbers"),  # = 20, but 5 is not given
        (answer("20"), (0, 0, 0, 0), "illegal_numbers"),  # the target, echoed
        (answer("(1 + 2) * 3"), (0, 0, 0, 0), "illegal_numbers"),  # the prompt's example
        (answer("(2 + 3) * 4 / (3 - 3)"), (0, 0, 0, 0), "illegal_numbers"),
        (answer("4 / (2 - 2) + 3"), (0, 0, 0, 0), "illegal_numbers"),  # 2 reused, 3 unused
        (answer("2 * 3 / (4 - 4)"), (0, 0, 0, 0), "illegal_numbers"),
        (answer("(2 + 3 - 4) / 0"), (0, 0, 0, 0), "illegal_numbers"),
        # Drawn from the numbers but not all of them (use_all): an attempt, not a legal one.
        (answer("2 * 4"), (1, 1, 0, 0), "illegal_numbers"),
        (answer("(2 + 3) * 4 +"), (0, 0, 0, 0), "parse_error"),
        (answer("-(2 + 3) * -4"), (0, 0, 0, 0), "parse_error"),  # no unary minus
        (answer("(2 + 3) ** 4"), (0, 0, 0, 0), "parse_error"),
        (answer("(2 + 3) * 4 = 20 = 20"), (0, 0, 0, 0), "parse_error"),
        ("no tags at all", (0, 0, 0, 0), "no_answer"),
    ],
)
def test_component_ladder(response, expected, verdict):
    assert components(response) == tuple(float(x) for x in expected)
    assert grade(response, TASK).verdict == verdict


def test_division_by_zero_with_legal_numbers_is_not_valid():
    task = {"nums": [2, 3, 5], "target": 1}
    g = grade(answer("5 / (3 - 3 + 2 - 2)"), {"nums": [2, 2, 3, 3, 5], "target": 1})
    assert g.verdict == "division_by_zero" and g.value is None
    assert (g.components["uses_allowed_numbers"], g.components["valid_expression"]) == (1.0, 0.0)
    assert g.components["value"] == 0.0
    assert grade(answer("5 / (3 - 2 - 1)"), {"nums": [1, 2, 3, 5], "target": 0}).verdict == (
        "division_by_zero"
    )
    assert score(answer("(5 - 3) / 2"), task) == 1.0


def test_use_all_rule_is_a_kwarg():
    task = {"nums": [2, 3, 4, 9], "target": 20}
    partial_answer = answer("(2 + 3) * 4")
    assert grade(partial_answer, task, use_all=True).verdict == "illegal_numbers"
    assert "does not use [9]" in grade(partial_answer, task, use_all=True).reason
    assert score(partial_answer, task, use_all=False) == 1.0
    # At most once still forbids reuse.
    assert grade(answer("4 * 4 + 4"), task, use_all=False).verdict == "illegal_numbers"
    assert "exactly once" in prompt([2, 3], 5)
    assert "at most once" in prompt([2, 3], 5, use_all=False)


def test_duplicate_numbers_may_each_be_used_once():
    task = {"nums": [5, 5, 2], "target": 12}
    assert score(answer("5 + 5 + 2"), task) == 1.0
    assert grade(answer("5 + 5 + 5 - 3"), task).verdict == "illegal_numbers"


# --------------------------------------------------------------- exact arithmetic


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        ("8 - 3 - 2", Fraction(3)),  # left associative
        ("8 / 4 / 2", Fraction(1)),
        ("2 + 3 * 4", Fraction(14)),  # precedence
        ("(2 + 3) * 4", Fraction(20)),
        ("7 / 3 * 3", Fraction(7)),  # exact, no float rounding
        ("1 / 3 + 1 / 3 + 1 / 3", Fraction(1)),
        ("6 ÷ 4 × 2 − 1", Fraction(2)),  # Unicode operators
        ("((((7))))", Fraction(7)),
        (" 1\t+\n2 ", Fraction(3)),
        ("007 + 1", Fraction(8)),
        # att33f: LaTeX operators, math-mode or bold wrappers, a final period
        ("6 \\div 4 \\times 2 - 1", Fraction(2)),
        ("2 \\cdot 3 · 4", Fraction(24)),
        ("$2 * 3$", Fraction(6)),
        ("\\(2 * 3 = 6\\)", Fraction(6)),
        ("**2 * 3**", Fraction(6)),
        ("2 * 3.", Fraction(6)),
        # att36c: an en dash for minus, Markdown backquotes
        ("(25 – 5) * 4", Fraction(80)),
        ("`(25 - 5) * 4`", Fraction(80)),
        # att37g: the letter x as the times sign, after a number or ')'
        ("25 x 4 - 3", Fraction(97)),
        ("(2+3)X4", Fraction(20)),
        ("(25 - 5) x (4)", Fraction(80)),
    ],
)
def test_exact_values(expr, value):
    parsed, error = parse_expression(expr)
    assert error is None and parsed is not None
    assert parsed.value == value


def test_fractional_target_path_is_exact():
    task = {"nums": [1, 3, 4, 6], "target": 24}
    assert score(answer("6 / (1 - 3 / 4)"), task) == 1.0
    g = grade(answer("1 / 3 + 4 + 6"), task)
    assert g.value == "31/3" and g.verdict == "wrong_value"


_leaf = st.integers(0, 50).map(lambda n: (str(n), Fraction(n)))


def _node(children):
    def combine(args):
        (ea, va), op, (eb, vb) = args
        if op == "/" and (vb is None or vb == 0):
            value = None
        elif va is None or vb is None:
            value = None
        else:
            value = {"+": va + vb, "-": va - vb, "*": va * vb, "/": va / vb if vb else None}[op]
        return (f"({ea} {op} {eb})", value)

    return st.tuples(children, st.sampled_from("+-*/"), children).map(combine)


@settings(max_examples=200, deadline=None)
@given(tree=st.recursive(_leaf, _node, max_leaves=12))
def test_parser_matches_a_reference_evaluator(tree):
    expr, value = tree
    parsed, error = parse_expression(expr)
    assert error is None, (expr, error)
    assert parsed.value == value, expr


# ----------------------------------------------------------------- hostile input


HOSTILE = [
    "x" * 1_000_000,
    "9" * 100_000,
    "1" * (MAX_DIGITS + 1),
    "(" * 100_000 + "1" + ")" * 100_000,
    "(" * (MAX_DEPTH + 1) + "1" + ")" * (MAX_DEPTH + 1),
    "+".join(["1"] * (MAX_NUMBERS + 1)),
    "2 ** 99999999",
    "9 ^ 9 ^ 9",
    "__import__('os').system('echo pwned')",
    "lambda: 0",
    "1e308 * 1e308",
    "0.1 + 0.2",
    "٣ + ٤",  # Arabic-Indic digits are not ASCII digits
    "３ + ４",  # full-width digits
    "²",
    "\x00\ud800\uffff",
    "1 +\u200b2",
    "2\u0301 + 3",
    "😀",
    "1 + 1 = x",
    "$2 * 3",  # a wrapper only when it closes
    "$$",
    "2 * 3..",
    "2 \\times",
    "x 2 * 3",  # an x that is not between two factors stays an error
    "2 x x 3",
    "2 * 3 x",
    "2x",
]


@pytest.mark.parametrize("expr", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_answers_are_parse_errors_not_exceptions(expr):
    parsed, error = parse_expression(expr)
    assert parsed is None and isinstance(error, str) and error
    g = grade(answer(expr), TASK)
    assert g.verdict == "parse_error" and g.components == dict.fromkeys(COMPONENTS, 0.0)


def test_bounds_are_exactly_where_documented():
    deep = "(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH
    assert parse_expression(deep)[0] is not None
    many = "+".join(["1"] * MAX_NUMBERS)
    assert parse_expression(many)[0].value == MAX_NUMBERS
    assert parse_expression("9" * MAX_DIGITS)[0] is not None
    assert parse_expression(" " * MAX_EXPRESSION_LENGTH + "1")[0] is None  # over the length cap
    assert "longer than" in parse_expression("1" + " " * MAX_EXPRESSION_LENGTH)[1]


def test_largest_expression_stays_small():
    # The worst case the bounds allow: MAX_NUMBERS numbers of MAX_DIGITS digits multiplied.
    expr = "*".join(["9" * MAX_DIGITS] * MAX_NUMBERS)
    parsed, _ = parse_expression(expr)
    assert parsed.value.numerator.bit_length() < 2_000


def test_extract_answer_takes_the_last_complete_block():
    assert extract_answer("<answer>1</answer> then <answer>2</answer>") == "2"
    assert extract_answer("<answer>1</answer> then <answer>2") == "1"
    assert extract_answer("</answer><answer>") is None
    assert extract_answer("<think><answer>1</answer></think><answer> 2 </answer>") == " 2 "
    assert extract_answer("x" * 1_000_000 + "<answer>3</answer>") == "3"
    assert extract_answer("<ANSWER>4</Answer>") == "4"
    assert extract_answer("<think>draft <answer>1</answer></think> final") is None
    assert extract_answer(None) is None  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=300), nums=st.lists(st.integers(0, 100), min_size=1, max_size=6))
def test_any_text_grades_without_raising_and_keeps_the_ladder(text, nums):
    task = {"nums": nums, "target": 24}
    for response in (text, answer(text)):
        g = grade(response, task)
        c = g.components
        assert set(c) == set(COMPONENTS) and all(v in (0.0, 1.0) for v in c.values())
        if c["format"] == 0.0:
            assert sum(c.values()) == 0.0
        if c["value"] == 1.0:
            assert c["format"] == c["valid_expression"] == c["uses_allowed_numbers"] == 1.0
            assert g.correct


# ------------------------------------------------------------- degenerate policies (#25)


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
def test_fixed_shape_answers_never_solve_procedural_tasks(difficulty):
    source = procedural_tasks(seed=4, difficulty=difficulty)
    for i in range(200):
        task = source[i]
        nums = [str(n) for n in task["nums"]]
        ordered = [nums, sorted(nums, key=int), sorted(nums, key=int, reverse=True)]
        for op in "+-*/":
            for order in ordered:
                assert score(answer(f" {op} ".join(order)), task) == 0.0, (task, op)
        assert grade(answer(str(task["target"])), task).components == dict.fromkeys(COMPONENTS, 0.0)
        example = grade("<answer>(1 + 2) * 3</answer>", task).components
        if not {1, 2, 3} <= set(task["nums"]):
            assert example == dict.fromkeys(COMPONENTS, 0.0)


def test_trivial_targets_are_the_one_operator_folds():
    # 6+3+2, 6-3-2, 6*3*2, 6/3/2 and, sorted up, 2-3-6 (2/3/6 is not an integer).
    assert trivial_targets([6, 3, 2]) == {11, 1, 36, -7}
