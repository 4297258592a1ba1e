"""The escape suite: hostile programs against every isolating backend.

Each test runs a program that tries to break out (network, host files, writes, fork bomb,
memory, CPU, sleep, output flood, descriptors, signals, the parent's environment), checks
that the attempt was contained, and that the host is unaffected afterwards (no sandbox
process left running). The resource-limit cases also run against the plain backend, which
limits but does not isolate.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import time
from pathlib import Path

import pytest

import rllm_envs
from rllm_envs.sandbox import Limits, Status, run
from tests.sandbox.conftest import assert_fork_bomb_contained, sandbox_processes

PROJECT = Path(rllm_envs.__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def host_is_unaffected():
    before = os.listdir("/proc/self/fd")
    yield
    deadline = time.monotonic() + 5
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)  # the kernel finishes tearing a namespace down asynchronously
    assert sandbox_processes() == []
    assert len(os.listdir("/proc/self/fd")) <= len(before)
    assert os.getpid() > 0 and signal.getsignal(signal.SIGTERM) is not None


def test_no_network_to_a_host_listener(backend, host_listener):
    code = (
        "import socket\n"
        f"s = socket.create_connection(('127.0.0.1', {host_listener.port}), timeout=2)\n"
        "s.sendall(b'escaped')\nprint('CONNECTED')"
    )
    result = run(code, backend=backend, time_limit=5)
    assert "CONNECTED" not in result.stdout
    assert result.status is Status.RUNTIME_ERROR and "Error" in result.stderr
    assert host_listener.accepted == []


def test_no_dns_or_outside_network(backend):
    code = (
        "import socket\n"
        "for target in [('1.1.1.1', 53), ('example.com', 80)]:\n"
        "    try:\n"
        "        socket.create_connection(target, timeout=2); print('CONNECTED')\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
        "try:\n    print(sorted(i[1] for i in socket.if_nameindex()))\n"
        "except OSError:\n    print('no interfaces')\n"
    )
    result = run(code, backend=backend, time_limit=8)
    assert "CONNECTED" not in result.stdout and result.stdout.count("blocked") == 2
    assert "eth" not in result.stdout.splitlines()[-1]  # only loopback (or nothing)


def test_no_host_unix_sockets(backend, tmp_path):
    path = tmp_path / "host.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o777)
    server.listen(1)
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    name = f"rllm-test-{secrets.token_hex(4)}"
    abstract.bind("\0" + name)
    abstract.listen(1)
    code = (
        "import socket\n"
        f"for address in [{str(path)!r}, '\\0{name}', '/run/dbus/system_bus_socket']:\n"
        "    try:\n"
        "        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "        s.connect(address); print('CONNECTED', address)\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
    )
    try:
        result = run(code, backend=backend)
    finally:
        server.close()
        abstract.close()
    assert "CONNECTED" not in result.stdout, result.stdout
    assert result.stdout.count("blocked") == 3


def test_cannot_read_project_home_or_secrets(backend, tmp_path):
    secret = tmp_path / "secret.txt"
    token = secrets.token_hex(8)
    secret.write_text(token)
    os.chmod(tmp_path, 0o755)
    os.chmod(secret, 0o644)  # world-readable on the host: only the sandbox may hide it
    targets = [
        str(secret),
        str(PROJECT / "pyproject.toml"),
        rllm_envs.__file__,
        os.path.expanduser("~/.bashrc"),
        "/etc/shadow",
    ]
    code = (
        "import os\n"
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        print('READ', path, open(path).read()[:50])\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
        f"for d in [{str(PROJECT)!r}, {str(tmp_path)!r}, '/root', '/home']:\n"
        "    try: print('LISTED', d, os.listdir(d))\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
    )
    result = run(code, backend=backend)
    assert token not in result.stdout
    assert "READ" not in result.stdout and "LISTED" not in result.stdout, result.stdout


def test_cannot_write_outside(backend, tmp_path):
    os.chmod(tmp_path, 0o777)  # even a world-writable host directory stays out of reach
    marker = f"rllm-escape-{secrets.token_hex(4)}"
    targets = [
        str(tmp_path / marker),
        f"/tmp/{marker}",
        f"/var/tmp/{marker}",
        f"/dev/shm/{marker}",
        str(PROJECT / marker),
        f"/{marker}",
        marker,
        f"/usr/{marker}",
    ]
    code = (
        f"for path in {targets!r}:\n"
        "    try:\n"
        "        open(path, 'w').write('x'); print('WROTE', path)\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
    )
    result = run(code, backend=backend)
    assert "WROTE" not in result.stdout, result.stdout
    for target in targets[:-1]:
        assert not os.path.exists(target)
    assert not (PROJECT / marker).exists()


def test_fork_bomb_is_contained(any_backend):
    code = (
        "import os\n"
        "children = 0\n"
        "try:\n"
        "    while True:\n"
        "        if os.fork() == 0:\n"
        "            import time; time.sleep(60)\n"
        "        children += 1\n"
        "except OSError as e:\n"
        "    print('stopped after', children, type(e).__name__, flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    start = time.monotonic()
    result = run(code, backend=any_backend, time_limit=3, limits=Limits(max_processes=16))
    assert_fork_bomb_contained(result, time.monotonic() - start, max_processes=16)


def test_memory_hog_is_contained(any_backend):
    code = "chunks = []\nwhile True:\n    chunks.append(bytearray(64 << 20))\n"
    result = run(code, backend=any_backend, limits=Limits(memory_mb=512))
    assert result.status is Status.MEMORY


def test_cpu_loop_is_killed(any_backend):
    start = time.monotonic()
    result = run("while True:\n    pass", backend=any_backend, time_limit=1.5)
    assert result.status is Status.TIMEOUT
    assert 1.4 < time.monotonic() - start < 6


def test_sleep_forever_is_killed(any_backend):
    start = time.monotonic()
    result = run("import time\nwhile True: time.sleep(1000)", backend=any_backend, time_limit=1)
    assert result.status is Status.TIMEOUT and time.monotonic() - start < 5


def test_background_child_does_not_outlive_the_run(backend):
    # Isolating backends only: the plain backend cannot reach a process that left its
    # process group (documented).
    code = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid() if os.fork() else time.sleep(1000)\n"
        "    time.sleep(1000)\n"
        "print('parent done')\n"
    )
    result = run(code, backend=backend, time_limit=5)
    assert "parent done" in result.stdout
    # (the autouse fixture checks that no sandbox process is left)


def test_output_flood_is_cut(any_backend):
    code = "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n"
    result = run(code, backend=any_backend, limits=Limits(max_output_bytes=1 << 20))
    assert result.status is Status.OUTPUT_LIMIT
    assert len(result.stdout) == 1 << 20 and result.stdout_truncated
    result = run(
        "import sys\nwhile True:\n    sys.stderr.write('z' * 65536)\n",
        backend=any_backend,
        time_limit=2,
    )
    assert result.stderr_truncated and len(result.stderr) <= Limits().max_stderr_bytes


def test_descriptor_exhaustion_is_contained(any_backend):
    code = (
        "import os\nfds = []\n"
        "try:\n"
        "    while True: fds.append(os.open('/dev/null', os.O_RDONLY))\n"
        "except OSError as e: print(len(fds), e.errno)\n"
    )
    result = run(code, backend=any_backend, limits=Limits(max_open_files=64))
    count, errno_value = map(int, result.stdout.split())
    assert count < 64 and errno_value == 24  # EMFILE


def test_cannot_signal_the_parent_or_the_host(backend):
    me = os.getpid()
    code = (
        "import os, signal\n"
        f"for pid in [{me}, os.getppid(), 1]:\n"
        "    try: os.kill(pid, signal.SIGKILL); print('SENT', pid)\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
        "try: os.kill(-1, signal.SIGKILL)\n"
        "except OSError: pass\n"
    )
    result = run(code, backend=backend)
    assert os.getpid() == me  # we are still here
    assert f"SENT {me}" not in result.stdout
    assert run("print('ok')", backend=backend).ok


def test_cannot_read_the_parent_environment(backend, monkeypatch):
    token = secrets.token_hex(8)
    monkeypatch.setenv("RLLM_TEST_SECRET", token)
    code = (
        "import os\nprint(dict(os.environ))\n"
        "for pid in ['self', '1', str(os.getppid())]:\n"
        "    try: print(open(f'/proc/{pid}/environ', 'rb').read())\n"
        "    except OSError as e: print('blocked', type(e).__name__)\n"
    )
    result = run(code, backend=backend)
    assert token not in result.stdout and "RLLM_TEST_SECRET" not in result.stdout


# Constants the wrappers set themselves (none of the caller's values); docs/sandbox.md says so.
WRAPPER_ENV = {
    "firejail": {
        "container",
        "SHELL",
        "FIREJAIL_QUIET",
        "PROMPT_COMMAND",
        "KDE_FORK_SLAVES",
        "QML_DISABLE_DISK_CACHE",
        "QT_X11_NO_MITSHM",
    },
    "bubblewrap": {"PWD"},
}


def test_environment_is_the_documented_one(backend, monkeypatch):
    monkeypatch.setenv("RLLM_TEST_SECRET", secrets.token_hex(8))
    result = run("import json, os\nprint(json.dumps(dict(os.environ)))", backend=backend)
    assert result.ok, result
    env = json.loads(result.stdout)
    ours = {"PATH", "LANG", "LC_ALL", "HOME", "PYTHONHASHSEED"}
    assert ours <= set(env) and set(env) - ours <= WRAPPER_ENV[backend], sorted(env)
    assert env["PATH"] == "/usr/bin:/bin" and env["HOME"] == "/" and env["PYTHONHASHSEED"] == "0"
