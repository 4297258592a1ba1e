"""Per-run cost of the sandbox vs a bare interpreter start.

Baseline: ``/usr/bin/python3 -c 'print(1)'`` started with ``subprocess.run`` (what any
runner pays at least). Each backend runs the same program through
:func:`rllm_envs.sandbox.run` (start-up, limits, the bootstrap reading the code from stdin,
output capture, killing the process group). Backends that cannot run here are skipped.

Ratios are of medians (robust on a shared machine); the absolute overhead per run in ms is
in ``extra_info["overhead_ms"]``.

``test_sandbox_run_host_cpu_per_judged_step`` measures the judging process's own CPU time
(``time.process_time``: reading the report channel, comparing, starting the pool's
replacement sandbox) per judged step of 5 stdin tests, for the reference solution and for
a submission that prints 16 MB of decimal tokens per test; ``host_cpu_ms`` is the median.
"""

from __future__ import annotations

import subprocess
import warnings

import pytest

from rllm_envs.sandbox import SandboxPool, SandboxUnavailable, run, select_backend

#: Goal (median time ratio vs a bare start) of one sandboxed run, cold and warm (a pool):
#: the reward-integrity issue's <= 2x. Firejail's own set-up (a setuid helper, mount
#: namespace, seccomp compile) costs more than that cold; the table reports it honestly.
GOAL = 2.0
_MEDIANS: dict[str, float] = {}


def test_bare_python_start(benchmark):
    def bare():
        subprocess.run(["/usr/bin/python3", "-c", "print(1)"], capture_output=True, check=True)

    benchmark.pedantic(bare, rounds=40, iterations=1, warmup_rounds=2)
    _MEDIANS["bare"] = benchmark.stats.stats.median if benchmark.stats else 0.0


@pytest.mark.parametrize("backend", ["firejail", "bubblewrap", "plain"])
def test_sandbox_run(benchmark, backend):
    try:
        select_backend(backend)
    except SandboxUnavailable as e:
        pytest.skip(str(e))

    def sandboxed():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the plain backend's warning
            result = run("print(1)", backend=backend)
        assert result.ok and result.stdout == "1\n", result

    benchmark.pedantic(sandboxed, rounds=40, iterations=1, warmup_rounds=2)
    _report(benchmark)


@pytest.mark.parametrize("backend", ["firejail", "bubblewrap"])
def test_sandbox_run_warm(benchmark, backend):
    """The same run in a sandbox started ahead of time (each round waits for it, untimed)."""
    try:
        select_backend(backend)
    except SandboxUnavailable as e:
        pytest.skip(str(e))
    with SandboxPool(1, backend=backend) as pool:

        def pooled():
            result = pool.run("print(1)")
            assert result.ok and result.stdout == "1\n", result

        def started() -> None:
            assert pool.wait_ready(30), "the pool did not start"

        benchmark.pedantic(pooled, setup=started, rounds=40, iterations=1, warmup_rounds=2)
    _report(benchmark)


def _report(benchmark) -> None:
    if benchmark.stats and _MEDIANS.get("bare"):
        median = benchmark.stats.stats.median
        benchmark.extra_info.update(
            baseline="test_bare_python_start",
            ratio=median / _MEDIANS["bare"],
            goal=GOAL,
            overhead_ms=round((median - _MEDIANS["bare"]) * 1000, 1),
        )


# ---------------------------------------------------------------- host CPU per judged step

#: A submission that prints 16 MB of decimal tokens on one line (the output cap is 16 MiB)
#: for a one-number answer: the host's cost of judging it must stay near a correct one's.
FLOOD = "print(' '.join(['1.5'] * 4_000_000))\n"
REFERENCE = "a, b = map(int, input().split())\nprint(a + b)\n"


@pytest.mark.parametrize("case", ["reference", "flood"])
def test_sandbox_run_host_cpu_per_judged_step(benchmark, case):
    """Host CPU (this process, all threads: reading the channel, comparing, the pool's
    replacement start) per judged step of 5 stdin tests, warm, the auto backend."""
    import time

    from rllm_envs.code.judge import TestCase, judge, warm_up

    try:
        select_backend()
    except SandboxUnavailable as e:
        pytest.skip(str(e))
    tests = [TestCase(f"{i} {i}\n", f"{2 * i}\n") for i in range(5)]
    code = REFERENCE if case == "reference" else FLOOD
    cpu: list[float] = []

    def step() -> None:
        before = time.process_time()
        result = judge(code, tests, stop_on_failure=False)
        cpu.append(time.process_time() - before)
        assert result.all_passed == (case == "reference"), result.verdicts

    def started() -> None:
        assert warm_up(timeout=60), "the judging pool did not start"

    benchmark.pedantic(step, setup=started, rounds=8, iterations=1)
    median = sorted(cpu)[len(cpu) // 2]
    benchmark.extra_info["host_cpu_ms"] = round(median * 1000, 2)
    if _MEDIANS.get("bare"):
        # Against a bare interpreter start's wall time: a scale, not a goal.
        benchmark.extra_info.update(
            baseline="test_bare_python_start",
            metric="host_cpu_vs_bare_wall",
            ratio=median / _MEDIANS["bare"],
        )
