"""A module that forks at import, under ``run_tests`` (issue #30, att30 F6).

The forked process went on past the module's code, collected the tests too and wrote its
report into the collector's result file: two reports in one, unreadable, and ``run_tests``
said "0 of 0 tests passed" with no error. The collector now writes only from its own
process, and an unreadable report is an error that says what may have happened.
"""

from __future__ import annotations

from rllm_envs.swe import judge

MODULE = (
    "import os, time\n"
    "if os.fork() != 0:\n"
    "    time.sleep(0.5)  # the forked copy reports first\n"
    "def double(x):\n    return 2 * x\n"
)
TESTS = "from pkg.mod import double\n\ndef test_double():\n    assert double(2) == 4\n"


def test_a_module_that_forks_at_import_is_still_collected():
    files = {"pkg/__init__.py": "", "pkg/mod.py": MODULE, "tests/test_mod.py": TESTS}
    report = judge.collect_and_run(files, ["tests/test_mod.py"])
    ids = [o.id for o in report.outcomes]
    assert ids == ["tests/test_mod.py::test_double"], report
