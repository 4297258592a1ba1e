"""The judge harness: runs every test of one submission inside one sandbox.

This file is standard-library only and is executed *as the program* inside the sandbox
(its source is loaded by the judge's :class:`~rllm_envs.sandbox.SandboxPool`, or sent to
:func:`rllm_envs.sandbox.run`); the host also imports it for the comparison rules
(:func:`canonical_stdout`, :func:`canonical_value`, :func:`digest`) and the C++ compile
step, so both sides share one definition.

How a submission is judged:

* The supervisor (this program; it never runs submitted code) runs the prelude before the
  spec arrives (in a sandbox started ahead of time this is off the critical path), compiles
  the submission once, then forks a *test process* and asks it for one test at a time. For
  each test the test process gives the submission fresh standard streams (the input in an
  in-memory file, the output into in-memory files the supervisor reads) and executes it
  afresh in a copy of the prelude namespace, so the sandbox start and interpreter start
  are paid once per submission, not once per test (LiveCodeBench also runs all tests in
  one process).
* The supervisor enforces each test's wall-clock limit and the output cap and decides the
  verdict: ``AC``, ``WA``, ``TLE``, ``RE``, ``MLE``, ``OLE`` (or ``CE`` when the
  submission does not compile; ``SKIP`` after a failure when stopping early). The test
  process has its own process group and CPU, address-space and file-size limits.
* After any test that is not accepted the test process is replaced, and the test, if it
  was not the first that process ran, is run again in a fresh one: what an earlier test
  left behind cannot fail a later one (only a wall-clock timeout is not run again).
  ``isolate_tests`` gives every test a fresh process.
* Expected outputs never enter the sandbox: the host sends a salted SHA-256 digest of the
  canonical form of each expected answer, and the supervisor compares digests. It is made
  non-dumpable so that a test process (same user) cannot read its memory or descriptors.

C++ submissions (``"language": "cpp"``, stdin tests only): the supervisor compiles the
source once with :func:`compile_cpp` (``g++`` with :data:`CXX_FLAGS`, into in-memory files:
the sandbox has no writable directory), then forks one process per test that executes the
binary with the test's input (same limits, wall clock and verdicts; ``CE`` with the
compiler's message when it does not compile).

Comparison rules (LiveCodeBench's): for stdin/stdout tests the whole output is stripped
and split into lines, each line stripped, the number of lines must match, and two lines
match if they are equal or if both parse as whitespace-separated decimal numbers with
equal values. Functional results are compared as JSON values (tuples as lists, ``1`` and
``1.0`` and ``True`` equal, as in Python).

Input spec (a ``marshal``-encoded dict on stdin, from the trusted host): ``code``, ``kind``
(``"stdin"``, ``"functional"`` or ``"assert"``), ``func_name``, ``prelude``, ``salt``,
``tests`` (list of ``{"input", "expected": [digest, ...], "time_limit"}``), ``memory_mb``,
``max_output_bytes``, ``snippet_chars``, ``stop_on_failure``, ``isolate_tests``, and
optionally ``language`` (``"python"`` or ``"cpp"``) and ``compile_time_limit``. Output:
one Python literal dict per line and test, ``{"index", "verdict", "time", "output",
"error"}`` (read with ``ast.literal_eval``), after ``{"compiled": seconds}`` for C++, then
``{"done": True}``.

Start-up cost matters (it is paid per submission), so only cheap modules are imported at
the top; ``json``, ``decimal`` and ``hashlib`` are imported when first needed.
"""

from __future__ import annotations

import marshal
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

# ------------------------------------------------------------------ comparison rules


# Integers up to this many digits take the fast path (str(int) is limited to 4300 digits).
_INT_DIGITS = 4000


def _canonical_number(value: Decimal) -> str:
    from decimal import Context

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
    its normalised values, so ``"1.50  2"`` and ``"1.5 2.00"`` match; anything else must
    match exactly.
    """
    return "\n".join(_canonical_line(line.strip()) for line in text.strip().split("\n"))


def _plain_value(value: Any) -> Any:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float):
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
    """Canonical JSON text of a functional test's result (raises ``TypeError`` if not JSON)."""
    import json

    return json.dumps(_plain_value(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def digest(salt: str, canonical: str) -> str:
    """Salted SHA-256 of a canonical form (what the host sends instead of the answer)."""
    return _sha256()((salt + "\x00" + canonical).encode("utf-8", "surrogatepass")).hexdigest()


_SHA256: Any = None


def _sha256() -> Any:
    # The built-in module is much cheaper to import than hashlib (which loads OpenSSL);
    # found once (a failed import is not cached by Python and costs a path scan).
    global _SHA256
    if _SHA256 is not None:
        return _SHA256
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # 3.12+
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    _SHA256 = sha256
    return sha256


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


def _make_undumpable() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # best effort: without it a test could read our memory (digests only)
        pass


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


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            break
        data += chunk
    return data


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


# ------------------------------------------------------------------ the test process


def _worker_main(
    spec: dict[str, Any],
    code: Any,
    base: dict[str, Any],
    pipes: tuple[int, int],
    outputs: tuple[int, int],
    limits: tuple[int, int, int],
) -> None:
    """The forked test process; never returns.

    It runs the test whose index arrives on the control pipe, reports on the result pipe,
    and repeats until the control pipe closes.
    """
    me = os.getpid()
    ctrl, res = pipes
    try:
        os.setpgid(0, 0)
        _lower_limit(resource.RLIMIT_CPU, limits[0])
        _lower_limit(resource.RLIMIT_AS, limits[1])
        _lower_limit(resource.RLIMIT_FSIZE, limits[2])
    except BaseException:  # pragma: no cover - a set-up failure is an internal error
        os._exit(3)
    while True:
        head = _read_exact(ctrl, 4)
        if len(head) < 4:
            os._exit(0)
        status = _run_one(spec, code, base, spec["tests"][int.from_bytes(head, "big")], outputs)
        if os.getpid() != me:  # a process the submission forked got here: it is done
            os._exit(0)
        _report(res, status)


def _fresh_streams(test_input: bytes, outputs: tuple[int, int]) -> None:
    import io

    for fd in outputs:
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(outputs[0], 1)  # again for every test: the last one may have closed them
    os.dup2(outputs[1], 2)
    stdin_fd = _memfd(test_input)
    os.dup2(stdin_fd, 0)
    os.close(stdin_fd)
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


def _run_one(
    spec: dict[str, Any],
    code: Any,
    base: dict[str, Any],
    test: dict[str, Any],
    outputs: tuple[int, int],
) -> dict[str, Any]:
    """Run the submission on one test in this process; what happened (not the output)."""
    kind = spec["kind"]
    try:
        data = test["input"].encode("utf-8", "surrogatepass") if kind == "stdin" else b""
        _fresh_streams(data, outputs)
    except BaseException as e:
        return {"ok": False, "kind": "internal", "error": f"{type(e).__name__}: {e}"}
    status: dict[str, Any] = {"ok": True}
    namespace = dict(base)
    try:
        try:
            exec(code, namespace)
        except SystemExit as e:
            if e.code not in (None, 0):
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
            result = target(*args)
            try:
                status["value"] = canonical_value(result)
            except (TypeError, ValueError) as e:
                status["value"] = None
                status["error"] = f"the return value is not comparable: {e}"
        elif kind == "assert":
            exec(compile(test["input"], "test.py", "exec"), namespace)
        _join_threads()  # as the interpreter does at exit: a program may work in a thread
    except SystemExit as e:
        status = {"ok": False, "kind": "error", "error": f"SystemExit: {e.code}"}
    except MemoryError:
        status = {"ok": False, "kind": "memory", "error": "MemoryError"}
    except AssertionError as e:
        status = {"ok": False, "kind": "assert", "error": f"AssertionError: {e}"[:500]}
    except BaseException as e:
        import linecache
        import traceback

        lines = spec["code"].splitlines(True)
        linecache.cache["solution.py"] = (0, None, lines, "solution.py")
        status = {"ok": False, "kind": "error", "error": f"{type(e).__name__}: {e}"[:500]}
        try:
            traceback.print_exception(type(e), e, e.__traceback__)
        except BaseException:
            pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    return status


def _join_threads() -> None:
    if "threading" not in sys.modules:
        return
    import threading

    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()


def _report(fd: int, status: dict[str, Any]) -> None:
    # A length-prefixed, plainly separated record: the supervisor must not unmarshal or
    # unpickle what a test process sends.
    value = status.get("value")
    fields = [
        "1" if status.get("ok") else "0",
        str(status.get("kind") or ""),
        "" if value is None else "v" + str(value),
        str(status.get("error") or ""),
    ]
    body = "\x1f".join(f.replace("\x1f", "?") for f in fields).encode("utf-8", "replace")
    data = len(body).to_bytes(4, "big") + body
    try:
        while data:
            data = data[os.write(fd, data) :]
    except OSError:
        pass


def _parse_status(raw: bytes) -> dict[str, Any] | None:
    parts = raw.decode("utf-8", "replace").split("\x1f")
    if len(parts) != 4 or parts[0] not in ("0", "1"):
        return None
    return {
        "ok": parts[0] == "1",
        "kind": parts[1],
        "value": parts[2][1:] if parts[2].startswith("v") else None,
        "error": parts[3] or None,
    }


# ------------------------------------------------------------------ the supervisor


def _fork_with_retry() -> int:
    # Under a per-user process count another run may briefly hold every slot.
    for attempt in range(40):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.025 * (attempt + 1))
    return os.fork()


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


class _Worker:
    """The supervisor's handle on one test process."""

    def __init__(
        self,
        spec: dict[str, Any],
        code: Any,
        base: dict[str, Any],
        outputs: tuple[int, int],
        limits: tuple[int, int, int],
    ) -> None:
        ctrl_r, self.ctrl = os.pipe()
        self.res, res_w = os.pipe()
        pid = _fork_with_retry()
        if pid == 0:  # pragma: no cover - runs in the child
            os.close(self.ctrl)
            os.close(self.res)
            _worker_main(spec, code, base, (ctrl_r, res_w), outputs, limits)
        os.close(ctrl_r)
        os.close(res_w)
        try:
            os.setpgid(pid, pid)  # also here: the group must exist before it is killed
        except OSError:
            pass
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.tests_run = 0
        self.wait_status: int | None = None

    def run(self, index: int, time_limit: float, cap: int) -> tuple[str, dict[str, Any] | None]:
        """Ask for test ``index`` and wait for the outcome.

        Returns ``("done", status)``, ``("died", status or None)`` or ``("timeout", None)``;
        after anything but ``done`` the process is gone (see ``wait_status``).
        """
        self.tests_run += 1
        deadline = time.monotonic() + time_limit
        try:
            os.write(self.ctrl, index.to_bytes(4, "big"))
        except OSError:  # it is already dead
            self.stop()
            return "died", None
        buf = bytearray()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.stop()
                return "timeout", None
            ready, _, _ = select.select([self.res, self.pidfd], [], [], left)
            if self.res in ready:
                chunk = os.read(self.res, 1 << 16)
                if chunk:
                    buf += chunk
                    if len(buf) >= 4:
                        need = int.from_bytes(buf[:4], "big")
                        if need > cap + 4096:  # a flood disguised as a result
                            self.stop()
                            return "died", {"ok": False, "kind": "flood"}
                        if len(buf) >= 4 + need:
                            status = _parse_status(bytes(buf[4 : 4 + need]))
                            if status is None or len(buf) > 4 + need:
                                self.stop()
                                return "died", None
                            return "done", status
                    continue
            if self.pidfd in ready or self.res in ready:  # exited, or closed its pipe
                self.stop()
                return "died", None

    def stop(self) -> None:
        """Kill the test process and whatever it left in its group; reap it (idempotent)."""
        if self.wait_status is not None:
            return
        _kill_group(self.pid)
        _, self.wait_status = os.waitpid(self.pid, 0)
        for fd in (self.ctrl, self.res, self.pidfd):
            os.close(fd)


class _Exec:
    """One test of a compiled (C++) submission: a forked process that executes the binary.

    Each test gets a fresh process (no test process to reuse: a binary runs once), with its
    own process group, limits and standard streams. Quacks like :class:`_Worker` for
    :func:`_verdict` (``wait_status``, ``stop``).
    """

    tests_run = 1

    def __init__(
        self, binary: int, data: bytes, outputs: tuple[int, int], limits: tuple[int, int, int]
    ) -> None:
        for fd in outputs:
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        pid = _fork_with_retry()
        if pid == 0:  # pragma: no cover - runs in the child
            try:
                os.setpgid(0, 0)
                stdin_fd = _memfd(data)
                os.dup2(stdin_fd, 0)
                os.dup2(outputs[0], 1)
                os.dup2(outputs[1], 2)
                # Nothing of the supervisor's reaches the program (the binary is close-on-exec).
                top = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
                os.closerange(3, binary)
                os.closerange(binary + 1, max(top, binary + 2))
                _lower_limit(resource.RLIMIT_CPU, limits[0])
                _lower_limit(resource.RLIMIT_AS, limits[1])
                _lower_limit(resource.RLIMIT_FSIZE, limits[2])
                exec_binary(binary)
            except BaseException as e:
                os.write(2, f"cannot execute the program: {e}\n".encode("utf-8", "replace"))
            os._exit(127)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.wait_status: int | None = None

    def wait(self, time_limit: float) -> str:
        """``"died"`` (it exited) or ``"timeout"``; the process is gone afterwards."""
        ready, _, _ = select.select([self.pidfd], [], [], max(time_limit, 0.0))
        self.stop()
        return "died" if ready else "timeout"

    def stop(self) -> None:
        """Kill the process and its group; reap it (idempotent)."""
        if self.wait_status is not None:
            return
        _kill_group(self.pid)
        _, self.wait_status = os.waitpid(self.pid, 0)
        os.close(self.pidfd)


def _read_outputs(outputs: tuple[int, int], cap: int) -> tuple[bytes | None, str]:
    """What the test wrote: stdout (``None`` past the cap) and the end of stderr."""
    size = os.fstat(outputs[0]).st_size
    stdout = os.pread(outputs[0], size, 0) if size <= cap else None
    err_size = os.fstat(outputs[1]).st_size
    keep = min(err_size, _STDERR_KEEP)
    stderr = os.pread(outputs[1], keep, err_size - keep).decode("utf-8", "replace")
    return stdout, stderr


def _verdict(
    spec: dict[str, Any],
    test: dict[str, Any],
    outcome: str,
    status: dict[str, Any] | None,
    worker: _Worker | _Exec,
    outputs: tuple[int, int],
) -> tuple[str, str, str | None]:
    """The verdict of one test, the output to show and the error message."""
    cap = int(spec["max_output_bytes"])
    raw, stderr = _read_outputs(outputs, cap)
    output = "" if raw is None else raw.decode("utf-8", "replace")
    wait_status = worker.wait_status
    sig = (
        os.WTERMSIG(wait_status)
        if wait_status is not None and os.WIFSIGNALED(wait_status)
        else None
    )
    if raw is None or sig == signal.SIGXFSZ or (status or {}).get("kind") == "flood":
        return "OLE", "", None
    if outcome == "timeout" or sig in (signal.SIGXCPU, signal.SIGKILL):
        return "TLE", output, None
    if outcome == "died" or status is None:
        exit_code = (
            os.WEXITSTATUS(wait_status)
            if wait_status is not None and os.WIFEXITED(wait_status)
            else None
        )
        if sig is None and exit_code == 0 and spec["kind"] == "stdin":
            return _compare(spec, test, output), output, None  # os._exit(0) after printing
        if "std::bad_alloc" in stderr[-2000:]:  # C++ out of memory (RLIMIT_AS)
            return "MLE", output, stderr[-1000:]
        why = f"killed by signal {sig}" if sig is not None else f"exit code {exit_code}"
        return "RE", output, why + ("\n" + stderr[-1000:] if stderr.strip() else "")
    if not status["ok"]:
        verdict = {"memory": "MLE", "assert": "WA"}.get(str(status["kind"]), "RE")
        error = status.get("error")
        if verdict == "RE" and stderr.strip():
            error = stderr[-1500:]
        return verdict, output, error
    if spec["kind"] == "functional":
        value = status.get("value")
        verdict = "WA" if value is None else _match(spec, test, value)
        return verdict, value if value is not None else "", status.get("error")
    if spec["kind"] == "assert":
        return "AC", output, None
    return _compare(spec, test, output), output, None


def _compare(spec: dict[str, Any], test: dict[str, Any], output: str) -> str:
    return _match(spec, test, canonical_stdout(output))


def _match(spec: dict[str, Any], test: dict[str, Any], canonical: str) -> str:
    return "AC" if digest(spec["salt"], canonical) in test["expected"] else "WA"


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(repr(record) + "\n")
    sys.stdout.flush()


def _prelude_namespace(prelude: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(prelude, namespace)
    return namespace


class _Judge:
    """Runs the tests of one submission through test processes, recycling them as needed.

    Tests run one after another in one test process (the submission is executed afresh,
    in a fresh copy of the prelude namespace, with fresh standard streams, for each test).
    The process is replaced after any test that is not accepted, and such a test, if it
    was not the first its process ran, is run again in a fresh process, so that what an
    earlier test left behind (module state, memory, threads) cannot fail it. Only a
    wall-clock timeout is not run again. With ``isolate_tests`` every test gets a fresh
    process.
    """

    def __init__(
        self, spec: dict[str, Any], code: Any, base: dict[str, Any], binary: int | None = None
    ) -> None:
        self.spec, self.code, self.base, self.binary = spec, code, base, binary
        self.cap = int(spec["max_output_bytes"])
        tests = spec["tests"]
        biggest = max(len(t["input"].encode("utf-8", "surrogatepass")) for t in tests)
        limit = max(float(t["time_limit"]) for t in tests)
        self.cpu_per_test = math.ceil(limit) + 1
        self.memory = int(spec["memory_mb"]) << 20
        self.file_size = max(self.cap, biggest) + 1
        self.outputs = (_memfd(b"", "stdout"), _memfd(b"", "stderr"))
        self.worker: _Worker | None = None

    def _new_worker(self, remaining: int) -> _Worker:
        tests = 1 if self.spec.get("isolate_tests") else remaining
        limits = (self.cpu_per_test * tests, self.memory, self.file_size)
        return _Worker(self.spec, self.code, self.base, self.outputs, limits)

    def _test_binary(self, binary: int, test: dict[str, Any]) -> tuple[str, str, str | None, float]:
        """Run a compiled submission on one test, in a fresh process."""
        data = test["input"].encode("utf-8", "surrogatepass")
        limits = (self.cpu_per_test, self.memory, self.file_size)
        start = time.monotonic()
        process = _Exec(binary, data, self.outputs, limits)
        outcome = process.wait(float(test["time_limit"]) - (time.monotonic() - start))
        elapsed = time.monotonic() - start
        verdict, output, error = _verdict(self.spec, test, outcome, None, process, self.outputs)
        return verdict, output, error, elapsed

    def _test_python(self, index: int, test: dict[str, Any]) -> tuple[str, str, str | None, float]:
        """Run a Python submission on one test in the test process (rerun as described)."""
        remaining = len(self.spec["tests"]) - index
        while True:
            if self.worker is None:
                self.worker = self._new_worker(remaining)
            worker = self.worker
            start = time.monotonic()
            outcome, status = worker.run(index, float(test["time_limit"]), self.cap)
            elapsed = time.monotonic() - start
            verdict, output, error = _verdict(
                self.spec, test, outcome, status, worker, self.outputs
            )
            if verdict != "AC" or self.spec.get("isolate_tests"):
                worker.stop()
                self.worker = None
            if verdict == "AC" or worker.tests_run == 1 or outcome == "timeout":
                return verdict, output, error, elapsed

    def test(self, index: int) -> dict[str, Any]:
        test = self.spec["tests"][index]
        if self.binary is not None:
            verdict, output, error, elapsed = self._test_binary(self.binary, test)
        else:
            verdict, output, error, elapsed = self._test_python(index, test)
        snippet = int(self.spec.get("snippet_chars", 1000))
        return {
            "index": index,
            "verdict": verdict,
            "time": round(elapsed, 4),
            "output": output[:snippet],
            "error": error[-snippet:] if error else None,
        }

    def close(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        if self.binary is not None:
            os.close(self.binary)
            self.binary = None


def main() -> None:
    """Judge the submission described by the spec on stdin; report on stdout."""
    _make_undumpable()
    # Done before the spec is read: in a sandbox started ahead of time (a pool) this costs
    # nothing on the critical path.
    base = _prelude_namespace(PRELUDE)
    data = sys.stdin.buffer.read()
    if not data:  # the pool closed this sandbox unused
        return
    spec = marshal.loads(data)
    binary: int | None = None
    code: Any = None
    message = ""
    if spec.get("language", "python") == "cpp":
        limit = float(spec.get("compile_time_limit") or COMPILE_TIME_LIMIT)
        start = time.monotonic()
        binary, message = compile_cpp(spec["code"], limit, COMPILE_MEMORY_MB)
        _emit({"compiled": round(time.monotonic() - start, 4)})
    else:
        try:
            code = compile(spec["code"], "solution.py", "exec")
        except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
            message = f"{type(e).__name__}: {e}"
    if code is None and binary is None:
        for index in range(len(spec["tests"])):
            _emit({"index": index, "verdict": "CE", "time": 0.0, "output": "", "error": message})
        _emit({"done": True})
        return
    # The prelude is the host's trusted code; every test starts from a copy of its namespace.
    prelude = spec.get("prelude") or ""
    if prelude.startswith(PRELUDE):
        exec(prelude[len(PRELUDE) :], base)
    else:
        base = _prelude_namespace(prelude)
    if spec["kind"] == "functional":
        import json  # noqa: F401  (imported once here, used by every test)
    judge = _Judge(spec, code, base, binary)
    failed = False
    try:
        for index in range(len(spec["tests"])):
            if failed and spec.get("stop_on_failure"):
                _emit({"index": index, "verdict": "SKIP", "time": 0.0, "output": "", "error": None})
                continue
            record = judge.test(index)
            _emit(record)
            failed = failed or record["verdict"] != "AC"
    finally:
        judge.close()
    _emit({"done": True})


if __name__ == "__main__":
    main()
