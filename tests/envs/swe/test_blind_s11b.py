"""Findings of the second s11 blind round against SWE-v0 (issue #30): P1c, FS1-FS4, D2."""

from __future__ import annotations

import pytest

from rllm_envs.swe.probe import probe_report

# --------------------------------------------------------------------------------- P1c

#: A computed value and the expected literal meet inside a call outside the repository (a
#: builtin or standard-library container, sort or fold): the call compares them in C, out
#: of the probe's sight, and a cheat (always-equal, hashed like the literal, or
#: always-greater) earned 1.0 with trust ``host``.
MEETINGS = [
    "assert len(set([area(3, 4), 12])) == 1",
    "assert len(set((area(3, 4), 12))) == 1",
    "assert len(frozenset([area(3, 4), 12])) == 1",
    "assert len(set([12, area(3, 4)])) == 1",
    "assert len(dict.fromkeys([area(3, 4), 12])) == 1",
    "assert len(collections.Counter([area(3, 4), 12])) == 1",
    "assert collections.Counter([area(3, 4), 12]).most_common(1)[0][1] == 2",
    "got = [area(3, 4), 12]\n    assert len(set(got)) == 1",
    "assert sorted([area(3, 4), 12])[0] == 12",
    "assert sorted([area(3, 4), 12])[1] == 12",
    "a, b = sorted([area(3, 4), 12], key=lambda v: v)\n    assert a == 12",
    "assert heapq.nsmallest(1, [area(3, 4), 12]) == [12]",
    "assert statistics.mode([area(3, 4), 12, 12]) == 12",
    "assert len(list(itertools.groupby([area(3, 4), 12]))) == 1",
    "assert len(set([area(3, 4)]).union([12])) == 1",
    "assert not set([area(3, 4)]).difference([12])",
    "assert all(map(operator.eq, [area(3, 4), area(2, 5)], [12, 10]))",
    "got = [area(3, 4)]\n    want = [12]\n    assert all(map(operator.eq, got, want))",
    "assert list(map(operator.eq, [area(3, 4)], [12])) == [True]",
    "assert sum(map(operator.eq, [area(3, 4)], [12])) == 1",
    "assert all(map(eq, [area(3, 4)], [12]))",
    "assert functools.reduce(operator.eq, [area(3, 4), 12])",
    "s = set()\n    s.add(area(3, 4))\n    s.add(12)\n    assert len(s) == 1",
    "seen = {12}\n    seen.add(area(3, 4))\n    assert len(seen) == 1",
    "d = {12: 1}\n    d.update({area(3, 4): 2})\n    assert len(d) == 1",
    "got = []\n    got.append(area(3, 4))\n    got.append(12)\n    assert len(set(got)) == 1",
    "assert len(dict([(area(3, 4), 1), (12, 2)])) == 1",
    "assert len(collections.OrderedDict.fromkeys([area(3, 4), 12])) == 1",
]
#: Inputs of the code under test, parameters of non-comparing calls and containers the
#: host compares: they stay complete (no false withholding).
STAY_COMPLETE = [
    "calc = Calc()\n    assert calc.add(2, 3) == 5",
    "calc = Calc(10)\n    calc.push(3)\n    assert calc.total() == 13",
    "c = Calc()\n    c.add(5)\n    c.add(7)\n    assert c.total == 12",
    "assert sorted(area(x, 1) for x in [1, 2]) == [1, 2]",
    "assert list(map(area, [3], [4])) == [12]",
    "assert sorted(tags('x')) == ['a', 'b']",
    "assert set(tags('x')) == {'a', 'b'}",
    "assert list(zip(tags('x'), [1, 2])) == [('a', 1)]",
    "assert collections.Counter(tags('x')) == {'a': 1}",
    "assert sorted(tags('x'), reverse=True) == ['b', 'a']",
    "assert max(tags('x'), key=len) == 'ab'",
    "assert sum(area(i, 1) for i in range(3)) == 6",
    "r = parse('x')\n    assert r.get('a') == 1",
    "assert isinstance(area(1, 2), int)",
    "assert {area(3, 4)} == {12}",
]
_HEADER = (
    "import collections\nimport functools\nimport heapq\nimport itertools\nimport operator\n"
    "import statistics\nfrom operator import eq\n\nfrom geo.shapes import Calc, area, parse, "
    "tags\n"
)


@pytest.mark.parametrize("check", MEETINGS)
def test_a_literal_meeting_a_computed_value_inside_a_builtin_call_is_noted(check):
    _, notes = probe_report(f"{_HEADER}\n\ndef test_area():\n    {check}\n")
    assert notes, check


@pytest.mark.parametrize("check", STAY_COMPLETE)
def test_inputs_and_parameters_of_calls_stay_complete(check):
    assert probe_report(f"{_HEADER}\n\ndef test_area():\n    {check}\n")[1] == (), check


def test_a_table_of_expected_values_met_inside_a_builtin_call_is_noted():
    module = (
        f"{_HEADER}\nimport pytest\n\nCASES = [(3, 4, 12), (2, 5, 10)]\n\n\n"
        "@pytest.mark.parametrize('w,h,want', CASES)\ndef test_area(w, h, want):\n"
        "    assert len(set([area(w, h), want])) == 1\n\n\ndef test_all():\n"
        "    got = [area(w, h) for w, h, _ in CASES]\n    want = [c for *_, c in CASES]\n"
        "    assert all(map(operator.eq, got, want))\n"
    )
    assert probe_report(module)[1]
    for body in module.split("\n\n\n")[1:]:
        assert probe_report(f"{_HEADER}\nimport pytest\n\nCASES = [(3, 4, 12)]\n\n\n{body}")[1]


_ALWAYS_GREATER = (
    "class _Big:\n    def __gt__(self, other):\n        return True\n\n"
    "    def __lt__(self, other):\n        return False\n\n\ndef area(w, h):\n    return _Big()\n"
)


def test_an_always_greater_object_earns_nothing_through_sorted():
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _call, _task

    tests = "from geo.shapes import area\n\n\ndef test_callable():\n    assert callable(area)\n"
    body = "\n\ndef test_area():\n    assert sorted([area(3, 4), 12])[0] == 12\n"
    task = _task(
        "geo",
        "shapes",
        "def area(w, h):\n    return w + h\n",
        "def area(w, h):\n    return w * h\n",
        tests,
        body,
    )
    cheat = _call(
        "replace",
        path="geo/shapes.py",
        old="def area(w, h):\n    return w + h\n",
        new=_ALWAYS_GREATER,
    )
    reward, info = _run(task, cheat, warm=False)
    assert info["patch_applied"] and info["fail_to_pass"] == 1.0, info  # it passes in the sandbox
    assert reward == 0.0 and info["verdict_trust"] != "host", info
    reward, info = _run(task, oracle=True, warm=False, partial_verdicts="pay")
    assert reward == 1.0, info


# ------------------------------------------------------------------------ FS2, FS3, FS4, FS1

_PUBLIC = "from kit.vals import get\n\n\ndef test_callable():\n    assert callable(get)\n"
_BUG = "def get(n):\n    return None\n"

#: The reference returns a subclass of a plain type and the hidden test compares it with a
#: literal (FS2), or uses a pytest / unittest feature the runner lacked (FS3). Real pytest
#: passes each on the reference; the sandbox runner failed the reference's own test, so
#: every submission, the oracle too, scored 0.
REFERENCE_PASSES = {
    "namedtuple": (
        "import collections\nV = collections.namedtuple('V', 'major minor')\n\n\n"
        "def get(n):\n    return V(1, n)\n",
        "def test_h():\n    assert get(2) == (1, 2)\n",
    ),
    "str_enum": (
        "import enum\n\n\nclass C(str, enum.Enum):\n    RED = 'red'\n\n\n"
        "def get(n):\n    return C.RED\n",
        "def test_h():\n    assert get(1) == 'red'\n",
    ),
    "int_enum": (
        "import enum\n\n\nclass L(enum.IntEnum):\n    TWO = 2\n\n\ndef get(n):\n    return L(n)\n",
        "def test_h():\n    assert get(2) == 2\n",
    ),
    "counter": (
        "import collections\n\n\ndef get(n):\n    return collections.Counter('ab' * n)\n",
        "def test_h():\n    assert get(2) == {'a': 2, 'b': 2}\n",
    ),
    "ordered_dict": (
        "import collections\n\n\ndef get(n):\n    return collections.OrderedDict(a=n)\n",
        "def test_h():\n    assert get(2) == {'a': 2}\n",
    ),
    "defaultdict": (
        "import collections\n\n\ndef get(n):\n    d = collections.defaultdict(int)\n"
        "    d['a'] += n\n    return d\n",
        "def test_h():\n    assert get(2) == {'a': 2}\n",
    ),
    "float_subclass_approx": (
        "class M(float):\n    pass\n\n\ndef get(n):\n    return M(0.1 * n)\n",
        "def test_h():\n    assert get(3) == pytest.approx(0.3)\n",
    ),
    "fraction_approx": (
        "import fractions\n\n\ndef get(n):\n    return fractions.Fraction(n, 10)\n",
        "def test_h():\n    assert get(3) == pytest.approx(0.3)\n",
    ),
    "approx_nan_ok": (
        "def get(n):\n    return n * 4\n",
        "def test_h():\n    assert get(3) == pytest.approx(12, nan_ok=True)\n",
    ),
    "exception_info_match": (
        "def get(n):\n    return n + 1\n",
        "def test_h():\n    assert get(1) == 2\n    with pytest.raises(TypeError) as e:\n"
        "        get(None)\n    e.match('unsupported')\n    assert e.typename == 'TypeError'\n",
    ),
    "monkeypatch_chdir": (
        "def get(n):\n    return n + 1\n",
        "import os\n\n\ndef test_h(monkeypatch, tmp_path):\n    monkeypatch.setenv('X_K', '1')\n"
        "    monkeypatch.chdir(tmp_path)\n    assert os.environ['X_K'] == '1'\n"
        "    assert get(1) == 2\n",
    ),
    "monkeypatch_context": (
        "def get(n):\n    return n + 1\n",
        "import os\n\n\ndef test_h():\n    with pytest.MonkeyPatch.context() as mp:\n"
        "        mp.setattr('os.sep', '/')\n        assert get(1) == 2\n",
    ),
    "set_up_class": (
        "def get(n):\n    return n + 1\n",
        "import unittest\n\n\nclass T(unittest.TestCase):\n    @classmethod\n"
        "    def setUpClass(cls):\n        cls.n = 1\n\n    @classmethod\n"
        "    def tearDownClass(cls):\n        del cls.n\n\n    def test_h(self):\n"
        "        self.assertEqual(get(self.n), 2)\n",
    ),
}


def _kit(fixed: str, hidden: str) -> dict:
    from .test_verdict_gaps import _task

    task = _task("kit", "vals", _BUG, fixed, _PUBLIC, "\n\nimport pytest\n\n\n" + hidden)
    if "class T(" in hidden:
        task["FAIL_TO_PASS"] = ["tests/test_vals.py::T::test_h"]
    return task


@pytest.mark.parametrize("case", sorted(REFERENCE_PASSES))
def test_the_reference_passes_its_own_test_as_under_pytest(case):
    from .test_attacks_s8 import _run

    task = _kit(*REFERENCE_PASSES[case])
    reward, info = _run(task, oracle=True, warm=False)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    assert not info.get("reference_failing_tests"), info
    reward, info = _run(task, warm=False)
    assert reward == 0.0, info


def test_a_subclass_that_lies_in_eq_is_compared_by_the_value_it_holds():
    """FS2's compare reads the plain value a subclass stores, not its ``__eq__``."""
    from rllm_envs.swe.executor import plain_copy, strict_equal

    class Liar(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    class Tup(tuple):
        def __iter__(self):  # type: ignore[override]
            return iter((1, 2))

    assert not strict_equal(Liar(0), 12) and strict_equal(Liar(12), 12)
    assert not strict_equal(Tup((5, 6)), (1, 2)) and type(plain_copy(Tup((5, 6)))) is tuple
    assert strict_equal([Liar(3)], [3]) and not strict_equal({"a": Liar(4)}, {"a": 3})


#: A fix that pytest accepts but an exact comparison with the reference's value did not:
#: ``isinstance`` with a tuple or a base class (FS4), a float subclass within the test's
#: tolerance (FS1). ``(fixed, honest, hidden)``.
HONEST_FIXES = {
    "isinstance_tuple": (
        "def get(n):\n    return n // 2\n",
        "def get(n):\n    return n / 2\n",
        "def test_h():\n    assert isinstance(get(4), (int, float))\n    assert get(4) == 2\n",
    ),
    "isinstance_base": (
        "def get(n):\n    return {'n': n}\n",
        "import collections\n\n\ndef get(n):\n    return collections.OrderedDict(n=n)\n",
        "def test_h():\n    assert isinstance(get(4), dict)\n    assert get(4)['n'] == 4\n",
    ),
    "float_subclass_isclose": (
        "class M(float):\n    pass\n\n\ndef get(n):\n    t = 0.0\n    for _ in range(n):\n"
        "        t += 0.1\n    return M(t)\n",
        "import math\n\n\nclass M(float):\n    pass\n\n\ndef get(n):\n"
        "    return M(math.fsum([0.1] * n))\n",
        "import math\n\n\ndef test_h():\n    assert math.isclose(get(10), 1.0)\n",
    ),
    "float_subclass_abs": (
        "class M(float):\n    pass\n\n\ndef get(n):\n    t = 0.0\n    for _ in range(n):\n"
        "        t += 0.1\n    return M(t)\n",
        "import math\n\n\nclass M(float):\n    pass\n\n\ndef get(n):\n"
        "    return M(math.fsum([0.1] * n))\n",
        "def test_h():\n    assert abs(get(10) - 1.0) < 1e-9\n",
    ),
}


@pytest.mark.parametrize("case", sorted(HONEST_FIXES))
def test_an_honest_fix_pytest_accepts_earns_1(case):
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _call

    fixed, honest, hidden = HONEST_FIXES[case]
    task = _kit(fixed, hidden)
    reply = _call("replace", path="kit/vals.py", old=_BUG, new=honest)
    reward, info = _run(task, reply, warm=False)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    reward, info = _run(task, warm=False)
    assert reward == 0.0, info


def test_isinstance_is_decided_by_the_real_type_not_by_class():
    """A value whose ``__class__`` claims ``int`` is not an int on the host either."""
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _call

    task = _kit(
        "def get(n):\n    return n\n", "def test_h():\n    assert isinstance(get(4), int)\n"
    )
    fake = "class F:\n    __class__ = int\n\n\ndef get(n):\n    return F()\n"
    reward, info = _run(task, _call("replace", path="kit/vals.py", old=_BUG, new=fake), warm=False)
    assert reward == 0.0, info


# ---------------------------------------------------------------------------------- D2


def test_the_diff_bound_holds_for_the_whole_submit_not_per_file(monkeypatch):
    """D2: 10 files each just under the per-file bound cost 10 times one file's difflib work.

    The comparisons are now counted over the whole diff: past the bound the remaining
    files are written as plain hunks, and the diff still gives back every file.
    """
    from rllm_envs.swe import repo

    ran: list[int] = []
    real = repo.difflib.unified_diff

    def counted(a, b, *args, **kwargs):  # a spy: the real difflib still runs
        ran.append(len(a) * len(b))
        return real(a, b, *args, **kwargs)

    monkeypatch.setattr(repo.difflib, "unified_diff", counted)
    base, new = {}, {}
    for f in range(10):
        lines = [f"v_{f}_{i} = f({i})\n" for i in range(1400)]
        base[f"m{f}.py"] = "".join(lines)
        new[f"m{f}.py"] = "".join(x for line in lines for x in (line, f"# {line}"))
    diff = repo.make_diff(base, new)
    assert sum(ran) <= repo.MAX_DIFF_WORK and len(ran) <= 2, ran
    assert repo.apply_diff(base, diff) == new
