"""The page cache of the sandbox's files is no channel (issue #24, session 10 attack F0).

A sandbox read chosen pages of a rarely used visible file (bringing them into the host's page
cache); another touched the same pages of a mapping and read from its own major-fault count
whether each was cached: 32 of 32 bits, exactly. Now a sandbox shows only an allow-list
(:func:`resident.root`) whose every file the judging process keeps locked in memory
(:func:`resident.ensure`): no visible page is ever a major fault, whatever happened before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from rllm_envs.sandbox import Status, resident, run, runner

# A program that lists every regular file it can see (the kernel's and in-memory file
# systems aside: /proc, /sys, /dev and /run hold no file of a disk).
_LIST = textwrap.dedent(
    """
    import os
    seen = []
    for top in sorted(os.listdir("/")):
        if top in ("proc", "sys", "dev", "run"):
            continue
        for directory, dirs, files in os.walk("/" + top, onerror=lambda e: None):
            for name in files:
                path = os.path.join(directory, name)
                if os.path.isfile(path) and not os.path.islink(path):
                    try:  # what a program can map (firejail's blacklisted files cannot)
                        os.close(os.open(path, os.O_RDONLY))
                    except OSError:
                        continue
                    seen.append(os.path.realpath(path))  # /bin/x is /usr/bin/x
    print("\\n".join(seen))
    """
)

# Maps each file named on stdin, touches every page and prints those that were a major
# fault (not in the page cache), then "checked N".
_TOUCH = textwrap.dedent(
    """
    import mmap, os, resource, sys
    faults, checked = [], 0
    for path in sys.stdin.read().split("\\n"):
        if not path:
            continue
        fd = os.open(path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        if size:
            m = mmap.mmap(fd, size, prot=mmap.PROT_READ)
            m.madvise(mmap.MADV_RANDOM)  # no read-ahead: one page, one fault
            for offset in range(0, size, mmap.PAGESIZE):
                before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
                m[offset]
                if resource.getrusage(resource.RUSAGE_SELF).ru_majflt != before:
                    faults.append(f"{path}@{offset}")
            m.close()
        os.close(fd)
        checked += 1
    print("\\n".join(faults[:20]))
    print("checked", checked, "faults", len(faults))
    """
)


def _evict(paths: list[str]) -> None:
    """Ask the host's kernel to drop the files' cached pages (what memory pressure does)."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _skip_if_refused() -> None:
    keeper = resident.keeper()
    if keeper is not None and keeper.refused:
        pytest.skip(f"locking refused here: {keeper.refused}")


def _sample(files: tuple[str, ...], count: int) -> list[str]:
    step = max(1, len(files) // count)
    picked = list(files[::step])
    by_size = sorted(files, key=lambda p: os.path.getsize(p), reverse=True)
    return sorted({*picked, *by_size[:3]})  # the largest (cc1plus, the precompiled header)


def test_every_visible_file_is_in_the_allow_list(backend, monkeypatch):
    # What the mounts show, without the Landlock layer (which only hides more: a program
    # cannot list the root directory under it).
    monkeypatch.setattr(runner, "_LANDLOCK_BOOT", "_ll = None")
    result = run(_LIST, backend=backend, time_limit=20)
    assert result.status is Status.OK, result
    seen = set(result.stdout.split())
    allow = resident.root()
    assert seen, result
    outside = sorted(seen - set(allow.files))
    assert not outside, outside[:20]
    # and the keeper of this process holds each of them
    keeper = resident.keeper()
    assert keeper is not None and set(allow.files) <= set(keeper.mappings)


def test_a_visible_page_is_never_a_major_fault(backend):
    """Pages the host was asked to drop are still cached: a sandbox's touch never faults."""
    allow = resident.root()
    run("pass", backend=backend)  # the keeper starts before the first sandbox
    _skip_if_refused()
    sample = _sample(allow.files, 150)
    _evict(sample)  # locked pages stay; before, this made every page of them a major fault
    result = run(_TOUCH, stdin="\n".join(sample), backend=backend, time_limit=20)
    assert result.status is Status.OK, result
    assert result.stdout.strip().endswith(f"checked {len(sample)} faults 0"), result.stdout


def test_the_s10_probe_reads_nothing(backend):
    """Session 10's receiver, on a visible file: the sender's reads change no fault count."""
    allow = resident.root()
    run("pass", backend=backend)
    _skip_if_refused()
    path = max(allow.files, key=os.path.getsize)
    pages = os.path.getsize(path) // 4096
    offsets = [(i * pages // 40) * 4096 for i in range(32)]
    _evict([path])
    receiver = (
        "import mmap, os, resource\n"
        f"fd = os.open({path!r}, os.O_RDONLY)\n"
        "m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)\n"
        "m.madvise(mmap.MADV_RANDOM)\n"
        "out = ''\n"
        f"for offset in {offsets!r}:\n"
        "    before = resource.getrusage(resource.RUSAGE_SELF).ru_majflt\n"
        "    m[offset]\n"
        "    out += '0' if resource.getrusage(resource.RUSAGE_SELF).ru_majflt > before else '1'\n"
        "print(out)\n"
    )
    result = run(receiver, backend=backend)
    assert result.status is Status.OK, result
    assert result.stdout.strip() == "1" * 32, result.stdout  # every page cached: no bit


@pytest.mark.parametrize(
    "path",
    [
        "/etc/passwd",
        "/usr/bin/bash",
        "/usr/bin/perl",
        "/usr/lib/python3/dist-packages",
        "/usr/lib/x86_64-linux-gnu/libicudata.so.72",
        "/usr/lib/x86_64-linux-gnu/libgtk-3.so.0",
        "/usr/lib/python3.11/test",
        "/usr/lib/python3.11/config-3.11-x86_64-linux-gnu",
    ],
)
def test_a_file_outside_the_allow_list_is_invisible(backend, path):
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    assert not resident.root().shows(os.path.realpath(path))
    probe = (
        "import os\n"
        f"path = {path!r}\n"
        "try:\n"
        "    if os.path.isdir(path):\n"
        "        print('LISTED', os.listdir(path)[:3])\n"
        "    else:\n"
        "        print('READ', len(open(path, 'rb').read(4096)))\n"
        "except OSError as e:\n"
        "    print('hidden', type(e).__name__)\n"
    )
    result = run(probe, backend=backend)
    assert result.status is Status.OK, result
    out = result.stdout
    assert out.startswith("hidden") or out.strip() in ("LISTED []", "READ 0"), out


def test_python_and_cpp_still_work(backend):
    code = "import ssl, sqlite3, decimal, json, ctypes, fractions, heapq\nprint(sum(range(5)))"
    assert run(code, backend=backend).stdout == "10\n"
    cpp = (
        "#include <bits/stdc++.h>\n#include <ext/pb_ds/assoc_container.hpp>\n"
        "#include <unistd.h>\nusing namespace std;\n"
        "int main(){long long a,b;cin>>a>>b;vector<long long> v{a,b};"
        "cout<<accumulate(v.begin(),v.end(),0LL)<<endl;}\n"
    )
    result = run(cpp, language="cpp", stdin="2 40\n", backend=backend)
    assert result.status is Status.OK and result.stdout == "42\n", result


_REFUSED = textwrap.dedent(
    """
    import json, resource, warnings
    resource.setrlimit(resource.RLIMIT_MEMLOCK, (1 << 16, 1 << 16))
    from rllm_envs.sandbox import resident
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        keeper = resident.ensure()
        resident.ensure()
    print(json.dumps({
        "warnings": [str(w.message) for w in caught
                     if issubclass(w.category, resident.PageCacheWarning)],
        "refused": keeper.refused, "locked": keeper.locked, "size": keeper.size,
    }))
    """
)


def test_the_keeper_warns_once_and_goes_on_when_locking_is_refused():
    """Without CAP_IPC_LOCK and with a small RLIMIT_MEMLOCK: a warning, no error."""
    command = [sys.executable, "-c", _REFUSED]
    if os.geteuid() == 0:
        # root without CAP_IPC_LOCK (dropped from the bounding set: gone after exec)
        command = ["setpriv", "--bounding-set=-ipc_lock", "--inh-caps=-ipc_lock", *command]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["refused"], report
    assert report["locked"] < report["size"], report
    assert len(report["warnings"]) == 1, report
    assert "RLIMIT_MEMLOCK" in report["warnings"][0]


def _locked_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmLck:"))


def test_a_replaced_or_new_file_is_locked_at_the_next_check(tmp_path):
    """A package upgrade (a new inode at a path) or a new file in a shown directory."""
    first, second = tmp_path / "a.so", tmp_path / "b.so"
    first.write_bytes(b"a" * 40000)
    allow = resident.Root(
        binds=(str(tmp_path),), links=(), masks=(), files=(str(first),), size=40000
    )
    libc = resident._libc()
    keeper = resident.Keeper(pid=os.getpid())
    resident._start(libc, keeper, allow.files, allow.size)
    try:
        if keeper.refused:
            pytest.skip(f"locking refused here: {keeper.refused}")
        before = keeper.mappings[str(first)]
        assert before[6] and keeper.locked == 40000
        replacement = tmp_path / "a.so.new"
        replacement.write_bytes(b"b" * 50000)
        os.replace(replacement, first)
        second.write_bytes(b"c" * 4096)
        resident._recheck(libc, keeper, allow)
        after = keeper.mappings[str(first)]
        assert after[1] == first.stat().st_ino != before[1] and after[6]
        assert keeper.mappings[str(second)][6]
        assert keeper.locked == 50000 + 4096
    finally:
        resident._release(libc, keeper)


def test_the_keeper_locks_again_in_a_forked_child():
    keeper = resident.ensure()
    if keeper.refused:
        pytest.skip(f"locking refused here: {keeper.refused}")
    assert _locked_kib() * 1024 >= keeper.locked
    pid = os.fork()
    if pid == 0:  # memory locks are not inherited
        code = 1
        try:
            unlocked = _locked_kib() * 1024 < keeper.locked
            child = resident.ensure()
            ok = child.pid == os.getpid() and child.locked == child.size
            code = 0 if unlocked and ok and _locked_kib() * 1024 >= child.locked else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
