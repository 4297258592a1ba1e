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
  test's processes (CPU time, peak memory), whether it stopped the test at the wall-clock
  backstop, the captured standard output (bounded), the end of standard error and, for
  functional tests, the return value as JSON. The host checks each record's every field
  (type and bounds); a missing, duplicated or malformed record is a failed test.
* **Submission processes cannot reach the executor, the channel or another test.** The
  executor is non-dumpable (no ``ptrace``, no ``/proc/<pid>/mem`` or ``/proc/<pid>/fd``
  for processes of the same user; its test processes inherit that), the seccomp filter
  denies ``ptrace``, ``pidfd_getfd`` and ``process_vm_*``, and each test runs in a fresh
  forked process that holds descriptors 0, 1 and 2 only (everything else is closed with
  ``close_range``, whatever its number) and adds the bootstrap's second filter
  (``seccomp.child_filter_program``: no ``pidfd_open``, and its signals reach only
  processes started after the executor, its own) and a Landlock ruleset
  (:func:`landlock_ruleset`: none of ``/proc``'s files opens, so no memory report tells
  what a concurrent sandbox maps). The executor reads each test's input from its
  stdin pipe only when that test starts and wipes its copy before forking, so no test
  process holds another test's input; the host may hold hidden tests' inputs back until
  the public tests are reported (``judge(hidden_from=...)``). After each test every other process
  in the sandbox's PID namespace but the zygote is killed (from the namespace's process list:
  any process group) and reaped by the executor (their CPU time counts) before the next test
  starts.

Per test, a fresh process (own process group; CPU, address-space and file-size limits) runs
the submission afresh in a copy of the prelude namespace. It is forked by the executor's
*zygote* (:class:`_Zygote`), a copy of the executor made before any test ran, never by the
executor itself, so nothing the executor held of an earlier test (its output, its record, the
memory that held them) is in a test's process:
stdin programs as ``__main__``; functional and assert tests load the submission as a
module (``__name__ == "solution"``: an ``if __name__ == "__main__":`` block does not run,
as LiveCodeBench grades). Such a test reads its input (JSON arguments or assert code) from
fd 0 and writes its result there. C++ submissions are compiled once with
:func:`compile_cpp`, then each test executes the binary in a fresh process. The verdict
uses the test's CPU time; a test that waits is stopped after :func:`wall_limit` seconds.

Stdin of the executor (from the trusted host) is length-prefixed frames: first a
``marshal``-encoded dict -- ``code``, ``kind`` (``"stdin"``, ``"functional"`` or
``"assert"``), ``func_name``, ``prelude``, ``time_limits`` (one per test),
``memory_mb``, ``max_output_bytes``, ``reap`` (kill leftovers after
each test: inside a PID namespace only) and optionally ``language`` (``"python"`` or
``"cpp"``) and ``compile_time_limit`` --, then one frame per test's input (read when the
test starts). Output: records
on the channel, each a 4-byte big-endian length, a JSON header line and the raw bytes it
gives the sizes of: ``{"compiled": s, "error": n}`` (the compile error's ``n`` bytes
follow; ``0``: compiled) for C++ or a Python syntax check (always sent: the host times
each test from it), then one per test (``index``, ``outcome`` -- ``exited``, ``signaled``
or ``timeout`` --, ``code``, ``signal``, ``cpu``, ``wall``, ``maxrss_kb``, ``sizes``: of
stdout (``-1`` past the cap), stderr and the result (``-1``: none)), preceded, while a test
that waited for a CPU is given more wall-clock time, by ``{"running": index}`` once a
second; then ``{"done": true}``.

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


def _context() -> Any:
    # Exponents of any size, no rounding to zero or infinity: "1e-999999999" is not 0 and
    # "1e999999999" does not overflow.
    from decimal import MAX_EMAX, MIN_EMIN, Context

    return Context(Emax=MAX_EMAX, Emin=MIN_EMIN)


def _canonical_number(value: Decimal) -> str:
    if value.is_infinite():
        return "-inf" if value.is_signed() else "inf"
    if value.is_zero():
        return "0"
    if value.adjusted() < _INT_DIGITS and value == value.to_integral_value(context=_context()):
        return str(int(value))  # the same text as the integer fast path
    # Enough precision that normalising never rounds (the default context has 28 digits).
    context = _context()
    context.prec = len(value.as_tuple().digits) + 2
    return str(value.normalize(context))


#: Whitespace between tokens and around lines, as judges read it: ASCII only. ``str.split()``
#: also splits at U+001C-U+001F, U+0085, U+00A0 and other Unicode separators, which would let
#: ``"1\x1f2"`` match ``"1 2"``.
_WHITESPACE = " \t\n\r\v\f"
#: Tabs and the other ASCII separators within a line read as spaces. No ``re`` here: a stdin
#: test process inherits the executor's modules, and importing ``re`` cost every judge ms.
_TO_SPACE = str.maketrans("\t\r\v\f", "    ")
#: The characters of a number token as judges read it (ASCII digits, a sign, a point, an
#: exponent); Decimal then checks their order. Decimal alone also reads "1_0", other scripts'
#: digits and surrounding Unicode spaces.
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_INFINITIES = frozenset(sign + word for sign in ("", "+", "-") for word in ("inf", "infinity"))


def _tokens(line: str) -> list[str]:
    return [token for token in line.translate(_TO_SPACE).split(" ") if token]


def _is_number(token: str) -> bool:
    if not token.isascii():  # before lower(): a non-ASCII letter may lower to an ASCII one
        return False
    return token.lower() in _INFINITIES or all(char in _NUMBER_CHARS for char in token)


def _is_int(token: str) -> bool:
    body = token[1:] if token[:1] in "+-" else token
    return body.isascii() and body.isdigit() and len(body) < _INT_DIGITS


def _padded(token: str) -> bool:
    """Whether ``token`` is a whole number written with leading zeros (``007``, ``0101``).

    Such a token is a fixed-width text (a zero-padded code, a binary string) and matches only
    itself (att33c: read as numbers, ``101`` passed for ``00000101``).
    """
    body = token[1:] if token[:1] in "+-" else token
    return len(body) > 1 and body[0] == "0" and body.isascii() and body.isdigit()


def _numbers(tokens: list[str]) -> list[Decimal] | None:
    """The tokens as decimal numbers, or ``None`` if one is not a number (a NaN is not)."""
    from decimal import Decimal, InvalidOperation

    if not all(_is_number(token) for token in tokens):
        return None
    try:
        return [Decimal(token) for token in tokens]
    except (InvalidOperation, ValueError):
        return None


def _canonical_line(line: str) -> str:
    tokens = _tokens(line)
    if not tokens:
        return "s:"
    if all(_is_int(token) for token in tokens):  # the common case, without decimal
        return "d:" + " ".join("'" + t if _padded(t) else str(int(t)) for t in tokens)
    numbers = _numbers(tokens)
    if numbers is None:
        return "s:" + line
    return "d:" + " ".join(
        "'" + t if _padded(t) else _canonical_number(n)
        for t, n in zip(tokens, numbers, strict=True)
    )


def canonical_stdout(text: str) -> str:
    """Canonical form of a program's output: equal forms <=> the outputs match.

    Lines are stripped (after stripping the whole text) and split into tokens at ASCII
    whitespace only; a line of decimal numbers (ASCII digits, no ``_`` separators) becomes
    its normalised values, so ``"1.50  2"`` and ``"1.5 2.00"`` match. A whole number with
    leading zeros (``007``, ``0101``) is a fixed-width text: it matches only itself. Infinities
    (``inf``, ``-Infinity``, any case) are numbers too and equal only to an infinity of the
    same sign; a line with a NaN, or anything else, must match exactly. Never raises.
    """
    return "\n".join(
        _canonical_line(line.strip(_WHITESPACE)) for line in text.strip(_WHITESPACE).split("\n")
    )


#: An output longer than this many times the expected output (plus
#: :data:`OUTPUT_SLACK_BYTES`) is wrong without being read: padding numbers with zeros or
#: spaces does not take a correct answer that far.
OUTPUT_SLACK = 64
OUTPUT_SLACK_BYTES = 4096


def _lines_match(got: str, want: str) -> bool:
    if got == want:
        return True
    tokens, expected = _tokens(got), _tokens(want)
    if len(tokens) != len(expected) or not tokens:
        return False  # a numeric line matches only with as many numbers; text exactly
    differ = [(a, b) for a, b in zip(tokens, expected, strict=True) if a != b]
    if any(_padded(a) or _padded(b) for a, b in differ):
        return False
    # Every token must be a number (else the line is text, which differs); the differing
    # ones must have equal values. Decimal comparison is exact, whatever the exponent.
    if not all(_is_int(a) for a in tokens):
        if _numbers(tokens) is None:
            return False
    elif all(_is_int(b) for _, b in differ):
        return all(int(a) == int(b) for a, b in differ)
    got_numbers, want_numbers = _numbers([a for a, _ in differ]), _numbers([b for _, b in differ])
    if got_numbers is None or want_numbers is None:
        return False
    return all(x == y for x, y in zip(got_numbers, want_numbers, strict=True))


def stdout_matches(output: str, expected: str) -> bool:
    """Whether ``output`` matches ``expected``: ``canonical_stdout`` of both are equal.

    Linear in the texts and stops at the first differing line: a line equal as text costs
    no number parsing, and only tokens that differ as text are parsed, so the work is
    bounded by the expected output's size however the output was written. An output more
    than :data:`OUTPUT_SLACK` times as long as the expected one (plus
    :data:`OUTPUT_SLACK_BYTES`) does not match, whatever it says.
    """
    if len(output) > OUTPUT_SLACK * len(expected) + OUTPUT_SLACK_BYTES:
        return False  # no plausible spelling of the answer is that long: nothing is parsed
    got = output.strip(_WHITESPACE).split("\n")
    want = expected.strip(_WHITESPACE).split("\n")
    if len(got) != len(want):
        return False
    return all(
        _lines_match(a.strip(_WHITESPACE), b.strip(_WHITESPACE))
        for a, b in zip(got, want, strict=True)
    )


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


def _memfd(data: bytes | bytearray, name: str = "input") -> int:
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
#: CPU seconds a compilation may take (compiling and linking together); its wall clock is
#: stopped at :func:`wall_cap` of it.
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
#: Most bytes of a compile (or Python syntax) error the executor reports.
COMPILE_MESSAGE_BYTES = 4 * COMPILE_MESSAGE_CHARS + 64
#: What :func:`run_cpp_program` writes to stderr before the compiler's message.
COMPILE_ERROR_PREFIX = "compile error:\n"
# TMPDIR points nowhere on purpose: nothing may need a temporary file.
_CXX_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C", "LC_ALL": "C", "TMPDIR": "/nonexistent"}


def _fd_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


class _CompileClock:
    """The compiler's limits: ``limit`` CPU seconds and :func:`wall_cap` of it in wall time.

    The CPU time is that of all its processes, compile and link together. A compile slowed
    down by a concurrent load (waiting for a CPU) keeps its verdict, as a test does.
    """

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.wall_end = time.monotonic() + wall_cap(limit)
        self.before = resource.getrusage(resource.RUSAGE_CHILDREN)

    def cpu(self, running: int) -> float:
        """CPU seconds so far: the steps reaped, and ``running`` (a step) with its children."""
        now = resource.getrusage(resource.RUSAGE_CHILDREN)
        reaped = sum(getattr(now, f) - getattr(self.before, f) for f in ("ru_utime", "ru_stime"))
        return reaped + descendants_cpu(running, itself=True)

    def over(self, running: int) -> bool:
        return time.monotonic() >= self.wall_end or self.cpu(running) > self.limit


# How often a running compiler's CPU time is checked (seconds).
_COMPILE_POLL = 0.25


def _tool(
    argv: list[str], fds: tuple[int, ...], log: int, clock: _CompileClock, memory: int
) -> str:
    """Run one compiler step (own process group, killed past ``clock``); ``""`` or what failed."""
    import subprocess

    os.ftruncate(log, 0)
    os.lseek(log, 0, os.SEEK_SET)

    def limit() -> None:  # in the child, before exec
        os.setpgid(0, 0)  # a group of its own to kill (setsid is refused in a sandbox)
        if memory > 0:
            _lower_limit(resource.RLIMIT_AS, memory)
        # The judge's executor compiles unrestricted: the compiler opens what a test could
        # (`#include "/proc/self/status"` compiled, session 17 att24c F2), nothing more.
        if _LANDLOCK >= 0 and not landlock_restrict(_LANDLOCK):
            raise OSError("the compiler's file-system restriction was refused")

    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=fds,
            env=_CXX_ENV,
            cwd="/",
            preexec_fn=limit,
        )
    except (OSError, subprocess.SubprocessError) as e:
        return f"cannot run {argv[0]}: {type(e).__name__}: {e}"
    code: int | None = None
    try:
        while True:
            try:
                code = proc.wait(min(_COMPILE_POLL, max(clock.wall_end - time.monotonic(), 0.001)))
                break
            except subprocess.TimeoutExpired:
                if clock.over(proc.pid):
                    break
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


def _link_command(obj: int, binary: int, log: int, clock: _CompileClock) -> list[str] | str:
    """The linker command ``g++`` would run (``-###`` prints it), with ``ld`` for collect2."""
    import shlex

    why = _tool(
        [CXX, *CXX_FLAGS, "-fno-use-linker-plugin", "-###", _fd_path(obj), "-o", _fd_path(binary)],
        (obj, binary),
        log,
        clock,
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
        time_limit: CPU seconds of the compiler's processes, compiling and linking
            together; the wall clock stops them at :func:`wall_cap` of it (time spent
            waiting for a CPU under a concurrent load does not count).
        memory_mb: Address-space limit of each compiler process (0: inherit).

    Returns:
        ``(fd, "")``: a read-only, close-on-exec descriptor of the executable, sealed
        against writes and resizing (:func:`_seal`); or
        ``(None, message)``: the compiler's message (``solution.cpp`` names the source).
    """
    clock = _CompileClock(time_limit)
    memory = int(memory_mb) << 20
    fds: list[int] = []
    try:
        src = _memfd(source.encode("utf-8", "surrogatepass"), "solution.cpp")
        fds.append(src)
        obj, log = (os.memfd_create(name, 0) for name in ("obj", "log"))
        binary = os.memfd_create("bin", os.MFD_ALLOW_SEALING)
        fds += [obj, binary, log]
        names = {src: "solution.cpp", obj: "solution.o", binary: "solution"}
        why = _tool(cxx_compile_argv(_fd_path(src), _fd_path(obj)), (src, obj), log, clock, memory)
        if why:
            return None, (_log_text(log, names).rstrip() + "\n" + why).strip()
        link = _link_command(obj, binary, log, clock)
        if isinstance(link, str):
            return None, (_log_text(log, names).rstrip() + "\n" + link).strip()
        why = _tool(link, (obj, binary), log, clock, memory)
        if why:
            return None, (_log_text(log, names).rstrip() + "\n" + why).strip()
        _seal(binary)
        return os.open(_fd_path(binary), os.O_RDONLY | os.O_CLOEXEC), ""
    except OSError as e:  # e.g. out of memory for the in-memory files
        return None, f"cannot compile: {type(e).__name__}: {e}"
    finally:
        for fd in fds:
            os.close(fd)


def _seal(fd: int) -> None:
    """Make the in-memory file ``fd`` immutable: no write, no resize, no seal removed.

    Through every descriptor and every re-open: a test that reached the executable by a
    path (``/proc/self/exe``, then ``/proc/self/fd/N`` once it exec'd away, so that nothing
    ran it) wrote to it, and the next test ran the modified program (state between tests;
    session 11 attack F2). ``ld`` has exited: no writable mapping of it is left.
    """
    import fcntl

    seals = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)


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
    # Opens nothing under /proc, as a judged test: this runs in the program's forked process,
    # which the bootstrap restricted with the same rules (runner._LANDLOCK_SOURCE) before it
    # ran this code (a ruleset built here could not list the root, so it would allow nothing).
    exec_binary(binary)


# ------------------------------------------------------------------ Landlock: what a test opens

# Landlock's syscalls (the same numbers on every architecture): create_ruleset, add_rule,
# restrict_self.
_LL_CREATE, _LL_ADD_RULE, _LL_RESTRICT = 444, 445, 446
_LL_EXECUTE, _LL_WRITE_FILE, _LL_READ_FILE, _LL_READ_DIR = 0x1, 0x2, 0x4, 0x8
_LL_TRUNCATE, _LL_IOCTL_DEV = 1 << 14, 1 << 15
# Rights that apply to a file (a rule on a file may grant only these).
_LL_FILE_RIGHTS = _LL_EXECUTE | _LL_WRITE_FILE | _LL_READ_FILE | _LL_TRUNCATE | _LL_IOCTL_DEV
#: Top-level entries of the sandbox's root that a test process cannot open anything under
#: (Landlock; see :func:`landlock_ruleset`). ``/proc``: a process's memory reports
#: (``/proc/self/smaps``, ``smaps_rollup``, ``numa_maps``, ``pagemap``) tell how many
#: processes map a page of a shared read-only file, and a concurrent sandbox sets that
#: count (session 11 attack F1: a relay with no solving code earned 1.0 next to a solver);
#: ``/proc``'s other files tell a program nothing it needs (its own links, ``/proc/self/fd/N``
#: and ``/dev/stdin``, still reach what they point at when that is the test's own file or a
#: visible one: Landlock checks what is opened, not the path to it).
LANDLOCK_HIDDEN = ("proc",)

_SYSCALL: Any = None


def _syscall(*args: int | bytes | None) -> int:
    """The C library's ``syscall(2)``: ints go as C longs, bytes as a pointer; -1: failed."""
    global _SYSCALL
    if _SYSCALL is None:
        import _ctypes

        class _Long(_ctypes._SimpleCData):
            _type_ = "l"

        class _Function(_ctypes.CFuncPtr):
            _flags_ = _ctypes.FUNCFLAG_CDECL
            _restype_ = _Long

        class _Libc:
            _handle = _ctypes.dlopen(None)  # type: ignore[arg-type]

        _SYSCALL = (_Function(("syscall", _Libc())), _Long)  # type: ignore[arg-type]
    function, long = _SYSCALL
    return int(function(*(long(a) if isinstance(a, int) else a for a in args)))


def landlock_abi() -> int:
    """The Landlock ABI version the kernel offers here (0: none, or refused)."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return max(_syscall(_LL_CREATE, None, 0, 1), 0)  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError, ImportError):
        return 0


def landlock_ruleset(root: str = "/") -> int:
    """A Landlock ruleset for test processes (a descriptor), or -1 where there is none.

    Beneath every top-level entry of ``root`` but :data:`LANDLOCK_HIDDEN`, a process
    restricted by it may read files and directories and execute files; under ``/dev`` it
    may also write, truncate and ``ioctl`` (``/dev/null``; the sandbox's root is read-only,
    so nothing there is written that could be read back). It cannot open anything else:
    none of ``/proc``'s own files (memory reports, ``maps``, ``status``...), whatever the
    path, nor create any file. Its in-memory files, pipes and the visible files stay
    reachable through ``/proc/self/fd/N`` and ``/dev/stdin`` (Landlock checks the file
    opened, not the path). Where the ABI has them it also scopes abstract Unix sockets and
    signals to the test's own processes (ABI 6) and refuses TCP ``bind``/``connect`` (ABI
    4). Built once by the executor; each test process applies it with
    :func:`landlock_restrict` (descriptors it opened before keep their rights).
    """
    abi = landlock_abi()
    if abi < 1:
        return -1
    handled = (1 << (13 if abi == 1 else 14 if abi == 2 else 15 if abi < 5 else 16)) - 1
    order = sys.byteorder
    attr = (
        handled.to_bytes(8, order)
        + (3 if abi >= 4 else 0).to_bytes(8, order)  # LANDLOCK_ACCESS_NET_{BIND,CONNECT}_TCP
        + (3 if abi >= 6 else 0).to_bytes(8, order)  # LANDLOCK_SCOPE_{ABSTRACT_UNIX_SOCKET,SIGNAL}
    )
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _syscall(_LL_CREATE, attr[:size], size, 0)
    if ruleset < 0:
        return -1
    try:
        entries = sorted(os.listdir(root))
    except OSError:
        entries = []
    read = _LL_EXECUTE | _LL_READ_FILE | _LL_READ_DIR
    device = read | _LL_WRITE_FILE | _LL_TRUNCATE | _LL_IOCTL_DEV
    for entry in entries:
        if entry in LANDLOCK_HIDDEN:
            continue
        try:
            target = os.open(os.path.join(root, entry), os.O_PATH | os.O_CLOEXEC)
        except OSError:
            continue  # e.g. a dangling link
        try:
            access = (device if entry == "dev" else read) & handled
            if os.fstat(target).st_mode & 0o170000 != 0o040000:  # not a directory
                access &= _LL_FILE_RIGHTS
            rule = access.to_bytes(8, order) + target.to_bytes(4, order, signed=True)
            _syscall(_LL_ADD_RULE, ruleset, 1, rule, 0)  # LANDLOCK_RULE_PATH_BENEATH
        finally:
            os.close(target)
    return ruleset


def landlock_restrict(ruleset: int) -> bool:
    """Restrict the calling process (and what it starts) by ``ruleset``; False if refused."""
    return _syscall(_LL_RESTRICT, ruleset, 0) == 0


# ------------------------------------------------------------------ one test

#: Wall-clock backstop of a test: the verdict uses CPU time, and a test that waits (sleeps,
#: blocks) is stopped after this many times its limit, plus :data:`WALL_EXTRA` seconds.
WALL_FACTOR = 2.0
WALL_EXTRA = 1.0
# The highest descriptor number close_range may be given (it clamps to what is open).
_MAX_FD = 0x7FFFFFFF
# Input frames the host sends (4-byte length first) may not exceed this.
_INPUT_MAX = 1 << 31


#: The most wall-clock time a test may take however long it waited for a CPU: this many times
#: its limit (and never less than :func:`wall_limit`).
WALL_CAP_FACTOR = 10.0


def wall_limit(time_limit: float) -> float:
    """The wall-clock backstop of a test whose CPU-time limit is ``time_limit``.

    Time the test spent waiting for a CPU (runnable, another task running: a concurrent
    load) does not count against it, up to :func:`wall_cap`.
    """
    return WALL_FACTOR * time_limit + WALL_EXTRA


def wall_cap(time_limit: float) -> float:
    """The absolute wall-clock bound of a test, waits for a CPU included."""
    return max(WALL_CAP_FACTOR * time_limit, wall_limit(time_limit))


def cpu_wait(pid: int) -> float:
    """Seconds ``pid`` spent runnable but waiting for a CPU: the most of any of its threads.

    From ``/proc/<pid>/task/*/schedstat`` (its second field, ``run_delay``, in ns); 0 where
    the kernel does not report it.
    """
    most = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as f:
                most = max(most, int(f.read().split()[1]))
        except (OSError, IndexError, ValueError):
            continue
    return most / 1e9


def descendants_cpu(root: int, itself: bool = False) -> float:
    """CPU seconds of the live descendants of ``root`` (their reaped children's included).

    With ``itself``, ``root``'s own (and its reaped children's) too.

    From ``/proc/*/stat`` (``utime + stime + cutime + cstime``). With ``root`` a child
    subreaper, every process a test started is one of its descendants, whatever group or
    parent it moved to; those ``root`` already reaped are in its ``RUSAGE_CHILDREN``.
    """
    parents: dict[int, int] = {}
    times: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0.0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = sum(int(x) for x in fields[11:15])
        except (OSError, IndexError, ValueError):
            continue
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    ticks, stack = 0, [root] if itself else list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        ticks += times.get(pid, 0)
        stack.extend(children.get(pid, ()))
    return ticks / _CLOCK_TICKS


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _fork_with_retry() -> int:
    # Under a per-user process count another run may briefly hold every slot.
    for attempt in range(40):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.025 * (attempt + 1))
    return os.fork()


def close_descriptors(keep: int = -1) -> None:
    """Close every descriptor above 2 (but ``keep``), whatever its number (``close_range``)."""
    if keep > 2:
        os.closerange(3, keep)
        os.closerange(keep + 1, _MAX_FD)
    else:
        os.closerange(3, _MAX_FD)


def _child_streams(stdin_fd: int, out: int, err: int, keep: int) -> None:
    """In a test's process: standard streams onto the test's files; nothing else open."""
    os.dup2(stdin_fd, 0)
    os.dup2(out, 1)
    os.dup2(err, 2)
    close_descriptors(keep)


def _make_streams() -> tuple[Any, Any, Any]:
    import io

    # An explicit encoding skips the locale look-up (a third of the set-up time).
    return (
        io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "rb", closefd=False)), encoding="utf-8"),
        io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "wb", closefd=False)), encoding="utf-8"),
        io.TextIOWrapper(
            io.BufferedWriter(io.FileIO(2, "wb", closefd=False)),
            encoding="utf-8",
            errors="backslashreplace",
            line_buffering=True,
        ),
    )


_STREAMS: tuple[Any, Any, Any] | None = None
# The executor's own standard streams, kept referenced: a test process that replaces them
# then does not free them (freeing writes to their pages: more copy-on-write faults).
_OWN_STREAMS: tuple[Any, ...] = ()


def prepare_streams() -> None:
    """Build a test's ``sys.stdin``/``stdout``/``stderr`` once, in the executor.

    Every test process inherits them unused (building them in each test costs a good part
    of a test's start). They are built while descriptors 0-2 are in-memory files, as in a
    test (seekable, the same buffer sizes), then the executor's own streams are put back.
    """
    global _STREAMS, _OWN_STREAMS
    _OWN_STREAMS = (
        sys.stdin,
        sys.stdout,
        sys.stderr,
        sys.__stdin__,
        sys.__stdout__,
        sys.__stderr__,
    )
    saved = [os.dup(fd) for fd in (0, 1, 2)]
    try:
        for fd in (0, 1, 2):
            scratch = os.memfd_create("stream", 0)
            os.dup2(scratch, fd)
            os.close(scratch)
        _STREAMS = _make_streams()
    finally:
        for fd, copy in zip((0, 1, 2), saved, strict=True):
            os.dup2(copy, fd)
            os.close(copy)


def _python_streams() -> None:
    streams = _STREAMS if _STREAMS is not None else _make_streams()
    sys.stdin, sys.stdout, sys.stderr = streams
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


def _take_input() -> str:
    """A functional or assert test's input: read from fd 0, which then holds the result."""
    size = os.fstat(0).st_size
    data = os.pread(0, size, 0) if size else b""
    os.ftruncate(0, 0)
    return data.decode("utf-8", "surrogatepass")


def _report(data: bytes) -> None:
    """Write a functional or assert test's result on fd 0 (the test's own file)."""
    os.ftruncate(0, 0)
    view, offset = memoryview(data), 0
    while offset < len(data):
        offset += os.pwrite(0, view[offset:], offset)


def _run_python_test(spec: dict[str, Any], code: Any, base: dict[str, Any]) -> None:
    """The body of a Python test's process: run, report on fd 0 (functional/assert), exit."""
    kind = spec["kind"]
    test_input = "" if kind == "stdin" else _take_input()
    _python_streams()
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

            args = [json.loads(line) for line in test_input.split("\n") if line.strip()]
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
            _report(text.encode("utf-8", "surrogatepass"))
        elif kind == "assert":
            exec(compile(test_input, "test.py", "exec"), namespace)
            _report(b"A")
        _join_threads()  # as the interpreter does at exit: a program may work in a thread
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) and 0 < e.code < 256 else 1
    except BaseException as e:
        # A failed assert of an assert test is its verdict; any other exception (an assert
        # of a stdin or functional program included: re-raised from here, it ran on in the
        # executor's code in this process) is a runtime error with its traceback.
        if kind == "assert" and isinstance(e, AssertionError):
            _report(f"FAssertionError: {e}"[:500].encode("utf-8", "replace"))
        else:
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


def _read_file(fd: int, cap: int, tail: bool = False) -> memoryview | bytes | None:
    """The content of a test's in-memory file: ``None`` past ``cap`` (or its end, ``tail``).

    A view of the file's own pages (``mmap``), never a copy on the executor's heap, where
    freed memory keeps what it held (session 17 att24c: a test forked from that heap read the
    previous one's stderr; tests are forked by the zygote now, and this keeps the heap clean
    too). Dropping the view unmaps it; the kernel's pages go when the file is closed, and
    come back to anyone zeroed.
    """
    import mmap

    size = os.fstat(fd).st_size
    if size > cap and not tail:
        return None
    if size == 0:
        return b""
    view = memoryview(mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ))
    return view[size - cap :] if size > cap else view


def _read_exact(buffer: bytearray) -> bool:
    """Fill ``buffer`` from stdin (no read past it: later inputs stay in the pipe)."""
    view, got = memoryview(buffer), 0
    while got < len(buffer):
        n = os.readv(0, [view[got:]])
        if n == 0:
            return False
        got += n
    return True


def _read_frame() -> bytearray | None:
    """The next length-prefixed frame the host sent on stdin, or ``None`` at its end."""
    head = bytearray(4)
    if not _read_exact(head):
        return None
    size = int.from_bytes(head, "big")
    if size >= _INPUT_MAX:
        return None
    body = bytearray(size)
    return body if _read_exact(body) else None


def _json_value(value: Any) -> str:
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    if type(value) is float and math.isfinite(value):
        return repr(value)  # what json.dumps writes for a finite float
    if type(value) is str and value.isascii() and value.isidentifier():
        return f'"{value}"'  # no character that needs an escape
    if type(value) is list:
        return "[" + ",".join(_json_value(v) for v in value) + "]"
    raise TypeError(f"not written by header_json: {value!r}")


def header_json(header: dict[str, Any]) -> str:
    """A record's header as JSON text, without importing ``json``.

    Importing ``json`` (and ``re`` with it) costs a sandbox a few ms before its first
    record, on the critical path of a pooled judge. Headers hold only names, integers,
    finite floats, ``None``, booleans and lists of those; anything else falls back to
    ``json`` (the host parses either with ``json.loads``).
    """
    try:
        return "{" + ",".join(f"{_json_value(k)}:{_json_value(v)}" for k, v in header.items()) + "}"
    except TypeError:
        import json

        return json.dumps(header, ensure_ascii=True)


def _prctl(option: int, value: int) -> int:
    # An int return type that is a direct _SimpleCData subclass comes back as an int.
    import _ctypes

    class _U(_ctypes._SimpleCData):
        _type_ = "L"

    class _I(_ctypes._SimpleCData):
        _type_ = "i"

    class _F(_ctypes.CFuncPtr):
        _flags_ = _ctypes.FUNCFLAG_CDECL
        _restype_ = _I

    class _L:
        _handle = _ctypes.dlopen(None)  # type: ignore[arg-type]

    zero = _U(0)
    return _F(("prctl", _L()))(  # type: ignore[arg-type]
        option, _U(value), zero, zero, zero
    )


def _namespace_pids() -> list[int]:
    """The processes of this PID namespace (its /proc's numbered entries)."""
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


# Seconds the executor waits for the zygote's answer (a test may stop it: then no more tests).
_ZYGOTE_WAIT_S = 10.0


class _Zygote:
    """The process every test is forked from: a copy of the executor made before any test ran.

    The executor holds each test's results for a while (the wait status, the resource usage,
    the record it writes), and what it frees stays on its heap: a test forked from it could
    read what the previous one left there (session 17 att24c/att24d: stderr bytes, then the
    record itself, pooled work across tests).
    So the executor forks this zygote once, before the first test, and never forks a test
    itself. Per test the zygote receives the limit and the test's three files (``SCM_RIGHTS``),
    forks the test, says its pid, forks its own successor (an equally clean copy: it only
    ever held file numbers, the limit and a pid) and exits; the successor says its pid and
    waits for the next test. The test is then the executor's child (it is the subreaper), so
    it waits for it, counts its CPU and reaps what it leaves, as before. The successor's fork
    and the old zygote's exit overlap the test's run.
    """

    def __init__(self, executor: _Executor) -> None:
        import socket

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = _fork_with_retry()
        if pid == 0:  # pragma: no cover - the zygote
            ours.close()
            _zygote_loop(theirs, executor)
        theirs.close()
        ours.settimeout(_ZYGOTE_WAIT_S)
        self.sock = ours
        self.retiring: int | None = None  # the zygote that forked the running test
        self.pid = self._said("Z")  # the waiting zygote (None: gone)

    def _said(self, kind: str) -> int | None:
        """The pid the zygote side says next (``kind`` "T": a test, "Z": a zygote)."""
        try:
            what, pid = self.sock.recv(64).decode("ascii").split()
            return int(pid) if what == kind else None
        except (OSError, ValueError):
            return None

    def spawn(self, limit: float, fds: tuple[int, int, int]) -> int | None:
        """Fork a test through the zygote: its pid, or None if the zygote is gone."""
        import socket

        if self.pid is None:
            self.pid = self._said("Z")  # the successor of the last test's zygote
        test = None
        if self.pid is not None:
            try:
                socket.send_fds(self.sock, [repr(limit).encode("ascii")], list(fds))
                test = self._said("T")
            except OSError:
                pass
        self.retiring, self.pid = self.pid, None
        if test is None:  # stopped or killed by a test: no more tests
            self.settle()
        return test

    def settle(self) -> float:
        """Reap the zygote that forked the last test (CPU seconds it used: not the test's).

        Called before the test is waited for: the test is the executor's child only once its
        zygote has exited. A zygote a test stopped is killed after :data:`_ZYGOTE_WAIT_S`.
        """
        retiring, self.retiring = self.retiring, None
        if retiring is None:
            return 0.0
        if self.pid is None:
            self.pid = self._said("Z")
        try:
            pidfd = os.pidfd_open(retiring)
        except OSError:
            return 0.0
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            if not poller.poll(_ZYGOTE_WAIT_S * 1000):
                os.kill(retiring, signal.SIGKILL)
            _, _, usage = os.wait4(retiring, 0)
        except (OSError, ChildProcessError):
            return 0.0
        finally:
            os.close(pidfd)
        return usage.ru_utime + usage.ru_stime

    def close(self) -> None:
        self.sock.close()  # the zygote reads the end and exits


def _zygote_loop(sock: Any, executor: _Executor) -> None:  # pragma: no cover - the zygote
    import socket

    sock.send(f"Z {os.getpid()}".encode("ascii"))
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 64, 3)
        except OSError:
            os._exit(0)
        if not message or len(fds) != 3:
            os._exit(0)
        limit = float(message.decode("ascii"))
        test = _fork_with_retry()
        if test == 0:
            sock.close()
            executor.run_test(limit, *fds)
        sock.send(f"T {test}".encode("ascii"))
        if _fork_with_retry() == 0:  # the next zygote: the same clean state
            for fd in fds:
                os.close(fd)
            sock.send(f"Z {os.getpid()}".encode("ascii"))
            continue
        os._exit(0)


class _Executor:
    """Runs the tests of one submission, one fresh process each, and reports them.

    Each test's input is read from stdin only when that test starts (later ones stay in
    the pipe), copied into the test's own in-memory file, and the executor's copy is wiped
    before the test's process is forked: no test process holds another test's input.
    """

    def __init__(self, spec: dict[str, Any], channel: int, code: Any, base: dict[str, Any]):
        self.spec, self.channel, self.code, self.base = spec, channel, code, base
        self.binary: int | None = None
        self.cap = int(spec["max_output_bytes"])
        self.memory = int(spec["memory_mb"]) << 20
        # A test writes only its output and (functional) its result into its files; its
        # input was written by the executor. No input size enters the sandbox's spec.
        self.file_size = max(self.cap, RESULT_MAX_BYTES) + 1
        self.reap = bool(spec.get("reap"))
        self.zygote: _Zygote  # started by main() before the first test

    def emit_compiled(self, seconds: float, message: str) -> None:
        """Report the compile: the message (empty: compiled) goes as the record's blob.

        So its length or content never breaks the header line (an include of the source
        itself repeats "from solution.cpp:1" past any header's cap).
        """
        data = message.encode("utf-8", "replace")[:COMPILE_MESSAGE_BYTES]
        self.emit({"compiled": seconds, "error": len(data)}, data)

    def emit(self, header: dict[str, Any], *blobs: bytes | memoryview) -> None:
        """One record: length, a JSON header line, then the raw blobs it gives the sizes of."""
        body = header_json(header).encode("ascii") + b"\n"
        size = len(body) + sum(len(blob) for blob in blobs)
        parts = [memoryview(p) for p in (size.to_bytes(4, "big"), body, *blobs) if p]
        while parts:  # one writev, one wake-up of the host, unless the pipe is full
            sent = os.writev(self.channel, parts)
            while parts and sent >= len(parts[0]):
                sent -= len(parts.pop(0))
            if parts:
                parts[0] = parts[0][sent:]

    def run_test(self, limit: float, stdin_fd: int, out: int, err: int) -> None:
        """The body of a test's process (forked by the zygote): set up, then run; never returns."""
        try:
            os.setpgid(0, 0)
            if _LANDLOCK >= 0 and not landlock_restrict(_LANDLOCK):
                raise OSError("the test's file-system restriction was refused")
            _child_streams(stdin_fd, out, err, -1 if self.binary is None else self.binary)
            _lower_limit(resource.RLIMIT_CPU, math.ceil(limit) + 1)
            _lower_limit(resource.RLIMIT_AS, self.memory)
            _lower_limit(resource.RLIMIT_FSIZE, self.file_size)
            if _CHILD_FILTER is not None and _CHILD_FILTER():
                raise OSError("the test's syscall filter was refused")
            if self.binary is not None:
                exec_binary(self.binary)
        except BaseException as e:
            os.write(2, f"cannot start the test: {e}\n".encode("utf-8", "replace"))
            os._exit(127)
        _run_python_test(self.spec, self.code, self.base)

    def _clear_leftovers(self) -> None:
        """Kill and reap whatever the test left (its children are ours: we are their reaper)."""
        deadline = time.monotonic() + 2.0
        spare = {os.getpid(), 1, self.zygote.pid}
        while True:
            # Inside a PID namespace every process we may signal but ours (the executor, the
            # zygote) is the test's: what the namespace's /proc lists (kill(-1) would take
            # the zygote too).
            left = []
            for pid in _namespace_pids() if self.reap else ():
                if pid in spare:
                    continue
                try:
                    os.kill(pid, signal.SIGKILL)
                    left.append(pid)
                except PermissionError:
                    spare.add(pid)  # not ours to signal (as kill(-1) would skip it)
                except OSError:
                    pass
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                return
            if not left or time.monotonic() > deadline:
                return
            time.sleep(0.0002)  # killed, not yet dead

    def test(self, index: int, data: bytearray) -> tuple[dict[str, Any], Any, Any, Any]:
        limit = float(self.spec["time_limits"][index])
        stdin_fd, out, err = _memfd(data), *(os.memfd_create(n, 0) for n in "oe")
        memoryview(data)[:] = bytes(len(data))  # the executor keeps no copy of the input
        try:
            start = time.monotonic()
            pid = self.zygote.spawn(limit, (stdin_fd, out, err))
            if pid is None:  # the test killed the zygote (it can signal it without Landlock)
                message = b"cannot start the test: its process could not be forked\n"
                header = {
                    "index": index,
                    "outcome": "exited",
                    "code": 127,
                    "signal": None,
                    "cpu": 0.0,
                    "wall": 0.0,
                    "maxrss_kb": 0,
                    "sizes": [0, len(message), -1],
                }
                return header, b"", message, b""
            # The test's process is ours now (the zygote's fork ended: we are the reaper); the
            # totals of earlier tests' processes are read here, never in a frame it forked from.
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            try:
                os.setpgid(pid, pid)  # also here: the group must exist before it is killed
            except OSError:
                pass
            pidfd = os.pidfd_open(pid)
            try:
                poller = select.poll()  # not select(): descriptor numbers may be high
                poller.register(pidfd, select.POLLIN)
                ended = poller.poll(max(wall_limit(limit), 0.001) * 1000)
                # Past the backstop, a test that was kept waiting for a CPU (a concurrent
                # load) gets that time back, up to the cap; a sleeping one does not, nor
                # does the time its own processes had the CPU (children spinning where its
                # main thread waits), and a test whose processes together used more than
                # its limit is stopped (TLE whatever follows). The host hears that the test
                # still runs (it ends a run that goes silent).
                while not ended:
                    elapsed = time.monotonic() - start
                    now = resource.getrusage(resource.RUSAGE_CHILDREN)
                    used = descendants_cpu(os.getpid()) + sum(
                        getattr(now, f) - getattr(before, f) for f in ("ru_utime", "ru_stime")
                    )
                    if used > limit:
                        break
                    waited = min(cpu_wait(pid), max(elapsed - used, 0.0))
                    left = min(wall_limit(limit) - (elapsed - waited), wall_cap(limit) - elapsed)
                    if left <= 0:
                        break
                    self.emit({"running": index})
                    ended = poller.poll(min(max(left, 0.01), 1.0) * 1000)
            finally:
                os.close(pidfd)
            timed_out = not ended
            forker_cpu = self.zygote.settle()  # the test is our child once its zygote exited
            _kill_group(pid)
            _, wait_status, usage = os.wait4(pid, 0)
            wall = time.monotonic() - start
            self._clear_leftovers()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            # Every process of the test, reaped by it or by us (setsid daemons included).
            cpu = sum(getattr(after, f) - getattr(before, f) for f in ("ru_utime", "ru_stime"))
            cpu = max(cpu - forker_cpu, 0.0)
            stdout = _read_file(out, self.cap)
            stderr = _read_file(err, _STDERR_KEEP, tail=True) or b""
            result = (
                None
                if self.binary is not None or self.spec["kind"] == "stdin"
                else (_read_file(stdin_fd, RESULT_MAX_BYTES))
            )
        finally:
            for fd in (stdin_fd, out, err):
                os.close(fd)
        signaled = os.WIFSIGNALED(wait_status)
        header = {
            "index": index,
            "outcome": "timeout" if timed_out else "signaled" if signaled else "exited",
            "code": None if signaled else os.WEXITSTATUS(wait_status),
            "signal": os.WTERMSIG(wait_status) if signaled else None,
            "cpu": round(max(cpu, usage.ru_utime + usage.ru_stime), 4),
            "wall": round(wall, 4),
            "maxrss_kb": int(usage.ru_maxrss),
            "sizes": [
                -1 if stdout is None else len(stdout),
                len(stderr),
                -1 if result is None else len(result),
            ],
        }
        return header, stdout or b"", stderr, result or b""


#: The executor's Landlock ruleset (:func:`landlock_ruleset`) that each test process applies
#: to itself; -1 where the kernel (or the sandbox) offers none: tests can then open what
#: the sandbox shows, ``/proc`` included (the README's residual channels).
_LANDLOCK = -1

#: Installs the test processes' syscall filter on the caller (the bootstrap's, see
#: ``rllm_envs.sandbox.seccomp.child_filter_program``); nonzero: refused. ``None`` where this
#: executor was not started by the bootstrap, or no filter is built for this machine.
_CHILD_FILTER: Any = None


def _prelude_namespace(prelude: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(prelude, namespace)
    return namespace


def main(channel: int) -> None:
    """Run the submission described on stdin; report on ``channel``.

    Stdin carries length-prefixed frames: the spec (``marshal``), then each test's input,
    sent by the host only once the previous test's record arrived.
    """
    import marshal

    global _LANDLOCK
    # Orphans of a test become our children, so their CPU time is counted and they are
    # reaped (a no-op where we are the namespace's init already).
    _prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
    _LANDLOCK = landlock_ruleset()  # each test process restricts itself with it
    # Done before the spec is read: in a sandbox started ahead of time (a pool) this costs
    # nothing on the critical path.
    base = _prelude_namespace(PRELUDE)
    prepare_streams()  # unused by C++ tests, but costly after the spec arrives
    import gc

    gc.freeze()
    frame = _read_frame()
    if frame is None:  # the pool closed this sandbox unused
        return
    spec = marshal.loads(frame)
    executor = _Executor(spec, channel, None, base)
    if spec.get("language", "python") == "cpp":
        limit = float(spec.get("compile_time_limit") or COMPILE_TIME_LIMIT)
        start = time.monotonic()
        executor.binary, message = compile_cpp(spec["code"], limit, COMPILE_MEMORY_MB)
        executor.emit_compiled(round(time.monotonic() - start, 4), message)
        if executor.binary is None:
            executor.emit({"done": True})
            return
    else:
        try:
            executor.code = compile(spec["code"], "solution.py", "exec")
        # ValueError: source with NUL bytes; MemoryError, RecursionError: a source built to
        # exhaust the compiler (200,000 unary minus signs) is a compile error, not a crash.
        except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
            executor.emit_compiled(0.0, f"{type(e).__name__}: {e}")
            executor.emit({"done": True})
            return
        executor.emit_compiled(0.0, "")  # the host times each test from its last record
        # The prelude is the host's trusted code; every test starts from a copy of it.
        prelude = spec.get("prelude") or ""
        if prelude.startswith(PRELUDE):
            exec(prelude[len(PRELUDE) :], base)
        else:
            executor.base = _prelude_namespace(prelude)
        if spec["kind"] == "functional":
            import json  # noqa: F401  (imported once here, used by every test)
    gc.freeze()  # test processes inherit a frozen heap: their collections skip it (less COW)
    executor.zygote = _Zygote(executor)  # every test is forked from this clean copy
    for index in range(len(spec["time_limits"])):
        data = _read_frame()
        if data is None:  # the host has seen enough (stop at the first failure)
            return
        # A test is forked from this frame: a test walking up its frames read the previous
        # one's record here (session 17 att24d: 23 bits a boundary, pooled work). Nothing of
        # a test stays bound once it is reported.
        executor.emit(*executor.test(index, data))
        del data
    executor.zygote.close()
    executor.emit({"done": True})


if __name__ == "__main__":
    _CHILD_FILTER = globals().get("__rllm_child_filter__")
    main(int(globals().get("__rllm_channel__", -1)))
