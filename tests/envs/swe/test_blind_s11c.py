"""Findings of the third s11 blind round against SWE-v0 (issue #30): M4, M3, M2."""

from __future__ import annotations

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import probe_report
from rllm_envs.swe.repo import make_diff

_TESTS = "from geo.shapes import *\n\n\ndef test_rect():\n    assert area(2, 3) == 6\n"


def _verdict(buggy: str, fixed: str, hidden: str, submitted: str | None) -> judge.Verdict:
    """Judge ``submitted`` (``None``: the reference) on a one-module task, as h.py does."""
    path = "tests/test_shapes.py"
    base = {"geo/__init__.py": "", "geo/shapes.py": buggy, path: _TESTS}
    names = [x.split()[1].split("(")[0] for x in hidden.splitlines() if x.startswith("def test_")]
    after = {**base, path: _TESTS + hidden}
    new = fixed if submitted is None else submitted
    return judge.verdict(
        base,
        make_diff(base, {**base, "geo/shapes.py": new}),
        test_patch=make_diff(base, after),
        fail_to_pass=[f"{path}::{n}" for n in names],
        pass_to_pass=[f"{path}::test_rect"],
        reference_patch=make_diff(base, {**base, "geo/shapes.py": fixed}),
    )


def _reward(verdict: judge.Verdict) -> float:
    return judge.reward_of(verdict, False)


# --------------------------------------------------------------------------------- M4

_SHAPES = (
    "class Shape:\n    pass\n\n\nclass Rect(Shape):\n    pass\n\n\nclass Square(Shape):\n"
    "    pass\n\n\ndef area(w, h):\n    return w * h\n\n\ndef handler(x):\n    return {kind}\n\n\n"
    "def make(kind):\n    return {make}\n"
)
_BUG = _SHAPES.format(kind="None", make="Rect()")
_FIX = _SHAPES.format(kind="len", make="Square() if kind == 'square' else Rect()")
_ISA = "\n\ndef test_square():\n    assert isinstance(make('square'), Square)\n"
_CALLABLE = "\n\ndef test_handler():\n    assert callable(handler('x'))\n"
_ON_TEST_MODULES = (
    "import sys\nfor _n, _m in list(sys.modules.items()):\n"
    "    if _n.startswith('tests') or _n.split('.')[-1].startswith('test_'):\n"
    "        vars(_m)[{name!r}] = {value}\n"
)
#: The code under test rebinds, at import, a builtin an observed expression calls, or puts
#: it in the half-imported test module: ``(hidden test, appended to the bug)``.
REBINDINGS = {
    "builtins_issubclass": (_ISA, "import builtins\nbuiltins.issubclass = lambda a, b: True\n"),
    "builtins_callable": (_CALLABLE, "import builtins\nbuiltins.callable = lambda x: True\n"),
    "builtins_added": (_CALLABLE, "import builtins\nbuiltins.extra_name = 1\n"),
    "module_issubclass": (_ISA, _ON_TEST_MODULES.format(name="issubclass", value="lambda a, b: 1")),
    "module_callable": (_CALLABLE, _ON_TEST_MODULES.format(name="callable", value="lambda x: 1")),
}


@pytest.mark.parametrize("case", sorted(REBINDINGS))
def test_a_builtin_rebound_by_the_code_under_test_is_tampering(case):
    hidden, inject = REBINDINGS[case]
    verdict = _verdict(_BUG, _FIX, hidden, _BUG + "\n\n" + inject)
    assert _reward(verdict) == 0.0 and verdict.tampering, verdict
    oracle = _verdict(_BUG, _FIX, hidden, None)
    assert _reward(oracle) == 1.0 and oracle.verdict_trust == "host", oracle


def test_a_test_that_binds_a_builtin_name_itself_or_monkeypatches_one_is_not_tampering():
    hidden = (
        "\n\nimport builtins\n\n\ndef input(prompt=''):\n    return 'y'\n\n\n"
        "def test_square(monkeypatch):\n    monkeypatch.setattr(builtins, 'open', None)\n"
        "    assert isinstance(make('square'), Square)\n"
    )
    oracle = _verdict(_BUG, _FIX, hidden, None)
    assert _reward(oracle) == 1.0 and not oracle.tampering, oracle
    assert _reward(_verdict(_BUG, _FIX, hidden, _BUG)) == 0.0


# --------------------------------------------------------------------------------- M3

_META = (
    "class _Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n\n"
    "    def __subclasscheck__(cls, sub):\n        return True\n\n\n"
)
#: A repository metaclass that says yes to every ``isinstance`` (the bug kept): ``(hidden
#: test, the cheat)``.
METACLASS_CHEATS = {
    "plain": (_ISA, _META + _BUG.replace("class Shape:", "class Shape(metaclass=_Meta):")),
    "tuple": (
        "\n\ndef test_square():\n    assert isinstance(make('square'), (Square,))\n",
        _META + _BUG.replace("class Shape:", "class Shape(metaclass=_Meta):"),
    ),
    "named_as_stdlib": (
        _ISA,
        _META
        + _BUG.replace(
            "class Square(Shape):\n    pass",
            "class Square(Shape, metaclass=_Meta):\n    __module__ = 'abc'",
        ),
    ),
    "abc_hook": (
        _ISA,
        "import abc\n\n\n"
        + _BUG.replace(
            "class Square(Shape):\n    pass",
            "class Square(Shape, metaclass=abc.ABCMeta):\n    __module__ = 'abc'\n\n"
            "    @classmethod\n    def __subclasshook__(cls, sub):\n        return True",
        ),
    ),
    "own_mro": (
        _ISA,
        "class _M(type):\n    def mro(cls):\n        return [cls, *type.mro(cls)]\n\n\n"
        + _BUG.replace("class Rect(Shape):", "class Rect(Shape, metaclass=_M):"),
    ),
}


@pytest.mark.parametrize("case", sorted(METACLASS_CHEATS))
def test_isinstance_with_a_repository_class_is_not_decided_by_its_metaclass(case):
    hidden, cheat = METACLASS_CHEATS[case]
    verdict = _verdict(_BUG, _FIX, hidden, cheat)
    assert _reward(verdict) == 0.0, verdict
    oracle = _verdict(_BUG, _FIX, hidden, None)
    assert _reward(oracle) == 1.0 and oracle.verdict_trust == "host", oracle


def test_isinstance_with_a_standard_library_class_keeps_its_answer():
    """``isinstance({}, Mapping)`` holds through the ABC's registry, not the MRO."""
    buggy = "def get(n):\n    return [n]\n"
    fixed = "def get(n):\n    return {'n': n}\n"
    hidden = (
        "\n\nimport collections.abc\n\n\ndef test_get():\n"
        "    assert isinstance(get(1), collections.abc.Mapping)\n"
    )
    tests = "from geo.shapes import *\n\n\ndef test_rect():\n    assert get(2)\n"
    global _TESTS
    saved, _TESTS = _TESTS, tests
    try:
        assert _reward(_verdict(buggy, fixed, hidden, None)) == 1.0
        assert _reward(_verdict(buggy, fixed, hidden, buggy)) == 0.0
    finally:
        _TESTS = saved


# --------------------------------------------------------------------------------- M2

#: A method of the value under test is handed the expected value and its answer is the
#: check: the submission's method decides it (an always-yes ``equals`` earned 1.0).
METHOD_CHECKS = [
    "assert area(3, 4).equals(12)",
    "assert area(3, 4).contains(12)",
    "assert area(3, 4).compare(12) == 0",
    "assert area(3, 4).is_close(12.0)",
    "assert area(3, 4).matches('12')",
    "r = area(3, 4)\n    assert r.equals(12)",
    "assert area(3, 4).equals(12) is True",
    "assert not area(3, 4).differs(12)",
    "want = 12\n    assert area(3, 4).equals(want)",
    "assert area(3, 4).equals(other=12)",
    "assert area(3, 4).accepted_by(12)",
    "assert all(area(w, h).equals(a) for w, h, a in [(3, 4, 12)])",
]
_M2_HEADER = "import os\nimport re\n\nfrom geo.shapes import Calc, area, parse, tags\n"


@pytest.mark.parametrize("check", METHOD_CHECKS)
def test_a_method_of_the_value_under_test_given_the_expected_value_is_noted(check):
    _, notes = probe_report(f"{_M2_HEADER}\n\ndef test_area():\n    {check}\n")
    assert notes, check


def test_table_and_unittest_method_checks_are_noted():
    table = (
        "import pytest\n\nfrom geo.shapes import area\n\n\n"
        "@pytest.mark.parametrize('w,h,want', [(3, 4, 12), (2, 5, 10)])\n"
        "def test_area(w, h, want):\n    assert area(w, h).equals(want)\n"
    )
    unit = (
        "import unittest\n\nfrom geo.shapes import area\n\n\nclass T(unittest.TestCase):\n"
        "    def test_area(self):\n        self.assertTrue(area(3, 4).equals(12))\n"
        "        self.assertFalse(area(3, 4).differs(12))\n"
    )
    loop = (
        "from geo.shapes import area\n\nCASES = [(3, 4, 12)]\n\n\ndef test_area():\n"
        "    for w, h, want in CASES:\n        assert area(w, h).equals(want)\n"
    )
    for source in (table, unit, loop):
        assert probe_report(source)[1], source


#: Inputs of methods whose result the host compares, and module functions: no note.
METHOD_INPUTS = [
    "calc = Calc()\n    assert calc.add(2, 3) == 5",
    "calc = Calc(10)\n    calc.push(3)\n    assert calc.total() == 13",
    "r = parse('x')\n    assert r.get('a') == 1",
    "assert parse('x').name == 'x'",
    "assert area(3, 4) == 12",
    "assert os.path.exists(str(area(3, 4)))",
    "assert re.match('1', str(area(3, 4)))",
    "assert str(area(3, 4)).startswith('1')",
    "assert parse('x').is_valid()",
]


@pytest.mark.parametrize("check", METHOD_INPUTS)
def test_inputs_of_methods_and_module_functions_stay_complete(check):
    assert probe_report(f"{_M2_HEADER}\n\ndef test_area():\n    {check}\n")[1] == (), check


def test_an_always_yes_method_earns_nothing():
    num = "class Num:\n    def __init__(self, v):\n        self.v = v\n\n"
    honest = num + "    def equals(self, o):\n        return self.v == o\n"
    liar = num + "    def equals(self, o):\n        return True\n"
    buggy, fixed = honest + "\n\ndef area(w, h):\n    return Num(w + h)\n", None
    fixed = honest + "\n\ndef area(w, h):\n    return Num(w * h)\n"
    cheat = liar + "\n\ndef area(w, h):\n    return Num(w + h)\n"
    hidden = "\n\ndef test_eq():\n    assert area(3, 4).equals(12)\n"
    global _TESTS
    saved, _TESTS = (
        _TESTS,
        "from geo.shapes import *\n\n\ndef test_rect():\n    assert area(1, 1)\n",
    )
    try:
        verdict = _verdict(buggy, fixed, hidden, cheat)
        assert _reward(verdict) == 0.0 and verdict.verdict_trust == "host_partial", verdict
        oracle = _verdict(buggy, fixed, hidden, None)
        assert judge.reward_of(oracle, False, "pay") == 1.0, oracle
    finally:
        _TESTS = saved
