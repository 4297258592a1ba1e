"""Every performance benchmark still runs (timing disabled, one round each), in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH_FILES = sorted((ROOT / "benchmarks" / "perf").glob("bench_*.py"))


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
            "-p",
            "no:cacheprovider",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
