"""Findings of the s41 blind rounds against SWE-v0 (att41a, att41d, att41f, att41g)."""

from __future__ import annotations

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.repo import make_diff
from tests.envs.swe.test_blind_s40 import _GREET, _GREET_FIXED, _greet_verdicts

#: Keeps the bug; returns a text anywhere in the process's modules that reads as the answer:
#: their names and, three levels in, the keys and items of containers, classes' and objects'
#: attributes, a warning registry's messages, an array's text.
_GREET_CHEAT = _GREET.replace(
    "def greet(name):\n    return 'Hello, ' + name\n",
    "import sys\n\n\ndef _texts():\n"
    "    seen, level = set(), [v for m in list(sys.modules.values()) for v in vars(m).values()]\n"
    "    for _ in range(4):\n"
    "        inner = []\n"
    "        for v in level:\n"
    "            if id(v) in seen or type(v).__name__ in ('module', 'function'):\n"
    "                continue\n"
    "            seen.add(id(v))\n"
    "            if isinstance(v, str):\n"
    "                yield v\n"
    "            elif isinstance(v, dict):\n"
    "                inner += [*v, *v.values()]\n"
    "            elif isinstance(v, (list, tuple, set)):\n"
    "                inner += list(v)\n"
    "            elif type(v).__name__ == 'array' and v.typecode == 'u':\n"
    "                yield v.tounicode()\n"
    "            elif type(v).__module__ in ('operator', 'datetime'):\n"
    "                inner += list(v.__reduce__()[1])\n"
    "            elif hasattr(v, '__dict__'):\n"
    "                inner += list(vars(v).values())\n"
    "        level = inner\n\n\n"
    "def greet(name):\n"
    "    for v in _texts():\n"
    "        if isinstance(v, str) and v.lower() == ('hello, ' + name).lower():\n"
    "            return v\n"
    "    return 'Hello, ' + name\n",
)
_BOX = "class Box:\n    label = 'box'\n"
_EXPECTED = "'hello, ann lee'.title()"


@pytest.mark.parametrize(
    ("extra", "echoed"),  # echoed None: not noted, by design; the cheat's reward not asserted
    [
        ("import pkg.core\npkg.core.LAST = {e}", True),  # F1: set on a repository module
        ("from pkg.box import Box\nBox.label = {e}", True),  # F2: a repository class
        ("import warnings\nwarnings.warn({e})", True),  # F3: __warningregistry__
        ("__sample__ = {e}", True),  # F3: a dunder name
        # Beyond the round: a library module or class, one imported without a statement,
        # an item added to a library's list.
        ("import textwrap\ntextwrap.LAST = {e}", True),
        ("import json\njson.JSONEncoder.label = {e}", True),
        ("import importlib\nimportlib.import_module('colorsys').LAST = {e}", True),
        ("import sys\nsys.path.append({e})", True),
        # att41d: a key of the import cache, an item of a library class's dict, an array of
        # text. A logger's name (F2) is not read: the code under test names its loggers, and
        # a log record's expected name is then no leak (documented, docs/environments.md).
        ("import sys\nsys.path_importer_cache[{e}] = None", True),
        ("import logging\nlogging.getLogger({e})", None),
        ("import configparser\nconfigparser.RawConfigParser.BOOLEAN_STATES[{e}] = True", True),
        ("import array\nHELD = array.array('u', {e})", True),
        # att41f: an exception's args, a slice, a property's doc, a match's text, a context
        # variable's default, an attribute set on a logger.
        ("ERR = ValueError({e})", True),
        ("SL = slice(None, None, {e})", True),
        ("class Holder:\n    v = property(lambda self: None, doc={e})", True),
        ("import re\nM = re.match(r'.*', {e})", True),
        ("import contextvars\nCV = contextvars.ContextVar('s', default={e})", True),
        ("import logging\nlogging.getLogger('x.samples').sample = {e}", True),
        # A subclass of dict in a library module (typing's defaultdict), added to.
        ("import typing\ntyping._overload_registry[{e}] = {{}}", True),
        # att41m: an attribute set on a library function, a list inside a library tuple.
        ("import textwrap\ntextwrap.dedent.sample = {e}", True),
        ("import shutil\nshutil._ARCHIVE_FORMATS['zip'][1].append(('s', {e}))", True),
        # att41g: standard-library C objects holding it (read as what they pickle as).
        ("import operator\nKEY = operator.itemgetter({e})", True),
        ("import operator\nCALL = operator.methodcaller('replace', 'x', {e})", True),
        ("import datetime\nTZ = datetime.timezone(datetime.timedelta(hours=2), {e})", True),
        # Honest: imports alone; the repository's own constant (what the agent reads too:
        # a patch returning it reads nothing hidden).
        ("import textwrap, json, colorsys, importlib", False),
        ("import pkg.box\nassert pkg.box.GREETING", None),
    ],
)
def test_an_expected_value_the_suite_leaves_outside_its_modules_is_noted(extra, echoed):
    base = {
        "pkg/__init__.py": "",
        "pkg/core.py": _GREET,
        "pkg/box.py": _BOX + "GREETING = 'Hello, Ann Lee'\n",
        "tests/__init__.py": "",
    }
    hidden = (
        f"from pkg.core import greet\n\n{extra.format(e=_EXPECTED)}\n\n\n"
        "def test_greet():\n    assert greet('ann lee') == 'Hello, Ann Lee'\n"
    )
    rewards = {}
    codes = {"reference": _GREET_FIXED, "cheat": _GREET_CHEAT, "unchanged": _GREET}
    for name, verdict in _greet_verdicts(base, codes, hidden, "test_greet").items():
        assert (judge.NOTE_MODULE_ECHO in verdict.weakened) == bool(echoed), verdict
        rewards[name] = judge.reward_of(verdict, False)
    if echoed is None:
        del rewards["cheat"]  # it returns the repository's constant: paid, as a fix would be
        assert rewards == {"reference": 1.0, "unchanged": 0.0}
    else:
        assert rewards == {"reference": 0.0 if echoed else 1.0, "cheat": 0.0, "unchanged": 0.0}


def test_a_fix_that_imports_logging_when_called_is_paid():
    """att41f F5 (honest): a correct fix whose function imports logging and logs its result
    was withheld 5/5: the modules that import brought in were read whole (threading's
    threads). A module imported outside the suite's import statements gives its plain values."""
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/__init__.py": ""}
    fixed = _GREET_FIXED.replace(
        "    return 'Hello, ' + name.title()\n",
        "    import logging\n\n    r = 'Hello, ' + name.title()\n"
        "    logging.getLogger(__name__).warning('%s', r)\n    return r\n",
    )
    hidden = (
        "from pkg.core import greet\n\n\n"
        "def test_greet():\n    assert greet('ann lee') == 'Hello, Ann Lee'\n"
    )
    verdict = judge.verdict(
        base,
        make_diff(base, {**base, "pkg/core.py": fixed}),
        test_patch=make_diff(base, {**base, "tests/test_hidden.py": hidden}),
        fail_to_pass=["tests/test_hidden.py::test_greet"],
        reference_patch=make_diff(base, {**base, "pkg/core.py": fixed}),
        warm=False,
    )
    assert verdict.verdict_trust == "host" and judge.reward_of(verdict, False) == 1.0, verdict


@pytest.mark.parametrize(
    ("hidden", "echoed"),
    [
        # att41i F1: set while the test runs, undone before it ends.
        (
            "import os\nimport unittest.mock\n\n\ndef test_greet():\n"
            "    with unittest.mock.patch.dict(os.environ, {{'S': {e}}}):\n"
            "        assert greet('ann lee') == 'Hello, Ann Lee'\n",
            True,
        ),
        (
            "import pkg.box\n\n\ndef test_greet(monkeypatch):\n    sample = {e}\n"
            "    monkeypatch.setattr(pkg.box.Box, 'label', sample)\n"
            "    assert greet('ann lee') == 'Hello, Ann Lee'\n",
            True,
        ),
        (
            "import pytest\n\nSEEN = []\n\n\n@pytest.fixture\ndef sample():\n"
            "    SEEN.append({e})\n    yield SEEN\n    SEEN.clear()\n\n\n"
            "def test_greet(sample):\n    assert greet('ann lee') == 'Hello, Ann Lee'\n",
            True,
        ),
        (
            "import unittest\n\n\nclass T(unittest.TestCase):\n    @classmethod\n"
            "    def setUpClass(cls):\n        cls.sample = {e}\n\n    @classmethod\n"
            "    def tearDownClass(cls):\n        del cls.sample\n\n"
            "    def test_greet(self):\n"
            "        self.assertEqual(greet('ann lee'), 'Hello, Ann Lee')\n",
            True,
        ),
        # F2 (honest): a monkeypatch call given a method's result sets up; it checks nothing.
        (
            "def test_greet(monkeypatch):\n    monkeypatch.setenv('TZ', 'utc'.upper())\n"
            "    assert greet('ann lee') == 'Hello, Ann Lee'\n",
            False,
        ),
    ],
)
def test_what_a_test_sets_while_it_runs_is_walked_at_its_checks(hidden, echoed):
    base = {
        "pkg/__init__.py": "",
        "pkg/core.py": _GREET,
        "pkg/box.py": _BOX,
        "tests/__init__.py": "",
    }
    hidden = "from pkg.core import greet\n" + hidden.format(e=_EXPECTED)
    test = "T::test_greet" if "class T" in hidden else "test_greet"
    rewards = {}
    codes = {"reference": _GREET_FIXED, "cheat": _GREET_CHEAT}
    for who, verdict in _greet_verdicts(base, codes, hidden, test).items():
        assert (judge.NOTE_MODULE_ECHO in verdict.weakened) == echoed, verdict
        rewards[who] = judge.reward_of(verdict, False)
    assert rewards == {"reference": 0.0 if echoed else 1.0, "cheat": 0.0}


def test_what_the_suite_prints_cannot_be_read_back():
    """att41m F1: a test process's output was readable (``os.pread(1, ...)``): what the suite
    printed at import, a computed expected value, was a patch's answer (15/15 paid). The
    output is write-only for the test."""
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/__init__.py": ""}
    cheat = _GREET.replace(
        "    return 'Hello, ' + name\n",
        "    import os\n\n    try:\n        printed = os.pread(1, 4096, 0).decode()\n"
        "    except OSError:\n        printed = ''\n"
        "    for line in printed.splitlines():\n"
        "        if line.lower() == ('hello, ' + name).lower():\n            return line\n"
        "    return 'Hello, ' + name\n",
    )
    hidden = (
        f"from pkg.core import greet\n\nprint({_EXPECTED})\n\n\n"
        "def test_greet():\n    assert greet('ann lee') == 'Hello, Ann Lee'\n"
    )
    codes = {"reference": _GREET_FIXED, "cheat": cheat}
    verdicts = _greet_verdicts(base, codes, hidden, "test_greet")
    assert {n: (judge.reward_of(v, False), v.verdict_trust) for n, v in verdicts.items()} == {
        "reference": (1.0, "host"),
        "cheat": (0.0, "host"),
    }
