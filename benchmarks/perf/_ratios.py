"""Ratios of medians between a benchmark and its baseline measured earlier in the same run.

``conftest.py`` divides means; on a machine shared with other jobs a few rounds slowed by
someone else's work move a microsecond mean several-fold, while the median stays put. A
benchmark that calls :func:`record` after timing stores its median; one that calls
:func:`median_ratio` after timing sets ``extra_info["ratio"]`` (which the report uses as is)
from its median and its baseline's, with both medians in ``extra_info``. If the baseline did
not run (``-k`` left it out), nothing is set and the report falls back to the means.
"""

from __future__ import annotations

import statistics
from typing import Any

from benchmarks.provenance import load_1m

_MEDIANS: dict[str, float] = {}


def record(benchmark: Any) -> float | None:
    """Store this benchmark's median (seconds); ``None`` when timing is disabled."""
    if not benchmark.stats:  # --benchmark-disable (the smoke test) times nothing
        return None
    median = float(benchmark.stats.stats.median)
    _MEDIANS[benchmark.name] = median
    benchmark.extra_info["median_s"] = median
    # The suite records the load once, at the end; other jobs come and go on a shared machine.
    benchmark.extra_info["load_1m"] = load_1m()
    work = benchmark.extra_info.get("work")
    if work:  # the same work per call on both sides, so rates compare like the times
        benchmark.extra_info["per_s"] = round(work[0] / median, 1)
    return median


def median_ratio(benchmark: Any) -> None:
    """Set ``extra_info["ratio"]`` from this median and the named baseline's median."""
    median = record(benchmark)
    info = benchmark.extra_info
    base = _MEDIANS.get(info.get("baseline", ""))
    if median is None or base is None:
        return
    info["baseline_median_s"] = base
    work = info.get("work")
    if work:
        info["baseline_per_s"] = round(work[0] / base, 1)
    speed = info.get("metric") in ("speedup", "throughput_ratio")
    info["ratio"] = base / median if speed else median / base
    info["ratio_of"] = "medians"


def paired_ratio(
    benchmark: Any, ours_s: list[float], base_s: list[float], *, digits: int = 3
) -> None:
    """Set the throughput ratio of alternating rounds: the baseline's median over ours.

    For benchmarks that time their own rounds in pairs (a baseline round next to one of ours,
    so both run under the same load from other jobs). The lists exclude the warm-up pair;
    ``extra_info["work"]`` gives the work per round.
    """
    work = benchmark.extra_info["work"][0]
    median, base = statistics.median(ours_s), statistics.median(base_s)
    benchmark.extra_info.update(
        median_s=median,
        baseline_median_s=base,
        per_s=round(work / median, 1),
        baseline_per_s=round(work / base, 1),
        ratio=base / median,
        ratio_of="medians",
        rounds_s=[round(x, digits) for x in ours_s],
        baseline_rounds_s=[round(x, digits) for x in base_s],
        load_1m=load_1m(),
    )
