"""Episode store, blind-attack round att34c (issue #31, session 34): a flipped high bit in a
stored MAC made readers raise ``TypeError`` (``hmac.compare_digest`` refuses non-ASCII text)
instead of reporting the damaged episode with its id.

Each test fails on the store before the fix.
"""

from __future__ import annotations

import sqlite3

import pytest

from rllm_agents.store import DamagedEpisode, EpisodeStore
from rllm_agents.store.integrity import macs_match
from tests.agents.test_store import make_trajectory


def test_a_mac_with_a_non_ascii_character_does_not_match():
    assert macs_match("ab12", "ab12")
    assert not macs_match("ab12", "ab\u00b22")  # a flipped high bit
    assert not macs_match("ab12", "ab\udcb2")  # an undecodable byte read back
    assert not macs_match("ab12", None) and not macs_match("ab12", b"ab12")


def test_a_flipped_high_bit_in_an_episode_mac_names_the_episode(tmp_path):
    db = tmp_path / "s.db"
    with EpisodeStore(db) as store:
        for i in range(6):
            store.put(make_trajectory(i, turns=1, prompt_len=8, completion_len=6), run="r")
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (mac,) = conn.execute("SELECT mac FROM episodes WHERE id = 5").fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    at = data.find(mac.encode())
    assert at > 0 and data.count(mac.encode()) == 1
    data[at + 3] ^= 0x80  # one bit of the file
    db.write_bytes(data)
    with EpisodeStore(db) as store:
        with pytest.raises(DamagedEpisode, match="Episode 5 "):
            store.get(5)
        with pytest.raises(DamagedEpisode, match="Episode 5 "):
            store.count(run="r")
        damaged = store.verify()
    assert [str(e).split(" (")[0] for e in damaged] == ["Episode 5"]


def test_a_hash_lookup_missing_a_damaged_hash_reports_the_damage(tmp_path):
    """att35d (session 35): with one episode's hash column changed, `get(hash)` and
    `get(prefix)` said "No episode" (the index no longer finds it); now the miss reads every
    row and names the damaged episode. A miss in an intact store is still a KeyError."""
    db = tmp_path / "s.db"
    with EpisodeStore(db) as store:
        for i in range(5):
            store.put(make_trajectory(i, turns=1, prompt_len=8, completion_len=6))
        real = store.get(3).hash
        with pytest.raises(KeyError, match="No episode"):
            store.get("0123456789ab")
    conn = sqlite3.connect(db)
    flipped = ("0" if real[0] != "0" else "1") + real[1:]
    conn.execute("UPDATE episodes SET hash = ? WHERE id = 3", (flipped,))
    conn.commit()
    conn.close()
    with EpisodeStore(db) as store:
        for key in (real, real[:8]):
            with pytest.raises(DamagedEpisode) as raised:
                store.get(key)
            assert raised.value.id == 3


def test_a_damaged_hash_index_is_reported_not_read_as_a_miss(tmp_path):
    """att35h (session 35): one bit of the hash index flipped (rows intact) hid an intact
    episode: `get(hash)` said "No episode" and `verify()` found nothing. Both now report
    the damaged index."""
    from rllm_agents.store import DamagedStore

    db = tmp_path / "s.db"
    with EpisodeStore(db) as store:
        hashes = [store.put(make_trajectory(i, turns=1)).hash for i in range(5)]
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    query = "SELECT rootpage FROM sqlite_master WHERE name = 'episodes_hash'"
    (root,) = conn.execute(query).fetchone()
    conn.close()
    data = bytearray(db.read_bytes())
    at = data.find(hashes[2].encode(), (root - 1) * size, root * size)
    assert at > 0
    data[at + 10] ^= 0x01  # inside the index's key only
    db.write_bytes(data)
    with EpisodeStore(db) as store:
        assert store.get(3).hash == hashes[2]  # by row id: the row itself is intact
        for key in (hashes[2], hashes[2][:12]):
            with pytest.raises(DamagedStore, match="index"):
                store.get(key)
        with pytest.raises(DamagedStore, match="integrity"):
            store.verify()
