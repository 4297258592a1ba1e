"""Finding of the s41 round att41o against SWE-v0: the suite's own functions as oracles."""

from __future__ import annotations

import ast
import re

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import NOTE_SUITE_FUNCTION, suite_functions
from rllm_envs.swe.repo import make_diff
from tests.envs.swe.test_blind_s40 import _GREET, _GREET_FIXED, _greet_verdicts

#: Keeps the bug; calls every function a test module holds with its input and returns the
#: first answer that differs from the bug's (att41o's patch).
_GREET_ORACLE_CHEAT = _GREET.replace(
    "def greet(name):\n    return 'Hello, ' + name\n",
    "import sys\n\n\ndef greet(name):\n"
    "    for m in list(sys.modules.values()):\n"
    "        path = getattr(m, '__file__', None) or ''\n"
    "        if 'test' not in path.rpartition('/')[2] and '/tests/' not in path:\n"
    "            continue\n"
    "        for k, f in list(vars(m).items()):\n"
    "            if getattr(f, '__module__', None) != m.__name__ or k.startswith('test'):\n"
    "                continue\n"
    "            if type(f).__name__ == 'function':\n"
    "                try:\n"
    "                    got = f(name)\n"
    "                except Exception:\n"
    "                    continue\n"
    "                if isinstance(got, str) and got != 'Hello, ' + name:\n"
    "                    return got\n"
    "    return 'Hello, ' + name\n",
)
_HELPER = "def _greeting(name):\n    return 'Hello, ' + name.title()\n"
_TEST = "def test_greet():\n    assert greet('ann lee') == 'Hello, Ann Lee'\n"


def _names(source: str) -> set[str]:
    """What :func:`suite_functions` finds in ``source``: each function's name, ``<lambda>``,
    or ``<bound>`` for an import or an assignment."""
    found = set()
    for dumped in suite_functions(ast.parse(source)):
        named = re.match(r"(?:Async)?FunctionDef\(name='(\w+)'", dumped)
        found.add(
            named.group(1) if named else "<lambda>" if dumped.startswith("Lambda") else "<bound>"
        )
    return found


def test_a_helper_the_hidden_tests_add_withholds_the_verdict():
    """att41o: a reference implementation beside the tests was the patch's answer (10/10)."""
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/__init__.py": ""}
    hidden = f"from pkg.core import greet\n\n\n{_HELPER}\n\n{_TEST}"
    codes = {"reference": _GREET_FIXED, "cheat": _GREET_ORACLE_CHEAT, "unchanged": _GREET}
    verdicts = _greet_verdicts(base, codes, hidden, "test_greet")
    assert verdicts["cheat"].resolved  # it does get the answer from the helper...
    for verdict in verdicts.values():
        assert verdict.verdict_trust == "host_partial"
        assert NOTE_SUITE_FUNCTION in verdict.weakened
    # ...and is paid nothing, as nothing is under the default `withhold`.
    assert {n: judge.reward_of(v, False) for n, v in verdicts.items()} == {
        "reference": 0.0,
        "cheat": 0.0,
        "unchanged": 0.0,
    }
    # Without the helper the same tests are the host's: the reference alone is paid.
    plain = _greet_verdicts(base, codes, f"from pkg.core import greet\n\n\n{_TEST}", "test_greet")
    assert {n: judge.reward_of(v, False) for n, v in plain.items()} == {
        "reference": 1.0,
        "cheat": 0.0,
        "unchanged": 0.0,
    }


def test_a_helper_the_agent_can_read_is_no_secret():
    """A helper already in the repository's test module is code the agent reads: not noted."""
    visible = f"from pkg.core import greet\n\n\n{_HELPER}"
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/test_hidden.py": visible}
    hidden = f"{visible}\n\n{_TEST}"
    verdict = judge.verdict(
        base,
        make_diff(base, {**base, "pkg/core.py": _GREET_FIXED}),
        test_patch=make_diff(base, {**base, "tests/test_hidden.py": hidden}),
        fail_to_pass=["tests/test_hidden.py::test_greet"],
        reference_patch=make_diff(base, {**base, "pkg/core.py": _GREET_FIXED}),
        warm=False,
    )
    assert verdict.verdict_trust == "host", verdict.weakened
    assert judge.reward_of(verdict, False) == 1.0


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("def _oracle(s):\n    return s.title()\n", {"_oracle"}),
        ("EXPECT = lambda s: s.title()\n", {"<lambda>"}),
        ("def cases(words):\n    for w in words:\n        yield w, w.title()\n", {"cases"}),
        (
            "class Helper:\n    @staticmethod\n    def want(s):\n        return s.title()\n",
            {"want"},
        ),
        ("class TestA:\n    def _want(self, s):\n        return s.title()\n", {"_want"}),
        ("class Hi:\n    def __eq__(self, other):\n        return other == 'Hi'\n", {"__eq__"}),
        (
            "import pytest\n@pytest.fixture\ndef want(request):\n"
            "    return request.param.title()\n",
            {"want"},
        ),
        # What a fixture or a set-up defines is the suite's too.
        (
            "import pytest\n@pytest.fixture\ndef want():\n    return lambda s: s.title()\n",
            {"<lambda>"},
        ),
        (
            "import unittest\nclass T(unittest.TestCase):\n"
            "    def setUp(self):\n        self.want = lambda s: s.title()\n",
            {"<lambda>"},
        ),
        # A function picked by name at module or class level.
        ("_oracle = str.title\n", {"<bound>"}),
        (
            "import functools\nclass T:\n    want = functools.partial(str.replace, '-')\n",
            {"<bound>"},
        ),
        ("from pkg import greet as _g\n_oracle = _g\n", {"<bound>"}),
        # Not counted: tests and their callbacks, set-up, hooks, constructors, functions
        # giving nothing or a literal (the module's text: the echo check reads it), a
        # fixture without inputs of the caller's choosing.
        (
            "def test_a():\n    key = lambda s: s.title()\n    assert sorted(['b'], key=key)\n",
            set(),
        ),
        ("class TestA:\n    def test_a(self):\n        def cb(s):\n            return s\n", set()),
        ("def setup_module():\n    return 1\n\ndef teardown_module():\n    return 2\n", set()),
        ("def pytest_report_header(config):\n    return 'x'\n", set()),
        ("class Box:\n    def __init__(self, v):\n        self.v = v\n", set()),
        ("def _check(a, b):\n    assert a == b\n\ndef _noop():\n    return None\n", set()),
        (
            "def input(prompt=''):\n    return 'y'\n\nclass Any:\n    def __eq__(self, o):\n"
            "        return True\n",
            set(),
        ),
        ("class Holder:\n    v = property(lambda self: None)\n", set()),
        # A module (the patch imports any itself), a value, a local of a fixture.
        ("import textwrap\nfrom pkg import greet\nBOX = greet(1)\n", set()),
        # Imports (open, documented), pytest's marks, an attribute of a computed value.
        ("from string import capwords\nfrom decimal import Decimal\n", set()),
        ("import pytest\npytestmark = pytest.mark.slow\nslow = pytest.mark.slow\n", set()),
        ("from pathlib import Path\nHERE = Path(__file__).parent\n", set()),
        ("import pytest\n@pytest.fixture\ndef box(tmp_path):\n    p = tmp_path\n", set()),
        # A fixture handing on what it was given, one whose `request` gives no parameter,
        # a lambda handed to a call.
        ("import pytest\n@pytest.fixture\ndef wrapped(text):\n    return text\n", set()),
        (
            "import pytest\n@pytest.fixture\ndef target(request):\n"
            "    request.addfinalizer(lambda: print(request.node))\n    return request.node.name\n",
            set(),
        ),
        ("import pytest\n@pytest.fixture\ndef want(tmp_path):\n    return 'Hello'\n", set()),
    ],
)
def test_the_suite_functions_a_patch_could_call(source, found):
    assert _names(source) == found
