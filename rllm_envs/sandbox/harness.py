"""The judge harness: runs every test of one submission inside one sandboxed process.

This file is standard-library only and is executed *as the program* inside the sandbox
(its source is sent to :func:`rllm_envs.sandbox.run`); the host also imports it for the
comparison rules (:func:`canonical_stdout`, :func:`canonical_value`, :func:`digest`), so
both sides share one definition.

How a submission is judged:

* The harness compiles the submission once, then forks one child per test. The child gets
  the test input on file descriptor 0 (an in-memory file), a pipe as stdout and stderr, its
  own process group, CPU and address-space limits, and runs the submission from scratch.
  The parent (which never runs submitted code) enforces the test's wall-clock limit,
  the output cap, and decides the verdict: ``AC``, ``WA``, ``TLE``, ``RE``, ``MLE``,
  ``OLE`` (or ``CE`` when the submission does not compile; ``SKIP`` after a failure when
  stopping early).
* Expected outputs never enter the sandbox: the host sends a salted SHA-256 digest of the
  canonical form of each expected answer, and the parent compares digests. The parent is
  made non-dumpable so that a test process (same user) cannot read its memory or
  descriptors.

Comparison rules (LiveCodeBench's): for stdin/stdout tests the whole output is stripped
and split into lines, each line stripped, the number of lines must match, and two lines
match if they are equal or if both parse as whitespace-separated decimal numbers with
equal values. Functional results are compared as JSON values (tuples as lists, ``1`` and
``1.0`` and ``True`` equal, as in Python).

Input spec (a ``marshal``-encoded dict on stdin, from the trusted host): ``code``, ``kind``
(``"stdin"``, ``"functional"`` or ``"assert"``), ``func_name``, ``prelude``, ``salt``,
``tests`` (list of ``{"input", "expected": [digest, ...], "time_limit"}``), ``memory_mb``,
``max_output_bytes``, ``snippet_chars``, ``stop_on_failure``. Output: one Python literal
dict per line and test, ``{"index", "verdict", "time", "output", "error"}`` (read with
``ast.literal_eval``), then ``{"done": True}``.

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


def _make_undumpable() -> None:
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 4
    except Exception:  # best effort: without it a test could read our memory (digests only)
        pass


def _memfd(data: bytes) -> int:
    fd = os.memfd_create("input", 0)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _child(
    spec: dict[str, Any], code: Any, base: dict[str, Any], test: dict[str, Any], fds: dict[str, int]
) -> None:
    """Run one test in the forked child; never returns."""
    import io

    status: dict[str, Any] = {"ok": True}
    try:
        os.setpgid(0, 0)
        limit = float(test["time_limit"])
        cpu = math.ceil(limit) + 1
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        memory = int(spec["memory_mb"]) << 20
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if hard == resource.RLIM_INFINITY or memory < hard:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        os.dup2(fds["stdin"], 0)
        os.dup2(fds["stdout"], 1)
        os.dup2(fds["stderr"], 2)
        for name in ("stdin", "stdout", "stderr"):
            os.close(fds[name])
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
    except BaseException as e:  # pragma: no cover - setup failure is an internal error
        status = {"ok": False, "kind": "internal", "error": f"{type(e).__name__}: {e}"}
        _report(fds["result"], status)
        os._exit(3)
    namespace = dict(base)
    kind = spec["kind"]
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
    try:
        sys.stdout.flush()
    except BaseException:
        pass
    try:
        sys.stderr.flush()
    except BaseException:
        pass
    _report(fds["result"], status)
    os._exit(0)


def _report(fd: int, status: dict[str, Any]) -> None:
    # A plain separated record: the parent must not unmarshal or unpickle what a test sends.
    value = status.get("value")
    fields = [
        "1" if status.get("ok") else "0",
        str(status.get("kind") or ""),
        "" if value is None else "v" + str(value),
        str(status.get("error") or ""),
    ]
    data = "\x1f".join(f.replace("\x1f", "?") for f in fields).encode("utf-8", "replace")
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


def _fork_with_retry() -> int:
    # Under a per-user process count another run may briefly hold every slot.
    for attempt in range(40):
        try:
            return os.fork()
        except BlockingIOError:
            time.sleep(0.025 * (attempt + 1))
    return os.fork()


def _run_test(
    spec: dict[str, Any], code: Any, base: dict[str, Any], test: dict[str, Any]
) -> dict[str, Any]:
    stdin_fd = _memfd(
        test["input"].encode("utf-8", "surrogatepass") if spec["kind"] == "stdin" else b""
    )
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    res_r, res_w = os.pipe()
    fds = {"stdin": stdin_fd, "stdout": out_w, "stderr": err_w, "result": res_w}
    start = time.monotonic()
    pid = _fork_with_retry()
    if pid == 0:  # pragma: no cover - runs in the child
        for fd in (out_r, err_r, res_r):
            os.close(fd)
        _child(spec, code, base, test, fds)
    for fd in (stdin_fd, out_w, err_w, res_w):
        os.close(fd)
    cap = int(spec["max_output_bytes"])
    out, err, res = bytearray(), bytearray(), bytearray()
    buffers = {out_r: out, err_r: err, res_r: res}
    deadline = start + float(test["time_limit"])
    timed_out = flooded = exited = False
    open_fds = [out_r, err_r, res_r]
    pidfd = os.pidfd_open(pid)
    while open_fds:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = not exited
            break
        ready, _, _ = select.select([*open_fds, pidfd] if not exited else open_fds, [], [], left)
        for fd in ready:
            if fd == pidfd:
                # The test process ended: kill what it left in its group (which may hold
                # the pipes open), then only drain what is already written.
                exited = True
                _kill_group(pid)
                deadline = min(deadline, time.monotonic() + 0.5)
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                open_fds.remove(fd)
                continue
            buf = buffers[fd]
            if fd == out_r:
                buf += chunk[: cap + 1 - len(buf)]
                if len(buf) > cap:
                    flooded = True
            elif len(buf) < 1 << 16:
                buf += chunk[: (1 << 16) - len(buf)]
        if flooded:
            break
    _kill_group(pid)
    _, wait_status = os.waitpid(pid, 0)
    os.close(pidfd)
    elapsed = time.monotonic() - start
    for fd in open_fds:
        os.close(fd)
    for fd in (out_r, err_r, res_r):
        if fd not in open_fds:
            os.close(fd)
    output = out[:cap].decode("utf-8", "replace")
    stderr = err.decode("utf-8", "replace")
    status = _parse_status(bytes(res)) if res else None
    sig = os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None
    error = None
    if flooded or sig == signal.SIGXFSZ:
        verdict = "OLE"
    elif timed_out or sig in (signal.SIGXCPU, signal.SIGKILL):
        verdict = "TLE"
    elif status is None or sig is not None:
        exit_code = os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else None
        if sig is None and exit_code == 0 and spec["kind"] == "stdin":
            verdict = _compare(spec, test, output)  # e.g. os._exit(0) after printing
        else:
            verdict = "RE"
            error = (f"killed by signal {sig}" if sig is not None else f"exit code {exit_code}") + (
                f"\n{stderr[-1000:]}" if stderr.strip() else ""
            )
    elif not status["ok"]:
        verdict = {"memory": "MLE", "assert": "WA"}.get(str(status["kind"]), "RE")
        error = status.get("error")
        if verdict == "RE" and stderr.strip():
            error = stderr[-1500:]
    elif spec["kind"] == "functional":
        value = status.get("value")
        error = status.get("error")
        verdict = "WA" if value is None else _match(spec, test, value)
        output = value if value is not None else ""
    elif spec["kind"] == "assert":
        verdict = "AC"
    else:
        verdict = _compare(spec, test, output)
    snippet = int(spec.get("snippet_chars", 1000))
    return {
        "verdict": verdict,
        "time": round(elapsed, 4),
        "output": output[:snippet],
        "error": error[-snippet:] if error else None,
    }


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _compare(spec: dict[str, Any], test: dict[str, Any], output: str) -> str:
    return _match(spec, test, canonical_stdout(output))


def _match(spec: dict[str, Any], test: dict[str, Any], canonical: str) -> str:
    return "AC" if digest(spec["salt"], canonical) in test["expected"] else "WA"


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(repr(record) + "\n")
    sys.stdout.flush()


def main() -> None:
    """Judge the submission described by the JSON spec on stdin; report on stdout."""
    _make_undumpable()
    spec = marshal.loads(sys.stdin.buffer.read())
    try:
        code = compile(spec["code"], "solution.py", "exec")
    except (SyntaxError, ValueError) as e:  # ValueError: source with NUL bytes
        message = f"{type(e).__name__}: {e}"
        for index in range(len(spec["tests"])):
            _emit({"index": index, "verdict": "CE", "time": 0.0, "output": "", "error": message})
        _emit({"done": True})
        return
    # The prelude is the host's trusted code: run it once here; every test starts from a
    # copy of its namespace (after fork), so no test pays for the imports.
    base: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    exec(spec.get("prelude") or "", base)
    if spec["kind"] == "functional":
        import json  # noqa: F401  (imported once here, used by every forked test)
    failed = False
    for index, test in enumerate(spec["tests"]):
        if failed and spec.get("stop_on_failure"):
            _emit({"index": index, "verdict": "SKIP", "time": 0.0, "output": "", "error": None})
            continue
        record = _run_test(spec, code, base, test)
        record["index"] = index
        _emit(record)
        failed = failed or record["verdict"] != "AC"
    _emit({"done": True})


if __name__ == "__main__":
    main()
