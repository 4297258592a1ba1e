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


@needs_cgroups
def test_idle_pooled_sandboxes_give_their_room_to_a_waiting_one(backend, monkeypatch):
    """Idle sandboxes started ahead of time hold their room under the common limit: a
    sandbox of other limits waiting for room ends them instead of waiting forever."""
    from rllm_envs.sandbox import SandboxPool

    monkeypatch.setenv(cgroup.TOTAL_MEMORY_ENV_VAR, "1200")
    monkeypatch.setattr(cgroup, "ADMISSION_WAIT", 60.0)
    with SandboxPool(size=1, backend=backend, limits=Limits(memory_mb=900)) as pool:
        assert pool.wait_ready(60)
        result = run("print(1)", backend=backend, limits=Limits(memory_mb=512))
        assert result.status is Status.OK and result.stdout == "1\n", result


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


# ------------------------------------------------------------ F3: a test's own CPU is no wait

_SELF_WAIT = r"""
import os, time
os.sched_setaffinity(0, {0})
def spin():
    pid = os.fork()
    if pid == 0:
        t = time.process_time()
        while time.process_time() - t < 0.5:  # under RLIMIT_CPU, then replaced
            pass
        os._exit(0)
    return pid
live = [spin() for _ in range(8)]
while True:  # the main thread: runnable, waiting for CPU 0 behind its own children
    for i, p in enumerate(live):
        if os.waitpid(p, os.WNOHANG)[0]:
            live[i] = spin()
"""


def test_a_test_spinning_its_own_children_gets_no_cpu_wait_extension(backend):
    """Children spinning on the main process's CPU made its threads wait (run_delay), which
    the executor took for a concurrent load: the test ran to the cap, 10x its limit, a CPU
    burnt all along. It is stopped once its processes used its limit (about the 2x + 1 s
    backstop), far below the cap."""
    import time

    from rllm_envs.sandbox.harness import wall_cap

    start = time.monotonic()
    result = judge(_SELF_WAIT, [TestCase("", "1\n")], time_limit=1.0, backend=backend)
    took = time.monotonic() - start
    assert result.verdicts == ["TLE"], result
    assert took < 0.8 * wall_cap(1.0), took  # the old code: the full cap (10 s)


def test_descendants_cpu_counts_every_process_of_a_test():
    from rllm_envs.sandbox.harness import descendants_cpu

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        import time

        child = os.fork()  # a grandchild spins too
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
        if child:
            os.waitpid(child, 0)  # its time moves into ours (cutime)
            time.sleep(5)
        os._exit(0)
    try:
        import time

        deadline = time.monotonic() + 20
        while descendants_cpu(os.getpid()) < 0.5 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert descendants_cpu(os.getpid()) >= 0.5
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)


# ------------------------------------------------------------ F4: compiling under load

_CPP = (
    '#include <cstdio>\nint main() { int a; if (scanf("%d", &a) == 1) printf("%d\\n", 2 * a); }\n'
)


def _compile_behind_spinners(time_limit: float, spinners: int) -> str:
    """compile_cpp's message (``""``: compiled) in a child pinned to one CPU behind
    ``spinners`` busy processes: a compile that gets a small share of a CPU."""
    import shutil

    from rllm_envs.sandbox.harness import CXX, compile_cpp

    if shutil.which(CXX) is None:
        pytest.skip("no g++ here")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        kids = []
        try:
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
            for _ in range(spinners):
                kid = os.fork()
                if kid == 0:
                    while True:
                        pass
                kids.append(kid)
            binary, message = compile_cpp(_CPP, time_limit, 0)
            os.write(write, (message or "compiled").encode()[:4000])
        finally:
            for kid in kids:
                os.kill(kid, 9)
                os.waitpid(kid, 0)
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        text = f.read().decode()
    os.waitpid(pid, 0)
    return "" if text == "compiled" else text


def _compile_cpu_seconds() -> float:
    """CPU seconds g++ and ld take for :data:`_CPP` on this machine, unloaded."""
    import resource

    from rllm_envs.sandbox.harness import compile_cpp

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    binary, message = compile_cpp(_CPP, 60, 0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert binary is not None, message
    os.close(binary)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def test_a_compile_slowed_by_a_load_is_not_a_compile_error():
    """g++ had 30 s of wall-clock time whatever the load: behind enough concurrent work a
    correct program was CE. The limit is the compiler's CPU time now: here twice what the
    compile needs on this machine, while it gets a quarter of one CPU, so its wall time is
    about four times what it needs (above the limit, below the 10x backstop)."""
    import shutil

    from rllm_envs.sandbox.harness import CXX

    if shutil.which(CXX) is None:
        pytest.skip("no g++ here")
    needed = max(_compile_cpu_seconds() for _ in range(2))
    assert _compile_behind_spinners(max(0.2, 2 * needed), 3) == ""


def test_a_compile_that_uses_its_cpu_limit_is_stopped():
    # Many functions at -O2: seconds of CPU.
    bomb = "".join(
        f"int f{i}(int x) {{ for (int k = 0; k < x; ++k) x ^= k * {i}; return x; }}\n"
        for i in range(20000)
    )
    bomb += "int main() { return f1(3); }\n"
    from rllm_envs.sandbox.harness import compile_cpp

    binary, message = compile_cpp(bomb, 0.5, 0)
    assert binary is None and message.endswith("compilation timed out"), message


# ------------------------------------------------------------ F0: the page cache of /usr


def test_large_unused_system_trees_are_hidden(backend):
    """A sender marked pages of large read-only files no program needs (a JVM's modules,
    libLLVM, a cloud SDK) by reading them; a receiver read the marks back from its major
    fault count. Those trees are hidden now (the rest of the channel: docs/sandbox.md)."""
    from rllm_envs.sandbox import installed

    hidden = installed.unused_paths()
    if not hidden:
        pytest.skip("none of the unused trees exists here")
    probe = (
        "import os, sys\n"
        "for path in sys.stdin.read().split():\n"
        "    try:\n"
        "        fd = os.open(path, os.O_RDONLY)\n"
        "    except OSError:\n"
        "        continue\n"
        "    if os.path.isdir(path) and not os.listdir(path):\n"
        "        continue  # an empty tmpfs over it\n"
        "    if os.path.isfile(path) and os.fstat(fd).st_size == 0:\n"
        "        continue  # /dev/null over it\n"
        "    print(path)\n"
    )
    result = run(probe, stdin="\n".join(hidden), backend=backend)
    assert result.status is Status.OK, result
    assert result.stdout == "", result.stdout
    # What programs need is still there.
    assert run("import ssl, sqlite3, decimal\nprint(1)", backend=backend).stdout == "1\n"
