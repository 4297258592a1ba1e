"""The episode store: one SQLite file (WAL), many writers, verified reads, Parquet in and out."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import numbers
import os
import sqlite3
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from rllm_agents.error import AgentConfigError
from rllm_agents.store import integrity, parquet
from rllm_agents.store.damage import (
    DamagedEpisode,
    DamagedMeta,
    DamagedStore,
    MissingEpisodes,
    check_wal,
    check_wal_kept,
    hold_index,
    release_index,
)
from rllm_agents.store.schema import (
    _CHECKED,
    _DUPLICATE,
    _INSERT,
    _SCHEMA,
    SCHEMA_VERSION,
    Put,
    StoredEpisode,
    _canonical,
    _default_model,
    _default_timings,
    _plain,
    check_catalog,
    package_versions,
)
from rllm_agents.trajectory import Trajectory, to_jsonable
from rllm_envs.core import CUSTOM_ID_PREFIX


def _decode_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


#: The ``meta`` keys of samples opened and not stored yet (:meth:`EpisodeStore.open_pending`).
PENDING_PREFIX = "pending:"
#: The ``meta`` keys of :meth:`EpisodeStore.pin`.
PIN_PREFIX = "pin:"
#: The ``meta`` key of the MAC'd count of pending samples opened (numbered 1, 2, 3, ...).
PENDING_COUNT = "pending_count"
_PENDING_LABEL = "pending-count"
#: The MAC'd count of pins written: a deleted pin is missing from it, not never written (s36
#: att36e: deleting a pin let the next writer pin its own value, "first writer wins" then).
PIN_COUNT = "pin_count"
_PIN_LABEL = "pin-count"
#: Every pending sample and their count, in one statement (one snapshot).
_PENDING_ROWS = (
    f"SELECT key, value FROM meta WHERE substr(key, 1, {len(PENDING_PREFIX)}) = "
    f"'{PENDING_PREFIX}' OR key = '{PENDING_COUNT}'"
)
#: ``pass_at_k`` filters on an episode's outcome, which a pending sample does not have yet. A
#: ``model`` filter keeps pending samples (a run's scored sessions share one model; a reader
#: filtering by model must not lose the samples a client left open: att29i, 0.33 -> 1.0).
_EPISODE_ONLY_FILTERS = ("min_reward", "max_reward", "correct")


#: Integers from 10**this up have more digits than a reader with Python's default
#: int-to-string limit parses (``ValueError``).
_DEFAULT_DIGITS = sys.int_info.default_max_str_digits
#: Python's default recursion limit, and the nesting a reader under it parses with room to
#: spare (``json.loads`` takes a level of it per level of nesting).
_DEFAULT_RECURSION = 1000
_MAX_DEPTH = 400


def _encoded(
    values: Callable[[], Sequence[Any]], trajectory: Trajectory
) -> tuple[list[str], bytes]:
    """The canonical JSON of each of ``values()``, readable by any process; the first's bytes.

    The first is the record, whose UTF-8 bytes' digest is the episode's hash.

    A writer that raised Python's int-to-string limit (``sys.set_int_max_str_digits``) or its
    recursion limit could store an integer or a nesting that every reader with the defaults
    fails to parse: an acknowledged episode that no one can read back. Both are refused here,
    before anything is written, as they are under the defaults (``json.dumps`` and
    ``dataclasses.asdict`` fail on them), and so is a lone surrogate (not UTF-8).
    """
    where = f"env {trajectory.env_id!r}, task {trajectory.task_id!r}"
    try:
        data = values()
        digits = sys.get_int_max_str_digits()
        if digits == 0 or digits > _DEFAULT_DIGITS or sys.getrecursionlimit() > _DEFAULT_RECURSION:
            _check_readable(data)
        texts = [_canonical(value) for value in data]
        record = texts[0].encode("utf-8")
        for text in texts[1:]:
            text.encode("utf-8")
        return texts, record
    except RecursionError as e:
        raise AgentConfigError(
            f"The episode is nested too deeply to store ({where}): a process with Python's "
            f"default recursion limit could not read it back (at most {_MAX_DEPTH} levels). "
            "Nothing was written."
        ) from e
    except UnicodeEncodeError as e:
        raise AgentConfigError(
            f"The episode holds text that is not UTF-8 ({where}: {e.reason} at {e.start} of "
            f"{e.object[max(0, e.start - 20) : e.start]!r}...), e.g. a lone surrogate from "
            "decoding bytes with 'surrogateescape'. Nothing was written."
        ) from e
    except ValueError as e:
        raise AgentConfigError(
            f"The episode holds an integer too long to store ({e}; {where}): a process with "
            f"Python's default int-to-string limit ({_DEFAULT_DIGITS} digits) could not read "
            "it back. Store it as a string. Nothing was written."
        ) from e


def _colliding_keys(values: Any) -> list[Any]:
    """The first mapping's keys in ``values`` that are one key as strings (``[]`` if none)."""
    todo = [values]
    while todo:
        value = todo.pop()
        if isinstance(value, Mapping):
            seen: dict[str, Any] = {}
            for key in value:
                text = str(key)
                if text in seen:
                    return [seen[text], key]
                seen[text] = key
            todo.extend(value.values())
        elif isinstance(value, (list, tuple)):
            todo.extend(value)
    return []


def _is_bool(value: Any) -> bool:
    """A bool, a NumPy bool or an integer 0 or 1."""
    if isinstance(value, numbers.Integral):
        return int(value) in (0, 1)
    item = getattr(value, "item", None)  # a NumPy bool is not Integral
    return getattr(value, "shape", None) == () and callable(item) and isinstance(item(), bool)


def _check_readable(values: Any) -> None:
    """Raise for a value in ``values`` (JSON data) a reader with Python's defaults cannot parse.

    ``ValueError`` for an int past the default digit limit, ``RecursionError`` for nesting
    deeper than :data:`_MAX_DEPTH`.
    """
    too_long = 10**_DEFAULT_DIGITS
    todo = [(values, 0)]
    while todo:
        value, depth = todo.pop()
        if isinstance(value, int):
            if abs(value) >= too_long:
                raise ValueError(f"an integer of {len(str(abs(value)))} digits")
        elif isinstance(value, (Mapping, list, tuple)):
            if depth >= _MAX_DEPTH:
                raise RecursionError(f"nested deeper than {_MAX_DEPTH} levels")
            items = value.values() if isinstance(value, Mapping) else value
            todo.extend((item, depth + 1) for item in items)


def _token_ids(ids: Any) -> bool:
    """Whether ``ids`` is a list (or tuple) of Python ints in [0, 2**31) (the int32 view).

    Python's own ints only: a numpy scalar is not JSON (``.tolist()`` makes them ints).
    """
    if type(ids) not in (list, tuple) or not set(map(type, ids)) <= {int}:
        return False
    return not ids or (0 <= min(ids) and max(ids) < 2**31)


def _first_bad_id(ids: Any) -> Any:
    if type(ids) not in (list, tuple):
        return ids
    return next((i for i in ids if type(i) is not int or not 0 <= i < 2**31), None)


def _is_number(value: Any) -> bool:
    """A float (numpy's float64 is one), or a Python int a float holds (a reward, a logprob)."""
    if isinstance(value, float):
        return True
    if type(value) is not int:
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _logprobs(values: Any) -> bool:
    """Whether ``values`` is a list (or tuple) of Python numbers a float holds."""
    if type(values) not in (list, tuple):
        return False
    return set(map(type, values)) <= {float} or all(map(_is_number, values))


def _kinds(values: Any) -> str:
    if type(values) not in (list, tuple):
        return type(values).__name__
    return ", ".join(sorted({type(v).__name__ for v in values}))


def _check_filter(name: str, value: Any, kinds: tuple[type, ...]) -> None:
    if value is not None and not isinstance(value, kinds):
        names = " or ".join(k.__name__ for k in kinds)
        raise AgentConfigError(f"Expects `{name}` to be {names} or None, actual: {value!r}.")
    if isinstance(value, float) and math.isnan(value):  # SQLite binds NaN as NULL: no match
        raise AgentConfigError(f"Expects `{name}` to be a number, actual: nan (att40p F5).")


class EpisodeStore:
    """Trajectories in one SQLite file (see :mod:`rllm_agents.store`).

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
        key: The file holding the store's secret key (see :mod:`rllm_agents.store.integrity`),
            made with mode 0600 with a new store; default ``$RLLM_STORE_KEY``, else the
            database path plus ``.key``.

    Raises:
        AgentConfigError: For a bad argument, a missing file with ``read_only``, a store
            of another schema version, or a missing or wrong key.
        DamagedStore: For a file that is not an episode store, a schema that is not exactly
            the store's own, or a write-ahead log cut or damaged (see
            :func:`~rllm_agents.store.damage.check_wal_kept`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        timeout: float = 60.0,
        durable: bool = False,
        read_only: bool = False,
        initialize: bool = False,
        key: str | os.PathLike[str] | None = None,
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
        self.key_path = integrity.key_path(self.path, key)
        self._raw_key = b""  # the key file's key
        self._key = b""  # this store's MAC key (integrity.store_key)
        if read_only and not self.path.is_file():
            raise AgentConfigError(f"No episode store at {self.path} (opened read-only).")
        self._immutable = False
        if not self.read_only:
            if not self.path.exists():
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._raw_key = integrity.load_key(self.key_path, self.path, create=True)
                self._create()
            elif not (os.access(self.path, os.W_OK) and os.access(self.path.parent, os.W_OK)):
                # SQLite needs to write the file and create its -wal/-shm next to it.
                self.read_only = True
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        hold_index(self.path)  # released by close(), after this store's connections
        self._holds_index = True
        try:
            self._wal_before = None
            if self.path.is_file() and self.path.stat().st_size > 0:
                self._wal_before = check_wal(self.path)
            self._open()
        except BaseException:
            self.close()
            raise

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
                self._write_schema(conn, self._raw_key)
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
    def _write_schema(conn: sqlite3.Connection, key: bytes) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            store_id = integrity.new_store_id()
            conn.executemany(
                "INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)",
                [
                    ("schema_version", str(SCHEMA_VERSION)),
                    ("key_id", integrity.key_id(key)),
                    ("store_id", store_id),
                    (
                        "high_water",
                        integrity.high_water_value(integrity.store_key(key, store_id), 0),
                    ),
                    (
                        PENDING_COUNT,
                        integrity.high_water_value(
                            integrity.store_key(key, store_id), 0, _PENDING_LABEL
                        ),
                    ),
                    (
                        PIN_COUNT,
                        integrity.high_water_value(
                            integrity.store_key(key, store_id), 0, _PIN_LABEL
                        ),
                    ),
                ],
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
            check_wal_kept(self.path, self._wal_before)
        except sqlite3.OperationalError as e:
            if not self.read_only or self._immutable or Path(f"{self.path}-wal").exists():
                raise DamagedStore(f"Cannot read {self.path} as an episode store: {e}") from e
            # A read-only folder where SQLite cannot create the -shm index, and no log
            # holding commits: the main file is the whole store, and nothing can write it.
            self._close_connections()
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
            self._raw_key = integrity.load_key(self.key_path, self.path, create=True)
            self._init_schema(conn)
        self._check_version(conn)
        self._schema_seen = -1
        self._check_catalog(conn)
        if not self._raw_key:
            self._raw_key = integrity.load_key(self.key_path, self.path, create=False)
        meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('key_id', 'store_id')"))
        if meta.get("key_id") != integrity.key_id(self._raw_key):
            raise AgentConfigError(
                f"{self.key_path} is not the key of the episode store {self.path} (the store "
                f"records key id {meta.get('key_id')!r}, this key's is "
                f"{integrity.key_id(self._raw_key)!r}). Give the store's own key with `key=` "
                f"(CLI `--key`, or ${integrity.KEY_ENV})."
            )
        store_id = meta.get("store_id")
        if not integrity.valid_store_id(store_id):
            raise DamagedStore(
                f"{self.path} has no valid store identity (its `meta` row `store_id` is "
                f"{str(store_id)[:40]!r}, not 32 hex digits: deleted or changed): every MAC "
                "is bound to it, so no episode can be checked. Restore the store from a backup."
            )
        assert isinstance(store_id, str)
        self._key = integrity.store_key(self._raw_key, store_id)
        self._mark = integrity.mark_path(self.key_path, store_id)
        self._pending_mark = integrity.pending_mark_path(self.key_path, store_id)
        kept = self._mark_kept()
        if not self.read_only and kept and not os.access(self._mark.parent, os.W_OK):
            raise AgentConfigError(
                f"{self._mark} keeps the count of episodes written to {self.path} beside its "
                "key, and every writer updates it, but its folder is not writable here. Open "
                "the store with `read_only=True`, or from a user who may write that folder."
            )
        self._store_id = store_id
        self._home = integrity.home_path(self.key_path, self.path)
        integrity.check_home(
            self._raw_key, self.path, self._home, store_id, write=kept and not self.read_only
        )

    def _check_catalog(self, conn: sqlite3.Connection) -> None:
        """Check the schema objects again if they changed since they were last checked."""
        version = conn.execute("PRAGMA schema_version").fetchone()[0]
        if version != self._schema_seen:
            check_catalog(conn, self.path)
            self._schema_seen = version

    def _init_schema(self, conn: sqlite3.Connection) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                # Switching to WAL needs a moment alone with the file.
                conn.execute("PRAGMA journal_mode = WAL")
                self._write_schema(conn, self._raw_key)
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
        if row is not None and row[0] in ("1", "2"):
            raise AgentConfigError(
                f"{self.path} is an episode store of schema version {row[0]}, whose episodes "
                "carry no keyed MAC and no record of how many were written (deleted rows go "
                f"unnoticed); this version of rllm_agents reads version {SCHEMA_VERSION}. If "
                "this store was ever version 3 or newer (it had a key), it was relabelled: "
                "restore it from a backup. Only if it has always been unkeyed, upgrade it in "
                f"place with `python -m rllm_agents.store {self.path} upgrade --unkeyed` (it "
                "first checks every episode against its digests and refuses if any is "
                "damaged or missing, then makes a new key for the store); on a read-only "
                "mount, copy the file (with any -wal) somewhere writable first."
            )
        if row is not None and row[0] == "3":
            raise AgentConfigError(
                f"{self.path} is an episode store of schema version 3, whose MACs are not "
                "bound to the store (stores sharing a key accept each other's rows) and which "
                f"stores an episode once across runs; this version reads version "
                f"{SCHEMA_VERSION}. Upgrade it in place with `python -m rllm_agents.store "
                f"{self.path} [--key KEY] upgrade` (it first checks every episode and the "
                "count under the store's key and refuses if anything fails). If this store "
                "was ever version 4, this is an earlier copy of it put back: restore the "
                "newest copy from a backup instead."
            )
        if row is not None and row[0] == "4":
            raise AgentConfigError(
                f"{self.path} is an episode store of schema version 4, whose pending samples "
                "and pins (`meta` rows `pending:*`, `pin:*`) carry no MAC: deleting the open "
                "samples raised pass@k, and a planted pin named a run's owner. This version "
                f"reads version {SCHEMA_VERSION}. Upgrade it in place with `python -m "
                f"rllm_agents.store {self.path} [--key KEY] upgrade` (it first checks every "
                "episode and the count under the store's key, then MACs those rows). If this "
                f"store was ever version {SCHEMA_VERSION}, this is an earlier copy of it put "
                "back: restore the newest copy from a backup instead."
            )
        if row is not None and not (isinstance(row[0], str) and row[0].isdecimal()):
            raise DamagedStore(
                f"{self.path} records episode-store schema version {str(row[0])[:40]!r}, which "
                "is not a version number: its `meta` row `schema_version` was changed. Restore "
                "the store from a backup."
            )
        if row is None or row[0] != str(SCHEMA_VERSION):
            raise AgentConfigError(
                f"{self.path} has episode-store schema version {row and row[0]}; this version "
                f"of rllm_agents reads version {SCHEMA_VERSION}. Export it with the version "
                "that wrote it (`python -m rllm_agents.store DB export`) and import the Parquet."
            )

    def close(self) -> None:
        """Close every connection this store opened in this process."""
        if os.getpid() != self._pid:
            return
        self._close_connections()
        if self._holds_index:
            self._holds_index = False
            release_index(self.path)

    def _close_connections(self) -> None:
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
            "key": self.key_path,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["path"],
            timeout=state["timeout"],
            durable=state["durable"],
            read_only=state["read_only"],
            key=state.get("key"),
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
        try:
            total_reward = float(trajectory.total_reward)
        except (OverflowError, TypeError, ValueError) as e:  # an int past float's range
            shown = [str(step.reward)[:40] for step in trajectory.steps]
            raise AgentConfigError(
                f"Expects step rewards that sum to a float, actual: {type(e).__name__} ({e}; "
                f"step rewards {shown}, env {trajectory.env_id}, task {trajectory.task_id}). "
                "Nothing was written."
            ) from e
        if math.isnan(total_reward):
            # SQLite stores NaN as NULL: the row would be refused (or, before, skipped).
            rewards = [step.reward for step in trajectory.steps]
            raise AgentConfigError(
                f"Expects an episode with a total reward that is a number, actual: NaN (step "
                f"rewards {rewards}, env {trajectory.env_id}, task {trajectory.task_id}). "
                "SQLite cannot store NaN in the reward column; fix the reward function, or "
                "replace the NaN step reward before storing. Nothing was written."
            )
        # Each value in the type of its column: SQLite would convert another (2.0 or "12" in
        # an INTEGER column, 5 in a TEXT one), and the MAC written over the value given would
        # then fail on read: an acknowledged episode that reads as damaged.
        for name, text in (
            ("env_id", trajectory.env_id),
            ("finish", trajectory.finish),
            ("run", run),
            ("model", model),
        ):
            if not isinstance(text, str) and not (
                text is None and name not in ("env_id", "finish")
            ):
                raise AgentConfigError(
                    f"Expects the episode's {name} to be a string, actual: {text!r} "
                    f"({type(text).__name__}; env {trajectory.env_id!r}, task "
                    f"{trajectory.task_id!r}). Nothing was written."
                )
        for name, number in (
            ("seed", trajectory.seed),
            ("group", trajectory.group),
            ("sample", trajectory.sample),
            ("num_turns", trajectory.num_turns),
        ):
            if not isinstance(number, numbers.Integral) and not (number is None and name == "seed"):
                raise AgentConfigError(
                    f"Expects the trajectory's {name} to be an integer"
                    + (" or None" if name == "seed" else "")
                    + f", actual: {number!r} ({type(number).__name__}; env "
                    f"{trajectory.env_id!r}, task {trajectory.task_id!r}). Nothing was written."
                )
            if isinstance(number, numbers.Integral) and not -(2**63) <= number < 2**63:
                raise AgentConfigError(
                    f"Expects the trajectory's {name} to fit in a signed 64-bit integer (what "
                    f"SQLite stores), actual: {number} (env {trajectory.env_id}, task "
                    f"{trajectory.task_id}). Reduce it first (e.g. `seed % 2**63`). Nothing "
                    "was written."
                )
        if not isinstance(trajectory.token_exact, bool):
            raise AgentConfigError(
                f"Expects the trajectory's token_exact to be a bool, actual: "
                f"{trajectory.token_exact!r} (env {trajectory.env_id!r}, task "
                f"{trajectory.task_id!r}). Nothing was written."
            )
        for step in trajectory.steps:
            # What the Parquet training view holds (int32 ids, float32 logprobs aligned with
            # the completion): a value past it was stored and verified, and then broke every
            # export that held it, or was cut silently (7.9 -> 7) (s40 att40h F1, att40j F2-F4).
            for ids in (step.prompt_ids, step.completion_ids):
                if not _token_ids(ids):
                    raise AgentConfigError(
                        f"Expects token ids to be Python ints in [0, 2**31) (vocabulary "
                        f"indices; `.tolist()` makes numpy's ints), "
                        f"actual: {_first_bad_id(ids)!r} (env {trajectory.env_id!r}, task "
                        f"{trajectory.task_id!r}). Nothing was written."
                    )
            if not _is_number(step.reward):  # exported one float per step (att40m F1)
                raise AgentConfigError(
                    f"Expects each step's reward to be a Python float (or an int a float holds), "
                    f"actual: {type(step.reward).__name__} (env {trajectory.env_id!r}, task "
                    f"{trajectory.task_id!r}). Nothing was written."
                )
            logprobs = step.logprobs
            if not _logprobs(logprobs) or len(logprobs) not in (0, len(step.completion_ids)):
                raise AgentConfigError(
                    "Expects a step's logprobs to be a list of floats, one per completion id "
                    f"(or none), actual: {len(logprobs)} values ({_kinds(logprobs)}) for "
                    f"{len(step.completion_ids)} ids (env {trajectory.env_id!r}, task "
                    f"{trajectory.task_id!r}). Nothing was written."
                )
        collided = _colliding_keys(
            (
                trajectory.initial_info,
                [step.info for step in trajectory.steps],
                trajectory.metadata,
                env_kwargs,
                versions,
                timings,
            )
        )
        if collided:
            # Stored as JSON, keys are strings: {1: a, "1": b} kept one of the two values.
            raise AgentConfigError(
                f"Expects the keys of each of the episode's info, metadata, env_kwargs, versions "
                f"and timings objects to stay "
                f"distinct as strings, actual: {collided!r} (env {trajectory.env_id!r}, task "
                f"{trajectory.task_id!r}): JSON keeps one of their values. Nothing was written."
            )
        info = trajectory.steps[-1].info if trajectory.steps else trajectory.initial_info
        verdict = info.get("is_correct")
        if not (verdict is None or _is_bool(verdict)):
            # bool("false") is True: a string or any other value would be stored as correct.
            raise AgentConfigError(
                f"Expects the episode's info['is_correct'] to be a bool (or absent), actual: "
                f"{str(verdict)[:80]!r} ({type(verdict).__name__}; env {trajectory.env_id!r}, "
                f"task {trajectory.task_id!r}). Nothing was written."
            )
        if any(
            value is not None and type(value) is not int  # numpy's, bool: stored as ints
            for value in (trajectory.seed, trajectory.group, trajectory.sample)
        ):
            trajectory = dataclasses.replace(
                trajectory,
                seed=None if trajectory.seed is None else int(trajectory.seed),
                group=int(trajectory.group),
                sample=int(trajectory.sample),
            )
        if created is not None and not (
            isinstance(created, (int, float))
            and not isinstance(created, bool)  # s42 att42i F2: True was stored as 1.0
            and math.isfinite(created)
        ):
            raise AgentConfigError(
                f"Expects `created` (the Unix time an episode was stored) to be a finite "
                f"number, actual: {created!r} (env {trajectory.env_id}, task "
                f"{trajectory.task_id}). Fix that value in the file; nothing was written."
            )
        if env_kwargs is None:
            meta_kwargs = trajectory.metadata.get("env_kwargs")
            env_kwargs = meta_kwargs if isinstance(meta_kwargs, Mapping) else {}
        kwargs = env_kwargs
        texts, record_bytes = _encoded(
            lambda: (
                trajectory.to_dict(),
                to_jsonable(dict(kwargs)),
                to_jsonable(dict(versions if versions is not None else package_versions())),
                to_jsonable(dict(timings if timings is not None else _default_timings(trajectory))),
            ),
            trajectory,
        )
        record, kwargs_text, versions_text, timings_text = texts
        given = integrity.record_columns(trajectory)
        if given != (read := integrity.record_columns(Trajectory.from_dict(json.loads(record)))):
            # Computed from the caller's objects, the columns must be what the record gives
            # back, or the acknowledged episode reads as damaged and blocks every export and
            # verify of the store (s41 att41b F2: a key whose str() is "is_correct", a float
            # subclass summing to another total).
            name, was, back = next(
                (n, a, b)
                for n, a, b in zip(integrity.RECORD_COLUMNS, given, read, strict=True)
                if a != b
            )
            raise AgentConfigError(
                f"The episode does not read back as given: its {name} is {was!r}, and "
                f"{back!r} as stored (env {trajectory.env_id!r}, task {trajectory.task_id!r}); "
                "store plain values (str keys, floats, ints). Nothing was written."
            )
        digest = integrity.sha256_hex(record_bytes)
        env_id, *queried = read  # what verify() computes from the record, as it reads it
        columns = (
            digest,
            run,
            env_id,
            kwargs_text,
            model if model is not None else _default_model(trajectory),
            *queried,
            versions_text,
            timings_text,
            time.time() if created is None else float(created),
        )
        return (*(_plain(value) for value in columns), record)

    def _write(self, rows: Sequence[tuple[Any, ...]], pending: str | None = None) -> list[Put]:
        if self.read_only:
            raise AgentConfigError(
                f"The episode store {self.path} was opened read-only (asked for, or its file or "
                "folder is not writable): nothing can be stored in it."
            )
        conn = self._conn
        out: list[Put] = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            written = start = self._high_water()
            for row in rows:
                # The same trajectory, run, model and env kwargs: a retried write, a
                # re-imported file. Other kwargs are another episode (s41 att41n: a second
                # put under other kwargs was acknowledged as the first, its kwargs lost).
                same = (row[0], row[1], row[4], row[3])
                found = conn.execute(_DUPLICATE, same).fetchone()
                if found is not None and tuple(found[1:]) == same:
                    out.append(Put(found[0], row[0], False))
                    continue
                row_id = written + 1
                try:
                    inserted = conn.execute(
                        _INSERT, (row_id, *row, integrity.row_mac(self._key, row_id, row[:16]))
                    ).rowcount
                except sqlite3.IntegrityError as e:
                    if "episodes.id" not in str(e):
                        raise
                    raise DamagedStore(
                        f"{self.path} has a row with id {row_id} past the {written} episodes it "
                        "records as written, so nothing can be stored: either that record was "
                        "set back (to an old value) or the row was added without the store's "
                        f"key. Run `python -m rllm_agents.store {self.path} verify`: if it "
                        "reports episodes past the record whose MACs hold, `python -m "
                        f"rllm_agents.store {self.path} repair-mark` raises the record over "
                        "them; otherwise restore the store from a backup."
                    ) from e
                if inserted != 1:
                    raise self._ignored(f"the insert of episode {row_id}")
                written = row_id
                out.append(Put(row_id, row[0], True))
            if written != start:
                updated = conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'high_water'",
                    (integrity.high_water_value(self._key, written),),
                ).rowcount
                if updated != 1:
                    raise self._ignored("the update of the count of episodes written")
            if pending is not None:
                self._settle(conn, pending, "settled")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if written != start and self._mark_kept():
            integrity.raise_mark(self._key, self.path, self._mark, written)
        return out

    def _ignored(self, what: str) -> DamagedStore:
        return DamagedStore(
            f"{self.path}: SQLite skipped {what} without an error (a trigger or another "
            "object planted in the file); nothing was written. Run `python -m "
            f"rllm_agents.store {self.path} verify` and restore the store from a backup."
        )

    def put(
        self,
        trajectory: Trajectory,
        *,
        run: str | None = None,
        model: str | None = None,
        env_kwargs: Mapping[str, Any] | None = None,
        versions: Mapping[str, Any] | None = None,
        timings: Mapping[str, Any] | None = None,
        pending: str | None = None,
    ) -> Put:
        """Store one trajectory in its own transaction (a duplicate is not stored again).

        A duplicate is the same trajectory, run, model and env kwargs (a retried write, a
        re-imported file): its ``versions`` and ``timings`` stay those of the first put.

        Args:
            trajectory: The episode.
            run: Run name (a leaderboard run, a training job and iteration, ...).
            model: Model name; defaults to ``metadata["model"]`` (else ``metadata["policy"]``).
            env_kwargs: The env's constructor kwargs; defaults to ``metadata["env_kwargs"]``.
            versions: Package versions; defaults to those of this process.
            timings: Seconds spent (generation, env steps, ...); defaults to
                ``metadata["timings"]`` or the ``metadata`` keys ending in ``_s``.
            pending: The key of an :meth:`open_pending` sample this episode settles,
                marked settled in the same transaction.

        Returns:
            The row id, the content hash and whether it was new.
        """
        row = self._row(trajectory, run, model, env_kwargs, versions, timings)
        return self._write([row], pending=pending)[0]

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
        """The episode of a ``_CHECKED`` row, after its checks (and its record's, if given)."""
        trajectory = None if record is None else integrity.verified(self.path, row, record)
        self._check_columns(row)
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

    def _check_columns(self, row: Sequence[Any]) -> None:
        integrity.check_row(self._key, self.path, row)

    def _high_water(self) -> int:
        """How many episodes the store records as written (checked against its MAC)."""
        kept = self._kept()  # before the store's own: writers update it after they commit
        self._check_catalog(self._conn)
        row = self._conn.execute("SELECT value FROM meta WHERE key = 'high_water'").fetchone()
        return self._parse_mark(row and row[0], kept)

    def _kept(self) -> int | None:
        return integrity.read_mark(self._key, self.path, self._mark)

    def _mark_kept(self) -> bool:
        return os.path.exists(f"{self._mark}.lock")

    def _parse_mark(self, value: str | None, kept: int | None) -> int:
        written = integrity.parse_high_water(self._key, self.path, value)
        if kept is not None and written < kept and self._fresh_count() < kept:
            # Only the newest snapshot tells: a statement this connection still has open (a
            # read nested in a loop over summaries()) keeps reading an older one.
            raise DamagedStore(
                f"{self.path} records {written} episodes written, but {self._mark}, kept beside "
                f"its key, records {kept}: the store was rolled back (its newest episodes "
                "deleted and an earlier count put back, or an earlier copy of it restored). "
                "Restore the newest copy from a backup; if this earlier copy was restored on "
                f"purpose, delete {self._mark} (writers keep it again from their next write)."
            )
        return written

    def _fresh_count(self) -> int:
        """The count of episodes written in the newest snapshot, from a connection of its own."""
        conn = self._connect()
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = 'high_water'").fetchone()
        finally:
            conn.close()
        return integrity.parse_high_water(self._key, self.path, row and row[0])

    def keep_mark(self) -> int:
        """Keep a copy of the count of episodes written beside the key; return the count.

        From then on every writer that opens the store with this key raises the copy after
        each commit, and every read checks that the store's own count is not below it: a
        store rolled back (its newest episodes deleted and an earlier count put back) is
        reported. The count of pending samples opened is kept the same way
        (``KEY.<store_id>.pending.mark``, raised by :meth:`open_pending`). It holds against
        whoever cannot write the key's folder; kept next to the database (the default
        ``DB.key``) it catches accidents only. Writers rewrite it in
        place under a ``flock`` (microseconds a commit). With ``durable=False`` a power loss
        (not a crash) can lose the last commits while the kept count survives: the store is
        then reported as rolled back. Deleting ``KEY.<store_id>.mark.lock`` turns it off.
        It also records which store lives at this path (``KEY.<path digest>.home``,
        :func:`~rllm_agents.store.integrity.check_home`), checked by every open: another
        store's whole file put in its place (one sharing its key file), or a new store made
        after the file was deleted, is refused.
        """
        if self.read_only:
            raise AgentConfigError(f"The episode store {self.path} was opened read-only.")
        written = self._high_water()
        integrity.raise_mark(self._key, self.path, self._mark, written)
        row = self._conn.execute(
            "SELECT value FROM meta WHERE key = ?", (PENDING_COUNT,)
        ).fetchone()
        opened = self._pending_count(row and row[0], self._kept_pending())
        integrity.raise_mark(self._key, self.path, self._pending_mark, opened, _PENDING_LABEL)
        integrity.check_home(self._raw_key, self.path, self._home, self._store_id, write=True)
        return written

    def written(self) -> int:
        """How many episodes the store records as written (ids 1 to this; nothing is deleted).

        Raises:
            DamagedStore: If that record was changed without the store's key.
        """
        return self._high_water()

    def _checked_rows(self, filters: dict[str, Any]) -> Iterator[tuple[Sequence[Any], bool]]:
        """Every row in id order, column-checked, with whether it matches ``filters``.

        Every row is read, not only the matching ones: a damaged column could otherwise drop
        its episode from a filtered count or pass@k without a word, and a deleted row is seen
        as a missing id (:class:`MissingEpisodes`).
        """
        where, params = self._where(**filters)
        hit = where.removeprefix(" WHERE ") or "1"
        sequence = integrity.Sequence1(self.path, self._conn, self._high_water())
        sql = f"SELECT {_CHECKED}, ({hit}) FROM episodes ORDER BY id"
        for row in self._conn.execute(sql, params):
            self._check_columns(row)
            sequence.see(row[0])
            yield row, bool(row[18])
        sequence.end()

    @contextlib.contextmanager
    def _write_transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``): committed after the block, or rolled back."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Reads inside see one state of the store (a read transaction, unless one is open)."""
        conn = self._conn
        own = not conn.in_transaction
        if own:
            conn.execute("BEGIN")
        try:
            yield
        finally:
            if own and conn.in_transaction:
                conn.execute("COMMIT")

    def verify(self) -> list[DamagedEpisode | DamagedMeta]:
        """Check every episode against its MAC and hash; return the damaged and missing ones.

        A deleted episode is returned as a :class:`DamagedEpisode` with its id, an empty hash
        and the reason "missing"; an empty list means every episode written is there, intact.
        After the episodes come the damaged pending samples and pins (``meta`` rows), as
        :class:`DamagedMeta`: a row that fails its MAC, pending samples missing below their
        count (deleted rows), or a count of them that fails its MAC or was set back.

        Raises:
            DamagedStore: If the record of how many episodes were written was changed, or
                the file fails SQLite's integrity check (a damaged index, say).
        """
        conn = self._conn
        # The record and the rows from one snapshot: a row past it is not a new one.
        with self._snapshot():
            self._schema_seen = -1  # the schema objects are checked in full
            written = self._high_water()
            # Indexes are not in any episode's MAC: SQLite checks them against the rows
            # (att35h: a damaged hash index hid an intact episode from lookups and `put`).
            problems = [row[0] for row in conn.execute("PRAGMA integrity_check(20)")]
            if problems != ["ok"]:
                raise DamagedStore(
                    f"{self.path} fails SQLite's integrity check ({'; '.join(problems[:5])}). "
                    "Where only indexes are named, `REINDEX` rebuilds them from the rows; "
                    "otherwise restore the store from a backup."
                )
            damaged = []
            expected = 1
            for row in conn.execute(f"SELECT {_CHECKED}, record FROM episodes ORDER BY id"):
                # Missing: ids up to the mark only (a row id set far past it lists no more).
                damaged += [
                    _missing(self.path, i) for i in range(expected, min(row[0], written + 1))
                ]
                expected = max(expected, row[0] + 1)
                try:
                    self._episode(row, row[18])
                except DamagedEpisode as e:
                    damaged.append(e)
                    continue
                if row[0] > written:
                    damaged.append(_past_mark(self.path, row, written))
            damaged += [_missing(self.path, i) for i in range(expected, written + 1)]
            found: list[DamagedEpisode | DamagedMeta] = list(damaged)
            found += self._pending_rows()[1]
            found += self._pin_problems()
        return found

    def last_mac(self) -> str:
        """The MAC of the newest episode ("" if none).

        With :meth:`written`, what to keep elsewhere to tell this store from an earlier state
        of it (rollback, see :mod:`rllm_agents.store.integrity`).
        """
        row = self._conn.execute("SELECT mac FROM episodes ORDER BY id DESC LIMIT 1").fetchone()
        return "" if row is None else str(row[0])

    def repair_mark(self) -> tuple[int, int]:
        """Raise the record of episodes written over the rows past it; return (old, new).

        Only for a record set back to an earlier value (``verify`` reports episodes "past the
        record"): every row past it must carry a valid MAC of its own id under this store's
        key -- rows only this store's writers can have made -- and the ids must follow on
        without a gap. Nothing unsigned is admitted, so this cannot launder a forged row;
        rows deleted before the record was set back stay undetected (rollback).

        Raises:
            DamagedEpisode: For a row past the record whose MAC fails (nothing is changed).
            DamagedStore: For a gap in the ids past the record (nothing is changed).
        """
        if self.read_only:
            raise AgentConfigError(f"The episode store {self.path} was opened read-only.")
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            written = new = self._high_water()
            for row in conn.execute(
                f"SELECT {_CHECKED} FROM episodes WHERE id > ? ORDER BY id", (written,)
            ):
                if row[0] != new + 1:
                    raise DamagedStore(
                        f"{self.path}: episodes {new + 1} to {row[0] - 1} are missing past the "
                        f"record of {written} episodes written; nothing was changed. Restore "
                        "the store from a backup."
                    )
                self._check_columns(row)
                new = row[0]
            if new != written:
                conn.execute(
                    "UPDATE meta SET value = ? WHERE key = 'high_water'",
                    (integrity.high_water_value(self._key, new),),
                )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        if new != written and self._mark_kept():
            integrity.raise_mark(self._key, self.path, self._mark, new)
        return written, new

    def _select(
        self, with_record: bool, limit: int | None, offset: int, filters: dict[str, Any]
    ) -> Iterator[StoredEpisode]:
        where, params = self._where(**filters)
        written = self._high_water()
        if not where:  # the rows skipped by the offset do not decide what is returned
            sequence = integrity.Sequence1(
                self.path, self._conn, written, start=max(int(offset), 0) + 1
            )
            sql = f"SELECT {_CHECKED}{', record' if with_record else ''} FROM episodes ORDER BY id"
            if limit is not None:
                sql += " LIMIT ? OFFSET ?"
                params += [int(limit), int(offset)]
            elif offset:
                sql += " LIMIT -1 OFFSET ?"
                params.append(int(offset))
            returned = 0
            for row in self._conn.execute(sql, params):
                episode = self._episode(row, row[18] if with_record else None)
                sequence.see(row[0])
                yield episode
                returned += 1
            if limit is None or returned < limit:
                sequence.end()
            return
        if limit is not None and limit <= 0:
            return
        # Every row up to the last one returned is checked (a damaged column could move an
        # episode out of the filter); SQLite reads the record of matching rows only.
        hit = where.removeprefix(" WHERE ")
        extra = f", CASE WHEN {hit} THEN record END" if with_record else ""
        sql = f"SELECT {_CHECKED}, ({hit}){extra} FROM episodes ORDER BY id"
        skipped = returned = 0
        sequence = integrity.Sequence1(self.path, self._conn, written)
        for row in self._conn.execute(sql, params * (2 if with_record else 1)):
            self._check_columns(row)
            sequence.see(row[0])
            if not row[18]:
                continue
            if skipped < offset:
                skipped += 1
                continue
            yield self._episode(row, row[19] if with_record else None)
            returned += 1
            if limit is not None and returned >= limit:
                return
        sequence.end()

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
        """Like :meth:`episodes` without decoding the trajectories (``trajectory`` is None).

        Each row's columns are checked against the MAC written with them (a damaged one
        raises :class:`DamagedEpisode`); with filters, so is every row before the last one
        returned, whether it matches or not. A deleted row among those read raises
        :class:`MissingEpisodes`, and so does a deleted last row when the rows run out.
        """
        return self._select(False, limit, offset, filters)

    def trajectories(self, *, limit: int | None = None, **filters: Any) -> list[Trajectory]:
        """The trajectories of :meth:`episodes` with the same filters."""
        out = []
        for episode in self.episodes(limit=limit, **filters):
            assert episode.trajectory is not None
            out.append(episode.trajectory)
        return out

    def count(self, **filters: Any) -> int:
        """Number of stored episodes matching the filters of :meth:`episodes`.

        With filters, every row's columns are checked (:class:`DamagedEpisode`): a damaged
        column could move an episode in or out of the count. Without, no column is read, and
        the count is checked against the store's record of how many were written
        (:class:`MissingEpisodes` when rows were deleted).
        """
        if not filters:
            kept = self._kept()
            self._check_catalog(self._conn)
            # One statement: one snapshot of the rows and the record a writer updates with them.
            count, first, last, value = self._conn.execute(
                "SELECT COUNT(*), MIN(id), MAX(id), "
                "(SELECT value FROM meta WHERE key = 'high_water') FROM episodes"
            ).fetchone()
            written = self._parse_mark(value, kept)
            if count != written or (count and (first, last) != (1, written)):
                present = {
                    row[0]
                    for row in self._conn.execute(
                        "SELECT id FROM episodes WHERE id <= ?", (written,)
                    )
                }
                missing = [i for i in range(1, written + 1) if i not in present]
                if missing:
                    raise MissingEpisodes(self.path, missing, written)
                raise DamagedStore(
                    f"{self.path} holds {count} episodes where it records {written} as "
                    "written: the record was set back, or rows were added without the "
                    f"store's key. Run `python -m rllm_agents.store {self.path} verify`, and "
                    "`repair-mark` if it reports only episodes past the record whose MACs hold."
                )
            return int(count)
        return sum(hit for _, hit in self._checked_rows(filters))

    def __len__(self) -> int:
        return self.count()

    def get(self, key: int | str) -> StoredEpisode:
        """One episode by row id, content hash, or a unique hash prefix (6+ characters).

        Raises:
            KeyError: If no episode or more than one matches (the same trajectory under two
                runs has one hash: the message lists their ids).
            MissingEpisodes: For the id of an episode the store wrote whose row was deleted.
            DamagedEpisode: For a hash no intact row has where a damaged one is in the store
                (its hash may be the damaged column; a deleted one: MissingEpisodes); a hash
                that misses reads every row to tell.
        """
        self._check_catalog(self._conn)
        if isinstance(key, int) and not isinstance(key, bool):
            rows = self._conn.execute(
                f"SELECT {_CHECKED}, record FROM episodes WHERE id = ?", (key,)
            ).fetchall()
        elif isinstance(key, str) and len(key) >= 6 and all(c in "0123456789abcdef" for c in key):
            rows = self._conn.execute(
                f"SELECT {_CHECKED}, record FROM episodes WHERE hash >= ? AND hash < ? LIMIT 2",
                (key, key + "g"),
            ).fetchall()
            # The hash index answered: what it found is checked against the key here.
            rows = [row for row in rows if isinstance(row[1], str) and row[1].startswith(key)]
        else:
            raise KeyError(f"Expects a row id or a hex hash prefix of 6+ characters: {key!r}")
        if not rows and isinstance(key, int) and 1 <= key <= self._high_water():
            raise MissingEpisodes(self.path, [key], self._high_water())
        if len(rows) != 1:
            if not rows:
                # A damaged hash column (or a deleted row) would hide its episode from the
                # index: a hash that misses reads every row's MAC before it says "no
                # episode" (att35d: it said so).
                if isinstance(key, str):
                    for _ in self._checked_rows({}):
                        pass
                    # ... and so would a damaged index (att35h: one bit of it hid an intact
                    # episode, and `put` stored it again).
                    unlisted = self._conn.execute(
                        "SELECT id FROM episodes NOT INDEXED WHERE hash >= ? AND hash < ? LIMIT 1",
                        (key, key + "g"),
                    ).fetchone()
                    if unlisted is not None:
                        raise DamagedStore(
                            f"{self.path}'s index of hashes does not list episode "
                            f"{unlisted[0]} (hash {key!r}): the index is damaged, so lookups "
                            "by hash and `put`'s check for a stored trajectory are wrong. "
                            "SQLite's `REINDEX episodes` rebuilds it; `python -m "
                            f"rllm_agents.store {self.path} verify` checks every index."
                        )
                raise KeyError(f"No episode {key!r}")
            ids = [
                row[0]
                for row in self._conn.execute(
                    "SELECT id FROM episodes WHERE hash >= ? AND hash < ? ORDER BY id LIMIT 6",
                    (key, f"{key}g"),
                )
            ]
            same = len({row[1] for row in rows}) == 1
            raise KeyError(
                f"Hash {'' if same else 'prefix '}{key!r} is "
                + (
                    "stored more than once (under other runs, models or env kwargs)"
                    if same
                    else "ambiguous"
                )
                + f": give the row id, one of {', '.join(map(str, ids[:5]))}"
                + (" ..." if len(ids) > 5 else "")
            )
        return self._episode(rows[0], rows[0][18])

    def runs(self) -> dict[str | None, int]:
        """``{run: episode count}`` (``None`` first, then by name); every row is checked."""
        counts: dict[str | None, int] = {}
        for row, _ in self._checked_rows({}):
            counts[row[2]] = counts.get(row[2], 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (kv[0] is not None, kv[0] or "")))

    # ------------------------------------------------------------------- pending samples

    def open_pending(self, key: str, *, run: str | None, env_id: str, task_id: str) -> None:
        """Count a sample of ``task_id`` as a failure until an episode settles it.

        A writer that samples a task and stores the sample later (the gateway, at a
        session's end) marks it here first: :meth:`pass_at_k` counts every pending sample
        as failed, so samples still open (or lost in a crash) cannot be left out. Stored with
        ``put(..., pending=key)``, the episode settles it in one transaction.

        Each sample gets the next number of a MAC'd count (``meta`` row ``pending_count``)
        and its row a MAC of its key, fields, number and state; rows are never deleted
        (settling and :meth:`drop_pending` rewrite the state), so a deleted or changed one is
        reported by every reader. A key is used once: opening it again with the same fields
        while it is open does nothing, anything else raises.
        """
        for name, value in (("key", key), ("env_id", env_id), ("task_id", task_id)):
            if not isinstance(value, str) or not value:
                raise AgentConfigError(
                    f"Expects `{name}` to be a non-empty str, actual: {value!r}."
                )
        _check_filter("run", run, (str,))
        if self.read_only:
            raise AgentConfigError(f"The episode store {self.path} was opened read-only.")
        meta_key = PENDING_PREFIX + key
        kept = self._kept_pending()
        with self._write_transaction() as conn:
            rows = dict(
                conn.execute(
                    "SELECT key, value FROM meta WHERE key IN (?, ?)", (meta_key, PENDING_COUNT)
                )
            )
            count = self._pending_count(rows.get(PENDING_COUNT), kept)
            if meta_key in rows:
                found = self._pending_row(meta_key, rows[meta_key])
                if found[:3] == (run, env_id, task_id) and found[4] == "open":
                    return
                raise AgentConfigError(
                    f"The pending sample {key!r} was opened before ({found[4]}, task "
                    f"{found[2]!r}): each key names one sample; open another key."
                )
            seq = count + 1
            value = integrity.pending_value(self._key, meta_key, run, env_id, task_id, seq, "open")
            conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (meta_key, value))
            updated = conn.execute(
                "UPDATE meta SET value = ? WHERE key = ?",
                (integrity.high_water_value(self._key, seq, _PENDING_LABEL), PENDING_COUNT),
            ).rowcount
            if updated != 1:
                raise self._ignored("the update of the count of pending samples")
        if self._mark_kept():
            integrity.raise_mark(self._key, self.path, self._pending_mark, seq, _PENDING_LABEL)

    def drop_pending(self, key: str) -> None:
        """Forget the :meth:`open_pending` sample ``key`` that never sampled anything.

        For a writer whose sample did not happen (the gateway's session whose calls never
        reached an engine); a sample that happened is settled by storing its episode. The row
        stays, marked dropped (under a new MAC); a key never opened, or settled or dropped
        already, is left as it is.
        """
        if self.read_only:
            raise AgentConfigError(f"The episode store {self.path} was opened read-only.")
        with self._write_transaction() as conn:
            self._settle(conn, key, "dropped")

    def _settle(self, conn: sqlite3.Connection, key: str, state: str) -> None:
        """Mark the open pending sample ``key`` ``state`` (in the caller's transaction)."""
        meta_key = PENDING_PREFIX + key
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (meta_key,)).fetchone()
        if row is None:
            return  # never opened (or deleted: every reader reports its missing number)
        run, env_id, task_id, seq, now = self._pending_row(meta_key, row[0])
        if now != "open":
            return
        value = integrity.pending_value(self._key, meta_key, run, env_id, task_id, seq, state)
        updated = conn.execute(
            "UPDATE meta SET value = ? WHERE key = ?", (value, meta_key)
        ).rowcount
        if updated != 1:
            raise self._ignored(f"the update of the pending sample {key!r}")

    def _pending_row(self, meta_key: str, value: object) -> tuple[str | None, str, str, int, str]:
        found = integrity.parse_pending(self._key, meta_key, value)
        if found is None:
            raise DamagedMeta(self.path, meta_key, _PENDING_MAC_FAILS)
        return found

    def _kept_pending(self) -> int | None:
        return integrity.read_mark(self._key, self.path, self._pending_mark, _PENDING_LABEL)

    def _pending_count(self, value: object, kept: int | None) -> int:
        """The count of pending samples opened in ``value``; :class:`DamagedMeta` if damaged."""
        count = integrity.parse_count(self._key, _PENDING_LABEL, value)
        if count is None:
            raise DamagedMeta(
                self.path,
                PENDING_COUNT,
                "it is deleted, so pending samples may be missing"
                if value is None
                else "it fails its MAC, so pending samples may be missing",
            )
        if kept is not None and count < kept and self._fresh_pending_count() < kept:
            raise DamagedMeta(
                self.path,
                PENDING_COUNT,
                f"it records {count} pending samples opened, but {self._pending_mark}, kept "
                f"beside the key, records {kept}: the store was rolled back (its newest "
                "pending samples deleted and an earlier count put back). If an earlier copy "
                f"was restored on purpose, delete {self._pending_mark}",
            )
        return count

    def _fresh_pending_count(self) -> int:
        """The count of pending samples in the newest snapshot (see :meth:`_fresh_count`)."""
        conn = self._connect()
        try:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (PENDING_COUNT,)).fetchone()
        finally:
            conn.close()
        count = integrity.parse_count(self._key, _PENDING_LABEL, row and row[0])
        return -1 if count is None else count

    def _pending_rows(self) -> tuple[dict[str, tuple[str | None, str, str]], list[DamagedMeta]]:
        """The open pending samples, and every damaged, missing or extra pending row.

        Every row is read and checked, settled ones too: the numbers 1 to the count must each
        be there exactly once, under a valid MAC.
        """
        kept = self._kept_pending()  # before the store's own: writers raise it after commit
        self._check_catalog(self._conn)
        count_value: object = None
        by_seq: dict[int, list[str]] = {}
        opened: dict[str, tuple[str | None, str, str]] = {}
        problems: list[DamagedMeta] = []
        for meta_key, value in self._conn.execute(_PENDING_ROWS):
            if meta_key == PENDING_COUNT:
                count_value = value
                continue
            found = integrity.parse_pending(self._key, meta_key, value)
            if found is None:
                problems.append(DamagedMeta(self.path, meta_key, _PENDING_MAC_FAILS))
                continue
            run, env_id, task_id, seq, state = found
            by_seq.setdefault(seq, []).append(meta_key)
            if state == "open":
                opened[meta_key.removeprefix(PENDING_PREFIX)] = (run, env_id, task_id)
        try:
            count = self._pending_count(count_value, kept)
        except DamagedMeta as e:
            return opened, [*problems, e]
        missing = [i for i in range(1, count + 1) if i not in by_seq]
        if missing:
            shown = ", ".join(map(str, missing[:20])) + (" ..." if len(missing) > 20 else "")
            problems.append(
                DamagedMeta(
                    self.path,
                    PENDING_COUNT,
                    f"{len(missing)} of the {count} pending samples it records as opened are "
                    f"missing (numbers {shown}): their rows were deleted, and pass@k would "
                    "leave out the failures they count",
                )
            )
        for seq in sorted(by_seq):
            keys = by_seq[seq]
            if not 1 <= seq <= count:
                problems += [
                    DamagedMeta(
                        self.path,
                        meta_key,
                        f"its number {seq} is past the {count} pending samples the store "
                        "records as opened, although its MAC holds: that count was set back",
                    )
                    for meta_key in keys
                ]
            elif len(keys) > 1:
                problems.append(
                    DamagedMeta(
                        self.path,
                        keys[0],
                        f"{len(keys)} pending samples ({', '.join(map(repr, keys[:5]))}) carry "
                        f"the number {seq}: the count was set back while they were opened",
                    )
                )
        return opened, problems

    def _pin_problems(self, conn: sqlite3.Connection | None = None) -> list[DamagedMeta]:
        """Each pin whose MAC fails, and numbers that are not 1 to the MAC'd count.

        Pins are numbered as written: a pin deleted or the count set back leaves a number out
        (s36 att36g: with a count alone, a deleted pin and a garbage row, or the count set
        back, let the deleted pin's next writer pin its own value).
        """
        conn = conn or self._conn
        rows = conn.execute(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?) = ? OR key = ?",
            (len(PIN_PREFIX), PIN_PREFIX, PIN_COUNT),
        ).fetchall()
        problems, numbers = [], []
        count_value = None
        for meta_key, value in rows:
            if meta_key == PIN_COUNT:
                count_value = value
                continue
            parsed = integrity.parse_pin(self._key, meta_key, value)
            if parsed is None:
                problems.append(DamagedMeta(self.path, meta_key, _PIN_MAC_FAILS))
            else:
                numbers.append(parsed[1])
        count = integrity.parse_count(self._key, _PIN_LABEL, count_value)
        if count is None:
            why = "is missing" if count_value is None else "fails its MAC"
            problems.append(
                DamagedMeta(
                    self.path, PIN_COUNT, f"the count of pins written {why}: pins may be deleted"
                )
            )
        elif sorted(numbers) != list(range(1, count + 1)):
            missing = sorted(set(range(1, count + 1)) - set(numbers))
            problems.append(
                DamagedMeta(
                    self.path,
                    PIN_COUNT,
                    f"{count} pins were written and the numbers of the {len(numbers)} here are "
                    f"not 1 to {count} (missing: {missing[:5]}): pins were deleted or the count "
                    "set back (their next writer would have pinned its own value)",
                )
            )
        return problems

    def pending(self) -> dict[str, tuple[str | None, str, str]]:
        """``{key: (run, env_id, task_id)}`` of the samples opened and not settled yet.

        Raises:
            DamagedMeta: If a pending sample (open, settled or dropped) or their count was
                changed, planted or deleted without the store's key.
        """
        opened, problems = self._pending_rows()
        if problems:
            raise _first(problems)
        return opened

    def pin(self, key: str, value: str) -> str:
        """The value kept under ``key``: ``value`` if none is yet (first writer wins).

        For settings a writer fixes once and every later writer must share (the gateway's
        sampling of a run's scored sessions): kept in the store, so two writers of one store,
        or a store moved elsewhere, read the same. The value is kept with a MAC of the key
        and the value under the store's key.

        Raises:
            DamagedMeta: If the value kept under ``key`` fails its MAC (planted or changed
                without the store's key): it is never returned.
        """
        for name, text in (("key", key), ("value", value)):
            if not isinstance(text, str):
                raise AgentConfigError(f"Expects `{name}` to be a str, actual: {text!r}.")
        meta_key = PIN_PREFIX + key
        with self._write_transaction() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (meta_key,)).fetchone()
            if row is None:  # a new pin: only where every pin is there (their numbers say)
                problems = self._pin_problems(conn)
                if problems:
                    raise problems[0]
                (found,) = conn.execute(
                    "SELECT COUNT(*) FROM meta WHERE substr(key, 1, ?) = ?",
                    (len(PIN_PREFIX), PIN_PREFIX),
                ).fetchone()
                stored = integrity.pin_value(self._key, meta_key, value, found + 1)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [
                        (meta_key, stored),
                        (PIN_COUNT, integrity.high_water_value(self._key, found + 1, _PIN_LABEL)),
                    ],
                )
                row = (stored,)
        pinned = integrity.parse_pin(self._key, meta_key, row[0])
        if pinned is None:
            raise DamagedMeta(self.path, meta_key, _PIN_MAC_FAILS)
        return pinned[0]

    # ------------------------------------------------------------------------ pass@k

    def pass_at_k(
        self, ks: Sequence[int] = (1,), *, include_custom: bool = False, **filters: Any
    ) -> dict[str, dict[str, Any]]:
        """Unbiased pass@k per ``run`` and env from stored episodes.

        Samples of one task are the episodes with the same run, env and task id (the group
        index when the task id is missing); a sample is correct when ``is_correct``. Every
        task counts as sampled as often as the group's most-sampled task (and at least ``k``
        times): its missing samples are failures (``short@k`` says how many tasks were
        short). A writer that sees each grade could otherwise choose when to stop: leaving
        short tasks out paid stopping a task after its failures (pass@4 0.87 -> 1.0), and
        unequal counts paid sampling a task until its first success (pass@1 0.3 -> 0.51).
        Every row's
        columns are checked against their MAC first (:class:`DamagedEpisode`), and a deleted
        row raises :class:`MissingEpisodes`.

        Episodes played on a task the client passed (``options={"task": ...}``, task id
        ``custom-<digest>``, see :func:`rllm_envs.core.custom_task`) are not the source's
        tasks and are left out, as the env docs promise, unless ``include_custom``; each row
        says how many were left out (``custom_left_out``).

        Samples opened with :meth:`open_pending` and not stored yet count as failed samples
        of their task (``pending`` says how many), under every filter but those on an
        episode's outcome (rewards, ``correct``). Stored and pending samples are read in one
        snapshot. A run named ``"None"`` is keyed ``'"None"|<env>'``, apart from the unnamed
        run's ``"None|<env>"``.

        Returns:
            ``{"<run>|<env>": {"run", "env", "tasks", "samples", "custom_left_out",
            "pending", "pass@k": float, "short@k": int, ...}}``.
        """
        from rllm_agents.passk import mean_pass_at_k

        for k in ks:
            if not isinstance(k, int) or isinstance(k, bool) or k < 1:
                raise AgentConfigError(f"Expects each k to be an int >= 1, actual: {k!r}.")
        if not isinstance(include_custom, bool):
            raise AgentConfigError(
                f"Expects `include_custom` to be a bool, actual: {include_custom!r}."
            )
        # One snapshot for the stored and the pending samples: a session stored between two
        # reads would otherwise count in neither (att29i: 28 of 304 reads short).
        with self._snapshot():
            tasks: dict[tuple[str | None, str], dict[str, list[int]]] = {}
            left_out: dict[tuple[str | None, str], int] = {}
            for episode, hit in self._checked_rows(filters):
                if hit:
                    group = (episode[2], episode[3])
                    by_task = tasks.setdefault(group, {})
                    if not include_custom and str(episode[6] or "").startswith(CUSTOM_ID_PREFIX):
                        left_out[group] = left_out.get(group, 0) + 1
                        continue
                    task = episode[6] if episode[6] is not None else f"group-{episode[8]}"
                    n_c = by_task.setdefault(task, [0, 0])
                    n_c[0] += 1
                    n_c[1] += int(episode[12])
            # Samples opened and not stored yet are failures (see open_pending): leaving the
            # wrong ones open and scoring the right ones would otherwise count only successes
            # (att29h: pass@1 1.0 read while the gateway ran, for a skill of 0.30).
            waiting: dict[tuple[str | None, str], int] = {}
            if not any(filters.get(k) is not None for k in _EPISODE_ONLY_FILTERS):
                for run, env_id, task in self.pending().values():
                    if any(
                        filters.get(name) not in (None, value)
                        for name, value in (("run", run), ("env", env_id), ("task", task))
                    ):
                        continue
                    group = (run, env_id)
                    tasks.setdefault(group, {}).setdefault(task, [0, 0])[0] += 1
                    waiting[group] = waiting.get(group, 0) + 1
        groups = {key: [(n, c) for n, c in by_task.values()] for key, by_task in tasks.items()}
        out: dict[str, dict[str, Any]] = {}
        for (run, env_id), counts in sorted(
            groups.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])
        ):
            row: dict[str, Any] = {
                "run": run,
                "env": env_id,
                "tasks": len(counts),
                "samples": sum(n for n, _ in counts),
                "custom_left_out": left_out.get((run, env_id), 0),
                "pending": waiting.get((run, env_id), 0),
            }
            most = max(n for n, _ in counts)
            for k in ks:
                # Every task as sampled as the most-sampled one: missing samples are failures.
                target = max(most, k)
                row[f"pass@{k}"] = mean_pass_at_k([(target, c) for _, c in counts], k)
                row[f"short@{k}"] = sum(n < target for n, _ in counts)
            # A run named "None" gets its name quoted: it must not replace the unnamed run's
            # row (att29i: a client's run "None" hid the operator's unnamed run).
            out[f"{json.dumps(run) if run == 'None' else run}|{env_id}"] = row
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
        return parquet.export_episodes(self, path, row_group_size=row_group_size, **filters)

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
        return parquet.import_episodes(self, path, run=run, batch_size=batch_size)


def _missing(path: Path, row_id: int) -> DamagedEpisode:
    return DamagedEpisode(path, row_id, "", "it is missing: its row was deleted")


def _past_mark(path: Path, row: Sequence[Any], written: int) -> DamagedEpisode:
    return DamagedEpisode(
        path,
        row[0],
        str(row[1]),
        f"it is past the {written} episodes the store records as written, although its MAC "
        "holds: that record was set back to an earlier value, and `put` refuses until "
        f"`python -m rllm_agents.store {path} repair-mark` raises it over such episodes",
    )


_PENDING_MAC_FAILS = (
    "its key, run, env, task, number and state fail the MAC written with them under the store's key"
)
_PIN_MAC_FAILS = "its key and value fail the MAC written with them under the store's key"


def _first(problems: Sequence[DamagedMeta]) -> DamagedMeta:
    """The first of ``problems``, saying how many more there are."""
    if len(problems) == 1:
        return problems[0]
    first = problems[0]
    return DamagedMeta(
        first.path,
        first.key,
        f"{first.reason} (and {len(problems) - 1} more damaged `meta` rows)",
    )
