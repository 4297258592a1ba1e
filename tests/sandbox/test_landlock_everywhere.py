"""Landlock for every sandboxed program, not only judged tests (issue #24, session 11 F1).

A process's memory reports (``/proc/self/smaps``, ``numa_maps``, ``pagemap``) tell how many
processes map a page of a shared file, a count a concurrent sandbox sets: an exact covert
channel. Judged tests were kept out of ``/proc`` (``harness.landlock_ruleset``); these tests
check the two other kinds of programs: a plain Python program of ``run()`` (and of a pool,
the ToolUse ``python`` tool's path), restricted by the bootstrap's ruleset
(``runner._LANDLOCK_SOURCE``), and the SWE executor's test processes (``__rllm_landlock__``).
Each fails on the code before this change (every report opened).
"""

from __future__ import annotations

import ast
import os
import sys

import pytest

from rllm_envs.sandbox import SandboxPool, Status, landlock, run, runner
from rllm_envs.swe import close_pools
from rllm_envs.swe.judge import run_python, run_tests

needs_landlock = pytest.mark.skipif(landlock.abi() < 1, reason="this kernel has no Landlock")

# Opens each memory report twice: by its path, and through an O_PATH descriptor of
# /proc/self (which Landlock does not check, and whose relative names the SWE guard's path
# test does not see: the guard alone refuses "/proc/self/pagemap" by its path).
PROBE_SOURCE = r"""
import errno, os
got = []
for name, how in HOWS:
    try:
        if how == "path":
            os.close(os.open("/proc/self/" + name, os.O_RDONLY))
        else:
            d = os.open("/proc/self", os.O_PATH)
            os.close(os.open(name, os.O_RDONLY, dir_fd=d))
        got.append(name + ":open")
    except OSError as e:
        got.append(name + ":" + errno.errorcode[e.errno])
print(" ".join(got))
"""
REPORTS = ("smaps", "numa_maps", "pagemap")
HOWS = [(name, how) for name in REPORTS for how in ("path", "dirfd")]
PROBE = f"HOWS = {HOWS!r}" + PROBE_SOURCE
DENIED = " ".join(f"{name}:EACCES" for name, _ in HOWS)
SWE_HOWS = [h for h in HOWS if h != ("pagemap", "path")]
SWE_PROBE = f"HOWS = {SWE_HOWS!r}" + PROBE_SOURCE
SWE_DENIED = " ".join(f"{name}:EACCES" for name, _ in SWE_HOWS)

# What a program still does: read the system, write /dev/null, start a process, and its
# traceback and __main__ are as before.
STILL_WORKS = r"""
import subprocess, sys
open("/dev/null", "w").write("x")
assert len(open("/usr/bin/python3", "rb").read(4)) == 4
print(subprocess.check_output([sys.executable, "-c", "print(6 * 7)"]).decode().strip())
print(__name__, sys.argv)
def f():
    raise ValueError("boom")
f()
"""


@needs_landlock
def test_a_run_program_cannot_open_its_memory_reports(backend):
    result = run(PROBE, backend=backend)
    assert result.status is Status.OK, result.stderr
    assert result.stdout.strip() == DENIED


@needs_landlock
def test_a_pooled_program_cannot_open_its_memory_reports(backend):
    with SandboxPool(1, backend=backend) as pool:
        for _ in range(2):  # the ruleset is built once per sandbox; each program applies it
            result = pool.run(PROBE)
            assert result.status is Status.OK, result.stderr
            assert result.stdout.strip() == DENIED


def test_a_run_program_still_works_with_its_traceback(backend):
    result = run(STILL_WORKS, backend=backend)
    assert result.status is Status.RUNTIME_ERROR
    assert result.stdout == "42\n__main__ ['main.py']\n"
    assert result.stderr == (
        "Traceback (most recent call last):\n"
        '  File "main.py", line 9, in <module>\n'
        "    f()\n"
        '  File "main.py", line 8, in f\n'
        '    raise ValueError("boom")\n'
        "ValueError: boom\n"
    )


SWE_TEST = "import os\ndef test_proc():\n" + "".join(
    "    " + line + "\n" for line in SWE_PROBE.strip().splitlines()
).replace("print(", "assert 0, (")

SWE_FILES = {
    "pkg/__init__.py": "",
    "pkg/mod.py": "X = 1\n",
    "tests/test_p.py": SWE_TEST
    + (
        "def test_repo_and_tmp_path(tmp_path):\n"
        "    (tmp_path / 'a.txt').write_text('hi')\n"
        "    assert (tmp_path / 'a.txt').read_text() == 'hi'\n"
        "    assert open('/repo/pkg/mod.py').read() == 'X = 1\\n'\n"
        "    from pkg.mod import X\n"
        "    assert X == 1\n"
    ),
}


@pytest.fixture
def swe_pools():
    yield
    close_pools()


@needs_landlock
@pytest.mark.parametrize("warm", [False, True])
def test_a_swe_test_cannot_open_its_memory_reports(backend, warm, swe_pools):
    ids = ["tests/test_p.py::test_proc", "tests/test_p.py::test_repo_and_tmp_path"]
    outcomes = run_tests(SWE_FILES, ids, backend=backend, warm=warm).outcomes
    assert outcomes[0].status == "failed"  # the probe fails with what it saw
    assert f"AssertionError: {SWE_DENIED}" in outcomes[0].message, outcomes[0].message
    assert outcomes[1].status == "passed", outcomes[1].message
    status, output = run_python(SWE_FILES, SWE_PROBE, backend=backend, warm=warm)
    assert output.strip().endswith(SWE_DENIED), (status, output)


def test_the_landlock_source_fits_one_argument_and_keeps_its_meaning():
    assert len(runner._LANDLOCK_BOOT.encode()) < 4128  # firejail's limit on one argument
    assert ast.dump(ast.parse(runner._LANDLOCK_BOOT)) == ast.dump(
        ast.parse(runner._LANDLOCK_SOURCE)
    )
    assert len(runner._BOOT.encode()) < 4128


@pytest.mark.parametrize("answers", [[-1], [0], [7, -1]])
def test_without_landlock_the_bootstrap_restricts_nothing(answers):
    # A fake syscall function that answers like a kernel without Landlock (no ABI: -1 or 0),
    # or one that refuses the ruleset: a unit test of the fallback only, so named.
    class FakeSyscall:
        def __init__(self, _name_and_library):
            pass

        def __call__(self, *args):
            return answers.pop(0)

    namespace = {"_F": FakeSyscall, "_L": object, "_U": int, "_z": 0, "os": os, "sys": sys}
    exec(runner._LANDLOCK_BOOT, namespace)
    assert namespace["_ll"] is None
    assert answers == []


def test_a_bootstrap_without_landlock_runs_programs_and_swe_tests(backend, monkeypatch, swe_pools):
    # What the bootstrap's source yields on a kernel without Landlock: nothing is restricted,
    # and programs and SWE tests run as before.
    monkeypatch.setattr(runner, "_LANDLOCK_BOOT", "_ll = None")
    result = run(PROBE, backend=backend)
    assert result.status is Status.OK, result.stderr
    assert "smaps:open" in result.stdout
    ids = ["tests/test_p.py::test_repo_and_tmp_path"]
    outcomes = run_tests(SWE_FILES, ids, backend=backend, warm=False).outcomes
    assert [o.status for o in outcomes] == ["passed"], outcomes
