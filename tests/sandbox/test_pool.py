"""SandboxPool: sandboxes started ahead of time, one program each, nothing left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.sandbox import Limits, SandboxPool, Status, run
from tests.sandbox.conftest import sandbox_processes


def _settled() -> list[str]:
    deadline = time.monotonic() + 10
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    return sandbox_processes()


def test_runs_match_plain_runs(backend):
    with SandboxPool(2, backend=backend) as pool:
        assert pool.wait_ready(30) and pool.ready == 2
        code = "import sys\nprint(sys.stdin.read()[::-1], end='')\nsys.exit(3)"
        pooled, cold = pool.run(code, stdin="abc"), run(code, stdin="abc", backend=backend)
        assert pooled.stdout == cold.stdout == "cba"
        assert pooled.status is cold.status is Status.RUNTIME_ERROR
        assert pooled.exit_code == cold.exit_code == 3 and pooled.backend == backend
        # The pool is topped up again after each run.
        assert pool.wait_ready(30) and pool.ready == 2


def test_each_run_gets_a_fresh_sandbox(backend):
    # A process left running by one program is gone when the next runs: a sandbox is never
    # reused (the bootstrap and the end of the run kill everything in it).
    # A program cannot list /proc (Landlock): in a fresh sandbox (its own PID namespace) the
    # next program gets the first program's pid again, and the one left is not there.
    leave = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\n"
    leave += "print(os.getpid())"
    look = "import os\ntry:\n    os.kill(int(input()) + 1, 0)\nexcept OSError as e:\n"
    look += "    print(os.getpid(), type(e).__name__)"
    with SandboxPool(1, backend=backend) as pool:
        first = pool.run(leave)
        assert first.ok and first.stdout.strip().isdigit(), first.stderr
        seen = pool.run(look, stdin=first.stdout)
        assert seen.ok and seen.stdout == f"{first.stdout.strip()} ProcessLookupError\n", seen
    assert _settled() == []


def test_wall_clock_runs_from_the_call(backend):
    with SandboxPool(1, backend=backend, limits=Limits(time_limit=30)) as pool:
        pool.wait_ready(30)
        time.sleep(0.5)  # waiting in the pool does not count
        start = time.monotonic()
        result = pool.run("import time\ntime.sleep(60)", time_limit=0.5)
        assert result.status is Status.TIMEOUT and 0.4 < time.monotonic() - start < 5
        spin = pool.run("while True: pass", time_limit=1.0)
        assert spin.status is Status.TIMEOUT


def test_per_run_cpu_limit_and_output_cap(backend):
    with SandboxPool(1, backend=backend, limits=Limits(time_limit=30)) as pool:
        # Started with the pool's CPU limit (31 s); the run's (ceil(2) + 1) replaces it.
        limit = pool.run(
            "import resource\nprint(resource.getrlimit(resource.RLIMIT_CPU))", time_limit=2
        )
        assert limit.stdout == "(3, 4)\n"
        flood = pool.run("while True: print('x' * 1000)", max_output_bytes=10_000)
        assert flood.status is Status.OUTPUT_LIMIT and len(flood.stdout) <= 10_000


def test_program_pool_sends_only_input(backend):
    echo = "import sys\nprint(len(sys.stdin.read()))"
    with SandboxPool(1, backend=backend, program=echo) as pool:
        assert pool.run(stdin="hello").stdout == "5\n"
        assert pool.run(stdin="").stdout == "0\n"
        with pytest.raises(InvalidEnvConfig, match="only `stdin`"):
            pool.run("print(1)")
    with SandboxPool(1, backend=backend) as pool, pytest.raises(InvalidEnvConfig):
        pool.run()


def test_close_leaves_nothing_and_is_final(backend):
    fds = len(os.listdir("/proc/self/fd"))
    pool = SandboxPool(3, backend=backend)
    assert pool.wait_ready(30)
    pool.close()
    pool.close()  # idempotent
    assert pool.closed and pool.ready == 0
    assert _settled() == []
    assert len(os.listdir("/proc/self/fd")) <= fds
    with pytest.raises(InvalidEnvConfig, match="closed"):
        pool.run("print(1)")


def test_a_forked_child_does_not_inherit_the_sandboxes(backend):
    with SandboxPool(1, backend=backend) as pool:
        assert pool.wait_ready(30)
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - child
            try:
                pool.run("print(1)")
                os.write(write, b"ran")
            except InvalidEnvConfig:
                os.write(write, b"closed")
            os._exit(0)
        os.waitpid(pid, 0)
        os.close(write)
        assert os.read(read, 10) == b"closed"
        os.close(read)
        assert pool.run("print(2)").stdout == "2\n"  # the parent's pool is untouched


def test_interpreter_exit_ends_idle_sandboxes(backend):
    script = textwrap.dedent(
        f"""
        from rllm_envs.sandbox import SandboxPool
        pool = SandboxPool(2, backend={backend!r})
        assert pool.wait_ready(30)
        print(pool.run("print(7)").stdout, end="")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "7\n", done.stderr
    assert _settled() == []


def test_bad_arguments_raise():
    with pytest.raises(InvalidEnvConfig):
        SandboxPool(0)
    with pytest.raises(InvalidEnvConfig):
        SandboxPool(1, backend="nope")


def test_a_run_cannot_reach_the_waiting_sandboxes(backend):
    with SandboxPool(3, backend=backend) as pool:
        assert pool.wait_ready(30)
        waiting = list(pool._idle)  # the sandboxes not used by the next run
        hostile = (
            "import os, signal\n"
            "for pid in range(2, 1 << 15):\n"
            "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError:\n        pass\n"
            "try:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass\n"
            "print('done')"
        )
        result = pool.run(hostile, time_limit=20)
        assert result.status is not Status.SANDBOX_ERROR, result
        used = [proc for proc in waiting if proc not in pool._idle]
        assert len(used) == 1  # the hostile run took exactly one
        for proc in waiting:
            if proc not in used:
                assert proc.proc.poll() is None  # the others still wait, untouched
        for _ in range(3):
            assert pool.run("print(1)").stdout == "1\n"
