"""SWE judging cost: a full verdict against running the same tests with pytest, no sandbox.

* ``test_swe_pytest_direct`` (the baseline): the repository the verdict judges (base, the
  reference patch and the hidden tests) written to a folder once, then
  ``python -m pytest <the fail-to-pass and pass-to-pass ids>`` run on it directly, with no
  sandbox, pytest's cache off and no third-party plugins loaded (the leanest pytest run).
* ``test_swe_verdict_warm``: :func:`rllm_envs.swe.judge.verdict` the default way -- the
  submission's diff applied to a pristine copy, test changes dropped, the hidden tests
  placed as probes, every test in its own process inside a sandbox started ahead of time
  (each round waits until it is started; the wait is not timed), each verdict the host's
  comparison of the observed values with the reference's (computed once per task, cached;
  warmed before the rounds). Goal: <= 2x the baseline.
* ``test_swe_verdict_first``: the same for a task seen for the first time: the reference's
  two runs (unchanged tests and probes, at the same time) come first; no goal.
* ``test_swe_verdict_cold``: the warm verdict with ``warm=False`` (the sandbox start is
  timed).
* ``test_swe_verdict_in_process``: the warm verdict without the reference: the unchanged
  tests, each pass decided in the test's process (the fallback for tasks without a
  reference patch); no goal, for comparison.
* ``test_swe_episode_oracle``: ``reset`` and the oracle's one reply (apply the patch,
  submit) through the env, warm; no goal.

The repository is an embedded task at difficulty 3 (four modules and their tests). Ratios
are of medians (robust on a shared machine).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.perf._ratios import median_ratio, record
from rllm_envs.sandbox import SandboxUnavailable, select_backend
from rllm_envs.swe import judge
from rllm_envs.swe.swe_env import SWEEnv
from rllm_envs.swe.tasks import generate
from rllm_envs.tasks import task_rng

TASK = generate(task_rng(0, 1), difficulty=3)
IDS = [*TASK["FAIL_TO_PASS"], *TASK["PASS_TO_PASS"]]


@pytest.fixture(scope="module", autouse=True)
def sandbox():
    try:
        backend = select_backend()
    except SandboxUnavailable as e:
        pytest.skip(str(e))
    yield backend
    judge.close_pools()


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("swe_repo")
    files, _ = judge.final_files(TASK["files"], TASK["patch"], TASK["test_patch"])
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return root


def _warm() -> None:
    judge.warm_up()


def _verdict(warm: bool, reference: bool = True) -> None:
    result = judge.verdict(
        TASK["files"],
        TASK["patch"],
        test_patch=TASK["test_patch"],
        fail_to_pass=TASK["FAIL_TO_PASS"],
        pass_to_pass=TASK["PASS_TO_PASS"],
        warm=warm,
        reference_patch=TASK["patch"] if reference else None,
    )
    assert result.resolved, result.report.summary() if result.report else result.error
    assert result.verdict_trust == ("host" if reference else "in_process")


def _warm_first() -> None:
    judge.forget_references()
    judge.warm_up()


def test_swe_pytest_direct(benchmark, checkout):
    def direct() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *IDS],
            cwd=checkout,
            env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stdout[-2000:]

    benchmark.extra_info.update(tests=len(IDS))
    benchmark.pedantic(direct, rounds=7, warmup_rounds=1)
    record(benchmark)


def test_swe_verdict_warm(benchmark):
    benchmark.extra_info.update(
        baseline="test_swe_pytest_direct", metric="time_ratio", goal=2, tests=len(IDS)
    )
    benchmark.pedantic(lambda: _verdict(True), setup=_warm, rounds=7, warmup_rounds=1)
    median_ratio(benchmark)


def test_swe_verdict_first(benchmark):
    benchmark.extra_info.update(baseline="test_swe_pytest_direct", metric="time_ratio")
    benchmark.pedantic(lambda: _verdict(True), setup=_warm_first, rounds=5, warmup_rounds=1)
    median_ratio(benchmark)


def test_swe_verdict_cold(benchmark):
    benchmark.extra_info.update(baseline="test_swe_pytest_direct", metric="time_ratio")
    benchmark.pedantic(lambda: _verdict(False), rounds=5, warmup_rounds=1)
    median_ratio(benchmark)


def test_swe_verdict_in_process(benchmark):
    benchmark.extra_info.update(baseline="test_swe_pytest_direct", metric="time_ratio")
    benchmark.pedantic(lambda: _verdict(True, False), setup=_warm, rounds=7, warmup_rounds=1)
    median_ratio(benchmark)


def test_swe_episode_oracle(benchmark):
    env = SWEEnv(difficulty=3)

    def episode() -> None:
        env.reset(options={"index": 1})
        *_, reward, terminated, _, _ = env.step(env.unwrapped.oracle_action())
        assert reward == 1.0 and terminated

    benchmark.extra_info.update(baseline="test_swe_pytest_direct", metric="time_ratio")
    benchmark.pedantic(episode, setup=_warm, rounds=5, warmup_rounds=1)
    median_ratio(benchmark)
