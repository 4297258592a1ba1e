"""Findings of the s32 blind rounds against SWE-v0 (att32d) that are not echoes of literals.

F1: a standard-library value written in a fail-to-pass test (``Decimal("12.34")``,
``date(2020, 1, 2)``) was keyed apart from its text, so another test writing ``"12.34"`` or
``"2020-01-02"`` left it readable (a reading patch paid 1.0 ``host``). F2: the sandbox's strict
``==`` refused comparisons Python makes (``Decimal(43) == 43``, ``frozenset == set``, a dict's
keys or items with a set), so the reference failed its own unchanged test and no submission
could win the task (7 of 10 such shapes).
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.executor import strict_equal
from rllm_envs.swe.probe import NOTE_ECHO, probe_module
from rllm_envs.swe.repo import make_diff

_HEAD = (
    "from datetime import date\nfrom decimal import Decimal\nfrom fractions import Fraction\n"
    "from acme import decode, encode\n\n\n"
)


@pytest.mark.parametrize(
    ("expected", "elsewhere", "echo"),
    [
        ("Decimal('12.34')", "'12.34'", True),  # F1: its text
        ("Decimal('12.34')", "12.34", True),  # its number
        ("date(2020, 1, 2)", "'2020-01-02'", True),  # its ISO text
        ("Fraction(3, 40)", "0.075", True),
        ("Fraction(3, 40)", "'3/40'", True),
        ("date(2021, 5, 6)", "date(2021, 1, 1)", False),  # a shared year is not the date
        ("Decimal('1e-999999')", "0.075", False),  # bounded: no huge conversion
    ],
)
def test_a_written_standard_library_value_is_matched_by_its_text_and_number(
    expected, elsewhere, echo
):
    source = _HEAD + (
        f"def test_a():\n    assert decode('x') == {expected}\n\n\n"
        f"def test_b():\n    assert encode({elsewhere}) == 'y'\n"
    )
    assert (NOTE_ECHO in probe_module(source).notes) is echo


def test_strict_equality_agrees_with_python_on_standard_types():
    """F2: what Python's ``==`` says for exact standard-library numbers, sets and dict views;
    a subclass (which may answer anything) and other kinds still compare strictly."""
    for a, b in [
        (Decimal(43), 43),
        (Fraction(3, 2), 1.5),
        (Fraction(4, 2), 2),
        (Decimal("3.5"), 3.5),
        ({"a": 1, "b": 2}.keys(), {"a", "b"}),
        (frozenset({"a", "b"}), {"a", "b"}),
        ({"a": 1}.items(), {("a", 1)}),
    ]:
        assert strict_equal(a, b) and strict_equal(b, a), (a, b)

    class Liar(Decimal):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = Decimal.__hash__

    for a, b in [
        (Decimal(43), "43"),
        (Liar(1), 43),
        ({"a": [1]}.items(), {("a", 1)}),
        ([1], (1,)),
        ({"a": 1}.keys(), ["a"]),
    ]:
        assert not strict_equal(a, b), (a, b)


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_reference_passes_its_own_tests_of_standard_types():
    """F2 end to end: the reference's unchanged tests pass (it was listed failing, 7 of 10)."""
    fixed = (
        "from decimal import Decimal\nfrom fractions import Fraction\n\n\n"
        "def dec():\n    return Decimal(43)\n\n\ndef frac():\n    return Fraction(3, 2)\n\n\n"
        "def keys():\n    return {'a': 1, 'b': 2}.keys()\n\n\n"
        "def fset():\n    return frozenset({'a', 'b'})\n"
    )
    buggy = fixed.replace("Decimal(43)", "Decimal(42)").replace("frozenset({'a', 'b'})", "{'a'}")
    tests = (
        "from acme.m import dec, frac, fset, keys\n\n\n"
        "def test_dec():\n    assert dec() == 43\n\n\n"
        "def test_frac():\n    assert frac() == 1.5\n\n\n"
        "def test_keys():\n    assert keys() == {'a', 'b'}\n\n\n"
        "def test_fset():\n    assert fset() == {'a', 'b'}\n"
    )
    path = "tests/test_m.py"
    base = {"acme/__init__.py": "", "acme/m.py": buggy}
    reference = make_diff(base, {**base, "acme/m.py": fixed})
    verdict = judge.verdict(
        base,
        reference,
        test_patch=make_diff(base, {**base, path: tests}),
        fail_to_pass=[f"{path}::test_dec", f"{path}::test_fset"],
        pass_to_pass=[f"{path}::test_frac", f"{path}::test_keys"],
        reference_patch=reference,
        warm=False,
    )
    assert verdict.reference_failing == ()
    assert verdict.verdict_trust == "host" and judge.reward_of(verdict, False) == 1.0


_SETUP = (
    "import unittest\nfrom acme import title_case\n\n\nclass T(unittest.TestCase):\n"
    "    def setUp(self):\n        self.text = 'hello world'\n"
    "        self.expected = 'Hello World'\n\n"
    "    def test_title(self):\n        self.assertEqual(title_case(self.text), self.expected)\n"
)


@pytest.mark.parametrize(
    ("source", "moved"),
    [
        (_SETUP, True),  # att32c: withheld as two computed values, now a moved table
        (_SETUP.replace("def setUp(self)", "def setup_method(self)"), True),
        # written again elsewhere: not a table, both sides observed (host_partial)
        (_SETUP + "\n    def test_other(self):\n        self.expected = 'x'\n", False),
        # read as an input too: its values stay (host_partial)
        (
            _SETUP + "\n    def test_in(self):\n        assert title_case(self.expected) == 'y'\n",
            False,
        ),
    ],
)
def test_an_expected_value_bound_in_setup_is_moved_like_a_class_attribute(source, moved):
    probe = probe_module(source)
    assert (probe.notes == ()) is moved, probe.notes
    assert ("'Hello World'" in probe.text) is not moved


def test_a_deeply_nested_test_module_is_incomplete_not_an_error():
    """att32f F2: ``2+2+...`` of 1,000 terms raised RecursionError out of ``reset``."""
    from rllm_envs.swe.probe import NOTE_DEEP

    deep = "+".join(["2"] * 1000)
    source = f"from acme import f\n\n\ndef test_a():\n    assert f(1000) == {deep}\n"
    assert probe_module(source).notes == (NOTE_DEEP,)


@pytest.mark.timeout(120)  # a hang guard, not a speed goal: linear work is well under a second
def test_a_large_parametrize_table_is_analysed_in_linear_work():
    """att32f F1: each moved element looked for its row by walking the whole table (5,000 rows:
    16.4 s of host CPU at reset); its parents are now mapped once."""
    rows = ", ".join(f"({i}, 'out{i}')" for i in range(20_000))
    source = (
        "import pytest\nfrom acme import f\n\n\n"
        f"@pytest.mark.parametrize('x, want', [{rows}])\ndef test_a(x, want):\n"
        "    assert f(x) == want\n"
    )
    probe = probe_module(source)
    assert probe.notes == () and "'out19999'" not in probe.text
