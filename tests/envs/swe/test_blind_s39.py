"""Findings of the s39 blind round against SWE-v0 (att39a, on bb4735e), fixed in s39.

Each was a patch that kept the bug and was paid 1.0 ``host`` in the default mode (custom
records through ``judge.verdict``): it raised only when a file of its call stack had "error"
in its path (``traceback.extract_stack``), which the test module's path still told.
"""

from __future__ import annotations

import subprocess
import sys

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
    rewards = {}
    for name, code in (("reference", _FIXED), ("cheat", _CHEAT), ("unchanged", _BUGGY)):
        verdict = judge.verdict(
            base,
            make_diff(base, {**base, "acme/__init__.py": code}),
            test_patch=make_diff(base, {**base, errors: _ERRORS}),
            fail_to_pass=[f"{errors}::test_e0"],
            pass_to_pass=["tests/test_values.py::test_v0"],
            reference_patch=make_diff(base, {**base, "acme/__init__.py": _FIXED}),
            warm=False,
        )
        assert verdict.verdict_trust == "host", verdict
        rewards[name] = judge.reward_of(verdict, False)
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
