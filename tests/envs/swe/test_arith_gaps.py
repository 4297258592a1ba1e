"""Arithmetic with a literal inside an observed value, and tolerances (issue #30, session 10).

``assert abs(mean(xs) - 2.5) < 1e-9`` used to observe ``abs(mean(xs) - 2.5)``: computed in
the sandbox by the ``__sub__`` / ``__abs__`` of whatever ``mean`` returned, which was handed
the literal (F-A), and the literal stayed in the test function's constants (F-D). The probe
now observes ``mean(xs)`` itself, with the test's tolerance applied on the host, and leaves
the literal out. The same change stops two false negatives: an honest fix within the test's
tolerance scored 0 (the difference was compared exactly), and a tolerance given by name
(``TOL = 1e-3``) was not read at all.
"""

from __future__ import annotations

import ast
import re

import pytest

from rllm_envs.swe import probe
from rllm_envs.swe.probe import probe_report
from rllm_envs.swe.repo import make_diff

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

#: A number-like object that says yes to everything a check could ask of it.
LIAR = """
class _Liar:
    def __sub__(self, other):
        return 0.0
    __rsub__ = __add__ = __radd__ = __mul__ = __sub__
    def __truediv__(self, other):
        return 1.0
    __rtruediv__ = __truediv__
    def __abs__(self):
        return 0.0
    def __round__(self, n=None):
        return 0.0
    def __float__(self):
        return 0.0
    def __eq__(self, other):
        return True
    __lt__ = __le__ = __gt__ = __ge__ = __eq__
    def __ne__(self, other):
        return False
    def __hash__(self):
        return 0

def mean(xs):
    # Honest where the public test looks (one number), lying everywhere else.
    return sum(xs) // len(xs) if len(xs) == 1 else _Liar()
"""

CHECKS = [
    "abs(mean([2, 3]) - 2.5) < 1e-9",
    "abs(2.5 - mean([2, 3])) <= 1e-9",
    "1e-9 > abs(mean([2, 3]) - 2.5)",
    "round(mean([2, 3]) - 2.5, 6) == 0",
    "mean([2, 3]) - 2.5 == 0",
    "abs(mean([2, 3]) / 2.5 - 1) < 1e-9",
    "math.isclose(mean([2, 3]) - 2.5, 0, abs_tol=1e-9)",
    "isinstance(mean([2, 3]) - 2.5, float) and -1e-9 < mean([2, 3]) - 2.5 < 1e-9",
    "max(mean([2, 3]) - 2.5, 0) == 0 and str(mean([2, 3]) - 2.5) == '0.0'",
]


def _mean(check: str) -> dict:
    return _task(
        "stats",
        "mean",
        "def mean(xs):\n    return sum(xs) // len(xs)\n",
        "def mean(xs):\n    return sum(xs) / len(xs)\n",
        "from stats.mean import mean\n\ndef test_one():\n    assert mean([2]) == 2\n",
        f"\nimport math\n\ndef test_half():\n    assert {check}\n",
    )


def _liar(task: dict, path: str = "stats/mean.py", content: str = LIAR) -> str:
    base = task["files"]
    return _call("apply_patch", patch=make_diff(base, {**base, path: content}))


@pytest.mark.parametrize("check", CHECKS)
def test_a_lying_number_earns_nothing_and_the_fix_earns_1(check):
    task = _mean(check)
    reward, info = _run(task, _liar(task))
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info


def _constants(text: str) -> set:
    found: set = set()
    stack = [compile(text, "probe", "exec")]
    while stack:
        code = stack.pop()
        for constant in code.co_consts:
            if hasattr(constant, "co_consts"):
                stack.append(constant)
            else:
                found.add(constant)
    return found


@pytest.mark.parametrize("check", CHECKS)
def test_the_literal_is_not_in_the_probe_nor_its_constants(check):
    source = f"import math\nfrom m import mean\n\ndef test_half():\n    assert {check}\n"
    text, notes = probe_report(source)
    assert not notes, notes
    assert "2.5" not in text and 2.5 not in _constants(text)
    observed = [line.strip() for line in text.splitlines() if "__rllm_observe__(" in line]
    assert observed and all(o.startswith("__rllm_observe__(mean([2, 3])") for o in observed)


def test_the_tolerance_is_applied_on_the_host():
    # Around the test's literal with its tolerance (s11 T1: not around the reference's value).
    found = probe.probe_module("def test_a():\n    assert abs(mean([2, 3]) - 2.5) < 1e-9\n")
    assert "__rllm_observe__(mean([2, 3]), op='operated', host=0)" in found.text
    assert found.predicates == (("near", '[2.5, 0.0, 1e-09, "lt"]'),)
    text, notes = probe_report("def test_a():\n    assert abs(got() - want()) <= 0.01\n")
    assert "__rllm_observe__(got(), op='operated', approx=(0.0, 0.01))" in text
    assert "__rllm_observe__(want(), op='operated', approx=(0.0, 0.01))" in text
    assert probe.NOTE_TWO_SIDES in notes


@pytest.mark.parametrize(
    "check",
    [
        "[mean(xs) - 2.5] == [0]",
        "(mean(xs) - 2.5).real < 1e-9",
        "min(g(), mean(xs) - 2.5) == 0",
    ],
)
def test_arithmetic_with_a_literal_deeper_in_an_observed_value_is_noted(check):
    notes = probe_report(f"def test_a():\n    assert {check}\n")[1]
    assert notes, check


@pytest.mark.parametrize(
    "check, observed",
    [
        ("f(n - 1) == 3", "f(n - 1)"),
        ("xs[len(xs) - 1] == 2", "xs[len(xs) - 1]"),
        ("len(xs) + 1 == 4", "len(xs)"),
        ("abs(f(x)) == 3", "abs(f(x))"),
        ("(tmp_path / 'a.txt').read_text() == 'y'", "(tmp_path / 'a.txt').read_text()"),
        ("('%d' % n).strip() == '3'", "('%d' % n).strip()"),
    ],
)
def test_inputs_of_the_code_under_test_are_not_arithmetic_checks(check, observed):
    text, notes = probe_report(f"def test_a():\n    assert {check}\n")
    # ``op``: an operator acts on the value (decided where a repository class is involved).
    assert not notes and f"__rllm_observe__({observed}" in re.sub(r", op='\w+'", "", text)


# ------------------------------------------------------------ honest fixes within tolerance

AVERAGE = _task(
    "stats",
    "mean",
    "def mean(xs):\n    return sum(xs) // len(xs)\n",
    "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "from stats.mean import mean\n\ndef test_one():\n    assert mean([2]) == 2\n",
    "\n\ndef test_tenths():\n    assert abs(mean([0.1, 0.2, 0.3]) - 0.2) < 1e-9\n",
)
#: The fix written another way: 0.2 where the reference gives 0.20000000000000004.
FSUM = _call(
    "replace", path="stats/mean.py", old="sum(xs) // len(xs)", new="sum(xs) * (1 / len(xs))"
)


def test_an_honest_fix_within_the_tests_tolerance_earns_1():
    # Old code: the difference was observed and compared exactly (0 with trust host).
    reward, info = _run(AVERAGE, FSUM)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    assert _run(AVERAGE)[0] == 0.0
    assert _run(AVERAGE, _liar(AVERAGE))[0] == 0.0


AREA = _task(
    "geo",
    "area",
    "def area(r):\n    return 3 * r * r\n",
    "import math\n\ndef area(r):\n    return math.pi * r * r\n",
    "from geo.area import area\n\ndef test_zero():\n    assert area(0) == 0\n",
    "\nimport math\n\nTOL = 1e-3\nREL = 1e-3\n\n"
    "def test_unit():\n    assert abs(area(1) - 3.14159) < TOL\n\n"
    "def test_two():\n    assert math.isclose(area(2), 12.566, rel_tol=REL)\n",
)
#: Pi to eight places: within every tolerance of the hidden tests, not equal to the reference.
PI8 = _call("replace", path="geo/area.py", old="3 * r * r", new="3.14159265 * r * r")


def test_tolerances_given_by_name_are_read():
    # Old code: TOL was a computed side (host_partial) and REL / self.EPS were not read.
    reward, info = _run(AREA, PI8)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    assert _run(AREA)[0] == 0.0
    liar = LIAR.replace("def mean(xs)", "def area(r)").replace(
        "sum(xs) // len(xs) if len(xs) == 1", "0 if r == 0"
    )
    assert _run(AREA, _liar(AREA, "geo/area.py", liar))[0] == 0.0


def test_a_class_constant_is_a_tolerance_too():
    source = (
        "import pytest\n\nclass TestArea:\n    EPS = 1e-3\n\n    def test_a(self):\n"
        "        assert area(3) == pytest.approx(28.274, abs=self.EPS)\n"
        "        assert abs(area(1) - 3.14159) < TestArea.EPS\n"
    )
    found = probe.probe_module(source)
    # Checked on the host around the test's literals (s11 T1), with the class's tolerance.
    assert not found.notes and found.text.count("host=") == 2, found.text
    assert found.predicates == (
        ("near", '[28.274, 0.0, 0.001, "approx"]'),
        ("near", '[3.14159, 0.0, 0.001, "lt"]'),
    )


def test_a_name_the_test_can_rebind_is_not_a_tolerance():
    source = (
        "TOL = 1e-3\n\ndef test_a():\n    global TOL\n    TOL = 10.0\n"
        "    assert abs(f() - 2.5) < TOL\n"
    )
    text, notes = probe_report(source)
    assert probe.NOTE_TWO_SIDES in notes and "approx" not in text
    tree = ast.parse(text)
    assert not any(isinstance(n, ast.Constant) and n.value == 2.5 for n in ast.walk(tree))
