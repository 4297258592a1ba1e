"""Findings of rounds att44a and att44c against SWE-v0: a fake the suite hands ``mock.patch``
in a decorator (of a test, a test class or a method) runs at import, so its patcher is in
every test's process; a patch keeping the bug took the answer from it (5/5 paid ``host`` for
each shape) while the rule never read a test's decorators. Then what doubles keep beyond
``new``/``side_effect``/``wraps`` (a patched dict's values, ``patch.multiple``, a ``Mock``'s
configured attributes) and a method read off a value (``'${:,.2f}'.format``). What doubles
and patchers keep is read wherever they are made, names resolved on the host
(:func:`rllm_envs.swe.probe._kept_by_doubles`)."""

from __future__ import annotations

import ast

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.probe import NOTE_SUITE_FUNCTION, suite_functions
from rllm_envs.swe.repo import make_diff
from tests.envs.swe.test_blind_s43 import _verdicts

_FAKE = "lambda d: {k: v for k, v in d.items() if v is not None}"
_SAVE_TEST = (
    "def test_save_uses_clean(fake_clean):\n    store = {}\n    save(store, {'a': 1})\n"
    "    assert store == {'a': 1}\n"
)
_CLEAN_TEST = "def test_clean():\n    assert clean({'a': 1, 'b': None}) == {'a': 1}\n"
_IMPORTS = "from unittest import mock\n\nfrom pkg.core import clean, save\n\n\n"

COUNTED = {
    "patch_side_effect_on_a_test": (
        f'{_IMPORTS}@mock.patch("pkg.core.clean", side_effect={_FAKE})\n{_SAVE_TEST}'
    ),
    "patch_new_on_a_test": f'{_IMPORTS}@mock.patch("pkg.core.clean", {_FAKE})\n{_SAVE_TEST}',
    "patch_object_on_a_test_class": (
        "import unittest\nfrom unittest import mock\n\nfrom pkg import core\n\n\n"
        f'@mock.patch.object(core, "clean", side_effect={_FAKE})\n'
        "class SaveTests(unittest.TestCase):\n    def test_save(self, fake):\n"
        "        core.save({}, {'a': 1})\n"
    ),
    "patch_object_new_on_a_method": (
        "import unittest\nfrom unittest import mock\n\nfrom pkg import core\n\n\n"
        "class SaveTests(unittest.TestCase):\n"
        f'    @mock.patch.object(core, "clean", new={_FAKE})\n'
        "    def test_save(self):\n        core.save({}, {'a': 1})\n"
    ),
    "stdlib_function_as_side_effect": (
        "import textwrap\nfrom unittest import mock\n\n\n"
        '@mock.patch("pkg.core.fill", side_effect=textwrap.fill)\n'
        "def test_report(fake):\n    pass\n"
    ),
    "partial_as_side_effect": (
        "import functools\nimport textwrap\nfrom unittest import mock\n\n\n"
        '@mock.patch("pkg.core.fill", side_effect=functools.partial(textwrap.fill, width=9))\n'
        "def test_report(fake):\n    pass\n"
    ),
    "module_level_mock": ("from unittest import mock\n\nFAKE = mock.Mock(side_effect=str.title)\n"),
    "patcher_started_in_set_up": (
        "import textwrap\nimport unittest\nfrom unittest import mock\n\n\n"
        "class T(unittest.TestCase):\n    def setUp(self):\n"
        '        self.p = mock.patch("pkg.core.fill", side_effect=textwrap.fill)\n'
        "        self.p.start()\n"
    ),
    "library_method_of_a_held_parameter": (
        "class Fmt:\n    def __init__(self, w):\n        self.w = w\n\n"
        "    def show(self, s):\n        return self.w.fill(s)\n"
    ),
}

#: att44c: what doubles keep beyond `new`, `side_effect` and `wraps`, and a method read off a
#: value (each paid `host` 5/5 end to end, or screened).
_H = "import re\nimport string\nfrom unittest import mock\n\nimport pytest\n\n"
_T = "def test_other(m):\n    pass\n"
COUNTED.update(
    {
        "patch_dict_values": (
            f"{_H}@mock.patch.dict('pkg.core.FORMATTERS', {{'display': str.title}})\n{_T}"
        ),
        "patch_multiple": f"{_H}@mock.patch.multiple('pkg.core', _fmt=str.title)\n{_T}",
        "mock_attribute": (
            f"{_H}@pytest.fixture\ndef r():\n    return mock.Mock(render=str.title)\n"
        ),
        "configure_mock": (
            f"{_H}@pytest.fixture\ndef r():\n    m = mock.Mock()\n"
            "    m.configure_mock(**{'render.side_effect': str.title})\n    return m\n"
        ),
        "bound_format": f"{_H}@mock.patch('pkg.core._fmt', side_effect='${{:,.2f}}'.format)\n{_T}",
        "bound_regex": (
            f"{_H}@mock.patch('pkg.core._s', side_effect=re.compile(r'\\W+').split)\n{_T}"
        ),
        "bound_template": (
            f"{_H}@mock.patch('pkg.core._r', side_effect=string.Template('Hi $n').substitute)\n{_T}"
        ),
        "module_bound_method": f"{_H}MONEY = '${{:,.2f}}'.format\n",
        "indexed_side_effect": f"{_H}FAKE = mock.Mock(side_effect=(str.title,)[0])\n",
        "double_subclass": (
            f"{_H}class Fake(mock.Mock):\n    pass\n\nR = Fake(side_effect=str.title)\n"
        ),
        "test_default": f"{_H}def test_d(ref=str.title):\n    pass\n",
        "parametrized_function": (
            f"{_H}@pytest.mark.parametrize('ref', [str.title])\ndef test_d(ref):\n    pass\n"
        ),
        "sqlite_on_a_parameter": (
            "def _slug(db, s):\n"
            "    return db.execute(\"SELECT lower(replace(trim(?), ' ', '-'))\", (s,))\n"
        ),
    }
)

#: att44e: a method read off a named value, marks assigned to `pytestmark`, a thunk returning a
#: function, a spy of another function of the patched name (each paid `host` 5/5).
COUNTED.update(
    {
        "method_of_a_named_value": "PRICE = '${:,.2f}'\nSHOW = PRICE.format\n",
        "named_value_method_as_side_effect": (
            f"{_H}PRICE = '${{:,.2f}}'\nFAKE = mock.Mock(side_effect=PRICE.format)\n"
        ),
        "named_value_method_from_a_fixture": (
            f"{_H}PRICE = '${{:,.2f}}'\n\n@pytest.fixture\ndef fmt():\n    return PRICE.format\n"
        ),
        "named_value_method_in_a_mark": (
            f"{_H}PRICE = '${{:,.2f}}'\n\n@pytest.mark.parametrize('ref', [PRICE.format])\n{_T}"
        ),
        "pytestmark_module": f"{_H}pytestmark = pytest.mark.reference(ref=str.title)\n",
        "pytestmark_class": (
            f"{_H}class TestD:\n    pytestmark = [pytest.mark.reference(ref=str.title)]\n"
        ),
        "thunk_returning_a_function": (
            "from collections import defaultdict\n\nF = defaultdict(lambda: str.title)\n"
        ),
        "spy_of_another_function": f"{_H}@mock.patch('pkg.core.title', wraps=str.title)\n{_T}",
    }
)

#: att44g: a lambda reading a property of its parameter, a class statement's keywords, a
#: lambda's defaults (each paid `host` 5/5), a module alias's function.
COUNTED.update(
    {
        "lambda_property": "STEM = lambda p: p.stem\n",
        "lambda_property_as_side_effect": f"{_H}FAKE = mock.Mock(side_effect=lambda d: d.year)\n",
        "lambda_property_from_a_fixture": (
            f"{_H}@pytest.fixture\ndef key():\n    return lambda p: p.stem\n"
        ),
        "lambda_bound_method": "TITLE = lambda s: s.title\n",
        "class_keywords": (
            "class Case:\n    def __init_subclass__(cls, conv=None, **kw):\n"
            "        super().__init_subclass__(**kw)\n        cls.conv = conv\n\n\n"
            "class TitleCase(Case, conv=str.title):\n    pass\n"
        ),
        "lambda_default": "KEEP = lambda s, conv=str.title: s\n",
        "module_alias": "import string\n\nS = string\nCONV = S.capwords\n",
    }
)

#: att44i: a property read through `self`, a module class built on a library type, a
#: property of a fixture's parameter, a standard function handed on by name, an annotation
#: (each paid `host` 5/5).
COUNTED.update(
    {
        "property_through_self": (
            "class Entry:\n    def __init__(self, path):\n        self.path = path\n\n"
            "    def key(self):\n        return self.path.stem\n"
        ),
        "dataclass_property": (
            "from dataclasses import dataclass\n\n\n@dataclass\nclass Entry:\n"
            "    path: object\n\n    @property\n    def key(self):\n        return self.path.stem\n"
        ),
        "library_built_class": (
            "class Name(str):\n    pass\n\n\ndef expected(s):\n    return Name.title(s)\n"
        ),
        "library_built_class_property": (
            "from pathlib import PurePosixPath\n\n\nclass P(PurePosixPath):\n    pass\n\n\n"
            "def stem_of(p):\n    return P(p).stem\n"
        ),
        "fixture_param_property": (
            "import pytest\n\n\n@pytest.fixture(params=['a.b'])\ndef stem_of(request):\n"
            "    return request.param.stem\n"
        ),
        "standard_function_handed_on": (
            "from string import capwords\n\n\ndef normalise(name, conv=None):\n"
            "    if conv is None:\n        conv = capwords\n    return conv(name)\n"
        ),
        "annotation": "from string import capwords\n\nCONV: capwords\n",
    }
)

#: att44k: a wildcard import of a standard module, `eval`/`exec` of literal code in a helper
#: (each paid `host` 5/5), a module class built on a library type held on `self`.
COUNTED.update(
    {
        "star_import_table": "from string import *\n\nCONVERTERS = {'display': capwords}\n",
        "star_import_fixture": (
            "import pytest\nfrom string import *\n\n\n@pytest.fixture\ndef conv():\n"
            "    return capwords\n"
        ),
        "star_import_operators": "from operator import *\n\nOPS = {'+': add, '-': sub}\n",
        "eval_of_literal_code": "def expected(s):\n    return eval('s.title()')\n",
        "exec_of_literal_code": (
            "def expected(s):\n    exec('r = s.title()')\n    return locals()['r']\n"
        ),
        "library_built_class_held": (
            "import unittest\nfrom textwrap import TextWrapper\n\n\nclass _W(TextWrapper):\n"
            "    pass\n\n\nclass T(unittest.TestCase):\n    def setUp(self):\n"
            "        self.w = _W(width=10)\n\n    def wrapped(self, s):\n"
            "        return self.w.fill(s)\n"
        ),
    }
)

#: att44m F2: a wildcard import of a standard module the host does not read (paid `host` 5/5).
COUNTED["unread_star_import"] = "from posixpath import *\n\nPARTS = {'base': basename}\n"

#: att44m F1: a set-up or input-less fixture running a library method on a value the patch
#: chooses (each paid `host` 5/5).
COUNTED.update(
    {
        "fixture_title_of_a_global": (
            "import pytest\n\nNAME = 'ann lee'\n\n\n@pytest.fixture\ndef title_name():\n"
            "    return NAME.title()\n"
        ),
        "set_up_title_of_a_class_attribute": (
            "import unittest\n\n\nclass T(unittest.TestCase):\n    name = 'ann lee'\n\n"
            "    def setUp(self):\n        self.expected = self.name.title()\n"
        ),
        "set_up_formats_what_it_set": (
            "import unittest\nfrom datetime import date\n\n\nclass T(unittest.TestCase):\n"
            "    def setUp(self):\n        self.when = date(2024, 3, 5)\n"
            "        self.text = self.when.strftime('%d %B %Y')\n"
        ),
        "fixture_formats_a_made_value": (
            "import pytest\nfrom datetime import date\n\n\n@pytest.fixture\ndef label():\n"
            "    return date(2024, 3, 5).strftime('%d %B %Y')\n"
        ),
    }
)

#: What honest suites decorate tests with, and a helper class holding the client it is handed
#: (the Flask tutorial's; withheld before): nothing a patch could call for an answer.
NOT_COUNTED = {
    "patch_plain": f'{_IMPORTS}@mock.patch("pkg.core.requests.get")\n{_SAVE_TEST}',
    "patch_return_value": (
        f'{_IMPORTS}@mock.patch("pkg.core.time.time", return_value=1000)\n{_SAVE_TEST}'
    ),
    "patch_raising": (
        f'{_IMPORTS}@mock.patch("pkg.core.load", side_effect=KeyError)\n{_SAVE_TEST}'
    ),
    "patch_raising_a_library_error": (
        "import requests\n"
        + _IMPORTS
        + '@mock.patch("pkg.core.get", side_effect=requests.exceptions.ConnectionError)\n'
        + _SAVE_TEST
    ),
    "patch_raising_an_instance": (
        f'{_IMPORTS}@mock.patch("pkg.core.load", side_effect=ValueError("bad"))\n{_SAVE_TEST}'
    ),
    "patch_with_a_made_mock": (
        f'{_IMPORTS}@mock.patch("pkg.core.open", mock.mock_open(read_data="x"))\n{_SAVE_TEST}'
    ),
    "spy_on_the_code_under_test": (
        "from unittest import mock\n\nfrom pkg import core\n\n\n"
        '@mock.patch.object(core, "clean", wraps=core.clean)\n'
        "def test_save(spy):\n    core.save({}, {'a': 1})\n"
    ),
    "side_effect_sequence": (
        f'{_IMPORTS}@mock.patch("pkg.core.read", side_effect=["a", "b"])\n{_SAVE_TEST}'
    ),
    "silenced_sleep": (
        f'{_IMPORTS}@mock.patch("pkg.core.sleep", side_effect=lambda s: None)\n{_SAVE_TEST}'
    ),
    "flask_auth_actions": (
        "class AuthActions:\n    def __init__(self, client):\n        self._client = client\n\n"
        '    def login(self, username="test", password="test"):\n'
        '        data = {"username": username, "password": password}\n'
        '        return self._client.post("/auth/login", data=data)\n'
    ),
    "library_exceptions": (
        "import queue\nimport socket\nimport zipfile\nfrom unittest import mock\n\n\n"
        "@mock.patch('pkg.net.urlopen', side_effect=socket.timeout)\n"
        "@mock.patch('pkg.net.get', side_effect=queue.Empty)\n"
        "@mock.patch('pkg.net.load', side_effect=zipfile.BadZipFile)\n"
        "def test_x(a, b, c):\n    pass\n"
    ),
    "library_values": (
        "import os\nimport sys\nfrom unittest import mock\n\n\n"
        "@mock.patch('pkg.net.LIMIT', new=sys.maxsize)\n"
        "@mock.patch.object(sys, 'platform', 'win32')\n"
        "@mock.patch.dict(os.environ, {'HOME': '/tmp'})\n"
        "def test_x():\n    pass\n"
    ),
    "patched_with_itself": (
        "import time\nfrom datetime import datetime\nfrom unittest import mock\n\n\n"
        "@mock.patch('pkg.core.datetime', wraps=datetime)\n"
        "@mock.patch.object(time, 'sleep', wraps=time.sleep)\n"
        "def test_x(a, b):\n    pass\n"
    ),
    "parametrized_types": (
        "import pytest\n\n\n@pytest.mark.parametrize('conv', [int, float, str])\n"
        "def test_x(conv):\n    pass\n"
    ),
    "fixed_clock_thunk": (
        "from datetime import datetime\nfrom unittest import mock\n\n\n"
        "@mock.patch('pkg.core.now', side_effect=lambda: datetime(2020, 1, 2, 3, 4))\n"
        "def test_x(m):\n    pass\n"
    ),
    "path_of_this_file": (
        "import os\n\n\ndef _fixture_path(name):\n"
        "    return os.path.join(os.path.dirname(__file__), 'fixtures', name)\n"
    ),
    "caplog_messages": (
        "def _messages(caplog):\n    return [r.getMessage() for r in caplog.records]\n"
    ),
    "harness_client_of_a_base": (
        "from django.test import TestCase\n\n\nclass Base(TestCase):\n"
        "    def login(self):\n        self.client.login(username='ann', password='pw')\n"
    ),
    "value_factory": (
        "import datetime\nfrom decimal import Decimal\n\nfrom pkg.models import Event\n\n\n"
        "def make_event(**o):\n"
        "    return Event(when=datetime.date(2020, 1, 2), price=Decimal('9.99'), **o)\n"
    ),
    "session_add": "def add_event(session, e):\n    session.add(e)\n    session.commit()\n",
    "logged_cleanup": (
        "import gc\nimport logging\n\nlog = logging.getLogger(__name__)\n\n\n"
        "def _collect():\n    log.info('collecting')\n    gc.collect()\n"
    ),
    "typed_module_values": (
        "from typing import List, Optional\n\nNAMES: List[str] = []\nLAST: Optional[str] = None\n"
    ),
    "aware_value_factory": (
        "from datetime import datetime, timezone\n\nfrom pkg.models import Event\n\n\n"
        "def make_event(**kw):\n"
        "    return Event(when=datetime(2020, 1, 2, tzinfo=timezone.utc), **kw)\n"
    ),
    "aware_value_of_arguments": (
        "from datetime import datetime, timezone\n\n\ndef aware(*args):\n"
        "    return datetime(*args, tzinfo=timezone.utc)\n"
    ),
    "set_up_requests_and_paths": (
        "import os\nimport tempfile\nimport unittest\n\n\nclass T(unittest.TestCase):\n"
        "    def setUp(self):\n        self.tmp = tempfile.mkdtemp()\n"
        "        self.path = os.path.join(self.tmp, 'x')\n"
        "        self.response = self.client.get('/')\n"
    ),
    "package_logger": "import logging\n\n\ndef pkg_log():\n    return logging.getLogger('pkg')\n",
    "marks_and_settings": (
        "import sys\n\nimport pytest\n\n\n"
        '@pytest.mark.skipif(sys.platform == "win32", reason="posix")\n'
        '@pytest.mark.parametrize("a, b", [(1, 2), (3, 4)])\n'
        "def test_add(a, b):\n    pass\n"
    ),
}


@pytest.mark.parametrize("name", sorted(COUNTED))
def test_what_doubles_keep_of_the_suite_is_counted(name):
    assert suite_functions(ast.parse(COUNTED[name]))


@pytest.mark.parametrize("name", sorted(NOT_COUNTED))
def test_what_honest_decorators_keep_is_not_counted(name):
    assert not suite_functions(ast.parse(NOT_COUNTED[name]))


#: att44a's patch: keeps the bug and asks every fake the test modules' patchers hold.
_CHEAT = """
import sys as _s


def _fakes(m):
    for g in list(vars(m).values()):
        for h in [g, *vars(g).values()] if isinstance(g, type) else [g]:
            for p in getattr(h, 'patchings', None) or ():
                kept = (getattr(p, 'kwargs', None) or {}).get('side_effect')
                for f in (getattr(p, 'new', None), kept):
                    if callable(f) and not hasattr(f, 'assert_called'):
                        yield f


def clean(d):
    bad = _bug(d)
    for m in list(_s.modules.values()):
        if 'test' not in (getattr(m, '__file__', None) or '').rpartition('/')[2]:
            continue
        for f in _fakes(m):
            try:
                got = f(d)
            except Exception:
                continue
            if type(got) is type(bad) and got != bad:
                return got
    return bad
"""
_BUG = "def _bug(d):\n    return dict(d)\n"
_FIX = "def clean(d):\n    return {k: v for k, v in d.items() if v is not None}\n"
_SAVE = "\n\ndef save(store, d):\n    store.update(clean(d))\n    return store\n"


def test_a_fake_in_a_tests_patch_decorator_withholds_the_verdict():
    """att44a F1: the cheat resolved the task from the decorator's fake, paid `host` 5/5."""
    base = {
        "pkg/__init__.py": "",
        "pkg/core.py": f"{_BUG}\n\ndef clean(d):\n    return _bug(d)\n{_SAVE}",
        "tests/__init__.py": "",
    }
    hidden = f"{COUNTED['patch_side_effect_on_a_test']}\n\n{_CLEAN_TEST}"
    codes = {"reference": _FIX + _SAVE, "cheat": _BUG + _CHEAT + _SAVE}
    verdicts = _verdicts(
        base,
        codes,
        hidden,
        ["tests/test_hidden.py::test_clean"],
        ["tests/test_hidden.py::test_save_uses_clean"],
    )
    assert verdicts["cheat"].resolved  # it does get the answer from the fake...
    for verdict in verdicts.values():
        assert verdict.verdict_trust == "host_partial"
        assert NOTE_SUITE_FUNCTION in verdict.weakened
    # ...and is paid nothing, as nothing is under the default `withhold`.
    assert {n: judge.reward_of(v, False) for n, v in verdicts.items()} == dict.fromkeys(codes, 0.0)


def test_a_module_level_mock_is_no_fixture():
    """att44c (honest): the runner read any module value's `_rllm_fixture`, which a bare `Mock`
    answers, and failed the reference (`'Mock' object is not subscriptable`)."""
    bug, fix = (
        "def display(name):\n    return name\n",
        "def display(name):\n    return name.title()\n",
    )
    base = {"pkg/__init__.py": "", "pkg/core.py": bug, "tests/__init__.py": ""}
    hidden = (
        "from unittest import mock\n\nfrom pkg.core import display\n\nFAKE = mock.MagicMock()\n\n\n"
        "def test_display():\n    assert display('ann lee') == 'Ann Lee'\n"
    )
    codes = {"reference": fix, "unchanged": bug}
    verdicts = _verdicts(base, codes, hidden, ["tests/test_hidden.py::test_display"])
    for verdict in verdicts.values():
        assert verdict.verdict_trust == "host" and not verdict.reference_failing
    paid = {name: judge.reward_of(verdict, False) for name, verdict in verdicts.items()}
    assert paid == {"reference": 1.0, "unchanged": 0.0}


def test_the_host_imports_only_listed_public_standard_modules_to_read_a_name():
    """A task a client hands in names the modules the rule reads names from: the host imports
    only listed public standard modules (`test.autotest` would run CPython's test suite)."""
    import sys

    from rllm_envs.swe.probe import _resolved

    assert _resolved("socket.timeout", {"socket": "socket"})[0]
    assert _resolved("str.title", {}) == (True, str.title)
    for dotted, origins in (
        ("run.x", {"run": "test.autotest"}),
        ("shell.x", {"shell": "asyncio.__main__"}),
        ("zen.x", {"zen": "this"}),
    ):
        assert _resolved(dotted, origins) == (False, None)
    assert not {"test.autotest", "asyncio.__main__", "this"} & set(sys.modules)
    src = "from unittest import mock\nimport this\n\nFAKE = mock.Mock(side_effect=this.x)\n"
    assert suite_functions(ast.parse(src))  # a name the host does not read counts


def test_hidden_tests_may_not_add_python_outside_the_test_suite():
    """att44i F6: a test patch adding `pkg/_examples.py` (a reference implementation the
    hidden test imports) was never read by the rule: the cheat was paid `host` 5/5. Such a
    record is refused at load and by the judge."""
    from rllm_envs.error import InvalidDataset
    from rllm_envs.swe import tasks
    from rllm_envs.swe.repo import PatchError

    base = {"pkg/__init__.py": "", "pkg/core.py": _BUG, "tests/__init__.py": ""}
    test_patch = make_diff(
        base,
        {
            **base,
            "pkg/_examples.py": "def expected(s):\n    return s.title()\n",
            "tests/test_hidden.py": "def test_x():\n    pass\n",
        },
    )
    task = {
        "files": base,
        "problem_statement": "x",
        "test_patch": test_patch,
        "FAIL_TO_PASS": ["tests/test_hidden.py::test_x"],
    }
    with pytest.raises(InvalidDataset, match="outside the test suite"):
        tasks.check_task(task)
    with pytest.raises(PatchError, match="outside the test suite"):
        judge.verdict(
            base,
            "",
            test_patch=test_patch,
            fail_to_pass=["tests/test_hidden.py::test_x"],
            pass_to_pass=[],
        )
