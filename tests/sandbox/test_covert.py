"""No channel between concurrent sandboxes through machine-wide process counts.

A "writer" sandbox holds many processes (named with a marker of this test) while a "reader"
sandbox looks at everything that counts processes: ``/proc/loadavg``, ``/proc/stat``,
``sysinfo``, the process list, and its user's process count (lowering its own
``RLIMIT_NPROC`` and forking until that fails). The host checks, from outside, that the
writer's processes exist during the whole read, so the assertions are about what the reader
can see, not about timing.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the environments)
from rllm_envs.sandbox import procmask, run, uids
from rllm_envs.sandbox.backends import SANDBOX_USER

HELD = 30  # processes the writer holds (more than any sandbox runs on its own)

# stdin: the marker. Names itself and HELD children with it, then waits (killed by the host).
WRITER = r"""
import ctypes, os, signal, sys
marker = sys.stdin.readline().strip().encode()
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(marker), 0, 0, 0)  # PR_SET_NAME
kids = 0
for _ in range(HELD):
    if os.fork() == 0:
        signal.pause()
        os._exit(0)
    kids += 1
while kids:
    os.wait()
    kids -= 1
print("released")
""".replace("HELD", str(HELD))

# stdin: the marker. Prints one JSON line of what it sees of the machine.
READER = r"""
import ctypes, hashlib, json, os, resource, sys
marker = sys.stdin.readline().strip()
seen = {"tasks": None}
for name in ("loadavg", "stat", "meminfo", "uptime", "vmstat", "pressure/cpu",
             "sys/fs/file-nr", "diskstats", "schedstat"):
    try:
        with open("/proc/" + name, "rb") as f:
            content = f.read()
    except OSError:
        seen[name] = None  # unreadable
        continue
    seen[name] = hashlib.sha256(content).hexdigest()[:16]
    if name == "loadavg" and content:
        seen["tasks"] = int(content.split()[3].split(b"/")[1])
libc = ctypes.CDLL(None, use_errno=True)
info = ctypes.create_string_buffer(512)
seen["sysinfo"] = libc.sysinfo(info)
seen["marked"] = 0
try:
    pids = os.listdir("/proc")
except OSError:  # a judged test opens nothing of /proc (Landlock)
    pids = []
for pid in pids:
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/comm") as f:
                seen["marked"] += f.read().strip() == marker
        except OSError:
            pass
def user_processes():
    # The smallest soft limit at which fork fails is one more than the user's processes.
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    lo, hi = 1, 4096
    while lo < hi:
        mid = (lo + hi) // 2
        resource.setrlimit(resource.RLIMIT_NPROC, (mid, hard))
        try:
            pid = os.fork()
        except OSError:
            lo = mid + 1
            continue
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        hi = mid
    resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))
    return lo - 1
seen["user_processes"] = user_processes()
print("SEEN " + json.dumps(seen))
"""


def _marked(marker: str) -> list[int]:
    """Host-side: the pids of processes named ``marker`` (ours alone: the marker is random)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/comm") as f:
                    if f.read().strip() == marker:
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


@contextmanager
def _writer(start: Callable[[str], None]) -> Iterator[str]:
    """Start the writer (``start(marker)`` runs it, blocking); yield once it holds HELD
    processes; on exit, check they were held all along, then kill them."""
    marker = "cv" + secrets.token_hex(6)
    thread = threading.Thread(target=start, args=(marker,), daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 120
        while len(_marked(marker)) < HELD + 1:
            assert thread.is_alive(), f"the writer ended early: {results_of(start)}"
            assert time.monotonic() < deadline, "the writer did not start its processes"
            time.sleep(0.1)
        yield marker
        # The reader ran while every one of them existed.
        assert len(_marked(marker)) >= HELD + 1 and thread.is_alive()
    finally:
        # Until the writer's run ends: a judge may start it again on its next test.
        deadline = time.monotonic() + 120
        while thread.is_alive() and time.monotonic() < deadline:
            for pid in _marked(marker):
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            thread.join(0.1)


def results_of(start: Callable[[str], None]) -> object:
    """What the writer's run left in the closure's ``results`` (for failure messages)."""
    for cell in start.__closure__ or ():
        if isinstance(cell.cell_contents, dict):
            return cell.cell_contents
    return None


def _private_user_count(backend: str) -> bool:
    """Whether processes are counted per sandbox here (else the NPROC check is skipped)."""
    if backend == "bubblewrap":
        return True  # a user namespace of its own
    if os.geteuid() != 0:
        return False  # sandboxes run as the caller: one user for all of them
    base = os.environ.get("RLLM_SANDBOX_USER", SANDBOX_USER)
    assert uids.pool_users(base), "run `sudo bash scripts/setup_sandbox_user.sh` (user pool)"
    return True


def _check_sees_nothing(seen: dict, backend: str) -> None:
    static = procmask.static_files()
    for name, digest in seen.items():
        if name in ("tasks", "sysinfo", "marked", "user_processes") or digest is None:
            continue  # None: unreadable
        # Readable counters hold fixed content (or nothing at all).
        allowed = {_digest(b""), _digest(static.get(f"/proc/{name}", b""))}
        assert digest in allowed, (name, digest)
    assert seen["tasks"] is None or seen["tasks"] < HELD
    assert seen["sysinfo"] == -1  # denied by the syscall filter
    assert seen["marked"] == 0  # the writer's processes are invisible
    if _private_user_count(backend):
        assert 0 < seen["user_processes"] < HELD, seen["user_processes"]


def _digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()[:16]


def _seen(text: str) -> dict:
    match = re.search(r"SEEN (\{.*\})", text)
    assert match, text[-2000:]
    return json.loads(match.group(1))


def test_reader_sees_nothing_of_a_concurrent_writer(backend):
    results = {}

    def write(marker: str) -> None:
        results["writer"] = run(WRITER, stdin=marker + "\n", backend=backend, time_limit=150)

    with _writer(write) as marker:
        reader = run(READER, stdin=marker + "\n", backend=backend, time_limit=60)
    assert reader.status.value == "ok", reader
    _check_sees_nothing(_seen(reader.stdout), backend)
    assert results["writer"].stdout == "", results["writer"]  # killed, never released


def test_no_process_count_leak_between_code_episodes(backend):
    """A Code episode holds processes on its hidden tests while a concurrent multi-turn
    episode of the same task prints what it sees: its feedback shows nothing of them."""
    env_a = gym.make("rllm/Code-v0", sandbox_backend=backend, time_limit=60)
    env_b = gym.make("rllm/CodeMultiTurn-v1", sandbox_backend=backend, time_limit=30)
    try:
        for seed in range(200):
            env_a.reset(seed=seed)
            task = env_a.unwrapped.task  # type: ignore[attr-defined]
            if task["kind"] == "stdin" and task["hidden_tests"]:
                break
        else:
            pytest.skip("no stdin task with hidden tests")
        env_b.reset(seed=seed)
        public = {t["input"]: t["output"] for t in task["public_tests"]}
        results = {}

        def step_a(marker: str) -> None:
            # Public tests answered from the statement; on a hidden one, hold the processes.
            code = (
                f"import sys\nPUBLIC = {public!r}\n"
                "data = sys.stdin.read()\nif data in PUBLIC:\n"
                "    sys.stdout.write(PUBLIC[data])\n    raise SystemExit\n"
                "sys.stdin = __import__('io').StringIO(" + repr(marker + "\n") + ")\n" + WRITER
            )
            results["a"] = env_a.step(f"```python\n{code}```")

        with _writer(step_a) as marker:
            code = "import sys, io\nsys.stdin = io.StringIO(" + repr(marker + "\n") + ")\n"
            obs, _, _, _, _ = env_b.step(f"```python\n{code}{READER}```")
        _check_sees_nothing(_seen(obs), backend)
    finally:
        env_a.close()
        env_b.close()


def _pool() -> tuple[tuple[int, int], ...]:
    if os.geteuid() != 0:
        pytest.skip("the user pool is for a root caller")
    users = uids.pool_users(os.environ.get("RLLM_SANDBOX_USER", SANDBOX_USER))
    assert users, "run `sudo bash scripts/setup_sandbox_user.sh` (user pool)"
    return users


def test_leases_are_distinct_and_never_shared(monkeypatch):
    """With every pool user taken a new sandbox waits for one, then fails cleanly
    (``PoolExhausted``); it used to share the base user (round 9: the per-user pipe-buffer
    account carried bits again)."""
    users = _pool()
    monkeypatch.setattr(uids, "ACQUIRE_WAIT", 0.2)
    leases = []
    try:
        # Some may be held by sandboxes of other tests running now: take what is free.
        with pytest.raises(uids.PoolExhausted, match="stayed taken"):
            while True:
                leases.append(uids.acquire(private_process_count=False))
        held = [lease.identity for lease in leases]
        assert len(set(held)) == len(held) and set(held) <= set(users)
        assert all(lease.fd >= 0 for lease in leases)
    finally:
        for lease in leases:
            lease.release()
    # Given back: taken again.
    again = uids.acquire(private_process_count=False)
    try:
        assert again.identity in users
    finally:
        again.release()
    # A user namespace of its own takes a pool user too (per-user pipe and SCM_RIGHTS
    # accounts are not namespaced).
    own = uids.acquire(private_process_count=True)
    try:
        assert own.identity in users and own.fd >= 0
    finally:
        own.release()


def test_firejail_sandbox_runs_as_a_pool_user_and_gives_it_back():
    users = _pool()
    try:
        result = run("import os; print(os.getuid())", backend="firejail")
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"firejail unusable here: {e}")
    assert int(result.stdout) in {uid for uid, _ in users}, result
    lease = uids.acquire(private_process_count=False)
    try:
        assert lease.fd >= 0  # nothing held by the finished run (the pool is not empty)
    finally:
        lease.release()


_PAGE_CACHE_PROBES = r"""
import ctypes, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open("/usr/lib/x86_64-linux-gnu/libc.so.6", os.O_RDONLY)
seen = {"fadvise": libc.posix_fadvise(fd, 0, 0, 4)}  # POSIX_FADV_DONTNEED; returns the errno
m = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
for name, call in (
    ("madvise_pageout", lambda: m.madvise(21)),
    ("madvise_cold", lambda: m.madvise(20)),
    ("preadv2_nowait", lambda: os.preadv(fd, [bytearray(16)], 0, os.RWF_NOWAIT)),
):
    try:
        call()
        seen[name] = 0
    except OSError as e:
        seen[name] = e.errno
buf = ctypes.create_string_buffer(1)
seen["mincore"] = ctypes.get_errno() if libc.syscall(27, 0, 4096, buf) == -1 else 0
m.madvise(mmap.MADV_DONTNEED)  # ordinary memory management still works
print(repr(seen))
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="syscall numbers of x86-64")
def test_page_cache_of_shared_files_cannot_be_evicted_or_probed(backend):
    """Evicting a shared file's pages and probing them without reading carried a hidden input
    bit-exact between concurrent sandboxes; every such call fails with EPERM."""
    result = run(_PAGE_CACHE_PROBES, backend=backend, time_limit=20)
    assert result.status.value == "ok", result.stderr
    seen = ast.literal_eval(result.stdout.strip())
    assert seen == {
        "fadvise": 1,
        "madvise_pageout": 1,
        "madvise_cold": 1,
        "preadv2_nowait": 1,
        "mincore": 1,
    }
