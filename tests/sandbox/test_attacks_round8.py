"""Round 8 of the attacks on the code sandbox (issue #24, session 10), through the public API.

Each test replays one attack of the blind round that got through (or its class), on both
isolating backends, pooled and cold where the judge is used:

* machine-wide allocators a program reads back: the eventfd id allocator (lowest free id,
  in ``/proc/self/fdinfo``) carried a hidden input, exactly, into a concurrent episode's
  feedback and let a relay with no solving code earn 1.0 next to a solver; ``setsid`` moved
  the scheduler's autogroup counter (``/proc/self/autogroup``), an exact channel at low
  load; process descriptors (``pidfd_open``, ``clone(CLONE_PIDFD)``, ``SO_PEERPIDFD``) carry
  pidfs inode numbers, a count of every process started on the machine; socket cookies
  (``SO_COOKIE``, socket diagnostics over netlink) number sockets machine-wide, 1, 2, 3 in
  one sandbox and 4, 5, 6 in the next. All are refused;
* a test that signalled the executor (``SIGINT`` to its parent) ended the run with every
  test a runtime error and feedback that said the hidden tests failed although none ran:
  a test's signals reach only its own processes (no ``kill`` of its parent, of init, of a
  group, no signal-on-I/O owner, no sibling through ``CLONE_PARENT``);
* ``sync`` flushed every file system of the host from inside a sandbox: it does nothing;
* no limit bounded the memory of all the sandboxes together: those of one process now share
  one (a parent control group), and every sandbox process has the highest ``oom_score_adj``.

The filter's decisions are also checked instruction by instruction on both architectures
we build for (:func:`_decide`, a classic-BPF interpreter), so the aarch64 table is tested
on an x86-64 machine too.
"""

from __future__ import annotations

import ast
import errno
import json
import os
import struct
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the envs)
from rllm_envs.code.judge import TestCase, judge
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.sandbox import Limits, Status, cgroup, landlock, run, runner, seccomp

_X86 = os.uname().machine == "x86_64"
needs_x86 = pytest.mark.skipif(not _X86, reason="syscall numbers of x86-64 in the programs")

# ------------------------------------------------------------ the filters, decision by decision

_ALLOW = 0x7FFF0000


def _decide(program: bytes, arch: int, nr: int, *args: int) -> int:
    """What the classic-BPF ``program`` returns for syscall ``nr`` with ``args`` (64-bit)."""
    data = (
        struct.pack("=iI", nr, arch)
        + bytes(8)
        + b"".join(struct.pack("=Q", a & 0xFFFFFFFFFFFFFFFF) for a in (list(args) + [0] * 6)[:6])
    )
    insns = [struct.unpack_from("=HBBI", program, i) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == 0x20:  # LD W ABS
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x54:  # AND K
            acc &= k
        elif code == 0x05:  # JA
            pc += k
        elif code in (0x15, 0x25, 0x35, 0x45):  # JEQ, JGT, JGE, JSET
            hit = {0x15: acc == k, 0x25: acc > k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if hit else jf
        elif code == 0x06:  # RET K
            return k
        else:
            raise AssertionError(f"unknown opcode {code:#x}")


def _errno(value: int) -> int | None:
    return value & 0xFFFF if value & 0xFFFF0000 == 0x00050000 else None


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_filters_refuse_the_allocators_and_signals_on_each_architecture(monkeypatch, arch):
    monkeypatch.setattr(seccomp, "_arch", lambda: arch)
    audit, numbers = seccomp._ARCHES[arch]
    base = seccomp.filter_program()
    for name in ("eventfd", "eventfd2", "setsid", "pidfd_send_signal", "memfd_secret"):
        if name in numbers:  # aarch64 has no eventfd
            assert _errno(_decide(base, audit, numbers[name])) == errno.EPERM, name
    assert _decide(base, audit, numbers["sync"]) == 0x00050000  # "succeeds", does nothing
    assert _decide(base, audit, numbers["syncfs"], 3) == 0x00050000
    assert _errno(_decide(base, audit, numbers["membarrier"], 1)) == errno.ENOSYS
    # The executor needs pidfd_open and kill; a fork, a thread and a plain socket option pass.
    for name, args in (
        ("pidfd_open", (5, 0)),
        ("kill", (5, 9)),
        ("clone", (0x01200011,)),  # what fork() passes
        ("clone", (0x003D0F00,)),  # what pthread_create passes
        ("getsockopt", (3, 1, 17)),  # SO_PEERCRED
        ("socket", (16, 3, 0)),  # AF_NETLINK, NETLINK_ROUTE (getaddrinfo, getifaddrs)
        ("fcntl", (3, 4, 0)),  # F_SETFL
        ("ioctl", (3, 0x541B, 0)),  # FIONREAD
    ):
        assert _decide(base, audit, numbers[name], *args) == _ALLOW, (name, args)
    for name, args in (
        ("clone", (0x1000 | 17,)),  # CLONE_PIDFD
        ("clone", (0x8000 | 17,)),  # CLONE_PARENT
        ("getsockopt", (3, 1, 77)),  # SO_PEERPIDFD
        ("setsockopt", (3, 1, 76)),  # SO_PASSPIDFD
        ("getsockopt", (3, 1, 57)),  # SO_COOKIE
        ("getsockopt", (3, 1, 71)),  # SO_NETNS_COOKIE
        ("socket", (16, 3, 4)),  # NETLINK_SOCK_DIAG: reports cookies
        ("socket", (1, 1, 0)),  # AF_UNIX (as before)
        ("fcntl", (3, 8, 1)),  # F_SETOWN
        ("fcntl", (3, 10, 2)),  # F_SETSIG
        ("fcntl", (3, 15, 0)),  # F_SETOWN_EX
        ("ioctl", (3, 0x8901, 0)),  # FIOSETOWN
        ("ioctl", (3, 0x8902, 0)),  # SIOCSPGRP
    ):
        assert _errno(_decide(base, audit, numbers[name], *args)) == errno.EPERM, (name, args)

    child = bytearray(seccomp.child_filter_program())
    slot = seccomp.PARENT_PID_SLOT.to_bytes(4, "little")
    patched = 0
    for i in range(4, len(child), 8):  # what the bootstrap does, with parent pid 7
        if child[i : i + 4] == slot:
            child[i : i + 4] = (7).to_bytes(4, "little")
            patched += 1
    assert patched == len(seccomp.SIGNAL_SYSCALLS)
    assert _errno(_decide(bytes(child), audit, numbers["pidfd_open"], 8, 0)) == errno.EPERM
    for name in seccomp.SIGNAL_SYSCALLS:
        nr = numbers[name]
        for target in (7, 1, 0, -1, -8, 3):  # the parent, init, groups, all, older ones
            assert _errno(_decide(bytes(child), audit, nr, target, 2)) == errno.EPERM
        assert _decide(bytes(child), audit, nr, 8, 2) == _ALLOW  # its own (pid > parent)
    assert _decide(bytes(child), audit, numbers["futex"], 0, 129) == _ALLOW
    # Left unpatched, the child filter lets no signal reach another process.
    unpatched = seccomp.child_filter_program()
    assert _errno(_decide(unpatched, audit, numbers["kill"], 100, 9)) == errno.EPERM


def test_the_bootstrap_fits_firejails_argument_limit():
    # firejail refuses an argument of 4,128 bytes or more; the bootstrap is one (-c).
    assert len(runner._BOOT.encode()) < 4128
    assert ast.dump(ast.parse(runner._BOOT)) == ast.dump(ast.parse(runner._BOOT_SOURCE))
    assert all(len(chunk) < 4128 for chunk in runner.seccomp_filter_hex())


# ------------------------------------------------------------ in the sandbox

# Every call tried, and what it gave: "ok" or the errno's name. Programs for x86-64.
_PROBE = r"""
import ctypes, errno, fcntl, os, signal, socket, time
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "ok" if r >= 0 else errno.errorcode[ctypes.get_errno()]
def attempt(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
seen = {}
seen["eventfd"] = call(284, 0)
seen["eventfd2"] = attempt(lambda: os.eventfd(0))
r, w = os.pipe()
pid = os.fork()
if pid == 0:  # not a group leader: setsid would work
    os.write(w, attempt(os.setsid).encode())
    os._exit(0)
os.waitpid(pid, 0)
seen["setsid"] = os.read(r, 100).decode()
seen["pidfd_open"] = attempt(lambda: os.pidfd_open(os.getpid()))
fd = ctypes.c_int(-1)
child = libc.syscall(ctypes.c_long(56), ctypes.c_long(0x1000 | 17), ctypes.c_long(0),
                     ctypes.c_long(ctypes.addressof(fd)), ctypes.c_long(0), ctypes.c_long(0))
if child == 0:
    os._exit(0)
seen["clone_pidfd"] = "ok" if child > 0 else errno.errorcode[ctypes.get_errno()]
if child > 0:
    os.waitpid(child, 0)
a, b = socket.socketpair()
seen["so_peerpidfd"] = attempt(lambda: a.getsockopt(socket.SOL_SOCKET, 77))
seen["so_cookie"] = attempt(lambda: a.getsockopt(socket.SOL_SOCKET, 57, 8))
seen["netlink_diag"] = attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4))
seen["netlink_route"] = attempt(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
try:  # a judged test opens nothing of /proc where Landlock is offered (test_attacks_round10)
    seen["oom_score_adj"] = open("/proc/self/oom_score_adj").read().strip()
except PermissionError:
    seen["oom_score_adj"] = "EACCES"
seen["f_setown"] = attempt(lambda: fcntl.fcntl(r, fcntl.F_SETOWN, os.getppid()))
seen["kill_parent"] = attempt(lambda: os.kill(os.getppid(), 0))
seen["kill_init"] = attempt(lambda: os.kill(1, 0))
seen["kill_group"] = attempt(lambda: os.kill(0, 0))
seen["kill_all"] = attempt(lambda: os.kill(-1, 0))
seen["kill_self"] = attempt(lambda: os.kill(os.getpid(), 0))
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
seen["kill_child"] = attempt(lambda: os.kill(pid, signal.SIGKILL))
os.waitpid(pid, 0)
print(__import__("json").dumps(seen, sort_keys=True))
"""

_REFUSED = (
    "eventfd",
    "eventfd2",
    "setsid",
    "pidfd_open",
    "clone_pidfd",
    "so_peerpidfd",
    "so_cookie",
    "netlink_diag",
    "f_setown",
    "kill_parent",
    "kill_init",
    "kill_group",
    "kill_all",
)


def _check_probe(output: str) -> None:
    seen = json.loads(output)
    assert {name: seen[name] for name in _REFUSED} == dict.fromkeys(_REFUSED, "EPERM"), seen
    assert seen["kill_self"] == seen["kill_child"] == seen["netlink_route"] == "ok", seen
    # The first to go in a machine-wide OOM: a judged test and the program of a plain run,
    # restricted by Landlock, cannot read it (they inherit the value the bootstrap set).
    hidden = landlock.abi() >= 1
    assert seen["oom_score_adj"] == ("EACCES" if hidden else "1000"), seen


@needs_x86
@pytest.mark.parametrize("warm", [True, False])
def test_allocators_pidfds_and_signals_to_the_executor_are_refused(backend, warm):
    result = judge(_PROBE, [TestCase("", "x\n")], backend=backend, warm=warm, time_limit=5)
    assert result.verdicts == ["WA"], result.results[0].error
    _check_probe(result.results[0].output)


@needs_x86
def test_a_plain_run_gets_the_same_refusals(backend):
    result = run(_PROBE, backend=backend, time_limit=20)
    assert result.ok, result.stderr
    _check_probe(result.stdout)


@needs_x86
def test_a_cpp_test_gets_the_same_refusals(backend):
    code = r"""
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
int main() {
    int e = eventfd(0, 0); int e1 = errno;
    long p = syscall(434, getpid(), 0); int e2 = errno;
    int k = kill(getppid(), SIGINT); int e3 = errno;
    std::printf("%d %d %ld %d %d %d\n", e, e1, p, e2, k, e3);
}
"""
    result = judge(code, [TestCase("", "x\n")], language="cpp", backend=backend, time_limit=5)
    assert result.verdicts == ["WA"], result.results[0].error
    assert result.results[0].output.split() == ["-1", "1", "-1", "1", "-1", "1"]


# ------------------------------------------------------------ through env.step


def _echo_task(tmp_path: Path, hidden: list[str]) -> Path:
    """A LiveCodeBench record: print the input reversed (an echo would pass a task of echoed
    answers, which is left out); one public test and the given hidden ones."""
    record = {
        "question_title": "Echo",
        "question_content": "Print the input line reversed.",
        "question_id": "echo",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps([{"input": "p0\n", "output": "0p\n", "testtype": "stdin"}]),
        "private_test_cases": json.dumps(
            [{"input": h + "\n", "output": h[::-1] + "\n", "testtype": "stdin"} for h in hidden]
        ),
        "metadata": "{}",
    }
    path = tmp_path / "echo.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


# Interrupts its parent (the executor), init and every process it can, then answers.
_INTERRUPT = """```python
import os, signal
for target in (os.getppid(), 1, 0, -1):
    try:
        os.kill(target, signal.SIGINT)
    except OSError:
        pass
print(input()[::-1])
```"""


@pytest.mark.slow
def test_a_test_cannot_interrupt_the_executor(backend, tmp_path):
    """SIGINT to the executor made every test a runtime error and the feedback say the
    hidden tests failed although none ran; now the signal is refused and the run goes on."""
    path = _echo_task(tmp_path, [f"h{i}" for i in range(1, 4)])
    env = gym.make("rllm/Code-v0", dataset=str(path), sandbox_backend=backend)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(_INTERRUPT)
    assert reward == 1.0 and terminated and info["hidden_passed"] is True, obs
    assert info["judge_error"] is None and "not all passed" not in obs
    env.close()


@pytest.mark.slow
def test_the_eventfd_relay_reads_nothing_of_a_concurrent_episode(backend, tmp_path):
    """The leak of round 8: episode B read episode A's hidden input through eventfd ids
    while A held them. Now A cannot take one and B's program reads nothing."""
    import threading

    path = _echo_task(tmp_path, ["SECRET42"])
    holder = (
        "```python\nimport os, time\ns = input()\n"
        "try:\n    fds = [os.eventfd(0) for _ in range(64)]\nexcept OSError:\n    pass\n"
        "time.sleep(2.5)\nprint(s[::-1])\n```"
    )
    reader = (
        "```python\nimport os, time\ntime.sleep(0.8)\n"
        "try:\n    ids = []\n    for _ in range(8):\n        fd = os.eventfd(0)\n"
        "        info = open(f'/proc/self/fdinfo/{fd}').read()\n"
        "        ids.append(info.split('eventfd-id:')[1].split()[0])\n"
        "    print('ids', ids)\nexcept OSError as e:\n    print('refused', e.errno)\n```"
    )
    seen: dict[str, str] = {}

    def episode(name: str, action: str) -> None:
        env = gym.make("rllm/Code-v0", dataset=str(path), sandbox_backend=backend)
        env.reset(seed=0)
        seen[name] = env.step(action)[0]
        env.close()

    threads = [
        threading.Thread(target=episode, args=("holder", holder)),
        threading.Thread(target=episode, args=("reader", reader)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert "refused 1" in seen["reader"], seen["reader"]
    assert "ids" not in seen["reader"]


# ------------------------------------------------------------ memory of all the sandboxes


@pytest.mark.skipif(not cgroup.available(), reason="no per-sandbox control groups here")
def test_the_sandboxes_of_a_process_share_one_memory_limit(backend, monkeypatch):
    """64 sandboxes of 1 GiB each could hold 64 GiB on a 24 GiB machine: the kernel's OOM
    killer would pick the machine's largest process (the trainer). Together the sandboxes
    of a process now stay under one limit: a sandbox starts only once its own limit fits
    under it (round 9: before, the OOM killer picked one of them, maybe not the hog), so
    each one can use all of its own."""
    import threading

    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "700")
    hog = (
        "import time\nb = bytearray(400 << 20)\n"
        "for i in range(0, len(b), 4096):\n    b[i] = 1\ntime.sleep(3)\nprint('held')\n"
    )
    results = []

    def one() -> None:
        results.append(run(hog, backend=backend, limits=Limits(memory_mb=512, time_limit=60)))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # Each alone fits its own limit (512 MiB); three together do not fit 700 MiB: they
    # run one after the other.
    assert [r.status for r in results] == [Status.OK] * 3, [r.stderr for r in results]
    assert all(r.stdout == "held\n" for r in results)
    monkeypatch.delenv(cgroup.TOTAL_MEMORY_ENV_VAR)
    assert run("print(1)", backend=backend).stdout == "1\n"  # the default limit again


def test_the_common_memory_limit_is_configurable(monkeypatch):
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "0")
    assert cgroup.total_memory_limit() is None
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "2048")
    assert cgroup.total_memory_limit() == 2048 << 20
    monkeypatch.delenv(cgroup.TOTAL_MEMORY_ENV_VAR)
    limit = cgroup.total_memory_limit()
    machine = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert limit is not None and 0 < limit < machine
    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "lots")
    with pytest.raises(InvalidEnvConfig, match="RLLM_SANDBOX_MEMORY_TOTAL_MB"):
        cgroup.total_memory_limit()


def test_no_cpu_idle_counters(backend):
    """firejail showed /sys/devices/system/cpu/cpu*/cpuidle: per-state usage and time of
    every CPU, an exact reading of the machine's load. Hidden; the CPU count still works."""
    code = (
        "import glob, os\n"
        "seen = []\n"
        "for path in glob.glob('/sys/devices/system/cpu/cpu*/cpuidle/state*/usage') + [\n"
        "        '/sys/devices/system/cpu/cpu0/cpuidle/state0/usage',\n"
        "        '/sys/devices/system/cpu/cpuidle/current_driver']:\n"
        "    try:\n        seen.append(open(path).read())\n    except OSError:\n        pass\n"
        "print(len(seen), os.cpu_count() == len(os.sched_getaffinity(0)) >= 1)\n"
    )
    result = run(code, backend=backend)
    assert result.stdout == "0 True\n", result.stdout + result.stderr
