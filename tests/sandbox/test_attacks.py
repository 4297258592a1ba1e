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
from rllm_envs.code.judge import TestCase, close_pools, judge
from rllm_envs.sandbox import Limits, Status, cgroup, run
from tests.sandbox.conftest import sandbox_processes

PROJECT = Path(rllm_envs.__file__).resolve().parents[1]
HIDDEN_TESTS = PROJECT / "rllm_envs" / "code" / "data" / "problems.jsonl"
CODE_ENVS = ["rllm/Code-v0", "rllm/CodeMultiTurn-v1", "rllm/CodeCpp-v0"]

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
    # Each child writes every page it allocates (untouched pages are not held) and says so;
    # after each in-memory file the parent counts the children still alive, giving one the
    # OOM killer chose up to 5 s to finish exiting (a loaded machine once counted it whole).
    code = (
        "import os, sys, time\n"
        "children = []\n"
        "for _ in range(2):\n"
        "    r, w = os.pipe()\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        b = b'\\x01' * (200 << 20)\n"
        "        os.write(w, b'x')\n"
        "        time.sleep(30)\n"
        "    os.close(w)\n"
        "    if os.read(r, 1):\n"
        "        children.append(pid)\n"
        "def alive(i):\n"
        "    deadline = time.monotonic() + 5\n"
        "    while True:\n"
        "        n = sum(os.waitpid(pid, os.WNOHANG) == (0, 0) for pid in children)\n"
        "        if (i + 1) * 15 + 200 * n < 256 + 200 or time.monotonic() > deadline:\n"
        "            return n\n"
        "        time.sleep(0.05)\n"
        "fds = []\n"
        "for i in range(60):\n"
        "    fd = os.memfd_create('m')\n"
        "    os.write(fd, b'x' * (15 << 20))\n"
        "    fds.append(fd)\n"
        "    print('held', (i + 1) * 15 + 200 * alive(i), flush=True)\n"
    )
    result = run(code, backend=backend, limits=Limits(memory_mb=256, time_limit=20))
    held = [int(line.split()[1]) for line in result.stdout.splitlines() if line.startswith("held")]
    # What was alive together stayed under the group's limit (plus the wrappers' slack).
    assert held and max(held) < 256 + 200, result
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
    env = gym.make(env_id, sandbox_backend=backend)
    fence = "cpp" if env_id.endswith("Cpp-v0") else "python"
    for attack in _env_attacks(env_id):
        env.reset(seed=0, options={"index": 0})
        obs, reward, terminated, truncated, info = env.step(f"```{fence}\n{attack}\n```")
        assert reward == 0.0, (attack[:80], info)
        assert isinstance(obs, str) and not info["is_correct"]
    env.close()


# ================================================================ round 3
# The report channel at any descriptor number, other tests' inputs, one syscall policy,
# CPU isolation, state between tests, bounded host work, records never trusted.

OPEN_FDS = 1100


@pytest.fixture
def many_fds():
    """The judging process holds 1,100 more open descriptors (numbers past 1023)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    if want < OPEN_FDS + 256:
        pytest.skip(f"RLIMIT_NOFILE hard limit {hard} is too low for {OPEN_FDS} descriptors")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), hard))
    fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(OPEN_FDS)]
    assert max(fds) > 1023
    yield fds
    close_pools()
    # Nothing the test started is left running.
    deadline = time.monotonic() + 10
    while sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    for fd in fds:
        os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert sandbox_processes() == []


def _new_forged_records(time_value: object = 0.0) -> bytes:
    """Records in the executor's own format (header line + blobs), claiming every test AC."""
    frames = b""
    for i in range(64):
        out = EXPECTED.encode() + b"\n"
        header = {
            "index": i,
            "outcome": "exited",
            "code": 0,
            "signal": None,
            "cpu": time_value,
            "wall": 0.0,
            "maxrss_kb": 1,
            "sizes": [len(out), 0, -1],
        }
        body = json.dumps(header).encode() + b"\n" + out
        frames += len(body).to_bytes(4, "big") + body
    done = json.dumps({"done": True}).encode() + b"\n"
    return frames + len(done).to_bytes(4, "big") + done


# Counts the descriptors above 2 this test process holds, whatever their number.
COUNT_FDS_PY = (
    "import os\n"
    "n = 0\n"
    "for fd in range(3, 1 << 16):\n"
    "    try:\n        os.fstat(fd); n += 1\n    except OSError:\n        pass\n"
    "print(n)\n"
)
COUNT_FDS_CPP = (
    "#include <fcntl.h>\n#include <cstdio>\n"
    "int main(){ int n = 0; for (int fd = 3; fd < (1 << 16); fd++)"
    ' if (fcntl(fd, F_GETFD) != -1) n++; printf("%d\\n", n); }\n'
)


def test_test_process_holds_only_standard_streams(backend, warm, many_fds):
    tests = [TestCase(f"{i}\n", "0\n") for i in range(3)]
    python = judge(COUNT_FDS_PY, tests, backend=backend, warm=warm)
    assert python.verdicts == ["AC"] * 3, python
    functional = judge(
        "class Solution:\n    def f(self, x):\n"
        + "\n".join(
            "        " + line for line in COUNT_FDS_PY.replace("print(n)", "return n").split("\n")
        ),
        [TestCase("1", "0")],
        kind="functional",
        func_name="f",
        backend=backend,
        warm=warm,
    )
    # The functional test holds fd 0 (its input, then its result file) and 1, 2 only.
    assert functional.verdicts == ["AC"], functional
    cpp = judge(COUNT_FDS_CPP, tests, language="cpp", backend=backend, warm=warm)
    assert cpp.verdicts == ["AC"] * 3, cpp
    for language, code in (("python", COUNT_FDS_PY), ("cpp", COUNT_FDS_CPP)):
        result = run(code, language=language, backend=backend)
        assert result.ok and result.stdout == "0\n", (language, result)


def test_channel_forgery_with_many_descriptors(backend, warm, many_fds):
    # Writes records in the executor's format to every descriptor it could hold; the
    # judging process holds 1,100 others, so the channel's number is past 1023.
    forged = _new_forged_records()
    attack = (
        "import os, sys, time\n"
        f"F = {forged!r}\n"
        "hit = []\n"
        "for fd in range(0, 1 << 16):\n"
        "    try:\n        os.write(fd, F); hit.append(fd)\n    except OSError:\n        pass\n"
        "print(hit, file=sys.stderr)\n"
    )
    result = judge(attack, _tests(), backend=backend, warm=warm, time_limit=5)
    assert result.passed == 0, result
    assert all(v == "WA" for v in result.verdicts), result


@pytest.mark.parametrize("pool", ["cold", "pooled"])
@pytest.mark.parametrize("env_id", CODE_ENVS)
def test_env_step_with_many_descriptors(env_id, backend, many_fds, pool, monkeypatch):
    # The reference solution still passes and a forger still gets 0, through env.step,
    # with a sandbox started per step ($RLLM_JUDGE_POOL=0) or from the judge's pool.
    if pool == "cold":
        monkeypatch.setenv("RLLM_JUDGE_POOL", "0")
    env = gym.make(env_id, sandbox_backend=backend)
    fence = "cpp" if env_id.endswith("Cpp-v0") else "python"
    env.reset(seed=0, options={"index": 0})
    _, reward, *_ = env.step(env.unwrapped.oracle_action())
    assert reward == 1.0
    forged = _new_forged_records()
    if fence == "cpp":
        attack = (
            "#include <unistd.h>\n"
            f"static const char F[] = {json.dumps(forged.decode('latin-1'))};\n"
            "int main(){ for (int fd = 0; fd < (1 << 16); fd++) write(fd, F, sizeof F - 1); }\n"
        )
    else:
        attack = (
            f"import os\nF = {forged!r}\n"
            "for fd in range(1 << 16):\n"
            "    try:\n        os.write(fd, F)\n    except OSError:\n        pass\n"
        )
    env.reset(seed=0, options={"index": 0})
    obs, reward, terminated, truncated, info = env.step(f"```{fence}\n{attack}\n```")
    assert reward == 0.0 and isinstance(obs, str) and not info["is_correct"], info
    env.close()


# Reads every readable byte of its own process and prints the secrets not its own. A test
# process cannot read /proc/self/maps (Landlock) or /proc/self/mem (non-dumpable), so it finds
# its mappings by bisecting the address space: mmap(MAP_FIXED_NOREPLACE) fails with EEXIST iff
# a range holds a mapping, madvise(MADV_NORMAL) succeeds iff all of it is mapped; it copies
# each mapping through write() into a memfd (an unreadable page is EFAULT, not a crash).
SECRET_SCAN = r"""
import ctypes, errno, os, re, sys
own = sys.stdin.read()
pattern = re.compile(rb'SECRET[0-9a-f]{32}')
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                      ctypes.c_long]
libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
libc.write.restype = ctypes.c_ssize_t
PAGE = 4096
def overlaps(lo, hi):
    # MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE
    if libc.mmap(lo, hi - lo, 0, 0x22 | 0x4000 | 0x100000, -1, 0) == lo:
        libc.munmap(lo, hi - lo)
        return False
    return ctypes.get_errno() == errno.EEXIST
def regions(lo, hi, out):
    if not overlaps(lo, hi):
        return
    if libc.madvise(lo, hi - lo, 0) == 0:
        if out and out[-1][1] == lo:
            out[-1][1] = hi
        else:
            out.append([lo, hi])
    elif hi - lo > PAGE:
        mid = lo + (hi - lo) // 2 // PAGE * PAGE
        regions(lo, mid, out)
        regions(mid, hi, out)
spans = []
regions(0x10000, (1 << 47) - PAGE, spans)  # the top page is not for users
fd = os.memfd_create('scan')
found = set()
for lo, hi in spans:
    pos = lo
    while pos < hi:
        n = libc.write(fd, pos, min(hi - pos, 1 << 22))
        if n <= 0:
            pos += PAGE
            continue
        found.update(pattern.findall(os.pread(fd, n, 0)))
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, 0)
        pos += n - 64 if n > 64 and pos + n < hi else n
assert len(spans) >= 3, spans  # the binary, its heap, libraries, the stack
print(sorted(x.decode() for x in found if x.decode() not in own))
"""

#: The same scan as a C++ program (its process after ``execve``: the binary's memory only).
SECRET_SCAN_CPP = r"""
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>
#include <vector>
static const unsigned long PAGE = 4096;
static std::vector<std::pair<unsigned long, unsigned long>> spans;
static bool overlaps(unsigned long lo, unsigned long hi) {
    void* p = mmap((void*)lo, hi - lo, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | 0x100000, -1, 0);
    if (p == (void*)lo) { munmap(p, hi - lo); return false; }
    return errno == EEXIST;
}
static void regions(unsigned long lo, unsigned long hi) {
    if (!overlaps(lo, hi)) return;
    if (madvise((void*)lo, hi - lo, MADV_NORMAL) == 0) {
        if (!spans.empty() && spans.back().second == lo) spans.back().second = hi;
        else spans.push_back({lo, hi});
    } else if (hi - lo > PAGE) {
        unsigned long mid = lo + (hi - lo) / 2 / PAGE * PAGE;
        regions(lo, mid);
        regions(mid, hi);
    }
}
static char buf[1 << 22];
int main() {
    char own[64] = {0};
    if (scanf("%63s", own) != 1) return 1;
    regions(0x10000, (1UL << 47) - PAGE);
    int fd = memfd_create("scan", 0), found = 0;
    for (auto [lo, hi] : spans) {
        unsigned long pos = lo;
        while (pos < hi) {
            ssize_t n = write(fd, (void*)pos, std::min(hi - pos, (unsigned long)sizeof buf));
            if (n <= 0) { pos += PAGE; continue; }
            n = pread(fd, buf, n, 0);
            if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET)) return 1;
            for (ssize_t p = 0; p + 38 <= n; p++) {
                if (memcmp(buf + p, "SECRET", 6) || !memcmp(buf + p, own, 38)) continue;
                bool hex = true;
                for (int k = 6; k < 38; k++) hex = hex && isxdigit((unsigned char)buf[p + k]);
                found += hex;
            }
            pos += (n > 64 && pos + n < hi) ? n - 64 : n;
        }
    }
    if (spans.size() < 3) return 2;
    if (found) printf("%d\n", found); else printf("[]\n");
}
"""


def test_the_memory_scans_find_a_planted_secret(backend):
    """The scans see a process's memory without /proc: a secret placed in it is found."""
    own = TestCase(f"SECRET{secrets.token_hex(16)}\n", "[]\n")
    planted = "blob = bytearray(b'SECRET' + b'abcdef' * 5 + b'ab')\n" + SECRET_SCAN
    result = judge(planted, [own], backend=backend)
    assert result.results[0].output.strip() == f"['SECRET{'abcdef' * 5}ab']", result.results[0]
    cpp = SECRET_SCAN_CPP.replace(
        "static char buf",
        'volatile char planted[40] = "SECRETabcdefabcdefabcdefabcdefabcdefab";\nstatic char buf',
    )
    result = judge(cpp, [own], language="cpp", backend=backend)
    assert result.results[0].output.strip() == "1", result.results[0]


def test_no_test_holds_another_tests_input(backend, warm):
    # Every readable byte of each test's process is searched for the other tests' inputs.
    secrets_ = [f"SECRET{secrets.token_hex(16)}" for _ in range(4)]
    tests = [TestCase(s + "\n", "[]\n") for s in secrets_]
    result = judge(SECRET_SCAN, tests, backend=backend, warm=warm, stop_on_failure=False)
    assert result.verdicts == ["AC"] * 4, [r.output for r in result.results]
    result = judge(
        SECRET_SCAN_CPP, tests, language="cpp", backend=backend, warm=warm, stop_on_failure=False
    )
    assert result.verdicts == ["AC"] * 4, [r.output for r in result.results]


def test_multi_turn_feedback_shows_no_hidden_input(backend, tmp_path):
    hidden = [f"SECRET{secrets.token_hex(16)}" for _ in range(3)]
    record = {
        "question_title": "Reverse",
        "question_content": "Print the input reversed.",
        "question_id": "reverse",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(
            [{"input": "public\n", "output": "cilbup\n", "testtype": "stdin"}]
        ),
        "private_test_cases": json.dumps(
            [{"input": h + "\n", "output": h[::-1] + "\n", "testtype": "stdin"} for h in hidden]
        ),
        "metadata": "{}",
    }
    path = tmp_path / "echo.jsonl"
    path.write_text(json.dumps(record) + "\n")
    env = gym.make("rllm/CodeMultiTurn-v1", dataset=str(path), sandbox_backend=backend)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(f"```python\n{SECRET_SCAN}\n```")
    assert reward == 0.0 and not terminated
    assert not any(h in obs for h in hidden), obs
    assert info["public_verdicts"] == ["WA"]
    env.close()


# Each entry: a name and Python that prints whether the attack worked ("OPEN") or not.
POLICY_ATTACKS_PY = {
    "clone-newuser": (
        "import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "pid = libc.syscall(56, 0x10000000 | 17, 0, 0, 0, 0)\n"
        "if pid == 0:\n    os._exit(0)\n"
        "print('OPEN' if pid > 0 else 'closed')\n"
    ),
    "clone3-newuser": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "args = (ctypes.c_uint64 * 11)(0x10000000, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0)\n"
        "pid = libc.syscall(435, args, 88)\n"
        "import os\nif pid == 0:\n    os._exit(0)\n"
        "print('OPEN' if pid > 0 else 'closed')\n"
    ),
    "unshare": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('OPEN' if libc.syscall(272, 0x10000000) == 0 or libc.syscall(272, 0x20000)"
        " == 0 else 'closed')\n"
    ),
    "io_uring": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('OPEN' if libc.syscall(425, 1, ctypes.create_string_buffer(120)) >= 0"
        " else 'closed')\n"
    ),
    "vsock": (
        "import socket\ntry:\n    socket.socket(40, socket.SOCK_STREAM); print('OPEN')\n"
        "except OSError:\n    print('closed')\n"
    ),
    "personality": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('OPEN' if libc.syscall(135, 0x0400000) >= 0 else 'closed')\n"
    ),
    "flock": (
        "import fcntl\nhit = []\n"
        "for p in ('/etc/hostname', '/etc/hosts', '/etc/passwd', '/usr/bin/python3'):\n"
        "    try:\n        f = open(p, 'rb')\n    except OSError:\n        continue\n"
        "    for how in (fcntl.LOCK_EX, fcntl.LOCK_SH):\n"
        "        try:\n            fcntl.flock(f, how | fcntl.LOCK_NB); hit.append(p)\n"
        "        except OSError:\n            pass\n"
        "    try:\n        fcntl.lockf(f, fcntl.LOCK_SH | fcntl.LOCK_NB); hit.append(p)\n"
        "    except OSError:\n        pass\n"
        "print('OPEN' if hit else 'closed')\n"
    ),
    "inotify": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('OPEN' if libc.inotify_init1(0) >= 0 else 'closed')\n"
    ),
    "sysv-ipc": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "ok = [libc.shmget(0x1234, 4096, 0o1600) >= 0, libc.msgget(0x1234, 0o1600) >= 0,"
        " libc.semget(0x1234, 1, 0o1600) >= 0]\n"
        "print('OPEN' if any(ok) else 'closed')\n"
    ),
    "mqueue": (
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
        "print('OPEN' if libc.syscall(240, b'q', 0o100 | 2, 0o600, None) >= 0 else 'closed')\n"
    ),
    "unix-and-ip-sockets": (
        "import socket\nhit = []\n"
        "for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6):\n"
        "    try:\n        socket.socket(family, socket.SOCK_STREAM); hit.append(family)\n"
        "    except OSError:\n        pass\n"
        "a, b = socket.socketpair()\na.sendall(b'x')\nassert b.recv(1) == b'x'\n"
        "print('OPEN' if hit else 'closed')\n"
    ),
    "sigchld-ignore": (
        "import signal\ntry:\n    signal.signal(signal.SIGCHLD, signal.SIG_IGN); print('OPEN')\n"
        "except OSError:\n    print('closed')\n"
    ),
    "proc-1-mem": (
        "hit = []\nfor how in ('r+b', 'rb'):\n"
        "    try:\n        open('/proc/1/mem', how, 0); hit.append(how)\n"
        "    except OSError:\n        pass\n"
        "print('OPEN' if hit else 'closed')\n"
    ),
}
# The 32-bit int 0x80 ABI: killed by the filter (SIGSYS) before the syscall runs.
INT80_CPP = (
    "#include <cstdio>\n#include <unistd.h>\n"
    'int main(){ long r; printf("start\\n"); fflush(stdout);\n'
    ' asm volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");  /* getpid */\n'
    ' printf("OPEN %ld\\n", r); }\n'
)


def test_one_syscall_policy_for_both_backends(backend):
    for name, code in POLICY_ATTACKS_PY.items():
        result = run(code, backend=backend)
        assert result.ok and result.stdout == "closed\n", (name, result)
    if os.uname().machine == "x86_64":
        result = run(INT80_CPP, language="cpp", backend=backend)
        assert "OPEN" not in result.stdout and result.signal == 31, result  # SIGSYS
        verdict = judge(INT80_CPP, [TestCase("", "start\n")], language="cpp", backend=backend)
        assert verdict.verdicts == ["RE"], verdict


@pytest.mark.parametrize("env_id", ["rllm/Code-v0", "rllm/CodeCpp-v0"])
def test_policy_attacks_through_env_step(env_id, backend):
    env = gym.make(env_id, sandbox_backend=backend)
    attacks = (
        [INT80_CPP]
        if env_id.endswith("Cpp-v0")
        else [POLICY_ATTACKS_PY["clone-newuser"], POLICY_ATTACKS_PY["sysv-ipc"]]
    )
    fence = "cpp" if env_id.endswith("Cpp-v0") else "python"
    for attack in attacks:
        env.reset(seed=0, options={"index": 0})
        obs, reward, *_ = env.step(f"```{fence}\n{attack}\n```")
        assert reward == 0.0 and isinstance(obs, str)
    env.close()


# A test carries work to the next one through anything that outlives its processes.
CARRY_STATE = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
seen = []
shm = libc.shmget(0x5eed, 4096, 0o1666)
if shm >= 0:
    libc.shmat.restype = ctypes.c_void_p
    addr = libc.shmat(shm, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        cell = ctypes.c_int.from_address(addr)
        if cell.value:
            seen.append('shm')
        cell.value += 1
for path in ('/dev/shm/carry', '/tmp/carry', '/var/tmp/carry', '/run/lock/carry', '/carry'):
    try:
        if os.path.exists(path):
            seen.append(path)
        open(path, 'w').write('x')
    except OSError:
        pass
# An abstract socket kept alive only by its own descriptor in flight in its own queue.
import array, socket
name = b"\0carry-state"
try:
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).connect(name)
    seen.append('abstract socket')
except OSError:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(name)
        peer = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        peer.connect(name)
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [s.fileno()]))]
        peer.sendmsg([b"fd"], rights)
    except OSError:
        pass
# A loopback port left in TIME_WAIT by an actively closed connection.
try:
    probe = socket.socket()
    probe.bind(('127.0.0.1', 47123))
    probe.close()
except OSError as e:
    if e.errno == 98:
        seen.append('time-wait')
try:
    server = socket.socket()
    server.bind(('127.0.0.1', 47124))
    server.listen(1)
    client = socket.create_connection(('127.0.0.1', 47124))
    conn, _ = server.accept()
    client.close()
except OSError:
    pass
print('fresh' if not seen else seen)
"""


def test_no_state_between_tests(backend, warm):
    tests = [TestCase(f"{i}\n", "fresh\n") for i in range(3)]
    result = judge(CARRY_STATE, tests, backend=backend, warm=warm, stop_on_failure=False)
    assert result.verdicts == ["AC"] * 3, [r.output for r in result.results]


def test_no_writable_path(backend):
    code = (
        "import os\nfound = []\n"
        "for root, dirs, files in os.walk('/'):\n"
        "    dirs[:] = [d for d in dirs if os.path.join(root, d) not in"
        " ('/proc', '/sys', '/usr')]\n"
        "    for d in [root] + [os.path.join(root, f) for f in files]:\n"
        "        if os.access(d, os.W_OK) and not d.startswith('/dev/'):\n"
        "            found.append(d)\n"
        "for d in ('/dev/shm', '/dev/mqueue', '/usr', '/tmp'):\n"
        "    if os.path.isdir(d) and os.access(d, os.W_OK):\n"
        "        found.append(d)\n"
        "print(found)\n"
    )
    result = run(code, backend=backend, time_limit=30)
    assert result.ok and result.stdout == "[]\n", result


def test_records_are_never_trusted():
    # The host parses whatever the channel carries: typed, bounded, else a failed test.
    from rllm_envs.code.judge import _Records

    tests = [TestCase(f"{i}\n", EXPECTED + "\n") for i in range(64)]
    for forged in (
        _new_forged_records(10**400),  # a 400-digit time (OverflowError as a float)
        _new_forged_records(float("nan")),
        _new_forged_records(-1.0),
        _new_forged_records("0"),
        _new_forged_records(True),
        b"\x00\x00\x00\x05[[[[[",
        b"\x00\x00\x00\x02{}",
        b"\x7f\xff\xff\xff" + b"x" * 100,
    ):
        records = _Records(tests, "stdin", [[t.output] for t in tests], 1.0, 1 << 20, False)
        records.sent = len(tests)
        records.feed(forged)
        assert not any(r.passed for r in records.results), forged[:80]
    # The well-formed version of the same records is read (the check is not vacuous).
    records = _Records(tests, "stdin", [[t.output] for t in tests], 1.0, 1 << 20, False)
    records.sent = len(tests)
    records.feed(_new_forged_records(0.0))
    assert records.done and all(r.passed for r in records.results)


def test_host_work_is_bounded(monkeypatch):
    # A flood of numbers against a short answer parses nothing; an answer written in
    # another form parses only the tokens that differ.
    from rllm_envs.sandbox import harness

    calls: list[int] = []
    parse = harness._numbers

    def counting(tokens):
        calls.append(len(tokens))
        return parse(tokens)

    monkeypatch.setattr(harness, "_numbers", counting)
    flood = "1.0 " * (4 << 20)
    assert not harness.stdout_matches(flood, "1\n")
    assert not harness.stdout_matches("1.0\n" * (1 << 20), "1\n")
    assert not harness.stdout_matches("1.0 " * 2000, " ".join(["1"] * 2001))
    assert calls == []
    # Within the slack the flood is compared: the same count of numbers, other spellings.
    assert harness.stdout_matches("1.000 " * 2000, " ".join(["1"] * 2000))
    calls.clear()
    assert harness.stdout_matches("1.0 2 3.50", "1 2 3.5")
    assert sum(calls) <= 3 * 3  # linear in the line's tokens
    assert harness.canonical_stdout("1e999999999") == "d:1E+999999999"
    assert not harness.stdout_matches("1e-999999999", "0")
    assert not harness.stdout_matches("1e999999999", "1e999999998")
    assert harness.stdout_matches("1e999999999", "10e999999998")


@needs_cgroups
@pytest.mark.slow
def test_cpu_hogs_do_not_turn_a_correct_program_into_tle(backend):
    # Four submissions whose tests fork CPU hogs (setsid, so they outlive the test
    # process until the executor reaps them) run while a correct program is judged.
    hog = (
        "import os, time\n"
        "for _ in range(4):\n"
        "    if os.fork() == 0:\n        os.setsid()\n        while True: pass\n"
        "time.sleep(30)\n"
    )
    hogs = [
        threading.Thread(
            target=judge,
            args=(hog, [TestCase(f"{i}\n", "x\n") for i in range(3)]),
            kwargs={"backend": backend, "warm": False, "time_limit": 2, "stop_on_failure": False},
        )
        for _ in range(4)
    ]
    for thread in hogs:
        thread.start()
    time.sleep(2.0)
    # About 0.1 s of CPU per test, then the answer.
    correct = "n = int(input())\ns = 0\nfor i in range(700000):\n    s += i\nprint(n * 2)\n"
    result = judge(
        correct,
        [TestCase(f"{i}\n", f"{2 * i}\n") for i in range(4)],
        backend=backend,
        warm=False,
        time_limit=1.5,
        stop_on_failure=False,
    )
    for thread in hogs:
        thread.join()
    assert result.verdicts == ["AC"] * 4, result
    group = cgroup.create(256, 8)
    assert group is not None
    try:
        assert group.cpu_isolated  # each sandbox weighs like one process here
    finally:
        group.close()


def test_hidden_inputs_wait_for_the_public_tests():
    # No hidden input enters the sandbox before every public test is reported; none at all
    # after a public failure when judging stops at the first failure.
    from rllm_envs.code.judge import _Records

    tests = [TestCase(f"in{i}\n", "x\n") for i in range(4)]
    for stop, failing, more in ((False, False, True), (True, True, False), (False, True, True)):
        records = _Records(tests, "stdin", [["x\n"]] * 4, 1.0, 1 << 20, stop, hidden_from=2)
        first = records.next_input()
        assert first is not None and b"in1" in first and b"in2" not in first
        assert records.next_input() == b""
        out = b"y\n" if failing else b"x\n"
        for index in range(2):
            header = {
                "index": index,
                "outcome": "exited",
                "code": 0,
                "signal": None,
                "cpu": 0.0,
                "wall": 0.0,
                "maxrss_kb": 1,
                "sizes": [len(out), 0, -1],
            }
            body = json.dumps(header).encode() + b"\n" + out
            records.feed(len(body).to_bytes(4, "big") + body)
        hidden = records.next_input()
        assert (hidden is not None and b"in2" in hidden and b"in3" in hidden) == more


def test_no_other_sandbox_visible_through_sys(backend):
    # Another sandbox's control group (its memory use, its processes) is a channel.
    code = (
        "import os\nseen = []\n"
        "for d in ('/sys/fs/cgroup', '/sys/fs/cgroup/memory', '/sys/fs/cgroup/pids'):\n"
        "    try:\n        seen += os.listdir(d)\n    except OSError:\n        pass\n"
        "print(seen)\n"
    )
    result = run(code, backend=backend)
    assert result.ok and result.stdout == "[]\n", result


def test_sys_shows_only_static_cpu_facts(backend):
    # The host's /sys (firejail) is a window on machine-wide state; only the CPU list
    # glibc reads stays readable. bubblewrap mounts no /sys.
    code = (
        "import os\nfound = []\n"
        "for root, dirs, files in os.walk('/sys'):\n"
        "    if root.count('/') > 5:\n        dirs[:] = []\n"
        "    for name in files:\n"
        "        path = os.path.join(root, name)\n"
        "        try:\n            open(path, 'rb').read(1)\n        except OSError:\n"
        "            continue\n"
        "        if not path.startswith('/sys/devices/system/cpu/'):\n"
        "            found.append(path)\n"
        "    if len(found) > 20:\n        break\n"
        "print(found, os.path.isdir('/sys'))\n"
    )
    result = run(code, backend=backend, time_limit=30)
    assert result.ok, result
    assert result.stdout == f"[] {backend == 'firejail'}\n", result


def test_numeric_flood_is_wrong_and_shown_in_part(backend):
    # 4 MB of numbers for a one-number answer: WA without the host decoding it all.
    flood = "print(' '.join(['1.5'] * 1_000_000))\n"
    result = judge(flood, [TestCase("1\n", "3\n")], backend=backend, snippet_chars=100)
    assert result.verdicts == ["WA"] and result.results[0].output.startswith("1.5 1.5")


# Workers that each burn a fixed amount of CPU (their own clock, whatever the load), their
# parent hiding them: ignoring SIGCHLD (the kernel would reap them unseen) or leaving them.
HIDDEN_WORKERS = r"""
import os, signal, time
try:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
except OSError:
    pass
read, write = os.pipe()
for _ in range(4):
    if os.fork() == 0:
        os.close(read)
        while time.process_time() < 0.1:
            pass
        os._exit(0)
os.close(write)
os.read(read, 1)  # every worker has exited when the pipe closes
print("done")
"""


def test_cpu_time_of_hidden_workers_is_counted(backend):
    result = judge(HIDDEN_WORKERS, [TestCase("", "done\n")], backend=backend, time_limit=5)
    assert result.results[0].time >= 0.35, result  # the workers' 0.4 s, not the parent's


def test_every_attack_with_many_descriptors(backend, warm, many_fds):
    # Every attack class of this file, judged while the judging process holds 1,100 more
    # descriptors (so the channel's number is past 1023): forgers get nothing, the state
    # and input readers find nothing, the policy holds in a judged test process, and
    # ``many_fds`` checks that nothing is left running.
    for attack in (FD_COPY, WRITE_EVERY_FD, KILL_SUPERVISOR, SCAN_MEMORY, EXIT_AS_SIGNAL):
        result = judge(attack, _tests(), backend=backend, warm=warm, time_limit=5)
        assert result.passed == 0, (attack[:80], result)
    fresh = [TestCase(f"{i}\n", "fresh\n") for i in range(3)]
    result = judge(CARRY_STATE, fresh, backend=backend, warm=warm, stop_on_failure=False)
    assert result.verdicts == ["AC"] * 3, [r.output for r in result.results]
    own = [TestCase(f"SECRET{secrets.token_hex(16)}\n", "[]\n") for _ in range(3)]
    result = judge(SECRET_SCAN, own, backend=backend, warm=warm, stop_on_failure=False)
    assert result.verdicts == ["AC"] * 3, [r.output for r in result.results]
    closed = [TestCase("", "closed\n")]
    for name, code in POLICY_ATTACKS_PY.items():
        result = judge(code, closed, backend=backend, warm=warm)
        assert result.verdicts == ["AC"], (name, result)
    if os.uname().machine == "x86_64":
        result = judge(
            INT80_CPP, [TestCase("", "start\n")], language="cpp", backend=backend, warm=warm
        )
        assert result.verdicts == ["RE"], result


def test_verdict_uses_cpu_time_with_wall_time_as_backstop():
    # A test slowed down by others' load (wall far past the limit, little CPU) keeps its
    # verdict; its own CPU past the limit, or the executor's wall backstop, is TLE.
    from rllm_envs.code.judge import _Observed, _test_verdict

    def seen(cpu: float, wall: float, outcome: str = "exited") -> _Observed:
        code = 0 if outcome == "exited" else None
        signal_ = None if outcome == "exited" else 9
        return _Observed(outcome, code, signal_, cpu, wall, "2\n", "", None)

    assert _test_verdict(seen(0.2, 3.5), "stdin", ["2\n"], 1.0)[0] == "AC"
    assert _test_verdict(seen(1.2, 1.3), "stdin", ["2\n"], 1.0)[0] == "TLE"
    assert _test_verdict(seen(0.0, 3.0, "timeout"), "stdin", ["2\n"], 1.0)[0] == "TLE"
