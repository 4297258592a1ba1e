"""Run a program inside a sandbox: limits, wall clock, output caps, cleanup.

The code never touches the disk: the bootstrap (run by the system interpreter inside the
sandbox) sets the resource limits on itself, makes itself non-dumpable (no process of the
same user may read its memory or descriptors), writes a start marker to standard error and
reads a length-prefixed copy of the code from standard input; the rest of standard input
is the program's. It then

* forks the program (``run``) and waits for it: what the host reports -- exit code,
  signal, peak memory -- is the kernel's account of the program's end, written by the
  bootstrap on a *report channel* (a pipe the program does not hold), never what the
  program printed or chose as its exit status; or
* executes a trusted program in itself (``exec``: the judge's harness), which gets the
  report channel to write on.

The parent enforces the wall clock, moves the sandbox into a control group of its own
before the program arrives (:mod:`rllm_envs.sandbox.cgroup`: memory of all its processes
and in-memory files together, a process count of its own), and at the end kills the whole
process group and every process left in the control group, so nothing is left running.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import select
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources

from rllm_envs.error import DependencyNotInstalled, InvalidEnvConfig
from rllm_envs.sandbox import cgroup, seccomp, uids
from rllm_envs.sandbox.backends import (
    CLEAN_ENV,
    PYTHON,
    Backend,
    select_backend,
    switch_user,
)
from rllm_envs.sandbox.result import Limits, RunResult, Status

__all__ = ["run", "LANGUAGES", "Sandbox", "spawn", "communicate", "attach_group"]

#: Languages :func:`run` accepts.
LANGUAGES = ("python", "cpp")

# First byte the bootstrap writes to stderr: its absence means the sandbox never started
# the program (a wrapper error), which is reported as Status.SANDBOX_ERROR.
_MARKER = b"\x1e"
_CHUNK = 1 << 16
# The report channel's pipe buffer (and read size): a judge's record carries a test's whole
# output, and fewer, larger reads cost the host less CPU.
_CHANNEL_PIPE = 1 << 20
# After the program exits, how long to wait for the pipes to close (a process outside the
# group may still hold them; only possible with the plain backend).
_DRAIN_GRACE = 0.5
# Standard error past this many times its cap (and past 16 MiB) is a flood: the run is
# stopped as OUTPUT_LIMIT (reading it costs the host CPU for as long as the program runs).
_STDERR_FLOOD_FACTOR = 64
_STDERR_FLOOD_MIN = 16 << 20
# The bootstrap's report of how the program ended: wait status, peak RSS (KiB), CPU s.
_STATUS_RECORD = re.compile(rb"\A(-?\d{1,10}) (\d{1,12}) (\d{1,7}\.\d{3})\n\Z")

# The bootstrap. argv: address space, CPU seconds, processes, open files, file size,
# whether to kill every process it can signal at the end (only inside a PID namespace,
# where that is exactly what the program left behind), the report channel's fd, the source
# that builds the Landlock ruleset (:data:`_LANDLOCK_SOURCE`), and the seccomp filters in hex
# (empty: none for this architecture): the bootstrap's own, "-", and the one a program's
# process adds (its parent's pid written in).
_BOOT_SOURCE = r"""
import os, sys, resource as R
def _limit(kind, soft, hard):
    cur = R.getrlimit(kind)[1]
    if cur != R.RLIM_INFINITY:
        soft, hard = min(soft, cur), min(hard, cur)
    R.setrlimit(kind, (soft, hard))
_a = [int(x) for x in sys.argv[1:6]]
_reap = sys.argv[6] == "1"
_ch = int(sys.argv[7])
_limit(R.RLIMIT_CORE, 0, 0)
_limit(R.RLIMIT_AS, _a[0], _a[0])
_limit(R.RLIMIT_CPU, _a[1], _a[1] + 1)
_limit(R.RLIMIT_NPROC, _a[2], _a[2])
_limit(R.RLIMIT_NOFILE, _a[3], _a[3])
_limit(R.RLIMIT_FSIZE, _a[4], _a[4])
try:  # the first to go when the machine runs out of memory (a raise needs no privilege)
    open("/proc/self/oom_score_adj", "w").write("1000")
except OSError:
    pass
try:
    import _ctypes
    class _I(_ctypes._SimpleCData):
        _type_ = "i"
    class _U(_ctypes._SimpleCData):
        _type_ = "L"
    class _F(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = _I
    class _L:
        _handle = _ctypes.dlopen(None)
    _p = _F(("prctl", _L()))
    _z = _U(0)
    # Non-dumpable: no process of our user may ptrace us or open /proc/<us>/{mem,fd}.
    if _p(4, _z, _z, _z, _z):  # PR_SET_DUMPABLE, 0
        raise OSError("PR_SET_DUMPABLE")
    _fp, _, _fc = "".join(sys.argv[9:]).partition("-")
    _fp, _cf = bytes.fromhex(_fp), None
    if _fp:  # the syscall filter, for us and every process we start, on every backend
        class _C(_ctypes._SimpleCData):
            _type_ = "c"
        class _P(_ctypes.Array):
            _type_ = _C
            _length_ = 16
        _o = sys.byteorder
        def _prog(_d):  # the filter's bytes and a struct sock_fprog that points at them
            class _B(_ctypes.Array):
                _type_ = _C
                _length_ = len(_d)
            _fb = _B.from_buffer_copy(_d)
            _n = (len(_d) // 8).to_bytes(2, _o) + bytes(6)
            return _fb, _P.from_buffer_copy(_n + _ctypes.addressof(_fb).to_bytes(8, _o))
        _fq = _prog(_fp)
        if _p(38, _U(1), _z, _z, _z) or _p(22, _U(2), _fq[1], _z, _z):
            raise OSError("seccomp")  # PR_SET_NO_NEW_PRIVS; PR_SET_SECCOMP, FILTER
        if _fc:  # a program's own filter, installed once it is forked (seccomp.py)
            _d = bytearray.fromhex(_fc)
            _k, _me = (0x7FFFFFF0).to_bytes(4, _o), os.getpid().to_bytes(4, _o)
            for _i in range(4, len(_d), 8):  # PARENT_PID_SLOT: our pid
                if _d[_i : _i + 4] == _k:
                    _d[_i : _i + 4] = _me
            def _cf(_x=_prog(bytes(_d)), _p=_p, _m=_U(2), _z=_z):
                return _p(22, _m, _x[1], _z, _z)
            del _d, _k, _me, _i
        del _C, _P, _o, _prog, _fq
    exec(sys.argv[8])  # _ll: restricts the caller with Landlock (None: no Landlock here)
    del _I, _U, _F, _L, _p, _z, _fp, _fc
except Exception:
    os._exit(121)  # never run a program next to a dumpable reporter, or unfiltered
os.write(2, b"\x1e")
_h = b""
while not _h.endswith(b"\n"):
    _c = os.read(0, 1)
    if not _c:
        break
    _h += _c
_f = (_h or b"0 fork -").split()
_n, _b = int(_f[0]), bytearray()
if _f[2] != b"-":  # a CPU limit for this program (a sandbox started ahead, see pool.py)
    _limit(R.RLIMIT_CPU, int(_f[2]), int(_f[2]) + 1)
while len(_b) < _n:
    _c = os.read(0, _n - len(_b))
    if not _c:
        break
    _b += _c
_g = {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__}
if _f[1] in (b"exec", b"code"):  # trusted code (the judge's harness): runs here, holds the channel
    _g["__rllm_channel__"] = _ch
    _g["__rllm_child_filter__"] = _cf  # for each test process it forks
    _g["__rllm_landlock__"] = _ll  # likewise (the SWE executor's tests)
    if _f[1] == b"code":  # compiled by this interpreter on the host (marshal), saving a compile
        _co = __import__("marshal").loads(bytes(_b))
    else:
        _co = compile(bytes(_b).decode("utf-8", "replace"), "harness.py", "exec")
    del _a, _h, _f, _n, _b, _c, _limit
    exec(_co, _g)
    for _s in (sys.stdout, sys.stderr):
        try:
            _s.flush()
        except Exception:
            pass
    os._exit(0)  # no interpreter teardown to wait for (no atexit handlers either)
_src = bytes(_b).decode("utf-8", "replace")
_pid = os.fork()
if _pid:
    os.close(0)
    _, _st, _ru = os.wait4(_pid, 0)
    if _reap:
        try:
            os.kill(-1, 9)
        except OSError:
            pass
    os.write(_ch, b"%d %d %.3f\n" % (_st, _ru.ru_maxrss, _ru.ru_utime + _ru.ru_stime))
    os._exit(0)
if _ll is not None and _ll() or _cf is not None and _cf():
    os._exit(121)  # never run a program without its file-system restriction or its filter
os.closerange(3, 0x7FFFFFFF)  # close_range: the channel, the ruleset and anything else
sys.argv = ["main.py"]
del _a, _h, _f, _n, _b, _c, _limit, _ch, _pid, _reap, _cf, _ll
try:
    exec(compile(_src, "main.py", "exec"), _g)
except SystemExit:
    raise
except BaseException as _e:
    import linecache, traceback  # only now: importing them costs a few ms per run
    linecache.cache["main.py"] = (len(_src), None, _src.splitlines(True), "main.py")
    try:
        traceback.print_exception(type(_e), _e, _e.__traceback__.tb_next)
    except BaseException:
        pass
    sys.exit(1)
"""


#: The bootstrap runs this (its ``argv[8]``) once per sandbox, after its syscall filter and
#: before any program arrives (off the critical path of a pooled sandbox): it builds the
#: Landlock ruleset of :func:`rllm_envs.sandbox.harness.landlock_ruleset` (the same rules:
#: read and execute beneath every top-level entry of the root but ``/proc``, ``/dev`` also
#: written; no file created; TCP and, where the ABI has them, abstract Unix sockets and
#: signals scoped) and defines ``_ll``, which restricts its caller with it (nonzero:
#: refused), or ``_ll = None`` where the kernel (or the sandbox) offers no Landlock. The
#: program of a plain run applies it in its forked process before its syscall filter and
#: its code; trusted code gets it as ``__rllm_landlock__`` (the SWE executor's tests). So no
#: program opens ``/proc``'s memory reports (``smaps``, ``numa_maps``, ``pagemap``: page
#: mapcounts a concurrent sandbox sets, session 11 attack F1). Uses the bootstrap's ctypes
#: classes (``_F``, ``_L``, ``_U``, ``_z``).
_LANDLOCK_SOURCE = r"""
def _ll(_s=_F(("syscall", _L())), _U=_U, _z=_z, _o=sys.byteorder):
    _v = _s(_U(444), _z, _z, _U(1))  # landlock_create_ruleset(VERSION): the ABI, or -1
    if _v < 1:
        return None
    _hd = (1 << (13 if _v == 1 else 14 if _v == 2 else 15 if _v < 5 else 16)) - 1
    _at = _hd.to_bytes(8, _o) + (3 if _v > 3 else 0).to_bytes(8, _o)  # TCP bind, connect
    _at = (_at + (3 if _v > 5 else 0).to_bytes(8, _o))[: 8 if _v < 4 else 16 if _v < 6 else 24]
    _r = _s(_U(444), _at, _U(len(_at)), _z)
    if _r < 0:
        return None
    for _e in os.listdir("/"):
        if _e == "proc":
            continue
        try:
            _t = os.open("/" + _e, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # e.g. a dangling link
        _m = (0xC00F if _e == "dev" else 0xD) & _hd  # read, execute, list; dev: write too
        if os.fstat(_t).st_mode & 0o170000 != 0o40000:  # a file: file rights only
            _m &= 0xC007
        _s(_U(445), _U(_r), _U(1), _m.to_bytes(8, _o) + _t.to_bytes(4, _o), _z)
        os.close(_t)
    return lambda _x=(_U(446), _U(_r), _z): _s(*_x)  # landlock_restrict_self
_ll = _ll()
"""
#: firejail refuses an argument of 4,128 bytes or more: the filter travels in pieces.
_ARG_CHUNK = 4000


def _without_comments(source: str) -> str:
    """``source`` without its comments and blank lines (no ``#`` in its strings).

    The bootstrap is one argument (``-c``), under firejail's limit only without them.
    """
    lines = (re.sub(r"\s+#\s.*$", "", line) for line in source.splitlines())
    return "\n".join(line for line in lines if line.strip() and not line.lstrip().startswith("#"))


_BOOT = _without_comments(_BOOT_SOURCE)
_LANDLOCK_BOOT = _without_comments(_LANDLOCK_SOURCE)


@lru_cache(maxsize=1)
def seccomp_filter_hex() -> tuple[str, ...]:
    """The syscall filters (:mod:`rllm_envs.sandbox.seccomp`) in hex, as arguments.

    The bootstrap's own (:func:`~rllm_envs.sandbox.seccomp.filter_program`), then ``-``,
    then the one each program's process adds once forked
    (:func:`~rllm_envs.sandbox.seccomp.child_filter_program`).
    """
    if not seccomp.supported():
        seccomp.warn_unsupported()
        return ("",)
    chunks: list[str] = []
    for program in (seccomp.filter_program(), seccomp.child_filter_program()):
        text = program.hex()
        chunks += [text[i : i + _ARG_CHUNK] for i in range(0, len(text), _ARG_CHUNK)]
        chunks.append("-")  # between the bootstrap's filter and a program's (hex has no -)
    return tuple(chunks[:-1])


def wait_readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` becomes readable within ``timeout`` seconds (``poll``: any fd number)."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(timeout, 0.0) * 1000))


@dataclass
class Sandbox:
    """A started sandbox (see :func:`spawn`): the wrapper, its report channel, its group."""

    proc: subprocess.Popen[bytes]
    backend: Backend
    #: The host's read end of the report channel.
    channel: int
    #: The sandbox's control group, or ``None`` where there is none.
    group: cgroup.SandboxCgroup | None
    #: Moved into its group (see :func:`attach_group`).
    attached: bool = False
    #: What :func:`attach_group` read of standard error (the start marker).
    stderr_head: bytes = b""
    #: The user it runs as, held until it is closed (see :mod:`rllm_envs.sandbox.uids`).
    lease: uids.Lease | None = None
    #: When it got its memory and its user (``time.monotonic()``): a wall clock that started
    #: earlier starts here instead (waiting for room is not the program's time).
    admitted: float = 0.0

    def close(self) -> None:
        """Kill everything of the sandbox and release its resources (idempotent)."""
        _kill_group(self.proc.pid)
        if self.lease is not None:
            try:  # the user goes back once the wrapper (and what it ran) is gone
                self.proc.wait(timeout=_STOP_GRACE)
            except subprocess.TimeoutExpired:
                pass  # killed above; not worth holding the user forever
            self.lease.release()
            self.lease = None
        if self.group is not None:
            self.group.close()
            self.group = None
        if self.channel >= 0:
            os.close(self.channel)
            self.channel = -1


def run(
    code: str,
    *,
    language: str = "python",
    stdin: str | bytes = "",
    time_limit: float | None = None,
    backend: str | Backend | None = None,
    limits: Limits | None = None,
) -> RunResult:
    r"""Run ``code`` in a sandbox and return what happened. Never raises for what the code does.

    Example:
        >>> from rllm_envs.sandbox import run
        >>> result = run("print(sum(map(int, input().split())))", stdin="2 3\n")
        >>> result.status.value, result.stdout
        ('ok', '5\n')

    Args:
        code: The program's source. ``__name__ == "__main__"``; tracebacks name it ``main.py``.
        language: ``"python"`` (the system ``/usr/bin/python3``, standard library only plus
            whatever Debian packages are installed) or ``"cpp"``: compiled inside the same
            sandbox with ``/usr/bin/g++`` and the flags of
            :data:`rllm_envs.sandbox.harness.CXX_FLAGS`, into in-memory files, then run with
            ``stdin``. ``time_limit``, the CPU and memory limits cover compiling too. A
            compile error is ``Status.RUNTIME_ERROR`` (exit code 1) with ``stderr``
            starting with ``"compile error:"`` and the compiler's message.
        stdin: The program's standard input.
        time_limit: Wall-clock seconds (overrides ``limits.time_limit``; default 10).
        backend: ``None`` (auto: ``$RLLM_SANDBOX_BACKEND``, else bubblewrap, else firejail),
            a name (``"firejail"``, ``"bubblewrap"``, ``"plain"``) or a :class:`Backend`.
        limits: Resource limits (:class:`Limits`); defaults are 1 GiB of address space, 64
            processes, 128 open files, 16 MiB files, 1 MiB of stdout, 64 KiB of stderr.

    Returns:
        A :class:`RunResult`: status, stdout, stderr, exit code, signal, wall time.

    Raises:
        SandboxUnavailable: If no sandbox can run here (the message says how to install one).
        InvalidEnvConfig: For an unknown language or backend, or invalid limits.
        DependencyNotInstalled: For ``"cpp"`` without ``/usr/bin/g++``.
    """
    check_language(language)
    if not isinstance(code, str):
        raise InvalidEnvConfig(f"Expects `code` to be a str, actual: {type(code).__name__}.")
    if language == "cpp":
        code = cpp_driver(code)
    limits = limits if limits is not None else Limits()
    if time_limit is not None:
        limits = replace(limits, time_limit=time_limit)
    chosen = select_backend(backend)
    data = stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else bytes(stdin)
    start = time.monotonic()
    try:
        sandbox = spawn(chosen, limits)
    except OSError as e:
        return spawn_failure(chosen, e, start)
    return communicate(sandbox, program_header(code) + data, limits, start)[0]


def check_language(language: str) -> None:
    """Raise if ``language`` is unknown, or cannot be compiled here.

    Raises:
        InvalidEnvConfig: For a language not in :data:`LANGUAGES`.
        DependencyNotInstalled: For ``"cpp"`` when the compiler is missing (says how to
            install it).
    """
    if language not in LANGUAGES:
        raise InvalidEnvConfig(f"Expects `language` in {LANGUAGES}, actual: {language!r}.")
    from rllm_envs.sandbox.harness import CXX, LINKER

    if language == "cpp" and not (os.path.exists(CXX) and os.path.exists(LINKER)):
        raise DependencyNotInstalled(
            f"language='cpp' needs the C++ compiler {CXX} and the linker {LINKER}: install "
            "them with `apt-get install g++` (Debian/Ubuntu; `scripts/setup.sh` does it)."
        )


@lru_cache(maxsize=1)
def harness_source() -> str:
    """The source of :mod:`rllm_envs.sandbox.harness` (sent into sandboxes as a program)."""
    return (resources.files("rllm_envs.sandbox") / "harness.py").read_text(encoding="utf-8")


def cpp_driver(code: str) -> str:
    """The Python program that compiles ``code`` in the sandbox and becomes it.

    It loads the harness (one definition of the compile step, see
    :func:`rllm_envs.sandbox.harness.run_cpp_program`) without running its ``main``.
    """
    return (
        "_h = {'__name__': 'rllm_harness', '__builtins__': __builtins__}\n"
        f"exec(compile({harness_source()!r}, 'harness.py', 'exec'), _h)\n"
        f"_h['run_cpp_program']({code!r})\n"
    )


def program_header(code: str, cpu_seconds: int | None = None, *, trusted: bool = False) -> bytes:
    """What the bootstrap reads before the program's own input: the code, length-prefixed.

    ``cpu_seconds`` lowers the CPU limit set at start (for a sandbox started ahead of time).
    ``trusted`` code (the judge's harness, never model-written) runs in the bootstrap itself
    and gets the report channel (``__rllm_channel__``); it ends with ``os._exit(0)`` once its
    standard streams are flushed (no ``atexit`` handlers). Other code runs in a forked child
    that holds nothing but its standard streams.
    """
    source = code.encode("utf-8", "surrogatepass")
    cpu = b"-" if cpu_seconds is None else b"%d" % cpu_seconds
    mode = b"exec" if trusted else b"fork"
    if trusted:
        compiled = _compiled(code)
        if compiled is not None:
            source, mode = compiled, b"code"
    return b"%d %s %s\n" % (len(source), mode, cpu) + source


@lru_cache(maxsize=8)
def _compiled(code: str) -> bytes | None:
    """``code`` compiled by the sandbox's interpreter, as ``marshal`` bytes (or ``None``).

    Trusted code only (the bootstrap ``marshal.loads`` it): compiling the judge's executor
    costs every sandbox that runs it several ms; the interpreter inside is the host's
    ``/usr/bin/python3``, so one compile here serves every sandbox.
    """
    try:
        done = subprocess.run(
            [PYTHON, "-I", "-S", "-c", _COMPILE],
            input=code.encode("utf-8", "surrogatepass"),
            capture_output=True,
            timeout=60,
            check=True,
            env=dict(CLEAN_ENV),
        )
    except (OSError, subprocess.SubprocessError):
        return None  # the source is sent instead (compiled in each sandbox)
    return done.stdout or None


_COMPILE = (
    "import marshal, sys\n"
    "code = sys.stdin.buffer.read().decode('utf-8', 'surrogatepass')\n"
    "sys.stdout.buffer.write(marshal.dumps(compile(code, 'harness.py', 'exec')))\n"
)


#: With control groups, ``RLIMIT_NPROC`` (per user, shared by concurrent runs) is set this
#: high: the sandbox's own ``pids.max`` is the limit.
_NPROC_WITH_CGROUP = 1 << 16
#: Without them, the count includes the wrappers (~3 per run) and every concurrent run of
#: the user, so one run's limit is scaled by this.
SHARED_PROCESS_FACTOR = 8


def spawn(backend: Backend, limits: Limits) -> Sandbox:
    """Start a sandbox whose bootstrap sets ``limits`` and then waits for its program.

    The program (see :func:`program_header`) and its input are sent by :func:`communicate`,
    which also enforces the wall clock; the host-side limits (``time_limit``, output caps)
    are not used here.

    Raises:
        OSError: If the wrapper cannot be started.
    """
    group = cgroup.create(limits.memory_mb, limits.max_processes)
    if group is not None:
        nproc = _NPROC_WITH_CGROUP
    elif backend.private_process_count:
        nproc = limits.max_processes
    else:
        nproc = limits.max_processes * SHARED_PROCESS_FACTOR
    read, write = os.pipe()
    try:
        fcntl.fcntl(read, fcntl.F_SETPIPE_SZ, _CHANNEL_PIPE)
    except OSError:  # above /proc/sys/fs/pipe-max-size for this user: keep the default
        pass
    # Isolated like -I (no user site, no script folder on sys.path), except that the
    # environment, which is ours (CLEAN_ENV), is read: it fixes the hash seed.
    argv = [
        PYTHON,
        "-s",
        "-P",
        "-B",
        "-c",
        _BOOT,
        str(limits.memory_mb << 20),
        str(limits.cpu_seconds),
        str(nproc),
        str(limits.max_open_files),
        str(limits.max_file_size_mb << 20),
        "1" if backend.pid_namespace else "0",
        str(write),
        _LANDLOCK_BOOT,
        *seccomp_filter_hex(),
    ]
    try:
        lease = uids.acquire(backend.private_process_count)
    except BaseException:
        os.close(read)
        os.close(write)
        if group is not None:
            group.close()
        raise
    admitted = time.monotonic()
    launch_fds: list[int] = []
    try:
        command, launch_fds = backend.launch(argv, keep_fds=(write,))
        command, as_user = switch_user(command, lease.identity)
        proc = subprocess.Popen(  # type: ignore[call-overload]
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=(write, *launch_fds),
            cwd="/",
            env=dict(CLEAN_ENV),
            start_new_session=True,  # own process group: the whole group is killed at the end
            close_fds=True,
            umask=0o077,
            **as_user,
        )
    except BaseException:
        os.close(read)
        lease.release()
        if group is not None:
            group.close()
        raise
    finally:
        os.close(write)
        for fd in launch_fds:
            os.close(fd)
    if group is not None:
        # Into the group at once, while the wrapper is still setting up: what it forks
        # from now on starts inside. The first move into a group waits for the kernel (an
        # RCU grace period, several ms), which here overlaps the wrapper's start instead of
        # following it; right after it, further moves are quick: the wrapper's processes
        # forked meanwhile follow at once. attach_group checks them all (and moves any
        # still outside) once the bootstrap has started, before the program is sent.
        _attach_tree(group, proc.pid, set())
    return Sandbox(
        proc=proc, backend=backend, channel=read, group=group, lease=lease, admitted=admitted
    )


def spawn_failure(backend: Backend, error: OSError, start: float) -> RunResult:
    """The result of a run whose sandbox could not be started."""
    return RunResult(
        status=Status.SANDBOX_ERROR,
        stdout="",
        stderr=f"cannot start the sandbox: {type(error).__name__}: {error}",
        exit_code=None,
        signal=None,
        wall_time=time.monotonic() - start,
        backend=backend.name,
    )


def attach_group(sandbox: Sandbox, deadline: float) -> None:
    """Wait for the bootstrap's start marker, then move the sandbox into its group.

    Before the marker the wrappers may still be forking; after it, and before the program
    is sent, nothing but the bootstrap runs, so every later process starts in the group.
    What was read of standard error (the marker) is kept for :func:`communicate`.
    """
    sandbox.attached = True
    proc, group = sandbox.proc, sandbox.group
    assert proc.stderr is not None and group is not None
    stderr = proc.stderr.fileno()
    # Until the wrapper has a process inside the group below it, look for one every ms
    # and move it at once: a process the wrapper forked while spawn() was moving it
    # stayed outside, and moving it only after the marker would be a second wait for
    # the kernel, after the start instead of during it. Once one is inside, what it
    # forks starts inside. (The plain backend's bootstrap is the wrapper's own process.)
    while sandbox.backend.isolates and not wait_readable(
        stderr, min(_ATTACH_POLL, deadline - time.monotonic())
    ):
        if time.monotonic() >= deadline:
            return
        inside = group.members()
        below = _descendants(proc.pid)
        if below and set(below) <= inside:
            break
        _attach_tree(group, proc.pid, inside)
    if not wait_readable(stderr, deadline - time.monotonic()):
        return
    sandbox.stderr_head = os.read(stderr, 1)
    _attach_tree(group, proc.pid, group.members())  # every process, checked (usually inside)


#: How often attach_group looks for the wrapper's first process while the wrapper starts.
_ATTACH_POLL = 0.001


def _attach_tree(group: cgroup.SandboxCgroup, root: int, inside: set[int]) -> None:
    """Move ``root`` and its descendants that are not ``inside`` into ``group``."""
    for pid in [root, *_descendants(root)]:
        if pid in inside:
            continue
        try:
            group.attach(pid)
        except OSError:  # it exited meanwhile, or is a wrapper we may not move
            pass


def communicate(
    sandbox: Sandbox,
    payload: bytes,
    limits: Limits,
    start: float,
    *,
    forked: bool = True,
    channel_bytes: int = 1 << 12,
    on_channel: Callable[[bytes], bool] | None = None,
    more_input: Callable[[], bytes | None] | None = None,
    stall_limit: Callable[[], float | None] | None = None,
) -> tuple[RunResult, bytes]:
    """Feed ``payload`` to a sandbox started by :func:`spawn`, collect its output, end it.

    The wall clock (``limits.time_limit``) runs from ``start``; the whole process group
    and the control group are killed at the end, whatever happened.

    Args:
        sandbox: From :func:`spawn`.
        payload: :func:`program_header` and the program's input.
        limits: The host-side limits (wall clock, output caps).
        start: When the wall clock started (``time.monotonic()``).
        forked: The program is untrusted and forked by the bootstrap (whose status record
            decides the status); ``False`` for trusted code (``program_header(trusted=True)``).
        channel_bytes: How much of the report channel to keep (more is dropped).
        on_channel: Called with each chunk read from the report channel as it arrives;
            returning ``True`` ends the run at once (a judge that has seen enough).
        more_input: Called after each report-channel chunk: bytes to send after
            ``payload`` (``b""``: nothing yet), or ``None`` once there is no more, when
            standard input is closed. Without it standard input closes after ``payload``.
        stall_limit: Called after each report-channel chunk: how many seconds the channel
            may now stay silent (``None``: no bound but the wall clock). A run silent for
            longer ends as timed out, so a program that stops its reporter (a test
            signalling the judge's executor) holds the host no longer than that.

    Returns:
        The :class:`RunResult` and what the report channel carried. For a forked program
        the status comes from the bootstrap's record there (the kernel's wait status);
        for trusted code (``exec``) from the wrapper's exit status.
    """
    start = max(start, sandbox.admitted)
    deadline = start + limits.time_limit
    proc = sandbox.proc
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err, chan = bytearray(), bytearray(), bytearray()
    err_seen = 0
    out_truncated = err_truncated = timed_out = flooded = stopped = False
    selector = selectors.DefaultSelector()
    pidfd = -1
    try:
        if sandbox.group is not None and not sandbox.attached:
            attach_group(sandbox, deadline)
        err += sandbox.stderr_head
        pidfd = os.pidfd_open(proc.pid)
        selector.register(pidfd, selectors.EVENT_READ, "exit")
        streams = ((proc.stdout.fileno(), "out"), (proc.stderr.fileno(), "err"))
        for fd, role in (*streams, (sandbox.channel, "chan")):
            os.set_blocking(fd, False)
            selector.register(fd, selectors.EVENT_READ, role)
        view = memoryview(payload)
        input_open = more_input is not None
        os.set_blocking(proc.stdin.fileno(), False)
        if view:
            selector.register(proc.stdin.fileno(), selectors.EVENT_WRITE, "in")
        elif not input_open:
            proc.stdin.close()
        exited_at: float | None = None
        silent = stall_limit() if stall_limit is not None else None
        heard = start  # when the report channel last carried something
        while True:
            roles = {key.data for key in selector.get_map().values()}
            if not roles & {"out", "err", "chan"} and "exit" not in roles:
                break
            now = time.monotonic()
            limit = deadline if exited_at is None else min(deadline, exited_at + _DRAIN_GRACE)
            if silent is not None and "chan" in roles:
                limit = min(limit, heard + silent)
            if now >= limit:
                timed_out = exited_at is None
                break
            for key, _ in selector.select(limit - now):
                fd, role = key.fd, key.data
                if role == "exit":
                    # The program (or wrapper) ended: kill whatever it left in its group
                    # before reaping it, so the group id cannot be reused meanwhile.
                    selector.unregister(fd)
                    _kill_group(proc.pid)
                    exited_at = time.monotonic()
                elif role == "in":
                    try:
                        sent = os.write(fd, view[:_CHUNK])
                        view = view[sent:]
                    except BlockingIOError:
                        continue
                    except OSError:  # EPIPE: the program does not read its input
                        view, input_open = view[:0], False
                    if not view:
                        selector.unregister(fd)
                        if not input_open:
                            proc.stdin.close()
                else:
                    try:
                        chunk = os.read(fd, _CHANNEL_PIPE if role == "chan" else _CHUNK)
                    except BlockingIOError:
                        continue
                    except OSError as e:
                        if e.errno != errno.EIO:
                            raise
                        chunk = b""
                    if not chunk:
                        selector.unregister(fd)
                        continue
                    if role == "out":
                        room = limits.max_output_bytes - len(out)
                        out += chunk[:room]
                        if len(chunk) > room:
                            out_truncated = flooded = True
                    elif role == "err":
                        err_seen += len(chunk)
                        room = limits.max_stderr_bytes + len(_MARKER) - len(err)
                        err += chunk[: max(room, 0)]
                        err_truncated = err_truncated or len(chunk) > room
                        if err_seen > max(
                            _STDERR_FLOOD_FACTOR * limits.max_stderr_bytes, _STDERR_FLOOD_MIN
                        ):
                            flooded = True
                    else:
                        chan += chunk[: max(channel_bytes - len(chan), 0)]
                        heard = time.monotonic()
                        if on_channel is not None and on_channel(chunk):
                            stopped = True
                        elif input_open and more_input is not None:
                            more = more_input()
                            stdin_fd = proc.stdin.fileno()
                            if more is None:
                                input_open = False
                                if not view:
                                    proc.stdin.close()
                            elif more:
                                view = memoryview(bytes(view) + more)
                                if stdin_fd not in selector.get_map():
                                    selector.register(stdin_fd, selectors.EVENT_WRITE, "in")
                        if stall_limit is not None:
                            silent = stall_limit()
            if flooded or stopped:
                break
        if (timed_out or flooded or stopped) and sandbox.backend.stop_from_inside:
            if exited_at is None:
                _stop_from_inside(proc.pid, pidfd)
    finally:
        _kill_group(proc.pid)
        if sandbox.group is not None:
            sandbox.group.kill_all()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            proc.kill()
            proc.wait()
        oom = sandbox.group.oom_kills() if sandbox.group is not None else 0
        outside = sandbox.group is not None and oom > 0 and sandbox.group.killed_from_outside()
        selector.close()
        if pidfd >= 0:
            os.close(pidfd)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:
                pass
        sandbox.close()
    wall = time.monotonic() - start
    started = err.startswith(_MARKER)
    if started:
        del err[: len(_MARKER)]
    stderr_text = err.decode("utf-8", "replace")
    record = _STATUS_RECORD.match(bytes(chan))
    code: int | None
    sig: int | None = None
    if record is not None:  # a forked program: the kernel's account, via the bootstrap
        wait_status = int(record.group(1))
        if os.WIFSIGNALED(wait_status):
            code, sig = None, os.WTERMSIG(wait_status)
        else:
            code = os.WEXITSTATUS(wait_status)
    else:
        code = proc.returncode if proc.returncode >= 0 else None
        if proc.returncode < 0:
            sig = -proc.returncode
    if timed_out:
        status = Status.TIMEOUT
    elif flooded:
        status = Status.OUTPUT_LIMIT
    elif stopped:
        status = Status.OK
    elif not started:
        status = Status.SANDBOX_ERROR
    elif record is None and forked:
        # The bootstrap never reported (the program killed it): no status can be trusted.
        status, code = Status.RUNTIME_ERROR, None
    elif outside and forked:
        # An OOM the sandbox did not cause (its group stayed under its own limit) killed it.
        status = Status.SANDBOX_ERROR
        stderr_text += f"\n{KILLED_FROM_OUTSIDE}"
    elif sig == signal.SIGXCPU:
        status = Status.TIMEOUT
    elif sig == signal.SIGXFSZ:
        status = Status.OUTPUT_LIMIT
    elif oom or (sig is None and code != 0 and _is_memory_error(stderr_text)):
        status = Status.MEMORY
    elif code == 0 and sig is None:
        status = Status.OK
    else:
        status = Status.RUNTIME_ERROR
    result = RunResult(
        status=status,
        stdout=out.decode("utf-8", "replace"),
        stderr=stderr_text,
        exit_code=code,
        signal=sig,
        wall_time=wall,
        stdout_truncated=out_truncated,
        stderr_truncated=err_truncated,
        backend=sandbox.backend.name,
        killed_from_outside=outside,
    )
    return result, bytes(chan)


#: Appended to the standard error of a run killed by an OOM it did not cause.
KILLED_FROM_OUTSIDE = (
    "killed by the kernel's OOM killer while under its own memory limit (memory was short "
    "outside the sandbox): not the program's fault; run it again"
)


#: How long a wrapper may take to exit once what ran inside it was killed.
_STOP_GRACE = 1.0


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        parent = stack.pop()
        try:
            for task in os.listdir(f"/proc/{parent}/task"):
                with open(f"/proc/{parent}/task/{task}/children") as f:
                    children = [int(c) for c in f.read().split()]
                found += children
                stack += children
        except (OSError, ValueError):
            continue
    return found


def _stop_from_inside(pid: int, pidfd: int) -> None:
    """Kill the wrapper's descendants; wait (without reaping) for the wrapper to exit."""
    deadline = time.monotonic() + _STOP_GRACE
    while time.monotonic() < deadline:
        for child in _descendants(pid):  # a few passes: a fork bomb keeps adding processes
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:  # gone, or not ours to kill (e.g. firejail's root helper)
                pass
        if wait_readable(pidfd, 0.05):
            return


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _is_memory_error(stderr: str) -> bool:
    lines = stderr.rstrip().splitlines()
    return bool(lines) and (lines[-1].startswith("MemoryError") or "std::bad_alloc" in lines[-1])
