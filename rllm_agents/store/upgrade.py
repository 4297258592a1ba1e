"""``upgrade``: a store of schema version 1, 2 or 3 made version 4 in place, after checking it."""

from __future__ import annotations

import contextlib
import hmac
import os
import sqlite3
from pathlib import Path

from rllm_agents.error import AgentConfigError
from rllm_agents.store import integrity
from rllm_agents.store.damage import DamagedEpisode, DamagedStore, check_wal
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
    "write the file before the upgrade (anyone could recompute those digests). From now on, "
    "changes made without the store's key are reported."
)


def _layout(columns: list[str]) -> str:
    """The schema version the ``episodes`` table's columns belong to."""
    if "mac" in columns:
        return "3"
    return "2" if "columns_sha256" in columns else "1"


def upgrade(
    path: str | os.PathLike[str],
    *,
    timeout: float = 60.0,
    key: str | os.PathLike[str] | None = None,
    accept_missing: bool = False,
) -> int:
    """Upgrade a schema-version-1, -2 or -3 store in place to version 4; return its episodes.

    Every episode is first checked: its record against its SHA-256 and the columns the record
    holds (as :meth:`EpisodeStore.verify` does), in version 2 its columns against their
    SHA-256, and in version 3 its MAC and the count of episodes written under the store's key.
    Row ids must run 1, 2, 3, ... (a missing id is a deleted row). If anything is damaged or
    missing nothing is changed and :class:`DamagedStore` lists it. Then, in one transaction,
    the store gets a new random identity, every row its MAC and the store its count.

    **Keys.** A version-1 or -2 store has no key, so an upgrade makes a new one and never signs
    with a key file that exists (explicit or not): a keyed store relabelled as older, with
    forged rows, would otherwise have them signed with its real key. What it signs is only as
    trustworthy as whoever could write the file before (:data:`UPGRADE_TRUST`). A version-3
    store keeps its key: only rows that key already vouched for (their MACs and the count
    hold) are signed again, under a MAC key bound to the new identity that has signed nothing
    before. A store already at version 4 is only checked (:meth:`EpisodeStore.count`).

    Args:
        path: The database file.
        timeout: Seconds to wait for the write lock.
        key: The key file (default ``$RLLM_STORE_KEY``, else ``DB.key``): for versions 1 and
            2 where the new key is made (it must not exist); for version 3 the store's key.
        accept_missing: Renumber the rows 1, 2, 3, ... in order instead of refusing a store
            with missing ids (their episodes are gone either way; row ids change).

    Raises:
        AgentConfigError: For a missing file, an unknown version, an existing key file for an
            unkeyed store, or a missing or wrong key for a version-3 store.
        DamagedStore: For damaged or missing episodes, a label that does not match the
            table, a cut write-ahead log or a file that is not a store.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentConfigError(f"No episode store at {path}.")
    check_wal(path)
    key_file = integrity.key_path(path, key)
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
    conn.text_factory = _decode_text
    made_key = False
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            columns = [row[1] for row in conn.execute("PRAGMA table_info(episodes)")]
        except sqlite3.DatabaseError as e:
            raise DamagedStore(f"{path} is not an episode store: {e}") from e
        label = None if meta.get("schema_version") is None else str(meta["schema_version"])
        if label == str(SCHEMA_VERSION):
            conn.execute("ROLLBACK")
            conn.close()
            with EpisodeStore(path, timeout=timeout, key=key) as store:
                return store.count()
        if label not in ("1", "2", "3"):
            raise AgentConfigError(
                f"{path} has episode-store schema version {label}; `upgrade` turns versions "
                f"1 to 3 into version {SCHEMA_VERSION}."
            )
        if _layout(columns) != label:
            raise DamagedStore(
                f"{path} is labelled schema version {label}, but its episodes table has the "
                f"columns of version {_layout(columns)}: the label was changed (by hand, or "
                "to have a changed store signed again). Nothing was changed; restore the "
                "store from a backup."
            )
        old_key = b""
        written = 0
        if label != "3":
            keyed = sorted({"key_id", "store_id", "high_water"} & set(meta))
            if keyed:
                raise DamagedStore(
                    f"{path} is labelled schema version {label}, which has no key, but its "
                    f"`meta` table holds {', '.join(keyed)}, which only keyed stores write: "
                    "it is a keyed store relabelled as older (to have changed episodes "
                    "signed). Nothing was changed; restore the store from a backup."
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
        else:
            old_key = integrity.load_key(key_file, path, create=False)
            if meta.get("key_id") != integrity.key_id(old_key):
                raise AgentConfigError(
                    f"{key_file} is not the key of the version-3 episode store {path}; give "
                    f"its key with `--key` (`key=`, or ${integrity.KEY_ENV}). Nothing was "
                    "changed."
                )
            written = integrity.parse_high_water(old_key, path, meta.get("high_water"))
        rows: list[tuple[int, tuple[object, ...]]] = []
        damaged: list[DamagedEpisode] = []
        extra = {"1": "", "2": ", columns_sha256", "3": ", mac"}[label]
        for row in conn.execute(f"SELECT {_SUMMARY}, record{extra} FROM episodes ORDER BY id"):
            try:
                if label == "2" and columns_digest(row[1:17]) != row[18]:
                    raise DamagedEpisode(
                        path, row[0], str(row[1]), "its query columns fail their SHA-256"
                    )
                if label == "3" and not (
                    isinstance(row[18], str)
                    and hmac.compare_digest(integrity.row_mac(old_key, row[0], row[1:17]), row[18])
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
                f"first: {damaged[0].reason}). Restore the store from a backup, or delete "
                "those rows (`DELETE FROM episodes WHERE id IN (...)`), then upgrade again "
                "with `--accept-missing`."
            )
        present = [row_id for row_id, _ in rows]
        expected = list(range(1, max(len(rows), written) + 1))
        if present != expected and not accept_missing:
            have = set(present)
            missing = [i for i in range(1, max(present + [written]) + 1) if i not in have]
            shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
            raise DamagedStore(
                f"{path} was not upgraded: {len(missing)} episodes are missing (ids {shown}; "
                "their rows were deleted). Restore the store from a backup, or upgrade with "
                "`--accept-missing` to keep what is left (rows are renumbered 1, 2, 3, ...)."
            )
        if label == "3":
            secret = old_key
        else:
            secret = integrity.new_key(key_file, path)
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
            ],
        )
        conn.execute("COMMIT")
        made_key = False
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
