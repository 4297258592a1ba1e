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
