"""The store's integrity: its key, its identity, the MAC of each episode, the count written.

**Threat model.** Someone (or something: a bad copy, a script, an operator's ``DELETE``) can
write the database file but cannot read the store's key. What they change, add, move or
delete is reported, never returned as data, with the exceptions below (rollback, a whole
store swapped for another under a shared key, a deleted key):

* Each store has a random identity (``meta`` row ``store_id``, made with the store) and every
  MAC is computed under the store's own MAC key, ``HMAC(key, store_id)``
  (:func:`store_key`). Stores that share a key file (``$RLLM_STORE_KEY``) therefore do not
  accept each other's rows, or each other's count; a changed ``store_id`` fails every MAC.
* The schema (:func:`rllm_agents.store.schema.check_catalog`) must be exactly the tables and
  indexes the store creates: a planted trigger or a changed column definition would change
  what its SQL does (an insert skipped, a filter's collation) without changing a value.
* Each episode's query columns, with its row id (its sequence number), carry an HMAC-SHA256
  under that MAC key (:func:`row_mac`); its record is bound to them by its content hash,
  itself a MAC'd column. Unkeyed digests could be recomputed by whoever changes a field; a
  MAC cannot be without the key.
* Episodes are numbered 1, 2, 3, ... in the order they are written (the row id), and the store
  keeps the number written so far as a MAC'd high-water mark (:func:`high_water_value`),
  updated in the transaction that adds them. A missing number below the mark (a deleted
  row) and a forged or deleted mark are reported by every read that aggregates and by
  ``verify``. A mark set back below rows that exist (their MACs hold) is reported by
  ``verify`` and makes ``put`` refuse; ``repair-mark`` raises it over those rows.
* Pending samples (``meta`` rows ``pending:<key>``, counted by pass@k as failed until their
  episode settles them) and pins (``pin:<key>``, a run's owner and settings) carry a MAC under
  the same MAC key (:func:`meta_mac`): a pin of its key and value (:func:`pin_value`), a
  pending sample of its key, run, env, task, number and state (:func:`pending_value`).
  Pending samples are numbered 1, 2, 3, ... by a MAC'd count (``meta`` row ``pending_count``,
  :func:`high_water_value` with the label ``pending-count``) and never deleted: settling one
  or dropping it rewrites its state under a new MAC. A planted or changed row, a number
  missing below the count (a deleted row), a number past it or used twice, and a forged or
  deleted count make every reader (``pending``, ``pass_at_k``, ``pin``) raise
  :class:`~rllm_agents.store.damage.DamagedMeta`, and ``verify`` list them.

Not covered: someone who can read the key (they can rewrite the store at will), and
**rollback**: putting back an earlier value of the mark -- or a whole earlier copy of the
store -- after deleting the episodes written since. The old mark is a state the store really
was in (its MAC holds), and nothing inside the file can tell it is old, so the newest
episodes (any suffix of them) can be dropped unnoticed by someone who kept one old ``meta``
value (from the file or a backup). Two ways to catch it: ``keep-mark``
(:meth:`EpisodeStore.keep_mark`) keeps a MAC'd copy of the count beside the key
(:func:`raise_mark`), raised by every writer after each commit and checked by every read, which
holds against whoever cannot write the key's folder; or compare the count and the last
episode's MAC that ``verify`` prints with a record kept where that person cannot write.
The same holds for pending samples: an earlier ``pending_count`` put back with the samples
opened since deleted drops them unnoticed (pass@k then leaves out their failures), unless
keep-mark is on (it keeps that count too, in :func:`pending_mark_path`, raised by every
``open_pending``); and one pending row put back to an earlier value of itself (a settled or
dropped sample open again) is a state it was in: it can only add a failed sample. Rows signed
by ``upgrade`` from a version-4 store (which kept them without a MAC) are only as trustworthy
as whoever could write the file before.
Stores sharing a key file: one store's whole file put in place of another's is a valid store
under that key, with its own identity (and kept count), so nothing in it tells. keep-mark also
records which store lives at each database path (:func:`check_home`), which catches that;
without it, give each store its own key file.

**The key.** 32 random bytes, hex, in a file created with mode 0600: ``DB.key`` next to the
database unless ``key=`` (or the ``RLLM_STORE_KEY`` environment variable) names another path.
Keep it where the people and jobs that may change the database file cannot read it (another
owner, another mount, a secret store) for the MAC to mean anything against them; next to the
database it still catches every accident and every edit made without reading it, short of
deleting the key file: a store relabelled as unkeyed (version 2) with forged rows and its key
deleted looks like a store that never had one, and ``upgrade --unkeyed`` would sign it; the
upgrade refuses while a kept count or a copy of the key lies beside it, and otherwise relies
on the operator's word.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rllm_agents.error import AgentConfigError
from rllm_agents.store.damage import DamagedEpisode, DamagedStore, MissingEpisodes
from rllm_agents.trajectory import Trajectory

#: Environment variable naming the key file when ``key=`` is not given.
KEY_ENV = "RLLM_STORE_KEY"
_KEY_BYTES = 32


def key_path(db: Path, key: str | os.PathLike[str] | None) -> Path:
    """The key file of the store at ``db``: ``key``, else ``$RLLM_STORE_KEY``, else ``DB.key``."""
    if key is not None:
        return Path(key)
    from_env = os.environ.get(KEY_ENV)
    return Path(from_env) if from_env else Path(f"{db}.key")


def load_key(path: Path, db: Path, *, create: bool) -> bytes:
    """The key in ``path``; with ``create``, a new random one is written there if it is missing.

    The file is made beside its final name with mode 0600 and linked in place, so processes
    racing to create one store all end up with the same key and none reads a half-written one.
    """
    if create and not path.exists():
        with contextlib.suppress(FileExistsError):  # another process made it first
            _link_new_key(path)
    elif create:
        _check_adopted_key(path, db)
    try:
        text = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        raise AgentConfigError(
            f"The key of the episode store {db} is not at {path}. Every episode is checked "
            f"with it; give its path with `key=` (CLI `--key`, or ${KEY_ENV}), or restore the "
            "key file from where it was kept. Without it the store cannot be read."
        ) from None
    except (OSError, UnicodeDecodeError) as e:
        raise AgentConfigError(f"Cannot read the key {path} of the episode store {db}: {e}") from e
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) < 16:
        raise AgentConfigError(
            f"{path} is not an episode-store key (expects 32+ random bytes as hex, one line)."
        )
    return key


def _check_adopted_key(path: Path, db: Path) -> None:
    """Refuse to make a new store under a key file that someone else may have written.

    Whoever holds a store's key can sign episodes into it. A key file that is there before the
    store is only trusted when it is this user's and nobody else may read or write it (as
    every key the store makes is): one planted by another user, or left readable, would let
    its planter add episodes that ``verify`` accepts.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return  # gone meanwhile: reading it says so
    why = []
    if st.st_uid != os.getuid():
        why.append(f"owned by uid {st.st_uid}")
    if st.st_mode & 0o077:
        why.append(f"open to other users (mode {oct(st.st_mode & 0o777)})")
    if why:
        raise AgentConfigError(
            f"Not making the episode store {db} under the key {path}: the key file exists "
            f"already and is {' and '.join(why)}, so someone else may hold it and sign "
            f"episodes into the new store. If it is your key, `chmod 600 {path}` (as its "
            "owner); otherwise delete it and a new key is made."
        )


def new_store_id() -> str:
    """A random identity for a new store (``meta`` row ``store_id``)."""
    return secrets.token_hex(16)


def valid_store_id(store_id: object) -> bool:
    """Whether ``store_id`` is what :func:`new_store_id` makes (32 lowercase hex characters)."""
    return (
        isinstance(store_id, str)
        and len(store_id) == 32
        and all(c in "0123456789abcdef" for c in store_id)
    )


def store_key(key: bytes, store_id: str) -> bytes:
    """The MAC key of one store: its key file's key bound to its ``store_id``.

    Every row MAC and the count are made under it, so rows (or a count) copied from another
    store with the same key file fail their MACs, and so does every MAC if ``store_id`` is
    changed.
    """
    return hmac.digest(key, b"rllm-episode-store store " + store_id.encode("ascii"), "sha256")


def new_key(path: Path, db: Path) -> bytes:
    """Write a new random key to ``path``, which must not exist; return it.

    Raises:
        AgentConfigError: If ``path`` exists (an upgrade never signs with an existing key).
    """
    try:
        _link_new_key(path)
    except FileExistsError:
        raise AgentConfigError(
            f"{path} exists: a new key for the episode store {db} must go to a new path."
        ) from None
    return load_key(path, db, create=False)


def _link_new_key(path: Path) -> None:
    """Write a random key beside ``path`` (mode 0600) and link it there; FileExistsError if taken.

    Linking a complete file in place means no reader ever sees a half-written key.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(_KEY_BYTES) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
    finally:
        os.unlink(tmp)


def sha256_hex(data: bytes) -> str:
    """An episode's content hash from its canonical JSON."""
    return hashlib.sha256(data).hexdigest()


def key_id(key: bytes) -> str:
    """What the store records to tell its own key from another (not the key itself)."""
    return hmac.new(key, b"rllm-episode-store key id", hashlib.sha256).hexdigest()[:32]


@functools.lru_cache(maxsize=16)
def _keyed(key: bytes) -> tuple[Any, Any]:
    """SHA-256 states with HMAC's inner and outer padded key already hashed (RFC 2104)."""
    block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))
    return inner, outer


def row_mac(key: bytes, row_id: int, columns: Sequence[Any]) -> str:
    """HMAC-SHA256 of an episode's row id and query columns ``hash`` to ``created``.

    ``ascii()`` of the tuple is the encoding (as in :func:`~rllm_agents.store.schema.
    columns_digest`): it tells ``1`` from ``1.0`` and ``None`` from ``"None"``, writes floats
    exactly and escapes text the same way in every Python version. The padded key's hash
    states are kept per key, so a MAC costs two hash copies rather than ``hmac``'s key setup
    (the same value as ``hmac.digest(key, message, "sha256")``).
    """
    return _mac(key, ascii((row_id, *columns)).encode("ascii"))


def _mac(key: bytes, message: bytes) -> str:
    inner_state, outer_state = _keyed(key)
    inner = inner_state.copy()
    inner.update(message)
    outer = outer_state.copy()
    outer.update(inner.digest())
    return outer.hexdigest()


def meta_mac(key: bytes, meta_key: str, fields: Sequence[Any]) -> str:
    """HMAC-SHA256 of a ``meta`` row's key and fields (a pin's value, a pending sample's state).

    Encoded as :func:`row_mac` encodes an episode's, tagged ``"meta"`` where an episode's
    tuple starts with its integer row id, so neither MAC can stand for the other.
    """
    return _mac(key, ascii(("meta", meta_key, *fields)).encode("ascii"))


def pin_value(key: bytes, meta_key: str, value: str, seq: int) -> str:
    """The ``meta`` value of pin ``meta_key`` (the ``seq``-th): ``value``, ``seq``, their MAC."""
    return json.dumps([value, seq, meta_mac(key, meta_key, (value, seq))])


def parse_pin(key: bytes, meta_key: str, stored: object) -> tuple[str, int] | None:
    """The value and number of a :func:`pin_value`; ``None`` if not one or its MAC fails."""
    try:
        value, seq, mac = json.loads(stored)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        return None
    if not (isinstance(value, str) and type(seq) is int) or not macs_match(
        meta_mac(key, meta_key, (value, seq)), mac
    ):
        return None
    return value, seq


#: The states of a pending sample: opened, then settled by its episode or dropped, never deleted.
PENDING_STATES = ("open", "settled", "dropped")


def pending_value(
    key: bytes,
    meta_key: str,
    run: str | None,
    env_id: str,
    task_id: str,
    seq: int,
    state: str,
) -> str:
    """What the ``meta`` row ``meta_key`` (``pending:...``) stores: the sample and its MAC.

    ``seq`` is its number among the samples opened (1, 2, 3, ..., counted by the MAC'd
    ``pending_count``), so a deleted row is a missing number; ``state`` is in the MAC, so an
    open sample cannot be passed off as settled.
    """
    fields = (run, env_id, task_id, seq, state)
    return json.dumps([*fields, meta_mac(key, meta_key, fields)])


def parse_pending(
    key: bytes, meta_key: str, stored: object
) -> tuple[str | None, str, str, int, str] | None:
    """``(run, env_id, task_id, seq, state)`` of a :func:`pending_value` row, else ``None``."""
    try:
        run, env_id, task_id, seq, state, mac = json.loads(stored)  # type: ignore[arg-type]
    except (TypeError, ValueError, RecursionError):
        return None
    fields = (run, env_id, task_id, seq, state)
    if not (
        (run is None or isinstance(run, str))
        and isinstance(env_id, str)
        and isinstance(task_id, str)
        and type(seq) is int
        and state in PENDING_STATES
        and macs_match(meta_mac(key, meta_key, fields), mac)
    ):
        return None
    return run, env_id, task_id, seq, state


def macs_match(expected: str, found: object) -> bool:
    """Whether a value read from the store equals the one its key makes (constant time).

    Compared as bytes: ``hmac.compare_digest`` raises ``TypeError`` on a text with a non-ASCII
    character, which a flipped high bit writes (att34c: one such flip made ``get``, ``count``
    and ``verify`` raise it, naming no episode).
    """
    if not isinstance(found, str):
        return False
    return hmac.compare_digest(
        expected.encode("utf-8", "surrogateescape"), found.encode("utf-8", "surrogateescape")
    )


#: The label of the episodes' count of a store of this schema version (5); versions 3 and 4
#: signed it as :data:`OLD_HIGH_WATER_LABEL`. Bound to the version, so a version-5 store
#: relabelled as version 4 fails its count's MAC there (s36 att36e: relabelled, its upgrade
#: signed planted pending samples and pins as found). The copy kept beside the key keeps the
#: old label (nothing without the key can write it).
HIGH_WATER_LABEL = "high-water 5"
OLD_HIGH_WATER_LABEL = "high-water"


def high_water_value(key: bytes, count: int, label: str = HIGH_WATER_LABEL) -> str:
    """The ``meta`` value recording that episodes 1 to ``count`` were written.

    With ``label="pending-count"``, that pending samples 1 to ``count`` were opened
    (``meta`` row ``pending_count``, see :func:`pending_value`).
    """
    mac = hmac.digest(key, f"{label} {count}".encode("ascii"), "sha256").hex()
    return f"{count} {mac}"


def parse_count(key: bytes, label: str, value: object) -> int | None:
    """The count of a :func:`high_water_value` of ``label``; ``None`` if its MAC fails."""
    if not isinstance(value, str):
        return None
    head = value.split(" ", 1)[0]
    if not (head.isascii() and head.isdigit() and len(head) < 20) or not macs_match(
        high_water_value(key, int(head), label), value
    ):
        return None
    return int(head)


def parse_high_water(key: bytes, db: Path, value: str | None, label: str = HIGH_WATER_LABEL) -> int:
    """The count recorded by a ``high_water_value``; :class:`DamagedStore` if it was changed."""
    if value is None:
        raise DamagedStore(
            f"{db} has no record of how many episodes were written (its `meta` row "
            "`high_water` was deleted): episodes may be missing. Restore it from a backup."
        )
    head = value.split(" ", 1)[0]
    if not (head.isascii() and head.isdigit()) or not macs_match(
        high_water_value(key, int(head), label), value
    ):
        raise DamagedStore(
            f"{db}: the record of how many episodes were written ({value[:40]!r}) fails its "
            "MAC: it was changed without the store's key, so episodes may be missing. "
            "Restore the store from a backup."
        )
    return int(head)


def mark_path(key_file: Path, store_id: str) -> Path:
    """Where a copy of a store's count is kept beside its key (see :func:`raise_mark`)."""
    return key_file.with_name(f"{key_file.name}.{store_id}.mark")


def pending_mark_path(key_file: Path, store_id: str) -> Path:
    """Where keep-mark keeps a copy of a store's count of pending samples opened."""
    return key_file.with_name(f"{key_file.name}.{store_id}.pending.mark")


def home_path(key_file: Path, db: Path) -> Path:
    """Where keep-mark records which store lives at ``db`` (see :func:`check_home`)."""
    digest = hashlib.sha256(str(db.resolve()).encode("utf-8", "surrogateescape")).hexdigest()
    return key_file.with_name(f"{key_file.name}.{digest[:32]}.home")


def _home_value(key: bytes, db: Path, store_id: str) -> str:
    message = f"rllm-episode-store home {db.resolve()} {store_id}".encode(
        "utf-8", "surrogateescape"
    )
    return f"{store_id} {hmac.digest(key, message, 'sha256').hex()}"


def check_home(key: bytes, db: Path, path: Path, store_id: str, *, write: bool) -> None:
    """Check that the store at ``db`` is the one keep-mark recorded there (``write``: record it).

    Stores that share a key file are each valid under it, so one's whole file put in place of
    another's passes every MAC, and its own kept count; this record, a MAC'd identity per
    database path beside the key (under the key file's key), tells them apart. It holds
    against whoever cannot write the key's folder, like the kept count.

    Raises:
        DamagedStore: If the record names another store, or fails its MAC.
    """
    try:
        text = path.read_bytes().decode("ascii").strip()
    except FileNotFoundError:
        if write:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
            try:
                with os.fdopen(fd, "w") as f:
                    f.write(_home_value(key, db, store_id) + "\n")
                with contextlib.suppress(FileExistsError):  # another writer made it first
                    os.link(tmp, path)
            finally:
                os.unlink(tmp)
            check_home(key, db, path, store_id, write=False)
        return
    except (OSError, UnicodeDecodeError) as e:
        raise DamagedStore(
            f"Cannot read {path}, the identity kept for {db} beside its key: {e}"
        ) from e
    recorded = text.split(" ", 1)[0]
    if not valid_store_id(recorded) or not macs_match(_home_value(key, db, recorded), text):
        raise DamagedStore(
            f"{path}, the identity of the store kept for {db} beside its key, fails its MAC: it "
            "was changed without the key. Restore it (or the key's folder) from a backup."
        )
    if recorded != store_id:
        raise DamagedStore(
            f"{db} is not the store keep-mark recorded at this path: its identity is "
            f"{store_id}, {path} records {recorded}. Another store's file (one sharing this "
            "key file, or a new store made after the old file was deleted) was put in its "
            "place. Restore the store from a backup; if it was replaced on purpose, delete "
            f"{path} (keep-mark records the new one from the next writer's open)."
        )


_MARK_BYTES = 128  # the kept count is rewritten in place at this fixed length


def read_mark(key: bytes, db: Path, path: Path, label: str = OLD_HIGH_WATER_LABEL) -> int | None:
    """The count kept in ``path`` (``None`` if there is none); :class:`DamagedStore` if changed.

    ``label`` says which count (:func:`high_water_value`): of episodes written, or of pending
    samples opened (``"pending-count"``, kept in :func:`pending_mark_path`).
    """
    try:
        lock = os.open(f"{path}.lock", os.O_RDONLY)
    except FileNotFoundError:
        return None  # never kept: keep-mark makes the lock file first
    try:
        fcntl.flock(lock, fcntl.LOCK_SH)  # a writer rewrites it in place
        return _read_mark(key, db, path, label)
    finally:
        os.close(lock)


def _read_mark(key: bytes, db: Path, path: Path, label: str) -> int | None:
    try:
        value = path.read_bytes().decode("ascii").strip()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise DamagedStore(
            f"Cannot read {path}, the count of episodes written to {db} kept beside its key: {e}"
        ) from e
    if not value:
        return None  # made by a writer that died before writing it (it writes under the lock)
    count = parse_count(key, label, value)
    if count is None:
        what = "pending samples opened in" if label == "pending-count" else "episodes written to"
        raise DamagedStore(
            f"{path}, the count of {what} {db} kept beside its key, fails its MAC: "
            "it was changed without the key. Restore it (or the key's folder) from a backup."
        )
    return count


def raise_mark(
    key: bytes, db: Path, path: Path, count: int, label: str = OLD_HIGH_WATER_LABEL
) -> None:
    """Keep ``count`` in ``path`` unless it already holds as much (never lowered).

    Writers call it after each commit, so the file is a lower bound on the store's own count:
    a store whose count is below it was rolled back. Writers hold ``path.lock`` exclusively
    (``flock``) and readers shared while the file is rewritten in place at a fixed length (one
    small write, no rename: it costs microseconds), so no one sees a half-written or lowered
    value.
    """
    lock = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        current = _read_mark(key, db, path, label)
        if current is not None and current >= count:
            return
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            value = high_water_value(key, count, label)
            os.pwrite(fd, value.ljust(_MARK_BYTES).encode("ascii"), 0)
        finally:
            os.close(fd)
    finally:
        os.close(lock)


def check_row(key: bytes, db: Path, row: Sequence[Any]) -> None:
    """Raise :class:`DamagedEpisode` unless a ``_CHECKED`` row's MAC (index 17) matches."""
    if not macs_match(row_mac(key, row[0], row[1:17]), row[17]):
        raise DamagedEpisode(
            db,
            row[0],
            str(row[1]),
            "its row id and query columns (run, env_id, env_kwargs, model, task_id, seed, "
            "group, sample, num_turns, total_reward, is_correct, finish, versions, timings, "
            "created) fail the MAC written with them under the store's key",
        )


def verified(db: Path, row: Sequence[Any], record: Any) -> Trajectory:
    """The trajectory of ``row``, after checking it against its hash and the columns."""
    data = record.encode("utf-8", "surrogateescape") if isinstance(record, str) else record
    if not isinstance(data, bytes) or hashlib.sha256(data).hexdigest() != row[1]:
        raise DamagedEpisode(db, row[0], str(row[1]), "its record fails its SHA-256")
    try:
        trajectory = Trajectory.from_dict(json.loads(record))
    except (ValueError, TypeError, KeyError, RecursionError) as e:
        # Its hash holds, so it is as written, but this process cannot read it back: e.g. an
        # integer of more digits than Python's int-to-string limit lets a reader parse.
        reason = f"its record cannot be read here ({type(e).__name__}: {str(e)[:200]})"
        raise DamagedEpisode(db, row[0], str(row[1]), reason) from e
    stored = (row[3], row[6], row[7], row[8], row[9], row[10], row[11], row[12], row[13])
    for name, want, got in zip(RECORD_COLUMNS, record_columns(trajectory), stored, strict=True):
        if want != got:
            raise DamagedEpisode(
                db, row[0], str(row[1]), f"column {name} is {got!r}, its record {want!r}"
            )
    return trajectory


#: The query columns computed from an episode's record (:func:`record_columns`).
RECORD_COLUMNS = "env_id task_id seed group sample num_turns total_reward is_correct finish".split()


def record_columns(trajectory: Trajectory) -> tuple[Any, ...]:
    """The values of :data:`RECORD_COLUMNS` for ``trajectory``."""
    return (
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


class Sequence1:
    """Checks that row ids read in order are 1, 2, 3, ... up to the high-water mark.

    Rows past the mark are fine when their MAC holds: they were written after the mark was
    read (only a holder of the key can make such a row). Call :meth:`see` with each id in
    ascending order from ``start``, then :meth:`end` if the rows ran out. On a gap, the ids
    of every row are read once to name exactly the missing ones.
    """

    def __init__(self, db: Path, conn: sqlite3.Connection, high_water: int, start: int = 1):
        self.db = db
        self.conn = conn
        self.high_water = high_water
        self.next = start

    def see(self, row_id: int) -> None:
        """Next row id read; :class:`MissingEpisodes` for the ids skipped before it."""
        if row_id != self.next and self.next <= self.high_water:
            self._missing()
        # Ids past the mark need not follow on (rows written after it; their MACs decide).
        self.next = row_id + 1

    def end(self) -> None:
        """The rows ran out; :class:`MissingEpisodes` if ids up to the mark were not seen."""
        if self.next <= self.high_water:
            self._missing()

    def _missing(self) -> None:
        # Only ids up to the mark were written: a row whose id was set far past it (10**12)
        # must not make the check list every id in between (it ran out of memory).
        present = {
            row[0]
            for row in self.conn.execute(
                "SELECT id FROM episodes WHERE id <= ?", (self.high_water,)
            )
        }
        missing = [i for i in range(1, self.high_water + 1) if i not in present]
        raise MissingEpisodes(self.db, missing or [self.next], self.high_water)
