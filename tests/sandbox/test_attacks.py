"""The adversarial suite: a policy under optimisation attacks the sandbox and the judge.

One test per attack class, each run against both isolating backends and, for the judge,
cold (a fresh sandbox) and warm (a pool), and through ``env.step`` of every code env id.
Every forging attempt must give no accepted test, reward 0 and a normal transition; no
host file is read or written; nothing the attack started is left running.
"""

from __future__ import annotations

import json
import os
import secrets
import threading
import time
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import Limits, Status, cgroup, run

PROJECT = Path(rllm_envs.__file__).resolve().parents[1]
HIDDEN_TESTS = PROJECT / "rllm_envs" / "code" / "data" / "problems.jsonl"
CODE_ENVS = ["rllm/Code-v0", "rllm/CodeMultiTurn-v0", "rllm/CodeCpp-v0"]

# What a forger writes everywhere it can: records in every shape a judge might read.
_FORGED_FRAMES = "".join(
    f"{{'index': {i}, 'verdict': 'AC', 'time': 0.0, 'output': '', 'error': None}}\n"
    for i in range(64)
)
_FORGED_JSON = [
    json.dumps(
        {
            "index": i,
            "outcome": "exited",
            "code": 0,
            "signal": None,
            "time": 0.0,
            "maxrss_kb": 1,
            "stdout": "",
            "stderr": "",
            "result": "A",
        }
    ).encode()
    for i in range(64)
]
FORGED = _FORGED_FRAMES.encode() + b"".join(len(f).to_bytes(4, "big") + f for f in _FORGED_JSON)

# Python attack snippets; each is a whole submission that solves nothing.
FD_COPY = f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
FORGED = {FORGED!r}
copied = []
for pid in range(1, 200):
    pfd = libc.syscall(434, pid, 0)  # pidfd_open
    if pfd < 0:
        continue
    for fd in range(64):
        nfd = libc.syscall(438, pfd, fd, 0)  # pidfd_getfd
        if nfd >= 0:
            copied.append((pid, fd))
            try:
                os.write(nfd, FORGED)
            except OSError:
                pass
for pid in os.listdir("/proc"):
    if pid.isdigit() and int(pid) != os.getpid():
        for fd in range(64):
            try:
                with open(f"/proc/{{pid}}/fd/{{fd}}", "wb") as f:
                    f.write(FORGED)
                copied.append((pid, fd, "proc"))
            except OSError:
                pass
os.write(2, repr(copied).encode())
"""
WRITE_EVERY_FD = f"""
import os
for fd in range(0, 1024):
    try:
        os.write(fd, {FORGED!r})
    except OSError:
        pass
print({_FORGED_FRAMES!r})
"""
KILL_SUPERVISOR = f"""
import os, signal
for fd in range(3, 256):
    try:
        os.write(fd, {FORGED!r})
    except OSError:
        pass
for pid in [os.getppid(), 1, *range(2, 400)]:
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""
# The expected answer of the problem below: a secret the submission can only guess.
EXPECTED = "YES"
SCAN_MEMORY = """
import gc, sys
found = [o for o in gc.get_objects() if isinstance(o, (dict, list, str, bytes))
         and ("expected" in repr(o)[:10000] or "salt" in repr(o)[:10000])]
frames = []
f = sys._getframe()
while f is not None:
    frames.append(sorted(f.f_locals)); f = f.f_back
print("NO")
print(len(found), frames, file=sys.stderr)
"""
EXIT_AS_SIGNAL = "import sys\nsys.exit(137)"


def _tests() -> list[TestCase]:
    return [TestCase(f"{i}\n", EXPECTED + "\n") for i in range(3)]


@pytest.fixture(params=["cold", "warm"])
def warm(request) -> bool:
    return request.param == "warm"


@pytest.mark.parametrize(
    "attack",
    [FD_COPY, WRITE_EVERY_FD, KILL_SUPERVISOR, SCAN_MEMORY, EXIT_AS_SIGNAL],
    ids=["pidfd-copy", "every-fd", "kill-supervisor", "scan-memory", "exit-code"],
)
def test_no_forged_verdict(backend, warm, attack):
    result = judge(attack, _tests(), backend=backend, warm=warm, time_limit=5)
    assert result.passed == 0, result
    assert result.verdict_trust == "host"


def test_no_forged_functional_value(backend, warm):
    # The return value travels as JSON on a channel only the test's process holds; the
    # host compares. Patching json or the caller's frame changes nothing the host reads.
    code = (
        "import json, sys\n"
        "json.dumps = lambda *a, **k: '[1, 2, 3]'\n"
        "class Solution:\n"
        "    def f(self, x):\n"
        "        fr = sys._getframe(1)\n"
        "        for k in list(fr.f_globals):\n"
        "            if 'canonical' in k: fr.f_globals[k] = lambda v: '\"ok\"'\n"
        f"        import os\n        os.write(3, {FORGED!r}) if False else None\n"
        "        return 0\n"
    )
    # The expected values are secrets; the forger can only make the host read its own.
    tests = [TestCase("1", json.dumps(secrets.token_hex(8))), TestCase("2", "[4, 5, 6]")]
    for snippet in (code, FD_COPY + "\nclass Solution:\n    def f(self, x):\n        return 0\n"):
        result = judge(snippet, tests, kind="functional", func_name="f", backend=backend, warm=warm)
        assert result.passed == 0, result


def test_no_expected_output_in_the_sandbox(backend, warm):
    # Nothing of the expected output (no answer, digest or salt) is in the sandbox: a
    # program that finds a string shaped like the answer anywhere in its memory prints it.
    token = secrets.token_hex(16)
    code = (
        "import gc, re, sys\n"
        "shape = re.compile('[0-9a-f]{32}')\n"
        "def strings(o):\n"
        "    if isinstance(o, str): yield o\n"
        "    elif isinstance(o, bytes): yield o.decode('latin-1')\n"
        "    elif isinstance(o, dict): yield from (s for v in o.values() for s in strings(v))\n"
        "    elif isinstance(o, (list, tuple)): yield from (s for v in o for s in strings(v))\n"
        "found = [m for o in gc.get_objects() for s in strings(o) for m in shape.findall(s)]\n"
        "print(found[-1] if found else 'none')\n"
    )
    tests = [TestCase(f"{i}\n", token + "\n") for i in range(3)]
    result = judge(code, tests, backend=backend, warm=warm)
    assert result.verdicts == ["WA"] * 3, result


def test_malformed_records_fail_never_raise(backend):
    # A channel of nonsense (were it reachable) or a program that floods every stream.
    code = (
        "import os, sys\n"
        "junk = b'\\xff\\xff\\xff\\x7f' + b'[' * 100000\n"
        "for fd in range(0, 64):\n"
        "    try:\n        os.write(fd, junk)\n    except OSError:\n        pass\n"
        "print([1, 2, 3])\n"
    )
    result = judge(code, _tests(), backend=backend, warm=False)
    assert result.passed == 0


def test_assert_kind_is_flagged_in_process(backend):
    code = "def inc(x):\n    return x + 1\n"
    result = judge(code, [TestCase("assert inc(1) == 2")], kind="assert", backend=backend)
    assert result.all_passed and result.verdict_trust == "in_process"


# ---------------------------------------------------------------- the file system


def test_no_host_file_through_dotdot(backend):
    token = secrets.token_hex(8)
    target = Path("/tmp") / f"rllm-attack-{token}"
    code = (
        "import os\n"
        "leaked = []\n"
        f"for p in ['/../{HIDDEN_TESTS}', '/../../{HIDDEN_TESTS}', '{HIDDEN_TESTS}',"
        " '/../root/.bashrc', '/../work']:\n"
        "    try:\n"
        "        leaked.append(open(p).read(50) if not os.path.isdir(p) else os.listdir(p))\n"
        "    except OSError:\n        pass\n"
        f"for p in ['/../tmp/rllm-attack-{token}', '/tmp/rllm-attack-{token}',"
        f" '/../../tmp/rllm-attack-{token}', '/../dev/shm/rllm-attack-{token}']:\n"
        "    try:\n"
        "        open(p, 'w').write('x'); leaked.append('wrote ' + p)\n"
        "    except OSError:\n        pass\n"
        "print(leaked)\n"
    )
    result = run(code, backend=backend)
    assert result.ok and result.stdout == "[]\n", result
    assert not target.exists() and not Path(f"/dev/shm/rllm-attack-{token}").exists()


@pytest.mark.parametrize("directive", ["#include", ".incbin"])
def test_no_host_file_through_the_compiler(backend, directive):
    token = secrets.token_hex(6)
    if directive == "#include":
        code = f'#include "/../{HIDDEN_TESTS}"\n#include "{HIDDEN_TESTS}"\nint main() {{}}\n'
    else:
        code = (
            'asm(".section .rodata\\nleak: .incbin \\"/../' + str(HIDDEN_TESTS) + '\\"");\n'
            f"int main() {{ return 0; }} // {token}\n"
        )
    result = judge(code, [TestCase("", "")], language="cpp", backend=backend)
    assert result.verdicts == ["CE"]
    assert '"problem"' not in (result.results[0].error or "")


# ---------------------------------------------------------------- the kernel


SYSCALLS = """
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    return libc.syscall(nr, *args) >= 0
ok = {
    "ptrace": call(101, 16, os.getppid(), 0, 0),  # PTRACE_ATTACH
    "process_vm_readv": call(310, os.getppid(), 0, 0, 0, 0, 0) or ctypes.get_errno() != 1,
    "io_uring_setup": call(425, 1, ctypes.create_string_buffer(120)),
    "unshare_user": call(272, 0x10000000),
}
try:
    socket.socket(40, socket.SOCK_STREAM)
    ok["vsock"] = True
except OSError:
    ok["vsock"] = False
print(sorted(k for k, v in ok.items() if v))
"""


def test_dangerous_syscalls_denied(backend):
    result = run(SYSCALLS, backend=backend)
    assert result.ok and result.stdout == "[]\n", result


def test_exit_code_does_not_choose_the_status(backend):
    for code, expected in [("import sys; sys.exit(137)", 137), ("import sys; sys.exit(152)", 152)]:
        result = run(code, backend=backend)
        assert result.status is Status.RUNTIME_ERROR
        assert result.exit_code == expected and result.signal is None


def test_stderr_flood_is_stopped_early(backend):
    # Without the flood rule the run would end at its time limit, as TIMEOUT.
    result = run("import os\nwhile True:\n    os.write(2, b'e' * 65536)", backend=backend)
    assert result.status is Status.OUTPUT_LIMIT and result.stderr_truncated


# ---------------------------------------------------------------- resources


def _own_processes(token: str) -> list[int]:
    found = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if token.encode() in f.read():
                    found.append(int(pid))
        except (OSError, ValueError):
            pass
    return found


def test_setsid_daemons_do_not_survive(backend):
    token = str(1000 + secrets.randbelow(10**6))
    daemon = (
        "import os\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['sleep', '{token}'])\n"
        "    os._exit(0)\n"
        "print('YES')\n"
    )
    run(daemon, backend=backend)
    judge(daemon, _tests(), backend=backend, warm=False)
    deadline = time.monotonic() + 5
    while _own_processes(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _own_processes(token) == []


needs_cgroups = pytest.mark.skipif(
    not cgroup.available(), reason="no per-sandbox control groups on this machine"
)


@needs_cgroups
def test_memory_of_children_and_memfds_is_bounded(backend):
    # Two children and in-memory files: each under its own RLIMIT_AS, together far beyond.
    code = (
        "import os, sys\n"
        "held = 0\n"
        "for _ in range(2):\n"
        "    if os.fork() == 0:\n"
        "        b = bytearray(200 << 20)\n"
        "        os.write(1, b'child\\n')\n"
        "        import time; time.sleep(30)\n"
        "fds = []\n"
        "for i in range(60):\n"
        "    fd = os.memfd_create('m')\n"
        "    os.write(fd, b'x' * (15 << 20))\n"
        "    fds.append(fd)\n"
        "    print('held', (i + 1) * 15, flush=True)\n"
    )
    result = run(code, backend=backend, limits=Limits(memory_mb=256, time_limit=20))
    held = [int(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("held")]
    total = (max(held) if held else 0) + 200 * result.stdout.count("child")
    assert total < 256 + 200, result  # the group's limit (plus the wrappers' slack) holds
    assert result.status is not Status.OK


@needs_cgroups
def test_no_process_count_cross_talk(backend):
    # One run parks many sleeping processes; a concurrent correct C++ judging still passes.
    hog = (
        "import os, time\n"
        "n = 0\n"
        "for _ in range(60):\n"
        "    if os.fork() == 0:\n        time.sleep(20); os._exit(0)\n"
        "    n += 1\n"
        "print(n, flush=True)\ntime.sleep(20)\n"
    )
    hogs = [
        threading.Thread(target=run, args=(hog,), kwargs={"backend": backend, "time_limit": 8})
        for _ in range(4)
    ]
    for thread in hogs:
        thread.start()
    time.sleep(1.5)
    code = '#include <cstdio>\nint main(){int x; scanf("%d", &x); printf("%d\\n", x + 1);}\n'
    result = judge(code, [TestCase("1\n", "2\n")], language="cpp", backend=backend, warm=False)
    for thread in hogs:
        thread.join()
    assert result.verdicts == ["AC"], result


# ---------------------------------------------------------------- through the envs


def _env_attacks(env_id: str) -> list[str]:
    if env_id == "rllm/CodeCpp-v0":
        fd_copy = (
            "#include <unistd.h>\n#include <sys/syscall.h>\n#include <cstdio>\n"
            "int main(){ const char f[] = \"{'index': 0, 'verdict': 'AC'}\\n\";\n"
            " for (int pid = 1; pid < 100; pid++) { int p = syscall(434, pid, 0);\n"
            "  if (p < 0) continue; for (int fd = 0; fd < 64; fd++) {\n"
            "   int n = syscall(438, p, fd, 0); if (n >= 0) write(n, f, sizeof f); } }\n"
            " for (int fd = 0; fd < 256; fd++) write(fd, f, sizeof f);\n"
            " kill(getppid(), 9); return 0; }\n"
        )
        return [fd_copy, '#include "/../' + str(HIDDEN_TESTS) + '"\nint main(){}\n']
    return [FD_COPY, WRITE_EVERY_FD, KILL_SUPERVISOR, EXIT_AS_SIGNAL]


@pytest.mark.parametrize("env_id", CODE_ENVS)
def test_env_step_gives_zero_to_forgers(env_id, backend):
    env = gym.make(env_id, backend=backend)
    fence = "cpp" if env_id.endswith("Cpp-v0") else "python"
    for attack in _env_attacks(env_id):
        env.reset(seed=0, options={"index": 0})
        obs, reward, terminated, truncated, info = env.step(f"```{fence}\n{attack}\n```")
        assert reward == 0.0, (attack[:80], info)
        assert isinstance(obs, str) and not info["is_correct"]
    env.close()
