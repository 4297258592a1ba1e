"""Judge a submission against tests: every test in one sandbox, one test process.

The comparison rules are LiveCodeBench's (see :mod:`rllm_envs.sandbox.harness`). This module
has no Gymnasium import; trainers can call :func:`judge` and :func:`score` directly.
"""

from __future__ import annotations

import ast
import json
import marshal
import os
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.sandbox import Backend, Limits, Status, run, select_backend
from rllm_envs.sandbox.harness import (
    COMPILE_MEMORY_MB,
    COMPILE_TIME_LIMIT,
    CXX_FLAGS,
    PRELUDE,
    PRELUDE_FUNCTIONAL,
    VERDICTS,
    canonical_stdout,
    canonical_value,
    digest,
)
from rllm_envs.sandbox.pool import SandboxPool
from rllm_envs.sandbox.runner import LANGUAGES, check_language, harness_source

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
        time: Wall seconds of the test (not deterministic; keep it out of env ``info``).
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
        """Fraction of accepted tests (0 for no tests)."""
        return self.passed / self.total if self.total else 0.0


_pools: dict[tuple[object, ...], SandboxPool] = {}
_pools_lock = threading.Lock()


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
        max_file_size_mb=max(64, (int(biggest_file) >> 20) + 2),
    )


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


def _expected_digests(salt: str, test: TestCase, kind: str, lenient_functional: bool) -> list[str]:
    if kind == "assert":
        return []
    if kind == "stdin":
        return [digest(salt, canonical_stdout(test.output))]
    try:
        value = json.loads(test.output)
    except ValueError as e:
        raise InvalidDataset(
            f"Expects a functional test's output to be JSON, actual: {test.output[:80]!r}."
        ) from e
    found = [digest(salt, canonical_value(value))]
    # APPS/TACO call-based answers are often wrapped in a one-element list.
    if lenient_functional and isinstance(value, list) and len(value) == 1:
        try:
            found.append(digest(salt, canonical_value(value[0])))
        except TypeError:
            pass
    return found


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
    isolate_tests: bool = False,
    warm: bool = True,
    language: str = "python",
    compile_time_limit: float = COMPILE_TIME_LIMIT,
) -> JudgeResult:
    r"""Run ``code`` on every test in one sandbox and give a verdict per test.

    The tests run one after another in one test process forked inside the sandbox (the
    submission executed afresh for each); a test that fails after another test ran in the
    same process is run again in a fresh one, so verdicts do not depend on test order.
    See :mod:`rllm_envs.sandbox.harness`.

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
            top-level ``func_name``) or ``"assert"`` (each test is code that asserts).
        func_name: The function to call for ``"functional"`` tests.
        time_limit: Wall-clock seconds per test (the CPU limit is one second more).
        memory_mb: Address-space limit per test, in MiB.
        stop_on_failure: Skip the remaining tests (``SKIP``) after the first failure.
        lenient_functional: Also accept ``x`` where the expected answer is ``[x]`` (APPS).
        prelude: Code run before the submission (imports); default :data:`PRELUDE`, or
            :data:`PRELUDE_FUNCTIONAL` for functional and assert tests.
        backend: Sandbox backend (see :func:`rllm_envs.sandbox.run`).
        snippet_chars: How much of each test's output and error to keep.
        max_output_bytes: Output cap per test (more is ``OLE``).
        isolate_tests: Run every test in a fresh process (slower; per-test isolation even
            for accepted tests).
        warm: Use a sandbox started ahead of time from a shared pool (``$RLLM_JUDGE_POOL``
            sandboxes per backend and limits, default 2; see :func:`close_pools`), so the
            sandbox start is off the critical path. Each sandbox judges one submission.
        language: ``"python"`` or ``"cpp"`` (needs ``g++``: ``apt-get install g++``).
        compile_time_limit: Wall-clock seconds to compile a C++ submission (more is ``CE``).

    Returns:
        A :class:`JudgeResult`. Infinite loops end as ``TLE`` after ``time_limit``.

    Raises:
        InvalidEnvConfig: For an unknown kind or language, or C++ with a kind but stdin.
        DependencyNotInstalled: For C++ without the compiler.
    """
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
    if not tests:
        return JudgeResult(results=[])
    if prelude is None:
        prelude = PRELUDE if kind == "stdin" else PRELUDE_FUNCTIONAL
    salt = secrets.token_hex(16)
    spec_tests = [
        {
            "input": t.input,
            "expected": _expected_digests(salt, t, kind, lenient_functional),
            "time_limit": float(time_limit),
        }
        for t in tests
    ]
    spec = {
        "code": code,
        "kind": kind,
        "func_name": func_name,
        "prelude": prelude,
        "salt": salt,
        "tests": spec_tests,
        "memory_mb": int(memory_mb),
        "max_output_bytes": int(max_output_bytes),
        "snippet_chars": int(snippet_chars),
        "stop_on_failure": bool(stop_on_failure),
        "language": language,
        "compile_time_limit": float(compile_time_limit),
        "isolate_tests": bool(isolate_tests),
    }
    biggest = max(len(t.input.encode("utf-8", "surrogatepass")) for t in tests)
    chosen = select_backend(backend)
    compiling = float(compile_time_limit) if language == "cpp" else 0.0
    # The supervisor (its limits are the sandbox's) runs the compiler, which may need more
    # address space than a test.
    supervisor_mb = max(int(memory_mb), COMPILE_MEMORY_MB) if language == "cpp" else memory_mb
    limits = replace(
        _sandbox_limits(supervisor_mb, max(biggest, max_output_bytes)),
        time_limit=len(tests) * (float(time_limit) + 0.2) + 5.0 + compiling,
    )
    # The harness's report: one short record per test.
    report_bytes = len(tests) * (8 * snippet_chars + 1024) + 4096
    pool = _pool(chosen, limits) if warm else None
    if pool is not None:
        outcome = pool.run(
            stdin=marshal.dumps(spec),
            time_limit=limits.time_limit,
            max_output_bytes=report_bytes,
        )
    else:
        outcome = run(
            harness_source(),
            stdin=marshal.dumps(spec),
            backend=chosen,
            limits=replace(limits, max_output_bytes=report_bytes),
        )
    records: dict[int, dict[str, Any]] = {}
    compile_times: list[float] = []
    done = False
    for line in outcome.stdout.splitlines():
        try:
            record = ast.literal_eval(line)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
        if isinstance(record, dict) and record.get("done"):
            done = True
        elif isinstance(record, dict) and isinstance(record.get("index"), int):
            records[record["index"]] = record
        elif isinstance(record, dict) and isinstance(record.get("compiled"), float):
            compile_times.append(record["compiled"])
    missing_verdict = "TLE" if outcome.status is Status.TIMEOUT else "RE"
    results = []
    for index in range(len(tests)):
        record = records.get(index)
        if record is None or record.get("verdict") not in VERDICTS:
            results.append(TestResult(verdict=missing_verdict, error="the judge did not finish"))
        else:
            results.append(
                TestResult(
                    verdict=record["verdict"],
                    output=str(record.get("output") or ""),
                    error=record.get("error"),
                    time=float(record.get("time") or 0.0),
                )
            )
    sandbox_error = None
    if not done:
        sandbox_error = f"{outcome.status.value}: {outcome.stderr[-1000:]}".strip()
    extra = {"compilations": len(compile_times), "compile_time": sum(compile_times)}
    return JudgeResult(
        results=results,
        sandbox_status=outcome.status,
        sandbox_error=sandbox_error,
        extra=extra if compile_times else {},
    )


# ---------------------------------------------------------------- responses and tasks

_PYTHON_LANGS = frozenset({"", "python", "py", "python3", "py3"})
_CPP_LANGS = frozenset({"cpp", "c++", "cc", "cxx"})


def extract_code(response: str, language: str = "python") -> str | None:
    r"""The code of a model response: its last fenced block of ``language`` (``None`` if none).

    Tolerant: text before the last ``</think>`` is ignored, a block left open at the end
    of a cut-off response counts, and when no block is marked with the language the last
    block of any language is taken. Python blocks are marked ``python``/``py`` or not at
    all; C++ blocks ``cpp``, ``c++``, ``cc`` or ``cxx``.

    Example:
        >>> extract_code("Idea...\n```python\nprint(1)\n```\nDone.")
        'print(1)'
    """
    if "</think>" in response:
        response = response.rsplit("</think>", 1)[1]
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
) -> JudgeResult:
    """Judge ``code`` on every test of a code task (public first, then hidden).

    ``time_limit`` overrides the task's own per-test limit (default
    :data:`DEFAULT_TIME_LIMIT`); ``language`` the task's ``"language"`` (default Python).
    """
    limit = time_limit or task.get("time_limit") or DEFAULT_TIME_LIMIT
    return judge(
        code,
        task_tests(task),
        kind=task["kind"],
        func_name=task.get("func_name"),
        time_limit=float(limit),
        memory_mb=memory_mb,
        stop_on_failure=stop_on_failure,
        lenient_functional=bool(task.get("lenient")),
        backend=backend,
        language=language or task.get("language") or "python",
    )


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

    Returns 1.0 if every test passes (``"all"``) or the fraction of passed tests
    (``"fraction"``); 0.0 for a response without code.
    """
    if reward_mode not in ("all", "fraction"):
        raise InvalidEnvConfig(
            f"Expects `reward_mode` in ('all', 'fraction'), actual: {reward_mode!r}."
        )
    language = language or task.get("language") or "python"
    code = extract_code(answer, language) if answer else None
    if code is None:
        return 0.0
    result = judge_task(
        code, task, stop_on_failure=reward_mode == "all", backend=backend, language=language
    )
    return float(result.all_passed) if reward_mode == "all" else result.fraction
