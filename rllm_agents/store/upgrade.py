"""``upgrade``: a store of schema version 1 or 2 made version 3 in place, after checking it."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from pathlib import Path

from rllm_agents.error import AgentConfigError
from rllm_agents.store import integrity
from rllm_agents.store.damage import DamagedEpisode, DamagedStore, check_wal
from rllm_agents.store.episode_store import EpisodeStore, _decode_text
from rllm_agents.store.schema import _SUMMARY, SCHEMA_VERSION, columns_digest


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
    """Upgrade a schema-version-1 or -2 store in place to version 3; return its episodes.

    Every episode is first checked: its record against its SHA-256 and the columns the record
    holds (as :meth:`EpisodeStore.verify` does), and in version 2 its columns against their
    SHA-256. Row ids must run 1, 2, 3, ... (these versions have no way to delete an episode,
    so a missing id is a deleted row). If anything is damaged or missing nothing is changed
    and :class:`DamagedStore` lists it. Then the store's key is made (mode 0600) and, in one
    transaction, each row gets its MAC and the store its count of episodes written. A store
    already at version 3 is only checked (:meth:`EpisodeStore.count`).

    Args:
        path: The database file.
        timeout: Seconds to wait for the write lock.
        key: Where the key goes (default ``$RLLM_STORE_KEY``, else ``DB.key``). The default
            file must not exist yet: a version-3 store relabelled as older (its MACs swapped
            for unkeyed digests) would otherwise have forged changes signed with its own key.
            A key named explicitly is used as it is (made if missing).
        accept_missing: Renumber the rows 1, 2, 3, ... in order instead of refusing a store
            with missing ids (their episodes are gone either way; row ids change).

    Raises:
        AgentConfigError: For a missing file, an unknown version or an existing key file.
        DamagedStore: For damaged or missing episodes, a label that does not match the
            table, a cut write-ahead log or a file that is not a store.
    """
    path = Path(path)
    if not path.is_file():
        raise AgentConfigError(f"No episode store at {path}.")
    check_wal(path)
    key_file = integrity.key_path(path, key)
    explicit_key = key is not None or bool(os.environ.get(integrity.KEY_ENV))
    conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
    conn.text_factory = _decode_text
    made_key = False
    try:
        try:
            conn.execute("BEGIN IMMEDIATE")
            version = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            columns = [row[1] for row in conn.execute("PRAGMA table_info(episodes)")]
        except sqlite3.DatabaseError as e:
            raise DamagedStore(f"{path} is not an episode store: {e}") from e
        label = None if version is None else str(version[0])
        if label == str(SCHEMA_VERSION):
            conn.execute("ROLLBACK")
            conn.close()
            with EpisodeStore(path, timeout=timeout, key=key) as store:
                return store.count()
        if label not in ("1", "2"):
            raise AgentConfigError(
                f"{path} has episode-store schema version {label}; `upgrade` turns versions "
                f"1 and 2 into version {SCHEMA_VERSION}."
            )
        if _layout(columns) != label:
            raise DamagedStore(
                f"{path} is labelled schema version {label}, but its episodes table has the "
                f"columns of version {_layout(columns)}: the label was changed (by hand, or "
                "to have a changed store signed again). Nothing was changed; restore the "
                "store from a backup."
            )
        if not explicit_key and key_file.exists():
            raise AgentConfigError(
                f"{path} is a version-{label} store, which has no key, but {key_file} exists: "
                "it may be a version-3 store relabelled as older to have changed episodes "
                "signed with its key. Nothing was changed. If this store is what it says, "
                "move that key file away (or name a key with `key=` / `--key`) and upgrade again."
            )
        rows: list[tuple[int, tuple[object, ...]]] = []
        damaged: list[DamagedEpisode] = []
        extra = ", columns_sha256" if label == "2" else ""
        for row in conn.execute(f"SELECT {_SUMMARY}, record{extra} FROM episodes ORDER BY id"):
            try:
                if label == "2" and columns_digest(row[1:17]) != row[18]:
                    raise DamagedEpisode(
                        path, row[0], str(row[1]), "its query columns fail their SHA-256"
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
        if present != list(range(1, len(rows) + 1)) and not accept_missing:
            have = set(present)
            missing = [i for i in range(1, max(present) + 1) if i not in have]
            shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
            raise DamagedStore(
                f"{path} was not upgraded: {len(missing)} episodes are missing (ids {shown}; "
                "their rows were deleted). Restore the store from a backup, or upgrade with "
                "`--accept-missing` to keep what is left (rows are renumbered 1, 2, 3, ...)."
            )
        made_key = not key_file.exists()
        secret = integrity.load_key(key_file, path, create=True)
        conn.execute("ALTER TABLE episodes ADD COLUMN mac TEXT NOT NULL DEFAULT ''")
        for new_id, (old_id, values) in enumerate(rows, start=1):
            conn.execute(
                "UPDATE episodes SET id = ?, mac = ? WHERE id = ?",
                (new_id, integrity.row_mac(secret, new_id, values), old_id),
            )
        if label == "2" and sqlite3.sqlite_version_info >= (3, 35, 0):
            conn.execute("ALTER TABLE episodes DROP COLUMN columns_sha256")
        conn.executemany(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
            [
                ("schema_version", str(SCHEMA_VERSION)),
                ("key_id", integrity.key_id(secret)),
                ("high_water", integrity.high_water_value(secret, len(rows))),
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
