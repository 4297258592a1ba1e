"""Judge a submission against tests: every test in one sandbox, verdicts on the host.

The comparison rules are LiveCodeBench's (see :mod:`rllm_envs.sandbox.harness`); they run
here, on the host, on what the sandbox observed. This module has no Gymnasium import;
trainers can call :func:`judge` and :func:`score` directly.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import marshal
import math
import os
import random
import re
import signal
import time
from collections import Counter
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, ClassVar

from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.forksafe import ForkSafeLock
from rllm_envs.sandbox import Backend, Limits, RunResult, Status, select_backend
from rllm_envs.sandbox.harness import (
    COMPILE_MEMORY_MB,
    COMPILE_TIME_LIMIT,
    CXX_FLAGS,
    OUTPUT_SLACK,
    OUTPUT_SLACK_BYTES,
    PRELUDE,
    PRELUDE_FUNCTIONAL,
    RESULT_MAX_BYTES,
    VERDICTS,
    canonical_value,
    stdout_matches,
    wall_cap,
    wall_limit,
)
from rllm_envs.sandbox.pool import SandboxPool
from rllm_envs.sandbox.runner import (
    KILLED_FROM_OUTSIDE,
    LANGUAGES,
    check_language,
    communicate,
    harness_source,
    program_header,
    spawn,
    spawn_failure,
)
from rllm_envs.text import answer_text

__all__ = [
    "TestCase",
    "TestResult",
    "JudgeResult",
    "judge",
    "PRELUDE",
    "PRELUDE_FUNCTIONAL",
    "KINDS",
    "LANGUAGES",
    "CXX_FLAGS",
    "COMPILE_TIME_LIMIT",
    "VERDICTS",
    "DEFAULT_TIME_LIMIT",
    "extract_code",
    "task_tests",
    "judge_task",
    "unseen_hidden_tests",
    "has_unseen_hidden_test",
    "hidden_pass_fraction",
    "trivial_pass_share",
    "score",
    "close_pools",
    "warm_up",
    "POOL_SIZE_ENV",
]

#: Test kinds: program reading stdin; ``Solution().func(*args)``; assert statements.
KINDS = ("stdin", "functional", "assert")
#: Per-test wall-clock limit when a task does not give one (LiveCodeBench uses 6 s).
DEFAULT_TIME_LIMIT = 6.0

#: Environment variable: how many judging sandboxes to keep started ahead of time, per
#: backend and limits (``0``: start one per submission, on the critical path).
POOL_SIZE_ENV = "RLLM_JUDGE_POOL"
DEFAULT_POOL_SIZE = 2
# CPU seconds of a judging sandbox as a whole; each test process has its own, lower limit
# and the host's wall clock bounds the run.
_SANDBOX_CPU = 3600


@dataclass(frozen=True)
class TestCase:
    """One test.

    ``input`` is stdin text, newline-separated JSON arguments (functional) or test code
    (assert); ``output`` is the expected stdout or JSON result (``""`` for assert).
    """

    __test__: ClassVar[bool] = False  # not a pytest test class, despite the name

    input: str
    output: str = ""


@dataclass(frozen=True)
class TestResult:
    """The outcome of one test.

    Attributes:
        verdict: ``AC``, ``WA``, ``TLE``, ``RE``, ``MLE``, ``OLE``, ``CE`` or ``SKIP``.
        output: The start of what the submission printed (stdin) or returned (functional).
        error: The error message or the end of the traceback, if any.
        time: CPU seconds of the test's processes (not deterministic; keep it out of env
            ``info``).
    """

    __test__: ClassVar[bool] = False

    verdict: str
    output: str = ""
    error: str | None = None
    time: float = 0.0

    @property
    def passed(self) -> bool:
        """The test was accepted."""
        return self.verdict == "AC"


@dataclass(frozen=True)
class JudgeResult:
    """Per-test results of one submission, plus how the sandbox run ended.

    ``extra`` holds, for a compiled language, ``compilations`` (how many times the
    submission was compiled: once) and ``compile_time`` (seconds).
    """

    results: list[TestResult]
    sandbox_status: Status = Status.OK
    sandbox_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: ``"host"``: every verdict was decided on the host from observed output;
    #: ``"in_process"``: assert-kind tests, decided inside the submission's process (a
    #: submission can disarm them; see :mod:`rllm_envs.code.convert`).
    verdict_trust: str = "host"

    @property
    def verdicts(self) -> list[str]:
        """The verdict of every test, in order."""
        return [r.verdict for r in self.results]

    @property
    def passed(self) -> int:
        """Number of accepted tests."""
        return sum(r.passed for r in self.results)

    @property
    def total(self) -> int:
        """Number of tests."""
        return len(self.results)

    @property
    def all_passed(self) -> bool:
        """Every test was accepted (and there was at least one)."""
        return self.total > 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        """Fraction of accepted tests (0 for no tests), over every test judged.

        A flat count: it cannot tell the tests a prompt shows from the hidden ones, so it is
        not a reward (a program that prints the shown examples' outputs earns their share).
        The reward is :func:`hidden_pass_fraction`.
        """
        return self.passed / self.total if self.total else 0.0


_pools: dict[tuple[object, ...], SandboxPool] = {}
_pools_lock = ForkSafeLock()


def _pool_size() -> int:
    raw = os.environ.get(POOL_SIZE_ENV, "")
    try:
        return max(int(raw), 0) if raw.strip() else DEFAULT_POOL_SIZE
    except ValueError:
        raise InvalidEnvConfig(
            f"Expects ${POOL_SIZE_ENV} to be an int >= 0 (0: no pool), actual: {raw!r}."
        ) from None


def _pool(backend: Backend, limits: Limits) -> SandboxPool | None:
    """The shared pool of judging sandboxes for this backend and these limits (or None)."""
    size = _pool_size()
    if size == 0:
        return None
    key = (type(backend), limits.memory_mb, limits.max_file_size_mb, size)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            pool = SandboxPool(size, backend=backend, limits=limits, program=harness_source())
            _pools[key] = pool
        return pool


def _sandbox_limits(memory_mb: int, biggest_file: int) -> Limits:
    # The limits set when a judging sandbox starts (so shared by a pool): the supervisor's
    # memory, and the file size of the tests' in-memory input and output files.
    return Limits(
        cpu_time=_SANDBOX_CPU,
        memory_mb=max(int(memory_mb), 256),
        max_file_size_mb=_file_size_mb(biggest_file),
    )


def _file_size_mb(biggest_file: int) -> int:
    # A power of two, at least 64 MiB: the limit (readable inside the sandbox) says at most
    # that some input is past the previous power of two, never its size.
    needed = (int(biggest_file) >> 20) + 2
    size = 64
    while size < needed:
        size *= 2
    return size


def warm_up(
    backend: str | Backend | None = None, *, memory_mb: int = 1024, timeout: float = 30.0
) -> bool:
    """Start the judging sandboxes for :func:`judge` with these arguments ahead of time.

    Waits until they are started (at most ``timeout`` seconds) and says whether they are;
    ``False`` at once when pools are off (``$RLLM_JUDGE_POOL=0``). Optional: the first
    :func:`judge` call starts them too, but pays for its own sandbox start.
    """
    pool = _pool(select_backend(backend), _sandbox_limits(memory_mb, 16 << 20))
    return pool.wait_ready(timeout) if pool is not None else False


def close_pools() -> None:
    """Kill the judging sandboxes kept started ahead of time (new ones start when needed)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def _expected(test: TestCase, kind: str, lenient_functional: bool) -> list[str]:
    """What a test's output must be (host side; never sent anywhere).

    For stdin tests the expected text itself (compared by :func:`stdout_matches`); for
    functional tests the canonical JSON forms the result may take (compared as text: the
    executor sends :func:`canonical_value`'s form).
    """
    if kind == "assert":
        return []
    if kind == "stdin":
        return [test.output]
    try:
        value = json.loads(test.output)
    except ValueError as e:
        raise InvalidDataset(
            f"Expects a functional test's output to be JSON, actual: {test.output[:80]!r}."
        ) from e
    try:
        found = [canonical_value(value)]
    except TypeError as e:  # pragma: no cover - json.loads gives JSON values only
        raise InvalidDataset(f"Expects a JSON value as a test's output: {e}") from e
    # APPS/TACO call-based answers are often wrapped in a one-element list.
    if lenient_functional and isinstance(value, list) and len(value) == 1:
        found.append(canonical_value(value[0]))
    return found


_OUTCOMES = ("exited", "signaled", "timeout")
# Bounds of a record's numbers: anything outside is a malformed record.
_MAX_SECONDS = 1e6
_MAX_RSS_KB = 1 << 42
_HEADER_MAX = 4096
# The executor's own work between two tests (reaping, reading the output, forking the next),
# on a loaded machine: added to a test's wall-clock backstop before a silent run is ended.
_STALL_MARGIN = 4.0
_STDERR_MAX = 1 << 16


def _number(value: Any, low: float, high: float) -> bool:
    # Compared before any conversion: a 400-digit int is no float (OverflowError).
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return (isinstance(value, int) or math.isfinite(value)) and low <= value <= high


def _int_or_none(value: Any, low: int, high: int) -> bool:
    if value is None:
        return True
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def _valid_test_header(header: Any, expected_index: int, blob: int, cap: int) -> bool:
    """Every field present, of its type and within its bounds; the sizes add up."""
    keys = {"index", "outcome", "code", "signal", "cpu", "wall", "maxrss_kb", "sizes"}
    if not isinstance(header, dict) or set(header) != keys:
        return False
    sizes = header["sizes"]
    if not (
        isinstance(sizes, list)
        and len(sizes) == 3
        and all(isinstance(n, int) and not isinstance(n, bool) for n in sizes)
    ):
        return False
    out, err, res = sizes
    return (
        header["index"] == expected_index
        and type(header["index"]) is int
        and header["outcome"] in _OUTCOMES
        and _int_or_none(header["code"], 0, 255)
        and _int_or_none(header["signal"], 1, 128)
        and (header["code"] is None) == (header["outcome"] != "exited")
        and (header["signal"] is None) == (header["outcome"] == "exited")
        and _number(header["cpu"], 0, _MAX_SECONDS)
        and _number(header["wall"], 0, _MAX_SECONDS)
        and _int_or_none(header["maxrss_kb"], 0, _MAX_RSS_KB)
        and header["maxrss_kb"] is not None
        and -1 <= out <= cap
        and 0 <= err <= _STDERR_MAX
        and -1 <= res <= RESULT_MAX_BYTES
        and max(out, 0) + err + max(res, 0) == blob
    )


# How much of an output too long to match is decoded (for feedback snippets).
_FEEDBACK_BYTES = 1 << 16


def _match_limit(expected: str) -> int:
    """The longest output (in characters) that may still match ``expected``."""
    return OUTPUT_SLACK * len(expected) + OUTPUT_SLACK_BYTES


def _memory_error(stderr: str) -> bool:
    tail = stderr.rstrip().splitlines()[-1:] or [""]
    return tail[0].startswith("MemoryError") or "std::bad_alloc" in stderr[-2000:]


@dataclass(frozen=True)
class _Observed:
    """One test as the executor observed it (validated)."""

    outcome: str
    code: int | None
    signal: int | None
    cpu: float
    wall: float
    stdout: str | None
    stderr: str
    result: str | None
    #: stdout is longer than any output matching the expected one (only its start is kept).
    too_long: bool = False


def _test_verdict(
    seen: _Observed, kind: str, expected: list[str], time_limit: float
) -> tuple[str, str, str | None]:
    """The host's verdict for one test from the executor's record: (verdict, output, error).

    Decided from what the kernel reported (wait status, the test's CPU time, the executor's
    wall-clock backstop) and the captured output, compared here; never from what the
    program said about itself. Time is CPU time: a concurrent load slows a program down
    but does not make it TLE (the wall clock is a backstop, :func:`wall_limit`).
    """
    stderr, stdout = seen.stderr, seen.stdout
    if seen.outcome == "timeout" or seen.cpu > time_limit or seen.signal == signal.SIGXCPU:
        return "TLE", stdout or "", None
    if stdout is None or seen.signal == signal.SIGXFSZ:
        return "OLE", "", None
    if seen.signal == signal.SIGKILL:  # not ours (the timer's is "timeout"): the memory group's
        return "MLE", stdout, None
    result = seen.result or ""
    if kind == "assert" and result.startswith("F"):
        return "WA", stdout, result[1:]
    if seen.signal is not None or seen.code != 0:
        if _memory_error(stderr):
            return "MLE", stdout, stderr[-1000:]
        sig = seen.signal
        why = f"killed by signal {sig}" if sig is not None else f"exit code {seen.code}"
        return "RE", stdout, why + ("\n" + stderr[-1500:] if stderr.strip() else "")
    if kind == "stdin":
        matches = not seen.too_long and stdout_matches(stdout, expected[0])
        return ("AC" if matches else "WA"), stdout, None
    if kind == "assert":
        return ("AC" if result == "A" else "WA"), stdout, None
    if result.startswith("N"):
        return "WA", "", result[1:][:1000]
    if not result.startswith("V"):
        return "WA", "", "the function returned no value the judge could read"
    # The executor sends canonical_value's text: equal values have equal texts.
    return ("AC" if result[1:] in expected else "WA"), result[1:], None


class _Records:
    """Reads the executor's report channel as it arrives; decides each verdict on the host.

    Also hands out the tests' inputs (see :meth:`next_input`).
    """

    def __init__(
        self,
        tests: Sequence[TestCase],
        kind: str,
        expected: list[list[str]],
        time_limit: float,
        output_cap: int,
        stop_on_failure: bool,
        hidden_from: int | None = None,
        hidden_needs_public_pass: bool = False,
    ) -> None:
        self.tests, self.kind, self.expected = tests, kind, expected
        self.hidden_from = hidden_from
        self.hidden_needs_public_pass = hidden_needs_public_pass
        self.time_limit, self.output_cap, self.stop_on_failure = (
            time_limit,
            output_cap,
            stop_on_failure,
        )
        self.frame_cap = _HEADER_MAX + output_cap + _STDERR_MAX + RESULT_MAX_BYTES
        self.buffer = bytearray()
        self.results: list[TestResult] = []
        self.compiled: dict[str, Any] | None = None
        self.done = False
        self.sent = 0  # inputs handed out
        self.broken: str | None = None  # why the channel stopped making sense

    def input_frame(self, index: int) -> bytes:
        data = self.tests[index].input.encode("utf-8", "surrogatepass")
        return len(data).to_bytes(4, "big") + data

    @property
    def stopped(self) -> bool:
        """No more test will run.

        One failed (``stop_on_failure``), or a public test failed and hidden tests need
        every public one passed.
        """
        if self.stop_on_failure and any(not r.passed for r in self.results):
            return True
        public = self.hidden_from or 0
        return (
            self.hidden_needs_public_pass
            and len(self.results) >= public
            and any(not r.passed for r in self.results[:public])
        )

    def next_input(self) -> bytes | None:
        """Inputs to send now (``b""``: none yet); ``None`` once no more will be sent.

        Every input up to ``hidden_from`` at once, the rest only once every test before
        ``hidden_from`` was reported (and, with ``stop_on_failure`` or
        ``hidden_needs_public_pass``, passed). The executor reads each input only when its
        test starts, so a test never holds another's.
        """
        if self.sent >= len(self.tests) or self.broken or self.done:
            return None
        if self.stopped:
            return None
        end = len(self.tests)
        if self.hidden_from and self.sent <= self.hidden_from:
            if self.sent == self.hidden_from and len(self.results) < self.hidden_from:
                return b""  # hidden inputs wait until the public tests are decided
            end = self.hidden_from if self.sent < self.hidden_from else end
        data = b"".join(self.input_frame(i) for i in range(self.sent, end))
        self.sent = end
        return data

    def stall_limit(self) -> float | None:
        """How long the executor may now stay silent (``None``: until it has compiled).

        Once compiled it reports each test within the test's wall-clock backstop (a test
        kept waiting for a CPU past it has the executor say so, once a second), plus its
        own work between tests. A test that stops the executor (SIGSTOP from its
        process) thus holds the judge one test's backstop, not every test's.
        """
        if self.compiled is None:
            return None
        return wall_limit(self.time_limit) + _STALL_MARGIN

    def feed(self, chunk: bytes) -> bool:
        """Take more of the channel; ``True`` when the run can stop (all decided)."""
        if self.done or self.broken:
            return True
        try:
            return self._feed(chunk)
        except Exception as e:  # a record the checks did not foresee: a failed run, no raise
            self.broken = f"an unreadable record ({type(e).__name__})"
            return True

    def _feed(self, chunk: bytes) -> bool:
        self.buffer += chunk
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if size > self.frame_cap:
                self.broken = "a record larger than any test's output"
                return True
            if len(self.buffer) < 4 + size:
                break
            frame: bytes | bytearray
            if len(self.buffer) == 4 + size:  # the usual case: take the buffer, no copy
                frame, self.buffer = self.buffer, bytearray()
                del frame[:4]  # cheap: a bytearray drops its head in place
            else:
                with memoryview(self.buffer) as view:
                    frame = bytes(view[4 : 4 + size])  # one copy (a slice would make two)
                del self.buffer[: 4 + size]
            self._take(frame)
            if self.done or self.broken or self.stopped:
                return True
        return False

    def _take(self, frame: bytes | bytearray) -> None:
        end = frame.find(b"\n", 0, _HEADER_MAX)
        try:
            if end < 0:
                raise ValueError("no header")
            record = json.loads(frame[:end])
        except (ValueError, RecursionError):
            self.broken = "a malformed record"
            return
        blob = memoryview(frame)[end + 1 :]
        if isinstance(record, dict) and record.get("done") is True and len(record) == 1:
            self.done = len(self.results) == len(self.tests) and not blob
            if not self.done:
                self.broken = "the run ended before every test was reported"
            return
        if isinstance(record, dict) and set(record) == {"compiled", "error"}:
            # The error message is the blob (its size in the header): any length or content.
            if self.compiled is not None or self.results:
                self.broken = "a second compile record"
            elif (
                not _number(record["compiled"], 0, _MAX_SECONDS)
                or not _int_or_none(record["error"], 0, _STDERR_MAX)
                or record["error"] != len(blob)
            ):
                self.broken = "a malformed compile record"
            else:
                message = str(blob, "utf-8", "replace")
                self.compiled = {"compiled": record["compiled"], "error": message}
                if message:
                    self.results = [TestResult("CE", error=message) for _ in self.tests]
            return
        index = len(self.results)
        if isinstance(record, dict) and set(record) == {"running"} and not blob:
            # The executor gives a test that waited for a CPU more wall-clock time.
            if record["running"] != index or index >= self.sent or self.compiled is None:
                self.broken = "a malformed progress record"
            return
        if (
            index >= self.sent
            or self.compiled is not None
            and self.compiled["error"]
            or not _valid_test_header(record, index, len(blob), self.output_cap)
        ):
            self.broken = "a malformed, duplicated or out-of-order record"
            return
        out, err, _ = record["sizes"]
        # An output too long to match (even at 4 bytes a character) is not decoded whole:
        # its start is kept for feedback and the verdict is WA (unless it failed otherwise).
        too_long = self.kind == "stdin" and out > 4 * _match_limit(self.expected[index][0])
        shown = min(out, _FEEDBACK_BYTES) if too_long else out
        stdout = str(blob[:shown], "utf-8", "replace") if out >= 0 else None
        stderr = str(blob[max(out, 0) : max(out, 0) + err], "utf-8", "replace")
        result = (
            str(blob[max(out, 0) + err :], "utf-8", "replace") if record["sizes"][2] >= 0 else None
        )
        seen = _Observed(
            record["outcome"],
            record["code"],
            record["signal"],
            float(record["cpu"]),
            float(record["wall"]),
            stdout,
            stderr,
            result,
            too_long,
        )
        try:
            verdict, output, error = _test_verdict(
                seen, self.kind, self.expected[index], self.time_limit
            )
        except Exception as e:  # whatever the program printed, the judge never raises
            verdict, output, error = "WA", "", f"the output could not be compared: {e}"[:500]
        self.results.append(TestResult(verdict, output, error, seen.cpu))

    def finish(self, outcome: RunResult, snippet: int) -> list[TestResult]:
        """Every test's result: what was decided, then SKIP/TLE/RE for the rest."""
        results = list(self.results)
        if len(results) < len(self.tests):
            if self.stopped and not self.broken:
                filler = TestResult("SKIP")
            elif outcome.status is Status.TIMEOUT:
                filler = TestResult("TLE", error="the judge did not finish in time")
            else:
                why = self.broken or "the judge did not finish"
                filler = TestResult("RE", error=f"{why} (sandbox: {outcome.status.value})")
            results += [filler] * (len(self.tests) - len(results))
        return [
            replace(r, output=r.output[:snippet], error=r.error[-snippet:] if r.error else None)
            for r in results
        ]


#: How many times :func:`judge` runs a submission that an OOM it did not cause killed.
_JUDGE_ATTEMPTS = 2


def judge(
    code: str,
    tests: Sequence[TestCase],
    *,
    kind: str = "stdin",
    func_name: str | None = None,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_mb: int = 1024,
    stop_on_failure: bool = False,
    lenient_functional: bool = False,
    prelude: str | None = None,
    backend: str | Backend | None = None,
    snippet_chars: int = 1000,
    max_output_bytes: int = 16 << 20,
    isolate_tests: bool = True,
    warm: bool = True,
    language: str = "python",
    compile_time_limit: float = COMPILE_TIME_LIMIT,
    hidden_from: int | None = None,
    hidden_needs_public_pass: bool = False,
) -> JudgeResult:
    r"""Run ``code`` on every test in one sandbox; decide each verdict on the host.

    Inside the sandbox the executor (:mod:`rllm_envs.sandbox.harness`) runs each test in a
    fresh process and reports what it observed -- exit status, signal, time, the captured
    output, a functional test's return value as JSON -- on a channel no submission process
    holds. Expected outputs never enter the sandbox: the host compares, so a submission can
    neither read nor brute-force them, and a missing, duplicated or malformed record is a
    failed test, never an exception.

    Example:
        >>> from rllm_envs.code.judge import TestCase, judge
        >>> result = judge("print(int(input()) * 2)", [TestCase("3\n", "6\n")])
        >>> result.verdicts, result.all_passed
        (['AC'], True)

    A C++ submission (``language="cpp"``, stdin tests only) is compiled once inside the
    same sandbox (``/usr/bin/g++`` with :data:`CXX_FLAGS`, into in-memory files), then each
    test executes the binary in a fresh process; a compile error is ``CE`` on every test,
    with the compiler's message.

    Args:
        code: The submission (Python or C++ source).
        tests: The tests, in the order to run them (public ones first).
        kind: ``"stdin"`` (a program), ``"functional"`` (``Solution().func_name(*args)`` or a
            top-level ``func_name``) or ``"assert"`` (each test is code that asserts; its
            verdict is decided inside the submission's process and can be forged:
            ``verdict_trust == "in_process"``).
        func_name: The function to call for ``"functional"`` tests.
        time_limit: CPU seconds per test (more is ``TLE``); a test that waits is stopped
            after :func:`~rllm_envs.sandbox.harness.wall_limit` wall-clock seconds.
        memory_mb: Address-space limit per test, in MiB.
        stop_on_failure: Skip the remaining tests (``SKIP``) after the first failure.
        lenient_functional: Also accept ``x`` where the expected answer is ``[x]`` (APPS).
        prelude: Code run before the submission (imports, helper classes); default
            :data:`PRELUDE`, or :data:`PRELUDE_FUNCTIONAL` for functional and assert tests.
        backend: Sandbox backend (see :func:`rllm_envs.sandbox.run`).
        snippet_chars: How much of each test's output and error to keep.
        max_output_bytes: Output cap per test (more is ``OLE``).
        isolate_tests: Kept for compatibility: every test runs in a fresh process.
        warm: Use a sandbox started ahead of time from a shared pool (``$RLLM_JUDGE_POOL``
            sandboxes per backend and limits, default 2; see :func:`close_pools`), so the
            sandbox start is off the critical path. Each sandbox judges one submission.
        language: ``"python"`` or ``"cpp"`` (needs ``g++``: ``apt-get install g++``).
        compile_time_limit: CPU seconds of the compiler to compile a C++ submission (more is
            ``CE``; a compile that waits for a CPU is not charged for the wait).
        hidden_from: The index of the first hidden test: no hidden test's input enters the
            sandbox before every test ahead of it was reported (with ``stop_on_failure``,
            none after a failure), so a program run on a public test cannot show a hidden
            input. ``None``: all tests' inputs are sent at once (each test process still
            gets only its own).
        hidden_needs_public_pass: With ``hidden_from``: hidden tests run only when every
            public test passed (else they are ``SKIP``), whatever ``stop_on_failure`` says.

    Returns:
        A :class:`JudgeResult`. Infinite loops end as ``TLE`` after ``time_limit``.

    Raises:
        InvalidEnvConfig: For an unknown kind or language, or C++ with a kind but stdin.
        InvalidDataset: For a functional test whose expected output is not JSON.
        DependencyNotInstalled: For C++ without the compiler.
    """
    del isolate_tests  # every test is isolated now
    if kind not in KINDS:
        raise InvalidEnvConfig(f"Expects `kind` in {KINDS}, actual: {kind!r}.")
    check_language(language)
    if language == "cpp" and kind != "stdin":
        raise InvalidEnvConfig(
            f"C++ submissions are judged on stdin tests only; got kind={kind!r}: use "
            "kind='stdin' or language='python'."
        )
    if kind == "functional" and not func_name:
        raise InvalidEnvConfig("Functional tests need `func_name` (the method to call).")
    trust = "in_process" if kind == "assert" else "host"
    if not tests:
        return JudgeResult(results=[], verdict_trust=trust)
    if prelude is None:
        prelude = PRELUDE if kind == "stdin" else PRELUDE_FUNCTIONAL
    expected = [_expected(t, kind, lenient_functional) for t in tests]
    chosen = select_backend(backend)
    # Hidden inputs' sizes stay out of the spec (a program can read the executor's memory
    # through its frames); the sandbox's file limit rounds them to a power of two.
    biggest = max(len(t.input.encode("utf-8", "surrogatepass")) for t in tests)
    spec = {
        "code": code,
        "kind": kind,
        "func_name": func_name,
        "prelude": prelude,
        "time_limits": [float(time_limit)] * len(tests),
        "memory_mb": int(memory_mb),
        "max_output_bytes": int(max_output_bytes),
        "language": language,
        "compile_time_limit": float(compile_time_limit),
        "reap": chosen.pid_namespace,
    }
    compiling = float(compile_time_limit) if language == "cpp" else 0.0
    # The executor (its limits are the sandbox's) runs the compiler, which may need more
    # address space than a test.
    supervisor_mb = max(int(memory_mb), COMPILE_MEMORY_MB) if language == "cpp" else memory_mb
    limits = replace(
        _sandbox_limits(supervisor_mb, max(biggest, max_output_bytes)),
        time_limit=len(tests) * (wall_cap(float(time_limit)) + 0.2) + 5.0 + compiling,
    )
    # A run that the kernel's OOM killer hit while the sandbox was under its own memory
    # limit (memory was short outside it) says nothing about the program: judged again.
    for _ in range(_JUDGE_ATTEMPTS):
        records = _Records(
            tests,
            kind,
            expected,
            float(time_limit),
            int(max_output_bytes),
            stop_on_failure,
            hidden_from,
            hidden_needs_public_pass,
        )
        spec_bytes = marshal.dumps(spec)
        first = len(spec_bytes).to_bytes(4, "big") + spec_bytes + (records.next_input() or b"")
        pool = _pool(chosen, limits) if warm else None
        if pool is not None:
            outcome, _ = pool.run_with_channel(
                stdin=first,
                time_limit=limits.time_limit,
                max_output_bytes=1 << 16,
                channel_bytes=0,
                on_channel=records.feed,
                more_input=records.next_input,
                stall_limit=records.stall_limit,
            )
        else:
            start = time.monotonic()
            try:
                sandbox = spawn(chosen, limits)
            except OSError as e:
                outcome = spawn_failure(chosen, e, start)
            else:
                payload = program_header(harness_source(), trusted=True) + first
                outcome, _ = communicate(
                    sandbox,
                    payload,
                    replace(limits, max_output_bytes=1 << 16),
                    start,
                    forked=False,
                    channel_bytes=0,
                    on_channel=records.feed,
                    more_input=records.next_input,
                    stall_limit=records.stall_limit,
                )
        if not outcome.killed_from_outside:
            break
    results = records.finish(outcome, int(snippet_chars))
    sandbox_error = None
    if outcome.killed_from_outside:
        results, sandbox_error = [], KILLED_FROM_OUTSIDE
    elif not records.done and not (records.stopped and not records.broken):
        sandbox_error = (
            f"{outcome.status.value}: {records.broken or ''} {outcome.stderr[-1000:]}".strip()
        )
    extra: dict[str, Any] = {}
    if language == "cpp" and records.compiled is not None:
        extra = {"compilations": 1, "compile_time": float(records.compiled["compiled"])}
    return JudgeResult(
        results=results,
        sandbox_status=outcome.status,
        sandbox_error=sandbox_error,
        extra=extra,
        verdict_trust=trust,
    )


# ---------------------------------------------------------------- responses and tasks

_PYTHON_LANGS = frozenset({"", "python", "py", "python3", "py3"})
_CPP_LANGS = frozenset({"cpp", "c++", "cc", "cxx"})


def extract_code(response: str, language: str = "python") -> str | None:
    r"""The code of a model response: its last fenced block of ``language`` (``None`` if none).

    Only the answer part is read (:func:`rllm_envs.text.answer_text`: after the last
    ``</think>``; a reply cut while still thinking has none). Tolerant: a block left open at
    the end of a cut-off response counts, and when no block is marked with the language the last
    block of any language is taken. Python blocks are marked ``python``/``py`` or not at
    all; C++ blocks ``cpp``, ``c++``, ``cc`` or ``cxx``.

    Example:
        >>> extract_code("Idea...\n```python\nprint(1)\n```\nDone.")
        'print(1)'
    """
    response = answer_text(response)
    blocks: list[tuple[str, str]] = []
    inside = False
    lang, lines = "", list[str]()
    for line in response.split("\n"):
        stripped = line.strip()
        if not inside and stripped.startswith("```"):
            inside, lang, lines = True, stripped[3:].strip().lower(), []
        elif inside and stripped.startswith("```") and not stripped.strip("`").strip():
            blocks.append((lang, "\n".join(lines)))
            inside = False
        elif inside:
            lines.append(line)
    if inside:
        blocks.append((lang, "\n".join(lines)))
    blocks = [(lang, code) for lang, code in blocks if code.strip()]
    if not blocks:
        return None
    marks = _CPP_LANGS if language == "cpp" else _PYTHON_LANGS
    chosen = [code for lang, code in blocks if (lang.split() or [""])[0] in marks]
    return chosen[-1] if chosen else blocks[-1][1]


def task_tests(task: dict[str, Any]) -> list[TestCase]:
    """All tests of a code task (see :mod:`rllm_envs.code.datasets`), public ones first."""
    return [
        TestCase(str(t["input"]), str(t["output"]))
        for t in list(task["public_tests"]) + list(task["hidden_tests"])
    ]


def judge_task(
    code: str,
    task: dict[str, Any],
    *,
    time_limit: float | None = None,
    memory_mb: int = 1024,
    stop_on_failure: bool = False,
    backend: str | Backend | None = None,
    language: str | None = None,
    hidden_needs_public_pass: bool = False,
) -> JudgeResult:
    """Judge ``code`` on every test of a code task (public first, then hidden).

    ``time_limit`` overrides the task's own per-test limit (default
    :data:`DEFAULT_TIME_LIMIT`); ``language`` the task's ``"language"`` (default Python).
    A task's ``prelude`` (helper code such as LeetCode's ``ListNode``) runs before the
    submission, instead of the default prelude. ``hidden_needs_public_pass``: hidden tests
    run only when every public test passed (see :func:`judge`).

    The hidden tests run in a fresh random order on every call (``os.urandom``), so what a
    program can learn inside the sandbox about its position in the run (a process id, how
    many tests ran before it) names no particular hidden test, and with
    ``stop_on_failure`` which hidden tests ran is a different draw each time. The results
    come back in the task's order (a hidden test that did not run is ``SKIP``).
    """
    limit = time_limit or task.get("time_limit") or DEFAULT_TIME_LIMIT
    tests = task_tests(task)
    public = len(task["public_tests"])
    order = list(range(len(tests) - public))
    random.SystemRandom().shuffle(order)
    result = judge(
        code,
        tests[:public] + [tests[public + i] for i in order],
        kind=task["kind"],
        func_name=task.get("func_name"),
        time_limit=float(limit),
        memory_mb=memory_mb,
        stop_on_failure=stop_on_failure,
        lenient_functional=bool(task.get("lenient")),
        prelude=task.get("prelude") or None,
        backend=backend,
        language=language or task.get("language") or "python",
        hidden_from=public,
        hidden_needs_public_pass=hidden_needs_public_pass,
    )
    if len(result.results) != len(tests):
        return result
    results = list(result.results)
    for position, i in enumerate(order):
        results[public + i] = result.results[public + position]
    return replace(result, results=results)


#: How far (in tokens of the statement) an example's output may be from its input, before or
#: after it, for the statement to count as showing the test (less for small tests).
_EXAMPLE_GAP = 40
#: Extra tokens an example may interleave with a test's input tokens (names and marks such
#: as ``nums =``, ``N =``, ``<br>``).
_INPUT_SLACK = 6
#: Numbers (a leading sign kept), words, and single marks other than list and string syntax
#: (``[1,2]`` against ``[1, 2]``, ``"ab"`` against ``'ab'``): what a test and an example share
#: whatever the notation. Markup (``<pre>``, ``$``, ``|``) adds a few marks between them.
_TOKEN = re.compile(r"[-+]?\d+(?:\.\d+)?|[^\W_]+|[^\w\s\[\]{},'\"]|_")
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _flat(text: object) -> str:
    """A test's text as a statement would write it.

    Each line that is JSON (a functional test's arguments, escaped strings, ``null``) is
    decoded, lists and strings spelled out.
    """
    return _flat_text(text) if isinstance(text, str) else _flatten(text)


@lru_cache(maxsize=8)
def _flat_text(text: str) -> str:
    # A test's text is read by several checks in a row (copies, the statement, trivial
    # programs): the last few are kept rather than decoded again.
    return _flatten(text)


def _flatten(text: object) -> str:

    def spelled(value: object) -> str:
        if isinstance(value, str):
            return value
        if isinstance(value, (list, tuple)):
            return " ".join(map(spelled, value))
        if isinstance(value, dict):
            return " ".join(f"{spelled(k)} {spelled(v)}" for k, v in value.items())
        return str(value)  # numbers, True, None

    lines = []
    for line in str(text).splitlines():
        if not _JSON_START.match(line):
            lines.append(line)  # cannot be JSON: not decoded (a big test has many lines)
            continue
        try:
            lines.append(spelled(json.loads(line)))
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            lines.append(line)
    return "\n".join(lines)


#: How a line that ``json.loads`` may accept starts: a list, object or string, a constant,
#: or a whole number (every other line raises there).
_JSON_START = re.compile(
    r"\s*(?:[\[{\"]|(?:null|true|false|NaN|-?Infinity"
    r"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*$)"
)


def _canonical(token: str) -> str:
    """A number as the judge compares it (``0.500`` as ``0.5``, ``+1`` as ``1``).

    A word in lower case.
    """
    # Tokens recur (small numbers, words): short ones are remembered. A long one is not, so
    # a client's tasks of long unique words cannot fill the host's memory.
    return _canonical_short(token) if len(token) <= 64 else _canonical_form(token)


@lru_cache(maxsize=1 << 16)
def _canonical_short(token: str) -> str:
    return _canonical_form(token)


def _canonical_form(token: str) -> str:
    if token.isascii() and token.isdigit() and (token[0] != "0" or len(token) == 1):
        return token  # the common case, already in its form
    if _NUMBER.fullmatch(token):
        try:
            value = float(token)
            if "." not in token:
                return str(int(token))
            return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
        except (ValueError, OverflowError):
            return token
    word = token.lower()
    return "none" if word == "null" else word


def _tokens(text: object) -> tuple[str, ...]:
    return tuple(_canonical(t) for t in _TOKEN.findall(str(text)))


def _marked(tokens: Sequence[str]) -> bool:
    """Marks carry the test (brackets, a grid's ``#.``): their order matters."""
    return any(not (t[0].isalnum() or t[0] in "-+") for t in tokens)


def _answer_lines(text: object) -> list[str]:
    """The lines an output is judged by, numbers written one way (``0.50`` as ``0.5``).

    An empty output is one empty line.
    """
    lines = _flat(text).strip().splitlines() or [""]
    return [
        " ".join(_canonical(w) if _NUMBER.fullmatch(w) else w for w in line.split())
        for line in lines
    ]


_HEADERS = {"example", "examples", "sample", "samples", "case", "test"}


def _statement_tokens(text: str) -> tuple[str, ...]:
    """``text``'s tokens without header numbers (``Example 2``, ``Sample Input 2``).

    Next to a one-number test they would read as its input or output.
    """
    tokens = _tokens(text)
    return tuple(
        t
        for i, t in enumerate(tokens)
        if not (
            t.isdigit()
            and i
            and (
                tokens[i - 1] in _HEADERS
                or (tokens[i - 1] in ("input", "output") and i > 1 and tokens[i - 2] in _HEADERS)
            )
        )
    )


#: Needles longer than this are matched as one contiguous run (a C-speed string search):
#: a client-written task must not buy seconds of host CPU per test.
_LONG_NEEDLE = 64
#: Statements longer than this many tokens are not searched: such a task has no unseen test.
MAX_STATEMENT_TOKENS = 20_000
#: Statement tokens times hidden tests past which a task is not searched either (a real
#: statement of 2,000 tokens with 100 tests is 200,000), and the steps its search may take
#: (tokens visited, windows included): past them the task has no unseen test.
MAX_SEARCH_WORK = 5_000_000


class _TooCostly(Exception):
    """A task's search for what its statement shows passed :data:`MAX_SEARCH_WORK` steps."""


class _Budget:
    """Steps of the statement search left for one task (a client's task buys no more)."""

    def __init__(self, steps: int = MAX_SEARCH_WORK) -> None:
        self.left = steps

    def spend(self, steps: int) -> None:
        self.left -= steps
        if self.left < 0:
            raise _TooCostly


def _spans(
    haystack: Sequence[str],
    needle: Sequence[str],
    slack: int,
    *,
    ordered: bool = True,
    budget: _Budget | None = None,
) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of places all of ``needle`` occurs within ``len + slack`` tokens.

    In order, or in any order (a function's arguments shown in another order than the
    test's: ``N = 5, Arr[] = {...}`` against ``[[...], 5]``). Long needles: contiguous runs
    only. Linear in the haystack for the unordered match (two pointers), and bounded by
    ``len + slack`` per start for the ordered one; the steps are charged to ``budget``.
    """
    budget = budget or _Budget()
    if not needle or len(needle) > len(haystack):
        return
    if len(needle) > _LONG_NEEDLE:
        joined, run = f" {' '.join(haystack)} ", f" {' '.join(needle)} "
        budget.spend(len(haystack))
        at = joined.find(run)
        while at >= 0:
            first = joined.count(" ", 0, at)  # tokens before the run
            budget.spend(len(haystack))
            yield first, first + len(needle)
            at = joined.find(run, at + 1)
        return
    width = len(needle) + slack
    if ordered:
        budget.spend(len(haystack))
        for start, token in enumerate(haystack):
            if token != needle[0]:
                continue
            at, limit = start + 1, min(len(haystack), start + width)
            found = True
            for wanted in needle[1:]:
                while at < limit and haystack[at] != wanted:
                    at += 1
                if at >= limit:
                    found = False
                    break
                at += 1
            budget.spend(at - start)
            if found:
                yield start, at
        return
    # Any order: the window [first, at] holds at most ``width`` tokens; once it holds the
    # needle, its left end moves past what the needle does not need, so each place yields
    # the shortest run ending there that holds it (an example's own count, not an answer
    # before it that shares its value). Both ends only move forward: linear.
    need = Counter(needle)
    held: Counter[str] = Counter()
    short = len(need)  # distinct tokens still short in the window
    first = 0
    budget.spend(2 * len(haystack))
    for at, token in enumerate(haystack):
        if token in need:
            held[token] += 1
            if held[token] == need[token]:
                short -= 1
        while at - first >= width:
            gone = haystack[first]
            if gone in need:
                if held[gone] == need[gone]:
                    short += 1
                held[gone] -= 1
            first += 1
        if short == 0:
            while haystack[first] not in need or held[haystack[first]] > need[haystack[first]]:
                if haystack[first] in need:
                    held[haystack[first]] -= 1
                first += 1
            yield first, at + 1


def _breaks(text: str) -> int:
    """Line breaks between the non-blank lines of ``text`` (blank lines hold no token)."""
    return max(0, sum(1 for line in text.splitlines() if line.strip()) - 1)


def _shown_in(statement: Sequence[str], test: Any, budget: _Budget) -> bool:
    """The statement (its tokens) shows ``test`` as an example, in any notation.

    Its input's tokens close together (in any order: a function's arguments may be shown in
    another order; in order, line breaks aside, where marks carry the input: brackets, a
    grid), and its output's within :data:`_EXAMPLE_GAP` tokens (fewer for a small test)
    after it, or before it.
    """
    text = _flat(test["input"])
    given, expected = _tokens(text), _tokens(_flat(test["output"]))
    if not given or not expected or len(given) + len(expected) > len(statement):
        return False
    lines = _breaks(text)
    outputs = list(
        _spans(statement, expected, 2 + 3 * _breaks(_flat(test["output"])), budget=budget)
    )
    if not outputs:
        return False
    # Sorted, so that each place of the input looks up a nearby output in log time (pairing
    # every input place with every output place was quadratic in the statement).
    starts, ends = sorted(o for o, _ in outputs), sorted(e for _, e in outputs)
    # A small test's tokens recur by chance (a constraint's "0", the word "single"): the
    # smaller the test, the closer its input and output must be.
    size = len(given) + len(expected)
    gap = 6 if size <= 2 else min(_EXAMPLE_GAP, 6 * size)
    # An output written before its input is rare; for a two-token test ("4" then "1") it is
    # mostly the previous example's output next to this one's header number.
    before = gap if size > 2 else -1
    if _marked(given):
        # "(())" and "()()" share their tokens: only their order tells them apart. A line
        # break may be written as markup (<br>, a LaTeX \\) of up to three marks.
        spans = _spans(statement, given, 3 * lines, budget=budget)
    else:
        # Each line (a functional test's argument) may be written with its name: ``a = 2``.
        spans = _spans(statement, given, _INPUT_SLACK + 2 * lines, ordered=False, budget=budget)
    for start, end in spans:
        after = bisect.bisect_left(starts, end)
        if after < len(starts) and starts[after] <= end + gap:
            return True
        if before >= 0:
            last = bisect.bisect_right(ends, start) - 1
            if last >= 0 and ends[last] >= start - before:
                return True
    return False


def _line_set(text: str) -> set[tuple[str, ...]]:
    return {_tokens(line) for line in text.splitlines() if line.strip()}


@dataclass(frozen=True)
class _Examples:
    """What a task's public tests show, read once per task (see :func:`_copied`)."""

    inputs: set[tuple[str, ...]]
    #: Each example's answer and its input's tokens sorted (a sum's terms reordered).
    reordered: set[tuple[tuple[str, ...], tuple[str, ...]]]
    input_lines: set[tuple[str, ...]]
    output_lines: set[tuple[str, ...]]

    @classmethod
    def of(cls, public: Sequence[Any]) -> _Examples:
        flat = [(_flat(t["input"]), _flat(t["output"])) for t in public]
        inputs = [_tokens(given) for given, _ in flat]
        answers = [tuple(_answer_lines(t["output"])) for t in public]
        return cls(
            inputs=set(inputs),
            reordered={(a, tuple(sorted(i))) for a, i in zip(answers, inputs, strict=True)},
            input_lines=set().union(*(_line_set(given) for given, _ in flat)),
            output_lines=set().union(*(_line_set(expected) for _, expected in flat)),
        )


def _copied(test: Any, examples: _Examples) -> bool:
    """``test`` is made from the shown examples: a program keyed on them passes it.

    Its input is an example's with other spacing or notation, or its tokens reordered with
    the same answer (a sum); or every line of its input (a first line of one count aside) and
    of its output is an example's line (cases of the examples, reordered or repeated).
    """
    given, expected = _flat(test["input"]), _flat(test["output"])
    tokens = _tokens(given)
    if tokens in examples.inputs:
        return True
    # Looked up, not compared example by example: a client's task of 250 examples and 250
    # hidden tests of 2,600 tokens each cost 11 s of host CPU that way.
    if (tuple(_answer_lines(test["output"])), tuple(sorted(tokens))) in examples.reordered:
        return True
    lines = [line for line in given.splitlines() if line.strip()]
    if len(lines) > 1 and _NUMBER.fullmatch(lines[0].strip()):
        lines = lines[1:]  # a count of cases
    return (
        bool(lines)
        and all(_tokens(line) in examples.input_lines for line in lines)
        and _line_set(expected) <= examples.output_lines
    )


def _unseen(task: dict[str, Any]) -> list[int]:
    hidden = task["hidden_tests"]
    if task.get("kind") == "assert":
        # Checks run inside the submission's process, with no output to compare: such tasks
        # are forgeable anyway, and dropped or zeroed by default (``in_process``).
        return list(range(len(hidden)))
    statement = _statement_tokens(f"{task.get('question', '')}\n{task.get('starter_code') or ''}")
    if len(statement) > MAX_STATEMENT_TOKENS:
        return []  # too long to search for its examples at a bounded cost
    if len(statement) * len(hidden) > MAX_SEARCH_WORK:
        return []  # too costly to search at a bounded cost: such a task is refused
    public = task["public_tests"]
    examples = _Examples.of(public)
    seen: dict[tuple[str, str], bool] = {}  # repeated tests are searched once
    unseen = []
    budget = _Budget()
    try:
        for i, test in enumerate(hidden):
            key = (str(test["input"]), str(test["output"]))
            if key not in seen:
                seen[key] = _copied(test, examples) or _shown_in(statement, test, budget)
            if not seen[key]:
                unseen.append(i)
    except _TooCostly:
        return []  # too costly to search at a bounded cost: such a task is refused
    # Every unseen test expects one output (``-1``; ``YES\n2``), or its output is one line
    # repeated (``NO`` once per case; nothing): a program printing it, with the shown examples
    # looked up, passes them all. With one such test only when that output is a likely guess:
    # an example's, nothing, -1, 0 or 1, or words the statement names; another is a guess.
    outputs = {tuple(_answer_lines(hidden[i]["output"])) for i in unseen}
    lines = {line for output in outputs for line in output}
    if len(outputs) == 1 or len(lines) == 1:
        likely = _likely_outputs(task, unseen)
        (output, *_) = outputs
        words = _tokens(" ".join(output))
        named = not any(_NUMBER.fullmatch(w) for w in words) and (
            next(_spans(statement, words, 0, budget=_Budget()), None) is not None
        )
        repeated = {(line,) for line in lines}
        if len(unseen) > 1 or output in likely or repeated <= likely or named:
            return []
    # Every unseen test's output is its input (whole, a line of it, all but its first), or its
    # input's first or last word: a program without the task's logic (an echo, a pick) passes
    # them all.
    picks = [_picks(hidden[i]) for i in unseen]
    if unseen and any(all(p[k] for p in picks) for k in range(len(picks[0]))):
        return []
    return unseen


def _likely_outputs(task: dict[str, Any], paid: Sequence[int]) -> set[tuple[str, ...]]:
    """Outputs a program can guess without the task's logic.

    Nothing, -1, 0, 1, and the answers (whole and line by line) of the tests its prompt shows.
    """
    chosen = set(paid)
    shown = [
        *task["public_tests"],
        *(t for i, t in enumerate(task["hidden_tests"]) if i not in chosen),
    ]
    likely: set[tuple[str, ...]] = {("",), ("-1",), ("0",), ("1",)}
    for test in shown:
        answer = _answer_lines(test["output"])
        likely |= {tuple(answer), *((line,) for line in answer)}
    return likely


#: Input lines a program without the task's logic may echo: one of the first few, or the last.
_ECHOED_LINES = (0, 1, 2, 3, -1)


def _picks(test: Any) -> tuple[bool, ...]:
    """Whether ``test``'s output is what each program without the task's logic prints.

    Its input echoed (whole, or without its first line: a count), one of its input's first
    lines or its last (a reversal with shift 0 answers its message line), its input's first
    word or its last (the larger of two numbers). One entry per program, in a fixed order.
    """
    answer, given = _answer_lines(test["output"]), _answer_lines(test["input"])
    words = " ".join(given).split()
    return (
        answer == given,
        len(given) > 1 and answer == given[1:],
        *(len(given) > max(k, 0) and answer == [given[k]] for k in _ECHOED_LINES),
        bool(words) and answer == [words[0]],
        bool(words) and answer == [words[-1]],
    )


def unseen_hidden_tests(task: dict[str, Any]) -> list[int]:
    """Positions in ``task["hidden_tests"]`` of the tests whose expected output no prompt shows.

    Tests are compared as tokens, whatever their notation: a functional test's JSON decoded
    (escaped strings, ``null``), numbers by value (``1.75`` shows ``1.750000000``, ``4`` shows
    ``4.0``), words lower-cased, and marks other than list and string syntax in order
    (brackets, a grid's ``#.``). A hidden test is *seen*, and never paid for, when its input
    is a public test's input (a program keyed on the shown examples passes it) or when the
    statement or starter code shows it as an example: its input's tokens close together (in
    any order, a few names such as ``nums =`` between them; header numbers such as
    ``Example 2`` are not tokens), and its output's within a few dozen tokens after or
    before. Loaders that make only the first of a statement's examples public (TACO, APPS,
    PrimeIntellect) may leave the others among the hidden tests, shown in ``<pre>`` blocks,
    LaTeX, tables, ``name = value`` form or calls such as ``f("ab") == 3``.

    A task whose unseen tests all expect one answer line (``-1``, ``NO`` once per case,
    nothing) has none when there are several of them or the line is a likely guess (an
    example's, nothing, -1, 0, 1, or words the statement names): a constant, with the
    examples looked up, passes them. A small test can be counted as shown by chance (its
    tokens recur near each other): it is then not paid, which costs a program that passes
    every test nothing (the fraction is over the unseen tests).
    """
    return list(_unseen_of(task))


def has_unseen_hidden_test(task: dict[str, Any]) -> bool:
    """``task`` has a hidden test its prompt does not show (:func:`unseen_hidden_tests`)."""
    return bool(_unseen_of(task))


#: Tasks whose unseen tests were found, by a digest of what the search reads: a dataset's
#: tasks are searched at load and a client's at reset, and again at their first step.
_UNSEEN_FOUND: dict[bytes, tuple[int, ...]] = {}
_UNSEEN_FOUND_SIZE = 4096


def _unseen_of(task: dict[str, Any]) -> tuple[int, ...]:
    read = [task.get(k) for k in ("kind", "question", "starter_code", "public_tests")]
    try:
        text = json.dumps([*read, task["hidden_tests"]], sort_keys=True, default=repr)
    except (TypeError, ValueError):  # keys JSON cannot sort or write: searched, not kept
        return tuple(_unseen(task))
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    found = _UNSEEN_FOUND.get(key)
    if found is None:
        found = tuple(_unseen(task))
        if len(_UNSEEN_FOUND) >= _UNSEEN_FOUND_SIZE:
            try:
                _UNSEEN_FOUND.pop(next(iter(_UNSEEN_FOUND)), None)  # the oldest
            except (RuntimeError, StopIteration):  # another thread changed it meanwhile
                pass
        _UNSEEN_FOUND[key] = found
    return found


def hidden_pass_fraction(
    result: JudgeResult,
    task: dict[str, Any],
    *,
    all_or_nothing: bool = False,
    unseen: Sequence[int] | None = None,
) -> float:
    """The share of ``task``'s unseen hidden tests that ``result`` passed, chance-corrected.

    Only hidden tests whose expected output no prompt shows count
    (:func:`unseen_hidden_tests`; ``unseen`` gives them when already known): the public tests
    are in the prompt, so paying for them pays a program that prints their outputs. The
    share ``f`` is paid above what programs without the task's logic pass
    (:func:`trivial_pass_share`, ``t``): ``max(0, (f - t) / (1 - t))``; where they pass
    every test (``t = 1``), only passing all of them pays.
    ``all_or_nothing``: 1.0 only when every one passed (judging stopped at the first
    failure, whose position in the random order is noise). 0.0 for a task with no unseen
    hidden test (nothing a copy could not pass) and for a result that is not one verdict per
    test of the task (``result`` must come from :func:`judge_task` on ``task``).
    """
    counted = list(unseen_hidden_tests(task) if unseen is None else unseen)
    num_public = len(task["public_tests"])
    if not counted or len(result.results) != num_public + len(task["hidden_tests"]):
        return 0.0
    passed = [result.results[num_public + i].passed for i in counted]
    if all_or_nothing:
        return float(all(passed))
    # Chance-corrected: the tests a program without the task's logic passes (a constant, an
    # echo, an input word: trivial_pass_share) are the floor. Where the unseen tests are 60%
    # NO and YES is no likely guess, `print("NO")` passes 0.6 of them and earns 0; a correct
    # program earns 1.
    floor = trivial_pass_share(
        [task["hidden_tests"][i] for i in counted], likely=_likely_outputs(task, counted)
    )
    if floor >= 1.0:
        # Every test is one such a program passes (a YES/NO task): the answers together
        # are the task, so only all of them pay.
        return float(all(passed))
    return max(0.0, (sum(passed) / len(passed) - floor) / (1.0 - floor))


def trivial_pass_share(tests: Sequence[Any], likely: Collection[tuple[str, ...]] = ()) -> float:
    """The share of ``tests`` that some program without the task's logic passes.

    A test counts when one of these passes it: a fixed output (outputs compared as the judge
    reads them, :func:`_answer_lines`) that two tests or more expect or that is in
    ``likely``; one line printed once per case (``NO`` once per case: the program reads the
    count) where that line is such an output; the input echoed, one of its lines or all but
    its first; its first or last word (the larger of two numbers). ``likely`` holds answers a
    program can guess (``YES`` of a YES/NO task whose example says ``YES``; see
    :func:`hidden_pass_fraction`); one test's own answer is otherwise a guess. The share is
    of the tests any of them passes, not the most one passes: a program may choose among
    them by a feature of its input (att35g: ``0 if m == 0 else -1`` passed both of a task's
    guessable answers and was paid above a floor of one). 1 where every test is such a test
    (:func:`unseen_hidden_tests` leaves out a task all of whose unseen tests one of them
    passes).
    """
    if not tests:
        return 0.0
    answers = [_answer_lines(test["output"]) for test in tests]
    outputs = Counter(tuple(answer) for answer in answers)
    repeated = Counter(answer[0] for answer in answers if len(set(answer)) == 1)
    trivial = 0
    for test, answer in zip(tests, answers, strict=True):
        fixed = outputs[tuple(answer)] > 1 or tuple(answer) in likely
        line = answer[0]
        per_case = len(set(answer)) == 1 and (repeated[line] > 1 or (line,) in likely)
        trivial += fixed or per_case or any(_picks(test))
    return trivial / len(tests)


def score(
    answer: str | None,
    task: dict[str, Any],
    *,
    reward_mode: str = "all",
    backend: str | Backend | None = None,
    language: str | None = None,
) -> float:
    """Score a model response on a code task.

    ``language`` (default: the task's ``"language"``, else Python) chooses which fenced
    block is the code and how it is judged.

    Returns 1.0 if every test passes (``"all"``), or with ``"fraction"`` the share of the
    *hidden* tests passed whose expected output the prompt does not show
    (:func:`hidden_pass_fraction`: public tests never count); 0.0 for a response without
    code, and under either mode for a task with no such hidden test (every expected output
    is in its prompt, so a copy of the examples would pass). ``task`` keeps its tests in
    ``public_tests`` and ``hidden_tests`` (:mod:`rllm_envs.code.datasets`); a flat list of
    tests cannot say which ones a prompt shows, so :func:`judge` and
    :attr:`JudgeResult.fraction` are not rewards.
    """
    if reward_mode not in ("all", "fraction"):
        raise InvalidEnvConfig(
            f"Expects `reward_mode` in ('all', 'fraction'), actual: {reward_mode!r}."
        )
    language = language or task.get("language") or "python"
    code = extract_code(answer, language) if answer else None
    if code is None or not has_unseen_hidden_test(task):
        return 0.0
    result = judge_task(
        code, task, stop_on_failure=reward_mode == "all", backend=backend, language=language
    )
    if reward_mode == "all":
        return float(result.all_passed)
    return hidden_pass_fraction(result, task)
