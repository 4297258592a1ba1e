"""Findings of the rounds att41o and att42a against SWE-v0: the suite's own functions (and
classes, tables of functions) as oracles."""

from __future__ import annotations

import ast

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import NOTE_SUITE_FUNCTION, suite_functions
from rllm_envs.swe.repo import make_diff
from tests.envs.swe.test_blind_s40 import _GREET, _GREET_FIXED, _greet_verdicts

#: Keeps the bug; calls every function and class a test module holds with its input and
#: returns the first text (or text attribute of what it made) that differs from the bug's
#: (att41o's and att42a's patches).
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
    "            try:\n"
    "                got = f(name)\n"
    "            except Exception:\n"
    "                continue\n"
    "            for v in [got, *getattr(got, '__dict__', {}).values()]:\n"
    "                if isinstance(v, str) and v.startswith('Hello') and v != 'Hello, ' + name:\n"
    "                    return v\n"
    "    return 'Hello, ' + name\n",
)
_HELPER = "def _greeting(name):\n    return 'Hello, ' + name.title()\n"
_TEST = "def test_greet():\n    assert greet('ann lee') == 'Hello, Ann Lee'\n"


_DOUBLE = (
    "class Person:\n    def __init__(self, name):\n"
    "        self.greeting = 'Hello, ' + name.title()\n"
)


@pytest.mark.parametrize("helper", [_HELPER, _DOUBLE], ids=["function", "test_double"])
def test_a_helper_the_hidden_tests_add_withholds_the_verdict(helper):
    """att41o: a reference implementation beside the tests was the patch's answer (10/10);
    att42a F1: a test double computing it in its constructor (5/5)."""
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/__init__.py": ""}
    hidden = f"from pkg.core import greet\n\n\n{helper}\n\n{_TEST}"
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


#: Test module sources holding something a patch could call for the answer (s41 att41o,
#: s42 att42a: each shape paid 5/5 or 10/10 `host` before it was counted).
COUNTED = {
    "helper": "def _oracle(s):\n    return s.title()\n",
    "lambda": "EXPECT = lambda s: s.title()\n",
    "generator": "def cases(words):\n    for w in words:\n        yield w, w.title()\n",
    "static": "class H:\n    @staticmethod\n    def want(s):\n        return s.title()\n",
    "test_class_helper": "class TestA:\n    def _want(self, s):\n        return s.title()\n",
    "eq": "class Hi:\n    def __eq__(self, other):\n        return other == self.name.title()\n",
    "param_fixture": "import pytest\n@pytest.fixture\ndef want(request):\n"
    "    return request.param.title()\n",
    "fixture_lambda": "import pytest\n@pytest.fixture\ndef want():\n"
    "    return lambda s: s.title()\n",
    "fixture_pick": "import pytest\n@pytest.fixture\ndef want():\n    return str.title\n",
    "setup_lambda": "import unittest\nclass T(unittest.TestCase):\n    def setUp(self):\n"
    "        self.want = lambda s: s.title()\n",
    "setup_pick": "import unittest\nclass T(unittest.TestCase):\n"
    "    @classmethod\n    def setUpClass(cls):\n        cls.want = str.title\n",
    "bound": "_oracle = str.title\n",
    "partial": "import functools\nclass T:\n    want = functools.partial(str.replace, '-')\n",
    "alias": "from pkg import greet as _g\n_oracle = _g\n",
    # att42a F1-F6: a test double's constructor, a dataclass's __post_init__, a table of
    # functions, unpacking, a call that makes one, a property's lambda.
    "ctor": "class Person:\n    def __init__(self, name):\n"
    "        self.greeting = 'Hello, ' + name.title()\n",
    "post_init": "from dataclasses import dataclass\n@dataclass\nclass Row:\n    name: str\n\n"
    "    def __post_init__(self):\n        self.want = self.name.title()\n",
    "table": "TRANSFORMS = {'display': str.title, 'raw': str.strip}\n",
    "unpacking": "_display, _raw = str.title, str.strip\n",
    "type_call": "Oracle = type('Oracle', (), {'want': 'x'})\n",
    "eval": "_display = eval('lambda s: s.title()')\n",
    "property": "class P:\n    g = property(lambda self: 'Hello, ' + self.n.title())\n",
    # Other binding forms att42a listed (read, not run).
    "walrus": "(_d := str.title)\n",
    "for": "for _d in [str.title]:\n    pass\n",
    "ternary": "_d = None if False else str.title\n",
    "append": "FNS = []\nFNS.append(str.title)\n",
    "comprehension": "FNS = [getattr(str, n) for n in ['title']]\n",
    "global": "def _setup():\n    global _D\n    _D = str.title\n\n_setup()\n",
    "dict_call": "FNS = dict(t=lambda s: s.title())\n",
    "exec": "exec('def _oracle(s): return s.title()')\n",
    "default": "def _helper(f=lambda s: s.title()):\n    pass\n",
    # att42c: a value leaving a helper by a spy's append, a module table, print, setattr,
    # an augmented item, an attribute of its argument; a fixture asking for a fixture by
    # name; a `test*` method of a class pytest does not collect.
    "spy_append": "class Spy:\n    def __init__(self):\n        self.lines = []\n\n"
    "    def greet(self, name):\n        self.lines.append('Hello, ' + name.title())\n",
    "module_dict": "EXPECTED = {}\n\ndef _remember(name):\n"
    "    EXPECTED[name] = 'Hello, ' + name.title()\n",
    "print_helper": "def _show(name):\n    print('Hello, ' + name.title())\n",
    "setattr_ctor": "class P:\n    def __init__(self, name):\n"
    "        setattr(self, 'greeting', 'Hello, ' + name.title())\n",
    "augmented": "OUT = ['']\n\ndef _acc(s):\n    OUT[0] += s.title()\n",
    "decorator_attr": "def tagged(f):\n    f.want = lambda s: 'Hello, ' + s.title()\n"
    "    return f\n",
    "fixture_request": "import pytest\n@pytest.fixture\ndef want(request):\n"
    "    return 'Hello, ' + request.getfixturevalue('person').title()\n",
    "test_prefixed_method": "class Greetings:\n    def tested(self, s):\n"
    "        return 'Hello, ' + s.title()\n",
    # att42e: a value added to a parameter, handed to a callback, a handler's method, a
    # deque's appendleft, heappush.
    "augassign_param": "def _collect(name, out):\n    out += ['Hello, ' + name.title()]\n",
    "callback": "def _each(name, cb):\n    cb('Hello, ' + name.title())\n",
    "handler_method": "def _tell(name, handler):\n"
    "    handler.on_greeting('Hello, ' + name.title())\n",
    "appendleft": "def _push(name, queue):\n    queue.appendleft('Hello, ' + name.title())\n",
    "heappush": "import heapq\n\ndef _push(name, heap):\n"
    "    heapq.heappush(heap, 'Hello, ' + name.title())\n",
    # att42g: a value leaving by a raise, sys.exit, a closure returned, a class made in a
    # factory, a global container (appendleft, insort, heappush, __iadd__), a loop target,
    # a chained setdefault(...).append.
    "raise": "def _explain(name):\n    raise LookupError('Hello, ' + name.title())\n",
    "sys_exit": "import sys\n\ndef _explain(name):\n    sys.exit('Hello, ' + name.title())\n",
    "closure": "def make_expected(name):\n    def build():\n"
    "        return 'Hello, ' + name.title()\n    return build\n",
    "nested_class": "def make_double():\n    class Double:\n        def greet(self, n):\n"
    "            return n.title()\n    return Double\n",
    "insort_global": "import bisect\n_SEEN = []\n\ndef _record(name):\n"
    "    bisect.insort(_SEEN, name.title())\n",
    "iadd_global": "_SEEN = []\n\ndef _record(name):\n    _SEEN.__iadd__([name.title()])\n",
    "for_attr": "class P:\n    def __init__(self, name):\n"
    "        for self.display in ['Hello, ' + name.title()]:\n            pass\n",
    "chained_append": "class Spy:\n    store = {}\n\n    @classmethod\n    def see(cls, name):\n"
    "        cls.store.setdefault(name, []).append(name.title())\n",
    # att42k: a method of a computed value, a call through a table.
    "boolop_method": "def display(name):\n    return (name or 'anonymous').title()\n",
    "join_literal": "def display(words):\n    return ' '.join(words).title()\n",
    "table_call": "def display(name):\n    return {'display': str.title}['display'](name)\n",
    "setup_local": "import unittest\nclass T(unittest.TestCase):\n    def setUp(self):\n"
    "        x = self.person.title()\n        x = 'Hello, ' + x\n        self.expected = x\n",
    "setup_self": "import unittest\nclass T(unittest.TestCase):\n    def setUp(self):\n"
    "        self.expected = 'Hello, ' + self.person.title()\n",
    "default_pick": "def _helper(f=str.title):\n    pass\n",
}
#: Sources holding nothing a patch could call for a value of the suite's choosing.
NOT_COUNTED = {
    "test_callback": "def test_a():\n    key = lambda s: s.title()\n"
    "    assert sorted(['b'], key=key)\n",
    "test_nested": "class TestA:\n    def test_a(self):\n"
    "        def cb(s):\n            return s\n",
    "setup_teardown": "def setup_module():\n    return 1\n\ndef teardown_module():\n    return 2\n",
    "hook": "def pytest_report_header(config):\n    return 'x'\n",
    "data_holder": "class Box:\n    def __init__(self, v):\n"
    "        self.v = v\n        self.items = []\n",
    "no_value": "def _check(a, b):\n    assert a == b\n\ndef _noop():\n    return None\n",
    "literals": "def input(prompt=''):\n    return 'y'\n\nclass Any:\n    def __eq__(self, o):\n"
    "        return True\n",
    "literal_property": "class Holder:\n    v = property(lambda self: None)\n",
    "module_value": "import textwrap\nfrom pkg import greet\nBOX = greet(1)\n",
    "fixture_assign": "import pytest\n@pytest.fixture\ndef box(tmp_path):\n    p = tmp_path\n",
    "imports": "from string import capwords\nfrom decimal import Decimal\n",
    "marks": "import pytest\npytestmark = pytest.mark.slow\nslow = pytest.mark.slow\n",
    "path": "from pathlib import Path\nHERE = Path(__file__).parent\nDATA = HERE / 'data'\n",
    "identity_fixture": "import pytest\n@pytest.fixture\ndef wrapped(text):\n    return text\n",
    "finalizer": "import pytest\n@pytest.fixture\ndef target(request):\n"
    "    request.addfinalizer(lambda: print(request.node))\n    return request.node.name\n",
    "subclass": "from pkg.models import Model\nclass Fake(Model):\n    pass\n",
    "decorated": "import functools\n@functools.total_ordering\nclass V:\n    pass\n",
    # att42c's honest statements (each withheld the reference 5/5 by the first rules).
    "cleanup": "import shutil, tempfile, unittest\nclass T(unittest.TestCase):\n"
    "    def setUp(self):\n        self.d = tempfile.mkdtemp()\n"
    "        self.addCleanup(shutil.rmtree, self.d)\n",
    "skipif": "import sys, pytest\n"
    "pytestmark = pytest.mark.skipif(sys.platform == 'win32', reason='posix')\n",
    "epoch": "from datetime import datetime, timezone\n"
    "EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)\n",
    "pattern": "import re\nGREETING_RE = re.compile(r'^Hello, ')\n",
    "factory": "def make_person(name='ann', **extra):\n    return {'name': name, **extra}\n",
    "repo_factory": "from pkg.core import Greeter\n\ndef make_greeter(**kw):\n"
    "    return Greeter(**kw)\n",
    "test_data": "from django.test import TestCase\nclass T(TestCase):\n    @classmethod\n"
    "    def setUpTestData(cls):\n        cls.rows = [1, 2]\n",
    "flags": "import sys\nIS_WIN = sys.platform == 'win32'\nPY311 = sys.version_info >= (3, 11)\n",
    "fixture_paths": "import pytest\n@pytest.fixture\ndef target(request, tmp_path):\n"
    "    cfg = tmp_path / 'c.ini'\n    cfg.write_text('x')\n"
    "    return request.getfixturevalue('tmp_path') / 'f.txt'\n",
    "fixture_local": "import pytest\nfrom acme import Cart\n@pytest.fixture\ndef text():\n"
    "    cart = Cart()\n    cart.add('aGVsbG8=')\n    return cart\n",
    # att42e's honest shapes: a factory updating what it packs, a parametrized fixture.
    "factory_update": "def make_user(username='ann', **extra):\n"
    "    data = {'username': username, 'active': True}\n    data.update(extra)\n"
    "    return data\n",
    "param_fixture_plain": "import pytest\n@pytest.fixture(params=['a', 'b'])\n"
    "def name(request):\n    return request.param\n",
    # att42g's honest shapes: a helper calling only the code under test, a spy's chained
    # append of what it is given, a data holder, file plumbing.
    "delegating_helper": "from pkg.core import greet\nclass T:\n    names = ['a']\n\n"
    "    def greet_all(self):\n        return [greet(n) for n in self.names]\n",
    "spy_chained": "class Spy:\n    def __init__(self):\n        self.calls = {}\n\n"
    "    def record(self, k, v):\n        self.calls.setdefault(k, []).append(v)\n",
    "file_helper": "import os\n\ndef _save(folder, name, text):\n"
    "    path = os.path.join(folder, name)\n"
    "    with open(path, 'w') as f:\n        f.write(text)\n",
    "path_helper": "from pathlib import Path\nHERE = Path(__file__).parent\n\n"
    "def fixture_path(name):\n    return HERE / 'fixtures' / name\n",
    "setup_plumbing": "import tempfile, unittest\nfrom pkg.web import Client\n"
    "class T(unittest.TestCase):\n    def setUp(self):\n        self.client = Client(self.app)\n"
    "        self.d = tempfile.mkdtemp()\n        self.page = self.client.get('/')\n",
    # Tests of a statement, an assert, a fixture handing on its parameter (s41's shapes).
    "platform": "import sys\nif sys.platform == 'win32':\n    X = 1\n",
    "module_assert": "import pkg.box\nassert pkg.box.GREETING\n",
    "chained_fixture": "import pytest\n@pytest.fixture\ndef text():\n    return 1\n\n"
    "@pytest.fixture\ndef wrapped(text):\n    return text\n",
}


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_what_a_patch_could_call_is_counted(name):
    assert suite_functions(ast.parse(COUNTED[name]))


@pytest.mark.parametrize("name", sorted(NOT_COUNTED))
def test_what_gives_no_chosen_value_is_not_counted(name):
    assert not suite_functions(ast.parse(NOT_COUNTED[name]))


def test_a_test_given_its_mock_by_a_patch_decorator_runs():
    """s42 att42e: `@mock.patch(...)` hands the test its mock as an argument, which the runner
    took for a fixture: the test errored, on the reference too (real pytest passes it)."""
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/__init__.py": ""}
    hidden = (
        f"from unittest import mock\n\nimport pkg.core\nfrom pkg.core import greet\n\n\n{_TEST}\n\n"
        "@mock.patch('pkg.core.parse_name', return_value='x')\n"
        "def test_mocked(parse, tmp_path):\n"
        "    assert pkg.core.parse_name('a, b') == 'x' and parse.called and tmp_path.is_dir()\n"
    )
    codes = {"reference": _GREET_FIXED, "unchanged": _GREET}
    verdicts = _greet_verdicts(
        base, codes, hidden, "test_greet", ["tests/test_hidden.py::test_mocked"]
    )
    assert {n: (judge.reward_of(v, False), v.verdict_trust) for n, v in verdicts.items()} == {
        "reference": (1.0, "host"),
        "unchanged": (0.0, "host"),
    }
    # Judged, not dropped as a test the reference fails.
    assert verdicts["reference"].reference_failing == () and verdicts["reference"].pass_to_pass == 1
