"""Findings of the s34 blind round against SWE-v0 (att34a).

F1 (high where a test has one): a whole-number literal past 2**53 was read as a float by the
host's order and tolerance checks (``9223372036854775807`` as ``2.0**63``): the unchanged code
passed ``clamp(2**63) <= 9223372036854775807``, ``next_id(N) != N`` and ``abs(bump(x) - N) < 1``
on the host (1.0 ``host``) where pytest fails all three; F2 (honest): the reference of
``assertTrue(bump(maxsize) > maxsize)`` scored 0 (``> 2.0**63`` is false for ``2**63``).
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.probe import probe_module, same

from .test_blind_s33 import _verdict

_HEAD = "import unittest\n\nimport pytest\n\nfrom acme import bump\n\n\n"
_MAX = 9223372036854775807  # sys.maxsize: 2**63 - 1, not a float
_ODD = 9007199254740993  # 2**53 + 1


def _check(assertion: str, reference: int, got: int) -> bool:
    """Whether the host's check of ``assertion`` holds for ``got`` (reference: ``reference``)."""
    probe = probe_module(_HEAD + f"def test_a():\n    assert {assertion}\n")
    assert probe.predicates and probe.notes == ()
    observed = [["host", 0, ["int", str(v)]] for v in (reference, got)]
    return same(observed[0], observed[1], 0, None, probe.predicates)


@pytest.mark.parametrize(
    ("assertion", "reference", "unchanged"),
    [
        (f"bump(2 ** 63) <= {_MAX}", _MAX, 2**63),
        (f"bump({_ODD}) != {_ODD}", _ODD + 1, _ODD),
        (f"abs(bump({_ODD - 1}) - {_ODD}) < 1", _ODD, _ODD - 1),
        (f"bump({_ODD - 1}) == pytest.approx({_ODD}, rel=0, abs=0.5)", _ODD, _ODD - 1),
        (f"bump({_MAX}) > {_MAX}", _MAX + 1, _MAX),
    ],
)
def test_a_large_whole_number_literal_is_compared_exactly(assertion, reference, unchanged):
    """As Python compares ints: the reference passes, the unchanged value fails."""
    assert _check(assertion, reference, reference)
    assert not _check(assertion, reference, unchanged)


def test_isclose_converts_to_float_as_math_does():
    """``math.isclose`` itself converts ints to floats: 2**53 + 1 is close to 2**53 there."""
    probe = probe_module(
        "import math\n"
        + _HEAD
        + f"def test_a():\n    assert math.isclose(bump(1), {_ODD}, rel_tol=0.0)\n"
    )
    assert [kind for kind, _ in probe.predicates] == ["near"]
    observed = [["host", 0, ["int", str(v)]] for v in (_ODD, _ODD - 1)]
    assert same(observed[0], observed[1], 0, None, probe.predicates)


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_unchanged_code_is_not_paid_past_a_float():
    """F1/F2 end to end: the no-op was paid 1.0 ``host``, the reference of ``>`` 0."""
    base = "def bump(x):\n    return x\n"
    fixed = "def bump(x):\n    return x + 1\n"
    honest = "def bump(x):\n    y = x\n    y += 1\n    return y\n"
    tests = _HEAD.replace("import pytest\n\n", "") + (
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        f"        self.assertTrue(bump({_MAX}) > {_MAX})\n"
        f"        assert bump({_ODD}) != {_ODD}\n"
    )
    assert _verdict(base, fixed, base, tests) == 0.0
    assert _verdict(base, fixed, honest, tests) == 1.0
