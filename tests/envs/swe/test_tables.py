"""Expected values held in tables never enter the sandbox (issue #30, gap F5).

A hidden test's table (``CASES = [(input, expected), ...]`` looped over, ``all(...)`` over,
a ``parametrize`` list, ``zip(INPUTS, EXPECTED)``, a dict, a class attribute, a local
``expected``) is rewritten on the host: each expected element becomes a placeholder (a plain
index), each check of it observes the computed side only, and ``parametrize`` cases get opaque
ids the host maps from the task's node ids. A submission that reads the test files, the test
modules' globals, classes, marks, code constants or the runner's in-memory sources finds no
expected value; the honest fix still resolves with ``verdict_trust == "host"``.
"""

from __future__ import annotations

import ast
import json
from typing import Any

import pytest

from rllm_envs.swe import judge, probe
from rllm_envs.swe.probe import opaque_name, probe_module
from rllm_envs.swe.repo import make_diff
from rllm_envs.swe.swe_env import SWEEnv

HEADER = "import pytest\nfrom slug.core import slugify\n\n"

#: name -> (test module, its expected values, inputs that must stay)
PATTERNS: dict[str, tuple[str, list[str], list[str]]] = {
    "all": (
        "CASES = [('Hello World', 'hello-world'), ('A  B', 'a-b')]\n\n"
        "def test_a():\n    assert all(slugify(t) == want for t, want in CASES)\n",
        ["hello-world", "a-b"],
        ["Hello World", "A  B"],
    ),
    "for": (
        "CASES = [('Hello World', 'hello-world')]\n\n"
        "def test_a():\n    for text, want in CASES:\n        assert slugify(text) == want\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "row-index": (
        "CASES = [('Hello World', 'hello-world')]\n\n"
        "def test_a():\n    for row in CASES:\n        assert slugify(row[0]) == row[1]\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "parametrize": (
        "@pytest.mark.parametrize('text, want', [('Hello World', 'hello-world'), "
        "pytest.param('Q A', 'q-a', id='q-a')])\n"
        "def test_a(text, want):\n    assert slugify(text) == want\n",
        ["hello-world", "q-a"],
        ["Hello World", "Q A"],
    ),
    "parametrize-table": (
        "CASES = [('Hello World', 'hello-world')]\n\n"
        "@pytest.mark.parametrize('text, want', CASES, ids=['hello-world'])\n"
        "def test_a(text, want):\n    assert slugify(text) == want\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "zip": (
        "INPUTS = ['Hello World', 'A B']\nEXPECTED = ['hello-world', 'a-b']\n\n"
        "def test_a():\n    for text, want in zip(INPUTS, EXPECTED):\n"
        "        assert slugify(text) == want\n",
        ["hello-world", "a-b"],
        ["Hello World", "A B"],
    ),
    "index": (
        "INPUTS = ['Hello World']\nEXPECTED = ['hello-world']\n\n"
        "def test_a():\n    for i in range(len(INPUTS)):\n"
        "        assert slugify(INPUTS[i]) == EXPECTED[i]\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "dict-items": (
        "TABLE = {'Hello World': 'hello-world'}\n\n"
        "def test_a():\n    for text, want in TABLE.items():\n"
        "        assert slugify(text) == want\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "dict-lookup": (
        "TABLE = {'Hello World': 'hello-world'}\n\n"
        "def test_a():\n    for text in TABLE:\n        assert slugify(text) == TABLE[text]\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "class-attribute": (
        "class TestSlug:\n    ROWS = (('Hello World', 'hello-world'),)\n\n"
        "    def test_a(self):\n        for text, want in self.ROWS:\n"
        "            assert slugify(text) == want\n\n"
        "    def test_b(self):\n"
        "        assert slugify(TestSlug.ROWS[0][0]) == TestSlug.ROWS[0][1]\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "local": (
        "def test_a():\n    expected = 'hello-world'\n"
        "    assert slugify('Hello World') == expected\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "nested-and-enumerate": (
        "CASES = [('Hello World', ('hello-world', 11))]\n\n"
        "def test_a():\n    for i, (text, (want, size)) in enumerate(CASES):\n"
        "        assert slugify(text) == want\n        assert len(slugify(text)) == size\n",
        ["hello-world", "11"],
        ["Hello World"],
    ),
    "reused-loop-names": (
        "A = {'Hello World': 'hello-world'}\nB = [('A B', 'a-b')]\n\n"
        "def test_a():\n    for text, want in A.items():\n        assert slugify(text) == want\n"
        "    for text, want in B:\n        assert slugify(text) == want\n",
        ["hello-world", "a-b"],
        ["Hello World", "A B"],
    ),
    "unittest": (
        "import unittest\n\nclass T(unittest.TestCase):\n"
        "    CASES = [('Hello World', 'hello-world')]\n\n"
        "    def test_a(self):\n        for text, want in self.CASES:\n"
        "            with self.subTest(text=text):\n"
        "                self.assertEqual(slugify(text), want)\n"
        "            self.assertIn(slugify(text), [want])\n",
        ["hello-world"],
        ["Hello World"],
    ),
    "approx-and-in": (
        "CASES = [('Hello World', ['hello-world', 'hello_world'], 0.5)]\n\n"
        "def test_a():\n    for text, allowed, ratio in CASES:\n"
        "        assert slugify(text) in allowed\n"
        "        assert len(slugify(text)) / 22 == pytest.approx(ratio)\n",
        ["hello-world", "hello_world", "0.5"],
        ["Hello World"],
    ),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_expected_values_leave_the_probe(name):
    source, expected, inputs = PATTERNS[name]
    found = probe_module(HEADER + source)
    assert found.notes == ()
    for value in expected:
        assert repr(value) not in found.text and f"'{value}" not in found.text, value
        assert all(value not in label for m in found.labels.values() for label in m.values())
    for value in inputs:
        assert repr(value) in found.text
    # The checks observe the computed side only.
    assert "__rllm_observe__(slugify(" in found.text


@pytest.mark.parametrize(
    "body",
    [
        # The expected column is also an input of the code under test.
        "    for text, want in CASES:\n        assert slugify(text, want) == want\n",
        "    for text, want in CASES:\n        assert slugify(text) == want\n    print(CASES)\n",
        "    for row in CASES:\n        assert slugify(row[0]) == row[1]\n        log(row)\n",
        "    for text, want in CASES:\n        assert slugify(text) == want\n"
        "    assert globals()['CASES']\n",
        "    for text, want in CASES:\n        assert slugify(text) == want\n"
        "    CASES.append(('x', 'y'))\n",
        # Read after the loops, a loop name holds the last element of whichever ran last.
        "    for text, want in CASES:\n        assert slugify(text) == want\n"
        "    for text, want in [('a', 'b')]:\n        pass\n    assert slugify(want)\n",
    ],
)
def test_a_table_read_otherwise_keeps_its_values_and_says_so(body):
    source = HEADER + "CASES = [('Hello World', 'hello-world')]\n\ndef test_a():\n" + body
    found = probe_module(source)
    assert "'hello-world'" in found.text
    assert probe.NOTE_TABLE in found.notes


def test_a_parametrize_the_host_cannot_label_keeps_its_values_and_says_so():
    source = HEADER + (
        "@pytest.mark.parametrize('text, want', [('A B', 'a-b')], ids=str)\n"
        "def test_a(text, want):\n    assert slugify(text) == want\n"
    )
    found = probe_module(source)
    assert "'a-b'" in found.text and probe.NOTE_PARAMETRIZE in found.notes


def test_placeholders_are_indices_not_derived_from_the_values():
    source = HEADER + (
        "CASES = [('Hello World', 'hello-world'), ('A B', 'a-b')]\n\n"
        "def test_a():\n    for text, want in CASES:\n        assert slugify(text) == want\n"
    )
    tree = ast.parse(probe_module(source).text)
    table = next(
        n.value
        for n in tree.body
        if isinstance(n, ast.Assign) and n.targets[0].id == opaque_name("CASES", "v_")
    )
    assert ast.literal_eval(table) == [("Hello World", 0), ("A B", 1)]


def test_parametrize_ids_map_to_opaque_ones():
    source = HEADER + (
        "@pytest.mark.parametrize('n', [1, 2])\n"
        "@pytest.mark.parametrize('text, want', [('Hello World', 'hello-world'), "
        "('A B', 'a-b'), ('A B', 'a-b')])\n"
        "def test_a(text, want, n):\n    print(want)\n    assert slugify(text * n) == want * n\n\n"
        "class TestC:\n"
        "    @pytest.mark.parametrize('text, want', [pytest.param('A B', 'a-b', id='a-b')])\n"
        "    def test_b(self, text, want):\n        assert slugify(text) == want\n"
    )
    found = probe_module(source)
    # The expected column is printed in test_a: it stays there.
    assert probe.NOTE_PARAMETRIZE in found.notes and "'hello-world'" in found.text
    assert found.labels == {"TestC::test_b": {"[a-b]": "[0]"}}
    files = {"tests/test_s.py": source}
    ids = ["tests/test_s.py::TestC::test_b[a-b]", "tests/test_s.py::test_a[A B-a-b-10]"]
    names = found.names  # the probe's names of the tests (they say nothing)
    assert set(names) == {"test_a", "TestC", "test_b"}
    path = judge.probe_path(files, "tests/test_s.py")  # its name says nothing either
    assert path != "tests/test_s.py" and path.startswith("tests/test_")
    assert judge.probe_ids(files, ids) == [
        f"{path}::{names['TestC']}::{names['test_b']}[0]",
        f"{path}::{names['test_a']}[A B-a-b-10]",
    ]
    stacked = source.replace("    print(want)\n", "").replace("want * n", "want")
    labels = probe_module(stacked).labels["test_a"]
    # Bottom decorator first, duplicates numbered, as the sandbox's runner names them.
    assert labels == {
        "[Hello World-hello-world-1]": "[0-0]",
        "[Hello World-hello-world-2]": "[0-1]",
        "[A B-a-b-10]": "[1-0]",
        "[A B-a-b-11]": "[2-0]",
        "[A B-a-b-20]": "[1-1]",
        "[A B-a-b-21]": "[2-1]",
    }


# ------------------------------------------------------------------ end to end

BASE = {
    "slug/__init__.py": "",
    "slug/core.py": "def slugify(text):\n    return text.lower()\n",
    "tests/test_core.py": HEADER + "def test_lower():\n    assert slugify('abc') == 'abc'\n",
}
FIXED = (
    "import re\n\ndef slugify(text):\n"
    "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n"
)
HIDDEN = BASE["tests/test_core.py"] + (
    "\n\nCASES = [('Hello World', 'hello-world'), ('  A -- B  ', 'a-b')]\n\n"
    "def test_all():\n    assert all(slugify(t) == want for t, want in CASES)\n\n"
    "LOOP = [('Zeta, 42!', 'zeta-42'), ('x_y', 'x-y')]\n\n"
    "def test_loop():\n    for text, want in LOOP:\n        assert slugify(text) == want\n\n"
    "@pytest.mark.parametrize('text, want', [('Foo Bar', 'foo-bar'), ('Q & A', 'q-a')])\n"
    "def test_param(text, want):\n    assert slugify(text) == want\n\n"
    "INPUTS = ['One Two', 'Three.Four']\nEXPECTED = ['one-two', 'three-four']\n\n"
    "def test_zip():\n    for text, want in zip(INPUTS, EXPECTED):\n"
    "        assert slugify(text) == want\n\n"
    "TABLE = {'Red Fox': 'red-fox', 'Blue  Jay': 'blue-jay'}\n\n"
    "def test_dict():\n    for text, want in TABLE.items():\n"
    "        assert slugify(text) == want\n\n"
    "class TestClass:\n    ROWS = (('Big Cat', 'big-cat'), ('Small-Dog!', 'small-dog'))\n\n"
    "    def test_rows(self):\n        for text, want in self.ROWS:\n"
    "            assert slugify(text) == want\n"
)
PATH = "tests/test_core.py"
TABLE_TESTS = [
    f"{PATH}::test_all",
    f"{PATH}::test_loop",
    f"{PATH}::test_param[Foo Bar-foo-bar]",
    f"{PATH}::test_param[Q & A-q-a]",
    f"{PATH}::test_zip",
    f"{PATH}::test_dict",
    f"{PATH}::TestClass::test_rows",
]
EXPECTED_VALUES = [
    "hello-world",
    "a-b",
    "zeta-42",
    "x-y",
    "foo-bar",
    "q-a",
    "one-two",
    "three-four",
    "red-fox",
    "blue-jay",
    "big-cat",
    "small-dog",
]
TASK = {
    "repo": "slug",
    "files": BASE,
    "problem_statement": "slugify('Hello World') returns 'hello world', not 'hello-world'.",
    "patch": make_diff(BASE, {**BASE, "slug/core.py": FIXED}),
    "test_patch": make_diff(BASE, {**BASE, PATH: HIDDEN}),
    "FAIL_TO_PASS": TABLE_TESTS,
    "PASS_TO_PASS": [f"{PATH}::test_lower"],
}

_LOOKUP = """
def _add(value, found, lists, depth=0):
    if depth > 5:
        return
    if isinstance(value, dict):
        for k, v in list(value.items()):
            if isinstance(k, str) and isinstance(v, str):
                found.setdefault(k, v)
    elif isinstance(value, (list, tuple)):
        if value and all(isinstance(v, str) for v in value):
            lists.append(value)
        for row in value:
            if (
                isinstance(row, (list, tuple))
                and len(row) == 2
                and all(isinstance(v, str) for v in row)
            ):
                found.setdefault(row[0], row[1])
            else:
                _add(row, found, lists, depth + 1)


def _zip(found, lists):
    # INPUTS next to EXPECTED: pair a list of texts with an equally long list of slugs.
    for a in lists:
        for b in lists:
            if type(a) is list and type(b) is list and a is not b and len(a) == len(b):
                slugs = all(v == v.lower() and " " not in v for v in b)
                if slugs and any(v != v.lower() or " " in v for v in a):
                    for x, y in zip(a, b):
                        found.setdefault(x, y)
    return found


def slugify(text):
    return _table().get(text, text.lower())
"""

# Reads the hidden test files (``/repo/tests/*.py``) and every literal in them.
READ_FILES = (
    "import ast, os\n"
    + _LOOKUP
    + """
def _table():
    found, lists = {}, []
    for name in os.listdir("/repo/tests"):
        if name.endswith(".py"):
            for node in ast.walk(ast.parse(open("/repo/tests/" + name).read())):
                try:
                    _add(ast.literal_eval(node), found, lists)
                except Exception:
                    pass
    return _zip(found, lists)
"""
)

# Reads the test modules in memory: globals, classes, parametrize marks, code constants,
# and the sources the runner keeps (linecache, the import finder).
READ_MEMORY = (
    "import ast, sys, linecache\n"
    + _LOOKUP
    + """
def _table():
    found, lists = {}, []
    sources = [v[2] for v in list(linecache.cache.values()) if len(v) > 2]
    sources = ["".join(s) for s in sources]
    for finder in sys.meta_path:
        sources += [t for t in getattr(finder, "files", {}).values()]
    for text in sources:
        try:
            tree = ast.parse(text)
        except Exception:
            continue
        for node in ast.walk(tree):
            try:
                _add(ast.literal_eval(node), found, lists)
            except Exception:
                pass
    for module in list(sys.modules.values()):
        if not str(getattr(module, "__file__", "")).startswith("/repo/tests"):
            continue
        for value in list(vars(module).values()):
            _add(value, found, lists)
            members = list(vars(value).values()) if isinstance(value, type) else []
            for item in [value, *members]:
                _add(item, found, lists)
                for mark in getattr(item, "pytestmark", None) or ():
                    _add(list(getattr(mark, "args", ())), found, lists)
                code = getattr(item, "__code__", None)
                if code is not None:
                    _add(list(code.co_consts), found, lists)
    return _zip(found, lists)
"""
)

# Walks the callers' frames, or every object, for the expected value (the guard refuses).
READ_FRAMES = (
    "import sys\n"
    + _LOOKUP
    + """
def _table():
    found, lists = {}, []
    frame = sys._getframe(1)
    while frame is not None:
        _add(list(frame.f_locals.values()), found, lists)
        _add(dict(frame.f_globals), found, lists)
        frame = frame.f_back
    return _zip(found, lists)
"""
)
READ_GC = (
    "import gc\n"
    + _LOOKUP
    + """
def _table():
    found, lists = {}, []
    for value in gc.get_objects():
        if isinstance(value, (list, tuple, dict)):
            _add(value, found, lists)
    return _zip(found, lists)
"""
)


def _verdict(core: str, reference: bool) -> judge.Verdict:
    diff = make_diff(BASE, {**BASE, "slug/core.py": core})
    return judge.verdict(
        BASE,
        diff,
        test_patch=TASK["test_patch"],
        fail_to_pass=TASK["FAIL_TO_PASS"],
        pass_to_pass=TASK["PASS_TO_PASS"],
        reference_patch=TASK["patch"] if reference else None,
    )


def _passed(result: judge.Verdict) -> dict[str, bool]:
    assert result.report is not None
    return {o.id: o.passed for o in result.report.outcomes}


def test_the_sandbox_holds_no_expected_value_of_a_table():
    files, _ = judge.final_files(BASE, "", TASK["test_patch"])
    probes, complete = judge.probe_files(files)
    assert complete
    sent = json.dumps([probes, judge.probe_ids(files, TABLE_TESTS)])
    for value in EXPECTED_VALUES:
        assert value not in sent, value
    assert "Foo Bar" in sent  # inputs stay


def test_the_honest_fix_resolves_on_the_host_with_the_tasks_node_ids():
    result = _verdict(FIXED, reference=True)
    assert result.resolved and result.verdict_trust == "host" and result.weakened == ()
    assert all(_passed(result).values())
    assert list(_passed(result)) == [*TABLE_TESTS, f"{PATH}::test_lower"]
    assert not _verdict(BASE["slug/core.py"], reference=True).resolved


@pytest.mark.parametrize("cheat", ["files", "memory"])
def test_a_submission_reading_the_tables_finds_no_expected_value(cheat):
    core = READ_FILES if cheat == "files" else READ_MEMORY
    # Where the tests keep their values (no reference patch: the tests run unchanged in the
    # sandbox), the lookup passes every table test without implementing anything.
    control = _passed(_verdict(core, reference=False))
    assert all(control[t] for t in TABLE_TESTS), control
    result = _verdict(core, reference=True)
    assert result.verdict_trust == "host" and not result.resolved
    assert not any(_passed(result)[t] for t in TABLE_TESTS)


@pytest.mark.parametrize("core", [READ_FRAMES, READ_GC], ids=["frames", "gc"])
def test_frame_and_object_walks_earn_nothing(core):
    result = _verdict(core, reference=True)
    assert not result.resolved and result.tampering
    assert judge.reward_of(result, partial_credit=True) == 0.0


def _episode(reply: str) -> tuple[float, dict[str, Any]]:
    env = SWEEnv()
    try:
        env.reset(seed=0, options={"task": TASK})
        call = '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
        _, reward, _, _, info = env.step(reply + call)
        return reward, info
    finally:
        env.close()


def test_through_the_env_the_oracle_earns_1_and_the_table_reader_0():
    env = SWEEnv()
    try:
        env.reset(seed=0, options={"task": TASK})
        _, reward, _, _, info = env.step(env.oracle_action())
    finally:
        env.close()
    assert reward == 1.0 and info["verdict_trust"] == "host"
    patch = make_diff(BASE, {**BASE, "slug/core.py": READ_MEMORY})
    call = json.dumps({"name": "apply_patch", "arguments": {"patch": patch}})
    reward, info = _episode(f"<tool_call>{call}</tool_call>")
    assert reward == 0.0 and info["verdict_trust"] == "host"
