"""Round 5 of the attacks on the code sandbox (issue #24, session 9), through the public API.

Each test replays one attack that got through, on both isolating backends, cold (a fresh
sandbox) and warm (a pool) where the judge is used:

* a covert channel between concurrent sandboxes through shared futexes (keyed by the
  read-only /usr file every sandbox maps): futexes are private-only inside the sandbox;
* state carried from one test to the next through the executor's scheduling attributes:
  a test may change its own only;
* a test that stops the executor held the judge for every test's budget: the host ends
  a run whose executor goes silent;
* a concurrent CPU hog made a correct program TLE on the wall clock: time spent waiting
  for a CPU does not count against a test (up to a cap).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import run
from rllm_envs.sandbox.harness import wall_limit

pytestmark = pytest.mark.skipif(
    __import__("os").uname().machine != "x86_64", reason="syscall numbers of x86-64"
)

# A shared futex on a read-only mapping of a file every sandbox sees: the sender waits on
# it, the receiver wakes it and learns from the count woken whether a sender is there.
_FUTEX_SENDER = r"""
import ctypes, mmap, os, struct, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open("/usr/bin/python3", os.O_RDONLY)
page = libc.mmap(None, 4096, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
key = page + 2048
word = ctypes.c_uint32.from_address(key).value
timeout = (ctypes.c_long * 2)(0, 200_000_000)
end = time.monotonic() + 4.0
while time.monotonic() < end:  # FUTEX_WAIT, shared: the receiver may wake it
    if libc.syscall(202, ctypes.c_void_p(key), 0, word, timeout, 0, 0) == -1:
        if ctypes.get_errno() not in (110, 4):  # ETIMEDOUT, EINTR: wait again
            time.sleep(0.01)
print(input())
"""

_FUTEX_RECEIVER = r"""
import ctypes, mmap, os, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                      ctypes.c_int, ctypes.c_long]
fd = os.open("/usr/bin/python3", os.O_RDONLY)
page = libc.mmap(None, 4096, 1, 1, fd, 0)
key = page + 2048
woken = 0
end = time.monotonic() + 3.0
while time.monotonic() < end and not woken:  # FUTEX_WAKE, shared
    woken = max(libc.syscall(202, ctypes.c_void_p(key), 1, 1, 0, 0, 0), 0)
    time.sleep(0.01)
calls = [
    libc.syscall(nr, 0, 0, 0, 0, 0, 0) == -1 and ctypes.get_errno() for nr in (449, 454, 455, 456)
]
print("heard" if woken else "silent", *calls)
"""


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False])
def test_no_futex_channel_between_concurrent_sandboxes(backend, warm):
    """Two concurrent submissions meet on a shared futex of /usr/bin/python3 (the relay
    that got reward 1.0 without solving): the receiver wakes no one; the futex2 calls
    (flags in memory) fail with ENOSYS."""
    done: dict[str, object] = {}

    def sender() -> None:
        done["s"] = judge(
            _FUTEX_SENDER, [TestCase("x\n", "x\n")], time_limit=3.0, backend=backend, warm=warm
        )

    thread = threading.Thread(target=sender)
    thread.start()
    try:
        time.sleep(1.0)
        got = judge(
            _FUTEX_RECEIVER,
            [TestCase("\n", "silent 38 38 38 38\n")],
            time_limit=3.0,
            backend=backend,
            warm=warm,
        )
    finally:
        thread.join()
    assert got.verdicts == ["AC"], (got.results[0].output, got.results[0].error)


_CPP_THREADS = r"""
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <vector>
int main() {
    long n; if (scanf("%ld", &n) != 1) return 1;
    std::mutex mu; std::condition_variable cv; long total = 0; int ready = 0;
    std::vector<std::thread> ts;
    for (int t = 0; t < 3; t++) ts.emplace_back([&, t] {
        long s = 0; for (long i = t; i < n; i += 3) s += i;
        std::unique_lock<std::mutex> lock(mu); total += s; ready++; cv.notify_all();
    });
    { std::unique_lock<std::mutex> lock(mu); cv.wait(lock, [&] { return ready == 3; }); }
    for (auto &t : ts) t.join();
    printf("%ld\n", total);
}
"""

_PY_THREADS = r"""
import queue, subprocess, threading
n = int(input())
q = queue.Queue()
cond = threading.Condition()
ts = [threading.Thread(target=lambda t=t: q.put(sum(range(t, n, 4)))) for t in range(4)]
for t in ts: t.start()
for t in ts: t.join()
with cond: cond.notify_all()
print(sum(q.get() for _ in range(4)))
"""


@pytest.mark.parametrize("warm", [True, False])
def test_threads_and_locks_still_work(backend, warm):
    """Private futexes (mutexes, condition variables, joins, queues) are untouched."""
    tests = [TestCase("100000\n", f"{sum(range(100000))}\n")]
    py = judge(_PY_THREADS, tests, time_limit=5.0, backend=backend, warm=warm)
    assert py.verdicts == ["AC"], py.results[0].error
    cpp = judge(_CPP_THREADS, tests, time_limit=5.0, backend=backend, warm=warm, language="cpp")
    assert cpp.verdicts == ["AC"], cpp.results[0].error


_STATE = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
pp = os.getppid()
own = os.getpriority(os.PRIO_PROCESS, 0)
if input().strip() == "store":
    def errno_of(call):
        try:
            call()
            return 0
        except OSError as e:
            return e.errno
    seen = [
        errno_of(lambda: os.setpriority(os.PRIO_PROCESS, pp, 19)),
        errno_of(lambda: os.setpriority(os.PRIO_PGRP, 0, 19)),
        errno_of(lambda: os.setpriority(os.PRIO_USER, 0, 19)),
        libc.syscall(251, 1, pp, (3 << 13)) == -1 and ctypes.get_errno(),  # ioprio_set IDLE
        errno_of(lambda: os.sched_setaffinity(pp, {0})),
        errno_of(lambda: os.sched_setscheduler(pp, os.SCHED_BATCH, os.sched_param(0))),
        errno_of(lambda: __import__("resource").prlimit(pp, 7, (8, 8))),
        # one's own, one step lower (the run itself may be niced already): allowed
        errno_of(lambda: os.setpriority(os.PRIO_PROCESS, 0, own + 1)),
    ]
    print(*seen)
else:
    print("nice", own, "io", libc.syscall(252, 1, 0) >> 13)
"""


@pytest.mark.parametrize("warm", [True, False])
def test_a_test_cannot_change_the_executor_for_the_next(backend, warm):
    """A test's changes to its parent (nice, I/O priority, affinity, policy, limits) would be
    inherited by the next test's fork: each fails with EPERM, one's own still works."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # what the sandbox inherits from this run
    if nice >= 18:
        pytest.skip("this run is niced to the floor: a changed nice would not show")
    tests = [TestCase("store\n", "1 1 1 1 1 1 1 0\n"), TestCase("read\n", f"nice {nice} io 0\n")]
    got = judge(_STATE, tests, time_limit=5.0, backend=backend, warm=warm, stop_on_failure=False)
    assert got.verdicts == ["AC", "AC"], [(r.output, r.error) for r in got.results]


_STOP_EXECUTOR = (
    "import os, signal, time\nos.kill(os.getppid(), signal.SIGSTOP)\ntime.sleep(1000)\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False])
def test_stopping_the_executor_holds_the_judge_one_test_only(backend, warm):
    """A test that SIGSTOPs its executor (firejail: a plain process of the sandbox) held the
    judge for all ten tests' budgets (37 s); the host ends a run whose executor is silent
    past one test's backstop, and the tests left are failures."""
    tests = [TestCase("1\n", "1\n")] * 10
    start = time.monotonic()
    got = judge(
        _STOP_EXECUTOR, tests, time_limit=1.0, backend=backend, warm=warm, stop_on_failure=True
    )
    took = time.monotonic() - start
    assert "AC" not in got.verdicts and len(got.verdicts) == 10
    assert took < 2 * wall_limit(1.0) + 8.0, took


def test_a_sleeping_program_still_stops_at_the_backstop(backend):
    """Waiting that is not waiting for a CPU (a sleep) gets no extra wall-clock time."""
    start = time.monotonic()
    got = judge(
        "import time\ntime.sleep(60)\n", [TestCase("", "")], time_limit=0.5, backend=backend
    )
    assert got.verdicts == ["TLE"]
    assert time.monotonic() - start < wall_limit(0.5) + 4.0


_VICTIM = "n = int(input())\ns = 0\nfor i in range(n):\n    s += i * i % 7\nprint(s)\n"
_HOG = (
    "import os\nfor _ in range(16):\n    if os.fork() == 0:\n        break\nwhile True:\n    pass\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False])
def test_a_correct_program_keeps_ac_next_to_cpu_hogs(backend, warm):
    """Six concurrent sandboxes of busy processes slowed a correct program past its wall
    backstop (TLE at 2L+1 s with 0.9 s of CPU). Time it spends waiting for a CPU does not
    count: it stays AC, and its CPU time is what is checked against the limit. The victim
    needs about a third of its limit on an idle core (with 16M steps it needed more than the
    whole 2 s of CPU when another test run shared the machine: TLE alone, before any hog)."""
    n = 6_000_000
    tests = [TestCase(f"{n}\n", f"{sum(i * i % 7 for i in range(n))}\n")]
    alone = judge(_VICTIM, tests, time_limit=2.0, backend=backend, warm=warm)
    assert alone.verdicts == ["AC"], alone.results[0].error
    hogs = [
        threading.Thread(target=run, args=(_HOG,), kwargs={"backend": backend, "time_limit": 16})
        for _ in range(6)
    ]
    for hog in hogs:
        hog.start()
    try:
        time.sleep(2.0)
        start = time.monotonic()
        loaded = judge(_VICTIM, tests, time_limit=2.0, backend=backend, warm=warm)
        took = time.monotonic() - start
    finally:
        for hog in hogs:
            hog.join()
    assert loaded.verdicts == ["AC"], (loaded.results[0].error, took)
    assert loaded.results[0].time <= 2.0


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_filter_builds_for_each_architecture(monkeypatch, arch):
    """Every syscall the new rules name has a number on each architecture we build for."""
    from rllm_envs.sandbox import seccomp

    monkeypatch.setattr(seccomp, "_arch", lambda: arch)
    numbers = seccomp._ARCHES[arch][1]
    for name in ("futex", *seccomp.ENOSYS_SYSCALLS, *seccomp.SELF_ONLY_SYSCALLS):
        assert name in numbers
    program = seccomp.filter_program()
    assert len(program) % 8 == 0 and len(program) // 8 < 4096
