"""Episode store, blind-attack round 3 (issue #31): what the file's schema, its write-ahead log,
``upgrade`` and keep-mark must not let through, and one-line errors for bad values.

Each test fails on the store before these fixes (the finding's id is in its name).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from rllm_agents.store import DamagedStore, EpisodeStore
from rllm_agents.store import episode_store as episode_store_module
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
