r"""The sandbox's minimal read-only root, and the keeper that holds all of it in memory.

Why: the host's page cache is shared by every sandbox. Touching a page of a mapped file is a
major fault (``getrusage().ru_majflt``, field 12 of ``/proc/self/stat``, or a slow read) iff
the page was not cached, so a sandbox that reads chosen pages of a rarely used visible file
sends bits to any later or concurrent sandbox that probes them (session 10, attack F0: a
relay that never solved earned reward 1.0 next to a solving sibling). Denying the calls that
evict or probe without reading (seccomp) does not close it: reading is enough.

The fix, in two parts:

* :func:`root` -- the **allow-list**: only the files sandboxed programs need are visible
  (both backends build the sandbox's file system from it, :mod:`~rllm_envs.sandbox.backends`):
  ``/usr/bin/python3`` and its standard library (minus the test suite, IDLE, Tk, 2to3,
  ``ensurepip``, the static library and third-party packages), the shared libraries they
  load (ELF dependencies, read by the dynamic linker itself through ``ldd``), the C++
  toolchain (the ``g++`` driver, ``cc1plus``, ``as``, ``ld``, the start files and libraries
  of a link, the C++ headers and the C headers they include, the precompiled header
  directory), the ``C.utf8`` locale and ``/etc/ld.so.cache``. Computed once per process.
* :func:`ensure` -- the **keeper**: maps every regular file of the allow-list and ``mlock``\ s
  it, once per process (lazily, before the first sandbox starts, thread-safe), for as long
  as the process lives. So every page a sandbox can read is resident and stays so: a page is
  never a major fault, and nothing a sandbox does changes what is cached (eviction calls are
  denied; a sandbox's memory group reclaims only pages charged to it, never a locked one).
  Where the kernel refuses the locks (no ``CAP_IPC_LOCK`` and a ``RLIMIT_MEMLOCK`` below the
  allow-list's size) the files are read in once instead, which does not hold them, and a
  :class:`PageCacheWarning` says so once; the judge never fails for it.

The pages are the page cache's own: several judging processes on one machine lock the same
memory, not one copy each. A file replaced while the process runs (a package upgrade, a
rebuilt precompiled header) is a new inode: :func:`ensure` looks at the files again at most
every :data:`RECHECK_SECONDS` and locks what changed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fnmatch
import mmap
import os
import re
import resource
import subprocess
import time
import warnings
from dataclasses import dataclass, field

from rllm_envs.forksafe import ForkSafeLock

__all__ = [
    "Root",
    "Keeper",
    "PageCacheWarning",
    "root",
    "ensure",
    "keeper",
    "hold_also",
    "RECHECK_SECONDS",
    "STDLIB_HIDDEN",
]

#: Children of the standard library's directory no sandboxed program needs (globs): hidden.
STDLIB_HIDDEN = (
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "lib2to3",
    "pydoc_data",
    "config-*",
    "dist-packages",
    "site-packages",
)
# Extension modules of the standard library whose libraries are not shown (terminals, Tk,
# NIS, dbm, crypt, audio: each shown library is a mount in every sandbox).
_DYNLOAD_UNLINKED = (
    "_tkinter*",
    "nis.*",
    "_dbm.*",
    "_gdbm.*",
    "readline.*",
    "_curses*",
    "ossaudiodev.*",
    "spwd.*",
    "_crypt.*",
)
# A header directory whose shown files would take more mounts than this is shown whole,
# with its large subtrees of other packages hidden (their small files are shown, and locked).
_MOST_HEADER_MOUNTS = 8
# Unshown entries at least this large (bytes, a directory's whole tree) are hidden.
_MASK_MIN = 1 << 20
# Headers a C++ submission may include besides the standard ones (their closure is shown).
_EXTRA_HEADERS = (
    "bits/stdc++.h",
    "bits/extc++.h",
    "x86intrin.h",
    "unistd.h",
    "sys/mman.h",
    "sys/stat.h",
    "sys/time.h",
    "sys/resource.h",
    "sys/types.h",
    "fcntl.h",
)
# Files of a link g++ may ask ld for (start files, libraries, linker scripts).
_LINK_FILES = (
    "Scrt1.o",
    "crt1.o",
    "crti.o",
    "crtn.o",
    "crtbegin.o",
    "crtend.o",
    "crtbeginS.o",
    "crtendS.o",
    "libstdc++.so",
    "libm.so",
    "libc.so",
    "libgcc_s.so",
    "libgcc_s.so.1",
    "libgcc.a",
    "libgcc_eh.a",
    "libc_nonshared.a",
)
#: How often (seconds, at most) :func:`ensure` checks that the locked files are still the
#: ones at their paths.
RECHECK_SECONDS = 60.0
# Directories whose whole content is shown (beyond what the closures name).
_ETC_FILES = ("/etc/ld.so.cache",)
_LOCALES = ("/usr/lib/locale/C.utf8", "/usr/lib/locale/C.UTF-8")


class PageCacheWarning(UserWarning):
    """The sandbox's files could not be locked in memory: the page-cache channel is open."""


@dataclass(frozen=True)
class Root:
    """What a sandbox's file system shows (read-only, at the same paths as on the host).

    Attributes:
        binds: Real paths (directories or files, no symlink on the way) shown as they are;
            none lies inside another.
        links: ``(path, target)`` of each symlink on the way to what is shown (``path`` with
            no symlink before its last part; ``target`` as ``readlink`` gives it).
        masks: Directories inside ``binds`` that are hidden (an empty directory instead).
        files: Every regular file shown (what the keeper locks), sorted.
        size: Their total size in bytes.
    """

    binds: tuple[str, ...]
    links: tuple[tuple[str, str], ...]
    masks: tuple[str, ...]
    files: tuple[str, ...]
    size: int

    def shows(self, path: str) -> bool:
        """Whether the real path ``path`` is shown (inside a bind and outside every mask)."""
        inside = any(path == b or path.startswith(b + "/") for b in self.binds)
        return inside and not any(path == m or path.startswith(m + "/") for m in self.masks)


# ------------------------------------------------------------------ the allow-list


class _Builder:
    def __init__(self) -> None:
        self.links: dict[str, str] = {}
        self.paths: set[str] = set()  # real files or directories to show
        self.masks: set[str] = set()
        self.header_roots: list[str] = []  # directories whose shown files are grouped

    def resolve(self, path: str) -> str | None:
        """The real path of ``path``, recording each symlink on the way; None if missing."""
        parts = [p for p in os.path.normpath(path).split("/") if p]
        current = "/"
        hops = 0
        while parts:
            name = parts.pop(0)
            candidate = os.path.join(current, name)
            if os.path.islink(candidate):
                hops += 1
                if hops > 40:
                    return None
                target = os.readlink(candidate)
                self.links[candidate] = target
                base = "/" if target.startswith("/") else current
                joined = os.path.normpath(os.path.join(base, target))
                parts = [p for p in joined.split("/") if p] + parts
                current = "/"
                continue
            current = os.path.normpath(candidate)
        return current if os.path.exists(current) else None

    def add(self, path: str) -> str | None:
        """Show ``path`` (a file or a directory, symlinks followed); its real path."""
        real = self.resolve(path)
        if real is not None and "\n" not in real:
            self.paths.add(real)
        return real


def _run(argv: list[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
            cwd="/",
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout + "\n" + done.stderr


def _python(builder: _Builder, python: str) -> list[str]:
    """Show the interpreter and its standard library; the ELF files to follow."""
    builder.add(python)
    real = builder.resolve(python)
    elves = [real] if real else []
    out = _run([python, "-I", "-S", "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"])
    stdlib = out.strip().splitlines()[0] if out.strip() else ""
    stdlib_real = builder.add(stdlib) if stdlib.startswith("/") else None
    if stdlib_real is None:
        return elves
    for name in sorted(os.listdir(stdlib_real)):
        if any(fnmatch.fnmatch(name, pattern) for pattern in STDLIB_HIDDEN):
            builder.masks.add(os.path.join(stdlib_real, name))
    dynload = os.path.join(stdlib_real, "lib-dynload")
    if os.path.isdir(dynload):
        for name in sorted(os.listdir(dynload)):
            path = os.path.join(dynload, name)
            # A module left out stays (a small file, locked), without its libraries: its
            # import fails (ImportError), as where they are not installed.
            skipped = any(fnmatch.fnmatch(name, pattern) for pattern in _DYNLOAD_UNLINKED)
            if name.endswith(".so") and not skipped:
                elves.append(path)
    return elves


def _cxx(builder: _Builder, cxx: str, flags: tuple[str, ...], pch_dir: str) -> list[str]:
    """Show g++, its programs, headers and link inputs; the ELF files to follow."""
    if not os.path.exists(cxx):
        return []
    elves: list[str] = []
    for path in (cxx, "/usr/bin/as", "/usr/bin/ld"):
        real = builder.add(path)
        if real:
            elves.append(real)
    for prog in ("cc1plus", "collect2", "lto-wrapper"):
        found = _run([cxx, f"-print-prog-name={prog}"]).strip().splitlines()
        if found and found[0].startswith("/") and os.path.exists(found[0]):
            real = builder.add(found[0])
            if real:
                elves.append(real)
    for name in _LINK_FILES:
        found = _run([cxx, *flags, f"-print-file-name={name}"]).strip().splitlines()
        if not found or not found[0].startswith("/"):
            continue
        real = builder.add(found[0])
        if real and os.path.isfile(real):
            if name.endswith(".so") or ".so." in name:
                elves.append(real)
            for referenced in _linker_script(real):
                target = builder.add(referenced)
                if target:
                    elves.append(target)
    # Headers: the directories of g++'s own (C++ library, compiler intrinsics) whole, and
    # what the standard headers and a few POSIX ones include from the C library.
    search = _run([cxx, *flags, "-E", "-v", "-x", "c++", "-"], stdin="")
    dirs = _include_dirs(search)
    for directory in dirs:
        if "/c++/" in directory or "/gcc/" in directory:
            builder.add(directory)
    source = "".join(f"#include <{h}>\n" for h in _EXTRA_HEADERS)
    deps = _run([cxx, *flags, "-M", "-x", "c++", "-"], stdin=source)
    closure = [
        token
        for token in deps.replace("\\\n", " ").split()
        if token.startswith("/") and os.path.isfile(token)
    ]
    for path in _c_library_headers(closure, dirs):
        builder.add(path)
    builder.header_roots.extend(d for d in dirs if not any(d.startswith(e + "/") for e in dirs))
    if os.path.isdir(pch_dir):
        builder.add(pch_dir)
    return elves


def _c_library_headers(closure: list[str], dirs: list[str]) -> list[str]:
    """The C headers a program may include: those of ``closure`` and of their packages.

    The packages that own them (dpkg: the C library's, the kernel's) give every header of
    the C library (``<arpa/inet.h>``, ...); without dpkg, the closure alone.
    """
    own = [p for p in closure if "/c++/" not in p and "/gcc/" not in p]
    owners: set[str] = set()
    for line in _run(["dpkg-query", "-S", *own]).splitlines() if own else []:
        if ": /" in line:
            owners.update(name.split(":")[0].strip() for name in line.split(": /")[0].split(","))
    listed = _run(["dpkg-query", "-L", *sorted(owners)]).splitlines() if owners else []
    roots = tuple(d + "/" for d in dirs)
    headers = [p for p in listed if p.startswith(roots) and os.path.isfile(p)]
    return closure + headers


def _include_dirs(text: str) -> list[str]:
    dirs: list[str] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and line.startswith(" /"):
            dirs.append(os.path.normpath(line.strip()))
    return dirs


def _linker_script(path: str) -> list[str]:
    """Absolute paths a GNU ld script (a text ``.so``) names, or [] for a real library."""
    try:
        with open(path, "rb") as f:
            head = f.read(4096)
    except OSError:
        return []
    if head.startswith(b"\x7fELF") or b"GROUP" not in head and b"INPUT" not in head:
        return []
    return re.findall(r"(/[^\s()]+)", head.decode("latin-1").split("*/")[-1])


def _elf_dependencies(builder: _Builder, elves: list[str]) -> None:
    """Show the shared libraries the dynamic linker loads for ``elves`` (and the linker)."""
    done: set[str] = set()
    todo = sorted(set(elves))
    while todo:
        batch = [p for p in todo if p not in done]
        done.update(batch)
        if not batch:
            break
        out = _run(["ldd", *batch])
        found: list[str] = []
        for line in out.splitlines():
            line = line.strip()
            match = re.match(r"^\S+ => (/\S+) \(0x", line) or re.match(r"^(/\S+) \(0x", line)
            if match:
                real = builder.add(match.group(1))
                if real:
                    found.append(real)
        todo = [p for p in set(found) if p not in done]


def _walk_files(builder: _Builder, paths: set[str], masks: set[str]) -> dict[str, int]:
    """Every regular file shown: ``{real path: size}``; symlinks inside are followed."""
    files: dict[str, int] = {}
    pending = sorted(paths)
    seen: set[str] = set()

    def masked(p: str) -> bool:
        return any(p == m or p.startswith(m + "/") for m in masks)

    while pending:
        top = pending.pop()
        if top in seen or masked(top):
            continue
        seen.add(top)
        if os.path.isfile(top) and not os.path.islink(top):
            files[top] = os.path.getsize(top)
            continue
        for directory, subdirs, names in os.walk(top):
            subdirs[:] = [d for d in subdirs if not masked(os.path.join(directory, d))]
            for name in [*names, *subdirs]:
                path = os.path.join(directory, name)
                if masked(path):
                    continue
                if os.path.islink(path):
                    # A link in a shown directory to a file: show the file (Debian's
                    # sitecustomize.py). One to a directory stays dangling.
                    if os.path.isfile(path):
                        real = builder.add(path)
                        if real is not None and real not in seen and not masked(real):
                            pending.append(real)
                elif name in names and os.path.isfile(path):
                    try:
                        files[path] = os.stat(path).st_size
                    except OSError:
                        continue
    return files


def _cover(top: str, shown: set[str]) -> set[str]:
    """The fewest paths under ``top`` that show exactly the files of ``shown`` under it."""
    ancestors = {
        os.path.dirname(p[: i + len(top) + 1])
        for p in shown
        if p.startswith(top + "/")
        for i in range(len(p) - len(top))
        if p[len(top) + i] == "/"
    }

    def cover(directory: str) -> tuple[bool, set[str]]:
        complete, found = True, set()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return False, set()
        for entry in entries:
            if entry.is_symlink():
                continue  # shown with a whole directory: a link is no page
            if entry.is_dir():
                if entry.path not in ancestors:
                    complete = False
                    continue
                whole, sub = cover(entry.path)
                complete = complete and whole
                found |= sub
            elif entry.path in shown:
                found.add(entry.path)
            else:
                complete = False
        return complete, ({directory} if complete else found)

    return cover(top)[1] if top in ancestors else set()


def _tree_size(path: str) -> int:
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(directory, name)).st_size
            except OSError:
                continue
    return total


def _large_others(top: str, shown: set[str]) -> list[str]:
    """The entries under ``top`` holding no shown file and at least :data:`_MASK_MIN` bytes."""
    ancestors = {os.path.dirname(p) for p in shown if p.startswith(top + "/")}
    for path in list(ancestors):
        while path.startswith(top + "/"):
            path = os.path.dirname(path)
            ancestors.add(path)
    masks: list[str] = []
    pending = [top]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_symlink():
                continue
            if entry.is_dir():
                if entry.path in ancestors:
                    pending.append(entry.path)
                elif _tree_size(entry.path) >= _MASK_MIN:
                    masks.append(entry.path)
            elif entry.path not in shown and entry.stat().st_size >= _MASK_MIN:
                masks.append(entry.path)
    return sorted(masks)


def _minimal(paths: set[str]) -> tuple[str, ...]:
    kept: list[str] = []
    for path in sorted(paths):
        if not any(path.startswith(k + "/") for k in kept):
            kept.append(path)
    return tuple(kept)


def build_root(python: str, cxx: str, cxx_flags: tuple[str, ...], pch_dir: str) -> Root:
    """Compute the allow-list (see the module's docstring); about a second, subprocesses."""
    builder = _Builder()
    elves = _python(builder, python)
    elves += _cxx(builder, cxx, cxx_flags, pch_dir)
    _elf_dependencies(builder, elves)
    for path in (*_ETC_FILES, *_LOCALES):
        if os.path.exists(path):
            builder.add(path)
    libc = next((p for p in builder.paths if os.path.basename(p).startswith("libc.so.")), None)
    if libc is not None:  # iconv's module cache, next to the C library (g++ reads it)
        gconv = os.path.join(os.path.dirname(libc), "gconv", "gconv-modules.cache")
        if os.path.isfile(gconv):
            builder.add(gconv)
    files = _walk_files(builder, set(builder.paths), set(builder.masks))
    # Fewer mounts: a directory whose every file is shown is shown whole; a header
    # directory that would still take many is shown whole minus its large other trees.
    grouped = False
    for top in builder.header_roots:
        if os.path.isdir(top) and top not in builder.paths:
            inside = {p for p in builder.paths if p.startswith(top + "/")}
            builder.paths -= inside
            cover = _cover(top, set(files))
            if len(cover) > _MOST_HEADER_MOUNTS:
                cover = {top}
                builder.masks.update(_large_others(top, set(files)))
                grouped = True
            builder.paths |= cover
    if grouped:
        files = _walk_files(builder, set(builder.paths), set(builder.masks))
    binds = _minimal(builder.paths)
    masks = tuple(sorted(m for m in builder.masks if any(m.startswith(b + "/") for b in binds)))
    links = tuple(
        sorted((path, target) for path, target in builder.links.items() if "\n" not in path)
    )
    return Root(
        binds=binds,
        links=links,
        masks=masks,
        files=tuple(sorted(files)),
        size=sum(files.values()),
    )


_root_lock = ForkSafeLock()
_root: Root | None = None


def root() -> Root:
    """The allow-list of this machine (computed once per process, thread-safe)."""
    global _root
    with _root_lock:
        if _root is None:
            from rllm_envs.sandbox.harness import CPP_PCH_DIR, CXX, CXX_FLAGS

            _root = build_root("/usr/bin/python3", CXX, CXX_FLAGS, CPP_PCH_DIR)
        return _root


# ------------------------------------------------------------------ the keeper

_PROT_READ = mmap.PROT_READ
_MAP_SHARED = mmap.MAP_SHARED
_MAP_FAILED = ctypes.c_void_p(-1).value


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [
        ctypes.c_void_p,
        ctypes.c_size_t,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_int,
        ctypes.c_long,
    ]
    libc.mlock.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return libc


@dataclass
class Keeper:
    """The files of :func:`root` mapped and locked in this process (see :func:`ensure`).

    Attributes:
        files: How many regular files the allow-list has.
        size: Their total size in bytes.
        locked: Bytes locked in memory (file sizes; 0 where the kernel refused).
        seconds: Wall time of the first :func:`ensure` (allow-list and locking).
        refused: Why locking was refused (``""`` when every file is locked).
    """

    files: int = 0
    size: int = 0
    locked: int = 0
    seconds: float = 0.0
    refused: str = ""
    pid: int = 0
    checked: float = 0.0
    # path -> (dev, inode, size, mtime, address, length, locked)
    mappings: dict[str, tuple[int, int, int, int, int, int, bool]] = field(default_factory=dict)


_keeper_lock = ForkSafeLock()
_keeper: Keeper | None = None
_warned = False
# Files the keeper holds besides the root's (the tmpfs copy of the shown directories).
_also: tuple[str, ...] = ()
_MADV_WILLNEED = 3


def _identity(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _hold(libc: ctypes.CDLL, keeper: Keeper, path: str) -> None:
    """Map ``path`` (read-only, shared) and lock it; once refused, just read it in."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        st = os.fstat(fd)
        address = 0
        if st.st_size:
            address = libc.mmap(None, st.st_size, _PROT_READ, _MAP_SHARED, fd, 0) or 0
            if address == _MAP_FAILED:
                return
    finally:
        os.close(fd)
    old = keeper.mappings.pop(path, None)
    if old is not None and old[4]:
        libc.munmap(old[4], old[5])
        keeper.locked -= old[5] if old[6] else 0
    locked = False
    if address and not keeper.refused:
        if libc.mlock(address, st.st_size) == 0:
            keeper.locked += st.st_size
            locked = True
        else:
            errno = ctypes.get_errno()
            keeper.refused = f"mlock: {os.strerror(errno)} (errno {errno})"
    if address and not locked:
        libc.madvise(address, st.st_size, _MADV_WILLNEED)
        try:
            with open(path, "rb", buffering=0) as f:  # read it in (not held)
                while f.read(1 << 20):
                    pass
        except OSError:
            pass
    keeper.mappings[path] = (*_identity(st), address, st.st_size, locked)


def _lockable(size: int) -> str:
    """Why ``size`` bytes cannot be locked here, or ``""`` (a guess; mlock has the last word)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft == resource.RLIM_INFINITY or soft >= size + (1 << 20):
        return ""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:") and int(line.split()[1], 16) & (1 << 14):
                    return ""  # CAP_IPC_LOCK: no limit
    except (OSError, ValueError, IndexError):
        pass
    return f"RLIMIT_MEMLOCK is {soft} bytes, below the {size} bytes of the sandbox's files"


def _start(libc: ctypes.CDLL, keeper: Keeper, files: tuple[str, ...], size: int) -> None:
    keeper.refused = _lockable(size)
    for path in files:
        _hold(libc, keeper, path)


def _release(libc: ctypes.CDLL, keeper: Keeper) -> None:
    """Unmap (and so unlock) every file ``keeper`` holds."""
    for _, _, _, _, address, length, _ in keeper.mappings.values():
        if address:
            libc.munmap(address, length)
    keeper.mappings.clear()
    keeper.locked = 0


def _recheck(libc: ctypes.CDLL, keeper: Keeper, allow: Root) -> None:
    """Lock what changed under the shown paths: a replaced file, a new one in a directory."""
    current = _walk_files(_Builder(), set(allow.binds), set(allow.masks))
    for path in current:
        held = keeper.mappings.get(path)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if held is None or _identity(st) != held[:4]:
            _hold(libc, keeper, path)
    keeper.files = len(current) + len(_also)
    keeper.size = sum(current.values()) + _size(_also)


def ensure() -> Keeper:
    """Start the keeper of this process (once; the first call takes about a second).

    Locks every file of :func:`root` in memory; afterwards, at most every
    :data:`RECHECK_SECONDS`, locks again a file whose path now names another file. In a
    forked child (locks are not inherited) it locks them again. Never raises for a refusal:
    warns once (:class:`PageCacheWarning`) and reads the files in instead.
    """
    global _keeper, _warned
    with _keeper_lock:
        keeper = _keeper
        now = time.monotonic()
        if keeper is not None and keeper.pid == os.getpid():
            if now - keeper.checked >= RECHECK_SECONDS:
                keeper.checked = now
                _recheck(_libc(), keeper, root())
            return keeper
        started = time.perf_counter()
        allow = root()
        libc = _libc()
        if keeper is not None:  # a forked child: the mappings are there, the locks are not
            _release(libc, keeper)
        files = (*allow.files, *_also)
        size = allow.size + _size(_also)
        keeper = Keeper(files=len(files), size=size, pid=os.getpid(), checked=now)
        _start(libc, keeper, files, size)
        keeper.seconds = time.perf_counter() - started
        _keeper = keeper
        if keeper.refused and not _warned:
            _warned = True
            warnings.warn(
                "rllm_envs.sandbox: the sandbox's files could not be locked in memory "
                f"({keeper.refused}); sandboxes can signal each other through the host's "
                "page cache (a page they read is cached). Run as root, give the process "
                f"CAP_IPC_LOCK, or raise RLIMIT_MEMLOCK to at least {size >> 20} MiB + 1 "
                "(e.g. `ulimit -l unlimited`); see docs/sandbox.md, residual channels.",
                PageCacheWarning,
                stacklevel=3,
            )
        return keeper


def _size(paths: tuple[str, ...]) -> int:
    total = 0
    for path in paths:
        try:
            total += os.stat(path).st_size
        except OSError:
            continue
    return total


def hold_also(paths: tuple[str, ...]) -> None:
    """Have the keeper hold ``paths`` too (now if it runs, and in every forked child)."""
    global _also
    with _keeper_lock:
        held = set(_also)
        new = tuple(p for p in paths if p not in held)
        _also = (*_also, *new)
        keeper = _keeper
        if keeper is not None and keeper.pid == os.getpid() and new:
            libc = _libc()
            for path in new:
                _hold(libc, keeper, path)
            keeper.files += len(new)
            keeper.size += _size(new)


def keeper() -> Keeper | None:
    """This process's keeper, or ``None`` before the first sandbox."""
    return _keeper if _keeper is not None and _keeper.pid == os.getpid() else None
