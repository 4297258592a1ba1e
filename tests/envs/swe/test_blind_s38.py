"""Findings of the s38 blind round against SWE-v0 (att38a, on 95e9c85), fixed in s38.

Each was a patch that kept the bug and was paid 1.0 ``host`` in the default mode (custom
records through ``judge.verdict``), or an honest fix scored 0.
"""

from __future__ import annotations

import json

import pytest

from rllm_envs.swe import probe
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
        # att38b F3: a wrapper of the test module's own between the test and the call.
        "def test_a():\n    g = lambda: f(-3)\n    pytest.raises(ValueError, g)\n",
        "def test_a():\n    def bad():\n        f(-3)\n    with pytest.raises(ValueError):\n"
        "        bad()\n",
        "import functools\n\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
        "        self.assertRaises(ValueError, functools.partial(f, -3))\n",
        "class TestF:\n    def call_bad(self):\n        f(-3)\n\n    def test_a(self):\n"
        "        with pytest.raises(ValueError):\n            self.call_bad()\n",
        # att38b F1: a repository helper known by an exception class among its arguments.
        "from acme.testing import raises as expect\n\n\ndef test_a():\n"
        "    with expect(ValueError):\n        f(-3)\n",
        "import acme.testing as tm\n\n\ndef test_a():\n    tm.check(ValueError, f, -3)\n",
        # att38b F4: a warning filter imported by name.
        "from warnings import simplefilter\n\n\ndef test_a():\n    simplefilter('error')\n"
        "    assert f(3) == 1\n",
        # att38b F5: a message part checked on the host, readable in the probe.
        # (A constant's name, NEGATIVE_INPUT, is the probe's own since s39: not readable.)
        "def test_a():\n    print('negative inputs')\n    with pytest.raises(ValueError) as e:\n"
        "        f(-3)\n    assert 'negative' in str(e.value)\n",
        # att38d F1: a raises block in a helper of the test module (its frame tells).
        "class T(unittest.TestCase):\n    def _assert_rejected(self, v):\n"
        "        with self.assertRaises(ValueError):\n            f(v)\n\n"
        "    def test_a(self):\n        self._assert_rejected(-3)\n",
        # att38d F2: a method of the module's own class between the test and the call.
        "class Call:\n    def __init__(self, v):\n        self.v = v\n\n    def go(self):\n"
        "        return f(self.v)\n\n\ndef test_a():\n    with pytest.raises(ValueError):\n"
        "        Call(-4).go()\n",
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
        [["code", 2]],  # a SystemExit's code, by type
        None,  # `assert len(rec) >= 1`: what the warns block itself requires
    ]


def test_a_warns_block_assigning_its_call_is_noted():
    """att38a F3: `a = Account(..)` in a warns block was turned into its value and `a` was
    never bound (a patch that only added the warning was paid 5/5); att38b F2: bound with
    `:=`, the block looked like no other check and told the call (5/5). Noted now."""
    probe = probe_module(
        _HEAD37 + "def test_a():\n    with pytest.warns(UserWarning):\n        a = f(-3)\n"
        "    assert a == 1\n"
    )
    assert probe.notes and ":=" not in probe.text


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
    # Withheld (-1: not paid in the default mode) or 0, never paid.
    assert _verdict(_ACCOUNT, _ACCOUNT_FIXED, warn_only, _ACCOUNT_TESTS) <= 0.0
    assert _verdict(_ACCOUNT, _ACCOUNT_FIXED, _ACCOUNT, _ACCOUNT_TESTS) <= 0.0


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


def test_a_message_word_only_in_a_test_name_is_not_readable():
    """att38b F5: the test's and the class's names carried the word (5/5 paid each): a
    probe's test names are opaque now, so the check stays on the host."""
    probe = probe_module(
        _HEAD37 + "class TestNegativeMessage:\n    def test_says_negative(self):\n"
        "        with pytest.raises(ValueError) as e:\n            f(-3)\n"
        "        assert 'negative' in str(e.value)\n"
    )
    assert probe.notes == () and "negative" not in probe.text.casefold()


def test_a_keyword_pattern_of_assert_raises_regex_is_the_host_s():
    """att38b (honest): `assertRaisesRegex(E, expected_regex='neg')` was compared whole."""
    probe = probe_module(
        _HEAD37 + "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        with self.assertRaisesRegex(ValueError, expected_regex='neg'):\n"
        "            f(-3)\n"
    )
    assert probe.notes == () and "neg" not in probe.text.split("\n", 1)[1]
    assert [json.loads(rule)["message"] for kind, rule in probe.blocks if kind == "raises"] == [
        ["search", "neg"]
    ]


def test_a_repository_pytest_config_with_warning_filters_is_noted():
    """att38b F4: `filterwarnings = error` in setup.cfg / pyproject.toml is not applied by the
    runner, and every block passes warnings on: the empty patch was paid 10/10."""
    from rllm_envs.swe import judge

    tests = {"tests/test_m.py": _HEAD37 + "def test_a():\n    assert f(3) == 1\n"}
    assert judge.probe_notes(tests) == ()
    for config in ("setup.cfg", "pyproject.toml", "pytest.ini"):
        files = {**tests, config: "[tool:pytest]\nfilterwarnings =\n    error\n"}
        assert probe.NOTE_WARNING_FILTER in judge.probe_notes(files), config


@pytest.mark.parametrize(
    ("args", "kwargs", "holds"),
    [
        ((), {}, True),
        ((False,), {"reason": "no"}, False),
        ((), {"condition": False, "reason": "no"}, False),
        ((), {"condition": True}, True),
        (("sys.platform == 'no-such-platform'",), {}, False),
        (("sys.version_info >= (3,)",), {}, True),
    ],
)
def test_skipif_and_xfail_conditions_apply_as_pytest_decides(args, kwargs, holds):
    """att38b (honest): `condition=` always skipped, a string condition was true, and every
    `xfail` applied: the reference failed its own test (5/5)."""
    import types

    from rllm_envs.swe.executor import _condition_holds, _Mark

    assert _condition_holds(_Mark("skipif", args, kwargs), types.ModuleType("m")) is holds


def test_a_test_module_s_name_says_nothing_in_the_sandbox():
    """att38d F3: a patch raising only when called from `tests/test_errors.py` (a module of
    raise checks) kept the bug and was paid 6/6. A module no other module names gets a
    keyed name in the sandbox; one that is imported keeps its own."""
    from rllm_envs.swe import judge

    files = {
        "tests/test_errors.py": _HEAD37 + "def test_a():\n    assert f(3) == 1\n",
        "tests/test_helpers.py": "def helper():\n    return 1\n",
        "tests/test_uses.py": "from tests.test_helpers import helper\n",
    }
    probed, _ = judge.probe_files(files)
    renamed = judge.probe_path(files, "tests/test_errors.py")
    assert "errors" not in renamed and renamed in probed and "tests/test_errors.py" not in probed
    assert judge.probe_path(files, "tests/test_helpers.py") == "tests/test_helpers.py"
    node = judge.probe_ids(files, ["tests/test_errors.py::test_a"])[0]
    assert node.startswith(renamed + "::test_")


def test_an_exit_code_check_folds_with_its_type():
    """att38d F4: `e.value.code == 2` was compared as text, and `sys.exit("2")` (the bug
    kept: exit status 1) prints "2" too: 5/5 paid. The code is recorded by type now;
    unittest's `assertEqual(cm.exception.code, 2)` folds alike (it was withheld)."""
    probe = probe_module(
        _HEAD37 + "class T(unittest.TestCase):\n    def test_a(self):\n"
        "        with self.assertRaises(SystemExit) as cm:\n            f(-3)\n"
        "        self.assertEqual(cm.exception.code, 2)\n"
    )
    assert probe.notes == ()
    assert [json.loads(r)["checks"] for k, r in probe.blocks if k == "raises"] == [[["code", 2]]]


_CLI = "import sys\n\n\ndef main(argv):\n    if not argv:\n        return 0\n    return 1\n"
_CLI_FIXED = _CLI.replace("        return 0\n", "        sys.exit(2)\n")
_CLI_TESTS = (
    "import unittest\n\nimport pytest\n\nfrom acme import main\n\n\n"
    "class T(unittest.TestCase):\n    def test_a(self):\n"
    "        with pytest.raises(SystemExit) as e:\n            main([])\n"
    "        assert e.value.code == 2\n"
)


@pytest.mark.slow
@pytest.mark.sandbox
def test_an_exit_with_the_code_as_text_is_not_the_code():
    text_code = _CLI_FIXED.replace("sys.exit(2)", "sys.exit('2')")
    assert _verdict(_CLI, _CLI_FIXED, _CLI_FIXED, _CLI_TESTS) == 1.0
    assert _verdict(_CLI, _CLI_FIXED, text_code, _CLI_TESTS) == 0.0
