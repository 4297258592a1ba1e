"""Grader cases: every answer form, in both directions, plus adversarial inputs."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rllm_envs.math import (
    DEFAULT_TIMEOUT,
    Verdict,
    compare,
    extract_answer,
    extract_answer_and_source,
    format_issue,
    is_equivalent,
    is_placeholder,
    score_response,
)
from rllm_envs.math.grader import normalize, shutdown_workers

# (prediction, gold): each pair must be judged equivalent.
EQUIVALENT = [
    # integers and signs
    ("3", "3"),
    ("+3", "3"),
    ("-7", "-7"),
    ("007", "7"),
    ("3.0", "3"),
    ("3.", "3"),
    ("1,000", "1000"),
    ("1{,}000", "1000"),
    ("12,345,678", "12345678"),
    # thousands separators as LaTeX spaces (att32b F1/F2): MATH's golds write `10,\!080`
    ("10080", "10,\\!080"),
    ("\\$1,\\!200", "1200"),
    ("5\\,182", "5182"),
    ("5~182", "5182"),
    ("5\\ 182", "5182"),
    ("5\\thinspace 182", "5182"),
    ("5 182", "5182"),
    ("1,\\!234,\\!567.5", "1234567.5"),
    ("-0", "0"),
    # decimals
    ("0.5", "\\frac{1}{2}"),
    (".5", "0.5"),
    ("0.50", "0.5"),
    ("2.25", "\\frac{9}{4}"),
    ("-1.75", "-\\frac{7}{4}"),
    ("0.333333", "\\frac{1}{3}"),
    ("0.6666667", "\\frac{2}{3}"),
    ("1.4142136", "\\sqrt{2}"),
    ("3.1415927", "\\pi"),
    # fractions
    ("\\frac{1}{2}", "1/2"),
    ("\\dfrac{1}{2}", "\\frac12"),
    ("\\tfrac{3}{4}", "3/4"),
    ("2/4", "\\frac{1}{2}"),
    ("\\frac{-3}{4}", "-\\frac{3}{4}"),
    ("-\\frac{3}{4}", "\\frac{3}{-4}"),
    ("\\frac{6}{3}", "2"),
    ("\\frac{10}{3}", "3\\frac{1}{3}"),
    ("\\frac{1}{2}", "\\frac{2}{4}"),
    ("{\\frac{5}{7}}", "\\frac{5}{7}"),
    ("\\frac{1}{\\sqrt{2}}", "\\frac{\\sqrt{2}}{2}"),
    # mixed numbers
    ("3\\frac{1}{2}", "\\frac{7}{2}"),
    ("3 1/2", "3.5"),
    ("-2\\frac{1}{4}", "-2.25"),
    # percentages
    ("50\\%", "50"),
    ("12.5%", "12.5"),
    ("50", "50\\%"),
    # scientific notation
    ("1.2e3", "1200"),
    ("1.5 \\times 10^{4}", "15000"),
    ("2\\cdot 10^{-3}", "0.002"),
    ("10^{6}", "1000000"),
    ("3E-2", "0.03"),
    # LaTeX expressions
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"),
    ("2\\sqrt{2}", "\\sqrt{8}"),
    ("\\sqrt{12}", "2\\sqrt3"),
    ("\\sqrt[3]{27}", "3"),
    ("6\\pi", "6 \\pi"),
    ("\\pi \\cdot 6", "6\\pi"),
    ("2 \\times 3", "6"),
    ("2^{10}", "1024"),
    ("2^10", "1024"),
    ("e^{0}", "1"),
    ("\\ln(e^2)", "2"),
    ("\\log_2 8", "3"),
    ("\\log_{10}(1000)", "3"),
    ("\\sin(\\pi/6)", "\\frac{1}{2}"),
    ("\\cos^2 x + \\sin^2 x", "1"),
    ("\\binom{5}{2}", "10"),
    ("\\dbinom{6}{3}", "20"),
    ("5!", "120"),
    ("|-4|", "4"),
    ("\\left(\\frac{1}{2}\\right)^2", "\\frac{1}{4}"),
    ("\\frac{3+\\sqrt{5}}{2}", "\\frac{3}{2}+\\frac{\\sqrt{5}}{2}"),
    ("i^2", "-1"),
    ("3+4i", "4i+3"),
    ("\\infty", "\\infty"),
    ("\\infty", "+\\infty"),
    ("x \\in (0, \\infty)", "(0,\\infty)"),
    ("\\$25", "25"),
    ("\\sin(\\pi)", "0"),
    ("(10^{20}+1)-10^{20}", "1"),
    ("10^{-45}", "\\frac{1}{10^{45}}"),
    ("2^{200}", "1606938044258990275541962092341162602522202993782792835301376"),
    ("25 \\text{ dollars}", "25"),
    # algebraic equivalence
    ("x^2+2x+1", "(x+1)^2"),
    ("2x+1", "1+2x"),
    ("(x-1)(x+1)", "x^2-1"),
    ("\\frac{x^2-1}{x-1}", "x+1"),
    ("2(a+b)", "2a+2b"),
    ("\\frac{1}{x}+\\frac{1}{y}", "\\frac{x+y}{xy}"),
    ("x_1 + x_2", "x_2 + x_1"),
    ("4r^2\\pi", "4\\pi r^2"),
    ("\\sqrt{x^2}", "|x|"),
    ("a^2b", "b a^2"),
    # equations
    ("x=3", "3"),
    ("3", "x = 3"),
    ("x = \\frac{1}{2}", "0.5"),
    ("y = 2x + 1", "y=1+2x"),
    ("y = 2x+1", "2x - y + 1 = 0"),
    ("x + y = 5", "y + x = 5"),
    ("2x = 6", "x = 3"),
    ("k = 7", "7"),
    ("f(x) = x^2", "x^2"),
    ("3 = x", "3"),
    # tuples and points
    ("(1, 2)", "(1,2)"),
    ("(1,2)", "\\left(1, 2\\right)"),
    ("(0.5, -3)", "\\left(\\frac{1}{2}, -3\\right)"),
    ("(x, y) = (1, 2)", "(1, 2)"),
    ("\\langle 1, 2, 3\\rangle", "(1,2,3)"),
    ("(\\sqrt{2}, 2)", "(\\sqrt2,2)"),
    # sets (order-insensitive)
    ("\\{1, 2, 3\\}", "\\{3, 2, 1\\}"),
    ("1, 2", "2, 1"),
    ("\\{1,2\\}", "1, 2"),
    ("x = 1, 2", "1, 2"),
    ("x=1, x=2", "2, 1"),
    ("-2, 3", "3, -2"),
    ("2 \\pm \\sqrt{3}", "2-\\sqrt{3}, 2+\\sqrt{3}"),
    ("\\pm 3", "3, -3"),
    ("1 \\text{ or } 2", "1, 2"),
    ("1 and 2", "2, 1"),
    ("1 - \\sqrt{3}, 1 + \\sqrt{3}", "1+\\sqrt3, 1-\\sqrt3"),
    # intervals and unions
    ("[1, 2)", "[1,2)"),
    ("(-\\infty, 3]", "x \\le 3"),
    ("x > 2", "(2, \\infty)"),
    ("x \\geq -1", "[-1, \\infty)"),
    ("1 < x \\le 4", "(1, 4]"),
    ("(1, 2) \\cup (3, 4)", "(3, 4) \\cup (1, 2)"),
    ("(-\\infty, 0) \\cup (1, \\infty)", "(-\\infty,0)\\cup(1,\\infty)"),
    ("[\\frac{1}{2}, 3]", "[0.5, 3]"),
    ("x \\in [0, 1]", "[0, 1]"),
    ("(0, 1)", "(0,1)"),
    # matrices
    ("\\begin{pmatrix}1 & 2\\\\ 3 & 4\\end{pmatrix}", "\\begin{bmatrix}1&2\\\\3&4\\end{bmatrix}"),
    ("\\begin{pmatrix}\\frac12\\\\ 2\\end{pmatrix}", "\\begin{pmatrix}0.5\\\\2\\end{pmatrix}"),
    ("\\begin{pmatrix}1\\\\2\\end{pmatrix}", "(1, 2)"),
    ("\\begin{pmatrix} 1 & 2 \\end{pmatrix}", "(1,2)"),
    # degrees and units stripped
    ("30^\\circ", "30"),
    ("30^{\\circ}", "30"),
    ("30°", "30"),
    ("5 \\text{ cm}", "5"),
    ("5\\text{cm}^2", "5"),
    ("12 square units", "12"),
    ("7 \\mbox{ inches}", "7"),
    ("45 \\text{ degrees}", "45"),
    ("3 hours", "3"),
    # plain text answers
    ("\\text{Yes}", "yes"),
    ("\\textbf{No}", "no"),
    ("Monday", "\\text{monday}"),
    ("\\text{(B)}", "B"),
    ("(C)", "C"),
    ("north east", "North-East"),
    # notation wrappers
    ("$3$", "3"),
    ("\\(3\\)", "3"),
    ("\\displaystyle\\frac{1}{2}", "0.5"),
    ("3.", "3"),
    ("\\mathbf{4}", "4"),
    ("−5", "-5"),
    ("\\left[ 1, 2 \\right]", "[1,2]"),
    ("3\\,000", "3000"),
    # forms seen in MATH-style answers
    ("8\\sqrt{3}\\text{ square units}", "8\\sqrt3"),
    ("f^{-1}(x) = \\frac{x-3}{2}", "\\frac{x-3}{2}"),
    ("\\boxed{5}", "5"),
    ("0.\\overline{3}", "\\frac13"),
    ("1.2\\overline{34}", "\\frac{611}{495}"),
    ("\\overline{AB}", "AB"),
    ("(-\\infty,-2]\\cup[2,\\infty)", "x \\le -2 \\text{ or } x \\ge 2"),
    ("(2,3)", "x=2,y=3"),
    ("\\log_3 5", "\\frac{\\ln 5}{\\ln 3}"),
    ("2^{3/2}", "2\\sqrt{2}"),
    ("\\frac{x+1}{2}", "0.5x+0.5"),
    ("-2 + 7i", "7i - 2"),
    ("\\$18.90", "18.9"),
    ("\\left( -\\frac{1}{2}, \\frac{3}{2} \\right)", "(-0.5, 1.5)"),
    ("y = -\\frac{1}{2}x + 3", "y=3-\\frac{x}{2}"),
    ("3, 5, 7", "7,5,3"),
    ("\\sqrt[3]{2}", "2^{1/3}"),
    ("\\frac{9}{4}\\pi", "2.25\\pi"),
    ("2x^2+4x", "2x(x+2)"),
    # att36c: a residue with its modulus
    ("18 \\pmod{41}", "18"),
    ("n \\equiv 18 \\pmod{41}", "18"),
    ("18 \\pmod 41", "18"),
    ("18 \\ (\\bmod 41)", "18"),
    ("18 (mod 41)", "18"),  # att36f: without a backslash
    ("18 \\mod 41", "18"),
    # s37 att37b: Unicode, a full stop after the modulus, plain text, a braced modulus
    ("n \u2261 18 (mod 41)", "18"),
    ("\u2261 18 (mod 41)", "18"),
    ("18 \\pmod{41}.", "18"),
    ("18 (mod 41).", "18"),
    ("18 mod 41", "18"),
    ("18 \\text{ mod } 41", "18"),
    ("18 \\mod{41}", "18"),
]

# (prediction, gold): each pair must be judged different.
NOT_EQUIVALENT = [
    ("4", "5"),
    ("-3", "3"),
    ("30", "3"),
    ("0.33", "\\frac{1}{3}"),
    ("0.3", "\\frac{1}{3}"),
    ("1000000.5", "1000000"),
    ("2.5", "2"),
    ("0.51", "0.5"),
    ("\\frac{1}{3}", "0.33"),
    ("\\frac{1}{2}", "\\frac{1}{3}"),
    ("\\frac{2}{1}", "\\frac{1}{2}"),
    ("3\\frac{1}{2}", "1.5"),
    ("1.2e3", "120"),
    ("10^{5}", "1000000"),
    ("\\sqrt{2}", "2"),
    ("2\\sqrt{2}", "\\sqrt{2}"),
    ("\\sqrt{3}/2", "\\sqrt{2}/2"),
    ("\\pi", "3.14"),
    ("3.14", "\\pi"),
    ("6\\pi", "3\\pi"),
    ("2^{10}", "1000"),
    ("10^{100}+1", "10^{100}"),
    ("10^{-45}", "2\\cdot 10^{-45}"),
    ("2^{200}+1", "2^{200}"),
    ("\\log_2 8", "2"),
    ("\\binom{5}{2}", "20"),
    ("5!", "24"),
    ("3+4i", "3-4i"),
    ("\\infty", "-\\infty"),
    ("x^2+2x+1", "(x-1)^2"),
    ("2x+1", "2x-1"),
    ("x+1", "y+1"),
    ("x^2", "x^3"),
    ("\\frac{x}{2}", "2x"),
    ("x=3", "4"),
    ("x = 3", "y = 4"),
    ("y = 2x + 1", "y = 2x - 1"),
    ("x + y = 5", "x - y = 5"),
    ("(1, 2)", "(2, 1)"),
    ("(1, 2)", "(1, 2, 3)"),
    ("(1,2)", "[1,2]"),
    ("(1, 2)", "1"),
    ("\\{1, 2\\}", "\\{1, 3\\}"),
    ("\\{1, 2\\}", "\\{1, 2, 3\\}"),
    ("1, 2", "1, 2, 3"),
    ("1", "1, 2"),
    ("2 \\pm \\sqrt{3}", "2+\\sqrt{3}"),
    ("[1, 2)", "[1, 2]"),
    ("(1, 2]", "(1, 2)"),
    ("x > 2", "[2, \\infty)"),
    ("x < 2", "(2, \\infty)"),
    ("(1, 2) \\cup (3, 4)", "(1, 4)"),
    ("[0, 1]", "[0, 2]"),
    ("\\begin{pmatrix}1 & 2\\\\ 3 & 4\\end{pmatrix}", "\\begin{pmatrix}1&3\\\\2&4\\end{pmatrix}"),
    ("\\begin{pmatrix}1 & 2\\end{pmatrix}", "\\begin{pmatrix}1\\\\2\\\\3\\end{pmatrix}"),
    ("\\text{Yes}", "no"),
    ("Monday", "Tuesday"),
    ("(B)", "(C)"),
    ("north", "south"),
    ("5 \\text{ cm}", "6"),
    ("30^\\circ", "60"),
    ("", "3"),
    ("   ", "3"),
    ("x", "3"),
    ("3x", "3"),
    ("\\frac{1}{0}", "1"),
    ("nan", "1"),
    ("\\text{no answer}", "0"),
    ("I don't know", "42"),
    ("0.\\overline{3}", "0.33"),
    ("5\\%", "0.05"),
    ("\\overline{AB}", "AC"),
    ("1.2\\overline{34}", "1.234"),
    ("f(x) = x^2", "x^3"),
    ("(2,3)", "x=3,y=2"),
    ("2x^2+4x", "2x(x+4)"),
    ("\\log_3 5", "\\log_5 3"),
    ("\\infty+", "\\infty"),
    ("\\infty", "\\infty <"),
    ("+", "\\text{}"),
    ("$", "%"),
    ("\\in", "\\infty"),
    ("19 \\pmod{41}", "18"),
    ("\\pmod{18}", "18"),
    ("20^{37} \\equiv 18 \\pmod{55}", "18"),
    ("mod 18", "18"),
    ("19 mod 18", "18"),
    ("= 19 (mod 41)", "18"),
]

# Adversarial predictions: must be judged not equal to "1", quickly and without raising.
ADVERSARIAL = [
    "9^9^9^9",
    "9^{9^{9^{9}}}",
    "2^{2^{2^{2^{2^{2}}}}}",
    "10^{10^{10}}",
    "(10^{1000})^{1000}",
    "100000!",
    "(10^{9})!",
    "\\binom{10^{9}}{5000}",
    "1e999999999",
    "10^{999999999}",
    "9" * 100_000,
    "\\frac{" * 5000,
    "{" * 5000 + "1" + "}" * 5000,
    "(" * 3000 + "1" + ")" * 3000,
    "\\sqrt{" * 500 + "1" + "}" * 500,
    "x^" * 1000 + "2",
    "\\frac{1}{2}" * 2000,
    "1," * 5000,
    "\\left(" * 1000,
    "\\begin{pmatrix}" + "1&" * 3000 + "1\\end{pmatrix}",
    "\\x00\\ud800",
    "__import__('os').system('echo pwned')",
    "Symbol('x').__class__",
    "lambda: 1",
    "\\" * 1000,
]


@pytest.mark.parametrize(("prediction", "gold"), EQUIVALENT)
def test_equivalent_pairs(prediction: str, gold: str) -> None:
    assert is_equivalent(prediction, gold), compare(prediction, gold)


@pytest.mark.parametrize(("prediction", "gold"), EQUIVALENT)
def test_equivalence_is_symmetric(prediction: str, gold: str) -> None:
    assert is_equivalent(gold, prediction), compare(gold, prediction)


@pytest.mark.parametrize(("prediction", "gold"), NOT_EQUIVALENT)
def test_different_pairs(prediction: str, gold: str) -> None:
    assert not is_equivalent(prediction, gold)


@pytest.mark.parametrize("prediction", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_inputs_return_within_the_bound(prediction: str) -> None:
    timeout = 2.0
    start = time.monotonic()
    verdict = compare(prediction, "1", timeout=timeout)
    elapsed = time.monotonic() - start
    assert not verdict.equal
    # The bound is part of the contract (not a speed goal): allow slack for a busy machine.
    assert elapsed < timeout + 3.0, (elapsed, verdict)


def test_timeout_is_reported_and_not_fatal() -> None:
    verdict = compare("x^2+2x+1", "(x+1)^2", timeout=1e-9)
    assert verdict.reason in ("timeout", "equal")
    assert is_equivalent("(x+3)^2", "x^2+6x+9")


def test_bound_holds_in_threads() -> None:
    pairs = [("x^2+2x+1", "(x+1)^2"), ("9^{9^{9^{9}}}", "1"), ("\\frac{1}{2}", "0.5")] * 4
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda pg: compare(*pg, timeout=5.0).equal, pairs))
    assert results == [True, False, True] * 4
    assert threading.active_count() >= 1


def _grade(pair: tuple[str, str]) -> bool:
    return is_equivalent(*pair)


def test_works_in_subprocesses() -> None:
    pairs = [("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt3"), ("9^9^9^9", "1"), ("2", "3")]
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(_grade, pairs)) == [True, False, False]


def test_worker_restarts_after_shutdown() -> None:
    assert is_equivalent("\\sqrt{8}", "2\\sqrt{2}")
    shutdown_workers()
    assert is_equivalent("\\sqrt{18}", "3\\sqrt{2}")


def test_grades_in_a_process_holding_over_1023_descriptors() -> None:
    """A trainer with many files and sockets open still grades symbolically (no select())."""
    from rllm_envs.math import grader

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1200:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is under 1,200")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        shutdown_workers()  # the next worker's pipes get descriptor numbers above 1023
        assert grader.warm_up()
        assert is_equivalent("\\sqrt{18}", "3\\sqrt{2}")
        assert not is_equivalent("\\sqrt{18}", "2\\sqrt{3}")
    finally:
        for fd in held:
            os.close(fd)
        shutdown_workers()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# ------------------------------------------------------------------------------ extraction

EXTRACTION = [
    ("The answer is $\\boxed{42}$.", "42"),
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("first \\boxed{1} then \\boxed{2}", "2"),
    ("\\boxed{\\{1, 2\\}}", "\\{1, 2\\}"),
    ("\\boxed{\\frac{\\sqrt{3}}{2}} done", "\\frac{\\sqrt{3}}{2}"),
    ("\\fbox{7}", "7"),
    ("so \\boxed 5$", "5"),
    ("<think>maybe \\boxed{3}</think>The answer is \\boxed{4}", "4"),
    ("<think>I think \\boxed{3}</think> Final answer: 5", "5"),
    ("The final answer is 17.", "17"),
    ("Final Answer: $\\frac{3}{4}$", "\\frac{3}{4}"),
    ("Natalia sold 48 clips.\n#### 72", "72"),
    ("answer: x = 2", "x = 2"),
    ("\\boxed{x^{2}}", "x^{2}"),
    ("So the answer is 5 because the sum is odd.", "5"),
    ("The final answer is 3.5. That settles it.", "3.5"),
    ("**Final Answer:** **12**", "12"),
]

NO_ANSWER = [
    "",
    "I do not know.",
    "<think>still thinking \\boxed{3}",
    "\\boxed{",
    "\\boxed{}",
    "x" * 100_000,
]


@pytest.mark.parametrize(("response", "expected"), EXTRACTION)
def test_extract_answer(response: str, expected: str) -> None:
    assert extract_answer(response) == expected


@pytest.mark.parametrize("response", NO_ANSWER)
def test_no_answer_is_none(response: str) -> None:
    assert extract_answer(response) is None


def test_extract_never_raises_on_odd_input() -> None:
    for odd in [None, 42, b"\\boxed{1}", "\x00\ud800", "\\boxed{" * 10_000]:
        extract_answer(odd)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- score_response


def test_score_response_reference_scores_one() -> None:
    assert score_response("Thus \\boxed{\\dfrac{1}{2}}.", "0.5") == (1.0, "correct")


def test_score_response_reasons() -> None:
    assert score_response("no box here", "3") == (0.0, "no_answer")
    assert score_response("\\boxed{4}", "3") == (0.0, "incorrect")
    assert score_response("qwzx \\boxed{", "3") == (0.0, "no_answer")


def test_normalize_is_idempotent() -> None:
    for text, _ in EQUIVALENT:
        once = normalize(text)
        assert normalize(once) == once


# ------------------------------------------------------------------- the time bound itself


def test_runaway_worker_is_killed_at_the_deadline_and_replaced():
    from rllm_envs.math import grader

    assert grader.warm_up()
    start = time.monotonic()
    with pytest.raises(grader._Timeout):
        grader._symbolic({"op": "busy", "seconds": 60}, time.monotonic() + 0.5)
    assert time.monotonic() - start < 5.0
    # The killed worker is not reused: the next comparison gets a fresh one and works.
    assert grader._symbolic({"op": "expr", "a": "\\infty", "b": "\\infty"}, time.monotonic() + 30)


def test_runaway_worker_is_killed_from_a_thread():
    from rllm_envs.math import grader

    def run():
        try:
            grader._symbolic({"op": "busy", "seconds": 60}, time.monotonic() + 0.5)
        except grader._Timeout:
            return "timeout"
        return "finished"

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda _: run(), range(2)))
    assert results == ["timeout", "timeout"]
    assert time.monotonic() - start < 10.0


# ------------------------------------------------------------------------ property checks


@settings(max_examples=150, deadline=None)
@given(st.fractions(max_denominator=10**6))
def test_any_fraction_equals_its_spellings(value):
    latex = f"\\frac{{{value.numerator}}}{{{value.denominator}}}"
    slash = f"{value.numerator}/{value.denominator}"
    assert is_equivalent(latex, slash) and is_equivalent(slash, latex)
    assert not is_equivalent(f"{value.numerator + 1}/{value.denominator}", slash)


@settings(max_examples=150, deadline=None)
@given(st.integers(-(10**30), 10**30))
def test_any_integer_equals_itself_and_not_its_neighbour(n):
    assert is_equivalent(str(n), f"x = {n}")
    assert not is_equivalent(str(n + 1), str(n))


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.text(max_size=60))
def test_arbitrary_text_never_raises(prediction, gold):
    verdict = compare(prediction, gold, timeout=2.0)
    assert verdict.reason in ("equal", "not_equal", "timeout", "empty")
    assert score_response(prediction, gold)[0] in (0.0, 1.0)


def test_grading_modules_do_not_import_gymnasium():
    import ast
    from pathlib import Path

    import rllm_envs.math as pkg

    for name in ("grader.py", "_latex.py", "_numeric.py", "_symbolic.py"):
        tree = ast.parse((Path(pkg.__file__).parent / name).read_text())
        imported = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        }
        assert "gymnasium" not in imported, name


def test_a_worker_start_is_not_part_of_the_bound_and_workers_do_not_leak():
    from rllm_envs.math import grader

    shutdown_workers()
    grader._compare_cached.cache_clear()
    # Sympy is needed (infinities) but no worker runs yet: the comparison waits for the
    # worker's start (the sympy import, not its own work) and is then decided, not timed out.
    verdict = compare("-\\infty", "\\infty", timeout=2.0)
    assert verdict.reason == "not_equal"
    pool = grader._get_pool()
    procs = [w.proc for w in pool.idle]
    assert procs and all(p.poll() is None for p in procs)
    shutdown_workers()
    assert all(p.poll() is not None for p in procs)


def test_warm_up_keeps_its_own_bound_while_a_worker_starts():
    from rllm_envs.math import grader

    shutdown_workers()
    start = time.monotonic()
    grader.warm_up(timeout=0.01)  # returns at its bound; the starting worker is kept
    assert time.monotonic() - start < 5.0
    assert grader.warm_up()
    shutdown_workers()


def _hold_every_slot(grader, seconds: float) -> list[threading.Thread]:
    """Threads that each keep a worker busy until their own (unpausable) deadline."""
    pool = grader._get_pool()
    hogs = [
        threading.Thread(
            target=lambda: pytest.raises(
                grader._Timeout,
                grader._symbolic,
                {"op": "busy", "seconds": 60},
                time.monotonic() + seconds,
            )
        )
        for _ in range(pool.slots.size)
    ]
    for hog in hogs:
        hog.start()
    while pool.slots.free or any(w.ready is False for w in pool.idle):
        time.sleep(0.01)
    return hogs


def test_waiting_for_a_busy_pool_never_turns_a_correct_answer_into_a_timeout():
    # Issue #31 (M1): every session of a server (every episode of a trainer) shares the
    # pool; another caller's slow expressions held every slot, and the wait counted against
    # this comparison's deadline: its correct answer was graded "timeout" (reward 0).
    from rllm_envs.math import grader

    assert grader.warm_up()
    grader._compare_cached.cache_clear()
    hogs = _hold_every_slot(grader, seconds=3.0)
    verdict = compare("2^{1024}", "2^{2^{10}}", timeout=1.0)  # settled by sympy only
    for hog in hogs:
        hog.join()
    assert verdict == Verdict(True, "equal")


def test_the_pool_serves_callers_in_turn():
    # Issue #31 (M1): a caller that sends one slow comparison after another took its slot
    # straight back (a semaphore lets the releasing thread win); the others waited out
    # their deadlines. A released slot now goes to the longest waiter.
    from rllm_envs.math import grader

    assert grader.warm_up()
    pool = grader._get_pool()
    order: list[str] = []
    stop = threading.Event()

    def hog(name: str) -> None:
        while not stop.is_set():
            with contextlib.suppress(grader._Timeout):
                grader._symbolic({"op": "busy", "seconds": 60}, grader._Budget(0.3))
            order.append(name)

    hogs = [threading.Thread(target=hog, args=(f"hog{i}",)) for i in range(pool.slots.size)]
    for thread in hogs:
        thread.start()
    while pool.slots.free:
        time.sleep(0.01)
    budget = grader._Budget(2.0)
    equal = grader._symbolic({"op": "expr", "a": "\\infty", "b": "\\infty"}, budget)
    order.append("victim")
    stop.set()
    for thread in hogs:
        thread.join()
    assert equal
    # Each hog finished at most its request in flight and one queued before the victim's.
    assert order.index("victim") <= 2 * pool.slots.size


# ------------------------------------------------------------- lenient ("any") extraction

FREE_FORM = [
    json.loads(line)
    for line in (Path(__file__).parent / "data" / "free_form_cases.jsonl").read_text().splitlines()
    if line.strip()
]


@pytest.mark.parametrize(
    "case", FREE_FORM, ids=[f"{i}-{c['form']}" for i, c in enumerate(FREE_FORM)]
)
def test_free_form_cases_in_any_mode(case) -> None:
    score, reason = score_response(case["pred"], case["gold"], answer_format="any")
    assert (score == 1.0) == case["label"], (
        reason,
        extract_answer(case["pred"], answer_format="any"),
    )


def test_free_form_cases_cover_every_form() -> None:
    forms = {c["form"] for c in FREE_FORM}
    assert {"boxed", "latex", "phrase", "gsm8k", "number", "thousands", "decimal_comma"} <= forms
    assert {"units", "approx", "chain", "bare", "free_gold"} <= forms
    assert len(FREE_FORM) >= 150


def test_boxed_mode_stays_strict() -> None:
    # What "any" reads, the RL default does not.
    assert score_response("Answer $ 9 $", "9") == (0.0, "no_answer")
    assert score_response("so it is 10 in total", "10") == (0.0, "no_answer")
    assert not is_equivalent("1000,99", "1000.99")
    assert is_equivalent("1000,99", "1000.99", answer_format="any")
    # Rounding to the written places is an "any"-mode rule; RL rewards stay exact.
    assert not is_equivalent("0.33", "\\frac{1}{3}")
    assert is_equivalent("0.33", "\\frac{1}{3}", answer_format="any")
    assert not is_equivalent("(0.6, 2.6667]", "(\\frac{3}{5}, \\frac{8}{3}]")
    assert not is_equivalent("(1, 2), (1, 2)", "(1, 2)")


@pytest.mark.parametrize(
    ("prediction", "gold", "expected"),
    [
        # A decimal with k >= 2 places equals a value with no finite decimal expansion when
        # it is that value rounded to k places; never a short decimal, never one place.
        ("0.33", "\\frac{1}{3}", True),
        ("0.333", "\\frac{1}{3}", True),
        ("0.34", "\\frac{1}{3}", False),
        ("0.3", "\\frac{1}{3}", False),
        ("2.6667", "\\frac{8}{3}", True),
        ("2.6666", "\\frac{8}{3}", False),
        ("(0.6,2.6667]", "(\\frac{3}{5},\\frac{8}{3}]", True),
        (
            "\\begin{pmatrix}0.33\\\\0.2\\end{pmatrix}",
            "\\begin{pmatrix}\\frac13\\\\\\frac15\\end{pmatrix}",
            True,
        ),
        ("1.41", "\\sqrt{2}", True),
        ("1.42", "\\sqrt{2}", False),
        ("3.14", "\\pi", True),
        ("0.25", "0.253", False),
        ("0.38", "\\frac{3}{8}", False),
        # Answer sets list each element once.
        ("(1, 2), (3, 4), (1, 2)", "(3, 4), (1, 2)", True),
        ("(1, 2), (1, 2)", "(3, 4), (1, 2)", False),
        # Tuples written with `;`.
        ("(0;-2;6), (4;0;0)", "(4, 0, 0), (0, -2, 6)", True),
        ("(0;-2;6)", "(0, 2, 6)", False),
        # Linear and absolute-value inequalities.
        ("-x > -1", "x < 1", True),
        ("-x \\ge -1", "x \\le 1", True),
        ("-x > -1", "x > 1", False),
        ("2x \\le 6", "x \\le 3", True),
        ("-3y < 6", "y > -2", True),
        ("1 \\le |z| \\le \\frac{3}{2}", "[-\\frac32, -1] \\cup [1, \\frac32]", True),
        ("1 \\le |z| \\le 2", "[-2, -1) \\cup [1, 2]", False),
        ("|x| < 2", "(-2, 2)", True),
        ("|x| \\ge 1", "(-\\infty, -1] \\cup [1, \\infty)", True),
        # Named quantities, lists of them, and solution groups split by `;`.
        ("AB=4, CD=5", "4, 5", True),
        ("AB=4, CD=6", "4, 5", False),
        ("x_{1}=2,\\quadx_{2}=3", "2, 3", True),
        ("p=5,q=2;p=7,q=2", "(5,2),(7,2)", True),
        ("p=5,q=2;p=7,q=3", "(5,2),(7,2)", False),
        ("W(x)=1orW(x)=-1", "W(n) = 1 \\text{ and } W(n) = -1", True),
        ("W(x)=1orW(x)=2", "W(n) = 1 \\text{ and } W(n) = -1", False),
        ("(11,7)or(7,11)", "(7,11), (11,7)", True),
        # Thousands groups spelled `{, }`.
        ("$14 {, }916$", "14916", True),
        # Matrix arithmetic on numeric literals.
        (
            "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}"
            " + \\begin{pmatrix}5 & 6 \\\\ 7 & 8\\end{pmatrix}",
            "\\begin{pmatrix}6 & 8 \\\\ 10 & 12\\end{pmatrix}",
            True,
        ),
        (
            "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}"
            " \\begin{pmatrix}0 & 1 \\\\ 1 & 0\\end{pmatrix}",
            "\\begin{pmatrix}2 & 1 \\\\ 4 & 3\\end{pmatrix}",
            True,
        ),
        (
            "\\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}"
            " - \\begin{pmatrix}1 & 2 \\\\ 3 & 4\\end{pmatrix}",
            "\\begin{pmatrix}2 & 4 \\\\ 6 & 8\\end{pmatrix}",
            False,
        ),
    ],
)
def test_any_mode_comparison_rules(prediction, gold, expected) -> None:
    assert is_equivalent(prediction, gold, answer_format="any") is expected
    if expected:
        assert is_equivalent(gold, prediction, answer_format="any") is expected


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("-x > -1", "x < 1"),
        ("2x \\le 6", "x \\le 3"),
        ("|x| < 2", "(-2, 2)"),
        ("1 \\le |z| \\le 2", "[-2, -1] \\cup [1, 2]"),
        ("(0;-2;6)", "(0, -2, 6)"),
        ("x_1 = 1,\\quadx_2 = 2", "1, 2"),
        ("14 {, }916", "14916"),
    ],
)
def test_exact_notation_rules_hold_in_both_modes(prediction, gold) -> None:
    assert is_equivalent(prediction, gold)
    assert is_equivalent(prediction, gold, answer_format="any")


@pytest.mark.parametrize(
    ("response", "expected", "source"),
    [
        ("\\boxed{1}, \\boxed{2}", "1, 2", "boxed"),
        ("\\boxed{1} papers and \\boxed{2} bins", "1, 2", "boxed"),
        ("\\boxed{1} no no no no no \\boxed{2}", "2", "boxed"),
        ("\\boxed{35 cm} ++++ \\boxed{4}", "35 cm, 4", "boxed"),
        ("\\boxed{4}. We check: so \\boxed{4}", "4", "boxed"),
        ("$y_1 = \\boxed{a}$ and $y_2 = \\boxed{b}$", "a, b", "boxed"),
        ("x = \\boxed{3} (first try). Then, after more work, y = \\boxed{5}", "5", "boxed"),
        ("so \\boxed{W(n) = 1 \\text{ or } W(n) = -1", "W(n) = 1 \\text{ or } W(n) = -1", "boxed"),
        ("\\boxed{200} then \\boxed{5}. Final answer: the final answer is $205$.", "205", "phrase"),
        ("Answer $ \n 9 \n $", "Answer", "bare"),
        ("We get $d = 90/n$, so there are 12 sequences.", "12", "number"),
        ("\\boxed{\\boxed{5}}", "5", "boxed"),
        ("The answer is $\\frac12$. Check: $1+1=2$", "\\frac12", "phrase"),
        ("Natalia.\n#### 72", "72", "phrase"),
        ("x^2 + 7x + 10", "x^2 + 7x + 10", "bare"),
        ("so it is 5", "5", "number"),
        ("AZYUK2A", None, None),
        ("Answer \\[ \n 9 \n \\]", "9", "latex"),
        ("<think>9", None, None),
    ],
)
def test_any_mode_extraction_rules(response, expected, source) -> None:
    assert extract_answer_and_source(response, answer_format="any") == (expected, source)


def test_unknown_answer_format_raises() -> None:
    with pytest.raises(ValueError, match="answer_format"):
        score_response("\\boxed{1}", "1", answer_format="lenient")  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=300), st.text(max_size=60))
def test_arbitrary_text_never_raises_in_any_mode(prediction, gold):
    verdict = compare(prediction, gold, timeout=2.0, answer_format="any")
    assert verdict.reason in ("equal", "not_equal", "timeout", "empty")
    assert score_response(prediction, gold, answer_format="any")[0] in (0.0, 1.0)


def test_any_mode_reads_the_end_of_huge_prose() -> None:
    reply = "word 12, " * 100_000 + "so $\\frac{1}{2}$"
    assert score_response(reply, "0.5", answer_format="any") == (1.0, "correct")
    assert score_response("word 12, " * 100_000, "12", timeout=DEFAULT_TIMEOUT)[0] == 0.0


# ---------------------------------------------------------------------------- format rule

FORMAT_CASES = [
    ("Thus \\boxed{7}.", None),
    ("<think>try \\boxed{1}, \\boxed{2}</think> so \\boxed{7}", None),
    ("\\boxed{42} \\times \\boxed{5}", "multiple_boxes"),
    ("\\boxed{3} or maybe \\boxed{4}", "multiple_boxes"),
    ("\\boxed{\\boxed{5}}", "multiple_boxes"),
    ("\\boxed{}", "empty_box"),
    ("\\boxed{   }", "empty_box"),
    ("\\boxed{<answer>}", "placeholder"),
    ("\\boxed{<your answer>}", "placeholder"),
    ("\\boxed{\\text{your answer}}", "placeholder"),
    ("\\boxed{\\langle answer \\rangle}", "placeholder"),
    ("\\boxed{...}", "placeholder"),
    ("\\boxed{?}", "placeholder"),
    ("The final answer is 7", "no_box"),
    ("", "no_box"),
    ("so \\boxed{7", "unclosed_box"),
    ("<think>\\boxed{7}", "unfinished_thinking"),
    ("\\boxed{" + "1" * 5000 + "}", "too_long"),
]


@pytest.mark.parametrize(("response", "issue"), FORMAT_CASES)
def test_format_issue(response, issue) -> None:
    assert format_issue(response) == issue


@pytest.mark.parametrize("content", ["x", "x < 5", "\\text{answer}s", "A", "0", "\\emptyset"])
def test_real_answers_are_not_placeholders(content) -> None:
    assert not is_placeholder(content)


@pytest.mark.parametrize(
    "written", ["10,\\!080", "10\\,080", "10~080", "10\\ 080", "10 080", "10{,}080", "10080"]
)
def test_a_grouped_integer_is_in_final_form_either_side(written: str) -> None:
    """att32b F1/F2: MATH's golds group thousands with `,\\!` and a correct `\\boxed{10080}`
    scored 0 against them; `10\\,080` read as the product 10 * 80 (not final form)."""
    assert score_response(f"\\boxed{{{written}}}", "10080") == (1.0, "correct")
    assert score_response("\\boxed{10080}", written) == (1.0, "correct")
    assert score_response(f"\\boxed{{{written}}}", "800")[0] == 0.0


@pytest.mark.parametrize(
    "answer", ["0.00096 kilometers", "0.00096 kilometres", "0.00096 millilitres", "0.00096 mL"]
)
def test_a_unit_s_full_name_after_the_value_is_read_past(answer):
    """s38 att38g (honest): ToolUse unit answers with a full unit name scored 0 (10/48)."""
    from rllm_envs.math import grade_answer

    assert grade_answer(answer, "0.00096").equal
