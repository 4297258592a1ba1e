"""The judge harness: runs every test of one submission inside one sandbox.

This file is standard-library only and is executed *as the program* inside the sandbox
(its source is sent to :func:`rllm_envs.sandbox.run`); the host also imports it for the
comparison rules (:func:`canonical_stdout`, :func:`canonical_value`, :func:`digest`), so
both sides share one definition.

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

Comparison rules (LiveCodeBench's): for stdin/stdout tests the whole output is stripped
and split into lines, each line stripped, the number of lines must match, and two lines
match if they are equal or if both parse as whitespace-separated decimal numbers with
equal values. Functional results are compared as JSON values (tuples as lists, ``1`` and
``1.0`` and ``True`` equal, as in Python).

Input spec (a ``marshal``-encoded dict on stdin, from the trusted host): ``code``, ``kind``
(``"stdin"``, ``"functional"`` or ``"assert"``), ``func_name``, ``prelude``, ``salt``,
``tests`` (list of ``{"input", "expected": [digest, ...], "time_limit"}``), ``memory_mb``,
``max_output_bytes``, ``snippet_chars``, ``stop_on_failure``, ``isolate_tests``. Output:
one Python literal dict per line and test, ``{"index", "verdict", "time", "output",
"error"}`` (read with ``ast.literal_eval``), then ``{"done": True}``.

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
    worker: _Worker,
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

    def __init__(self, spec: dict[str, Any], code: Any, base: dict[str, Any]) -> None:
        self.spec, self.code, self.base = spec, code, base
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

    def test(self, index: int) -> dict[str, Any]:
        test = self.spec["tests"][index]
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
                break
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
    try:
        code = compile(spec["code"], "solution.py", "exec")
    except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
        message = f"{type(e).__name__}: {e}"
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
    judge = _Judge(spec, code, base)
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
