"""The episode store across processes: concurrent writers, forks, and a writer killed mid-stream."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rllm_agents.store import EpisodeStore
from tests.agents.test_store import make_trajectory

ROOT = Path(__file__).resolve().parents[2]

WRITER = """
import sys
import time
from rllm_agents.store import EpisodeStore
from tests.agents.test_store import make_trajectory

path, worker, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
store = EpisodeStore(path)
for i in range(count):
    store.put(make_trajectory(1000 * worker + i), run=f"w{worker}")
    if i == count // 2:
        store.put(make_trajectory(999_999))  # every writer also writes this one
store.close()
"""

ENDLESS_WRITER = """
import sys
import time
from rllm_agents.store import EpisodeStore
from tests.agents.test_store import make_trajectory

store = EpisodeStore(sys.argv[1])
i = 0
while True:
    store.put(make_trajectory(i, turns=3, prompt_len=3000), run="killed")
    print(i, flush=True)  # printed only after the commit returned
    i += 1
"""


def _python(code: str, *args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], cwd=ROOT, text=True, **kwargs)


# Each case starts eight interpreters (6-9 s on two cores): one in the contributors' lane,
# both in the full suite.
@pytest.mark.parametrize("keep_mark", [pytest.param(False, marks=pytest.mark.slow), True])
def test_eight_processes_write_concurrently_into_a_new_store(tmp_path, keep_mark):
    path = tmp_path / "episodes.db"  # does not exist yet: the writers race to create it
    if keep_mark:  # the count kept beside the key: writers race to raise it, never lower it
        with EpisodeStore(path) as store:
            store.keep_mark()
    procs = [_python(WRITER, str(path), str(w), "25", stderr=subprocess.PIPE) for w in range(8)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    with EpisodeStore(path, read_only=True) as store:
        assert len(store) == 8 * 25 + 1
        assert sum(store.count(run=f"w{w}") for w in range(8)) == 200
        shared = [e for e in store.summaries() if e.run is None]
        assert len(shared) == 1 and shared[0].hash == store.get(shared[0].id).hash
        for w in range(8):
            got = store.trajectories(run=f"w{w}")
            want = [make_trajectory(1000 * w + i) for i in range(25)]
            assert got == want
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        if keep_mark:
            assert store._kept() == store.written() == 201


def _fork_writer(store: EpisodeStore, worker: int) -> None:
    for i in range(10):
        store.put(make_trajectory(5000 + 100 * worker + i), run="forked")


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_forked_children_reuse_the_parents_store_object(tmp_path):
    store = EpisodeStore(tmp_path / "e.db")
    store.put(make_trajectory(0))  # the parent holds an open connection when it forks
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_fork_writer, args=(store, w)) for w in range(4)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(timeout=300)
        assert proc.exitcode == 0
    assert store.count(run="forked") == 40 and len(store) == 41
    store.put(make_trajectory(1))  # the parent's connection still works
    assert len(store) == 42
    store.close()


def test_sigkill_mid_stream_loses_at_most_the_episode_in_flight(tmp_path):
    path = tmp_path / "episodes.db"
    proc = _python(ENDLESS_WRITER, str(path), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    reported = []
    for line in proc.stdout:
        reported.append(int(line))
        if len(reported) == 30:
            break
    os.kill(proc.pid, signal.SIGKILL)
    rest, _ = proc.communicate(timeout=60)
    reported += [int(x) for x in rest.split()]
    assert proc.returncode == -signal.SIGKILL

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with EpisodeStore(path) as store:
        seeds = [t.seed for t in store.trajectories()]
        # Every reported commit is there; at most one more (committed, not yet reported).
        assert seeds == list(range(len(seeds)))
        assert len(reported) <= len(seeds) <= len(reported) + 1
        for episode in store.episodes():
            assert episode.trajectory == make_trajectory(episode.seed, turns=3, prompt_len=3000)
        store.put(make_trajectory(10**6))  # still writable after the crash
        assert len(store) == len(seeds) + 1


# SQLite's "dead man switch" on the log index: a shared POSIX lock on byte 128 of the -shm
# file (os_unix.c UNIX_SHM_DMS) while a connection of the process uses the index.
LOCK_PROBE = """
import fcntl, os, struct, sys
try:
    fd = os.open(sys.argv[1], os.O_RDWR)
except FileNotFoundError:  # SQLite deletes the index when its last connection closes
    sys.exit(print(0))
query = struct.pack("hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 128, 1, 0)
kind, _, _, _, pid = struct.unpack("hhqqi4x", fcntl.fcntl(fd, fcntl.F_GETLK, query))
print(pid if kind != fcntl.F_UNLCK else 0)
"""


def _index_lock_holder(db: Path) -> int:
    out = subprocess.run(
        [sys.executable, "-c", LOCK_PROBE, f"{db}-shm"], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


def test_a_second_store_on_the_same_file_keeps_the_index_lock(tmp_path):
    """Reading the -shm file through a descriptor of its own and closing it dropped every
    POSIX lock of the process on it, SQLite's too: the next process to open the store then
    truncated the index under this one's mapping (a 16-writer benchmark died of SIGBUS)."""
    db = tmp_path / "s.db"
    first = EpisodeStore(db)
    first.put(make_trajectory(0))
    assert _index_lock_holder(db) == os.getpid()
    second = EpisodeStore(db)  # reads the index before and after its first query
    second.put(make_trajectory(1))
    assert _index_lock_holder(db) == os.getpid()
    second.close()
    assert _index_lock_holder(db) == os.getpid()
    first.put(make_trajectory(2))
    assert len(first) == 3
    first.close()
    assert _index_lock_holder(db) == 0


OLD_WRITER = r"""
import os, sqlite3, sys, time
db, go, done = sys.argv[1:4]
c = sqlite3.connect(db, isolation_level=None, timeout=0.5)
c.execute("SELECT count(*) FROM episodes").fetchone()
open(go + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
cols = ", ".join(r[1] for r in c.execute("PRAGMA table_info(episodes)") if r[1] != "id")
try:
    c.execute("BEGIN IMMEDIATE")
    c.execute(f"INSERT INTO episodes ({cols}) SELECT {cols} FROM episodes WHERE id = 3")
    c.execute("COMMIT")
    answer = "committed"
except sqlite3.OperationalError as e:
    answer = f"refused: {e}"
open(done, "w").write(answer)
c.close()
"""


def test_an_upgrade_keeps_its_write_lock_while_another_process_is_connected(tmp_path, monkeypatch):
    """upgrade() read the -shm index through a descriptor it then closed, inside its write
    transaction: its own write lock was gone, and an older writer's commit made meanwhile was
    overwritten by the upgrade's (21 acknowledged, 20 kept, `verify` clean)."""
    from rllm_agents.store import integrity
    from rllm_agents.store.upgrade import upgrade
    from tests.agents.test_store_faults import as_version

    db = tmp_path / "e.db"
    with EpisodeStore(db) as store:
        for i in range(20):
            store.put(make_trajectory(i), run="r")
    as_version(db, 2)
    go, done = tmp_path / "go", tmp_path / "done"
    writer = subprocess.Popen(
        [sys.executable, "-c", OLD_WRITER, str(db), str(go), str(done)], cwd=ROOT
    )
    try:
        while not Path(f"{go}.ready").exists():
            assert writer.poll() is None
            time.sleep(0.01)
        new_store_id = integrity.new_store_id

        def inside_the_transaction() -> str:  # the upgrade is past its reads of the index
            go.touch()
            deadline = time.monotonic() + 30
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.01)
            return new_store_id()

        monkeypatch.setattr(integrity, "new_store_id", inside_the_transaction)
        assert upgrade(db, unkeyed=True) == 20
        writer.wait(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert done.read_text().startswith("refused: database is locked")
    with EpisodeStore(db, read_only=True) as store:
        assert store.count() == 20 and store.verify() == []
