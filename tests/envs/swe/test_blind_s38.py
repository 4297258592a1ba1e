"""Findings of the s38 blind round against SWE-v0 (att38a, on 95e9c85), fixed in s38.

Each was a patch that kept the bug and was paid 1.0 ``host`` in the default mode (custom
records through ``judge.verdict``), or an honest fix scored 0.
"""

from __future__ import annotations

import json

import pytest

from rllm_envs.swe.probe import probe_module

from .test_blind_s33 import _verdict
from .test_blind_s37 import _HEAD37


@pytest.mark.parametrize(
    "body",
    [
        # F7: a value check inside a raises block must fail, not hold (the unchanged code was
        # paid, the reference scored 0).
        "def test_a():\n    with pytest.raises(AssertionError):\n        assert f(-3)\n",
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        with self.assertRaises(AssertionError):\n            self.assertTrue(f(-3))\n",
        # F1: a raises helper shipped in the repository, which a patch may edit.
        "from acme._testing import raises, check_raises\n\n\n"
        "def test_a():\n    with raises(ValueError):\n        f(-3)\n",
        "from acme import _testing as tm\n\n\n"
        "def test_a():\n    tm.check_raises(ValueError, f, -3)\n",
        # F4: a pattern given by name: its text stays readable in the probe.
        "MSG = 'negative'\n\n\ndef test_a():\n    with pytest.raises(ValueError, match=MSG):\n"
        "        f(-3)\n",
        "import re\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
        "        with self.assertRaisesRegex(ValueError, re.escape('neg')):\n            f(-3)\n",
        # F5: a lambda with parameters keeps its frame.
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertRaises(ValueError, lambda *a: f(*a), -3)\n",
        "def test_a():\n    pytest.raises(ValueError, lambda a=(-3,): f(*a))\n",
        # F6: a warning filter decides in the sandbox.
        "@pytest.mark.filterwarnings('error')\ndef test_a():\n    assert f(3) == 1\n",
        "import warnings\n\n\ndef test_a():\n    warnings.simplefilter('error')\n"
        "    assert f(3) == 1\n",
        # F2: `as e` read other than by a message check (told apart).
        "def test_a():\n    with pytest.raises(KeyError) as e:\n        f(-3)\n"
        "    assert e.value.args == ('k',)\n",
        # F3 kin: a warns block assigning to two names.
        "def test_a():\n    with pytest.warns(UserWarning):\n        a = b = f(-3)\n"
        "    assert a == 1\n",
    ],
)
def test_raise_checks_the_sandbox_would_decide_or_tell_are_noted(body):
    assert probe_module(_HEAD37 + body).notes, body


def test_message_checks_after_a_reused_name_or_with_a_message_go_with_their_blocks():
    """F2: `as e` bound by two blocks, or an assert with its own message, kept the name in
    the probe (only a raises block binds one): 5/5 paid on each shape."""
    probe = probe_module(
        _HEAD37 + "def test_a():\n    with pytest.raises(ValueError) as e:\n        f(-3)\n"
        "    assert 'neg' in str(e.value), 'says why'\n"
        "    with pytest.raises(ValueError) as e:\n        f(-4)\n"
        "    assert str(e.value) == 'negative'\n    assert e.typename == 'ValueError'\n"
        "    with pytest.raises(SystemExit) as e:\n        f(-5)\n    assert e.value.code == 2\n"
        "    with pytest.warns(UserWarning) as rec:\n        f(-6)\n    assert len(rec) >= 1\n"
    )
    text = probe.text.split("\n", 1)[1]
    assert probe.notes == () and " as " not in text and "neg" not in text
    rules = [json.loads(rule).get("checks") for _, rule in probe.blocks if _ != "value"]
    assert rules == [
        [["in", "neg"]],
        [["eq", "negative"], ["typename", "ValueError"]],
        [["eq", "2"]],  # a SystemExit's message is its code
        None,  # `assert len(rec) >= 1`: what the warns block itself requires
    ]


def test_a_warns_block_assigning_its_call_binds_the_name():
    """F3: `a = Account(..)` in a warns block was turned into its value and `a` was never
    bound: every later check raised NameError alike on both sides, and a patch that only
    added the warning was paid 5/5."""
    probe = probe_module(
        _HEAD37 + "def test_a():\n    with pytest.warns(UserWarning):\n        a = f(-3)\n"
        "    assert a == 1\n"
    )
    assert probe.notes == () and "(a := f(-3))" in probe.text


_ACCOUNT = (
    "import warnings\n\n\nclass Account:\n    def __init__(self, balance, interest=0.0):\n"
    "        self.balance, self.interest = balance, interest\n\n"
    "    def yearly(self):\n        return self.balance\n"
)
_ACCOUNT_FIXED = _ACCOUNT.replace(
    "        self.balance, self.interest = balance, interest\n",
    "        if interest:\n"
    "            warnings.warn('interest= is deprecated', DeprecationWarning)\n"
    "        self.balance, self.interest = balance, interest\n",
).replace("return self.balance", "return self.balance * (1 + self.interest)")
_ACCOUNT_TESTS = (
    "import unittest\n\nimport pytest\n\nfrom acme import Account\n\n\n"
    "class T(unittest.TestCase):\n    def test_a(self):\n"
    "        with pytest.warns(DeprecationWarning):\n"
    "            a = Account(100, interest=0.5)\n        assert a.yearly() == 150.0\n"
)


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_patch_that_only_warns_keeps_the_bug_and_earns_nothing():
    warn_only = _ACCOUNT_FIXED.replace(
        "return self.balance * (1 + self.interest)", "return self.balance"
    )
    assert _verdict(_ACCOUNT, _ACCOUNT_FIXED, _ACCOUNT_FIXED, _ACCOUNT_TESTS) == 1.0
    assert _verdict(_ACCOUNT, _ACCOUNT_FIXED, warn_only, _ACCOUNT_TESTS) == 0.0
    assert _verdict(_ACCOUNT, _ACCOUNT_FIXED, _ACCOUNT, _ACCOUNT_TESTS) == 0.0


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize("mark", ["pytest.mark.slow", "[pytest.mark.slow, pytest.mark.unit]"])
def test_a_module_pytestmark_of_bare_marks_runs(mark):
    """Honest: `pytestmark = pytest.mark.slow` (one mark, or a list of bare marks) broke
    every test of the module in the runner, so the reference scored 0 on 5/5 records."""
    base = "def f(x):\n    return x\n"
    fixed = "def f(x):\n    return abs(x)\n"
    tests = (
        f"import unittest\n\nimport pytest\n\nfrom acme import f\n\npytestmark = {mark}\n\n\n"
        "class T(unittest.TestCase):\n    def test_a(self):\n        assert f(-3) == 3\n"
    )
    assert _verdict(base, fixed, fixed, tests) == 1.0
    assert _verdict(base, fixed, base, tests) == 0.0
