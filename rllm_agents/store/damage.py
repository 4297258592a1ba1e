"""What the store raises for a damaged file or episode, and the check for a cut write-ahead log."""

from __future__ import annotations

import functools
import os
import shutil
import struct
import threading
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

from rllm_agents.error import AgentError


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
            f"Episode {id} ({hash[:12] or 'hash unknown'}) in {path} is damaged: {reason}. "
            "The rest of the store is readable; `EpisodeStore.verify()` (or `python -m "
            "rllm_agents.store DB verify`) lists every damaged episode."
        )
        self.id = id
        self.hash = hash
        self.reason = reason


class MissingEpisodes(DamagedStore):
    """Episodes the store recorded as written are gone (their rows were deleted).

    Attributes:
        ids: The missing row ids (episodes are numbered 1, 2, 3, ... as they are written).
        written: How many episodes the store records as written.
    """

    def __init__(self, path: Path, ids: list[int], written: int) -> None:
        shown = ", ".join(str(i) for i in ids[:20]) + (
            f" and {len(ids) - 20} more" if len(ids) > 20 else ""
        )
        super().__init__(
            f"{path} is missing {len(ids)} of the {written} episodes it records as written "
            f"(ids {shown}): their rows were deleted, so counts, pass@k and listings would be "
            "wrong. Restore the store from a backup; `python -m rllm_agents.store DB verify` "
            "lists every missing and damaged episode."
        )
        self.ids = ids
        self.written = written


class DamagedMeta(DamagedStore):
    """A pending sample or a pin (``meta`` rows) was changed, planted or deleted.

    Pending samples count as failures in pass@k and pins fix a run's owner and settings, so
    neither is ever returned unchecked: every reader raises this, and
    ``EpisodeStore.verify()`` lists each one after the damaged episodes.

    Attributes:
        path: The store file.
        key: The ``meta`` key (``pin:...``, ``pending:...``, or ``pending_count`` for the
            count of pending samples opened and the numbers missing below it).
        reason: What did not match.
    """

    def __init__(self, path: Path, key: str, reason: str) -> None:
        super().__init__(
            f"{path}: the `meta` row {key[:200]!r} is damaged: {reason}. It was changed, "
            "planted or deleted without the store's key; pass@k counts open pending samples "
            "as failures and pins fix a run's owner and settings, so nothing of it is used. "
            "Restore the store from a backup; `python -m rllm_agents.store DB verify` lists "
            "every damaged row."
        )
        self.path = path
        self.key = key
        self.reason = reason


_WAL_MAGIC = (0x377F0682, 0x377F0683)
# The WAL index header (sqlite3 wal.c, WalIndexHdr), in the writer's native byte order:
# iVersion, unused, iChange, isInit, bigEndCksum, szPage, mxFrame, nPage, aFrameCksum[2],
# aSalt[2], aCksum[2]. The -shm file starts with two copies of it.
_WAL_INDEX_HDR = struct.Struct("=IIIBBHII8s8s8s")


# POSIX record locks belong to a process and an inode: closing *any* descriptor of a -shm file
# drops every lock this process holds on it, SQLite's too. SQLite's shared lock on the index
# tells other processes the index is in use; without it the next opener truncates the file
# under this process's mapping, and the next write here dies of SIGBUS (16 writer processes
# did). So a store holds its -shm descriptors open until it closes (hold_index/release_index),
# and reads the index through them.
_held_lock = threading.Lock()
_held: dict[str, tuple[int, dict[tuple[int, int], int]]] = {}  # path -> (stores, {inode: fd})
_held_pid = os.getpid()


def _own_held() -> dict[str, tuple[int, dict[tuple[int, int], int]]]:
    global _held_pid
    if os.getpid() != _held_pid:
        # Forked: the parent's descriptors stay open here (this process holds no lock yet),
        # and its stores are not this process's.
        _held.clear()
        _held_pid = os.getpid()
    return _held


def hold_index(path: Path) -> None:
    """Keep ``path``'s -shm descriptors open until a matching :func:`release_index`."""
    key = os.path.realpath(path)
    with _held_lock:
        stores, fds = _own_held().get(key, (0, {}))
        _held[key] = (stores + 1, fds)


def release_index(path: Path) -> None:
    """Close ``path``'s -shm descriptors once no store of this process holds them.

    A store calls it after closing its own connections.
    """
    key = os.path.realpath(path)
    with _held_lock:
        stores, fds = _own_held().get(key, (1, {}))
        if stores > 1:
            _held[key] = (stores - 1, fds)
            return
        _held.pop(key, None)
    for fd in fds.values():
        os.close(fd)


def _read_index(path: Path, size: int) -> bytes:
    shm = f"{path}-shm"
    with _held_lock:
        # Without a hold (a caller of check_wal that may have a connection of its own), the
        # descriptor is kept too: closing it could drop that connection's locks.
        fds = _own_held().setdefault(os.path.realpath(path), (0, {}))[1]
        st = os.stat(shm)
        fd = fds.get((st.st_dev, st.st_ino))
        if fd is None:
            for inode, old in list(fds.items()):
                # SQLite deletes the index only when no connection anywhere uses it.
                if os.fstat(old).st_nlink == 0:
                    os.close(fds.pop(inode))
            fd = os.open(shm, os.O_RDONLY | os.O_CLOEXEC)
            st = os.fstat(fd)
            fds[(st.st_dev, st.st_ino)] = fd
        return os.pread(fd, size, 0)


#: What :func:`_wal_index` returns for an index file with no whole header copy.
_UNREADABLE = (b"", -1, 0)


def _wal_checksum(data: bytes, order: str, start: tuple[int, int] = (0, 0)) -> tuple[int, int]:
    """SQLite's log checksum of ``data``: 32-bit word pairs in ``order``, summed Fibonacci-wise.

    As sqlite3 wal.c computes it, from ``start`` (a log frame's continues its predecessor's);
    ``order`` is ``struct``'s byte-order character.
    """
    s1, s2 = start
    for x0, x1 in struct.iter_unpack(order + "II", data):
        s1 = (s1 + x0 + s2) & 0xFFFFFFFF
        s2 = (s2 + x1 + s1) & 0xFFFFFFFF
    return s1, s2


def _index_copy(copy: bytes) -> tuple[bytes, int, int] | None:
    """One copy of the index header, if it is initialised and its own checksum holds.

    The index is in the writer's native byte order.
    """
    fields = _WAL_INDEX_HDR.unpack(copy)
    is_init, page_size, max_frame, salt, checksum = fields[3], fields[5], fields[6], *fields[9:]
    if not is_init or struct.pack("=II", *_wal_checksum(copy[:40], "=")) != checksum:
        return None
    return salt, max_frame, 65536 if page_size == 1 else page_size


def _wal_index(path: Path) -> tuple[bytes, int, int] | None:
    """``(salt, committed frames, page size)`` from the log index (``-shm``).

    ``None`` without an index, or with one no copy of whose header is initialised (zeroed:
    what an opener killed while rebuilding it leaves, s42 att42j; SQLite recovers from the
    log as without an index); :data:`_UNREADABLE` when a copy is initialised but none is
    whole (its checksum fails). A writer writes the second copy, then the first: a copy torn
    by a write under way fails its checksum, and of two whole copies that differ the one
    with fewer frames is taken (s42 att42i: one changed byte of either copy made every check
    skip, and a cut log lost 21 of 40 episodes silently).
    """
    try:
        index = _read_index(path, 2 * _WAL_INDEX_HDR.size)
    except OSError:
        return None
    size = _WAL_INDEX_HDR.size
    copies = [index[i * size : (i + 1) * size] for i in range(2) if len(index) >= (i + 1) * size]
    whole = [c for c in (_index_copy(copy) for copy in copies) if c is not None]
    if whole:
        return min(whole, key=lambda c: c[1])
    initialised = any(_WAL_INDEX_HDR.unpack(copy)[3] for copy in copies)
    return _UNREADABLE if initialised else None


def _header_whole(header: bytes, page_size: int) -> bool:
    """Whether a log header's page size is ``page_size`` and its checksum holds.

    The checksum covers the first 24 bytes, in the byte order the magic number names.
    """
    if struct.unpack(">I", header[8:12])[0] != page_size:
        return False
    order = ">" if struct.unpack(">I", header[:4])[0] & 1 else "<"
    return struct.unpack(">II", header[24:32]) == _wal_checksum(header[:24], order)


def _check_wal_gone(path: Path) -> None:
    """Raise :class:`DamagedStore` if the log is gone while its index records commits.

    The last connection checkpoints every frame into the database (the index's checkpoint
    count, ``nBackfill``, reaches its frame count), then deletes the log, then the index: an
    index beside no log is whole only when the two counts agree. Otherwise the log was
    deleted or left out of a copy, and SQLite opens the store without the commits it held
    (s43 att43i: 0 of 40 episodes read, every command rc 0).
    """
    recorded = backfilled = 0
    for _ in range(2):  # read again: the last connection may have just checkpointed
        state = _wal_index(path)
        if state is None or state == _UNREADABLE or os.path.exists(f"{path}-wal"):
            return
        try:
            info = _read_index(path, 2 * _WAL_INDEX_HDR.size + 4)
        except OSError:
            return
        if len(info) < 2 * _WAL_INDEX_HDR.size + 4:
            return
        recorded = state[1]
        backfilled = struct.unpack("=I", info[2 * _WAL_INDEX_HDR.size :])[0]
        if backfilled >= recorded:
            return
        time.sleep(0.05)
    raise DamagedStore(
        f"The write-ahead log {path}-wal is missing, and its index {path}-shm records "
        f"{recorded} committed frames of which {backfilled} were copied into the database: "
        "the episodes committed in the rest are in the missing log, and SQLite would open the "
        "store without them. Restore the -wal file (or the whole store) from a backup; to open "
        "what is left, delete the -shm file."
    )


def check_wal(path: Path) -> tuple[bytes, int] | None:
    """Raise :class:`DamagedStore` if ``path``'s write-ahead log is shorter than its index says.

    SQLite opens a log cut mid-way (a bad copy, a full disk on another machine) without an
    error and drops every commit in the cut part. The log index (``-shm``) left by the last
    writer records how many frames were committed; fewer whole frames in the log means
    acknowledged episodes are gone. Without an index there is nothing to compare against.

    The log's frames are also checked as SQLite's recovery walks them
    (:func:`check_wal_frames`).

    Returns:
        The index's ``(salt, committed frames)`` when there is a log and a whole index, for
        :func:`check_wal_kept` after the first query; else ``None``.
    """
    wal = Path(f"{path}-wal")
    state = _wal_index(path)
    try:
        with open(wal, "rb") as f:
            header = f.read(32)
            wal_size = os.fstat(f.fileno()).st_size
    except OSError:
        _check_wal_gone(path)
        return None
    for _ in range(10):  # an index another process is creating or recovering: a moment
        if state != _UNREADABLE:
            break
        time.sleep(0.05)
        state = _wal_index(path)
    else:
        if wal_size > 32:
            raise DamagedStore(
                f"The index {path}-shm of the write-ahead log {wal} is damaged (neither copy "
                "of its header is whole), so whether the log was cut or changed cannot be "
                "told, and SQLite would rebuild the index from it without saying what it "
                "dropped. Restore the -shm and -wal files (or the whole store) from a backup; "
                "to open the store as SQLite recovers it, delete the -shm file."
            )
        return None
    if state is None or state[1] == 0:
        # No index of this log's commits (s43 att43a F2: an index recording none, copied
        # after a checkpoint, switched every check off: 9 of 40 episodes read, rc 0).
        if wal_size > 32:
            check_wal_frames(path, state)
        return None if state is None else state[:2]
    salt, max_frame, page_size = state
    if len(header) < 32 or struct.unpack(">I", header[:4])[0] not in _WAL_MAGIC:
        frames = 0
    elif header[16:24] != salt or not _header_whole(header, page_size):
        if _wal_index(path) != state:
            return None  # another writer restarted the log while this one read it
        # A log restart writes its index before its header, so an index left unchanged
        # around this read, with committed frames, is of this log: its header was changed
        # (s42 att42h F1: one flipped bit of the salt or page size, and SQLite opened the
        # store without the log, 40 of 40 episodes gone, every command rc 0).
        raise DamagedStore(
            f"The write-ahead log {wal} has a damaged header: its salt, page size or checksum "
            f"does not match its index {path}-shm, which records {max_frame} committed frames. "
            "SQLite would open the store without the whole log, and the episodes committed "
            "in it would be lost without an error. Restore the -wal file (or the whole store) "
            "from a backup."
        )
    else:
        frames = (wal_size - 32) // (24 + page_size)
    if frames < max_frame:
        if _wal_index(path) != state:
            # Another writer checkpointed and restarted (or truncated) the log since the
            # index was read: it resets the index first (8 writers: one such false alarm).
            return None
        raise DamagedStore(
            f"The write-ahead log {wal} was cut: it holds {frames} whole frames, and its index "
            f"{path}-shm records {max_frame} committed ones. Episodes committed in the missing "
            "frames are lost, and SQLite would open the store without saying so. Restore the "
            "-wal file (or the whole store) from a backup; to keep what is left, delete the "
            "-shm file and open the store again."
        )
    check_wal_frames(path, state)
    return salt, max_frame


_MASK = np.uint64(0xFFFFFFFF)
_PAGE_SIZES = tuple(1 << k for k in range(9, 17))


def _matrix_powers(count: int, inverse: bool = False) -> np.ndarray:
    """``M**k`` (or ``M**-k``) for ``k < count``, as rows ``a, b, c, d``, mod 2**32.

    ``M = [[1, 1], [1, 2]]``, ``M**-1 = [[2, -1], [-1, 1]]``.
    """
    powers = np.empty((4, count), dtype=np.uint64)
    a, b, c, d = 1, 0, 0, 1
    for k in range(count):
        powers[:, k] = (a, b, c, d)
        if inverse:
            a, b, c, d = 2 * a - c, 2 * b - d, c - a, d - b
        else:
            a, b, c, d = a + c, b + d, a + 2 * c, b + 2 * d
        a, b, c, d = a & 0xFFFFFFFF, b & 0xFFFFFFFF, c & 0xFFFFFFFF, d & 0xFFFFFFFF
    return powers


@functools.lru_cache(maxsize=8)
def _checksum_powers(pairs: int) -> tuple[np.ndarray, np.ndarray]:
    """The log checksum as a linear map, for a run of ``pairs`` 32-bit word pairs.

    One pair ``(x0, x1)`` takes ``s`` to ``M @ s + (x0, x0 + x1)`` (:func:`_wal_checksum`,
    :func:`_matrix_powers`), so a run gives ``M**pairs @ s`` plus each pair's term times
    ``M**(pairs - 1 - k)``: returns those powers (shape ``(4, pairs)``) and ``M**pairs``.
    """
    powers = _matrix_powers(pairs + 1)
    return powers[:, pairs - 1 :: -1].copy(), powers[:, pairs].copy()


class _Frames(NamedTuple):
    """Per log frame (:func:`_frame_checks`)."""

    valid: np.ndarray  # its salt and checksum hold
    commit: np.ndarray  # it ends a commit
    computed: np.ndarray  # (frames, 2): its checksum, continued from the frame before's stored
    stored: np.ndarray  # (frames, 2): the checksum it carries
    salt_bits: np.ndarray  # how many bits of its salt differ from the header's


def _frame_checks(
    fd: int, size: int, order: str, page_size: int, salt: bytes, start: tuple[int, int]
) -> _Frames:
    """Per log frame: whether its salt and checksum hold, and whether it ends a commit.

    Each frame's checksum is continued from the frame before's *stored* one (the first
    frame's from ``start``, the header's): where they agree this is SQLite's running
    checksum, and after a frame with a changed byte the frames that follow still chain.
    Read in chunks (bounded memory; ``pread``, not a mapping another writer could cut).
    """
    frame = 24 + page_size
    count = max(0, (size - 32) // frame)
    valid = np.zeros(count, dtype=bool)
    commit = np.zeros(count, dtype=bool)
    computed = np.zeros((count, 2), dtype=np.uint64)
    carried = np.zeros((count, 2), dtype=np.uint64)
    salt_bits = np.zeros(count, dtype=np.int64)
    terms, total = _checksum_powers(1 + page_size // 8)
    words = np.dtype(order + "u4")
    want = np.frombuffer(salt, dtype=np.uint8)
    before = np.array(start, dtype=np.uint64)
    done = 0
    for low in range(0, count, 256):
        data = os.pread(fd, min(256, count - low) * frame, 32 + low * frame)
        chunk = np.frombuffer(data, dtype=np.uint8)[: len(data) // frame * frame]
        chunk = chunk.reshape(-1, frame)
        if not len(chunk):
            break  # the log shrank while it was read
        summed = np.concatenate([chunk[:, :8], chunk[:, 24:]], axis=1)
        x = summed.copy().view(words).astype(np.uint64)
        x0, x01 = x[:, 0::2], x[:, 0::2] + x[:, 1::2]
        # uint64 products and sums wrap modulo 2**64, which 2**32 divides.
        s1 = (x0 * terms[0] + x01 * terms[1]).sum(axis=1, dtype=np.uint64)
        s2 = (x0 * terms[2] + x01 * terms[3]).sum(axis=1, dtype=np.uint64)
        stored = chunk[:, 16:24].copy().view(">u4").astype(np.uint64)
        prior = np.vstack([before, stored[:-1]])
        s1 = (total[0] * prior[:, 0] + total[1] * prior[:, 1] + s1) & _MASK
        s2 = (total[2] * prior[:, 0] + total[3] * prior[:, 1] + s2) & _MASK
        rows = slice(low, low + len(chunk))
        salt_bits[rows] = np.unpackbits(chunk[:, 8:16] ^ want, axis=1).sum(axis=1)
        valid[rows] = (s1 == stored[:, 0]) & (s2 == stored[:, 1]) & (salt_bits[rows] == 0)
        commit[rows] = chunk[:, 4:8].any(axis=1)
        computed[rows, 0], computed[rows, 1] = s1, s2
        carried[rows] = stored
        before = stored[-1]
        done = low + len(chunk)
    return _Frames(valid[:done], commit[:done], computed[:done], carried[:done], salt_bits[:done])


@functools.lru_cache(maxsize=8)
def _inverse_powers(pairs: int) -> np.ndarray:
    """``M**-(pairs - 1 - k)`` for each pair ``k`` of a frame (:func:`_checksum_powers`)."""
    return _matrix_powers(pairs, inverse=True)[:, ::-1].copy()


def _changed(frames: _Frames, at: int, page_size: int) -> bool:
    """Whether frame ``at``'s failure is a change to it, not a frame whose predecessor changed.

    A writer killed before updating the index leaves frames that the next writers partly
    overwrite: the first left over fails, as its predecessor is another writer's, though its
    own bytes are whole (s43 att43k: an intact store refused without its index). A changed
    frame is told apart by what explains its failure: a bit or two of its salt (its checksum
    holds), its stored checksum (the next frame chains from the computed one), or one 32-bit
    word of what its checksum covers, with or without a salt bit or two (s43 att43p; the
    difference is one word's term: chance about 2**-22 for a frame left over). Wider damage
    of a frame's bytes reads as left over.
    """
    if frames.salt_bits[at] > 2:
        return False
    difference = (frames.stored[at] - frames.computed[at]) & _MASK
    if not difference.any():
        return True  # its salt alone (a bit or two)
    _, total = _checksum_powers(1 + page_size // 8)
    if not frames.salt_bits[at] and at + 1 < len(frames.valid) and frames.salt_bits[at + 1] == 0:
        # The next frame continued from this one's computed checksum instead of its stored.
        shift = (np.array([[total[0], total[1]], [total[2], total[3]]]) @ -difference) & _MASK
        if ((frames.computed[at + 1] + shift) & _MASK == frames.stored[at + 1]).all():
            return True
    inverse = _inverse_powers(1 + page_size // 8)
    # The one word pair whose change explains it: (d, d) for its first word, (0, d) its second.
    v1 = (inverse[0] * difference[0] + inverse[1] * difference[1]) & _MASK
    v2 = (inverse[2] * difference[0] + inverse[3] * difference[1]) & _MASK
    return bool(((v1 == v2) | (v1 == 0)).any())


def _wal_frames(wal: Path) -> tuple[int, bool]:
    """Walk a log's frames as SQLite's recovery does: ``(frames it keeps, later commits)``.

    SQLite keeps frames up to the last commit frame before the first frame whose salt or
    running checksum fails. The second value says whether a commit frame *after* that failure
    holds after a frame that was changed (:func:`_changed`): then SQLite drops committed
    frames (frames of a rolled-back transaction carry no commit mark; frames of an older log
    generation carry another salt; frames writers killed before updating the index leave
    fail whole). With a damaged
    header (magic, page size, salt or checksum) SQLite ignores the whole log: any commit
    frame chaining with the frame before it, for a page size and byte order the header may
    have said, shows it held commits (s43 att43a F1: one flipped header bit without an
    index, 40 of 40 episodes gone, rc 0).
    """
    fd = os.open(wal, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        header = os.pread(fd, 32, 0)
        if len(header) < 32:
            return 0, False
        magic, page_size = struct.unpack(">I", header[:4])[0], struct.unpack(">I", header[8:12])[0]
        start = struct.unpack(">II", header[24:32])
        if magic in _WAL_MAGIC and page_size in _PAGE_SIZES and _header_whole(header, page_size):
            order = ">" if magic & 1 else "<"
            frames = _frame_checks(fd, size, order, page_size, header[16:24], start)
            failed = np.flatnonzero(~frames.valid)
            end = int(failed[0]) if len(failed) else len(frames.valid)
            kept = np.flatnonzero(frames.commit[:end])
            commits = np.flatnonzero(frames.valid & frames.commit)
            # Failing frames with a valid commit after them: changed ones lose that commit.
            before = failed[failed < commits[-1]] if len(commits) else failed[:0]
            # Many can fail whole: a writer killed before its commit leaves the frames it
            # rewrote in place after spilling them with stale checksums (s43 att43n: 231).
            later = any(_changed(frames, int(f), page_size) for f in before)
            return (int(kept[-1]) + 1 if len(kept) else 0), later
        salt = os.pread(fd, 8, 32 + 8)  # the first frame's
        for page in sorted(_PAGE_SIZES, key=lambda p: p != page_size):
            for order in ("<", ">"):  # the magic's last bit may be what changed
                frames = _frame_checks(fd, size, order, page, salt, start)
                if (frames.valid & frames.commit).any():
                    return 0, True
        return 0, False
    finally:
        os.close(fd)


def check_wal_frames(path: Path, state: tuple[bytes, int, int] | None) -> None:
    """Raise :class:`DamagedStore` if SQLite would drop committed frames of ``path``'s log.

    SQLite's recovery, which rebuilds the index from the log, stops at the first frame whose
    checksum fails and says nothing. :func:`check_wal_kept` sees that only when the index
    recorded those frames and the opener rebuilt it in the file: not on a read-only open
    (rebuilt in memory: s42 att42l, one flipped bit read 9 of 40 episodes on every
    read-only open, rc 0) nor without an index. So every open checks the frames
    (:func:`_wal_frames`). ``state`` is the index :func:`check_wal` read, or ``None``.

    Refused: fewer recoverable frames than an index of this log (its salt) records, or a
    frame changed (:func:`_changed`) before a valid commit. Not refused: a failing frame
    whose own bytes are whole, before valid commits (writers killed before updating the
    index leave such frames, partly overwritten by the next writers: s43 att43e, att43g,
    att43k, every open refused an intact store, with its index and without).
    """
    wal = Path(f"{path}-wal")
    try:
        kept, later = _wal_frames(wal)
        with open(wal, "rb") as f:
            salt = f.read(24)[16:24]
    except OSError:
        return
    recorded = state[1] if state is not None and state[0] == salt else None
    if not later and (recorded is None or kept >= recorded):
        return
    if _wal_index(path) != state:
        return  # a writer changed the log while it was read: its index now tells
    told = f", and its index {path}-shm records {recorded}" if recorded else ""
    raise DamagedStore(
        f"The write-ahead log {wal} is damaged: a frame's checksum fails (a changed byte) "
        f"before committed frames. SQLite would keep {kept} frames{told}; episodes "
        "committed in the rest are lost, and SQLite would open the store without saying so. "
        "Restore the store from a backup."
    )


def check_wal_kept(path: Path, before: tuple[bytes, int] | None) -> None:
    """Raise :class:`DamagedStore` if SQLite dropped committed frames of the log while opening.

    The first connection to open a store rebuilds the log index from the log itself and stops
    at the first frame whose checksum fails (one flipped bit), dropping that commit and every
    later one without an error. ``before`` is the index :func:`check_wal` read before opening;
    read again after the first query, the same log generation (its salt) with fewer committed
    frames means exactly that. A checkpoint that restarts the log changes the salt.

    Only the first opener can tell: the index it leaves records the shorter log. So the log
    as it was is copied to ``DB-wal.damaged`` (when the folder is writable) before the
    connection that would checkpoint it into the database is closed.
    """
    if before is None:
        return
    after = _wal_index(path)
    if (
        after is not None
        and after != _UNREADABLE
        and after[0] == before[0]
        and after[1] < before[1]
    ):
        kept = Path(f"{path}-wal.damaged")
        try:
            if not kept.exists():
                shutil.copyfile(f"{path}-wal", kept)
            where = f"The log as it was is kept in {kept}. "
        except OSError:
            where = ""
        raise DamagedStore(
            f"The write-ahead log {path}-wal is damaged: its index recorded {before[1]} "
            f"committed frames, and SQLite, rebuilding the index from the log, kept {after[1]} "
            "(a frame's checksum fails: a changed byte). Episodes committed in the dropped "
            f"frames are lost, and the next opener will not be told. {where}Restore the store "
            "from a backup."
        )
