"""Per-run cost of the sandbox vs a bare interpreter start.

Baseline: ``/usr/bin/python3 -c 'print(1)'`` started with ``subprocess.run`` (what any
runner pays at least). Each backend runs the same program through
:func:`rllm_envs.sandbox.run` (start-up, limits, the bootstrap reading the code from stdin,
output capture, killing the process group). Backends that cannot run here are skipped.

Ratios are of medians (robust on a shared machine); the absolute overhead per run in ms is
in ``extra_info["overhead_ms"]``.
"""

from __future__ import annotations

import subprocess
import warnings

import pytest

from rllm_envs.sandbox import SandboxUnavailable, run, select_backend

#: Goals (median time ratio vs a bare start): firejail sets up more than bubblewrap.
GOALS = {"firejail": 6.0, "bubblewrap": 4.0, "plain": 2.5}
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
    if benchmark.stats and _MEDIANS.get("bare"):
        median = benchmark.stats.stats.median
        benchmark.extra_info.update(
            baseline="test_bare_python_start",
            ratio=median / _MEDIANS["bare"],
            goal=GOALS[backend],
            overhead_ms=round((median - _MEDIANS["bare"]) * 1000, 1),
        )
