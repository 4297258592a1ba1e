"""Sandbox backends: how a command is wrapped so that it runs isolated.

Each backend turns the interpreter command line into a wrapped one (:meth:`Backend.launch`).
Resource limits are set by the bootstrap inside the sandbox (so they bind the program, not
the wrapper), a control group per sandbox bounds memory and processes where the machine
offers one (:mod:`rllm_envs.sandbox.cgroup`), and the wall clock is enforced from the
parent (:mod:`rllm_envs.sandbox.runner`).

* :class:`Firejail` -- used where bubblewrap cannot run: new network namespace with no interfaces,
  PID/IPC namespaces, firejail's own seccomp list (under our filter, see below),
  sockets limited to unix/inet/netlink (no vsock), no capabilities, the system directories
  (``/usr``, ``/etc``, ...) bound read-only, every other top-level directory hidden, and the
  machine-wide counters of ``/proc`` and ``/sys`` hidden (:mod:`~rllm_envs.sandbox.procmask`,
  through a profile of ours: too many paths for firejail's arguments). Not
  ``--read-only=/``: it bind-mounts ``/`` over itself, and ``/..`` at the process root
  leads to the writable lower copy with none of the blacklists.
* :class:`Bubblewrap` -- the default where usable: an empty root showing the minimal root
  read-only, its directories bound from their tmpfs copy (:mod:`~rllm_envs.sandbox.mirror`:
  no lookup of a missing name leaves a trace another sandbox could time), fresh
  ``/proc`` (its machine-wide counters masked, see :mod:`~rllm_envs.sandbox.procmask`) and
  ``/dev`` (read-only), every namespace unshared (user included), and the bootstrap as the
  namespace's init.

Both get the same syscall filter (:mod:`rllm_envs.sandbox.seccomp`), installed by the
bootstrap inside the sandbox before any program arrives.
* :class:`Plain` -- a plain subprocess with the same limits and user but **no isolation**;
  only used when asked for by name, and it warns.

When the calling process is root, the program runs as the dedicated unprivileged user
``rllm-sandbox`` (see :func:`sandbox_identity`): the kernel does not apply the
process-count limit to root, so a fork bomb would get through. Without a user namespace
(firejail), each concurrent sandbox gets a user of its own from a pool
(:mod:`rllm_envs.sandbox.uids`), so that none can count another's processes.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import warnings
from abc import ABC, abstractmethod
from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from rllm_envs.error import DependencyNotInstalled, InvalidEnvConfig, did_you_mean
from rllm_envs.forksafe import ForkSafeLock
from rllm_envs.sandbox import installed, landlock, mirror, procmask, resident, seccomp

__all__ = [
    "Backend",
    "Firejail",
    "Bubblewrap",
    "Plain",
    "BACKENDS",
    "PYTHON",
    "SANDBOX_USER",
    "SandboxUnavailable",
    "PlainBackendWarning",
    "available_backends",
    "select_backend",
    "sandbox_identity",
]

#: The interpreter used inside the sandbox. A system path on purpose: a virtualenv or
#: pyenv interpreter under a hidden home directory is not visible inside the sandbox.
PYTHON = "/usr/bin/python3"
#: The dedicated unprivileged user sandboxed code runs as when the caller is root
#: (override with the ``RLLM_SANDBOX_USER`` environment variable).
SANDBOX_USER = "rllm-sandbox"
#: Environment variable naming the default backend (``firejail``, ``bubblewrap``, ``plain``).
BACKEND_ENV_VAR = "RLLM_SANDBOX_BACKEND"

_INSTALL_HINT = (
    "Install a sandbox with `apt-get install firejail bubblewrap` (Debian/Ubuntu), or choose "
    "the non-isolating backend explicitly with backend='plain' (not for untrusted code)."
)
# Top-level directories that make up "the system": visible (read-only) inside the sandbox.
_SYSTEM_DIRS = frozenset(
    {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "sys", "run"}
)


class SandboxUnavailable(DependencyNotInstalled):
    """No usable sandbox backend (or the requested one cannot run here); says how to fix it."""


class PlainBackendWarning(UserWarning):
    """Code is being run by the plain backend, which does not isolate it from the host."""


def sandbox_identity() -> tuple[int, int] | None:
    """The ``(uid, gid)`` sandboxed programs run as, or ``None`` to keep the caller's.

    Root switches to the dedicated system user (``RLLM_SANDBOX_USER``, default
    ``rllm-sandbox``); any other user runs the sandbox as itself.

    Raises:
        SandboxUnavailable: If the caller is root and the dedicated user does not exist.
    """
    if os.geteuid() != 0:
        return None
    name = os.environ.get("RLLM_SANDBOX_USER", SANDBOX_USER)
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise SandboxUnavailable(
            f"Running as root, sandboxed code must run as the unprivileged user `{name}`, "
            "which does not exist (as root the kernel ignores the process limit). Create it "
            f"with `useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "
            f"{name}` (or run `bash scripts/setup_sandbox_user.sh` in the rllm-envs "
            "repository)."
        ) from None
    if entry.pw_uid == 0:
        raise SandboxUnavailable(f"The sandbox user `{name}` must not have uid 0.")
    return entry.pw_uid, entry.pw_gid


def switch_user(
    command: list[str], identity: tuple[int, int] | None
) -> tuple[list[str], dict[str, object]]:
    """The command and ``subprocess.Popen`` arguments that run it as ``identity``.

    With util-linux's ``setpriv`` the switch happens in a small program the command starts
    with (real, effective and saved ids, no supplementary groups, no capabilities left), so
    ``Popen`` may use ``vfork``: asking ``Popen`` itself to switch user makes it ``fork``,
    which copies the page tables of the whole judging process (tens of ms of the host's CPU
    for a trainer holding gigabytes). Without ``setpriv``, ``Popen`` switches.
    """
    if identity is None:
        return command, {}
    setpriv = _setpriv()
    if setpriv is not None:
        uid, gid = identity
        return [setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", *command], {}
    return command, {"user": identity[0], "group": identity[1], "extra_groups": []}


@lru_cache(maxsize=1)
def _setpriv() -> str | None:
    return shutil.which("setpriv", path="/usr/bin:/bin")


class Backend(ABC):
    """How to wrap a command so that it runs isolated."""

    #: Short name used by ``run(..., backend=name)``.
    name: ClassVar[str]
    #: Whether the backend isolates the program from the network and the filesystem.
    isolates: ClassVar[bool] = True
    #: Whether the wrapper reports the program's death by signal N as exit status 128 + N.
    signal_as_status: ClassVar[bool] = True
    #: Whether ``RLIMIT_NPROC`` counts only this sandbox's processes (a user namespace of
    #: its own). Otherwise the kernel counts every process of the user, including other
    #: concurrent runs and the wrappers themselves, and the runner scales the limit up.
    private_process_count: ClassVar[bool] = True
    #: Whether the program runs in a PID namespace of its own, so that at its end the
    #: bootstrap may kill every process it can signal (whatever the program left behind).
    pid_namespace: ClassVar[bool] = True
    #: Whether a run cut short (timeout, output flood) is stopped by killing the wrapper's
    #: descendants first, so that the wrapper exits by itself and cleans up after itself.
    stop_from_inside: ClassVar[bool] = False

    @abstractmethod
    def launch(self, argv: list[str], keep_fds: Sequence[int] = ()) -> tuple[list[str], list[int]]:
        """The command line that runs ``argv`` inside this sandbox, and the descriptors it needs.

        ``keep_fds`` are descriptors the program inside must get (the report channel).
        Returns ``(command, launch_fds)``: pass ``keep_fds`` and ``launch_fds`` to the
        wrapper (``pass_fds``) and close ``launch_fds`` once it started.
        """

    def command(self, argv: list[str]) -> list[str]:
        """The command line alone, for a backend that needs no descriptors (see :meth:`launch`).

        Raises:
            RuntimeError: If it needs some (bubblewrap passes its masked ``/proc`` files
                through descriptors): use :meth:`launch`.
        """
        cmd, fds = self.launch(argv)
        for fd in fds:
            os.close(fd)
        if fds:
            raise RuntimeError(f"{self.name} needs descriptors: use launch(), not command()")
        return cmd

    def missing(self) -> str | None:
        """Why this backend cannot be used (binary missing), or ``None``; no process started."""
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __reduce__(self) -> tuple[type[Backend], tuple[()]]:
        return (type(self), ())


class Firejail(Backend):
    """The firejail backend (where bubblewrap cannot run; see :func:`select_backend`)."""

    name = "firejail"
    # firejail cannot make a user namespace inside a container (it checks for one and goes
    # on without it), so the process limit is per user there.
    private_process_count = False
    # Killed itself, firejail leaves its state file in /run/firejail/sandbox (and SIGTERM
    # makes it wait a second); killing what runs inside lets it exit and clean up at once.
    stop_from_inside = True

    def missing(self) -> str | None:
        """Why firejail cannot be used, or ``None``."""
        return None if shutil.which("firejail") else "`firejail` is not installed"

    def launch(self, argv: list[str], keep_fds: Sequence[int] = ()) -> tuple[list[str], list[int]]:
        """Wrap ``argv`` in firejail (no ``--timeout``: it adds ~2 s per run)."""
        resident.ensure()  # every file the sandbox shows locked in memory (page cache)
        top = _listdir("/")
        hidden = [f"--blacklist=/{d}" for d in top if d not in _SYSTEM_DIRS]
        # /run itself must stay (firejail keeps its state in /run/firejail); hide the rest.
        hidden += [f"--blacklist=/run/{d}" for d in _listdir("/run") if d != "firejail"]
        # Each visible system directory read-only on its own (never `/` itself, see above).
        read_only = [
            f"--read-only=/{d}"
            for d in top
            if d in _SYSTEM_DIRS
            and d not in ("dev", "proc", "sys", "run")
            and os.path.isdir("/" + d)
            and not os.path.islink("/" + d)
        ]
        return [
            shutil.which("firejail") or "firejail",
            "--quiet",
            # Not --noprofile: our own profile, which hides the machine-wide counters (task
            # count, free memory, ...), a channel between concurrent sandboxes (procmask);
            # too many paths for firejail's 128 arguments.
            "--profile=" + procmask.firejail_profile(),
            # The minimal root (resident): only the allow-list of /usr and /etc is shown.
            "--include=" + _firejail_root_profile(),
            "--net=none",
            "--ipc-namespace",
            "--private-dev",
            *read_only,
            *hidden,
            # This package's files where a system-wide install put them (hidden task data).
            *(f"--blacklist={path}" for path in installed.package_paths()),
            "--blacklist=/dev/shm",
            "--blacklist=/dev/mqueue",
            # Pseudo-terminals: each one opened moves the machine-wide pty count.
            "--blacklist=/dev/ptmx",
            "--blacklist=/dev/pts",
            # Other sandboxes' control groups (their memory use, process ids) would be a
            # channel between concurrent sandboxes.
            "--blacklist=/sys/fs/cgroup",
            "--nonewprivs",
            "--caps.drop=all",
            _firejail_seccomp(),
            "--protocol=unix,inet,inet6,netlink",
            "--nogroups",
            *(f"--keep-fd={fd}" for fd in keep_fds),
            # Report the program's own exit status. Not --deterministic-shutdown (it adds
            # ~100 ms per run): the bootstrap kills what the program left in the namespace.
            "--deterministic-exit-code",
            # No "--" before the program: firejail would then run it through the user's
            # login shell (nologin for the sandbox user).
            *argv,
        ], []


def _firejail_seccomp() -> str:
    """The firejail syscall filter option: its default list, prebuilt when it was installed.

    Where our own filter is built (:func:`seccomp.supported`), the bootstrap installs it
    before any program arrives, and it fails every call of :data:`seccomp.DENIED_SYSCALLS`;
    asking firejail for that list too made it build and optimise a filter at every start
    (two helper programs, about a fifth of its start-up) for no call the program could
    make. Elsewhere firejail adds the list, the only filter the program then gets from us.
    """
    if seccomp.supported():
        return "--seccomp"
    return "--seccomp=" + ",".join(seccomp.DENIED_SYSCALLS)


_warned_directories = False


def _warn_host_directories() -> None:
    """Say once that firejail's sandboxes show the host's directories (see :mod:`mirror`)."""
    global _warned_directories
    if not _warned_directories:
        _warned_directories = True
        warnings.warn(
            "rllm_envs.sandbox: firejail shows the host's directories (/, /usr, the headers, "
            "the standard library), whose cache of missing names carries bits between "
            "sandboxes: concurrent or successive programs can pass answers. bubblewrap does "
            "not (install it: `apt-get install bubblewrap`; `auto` prefers it); see "
            "docs/sandbox.md, residual channels.",
            mirror.DirectoryCacheWarning,
            stacklevel=4,
        )


class Bubblewrap(Backend):
    """The bubblewrap backend.

    ``--as-pid-1``: the bootstrap is the namespace's init. bwrap's own init would run
    dumpable, without the syscall filter, as the sandbox's user, so a test could open its
    ``/proc/1/mem`` read-write; the bootstrap is non-dumpable and filtered. The program
    itself is never init (the bootstrap forks it, or the judge's executor forks each
    test), so ``RLIMIT_CPU``'s SIGXCPU and a self-kill work as usual.
    """

    name = "bubblewrap"

    def missing(self) -> str | None:
        """Why bubblewrap cannot be used, or ``None``."""
        return None if shutil.which("bwrap") else "`bwrap` (bubblewrap) is not installed"

    def launch(self, argv: list[str], keep_fds: Sequence[int] = ()) -> tuple[list[str], list[int]]:
        """Wrap ``argv`` in bwrap (which passes ``keep_fds`` on to the program)."""
        resident.ensure()  # every file the sandbox shows locked in memory (page cache)
        binds = _bwrap_root()
        masks, fds = _proc_masks()
        return [
            shutil.which("bwrap") or "bwrap",
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--as-pid-1",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            *binds,
            "--proc",
            "/proc",
            *masks,
            "--dev",
            "/dev",
            # No pseudo-terminals (each one moves the machine-wide pty count): /dev/ptmx
            # points into /dev/pts, which an empty read-only tmpfs replaces.
            "--tmpfs",
            "/dev/pts",
            "--remount-ro",
            "/dev/pts",
            # /dev/shm is a writable tmpfs with no size cap: make all of /dev read-only.
            "--remount-ro",
            "/dev",
            "--chdir",
            "/",
            "--clearenv",
            *_setenv_args(),
            "--remount-ro",
            "/",
            "--",
            *argv,
        ], fds


class Plain(Backend):
    """A plain subprocess: the same limits and user, **no isolation** (network, files).

    For machines where neither firejail nor bubblewrap can run, with trusted code only.
    Every use warns with :class:`PlainBackendWarning`. A program that leaves its process
    group (``setsid``) is not killed at the end.
    """

    name = "plain"
    isolates = False
    signal_as_status = False
    private_process_count = False
    pid_namespace = False

    def launch(self, argv: list[str], keep_fds: Sequence[int] = ()) -> tuple[list[str], list[int]]:
        """Return ``argv`` unchanged (and warn)."""
        warnings.warn(
            "rllm_envs.sandbox: the 'plain' backend runs code WITHOUT isolation (network and "
            "files are reachable); use firejail or bubblewrap for untrusted code.",
            PlainBackendWarning,
            stacklevel=4,
        )
        return list(argv), []


#: Backends by name, in auto-selection order (plain is never auto-selected).
BACKENDS: dict[str, type[Backend]] = {
    "bubblewrap": Bubblewrap,
    "firejail": Firejail,
    "plain": Plain,
}
_ALIASES = {"bwrap": "bubblewrap", "subprocess": "plain", "none": "plain"}

#: The clean environment of sandboxed programs.
#: A fixed hash seed: the order of a set or dict of strings is the same in every sandbox, so a
#: test comparing such an order passes or fails the same way for the reference and for a
#: submission (and a program's output does not change from run to run).
CLEAN_ENV = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "HOME": "/",
    "PYTHONHASHSEED": "0",
}

_probe_lock = ForkSafeLock()
_probe_cache: dict[tuple[str, tuple[int, int] | None], str | None] = {}


def _proc_masks() -> tuple[list[str], list[int]]:
    """The bwrap arguments that mask the machine-wide counters of ``/proc`` (see procmask).

    Static files come through pipes (``--ro-bind-data``), one per file: the caller passes
    the returned descriptors to bwrap and closes them once it started.
    """
    args: list[str] = []
    fds: list[int] = []
    try:
        hidden_dirs = [path for path, is_dir in procmask.hidden_entries() if is_dir]
        for path, is_dir in procmask.hidden_entries():
            if is_dir:
                args += ["--tmpfs", path]
            else:  # /dev/null on a nodev bind: empty or unreadable, never the counter
                args += ["--ro-bind", "/dev/null", path]
        for path, data in procmask.static_files().items():
            read, write = os.pipe()
            fds.append(read)
            try:
                os.write(write, data)  # far below a pipe's buffer
            finally:
                os.close(write)
            args += ["--ro-bind-data", str(read), path]
        for path in hidden_dirs:  # after the static files are in (/proc/pressure)
            args += ["--remount-ro", path]
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return args, fds


def _hidden_inside(allow: resident.Root) -> list[str]:
    """The paths inside the shown binds to hide: the root's masks and this package's files."""
    ours = [p for p in installed.package_paths() if allow.shows(p)]
    return sorted({*allow.masks, *ours})


@lru_cache(maxsize=1)
def _bwrap_static_root() -> tuple[str, ...]:
    allow = resident.root()
    copy = mirror.mirror(_hidden_inside(allow))
    copies = dict(copy.dirs) if copy is not None else {}
    args: list[str] = []
    for path in allow.binds:
        args += ["--ro-bind", copies.get(path, path), path]
    for path in copy.overlays if copy is not None else ():
        args += ["--ro-bind", path, path]  # over its placeholder in the copy
    inside = [b for b in allow.binds if os.path.isdir(b)]
    for path, target in allow.links:
        # A link inside a shown directory is there already (and read-only).
        if not any(path.startswith(d + "/") for d in inside):
            args += ["--symlink", target, path]
    if copy is None:  # the host's directories: hide what is inside them
        for path in _hidden_inside(allow):
            if os.path.isdir(path):
                args += ["--tmpfs", path, "--remount-ro", path]
            elif os.path.exists(path):
                args += ["--ro-bind", "/dev/null", path]
    return tuple(args)


def _bwrap_root() -> list[str]:
    """The bwrap arguments that build the minimal root (:func:`resident.root`), read-only.

    Each shown directory is bound from its tmpfs copy (:mod:`~rllm_envs.sandbox.mirror`,
    which leaves out what is hidden inside it), each shown file at its own place, each
    symlink on the way made again. Without a copy the host's directories are bound, a
    hidden directory inside gets an empty read-only tmpfs over it, a hidden file
    ``/dev/null``.
    """
    return list(_bwrap_static_root())


_root_profile_lock = ForkSafeLock()
_root_profile: dict[tuple[str, ...], str] = {}


def _firejail_root_lines(allow: resident.Root) -> list[str]:
    """Profile lines that make firejail show only the minimal root of ``/usr`` and ``/etc``.

    firejail's ``whitelist`` mounts an empty file system on the top directory of a path
    (a directory of ``/`` or of ``/usr``) and binds the path into it: each top directory
    holding something shown gets its shown paths whitelisted (one shown whole stays as it
    is); one holding only symlinks on the way (``/usr/lib64`` on a merged ``/usr``) keeps
    them and hides the rest of its entries; every other one is blacklisted.
    """

    def top_of(path: str) -> str:
        parts = path.split("/")
        return "/".join(parts[:3] if parts[1] == "usr" else parts[:2])

    tops: dict[str, list[str]] = {}
    for path in allow.binds:
        tops.setdefault(top_of(path), []).append(path)
    inside = [b for b in allow.binds if os.path.isdir(b)]
    link_tops: dict[str, list[str]] = {}
    for path, _ in allow.links:
        if any(path.startswith(d + "/") for d in inside):
            continue
        real_top = top_of(os.path.realpath(path))
        if path.count("/") < 2:
            continue  # a top-level link (/lib -> usr/lib) stays as it is
        if top_of(path) == real_top:
            tops.setdefault(top_of(path), []).append(path)
        else:
            link_tops.setdefault(top_of(path), []).append(path)
    lines: list[str] = []
    # /bin, /lib, ... are links into /usr on a merged /usr; elsewhere top directories too.
    candidates = [f"/{d}" for d in ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")]
    candidates += [f"/usr/{d}" for d in _listdir("/usr")]
    for top in candidates:
        if os.path.islink(top) or not os.path.isdir(top):
            continue
        if top in tops and top in tops[top]:
            continue  # shown whole: as it is (firejail whitelists only what is inside a top)
        if top in tops:
            lines += [f"whitelist {p}" for p in sorted(set(tops[top]))]
        elif top in link_tops:
            keep = {os.path.basename(p) for p in link_tops[top] if os.path.dirname(p) == top}
            lines += [f"blacklist {top}/{d}" for d in _listdir(top) if d not in keep]
        else:
            lines.append(f"blacklist {top}")
    lines += [f"blacklist {p}" for p in allow.masks]
    return lines


def _firejail_root_profile() -> str:
    """The path of a profile file (see :func:`_firejail_root_lines`), written once."""
    import atexit
    import tempfile

    allow = resident.root()
    with _root_profile_lock:
        key = allow.binds
        path = _root_profile.get(key)
        if path is not None and os.path.exists(path):
            return path
        lines = _firejail_root_lines(allow)
        if any("\n" in line for line in lines):
            raise RuntimeError("unexpected newline in a path of the sandbox's root")
        directory = tempfile.mkdtemp(prefix="rllm-firejail-root-")
        os.chmod(directory, 0o711)  # the sandbox's user reads the file, cannot list
        path = os.path.join(directory, "root.inc")
        with open(path, "w") as f:
            f.writelines(line + "\n" for line in lines)
        os.chmod(path, 0o644)
        atexit.register(_remove_profile, directory, os.getpid())
        _root_profile[key] = path
        return path


def _remove_profile(directory: str, owner: int) -> None:
    if os.getpid() == owner:  # not from a forked child that exits normally
        shutil.rmtree(directory, ignore_errors=True)


def _setenv_args() -> list[str]:
    args: list[str] = []
    for key, value in CLEAN_ENV.items():
        args += ["--setenv", key, value]
    return args


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _probe(backend: Backend) -> str | None:
    """Run ``python3 -c pass`` through ``backend``; return why it failed, or ``None``."""
    reason = backend.missing()
    if reason is not None:
        return reason
    if not os.path.exists(PYTHON):
        return f"{PYTHON} does not exist (install Debian's `python3`)"
    identity = sandbox_identity()
    key = (backend.name, identity)
    with _probe_lock:
        if key in _probe_cache:
            return _probe_cache[key]
        command, fds = backend.launch([PYTHON, "-I", "-c", "pass"])
        command, as_user = switch_user(command, identity)
        try:
            done = subprocess.run(  # type: ignore[call-overload]
                command,
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                cwd="/",
                env=dict(CLEAN_ENV),
                timeout=30,
                start_new_session=True,
                **as_user,
            )
            result = (
                None
                if done.returncode == 0
                else f"a test run failed (exit {done.returncode}): "
                + done.stderr.decode("utf-8", "replace").strip()[-500:]
            )
        except (OSError, subprocess.SubprocessError) as e:
            result = f"a test run failed: {type(e).__name__}: {e}"
        finally:
            for fd in fds:
                os.close(fd)
        _probe_cache[key] = result
        return result


def _by_name(name: str) -> Backend:
    key = _ALIASES.get(name.lower(), name.lower())
    if key not in BACKENDS:
        raise InvalidEnvConfig(
            f"Expects `backend` to be one of {sorted(BACKENDS)}, None or a Backend instance, "
            f"actual: {name!r}.{did_you_mean(name, BACKENDS)}"
        )
    return BACKENDS[key]()


def available_backends() -> list[str]:
    """Names of the isolating backends that work on this machine (probed once, cached)."""
    sandbox_identity()  # as root without the sandbox user nothing is usable: say so
    return [name for name, cls in BACKENDS.items() if cls.isolates and _probe(cls()) is None]


def select_backend(backend: str | Backend | None = None) -> Backend:
    """Resolve the ``backend`` argument of :func:`rllm_envs.sandbox.run`.

    ``None`` (or ``"auto"``) uses ``$RLLM_SANDBOX_BACKEND`` if set, else the first usable of
    bubblewrap and firejail (bubblewrap first: its directories are tmpfs copies, firejail's
    are the host's, whose cache of missing names is a channel between sandboxes). The plain
    backend is only used when named.

    Raises:
        SandboxUnavailable: If no isolating backend works, or the named one does not.
        InvalidEnvConfig: For an unknown backend name.
    """
    landlock.warn_unavailable()  # once: judged tests can read /proc without it
    if isinstance(backend, Backend):
        return backend
    if backend is None:
        backend = os.environ.get(BACKEND_ENV_VAR) or "auto"
    if not isinstance(backend, str):
        raise InvalidEnvConfig(
            f"Expects `backend` to be a name, None or a Backend, actual: {backend!r}."
        )
    if backend.lower() != "auto":
        chosen = _by_name(backend)
        if chosen.isolates:
            reason = _probe(chosen)
            if reason is not None:
                raise SandboxUnavailable(
                    f"Sandbox backend `{chosen.name}` cannot run here: {reason}. {_INSTALL_HINT}"
                )
        else:
            sandbox_identity()  # still refuse to run as root without the dedicated user
        if isinstance(chosen, Firejail):
            _warn_host_directories()
        return chosen
    reasons = []
    for cls in (Bubblewrap, Firejail):
        candidate = cls()
        reason = _probe(candidate)
        if reason is None:
            if isinstance(candidate, Firejail):
                _warn_host_directories()
            return candidate
        reasons.append(f"{candidate.name}: {reason}")
    raise SandboxUnavailable(
        "No sandbox to run model-written code: " + "; ".join(reasons) + ". " + _INSTALL_HINT
    )
