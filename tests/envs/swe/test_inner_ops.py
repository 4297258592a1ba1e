"""Operations with a literal one level down in an observed value (issue #30, att30 F1 / F1b).

``max(abs(a - b) for a, b in zip(got, [0.25, 0.5])) < 1e-9``, ``f"{got[1] - 0.5:.6f}"`` or
``missing = [w for w in ["a-b"] if w not in got]`` were observed as the value the sandbox
computed, with the literal in the probe and no note: a float subclass whose ``__sub__``
answers ``0.0`` (or a list whose ``__contains__`` says yes) earned 1.0 with trust ``host``.
Every literal (or name bound from one) that meets a computed value in an operation inside an
observed value, or in an assignment, loop or comprehension feeding one, now makes the verdict
``host_partial`` (withheld by default).
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.probe import NOTE_INNER, probe_report
from rllm_envs.swe.repo import make_diff

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

#: Rewritten: each element of ``got`` observed with the tolerance (``sum``: shared), the list
#: and the differences out of the probe (F1 and F2).
DEVIATIONS = [
    "assert max(abs(a - b) for a, b in zip(got, [0.25, 0.5, 0.25])) < 1e-9",
    "assert sum(abs(w - g) for g, w in zip(got, [0.25, 0.5, 0.25])) <= 1e-9",
    "assert 1e-9 > max(abs(a - b) for a, b in zip([0.25, 0.5, 0.25], got))",
    "want = [0.25, 0.5, 0.25]\n    assert max(abs(a - b) for a, b in zip(got, want)) < 1e-9",
    "assert math.isclose(sum(abs(a - b) for a, b in zip(got, [0.25, 0.5, 0.25])), 0, abs_tol=3e-9)",
]
NUMBERS = [
    "want = [0.25, 0.5, 0.25]\n    assert max(abs(a - b) for a in got for b in want) < 1e-9",
    "assert sum(abs(a - b) for a, b in zip(got, [0.25, 0.5, 0.25]) if a) < 1e-9",
    "assert math.isclose(sum(abs(a - b) for a, b in zip(got, [0.25, 0.5, 0.25])), 0)",
    "assert math.isclose(sum(abs(a - b) for a, b in zip(got, [0.25, 0.5])), 1, abs_tol=1e-9)",
    "assert f'{got[1] - 0.5:.6f}' == '0.000000'",
    "assert [round(v - w, 9) for v, w in zip(got, [0.25, 0.5, 0.25])] == [0, 0, 0]",
    "assert abs(sum([got[1], -0.5])) < 1e-9",
    "assert abs(got[1].__sub__(0.5)) < 1e-9",
    "assert {got[1]: 1}.get(0.5) == 1",
    "assert abs(divmod(got[1], 0.5)[1]) < 1e-9",
    "assert list(map(lambda v: v - 0.5, [got[1]])) == [0]",
    "assert sum(v - 0.5 for v in [got[1]]) == 0",
    "assert sum((a - b) ** 2 for a, b in zip(got, [0.25, 0.5, 0.25])) ** 0.5 < 1e-9",
    "assert [a - b for a, b in zip(got, [0.25, 0.5, 0.25])] == pytest.approx([0, 0, 0])",
    "assert max(abs(got[i] - w) for i, w in enumerate([0.25, 0.5, 0.25])) < 1e-9",
    "assert sum(map(abs, (a - b for a, b in zip(got, [0.25, 0.5, 0.25])))) < 1e-9",
    "assert max(map(lambda p: abs(p[0] - p[1]), zip(got, [0.25, 0.5, 0.25]))) < 1e-9",
    "diff = [a - b for a, b in zip(got, [0.25, 0.5, 0.25])]\n    assert not any(diff)",
    "assert abs(np.array(got) - np.array([0.25, 0.5, 0.25])).max() < 1e-9",
    "assert sum(g - Decimal('0.25') for g in got) == 0",
]
TEXTS = [
    "missing = [w for w in ['a-b', 'c-d'] if w not in got]\n    assert not missing",
    "bad = [(g, w) for g, w in zip(got, ['a-b', 'c-d']) if g != w]\n    assert not bad",
    "ok = True\n    for g, w in zip(got, ['a-b', 'c-d']):\n        if g != w:\n"
    "            ok = False\n    assert ok",
    "assert sum(g == w for g, w in zip(got, ['a-b', 'c-d'])) == 2",
    "assert [w for w in ['a-b', 'c-d'] if w not in got] == []",
]
#: Literals that reach the test other ways: a class attribute, a parametrize argument, a
#: fixture returning a literal (whole modules: their tables stay in the probe).
ELSEWHERE = [
    "class TestX:\n    WANT = ['a-b', 'c-d']\n    def test_x(self):\n"
    "        ok = True\n        for g, w in zip(f(1), self.WANT):\n            if g != w:\n"
    "                ok = False\n        assert ok\n",
    "@pytest.mark.parametrize('x,w', [('A B', 'a-b')])\ndef test_x(x, w):\n"
    "    bad = [g for g in f([x]) if g != w]\n    assert not bad\n",
    "@pytest.fixture\ndef want():\n    return ['a-b']\n\ndef test_x(want):\n"
    "    bad = [g for g in f(['A B']) if g not in want]\n    assert not bad\n",
]
HONEST = [
    "assert got == [0.25, 0.5, 0.25]",
    "assert got == pytest.approx([0.25, 0.5, 0.25])",
    "assert {g for g in got} - {0.25, 0.5} == set()",
    "assert len(got) == 3 and got[len(got) - 1] == 0.25",
    "for n in [1, 2, 3]:\n        assert f(n - 1)",
    "assert f(len(got) - 1) == [1.0]",
    "assert (tmp_path / 'a.txt').exists() is False",
]


def _module(check: str) -> str:
    return (
        "import math\nfrom decimal import Decimal\nimport numpy as np\nimport pytest\n"
        "from pkg.m import f\n\n"
        f"def test_x(tmp_path):\n    got = f([1, 2, 1])\n    {check}\n"
    )


@pytest.mark.parametrize("check", NUMBERS + TEXTS)
def test_a_literal_meeting_a_computed_value_inside_an_observation_is_noted(check):
    _, notes = probe_report(_module(check))
    assert NOTE_INNER in notes, check


@pytest.mark.parametrize("module", ELSEWHERE)
def test_a_literal_from_a_class_a_parametrize_or_a_fixture_is_noted(module):
    _, notes = probe_report("import pytest\nfrom pkg.m import f\n\n" + module)
    assert NOTE_INNER in notes, module


def test_a_parametrized_check_decided_on_the_host_stays_complete():
    module = (
        "import pytest\nfrom pkg.m import f\n\n"
        "@pytest.mark.parametrize('x,w', [(1, 0.5)])\ndef test_x(x, w):\n"
        "    assert abs(f(x) - w) < 1e-9\n    assert f(x + 1) == pytest.approx(w + 0.5)\n"
    )
    assert probe_report(module)[1] == ()


@pytest.mark.parametrize("check", DEVIATIONS)
def test_a_deviation_over_a_literal_list_is_observed_per_element(check):
    """Each element against its own literal on the host (att33n: against the reference's)."""
    import json

    from rllm_envs.swe.probe import probe_module

    probe = probe_module(_module(check))
    text, notes = probe.text, probe.notes
    body = text.split(f"def {probe.names['test_x']}")[1]
    assert notes == () and "0.25" not in body and " - " not in body, body
    tolerance = 1e-9 if "max" in check else (3e-9 if "isclose" in check else 1e-9) / 3
    strict = "<" in check or ">" in check.replace(">=", "")
    strict = strict and "<=" not in check and "isclose" not in check
    if check.startswith("want ="):  # a table: its elements moved out, read as the reference's
        assert f"approx=(0.0, {tolerance!r})" in body, body
        return
    rule = [[0.25, 0.5, 0.25], 0.0, tolerance, "lt" if strict else "le"]
    assert ("near", json.dumps(rule)) in probe_module(_module(check)).predicates, check


@pytest.mark.parametrize("check", HONEST)
def test_checks_decided_on_the_host_stay_complete(check):
    assert probe_report(_module(check))[1] == (), check


#: ``normalize`` honest where the public test looks, lying (a float whose ``-`` says 0)
#: everywhere else; and a list whose ``in`` always says yes.
LIAR = """
class _F(float):
    __sub__ = __rsub__ = lambda self, other: 0.0

class _L(list):
    def __contains__(self, item):
        return True

def normalize(xs):
    total = sum(xs)
    out = [x / (total + 1) for x in xs]
    return out if len(xs) == 1 else [_F(v) for v in out]

def slugs(words):
    return _L()
"""
BUGGY = (
    "def normalize(xs):\n    total = sum(xs)\n    return [x / (total + 1) for x in xs]\n\n"
    "def slugs(words):\n    return [w.lower() for w in words]\n"
)
FIXED = (
    "def normalize(xs):\n    total = sum(xs)\n    return [x / total for x in xs]\n\n"
    "def slugs(words):\n    return [w.lower().replace(' ', '-') for w in words]\n"
)


@pytest.mark.parametrize(
    "check",
    [
        "got = normalize([1, 2, 1])\n    "
        "assert max(abs(a - b) for a, b in zip(got, [0.25, 0.5, 0.25])) < 1e-9",
        "got = slugs(['A B', 'C D'])\n    "
        "missing = [w for w in ['a-b', 'c-d'] if w not in got]\n    assert not missing",
    ],
)
def test_a_lying_value_earns_nothing_through_the_env(check):
    task = _task(
        "calc",
        "norm",
        BUGGY,
        FIXED,
        "from calc.norm import normalize\n\ndef test_one():\n    assert normalize([]) == []\n",
        f"\nfrom calc.norm import slugs\n\ndef test_hidden():\n    {check}\n",
    )
    base = task["files"]
    reply = _call("apply_patch", patch=make_diff(base, {**base, "calc/norm.py": LIAR}))
    reward, info = _run(task, reply)
    assert reward == 0.0, info
    # The deviation is rewritten (decided on the host); the membership loop is withheld.
    assert info["fail_to_pass"] == 0.0 or info["verdict_trust"] == "host_partial", info
    reward, info = _run(task, reply, partial_verdicts="pay")
    assert reward == 0.0 or "missing" in check, info


def test_an_honest_fix_within_the_tolerance_of_a_deviation_earns_1():
    """F2: the reference's mean is 0.20000000000000004, the fix's 0.2 (within 1e-9)."""
    task = _task(
        "calc",
        "avg",
        "def mean(r):\n    return sum(r) / (len(r) + 1)\n",
        "def mean(r):\n    return sum(r) / len(r)\n",
        "from calc.avg import mean\n\ndef test_one():\n    assert mean([1]) > 0\n",
        "\n\ndef test_hidden():\n    got = [mean([0.1, 0.2, 0.3])]\n"
        "    assert max(abs(a - b) for a, b in zip(got, [0.2])) < 1e-9\n",
    )
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    base = task["files"]
    honest = "def mean(r):\n    return sum(x / len(r) for x in r)\n"
    reply = _call("apply_patch", patch=make_diff(base, {**base, "calc/avg.py": honest}))
    reward, info = _run(task, reply)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
