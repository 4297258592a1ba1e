"""Findings of the s35 blind round against SWE-v0 (att35i).

F1 (medium): a class claiming a standard-library name had to be the object that name names
when the value was observed, looked up in the module as it was then: a patch that set
``decimal.Decimal`` to a class of its own (``__module__ = "decimal"``, a repr of the expected
value, an ``__eq__`` that pytest's ``==`` fails) was paid 1.0 ``host``. The name is now checked
against the module as the runner found it, before repository code ran.
"""

from __future__ import annotations

import pytest

from .test_blind_s33 import _verdict

_TESTS = (
    "import unittest\nfrom decimal import Decimal\n\nfrom acme import to_dec\n\n\n"
    "class T(unittest.TestCase):\n    def test_a(self):\n"
    "        assert to_dec('1.50') == Decimal('1.5')\n"
)
_BASE = "def to_dec(s):\n    return s.rstrip('0')\n"
_FIXED = "from decimal import Decimal\n\n\ndef to_dec(s):\n    return Decimal(s)\n"
_FORGED = (
    "import decimal\n\n\nclass Decimal:\n    __slots__ = ()\n\n"
    "    def __repr__(self):\n        return \"Decimal('1.5')\"\n\n"
    "    def __eq__(self, other):\n        return False\n\n    __hash__ = None\n\n\n"
    "Decimal.__module__ = 'decimal'\nDecimal.__qualname__ = 'Decimal'\n\n\n"
    "def to_dec(s):\n    decimal.Decimal = Decimal\n    return Decimal()\n"
)


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_class_installed_under_a_standard_library_name_is_not_that_class():
    assert _verdict(_BASE, _FIXED, _BASE, _TESTS) == 0.0
    assert _verdict(_BASE, _FIXED, _FORGED, _TESTS) == 0.0
    assert _verdict(_BASE, _FIXED, _FIXED, _TESTS) == 1.0


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_truth_check_takes_any_value_s_own_truth():
    """att35l (honest): `assertTrue(ok('12'))` paid the fix returning `s.isdigit()` but not
    the one returning the `re.Match` (the host reads truth from plain values' states only)."""
    tests = (
        "import unittest\n\nfrom acme import ok\n\n\n"
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertTrue(ok('12'))\n        assert not ok('1x')\n"
    )
    base = "def ok(s):\n    return False\n"
    fixed = "def ok(s):\n    return s.isdigit()\n"
    honest = "import re\n\n\ndef ok(s):\n    return re.fullmatch('[0-9]+', s)\n"
    wrong = "import re\n\n\ndef ok(s):\n    return re.match('[0-9]', s)\n"
    assert _verdict(base, fixed, base, tests) == 0.0
    assert _verdict(base, fixed, honest, tests) == 1.0
    assert _verdict(base, fixed, wrong, tests) == 0.0


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_negated_and_needs_one_part_false_not_each():
    """att35m (honest): `assert not (ok("ab") and ok(""))` was split into "each part is
    false", which the reference's True for `ok("ab")` fails: 0 for everyone, no warning."""
    tests = (
        "import unittest\n\nimport pytest\n\nfrom acme import ok\n\n\n"
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        assert ok('x')\n        assert not (ok('ab') and ok(''))\n"
        "        if ok('cd') and ok(''):\n            pytest.fail('empty')\n"
    )
    base = "def ok(s):\n    return True\n"
    fixed = "def ok(s):\n    return len(s) > 0\n"
    honest = "def ok(s):\n    return s != ''\n"
    assert _verdict(base, fixed, base, tests) == 0.0
    assert _verdict(base, fixed, fixed, tests) == 1.0
    assert _verdict(base, fixed, honest, tests) == 1.0
