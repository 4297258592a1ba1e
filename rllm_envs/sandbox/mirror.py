r"""A copy of the sandbox's shown directories on a tmpfs, so that no lookup leaves a trace.

Why: the host's directory-entry cache remembers names that do *not* exist. A ``stat`` of a
missing name under a directory that a sandbox sees as a bind of the host's (``/usr/include``,
the standard library, the compiler's headers...) leaves a negative entry behind, and a later
``stat`` of the same name, from any sandbox, takes about 0.3 us instead of 2 us, for minutes.
That carried bits between sandboxes, concurrent or one after the other: a relay with no
solving code earned reward 1.0 next to a solving sibling (session 11, attack N1). tmpfs does
not keep negative entries (its lookups drop them as soon as they are released), so a directory
that lives on a tmpfs remembers nothing a lookup asked for.

:func:`mirror` copies every directory the minimal root (:func:`resident.root`) shows whole
into a tmpfs (``/dev/shm`` unless :data:`MIRROR_ENV` names another), once per machine and
content (a digest of what it copies names it; a concurrent builder's copy is reused), and
bubblewrap binds the copies in place of the host's directories. Files that stay the
host's are bound one by one over an empty placeholder in the copy: large files (the
precompiled header) and, where the tmpfs is mounted ``noexec``, shared objects and programs
(each such bind costs the sandbox's start about 0.2 ms).
The copy is read-only to everyone but its owner, and the keeper locks its pages like the
host files' (:func:`resident.hold_also`). It is a snapshot: a package upgraded while the
process runs shows in the sandbox from the next process on.

Where no tmpfs is writable with room to spare (:data:`_HEADROOM` left free: a container's
64 MiB ``/dev/shm`` is other programs' shared memory), :func:`mirror` returns ``None`` and
warns once (:class:`DirectoryCacheWarning`): the sandbox then shows the host's directories, and the
channel is open. firejail cannot use the copy at all (it has no way for an unprivileged user
to bind one path at another, and its ``/`` and ``/usr`` are the host's): see docs/sandbox.md.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass

from rllm_envs.forksafe import ForkSafeLock
from rllm_envs.sandbox import resident

__all__ = ["Mirror", "DirectoryCacheWarning", "MIRROR_ENV", "mirror", "is_tmpfs"]

#: Environment variable naming the directory (on a tmpfs) the copy is built in.
MIRROR_ENV = "RLLM_SANDBOX_MIRROR_DIR"
_DEFAULT_BASE = "/dev/shm"
# Files at least this large stay the host's (bound one by one): no second copy in memory.
_LARGE = 1 << 20
# Bumped when the layout of a copy changes, so an old copy is never taken for a new one.
_FORMAT = 1
_MARK = ".complete"
# Free space (bytes) a copy leaves on its tmpfs, or it is not made (shared memory of others).
_HEADROOM = 256 << 20
# A half-built copy this old (seconds) is a dead builder's: removed by the next builder.
_STALE_SECONDS = 600.0


class DirectoryCacheWarning(UserWarning):
    """The sandbox shows the host's directories: the dentry-cache channel is open."""


@dataclass(frozen=True)
class Mirror:
    """The tmpfs copy of the shown directories.

    Attributes:
        path: The copy's top directory.
        dirs: ``(shown directory, its copy)`` pairs.
        overlays: Host files bound one by one over their placeholders in the copy.
        files: The copy's regular files (placeholders excluded), which the keeper locks.
    """

    path: str
    dirs: tuple[tuple[str, str], ...]
    overlays: tuple[str, ...]
    files: tuple[str, ...]


def is_tmpfs(path: str) -> bool:
    """Whether ``path`` lies on a tmpfs (the longest mount point above it, from mountinfo)."""
    real = os.path.realpath(path)
    best, kind = "", ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                if " - " not in line or len(fields) < 5:
                    continue
                point = fields[4].replace("\\040", " ")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, line.split(" - ", 1)[1].split()[0]
    except OSError:
        return False
    return kind == "tmpfs"


def _keeps_host(path: str, st: os.stat_result, noexec: bool) -> bool:
    """Whether a shown file stays the host's: large, or (on a noexec tmpfs) executable."""
    if st.st_size >= _LARGE:
        return True
    if not noexec:
        return False
    if st.st_mode & 0o111:
        return True
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return True


def _entries(
    top: str, hidden: set[str], noexec: bool
) -> list[tuple[str, str, os.stat_result, str]]:
    """``(kind, path relative to top, lstat, link target)`` of what ``top`` shows, sorted."""
    out: list[tuple[str, str, os.stat_result, str]] = []
    for directory, subdirs, names in os.walk(top):
        subdirs[:] = sorted(d for d in subdirs if os.path.join(directory, d) not in hidden)
        for name in sorted([*names, *subdirs]):
            path = os.path.join(directory, name)
            if path in hidden:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            rel = os.path.relpath(path, top)
            if stat.S_ISLNK(st.st_mode):
                out.append(("link", rel, st, os.readlink(path)))
            elif stat.S_ISDIR(st.st_mode):
                out.append(("dir", rel, st, ""))
            elif stat.S_ISREG(st.st_mode):
                out.append(("host" if _keeps_host(path, st, noexec) else "copy", rel, st, ""))
    return out


def _digest(plan: list[tuple[str, list[tuple[str, str, os.stat_result, str]]]]) -> str:
    h = hashlib.sha256(f"rllm-envs mirror {_FORMAT}\n".encode())
    for top, entries in plan:
        h.update(f"top {top}\n".encode())
        for kind, rel, st, target in entries:
            ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)
            h.update(f"{kind} {rel!r} {ident} {target!r}\n".encode())
    return h.hexdigest()[:24]


def _fill(base: str, plan: list[tuple[str, list[tuple[str, str, os.stat_result, str]]]]) -> None:
    """Write the copy of ``plan`` under ``base`` (one numbered directory per shown top)."""
    for index, (top, entries) in enumerate(plan):
        root = os.path.join(base, str(index))
        os.mkdir(root, 0o755)
        for kind, rel, st, target in entries:
            dest = os.path.join(root, rel)
            if kind == "dir":
                os.mkdir(dest, 0o755)
            elif kind == "link":
                os.symlink(target, dest)
            elif kind == "host":  # an empty placeholder, the host's file is bound over it
                os.close(os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444))
            else:
                shutil.copyfile(os.path.join(top, rel), dest, follow_symlinks=False)
                os.chmod(dest, (st.st_mode & 0o111) | 0o444)
        os.chmod(root, 0o755)


def _trusted(path: str, digest: str) -> bool:
    """Whether ``path`` is a finished copy of ``digest`` that only this user can change."""
    try:
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return False
        with open(os.path.join(path, _MARK), encoding="utf-8") as f:
            return f.read() == digest
    except OSError:
        return False


def _sweep(base: str, prefix: str) -> None:
    """Remove this user's copies left half-built (a process killed while copying)."""
    for entry in os.scandir(base):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        stale = time.time() - st.st_mtime > _STALE_SECONDS
        if entry.name.startswith(prefix) and ".tmp-" in entry.name and stale:
            if st.st_uid == os.geteuid() and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry.path, ignore_errors=True)


def _build(base: str, hidden: set[str]) -> Mirror:
    allow = resident.root()
    tops = sorted(b for b in allow.binds if os.path.isdir(b) and not os.path.islink(b))
    noexec = bool(os.statvfs(base).f_flag & os.ST_NOEXEC)
    plan = [(top, _entries(top, hidden, noexec)) for top in tops]
    digest = _digest(plan)
    final = os.path.join(base, f"rllm-envs-root-{os.geteuid()}-{digest}")
    if not _trusted(final, digest):
        need = sum(st.st_size for _, found in plan for kind, _, st, _ in found if kind == "copy")
        vfs = os.statvfs(base)
        if vfs.f_bavail * vfs.f_frsize < need + _HEADROOM:
            # A small /dev/shm (a container's 64 MiB) is other programs' shared memory too.
            raise OSError(
                f"{need >> 20} MiB for the copy and {_HEADROOM >> 20} MiB to spare are more than "
                f"the {vfs.f_bavail * vfs.f_frsize >> 20} MiB free there"
            )
        _sweep(base, f"rllm-envs-root-{os.geteuid()}-")
        work = tempfile.mkdtemp(prefix=os.path.basename(final) + ".tmp-", dir=base)
        try:
            _fill(work, plan)
            with open(os.path.join(work, _MARK), "w", encoding="utf-8") as f:
                f.write(digest)
            os.chmod(work, 0o755)
            try:
                os.rename(work, final)
            except OSError:  # another process finished first, or a stranger's path
                if not _trusted(final, digest):
                    # Ours alone (kept for the machine's life like the shared one), under a
                    # name no builder sweeps.
                    final = work.replace(".tmp-", ".own-")
                    os.rename(work, final)
                    work = ""
        finally:
            if work and os.path.exists(work):
                shutil.rmtree(work, ignore_errors=True)
    dirs, overlays, files = [], [], []
    for index, (top, entries) in enumerate(plan):
        copy = os.path.join(final, str(index))
        dirs.append((top, copy))
        for kind, rel, _, _ in entries:
            if kind == "host":
                overlays.append(os.path.join(top, rel))
            elif kind == "copy":
                files.append(os.path.join(copy, rel))
    return Mirror(path=final, dirs=tuple(dirs), overlays=tuple(overlays), files=tuple(files))


_lock = ForkSafeLock()
_built: dict[str, Mirror | None] = {}
_warned = False


def mirror(hidden: Iterable[str] = ()) -> Mirror | None:
    """The tmpfs copy of the shown directories (built once per machine, cached per process).

    Args:
        hidden: Paths inside the shown directories that the copy leaves out (the root's
            masks and this package's files).

    Returns ``None``, with one :class:`DirectoryCacheWarning`, where no tmpfs is writable.
    """
    global _warned
    base = os.environ.get(MIRROR_ENV) or _DEFAULT_BASE
    with _lock:
        if base in _built:
            return _built[base]
        result: Mirror | None = None
        reason = ""
        if not os.path.isdir(base) or not is_tmpfs(base):
            reason = f"{base} is not a tmpfs"
        else:
            try:
                result = _build(base, set(hidden))
            except OSError as exc:
                reason = f"copying the shown directories into {base} failed: {exc}"
        if result is not None:
            resident.hold_also(result.files)
        elif not _warned:
            _warned = True
            warnings.warn(
                f"rllm_envs.sandbox: {reason}; bubblewrap sandboxes show the host's "
                "directories, whose cache of missing names carries bits between sandboxes. "
                f"Point ${MIRROR_ENV} at a writable tmpfs; see docs/sandbox.md, residual "
                "channels.",
                DirectoryCacheWarning,
                stacklevel=3,
            )
        _built[base] = result
        return result
