"""Judging cost: a 20-test stdin problem in one sandbox, and throughput with 2 workers.

* ``test_judge_20_stdin_tests`` judges a correct submission on 20 stdin tests (one sandboxed
  process; the harness forks per test) against one bare ``python3`` start, with the
  default (auto-selected) backend and with each backend. Goal: <= 3x.
* ``test_judge_throughput_2_workers`` judges 8 submissions with 2 threads against the same 8
  one after another (``test_judge_sequential``). Goal: a speed-up of at least 1.5.

Ratios are of medians (robust on a shared machine).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest

from rllm_envs.code.judge import TestCase, judge
from rllm_envs.sandbox import SandboxUnavailable, select_backend

CODE = "a, b = map(int, input().split())\nprint(a + b)\n"
TESTS = [TestCase(f"{i} {i * 7}\n", f"{i * 8}\n") for i in range(20)]
SUBMISSIONS = 8
_MEDIANS: dict[str, float] = {}


@pytest.fixture(scope="module", autouse=True)
def sandbox():
    try:
        return select_backend()
    except SandboxUnavailable as e:
        pytest.skip(str(e))


def _judge_one(_: int = 0, backend: str | None = None) -> None:
    result = judge(CODE, TESTS, backend=backend)
    assert result.all_passed, result.verdicts


def _median(benchmark) -> float:
    return benchmark.stats.stats.median if benchmark.stats else 0.0


def test_bare_python_start_for_judge(benchmark):
    def bare():
        subprocess.run(["/usr/bin/python3", "-c", "print(1)"], capture_output=True, check=True)

    benchmark.pedantic(bare, rounds=40, iterations=1, warmup_rounds=2)
    _MEDIANS["bare"] = _median(benchmark)


@pytest.mark.parametrize("backend", [None, "firejail", "bubblewrap"], ids=["auto", "fj", "bwrap"])
def test_judge_20_stdin_tests(benchmark, backend):
    if backend is not None:
        try:
            select_backend(backend)
        except SandboxUnavailable as e:
            pytest.skip(str(e))
    benchmark.pedantic(lambda: _judge_one(backend=backend), rounds=20, iterations=1)
    if _MEDIANS.get("bare") and benchmark.stats:
        benchmark.extra_info.update(
            baseline="test_bare_python_start_for_judge",
            ratio=_median(benchmark) / _MEDIANS["bare"],
            goal=3,
            per_test_ms=round(_median(benchmark) * 1000 / len(TESTS), 2),
        )


def test_judge_sequential(benchmark):
    def sequential():
        for i in range(SUBMISSIONS):
            _judge_one(i)

    benchmark.pedantic(sequential, rounds=3, iterations=1)


def test_judge_throughput_2_workers(benchmark):
    benchmark.extra_info.update(baseline="test_judge_sequential", metric="speedup", goal=1.5)

    def parallel():
        with ThreadPoolExecutor(max_workers=2) as pool:
            list(pool.map(_judge_one, range(SUBMISSIONS)))

    benchmark.pedantic(parallel, rounds=3, iterations=1)
    if benchmark.stats:
        benchmark.extra_info["submissions_per_s"] = round(SUBMISSIONS / _median(benchmark), 1)
