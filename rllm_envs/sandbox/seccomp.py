"""The seccomp filter of sandboxed programs, built in Python, the same on every backend.

The sandbox's bootstrap (:mod:`rllm_envs.sandbox.runner`) installs it on itself with
``prctl(PR_SET_NO_NEW_PRIVS)`` and ``prctl(PR_SET_SECCOMP)`` before any program arrives,
under firejail and bubblewrap alike, so every process of the sandbox carries it (firejail
adds its own default list on top).

Classic BPF over ``struct seccomp_data`` (``nr`` at offset 0, ``arch`` at 4, the six
arguments from 16, 8 bytes each, the low half first on the little-endian architectures we
build for). The filter:

* kills the process for a foreign architecture (a 32-bit entry point would bypass the
  syscall numbers below) and, on x86-64, for the x32 ABI;
* fails with ``EPERM`` every syscall a contest program or a tool call never needs but an
  attacker does: ``ptrace`` and its relatives (``process_vm_*``, ``pidfd_getfd``, ``kcmp``,
  ``process_madvise``), keyrings, ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring``,
  mounting and namespaces (``mount``, ``unshare``, ``setns``, the new mount API),
  ``personality`` changes, modules, ``kexec``, ``reboot``, swap, accounting, quotas,
  handle-based opens, port I/O; and what would keep state between tests or carry bits
  between concurrent sandboxes: SysV IPC (``shmget``, ``msgget``, ``semget``), POSIX
  message queues (``mq_open``), ``flock``, ``inotify``/``fanotify``, ``sysinfo``
  (machine-wide process count and free memory), the page-cache evictors and probes
  (``fadvise64``, ``readahead``, ``mincore``, ``preadv2``/``pwritev2``, ``cachestat``),
  legacy async I/O (``io_setup`` and its family: one machine-wide pool of contexts), and
  the rest of firejail's default list that a program never needs (``modify_ldt``, setting
  the clock or the host name, ``lookup_dcookie``); machine-wide allocators whose numbers a
  program reads back (``eventfd``/``eventfd2``: the lowest free id of one machine-wide
  allocator, shown in ``/proc/self/fdinfo``; ``setsid``: the next number of the scheduler's
  autogroup counter, shown in ``/proc/self/autogroup``); ``pidfd_send_signal`` and
  ``memfd_secret``;
* lets ``sync`` and ``syncfs`` succeed without doing anything (a flush of every file system
  of the machine: a host-wide I/O stall) and fails ``membarrier`` with ``ENOSYS``;
* fails ``clone`` with namespace flags, ``CLONE_PIDFD`` or ``CLONE_PARENT``, ``socket`` for
  Unix, IP and vsock families (a bound name outlives its process: state between tests;
  ``socketpair`` works), ``fcntl`` record locks, leases, ``F_NOTIFY`` and signal-on-I/O
  owners (``F_SETOWN``, ``F_SETOWN_EX``, ``F_SETSIG``; ``ioctl`` ``FIOSETOWN`` and
  ``SIOCSPGRP`` too), the socket options that hand out process descriptors
  (``SO_PEERPIDFD``, ``SO_PASSPIDFD``) or machine-wide cookies (``SO_COOKIE``,
  ``SO_NETNS_COOKIE``), netlink sockets but ``NETLINK_ROUTE`` (socket diagnostics report
  cookies), ``madvise`` reclaiming file pages
  (``MADV_COLD``/``MADV_PAGEOUT``), same-page merging (``MADV_MERGEABLE``, ``prctl``
  ``PR_SET_MEMORY_MERGE``: on a host running KSM a merge is visible), huge pages of the
  hugetlb pool (``MFD_HUGETLB``, ``MAP_HUGETLB``: not charged to the sandbox's memory
  group), and setting SIGCHLD's
  disposition (an ignored SIGCHLD has the kernel reap children unseen, hiding their CPU
  time from the verdict) with ``EPERM``, and ``clone3`` with ``ENOSYS`` (its flags are in
  memory, out of a filter's reach; glibc then falls back to ``clone``, which is filtered);
* lets ``futex`` through only for private futexes (a shared one on a mapping of a read-only
  system file has the same key in every sandbox: a channel between them); a shared wait
  returns ``EAGAIN``, a shared wake 0, and the futex2 calls get ``ENOSYS``;
* allows ``setpriority``, ``ioprio_set``, ``sched_setaffinity``, ``sched_setscheduler``,
  ``sched_setparam``, ``sched_setattr`` and ``prlimit64`` on the caller itself only (``EPERM``
  otherwise): on the executor they would carry state from one test to the next.

A second filter (:func:`child_filter_program`) is added by every process that runs a
program, once forked: each test process of the judge's executor, and the program of a
plain run. It refuses ``pidfd_open`` (a process descriptor's inode number counts every
process started on the machine; the executor needs the call, its tests do not) and lets
``kill``, ``tkill``, ``tgkill`` and ``rt_(tg)sigqueueinfo`` reach only processes started
after the program's parent: its own, never the executor, the sandbox's init or a process
group (a test that interrupted the executor ended the whole run).
"""

from __future__ import annotations

import platform
import struct
import warnings

__all__ = [
    "CHILD_DENIED_SYSCALLS",
    "DENIED_SYSCALLS",
    "NOOP_SYSCALLS",
    "PARENT_PID_SLOT",
    "SIGNAL_SYSCALLS",
    "child_filter_program",
    "ENOSYS_SYSCALLS",
    "SELF_ONLY_SYSCALLS",
    "filter_program",
    "supported",
    "warn_unsupported",
]

# BPF opcodes.
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_JA = 0x05  # BPF_JMP | BPF_JA
_AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_EPERM, _EAGAIN, _ENOSYS = 1, 11, 38

_AF_VSOCK = 40
_AF_NETLINK, _NETLINK_ROUTE = 16, 0
# AF_UNIX, AF_INET, AF_INET6, AF_VSOCK.
_DENIED_FAMILIES = (1, 2, 10, _AF_VSOCK)
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
_CLONE_NAMESPACES |= 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080
# Also CLONE_PIDFD (a process descriptor: its inode number counts every process started on
# the machine) and CLONE_PARENT (a sibling of the caller: a child of the executor, which it
# would signal at exit with a signal of the caller's choosing).
_CLONE_DENIED = _CLONE_NAMESPACES | 0x00001000 | 0x00008000
_PERSONALITY_QUERY = 0xFFFFFFFF
_MADV_COLD, _MADV_PAGEOUT = 20, 21
# Kernel same-page merging (KSM): opting a mapping in (MADV_MERGEABLE) or the whole process
# (prctl PR_SET_MEMORY_MERGE).
_MADV_MERGEABLE, _PR_SET_MEMORY_MERGE = 12, 67
# Huge pages of the hugetlb pool: memfd_create(MFD_HUGETLB), mmap(MAP_HUGETLB). A host that
# reserves such pages does not charge them to a sandbox's memory control group.
_MFD_HUGETLB, _MAP_HUGETLB = 0x4, 0x40000
_SIGCHLD = 17
# fcntl commands: F_GETLK, F_SETLK, F_SETLKW, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW,
# F_SETLEASE, F_NOTIFY; and F_SETOWN, F_SETSIG, F_SETOWN_EX (I/O on the descriptor would
# signal the process named, the executor included, with a signal of the caller's choosing).
_FCNTL_DENIED = (5, 6, 7, 36, 37, 38, 1024, 1026, 8, 10, 15)
# ioctl commands that name the process to signal on I/O: FIOSETOWN, SIOCSPGRP.
_IOCTL_DENIED = (0x8901, 0x8902)
# SOL_SOCKET options that hand out process descriptors (SO_PASSPIDFD, SO_PEERPIDFD) or
# numbers of machine-wide counters: SO_COOKIE (every socket asked for one takes the next
# number of one counter: 1, 2, 3 in one sandbox, 4, 5, 6 in the next) and SO_NETNS_COOKIE.
_SOL_SOCKET = 1
_SOCKOPT_DENIED = (76, 77, 57, 71)
_FUTEX_PRIVATE_FLAG = 128
_FUTEX_CMD_MASK = 127  # also drops FUTEX_CLOCK_REALTIME (256)
# futex commands that only wake (or requeue) waiters: WAKE, REQUEUE, CMP_REQUEUE, WAKE_OP,
# UNLOCK_PI, WAKE_BITSET, CMP_REQUEUE_PI. The others wait (or lock).
_FUTEX_WAKES = (1, 3, 4, 5, 7, 10, 12)
_PRIO_PROCESS, _IOPRIO_WHO_PROCESS = 0, 1

#: Syscalls that fail with EPERM, by name (the numbers are per architecture below).
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "name_to_handle_at",
    "open_by_handle_at",
    "move_pages",
    "migrate_pages",
    "syslog",
    "vhangup",
    "iopl",
    "ioperm",
    # State that outlives a test or crosses sandboxes: SysV IPC and POSIX message queues
    # (kept by the IPC namespace between a sandbox's tests), locks and change notification
    # on the read-only system files every sandbox sees (a channel between sandboxes).
    "shmget",
    "msgget",
    "semget",
    "mq_open",
    "flock",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "fanotify_init",
    # Machine-wide counters (task count, free memory, load): a channel between concurrent
    # sandboxes, like the /proc files that rllm_envs.sandbox.procmask masks.
    "sysinfo",
    # The page cache of the read-only system files every sandbox sees: evicting pages
    # (fadvise DONTNEED) and probing them without reading (mincore, preadv2 RWF_NOWAIT,
    # cachestat) carried a hidden input bit-exact to a concurrent sandbox.
    "fadvise64",
    "readahead",
    "mincore",
    "preadv2",
    "pwritev2",
    "cachestat",
    # Another task's robust-futex list head: nothing a program needs.
    "get_robust_list",
    # Legacy async I/O: its contexts come from one machine-wide pool (fs.aio-max-nr), so
    # holding them all is a channel between concurrent sandboxes (and starves the host).
    "io_setup",
    "io_destroy",
    "io_submit",
    "io_cancel",
    "io_getevents",
    "io_pgetevents",
    # Also on firejail's default list: a per-process LDT (x86), the clock and host names
    # of the machine, kernel profiling lookups.
    "modify_ldt",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "lookup_dcookie",
    # Machine-wide allocators whose numbers a program reads back. An eventfd takes the
    # lowest free id of one machine-wide allocator (``eventfd-id`` in /proc/self/fdinfo):
    # holding and freeing ids carried a hidden input, exactly, to a concurrent sandbox.
    # setsid() takes the next number of the machine-wide scheduler autogroup counter
    # (/proc/self/autogroup): the same. Nothing in a sandbox needs either (the C++ compile
    # step puts the compiler in a process group of its own with setpgid).
    "eventfd",
    "eventfd2",
    "setsid",
    # Signals through a process descriptor (a /proc/<pid> directory is one): nothing a
    # program needs, and the executor is not to be signalled (see child_filter_program).
    "pidfd_send_signal",
    # Memory taken out of the kernel's direct map (it splits the host's huge mappings):
    # nothing a program needs.
    "memfd_secret",
)

#: Succeed without doing anything: flushing every file system of the machine (a host-wide
#: I/O stall, and a timing signal to every other sandbox). A sandbox writes no file.
NOOP_SYSCALLS = ("sync", "syncfs")

#: Fail with ENOSYS: the futex2 calls. Their flags (private or shared) are in memory, out of
#: a filter's reach, and a shared futex is a channel between sandboxes (see below). Also
#: ``membarrier`` (its global command waits for every CPU of the machine; a runtime that
#: uses it falls back when the call is missing).
ENOSYS_SYSCALLS = ("futex_waitv", "futex_wake", "futex_wait", "futex_requeue", "membarrier")

#: Allowed only on the caller itself (pid/who 0), else EPERM: changed on the executor, a
#: test's parent, they would carry state to the next test (its fork inherits them).
SELF_ONLY_SYSCALLS = (
    "setpriority",
    "ioprio_set",
    "sched_setaffinity",
    "sched_setscheduler",
    "sched_setparam",
    "sched_setattr",
    "prlimit64",
)

# (audit arch, syscall numbers); only what the filter needs.
_ARCHES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,
        {
            "ptrace": 101,
            "process_vm_readv": 310,
            "process_vm_writev": 311,
            "process_madvise": 440,
            "pidfd_getfd": 438,
            "kcmp": 312,
            "keyctl": 250,
            "add_key": 248,
            "request_key": 249,
            "bpf": 321,
            "perf_event_open": 298,
            "userfaultfd": 323,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "chroot": 161,
            "unshare": 272,
            "setns": 308,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "init_module": 175,
            "finit_module": 313,
            "delete_module": 176,
            "kexec_load": 246,
            "kexec_file_load": 320,
            "reboot": 169,
            "swapon": 167,
            "swapoff": 168,
            "acct": 163,
            "quotactl": 179,
            "name_to_handle_at": 303,
            "open_by_handle_at": 304,
            "move_pages": 279,
            "migrate_pages": 256,
            "syslog": 103,
            "vhangup": 153,
            "iopl": 172,
            "ioperm": 173,
            "shmget": 29,
            "msgget": 68,
            "semget": 64,
            "mq_open": 240,
            "flock": 73,
            "inotify_init": 253,
            "inotify_init1": 294,
            "inotify_add_watch": 254,
            "fanotify_init": 300,
            "sysinfo": 99,
            "fadvise64": 221,
            "readahead": 187,
            "mincore": 27,
            "preadv2": 327,
            "pwritev2": 328,
            "cachestat": 451,
            "madvise": 28,
            "prctl": 157,
            "memfd_create": 319,
            "mmap": 9,
            "fcntl": 72,
            "rt_sigaction": 13,
            "personality": 135,
            "socket": 41,
            "clone": 56,
            "clone3": 435,
            "get_robust_list": 274,
            "io_setup": 206,
            "io_destroy": 207,
            "io_submit": 209,
            "io_cancel": 210,
            "io_getevents": 208,
            "io_pgetevents": 333,
            "modify_ldt": 154,
            "settimeofday": 164,
            "clock_settime": 227,
            "clock_adjtime": 305,
            "adjtimex": 159,
            "sethostname": 170,
            "setdomainname": 171,
            "lookup_dcookie": 212,
            "futex": 202,
            "futex_waitv": 449,
            "futex_wake": 454,
            "futex_wait": 455,
            "futex_requeue": 456,
            "setpriority": 141,
            "ioprio_set": 251,
            "sched_setaffinity": 203,
            "sched_setscheduler": 144,
            "sched_setparam": 142,
            "sched_setattr": 314,
            "prlimit64": 302,
            "eventfd": 284,
            "eventfd2": 290,
            "setsid": 112,
            "pidfd_send_signal": 424,
            "pidfd_open": 434,
            "memfd_secret": 447,
            "sync": 162,
            "syncfs": 306,
            "membarrier": 324,
            "ioctl": 16,
            "getsockopt": 55,
            "setsockopt": 54,
            "kill": 62,
            "tkill": 200,
            "tgkill": 234,
            "rt_sigqueueinfo": 129,
            "rt_tgsigqueueinfo": 297,
        },  # fmt: skip
    ),
    "aarch64": (
        0xC00000B7,
        {
            "ptrace": 117,
            "process_vm_readv": 270,
            "process_vm_writev": 271,
            "process_madvise": 440,
            "pidfd_getfd": 438,
            "kcmp": 272,
            "keyctl": 219,
            "add_key": 217,
            "request_key": 218,
            "bpf": 280,
            "perf_event_open": 241,
            "userfaultfd": 282,
            "io_uring_setup": 425,
            "io_uring_enter": 426,
            "io_uring_register": 427,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "chroot": 51,
            "unshare": 97,
            "setns": 268,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "init_module": 105,
            "finit_module": 273,
            "delete_module": 106,
            "kexec_load": 104,
            "kexec_file_load": 294,
            "reboot": 142,
            "swapon": 224,
            "swapoff": 225,
            "acct": 89,
            "quotactl": 60,
            "name_to_handle_at": 264,
            "open_by_handle_at": 265,
            "move_pages": 239,
            "migrate_pages": 238,
            "syslog": 116,
            "vhangup": 58,
            "shmget": 194,
            "msgget": 186,
            "semget": 190,
            "mq_open": 180,
            "flock": 32,
            "inotify_init1": 26,
            "inotify_add_watch": 27,
            "fanotify_init": 262,
            "sysinfo": 179,
            "fadvise64": 223,
            "readahead": 213,
            "mincore": 232,
            "preadv2": 286,
            "pwritev2": 287,
            "cachestat": 451,
            "madvise": 233,
            "prctl": 167,
            "memfd_create": 279,
            "mmap": 222,
            "fcntl": 25,
            "rt_sigaction": 134,
            "personality": 92,
            "socket": 198,
            "clone": 220,
            "clone3": 435,
            "get_robust_list": 100,
            "io_setup": 0,
            "io_destroy": 1,
            "io_submit": 2,
            "io_cancel": 3,
            "io_getevents": 4,
            "io_pgetevents": 292,
            "settimeofday": 170,
            "clock_settime": 112,
            "clock_adjtime": 266,
            "adjtimex": 171,
            "sethostname": 161,
            "setdomainname": 162,
            "lookup_dcookie": 18,
            "futex": 98,
            "futex_waitv": 449,
            "futex_wake": 454,
            "futex_wait": 455,
            "futex_requeue": 456,
            "setpriority": 140,
            "ioprio_set": 30,
            "sched_setaffinity": 122,
            "sched_setscheduler": 119,
            "sched_setparam": 118,
            "sched_setattr": 274,
            "prlimit64": 261,
            "eventfd2": 19,
            "setsid": 157,
            "pidfd_send_signal": 424,
            "pidfd_open": 434,
            "memfd_secret": 447,
            "sync": 81,
            "syncfs": 267,
            "membarrier": 283,
            "ioctl": 29,
            "getsockopt": 209,
            "setsockopt": 208,
            "kill": 129,
            "tkill": 130,
            "tgkill": 131,
            "rt_sigqueueinfo": 138,
            "rt_tgsigqueueinfo": 240,
        },  # fmt: skip
    ),
}
_MACHINE_ALIASES = {"amd64": "x86_64", "arm64": "aarch64"}


def _arch() -> str:
    machine = platform.machine().lower()
    return _MACHINE_ALIASES.get(machine, machine)


def supported() -> bool:
    """Whether a filter can be built for this machine's architecture."""
    return _arch() in _ARCHES


_warned = False


def warn_unsupported() -> None:
    """Warn once that this architecture gets no syscall filter of ours."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            f"rllm_envs.sandbox: no seccomp syscall table for architecture {_arch()!r}; "
            f"sandboxed programs run without this project's syscall filter "
            f"({DENIED_SYSCALLS[:3]}... are reachable under bubblewrap).",
            RuntimeWarning,
            stacklevel=3,
        )


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arch_table() -> tuple[int, dict[str, int]]:
    """This machine's audit architecture and syscall numbers; RuntimeError if it has none."""
    arch = _arch()
    if arch not in _ARCHES:
        raise RuntimeError(f"no seccomp syscall table for architecture {arch!r}")
    return _ARCHES[arch]


def filter_program() -> bytes:
    """The filter as bytes of ``struct sock_filter`` (what ``bwrap --seccomp`` reads).

    Raises:
        RuntimeError: On an architecture without a syscall table here (see :func:`supported`).
    """
    audit_arch, numbers = _arch_table()
    prog: list[bytes] = []

    def ret(value: int) -> None:
        prog.append(_insn(_RET_K, 0, 0, value))

    # Right architecture, or die.
    prog.append(_insn(_LD_W_ABS, 0, 0, 4))
    prog.append(_insn(_JEQ_K, 1, 0, audit_arch))
    ret(_KILL_PROCESS)
    prog.append(_insn(_LD_W_ABS, 0, 0, 0))
    if _arch() == "x86_64":  # the x32 ABI: syscall numbers with bit 30 set
        prog.append(_insn(_JGE_K, 0, 1, 0x40000000))
        ret(_KILL_PROCESS)
    for name in DENIED_SYSCALLS:
        if name in numbers:  # some do not exist on every architecture
            prog.append(_insn(_JEQ_K, 0, 1, numbers[name]))
            ret(_ERRNO | _EPERM)
    for name in ("clone3", *ENOSYS_SYSCALLS):
        prog.append(_insn(_JEQ_K, 0, 1, numbers[name]))
        ret(_ERRNO | _ENOSYS)
    for name in NOOP_SYSCALLS:
        prog.append(_insn(_JEQ_K, 0, 1, numbers[name]))
        ret(_ERRNO | 0)

    # Syscalls allowed depending on their first argument: load it, decide, reload nr.
    def by_first_argument(nr: int, checks: list[bytes]) -> None:
        prog.append(_insn(_JEQ_K, 0, len(checks) + 2, nr))
        prog.append(_insn(_LD_W_ABS, 0, 0, 16))  # args[0], low 32 bits
        prog.extend(checks)
        ret(_ALLOW)

    # socket(family, type, protocol): no vsock (host services through the hypervisor), and
    # no Unix or IP socket: a bound name (abstract, or a loopback port left in TIME_WAIT)
    # outlives its process and would carry state from one test to the next. socketpair()
    # still works. Netlink for NETLINK_ROUTE only (glibc's getaddrinfo and getifaddrs): the
    # socket-diagnostics family hands out socket cookies (see _SOCKOPT_DENIED).
    n = len(_DENIED_FAMILIES)
    checks = [_insn(_JEQ_K, n + 2 - i, 0, family) for i, family in enumerate(_DENIED_FAMILIES)]
    checks += [
        _insn(_JEQ_K, 0, 3, _AF_NETLINK),  # another family: allowed
        _insn(_LD_W_ABS, 0, 0, 32),  # the protocol
        _insn(_JEQ_K, 1, 0, _NETLINK_ROUTE),
        _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
    ]
    by_first_argument(numbers["socket"], checks)
    # clone(flags, ...): no new namespaces, no process descriptor, no sibling.
    by_first_argument(
        numbers["clone"],
        [_insn(_JSET_K, 0, 1, _CLONE_DENIED), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)],
    )
    # ioctl(fd, cmd, ...): no owner to signal on I/O (cmd is the second argument).
    checks = [_insn(_LD_W_ABS, 0, 0, 24)]
    for i, cmd in enumerate(_IOCTL_DENIED):
        checks.append(_insn(_JEQ_K, len(_IOCTL_DENIED) - i, 0, cmd))
    checks += [_insn(_JA, 0, 0, 1), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)]
    by_first_argument(numbers["ioctl"], checks)
    # getsockopt/setsockopt(fd, level, name, ...): no process descriptor of the peer
    # (SO_PEERPIDFD) or in messages (SO_PASSPIDFD): a pidfd's inode number is a machine-wide
    # count of the processes started; no socket cookie (a machine-wide counter too).
    for name in ("getsockopt", "setsockopt"):
        checks = [
            _insn(_LD_W_ABS, 0, 0, 24),  # level; another one: allowed (past the EPERM)
            _insn(_JEQ_K, 0, len(_SOCKOPT_DENIED) + 3, _SOL_SOCKET),
            _insn(_LD_W_ABS, 0, 0, 32),
        ]
        for i, option in enumerate(_SOCKOPT_DENIED):
            checks.append(_insn(_JEQ_K, len(_SOCKOPT_DENIED) - i, 0, option))
        checks += [_insn(_JA, 0, 0, 1), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)]
        by_first_argument(numbers[name], checks)
    # fcntl(fd, cmd, ...): no record locks, leases or directory notification (cmd is the
    # second argument: reload it in place of the first).
    checks = [_insn(_LD_W_ABS, 0, 0, 24)]
    for i, cmd in enumerate(_FCNTL_DENIED):  # a match jumps to the EPERM below
        checks.append(_insn(_JEQ_K, len(_FCNTL_DENIED) - i, 0, cmd))
    checks += [_insn(_JA, 0, 0, 1), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)]
    by_first_argument(numbers["fcntl"], checks)
    # rt_sigaction(SIGCHLD, act, ...) with an act: no SIGCHLD disposition of one's own. An
    # ignored SIGCHLD (or SA_NOCLDWAIT) has the kernel reap children unseen, and their CPU
    # time would be missing from the test's: the verdict uses it. Queries (act NULL) pass.
    by_first_argument(
        numbers["rt_sigaction"],
        [
            _insn(_JEQ_K, 0, 5, _SIGCHLD),  # another signal: allowed
            _insn(_LD_W_ABS, 0, 0, 24),  # act, low half
            _insn(_JEQ_K, 0, 2, 0),
            _insn(_LD_W_ABS, 0, 0, 28),  # act, high half
            _insn(_JEQ_K, 1, 0, 0),  # NULL: a query, allowed
            _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
        ],
    )
    # madvise(addr, len, advice): no reclaim of file pages (MADV_COLD, MADV_PAGEOUT), which
    # would evict pages of the shared page cache (advice is the third argument); no opting
    # into same-page merging (MADV_MERGEABLE): on a host running KSM, whether a page was
    # merged with another sandbox's (a copy-on-write fault is slower) is a channel.
    checks = [
        _insn(_LD_W_ABS, 0, 0, 32),
        _insn(_JEQ_K, 3, 0, _MADV_COLD),
        _insn(_JEQ_K, 2, 0, _MADV_PAGEOUT),
        _insn(_JEQ_K, 1, 0, _MADV_MERGEABLE),
        _insn(_JA, 0, 0, 1),
        _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
    ]
    by_first_argument(numbers["madvise"], checks)
    # prctl(option, ...): the same merging for the whole process (PR_SET_MEMORY_MERGE).
    by_first_argument(
        numbers["prctl"],
        [_insn(_JEQ_K, 0, 1, _PR_SET_MEMORY_MERGE), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)],
    )
    # memfd_create(name, flags) and mmap(addr, len, prot, flags, ...): no huge pages of the
    # hugetlb pool (MFD_HUGETLB, MAP_HUGETLB in the second and fourth arguments): on a host
    # that reserves them they are outside the sandbox's memory limit.
    for name, offset, flag in (("memfd_create", 24, _MFD_HUGETLB), ("mmap", 40, _MAP_HUGETLB)):
        checks = [
            _insn(_LD_W_ABS, 0, 0, offset),
            _insn(_JSET_K, 0, 1, flag),
            _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
        ]
        by_first_argument(numbers[name], checks)
    # personality(persona): only the query (0xffffffff) and the default (0).
    by_first_argument(
        numbers["personality"],
        [
            _insn(_JEQ_K, 2, 0, _PERSONALITY_QUERY),
            _insn(_JEQ_K, 1, 0, 0),
            _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
        ],
    )
    # futex(uaddr, op, ...): private futexes only (FUTEX_PRIVATE_FLAG in op, the second
    # argument). A shared futex is keyed by the page it is on: on a file mapping, by (inode,
    # offset), the same in every sandbox that maps the same read-only /usr file, so waiting
    # and waking there carries bits between concurrent sandboxes. A shared wait fails with
    # EAGAIN (a spurious wake-up: every futex user re-checks and waits again; glibc's
    # pthread_join, which waits shared for the kernel's exit wake-up, then spins) and a
    # shared wake does nothing and returns 0 (no shared waiter can exist to be woken).
    checks = [
        _insn(_LD_W_ABS, 0, 0, 24),
        _insn(_JSET_K, len(_FUTEX_WAKES) + 3, 0, _FUTEX_PRIVATE_FLAG),
        _insn(_AND_K, 0, 0, _FUTEX_CMD_MASK),
    ]
    for i, cmd in enumerate(_FUTEX_WAKES):  # a match jumps to the "return 0" below
        checks.append(_insn(_JEQ_K, len(_FUTEX_WAKES) - i, 0, cmd))
    checks += [_insn(_RET_K, 0, 0, _ERRNO | _EAGAIN), _insn(_RET_K, 0, 0, _ERRNO | 0)]
    by_first_argument(numbers["futex"], checks)
    # Scheduling, I/O priority and resource limits: the caller's own only. setpriority and
    # ioprio_set name a process (not a group or a user: the executor is one) and who == 0
    # (args[0], args[1]); the others take a pid first, which must be 0 (the caller).
    for name, which in (("setpriority", _PRIO_PROCESS), ("ioprio_set", _IOPRIO_WHO_PROCESS)):
        by_first_argument(
            numbers[name],
            [
                _insn(_JEQ_K, 0, 2, which),
                _insn(_LD_W_ABS, 0, 0, 24),
                _insn(_JEQ_K, 1, 0, 0),
                _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
            ],
        )
    for name in SELF_ONLY_SYSCALLS[2:]:
        by_first_argument(
            numbers[name], [_insn(_JEQ_K, 1, 0, 0), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)]
        )
    ret(_ALLOW)
    return b"".join(prog)


#: Denied (EPERM) in test processes only, by :func:`child_filter_program`: the executor
#: needs it. A process descriptor's inode number counts every process started on the
#: machine (pidfs), a counter a concurrent sandbox moves.
CHILD_DENIED_SYSCALLS = ("pidfd_open",)
#: Syscalls that signal the process (or group) named by their first argument. In a test
#: process they reach only processes started after its parent (the executor): the test's
#: own, never the executor, the sandbox's init or a process group.
SIGNAL_SYSCALLS = ("kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo")
#: The value in :func:`child_filter_program` that the sandbox's bootstrap replaces with its
#: own process id (what a test process sees as its parent's) before installing it.
PARENT_PID_SLOT = 0x7FFFFFF0
_JGT_K = 0x25  # BPF_JMP | BPF_JGT | BPF_K


def child_filter_program() -> bytes:
    """The second filter, for the processes that run a program: on top of :func:`filter_program`.

    The bootstrap installs :func:`filter_program` on itself; the executor (the judge's
    harness, run by the bootstrap) needs ``pidfd_open`` and its tests must not reach it. So
    each test process (and the program of a plain run) also gets this filter once it is
    forked: :data:`CHILD_DENIED_SYSCALLS` fail with ``EPERM``, and the
    :data:`SIGNAL_SYSCALLS` only reach a process whose id is above its parent's (the test's
    own processes). The bootstrap writes its pid in place of :data:`PARENT_PID_SLOT`; left
    as it is, no signal reaches another process.

    Raises:
        RuntimeError: On an architecture without a syscall table here (see :func:`supported`).
    """
    audit_arch, numbers = _arch_table()
    prog = [
        _insn(_LD_W_ABS, 0, 0, 4),
        _insn(_JEQ_K, 1, 0, audit_arch),
        _insn(_RET_K, 0, 0, _KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, 0),
    ]
    for name in CHILD_DENIED_SYSCALLS:
        prog += [_insn(_JEQ_K, 0, 1, numbers[name]), _insn(_RET_K, 0, 0, _ERRNO | _EPERM)]
    for name in SIGNAL_SYSCALLS:
        prog += [
            _insn(_JEQ_K, 0, 5, numbers[name]),
            _insn(_LD_W_ABS, 0, 0, 16),  # the pid (an int: the low half), signed
            _insn(_JGE_K, 2, 0, 0x80000000),  # negative: a process group, or -1: all
            _insn(_JGT_K, 0, 1, PARENT_PID_SLOT),
            _insn(_RET_K, 0, 0, _ALLOW),
            _insn(_RET_K, 0, 0, _ERRNO | _EPERM),
        ]
    prog.append(_insn(_RET_K, 0, 0, _ALLOW))
    return b"".join(prog)
