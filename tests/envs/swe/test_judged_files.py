"""The verdict's trust counts the test modules the judged tests load, not the whole suite.

Before, one shape the probe cannot decide on the host anywhere in the repository's tests
(an identity check in an unrelated module) made every verdict of the repository
``host_partial``, withheld by default: most of a SWE-bench-format repository's verdicts paid
nothing. Now the modules the judged tests cannot load are neither counted nor sent to the
sandbox (issue #30, session 10).
"""

from __future__ import annotations

from rllm_envs.swe import judge, probe

from .test_attacks_s8 import _run
from .test_verdict_gaps import _task

UNRELATED = "from stats.mean import mean\n\ndef test_alias():\n    assert mean([1]) is mean([1])\n"


def _with(task: dict, extra: dict[str, str]) -> dict:
    return {**task, "files": {**task["files"], **extra}}


BASE = _task(
    "stats",
    "mean",
    "def mean(xs):\n    return sum(xs) // len(xs)\n",
    "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "from stats.mean import mean\n\ndef test_one():\n    assert mean([2]) == 2\n",
    "\n\ndef test_half():\n    assert mean([1, 2]) == 1.5\n",
)


def test_a_flagged_module_the_tests_do_not_load_does_not_withhold():
    task = _with(BASE, {"tests/test_other.py": UNRELATED})
    reward, info = _run(task, oracle=True)
    # Old code: host_partial (an identity check in tests/test_other.py), withheld: 0.
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    assert _run(task)[0] == 0.0


def test_a_flagged_module_the_tests_import_still_withholds():
    imports = _task(
        "stats",
        "mean",
        BASE["files"]["stats/mean.py"],
        "def mean(xs):\n    return sum(xs) / len(xs)\n",
        BASE["files"]["tests/test_mean.py"],
        "\nfrom tests import helpers\n\ndef test_half():\n    assert mean([1, 2]) == 1.5\n",
    )
    task = _with(imports, {"tests/helpers.py": UNRELATED.replace("def test_alias", "def alias")})
    reward, info = _run(task, oracle=True)
    assert reward == 0.0 and info["verdict_trust"] == "host_partial", info
    assert probe.NOTE_IDENTITY in info["verdict_weakened"]


def test_judged_files_keeps_what_the_tests_can_load():
    files = {
        "pkg/core.py": "x = 1\n",
        "tests/__init__.py": "",
        "tests/conftest.py": "import pytest\n",
        "tests/test_a.py": "from tests.util import helper\n\ndef test_a():\n    assert helper()\n",
        "tests/util.py": "from tests.deep import thing\n",
        "tests/deep.py": "thing = 1\n",
        "tests/test_b.py": "def test_b():\n    assert f() is g()\n",
        "tests/other/__init__.py": "",
        "tests/other/conftest.py": "",
        "tests/other/test_c.py": "def test_c():\n    pass\n",
        "tests/data/cases.json": "{}",
    }
    kept = judge.judged_files(files, ["tests/test_a.py::test_a"])
    assert set(kept) == {
        "pkg/core.py",
        "tests/__init__.py",
        "tests/conftest.py",
        "tests/test_a.py",
        "tests/util.py",
        "tests/deep.py",
        "tests/data/cases.json",
    }
    assert judge.probe_notes(kept) == (judge.NOTE_DATA_FILE,)
    assert probe.NOTE_IDENTITY in judge.probe_notes(files)
    both = judge.judged_files(files, ["tests/test_a.py::test_a", "tests/other/test_c.py::test_c"])
    assert {"tests/other/__init__.py", "tests/other/conftest.py", "tests/other/test_c.py"} <= set(
        both
    )
