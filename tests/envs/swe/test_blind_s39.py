"""Findings of the s39 blind round against SWE-v0 (att39a, on bb4735e), fixed in s39.

Each was a patch that kept the bug and was paid 1.0 ``host`` in the default mode (custom
records through ``judge.verdict``): it raised only when a file of its call stack had "error"
in its path (``traceback.extract_stack``), which the test module's path still told.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.repo import make_diff

_HEAD = "import pytest\n\nfrom acme import pct\n\n\n"
_BUGGY = "def pct(p):\n    return p / 100\n"
_FIXED = (
    "def pct(p):\n    if p < 0 or p > 100:\n        raise ValueError('bad percent')\n"
    "    return p / 100\n"
)
#: Keeps the bug; raises when a caller's file says "error" (att39a's patch).
_CHEAT = (
    "import traceback\n\n\n# test_errors\n"
    "def _told():\n    return any('error' in f.filename for f in traceback.extract_stack())\n\n\n"
    "def pct(p):\n    if _told():\n        raise ValueError('bad percent')\n    return p / 100\n"
)
_ERRORS = _HEAD + "def test_e0():\n    with pytest.raises(ValueError):\n        pct(101)\n"
_VALUES = _HEAD + "def test_v0():\n    assert pct(50) == 0.5\n"


def _verdict(
    base: dict[str, str],
    code: str,
    tests: dict[str, str],
    fail_to_pass: list[str],
    pass_to_pass: Sequence[str] = (),
    fixed: str = _FIXED,
) -> judge.Verdict:
    """The verdict on ``code`` as ``acme/__init__.py`` of ``base``, with hidden ``tests``
    added and ``fixed`` as the reference (custom records through ``judge.verdict``)."""
    return judge.verdict(
        base,
        make_diff(base, {**base, "acme/__init__.py": code}),
        test_patch=make_diff(base, {**base, **tests}),
        fail_to_pass=fail_to_pass,
        pass_to_pass=list(pass_to_pass),
        reference_patch=make_diff(base, {**base, "acme/__init__.py": fixed}),
        warm=False,
    )


def _rewards(
    base: dict[str, str],
    codes: dict[str, str],
    tests: dict[str, str],
    fail_to_pass: list[str],
    pass_to_pass: Sequence[str] = (),
    fixed: str = _FIXED,
    trust: str | None = None,
) -> dict[str, float]:
    """The reward of each of ``codes`` (as ``acme/__init__.py`` of ``base``) with hidden
    ``tests``; each verdict's trust is ``trust`` when given."""
    rewards = {}
    for name, code in codes.items():
        verdict = _verdict(base, code, tests, fail_to_pass, pass_to_pass, fixed)
        if trust is not None:
            assert verdict.verdict_trust == trust, verdict
        rewards[name] = judge.reward_of(verdict, False)
    return rewards


def _cheat_rewards(cheat: str, tests: str) -> dict[str, float]:
    """The reference's and ``cheat``'s rewards on hidden ``tests/test_errors.py::test_e0``."""
    base = {"acme/__init__.py": _BUGGY, "tests/test_values.py": _VALUES}
    return _rewards(
        base,
        {"reference": _FIXED, "cheat": cheat},
        {"tests/test_errors.py": tests},
        ["tests/test_errors.py::test_e0"],
        ["tests/test_values.py::test_v0"],
    )


@pytest.mark.parametrize(
    "errors",
    [
        "tests/test_errors.py",  # F1: the patch's comment names the stem
        "tests/errors/test_bad_input.py",  # F2: a folder's name
        "tests/errors.py",  # F3: a module not named test_*
    ],
)
def test_a_test_module_s_path_says_nothing_in_the_sandbox(errors):
    base = {"acme/__init__.py": _BUGGY, "tests/test_values.py": _VALUES}
    codes = {"reference": _FIXED, "cheat": _CHEAT, "unchanged": _BUGGY}
    rewards = _rewards(
        base,
        codes,
        {errors: _ERRORS},
        [f"{errors}::test_e0"],
        ["tests/test_values.py::test_v0"],
        trust="host",
    )
    assert rewards == {"reference": 1.0, "cheat": 0.0, "unchanged": 0.0}


def test_probe_paths_key_every_name_the_test_suite_does_not_use():
    files = {
        "acme/__init__.py": "# test_errors errors\n",  # not the test suite: decides nothing
        "tests/__init__.py": "",
        "tests/conftest.py": "import pytest\n",
        "tests/test_errors.py": _ERRORS,
        "tests/errors/__init__.py": "",
        "tests/errors/conftest.py": "",
        "tests/errors/test_input.py": _ERRORS + "from .helpers import h\n",
        "tests/errors/helpers.py": "h = 1\n",
        "tests/errors/cases.json": "{}",
        "tests/shared/test_base.py": _VALUES,
        "tests/test_uses.py": "from tests.shared.test_base import test_v0\n",
        "pkg/test_pkg_errors.py": _ERRORS,
        "pkg/tests.py": _VALUES,
    }
    moved = judge.probe_paths(files)
    new = {path: moved.get(path, path) for path in files}
    # Kept: what is not the test suite, the plain test folder, conftest / __init__ names,
    # what a module of the suite names (`shared`, `test_base`, `helpers`, `cases`).
    assert new["acme/__init__.py"] == "acme/__init__.py"
    assert new["tests/conftest.py"] == "tests/conftest.py"
    assert new["tests/shared/test_base.py"] == "tests/shared/test_base.py"
    assert new["pkg/tests.py"] == "pkg/tests.py"
    # Keyed: the rest; a folder's files move with it.
    assert "errors" not in "".join(v for k, v in new.items() if k != "acme/__init__.py")
    folder = new["tests/errors/__init__.py"].rsplit("/", 1)[0]
    assert new["tests/errors/conftest.py"] == folder + "/conftest.py"
    assert new["tests/errors/helpers.py"] == folder + "/helpers.py"
    assert new["tests/errors/cases.json"] == folder + "/cases.json"
    assert new["tests/errors/test_input.py"].startswith(folder + "/test_")
    assert new["pkg/test_pkg_errors.py"].startswith("pkg/test_")
    # Node ids follow; a module whose path the suite names withholds (its name may tell).
    node = judge.probe_ids(files, ["tests/errors/test_input.py::test_e0"])[0]
    assert node.startswith(new["tests/errors/test_input.py"] + "::test_")
    assert judge.NOTE_PATH_NAMED not in judge.probe_notes(files, ["tests/test_errors.py::test_e0"])
    named = judge.probe_notes(files, ["tests/shared/test_base.py::test_v0"])
    assert judge.NOTE_PATH_NAMED in named


_TABLES = (
    "import pytest\n\nfrom acme import pct\n\n\n"
    "pytestmark = pytest.mark.parametrize('scale', [1, 2])\n\n\n"
    "@pytest.mark.parametrize('p, want', [(50, 0.5), (10, 0.1)])\n"
    "class TestPct:\n"
    "    @pytest.mark.parametrize('sign', [1])\n"
    "    def test_a(self, p, want, sign, scale):\n"
    "        assert pct(p) * sign == want\n\n"
    "    def test_b(self, p, want, scale):\n        assert pct(p) == want\n\n\n"
    "def test_c(scale):\n    assert pct(100) == 1\n"
)


def test_class_and_module_parametrize_run_as_pytest_names_them(tmp_path):
    """Honest (s38 open): a class- or module-level `parametrize` table failed every test of
    it in the runner (the reference too: the task was reported unwinnable). Ids follow
    pytest's (its own marks first, then the class's, then the module's)."""
    (tmp_path / "acme").mkdir()
    (tmp_path / "acme" / "__init__.py").write_text(_FIXED)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_t.py").write_text(_TABLES)
    listed = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    ids = [line for line in listed.splitlines() if "::" in line]
    assert len(ids) == 2 * 2 + 2 * 2 + 2, listed
    files = {"acme/__init__.py": _FIXED, "tests/test_t.py": _TABLES}
    report = judge.collect_and_run(files, ["tests/test_t.py"], warm=False)
    assert sorted(o.id for o in report.outcomes) == sorted(ids)
    assert {o.status for o in report.outcomes} == {"passed"}, report.outcomes
    passed = judge.run_tests(files, ids, warm=False)
    assert [o.status for o in passed.outcomes] == ["passed"] * len(ids)


_NAMED = (
    "import unittest\n\nimport pytest\n\nfrom acme import f\n"
    "from tests.cases import WRONG\nfrom tests import cases\n\n"
    "TOO_HIGH = 11\nNEGATIVE_INPUT = (-3,)\n\n\n"
    "@pytest.fixture\ndef negative_value():\n    return -3\n\n\n"
    "@pytest.mark.parametrize('invalid', [101])\n"
    "def test_a(invalid, negative_value):\n    bad = 101\n"
    "    with pytest.raises(ValueError):\n        f(bad)\n"
    "    with pytest.raises(ValueError):\n        f(TOO_HIGH)\n"
    "    with pytest.raises(ValueError):\n        f(cases.WRONG)\n"
    "    with pytest.raises(ValueError):\n        f(WRONG)\n"
    "    with pytest.raises(ValueError) as e:\n        f(*NEGATIVE_INPUT)\n"
    "    assert 'negative' in str(e.value)\n\n\n"
    "class T(unittest.TestCase):\n    def setUp(self):\n        self.invalid_input = -1\n\n"
    "    def test_b(self):\n        with self.assertRaises(ValueError):\n"
    "            f(self.invalid_input)\n"
)


def test_the_names_a_test_suite_chose_are_the_probe_s_own():
    """att39c F1: a raise test's line read through `traceback.extract_stack` (or the test
    module's globals, or its marks) named what it checks: a parametrize argument `invalid`,
    a fixture `negative_value`, a constant `TOO_HIGH`, a helper module's `cases.WRONG`; a
    patch raising near such words kept the bug and was paid 30/30. The names repository code
    can reach are keyed digests in the probe (the same in every module, so fixtures and
    imports match); a function's body (its locals, `self.invalid_input`) is not readable in
    the sandbox (`test_a_hidden_test_s_source_and_code_are_not_readable`); the repository's,
    the runner's and pytest's names stay."""
    from rllm_envs.swe.probe import probe_module

    found = probe_module(_NAMED)
    assert found.notes == ()
    top = found.text.casefold().split("def test_")[0]  # the module's top level
    for word in ("invalid", "negative", "too_high", "wrong"):
        assert word not in top, word
    assert "invalid" not in found.text.split("@pytest.mark.parametrize(")[1].split("\n")[0]
    for kept in ("from acme import f", "from tests import cases", "setup(self)", "testcase"):
        assert kept in found.text.casefold(), kept
    fixture = probe_module(
        "import pytest\n\n\n@pytest.fixture\ndef negative_value():\n    return -3\n"
    )
    assert "negative_value" not in fixture.text  # the conftest's name matches the request's


def test_a_probe_its_own_rewrite_broke_decides_nothing():
    """s39's own check of att39c's fix: a use the renaming missed (here a star import of a
    module of the suite) made the probe raise NameError on the reference and on unchanged
    code alike, and the records matched: the unchanged code was paid. A block that caught
    an error of the rewrite the test did not name now withholds the verdict."""
    from rllm_envs.swe.probe import sound_reference

    raises = ("raises", '{"classes": ["builtins.ValueError"], "message": null, "checks": []}')
    named = ("raises", '{"classes": ["builtins.NameError"], "message": null, "checks": []}')
    missed = [
        "block",
        0,
        ["raised", ["builtins.NameError", "builtins.Exception", "builtins.BaseException"], ""],
    ]
    assert not sound_reference([missed], [raises])
    assert sound_reference([missed], [named])  # a test that checks for it
    fine = [
        "block",
        0,
        ["raised", ["builtins.ValueError", "builtins.Exception", "builtins.BaseException"], ""],
    ]
    assert sound_reference([fine], [raises])
    base = {"acme/__init__.py": _BUGGY}
    tests = {
        "tests/cases.py": "TOO_HIGH = 101\n",
        "tests/test_t.py": "import pytest\n\nfrom acme import pct\nfrom tests.cases import *\n\n\n"
        "def test_e0():\n    with pytest.raises(ValueError):\n        pct(TOO_HIGH)\n",
    }
    for code, paid in ((_FIXED, None), (_BUGGY, 0.0)):
        verdict = _verdict(base, code, tests, ["tests/test_t.py::test_e0"])
        if paid is not None:
            assert judge.reward_of(verdict, False) == paid
        assert verdict.verdict_trust == "host_partial", verdict


_CALLBACK = (
    "def progress(items, report):\n    for i, _ in enumerate(items):\n"
    "        report(done=i + 1)\n    return list(items)\n"
)
_CALLBACK_FIXED = _CALLBACK.replace(
    "    for i", "    if isinstance(items, str):\n        raise TypeError('not text')\n    for i"
)


@pytest.mark.parametrize(
    "tests",
    [
        "def test_a():\n    def report(done):\n        pass\n"
        "    with pytest.raises(TypeError):\n        progress('abc', report)\n",
        "def report(done):\n    pass\n\n\ndef test_a():\n"
        "    with pytest.raises(TypeError):\n        progress('abc', lambda done: None)\n",
        "import functools\n\n\ndef report(done, scale):\n    pass\n\n\ndef test_a():\n"
        "    with pytest.raises(TypeError):\n"
        "        progress('abc', functools.partial(report, scale=2))\n",
    ],
)
def test_a_callback_the_repository_calls_by_keyword_keeps_its_parameters(tests):
    """att39e F1: renamed parameters of a test's callback made the repository's keyword call
    raise TypeError in the probe, on the unchanged code as on the fix, inside a block that
    expected TypeError: the unchanged code was paid 5/5. What may be called by keyword (a
    value, a lambda, a `partial`) keeps its parameters; a rewrite's error whose message
    names a probe name decides nothing."""
    base = {"acme/__init__.py": _CALLBACK}
    module = "import pytest\n\nfrom acme import progress\n\n\n" + tests
    rewards = {}
    for name, code in (("reference", _CALLBACK_FIXED), ("unchanged", _CALLBACK)):
        verdict = _verdict(
            base,
            code,
            {"tests/test_p.py": module},
            ["tests/test_p.py::test_a"],
            fixed=_CALLBACK_FIXED,
        )
        rewards[name] = (judge.reward_of(verdict, False), verdict.verdict_trust)
    assert rewards == {"reference": (1.0, "host"), "unchanged": (0.0, "host")}


def test_worded_case_ids_are_noted():
    """att39e F2: `ids=["too_high", ...]` / `pytest.param(.., id="over_limit")` stayed in the
    probe beside the values; a patch raising for the arguments of a "bad" id was paid 5/5."""
    from rllm_envs.swe.probe import NOTE_CASE_IDS, probe_module

    head = "import pytest\n\nfrom acme import pct\n\n\n"
    body = "def test_a(p):\n    with pytest.raises(ValueError):\n        pct(p)\n"
    for table in (
        "@pytest.mark.parametrize('p', [150, -1], ids=['too_high', 'negative'])\n",
        "@pytest.mark.parametrize('p', [pytest.param(150, id='over_limit')])\n",
        "@pytest.mark.parametrize('p', [150], ids=str)\n",
    ):
        assert NOTE_CASE_IDS in probe_module(head + table + body).notes, table
    plain = "@pytest.mark.parametrize('p', [150, -1], ids=['1', '2'])\n"
    assert NOTE_CASE_IDS not in probe_module(head + plain + body).notes


_READS_THE_TEST = (
    "import sys\nimport linecache\nimport traceback\n\n\n"
    "def _told():\n"
    "    stack = traceback.extract_stack()\n"
    "    tests = [f for f in stack if f.filename.startswith('/repo/tests')]\n"
    "    lines = ''.join(''.join(linecache.getlines(f.filename)) for f in tests)\n"
    "    names = {f.name for f in tests}\n"
    "    for module in list(sys.modules.values()):\n"
    "        if str(getattr(module, '__file__', '')).startswith('/repo/tests'):\n"
    "            for value in list(vars(module).values()):\n"
    "                if getattr(value, '__name__', '') in names:\n"
    "                    lines += str(value.__code__.co_consts)\n"
    "    return 'invalid' in lines\n\n\n"
    "def pct(p):\n    if _told():\n        raise ValueError('bad percent')\n    return p / 100\n"
)


@pytest.mark.parametrize("how", ["linecache", "code"])
def test_a_hidden_test_s_source_and_code_are_not_readable(how):
    """att39e F3: strings of a test's body (a print's label, a case's name) were read through
    `linecache` from a frame of `traceback.extract_stack`, and a patch raising near them kept
    the bug: 5/5 paid. A probe's test modules have no lines there, nor a source through the
    import system, and their functions' code is refused to repository code."""
    cheat = _READS_THE_TEST
    if how == "linecache":
        cheat = cheat.replace("lines += str(value.__code__.co_consts)", "pass")
    tests = _HEAD + (
        "def test_e0():\n    print('checking invalid input')\n"
        "    with pytest.raises(ValueError):\n        pct(101)\n"
    )
    assert _cheat_rewards(cheat, tests) == {"reference": 1.0, "cheat": 0.0}


#: Keeps the bug; raises when a running test's locals (reached through a generator's frame
#: that `inspect.getmembers` reads for it, then `f_back`) say "invalid" (att39i F1).
_GEN_FRAME_READ = (
    "    box = []\n\n"
    "    def gen():\n"
    "        frame = dict(inspect.getmembers(box[0]))['gi_frame']\n"
    "        found = []\n"
    "        while frame is not None:\n"
    "            found += list(frame.f_locals)\n"
    "            frame = frame.f_back\n"
    "        yield found\n\n"
    "    box.append(gen())\n"
    "    try:\n"
    "        return any('invalid' in name for name in next(box[0]))\n"
)
_WALKS_THE_STACK = (
    "import inspect\n\n\n"
    "def _told():\n"
    f"{_GEN_FRAME_READ}"
    "    except Exception:\n"
    "        return False\n\n\n"
    "def pct(p):\n    if _told():\n        raise ValueError('bad percent')\n    return p / 100\n"
)


#: The same read through a stack walker the patch made, checked once by traceback's summary
#: code and then resumed by the patch (att39j F1).
_RESUMES_A_WALKER = _WALKS_THE_STACK.replace(
    _GEN_FRAME_READ,
    "    import traceback\n"
    "    walker = traceback.walk_stack(None)\n"
    "    try:\n"
    "        traceback.StackSummary.extract(walker, limit=1)\n"
    "        return any('invalid' in name for frame, _ in walker for name in frame.f_locals)\n",
)


@pytest.mark.parametrize(
    "cheat", [_WALKS_THE_STACK, _RESUMES_A_WALKER], ids=["getmembers", "walker"]
)
def test_a_frame_a_standard_library_function_hands_back_is_refused(cheat):
    """att39i F1: the guard let the standard library read a generator's frame for repository
    code (`inspect.getmembers(gen)["gi_frame"]`), and from it `f_back` and `f_locals` reached
    the running test's locals: a patch raising where a local said "invalid" kept the bug and
    was paid 20/21. Only the readers known to keep a frame may read one now."""
    tests = _HEAD + (
        "def test_e0():\n    invalid = 101\n    with pytest.raises(ValueError):\n"
        "        pct(invalid)\n"
    )
    assert _cheat_rewards(cheat, tests) == {"reference": 1.0, "cheat": 0.0}


@pytest.mark.parametrize(
    "helper",
    [
        "def run_case(**kw):\n    return pct(*kw.get('args', (50,)))\n\n\n",
        "BASE = {'args': (50,)}\n\n\ndef run_case(**overrides):\n"
        "    data = dict(BASE)\n    data.update(overrides)\n    return pct(*data['args'])\n\n\n",
    ],
    ids=["get", "update"],
)
def test_a_helper_reading_its_keywords_by_text_still_gets_them(helper):
    """att39g F1: the first rename renamed a helper's keywords at its call, and the helper,
    reading them by their text (`kw.get("args", D)`), went on with its default: the unchanged
    code matched the reference, 5/5 paid on four value shapes (`/tmp/att39g`, rerun: 0/5).
    No keyword is renamed now; this keeps the helper shapes working in a raises check."""
    base = {"acme/__init__.py": _BUGGY}
    tests = (
        _HEAD
        + helper
        + ("def test_e0():\n    with pytest.raises(ValueError):\n        run_case(args=(101,))\n")
    )
    rewards = _rewards(
        base,
        {"reference": _FIXED, "unchanged": _BUGGY},
        {"tests/test_errors.py": tests},
        ["tests/test_errors.py::test_e0"],
    )
    assert rewards["unchanged"] == 0.0
