"""One host user per concurrent sandbox: the kernel keeps some accounts per user.

Without a user namespace of its own (firejail in a container), a sandbox's process-count
limit (``RLIMIT_NPROC``) is checked against every process of its user on the machine. If
concurrent sandboxes shared one user, one could count the other's processes (lower its own
limit, fork until it fails) and so receive bits from it: a channel between sandboxes. Other
accounts are per host user whatever the namespaces (bubblewrap too): the pipe-buffer pages a
user holds (past ``pipe-user-pages-soft`` a new pipe gets 8 KiB, not 64 KiB) and the
descriptors it has in flight over ``SCM_RIGHTS`` (past the limit a send fails with
``ETOOMANYREFS``), each a channel between sandboxes of one user.

As root, each such sandbox therefore runs as a user of its own for its lifetime, taken from
the pool ``rllm-sandbox-0``, ``rllm-sandbox-1``, ... that ``scripts/setup_sandbox_user.sh``
creates (the base name follows ``RLLM_SANDBOX_USER``). A user is held with an exclusive
``flock`` on a lock file under ``/run/rllm-sandbox`` (so concurrent host processes never
share one either) and released when the sandbox is closed. With every user of the pool
taken, a new sandbox waits for one to be released (at most :data:`ACQUIRE_WAIT` seconds, then
:class:`PoolExhausted`): sharing a user would reopen the channels above. With no pool at
all a sandbox runs as the base user and :class:`SharedSandboxUserWarning` says so once, as
it does for a caller that is not root (no user to switch to). Every backend
takes a pool user (bubblewrap's user namespace keeps the process count private, not the
per-user accounts above).
"""

from __future__ import annotations

import errno
import fcntl
import os
import pwd
import stat
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache

from rllm_envs.forksafe import ForkSafeLock
from rllm_envs.sandbox.backends import SANDBOX_USER, sandbox_identity

__all__ = [
    "Lease",
    "SharedSandboxUserWarning",
    "PoolExhausted",
    "acquire",
    "pool_users",
    "LOCK_DIR",
    "ACQUIRE_WAIT",
]

#: Where the lock files of the pool's users live (root's only).
LOCK_DIR = "/run/rllm-sandbox"
#: At most this many pool users are looked up.
MAX_POOL = 1024
#: The most seconds :func:`acquire` waits for a pool user to be free.
ACQUIRE_WAIT = 600.0
# How often a waiting acquire() tries the pool again.
_RETRY = 0.05


class PoolExhausted(OSError):
    """Every pool user stayed taken for :data:`ACQUIRE_WAIT` seconds."""


class SharedSandboxUserWarning(UserWarning):
    """Concurrent sandboxes share one host user: its per-user kernel accounts are a channel."""


@dataclass
class Lease:
    """The identity a sandbox runs as (``None``: the caller's), held until :meth:`release`."""

    identity: tuple[int, int] | None
    fd: int = -1

    def release(self) -> None:
        """Give the user back (idempotent); call once every process of the sandbox is gone."""
        if self.fd >= 0:
            os.close(self.fd)  # drops the flock
            self.fd = -1


@lru_cache(maxsize=4)
def pool_users(base: str) -> tuple[tuple[int, int], ...]:
    """``(uid, gid)`` of the pool users ``{base}-0``, ``{base}-1``, ... (up to the first gap)."""
    users = []
    for i in range(MAX_POOL):
        try:
            entry = pwd.getpwnam(f"{base}-{i}")
        except KeyError:
            break
        if entry.pw_uid != 0:
            users.append((entry.pw_uid, entry.pw_gid))
    return tuple(users)


_warned: set[str] = set()
_lock = ForkSafeLock()
_next = 0


def _warn(key: str, message: str) -> None:
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, SharedSandboxUserWarning, stacklevel=4)


def _lock_dir() -> str | None:
    try:
        os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
        info = os.lstat(LOCK_DIR)
    except OSError:
        return None
    # Only a directory of ours that nobody else can write: a lock elsewhere proves nothing.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        return None
    return LOCK_DIR


def acquire(private_process_count: bool) -> Lease:
    """The user for a new sandbox (see the module's docstring).

    Args:
        private_process_count: Whether the backend gives each sandbox a user namespace of
            its own (its process count is private then; the per-user pipe and in-flight
            descriptor accounts are not, so it takes a pool user all the same). Kept for
            callers; only the warnings' wording depends on it.

    Raises:
        SandboxUnavailable: If the caller is root and the base sandbox user does not exist.
        PoolExhausted: If every pool user stayed taken for :data:`ACQUIRE_WAIT` seconds.
    """
    base_identity = sandbox_identity()
    shared = (
        "share its per-user kernel accounts (pipe buffers, descriptors in flight)"
        if private_process_count
        else "can count each other's processes"
    )
    if base_identity is None:  # not root: no other user to switch to
        _warn(
            "not-root",
            "rllm_envs.sandbox: not root, so concurrent sandboxes all run as the calling user "
            f"and {shared}, a channel between them. Run as root with the user pool "
            "(`sudo bash scripts/setup_sandbox_user.sh`).",
        )
        return Lease(None)
    base = os.environ.get("RLLM_SANDBOX_USER", SANDBOX_USER)
    users = pool_users(base)
    directory = _lock_dir() if users else None
    if directory is None:
        _warn(
            "no-pool",
            f"rllm_envs.sandbox: concurrent sandboxes share the user `{base}` (no users "
            f"`{base}-0`, `{base}-1`, ... or no lock directory {LOCK_DIR}), so they {shared}, "
            "a channel between them. Create the pool with "
            "`sudo bash scripts/setup_sandbox_user.sh` (RLLM_SANDBOX_POOL users, default 256).",
        )
        return Lease(base_identity)
    deadline = time.monotonic() + ACQUIRE_WAIT
    while True:
        lease = _try_pool(users, directory)
        if lease is not None:
            return lease
        if time.monotonic() >= deadline:
            raise PoolExhausted(
                errno.EAGAIN,
                f"every one of the {len(users)} sandbox users `{base}-N` stayed taken for "
                f"{ACQUIRE_WAIT:g} s (concurrent sandboxes never share one). Run fewer at "
                "once or create more with "
                "`sudo RLLM_SANDBOX_POOL=<n> bash scripts/setup_sandbox_user.sh`.",
            )
        time.sleep(_RETRY)


def _try_pool(users: tuple[tuple[int, int], ...], directory: str) -> Lease | None:
    """A free pool user, locked, or ``None`` if every one is taken."""
    global _next
    with _lock:
        start = _next
        _next = (_next + 1) % len(users)
    for k in range(len(users)):
        uid, gid = users[(start + k) % len(users)]
        try:
            fd = os.open(
                os.path.join(directory, f"{uid}.lock"),
                os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
                0o600,
            )
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by another sandbox (of this or another host process)
            os.close(fd)
            continue
        return Lease((uid, gid), fd)
    return None
