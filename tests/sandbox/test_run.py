"""Behaviour of rllm_envs.sandbox.run: results, statuses, limits, API errors."""

from __future__ import annotations

import time

import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.sandbox import (
    Limits,
    PlainBackendWarning,
    RunResult,
    SandboxUnavailable,
    Status,
    available_backends,
    run,
    select_backend,
)
from rllm_envs.sandbox import backends as backends_module


def test_ok_with_stdin(any_backend):
    result = run("print(sum(map(int, input().split())))", stdin="2 3\n", backend=any_backend)
    assert isinstance(result, RunResult)
    assert result.status is Status.OK and result.ok
    assert result.stdout == "5\n" and result.stderr == ""
    assert result.exit_code == 0 and result.signal is None
    assert result.backend == any_backend and result.wall_time > 0


def test_large_stdin_and_stdout_round_trip(backend):
    data = "".join(f"{i} ü 中\n" for i in range(100_000))  # ~1.1 MB, larger than a pipe
    result = run(
        "import sys\nsys.stdout.write(sys.stdin.read())",
        stdin=data,
        backend=backend,
        limits=Limits(max_output_bytes=4 << 20),
    )
    assert result.ok and result.stdout == data


def test_program_that_ignores_its_input(backend):
    result = run("print('hi')", stdin="x" * 3_000_000, backend=backend)
    assert result.ok and result.stdout == "hi\n"


def test_exit_code_and_runtime_error(backend):
    result = run("import sys\nprint('partial')\nsys.exit(3)", backend=backend)
    assert result.status is Status.RUNTIME_ERROR and result.exit_code == 3
    assert result.stdout == "partial\n"
    result = run("def f():\n    return 1 / 0\nf()", backend=backend)
    assert result.status is Status.RUNTIME_ERROR and result.exit_code == 1
    assert "ZeroDivisionError" in result.stderr and 'File "main.py", line 2' in result.stderr
    assert "return 1 / 0" in result.stderr  # source lines are shown


def test_syntax_error_is_a_runtime_error(backend):
    result = run("def f(:\n  pass", backend=backend)
    assert result.status is Status.RUNTIME_ERROR and "SyntaxError" in result.stderr


def test_killed_by_signal(backend):
    result = run("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", backend=backend)
    assert result.status is Status.RUNTIME_ERROR
    assert result.signal == 9 and result.signal_name == "SIGKILL" and result.exit_code is None


def test_main_module_and_clean_environment(backend):
    code = "import os, sys\nprint(__name__)\nprint(sorted(os.environ))\nprint(os.getcwd())"
    result = run(code, backend=backend)
    lines = result.stdout.splitlines()
    assert lines[0] == "__main__"
    names = eval(lines[1])
    assert "PATH" in names and not any(n.startswith(("PYTEST", "VIRTUAL_ENV")) for n in names)


def test_timeout_is_enforced_from_the_parent(any_backend):
    start = time.monotonic()
    result = run("import time\ntime.sleep(60)", time_limit=1.0, backend=any_backend)
    assert result.status is Status.TIMEOUT
    assert time.monotonic() - start < 5


def test_cpu_limit(backend):
    result = run("while True: pass", backend=backend, limits=Limits(time_limit=10, cpu_time=1))
    assert result.status is Status.TIMEOUT and result.signal is not None
    assert result.wall_time < 8


def test_memory_limit(any_backend):
    result = run("x = bytearray(2 << 30)", backend=any_backend, limits=Limits(memory_mb=256))
    assert result.status is Status.MEMORY
    assert "MemoryError" in result.stderr


def test_output_limit_kills(any_backend):
    result = run(
        "while True: print('x' * 1000)", backend=any_backend, limits=Limits(max_output_bytes=10_000)
    )
    assert result.status is Status.OUTPUT_LIMIT and result.stdout_truncated
    assert len(result.stdout) == 10_000


def test_stderr_is_truncated_not_fatal(backend):
    code = "import sys\nsys.stderr.write('e' * 200000)\nprint('done')"
    result = run(code, backend=backend, limits=Limits(max_stderr_bytes=1000))
    assert result.ok and result.stdout == "done\n"
    assert result.stderr_truncated and len(result.stderr) == 1000


def test_file_size_limit(any_backend):
    # In-memory files are the only writable files; each is capped (Python ignores SIGXFSZ,
    # so the write past the cap fails with EFBIG).
    code = "import os\nfd = os.memfd_create('x')\nwhile True:\n    os.write(fd, b'x' * 65536)"
    result = run(code, backend=any_backend, limits=Limits(max_file_size_mb=1))
    assert result.status is Status.RUNTIME_ERROR and "File too large" in result.stderr


def test_describe_is_readable():
    result = RunResult(Status.TIMEOUT, "out", "err", None, 9, 1.0)
    text = result.describe()
    assert "Time limit" in text and "out" in text and "err" in text


def test_unknown_language_and_backend_and_bad_limits():
    with pytest.raises(InvalidEnvConfig, match="language"):
        run("print(1)", language="cobol")
    with pytest.raises(InvalidEnvConfig, match="Did you mean"):
        run("print(1)", backend="firejali")
    with pytest.raises(InvalidEnvConfig):
        Limits(time_limit=0)
    with pytest.raises(InvalidEnvConfig):
        Limits(memory_mb=10)


def test_auto_selection_prefers_bubblewrap_then_firejail(monkeypatch):
    usable = available_backends()
    if not usable:
        pytest.skip("no isolating backend here")
    monkeypatch.delenv("RLLM_SANDBOX_BACKEND", raising=False)
    assert select_backend().name == usable[0]
    assert usable == [b for b in ("bubblewrap", "firejail") if b in usable]
    # firejail only where bubblewrap cannot run (its directories are the host's: see mirror)
    monkeypatch.setattr(backends_module.Bubblewrap, "missing", lambda self: "not installed")
    if "firejail" in usable:
        assert select_backend().name == "firejail"


def test_no_backend_gives_install_instructions(monkeypatch):
    monkeypatch.delenv("RLLM_SANDBOX_BACKEND", raising=False)
    monkeypatch.setattr(backends_module.Firejail, "missing", lambda self: "not installed")
    monkeypatch.setattr(backends_module.Bubblewrap, "missing", lambda self: "not installed")
    with pytest.raises(SandboxUnavailable, match="apt-get install firejail bubblewrap"):
        select_backend()
    with pytest.raises(SandboxUnavailable):
        run("print(1)")


def test_plain_is_never_auto_selected_and_warns(monkeypatch):
    monkeypatch.setenv("RLLM_SANDBOX_BACKEND", "plain")
    with pytest.warns(PlainBackendWarning, match="WITHOUT isolation"):
        result = run("print(7)")
    assert result.ok and result.backend == "plain"


def test_env_var_picks_the_backend(monkeypatch, backend):
    monkeypatch.setenv("RLLM_SANDBOX_BACKEND", backend)
    assert run("print(1)").backend == backend


def test_root_without_sandbox_user_is_refused(monkeypatch):
    monkeypatch.setattr(backends_module.os, "geteuid", lambda: 0)
    monkeypatch.setenv("RLLM_SANDBOX_USER", "no-such-user-rllm")
    with pytest.raises(SandboxUnavailable, match="useradd --system"):
        backends_module.sandbox_identity()
