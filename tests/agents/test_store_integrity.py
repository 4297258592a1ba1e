"""The episode store against someone who can write its file but not read its key (issue #31).

Deleted rows (the last ones included), fields changed with their digest recomputed, moved rows,
a lowered count of episodes written and a relabelled schema version are each reported by
every read that could be misled, and by ``verify``; the key is the store's own.
"""

from __future__ import annotations

import hashlib
import hmac
import pickle
import sqlite3
import stat
import threading
from pathlib import Path

import pytest

from rllm_agents.error import AgentConfigError
from rllm_agents.store import (
    DamagedEpisode,
    DamagedStore,
    EpisodeStore,
    MissingEpisodes,
    main,
    upgrade,
)
from rllm_agents.store.integrity import high_water_value, row_mac
from rllm_agents.store.schema import columns_digest
from tests.agents.test_store import make_trajectory
from tests.agents.test_store_faults import as_version

_COLUMNS = (
    "hash, run, env_id, env_kwargs, model, task_id, seed, grp, sample, num_turns, "
    "total_reward, is_correct, finish, versions, timings, created"
)


def _filled(path: Path, n: int = 10, **kwargs) -> list[int]:
    with EpisodeStore(path, **kwargs) as store:
        return [store.put(make_trajectory(i), run="run").id for i in range(n)]


def _sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


# Every read that aggregates or lists, with the CLI commands that print them.
_READS = {
    "pass_at_k": lambda s: s.pass_at_k([1]),
    "pass_at_k filtered": lambda s: s.pass_at_k([1], run="run"),
    "count": lambda s: s.count(),
    "len": len,
    "count filtered": lambda s: s.count(correct=True),
    "runs": lambda s: s.runs(),
    "summaries": lambda s: list(s.summaries()),
    "summaries filtered": lambda s: list(s.summaries(correct=True)),
    "summaries paged": lambda s: list(s.summaries(offset=5, limit=100)),
    "episodes": lambda s: list(s.episodes()),
    "trajectories filtered": lambda s: s.trajectories(run="run"),
}


@pytest.mark.parametrize(
    ("deleted", "where"),
    [
        ([2, 3, 5, 6, 8, 9], "is_correct = 0"),  # pass@1 0.4 -> 1.0 on schema version 2
        ([8, 9, 10], "id > 7"),  # the last ones: nothing after them shows a gap
        ([1], "id = 1"),
    ],
    ids=["failed ones", "last ones", "first one"],
)
def test_deleted_episodes_are_reported_by_every_read_and_verify(tmp_path, capsys, deleted, where):
    path = tmp_path / "e.db"
    _filled(path)
    with EpisodeStore(path) as store:
        before = store.pass_at_k([1])
    _sql(path, f"DELETE FROM episodes WHERE {where}")
    with EpisodeStore(path, read_only=True) as store:
        for name, read in _READS.items():
            with pytest.raises(MissingEpisodes, match="records as written") as caught:
                read(store)
            assert caught.value.written == 10, name
            assert caught.value.ids == deleted, name
        missing = [e for e in store.verify()]
        assert [e.id for e in missing] == deleted
        assert all("missing" in e.reason for e in missing)
        with pytest.raises(MissingEpisodes, match=f"ids {deleted[0]}\\)"):
            store.get(deleted[0])
        with pytest.raises(KeyError):
            store.get(11)  # never written: an ordinary miss
    for command in (["list"], ["list", "--run", "run"], ["passk"], ["verify"]):
        assert main([str(path), *command]) == 1, command
        err = capsys.readouterr().err
        assert "Traceback" not in err and str(deleted[0]) in err, command
    main([str(path), "verify"])
    assert f"{10 - len(deleted)} of 10 episodes intact" in capsys.readouterr().out
    assert before


def test_the_record_of_episodes_written_cannot_be_lowered_or_removed(tmp_path):
    path = tmp_path / "e.db"
    _filled(path)
    forged = high_water_value(b"\x00" * 32, 7)  # the right form under another key
    _sql(path, "DELETE FROM episodes WHERE id > 7")
    for value in (forged, "7", f"7 {hashlib.sha256(b'high-water 7').hexdigest()}"):
        _sql(path, f"UPDATE meta SET value = '{value}' WHERE key = 'high_water'")
        with EpisodeStore(path) as store:
            for read in (lambda: store.count(), lambda: store.pass_at_k([1]), store.verify):
                with pytest.raises(DamagedStore, match="fails its MAC"):
                    read()
            with pytest.raises(DamagedStore, match="fails its MAC"):
                store.put(make_trajectory(100))
    _sql(path, "DELETE FROM meta WHERE key = 'high_water'")
    with EpisodeStore(path) as store, pytest.raises(DamagedStore, match="was deleted"):
        store.runs()


@pytest.mark.parametrize("column", ["run", "is_correct", "total_reward", "created"])
def test_a_field_changed_with_its_digest_recomputed_is_reported(tmp_path, column):
    # What an unkeyed digest allowed: change the value, recompute the digest the way the store
    # does (here both SHA-256 of the columns and an HMAC under a guessed key).
    path = tmp_path / "e.db"
    ids = _filled(path, 6)
    change = {
        "run": "'other'",
        "is_correct": "1 - is_correct",
        "total_reward": "1.0",
        "created": "0",
    }
    _sql(path, f"UPDATE episodes SET {column} = {change[column]} WHERE id = {ids[2]}")
    conn = sqlite3.connect(path)
    row = conn.execute(f"SELECT id, {_COLUMNS} FROM episodes WHERE id = ?", (ids[2],)).fetchone()
    for mac in (columns_digest(row[1:]), row_mac(b"guess" * 8, row[0], row[1:])):
        with conn:
            conn.execute("UPDATE episodes SET mac = ? WHERE id = ?", (mac, ids[2]))
        with EpisodeStore(path, read_only=True) as store:
            for read in (store.runs, lambda: store.pass_at_k([1]), lambda: list(store.summaries())):
                with pytest.raises(DamagedEpisode, match=f"Episode {ids[2]} .*MAC"):
                    read()
            with pytest.raises(DamagedEpisode, match=f"Episode {ids[2]} "):
                store.get(ids[2])
            assert [e.id for e in store.verify()] == [ids[2]]
    conn.close()


def test_moved_or_added_rows_are_reported(tmp_path):
    path = tmp_path / "e.db"
    _filled(path, 6)
    # Two rows swap ids: each keeps a valid MAC, of its old id.
    _sql(
        path,
        "UPDATE episodes SET id = 100 WHERE id = 2",
        "UPDATE episodes SET id = 2 WHERE id = 5",
        "UPDATE episodes SET id = 5 WHERE id = 100",
    )
    with EpisodeStore(path) as store:
        assert sorted(e.id for e in store.verify()) == [2, 5]
        with pytest.raises(DamagedEpisode, match="Episode 2 "):
            store.pass_at_k([1])
    _sql(
        path,
        "UPDATE episodes SET id = 100 WHERE id = 2",
        "UPDATE episodes SET id = 2 WHERE id = 5",
        "UPDATE episodes SET id = 5 WHERE id = 100",
        # A copy of episode 6 (new hash) appended past the count, with its MAC.
        f"INSERT INTO episodes (id, {_COLUMNS}, record, mac) SELECT 7, 'f' || substr(hash, 2), "
        + _COLUMNS.split(", ", 1)[1]
        + ", record, mac FROM episodes WHERE id = 6",
    )
    with EpisodeStore(path) as store:
        assert [e.id for e in store.verify()] == [7]
        with pytest.raises(DamagedStore, match="holds 7 episodes where it records 6"):
            store.count()
        with pytest.raises(DamagedEpisode, match="Episode 7 "):
            store.runs()
        with pytest.raises(DamagedStore, match="row with id 7 past the 6 episodes"):
            store.put(make_trajectory(50))


def test_row_mac_is_hmac_sha256():
    row = ("ab" * 32, None, "env", "{}", None, "t", 1, 0, 0, 2, -0.5, 1, "done", "{}", "{}", 1.5)
    for key in (b"k" * 32, b"long" * 40):
        message = ascii((7, *row)).encode("ascii")
        assert row_mac(key, 7, row) == hmac.digest(key, message, "sha256").hex()


def test_the_key_is_the_stores_own_and_kept_outside_the_file(tmp_path, monkeypatch):
    path = tmp_path / "e.db"
    _filled(path, 3)
    key = Path(f"{path}.key")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    assert key.read_text().strip() not in path.read_bytes().decode("latin-1")
    _filled(tmp_path / "other.db", 1)
    moved = tmp_path / "secrets" / "e.key"
    moved.parent.mkdir()
    key.rename(moved)
    with pytest.raises(AgentConfigError, match="key .* is not at .*e.db.key"):
        EpisodeStore(path, read_only=True)
    with pytest.raises(AgentConfigError, match="is not the key of the episode store"):
        EpisodeStore(path, key=tmp_path / "other.db.key")
    with EpisodeStore(path, key=moved) as store:
        assert len(store) == 3
        clone = pickle.loads(pickle.dumps(store))
        assert clone.key_path == moved and len(clone) == 3
        clone.close()
    monkeypatch.setenv("RLLM_STORE_KEY", str(moved))
    with EpisodeStore(path, read_only=True) as store:
        assert store.count(run="run") == 3
    assert main([str(path), "--key", str(moved), "verify"]) == 0
    # A new store with its key given elsewhere: the key is made there, not beside it.
    _filled(tmp_path / "new.db", 2, key=tmp_path / "secrets" / "new.key")
    assert (tmp_path / "secrets" / "new.key").exists() and not Path(
        f"{tmp_path}/new.db.key"
    ).exists()


def test_a_version_2_store_is_upgraded_after_checking_it(tmp_path, capsys):
    path = tmp_path / "e.db"
    _filled(path, 6)
    as_version(path, 2)
    with pytest.raises(AgentConfigError, match=r"schema version 2.*e\.db upgrade"):
        EpisodeStore(path)
    assert main([str(path), "upgrade"]) == 0
    assert "schema version 3 (6 episodes)" in capsys.readouterr().out
    assert stat.S_IMODE(Path(f"{path}.key").stat().st_mode) == 0o600
    with EpisodeStore(path) as store:
        assert store.trajectories() == [make_trajectory(i) for i in range(6)]
        assert store.verify() == [] and store.put(make_trajectory(6)).id == 7
    assert upgrade(path) == 7  # already current: only checked
    _sql(path, "DELETE FROM episodes WHERE id = 7")
    with pytest.raises(MissingEpisodes):
        upgrade(path)


def test_a_damaged_or_shortened_version_2_store_is_not_upgraded(tmp_path, capsys):
    path = tmp_path / "e.db"
    _filled(path, 6)
    as_version(path, 2)
    _sql(path, "UPDATE episodes SET run = 'other' WHERE id = 4")
    assert main([str(path), "upgrade"]) == 1
    assert "1 damaged episodes (ids 4;" in capsys.readouterr().err
    _sql(path, "DELETE FROM episodes WHERE id IN (2, 4)")
    assert main([str(path), "upgrade"]) == 1
    assert "2 episodes are missing (ids 2, 4;" in capsys.readouterr().err
    assert not Path(f"{path}.key").exists()
    assert main([str(path), "upgrade", "--accept-missing"]) == 0
    with EpisodeStore(path) as store:
        assert [e.id for e in store.summaries()] == [1, 2, 3, 4]
        assert [t.seed for t in store.trajectories()] == [0, 2, 4, 5]


@pytest.mark.parametrize("actual", [2, 3])
def test_a_relabelled_store_is_refused_by_upgrade_in_one_line(tmp_path, capsys, actual):
    path = tmp_path / "e.db"
    _filled(path, 4)
    if actual == 2:
        as_version(path, 2)
    _sql(path, f"UPDATE meta SET value = '{actual - 1}' WHERE key = 'schema_version'")
    assert main([str(path), "upgrade"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"labelled schema version {actual - 1}" in err and f"of version {actual}" in err
    with pytest.raises(DamagedStore, match="label was changed"):
        upgrade(path)


def test_a_store_downgraded_to_have_changes_signed_is_refused(tmp_path, capsys):
    # Change a field, then make the file look like version 2 (unkeyed digests): the key file
    # beside it says it was a keyed store, and `upgrade` does not sign the change.
    path = tmp_path / "e.db"
    _filled(path, 4)
    key = Path(f"{path}.key").read_bytes()
    _sql(path, "UPDATE episodes SET run = 'forged' WHERE id = 2")  # not in the record
    as_version(path, 2)
    Path(f"{path}.key").write_bytes(key)
    assert main([str(path), "upgrade"]) == 1
    assert "relabelled as older" in capsys.readouterr().err
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta").fetchone() == ("2",)


def test_reads_during_concurrent_writes_see_no_missing_episodes(tmp_path):
    # A reader takes the count of episodes written, then reads rows that writers keep
    # appending: rows past the count are new (their MACs hold), never a false alarm.
    path = tmp_path / "e.db"
    store = EpisodeStore(path)
    errors: list[BaseException] = []
    done = threading.Event()

    def write(worker: int) -> None:
        try:
            for i in range(40):
                store.put(make_trajectory(1000 * worker + i), run=f"w{worker}")
        except BaseException as e:  # noqa: BLE001 - reported by the test below
            errors.append(e)

    def read() -> None:
        try:
            while not done.is_set():
                store.count()
                store.pass_at_k([1])
                list(store.summaries(run="w1"))
                assert store.verify() == []
        except BaseException as e:  # noqa: BLE001 - reported by the test below
            errors.append(e)

    writers = [threading.Thread(target=write, args=(w,)) for w in range(3)]
    reader = threading.Thread(target=read)
    reader.start()
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=300)
    done.set()
    reader.join(timeout=300)
    assert errors == []
    assert len(store) == store.written() == 120
    assert sorted(e.id for e in store.summaries()) == list(range(1, 121))
    store.close()
