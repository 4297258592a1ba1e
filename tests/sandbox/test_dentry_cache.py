"""The host's cache of missing names is no channel under bubblewrap (issue #24, attack N1).

A ``stat`` of a missing name under a directory bound from the host leaves a negative entry in
the host's directory cache; a later ``stat`` of the same name, from any sandbox, is several
times faster, for minutes: 64 of 64 bits crossed between sandboxes and a relay with no
solving code earned reward 1.0. bubblewrap now binds the shown directories from a tmpfs copy
(:mod:`rllm_envs.sandbox.mirror`), and tmpfs keeps no negative entry. firejail shows the
host's directories (its ``/`` and ``/usr`` too): ``auto`` picks bubblewrap first, and
docs/sandbox.md lists the channel as open under firejail.
"""

from __future__ import annotations

import os
import random
import shutil
import textwrap
import time
import warnings

import pytest

from rllm_envs.sandbox import backends, mirror, resident, run
from rllm_envs.sandbox.backends import _hidden_inside

pytestmark = pytest.mark.sandbox

# Every directory a program may look names up in: the shown trees, their parents, the
# interpreter's and compiler's search paths, the root.
DIRS = [
    "/",
    "/usr",
    "/usr/lib",
    "/usr/bin",
    "/usr/include",
    "/usr/include/c++/12",
    "/usr/include/x86_64-linux-gnu/bits",
    "/usr/lib/python3.11",
    "/usr/lib/python3.11/lib-dynload",
    "/usr/lib/python3.11/encodings",
    "/usr/lib/gcc/x86_64-linux-gnu/12/include",
    "/usr/lib/locale/C.utf8",
    "/usr/local/lib/rllm-envs/pch",
    "/etc",
]
_NAMES = 300  # per directory; the even ones are sent

_SEND = """
import os
for d in DIRS:
    for i in range(0, N, 2):
        try:
            os.stat(f"{d}/nx{SALT}_{i}")
        except OSError:
            pass
"""

# Prints "dir sent_median other_median" per directory (stat times of sent and unsent names,
# interleaved so that load hits both alike).
_RECEIVE = """
import os, statistics, time
for d in DIRS:
    sent, other = [], []
    for i in range(N):
        a = time.perf_counter_ns()
        try:
            os.stat(f"{d}/nx{SALT}_{i}")
        except OSError:
            pass
        (sent if i % 2 == 0 else other).append(time.perf_counter_ns() - a)
    print(d, statistics.median(sent), statistics.median(other))
"""


def _program(body: str, dirs: list[str], salt: int) -> str:
    return f"DIRS = {dirs!r}\nN = {_NAMES}\nSALT = {salt}\n" + textwrap.dedent(body)


def _ratios(output: str) -> dict[str, float]:
    """``other / sent`` per directory: about 1 without a channel, 1.3-3 with one."""
    out = {}
    for line in output.strip().splitlines():
        directory, sent, other = line.rsplit(" ", 2)
        out[directory] = float(other) / float(sent)
    return out


def _probe_host(directory: str) -> float:
    """The same probe run in this process (no sandbox): the control."""
    salt = random.randrange(10**12)
    scope = {"DIRS": [directory], "N": _NAMES, "SALT": salt}
    exec(compile(textwrap.dedent(_SEND), "<send>", "exec"), dict(scope))
    time.sleep(0.5)
    buf: list[str] = []
    scope_r = dict(scope, print=lambda *a: buf.append(" ".join(map(str, a))))
    exec(compile(textwrap.dedent(_RECEIVE), "<receive>", "exec"), scope_r)
    return _ratios("\n".join(buf))[directory]


def _shown_dirs() -> list[str]:
    return [d for d in DIRS if os.path.isdir(d)]


def test_missing_names_leave_no_trace_between_bubblewrap_sandboxes():
    if backends._probe(backends.Bubblewrap()) is not None:
        pytest.skip("bubblewrap cannot run here")
    if mirror.mirror(_hidden_inside(resident.root())) is None:
        pytest.skip("no writable tmpfs for the copy (a DirectoryCacheWarning says so)")
    control = _probe_host("/usr/include")
    if control < 1.25:
        pytest.skip(f"this host's file system keeps no trace either (control {control:.2f})")
    dirs = _shown_dirs()
    worst: dict[str, float] = {}
    for _ in range(3):  # a fresh salt each round: sender, pause, receiver
        salt = random.randrange(10**12)
        sent = run(_program(_SEND, dirs, salt), backend="bubblewrap", time_limit=20)
        assert sent.ok, sent.stderr
        time.sleep(0.5)
        got = run(_program(_RECEIVE, dirs, salt), backend="bubblewrap", time_limit=20)
        assert got.ok, got.stderr
        for directory, ratio in _ratios(got.stdout).items():
            worst[directory] = min(worst.get(directory, ratio), ratio)
    # With a channel the sent names are faster in every round (the control: >= 1.25);
    # without, the best of three rounds sits at 1 +- noise.
    leaking = {d: round(r, 2) for d, r in worst.items() if r > 1.15}
    assert not leaking, f"missing names answer faster after another sandbox looked: {leaking}"


def test_auto_picks_the_backend_without_the_channel(monkeypatch):
    monkeypatch.delenv(backends.BACKEND_ENV_VAR, raising=False)
    if backends._probe(backends.Bubblewrap()) is not None:
        pytest.skip("bubblewrap cannot run here")
    assert backends.select_backend().name == "bubblewrap"


# ------------------------------------------------------------------ the copy itself


@pytest.fixture
def fresh_copy(tmp_path, monkeypatch):
    """Build copies in a tmpfs directory of this test's own (removed afterwards)."""
    if not mirror.is_tmpfs("/dev/shm"):
        pytest.skip("/dev/shm is not a tmpfs here")
    base = f"/dev/shm/rllm-test-mirror-{os.getpid()}-{random.randrange(10**9)}"
    os.mkdir(base, 0o700)
    monkeypatch.setenv(mirror.MIRROR_ENV, base)
    held: list[tuple[str, ...]] = []
    monkeypatch.setattr(resident, "hold_also", held.append)  # this process's keeper: untouched
    try:
        if mirror.mirror(_hidden_inside(resident.root())) is None:
            pytest.skip("no room on /dev/shm for another copy (a DirectoryCacheWarning says why)")
        mirror._built.pop(base, None)
        yield base, held
    finally:
        mirror._built.pop(base, None)
        shutil.rmtree(base, ignore_errors=True)


def test_the_copy_shows_exactly_the_shown_files(fresh_copy):
    base, held = fresh_copy
    allow = resident.root()
    hidden = _hidden_inside(allow)
    copy = mirror.mirror(hidden)
    assert copy is not None and copy.path.startswith(base + "/")
    copies = dict(copy.dirs)
    assert set(copies) == {b for b in allow.binds if os.path.isdir(b)}
    overlays = set(copy.overlays)
    for path in allow.files:
        top = next((d for d in copies if path.startswith(d + "/")), None)
        if top is None:
            continue  # a file bound on its own
        mirrored = copies[top] + path[len(top) :]
        assert os.path.isfile(mirrored), path
        if path in overlays:
            assert os.path.getsize(mirrored) == 0  # a placeholder, the host file bound over it
        else:
            with open(path, "rb") as a, open(mirrored, "rb") as b:
                assert a.read() == b.read(), path
            assert os.stat(mirrored).st_mode & 0o222 == 0  # read-only
    for path in hidden:
        top = next((d for d in copies if path.startswith(d + "/")), None)
        if top is not None:
            assert not os.path.lexists(copies[top] + path[len(top) :]), path
    # The keeper is asked to hold the copy's pages (what the sandbox reads).
    assert held[-1] == copy.files


def test_the_keeper_holds_the_copy():
    copy = mirror.mirror(_hidden_inside(resident.root()))
    if copy is None:
        pytest.skip("no writable tmpfs for the copy")
    keeper = resident.ensure()
    assert set(copy.files) <= set(keeper.mappings)  # the pages the sandbox reads


def test_a_second_process_reuses_the_copy(fresh_copy):
    base, _ = fresh_copy
    hidden = _hidden_inside(resident.root())
    first = mirror.mirror(hidden)
    assert first is not None
    mirror._built.pop(base)
    marker = os.stat(os.path.join(first.path, mirror._MARK)).st_mtime_ns
    second = mirror.mirror(hidden)
    assert second == first
    assert os.stat(os.path.join(second.path, mirror._MARK)).st_mtime_ns == marker
    assert [e for e in os.listdir(base) if ".tmp-" in e] == []


def test_a_copy_others_could_change_is_not_used(fresh_copy):
    base, _ = fresh_copy
    hidden = _hidden_inside(resident.root())
    built = mirror.mirror(hidden)
    assert built is not None
    mirror._built.pop(base)
    os.chmod(built.path, 0o777)  # as if planted, writable by anyone
    again = mirror.mirror(hidden)
    assert again is not None and again.path != built.path and ".tmp-" not in again.path
    assert os.stat(again.path).st_mode & 0o022 == 0
    assert mirror._trusted(again.path, open(os.path.join(built.path, mirror._MARK)).read())


def test_no_tmpfs_warns_and_falls_back(tmp_path, monkeypatch):
    if mirror.is_tmpfs(str(tmp_path)):
        pytest.skip("the test's directory is a tmpfs here")
    monkeypatch.setenv(mirror.MIRROR_ENV, str(tmp_path))
    monkeypatch.setattr(mirror, "_warned", False)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert mirror.mirror(()) is None
        assert any(issubclass(w.category, mirror.DirectoryCacheWarning) for w in caught)
    finally:
        mirror._built.pop(str(tmp_path), None)


def test_executables_stay_the_hosts_on_a_noexec_tmpfs():
    dynload = "/usr/lib/python3.11/lib-dynload"
    if not os.path.isdir(dynload):
        pytest.skip("no lib-dynload here")
    small = [
        os.path.join(dynload, n)
        for n in sorted(os.listdir(dynload))
        if n.endswith(".so") and os.path.getsize(os.path.join(dynload, n)) < mirror._LARGE
    ]
    header = "/usr/include/stdio.h"
    assert small and mirror._keeps_host(small[0], os.stat(small[0]), noexec=True)
    assert not mirror._keeps_host(small[0], os.stat(small[0]), noexec=False)
    assert not mirror._keeps_host(header, os.stat(header), noexec=True)


def test_half_built_copies_of_dead_builders_are_swept(fresh_copy):
    base, _ = fresh_copy
    prefix = f"rllm-envs-root-{os.geteuid()}-"
    stale = os.path.join(base, prefix + "abc.tmp-x1")
    recent = os.path.join(base, prefix + "abc.tmp-x2")
    os.mkdir(stale)
    os.mkdir(recent)
    old = time.time() - 2 * mirror._STALE_SECONDS
    os.utime(stale, (old, old))
    mirror._sweep(base, prefix)
    assert not os.path.exists(stale) and os.path.exists(recent)


def test_a_cpp_submission_compiles_against_the_copy():
    if backends._probe(backends.Bubblewrap()) is not None:
        pytest.skip("bubblewrap cannot run here")
    code = (
        "#include <bits/stdc++.h>\n#include <numeric>\n"
        "int main(){long a,b;std::cin>>a>>b;std::cout<<std::gcd(a,b)<<'\\n';}"
    )
    result = run(code, language="cpp", stdin="12 18", backend="bubblewrap", time_limit=10)
    assert result.ok, result.stderr
    assert result.stdout.strip() == "6"


def test_firejail_says_once_that_its_directories_are_the_hosts(monkeypatch):
    if backends.Firejail().missing() is not None:
        pytest.skip("firejail is not installed")
    monkeypatch.setattr(backends, "_warned_directories", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backends.available_backends()  # probing firejail is not using it
    with pytest.warns(mirror.DirectoryCacheWarning, match="bubblewrap does not"):
        backends.select_backend("firejail")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        backends.select_backend("firejail")  # once


def test_a_small_tmpfs_is_left_to_others(monkeypatch):
    """A container's /dev/shm (64 MiB) is other programs' shared memory too: no copy there."""
    if not mirror.is_tmpfs("/dev/shm"):
        pytest.skip("/dev/shm is not a tmpfs here")
    base = f"/dev/shm/rllm-test-small-{os.getpid()}-{random.randrange(10**9)}"
    os.mkdir(base, 0o700)
    real = os.statvfs(base)

    class Small:
        f_bavail, f_frsize, f_flag = (64 << 20) // real.f_frsize, real.f_frsize, real.f_flag

    monkeypatch.setenv(mirror.MIRROR_ENV, base)
    monkeypatch.setattr(mirror.os, "statvfs", lambda path: Small)
    monkeypatch.setattr(mirror, "_warned", False)
    try:
        with pytest.warns(mirror.DirectoryCacheWarning, match="free there"):
            assert mirror.mirror(_hidden_inside(resident.root())) is None
        assert os.listdir(base) == []
    finally:
        mirror._built.pop(base, None)
        shutil.rmtree(base, ignore_errors=True)
