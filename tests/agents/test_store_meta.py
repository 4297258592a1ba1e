"""Pending samples and pins are MAC'd like episodes (issue #31, finding att36b F2).

The ``meta`` rows ``pending:*`` (samples a writer opened, counted as failed by pass@k until
their episode settles them) and ``pin:*`` (a run's owner and sampling settings, first writer
wins) carried no MAC: someone who can write the database file but not read the key deleted
the open samples (pass@1 0.125 -> 0.5, ``verify`` "20 of 20 episodes intact", exit 0) or
planted a pin (``run_owner:victim-run = mallory`` returned as the run's owner).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from rllm_agents.error import AgentConfigError
from rllm_agents.store import DamagedStore, EpisodeStore, main, upgrade
from rllm_agents.store.schema import SCHEMA_VERSION
from rllm_agents.trajectory import Step, Trajectory
from tests.agents.test_store_faults import as_version

MATH = "rllm/Math-v1"
#: The pin the gateway keeps for how alice's scored sessions of MATH sample (``pin_client``).
CLIENT_PIN = "pin:" + json.dumps(["client", "alice", MATH, "sampling:sampled"])


def _math(task: int, correct: bool, sample: int = 0) -> Trajectory:
    step = Step([1], [2], [-0.1], "r", "a", "o", float(correct), True, info={"is_correct": correct})
    return Trajectory(
        env_id=MATH, task_id=f"t{task}", seed=task, sample=sample, steps=[step], metadata={}
    )


def _sql(path: Path, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for statement in statements:
            conn.execute(statement)
    conn.close()


def _killed_gateway(path: Path) -> None:
    """20 tasks: one stored sample each (10 right) and 3 left pending by a killed gateway."""
    with EpisodeStore(path) as store:
        for task in range(20):
            store.put(_math(task, task % 2 == 0), run="r")
            for sample in range(1, 4):
                store.open_pending(
                    f"alice/{task}/{sample}", run="r", env_id=MATH, task_id=f"t{task}"
                )
        assert store.pass_at_k([1])[f"r|{MATH}"]["pass@1"] == pytest.approx(0.125)


def test_deleting_the_pending_samples_is_reported_by_pass_at_k_and_verify(tmp_path, capsys):
    path = tmp_path / "e.db"
    _killed_gateway(path)
    _sql(path, "DELETE FROM meta WHERE key LIKE 'pending:%'")  # 0.5 before, verify clean
    with EpisodeStore(path, read_only=True) as store:
        for read in (lambda: store.pass_at_k([1]), store.pending):
            with pytest.raises(DamagedStore, match=r"60 of the 60 pending samples .* missing"):
                read()
        (found,) = store.verify()
        assert isinstance(found, DamagedStore) and found.key == "pending_count"
    assert main([str(path), "verify"]) == 1
    out, err = capsys.readouterr()
    assert "20 of 20 episodes intact" in out and "1 damaged pending-sample or pin rows" in out
    assert "pending samples it records as opened are missing" in err
    assert main([str(path), "passk"]) == 1
    assert "missing" in capsys.readouterr().err


@pytest.mark.parametrize(
    "edit",
    [
        "DELETE FROM meta WHERE key = 'pending:alice/19/3'",  # the newest one
        "DELETE FROM meta WHERE key = 'pending_count'",
        "UPDATE meta SET value = '0 ' || substr(value, 3) WHERE key = 'pending_count'",
        "UPDATE meta SET key = 'pending:bob/1/1' WHERE key = 'pending:alice/1/1'",
        "UPDATE meta SET value = replace(value, '\"open\"', '\"settled\"') "
        "WHERE key = 'pending:alice/1/1'",
        "UPDATE meta SET value = replace(value, '\"t1\"', '\"t2\"') "
        "WHERE key = 'pending:alice/1/1'",
        'INSERT INTO meta VALUES (\'pending:x\', \'["r", "rllm/Math-v1", "t0"]\')',
    ],
)
def test_every_change_to_the_pending_samples_is_reported(tmp_path, edit):
    path = tmp_path / "e.db"
    _killed_gateway(path)
    _sql(path, edit)
    with EpisodeStore(path, read_only=True) as store:
        with pytest.raises(DamagedStore, match="pending"):
            store.pass_at_k([1])
        assert store.verify() != []
    with EpisodeStore(path) as store:  # nor does a writer build on it
        with pytest.raises(DamagedStore):
            store.open_pending("new", run="r", env_id=MATH, task_id="t0")
            store.pending()


def test_settled_and_dropped_samples_count_as_before(tmp_path):
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        for key in ("a", "b", "c"):
            store.open_pending(key, run="r", env_id=MATH, task_id="t0")
        store.open_pending("d", run="r", env_id=MATH, task_id="t1")
        store.put(_math(0, True), run="r", pending="a")  # settled by its episode
        store.drop_pending("b")  # never sampled
        store.drop_pending("b")  # again: nothing to do
        store.drop_pending("never-opened")
        assert store.pending() == {"c": ("r", MATH, "t0"), "d": ("r", MATH, "t1")}
        row = store.pass_at_k([1])[f"r|{MATH}"]
        # t0: 1 right of 2 (one pending), t1: 0 of 1 (pending), sampled as often as t0.
        assert (row["tasks"], row["samples"], row["pending"]) == (2, 3, 2)
        assert row["pass@1"] == pytest.approx(0.25)
        store.open_pending("c", run="r", env_id=MATH, task_id="t0")  # the same again: no-op
        with pytest.raises(AgentConfigError, match="opened before"):
            store.open_pending("a", run="r", env_id=MATH, task_id="t0")  # settled: used once
        store.put(_math(0, False, sample=1), run="r", pending="c")
        store.put(_math(1, True), run="r", pending="d")
        assert store.pending() == {}
        # t0: 1 right of 2; t1: 1 of 1, sampled as often as t0.
        assert store.pass_at_k([1])[f"r|{MATH}"]["pass@1"] == pytest.approx(0.5)
        assert store.verify() == []
    with sqlite3.connect(path) as conn:  # no row was deleted: each is numbered, its state kept
        states = {
            key: json.loads(value)[3:5]
            for key, value in conn.execute("SELECT key, value FROM meta WHERE key LIKE 'pending:%'")
        }
    conn.close()
    assert states == {
        "pending:a": [1, "settled"],
        "pending:b": [2, "dropped"],
        "pending:c": [3, "settled"],
        "pending:d": [4, "settled"],
    }


def test_a_planted_or_changed_pin_is_never_returned(tmp_path, capsys):
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        assert store.pin("run_owner:run-a", "alice") == "alice"
        assert store.pin("run_owner:run-a", "bob") == "alice"  # first writer wins
    with EpisodeStore(path) as store:  # and reads back after a reopen
        assert store.pin("run_owner:run-a", "carol") == "alice"
        assert store.verify() == []
    _sql(
        path,
        "INSERT INTO meta VALUES ('pin:run_owner:victim-run', 'mallory')",
        f"INSERT INTO meta VALUES ('{CLIENT_PIN}', 'bogus')",
    )
    with EpisodeStore(path) as store:
        with pytest.raises(DamagedStore, match="run_owner:victim-run"):
            store.pin("run_owner:victim-run", "victim")
        with pytest.raises(DamagedStore, match="sampling:sampled"):
            store.pin(CLIENT_PIN.removeprefix("pin:"), "t=1.0")
        assert store.pin("run_owner:run-a", "x") == "alice"  # the others still read
        assert sorted(e.key for e in store.verify()) == sorted(
            ["pin:run_owner:victim-run", CLIENT_PIN]
        )
    # A pin changed in place, or copied from another key, fails its MAC too.
    _sql(
        path,
        f"DELETE FROM meta WHERE key IN ('pin:run_owner:victim-run', '{CLIENT_PIN}')",
        "INSERT INTO meta SELECT 'pin:run_owner:run-b', value FROM meta "
        "WHERE key = 'pin:run_owner:run-a'",
        "UPDATE meta SET value = replace(value, 'alice', 'mallory') "
        "WHERE key = 'pin:run_owner:run-a'",
    )
    with EpisodeStore(path) as store:
        for run in ("run-a", "run-b"):
            with pytest.raises(DamagedStore, match=f"run_owner:{run}"):
                store.pin(f"run_owner:{run}", "x")
    assert main([str(path), "verify"]) == 1
    assert "3 damaged pending-sample or pin rows" in capsys.readouterr().out


def test_a_deleted_pin_is_reported_and_never_pinned_again(tmp_path, capsys):
    """att36e F2: a deleted pin looked never written: the next writer pinned its own value
    (a run's owner, a client's sampling), `verify` clean. The count of pins is MAC'd."""
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        assert store.pin("run_owner:victim-run", "alice") == "alice"
        assert store.pin("sampling:r", "greedy") == "greedy"
    _sql(path, "DELETE FROM meta WHERE key = 'pin:run_owner:victim-run'")
    with EpisodeStore(path) as store:
        with pytest.raises(DamagedStore, match=r"missing: \[1\]"):
            store.pin("run_owner:victim-run", "mallory")
        (found,) = store.verify()
        assert found.key == "pin_count"
        assert store.pin("sampling:r", "sampled") == "greedy"  # a kept pin still reads
    assert main([str(path), "verify"]) == 1
    capsys.readouterr()
    _sql(path, "DELETE FROM meta WHERE key LIKE 'pin%'")  # every pin and their count
    with EpisodeStore(path) as store, pytest.raises(DamagedStore, match="count of pins"):
        store.pin("run_owner:victim-run", "mallory")


@pytest.mark.parametrize("variant", ["garbage row", "count set back"])
def test_a_deleted_pin_cannot_be_hidden_by_a_garbage_row_or_an_older_count(tmp_path, variant):
    """att36g: with a count of pins alone, deleting the victim's pin and planting a garbage
    row (the number of rows right again), or putting back the count read when the store held
    as many pins as are left, let the attacker's pin of the victim's key win (`verify` clean
    in the second case). Pins are numbered."""
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        store.pin("sampling:other", "greedy")
        store.pin("run_owner:victim-run", "alice")
    with sqlite3.connect(path) as conn:  # the attacker reads the count of 2 pins
        (older,) = conn.execute("SELECT value FROM meta WHERE key = 'pin_count'").fetchone()
    conn.close()
    with EpisodeStore(path) as store:
        store.pin("framing:x", "f")
    edit = (
        "INSERT INTO meta VALUES ('pin:zz', 'x')"
        if variant == "garbage row"
        else f"UPDATE meta SET value = '{older}' WHERE key = 'pin_count'"
    )
    _sql(path, "DELETE FROM meta WHERE key = 'pin:run_owner:victim-run'", edit)
    with EpisodeStore(path) as store:
        with pytest.raises(DamagedStore):
            store.pin("run_owner:victim-run", "mallory")
        assert store.verify()
        assert store.pin("sampling:other", "x") == "greedy"


def test_the_gateway_refuses_a_planted_client_pin(tmp_path):
    pytest.importorskip("starlette")
    from rllm_adapters.gateway.sessions import SessionRegistry

    path = tmp_path / "e.db"
    EpisodeStore(path).close()
    _sql(
        path,
        f"INSERT INTO meta VALUES ('{CLIENT_PIN}', 'bogus')",
    )
    with EpisodeStore(path) as store:
        registry = SessionRegistry(store, run="r", max_sessions=4, model="m")
        with pytest.raises(DamagedStore, match="sampling:sampled"):
            registry.pin_client("alice", MATH, "sampling:sampled", "t=1.0")
        # A store with a planted pin pins nothing new until it is restored.
        with pytest.raises(DamagedStore, match="sampling:sampled"):
            registry.pin_client("bob", MATH, "sampling:sampled", "t=1.0")


def test_keep_mark_catches_the_pending_samples_rolled_back(tmp_path):
    # A count put back with the newest samples deleted is a state the store was in: without
    # keep-mark nothing in the file tells (the residual, as for episodes).
    for kept in (False, True):
        path = tmp_path / f"{kept}.db"
        with EpisodeStore(path) as store:
            if kept:
                store.keep_mark()
            store.open_pending("a", run="r", env_id=MATH, task_id="t0")
        with sqlite3.connect(path) as conn:
            old = conn.execute("SELECT value FROM meta WHERE key = 'pending_count'").fetchone()
        conn.close()
        with EpisodeStore(path) as store:
            store.open_pending("b", run="r", env_id=MATH, task_id="t1")
        _sql(path, "DELETE FROM meta WHERE key = 'pending:b'")
        with sqlite3.connect(path) as conn:
            conn.execute("UPDATE meta SET value = ? WHERE key = 'pending_count'", old)
        conn.close()
        with EpisodeStore(path, read_only=True) as store:
            if not kept:
                assert list(store.pending()) == ["a"] and store.verify() == []
                continue
            with pytest.raises(DamagedStore, match="rolled back"):
                store.pass_at_k([1])
            assert [e.key for e in store.verify()] == ["pending_count"]
        with EpisodeStore(path) as store, pytest.raises(DamagedStore, match="rolled back"):
            store.open_pending("c", run="r", env_id=MATH, task_id="t2")


def test_a_version_4_store_is_upgraded_with_its_pending_samples_and_pins(tmp_path, capsys):
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        store.put(_math(0, True), run="r")
        for key, task in (("a", "t0"), ("b", "t1"), ("c", "t1")):
            store.open_pending(key, run="r", env_id=MATH, task_id=task)
        store.put(_math(1, False), run="r", pending="b")
        store.pin("run_owner:r", "alice")
        before = store.pass_at_k([1])
    as_version(path, 4)
    with pytest.raises(AgentConfigError, match=r"schema version 4.*e\.db \[--key KEY\] upgrade"):
        EpisodeStore(path)
    assert main([str(path), "upgrade"]) == 0
    out = capsys.readouterr().out
    assert f"schema version {SCHEMA_VERSION} (2 episodes)" in out and "Pending samples" in out
    with EpisodeStore(path) as store:
        assert store.pending() == {"a": ("r", MATH, "t0"), "c": ("r", MATH, "t1")}
        assert store.pass_at_k([1]) == before
        assert store.pin("run_owner:r", "mallory") == "alice"
        assert store.verify() == []
        store.open_pending("d", run="r", env_id=MATH, task_id="t2")
        store.put(_math(2, True), run="r", pending="a")
    assert upgrade(path) == 3  # already current: only checked
    # Once upgraded, a row without a MAC is refused like any other.
    _sql(path, 'INSERT INTO meta VALUES (\'pending:e\', \'["r", "rllm/Math-v1", "t3"]\')')
    with EpisodeStore(path) as store, pytest.raises(DamagedStore, match="pending:e"):
        store.pending()


def test_a_newer_store_relabelled_as_version_4_is_not_upgraded(tmp_path, capsys):
    # Relabelled as 4 with its open samples deleted, a version-5 store would have what is
    # left signed as found: what only version 5 writes gives it away.
    path = tmp_path / "e.db"
    _killed_gateway(path)
    _sql(
        path,
        "DELETE FROM meta WHERE key LIKE 'pending:%'",
        "UPDATE meta SET value = '4' WHERE key = 'schema_version'",
    )
    assert main([str(path), "upgrade"]) == 1
    assert "relabelled as older" in capsys.readouterr().err
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "4",
        )
    conn.close()


def test_a_newer_store_with_every_newer_row_removed_is_not_upgraded(tmp_path, capsys):
    """att36e F1: with its pending count and every signed row deleted too, pins written back
    as bare values and unsigned samples planted, a relabelled store looked like a genuine
    version 4 and was upgraded, signing what was planted (a run's owner and a client's
    sampling changed, pass@1 of two runs moved). Its count of episodes is signed with the
    version's own label, which a relabelled store cannot change without the key."""
    path = tmp_path / "e.db"
    _killed_gateway(path)
    with EpisodeStore(path) as store:
        store.pin("run_owner:victim-run", "alice")
    _sql(
        path,
        "DELETE FROM meta WHERE key LIKE 'pending%'",
        "UPDATE meta SET value = 'mallory' WHERE key = 'pin:run_owner:victim-run'",
        f"INSERT INTO meta VALUES ('pending:x/1', '{json.dumps(['rival', MATH, 't1'])}')",
        "UPDATE meta SET value = '4' WHERE key = 'schema_version'",
    )
    assert main([str(path), "upgrade"]) == 1
    err = capsys.readouterr().err
    assert "relabelled as older" in err and "count of episodes" in err
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "4",
        )
    conn.close()


def test_a_newer_store_relabelled_with_its_old_version_4_count_is_not_upgraded(tmp_path, capsys):
    """att37a F1: a version-5 store upgraded from 4, relabelled as 4 with the count saved from
    its version-4 days (signed with that version's label), its open samples deleted and a pin
    planted: the upgrade accepted the rows past the count and signed what was planted
    (pass@1 0.125 -> 0.5, the run's owner mallory). Version 4 raised its count with every
    episode: rows past it are refused."""
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        store.put(_math(100, False), run="r")
    as_version(path, 4)
    with sqlite3.connect(path) as conn:
        old = conn.execute("SELECT value FROM meta WHERE key = 'high_water'").fetchone()[0]
    conn.close()
    assert main([str(path), "upgrade"]) == 0
    with EpisodeStore(path) as store:
        for task in range(4):
            store.put(_math(task, task % 2 == 0), run="r")
            store.open_pending(f"alice/{task}", run="r", env_id=MATH, task_id=f"t{task}")
        store.pin("run_owner:victim-run", "alice")
        before = store.pass_at_k([1])
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM meta WHERE key LIKE 'pending%' OR key = 'pin_count'")
        conn.execute("UPDATE meta SET value = 'mallory' WHERE key = 'pin:run_owner:victim-run'")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'high_water'", (old,))
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    conn.close()
    assert main([str(path), "upgrade"]) == 1
    err = capsys.readouterr().err
    assert "records 1 episodes written, but holds 5" in err and "set back" in err
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == (
            "4",
        )
    conn.close()
    assert before["r|" + MATH]["pass@1"] < 0.5


def test_an_unreadable_old_pending_sample_stops_the_upgrade(tmp_path, capsys):
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        store.open_pending("a", run="r", env_id=MATH, task_id="t0")
    as_version(path, 4)
    _sql(path, "UPDATE meta SET value = 'garbage' WHERE key = 'pending:a'")
    assert main([str(path), "upgrade"]) == 1
    assert "pending sample 'pending:a' is not a run" in capsys.readouterr().err
