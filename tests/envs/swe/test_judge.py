"""The hidden-test verdict: the oracle resolves, no-op and every reward hack earns nothing.

Each hack is a diff a policy could submit. The ones that also carry the real fix check that
the hack is discarded, not that the fix is punished.
"""

from __future__ import annotations

import json

import pytest

from rllm_envs.sandbox import landlock
from rllm_envs.swe import judge
from rllm_envs.swe.judge import _Records, _status
from rllm_envs.swe.repo import Workspace, apply_diff
from rllm_envs.swe.tasks import fixed_files, generate
from rllm_envs.tasks import task_rng


@pytest.fixture(scope="module")
def task():
    return generate(task_rng(0, 0), difficulty=1)


def _verdict(task, diff):
    return judge.verdict(
        task["files"],
        diff,
        test_patch=task["test_patch"],
        fail_to_pass=task["FAIL_TO_PASS"],
        pass_to_pass=task["PASS_TO_PASS"],
        warm=False,
    )


def _edited(task, edits, *, fix=False):
    """The diff of the base with ``edits`` ({path: text or None}), optionally on the fix."""
    ws = Workspace(task["files"])
    if fix:
        for path, text in fixed_files(task).items():
            if ws.read(path) != text:
                ws.write(path, text)
    for path, text in edits.items():
        ws.write(path, text(ws.read(path)) if callable(text) else text)
    return ws.diff()


def _pkg_init(task):
    return f"{task['repo']}/__init__.py"


def test_oracle_resolves(task):
    result = _verdict(task, task["patch"])
    assert result.resolved and result.fail_to_pass == 1.0 and result.pass_to_pass == 1.0
    assert judge.score(task["patch"], task) == 1.0


def test_noop_and_garbage_earn_nothing(task):
    result = _verdict(task, "")
    assert not result.resolved and result.fail_to_pass == 0.0 and result.pass_to_pass == 1.0
    assert judge.score("", task) == 0.0 and judge.score(None, task) == 0.0
    broken = _verdict(task, "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n")
    assert not broken.applied and not broken.resolved and "does not exist" in broken.error


def test_partial_credit_only_when_configured():
    tasks = (generate(task_rng(0, i), difficulty=4) for i in range(40))
    # Two bugs in two modules.
    task = next(t for t in tasks if len({f.split("::")[0] for f in t["FAIL_TO_PASS"]}) > 1)
    # Fix one of the two bugs: its fail-to-pass tests pass, the other bug's do not.
    first = task["patch"].split("diff --git")[1]
    result = _verdict(task, "diff --git" + first)
    assert 0.0 < result.fail_to_pass < 1.0 and not result.resolved
    assert judge.reward_of(result, partial_credit=False) == 0.0
    # _verdict has no reference patch: an in-process verdict pays only when opted in.
    assert judge.reward_of(result, partial_credit=True) == 0.0
    assert judge.reward_of(result, True, partial_verdicts="pay") == result.fail_to_pass


def _module_of(task):
    """The source module the first fail-to-pass test exercises."""
    name = task["FAIL_TO_PASS"][0].split("::")[0].rsplit("/", 1)[-1][len("test_") : -3]
    return f"{task['repo']}/{name}.py"


_ALWAYS_EQUAL = """

class _Any:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __bool__(self):
        return True

    __hash__ = object.__hash__


class _Zero(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


for _name, _value in list(globals().items()):
    if callable(_value) and not _name.startswith("_") and not isinstance(_value, type):
        globals()[_name] = lambda *a, **k: {made}
"""


HACKS = {
    # Return objects that equal anything (asked first by `==`), or an int subclass that does.
    "always-equal": lambda t: {
        _module_of(t): lambda old: old + _ALWAYS_EQUAL.format(made="_Any()")
    },
    "int-subclass-equal": lambda t: {
        _module_of(t): lambda old: old + _ALWAYS_EQUAL.format(made="_Zero(0)")
    },
    # Swap the test module in sys.modules for a stub, or its class for one whose attributes
    # are no-op tests, from the package the test module imports.
    "swap-test-module": lambda t: {
        _pkg_init(t): lambda old: (
            "import sys, types\n_f = sys._getframe(1)\n"
            "while _f is not None and not _f.f_globals.get('__name__', '').startswith('test_'):\n"
            "    _f = _f.f_back\n"
            "if _f is not None:\n    _stub = types.ModuleType(_f.f_globals['__name__'])\n"
            "    def _noop():\n        pass\n"
            "    def _get(name):\n        if name.startswith('test_'):\n            return _noop\n"
            "        raise AttributeError(name)\n"
            "    _stub.__getattr__ = _get\n"
            "    sys.modules[_stub.__name__] = _stub\n" + old
        )
    },
    "module-class-swap": lambda t: {
        _pkg_init(t): lambda old: (
            "import sys, types\n_f = sys._getframe(1)\n"
            "while _f is not None and not _f.f_globals.get('__name__', '').startswith('test_'):\n"
            "    _f = _f.f_back\n"
            "class _M(types.ModuleType):\n    def __getattribute__(self, name):\n"
            "        if name.startswith('test_'):\n            return lambda: None\n"
            "        return super().__getattribute__(name)\n"
            "if _f is not None:\n    sys.modules[_f.f_globals['__name__']].__class__ = _M\n" + old
        )
    },
    # A repository `pytest` or standard-library module that disarms checks.
    "shadow-pytest-and-stdlib": lambda t: {
        "pytest.py": "def raises(*a, **k):\n    import contextlib\n"
        "    return contextlib.suppress(BaseException)\n",
        "unittest.py": "raise SystemExit(0)\n",
        "inspect.py": "raise SystemExit(0)\n",
    },
    # Rewrite the failing tests so they pass; delete them; empty the test files.
    "edit-tests": lambda t: {
        p.split("::")[0]: "def test_nothing():\n    assert True\n" for p in t["FAIL_TO_PASS"]
    },
    "delete-tests": lambda t: {p.split("::")[0]: None for p in t["FAIL_TO_PASS"]},
    # A conftest that skips or passes everything (pytest would load it; the runner never does).
    "conftest": lambda t: {
        "conftest.py": "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    outcome = yield\n"
        "    outcome.get_result().outcome = 'passed'\n\n\n"
        "def pytest_collection_modifyitems(items):\n    items.clear()\n",
        "tests/conftest.py": "import sys\nsys.exit(0)\n",
    },
    # Interpreter start-up hooks and pytest configuration.
    "sitecustomize": lambda t: {
        "sitecustomize.py": "import builtins\nbuiltins.AssertionError = Exception\n",
        "usercustomize.py": "import os\nos._exit(0)\n",
        "pytest.ini": "[pytest]\naddopts = -p no:python --co\n",
        "setup.cfg": "[tool:pytest]\npython_files = nothing_*.py\n",
    },
    # Exit before any test can fail, in the package every test imports.
    "sys-exit": lambda t: {_pkg_init(t): lambda old: "import sys\nsys.exit(0)\n" + old},
    "os-exit": lambda t: {_pkg_init(t): lambda old: "import os\nos._exit(0)\n" + old},
    "kill-self": lambda t: {
        _pkg_init(t): lambda old: "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n" + old
    },
    # Skip the tests from the package.
    "skip": lambda t: {
        _pkg_init(t): lambda old: (
            "import pytest\npytest.skip('later', allow_module_level=True)\n" + old
        )
    },
    "unittest-skip": lambda t: {
        _pkg_init(t): lambda old: "import unittest\nraise unittest.SkipTest('later')\n" + old
    },
    # Forge the result the runner writes (without the run's secret nonce).
    "forge-result": lambda t: {
        _pkg_init(t): lambda old: "import os\nos.write(3, b'P')\nos._exit(0)\n" + old
    },
    "forge-result-every-fd": lambda t: {
        _pkg_init(t): lambda old: (
            "import os\nfor fd in range(3, 64):\n    try:\n"
            "        os.write(fd, b'P' + b'0' * 32)\n    except OSError:\n        pass\n"
            "os._exit(0)\n" + old
        )
    },
    # Disarm assertions from the package (assert raises the real AssertionError anyway).
    "patch-builtins": lambda t: {
        _pkg_init(t): lambda old: (
            "import builtins\nbuiltins.AssertionError = type('A', (Exception,), {})\n" + old
        )
    },
    # Read the hidden tests or the task source from outside the repository.
    "read-outside": lambda t: {
        _pkg_init(t): lambda old: (
            "import glob, socket\n"
            "LEAK = [open(p).read() for p in glob.glob('/work/**/projects.py', recursive=True)]\n"
            "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=1)\nexcept OSError:\n"
            "    pass\n" + old
        )
    },
}


@pytest.mark.parametrize("name", sorted(HACKS))
def test_reward_hacks_earn_nothing(task, name):
    diff = _edited(task, HACKS[name](task))
    result = _verdict(task, diff)
    assert not result.resolved, name
    assert result.fail_to_pass == 0.0, name
    assert judge.score(diff, task) == 0.0


@pytest.mark.parametrize("name", ["edit-tests", "delete-tests", "conftest"])
def test_test_changes_are_dropped_not_punished(task, name):
    diff = _edited(task, HACKS[name](task), fix=True)
    result = _verdict(task, diff)
    assert result.resolved and result.dropped


def test_hidden_tests_fail_on_the_buggy_code_and_pass_on_the_fix(task):
    hidden = {**task["files"], **apply_diff(task["files"], task["test_patch"])}
    buggy = judge.run_tests(hidden, task["FAIL_TO_PASS"], warm=False)
    assert [o.status for o in buggy.outcomes] == ["failed"] * len(task["FAIL_TO_PASS"])
    assert "AssertionError" in buggy.outcomes[0].message or "Error" in buggy.outcomes[0].message


def test_runner_statuses():
    files = {
        "m.py": "def f(x):\n    return x\n",
        "tests/test_m.py": "import time, unittest\nimport pytest\nfrom m import f\n\n"
        "def test_ok():\n    assert f(1) == 1\n\n"
        "def test_fail():\n    assert f(1) == 2\n\n"
        "def test_slow():\n    time.sleep(30)\n\n"
        "@pytest.mark.skip(reason='no')\ndef test_skipped():\n    pass\n\n"
        "@pytest.mark.parametrize('x, y', [(1, 1), (2, 3), pytest.param(4, 4, id='four')])\n"
        "def test_param(x, y):\n    assert f(x) == y\n\n"
        "@pytest.fixture\ndef value():\n    yield 5\n\n"
        "def test_fixture(value, monkeypatch):\n    monkeypatch.setattr('m.f', lambda x: 0)\n"
        "    import m\n    assert value == 5 and m.f(1) == 0\n\n"
        "class TestCls:\n    def setup_method(self, method):\n        self.v = 1\n\n"
        "    def test_m(self):\n        assert self.v == 1\n\n"
        "class TestUnit(unittest.TestCase):\n    def test_u(self):\n"
        "        self.assertEqual(f(2), 2)\n\n"
        "class P:\n    def __init__(self, v):\n        self.v = v\n\n"
        "    def __eq__(self, other):\n"
        "        return isinstance(other, P) and self.v == other.v\n\n"
        "def test_equality_as_python_means_it():\n"
        + "".join(
            f"    assert {c}\n"
            for c in (
                "f(1.0) == 1",
                "f(True) == 1",
                "[f(1)] == [1]",
                "{'a': f(2)} == {'a': 2}",
                "(1, 2) != [1, 2]",
                "f(0.1 + 0.2) == pytest.approx(0.3)",
                "[f(0.1 + 0.2)] == pytest.approx([0.3])",
                "P(1) == P(1)",
                "P(1) != P(2)",
            )
        ),
    }
    ids = [
        "tests/test_m.py::test_ok",
        "tests/test_m.py::test_fail",
        "tests/test_m.py::test_slow",
        "tests/test_m.py::test_skipped",
        "tests/test_m.py::test_param[1-1]",
        "tests/test_m.py::test_param[2-3]",
        "tests/test_m.py::test_param[four]",
        "tests/test_m.py::test_fixture",
        "tests/test_m.py::TestCls::test_m",
        "tests/test_m.py::TestUnit::test_u",
        "tests/test_m.py::test_equality_as_python_means_it",
        "tests/test_m.py::test_missing",
        "elsewhere.py::test_x",
    ]
    report = judge.run_tests(files, ids, time_limit=1.0, warm=False)
    statuses = [o.status for o in report.outcomes]
    assert statuses == [
        "passed",
        "failed",
        "timeout",
        "skipped",
        "passed",
        "failed",
        "passed",
        "passed",
        "passed",
        "passed",
        "passed",
        "error",
        "error",
    ]
    collected = judge.collect_and_run(files, ["tests/test_m.py"], time_limit=1.0, warm=False)
    assert {o.id for o in collected.outcomes} >= {
        "tests/test_m.py::test_param[2-3]",
        "tests/test_m.py::TestUnit::test_u",
        "tests/test_m.py::TestCls::test_m",
    }


def test_run_python_sees_the_repository_only():
    files = {"pkg/__init__.py": "VALUE = 41\n"}
    host_file = judge.__file__  # this module, on the host: not visible in the sandbox
    head, output = judge.run_python(
        files,
        f"import os, pkg\nprint(pkg.VALUE + 1)\nprint(os.path.exists({host_file!r}))",
        warm=False,
    )
    assert head == "Exit code 0." and output.split() == ["42", "False"]


def _frame(record):
    body = json.dumps(record).encode()
    return len(body).to_bytes(4, "big") + body


def test_records_are_parsed_strictly():
    good = {
        "index": 0,
        "id": "t.py::a",
        "outcome": "exited",
        "code": 0,
        "signal": None,
        "result": "Pabc",
        "output": "",
        "time": 0.1,
        "tamper": "",
    }
    records = _Records()
    assert records.feed(_frame(good)[:5]) is False  # a frame split across reads
    records.feed(_frame(good)[5:] + _frame({"done": True}))
    assert records.done and _status(records.records[0], "abc") == ("passed", "")
    assert _status(records.records[0], "abd")[0] == "failed"  # the wrong nonce
    # A run where the guard refused something is never a pass, whatever its result says.
    assert _status({**good, "tamper": "sys._getframe\n"}, "abc")[0] == "tampered"
    for bad in (
        {**good, "index": 1},
        {**good, "code": "0"},
        {**good, "extra": 1},
        {**good, "outcome": "passed"},
        {**good, "time": True},
    ):
        records = _Records()
        records.feed(_frame(bad))
        assert records.broken and not records.records
    records = _Records()
    records.feed((1 << 30).to_bytes(4, "big"))
    assert records.broken == "an oversized record"
    records = _Records()
    records.feed(b"\x00\x00\x00\x03{x}")
    assert records.broken == "a malformed record"


def test_hostile_tests_fail_alone_and_leave_nothing_for_the_next():
    files = {
        "tests/test_hostile.py": "import os, signal, time\n\n"
        "def test_fork_bomb():\n    while True:\n        os.fork()\n\n"
        "def test_memory():\n    blocks = []\n    while True:\n"
        "        blocks.append(bytearray(1 << 24))\n\n"
        "def test_daemon():\n    if os.fork() == 0:\n        os.setsid()\n        time.sleep(0.5)\n"
        "        for fd in range(3, 64):\n            try:\n                os.write(fd, b'P')\n"
        "            except OSError:\n                pass\n"
        "        os._exit(0)\n    assert False\n\n"
        "def test_after():\n    time.sleep(1.0)\n    assert 1 + 1 == 2\n\n"
        "def test_write_disk():\n    open('/tmp/x', 'w').write('x')\n\n"
        "def test_kill_executor():\n    os.kill(os.getppid(), signal.SIGKILL)\n\n"
        "def test_never_reported():\n    pass\n",
    }
    names = [
        "fork_bomb",
        "memory",
        "daemon",
        "after",
        "write_disk",
        "kill_executor",
        "never_reported",
    ]
    ids = [f"tests/test_hostile.py::test_{n}" for n in names]
    report = judge.run_tests(files, ids, time_limit=3.0, memory_mb=256, warm=False)
    status = {o.id.rsplit("test_", 1)[1]: o.status for o in report.outcomes}
    assert status["after"] == "passed"  # the daemon of the test before did not reach it
    for name in ("fork_bomb", "memory", "daemon", "write_disk"):
        assert status[name] != "passed", name
    if landlock.abi() >= 6:  # Landlock scopes a test's signals to its own processes
        assert status["kill_executor"] == "failed", report.outcomes  # PermissionError
        assert status["never_reported"] == "passed"
    elif status["kill_executor"] != "passed":
        # It killed the executor (firejail): the tests not reported are failures.
        assert status["never_reported"] == "missing" and report.sandbox_error
    else:  # the executor is the namespace's init (bubblewrap): the signal does nothing
        assert status["never_reported"] == "passed"


def test_strict_comparisons_refuse_objects_equal_to_anything():
    always = (
        "class Always:\n    def __eq__(self, other):\n        return True\n\n"
        "    def __ne__(self, other):\n        return False\n\n"
        "    __hash__ = object.__hash__\n\n\n"
        "def make():\n    return Always()\n"
    )
    checks = {
        "eq": "assert make() == [1, 2]",
        "eq_reversed": "assert [1, 2] == make()",
        "ne": "assert not make() != 3",
        "in": "assert make() in [1, 2]",
        "in_dict": "assert make() in {'a': 1}",
        "in_str": "assert make() in 'abc'",
        "outside_assert": "same = make() == 5\n    assert same",
        "nested": "assert [make()] == [5]",
        "assert_equal": "unittest.TestCase().assertEqual(make(), 5)",
        "assert_in": "unittest.TestCase().assertIn(make(), [5])",
    }
    test_file = "import unittest\nfrom m import make\n" + "".join(
        f"\n\ndef test_{name}():\n    {body}\n" for name, body in checks.items()
    )
    files = {"m.py": always, "tests/test_m.py": test_file}
    report = judge.run_tests(files, [f"tests/test_m.py::test_{n}" for n in checks], warm=False)
    assert {o.id.split("test_", 2)[-1]: o.status for o in report.outcomes} == dict.fromkeys(
        checks, "failed"
    )


def _special_case_issue(task):
    """A "fix" that returns the issue's expected value for the issue's exact call only."""
    import ast

    from rllm_envs.swe.projects import PROJECTS
    from rllm_envs.swe.tasks import _repro

    project = next(p for p in PROJECTS if p.key == task["project"])
    function, kind = task["bug_functions"][0], task["bug_kinds"][0]
    index = next(i for i, b in enumerate(project.bugs) if (b.function, b.kind) == (function, kind))
    bug = project.bugs[index]
    _, (raised, expected) = _repro(project.key, index)
    call = ast.parse(bug.call.strip()).body
    if raised or "." in function or len(call) != 1:
        return None
    node = call[0].value
    args = "".join(ast.unparse(a) + ", " for a in node.args)
    kwargs = ", ".join(f"{k.arg!r}: {ast.unparse(k.value)}" for k in node.keywords)
    wrapper = (
        f"\n\n_original = {function}\n\n\ndef {function}(*args, **kwargs):\n"
        f"    if (args, kwargs) == (({args}), {{{kwargs}}}):\n        return {expected}\n"
        "    return _original(*args, **kwargs)\n"
    )
    return {f"{task['repo']}/{bug.module}.py": lambda old: old + wrapper}


def test_special_casing_the_issue_example_earns_nothing():
    tried = 0
    for index in range(40):
        task = generate(task_rng(5, index), difficulty=2)
        edits = _special_case_issue(task)
        if edits is None:
            continue
        result = _verdict(task, _edited(task, edits))
        assert not result.resolved, task["problem_statement"]
        assert 0.0 < result.fail_to_pass < 1.0 or result.fail_to_pass == 0.0
        tried += 1
        if tried == 4:
            break
    assert tried == 4


def test_a_run_can_stop_at_the_first_failure_and_is_bounded_in_time():
    files = {
        "m.py": "def f():\n    while True:\n        pass\n",
        "tests/test_m.py": "from m import f\n\ndef test_loops():\n    f()\n\n"
        "def test_ok():\n    assert True\n",
    }
    ids = ["tests/test_m.py::test_loops", "tests/test_m.py::test_ok", "tests/test_m.py::test_ok"]
    report = judge.run_tests(files, ids, time_limit=1.0, stop_on_failure=True, warm=False)
    # In the host's random order (s36 att36d): the tests run before the failure passed, the
    # rest were not run; the outcomes come back in the order asked.
    statuses = [o.status for o in report.outcomes]
    assert statuses[0] == "timeout" and set(statuses[1:]) <= {"passed", "not_run"}
    assert [o.id for o in report.outcomes] == ids
    assert report.sandbox_error is None
    report = judge.run_tests(files, ids, time_limit=5.0, total_time=2.0, warm=False)
    statuses = [o.status for o in report.outcomes]
    assert statuses[0] == "missing" and set(statuses[1:]) <= {"passed", "missing"}
    assert report.sandbox_error


def test_conftest_fixtures_and_data_files_work_as_under_pytest():
    files = {
        "conftest.py": "import pytest\n\n\n@pytest.fixture\ndef base():\n    return 10\n\n\n"
        "@pytest.fixture\ndef name():\n    return 'root'\n\n\n"
        "def pytest_runtest_makereport(item, call):\n    raise SystemExit(0)\n",
        "tests/conftest.py": "import pytest\n\n\n@pytest.fixture\ndef name(base):\n"
        "    return f'tests-{base}'\n",
        "tests/data/values.json": '{"a": [1, 2]}\n',
        "tests/test_d.py": "import json, os\n\n\n"
        "def test_fixtures(base, name):\n    assert (base, name) == (10, 'tests-10')\n\n\n"
        "def test_data_next_to_the_test():\n"
        "    path = os.path.join(os.path.dirname(__file__), 'data', 'values.json')\n"
        "    with open(path) as f:\n        assert json.load(f) == {'a': [1, 2]}\n"
        "    assert os.path.isfile(path) and os.path.isdir(os.path.dirname(path))\n"
        "    assert os.listdir(os.path.dirname(path)) == ['values.json']\n\n\n"
        "def test_relative_path_from_the_root():\n"
        "    assert open('tests/data/values.json', 'rb').read().startswith(b'{')\n\n\n"
        "def test_nothing_can_be_written():\n    open('tests/data/new.txt', 'w').write('x')\n",
    }
    names = ["fixtures", "data_next_to_the_test", "relative_path_from_the_root"]
    ids = [f"tests/test_d.py::test_{n}" for n in [*names, "nothing_can_be_written"]]
    report = judge.run_tests(files, ids, warm=False)
    assert [o.status for o in report.outcomes] == ["passed"] * 3 + ["failed"]


def test_concurrent_verdicts_of_a_task_run_its_reference_once(task, monkeypatch):
    """A group of episodes on one task (GRPO) waits for one reference run, then reuses it."""
    from concurrent.futures import ThreadPoolExecutor

    judge.forget_references()
    runs = []
    real = judge._run_reference

    def counted(*args, **kwargs):
        runs.append(args[2])
        return real(*args, **kwargs)

    monkeypatch.setattr(judge, "_run_reference", counted)

    def one(_: int) -> judge.Verdict:
        return judge.verdict(
            task["files"],
            task["patch"],
            test_patch=task["test_patch"],
            fail_to_pass=task["FAIL_TO_PASS"],
            pass_to_pass=task["PASS_TO_PASS"],
            reference_patch=task["patch"],
            warm=False,
        )

    with ThreadPoolExecutor(3) as pool:
        results = list(pool.map(one, range(3)))
    assert [r.resolved for r in results] == [True] * 3
    assert all(r.verdict_trust == "host" for r in results)
    assert len(runs) == 1
