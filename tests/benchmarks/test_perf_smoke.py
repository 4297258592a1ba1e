"""Every performance benchmark still runs (timing disabled, one round each), in a subprocess.

A skipped benchmark fails here: an ``importorskip`` at module level (or a fixture's skip) would
otherwise pass with nothing run. The reasons are in the failure message.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rllm_adapters.trainer.distributed import child_env

ROOT = Path(__file__).resolve().parents[2]
BENCH_FILES = sorted((ROOT / "benchmarks" / "perf").glob("bench_*.py"))
#: What the smoke run of a file selects, where not all: the gateway benchmark's SmolLM2 rows
#: run the tiny model's code once more on a larger engine (they took half of its 3.7 minutes);
#: one of them still runs: recorded sessions on SmolLM2.
SMOKE_SELECT = {"bench_gateway": "tiny or recorded_against"}


@pytest.mark.parametrize("path", BENCH_FILES, ids=[p.stem for p in BENCH_FILES])
def test_benchmark_file_runs(path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(path),
            "--benchmark-disable",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            *(["-k", SMOKE_SELECT[path.stem]] if path.stem in SMOKE_SELECT else []),
        ],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    if path.stem == "bench_litellm" and not os.environ.get("RLLM_LITELLM_PYTHON"):
        # LiteLLM is no dependency: the file runs only when given a Python that has it.
        assert any("RLLM_LITELLM_PYTHON" in line for line in lines), result.stdout[-3000:]
        return
    summary = next((line for line in reversed(lines) if re.search(r"\d+ passed", line)), "")
    skips = [line for line in lines if line.startswith("SKIPPED") or " skipped" in line]
    assert summary and not skips, f"{path.name} ran nothing or skipped:\n" + "\n".join(skips)
