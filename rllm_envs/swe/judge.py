"""Run a repository's tests in a sandbox and decide each verdict on the host.

The executor (:mod:`rllm_envs.swe.executor`) runs in a fresh sandbox with the repository in
memory and reports, per test, what it observed on the sandbox's report channel (a pipe that
no test process holds); a missing, malformed or out-of-order record, a crash, a time-out, a
skip or an exit of any kind is a failure, never an exception.

:func:`verdict` is the SWE-bench rule: the submission's diff is applied to a pristine copy
of the base repository, every change it makes to the test suite (test files, test folders,
``conftest.py``) is dropped, the task's hidden tests (``test_patch``) are placed on top, and
every ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` test must pass. No Gymnasium import; trainers can
call :func:`score` directly.

With the task's reference ``patch`` (every embedded task has one; SWE-bench records do),
each verdict is decided on the host, by comparison (``verdict_trust="host"``): the test
modules are made probes (:mod:`rllm_envs.swe.probe`: each assertion records the values it
checks, without its expected side; each ``pytest.raises`` block records what was raised),
the probes run on the submission's repository, and each test's record of observed values
must equal the record the same probe makes on the reference repository, run in sandboxes of
its own (:func:`reference_outcomes`, once per task, cached), where the unchanged test must
also pass. The expected values and the reference's outcomes are never in the submission's
sandbox, so whatever the submitted code does to its own process -- rewrite the runner
through ``_ctypes``, reach its globals, replace the serialiser, write any record, exit early
-- a test passes only if the reported values are the ones the fixed code computes on the
hidden calls. Expected values held in literal tables (looped over, ``all(...)`` over,
``parametrize`` lists, ``zip``-ped, dicts, class attributes, local ``expected`` variables)
are moved out too: their elements become placeholders in the probe and parametrized cases
get opaque ids, which :func:`probe_ids` maps from the task's node ids
(:mod:`rllm_envs.swe.tables`). What remains: a probe is only as strong as the test's checks,
and a module whose expected values the host cannot move (a table also read other ways,
variables computed in the test or two computed sides compared, ``assert_*`` helpers) keeps
them in the probe, where a patch could find and report them (the test modules cannot be
opened as files in a probe run; their objects are in memory), and an identity check is
observed as a bool the sandbox computes; such verdicts say ``verdict_trust="host_partial"``
and :attr:`Verdict.weakened` says why; :func:`score` and the env pay such a verdict (and an
``"in_process"`` one) 0 unless ``partial_verdicts="pay"`` (:func:`withheld`). Observations
are exact (floats within a tolerance only where the test used ``pytest.approx`` or
``isclose``); one too big to send is compared by the digest of its complete form, and a
value the sandbox could not observe never matches.

Without a reference patch, each test's pass is decided in the process that runs the
submission (``verdict_trust="in_process"``): a pass is written only by a guard (an audit
hook installed before any repository code runs, :func:`rllm_envs.swe.executor._arm`) with a
token made in that process, and code that inspects its own process (frames, ``gc``, tracing,
``ctypes``, ``/proc/*/mem``, rebinding the runner's state) is refused and fails the run
(:attr:`Verdict.tampering`; the guard runs in both modes). That is not a boundary: the
sandbox's bootstrap leaves ``_ctypes`` loaded, whose pointer types read and write memory
without an audit event, and code that rewrites the runner's comparison that way forges a
pass (``tests/envs/swe/test_escapes.py``).
"""

from __future__ import annotations

import ast
import hashlib
import json
import marshal
import re
import secrets
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.forksafe import ForkSafeLock
from rllm_envs.sandbox import Backend, Limits, RunResult, SandboxPool, Status, select_backend
from rllm_envs.sandbox.runner import communicate, program_header, spawn, spawn_failure
from rllm_envs.swe.executor import value_digest
from rllm_envs.swe.probe import (
    NOTE_ECHO,
    NOTE_SUITE_FUNCTION,
    NOTE_WARNING_FILTER,
    Fixture,
    Probe,
    _aliases,
    checked,
    echoed,
    given_by_fixtures,
    index_map,
    module_functions,
    opaque_name,
    probe_module,
    remap_indices,
    same_check,
    same_observations,
    sound_reference,
)
from rllm_envs.swe.repo import (
    Files,
    PatchError,
    apply_diff,
    is_test_path,
    modules_outside_tests,
)

__all__ = [
    "TestOutcome",
    "RunReport",
    "Verdict",
    "run_tests",
    "collect_and_run",
    "run_python",
    "final_files",
    "verdict",
    "score",
    "close_pools",
    "warm_up",
    "probe_files",
    "probe_notes",
    "judged_files",
    "probe_ids",
    "probe_paths",
    "reference_outcomes",
    "run_probes",
    "forget_references",
    "Reference",
    "DEFAULT_TIME_LIMIT",
]

#: Wall-clock seconds per test (per snippet for :func:`run_python`).
DEFAULT_TIME_LIMIT = 10.0
#: Sandboxes kept started per backend and limits when ``warm`` (see :func:`close_pools`).
POOL_SIZE = 2
_OUTPUT_CHARS = 4000
_FRAME_CAP = 4 << 20
_RECORD_TYPES: dict[str, tuple[type, ...]] = {
    "index": (int,),
    "id": (str,),
    "outcome": (str,),
    "code": (int, type(None)),
    "signal": (int, type(None)),
    "result": (str,),
    "output": (str,),
    "time": (int, float),
    "tamper": (str,),
}


@dataclass(frozen=True)
class TestOutcome:
    """What happened to one test.

    Attributes:
        id: The test's node id (``path::name`` or ``path::Class::name[params]``).
        status: ``passed``, ``failed``, ``error`` (not collected or not found), ``skipped``,
            ``timeout``, ``crashed`` (killed, or exited on its own), ``tampered`` (the test
            process tried to reach the runner's state; see :mod:`rllm_envs.swe.executor`),
            ``missing`` (no record) or ``not_run`` (the run stopped at an earlier failure).
        message: The failure's traceback or reason (cut), ``""`` when passed.
        output: The end of what the test printed.
    """

    __test__ = False  # not a pytest test class

    id: str
    status: str
    message: str = ""
    output: str = ""

    @property
    def passed(self) -> bool:
        """The test ran to its end with no failure."""
        return self.status == "passed"


@dataclass(frozen=True)
class RunReport:
    """The outcomes of one sandboxed run, in order, and how the sandbox ended."""

    outcomes: list[TestOutcome]
    sandbox_status: Status = Status.OK
    sandbox_error: str | None = None

    def by_id(self) -> dict[str, TestOutcome]:
        """Outcomes keyed by test id."""
        return {o.id: o for o in self.outcomes}

    def summary(self, max_chars: int = 3000) -> str:
        """The outcomes as feedback text: a count, then each test that did not pass."""
        passed = sum(o.passed for o in self.outcomes)
        lines = [f"{passed} of {len(self.outcomes)} tests passed."]
        for o in self.outcomes:
            if not o.passed:
                detail = o.message.strip().splitlines()[-6:] if o.message else []
                lines.append(f"{o.status.upper()} {o.id}" + "".join("\n    " + d for d in detail))
        if self.sandbox_error:
            lines.append(f"(sandbox: {self.sandbox_error[:300]})")
        text = "\n".join(lines)
        return text if len(text) <= max_chars else text[: max_chars - 20] + "\n[... cut]"


@dataclass(frozen=True)
class Verdict:
    """The hidden-test verdict of one submission.

    Attributes:
        resolved: Every fail-to-pass and pass-to-pass test passed.
        fail_to_pass: Fraction of fail-to-pass tests that passed.
        unshown_passed: Fraction of the ``unshown`` fail-to-pass tests that passed, at most
            ``fail_to_pass`` (what partial credit pays; every fail-to-pass test when
            ``unshown`` is ``None``; 1 or 0 by whether all passed when it is empty).
        pass_to_pass: Fraction of pass-to-pass tests that passed (1.0 when there are none).
        applied: The submission's diff applied to the pristine repository.
        error: Why the diff did not apply, or why the sandbox failed.
        dropped: Paths of the test suite the diff changed (those changes were discarded).
        report: The run of the hidden tests (``None`` when the diff did not apply).
        verdict_trust: ``"host"``: each test's outcome is the host's comparison of observed
            values with the reference's; ``"host_partial"``: the same, but some checks of the
            hidden tests keep their expected values in the probe or are weakened
            (``weakened`` says which); ``"in_process"``: no reference patch, each outcome
            decided inside the process that runs the submission (see the module docstring).
        weakened: Why the verdict is ``"host_partial"``: one sentence per kind of check
            the probes left to the sandbox or weakened (``()`` for ``"host"``).
        tampering: A test process tried to reach the runner's state (the guard refused it);
            every test of the run then counts as failed.
        reference_failing: Tests the reference repository fails (a broken record, e.g. a
            dependency the sandbox lacks): pass-to-pass ones are left out of the verdict.
    """

    resolved: bool
    fail_to_pass: float
    pass_to_pass: float
    applied: bool = True
    error: str | None = None
    dropped: list[str] = field(default_factory=list)
    report: RunReport | None = None
    verdict_trust: str = "in_process"
    tampering: bool = False
    weakened: tuple[str, ...] = ()
    reference_failing: tuple[str, ...] = ()
    unshown_passed: float = 0.0


@lru_cache(maxsize=1)
def executor_source() -> str:
    """The source of :mod:`rllm_envs.swe.executor` (sent into sandboxes as a program)."""
    return (resources.files("rllm_envs.swe") / "executor.py").read_text(encoding="utf-8")


_pools: dict[tuple[object, ...], SandboxPool] = {}
_pools_lock = ForkSafeLock()


def close_pools() -> None:
    """Kill the SWE sandboxes kept started ahead of time (new ones start when needed)."""
    with _pools_lock:
        pools = list(_pools.values())
        _pools.clear()
    for pool in pools:
        pool.close()


def warm_up(
    backend: str | Backend | None = None, *, memory_mb: int = 1024, timeout: float = 30.0
) -> bool:
    """Start the sandboxes the ``warm`` runs use ahead of time; wait until they are started.

    Optional: the first warm run starts them too, but pays for its own sandbox start.
    Returns whether they started within ``timeout`` seconds.
    """
    return _pool(select_backend(backend), _limits(60.0, memory_mb)).wait_ready(timeout)


def _limits(total_time: float, memory_mb: int) -> Limits:
    return Limits(
        time_limit=total_time,
        cpu_time=3600,
        memory_mb=max(int(memory_mb), 256),
        max_processes=64,
        max_file_size_mb=64,
        max_output_bytes=1 << 16,
    )


def _pool(backend: Backend, limits: Limits) -> SandboxPool:
    key = (type(backend), limits.memory_mb, limits.max_processes, limits.max_file_size_mb)
    with _pools_lock:
        pool = _pools.get(key)
        if pool is None or pool.closed:
            pool = SandboxPool(POOL_SIZE, backend=backend, limits=limits, program=executor_source())
            _pools[key] = pool
        return pool


class _Records:
    """Reads the report channel as it arrives; keeps only well-formed, in-order records."""

    def __init__(
        self,
        stop_after_failure: Callable[[Mapping[str, Any]], tuple[str, str]] | None = None,
        rename: Mapping[str, str] | None = None,
    ) -> None:
        self.buffer = bytearray()
        #: The test ids the host knows for the ids the sandbox ran (probe ids -> task ids).
        self.rename = rename or {}
        self.records: list[dict[str, Any]] = []
        self.done = False
        self.broken: str | None = None
        #: How a record's status is decided, when the run should end at the first test that
        #: did not pass.
        self.stop_after_failure = stop_after_failure
        self.stopped = False

    def feed(self, chunk: bytes) -> bool:
        if self.done or self.broken or self.stopped:
            return True
        self.buffer += chunk
        while len(self.buffer) >= 4:
            size = int.from_bytes(self.buffer[:4], "big")
            if size > _FRAME_CAP:
                self.broken = "an oversized record"
                return True
            if len(self.buffer) < 4 + size:
                break
            frame = bytes(self.buffer[4 : 4 + size])
            del self.buffer[: 4 + size]
            self._take(frame)
            if self.done or self.broken:
                return True
            decide = self.stop_after_failure
            if decide is not None and self.records:
                if decide(self.records[-1])[0] != "passed":
                    self.stopped = True
                    return True
        return False

    def _take(self, frame: bytes) -> None:
        try:
            record = json.loads(frame)
        except (ValueError, RecursionError):
            self.broken = "a malformed record"
            return
        if record == {"done": True}:
            self.done = True
            return
        if not isinstance(record, dict) or set(record) != set(_RECORD_TYPES):
            self.broken = "a malformed record"
            return
        for key, types in _RECORD_TYPES.items():
            value = record[key]
            if not isinstance(value, types) or isinstance(value, bool):
                self.broken = f"a record with a bad `{key}`"
                return
        if record["index"] != len(self.records) or record["outcome"] not in (
            "exited",
            "signaled",
            "timeout",
        ):
            self.broken = "an out-of-order or malformed record"
            return
        record["id"] = self.rename.get(record["id"], record["id"])
        self.records.append(record)


def _status(record: Mapping[str, Any], nonce: str) -> tuple[str, str]:
    """The host's status for one test record: ``(status, message)``."""
    result = record["result"]
    if record["tamper"]:
        return "tampered", "the guard refused: " + record["tamper"][:500]
    if record["outcome"] == "timeout":
        return "timeout", "the test ran past its time limit"
    if record["outcome"] == "signaled":
        return "crashed", f"killed by signal {record['signal']}"
    if record["code"] != 0:
        return "crashed", f"the test process exited with status {record['code']}"
    if result == "P" + nonce:
        return "passed", ""
    kind, body = result[:1], result[1:]
    if kind == "S":
        return "skipped", body[:2000]
    if kind == "E":
        return "error", body[:2000]
    if kind == "F":
        return "failed", body[:2000]
    return "failed", "the test reported no result"


def _execute(
    spec: dict[str, Any],
    *,
    records: _Records | None = None,
    total_time: float,
    memory_mb: int,
    backend: str | Backend | None,
    warm: bool,
) -> tuple[_Records, RunResult]:
    chosen = select_backend(backend)
    spec = {**spec, "reap": chosen.pid_namespace}
    limits = _limits(total_time, memory_mb)
    records = _Records() if records is None else records
    payload = marshal.dumps(spec)
    if warm:
        outcome, _ = _pool(chosen, limits).run_with_channel(
            stdin=payload, time_limit=total_time, channel_bytes=0, on_channel=records.feed
        )
        return records, outcome
    start = time.monotonic()
    try:
        sandbox = spawn(chosen, limits)
    except OSError as e:
        return records, spawn_failure(chosen, e, start)
    outcome, _ = communicate(
        sandbox,
        program_header(executor_source(), trusted=True) + payload,
        limits,
        start,
        forked=False,
        channel_bytes=0,
        on_channel=records.feed,
    )
    return records, outcome


def _check_files(files: Files) -> dict[str, str]:
    if not isinstance(files, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise InvalidEnvConfig("Expects `files` to be a mapping of path strings to text.")
    return dict(files)


def _report(
    records: _Records,
    outcome: RunResult,
    ids: Sequence[str] | None,
    decide: Callable[[Mapping[str, Any]], tuple[str, str]],
) -> RunReport:
    outcomes = []
    for record in records.records:
        status, message = decide(record)
        outcomes.append(TestOutcome(record["id"], status, message, record["output"][-2000:]))
    error = None
    if not records.done and not records.stopped:
        why = records.broken or "the run did not finish"
        error = f"{outcome.status.value}: {why}. {outcome.stderr[-500:]}".strip()
    if ids is not None:
        if [o.id for o in outcomes] != list(ids[: len(outcomes)]):
            outcomes, error = [], "the sandbox reported tests that were not asked for"
        rest = ids[len(outcomes) :]
        if records.stopped and error is None:
            outcomes += [TestOutcome(i, "not_run", "an earlier test did not pass") for i in rest]
        else:
            outcomes += [TestOutcome(i, "missing", error or "no record") for i in rest]
    return RunReport(outcomes, outcome.status, error)


def run_tests(
    files: Files,
    tests: Sequence[str],
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_mb: int = 1024,
    backend: str | Backend | None = None,
    warm: bool = True,
    stop_on_failure: bool = False,
    total_time: float | None = None,
) -> RunReport:
    """Run the tests ``tests`` (node ids) of the repository ``files`` in one sandbox.

    Args:
        files: The repository, ``{path: text}``.
        tests: Node ids, ``path::name``, ``path::Class::name`` or with ``[params]``.
        time_limit: Wall-clock seconds per test.
        memory_mb: Address-space limit of each test process, in MiB.
        backend: Sandbox backend (see :func:`rllm_envs.sandbox.run`).
        warm: Use a sandbox started ahead of time (see :func:`close_pools`).
        stop_on_failure: End the run at the first test that does not pass (the rest are
            ``not_run``).
        total_time: Wall-clock seconds for the whole run (default: every test's limit plus
            a margin); tests not reported by then are ``missing``.

    Returns:
        One :class:`TestOutcome` per id, in order (``missing`` for tests never reported).
    """
    ids = [str(t) for t in tests]
    nonce = secrets.token_hex(16)

    def decide(record: Mapping[str, Any]) -> tuple[str, str]:
        return _status(record, nonce)

    return _run_ids(
        _check_files(files),
        ids,
        nonce,
        decide,
        observe=False,
        time_limit=time_limit,
        memory_mb=memory_mb,
        backend=backend,
        warm=warm,
        stop_on_failure=stop_on_failure,
        total_time=total_time,
    )


def _run_ids(
    files: dict[str, str],
    ids: list[str],
    nonce: str,
    decide: Callable[[Mapping[str, Any]], tuple[str, str]],
    *,
    observe: bool,
    time_limit: float,
    memory_mb: int,
    backend: str | Backend | None,
    warm: bool,
    stop_on_failure: bool,
    total_time: float | None,
    raw: list[dict[str, Any]] | None = None,
    sandbox_ids: list[str] | None = None,
    walk: bool = False,
) -> RunReport:
    """Run node ids ``ids``; ``raw`` (when given) receives the records as they came.

    ``sandbox_ids``: the ids the sandbox runs them by (:func:`probe_ids`); records and
    outcomes carry ``ids``. ``walk``: each observing test process reports what the suite
    holds in memory when it ends (the reference's probe run: :func:`_module_echo`).
    """
    if not ids:
        return RunReport([])
    asked = list(ids)
    # In an order of the host's choosing, never the caller's: fail-to-pass tests came first,
    # and a patch read a test's place from its pid (one fork per test) or the runner's list
    # in memory, and kept the bug everywhere but there (s36 att36d: paid 1.0 host).
    order = list(range(len(ids)))
    secrets.SystemRandom().shuffle(order)
    ids = [asked[i] for i in order]
    if sandbox_ids is not None and len(sandbox_ids) == len(asked):
        sandbox_ids = [sandbox_ids[i] for i in order]
    rename: dict[str, str] = {}
    tests = ids
    if sandbox_ids is not None and len(sandbox_ids) == len(ids):
        pairs = dict(zip(sandbox_ids, ids, strict=True))
        if all(pairs[s] == o for s, o in zip(sandbox_ids, ids, strict=True)):
            rename, tests = pairs, list(sandbox_ids)
    spec = {
        "files": files,
        "mode": "tests",
        "tests": tests,
        "nonce": nonce,
        "observe": observe,
        "walk": walk,
        "time_limit": float(time_limit),
        "memory_mb": int(memory_mb),
        "output_chars": _OUTPUT_CHARS,
        "max_tests": len(ids),
    }
    budget = len(ids) * (float(time_limit) + 0.5) + 5.0
    records, outcome = _execute(
        spec,
        records=_Records(decide if stop_on_failure else None, rename),
        total_time=budget if total_time is None else min(float(total_time), budget),
        memory_mb=memory_mb,
        backend=backend,
        warm=warm,
    )
    if raw is not None:
        raw.extend(records.records)
    report = _report(records, outcome, ids, decide)
    by_id = report.by_id()
    return replace(report, outcomes=[by_id[t] for t in asked if t in by_id])


def collect_and_run(
    files: Files,
    test_files: Sequence[str],
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    total_time: float = 60.0,
    max_tests: int = 500,
    memory_mb: int = 1024,
    backend: str | Backend | None = None,
    warm: bool = True,
) -> RunReport:
    """Collect the tests of ``test_files`` inside the sandbox and run them (feedback runs).

    A file that fails to import is one ``error`` outcome named by its path. The run stops at
    ``max_tests`` tests or ``total_time`` seconds.
    """
    files = _check_files(files)
    if not test_files:
        return RunReport([])
    nonce = secrets.token_hex(16)
    spec = {
        "files": files,
        "mode": "collect",
        "test_files": list(test_files),
        "nonce": nonce,
        "time_limit": float(time_limit),
        "memory_mb": int(memory_mb),
        "output_chars": _OUTPUT_CHARS,
        "max_tests": int(max_tests),
    }
    records, outcome = _execute(
        spec, total_time=total_time, memory_mb=memory_mb, backend=backend, warm=warm
    )
    return _report(records, outcome, None, lambda r: _status(r, nonce))


def run_python(
    files: Files,
    code: str,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_mb: int = 1024,
    backend: str | Backend | None = None,
    warm: bool = True,
) -> tuple[str, str]:
    """Run a snippet with the repository importable; return ``(status line, output)``."""
    files = _check_files(files)
    spec = {
        "files": files,
        "mode": "python",
        "code": str(code),
        "nonce": "",
        "time_limit": float(time_limit),
        "memory_mb": int(memory_mb),
        "output_chars": _OUTPUT_CHARS,
        "max_tests": 1,
    }
    records, outcome = _execute(
        spec, total_time=float(time_limit) + 5.0, memory_mb=memory_mb, backend=backend, warm=warm
    )
    if not records.records:
        return f"The sandbox could not run the snippet ({outcome.status.value}).", ""
    record = records.records[0]
    if record["outcome"] == "timeout":
        head = f"Time limit ({time_limit:g} s) exceeded; the snippet was killed."
    elif record["outcome"] == "signaled":
        head = f"Killed by signal {record['signal']}."
    else:
        head = f"Exit code {record['code']}."
    return head, record["output"]


def final_files(base: Files, diff: str, test_patch: str = "") -> tuple[dict[str, str], list[str]]:
    """The repository the hidden tests run on: ``base`` + ``diff`` (minus tests) + tests.

    Returns:
        The files and the test-suite paths whose changes in ``diff`` were discarded.

    Raises:
        PatchError: If ``diff`` does not apply to ``base``.
    """
    files = dict(base)
    dropped: list[str] = []
    changes = apply_diff(base, diff) if diff.strip() else {}
    for path, text in changes.items():
        if is_test_path(path):
            dropped.append(path)
        elif text is None:
            files.pop(path, None)
        else:
            files[path] = text
    if test_patch.strip():
        for path, text in apply_diff(base, test_patch).items():
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
    return files, dropped


#: Why a verdict is ``host_partial`` when the test suite has a data file.
NOTE_DATA_FILE = "the test suite has a data file (it may hold expected values)"
#: Why a verdict is ``host_partial`` when a module of its tests keeps a name in the sandbox
#: that may say what they check (:func:`probe_paths`).
NOTE_PATH_NAMED = (
    "a test module's path keeps a name the test suite uses (it may say what its tests check)"
)
#: No longer given: a test that observed nothing but ran to its end on the reference is a
#: "must not raise" test, decided on the host by how it ends (see :func:`_decided_on_host`).
NOTE_NOTHING_OBSERVED = "a test observed nothing on the reference (its checks run in the sandbox)"
#: Why a verdict is ``host_partial`` when a test's probe stopped early on the reference.
NOTE_PROBE_STOPPED = (
    "a test's probe did not run to its end with the fix (the checks after where it stopped "
    "are compared by no one)"
)


#: Why a verdict is ``host_partial`` when a block of a test caught, on the fix, an error its
#: probe's own rewrite made (:func:`rllm_envs.swe.probe.sound_reference`).
NOTE_PROBE_BROKEN = (
    "a test's probe raised, with the fix, an error of its own rewrite (a name, attribute, "
    "import or keyword it could not match): its records decide nothing"
)


#: Why a verdict is ``host_partial`` when a fail-to-pass test's expected value is a value its
#: test modules held once they had run, on the reference (s40 att40i: ``SAMPLE =
#: 'hello, kim'.title()``, another test's input, was read through ``sys.modules`` and returned
#: without the fix: paid 6/10 ``host``). The literal echo check (:data:`NOTE_ECHO`) reads the
#: source; this reads what the modules computed.
NOTE_MODULE_ECHO = (
    "a fail-to-pass test's expected value is a value its test modules compute when they are "
    "imported (the sandbox's memory holds it)"
)


def _module_echo(files: Mapping[str, str], reference: Reference, secret: Sequence[str]) -> bool:
    """Whether an expected value of a ``secret`` test is among the reference's module values.

    The reference's probe run reports the plain texts and numbers each test module held once
    it had run, as digests (``executor._module_values``); a submission's could hide them,
    the reference's (the task's own code) does not.
    """
    readable = {
        digest
        for observed in reference.observed.values()
        if observed
        for digest in observed["module"]
        if isinstance(digest, str)
    }
    if not readable:
        return False
    for test in secret:
        path, _, name = str(test).partition("::")
        text = files.get(path)
        if text is None or not (path.endswith(".py") and is_test_path(path)):
            continue
        hidden = probe_module(text).hidden
        told = {*hidden.get(name.partition("[")[0], ()), *hidden.get("", ())}
        if told and "unwalked" in readable:
            return True  # a module too large to walk: any expected value may be in it
        keys = {a for key in told for a in _aliases(key) if a[0] in ("text", "number")}
        if any(value_digest(kind, value) in readable for kind, value in keys):
            return True
    return False


#: Why a verdict is ``host_partial`` when an operator of a check belongs to the repository.
NOTE_OPERATED = (
    "a check's operator (its truth, `in`, an order, arithmetic, a tolerance or a method) is "
    "a method of a class of the repository, which the probe cannot run without handing it "
    "the test's literal (its state alone does not show what it decides)"
)


def _operated(observed: Mapping[str, Any] | None) -> bool:
    """Whether a reference probe recorded a check decided by a repository class's operator."""
    values = observed.get("observed") if observed else None
    return isinstance(values, list) and any(
        isinstance(v, list) and v[:1] == ["operated"] for v in values
    )


def _decided_on_host(reference: Reference, test: str) -> bool:
    """Whether ``test`` is decided on the host.

    Its reference probe ran through to its end (:func:`_ran_through`) and its records are
    sound (:func:`_sound`).
    """
    return _ran_through(reference.observed.get(test)) and _sound(reference, test)


def _sound(reference: Reference, test: str) -> bool:
    """Whether the reference's records of ``test`` are sound (:func:`sound_reference`)."""
    observed = reference.observed.get(test)
    records = observed.get("observed") if observed else None
    return sound_reference(records, reference.blocks.get(test, ()))


def _ran_through(observed: Mapping[str, Any] | None) -> bool:
    """Whether a reference probe ran through to its end.

    A probe that stopped early (a rewrite that raises where the test would not, an eager
    ``and``/``or``) leaves the checks after it uncompared, so a submission matching the
    observations before it would pass. One that ran to its end observing nothing is a
    "must not raise" test (``def test_parses(): parse(text)``): in a complete probe module
    nothing else decides it, and the host compares how it ended (a raise, a crash, an exit
    or a skip is not the reference's ``ended P``), so it is decided on the host too.
    """
    if not observed or not isinstance(observed.get("observed"), list) or _operated(observed):
        return False
    return bool(observed.get("end") == ["ended", "P"])


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _module_word(path: str) -> str:
    """The name an import of test module ``path`` mentions (its package's for ``__init__``)."""
    parts = path.split("/")
    name = parts[-1][: -len(".py")]
    return parts[-2] if name == "__init__" and len(parts) > 1 else name


def judged_files(files: Mapping[str, str], ids: Sequence[str]) -> dict[str, str]:
    """``files`` without the test modules the tests ``ids`` cannot load.

    Kept: every file outside the test suite, every data file of it, the modules of ``ids``,
    every module of the test suite a kept module names (``from tests.helpers import x``,
    ``pytest_plugins = ["fixtures"]``: its file name, or its package's for an
    ``__init__.py``, appears in the kept module's text as a word), and the ``conftest.py`` /
    ``__init__.py`` files of the folders above a kept module. The rest is neither sent to
    the sandbox nor counted in the verdict's trust: a shape the probe cannot decide on the
    host in an unrelated test module does not withhold a verdict it plays no part in, and
    its values are not in the sandbox's memory either. A module loaded some other way
    (``importlib.import_module`` of a computed name) is missing there, with the reference
    too: its test ends differently than the unchanged test did, and the verdict says so.
    """
    modules = {p for p in files if p.endswith(".py") and is_test_path(p)}
    kept = {node.partition("::")[0] for node in ids} & modules
    while True:
        folders = {"/".join(p.split("/")[:i]) for p in kept for i in range(p.count("/") + 1)}
        words = {w for p in kept for w in _WORD.findall(files[p])}
        more = {
            p
            for p in modules - kept
            if _module_word(p) in words
            or (
                p.rsplit("/", 1)[-1] in ("conftest.py", "__init__.py")
                and (p.rpartition("/")[0] in folders)
            )
        }
        if not more:
            break
        kept |= more
    return {p: t for p, t in files.items() if p not in modules or p in kept}


#: Files whose pytest settings (``filterwarnings``) the runner does not apply.
_PYTEST_CONFIGS = frozenset({"pytest.ini", ".pytest.ini", "setup.cfg", "tox.ini", "pyproject.toml"})


def probe_notes(
    files: Mapping[str, str],
    secret: Sequence[str] | None = None,
    visible: Mapping[str, str] | None = None,
) -> tuple[str, ...]:
    """Why the probes of ``files`` leave checks to the sandbox (``()``: none do).

    The notes of :func:`rllm_envs.swe.probe.probe_module` over every test module, and
    :data:`NOTE_DATA_FILE` for a data file of the test suite. :data:`NOTE_ECHO` is decided
    over all the modules together (every module sent is in the sandbox's memory), for the
    expected values of the ``secret`` tests (node ids; ``None``: every test). Pass the
    fail-to-pass tests: a pass-to-pass test passes on the unchanged code, so reading its
    expected values gains a submission nothing. :data:`NOTE_SUITE_FUNCTION` counts the
    functions a test module holds that its ``visible`` version (the repository's, which the
    agent reads) does not.
    """
    notes: list[str] = []
    probes = {}
    for path, text in files.items():
        if path.rpartition("/")[2] in _PYTEST_CONFIGS and "filterwarnings" in text:
            # `filterwarnings = error` of the repository's pytest configuration: the runner
            # does not apply it, and every probe block passes warnings on (att38b F4: the
            # empty patch was paid 10/10 where a test must not warn).
            notes += [] if NOTE_WARNING_FILTER in notes else [NOTE_WARNING_FILTER]
        if not is_test_path(path):
            continue
        if path.endswith(".py"):
            probes[path] = probe_module(text)
        found = probes[path].notes if path in probes else (NOTE_DATA_FILE,)
        notes += [n for n in found if n not in notes and n != NOTE_ECHO]
        if path in probes and NOTE_SUITE_FUNCTION not in notes:
            seen = visible.get(path) if visible is not None else None
            known = probe_module(seen).functions if isinstance(seen, str) else frozenset()
            if probes[path].functions - known:
                notes.append(NOTE_SUITE_FUNCTION)
    if _echoes(probes, secret):
        notes.append(NOTE_ECHO)
    # The modules of the tests judged (every module holding tests when none are named).
    tested = [p for p in probes if probes[p].names] if secret is None else _tests_by_module(secret)
    if _path_named(files, tested):
        notes.append(NOTE_PATH_NAMED)
    return tuple(notes)


def _echoes(probes: Mapping[str, Probe], secret: Sequence[str] | None) -> bool:
    """Whether an expected value of a ``secret`` test is written as a literal in ``probes``."""
    shared: dict[str, Fixture] = {}  # a conftest's fixtures serve the modules below it
    for path, probe in probes.items():
        if path.rpartition("/")[2] == "conftest.py":
            shared.update(probe.fixtures)
    readable = frozenset().union(*(p.inputs for p in probes.values()))
    wanted = _tests_by_module(secret or ())
    for path, probe in probes.items():
        if secret is None:
            tests = set(probe.hidden)
        else:
            tests = wanted.get(path, set())
            tests |= {""} if tests else set()
        for test in tests:
            hidden = probe.hidden.get(test, frozenset())
            if hidden:
                given = given_by_fixtures(probe.requests.get(test, frozenset()), shared)
                if echoed(hidden - given, readable):
                    return True
    return False


def _tests_by_module(ids: Sequence[str]) -> dict[str, set[str]]:
    """Per module path, the tests of node ids ``ids`` (``name`` or ``Class::name``)."""
    found: dict[str, set[str]] = {}
    for node in ids:
        path, _, name = node.partition("::")
        found.setdefault(path, set()).add(name.partition("[")[0])
    return found


def only_tests(files: Mapping[str, str], ids: Sequence[str]) -> dict[str, str]:
    """``files`` whose test modules hold no test function or method but those of ``ids``.

    Each other test (decorators included) becomes ``pass``: fixtures, helpers, classes and
    module code stay, and so do tests the module itself names (``test_b = test_a``). A
    module of none of ``ids``, or one that does not parse, stays as it is.
    """
    out = dict(files)
    for path, names in _tests_by_module(ids).items():
        text = files.get(path)
        if text is None or not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, MemoryError, RecursionError):
            continue
        named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        cuts = []
        for klass, member in module_functions(tree):
            test = member.name
            if not test.startswith("test") or test in named:
                continue
            if (f"{klass}::{test}" if klass else test) in names:
                continue
            start = min([member.lineno, *(d.lineno for d in member.decorator_list)])
            cuts.append((start, member.end_lineno or member.lineno, member.col_offset))
        lines = text.splitlines(keepends=True)
        for start, end, column in reversed(cuts):
            lines[start - 1 : end] = [" " * column + "pass\n"]
        out[path] = "".join(lines)
    return out


def _plan(
    files: Mapping[str, str],
    ids: Sequence[str],
    secret: Sequence[str] | None,
    visible: Mapping[str, str] | None = None,
) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """The notes of a verdict on ``ids``, and where the ``secret`` tests run.

    When an expected value of a secret (fail-to-pass) test is written as another test's
    input (:data:`NOTE_ECHO`), the secret tests run in a sandbox of their own on modules
    holding only them (:func:`only_tests`): returned when no echo is left there (and the
    note goes), else ``None`` (one run, the note stays). ``visible``: the test modules the
    agent reads (:func:`probe_notes`).
    """
    notes = probe_notes(judged_files(files, ids), secret, visible)
    if NOTE_ECHO not in notes or not secret:
        return notes, None
    alone = only_tests(judged_files(files, secret), secret)
    if NOTE_ECHO in probe_notes(alone, secret):
        return notes, None
    return tuple(n for n in notes if n != NOTE_ECHO), alone


def probe_files(
    files: Mapping[str, str], secret: Sequence[str] | None = None
) -> tuple[dict[str, str], bool]:
    """``files`` with every test module made a probe (:mod:`rllm_envs.swe.probe`).

    The test suite goes to its probe paths (:func:`probe_paths`). Returns the files and
    whether every probe is complete and the test suite has no data files (they stay as they
    are, and may hold expected values); :func:`probe_notes` says why not.
    """
    moved = probe_paths(files)
    out = {}
    for path, text in files.items():
        if path.endswith(".py") and is_test_path(path):
            text = probe_module(text).text
        out[moved.get(path, path)] = text
    return out, not probe_notes(files, secret)


#: Folders of a test suite whose names say nothing of what a test checks.
_PLAIN_TEST_DIRS = frozenset({"tests", "test", "testing"})


def probe_paths(files: Mapping[str, str]) -> dict[str, str]:
    """Where the files of the test suite in ``files`` go in the sandbox, for those that move.

    A test module's path says what its tests check (``tests/test_errors.py``,
    ``tests/errors/test_input.py``, ``tests/errors.py``): a patch reading its caller's file
    (``traceback.extract_stack``) raised only when called from such a path and kept the bug
    (att38d F3, att39a F2 and F3: 5/5 paid each). So the name of every module of the test
    suite (``conftest.py`` and ``__init__.py`` aside) and of every folder below its first
    ``tests``/``test``/``testing`` folder becomes a keyed digest of its path
    (:func:`rllm_envs.swe.probe.opaque_name`), the folder's files moving with it, unless a
    module of the test suite names it (:func:`_suite_references`: an import of the suite,
    ``pytest_plugins``, a path it reads): that one keeps its name (:data:`NOTE_PATH_NAMED`).
    Only the test suite decides: it is restored to its pristine state for a verdict, so a
    patch naming a module in its own files changes nothing (att39a F1: a comment naming the
    module kept its name, 5/5 paid).
    """
    suite = [p for p in files if is_test_path(p)]
    words = {p: _suite_references(files[p]) for p in suite if p.endswith(".py")}
    named = set().union(*words.values())
    out = {}
    for path in suite:
        parts = path.split("/")
        new = list(parts)
        for i in range(_telling_from(parts), len(parts) - 1):
            if parts[i] not in named:
                new[i] = opaque_name("/".join(parts[: i + 1]), "")
        stem = parts[-1].removesuffix(".py")
        if (
            parts[-1].endswith(".py")
            and stem not in ("conftest", "__init__", "tests")
            and not any(stem in w for other, w in words.items() if other != path)
        ):
            new[-1] = f"{opaque_name(path, 'test_')}.py"
        if new != parts:
            out[path] = "/".join(new)
    return out


@lru_cache(maxsize=4096)
def _suite_references(text: str) -> frozenset[str]:
    """The names a test module may reach a module or folder of the suite by.

    The parts of its imports of the suite (``from tests.core import x``, ``from . import
    helpers``), every word of its strings (``pytest_plugins``, a path it reads), and with an
    import of a bare suite package (``import tests``) every attribute it reads. An import
    from elsewhere names nothing of the suite (att39c: ``from acme.core import pct`` kept
    the folder ``tests/core`` and withheld every correct fix, 5/5). A module that does not
    parse names every word it holds. Cached by text: a verdict asks for the paths of the same
    test suite several times (its probes, their node ids, its notes).
    """
    from rllm_envs.swe.probe import _suite_module

    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return frozenset(_WORD.findall(text))
    found: set[str] = set()
    packages = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _suite_module(alias.name, 0):
                    found.update(alias.name.split("."))
                    packages = True
        elif isinstance(node, ast.ImportFrom) and _suite_module(node.module, node.level):
            found.update((node.module or "").split("."))
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.update(_WORD.findall(node.value))
    if packages:
        found.update(n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute))
    return frozenset(found)


def probe_path(files: Mapping[str, str], path: str) -> str:
    """Where file ``path`` of ``files`` goes in the sandbox (:func:`probe_paths`)."""
    return probe_paths(files).get(path, path)


def _path_named(files: Mapping[str, str], modules: Iterable[str]) -> bool:
    """Whether a module of ``modules`` keeps a telling name in its probe path.

    A name of the test suite's that may say what its tests check stays where a module of
    the suite names it (:func:`probe_paths`).
    """
    moved = probe_paths(files)
    for path in modules:
        if path not in files or not path.endswith(".py"):
            continue
        parts, new = path.split("/"), moved.get(path, path).split("/")
        kept = [parts[i] for i in range(_telling_from(parts), len(parts)) if parts[i] == new[i]]
        if set(kept) - {"tests.py", "conftest.py", "__init__.py"}:
            return True
    return False


def _telling_from(parts: Sequence[str]) -> int:
    """The first part of a test suite path that may say what its tests check.

    The folders below its first plain test folder, else only the file's name.
    """
    top = next((i for i, d in enumerate(parts[:-1]) if d in _PLAIN_TEST_DIRS), None)
    return len(parts) - 1 if top is None else top + 1


def probe_ids(files: Mapping[str, str], ids: Sequence[str]) -> list[str]:
    """The node ids the probes of ``files`` give the tests ``ids`` (the task's node ids).

    A parametrized test whose table lost its expected values has opaque case ids in its
    probe (``test_slug[0]`` for ``test_slug[Hello World-hello-world]``): the sandbox never
    sees the original ids, which name the values. Other ids are unchanged.
    """
    out = []
    moved = probe_paths(files)
    for node in ids:
        path = node.partition("::")[0]
        text = files.get(path)
        if text is not None and path.endswith(".py") and is_test_path(path):
            node = probe_module(text).node_id(node)
            node = moved.get(path, path) + node[len(path) :]
        out.append(node)
    return out


@dataclass(frozen=True)
class Reference:
    """What the reference repository does on a task's hidden tests (host side only).

    Attributes:
        passed: Per test id, whether the unchanged test passes on the reference.
        observed: Per test id, the probe's observations on the reference (``None`` when it
            reported none).
        complete: Every probe was complete (see :mod:`rllm_envs.swe.probe`).
        error: Why the reference could not be run (nothing is decided then).
        predicates: Per test id, the checks of plain texts the host runs itself
            (:attr:`rllm_envs.swe.probe.Probe.predicates` of its module).
        blocks: Per test id, what each check's block of its module expects
            (:attr:`rllm_envs.swe.probe.Probe.blocks`).
    """

    passed: dict[str, bool]
    observed: dict[str, Any]
    complete: bool
    error: str | None = None
    predicates: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    blocks: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


_references: OrderedDict[str, Reference] = OrderedDict()
_running: dict[str, threading.Event] = {}
_references_lock = ForkSafeLock()
#: Tasks whose reference outcomes are kept (each is a few kilobytes).
REFERENCE_CACHE = 512


def forget_references() -> None:
    """Drop the cached reference outcomes (the next verdict of each task runs its reference)."""
    with _references_lock:
        _references.clear()


def _parse_observed(result: str) -> Any:
    # The executor passes an ``O`` record on only when the test process's guard signed it
    # (``executor._observations``): one the test's own code wrote is an ``F`` (s12 F3).
    if not result.startswith("O"):
        return None
    try:
        data = json.loads(result[1:])
    except (ValueError, RecursionError):
        return None
    if (
        not isinstance(data, dict)
        or set(data) != {"observed", "end", "module"}
        or not isinstance(data["observed"], list)
        or not isinstance(data["end"], list)
        or not isinstance(data["module"], list)
    ):
        return None
    return data


def reference_outcomes(
    reference: Files,
    ids: Sequence[str],
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_mb: int = 1024,
    backend: str | Backend | None = None,
    warm: bool = True,
) -> Reference:
    """Run the hidden tests ``ids`` on the ``reference`` repository, in sandboxes of its own.

    Two runs, at the same time: the unchanged tests (which must pass) and their probes (whose
    observations a submission's must match). Cached by the repository and the ids; a run the
    sandbox did not finish is not cached.
    """
    ref = _check_files(reference)
    ids = [str(t) for t in ids]
    key = hashlib.sha256(
        json.dumps([sorted(ref.items()), ids, float(time_limit)], ensure_ascii=True).encode()
    ).hexdigest()
    while True:
        with _references_lock:
            cached = _references.get(key)
            if cached is not None:
                _references.move_to_end(key)
                return cached
            running = _running.get(key)
            if running is None:
                # This call runs the reference; the same task's other episodes wait for it
                # (and run it themselves, one at a time, if it failed and was not cached).
                mine = _running[key] = threading.Event()
                break
        running.wait()
    try:
        return _run_reference(ref, ids, key, time_limit, memory_mb, backend, warm)
    finally:
        with _references_lock:
            _running.pop(key, None)
        mine.set()


def _run_reference(
    ref: dict[str, str],
    ids: list[str],
    key: str,
    time_limit: float,
    memory_mb: int,
    backend: str | Backend | None,
    warm: bool,
) -> Reference:
    probes, complete = probe_files(judged_files(ref, ids))
    raw: list[dict[str, Any]] = []
    nonce = secrets.token_hex(16)
    reports: dict[str, RunReport] = {}
    common: dict[str, Any] = dict(
        time_limit=time_limit,
        memory_mb=memory_mb,
        backend=backend,
        warm=warm,
        stop_on_failure=False,
        total_time=None,
    )

    def plain() -> None:
        reports["plain"] = _run_ids(
            ref, ids, nonce, lambda r: _status(r, nonce), observe=False, **common
        )

    worker = threading.Thread(target=plain, name="swe-reference", daemon=True)
    worker.start()
    observed_report = _run_ids(
        probes,
        ids,
        nonce,
        lambda r: ("passed", ""),
        observe=True,
        walk=True,
        raw=raw,
        sandbox_ids=probe_ids(ref, ids),
        **common,
    )
    worker.join()
    plain_report = reports.get("plain")
    error = observed_report.sandbox_error or (
        plain_report.sandbox_error if plain_report else "the reference run did not finish"
    )
    by_id = plain_report.by_id() if plain_report else {}
    passed = {t: t in by_id and by_id[t].passed for t in ids}
    observed = {t: None for t in ids}
    for record in raw:
        if record["id"] in observed and not record["tamper"] and record["code"] == 0:
            observed[record["id"]] = _parse_observed(record["result"])
    predicates, blocks = {}, {}
    for t in ids:
        path = t.partition("::")[0]
        text = ref.get(path)
        if text is not None and path.endswith(".py") and is_test_path(path):
            module = probe_module(text)
            predicates[t], blocks[t] = module.predicates, module.blocks
    result = Reference(passed, observed, complete, error, predicates, blocks)
    # Only a clean run is kept: a test that timed out under load must not stay failed.
    if error is None and all(passed.values()) and all(v is not None for v in observed.values()):
        with _references_lock:
            _references[key] = result
            while len(_references) > REFERENCE_CACHE:
                _references.popitem(last=False)
    return result


def _observed_status(
    record: Mapping[str, Any],
    reference: Reference,
    maps: Mapping[str, tuple[dict[int, int], dict[int, int]]] | None = None,
) -> tuple[str, str]:
    """The host's status for one probe record, against the reference's observations.

    ``maps``: per test module cut to some of its tests, where the cut probe's host-check
    indices are in the whole one's (:func:`rllm_envs.swe.probe.index_map`).
    """
    # A fresh nonce: a pass written in the test process never counts here.
    status, message = _status(record, secrets.token_hex(16))
    if status in ("tampered", "timeout", "crashed"):
        return status, message
    test = record["id"]
    expected = reference.observed.get(test)
    if not reference.passed.get(test) or expected is None:
        return "error", "the reference repository does not pass this test (a broken task)"
    actual = _parse_observed(record["result"])
    if actual is None:
        if status in ("skipped", "error"):
            return status, message
        return "failed", "the test reported no observations"
    path = str(test).partition("::")[0]
    if maps is not None and path in maps:
        try:
            actual = {**actual, "observed": remap_indices(actual["observed"], *maps[path])}
        except RecursionError:
            return "failed", "the test's observations are nested too deeply"
    predicates = reference.predicates.get(test, ())
    blocks = reference.blocks.get(test, ())
    if same_observations(expected, actual, predicates, blocks):
        return "passed", ""
    # Where they first differ, not what the reference computed: feedback must not carry
    # the expected values.
    seen, want = checked(actual["observed"], blocks), checked(expected["observed"], blocks)
    for n, (a, e) in enumerate(zip(seen, want, strict=False), 1):
        if not same_check(e, a, predicates, blocks):
            return "failed", f"check {n} of the test gave a different result than the fix's"
    if len(seen) != len(want):
        return "failed", f"the test made {len(seen)} checks, the fix's {len(want)}"
    return "failed", "the test ended differently than with the fix (" + str(actual["end"])[
        :200
    ] + ")"


def run_probes(
    files: Files,
    tests: Sequence[str],
    reference: Reference,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_mb: int = 1024,
    backend: str | Backend | None = None,
    warm: bool = True,
    stop_on_failure: bool = False,
    total_time: float | None = None,
    secret: Sequence[str] | None = None,
    visible: Files | None = None,
) -> tuple[RunReport, str]:
    """Run the probes of ``tests`` on ``files``; decide each on the host against ``reference``.

    ``secret``: the tests whose expected values must not be readable in the sandbox (the
    fail-to-pass ones; ``None``: every test), see :func:`probe_notes`; ``visible``: the
    repository before the hidden tests (what the agent reads).

    Returns the report and the verdict's trust: ``"host"``, or ``"host_partial"`` when a
    probe is incomplete, or a test's probe stopped
    before its end there (some of its checks then run only in the sandbox's process, or
    not at all; see :mod:`rllm_envs.swe.probe`).
    """
    ids = [str(t) for t in tests]
    checked = _check_files(files)
    notes, alone = _plan(checked, ids, secret, visible)
    decided = all(_decided_on_host(reference, t) for t in ids)
    trust = "host" if not notes and decided else "host_partial"

    def run(modules: Mapping[str, str], some: list[str], cut: bool = False) -> RunReport:
        maps = None
        if cut:
            whole = judged_files(checked, ids)
            maps = {
                path: index_map(probe_module(whole[path]), probe_module(modules[path]))
                for path in {t.partition("::")[0] for t in some}
                if path in modules and path in whole and path.endswith(".py")
            }

        def decide(record: Mapping[str, Any]) -> tuple[str, str]:
            return _observed_status(record, reference, maps)

        return _run_ids(
            probe_files(modules)[0],
            some,
            secrets.token_hex(16),
            decide,
            observe=True,
            sandbox_ids=probe_ids(modules, some),
            time_limit=time_limit,
            memory_mb=memory_mb,
            backend=backend,
            warm=warm,
            stop_on_failure=stop_on_failure,
            total_time=total_time,
        )

    if alone is None:
        return run(judged_files(checked, ids), ids), trust
    # The fail-to-pass tests alone (their expected values are other tests' inputs), then
    # the rest: two sandboxes, no state between them.
    first = [t for t in ids if t in set(secret or ())]
    rest = [t for t in ids if t not in set(first)]
    reports = [run(alone, first, cut=True), run(judged_files(checked, rest), rest)]
    outcomes = {o.id: o for r in reports for o in r.outcomes}
    failed = [r for r in reports if r.sandbox_status is not Status.OK or r.sandbox_error]
    return (
        RunReport(
            [outcomes[t] for t in ids if t in outcomes],
            failed[0].sandbox_status if failed else Status.OK,
            "; ".join(r.sandbox_error for r in failed if r.sandbox_error) or None,
        ),
        trust,
    )


def verdict(
    base: Files,
    diff: str,
    *,
    test_patch: str,
    fail_to_pass: Sequence[str],
    pass_to_pass: Sequence[str] = (),
    time_limit: float = DEFAULT_TIME_LIMIT,
    memory_mb: int = 1024,
    backend: str | Backend | None = None,
    warm: bool = True,
    stop_on_failure: bool = False,
    total_time: float | None = None,
    reference_patch: str | None = None,
    unshown: Sequence[str] | None = None,
) -> Verdict:
    """Judge a submission's diff on the hidden tests, in a fresh sandbox.

    With a ``reference_patch`` (the task's fix; see the module docstring) the hidden tests run
    as probes and each verdict is the host's comparison of the submission's observations
    with the reference's; without one, each test's pass is decided in the sandbox's process
    (``verdict_trust="in_process"``).

    The fail-to-pass tests run first. With ``stop_on_failure`` the run ends at the first
    test that does not pass (the verdict is then decided; the fractions count the rest as
    failed); ``total_time`` bounds the whole run (see :func:`run_tests`).

    Raises:
        PatchError: Only if the task's own ``test_patch`` does not apply, or changes Python
            modules outside the test suite (a broken task); a submission whose diff does not
            apply is an unresolved :class:`Verdict`.
    """
    if not fail_to_pass:
        raise InvalidEnvConfig("A SWE task needs at least one FAIL_TO_PASS test.")
    outside = modules_outside_tests(test_patch)
    if outside:
        raise PatchError(
            f"The task's test_patch changes Python modules outside the test suite "
            f"({outside[:3]!r}): the judge reads only the test suite's code."
        )
    try:
        files, dropped = final_files(base, diff, "")
    except PatchError as e:
        return Verdict(False, 0.0, 0.0, applied=False, error=str(e))
    _put_test_patch(files, base, test_patch)
    ids = [*fail_to_pass, *pass_to_pass]
    trust = "in_process"
    weakened: tuple[str, ...] = ()
    failing: tuple[str, ...] = ()
    if reference_patch and reference_patch.strip():
        try:
            reference_files, _ = final_files(base, reference_patch, test_patch)
        except PatchError as e:
            raise InvalidEnvConfig(f"The task's reference patch does not apply: {e}") from e
        reference = reference_outcomes(
            reference_files,
            ids,
            time_limit=time_limit,
            memory_mb=memory_mb,
            backend=backend,
            warm=warm,
        )
        if reference.error is not None:
            failed = RunReport(
                [TestOutcome(t, "missing", "the reference run failed") for t in ids],
                Status.OK,
                "the reference run failed: " + reference.error,
            )
            return Verdict(
                False,
                0.0,
                0.0,
                dropped=dropped,
                report=failed,
                error=failed.sandbox_error,
                verdict_trust="host",
            )
        failing = tuple(t for t in ids if reference.passed.get(t) is False)
        if failing:
            # A test the reference repository fails is a broken record (SWE-bench validates
            # its records so): a pass-to-pass one is not judged (it would zero every
            # episode, the oracle's too), and each is reported (info, one warning per task).
            pass_to_pass = [t for t in pass_to_pass if t not in failing]
            ids = [*fail_to_pass, *pass_to_pass]
            _warn_reference_failing(failing, fail_to_pass)
        weakened = _plan(_check_files(files), ids, fail_to_pass, base)[0]
        if any(_operated(reference.observed.get(t)) for t in ids):
            weakened += (NOTE_OPERATED,)
        elif not all(_ran_through(reference.observed.get(t)) for t in ids):
            weakened += (NOTE_PROBE_STOPPED,)
        elif not all(_sound(reference, t) for t in ids):
            weakened += (NOTE_PROBE_BROKEN,)
        module_echo = _module_echo(files, reference, fail_to_pass)
        if module_echo:
            weakened += (NOTE_MODULE_ECHO,)
        report, trust = run_probes(
            files,
            ids,
            reference,
            time_limit=time_limit,
            memory_mb=memory_mb,
            backend=backend,
            warm=warm,
            stop_on_failure=stop_on_failure,
            total_time=total_time,
            secret=fail_to_pass,
            visible=base,
        )
        if module_echo:
            trust = "host_partial"
    else:
        report = run_tests(
            files,
            ids,
            time_limit=time_limit,
            memory_mb=memory_mb,
            backend=backend,
            warm=warm,
            stop_on_failure=stop_on_failure,
            total_time=total_time,
        )
    by_id = report.by_id()
    f2p = sum(by_id[t].passed for t in fail_to_pass) / len(fail_to_pass)
    p2p = sum(by_id[t].passed for t in pass_to_pass) / len(pass_to_pass) if pass_to_pass else 1.0
    counted = list(fail_to_pass if unshown is None else unshown)
    credit = sum(by_id[t].passed for t in counted) / len(counted) if counted else float(f2p == 1.0)
    # Never more than the share of all fail-to-pass tests: a task whose unshown cases all
    # belong to one of its bugs (the other's raise on the buggy code, which pay nothing) would
    # otherwise pay 1.0 for fixing that bug alone.
    credit = min(credit, f2p)
    tampering = any(o.status == "tampered" for o in report.outcomes)
    if tampering:
        f2p = p2p = credit = 0.0
    return Verdict(
        unshown_passed=credit,
        resolved=f2p == 1.0 and p2p == 1.0,
        fail_to_pass=f2p,
        pass_to_pass=p2p,
        dropped=dropped,
        report=report,
        error=report.sandbox_error,
        tampering=tampering,
        verdict_trust=trust,
        weakened=weakened if trust == "host_partial" else (),
        reference_failing=failing,
    )


_warned: set[tuple[str, ...]] = set()


def _warn_reference_failing(failing: tuple[str, ...], fail_to_pass: Sequence[str]) -> None:
    """One warning per task: tests the reference repository fails (a broken record)."""
    with _references_lock:
        if failing in _warned:
            return
        _warned.add(failing)
    hidden = [t for t in failing if t in fail_to_pass]
    what = (
        f"{len(hidden)} FAIL_TO_PASS test(s) fail on the reference: no submission can "
        "resolve this task; "
        if hidden
        else ""
    )
    warnings.warn(
        f"A SWE task's reference repository fails {len(failing)} of its tests ({what}the "
        f"PASS_TO_PASS ones are not judged): {list(failing)[:10]}. The usual causes: a "
        "dependency the sandbox's interpreter lacks, or a pytest feature the judge's runner "
        "does not have (parametrized fixtures, `::` inside a parametrize id, plugins; see "
        "docs/environments.md); see info['reference_failing_tests'].",
        stacklevel=3,
    )


#: The ways a verdict not decided wholly on the host (``verdict_trust`` other than
#: ``"host"``) is paid: ``"withhold"`` (0, the default) or ``"pay"`` (as a host verdict).
PARTIAL_VERDICTS = ("withhold", "pay")


def check_partial_verdicts(value: object) -> str:
    """``value`` when it is one of :data:`PARTIAL_VERDICTS`; else InvalidEnvConfig."""
    if value not in PARTIAL_VERDICTS:
        raise InvalidEnvConfig(
            f"Expects `partial_verdicts` to be one of {PARTIAL_VERDICTS}, actual: {value!r}."
        )
    return str(value)


def withheld(result: Verdict, partial_credit: bool, partial_verdicts: str = "withhold") -> str:
    """Why the reward of ``result`` is withheld (``""`` when it is not).

    A verdict that is not ``"host"`` keeps some decisions in the process that runs the
    submission (``"host_partial"``: expected values left in the probe or checks the sandbox
    decides; ``"in_process"``: no reference patch), where a submission can read or forge
    them; with ``partial_verdicts="withhold"`` (the default) such a verdict pays 0.
    """
    check_partial_verdicts(partial_verdicts)
    if partial_verdicts == "pay" or result.verdict_trust == "host":
        return ""
    if _paid(result, partial_credit) == 0.0:
        return ""
    return _withheld_because(result.verdict_trust, result.weakened)


def _withheld_because(trust: str, weakened: Sequence[str]) -> str:
    if trust == "host_partial":
        why = "; ".join(weakened) or "some checks are decided in the sandbox"
        return (
            "The reward is withheld: the verdict is host_partial (some hidden checks keep "
            f"their expected values or decision in the sandbox: {why}); pass "
            'partial_verdicts="pay" to pay such verdicts.'
        )
    return (
        "The reward is withheld: the task has no reference patch, so each test's pass was "
        'decided in the sandbox that ran the submission (in_process); pass partial_verdicts="pay" '
        "to pay such verdicts."
    )


def _put_test_patch(files: dict[str, str], base: Files, test_patch: str) -> None:
    """Put the files ``test_patch`` makes of ``base`` into ``files`` (the hidden tests)."""
    for path, text in apply_diff(base, test_patch).items() if test_patch.strip() else ():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text


def never_paid(task: Mapping[str, Any], base: Files) -> str:
    """Why no verdict on ``task`` can pay under ``partial_verdicts="withhold"`` (``""``: one may).

    Read from the task alone, before any submission: a task without a reference patch is
    always judged ``"in_process"``, and one whose hidden tests (after its ``test_patch``)
    hold checks the probes leave to the sandbox (:func:`probe_notes` of the modules its tests
    load) is always ``"host_partial"``, whatever is submitted.
    """
    if not str(task.get("patch") or "").strip():
        return _withheld_because("in_process", ())
    files = _check_files(base)
    _put_test_patch(files, base, str(task.get("test_patch") or ""))
    ids = [*task["FAIL_TO_PASS"], *(task.get("PASS_TO_PASS") or ())]
    notes = _plan(files, ids, task["FAIL_TO_PASS"], base)[0]
    return _withheld_because("host_partial", notes) if notes else ""


def score(
    answer: str | None,
    task: Mapping[str, Any],
    *,
    partial_credit: bool = False,
    backend: str | Backend | None = None,
    partial_verdicts: str = "withhold",
) -> float:
    """Score a submission (a unified diff against the task's base) on a SWE task.

    Returns 1.0 when the task is resolved, else 0.0; with ``partial_credit``, the fraction
    of the task's unshown fail-to-pass tests (``FAIL_TO_PASS_UNSHOWN``, default all) that
    pass when no pass-to-pass test breaks. A verdict whose
    ``verdict_trust`` is not ``"host"`` scores 0 unless ``partial_verdicts="pay"`` (see
    :func:`withheld`).
    """
    from rllm_envs.swe.tasks import base_files

    check_partial_verdicts(partial_verdicts)
    if not answer or not isinstance(answer, str):
        return 0.0
    result = verdict(
        base_files(task),
        answer,
        test_patch=str(task.get("test_patch") or ""),
        fail_to_pass=list(task["FAIL_TO_PASS"]),
        pass_to_pass=list(task.get("PASS_TO_PASS") or ()),
        backend=backend,
        stop_on_failure=not partial_credit,
        reference_patch=str(task.get("patch") or ""),
        unshown=task.get("FAIL_TO_PASS_UNSHOWN"),
    )
    return reward_of(result, partial_credit, partial_verdicts)


def reward_of(result: Verdict, partial_credit: bool, partial_verdicts: str = "withhold") -> float:
    """The ``resolved`` reward component of a verdict (see :func:`score`)."""
    if withheld(result, partial_credit, partial_verdicts):
        return 0.0
    return _paid(result, partial_credit)


def _paid(result: Verdict, partial_credit: bool) -> float:
    if result.tampering:
        return 0.0
    if partial_credit:
        return result.unshown_passed if result.pass_to_pass == 1.0 else 0.0
    return float(result.resolved)
