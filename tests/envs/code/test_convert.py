"""Assert-style tests converted to host-compared functional tests (rllm_envs.code.convert)."""

from __future__ import annotations

import pytest

from rllm_envs.code.convert import (
    convert_asserts,
    pytest_program,
    reference_outputs,
    signature_params,
)
from rllm_envs.code.judge import TestCase, judge


def _pairs(conversion):
    return [(t["input"], t["output"]) for t in conversion.tests]


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("assert f(2) == 4", [("2", "4")]),
        ("assert 4 == f(2)", [("2", "4")]),
        ("assert f([1, 2], 'a') == {'k': [None, True]}", [('[1, 2]\n"a"', '{"k": [null, true]}')]),
        (
            "assert f(1)\nassert not f(2)\nassert f(3) is False",
            [("1", "true"), ("2", "false"), ("3", "false")],
        ),
        ("assert f(1) == (1, 2)", [("1", "[1, 2]")]),  # a tuple result compares as a list
        ("assert True\n'''doc'''\nassert f(0) == 0, 'message'", [("0", "0")]),
    ],
)
def test_literal_asserts_convert_on_the_host(code, expected):
    result = convert_asserts(code, func_name="f")
    assert result.complete and not result.used_reference
    assert _pairs(result) == expected


def test_check_candidate_and_keyword_arguments():
    code = "def check(candidate):\n    assert candidate(b=2, a=1) == 3\n\ncheck(add)\n"
    assert not convert_asserts(code, func_name="add").complete  # no parameter order
    result = convert_asserts(code, func_name="add", params=["a", "b"])
    assert _pairs(result) == [("1\n2", "3")]
    assert signature_params("class Solution:\n    def add(self, a, b):\n        ", "add") == [
        "a",
        "b",
    ]


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("assert abs(f(1) - 0.5) < 1e-6", "compares something other"),
        ("import math\nassert math.isclose(f(1), 0.5)", "compares something other"),
        ("assert sorted(f([2, 1])) == [1, 2]", "compares something other"),
        ("xs = [2, 1]\nf(xs)\nassert xs == [1, 2]", "outside an assert"),
        ("r = f(1)\nassert r == 2", "outside an assert"),
        ("assert f(f(1)) == 1", "argument uses"),
        ("assert f(1) == f(2)", "expected value uses"),
        ("assert f((1, 2)) == 3", "no reference"),  # a tuple argument is not JSON
        ("assert f(1) == {1, 2}", "no reference"),  # nor is a set
        ("assert f(1) == {1: 2}", "no reference"),  # nor a dict with int keys
        (
            "def check(candidate):\n    for x in range(3):\n        assert candidate(x) == x\n",
            "no reference",
        ),
    ],
)
def test_what_stays_an_assert(code, why):
    result = convert_asserts(code, func_name="f")
    assert not result.complete and not result.tests
    assert any(why in line for line in result.unconverted), result.unconverted


def test_reference_computes_values_in_the_sandbox():
    reference = "def f(x):\n    return 2 * x\n"
    code = (
        "def helper(n):\n    return n + n\n\n"
        "def check(candidate):\n"
        "    for x in range(3):\n"
        "        assert candidate(x) == helper(x)\n"
        "    assert candidate(*[5]) == 10\n"
        "\ncheck(f)\n"
    )
    result = convert_asserts(code, func_name="f", reference=reference)
    assert result.complete and result.used_reference
    assert _pairs(result) == [("0", "0"), ("1", "2"), ("2", "4"), ("5", "10")]
    # An assert the reference fails is not trusted: nothing is converted.
    broken = convert_asserts(code + "\n", func_name="f", reference="def f(x):\n    return 1\n")
    assert not broken.complete and any("does not pass" in u for u in broken.unconverted)
    # A bare assert converts only when the reference really returns a bool.
    truthy = convert_asserts(
        "assert f([1])\nassert f([2]) == [2]",
        func_name="f",
        reference="def f(xs):\n    return xs\n",
    )
    assert not truthy.complete and truthy.used_reference


def test_converted_tests_are_judged_on_the_host():
    result = convert_asserts("assert f(3) == 9\nassert f(-2) == 4", func_name="f")
    tests = [TestCase(t["input"], t["output"]) for t in result.tests]
    assert judge(
        "def f(x):\n    return x * x\n", tests, kind="functional", func_name="f"
    ).all_passed
    # Forging an assert from inside the process does not help: there is no assert left.
    forged = (
        "import builtins\nbuiltins.AssertionError = type('N', (Exception,), {})\n"
        "def f(x):\n    return 0\n"
    )
    assert not judge(forged, tests, kind="functional", func_name="f").all_passed


def test_pytest_files():
    test = (
        "from solution import f\nimport pytest\n\n"
        "@pytest.mark.parametrize('x, y', [(1, 2), (2, 4)])\n"
        "def test_double(x, y):\n    assert f(x) == y\n\n"
        "def test_zero():\n    assert f(0) == 0\n"
    )
    result = convert_asserts(test, reference="def f(x):\n    return 2 * x\n")
    assert result.func_name == "f" and result.complete
    assert sorted(_pairs(result)) == [("0", "0"), ("1", "2"), ("2", "4")]
    assert not convert_asserts(
        "def test_x(tmp_path):\n    assert f(1) == 2\n", func_name="f"
    ).complete
    # The in-process fallback: the shim runs parametrized tests, raises and approx.
    program = pytest_program(
        test + "\ndef test_raises():\n    with pytest.raises(ZeroDivisionError):\n        1 / 0\n"
        "\ndef test_approx():\n    assert f(0.1) == pytest.approx(0.2)\n"
    )
    good = judge("def f(x):\n    return 2 * x\n", [TestCase(program)], kind="assert")
    bad = judge("def f(x):\n    return x + 1\n", [TestCase(program)], kind="assert")
    assert good.all_passed and not bad.all_passed


def test_reference_outputs():
    outputs = reference_outputs(
        "def f(a, b):\n    return a + b\n", "f", [[1, 2], [[1], [2]], [1, None]]
    )
    assert outputs[:2] == [("1\n2", 3), ("[1]\n[2]", [1, 2])]
    assert outputs[2] is None  # the reference raised


def test_malformed_tests_never_raise():
    assert not convert_asserts("assert f(1 ==", func_name="f").complete
    assert not convert_asserts("", func_name="f").complete
    assert not convert_asserts("print('no asserts')", func_name="f").complete
