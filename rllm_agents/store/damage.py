"""What the store raises for a damaged file or episode, and the check for a cut write-ahead log."""

from __future__ import annotations

import os
import struct
from pathlib import Path

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
