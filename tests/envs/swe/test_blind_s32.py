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


def test_an_expected_date_is_matched_by_a_datetime_on_that_day():
    """att32i F1: `date(2020, 2, 1)` expected while another test gives the code under test
    `datetime(2020, 2, 1, 9, 30)`: a patch reading the module's dates paid 1.0 `host`."""
    source = _HEAD.replace("from datetime import date", "from datetime import date, datetime") + (
        "def test_next():\n    assert decode(date(2020, 1, 31)) == date(2020, 2, 1)\n\n\n"
        "def test_prev():\n    assert encode(datetime(2020, 2, 1, 9, 30)) == 'x'\n"
    )
    assert NOTE_ECHO in probe_module(source).notes


def test_the_length_of_a_moved_text_is_not_taken_for_its_shape():
    """att32i F2: `len(self.expected)` of a moved text read its int placeholder: the reference's
    probe raised there and nothing after was compared (pay mode paid the no-op 1.0)."""
    source = _SETUP.replace(
        "        self.assertEqual(title_case(self.text), self.expected)\n",
        "        self.assertEqual(len(title_case(self.text)), len(self.expected))\n"
        "        self.assertEqual(title_case(self.text), self.expected)\n",
    )
    probe = probe_module(source)
    assert probe.notes and "'Hello World'" in probe.text  # read as a length: it stays, noted
    rows = "CASES = [('a b', 'A B'), ('c', 'C')]\n\n\n"
    rows += "def test_rows():\n    assert len(CASES) == 2\n"
    table = (
        "from acme import title_case\n\n\n"
        + rows
        + ("    for text, want in CASES:\n        assert title_case(text) == want\n")
    )
    assert probe_module(table).notes == ()  # a container's length is kept by placeholders


def test_the_host_compares_standard_types_as_python_does():
    """att32i F3: the host compared observations by exact kind, so an honest fix returning a
    frozenset for the reference's set, `Decimal("3.3")` for `Decimal("3.30")`, `Fraction(1, 2)`
    for 0.5 or an OrderedDict for the plain dict scored 0 with
    trust `host` (10 of 10) where pytest passes it. Read from what the runner observed (the
    exact type, a subclass's stored value), never from a method of the value."""
    from collections import OrderedDict, namedtuple

    from rllm_envs.swe.executor import observed
    from rllm_envs.swe.probe import same

    point = namedtuple("point", "a b")
    for reference, honest in [
        ({1, 2}, frozenset({1, 2})),
        (Decimal("3.30"), Decimal("3.3")),
        (0.5, Decimal("0.5")),
        (0.5, Fraction(1, 2)),
        (Fraction(1, 2), Fraction(2, 4)),
        ({"a": 1}, OrderedDict(a=1)),
        # A tuple subclass keeping tuple's methods compares as its tuple (s40 att40c).
        ((1, 2), point(1, 2)),
    ]:
        assert reference == honest
        assert same(observed(reference), observed(honest)), (reference, honest)
        assert same(observed(honest), observed(reference)), (honest, reference)
    for reference, other in [
        (0.1, Decimal("0.1")),  # Python says unequal too: 0.1 is not exactly 1/10
        ({1, 2}, frozenset({1, 3})),
        (2, Decimal("2.5")),
        ([1], (1,)),
        ("1", 1),
        (Decimal("3.30"), Decimal("3.31")),
    ]:
        assert not same(observed(reference), observed(other)), (reference, other)


def test_an_oversized_decimal_costs_the_host_nothing():
    """att32k F2: a Decimal repr of 100,000 characters took 0.4-0.7 s per comparison (as many
    as a passing test wrapped); it is bounded as an int's or a float's text, and unequal."""
    from rllm_envs.swe.probe import same

    huge = ["object", "decimal.Decimal", ["str", "Decimal('20." + "0" * 99_950 + "')"]]
    assert not same(["int", "20"], huge) and not same(huge, ["int", "20"])
