"""A lock that a forked child can take.

A module-level :class:`threading.Lock` held by another thread when the process forks stays
held in the child, where no thread will ever release it. gymnasium's ``AsyncVectorEnv``
forks env workers from a process whose sandbox threads take such locks (cgroup creation,
sandbox pools), and a worker that then judged a reply waited forever (SWE-v0's vector
contract test, in serial runs too). Each :class:`ForkSafeLock` gets a fresh lock in the child.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType

__all__ = ["ForkSafeLock"]


class ForkSafeLock:
    """A non-reentrant lock (``with lock:``) that is free again in a forked child."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        _LOCKS.add(self)

    def __enter__(self) -> ForkSafeLock:
        self._lock.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()

    def locked(self) -> bool:
        """Whether some thread holds it."""
        return self._lock.locked()


_LOCKS: weakref.WeakSet[ForkSafeLock] = weakref.WeakSet()


def _renew_after_fork() -> None:
    # The child has only the forking thread: no holder of these locks exists in it.
    for lock in list(_LOCKS):
        lock._lock = threading.Lock()


os.register_at_fork(after_in_child=_renew_after_fork)
