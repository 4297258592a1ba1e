"""Ratio reporting for the performance suite.

A benchmark names its baseline (another benchmark measured in the same run) in
``benchmark.extra_info``::

    benchmark.extra_info.update(baseline="gymnasium_frozenlake_step", metric="time_ratio", goal=10)

``metric="time_ratio"`` reports mean time / baseline mean time (goal: at most ``goal``);
``metric="speedup"`` reports baseline mean / mean (goal: at least ``goal``). A benchmark that
computes its own ratio (e.g. tokens/s against a bound) sets ``ratio`` (and ``metric``, ``goal``)
directly. At the end of the run one table of ratios is printed and saved as JSON to
``$RLLM_BENCH_OUT`` (default ``benchmarks/results/latest.json``) so runs can be compared.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchmarks.provenance import provenance

_DEFAULT_OUT = Path(__file__).resolve().parents[1] / "results" / "latest.json"


def _rows(benchmarks: list[Any]) -> list[dict[str, Any]]:
    by_name = {b.name: b for b in benchmarks if b}
    rows = []
    for bench in by_name.values():
        info = dict(bench.extra_info)
        metric = info.get("metric", "time_ratio")
        ratio = info.get("ratio")
        baseline = info.get("baseline")
        if ratio is None and baseline is not None and baseline in by_name:
            base_mean = by_name[baseline].stats.mean
            mean = bench.stats.mean
            ratio = base_mean / mean if metric == "speedup" else mean / base_mean
        if ratio is None:
            continue
        goal = info.get("goal")
        ok = None
        if goal is not None:
            ok = ratio >= goal if metric in ("speedup", "throughput_ratio") else ratio <= goal
        rows.append(
            {
                "benchmark": bench.name,
                "baseline": baseline or info.get("bound", ""),
                "metric": metric,
                "ratio": round(float(ratio), 4),
                "goal": goal,
                "meets_goal": ok,
                "mean_s": bench.stats.mean,
                "median_s": bench.stats.median,
                "baseline_mean_s": by_name[baseline].stats.mean if baseline in by_name else None,
                "extra": {k: v for k, v in info.items() if k not in ("baseline", "metric", "goal")},
            }
        )
    return rows


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: D103
    session = getattr(config, "_benchmarksession", None)
    if session is None or session.disabled or not session.benchmarks:
        return
    rows = _rows(session.benchmarks)
    if not rows:
        return
    tr = terminalreporter
    tr.write_sep("=", "rllm-envs performance ratios")
    tr.write_line(f"{'benchmark':44} {'baseline':36} {'metric':12} {'ratio':>9}  goal")
    for r in rows:
        goal = "" if r["goal"] is None else ("<= " if r["metric"] == "time_ratio" else ">= ")
        goal += "" if r["goal"] is None else f"{r['goal']}"
        mark = {True: "ok", False: "MISSED", None: ""}[r["meets_goal"]]
        tr.write_line(
            f"{r['benchmark'][:44]:44} {str(r['baseline'])[:36]:36} {r['metric']:12} "
            f"{r['ratio']:9.3f}  {goal} {mark}"
        )
    out = Path(os.environ.get("RLLM_BENCH_OUT", _DEFAULT_OUT))
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = {**provenance(tools=True), "rows": rows}
    out.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    tr.write_line(f"saved {out}")
