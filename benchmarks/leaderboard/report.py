"""Merge leaderboard runs into a Markdown table and a self-contained HTML page.

The HTML page has no external resources (inline CSS and SVG charts, images as data URIs), so it
reads offline from a single file.
"""

from __future__ import annotations

import base64
import html
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.leaderboard.runner import RunConfig, _load_records, summarize

_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")


@dataclass
class RunResult:
    """One run, loaded from its directory."""

    name: str
    policy: str
    meta: dict[str, Any]
    summary: dict[str, Any]


def load_run(run_dir: str | Path) -> RunResult:
    """Load a run directory (``meta.json`` + ``episodes.jsonl``) and recompute its summary."""
    run_dir = Path(run_dir)
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    config = RunConfig(**meta["config"])
    summary = summarize(_load_records(run_dir / "episodes.jsonl"), config)
    return RunResult(config.name, config.policy, meta, summary)


def _env_ids(runs: list[RunResult]) -> list[str]:
    seen: dict[str, None] = {}
    for run in runs:
        seen.update(dict.fromkeys(run.summary["envs"]))
    return list(seen)


def _fmt(value: float | None, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def markdown(runs: list[RunResult]) -> str:
    """A Markdown leaderboard: overall score and pass@1 per env, then format rates."""
    runs = sorted(runs, key=lambda r: -_nan0(r.summary["overall_pass@1"]))
    lines = ["| policy | overall pass@1 | " + " | ".join(f"`{e}`" for e in _env_ids(runs)) + " |"]
    lines.append("|---|---|" + "---|" * len(_env_ids(runs)))
    for run in runs:
        cells = [_fmt(run.summary["envs"].get(e, {}).get("pass@1")) for e in _env_ids(runs)]
        lines.append(
            f"| {run.name} | {_fmt(run.summary['overall_pass@1'])} | " + " | ".join(cells) + " |"
        )
    # Format rate: share of the policy's turns whose reply the env could parse (a boxed
    # answer, a tool call, a code block, a move); low values mean the prompt or token limit
    # does not fit the model, not that its answers are wrong.
    lines += ["", "Format rate (share of turns the env could parse):", ""]
    lines.append("| policy | " + " | ".join(f"`{e}`" for e in _env_ids(runs)) + " |")
    lines.append("|---|" + "---|" * len(_env_ids(runs)))
    for run in runs:
        cells = [_fmt(run.summary["envs"].get(e, {}).get("format_rate"), 2) for e in _env_ids(runs)]
        lines.append(f"| {run.name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _nan0(x: float) -> float:
    return 0.0 if x is None or math.isnan(x) else x


def _bar_chart(env_id: str, runs: list[RunResult]) -> str:
    width, height, pad = 360, 170, 30
    bar_w = (width - 2 * pad) / max(len(runs), 1)
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" role="img" '
        f'aria-label="pass@1 on {html.escape(env_id)}">',
        f'<text x="{pad}" y="16" class="t">{html.escape(env_id)} — pass@1</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        'stroke="#999"/>',
    ]
    for i, run in enumerate(runs):
        value = _nan0(run.summary["envs"].get(env_id, {}).get("pass@1", float("nan")))
        h = value * (height - 2 * pad - 10)
        x = pad + i * bar_w + 4
        y = height - pad - h
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{bar_w - 8:.1f}" height="{h:.1f}" '
            f'fill="{_COLORS[i % len(_COLORS)]}"><title>{html.escape(run.name)}: '
            f"{value:.3f}</title></rect>"
        )
        parts.append(
            f'<text x="{x + (bar_w - 8) / 2:.1f}" y="{y - 3:.1f}" class="v">{value:.2f}</text>'
        )
        parts.append(
            f'<text x="{x + (bar_w - 8) / 2:.1f}" y="{height - pad + 14}" class="v">'
            f"{html.escape(run.name[:12])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _scatter(runs: list[RunResult]) -> str:
    width, height, pad = 420, 260, 45
    tokens = [
        _nan0(
            sum(m["mean_tokens"] for m in r.summary["envs"].values())
            / max(len(r.summary["envs"]), 1)
        )
        for r in runs
    ]
    max_tokens = max(tokens + [1.0])
    parts = [
        f'<svg class="chart" width="{width}" height="{height}" role="img" '
        'aria-label="overall pass@1 against mean tokens">',
        f'<text x="{pad}" y="16" class="t">overall pass@1 vs mean generated tokens</text>',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - 10}" y2="{height - pad}" '
        'stroke="#999"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>',
        f'<text x="{width / 2}" y="{height - 8}" class="v">mean tokens per episode</text>',
        f'<text x="12" y="{height / 2}" class="v" transform="rotate(-90 12 {height / 2})">'
        "pass@1</text>",
    ]
    for i, (run, tok) in enumerate(zip(runs, tokens, strict=True)):
        score = _nan0(run.summary["overall_pass@1"])
        x = pad + (tok / max_tokens) * (width - pad - 30)
        y = height - pad - score * (height - 2 * pad)
        color = _COLORS[i % len(_COLORS)]
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{color}"><title>'
            f"{html.escape(run.name)}: pass@1 {score:.3f}, {tok:.0f} tokens</title></circle>"
        )
        # Labels near the right edge go to the left of their point so they stay visible.
        anchor, dx = ("end", -9) if x > width * 0.65 else ("start", 9)
        parts.append(
            f'<text x="{x + dx:.1f}" y="{y + 4:.1f}" text-anchor="{anchor}">'
            f"{html.escape(run.name)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2rem;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #ccc;padding:.3rem .6rem}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
.chart{border:1px solid #eee;margin:.4rem;background:#fff}.t{font-size:13px;font-weight:600}
.v{font-size:10px;text-anchor:middle}.charts{display:flex;flex-wrap:wrap}
details{margin:.5rem 0}pre{background:#f7f7f7;padding:.5rem;overflow:auto}
"""


def html_page(
    runs: list[RunResult],
    *,
    title: str = "rllm-envs leaderboard",
    images: dict[str, Path] | None = None,
) -> str:
    """A self-contained HTML leaderboard page (optionally with PNG images, e.g. a curve)."""
    runs = sorted(runs, key=lambda r: -_nan0(r.summary["overall_pass@1"]))
    envs = _env_ids(runs)
    out = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Generated {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from "
        f"{len(runs)} run(s) over {len(envs)} environment(s).</p>",
        "<h2>Overall</h2><table id='overall'><tr><th>rank</th><th>policy</th>"
        "<th>overall pass@1</th><th>episodes</th><th>git commit</th></tr>",
    ]
    for rank, run in enumerate(runs, 1):
        episodes = sum(m["episodes"] for m in run.summary["envs"].values())
        commit = (run.meta.get("provenance", {}).get("git_commit") or "")[:10]
        out.append(
            f"<tr><td class='n'>{rank}</td><td>{html.escape(run.name)}</td>"
            f"<td class='n'>{_fmt(run.summary['overall_pass@1'])}</td>"
            f"<td class='n'>{episodes}</td><td><code>{html.escape(commit)}</code></td></tr>"
        )
    out.append(
        "</table><h2>Per environment</h2><table id='per-env'><tr><th>env</th>"
        "<th>policy</th><th>pass@1</th><th>pass@k</th><th>mean reward</th>"
        "<th>turns</th><th>tokens</th><th>format</th><th>wall s</th></tr>"
    )
    for env_id in envs:
        for run in runs:
            m = run.summary["envs"].get(env_id)
            if m is None:
                continue
            k = run.summary["k"]
            out.append(
                f"<tr><td>{html.escape(env_id)}</td><td>{html.escape(run.name)}</td>"
                f"<td class='n'>{_fmt(m['pass@1'])}</td>"
                f"<td class='n'>{_fmt(m.get(f'pass@{k}'))} (k={k})</td>"
                f"<td class='n'>{_fmt(m['mean_reward'])}</td>"
                f"<td class='n'>{_fmt(m['mean_turns'], 1)}</td>"
                f"<td class='n'>{_fmt(m['mean_tokens'], 0)}</td>"
                f"<td class='n'>{_fmt(m.get('format_rate'), 2)}</td>"
                f"<td class='n'>{_fmt(m['wall_s'], 1)}</td></tr>"
            )
    out.append("</table><h2>Charts</h2><div class='charts'>")
    out.extend(_bar_chart(env_id, runs) for env_id in envs)
    out.append(_scatter(runs))
    out.append("</div>")
    for caption, path in (images or {}).items():
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
        out.append(
            f"<h2>{html.escape(caption)}</h2><img alt='{html.escape(caption)}' "
            f"src='data:image/png;base64,{data}' style='max-width:100%'>"
        )
    out.append("<h2>Provenance</h2>")
    for run in runs:
        out.append(
            f"<details><summary>{html.escape(run.name)}</summary><pre>"
            f"{html.escape(json.dumps(run.meta, indent=2))}</pre></details>"
        )
    out.append("</body></html>")
    return "\n".join(out)


def write_report(
    run_dirs: list[str | Path], out_dir: str | Path, *, images: dict[str, Path] | None = None
) -> tuple[Path, Path]:
    """Write ``leaderboard.md`` and ``index.html`` for the given runs into ``out_dir``."""
    runs = [load_run(d) for d in run_dirs]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, page = out_dir / "leaderboard.md", out_dir / "index.html"
    md.write_text(markdown(runs), encoding="utf-8")
    page.write_text(html_page(runs, images=images), encoding="utf-8")
    return md, page
