"""Many runs in a row, and many at once: nothing left behind, no cross-talk between runs."""

from __future__ import annotations

import os
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from rllm_envs.sandbox import Limits, Status, run
from tests.sandbox.conftest import own_wrapper_pids, sandbox_processes

SCRATCH_DIRS = ["/tmp", "/var/tmp", "/dev/shm"]
FIREJAIL_STATE = "/run/firejail/sandbox"  # one file per running firejail (root only)


def _firejail_state() -> set[str]:
    """State files of this test's firejail sandboxes whose process is gone (a leak).

    Only this test's: other work on the machine may leave its own state meanwhile.
    """
    own = {str(pid) for pid in own_wrapper_pids()}
    try:
        return {
            name
            for name in os.listdir(FIREJAIL_STATE)
            if name in own and not os.path.isdir(f"/proc/{name}")
        }
    except OSError:
        return set()


def _owned_by_sandbox(token: str) -> set[str]:
    """Files in the scratch directories named after this test's token."""
    found = set()
    for directory in SCRATCH_DIRS:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        found |= {os.path.join(directory, name) for name in entries if token in name}
    return found


def _children() -> set[str]:
    """Child processes of this test process (other tests may own long-lived workers)."""
    me = str(os.getpid())
    found = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[1] == me:
                        found.add(pid)
            except (OSError, IndexError):
                pass
    return found


def _settle(children_before: set[str]) -> None:
    deadline = time.monotonic() + 10
    while (sandbox_processes(zombies=True) or _children() - children_before) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.05)


def test_many_runs_leave_nothing_behind(backend):
    run("print(0)", backend=backend)  # warm-up (backend probe)
    fds_before = sorted(os.listdir("/proc/self/fd"))
    token = f"rllm-leak-{secrets.token_hex(6)}"
    threads_before = threading.active_count()
    # A math-grader worker or an engine started by an earlier test may already be running.
    children_before = _children()
    codes = [
        "print(input())",
        "import time\ntime.sleep(30)",  # timeout
        "while True: print('x' * 100)",  # output limit
        "import os\nif os.fork() == 0:\n    import time; time.sleep(30)\nprint('forked')",
        "raise SystemExit(2)",
        # Tries to leave a file behind in every scratch directory.
        f"for d in {SCRATCH_DIRS!r}:\n"
        "    try:\n"
        f"        open(d + '/{token}', 'w').write('x')\n"
        "    except OSError:\n"
        "        pass\n",
    ]
    for i in range(25):
        result = run(
            codes[i % len(codes)],
            stdin=f"{i}\n",
            backend=backend,
            limits=Limits(time_limit=0.5, max_output_bytes=10_000),
        )
        assert result.status is not Status.SANDBOX_ERROR, result.stderr
    _settle(children_before)
    assert sorted(os.listdir("/proc/self/fd")) == fds_before
    assert _owned_by_sandbox(token) == set()
    assert _firejail_state() == set()  # killed runs left no firejail state behind
    assert sandbox_processes(zombies=True) == [] and _children() <= children_before
    assert threading.active_count() == threads_before


def test_concurrent_runs_are_independent(backend):
    fds_before = sorted(os.listdir("/proc/self/fd"))
    children_before = _children()

    def one(i: int) -> tuple[int, str, Status]:
        code = "import sys, time\ndata = sys.stdin.read()\ntime.sleep(0.05)\nprint(data[::-1])"
        result = run(code, stdin=f"run-{i}-" + "ab" * i, backend=backend, time_limit=30)
        return i, result.stdout, result.status

    with ThreadPoolExecutor(max_workers=12) as pool:
        results = list(pool.map(one, range(48)))
    for i, stdout, status in results:
        assert status is Status.OK
        assert stdout == (f"run-{i}-" + "ab" * i)[::-1] + "\n"
    _settle(children_before)
    assert sorted(os.listdir("/proc/self/fd")) == fds_before
    assert sandbox_processes() == []


def test_concurrent_judging_with_the_pool_leaves_nothing_behind(backend):
    from rllm_envs.code.judge import TestCase, close_pools, judge

    fds_before = sorted(os.listdir("/proc/self/fd"))
    children_before = _children()
    threads_before = threading.active_count()
    tests = [TestCase(f"{i}\n", f"{2 * i}\n") for i in range(5)]
    codes = {
        "print(int(input()) * 2)": ["AC"] * 5,
        "n = int(input())\nprint(n * 2 if n % 2 else n)": ["AC", "AC", "WA", "AC", "WA"],
        "import time\nn = int(input())\nif n == 3:\n    time.sleep(30)\nprint(2 * n)": [
            "AC",
            "AC",
            "AC",
            "TLE",
            "AC",
        ],
    }
    jobs = [code for code in codes for _ in range(4)]

    def one(code: str) -> tuple[str, list[str]]:
        return code, judge(code, tests, backend=backend, time_limit=1.0).verdicts

    with ThreadPoolExecutor(max_workers=4) as pool:
        for code, verdicts in pool.map(one, jobs):
            assert verdicts == codes[code], (code, verdicts)
    close_pools()
    _settle(children_before)
    assert sorted(os.listdir("/proc/self/fd")) == fds_before
    assert sandbox_processes() == [] and _children() <= children_before
    assert threading.active_count() == threads_before
