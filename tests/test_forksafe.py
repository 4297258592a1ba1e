"""Locks a forked child can take: gymnasium's AsyncVectorEnv forks env workers from a process
whose sandbox threads hold module locks now and then (SWE-v0's vector test hung on one)."""

from __future__ import annotations

import os
import threading
import time

import pytest

from rllm_envs.forksafe import ForkSafeLock
from rllm_envs.sandbox import cgroup


def _child_exit_code(in_child, timeout: float = 10.0) -> int | None:
    """Fork; the child runs ``in_child()`` and exits 0 if it returns True. None on a hang."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os._exit(0 if in_child() else 1)
        finally:
            os._exit(2)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    os.kill(pid, 9)
    os.waitpid(pid, 0)
    return None


def _held_by_another_thread(lock) -> tuple[threading.Event, threading.Thread]:
    taken, release = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            release.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    assert taken.wait(10)
    return release, thread


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork with threads (3.12+)
def test_a_lock_held_by_another_thread_at_fork_is_free_in_the_child():
    lock = ForkSafeLock()
    release, thread = _held_by_another_thread(lock)
    try:

        def take() -> bool:
            with lock:
                return True

        assert _child_exit_code(take) == 0
        assert lock.locked()  # the parent's holder still holds it
    finally:
        release.set()
        thread.join(10)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_child_forked_while_a_sandbox_thread_creates_a_cgroup_can_create_one():
    release, thread = _held_by_another_thread(cgroup._lock)
    try:
        assert _child_exit_code(lambda: cgroup.available() in (True, False)) == 0
    finally:
        release.set()
        thread.join(10)
