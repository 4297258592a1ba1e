"""What the sandbox does ahead of the program to start it fast, without leaving anything out.

The speed itself is measured by ``benchmarks/perf`` (``bench_sandbox``, ``bench_judge``);
these tests check the behaviour those savings rely on.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import (
    Limits,
    RunResult,
    SandboxPool,
    cgroup,
    harness,
    run,
    runner,
    seccomp,
    select_backend,
)
from rllm_envs.sandbox import pool as pool_module
from rllm_envs.sandbox.backends import Firejail

needs_cgroups = pytest.mark.skipif(
    not cgroup.available(), reason="no per-sandbox control groups on this machine"
)


@needs_cgroups
def test_the_wrapper_is_in_its_group_from_the_start(backend):
    # spawn moves the wrapper into the group at once (the first move waits for the kernel,
    # which overlaps the wrapper's start); once the bootstrap has started, every process
    # of the sandbox is in the group, and what the program forks is too.
    sandbox = runner.spawn(select_backend(backend), Limits())
    assert sandbox.group is not None
    assert sandbox.proc.pid in sandbox.group.members()
    code = (
        "import os\npid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nprint(1)\n"
    )
    group = sandbox.group
    runner.attach_group(sandbox, time.monotonic() + 30)
    tree = [sandbox.proc.pid, *runner._descendants(sandbox.proc.pid)]
    assert set(tree) <= group.members()
    result, _ = runner.communicate(sandbox, runner.program_header(code), Limits(), time.monotonic())
    assert result.ok and result.stdout == "1\n", result


def test_header_json_is_what_json_reads():
    headers = [
        {
            "index": 3,
            "outcome": "exited",
            "code": None,
            "signal": 9,
            "cpu": 0.0012,
            "wall": 1e-05,
            "maxrss_kb": 9000,
            "sizes": [-1, 0, 12],
        },
        {"compiled": 0.25, "error": 0},
        {"running": 2},
        {"done": True},
        {"odd": 'a "quoted" name', "n": float("inf")},  # not a record: json writes it
    ]
    for header in headers:
        assert json.loads(harness.header_json(header)) == header
    assert harness.header_json({"done": True}) == '{"done":true}'


def test_the_executor_imports_no_json_for_stdin_tests(backend):
    # Importing json (and re) before the first record cost every pooled judge a few ms;
    # a stdin test process inherits the executor's modules, so it sees what was imported.
    code = "import sys\nprint(sorted(m for m in ('json', 're') if m in sys.modules))\n"
    result = judge(code, [TestCase("", "[]\n")], backend=backend, warm=False)
    assert result.verdicts == ["AC"], result


def test_the_pool_starts_the_replacement_once_the_run_ends(backend, monkeypatch):
    # With another started sandbox waiting, a replacement's start (a few interpreter starts
    # of CPU) would compete with the run; it starts when the run ends instead. A pool with
    # none left started starts one at once.
    starts: list[float] = []
    spawn = pool_module.spawn

    def counting(*args, **kwargs):
        starts.append(time.monotonic())
        return spawn(*args, **kwargs)

    monkeypatch.setattr(pool_module, "spawn", counting)
    for size, deferred in ((2, True), (1, False)):
        starts.clear()
        with SandboxPool(size, backend=backend) as pool:
            assert pool.wait_ready(60)
            assert len(starts) == size
            results: list[RunResult] = []
            runner_thread = threading.Thread(
                target=_run_into, args=(pool, "import time\ntime.sleep(3)\nprint(1)", results)
            )
            runner_thread.start()
            deadline = time.monotonic() + 10
            while pool.ready == size and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(1.0)  # the run sleeps 3 s: still in progress
            during = len(starts) - size
            runner_thread.join()
            assert results and results[0].ok, results
            assert pool.wait_ready(60)
            assert during == (0 if deferred else 1), (size, starts)
            assert len(starts) == size + 1


def _run_into(pool: SandboxPool, code: str, results: list[RunResult]) -> None:
    results.append(pool.run(code))


# Calls an unprivileged program could make if nothing filtered them: each must fail with EPERM.
_UNFILTERED_WOULD_WORK = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
buf = ctypes.create_string_buffer(4096)
n = ctypes.c_long(0)
calls = {
    "sysinfo": lambda: libc.syscall(NR["sysinfo"], buf),
    "inotify_init1": lambda: libc.syscall(NR["inotify_init1"], 0),
    "io_setup": lambda: libc.syscall(NR["io_setup"], 1, ctypes.byref(n)),
    "get_robust_list": lambda: libc.syscall(NR["get_robust_list"], 0, buf, ctypes.byref(n)),
    "flock": lambda: libc.syscall(NR["flock"], os.open("/usr/bin/python3", os.O_RDONLY), 1),
}
failed = []
for name, call in calls.items():
    ctypes.set_errno(0)
    if call() == -1 and ctypes.get_errno() == errno.EPERM:
        failed.append(name)
print(sorted(failed))
"""


def test_firejail_is_not_asked_to_build_a_filter_at_each_start():
    # firejail's prebuilt default list; our own filter (the bootstrap's) fails the rest.
    if not seccomp.supported():
        pytest.skip("no filter of ours for this architecture: firejail adds the list")
    command = Firejail().command(["/bin/true"])
    assert "--seccomp" in command
    assert not any(arg.startswith("--seccomp=") for arg in command)


def test_denied_calls_fail_on_every_backend(backend):
    if not seccomp.supported():
        pytest.skip("no filter of ours for this architecture")
    numbers = seccomp._ARCHES[seccomp._arch()][1]
    wanted = ("sysinfo", "inotify_init1", "io_setup", "get_robust_list", "flock")
    nr = {name: numbers[name] for name in wanted}
    code = f"NR = {nr!r}\n" + _UNFILTERED_WOULD_WORK
    result = run(code, backend=backend)
    assert result.ok and result.stdout == f"{sorted(wanted)}\n", result


@needs_cgroups
def test_every_process_is_moved_while_the_wrapper_starts(backend, monkeypatch):
    # Moving a process after the start marker would wait for the kernel again after the
    # start instead of during it; the wrapper's processes are moved while it starts, so
    # the check at the marker finds them all inside.
    for _ in range(5):
        sandbox = runner.spawn(select_backend(backend), Limits())
        group = sandbox.group
        assert group is not None
        marker_read: list[bool] = []
        read = runner.os.read

        def recording_read(fd: int, n: int, marker_read=marker_read, read=read) -> bytes:
            data = read(fd, n)
            marker_read.append(True)
            return data

        def refusing_attach(pid: int, marker_read=marker_read, attach=group.attach) -> None:
            if marker_read:
                raise OSError("moved after the marker")
            attach(pid)

        monkeypatch.setattr(runner.os, "read", recording_read)
        monkeypatch.setattr(group, "attach", refusing_attach)
        try:
            runner.attach_group(sandbox, time.monotonic() + 30)
            monkeypatch.undo()
            assert marker_read
            tree = [sandbox.proc.pid, *runner._descendants(sandbox.proc.pid)]
            assert set(tree) <= group.members()
        finally:
            monkeypatch.undo()
            result, _ = runner.communicate(
                sandbox, runner.program_header("print(1)"), Limits(), time.monotonic()
            )
        assert result.ok, result
