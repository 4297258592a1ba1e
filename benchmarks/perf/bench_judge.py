"""Judging cost: a 20-test stdin problem in one sandbox, and throughput with 2 workers.

* ``test_judge_20_stdin_tests`` judges a correct submission on 20 stdin tests the default
  way -- a sandbox started ahead of time by the judge's pool (each round waits until it is
  started; the wait is not timed), all tests in one sandbox, one fresh process each --
  against one bare ``python3`` start, with the auto-selected backend and with each backend.
  Goal: <= 3x. The pool (two sandboxes) starts the used one's replacement once the
  judgement ends, so the start does not compete with it for the 2 cores; judging back to
  back, it overlaps the next judgement instead.
* ``test_judge_20_stdin_tests_cold`` is the same with ``warm=False``: the sandbox start is
  on the critical path (firejail's start alone costs about 4 bare starts here).
* ``test_judge_20_stdin_tests_cpp`` judges a correct C++ submission on the same 20 tests
  (compiled once inside the sandbox with ``g++ -O2``, one process per test) against the
  same bare start; no goal. ``compile_ms``: the median compile time the judge reports.
* ``test_judge_throughput_2_workers`` judges 8 submissions with 2 threads the default way,
  against the same 8 judged one after another with a sandbox started per submission
  (``test_judge_sequential_cold``, the plain way). ``test_judge_sequential`` (one thread,
  default way) is shown too. On 2 cores starting sandboxes is what bounds throughput, so
  the pool's background starts already use the second core with one thread.

Ratios are of medians (robust on a shared machine).
"""

from __future__ import annotations

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from rllm_envs.code.judge import TestCase, judge, warm_up
from rllm_envs.sandbox import SandboxUnavailable, select_backend
from rllm_envs.sandbox.harness import CXX

CODE = "a, b = map(int, input().split())\nprint(a + b)\n"
TESTS = [TestCase(f"{i} {i * 7}\n", f"{i * 8}\n") for i in range(20)]
SUBMISSIONS = 8
BACKENDS = pytest.mark.parametrize(
    "backend", [None, "firejail", "bubblewrap"], ids=["auto", "fj", "bwrap"]
)
_MEDIANS: dict[str, float] = {}


@pytest.fixture(scope="module", autouse=True)
def sandbox():
    try:
        return select_backend()
    except SandboxUnavailable as e:
        pytest.skip(str(e))


def _usable(backend: str | None) -> None:
    if backend is not None:
        try:
            select_backend(backend)
        except SandboxUnavailable as e:
            pytest.skip(str(e))


def _judge_one(_: int = 0, backend: str | None = None, warm: bool = True) -> None:
    result = judge(CODE, TESTS, backend=backend, warm=warm)
    assert result.all_passed, result.verdicts


def _median(benchmark) -> float:
    return benchmark.stats.stats.median if benchmark.stats else 0.0


def _ratio_to_bare(benchmark, goal: float | None) -> None:
    if _MEDIANS.get("bare") and benchmark.stats:
        benchmark.extra_info.update(
            baseline="test_bare_python_start_for_judge",
            ratio=_median(benchmark) / _MEDIANS["bare"],
            per_test_ms=round(_median(benchmark) * 1000 / len(TESTS), 2),
        )
        if goal is not None:
            benchmark.extra_info["goal"] = goal


def test_bare_python_start_for_judge(benchmark):
    def bare():
        subprocess.run(["/usr/bin/python3", "-c", "print(1)"], capture_output=True, check=True)

    benchmark.pedantic(bare, rounds=40, iterations=1, warmup_rounds=2)
    _MEDIANS["bare"] = _median(benchmark)


@BACKENDS
def test_judge_20_stdin_tests(benchmark, backend):
    _usable(backend)

    def started() -> None:
        assert warm_up(backend, timeout=60), "the judging pool did not start"

    benchmark.pedantic(lambda: _judge_one(backend=backend), setup=started, rounds=20)
    _ratio_to_bare(benchmark, goal=3)


@BACKENDS
def test_judge_20_stdin_tests_cold(benchmark, backend):
    _usable(backend)
    benchmark.pedantic(lambda: _judge_one(backend=backend, warm=False), rounds=20)
    _ratio_to_bare(benchmark, goal=6)


CPP_CODE = """
#include <bits/stdc++.h>
int main() { long long a, b; std::cin >> a >> b; std::cout << a + b << "\\n"; }
"""


def test_judge_20_stdin_tests_cpp(benchmark):
    if not os.path.exists(CXX):
        pytest.skip(f"{CXX} missing: `apt-get install g++`")
    compile_s: list[float] = []

    def started() -> None:
        assert warm_up(timeout=60), "the judging pool did not start"

    def one() -> None:
        result = judge(CPP_CODE, TESTS, language="cpp")
        assert result.all_passed, result.verdicts
        compile_s.append(result.extra["compile_time"])

    benchmark.pedantic(one, setup=started, rounds=10)
    _ratio_to_bare(benchmark, goal=None)
    if compile_s:
        benchmark.extra_info["compile_ms"] = round(sorted(compile_s)[len(compile_s) // 2] * 1000)


def test_judge_sequential_cold(benchmark):
    def sequential():
        for i in range(SUBMISSIONS):
            _judge_one(i, warm=False)

    benchmark.pedantic(sequential, rounds=3, iterations=1)


def test_judge_sequential(benchmark):
    def sequential():
        for i in range(SUBMISSIONS):
            _judge_one(i)

    benchmark.pedantic(sequential, rounds=3, iterations=1)
    if benchmark.stats:
        benchmark.extra_info["submissions_per_s"] = round(SUBMISSIONS / _median(benchmark), 1)


def test_judge_throughput_2_workers(benchmark):
    benchmark.extra_info.update(baseline="test_judge_sequential_cold", metric="speedup", goal=1.5)

    def parallel():
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(_judge_one, range(SUBMISSIONS)))

    benchmark.pedantic(parallel, rounds=3, iterations=1)
    if benchmark.stats:
        benchmark.extra_info["submissions_per_s"] = round(SUBMISSIONS / _median(benchmark), 1)
