"""What a sandbox sees of the machine-wide counters in ``/proc`` and ``/sys``.

A PID namespace gives a sandbox its own process list, but many files of ``/proc`` still
describe the whole machine: the task count in ``/proc/loadavg``, ``/proc/stat``'s
``procs_running``, free memory, pressure stall totals, open-file counts, interrupts. One
sandbox can modulate them (by spawning processes, allocating memory) and a concurrent one
read them: a channel between sandboxes, which could carry one episode's hidden test input
into another's feedback. The syscall filter denies ``sysinfo`` for the same reason.

Inside the sandbox, the top-level entries of ``/proc`` other than the process directories
and :data:`KEPT` are masked:

* :data:`STATIC` files get fixed content (bubblewrap binds it over the file), so a program
  that reads its CPU count or the machine's memory from them still works; firejail, which
  cannot bind files for an unprivileged caller, hides them like the rest;
* every other file or directory is hidden (empty or unreadable), as are
  :data:`HIDDEN_SYS_FILES` in ``/proc/sys``;
* under firejail, which shows the host's ``/sys``, everything but ``/sys/devices/system/cpu``
  (glibc counts CPUs there) is hidden too, and of that its idle-state counters and frequency
  scaling (:data:`CPU_HIDDEN`: the idle counters are an exact reading of every CPU's load);
  bubblewrap mounts no ``/sys``.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from functools import lru_cache

from rllm_envs.forksafe import ForkSafeLock

__all__ = [
    "KEPT",
    "STATIC",
    "HIDDEN_SYS_FILES",
    "CPU_HIDDEN",
    "static_files",
    "hidden_entries",
    "sys_hidden",
    "firejail_profile",
]

#: Top-level ``/proc`` entries left as they are: per process, per namespace, or constant.
KEPT = frozenset(
    {
        "self",
        "thread-self",
        "mounts",
        "net",
        "sysvipc",
        "sys",
        "cpuinfo",
        "version",
        "filesystems",
        "cmdline",
        "crypto",
        "devices",
        "misc",
        "tty",
        "kmsg",
    }
)
#: Top-level ``/proc`` files given fixed content (where the backend can bind files).
STATIC = ("loadavg", "uptime", "stat", "meminfo", "vmstat")
#: Machine-wide counters under ``/proc/sys``, hidden.
HIDDEN_SYS_FILES = (
    "fs/file-nr",
    "fs/inode-nr",
    "fs/inode-state",
    "fs/dentry-state",
    "fs/dentry-negative",
    "fs/aio-nr",
    "fs/quota",
    "kernel/random/entropy_avail",
    # The machine's count of open pseudo-terminals (pty/nr); the sandbox has no /dev/ptmx
    # either (backends), so it can neither move nor read it.
    "kernel/pty",
)
_PRESSURE = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _memtotal_kib() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 20


@lru_cache(maxsize=1)
def static_files() -> dict[str, bytes]:
    """Fixed content by path (``/proc/...``): nothing in it changes while the host runs."""
    cpus = os.cpu_count() or 1
    zero = " 0" * 10
    stat = f"cpu {zero}\n" + "".join(f"cpu{i}{zero}\n" for i in range(cpus))
    stat += "intr 0\nctxt 0\nbtime 0\nprocesses 1\nprocs_running 1\nprocs_blocked 0\nsoftirq 0\n"
    total = _memtotal_kib()
    meminfo = "".join(
        f"{key}:{value:>16} kB\n"
        for key, value in (
            ("MemTotal", total),
            ("MemFree", total),
            ("MemAvailable", total),
            ("Buffers", 0),
            ("Cached", 0),
            ("SwapCached", 0),
            ("SwapTotal", 0),
            ("SwapFree", 0),
        )
    )
    files = {
        "/proc/loadavg": "0.00 0.00 0.00 1/1 1\n",
        "/proc/uptime": "0.00 0.00\n",
        "/proc/stat": stat,
        "/proc/meminfo": meminfo,
        "/proc/vmstat": "",
    }
    # Pressure stall files, where the kernel has them (the directory is replaced whole).
    for name in _listdir("/proc/pressure"):
        files[f"/proc/pressure/{name}"] = _PRESSURE + _PRESSURE.replace("some", "full")
    return {path: text.encode() for path, text in files.items()}


@lru_cache(maxsize=1)
def hidden_entries() -> tuple[tuple[str, bool], ...]:
    """``(path, is_directory)`` of what is hidden in ``/proc`` (static files excluded).

    ``/proc/pressure`` is listed as a directory (replaced by one holding the static files).
    """
    hidden: list[tuple[str, bool]] = []
    for name in _listdir("/proc"):
        if name.isdigit() or name in KEPT or name in STATIC:
            continue
        path = "/proc/" + name
        if os.path.islink(path):
            continue  # only `self`-like links live at the top; kept
        hidden.append((path, os.path.isdir(path)))
    for rel in HIDDEN_SYS_FILES:
        path = "/proc/sys/" + rel
        if os.path.exists(path):
            hidden.append((path, os.path.isdir(path)))
    return tuple(hidden)


#: Under ``/sys/devices/system/cpu`` (and each ``cpuN``), hidden: the idle-state counters
#: (usage and time per state, moved by the load of every CPU) and frequency scaling.
CPU_HIDDEN = ("cpuidle", "cpufreq")


@lru_cache(maxsize=1)
def sys_hidden() -> tuple[str, ...]:
    """What to hide of the host's ``/sys``: all but ``/sys/devices/system/cpu``'s topology.

    Of that directory, :data:`CPU_HIDDEN` is hidden too, at the top and in each ``cpuN``.
    """
    hidden = []
    for top, keep in (
        ("/sys", "devices"),
        ("/sys/devices", "system"),
        ("/sys/devices/system", "cpu"),
    ):
        hidden += [f"{top}/{name}" for name in _listdir(top) if name != keep]
    cpu = "/sys/devices/system/cpu"
    for name in _listdir(cpu):
        if name in CPU_HIDDEN:
            hidden.append(f"{cpu}/{name}")
        elif name.startswith("cpu") and name[3:].isdigit():
            hidden += [
                f"{cpu}/{name}/{sub}" for sub in _listdir(f"{cpu}/{name}") if sub in CPU_HIDDEN
            ]
    return tuple(hidden)


_profile_lock = ForkSafeLock()
_profile_path: str | None = None


def firejail_profile() -> str:
    """The path of a firejail profile that blacklists every masked path (written once).

    The file lives in a private directory of this process (removed at exit) that other
    users may traverse but not list, so that the sandbox's user can read it; inside the
    sandbox ``/tmp`` is hidden.
    """
    global _profile_path
    with _profile_lock:
        if _profile_path is not None and os.path.exists(_profile_path):
            return _profile_path
        paths = [f"/proc/{name}" for name in STATIC if os.path.exists(f"/proc/{name}")]
        paths += [path for path, _ in hidden_entries()]
        paths += list(sys_hidden())
        for path in paths:  # a profile line ends at a newline; /proc and /sys names have none
            if "\n" in path:
                raise RuntimeError(f"unexpected path {path!r}")
        directory = tempfile.mkdtemp(prefix="rllm-firejail-")
        os.chmod(directory, 0o711)
        path = os.path.join(directory, "sandbox.profile")
        with open(path, "w") as f:
            # nosound: with a profile (unlike --noprofile) firejail would otherwise set up
            # a PulseAudio directory the sandbox's user can write.
            f.write("nosound\n")
            f.writelines(f"blacklist {p}\n" for p in paths)
        os.chmod(path, 0o644)
        atexit.register(_remove, directory, os.getpid())
        _profile_path = path
        return path


def _remove(directory: str, owner: int) -> None:
    if os.getpid() == owner:  # not from a forked child that exits normally
        shutil.rmtree(directory, ignore_errors=True)
