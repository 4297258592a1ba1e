"""A memory, pids and cpu control group per sandbox, where the machine lets us make one.

Resource limits (``setrlimit``) are per process or per user: ``RLIMIT_AS`` does not count a
second process or in-memory files (``memfd``), and ``RLIMIT_NPROC`` counts every process of
the sandbox user, so concurrent runs starve each other. A control group per sandbox bounds
what *all* of its processes hold together (memory, in-memory files included, no swap) and
how many processes it has, with no cross-talk between sandboxes; at the end every process
in it is killed, whatever session or process group it moved to. Where the ``cpu``
controller is offered too (cgroup v1 ``cpu``, or ``cpu`` in the v2 parent's
``subtree_control``) each sandbox gets a CPU share of its own, weighed like one process: a
submission that forks CPU hogs slows only itself, not a concurrent one (verdicts use CPU
time, so a slowed-down correct program keeps its verdict either way).

Both cgroup v1 (``memory`` and ``pids`` hierarchies, writable: e.g. root in a container)
and a delegated cgroup v2 subtree (``memory`` and ``pids`` in ``cgroup.subtree_control``)
are used. Elsewhere :func:`create` returns ``None`` and warns once
(:class:`CgroupUnavailableWarning`), and the sandbox falls back to the rlimits alone.
``RLLM_SANDBOX_CGROUPS=0`` turns control groups off.

The memory groups of all the sandboxes of one process sit under one parent group whose
limit bounds them together (:func:`total_memory_limit`: half the machine's memory by
default, ``RLLM_SANDBOX_MEMORY_TOTAL_MB`` to change it, ``0`` for none): 64 sandboxes of
1 GiB each may not hold 64 GiB on a 24 GiB machine. Past it the kernel's OOM killer picks
the largest process of those sandboxes (a memory hog, reported as ``Status.MEMORY``) instead
of the machine's largest (the trainer, perhaps). Where that parent cannot be made, the
groups go where they did before, without the common limit.
"""

from __future__ import annotations

import atexit
import errno
import itertools
import os
import signal
import threading
import time
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable

from rllm_envs.forksafe import ForkSafeLock

__all__ = [
    "SandboxCgroup",
    "CgroupUnavailableWarning",
    "create",
    "available",
    "total_memory_limit",
    "ENV_VAR",
    "TOTAL_MEMORY_ENV_VAR",
    "AdmissionTimeout",
    "ADMISSION_WAIT",
]

#: Environment variable: ``0`` turns per-sandbox control groups off.
ENV_VAR = "RLLM_SANDBOX_CGROUPS"
#: Environment variable: MiB of memory all the sandboxes of this process may hold together
#: (``0``: no common limit). Default: :data:`TOTAL_MEMORY_SHARE` of the machine's memory.
TOTAL_MEMORY_ENV_VAR = "RLLM_SANDBOX_MEMORY_TOTAL_MB"
#: The default common limit, as a share of the machine's memory (``MemTotal``).
TOTAL_MEMORY_SHARE = 0.5
_ROOT = "/sys/fs/cgroup"
_GROUP = "rllm-sandbox"
# Memory the wrappers and the bootstrap need on top of the program's limit.
_MEMORY_SLACK = 96 << 20
# Processes the wrappers and the bootstrap need on top of the program's limit.
_PIDS_SLACK = 8
# cgroup v1 CPU weight of a sandbox: the default, that of one process at nice 0.
_CPU_SHARES = 1024


class CgroupUnavailableWarning(UserWarning):
    """No per-sandbox control group here: memory and process limits are per process/user."""


#: The most seconds :func:`create` waits for room under the common memory limit.
ADMISSION_WAIT = 600.0


class AdmissionTimeout(OSError):
    """No room under the common memory limit within :data:`ADMISSION_WAIT` seconds."""


class SandboxCgroup(ABC):
    """One sandbox's control group (memory and pids)."""

    #: Bytes of the common limit this group holds (see :func:`create`); 0: none.
    reserved: int = 0

    @property
    @abstractmethod
    def cpu_isolated(self) -> bool:
        """Whether the group has a CPU share of its own (weighed like one process)."""

    @abstractmethod
    def attach(self, pid: int) -> None:
        """Move process ``pid`` into the group (its future children follow)."""

    @abstractmethod
    def pids(self) -> list[int]:
        """The processes in the group."""

    @abstractmethod
    def members(self) -> set[int]:
        """The processes in every hierarchy of the group (v1: memory, pids and cpu alike)."""

    @abstractmethod
    def oom_kills(self) -> int:
        """How many processes the kernel killed for going over the memory limit."""

    @abstractmethod
    def limit_reached(self) -> bool:
        """Whether the group's usage ever reached its own memory limit."""

    def killed_from_outside(self) -> bool:
        """Whether the kernel OOM-killed a process of the group that never reached its limit.

        Such a kill comes from an OOM the sandbox did not cause (the machine's, or a common
        limit above it): never a verdict against the program.
        """
        return self.oom_kills() > 0 and not self.limit_reached()

    @abstractmethod
    def _remove_dirs(self) -> bool:
        """Remove the group's directories; whether they are gone."""

    def kill_all(self, timeout: float = 2.0) -> bool:
        """SIGKILL every process in the group until it is empty; whether it is."""
        deadline = time.monotonic() + timeout
        while True:
            found = self.pids()
            if not found:
                return True
            for pid in found:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)

    def close(self) -> None:
        """Kill what is left and remove the group (later, if the kernel is still busy)."""
        self.kill_all()
        _release(self)
        for _ in range(5):  # the last killed processes may take a moment to leave
            if self._remove_dirs():
                return
            time.sleep(0.001)
        with _pending_lock:
            _pending.append(self)


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read_pids(path: str) -> list[int]:
    try:
        with open(path) as f:
            return [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        return []


def _read_counter(path: str, key: str) -> int:
    """The value of ``key`` in a flat-keyed cgroup file (``memory.events``, ...), or 0."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + " "):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


#: Usage this close to a group's limit counts as reaching it: the kernel may OOM-kill at
#: the limit without counting a refused charge (v1's ``failcnt`` stayed 0 while in-memory
#: files (``memfd``) filled a group to its limit exactly, and the kill read as an OOM from
#: outside: a program could make the judge disown its own run).
_LIMIT_MARGIN = 1 << 20


def _peak_reached(usage_file: str, limit_file: str) -> bool:
    """Whether a group's peak usage came within :data:`_LIMIT_MARGIN` of its limit.

    ``False`` where either file cannot be read.
    """
    try:
        with open(usage_file) as f:
            peak = int(f.read())
        with open(limit_file) as f:
            limit = int(f.read())
    except (OSError, ValueError):  # no such file, or a limit of "max"
        return False
    return peak >= limit - _LIMIT_MARGIN


def _rmdir(path: str) -> bool:
    try:
        os.rmdir(path)
    except FileNotFoundError:
        return True
    except OSError as e:
        return e.errno not in (errno.EBUSY, errno.ENOTEMPTY) and not os.path.isdir(path)
    return True


def _v1_cpu_root() -> str | None:
    path = os.path.join(_ROOT, "cpu")
    ok = os.path.isfile(os.path.join(path, "cpu.shares")) and os.access(path, os.W_OK)
    return path if ok else None


class _V1(SandboxCgroup):
    def __init__(
        self, name: str, memory_bytes: int, max_pids: int, memory_parent: str | None = None
    ) -> None:
        parent = memory_parent or os.path.join(_ROOT, "memory", _GROUP)
        self.memory = os.path.join(parent, name)
        self.pid_dir = os.path.join(_ROOT, "pids", _GROUP, name)
        cpu_root = _v1_cpu_root()
        # A top-level CPU group per sandbox: the scheduler weighs each sandbox like one
        # process, however many processes it runs (a parent group would make all the
        # sandboxes together weigh one process against the rest of the machine).
        self.cpu = os.path.join(cpu_root, f"{_GROUP}-{name}") if cpu_root else None
        os.makedirs(self.memory)
        try:
            os.makedirs(self.pid_dir)
            if self.cpu is not None:
                os.makedirs(self.cpu)
                _write(os.path.join(self.cpu, "cpu.shares"), str(_CPU_SHARES))
            _write(os.path.join(self.memory, "memory.limit_in_bytes"), str(memory_bytes))
            swap = os.path.join(self.memory, "memory.memsw.limit_in_bytes")
            if os.path.exists(swap):  # memory + swap: no escape into swap
                _write(swap, str(memory_bytes))
            _write(os.path.join(self.pid_dir, "pids.max"), str(max_pids))
        except BaseException:
            self._remove_dirs()
            raise

    @property
    def cpu_isolated(self) -> bool:
        return self.cpu is not None

    def attach(self, pid: int) -> None:
        for group in (self.memory, self.pid_dir, self.cpu):
            if group is not None:
                _write(os.path.join(group, "cgroup.procs"), str(pid))

    def pids(self) -> list[int]:
        found = set(_read_pids(os.path.join(self.pid_dir, "cgroup.procs")))
        found |= set(_read_pids(os.path.join(self.memory, "cgroup.procs")))
        if self.cpu is not None:
            found |= set(_read_pids(os.path.join(self.cpu, "cgroup.procs")))
        return sorted(found)

    def members(self) -> set[int]:
        found = set(_read_pids(os.path.join(self.pid_dir, "cgroup.procs")))
        found &= set(_read_pids(os.path.join(self.memory, "cgroup.procs")))
        if self.cpu is not None:
            found &= set(_read_pids(os.path.join(self.cpu, "cgroup.procs")))
        return found

    def oom_kills(self) -> int:
        return _read_counter(os.path.join(self.memory, "memory.oom_control"), "oom_kill")

    def limit_reached(self) -> bool:
        # failcnt counts the charges refused at this group's own limit (a full parent
        # counts in the parent's); the peak usage, a kill at the limit that counted none.
        try:
            with open(os.path.join(self.memory, "memory.failcnt")) as f:
                if int(f.read()) > 0:
                    return True
        except (OSError, ValueError):
            return True  # cannot tell: the program's own
        return _peak_reached(
            os.path.join(self.memory, "memory.max_usage_in_bytes"),
            os.path.join(self.memory, "memory.limit_in_bytes"),
        )

    def _remove_dirs(self) -> bool:
        dirs = [self.memory, self.pid_dir] + ([self.cpu] if self.cpu is not None else [])
        return all([_rmdir(path) for path in dirs])


class _V2(SandboxCgroup):
    def __init__(self, parent: str, name: str, memory_bytes: int, max_pids: int) -> None:
        self.path = os.path.join(parent, name)
        os.makedirs(self.path)
        try:
            _write(os.path.join(self.path, "memory.max"), str(memory_bytes))
            if os.path.exists(os.path.join(self.path, "memory.swap.max")):
                _write(os.path.join(self.path, "memory.swap.max"), "0")
            _write(os.path.join(self.path, "pids.max"), str(max_pids))
            weight = os.path.join(self.path, "cpu.weight")
            self._cpu = os.path.exists(weight)  # the parent delegates the cpu controller
            if self._cpu:
                _write(weight, "100")
        except BaseException:
            self._remove_dirs()
            raise

    @property
    def cpu_isolated(self) -> bool:
        return self._cpu

    def attach(self, pid: int) -> None:
        _write(os.path.join(self.path, "cgroup.procs"), str(pid))

    def pids(self) -> list[int]:
        return _read_pids(os.path.join(self.path, "cgroup.procs"))

    def members(self) -> set[int]:
        return set(self.pids())

    def oom_kills(self) -> int:
        return _read_counter(os.path.join(self.path, "memory.events"), "oom_kill")

    def limit_reached(self) -> bool:
        # "max": times the usage was about to pass this group's memory.max (a leaf: events
        # of its ancestors do not count here).
        if not os.path.exists(os.path.join(self.path, "memory.events")):
            return True
        if _read_counter(os.path.join(self.path, "memory.events"), "max") > 0:
            return True
        return _peak_reached(  # memory.peak: Linux 5.19+
            os.path.join(self.path, "memory.peak"), os.path.join(self.path, "memory.max")
        )

    def kill_all(self, timeout: float = 2.0) -> bool:
        try:  # Linux 5.14+: the kernel kills the whole group at once
            _write(os.path.join(self.path, "cgroup.kill"), "1")
        except OSError:
            pass
        return super().kill_all(timeout)

    def _remove_dirs(self) -> bool:
        return _rmdir(self.path)


def total_memory_limit() -> int | None:
    """Bytes all the sandboxes of this process may hold together, or ``None`` for no limit.

    ``$RLLM_SANDBOX_MEMORY_TOTAL_MB`` (MiB; ``0``: none), else :data:`TOTAL_MEMORY_SHARE`
    of the machine's memory.

    Raises:
        InvalidEnvConfig: If the variable is not a whole number of MiB (>= 0).
    """
    text = os.environ.get(TOTAL_MEMORY_ENV_VAR, "").strip()
    if text:
        if not text.isdigit():
            from rllm_envs.error import InvalidEnvConfig

            raise InvalidEnvConfig(
                f"Expects ${TOTAL_MEMORY_ENV_VAR} to be a whole number of MiB (0: no common "
                f"limit), actual: {text!r}."
            )
        return int(text) << 20 or None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(int(line.split()[1]) * 1024 * TOTAL_MEMORY_SHARE)
    except (OSError, ValueError, IndexError):
        pass
    return None


# This process's parent memory group (its pid: a forked child makes its own) and the limit
# last written there.
_parent: tuple[int, str, int | None] | None = None


def _write_v1_limit(path: str, limit: int | None) -> None:
    value = str(limit) if limit is not None else "-1"
    swap = os.path.join(path, "memory.memsw.limit_in_bytes")
    files = [os.path.join(path, "memory.limit_in_bytes")]
    if os.path.exists(swap):  # memory + swap may never be below memory alone
        files.append(swap)
    try:
        for name in files:
            _write(name, value)
    except OSError:  # lowering: memory + swap first
        for name in reversed(files):
            _write(name, value)


def _v2_enable(path: str) -> None:
    with open(os.path.join(path, "cgroup.controllers")) as f:
        offered = f.read().split()
    wanted = [c for c in ("memory", "pids", "cpu") if c in offered]
    _write(os.path.join(path, "cgroup.subtree_control"), " ".join("+" + c for c in wanted))


def _memory_parent() -> str | None:
    """This process's parent of sandbox memory groups, or ``None`` where it cannot be made.

    Made once per process; its limit follows :func:`total_memory_limit`. Without it the
    groups go where they did before.
    """
    global _parent
    assert _kind
    limit = total_memory_limit()
    pid = os.getpid()
    if _parent is not None and _parent[0] == pid and _parent[2] == limit:
        return _parent[1]
    if _kind == "v1":
        path = os.path.join(_ROOT, "memory", _GROUP, f"process-{pid}")
    else:
        path = os.path.join(_kind[3:], f"{_GROUP}-process-{pid}")
    try:
        os.makedirs(path, exist_ok=True)
        if _kind == "v1":
            _write_v1_limit(path, limit)
        else:
            _write(os.path.join(path, "memory.max"), str(limit) if limit else "max")
            _v2_enable(path)
    except OSError:
        if _parent is not None and _parent[0] == pid:
            return _parent[1]  # the limit could not change (e.g. below what is held)
        _rmdir(path)
        return None
    _parent = (pid, path, limit)
    return path


_lock = ForkSafeLock()
_pending_lock = ForkSafeLock()
_pending: list[SandboxCgroup] = []
_counter = itertools.count()
_kind: str | None = None  # "v1", "v2:<parent>" or "" (none), decided once
_warned = False


def _v2_parent() -> str | None:
    """A delegated v2 directory where we may create groups with memory and pids, or None."""
    if not os.path.exists(os.path.join(_ROOT, "cgroup.controllers")):
        return None
    try:
        with open("/proc/self/cgroup") as f:
            line = next(x for x in f.read().splitlines() if x.startswith("0::"))
    except (OSError, StopIteration):
        return None
    own = os.path.join(_ROOT, line[3:].lstrip("/"))
    # A process may not sit in a group whose children have controllers ("no internal
    # processes"): groups go next to ours, under our parent, if that one delegates.
    for candidate in (os.path.dirname(own), own):
        try:
            with open(os.path.join(candidate, "cgroup.subtree_control")) as f:
                enabled = f.read().split()
        except OSError:
            continue
        if {"memory", "pids"} <= set(enabled) and os.access(candidate, os.W_OK):
            return candidate
    return None


def _detect() -> str:
    if os.environ.get(ENV_VAR, "").strip() == "0":
        return ""
    v1 = [os.path.join(_ROOT, c) for c in ("memory", "pids")]
    if all(os.path.isdir(p) and os.access(p, os.W_OK) for p in v1):
        try:
            for p in v1:
                os.makedirs(os.path.join(p, _GROUP), exist_ok=True)
            probe = _V1(f"probe-{os.getpid()}", 64 << 20, 8)
            probe._remove_dirs()
            return "v1"
        except OSError:
            pass
    parent = _v2_parent()
    if parent is not None:
        try:
            probe2 = _V2(parent, f"{_GROUP}-probe-{os.getpid()}", 64 << 20, 8)
            probe2._remove_dirs()
            return "v2:" + parent
        except OSError:
            pass
    return ""


def available() -> bool:
    """Whether sandboxes get a control group of their own here (decided once)."""
    global _kind
    with _lock:
        if _kind is None:
            _kind = _detect()
        return bool(_kind)


def create(memory_mb: int, max_processes: int) -> SandboxCgroup | None:
    """A new group for one sandbox: ``memory_mb`` (+ the wrappers') and ``max_processes``.

    Returns ``None`` (after one :class:`CgroupUnavailableWarning` per process) where the
    machine offers no usable control groups.
    """
    global _warned
    _retry_pending()
    if not available():
        if not _warned:
            _warned = True
            warnings.warn(
                "rllm_envs.sandbox: no per-sandbox control group (cgroup v1 memory/pids or "
                "a delegated cgroup v2 subtree) can be created here, so memory is limited "
                "per process only (RLIMIT_AS: a program's children and in-memory files are "
                "not counted) and the process limit is per user (RLIMIT_NPROC: shared by "
                "concurrent runs). Run as root, or delegate a cgroup v2 subtree, to get "
                "per-sandbox limits.",
                CgroupUnavailableWarning,
                stacklevel=3,
            )
        return None
    assert _kind is not None
    name = f"{os.getpid()}-{next(_counter)}"
    memory = (int(memory_mb) << 20) + _MEMORY_SLACK
    pids = int(max_processes) + _PIDS_SLACK
    with _lock:
        parent = _memory_parent()
        total = _parent[2] if parent is not None and _parent is not None else None
    reserved = 0
    if total is not None:
        memory = min(memory, total)
        _admit(memory, total)
        reserved = memory
    group: SandboxCgroup | None = None
    try:
        if _kind == "v1":
            group = _V1(name, memory, pids, parent)
        elif parent is not None:
            group = _V2(parent, name, memory, pids)
        else:
            group = _V2(_kind[3:], f"{_GROUP}-{name}", memory, pids)
    except OSError:
        group = None
    finally:
        if group is None and reserved:
            _give_back(reserved)
    if group is not None:
        group.reserved = reserved
    return group


# Admission control (see the module's docstring): bytes of the common limit held by the live
# groups of this process (its pid: a forked child starts with none).
_admission = threading.Condition()
_held: list[int] = [0, 0]  # [pid, bytes]


def _renew_admission_after_fork() -> None:
    global _admission  # its lock may be held by a thread the forked child does not have
    _admission = threading.Condition()


os.register_at_fork(after_in_child=_renew_admission_after_fork)


def _held_bytes() -> int:
    if _held[0] != os.getpid():
        _held[:] = [os.getpid(), 0]
    return _held[1]


def _admit(memory: int, total: int) -> None:
    deadline = time.monotonic() + ADMISSION_WAIT
    while True:
        with _admission:
            if _held_bytes() + memory <= total:
                _held[1] += memory
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise AdmissionTimeout(
                    errno.EAGAIN,
                    f"no room for a sandbox of {memory >> 20} MiB under the common memory "
                    f"limit of {total >> 20} MiB (${TOTAL_MEMORY_ENV_VAR}) within "
                    f"{ADMISSION_WAIT:g} s: {_held_bytes() >> 20} MiB are held by live "
                    "sandboxes of this process. Run fewer at once or raise the limit.",
                )
        # Idle sandboxes started ahead of time (pools) hold room too: end them first (not
        # under the lock: ending one gives its room back).
        if not getattr(ahead, "active", False) and any([r() for r in list(_reclaimers)]):
            continue
        with _admission:
            if _held_bytes() + memory > total:
                _admission.wait(min(left, 1.0))


#: Called when a sandbox waits for room: each ends idle sandboxes (returns whether any).
_reclaimers: list[Callable[[], bool]] = []
#: ``ahead.active``: this thread starts sandboxes ahead of time (a pool's), which never end
#: idle ones to make room.
ahead = threading.local()


def add_reclaimer(reclaim: Callable[[], bool]) -> None:
    """Register ``reclaim``: it ends idle sandboxes when one waits for room (see create)."""
    _reclaimers.append(reclaim)


def _give_back(memory: int) -> None:
    with _admission:
        _held[1] = max(_held_bytes() - memory, 0)
        _admission.notify_all()


def _release(group: SandboxCgroup) -> None:
    if group.reserved:
        memory, group.reserved = group.reserved, 0
        _give_back(memory)


def _retry_pending() -> None:
    with _pending_lock:
        if not _pending:
            return
        still = [group for group in _pending if not group._remove_dirs()]
        _pending[:] = still


def _cleanup_at_exit() -> None:
    with _pending_lock:
        groups = list(_pending)
        _pending.clear()
    for group in groups:
        group.kill_all(0.5)
        for _ in range(20):
            if group._remove_dirs():
                break
            time.sleep(0.01)
    if _parent is not None and _parent[0] == os.getpid():
        _rmdir(_parent[1])  # empty unless a group of ours is still held


atexit.register(_cleanup_at_exit)
