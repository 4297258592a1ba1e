"""Run the whole performance suite and print one table of ratios against their baselines.

``python -m benchmarks.perf [-k EXPR] [--out FILE]`` runs every ``benchmarks/perf/bench_*.py``
with pytest-benchmark; the ratio table is printed at the end and saved as JSON (default
``benchmarks/results/latest.json``) so runs can be compared.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import pytest


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.perf``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.perf", description=__doc__)
    parser.add_argument("-k", default=None, help="only benchmarks matching this pytest -k expr")
    parser.add_argument("--out", type=Path, default=None, help="where to save the ratio JSON")
    args, rest = parser.parse_known_args(argv)
    if args.out is not None:
        os.environ["RLLM_BENCH_OUT"] = str(args.out)
    here = Path(__file__).resolve().parent
    pytest_args = [str(here), "--benchmark-only", "-q", "-p", "no:cacheprovider", *rest]
    if args.k:
        pytest_args += ["-k", args.k]
    return int(pytest.main(pytest_args))


if __name__ == "__main__":
    sys.exit(main())
