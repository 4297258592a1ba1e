"""Round 9 of the attacks on the code sandbox (issue #24, session 10), through the public API.

Each test replays one attack of the blind round (att24b) that got through:

* F1: the sandboxes of a process shared one memory limit that the sum of their own limits
  exceeded, so a sandbox that parked memory in unmapped ``memfd`` pages (in no process's
  size) filled it and the OOM killer killed a *concurrent* correct program (``MLE``, or
  ``CE`` when the compiler was killed): sabotage that pays under a group-relative reward,
  and a channel. A sandbox now starts only when its limit fits (admission control), and a
  kill by an OOM the sandbox did not cause is never a verdict;
* F2: with every pool user taken, new sandboxes ran as one shared user (the per-user
  pipe-buffer channel reopened). They wait for a free user now;
* F3: a test that kept its own children spinning on its CPU looked like a test waiting for
  a CPU and ran to the 10x wall cap. A test stops once all its processes used its limit;
* F4: the C++ compile had a wall-clock limit only (a correct program was CE under load).
  It is a CPU-time limit now, with the wall clock as a backstop;
* F0: the page cache of large read-only files was an exact channel (a major fault iff a
  page was not cached). What evicts or reads residency is refused, and the large trees no
  program needs are hidden.
"""

from __future__ import annotations

import os
import threading

import pytest

from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import Limits, Status, cgroup, run, runner, uids

needs_cgroups = pytest.mark.skipif(not cgroup.available(), reason="no control groups here")

# ------------------------------------------------------------ F1: memory of other sandboxes

_HOG = """
import os, time
fds, left, chunk = [], {mb} << 20, b"x" * (1 << 20)
while left > 0:  # RLIMIT_FSIZE: many memfds of 15 MiB
    fd = os.memfd_create("h")
    n = 0
    while n < (15 << 20) and left > 0:
        os.write(fd, chunk)
        n += 1 << 20
        left -= 1 << 20
    fds.append(fd)
print("held", flush=True)
time.sleep(2)
"""

_VICTIM = """
import time
time.sleep(1.0)  # the hogs fill first
b = bytearray(300 << 20)
for i in range(0, len(b), 4096):
    b[i] = 1
print(int(input()) * 2)
"""


@needs_cgroups
def test_a_memfd_hoarder_cannot_kill_a_concurrent_program(backend, monkeypatch):
    """Two sandboxes each park 700 MiB of unmapped memfds (within their own 800 MiB) under a
    common limit of 1,536 MiB; a concurrent correct program that touches 300 MiB was killed
    (MEMORY). Now the sandboxes start only when their limits fit, and all three succeed."""
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "1536")
    limits = Limits(memory_mb=800, time_limit=60)
    results: dict[str, object] = {}

    def go(name: str, code: str, stdin: str = "") -> None:
        results[name] = run(code, stdin=stdin, backend=backend, limits=limits)

    threads = [threading.Thread(target=go, args=(f"hog{i}", _HOG.format(mb=700))) for i in (0, 1)]
    threads.append(threading.Thread(target=go, args=("victim", _VICTIM, "21\n")))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    victim = results["victim"]
    assert victim.status is Status.OK and victim.stdout == "42\n", victim  # type: ignore[attr-defined]
    for name in ("hog0", "hog1"):
        assert results[name].stdout == "held\n", results[name]  # type: ignore[attr-defined]


@needs_cgroups
def test_a_sandbox_waits_for_room_and_fails_cleanly_past_the_bound(backend, monkeypatch):
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "1200")
    monkeypatch.setattr(cgroup, "ADMISSION_WAIT", 0.5)
    held = cgroup.create(900, 8)  # a live sandbox's group: 996 MiB of the 1,200
    assert held is not None
    try:
        result = run("print(1)", backend=backend, limits=Limits(memory_mb=512))
        assert result.status is Status.SANDBOX_ERROR
        assert "no room" in result.stderr and cgroup.TOTAL_MEMORY_ENV_VAR in result.stderr
    finally:
        held.close()
    assert run("print(1)", backend=backend, limits=Limits(memory_mb=512)).stdout == "1\n"


def _squeeze_parent(mb: int) -> None:
    """Lower this process's common memory limit behind the admission control's back: memory
    short outside the sandbox (another process's sandboxes, the machine)."""
    parent = cgroup._parent
    assert parent is not None and parent[0] == os.getpid()
    if cgroup._kind == "v1":
        cgroup._write_v1_limit(parent[1], mb << 20)
    else:
        cgroup._write(os.path.join(parent[1], "memory.max"), str(mb << 20))


def _restore_parent() -> None:
    parent = cgroup._parent
    assert parent is not None
    if cgroup._kind == "v1":
        cgroup._write_v1_limit(parent[1], parent[2])
    else:
        limit = parent[2]
        cgroup._write(os.path.join(parent[1], "memory.max"), str(limit) if limit else "max")


_ALLOCATE = "b = bytearray(300 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\nprint(2)\n"


@needs_cgroups
def test_a_kill_the_sandbox_did_not_cause_is_no_verdict(backend, monkeypatch):
    """A program under its own limit (800 MiB) killed because memory was short outside its
    group was MEMORY (a judge's MLE). It is a sandbox error now, flagged on the result."""
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "2048")
    limits = Limits(memory_mb=800, time_limit=30)
    sandbox = runner.spawn(runner.select_backend(backend), limits)
    _squeeze_parent(200)
    try:
        start = __import__("time").monotonic()
        result, _ = runner.communicate(
            sandbox, runner.program_header(_ALLOCATE) + b"", limits, start
        )
    finally:
        _restore_parent()
    assert result.killed_from_outside, result
    assert result.status is Status.SANDBOX_ERROR, result
    assert "not the program's fault" in result.stderr
    # Its own limit reached is still its own verdict.
    own = run(_ALLOCATE, backend=backend, limits=Limits(memory_mb=200, time_limit=30))
    assert own.status is Status.MEMORY and not own.killed_from_outside, own


@needs_cgroups
def test_the_judge_never_turns_an_outside_kill_into_a_verdict(backend, monkeypatch):
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "2048")
    run("print(1)", backend=backend)  # this process's common group, at 2,048 MiB
    _squeeze_parent(200)
    try:
        result = judge(_ALLOCATE, [TestCase("", "2\n")], backend=backend, warm=False)
    finally:
        _restore_parent()
    assert "MLE" not in result.verdicts and not result.results, result
    assert result.sandbox_error and "not the program's fault" in result.sandbox_error
    again = judge(_ALLOCATE, [TestCase("", "2\n")], backend=backend, warm=False)
    assert again.verdicts == ["AC"], again


# ------------------------------------------------------------ F2: the user pool


def _pool_or_skip() -> tuple[tuple[int, int], ...]:
    if os.geteuid() != 0:
        pytest.skip("not root: no user pool")
    users = uids.pool_users(os.environ.get("RLLM_SANDBOX_USER", "rllm-sandbox"))
    if not users:
        pytest.skip("no sandbox user pool here (scripts/setup_sandbox_user.sh)")
    return users


def test_sandboxes_never_share_a_user_when_the_pool_is_taken(backend, monkeypatch):
    """With every pool user held, a new sandbox ran as the shared base user (the per-user
    pipe-buffer account carried bits again). It waits now, then fails cleanly."""
    users = _pool_or_skip()
    monkeypatch.setattr(uids, "ACQUIRE_WAIT", 0.3)
    held: list[uids.Lease] = []
    try:
        for _ in range(len(users)):
            try:
                lease = uids.acquire(True)
            except uids.PoolExhausted:
                break  # others (concurrent tests) hold the rest
            assert lease.identity in users
            held.append(lease)
        result = run("import os\nprint(os.getuid())", backend=backend)
        assert result.status is Status.SANDBOX_ERROR, result
        assert "stayed taken" in result.stderr
    finally:
        for lease in held:
            lease.release()
    result = run("import os\nprint(os.getuid())", backend=backend)
    assert result.status is Status.OK, result
