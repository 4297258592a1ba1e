"""Episode store, blind-attack round 3 (issue #31): what the file's schema, its write-ahead log,
``upgrade`` and keep-mark must not let through, and one-line errors for bad values.

Each test fails on the store before these fixes (the finding's id is in its name).
"""

from __future__ import annotations

import gc
import os
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from rllm_agents.error import AgentConfigError
from rllm_agents.store import DamagedStore, EpisodeStore, damage, integrity
from rllm_agents.store import episode_store as episode_store_module
from rllm_agents.store.damage import _wal_checksum, _wal_frames
from tests.agents.test_store import make_trajectory


def _filled(path: Path, n: int = 10, **kwargs) -> None:
    with EpisodeStore(path, **kwargs) as store:
        for i in range(n):
            store.put(make_trajectory(i), run="run")


def _sql(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for statement in statements:
            conn.execute(statement)
    finally:
        conn.close()


_DROP_FAILED = (
    "CREATE TRIGGER drop_failed BEFORE INSERT ON episodes WHEN NEW.is_correct = 0 "
    "BEGIN SELECT RAISE(IGNORE); END"
)
_KEEP_COUNT = (
    "CREATE TRIGGER keep_count BEFORE UPDATE ON meta WHEN NEW.key = 'high_water' "
    "BEGIN SELECT RAISE(IGNORE); END"
)


@pytest.mark.parametrize(
    "planted",
    [
        (_DROP_FAILED, _KEEP_COUNT),
        ("CREATE VIEW v AS SELECT * FROM episodes",),
        ("CREATE INDEX episodes_run_nocase ON episodes (run COLLATE NOCASE)",),
        ("CREATE TABLE other (x)", "CREATE TRIGGER t AFTER INSERT ON other BEGIN SELECT 1; END"),
    ],
)
def test_r1_a_planted_trigger_or_object_is_refused_at_open_and_by_verify(tmp_path, planted):
    db = tmp_path / "ep.db"
    _filled(db, 3)
    with EpisodeStore(db) as open_before:  # a writer that had the store open already
        _sql(db, *planted)
        with pytest.raises(DamagedStore, match="schema is not the episode store's own"):
            open_before.put(make_trajectory(50), run="run")
        with pytest.raises(DamagedStore, match="schema is not the episode store's own"):
            open_before.verify()
    with pytest.raises(DamagedStore, match="schema is not the episode store's own"):
        EpisodeStore(db, read_only=True)
    with pytest.raises(DamagedStore, match="schema is not the episode store's own"):
        EpisodeStore(db)


def test_r1_an_insert_or_count_update_skipped_by_sqlite_is_never_acknowledged(
    tmp_path, monkeypatch
):
    # The second line of defence, behind the schema check, which this fake turns off.
    db = tmp_path / "ep.db"
    _filled(db, 2)
    _sql(db, _DROP_FAILED, _KEEP_COUNT)
    monkeypatch.setattr(episode_store_module, "check_catalog", lambda conn, db: None)
    with EpisodeStore(db) as store:
        assert not make_trajectory(4).is_correct
        with pytest.raises(DamagedStore, match="skipped the insert of episode 3"):
            store.put(make_trajectory(4), run="run")
        _sql(db, "DROP TRIGGER drop_failed")
        with pytest.raises(DamagedStore, match="skipped the update of the count"):
            store.put(make_trajectory(4), run="run")
        _sql(db, "DROP TRIGGER keep_count")
        assert store.put(make_trajectory(4), run="run").id == 3
        assert store.count() == 3 and store.verify() == []


def test_r2_a_collation_changed_through_writable_schema_is_refused(tmp_path):
    db = tmp_path / "ep.db"
    with EpisodeStore(db) as store:
        for i in range(4):
            store.put(make_trajectory(i), run="teacher")
        store.put(make_trajectory(10), run="TEACHER")
    conn = sqlite3.connect(db, isolation_level=None)
    (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'episodes'").fetchone()
    (version,) = conn.execute("PRAGMA schema_version").fetchone()
    conn.execute("PRAGMA writable_schema = ON")
    conn.execute(
        "UPDATE sqlite_master SET sql = ? WHERE name = 'episodes'",
        (sql.replace("run TEXT,", "run TEXT COLLATE NOCASE,"),),
    )
    conn.execute(f"PRAGMA schema_version = {version + 1}")
    conn.execute("PRAGMA writable_schema = OFF")
    conn.close()
    _sql(db, "REINDEX")
    with pytest.raises(DamagedStore, match="run TEXT COLLATE NOCASE"):
        EpisodeStore(db)


def test_r6_a_read_nested_in_a_loop_is_not_a_false_rollback_alarm(tmp_path):
    db = tmp_path / "ep.db"
    _filled(db, 6)
    with EpisodeStore(db) as writer, EpisodeStore(db, read_only=True) as reader:
        writer.keep_mark()
        seen = 0
        for _ in reader.summaries(run="run"):  # the open statement pins an older snapshot
            seen += 1
            if seen == 2:
                writer.put(make_trajectory(100), run="run")
            assert reader.count() in (6, 7)  # 6 while the loop's statement is open
        assert seen == 6 and reader.count() == 7 and reader.verify() == []
        # A real rollback under the same conditions is still reported.
        _sql(db, "DELETE FROM episodes WHERE id = 7")
        conn = sqlite3.connect(db, isolation_level=None)

        key = integrity.store_key(
            integrity.load_key(Path(f"{db}.key"), db, create=False),
            conn.execute("SELECT value FROM meta WHERE key = 'store_id'").fetchone()[0],
        )
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'high_water'",
            (integrity.high_water_value(key, 6),),
        )
        conn.close()
        with pytest.raises(DamagedStore, match="rolled back"):
            for _ in reader.summaries(run="run"):
                reader.count()


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE meta SET value = 'x' WHERE key = 'schema_version'", "not a version number"),
        ("UPDATE meta SET value = 'a/b' WHERE key = 'store_id'", "not 32 hex digits"),
        ("UPDATE meta SET value = '" + "a" * 300 + "' WHERE key = 'store_id'", "not 32 hex"),
    ],
)
def test_r7_a_changed_meta_value_is_a_one_line_refusal(tmp_path, capsys, statement, message):
    from rllm_agents.store import main

    db = tmp_path / "ep.db"
    _filled(db, 2)
    _sql(db, statement)
    with pytest.raises(DamagedStore, match=message):
        EpisodeStore(db)
    assert main([str(db), "verify"]) != 0
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_r7_a_hash_stored_under_two_runs_names_the_ids(tmp_path):
    db = tmp_path / "ep.db"
    with EpisodeStore(db) as store:
        first = store.put(make_trajectory(1), run="a")
        second = store.put(make_trajectory(1), run="b")
        with pytest.raises(KeyError, match="stored more than once.*row id, one of 1, 2"):
            store.get(first.hash)
        assert store.get(second.id).run == "b"


@pytest.mark.parametrize("seed", [2**63, 2**64, -(2**63) - 1])
def test_r8_a_seed_past_64_bits_is_refused_in_one_line_before_writing(tmp_path, seed):
    from rllm_agents.error import AgentConfigError

    db = tmp_path / "ep.db"
    trajectory = make_trajectory(1)
    trajectory.seed = seed
    with EpisodeStore(db) as store:
        with pytest.raises(AgentConfigError, match="seed to fit in a signed 64-bit"):
            store.put(trajectory)
        with pytest.raises(AgentConfigError, match="Nothing was written"):
            store.put_many([make_trajectory(2), trajectory])
        assert store.count() == 0
        trajectory.seed = 2**63 - 1
        store.put(trajectory)
        assert store.get(1).seed == 2**63 - 1


def test_r8_a_nan_created_in_an_imported_file_is_refused_in_one_line(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from rllm_agents.error import AgentConfigError

    db = tmp_path / "ep.db"
    _filled(db, 3)
    out = tmp_path / "ep.parquet"
    with EpisodeStore(db) as store:
        store.export_parquet(out)
    table = pq.read_table(out)
    created = table.column("created").to_pylist()
    created[1] = float("nan")
    index = table.schema.get_field_index("created")
    table = table.set_column(index, "created", pa.array(created, pa.float64()))
    pq.write_table(table, out)
    with EpisodeStore(tmp_path / "new.db") as store:
        with pytest.raises(AgentConfigError, match="`created`.*finite number, actual: nan"):
            store.import_parquet(out)
        assert store.count() == 0


def test_r5_upgrade_does_not_launder_an_earlier_version_3_copy_past_keep_mark(tmp_path, capsys):
    from rllm_agents.store import main, upgrade
    from tests.agents.test_store_faults import as_version

    db = tmp_path / "ep.db"
    _filled(db, 4)
    as_version(db, 3)
    gc.collect()  # as_version's connection
    _sql(db, "PRAGMA wal_checkpoint(TRUNCATE)")
    v3_copy = db.read_bytes()
    assert upgrade(db) == 4  # no counts kept beside the key yet
    with EpisodeStore(db) as store:
        store.keep_mark()
        for i in range(4, 10):
            store.put(make_trajectory(i), run="run")
    db.write_bytes(v3_copy)  # the rollback: the earlier copy put back
    for suffix in ("-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    with pytest.raises(AgentConfigError, match="schema version 3.*earlier copy of it put back"):
        EpisodeStore(db)
    assert main([str(db), "upgrade"]) == 1
    err = capsys.readouterr().err
    assert "counts kept by version-4 stores" in err and "rollback" in err
    with sqlite3.connect(db) as conn:  # nothing was changed
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "3",
        )
    assert upgrade(db, shared_key=True) == 4  # the operator's word: another store's count


@pytest.mark.parametrize("sign", ["keep-mark", "key backup"])
def test_r9_an_unkeyed_label_with_signs_of_a_key_is_never_upgraded(tmp_path, capsys, sign):
    from rllm_agents.store import main
    from tests.agents.test_store_integrity import _relabel_with_forgeries

    db = tmp_path / "ep.db"
    _filled(db, 4)
    key = Path(f"{db}.key")
    if sign == "keep-mark":
        with EpisodeStore(db) as store:
            store.keep_mark()
    else:
        key.with_name("ep.db.key.bak").write_bytes(key.read_bytes())
    # Write access to the folder is enough to unlink the key (not to read it).
    _relabel_with_forgeries(db, tmp_path / "scratch" / "s.db", keep_keyed_meta=False)
    key.unlink()
    with pytest.raises(AgentConfigError, match="ever version 3 or newer.*relabelled"):
        EpisodeStore(db)
    for flag in ([], ["--unkeyed"]):  # the operator's word does not override them
        assert main([str(db), "upgrade", *flag]) == 1
        assert "files only a keyed store leaves" in capsys.readouterr().err
    assert not key.exists()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "2",
        )


def test_r11_an_upgrade_killed_after_making_its_key_is_recognised(tmp_path, capsys):
    import subprocess
    import sys

    from rllm_agents.store import main
    from tests.agents.test_store_faults import as_version

    db = tmp_path / "ep.db"
    _filled(db, 3)
    as_version(db, 2)
    killed = (
        "import os, signal\n"
        "from rllm_agents.store import integrity, upgrade\n"
        "real = integrity.new_key\n"
        "def new_key(*a):\n"
        "    real(*a)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "integrity.new_key = new_key\n"
        f"upgrade({str(db)!r}, unkeyed=True)\n"
    )
    run = subprocess.run([sys.executable, "-c", killed], capture_output=True, timeout=120)
    assert run.returncode == -9 and Path(f"{db}.key").exists()
    assert main([str(db), "upgrade", "--unkeyed"]) == 1
    err = capsys.readouterr().err
    assert "was interrupted before it committed" in err and "relabelled" not in err
    Path(f"{db}.key").unlink()
    Path(f"{db}.key.upgrading").unlink()
    assert main([str(db), "upgrade", "--unkeyed"]) == 0
    assert not Path(f"{db}.key.upgrading").exists()
    with EpisodeStore(db) as store:
        assert store.count() == 3 and store.verify() == []


def test_r10_the_upgrade_says_what_a_version_3_stores_rows_are_worth(tmp_path, capsys):
    from rllm_agents.store import main
    from tests.agents.test_store_faults import as_version

    db = tmp_path / "ep.db"
    _filled(db, 2)
    as_version(db, 3)
    assert main([str(db), "upgrade"]) == 0
    assert "every store that shared its key" in capsys.readouterr().out


def _live_copy(tmp_path: Path, episodes: int, index_after: int | None = None) -> Path:
    """A store of ``episodes`` copied while its writer holds it open: the database, -wal,
    -shm and key, whole (the episodes are in the log). With ``index_after``, the -shm is
    copied after that many puts, as ``cp DB*`` of a live store copies it before the log."""
    import shutil

    src, dst = tmp_path / "src", tmp_path / "copy"
    src.mkdir()
    dst.mkdir()
    db = src / "ep.db"
    store = EpisodeStore(db)
    for i in range(episodes):
        if i == index_after:
            shutil.copy(f"{db}-shm", f"{dst / 'ep.db'}-shm")
        store.put(make_trajectory(i), run="run")
    copied = ("", "-wal", ".key") if index_after is not None else ("", "-wal", "-shm", ".key")
    for suffix in copied:
        shutil.copy(f"{db}{suffix}", f"{dst / 'ep.db'}{suffix}")
    store.close()
    return dst / "ep.db"


def test_r3_a_flipped_bit_in_the_write_ahead_log_is_reported_by_every_opener(tmp_path):
    dst = _live_copy(tmp_path, 30).parent
    wal = dst / "ep.db-wal"
    data = bytearray(wal.read_bytes())
    page = int.from_bytes(data[8:12], "big")
    frames = (len(data) - 32) // (24 + page)
    data[32 + (frames // 4) * (24 + page) + 24 + 100] ^= 1  # one bit of a quarter-way frame
    wal.write_bytes(bytes(data))
    for _ in range(2):  # refused before SQLite opens it: every opener, the log untouched
        with pytest.raises(DamagedStore, match="a frame's checksum fails"):
            EpisodeStore(dst / "ep.db")
        assert wal.read_bytes() == bytes(data)


@pytest.mark.parametrize("b_keeps_mark", [True, False])
def test_r4_a_store_replaced_by_another_sharing_its_key_is_refused_with_keep_mark(
    tmp_path, monkeypatch, b_keeps_mark
):
    # cp model-b.db model-a.db with one key file for both: every MAC and B's own kept count
    # held, and A read B's pass@1 (0.8 for 0.2) with verify clean.
    monkeypatch.setenv("RLLM_STORE_KEY", str(tmp_path / "keys" / "shared.key"))
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    for path, n in ((a, 3), (b, 5)):
        _filled(path, n)
        if path == a or b_keeps_mark:
            with EpisodeStore(path) as store:
                store.keep_mark()
    with EpisodeStore(a) as store:  # A's writers and readers agree with the record
        store.put(make_trajectory(50), run="run")
        assert store.count() == 4
    gc.collect()
    for suffix in ("-wal", "-shm"):
        Path(f"{a}{suffix}").unlink(missing_ok=True)
    a.write_bytes(b.read_bytes())
    for read_only in (True, False):
        with pytest.raises(DamagedStore, match="not the store keep-mark recorded at this path"):
            EpisodeStore(a, read_only=read_only)
    # Replaced on purpose: deleting A's record (the path's) accepts the new store.
    integrity.home_path(tmp_path / "keys" / "shared.key", a).unlink()
    with EpisodeStore(a) as store:
        assert store.count() == 5 and store.verify() == []


def test_a_new_store_refuses_a_key_file_others_may_have_written(tmp_path):
    """A key file planted (world-readable) before the store existed was adopted silently,
    and its planter signed episodes that `verify` accepted (pass@1 0.0 -> 0.5)."""
    from rllm_agents.error import AgentConfigError

    db = tmp_path / "e.db"
    key = tmp_path / "e.db.key"
    key.write_text("ab" * 32 + "\n")
    key.chmod(0o644)
    with pytest.raises(AgentConfigError, match="chmod 600"):
        EpisodeStore(db)
    assert not db.exists()
    key.chmod(0o600)  # the owner's own key, kept private: a shared key is fine
    with EpisodeStore(db) as store:
        store.put(make_trajectory(0))
        assert len(store) == 1


@pytest.mark.parametrize("offset", [8, 9, 16, 19, 22, 25])
def test_a_flipped_bit_of_the_write_ahead_log_header_is_reported(tmp_path, offset):
    """s42 att42h F1: a bit of the log header's page size or salt (or its checksum) made
    SQLite open the store without the whole log: 40 of 40 episodes gone, every command rc 0
    (the index check took another salt for another log generation)."""
    dst = _live_copy(tmp_path, 10).parent
    wal = dst / "ep.db-wal"
    data = bytearray(wal.read_bytes())
    data[offset] ^= 1
    wal.write_bytes(bytes(data))
    with pytest.raises(DamagedStore, match="damaged header"):
        EpisodeStore(dst / "ep.db")


@pytest.mark.parametrize("damage", ["copy1_byte", "copy2_byte", "both_copies", "cut_short"])
def test_a_cut_log_under_a_damaged_index_header_is_reported(tmp_path, damage):
    """s42 att42i F1: with a changed byte in either copy of the -shm header (or both), or an
    index cut short, the checks skipped and a cut log lost 21 of 40 episodes, every command
    rc 0."""
    dst = _live_copy(tmp_path, 10).parent
    wal, shm = dst / "ep.db-wal", dst / "ep.db-shm"
    wal.write_bytes(wal.read_bytes()[: wal.stat().st_size // 2])
    index = bytearray(shm.read_bytes())
    if damage == "copy1_byte":
        index[16] ^= 1
    elif damage == "copy2_byte":
        index[48 + 16] ^= 1
    elif damage == "both_copies":
        index[16] ^= 1
        index[48 + 16] ^= 1
    else:
        index = index[:50]
    shm.write_bytes(bytes(index))
    with pytest.raises(DamagedStore, match="was cut|is damaged"):
        EpisodeStore(dst / "ep.db")


def test_a_copy_of_the_index_header_torn_by_a_write_is_not_damage(tmp_path):
    # A writer writes the second copy, then the first: the other copy stands for it.
    store = EpisodeStore(tmp_path / "ep.db")
    for i in range(5):
        store.put(make_trajectory(i), run="run")
    shm = Path(f"{tmp_path / 'ep.db'}-shm")
    with open(shm, "r+b") as f:
        f.seek(20)
        f.write(b"\xff\xff\xff\xff")  # copy 1's mxFrame, torn: its checksum fails
    with EpisodeStore(tmp_path / "ep.db") as again:
        assert again.count() == 5 and again.verify() == []
    store.close()


def test_an_index_left_zeroed_by_an_opener_killed_while_rebuilding_it_opens(tmp_path):
    """s42 att42j: an opener SIGKILLed while SQLite rebuilt the index left its header zeroed,
    and every command refused the intact store until a person deleted the -shm file."""
    db = _live_copy(tmp_path, 10)
    shm = Path(f"{db}-shm")
    shm.write_bytes(bytes(shm.stat().st_size))
    with EpisodeStore(db) as store:
        assert store.count() == 10 and store.verify() == []


def _flip_frame_bit(wal: Path, where: float) -> None:
    data = bytearray(wal.read_bytes())
    page = int.from_bytes(data[8:12], "big")
    frames = (len(data) - 32) // (24 + page)
    data[32 + int(frames * where) * (24 + page) + 24 + 100] ^= 1
    wal.write_bytes(bytes(data))


@pytest.mark.parametrize("index", ["kept", "deleted"])
def test_a_flipped_bit_in_a_log_frame_is_reported_on_read_only_opens(tmp_path, index):
    """s42 att42l: read-only, SQLite rebuilds the log index in memory, so the before/after
    index check never saw a drop: one flipped bit read 9 of 40 episodes, rc 0, on every
    read-only open. Without an index (a crash, a copy without its -shm) neither did any
    opener."""
    db = _live_copy(tmp_path, 30)
    _flip_frame_bit(Path(f"{db}-wal"), 0.25)
    if index == "deleted":
        Path(f"{db}-shm").unlink()
    for _ in range(2):  # every open, not only the first
        with pytest.raises(DamagedStore, match="a frame's checksum fails"):
            EpisodeStore(db, read_only=True)
    if index == "deleted":
        with pytest.raises(DamagedStore, match="a frame's checksum fails"):
            EpisodeStore(db)


def test_a_flipped_bit_in_the_last_commit_is_reported_read_only_by_the_index(tmp_path):
    # No commit after it to tell a changed byte from a write cut short: the index tells.
    db = _live_copy(tmp_path, 10)
    _flip_frame_bit(Path(f"{db}-wal"), 0.999)
    with pytest.raises(DamagedStore, match="its index .* records"):
        EpisodeStore(db, read_only=True)


def test_logs_sqlite_keeps_whole_are_not_damage_to_the_frame_walk(tmp_path):
    """What a crash leaves: a last frame cut short, frames of a rolled-back transaction and
    of an older log generation past the end, no index. All open, read-only and not."""
    db = _live_copy(tmp_path, 20)
    wal, shm = Path(f"{db}-wal"), Path(f"{db}-shm")
    old = wal.read_bytes()
    conn = sqlite3.connect(db, isolation_level=None)  # held: the log outlives the store
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # frames checkpointed, the log not reset
    with EpisodeStore(db) as store:  # restarts the log: a new salt over the old frames
        store.put(make_trajectory(100), run="run")
        assert store.count() == 21
        new = wal.read_bytes()  # the new generation's frames over the old one's
        assert new[16:24] != old[16:24]
    conn.close()
    page = int.from_bytes(old[8:12], "big")
    (tmp_path / "new-wal").write_bytes(new)
    end = 32 + _wal_frames(tmp_path / "new-wal")[0] * (24 + page)  # past its last commit
    assert 32 < end < len(new)
    shapes = {
        "older_generation_after": new,
        "last_frame_cut": new[: end - page // 2],
        "rolled_back_after": new[:end] + _uncommitted_frame(new[:end], page),
    }
    for shape, log in shapes.items():
        for read_only in (True, False):
            shm.unlink(missing_ok=True)
            wal.write_bytes(log)
            with EpisodeStore(db, read_only=read_only) as store:
                assert store.verify() == [], shape
                assert store.count() in (20, 21), shape


def _uncommitted_frame(log: bytes, page: int) -> bytes:
    """A frame chained to ``log``'s last with no commit mark: a rolled-back transaction's."""

    order = ">" if int.from_bytes(log[:4], "big") & 1 else "<"
    last = len(log) - (24 + page)
    running = (
        int.from_bytes(log[last + 16 : last + 20], "big"),
        int.from_bytes(log[last + 20 : last + 24], "big"),
    )
    body = bytes(page)
    head = (2).to_bytes(4, "big") + bytes(4)
    s = _wal_checksum(body, order, _wal_checksum(head, order, running))
    return head + log[16:24] + s[0].to_bytes(4, "big") + s[1].to_bytes(4, "big") + body


@pytest.mark.parametrize("offset", [3, 10, 17, 25])
@pytest.mark.parametrize("read_only", [True, False])
def test_a_damaged_log_header_without_an_index_is_reported(tmp_path, offset, read_only):
    """s43 att43a F1: one flipped bit of the log header (magic, page size, salt, checksum)
    with no -shm: SQLite ignored the whole log, 40 of 40 episodes gone, every command rc 0."""
    db = _live_copy(tmp_path, 10)
    wal = Path(f"{db}-wal")
    data = bytearray(wal.read_bytes())
    data[offset] ^= 1
    wal.write_bytes(bytes(data))
    Path(f"{db}-shm").unlink()
    with pytest.raises(DamagedStore, match="a frame's checksum fails|damaged"):
        EpisodeStore(db, read_only=read_only)


@pytest.mark.parametrize("read_only", [True, False])
def test_an_index_recording_no_commits_does_not_switch_the_log_checks_off(tmp_path, read_only):
    """s43 att43a F2: a -shm copied right after a checkpoint (an index of another log
    generation recording 0 frames) beside a log with a changed frame: 9 of 40 read, rc 0."""
    import shutil

    db = _live_copy(tmp_path, 30)
    conn = sqlite3.connect(tmp_path / "src" / "ep.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(tmp_path / "src" / "ep.db-shm", f"{db}-shm")
    conn.close()
    _flip_frame_bit(Path(f"{db}-wal"), 0.25)
    with pytest.raises(DamagedStore, match="a frame's checksum fails"):
        EpisodeStore(db, read_only=read_only)


def _with_older_index(tmp_path: Path, first: int, then: int) -> tuple[Path, int]:
    """A store copied as ``cp DB*`` copies a live one: its -shm from after ``first`` puts,
    the rest after ``first + then``. Returns the copy and the frames the -shm records."""
    from rllm_agents.store.damage import _wal_index

    db = _live_copy(tmp_path, first + then, index_after=first)
    index = _wal_index(db)
    assert index is not None
    return db, index[1]


def _flip_frame(wal: Path, number: int) -> None:
    data = bytearray(wal.read_bytes())
    page = int.from_bytes(data[8:12], "big")
    data[32 + (number - 1) * (24 + page) + 24 + 100] ^= 1
    wal.write_bytes(bytes(data))


@pytest.mark.parametrize("index", ["older", "gone"])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_changed_frame_past_an_older_index_is_reported(tmp_path, read_only, index):
    """s43 att43c F1: an index older than its log (a `cp DB*` of a live store copies the -shm
    first) and one flipped bit past the frames it records: a writable open kept 24 of 40
    episodes, `verify` clean. The flip explains the failing frame: it is no leftover."""
    db, recorded = _with_older_index(tmp_path, 20, 20)
    wal = Path(f"{db}-wal")
    frames = (wal.stat().st_size - 32) // (24 + int.from_bytes(wal.read_bytes()[8:12], "big"))
    _flip_frame(wal, (recorded + frames) // 2)
    if index == "gone":
        Path(f"{db}-shm").unlink()
    with pytest.raises(DamagedStore, match="a frame's checksum fails"):
        EpisodeStore(db, read_only=read_only)


@pytest.mark.parametrize("where", [(8,), (17,), (22,), (24 + 100,), (24 + 4000,), (9, 24 + 50)])
def test_a_change_to_a_frames_salt_checksum_or_page_is_reported_without_an_index(tmp_path, where):
    """What explains a failing frame as changed: one bit of its salt, of its stored checksum
    or of one word its checksum covers, or a salt bit and a word (s43 att43p)."""
    db = _live_copy(tmp_path, 30)
    wal = Path(f"{db}-wal")
    data = bytearray(wal.read_bytes())
    page = int.from_bytes(data[8:12], "big")
    frames = (len(data) - 32) // (24 + page)
    for offset in where:
        data[32 + (frames // 3) * (24 + page) + offset] ^= 4
    wal.write_bytes(bytes(data))
    Path(f"{db}-shm").unlink()
    with pytest.raises(DamagedStore, match="a frame's checksum fails"):
        EpisodeStore(db, read_only=True)


def _frame_checks_of(wal: Path) -> damage._Frames:
    data = wal.read_bytes()
    fd = os.open(wal, os.O_RDONLY)
    try:
        order = ">" if int.from_bytes(data[:4], "big") & 1 else "<"
        start = (int.from_bytes(data[24:28], "big"), int.from_bytes(data[28:32], "big"))
        page = int.from_bytes(data[8:12], "big")
        return damage._frame_checks(fd, len(data), order, page, data[16:24], start)
    finally:
        os.close(fd)


def _left_over(tmp_path: Path, unfinished: int = 0, episodes_a: int = 30) -> tuple[Path, int]:
    """The log writers killed before updating the index leave (s43 att43e, att43g, att43k):
    after 20 puts, writer A commits 30 more and dies before its index update; B commits one
    over A's first frames (its index records that); with ``unfinished``, C then dies having
    written that many frames of its next commit. Returns the store and B's recorded frames."""
    import shutil

    from rllm_agents.store.damage import _wal_index

    base = _live_copy(tmp_path, 20)

    def branch(name: str, source: Path, episodes: range) -> tuple[bytes, ...]:
        folder = tmp_path / name
        shutil.copytree(source.parent, folder)
        store = EpisodeStore(folder / "ep.db")  # nobody else holds it: recovered from the log
        store.put_many([make_trajectory(i) for i in episodes], run="run")
        kept = (
            Path(f"{folder / 'ep.db'}-wal").read_bytes(),
            Path(f"{folder / 'ep.db'}-shm").read_bytes(),
        )
        store.close()
        shutil.rmtree(folder)
        shutil.copytree(source.parent, folder)
        return kept

    log_a, _ = branch("a", base, range(100, 100 + episodes_a))
    log_b, index_b = branch("b", base, range(200, 201))
    Path(f"{base}-shm").write_bytes(index_b)
    recorded = _wal_index(base)
    assert recorded is not None and log_a[16:24] == log_b[16:24]  # one log generation
    frame = 24 + int.from_bytes(log_b[8:12], "big")
    end = 32 + recorded[1] * frame
    ours = log_b[:end]
    if unfinished:
        Path(f"{base}-wal").write_bytes(ours)
        log_c, _ = branch("c", base, range(300, 301))
        ours = log_c[: end + unfinished * frame]
        Path(f"{base}-shm").write_bytes(index_b)
    Path(f"{base}-wal").write_bytes(ours + log_a[len(ours) :])
    return base, recorded[1]


@pytest.mark.parametrize("unfinished", [0, 2])
@pytest.mark.parametrize("index", ["kept", "gone"])
def test_frames_killed_writers_left_are_not_damage(tmp_path, unfinished, index):
    """s43 att43e, att43g (real SIGKILLs), att43k: A's frames past B's commit (or past C's
    unfinished frames) fail whole, and A's valid commit follows. It was never acknowledged,
    and SQLite drops it; every open refused the intact store, with its index and without."""
    db, _ = _left_over(tmp_path, unfinished)
    wal = Path(f"{db}-wal")
    frames = _frame_checks_of(wal)
    failing = np.flatnonzero(~frames.valid)
    assert len(failing) and (frames.valid & frames.commit)[failing[0] :].any()  # the layout
    if index == "gone":
        Path(f"{db}-shm").unlink()
    for read_only in (True, False):
        with EpisodeStore(db, read_only=read_only) as store:
            assert store.count() == 21 and store.verify() == []


@pytest.mark.parametrize("read_only", [True, False])
def test_a_log_deleted_beside_an_index_of_its_commits_is_reported(tmp_path, read_only):
    """s43 att43i F1: the -wal deleted (or left out of a backup) beside an index recording
    its commits: 0 of 40 episodes read, `verify` and `list` rc 0."""
    db = _live_copy(tmp_path, 40)
    Path(f"{db}-wal").unlink()
    with pytest.raises(DamagedStore, match="is missing"):
        EpisodeStore(db, read_only=read_only)


def test_an_index_left_after_a_full_checkpoint_and_the_log_deleted_opens(tmp_path):
    """The last connection checkpoints, deletes the log, then the index: killed between the
    two, it leaves an index every frame of which was checkpointed, beside no log."""
    import shutil

    db = _live_copy(tmp_path, 10)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")  # every frame into the database
    shutil.copy(f"{db}-shm", tmp_path / "kept-shm")
    conn.close()
    shutil.copy(tmp_path / "kept-shm", f"{db}-shm")
    Path(f"{db}-wal").unlink(missing_ok=True)
    with EpisodeStore(db, read_only=True) as store:
        assert store.count() == 10 and store.verify() == []


def test_many_frames_a_killed_writer_rewrote_in_place_are_not_damage(tmp_path):
    """s43 att43n: a writer killed before committing leaves the frames it rewrote in place
    after spilling them with stale checksums (231 before a leftover commit): more than 64
    failing frames made every open refuse the intact store. Frames whose own bytes changed
    widely are not explained by a change, and open (the documented limit)."""
    db, recorded = _left_over(tmp_path, episodes_a=120)
    wal = Path(f"{db}-wal")
    data = bytearray(wal.read_bytes())
    frame = 24 + int.from_bytes(data[8:12], "big")
    frames = _frame_checks_of(wal)
    last = int(np.flatnonzero(frames.valid & frames.commit)[-1])
    rewritten = [n for n in range(recorded + 2, last) if not frames.commit[n]][:80]
    assert len(rewritten) > 64
    for n in rewritten:  # the page rewritten, its checksum not
        at = 32 + n * frame + 24
        data[at : at + 64] = bytes(reversed(data[at : at + 64]))
    wal.write_bytes(bytes(data))
    for read_only in (True, False):
        with EpisodeStore(db, read_only=read_only) as store:
            assert store.count() == 21 and store.verify() == []
