"""Round 10 of the attacks on the code sandbox (issue #24, session 11, att24), public API.

Each test replays one finding of the blind round:

* F1: the page *mapcount* of read-only file pages, read from a process's memory reports
  (``/proc/self/smaps``: ``Shared_Clean``/``Pss``; ``smaps_rollup``; ``numa_maps``:
  ``mapmax``; ``pagemap``: bit 56), was an exact channel between concurrent sandboxes (a
  relay with no solving code earned 1.0 next to a solver; a ``CodeMultiTurn-v1`` feedback
  showed a concurrent episode's hidden inputs). A judged test (and a C++ ``run()``
  program) is restricted by Landlock: nothing under ``/proc`` opens;
* F2: a C++ test reopened the compiled binary (``/proc/self/exe``, then, once it exec'd
  away, ``/proc/self/fd/N`` for writing) and appended to it: the next test ran the
  modified program (state between tests; time pooled across tests). The binary is sealed;
* F3: ``memfd_create(MFD_HUGETLB)`` (and ``mmap(MAP_HUGETLB)``) took memory outside the
  sandbox's memory group on a host that reserves huge pages. Both are refused.
"""

from __future__ import annotations

import errno
import os

import pytest

from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import Status, harness, landlock, run, seccomp

from .test_attacks_round8 import _decide, _errno

_X86 = os.uname().machine == "x86_64"
needs_x86 = pytest.mark.skipif(not _X86, reason="flag values of x86-64 in the programs")
needs_landlock = pytest.mark.skipif(landlock.abi() < 1, reason="this kernel has no Landlock")

#: What a judged test must not open: the memory reports (F1), and the rest of /proc.
_REPORTS = (
    "/proc/self/smaps",
    "/proc/self/smaps_rollup",
    "/proc/self/numa_maps",
    "/proc/self/pagemap",
    "/proc/self/maps",
    "/proc/self/status",
    "/proc/meminfo",
)

# ------------------------------------------------------------ F1: no memory reports in a test

_PY_PROBE = """
import mmap, os
# the receiver's half of the channel: a page of a shared read-only file, mapped and touched
f = open("/usr/lib/python3.11/os.py", "rb")
m = mmap.mmap(f.fileno(), 4096, prot=mmap.PROT_READ)
m[0]
out = []
for path in {paths!r}:
    try:
        os.close(os.open(path, os.O_RDONLY))
        out.append("open")
    except OSError as e:
        out.append(str(e.errno))
try:
    os.listdir("/proc/self/fd")
    out.append("listed")
except OSError as e:
    out.append(str(e.errno))
with open("/dev/null", "w") as sink:  # what a program needs still works
    sink.write("x")
out.append(str(len(open("/dev/urandom", "rb").read(4))))
out.append(open("/dev/stdin").read().strip())  # a link through /proc to the test's own input
print(" ".join(out))
"""

_CPP_PROBE = r"""
#include <bits/stdc++.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
int main() {
    int f = open("/usr/include/stdio.h", O_RDONLY);
    volatile char* page = (char*)mmap(nullptr, 4096, PROT_READ, MAP_SHARED, f, 0);
    (void)page[0];
    const char* paths[] = {PATHS};
    for (const char* p : paths) {
        int fd = open(p, O_RDONLY);
        if (fd >= 0) { printf("open "); close(fd); } else printf("%d ", errno);
    }
    int sink = open("/dev/null", O_WRONLY | O_TRUNC);
    printf("%s ", sink >= 0 && write(sink, "x", 1) == 1 ? "null" : "nonull");
    long a, b;
    std::cin >> a >> b;
    printf("%ld\n", a + b);
}
"""


@needs_landlock
def test_a_judged_python_test_opens_no_memory_report(backend):
    code = _PY_PROBE.format(paths=_REPORTS)
    result = judge(code, [TestCase("in-7\n", "")], backend=backend)
    words = result.results[0].output.split()
    denied = str(errno.EACCES)
    # Every /proc file, and listing /proc/self/fd, is refused; /dev/null, /dev/urandom and
    # /dev/stdin (a link to the test's own in-memory input) work.
    assert words == [denied] * (len(_REPORTS) + 1) + ["4", "in-7"], result.results[0]


@needs_landlock
def test_a_judged_cpp_test_opens_no_memory_report(backend):
    code = _CPP_PROBE.replace("PATHS", ", ".join(f'"{p}"' for p in _REPORTS))
    result = judge(code, [TestCase("2 3\n", "")], backend=backend, language="cpp")
    words = result.results[0].output.split()
    # pagemap was readable from a C++ test (dumpable after execve): bit 56 is the mapcount.
    assert words == [str(errno.EACCES)] * len(_REPORTS) + ["null", "5"], result.results[0]


@needs_landlock
def test_a_cpp_run_program_opens_no_memory_report(backend):
    code = _CPP_PROBE.replace("PATHS", '"/proc/self/smaps", "/proc/self/pagemap"')
    result = run(code, language="cpp", stdin="2 3\n", backend=backend)
    assert result.status is Status.OK, result
    assert result.stdout.split() == [str(errno.EACCES)] * 2 + ["null", "5"]


@needs_landlock
def test_the_reference_programs_still_pass_under_the_restriction(backend):
    """Python tests that use threads, subprocesses, signals and imports still run."""
    code = (
        "import json, decimal, fractions, threading, subprocess, signal, os\n"
        "signal.signal(signal.SIGUSR1, lambda *a: None)\n"
        "os.kill(os.getpid(), signal.SIGUSR1)\n"
        "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
        "child = subprocess.run(['/usr/bin/python3', '-c', 'print(6 * 7)'],"
        " capture_output=True, text=True)\n"
        "print(int(input()) + int(child.stdout))\n"
    )
    result = judge(code, [TestCase("1\n", "43"), TestCase("2\n", "44")], backend=backend)
    assert result.passed, result.results


def test_without_landlock_the_executor_falls_back_and_the_host_warns_once(monkeypatch):
    """Fake ``_syscall`` (a unit test of the fallback only): the kernel offers no Landlock."""
    monkeypatch.setattr(harness, "_syscall", lambda *args: -1)
    assert harness.landlock_abi() == 0
    assert harness.landlock_ruleset() == -1  # tests then run as before (no restriction)
    monkeypatch.setattr(landlock, "abi", lambda: 0)
    monkeypatch.setattr(landlock, "_warned", False)
    with pytest.warns(RuntimeWarning, match="no Landlock"):
        landlock.warn_unavailable()
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        landlock.warn_unavailable()  # once


def test_an_assert_in_a_stdin_program_is_a_runtime_error_of_its_own(backend):
    """Found with this round's scans: a failed ``assert`` of a stdin or functional program
    was re-raised out of the test's body and ran on in the executor's code in the test
    process (a traceback of the harness, "Bad file descriptor", after the program's)."""
    code = "x = int(input())\nassert x == 2, 'boom'\nprint(x)\n"
    result = judge(code, [TestCase("1\n", "1\n")], backend=backend)
    error = result.results[0].error or ""
    assert result.verdicts == ["RE"] and error.rstrip().endswith("AssertionError: boom"), error
    assert "During handling" not in error and "Bad file descriptor" not in error, error


# ------------------------------------------------------------ F2: the binary is sealed

_REWRITE = r"""
#include <bits/stdc++.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
using namespace std;
int main() {
    string in;
    getline(cin, in);
    int rfd = open("/proc/self/exe", O_RDONLY);
    struct stat st;
    fstat(rfd, &st);
    cout << "size=" << st.st_size << endl;
    // nothing runs the binary once this process is python3: no ETXTBSY to stop a write
    string fd = to_string(rfd), rec = "@@STATE@@" + in + "\n";
    const char* py =
        "import os, sys\n"
        "try:\n"
        "    fd = os.open('/proc/self/fd/' + sys.argv[1], os.O_WRONLY | os.O_APPEND)\n"
        "    print('appended', os.write(fd, sys.argv[2].encode()))\n"
        "except OSError as e:\n"
        "    print('refused', e.errno)\n";
    char* args[] = {(char*)"python3", (char*)"-c", (char*)py, (char*)fd.c_str(),
                    (char*)rec.c_str(), nullptr};
    execv("/usr/bin/python3", args);
}
"""


def test_a_cpp_test_cannot_rewrite_the_binary_the_next_test_runs(backend):
    tests = [TestCase(f"hidden-input-{i}\n", "") for i in range(3)]
    result = judge(_REWRITE, tests, backend=backend, language="cpp")
    outputs = [r.output.split() for r in result.results]
    sizes = {words[0] for words in outputs}
    assert len(sizes) == 1, outputs  # every test ran the binary as it was linked
    for words in outputs:
        assert words[1:] == ["refused", str(errno.EPERM)], outputs


def test_the_compiled_binary_is_sealed_against_writes():
    binary, message = harness.compile_cpp("int main() { return 0; }\n", 30.0, 0)
    assert binary is not None, message
    try:
        import fcntl

        seals = fcntl.fcntl(binary, fcntl.F_GET_SEALS)
        wanted = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
        assert seals & wanted == wanted
        writable = os.open(f"/proc/self/fd/{binary}", os.O_WRONLY | os.O_APPEND)
        try:
            with pytest.raises(PermissionError):  # through every descriptor, every re-open
                os.write(writable, b"@@STATE@@")
            with pytest.raises(PermissionError):
                os.ftruncate(writable, 0)
        finally:
            os.close(writable)
    finally:
        os.close(binary)


# ------------------------------------------------------------ F3: no hugetlb pages


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_filter_refuses_hugetlb_pages_on_each_architecture(monkeypatch, arch):
    monkeypatch.setattr(seccomp, "_arch", lambda: arch)
    audit, numbers = seccomp._ARCHES[arch]
    program = seccomp.filter_program()
    memfd, mmap = numbers["memfd_create"], numbers["mmap"]
    assert _errno(_decide(program, audit, memfd, 0x1000, 0x4)) == errno.EPERM  # MFD_HUGETLB
    assert _errno(_decide(program, audit, memfd, 0x1000, 0x4 | 0x2 | (21 << 26))) == errno.EPERM
    assert _decide(program, audit, memfd, 0x1000, 0x1 | 0x2) == 0x7FFF0000  # CLOEXEC, SEALING
    assert _errno(_decide(program, audit, mmap, 0, 1 << 21, 3, 0x22 | 0x40000)) == errno.EPERM
    assert _decide(program, audit, mmap, 0, 1 << 21, 3, 0x22) == 0x7FFF0000  # anonymous, private


@needs_x86
def test_a_program_gets_no_hugetlb_memfd(backend):
    code = (
        "import mmap, os\n"
        "out = []\n"
        "for flags in (os.MFD_HUGETLB, 0):\n"
        "    try:\n"
        "        os.close(os.memfd_create('h', flags)); out.append('ok')\n"
        "    except OSError as e:\n"
        "        out.append(str(e.errno))\n"
        "try:\n"
        "    mmap.mmap(-1, 1 << 21, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x40000)\n"
        "    out.append('ok')\n"
        "except OSError as e:\n"
        "    out.append(str(e.errno))\n"
        "print(*out)\n"
    )
    result = run(code, backend=backend)
    assert result.status is Status.OK, result
    assert result.stdout.split() == [str(errno.EPERM), "ok", str(errno.EPERM)]


# ------------------------------------------------------------ att24b N2: no same-page merging


@pytest.mark.parametrize("arch", ["x86_64", "aarch64"])
def test_the_filter_refuses_same_page_merging_on_each_architecture(monkeypatch, arch):
    """On a host running KSM, whether a page was merged with another sandbox's (a slower
    copy-on-write fault) is a channel: a program may not opt into merging."""
    monkeypatch.setattr(seccomp, "_arch", lambda: arch)
    audit, numbers = seccomp._ARCHES[arch]
    program = seccomp.filter_program()
    madvise, prctl = numbers["madvise"], numbers["prctl"]
    allowed = 0x7FFF0000
    assert _errno(_decide(program, audit, madvise, 0, 4096, 12)) == errno.EPERM  # MERGEABLE
    assert _decide(program, audit, madvise, 0, 4096, 4) == allowed  # MADV_DONTNEED
    assert _errno(_decide(program, audit, prctl, 67, 1)) == errno.EPERM  # PR_SET_MEMORY_MERGE
    assert _decide(program, audit, prctl, 3) == allowed  # PR_GET_DUMPABLE


@needs_x86
def test_a_program_cannot_opt_into_same_page_merging(backend):
    code = (
        "import ctypes, mmap\n"
        "libc = ctypes.CDLL(None, use_errno=True)\n"
        "m = mmap.mmap(-1, 4096)\n"
        "address = ctypes.addressof(ctypes.c_char.from_buffer(m))\n"
        "out = []\n"
        "for call in (lambda: libc.madvise(ctypes.c_void_p(address), 4096, 12),\n"
        "             lambda: libc.prctl(67, 1, 0, 0, 0), lambda: libc.prctl(3, 0, 0, 0, 0)):\n"
        "    out.append(str(ctypes.get_errno()) if call() < 0 else 'ok')\n"
        "print(*out)\n"
    )
    result = run(code, backend=backend)
    assert result.status is Status.OK, result
    assert result.stdout.split() == [str(errno.EPERM), str(errno.EPERM), "ok"]
