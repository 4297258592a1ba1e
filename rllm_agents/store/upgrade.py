"""``upgrade``: a store of schema version 1 to 4 made version 5 in place, after checking it."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from pathlib import Path

from rllm_agents.error import AgentConfigError
from rllm_agents.store import integrity
from rllm_agents.store.damage import (
    DamagedEpisode,
    DamagedStore,
    check_wal,
    check_wal_kept,
    hold_index,
    release_index,
)
from rllm_agents.store.episode_store import EpisodeStore, _decode_text
from rllm_agents.store.schema import (
    _COLUMNS,
    _INDEXES,
    _SUMMARY,
    _TABLE,
    SCHEMA_VERSION,
    columns_digest,
)

#: What an upgrade of an unkeyed store can and cannot vouch for (printed by the CLI).
UPGRADE_TRUST = (
    "Note: an upgrade checks every episode against the digests the store holds, but a "
    "version-1 or -2 store has no key: its episodes are only as trustworthy as whoever could "
    "write the file before the upgrade (anyone could recompute those digests). A version-3 "
    "store's MACs are not bound to it: its episodes are only as trustworthy as every store "
    "that shared its key (their rows pass its checks). Pending samples and pins (versions 4 "
    "and older kept them without a MAC) are signed as found: they are only as trustworthy as "
    "whoever could write the file before. From now on, changes made without the store's key "
    "are reported."
)


def _upgrading(key_file: Path) -> Path:
    """The note an unkeyed upgrade leaves while the key it made has signed nothing yet."""
    return key_file.with_name(f"{key_file.name}.upgrading")


def _signs_of_a_key(path: Path, key_file: Path) -> list[Path]:
    """Files only a keyed store leaves: its key, a copy of it, a kept count, beside it or the DB.

    ``KEY*`` beside the key to be made (the key, ``KEY.bak``, ``KEY.<store_id>.mark``) and
    ``DB.key*`` beside the database (the default key and what it leaves), except the note of an
    interrupted upgrade (:func:`_upgrading`).
    """
    found: set[Path] = set()
    for folder, prefix in ((key_file.parent, key_file.name), (path.parent, f"{path.name}.key")):
        with contextlib.suppress(OSError):
            found.update(p for p in folder.iterdir() if p.name.startswith(prefix))
    found.discard(_upgrading(key_file))
    return sorted(found)


def _marks(key_file: Path) -> list[Path]:
    """Counts kept beside ``key_file`` by version-4 stores (``KEY.<store_id>.mark``)."""
    with contextlib.suppress(OSError):
        return sorted(
            p
            for p in key_file.parent.iterdir()
            if p.name.startswith(f"{key_file.name}.") and ".mark" in p.name
        )
    return []


def _layout(columns: list[str]) -> str:
    """The schema version the ``episodes`` table's columns belong to."""
    if "mac" in columns:
        return "3"
    return "2" if "columns_sha256" in columns else "1"


def _old_meta(
    conn: sqlite3.Connection, path: Path
) -> tuple[list[tuple[str, str | None, str, str]], list[tuple[str, str]]]:
    """The pending samples (in the order written) and pins of a store of version 4 or older.

    Raises:
        DamagedStore: For a pending sample that is not ``[run, env_id, task_id]``.
    """
    pending = []
    for key, value in conn.execute(
        "SELECT key, value FROM meta WHERE substr(key, 1, 8) = 'pending:' ORDER BY rowid"
    ):
        try:
            run, env_id, task_id = json.loads(value)
        except (TypeError, ValueError, RecursionError):
            run = env_id = task_id = None
        if not (
            (run is None or isinstance(run, str))
            and isinstance(env_id, str)
            and isinstance(task_id, str)
        ):
            raise DamagedStore(
                f"{path} was not upgraded: its pending sample {key[:200]!r} is not a run, env "
                f"and task ({str(value)[:80]!r}). Nothing was changed; restore the store from "
                "a backup."
            )
        pending.append((key, run, env_id, task_id))
    pins = list(conn.execute("SELECT key, value FROM meta WHERE substr(key, 1, 4) = 'pin:'"))
    return pending, pins


def _signed_meta(
    mac_key: bytes, pending: list[tuple[str, str | None, str, str]], pins: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    """``(key, value)`` of the pending samples (numbered 1, 2, 3, ..., open), pins and count."""
    rows = [
        (key, integrity.pending_value(mac_key, key, run, env_id, task_id, seq, "open"))
        for seq, (key, run, env_id, task_id) in enumerate(pending, start=1)
    ]
    rows += [
        (key, integrity.pin_value(mac_key, key, value, seq))
        for seq, (key, value) in enumerate(pins, start=1)
    ]
    rows.append(
        ("pending_count", integrity.high_water_value(mac_key, len(pending), "pending-count"))
    )
    rows.append(("pin_count", integrity.high_water_value(mac_key, len(pins), "pin-count")))
    return rows


def _check_not_relabelled(
    path: Path, meta: dict[str, str], mac_key: bytes, key_file: Path, store_id: str
) -> None:
    """Refuse a "version 4" store with what only version 5 writes: a relabelled newer store.

    Relabelled, its deleted pending samples (or planted pins) would be signed as found.
    """
    signs = []
    high_water = meta.get("high_water")
    if integrity.parse_count(mac_key, integrity.HIGH_WATER_LABEL, high_water) is not None:
        signs.append("its count of episodes, signed as version 5 signs it")
    for row in ("pending_count", "pin_count"):
        if row in meta:
            signs.append(f"the `meta` row `{row}`")
    for key, value in meta.items():
        if key.startswith("pending:") and integrity.parse_pending(mac_key, key, value):
            signs.append(f"the signed pending sample {key[:80]!r}")
        elif key.startswith("pin:") and integrity.parse_pin(mac_key, key, value) is not None:
            signs.append(f"the signed pin {key[:80]!r}")
        if len(signs) > 3:
            break
    kept = integrity.pending_mark_path(key_file, store_id)
    if kept.exists():
        signs.append(f"{kept}, kept beside the key")
    if signs:
        raise DamagedStore(
            f"{path} is labelled schema version 4, but holds what only version "
            f"{SCHEMA_VERSION} writes ({'; '.join(signs[:4])}): it is a newer store "
            "relabelled as older (to have deleted pending samples or planted pins signed). "
            "Nothing was changed; restore the store from a backup."
        )


def upgrade(
    path: str | os.PathLike[str],
    *,
    timeout: float = 60.0,
    key: str | os.PathLike[str] | None = None,
    accept_missing: bool = False,
    unkeyed: bool = False,
    shared_key: bool = False,
) -> int:
    """Upgrade a schema-version-1 to -4 store in place to version 5; return its episodes.

    Every episode is first checked: its record against its SHA-256 and the columns the record
    holds (as :meth:`EpisodeStore.verify` does), in version 2 its columns against their
    SHA-256, and in version 3 its MAC and the count of episodes written under the store's key.
    Row ids must run 1, 2, 3, ... (a missing id is a deleted row). If anything is damaged or
    missing nothing is changed and :class:`DamagedStore` lists it. Then, in one transaction,
    the store gets a new random identity, every row its MAC and the store its count; and its
    pending samples (numbered in the order written, counted) and pins their MACs.

    A version-4 store keeps its identity and rows (their MACs and the count hold under its
    key, and a count kept beside the key must not be above its own): only its pending
    samples and pins are signed, as found (:data:`UPGRADE_TRUST`). What only version 5 writes
    (a pending count, a signed pending sample or pin, a pending count kept beside the key)
    means a newer store relabelled as 4, and is refused.

    **Keys.** A version-1 or -2 store has no key, so nothing can tell its rows from forged ones
    (:data:`UPGRADE_TRUST`), and a keyed store relabelled as version 2 with forged rows looks
    exactly like one. Its upgrade therefore needs ``unkeyed=True`` (CLI ``--unkeyed``), the
    operator's word that the store never had a key; it makes a new key and never signs with
    a key file that exists (explicit or not), and it refuses while anything a keyed store
    leaves is there: ``meta`` rows of a keyed store, or files named like the key to be made
    or like ``DB.key`` (a key, a copy of one, a kept count). A version-3 store keeps its key:
    only rows that key already vouched for (their MACs and the count hold) are signed again,
    under a MAC key bound to the new identity that has signed nothing before. Counts kept
    beside that key (``keep-mark``) belong to version-4 stores: an earlier version-3 copy of
    such a store put back (a rollback) would otherwise be upgraded to a new identity the kept
    count does not name, so they refuse the upgrade unless ``shared_key=True`` (CLI
    ``--shared-key``) says the key is shared with other stores. A store already at version 4
    is only checked (:meth:`EpisodeStore.count`).

    Args:
        path: The database file.
        timeout: Seconds to wait for the write lock.
        key: The key file (default ``$RLLM_STORE_KEY``, else ``DB.key``): for versions 1 and
            2 where the new key is made (it must not exist); for version 3 the store's key.
        accept_missing: Renumber the rows 1, 2, 3, ... in order instead of refusing a store
            with missing ids (their episodes are gone either way; row ids change).
        unkeyed: Upgrade a version-1 or -2 store, whose rows nothing can vouch for.
        shared_key: Upgrade a version-3 store although counts of other stores are kept beside
            its key.

    Raises:
        AgentConfigError: For a missing file, an unknown version, an unkeyed store without
            ``unkeyed`` or with signs of a key, a version-3 store with counts kept beside its
            key without ``shared_key``, or a missing or wrong key for a version-3 store.
        DamagedStore: For damaged or missing episodes, a label that does not match the
            table, a cut write-ahead log or a file that is not a store.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentConfigError(f"No episode store at {path}.")
    # Its connection's locks must outlive every read of the index (damage.hold_index).
    hold_index(path)
    try:
        return _upgrade(path, timeout, key, accept_missing, unkeyed, shared_key)
    finally:
        release_index(path)


def _upgrade(
    path: Path,
    timeout: float,
    key: str | os.PathLike[str] | None,
    accept_missing: bool,
    unkeyed: bool,
    shared_key: bool,
) -> int:
    wal_before = check_wal(path)
    key_file = integrity.key_path(path, key)
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
    conn.text_factory = _decode_text
    made_key = False
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            check_wal_kept(path, wal_before)
            columns = [row[1] for row in conn.execute("PRAGMA table_info(episodes)")]
        except sqlite3.DatabaseError as e:
            raise DamagedStore(f"{path} is not an episode store: {e}") from e
        label = None if meta.get("schema_version") is None else str(meta["schema_version"])
        if label == str(SCHEMA_VERSION):
            conn.execute("ROLLBACK")
            conn.close()
            with EpisodeStore(path, timeout=timeout, key=key) as store:
                return store.count()
        if label not in ("1", "2", "3", "4"):
            raise AgentConfigError(
                f"{path} has episode-store schema version {label}; `upgrade` turns versions "
                f"1 to 4 into version {SCHEMA_VERSION}."
            )
        if _layout(columns) != ("3" if label == "4" else label):
            raise DamagedStore(
                f"{path} is labelled schema version {label}, but its episodes table has the "
                f"columns of version {_layout(columns)}: the label was changed (by hand, or "
                "to have a changed store signed again). Nothing was changed; restore the "
                "store from a backup."
            )
        old_key = row_key = b""
        written = 0
        if label == "4":
            old_key = integrity.load_key(key_file, path, create=False)
            if meta.get("key_id") != integrity.key_id(old_key):
                raise AgentConfigError(
                    f"{key_file} is not the key of the version-4 episode store {path}; give "
                    f"its key with `--key` (`key=`, or ${integrity.KEY_ENV}). Nothing was "
                    "changed."
                )
            store_id = meta.get("store_id")
            if not integrity.valid_store_id(store_id):
                raise DamagedStore(
                    f"{path} has no valid store identity (its `meta` row `store_id` is "
                    f"{str(store_id)[:40]!r}): every MAC is bound to it. Nothing was changed; "
                    "restore the store from a backup."
                )
            assert isinstance(store_id, str)
            row_key = integrity.store_key(old_key, store_id)
            _check_not_relabelled(path, meta, row_key, key_file, store_id)
            written = integrity.parse_high_water(
                row_key, path, meta.get("high_water"), integrity.OLD_HIGH_WATER_LABEL
            )
            kept = integrity.read_mark(row_key, path, integrity.mark_path(key_file, store_id))
            if kept is not None and kept > written:
                raise DamagedStore(
                    f"{path} records {written} episodes written, but the count kept beside its "
                    f"key records {kept}: the store was rolled back. Nothing was changed; "
                    "restore the newest copy from a backup."
                )
        elif label != "3":
            keyed = sorted(
                {"key_id", "store_id", "high_water", "pending_count", "pin_count"} & set(meta)
            )
            if keyed:
                raise DamagedStore(
                    f"{path} is labelled schema version {label}, which has no key, but its "
                    f"`meta` table holds {', '.join(keyed)}, which only keyed stores write: "
                    "it is a keyed store relabelled as older (to have changed episodes "
                    "signed). Nothing was changed; restore the store from a backup."
                )
            note = _upgrading(key_file)
            if key_file.exists() and note.exists():
                raise AgentConfigError(
                    f"An upgrade of {path} made the key {key_file} and was interrupted before "
                    f"it committed ({note} says so): the store is unchanged (still version "
                    f"{label}) and that key signed nothing. If you ran that upgrade, delete "
                    f"{key_file} and {note} and run it again. Nothing was changed."
                )
            if key_file.exists():
                raise AgentConfigError(
                    f"{path} is a version-{label} store, which has no key, and `upgrade` makes "
                    f"a new key for it, never signing with one that exists: {key_file} does. "
                    "If that is this store's key, the store is a keyed one relabelled as "
                    "older to have changed episodes signed: restore it from a backup. If this "
                    "store really never had a key, name a path that does not exist yet with "
                    "`--key` (`key=`). Nothing was changed."
                )
            signs = _signs_of_a_key(path, key_file)
            if signs:
                shown = ", ".join(str(p) for p in signs[:4]) + (" ..." if len(signs) > 4 else "")
                raise AgentConfigError(
                    f"{path} is labelled version {label}, which has no key, but files only a "
                    f"keyed store leaves are there ({shown}): it may be a keyed store "
                    "relabelled as older (its key deleted) to have forged episodes signed. "
                    "Restore it from a backup. Nothing was changed."
                )
            if not unkeyed:
                raise AgentConfigError(
                    f"{path} is a version-{label} store: its episodes carry no keyed MAC, so "
                    "an upgrade cannot tell them from forged ones, and a keyed store "
                    "relabelled as older looks the same. If this store was ever version 3 or "
                    "newer, restore it from a backup. Only if it has always been version "
                    f"{label}, upgrade with `--unkeyed` (`unkeyed=True`). {UPGRADE_TRUST} "
                    "Nothing was changed."
                )
        else:
            marks = _marks(key_file)
            if marks and not shared_key:
                raise AgentConfigError(
                    f"{path} is a version-3 store, but counts kept by version-4 stores lie "
                    f"beside its key ({marks[0]}{' ...' if len(marks) > 1 else ''}): if this "
                    "is an earlier copy of such a store put back (a rollback), an upgrade "
                    "would hide it under a new identity. Restore the newest copy from a "
                    "backup. Only if the key is shared with other stores and this one was "
                    "never upgraded, upgrade with `--shared-key` (`shared_key=True`). "
                    "Nothing was changed."
                )
            old_key = integrity.load_key(key_file, path, create=False)
            if meta.get("key_id") != integrity.key_id(old_key):
                raise AgentConfigError(
                    f"{key_file} is not the key of the version-3 episode store {path}; give "
                    f"its key with `--key` (`key=`, or ${integrity.KEY_ENV}). Nothing was "
                    "changed."
                )
            written = integrity.parse_high_water(
                old_key, path, meta.get("high_water"), integrity.OLD_HIGH_WATER_LABEL
            )
        if label == "3":
            row_key = old_key
        old_pending, old_pins = _old_meta(conn, path)
        rows: list[tuple[int, tuple[object, ...]]] = []
        damaged: list[DamagedEpisode] = []
        extra = {"1": "", "2": ", columns_sha256", "3": ", mac", "4": ", mac"}[label]
        for row in conn.execute(f"SELECT {_SUMMARY}, record{extra} FROM episodes ORDER BY id"):
            try:
                if label == "2" and columns_digest(row[1:17]) != row[18]:
                    raise DamagedEpisode(
                        path, row[0], str(row[1]), "its query columns fail their SHA-256"
                    )
                if label in ("3", "4") and not integrity.macs_match(
                    integrity.row_mac(row_key, row[0], row[1:17]), row[18]
                ):
                    raise DamagedEpisode(
                        path, row[0], str(row[1]), "its row id and query columns fail their MAC"
                    )
                integrity.verified(path, row, row[17])
            except DamagedEpisode as e:
                damaged.append(e)
                continue
            rows.append((row[0], tuple(row[1:17])))
        if damaged:
            ids = ", ".join(str(e.id) for e in damaged[:20])
            more = f" and {len(damaged) - 20} more" if len(damaged) > 20 else ""
            raise DamagedStore(
                f"{path} was not upgraded: {len(damaged)} damaged episodes (ids {ids}{more}; "
                f"first: {damaged[0].reason}). Nothing was changed; restore the store from a "
                "backup."
            )
        present = [row_id for row_id, _ in rows]
        if label == "4" and len(rows) > written:
            # Version 4 raised its count with every episode, in the same transaction: rows
            # past it mean the count was set back, as a version-5 store relabelled as 4 with
            # a count saved from its version-4 days looks (s37 att37a: its pending samples
            # deleted and a pin planted were then signed, its newer episodes all kept).
            raise DamagedStore(
                f"{path} is labelled schema version 4 and records {written} episodes written, "
                f"but holds {len(rows)}: its count was set back (a newer store relabelled as "
                "older, with a count saved from before, looks so). Nothing was changed; "
                "restore the store from a backup."
            )
        expected = list(range(1, max(len(rows), written) + 1))
        # A version-4 store keeps its rows (and ids): its missing ones cannot be renumbered.
        if present != expected and (not accept_missing or label == "4"):
            have = set(present)
            missing = [i for i in range(1, max(present + [written]) + 1) if i not in have]
            shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
            raise DamagedStore(
                f"{path} was not upgraded: {len(missing)} episodes are missing (ids {shown}; "
                "their rows were deleted). Nothing was changed; restore the store from a "
                "backup."
            )
        if label == "4":
            conn.executemany(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                [
                    *_signed_meta(row_key, old_pending, old_pins),
                    ("high_water", integrity.high_water_value(row_key, len(rows))),
                    ("schema_version", str(SCHEMA_VERSION)),
                ],
            )
            conn.execute("COMMIT")
            return len(rows)
        if label == "3":
            secret = old_key
        else:
            # The note first: a run killed after making the key tells the next one so.
            key_file.parent.mkdir(parents=True, exist_ok=True)
            _upgrading(key_file).write_text(f"{path}\n", encoding="utf-8")
            try:
                secret = integrity.new_key(key_file, path)
            except BaseException:
                _upgrading(key_file).unlink(missing_ok=True)
                raise
            made_key = True
        store_id = integrity.new_store_id()
        mac_key = integrity.store_key(secret, store_id)
        conn.execute(_TABLE.format(name="episodes_upgraded"))
        copied = ", ".join(_COLUMNS[1:-2])  # hash ... created
        for new_id, (old_id, values) in enumerate(rows, start=1):
            conn.execute(
                f"INSERT INTO episodes_upgraded ({', '.join(_COLUMNS)}) "
                f"SELECT ?, {copied}, record, ? FROM episodes WHERE id = ?",
                (new_id, integrity.row_mac(mac_key, new_id, values), old_id),
            )
        conn.execute("DROP TABLE episodes")
        conn.execute("ALTER TABLE episodes_upgraded RENAME TO episodes")
        for statement in _INDEXES.split(";"):
            if statement.strip():
                conn.execute(statement)
        conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [
                ("schema_version", str(SCHEMA_VERSION)),
                ("key_id", integrity.key_id(secret)),
                ("store_id", store_id),
                ("high_water", integrity.high_water_value(mac_key, len(rows))),
                *_signed_meta(mac_key, old_pending, old_pins),
            ],
        )
        conn.execute("COMMIT")
        made_key = False
        if label != "3":
            _upgrading(key_file).unlink(missing_ok=True)
        return len(rows)
    except sqlite3.Error as e:
        raise DamagedStore(f"{path} was not upgraded: {type(e).__name__}: {e}") from e
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        conn.close()
        if made_key:
            key_file.unlink(missing_ok=True)
            _upgrading(key_file).unlink(missing_ok=True)
