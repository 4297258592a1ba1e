"""The judge's executor: runs every test of one submission inside one sandbox.

This file is standard-library only and is executed *as a trusted program* inside the
sandbox (loaded by the judge's :class:`~rllm_envs.sandbox.SandboxPool`, or sent with
``program_header(..., trusted=True)``); the host also imports it for the comparison rules
(:func:`canonical_stdout`, :func:`canonical_value`) and the C++ compile step.

The trust boundary (see the README's "Security model"):

* **Nothing that decides a verdict is in the sandbox.** The executor receives the
  submission and each test's *input* only; expected outputs, the comparison and the
  verdict stay on the host (:mod:`rllm_envs.code.judge`).
* **The executor reports what it observed**, per test, on the report channel (a pipe
  from the host that only it holds): the kernel's wait status and resource usage of the
  test's process, whether it killed it at the time limit, the captured standard output
  (bounded), the end of standard error and, for functional tests, the return value as
  JSON. The host parses each record strictly; a missing, duplicated or malformed record
  is a failed test.
* **Submission processes cannot reach the executor or another test.** The executor is
  non-dumpable (the bootstrap made it so: no ``ptrace``, no ``/proc/<pid>/mem`` or
  ``/proc/<pid>/fd`` for processes of the same user), the seccomp filter denies
  ``ptrace``, ``pidfd_getfd`` and ``process_vm_*``, each test runs in a fresh forked
  process with fresh in-memory files for its streams, holding no descriptor of the
  executor's, and after each test every other process in the sandbox's PID namespace is
  killed (``kill(-1)``: ``setsid`` daemons included) before the next one starts.

Per test, the executor forks a process (own process group; CPU, address-space and
file-size limits) that runs the submission afresh in a copy of the prelude namespace:
stdin programs as ``__main__``; functional and assert tests load the submission as a
module (``__name__ == "solution"``: an ``if __name__ == "__main__":`` block does not run,
as LiveCodeBench grades). C++ submissions are compiled once with :func:`compile_cpp`, then
each test executes the binary in a fresh process.

Input spec (a ``marshal``-encoded dict on stdin, from the trusted host): ``code``, ``kind``
(``"stdin"``, ``"functional"`` or ``"assert"``), ``func_name``, ``prelude``, ``tests``
(list of ``{"input", "time_limit"}``), ``memory_mb``, ``max_output_bytes``, ``reap``
(kill leftovers after each test: inside a PID namespace only) and optionally ``language``
(``"python"`` or ``"cpp"``) and ``compile_time_limit``. Output: records on the channel,
each a 4-byte big-endian length and a JSON object: ``{"compiled": s, "error": msg}`` for
C++, then one per test (``index``, ``outcome`` -- ``exited``, ``signaled`` or ``timeout``
--, ``code``, ``signal``, ``time``, ``maxrss_kb``, ``stdout`` (``null`` past the cap),
``stderr``, ``result``), then ``{"done": true}``.

Start-up cost matters (it is paid per submission), so only cheap modules are imported at
the top; ``json`` and ``decimal`` are imported when first needed.
"""

from __future__ import annotations

import math
import os
import resource
import select
import signal
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~10 ms to import; the harness must start fast
    from decimal import Decimal
    from typing import Any

VERDICTS = ("AC", "WA", "TLE", "RE", "MLE", "OLE", "CE", "SKIP")

# ------------------------------------------------------------------ comparison rules (host)


# Integers up to this many digits take the fast path (str(int) is limited to 4300 digits).
_INT_DIGITS = 4000


def _canonical_number(value: Decimal) -> str:
    from decimal import Context

    if value.is_infinite():
        return "-inf" if value.is_signed() else "inf"
    if value == 0:
        return "0"
    if value == value.to_integral_value() and value.adjusted() < _INT_DIGITS:
        return str(int(value))  # the same text as the integer fast path
    # Enough precision that normalising never rounds (the default context has 28 digits).
    return str(value.normalize(Context(prec=len(value.as_tuple().digits) + 2)))


def _is_int(token: str) -> bool:
    body = token[1:] if token[:1] in "+-" else token
    return body.isascii() and body.isdigit() and len(body) < _INT_DIGITS


def _canonical_line(line: str) -> str:
    tokens = line.split()
    if not tokens:
        return "s:"
    if all(_is_int(token) for token in tokens):  # the common case, without decimal
        return "d:" + " ".join(str(int(token)) for token in tokens)
    from decimal import Decimal, InvalidOperation

    try:
        numbers = [Decimal(token) for token in tokens]
    except (InvalidOperation, ValueError):
        return "s:" + line
    if any(n.is_nan() for n in numbers):
        return "s:" + line
    return "d:" + " ".join(_canonical_number(n) for n in numbers)


def canonical_stdout(text: str) -> str:
    """Canonical form of a program's output: equal forms <=> the outputs match.

    Lines are stripped (after stripping the whole text); a line of decimal numbers becomes
    its normalised values, so ``"1.50  2"`` and ``"1.5 2.00"`` match. Infinities
    (``inf``, ``-Infinity``, any case) are numbers too and equal only to an infinity of the
    same sign; a line with a NaN, or anything else, must match exactly. Never raises.
    """
    return "\n".join(_canonical_line(line.strip()) for line in text.strip().split("\n"))


def _plain_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return int(value) if value.is_integer() else value
    if isinstance(value, (list, tuple)):
        return [_plain_value(v) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("dict keys must be strings to compare as JSON")
        return {k: _plain_value(v) for k, v in value.items()}
    if value is None or isinstance(value, (int, str)):
        return value
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def canonical_value(value: Any) -> str:
    """Canonical JSON text of a functional test's result (raises ``TypeError`` if not JSON).

    Tuples compare as lists, ``1``, ``1.0`` and ``True`` as equal (as in Python); an
    infinity equals an infinity of the same sign and a NaN equals a NaN (each is
    canonicalised to a fixed token), so neither raises.
    """
    import json

    return json.dumps(_plain_value(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


# ------------------------------------------------------------------ inside the sandbox

#: Run before the submission (LiveCodeBench-style): starter code says ``List[int]``, and
#: competition code assumes the usual modules are imported. Kept to cheap modules: the
#: harness runs it once, before the submission arrives, and every test starts from a copy
#: of its namespace.
PRELUDE = """\
import sys, math, bisect, heapq, itertools, functools, collections
from collections import defaultdict, deque, Counter, OrderedDict
from functools import lru_cache, reduce, cmp_to_key
from itertools import accumulate, permutations, combinations, product, chain, groupby
from heapq import heappush, heappop, heapify
from bisect import bisect_left, bisect_right, insort
from math import gcd, inf, sqrt, ceil, floor, log, comb, factorial
"""
#: The prelude of functional tests adds ``typing`` (starter code says ``List[int]``) and
#: ``re``/``string``; it costs ~15 ms more per submission, so stdin programs, which import
#: what they use, do without.
PRELUDE_FUNCTIONAL = PRELUDE + "import re, string\nfrom typing import *\n"

# How much of a test's standard error is kept (its end).
_STDERR_KEEP = 1 << 16
# Largest result record a test may write (its JSON value); more is a failed test.
RESULT_MAX_BYTES = 16 << 20


def _memfd(data: bytes, name: str = "input") -> int:
    fd = os.memfd_create(name, 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _lower_limit(kind: int, value: int) -> None:
    soft, hard = resource.getrlimit(kind)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(kind, (value, value))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


# ------------------------------------------------------------------ C++: compile and execute

#: The C++ compiler driver (Debian's ``g++``; a system path, visible inside the sandbox).
CXX = "/usr/bin/g++"
#: The linker, run directly: ``collect2`` (what ``g++`` links with) always creates
#: temporary files, and the sandbox has no writable directory.
LINKER = "/usr/bin/ld"
#: Compiler flags (Codeforces-like). ``-pipe`` keeps the assembly out of temporary files.
CXX_FLAGS = ("-std=c++17", "-O2", "-pipe")
#: Where a precompiled ``bits/stdc++.h`` for :data:`CXX_FLAGS` may be (built as root by
#: ``python -m rllm_envs.sandbox.cpp_pch``, which ``scripts/setup.sh`` runs). A system path,
#: so it is visible inside the sandbox. It makes compiling a program that starts with
#: ``#include <bits/stdc++.h>`` about 5x faster; without it (or once g++ or the flags
#: change, when g++ ignores it) the real header is used.
CPP_PCH_DIR = "/usr/local/lib/rllm-envs/pch"
#: Wall-clock seconds a compilation may take (compiling and linking together).
COMPILE_TIME_LIMIT = 30.0
#: Address-space limit of the compiler, in MiB. Measured: ``cc1plus -O2`` on a program that
#: includes ``bits/stdc++.h`` peaks at ~200 MiB resident and compiles under a 256 MiB limit;
#: 1 GiB leaves room for heavy templates. The judging sandbox is started with at least this.
COMPILE_MEMORY_MB = 1024
#: Stack limit of a C++ test process, in MiB (at most its memory limit); 8 MiB by default
#: would make a recursion a million deep a runtime error.
CPP_STACK_MB = 256
#: How much of the compiler's message is kept (its start: the first error matters most).
COMPILE_MESSAGE_CHARS = 4000
#: What :func:`run_cpp_program` writes to stderr before the compiler's message.
COMPILE_ERROR_PREFIX = "compile error:\n"
# TMPDIR points nowhere on purpose: nothing may need a temporary file.
_CXX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C", "LC_ALL": "C", "TMPDIR": "/nonexistent"}


def _fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def _tool(argv: list[str], fds: tuple[int, ...], log: int, deadline: float, memory: int) -> str:
    """Run one compiler step (own session, killed at the deadline); ``""`` or what failed."""
    import subprocess

    os.ftruncate(log, 0)
    os.lseek(log, 0, os.SEEK_SET)

    def limit() -> None:  # in the child, before exec
        if memory > 0:
            _lower_limit(resource.RLIMIT_AS, memory)

    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=fds,
            env=_CXX_ENV,
            cwd="/",
            start_new_session=True,
            preexec_fn=limit,
        )
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run {argv[0]}: {type(e).__name__}: {e}"
    try:
        code = proc.wait(max(deadline - time.monotonic(), 0.001))
    except subprocess.TimeoutExpired:
        code = None
    finally:
        _kill_group(proc.pid)  # whatever the driver started (cc1plus, as)
        proc.wait()
    if code is None:
        return "compilation timed out"
    return "" if code == 0 else f"{os.path.basename(argv[0])} failed (status {code})"


def cxx_compile_argv(source: str, output: str) -> list[str]:
    """The command that compiles ``source`` into the object file ``output``."""
    include = ["-I", CPP_PCH_DIR] if os.path.isdir(CPP_PCH_DIR) else []
    return [CXX, *CXX_FLAGS, *include, "-x", "c++", "-c", source, "-o", output]


def _log_text(log: int, names: dict[int, str]) -> str:
    size = os.fstat(log).st_size
    raw = os.pread(log, min(size, COMPILE_MESSAGE_CHARS * 4), 0)
    text = raw.decode("utf-8", "replace")
    for fd, name in names.items():
        text = text.replace(_fd_path(fd), name)
    if len(text) > COMPILE_MESSAGE_CHARS or size > len(raw):
        text = text[:COMPILE_MESSAGE_CHARS] + "\n[... cut]"
    return text


def _link_command(obj: int, binary: int, log: int, deadline: float) -> list[str] | str:
    """The linker command ``g++`` would run (``-###`` prints it), with ``ld`` for collect2."""
    import shlex

    why = _tool(
        [CXX, *CXX_FLAGS, "-fno-use-linker-plugin", "-###", _fd_path(obj), "-o", _fd_path(binary)],
        (obj, binary),
        log,
        deadline,
        0,
    )
    if why:
        return why
    text = os.pread(log, min(os.fstat(log).st_size, 1 << 20), 0).decode("utf-8", "replace")
    for line in reversed(text.splitlines()):
        if line.startswith(" "):
            argv = shlex.split(line)
            if argv and argv[0].endswith("/collect2"):
                return [LINKER, *argv[1:]]
    return "cannot find the link command of " + CXX


def compile_cpp(
    source: str, time_limit: float = COMPILE_TIME_LIMIT, memory_mb: int = COMPILE_MEMORY_MB
) -> tuple[int | None, str]:
    """Compile a C++ program into an in-memory executable; never raises for the source.

    The source, object and executable are memfds handed to ``g++``/``ld`` as
    ``/proc/self/fd/N`` (the sandbox has no writable directory); the executable is then
    reopened read-only and every writable descriptor of it closed (``execve`` refuses a
    file open for writing, ETXTBSY).

    Args:
        source: The C++ source.
        time_limit: Wall-clock seconds for compiling and linking.
        memory_mb: Address-space limit of each compiler process (0: inherit).

    Returns:
        ``(fd, "")``: a read-only, close-on-exec descriptor of the executable; or
        ``(None, message)``: the compiler's message (``solution.cpp`` names the source).
    """
    deadline = time.monotonic() + time_limit
    memory = int(memory_mb) << 20
    fds: list[int] = []
    try:
        src = _memfd(source.encode("utf-8", "surrogatepass"), "solution.cpp")
        fds.append(src)
        obj, binary, log = (os.memfd_create(name, 0) for name in ("obj", "bin", "log"))
        fds += [obj, binary, log]
        names = {src: "solution.cpp", obj: "solution.o", binary: "solution"}
        why = _tool(
            cxx_compile_argv(_fd_path(src), _fd_path(obj)), (src, obj), log, deadline, memory
        )
        if why:
            return None, (_log_text(log, names).rstrip() + "\n" + why).strip()
        link = _link_command(obj, binary, log, deadline)
        if isinstance(link, str):
            return None, (_log_text(log, names).rstrip() + "\n" + link).strip()
        why = _tool(link, (obj, binary), log, deadline, memory)
        if why:
            return None, (_log_text(log, names).rstrip() + "\n" + why).strip()
        return os.open(_fd_path(binary), os.O_RDONLY | os.O_CLOEXEC), ""
    except OSError as e:  # e.g. out of memory for the in-memory files
        return None, f"cannot compile: {type(e).__name__}: {e}"
    finally:
        for fd in fds:
            os.close(fd)


def exec_binary(binary: int) -> None:
    """Replace this process by the executable ``binary`` (from :func:`compile_cpp`).

    Signals Python ignores (SIGPIPE, SIGXFSZ) are reset first: an ignored disposition
    survives ``execve``, and a C++ program expects the defaults; the stack limit is raised
    to :data:`CPP_STACK_MB` (at most the address-space limit). Raises ``OSError``.
    """
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    # Competitive programs recurse deeply (a DFS over 10^6 nodes) and judges give the stack
    # most of the memory. Only for C++: glibc makes the stack limit the default size of a
    # thread's stack, which Python threads would then reserve each.
    memory = resource.getrlimit(resource.RLIMIT_AS)[0]
    stack = CPP_STACK_MB << 20
    _lower_limit(
        resource.RLIMIT_STACK, stack if memory == resource.RLIM_INFINITY else min(stack, memory)
    )
    os.execve(binary, ["solution"], dict(os.environ))


def run_cpp_program(source: str) -> None:
    """Compile ``source`` and become it, its input the rest of stdin (``sandbox.run``).

    A compile error is written to stderr after :data:`COMPILE_ERROR_PREFIX`, with exit 1.
    """
    binary, message = compile_cpp(source, COMPILE_TIME_LIMIT, 0)
    if binary is None:
        os.write(2, (COMPILE_ERROR_PREFIX + message + "\n").encode("utf-8", "replace"))
        os._exit(1)
    exec_binary(binary)


# ------------------------------------------------------------------ one test


def _fork_with_retry() -> int:
    # Under a per-user process count another run may briefly hold every slot.
    for attempt in range(40):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.025 * (attempt + 1))
    return os.fork()


def _child_streams(stdin_fd: int, out: int, err: int, keep: int) -> None:
    """In a test's process: standard streams onto the test's files; nothing else open."""
    os.dup2(stdin_fd, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    top = max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 256)
    if keep >= 3:
        os.closerange(3, keep)
        os.closerange(keep + 1, top)
    else:
        os.closerange(3, top)


def _python_streams() -> None:
    import io

    # An explicit encoding skips the locale look-up (a third of the set-up time).
    sys.stdin = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8"
    )
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(1, "wb", closefd=False)), encoding="utf-8"
    )
    sys.stderr = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "wb", closefd=False)),
        encoding="utf-8",
        errors="backslashreplace",
        line_buffering=True,
    )
    for name in ("stdin", "stdout", "stderr"):  # code that writes to sys.__stdout__
        setattr(sys, f"__{name}__", getattr(sys, name))


def _join_threads() -> None:
    if "threading" not in sys.modules:
        return
    import threading

    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()


def _run_python_test(spec: dict[str, Any], code: Any, base: dict[str, Any], test: Any, res: int):
    """The body of a Python test's process: run, report on ``res`` (a memfd), exit."""
    kind = spec["kind"]
    namespace = dict(base)
    # stdin programs run as __main__; functional/assert code is loaded as a module.
    namespace["__name__"] = "__main__" if kind == "stdin" else "solution"
    status = 0
    try:
        try:
            exec(code, namespace)
        except SystemExit as e:
            if kind != "stdin" or e.code not in (None, 0):
                raise
        if kind == "functional":
            import json

            args = [json.loads(line) for line in test["input"].split("\n") if line.strip()]
            name = spec["func_name"]
            if "Solution" in namespace and hasattr(namespace["Solution"], name):
                target = getattr(namespace["Solution"](), name)
            elif name in namespace:
                target = namespace[name]
            else:
                raise NameError(f"the submission defines no `Solution.{name}` or `{name}`")
            value = target(*args)
            try:
                text = "V" + canonical_value(value)
            except (TypeError, ValueError, RecursionError) as e:
                text = f"N{type(e).__name__}: the return value is not comparable: {e}"
            data = text.encode("utf-8", "surrogatepass")
            view = memoryview(data)
            while view:
                view = view[os.write(res, view) :]
        elif kind == "assert":
            exec(compile(test["input"], "test.py", "exec"), namespace)
            os.write(res, b"A")
        _join_threads()  # as the interpreter does at exit: a program may work in a thread
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) and 0 < e.code < 256 else 1
    except AssertionError as e:
        if kind != "assert":
            raise
        os.write(res, f"FAssertionError: {e}"[:500].encode("utf-8", "replace"))
        status = 1
    except BaseException as e:
        import linecache
        import traceback

        lines = spec["code"].splitlines(True)
        linecache.cache["solution.py"] = (0, None, lines, "solution.py")
        try:
            traceback.print_exception(type(e), e, e.__traceback__)
        except BaseException:
            pass
        status = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    os._exit(status)


def _read_file(fd: int, cap: int, tail: bool = False) -> bytes | None:
    """The content of a test's in-memory file: ``None`` past ``cap`` (or its end, ``tail``)."""
    size = os.fstat(fd).st_size
    if size > cap:
        if not tail:
            return None
        return os.pread(fd, cap, size - cap)
    return os.pread(fd, size, 0)


class _Executor:
    """Runs the tests of one submission, one fresh process each, and reports them."""

    def __init__(self, spec: dict[str, Any], channel: int, code: Any, base: dict[str, Any]):
        self.spec, self.channel, self.code, self.base = spec, channel, code, base
        self.binary: int | None = None
        self.cap = int(spec["max_output_bytes"])
        self.memory = int(spec["memory_mb"]) << 20
        biggest = max(len(t["input"].encode("utf-8", "surrogatepass")) for t in spec["tests"])
        self.file_size = max(self.cap, biggest, RESULT_MAX_BYTES) + 1

    def emit(self, record: dict[str, Any]) -> None:
        import json

        body = json.dumps(record, ensure_ascii=True).encode("ascii")
        data = memoryview(len(body).to_bytes(4, "big") + body)
        while data:
            data = data[os.write(self.channel, data) :]

    def test(self, index: int) -> dict[str, Any]:
        spec, test = self.spec, self.spec["tests"][index]
        limit = float(test["time_limit"])
        python_stdin = spec["kind"] == "stdin" or self.binary is not None
        data = test["input"].encode("utf-8", "surrogatepass") if python_stdin else b""
        # Fresh files per test: a process left from an earlier test holds only old ones.
        stdin_fd, out, err, res = _memfd(data), *(os.memfd_create(n, 0) for n in "oer")
        try:
            start = time.monotonic()
            pid = _fork_with_retry()
            if pid == 0:  # pragma: no cover - runs in the child
                try:
                    os.setpgid(0, 0)
                    _child_streams(stdin_fd, out, err, res if self.binary is None else self.binary)
                    _lower_limit(resource.RLIMIT_CPU, math.ceil(limit) + 1)
                    _lower_limit(resource.RLIMIT_AS, self.memory)
                    _lower_limit(resource.RLIMIT_FSIZE, self.file_size)
                    if self.binary is not None:
                        exec_binary(self.binary)
                    _python_streams()
                except BaseException as e:
                    os.write(2, f"cannot start the test: {e}\n".encode("utf-8", "replace"))
                    os._exit(127)
                _run_python_test(spec, self.code, self.base, test, res)
            try:
                os.setpgid(pid, pid)  # also here: the group must exist before it is killed
            except OSError:
                pass
            pidfd = os.pidfd_open(pid)
            try:
                ready, _, _ = select.select([pidfd], [], [], limit)
            finally:
                os.close(pidfd)
            timed_out = not ready
            _kill_group(pid)
            _, wait_status, usage = os.wait4(pid, 0)
            elapsed = time.monotonic() - start
            if spec.get("reap"):  # whatever the test left (setsid daemons): not our init
                try:
                    os.kill(-1, signal.SIGKILL)
                except OSError:
                    pass
            stdout = _read_file(out, self.cap)
            stderr = _read_file(err, _STDERR_KEEP, tail=True) or b""
            result = _read_file(res, RESULT_MAX_BYTES)
        finally:
            for fd in (stdin_fd, out, err, res):
                os.close(fd)
        signaled = os.WIFSIGNALED(wait_status)
        return {
            "index": index,
            "outcome": "timeout" if timed_out else "signaled" if signaled else "exited",
            "code": None if signaled else os.WEXITSTATUS(wait_status),
            "signal": os.WTERMSIG(wait_status) if signaled else None,
            "time": round(elapsed, 4),
            "maxrss_kb": int(usage.ru_maxrss),
            "stdout": None if stdout is None else stdout.decode("utf-8", "replace"),
            "stderr": stderr.decode("utf-8", "replace"),
            "result": None if result is None else result.decode("utf-8", "replace"),
        }


def _prelude_namespace(prelude: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(prelude, namespace)
    return namespace


def main(channel: int) -> None:
    """Run the submission described by the spec on stdin; report on ``channel``."""
    import marshal

    # Done before the spec is read: in a sandbox started ahead of time (a pool) this costs
    # nothing on the critical path.
    base = _prelude_namespace(PRELUDE)
    data = sys.stdin.buffer.read()
    if not data:  # the pool closed this sandbox unused
        return
    spec = marshal.loads(data)
    executor = _Executor(spec, channel, None, base)
    if spec.get("language", "python") == "cpp":
        limit = float(spec.get("compile_time_limit") or COMPILE_TIME_LIMIT)
        start = time.monotonic()
        executor.binary, message = compile_cpp(spec["code"], limit, COMPILE_MEMORY_MB)
        executor.emit({"compiled": round(time.monotonic() - start, 4), "error": message})
        if executor.binary is None:
            executor.emit({"done": True})
            return
    else:
        try:
            executor.code = compile(spec["code"], "solution.py", "exec")
        except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
            executor.emit({"compiled": 0.0, "error": f"{type(e).__name__}: {e}"})
            executor.emit({"done": True})
            return
        # The prelude is the host's trusted code; every test starts from a copy of it.
        prelude = spec.get("prelude") or ""
        if prelude.startswith(PRELUDE):
            exec(prelude[len(PRELUDE) :], base)
        else:
            executor.base = _prelude_namespace(prelude)
        if spec["kind"] == "functional":
            import json  # noqa: F401  (imported once here, used by every test)
    import gc

    gc.freeze()  # test processes inherit a frozen heap: their collections skip it (less COW)
    for index in range(len(spec["tests"])):
        executor.emit(executor.test(index))
    executor.emit({"done": True})


if __name__ == "__main__":
    main(int(globals().get("__rllm_channel__", -1)))
