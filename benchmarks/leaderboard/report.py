"""Merge leaderboard runs into a Markdown table and a self-contained HTML page.

The HTML page has no external resources (inline CSS and SVG charts, images as data URIs), so it
reads offline from a single file. Runs recorded with transcripts (``LeaderboardConfig.transcripts``)
get a few example episodes per env and policy on the page, as readable conversations
(system, user, assistant and tool turns, each reply's action and reward, the final feedback).
Every text from a run (model replies above all) is escaped: it is shown, never interpreted.
"""

from __future__ import annotations

import base64
import html
import json
import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.leaderboard.runner import LeaderboardConfig, _load_records, summarize

_COLORS = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1")


#: Example episodes shown per env and policy.
EXAMPLES_PER_ENV = 3
#: Characters of one message shown on the page (the rest is cut, with a note).
MESSAGE_CHARS = 4000


@dataclass
class RunResult:
    """One run, loaded from its directory.

    Attributes:
        name: The run's name.
        policy: Its policy spec.
        meta: ``meta.json``.
        summary: Metrics recomputed from ``episodes.jsonl``.
        transcripts: Example episodes per env column (:func:`pick_examples`), from
            ``transcripts.jsonl`` when the run wrote one.
    """

    name: str
    policy: str
    meta: dict[str, Any]
    summary: dict[str, Any]
    transcripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


@dataclass
class Section:
    """An extra section of the page: a heading, a paragraph and an optional table.

    Everything is plain text (escaped on the page), e.g. a committed result shown next to
    the leaderboard.
    """

    title: str
    text: str
    header: Sequence[str] = ()
    rows: Sequence[Sequence[str]] = ()
    image: Path | None = None


def load_transcripts(path: Path) -> list[dict[str, Any]]:
    """The episodes of a ``transcripts.jsonl`` (a cut or malformed line is skipped)."""
    if not path.exists():
        return []
    out = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                item = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(item, dict):
                out.append(item)
    return out


def pick_examples(
    transcripts: Iterable[dict[str, Any]], per_env: int = EXAMPLES_PER_ENV
) -> dict[str, list[dict[str, Any]]]:
    """Up to ``per_env`` episodes per column: a success and a failure first when there are both.

    Episodes are taken in evaluation order (row, sample); a repeated episode (a resumed run
    that wrote it twice) counts once.
    """
    by_column: dict[str, dict[tuple[Any, Any], dict[str, Any]]] = {}
    for item in transcripts:
        column = str(item.get("column") or item.get("env_id") or "?")
        by_column.setdefault(column, {})[(item.get("row"), item.get("sample"))] = item
    picked = {}
    for column, items in by_column.items():
        ordered = [items[k] for k in sorted(items, key=lambda k: (_int(k[0]), _int(k[1])))]
        first = [
            next((t for t in ordered if bool(t.get("is_correct")) == ok), None)
            for ok in (True, False)
        ]
        chosen = [t for t in first if t is not None][:per_env]
        chosen += [t for t in ordered if all(t is not c for c in chosen)][: per_env - len(chosen)]
        picked[column] = sorted(chosen, key=lambda t: (_int(t.get("row")), _int(t.get("sample"))))
    return picked


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def load_run(run_dir: str | Path, *, examples: int = EXAMPLES_PER_ENV) -> RunResult:
    """Load a run directory (``meta.json`` + ``episodes.jsonl``) and recompute its summary."""
    run_dir = Path(run_dir)
    meta = json.loads((run_dir / "meta.json").read_text(encoding="utf-8"))
    config = LeaderboardConfig(**meta["config"])
    summary = summarize(_load_records(run_dir / "episodes.jsonl"), config)
    shown = pick_examples(load_transcripts(run_dir / "transcripts.jsonl"), examples)
    return RunResult(config.name, config.policy, meta, summary, shown)


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
    # A judge picking among solutions shown in random order scores the base rate (the share of
    # correct solutions) without reading them: its score means something only above that.
    judged = [
        (run, e, m)
        for run in runs
        for e, m in run.summary["envs"].items()
        if "judge_base_rate" in m
    ]
    if judged:
        lines += ["", "Judge accuracy next to its base rate (a constant choice's score):", ""]
        lines += ["| policy | env | judge accuracy | base rate |", "|---|---|---|---|"]
        for run, e, m in judged:
            lines.append(
                f"| {run.name} | `{e}` | {_fmt(m.get('judge_accuracy'))} | "
                f"{_fmt(m['judge_base_rate'])} |"
            )
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
.episode{margin:.3rem 0 .3rem 1rem}
.msg{margin:.3rem 0;border-left:4px solid #ccc;padding-left:.5rem}
.msg pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0}
.role{font-size:12px;font-weight:600;text-transform:uppercase;color:#555}
.system{border-color:#999}.user{border-color:#4e79a7}.assistant{border-color:#f28e2b}
.tool{border-color:#59a14f}.feedback{border-color:#b07aa1}
.note{font-size:12px;color:#555;text-transform:none;font-weight:400}
.ok{color:#2e7d32;font-weight:600}.bad{color:#c62828;font-weight:600}
"""


def _text(value: Any) -> str:
    """A message's content as escaped text, cut at :data:`MESSAGE_CHARS`."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    cut = ""
    if len(text) > MESSAGE_CHARS:
        cut = f"\n[... {len(text) - MESSAGE_CHARS} more characters not shown]"
        text = text[:MESSAGE_CHARS]
    return html.escape(text + cut)


def _message(role: str, content: Any, note: str = "") -> str:
    css = role if role in ("system", "user", "assistant", "tool") else "feedback"
    extra = f" <span class='note'>{html.escape(note)}</span>" if note else ""
    return (
        f"<div class='msg {css}'><div class='role'>{html.escape(role)}{extra}</div>"
        f"<pre>{_text(content)}</pre></div>"
    )


def _conversation(messages: Sequence[Any], turns: Sequence[Any]) -> list[str]:
    """Messages in order; each reply noted with its action and reward, then the last feedback."""
    out, reply = [], 0
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = str(message.get("role", "?"))
        note = ""
        if role == "assistant" and reply < len(turns) and isinstance(turns[reply], dict):
            turn = turns[reply]
            parts = [f"reward {_fmt(_float(turn.get('reward')), 2)}"]
            if turn.get("action") != turn.get("response"):
                parts.insert(0, f"action: {str(turn.get('action'))[:200]!r}")
            if turn.get("finish_reason") == "length":
                parts.append("cut at the token limit")
            note = " · ".join(parts)
            reply += 1
        out.append(_message(role, message.get("content", ""), note))
    if turns and isinstance(turns[-1], dict) and turns[-1].get("observation"):
        out.append(_message("feedback (end of episode)", turns[-1]["observation"]))
    return out


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def _episode(item: dict[str, Any]) -> str:
    ok = bool(item.get("is_correct"))
    mark = "<span class='ok'>solved</span>" if ok else "<span class='bad'>not solved</span>"
    summary = (
        f"task <code>{html.escape(str(item.get('task_id')))}</code> (row {item.get('row')}): "
        f"{mark}, reward {_fmt(_float(item.get('reward')), 2)}, "
        f"end: {html.escape(str(item.get('finish')))}"
    )
    body: list[str] = []
    agents = item.get("agents")
    if isinstance(agents, dict):  # multi-agent: one conversation per agent the model played
        returns = item.get("returns") or {}
        for name, messages in agents.items():
            body.append(
                f"<p class='note'>agent <b>{html.escape(str(name))}</b>, return "
                f"{_fmt(_float(returns.get(name)), 2)}</p>"
            )
            body.extend(_conversation(messages if isinstance(messages, list) else [], []))
    else:
        body.extend(_conversation(item.get("messages") or [], item.get("turns") or []))
    return f"<details class='episode'><summary>{summary}</summary>" + "".join(body) + "</details>"


def _transcripts(runs: list[RunResult], envs: list[str]) -> list[str]:
    if not any(run.transcripts for run in runs):
        return []
    out = [
        "<h2 id='transcripts'>Transcripts</h2><p>A few episodes per env and policy (a success "
        "and a failure first when there are both): the conversation as the model saw it, each "
        "reply with the action the env read and its reward, and the env's final feedback. "
        "Scripted baselines show observations and actions.</p>"
    ]
    for env_id in envs:
        shown = [(run, run.transcripts.get(env_id, [])) for run in runs]
        if not any(items for _, items in shown):
            continue
        out.append(f"<h3>{html.escape(env_id)}</h3>")
        for run, items in shown:
            if not items:
                continue
            out.append(
                f"<details><summary><b>{html.escape(run.name)}</b>: {len(items)} "
                "episode(s)</summary>" + "".join(_episode(t) for t in items) + "</details>"
            )
    return out


def _section(section: Section) -> list[str]:
    out = [f"<h2>{html.escape(section.title)}</h2><p>{html.escape(section.text)}</p>"]
    if section.rows:
        out.append("<table>")
        if section.header:
            cells = "".join(f"<th>{html.escape(h)}</th>" for h in section.header)
            out.append(f"<tr>{cells}</tr>")
        for row in section.rows:
            out.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
        out.append("</table>")
    if section.image is not None and Path(section.image).exists():
        data = base64.b64encode(Path(section.image).read_bytes()).decode("ascii")
        out.append(
            f"<img alt='{html.escape(section.title)}' src='data:image/png;base64,{data}' "
            "style='max-width:100%'>"
        )
    return out


def html_page(
    runs: list[RunResult],
    *,
    title: str = "rllm-envs leaderboard",
    images: dict[str, Path] | None = None,
    sections: Sequence[Section] = (),
) -> str:
    """A self-contained HTML leaderboard page.

    Args:
        runs: The runs.
        title: Page title.
        images: PNG images by caption (e.g. a learning curve).
        sections: Extra sections (e.g. a committed result), after the images.
    """
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
        prov = run.meta.get("provenance", {})
        # ``git_commit`` in run directories written before provenance had one shape.
        commit = (prov.get("commit") or prov.get("git_commit") or "")[:10]
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
    out.append("</table>")
    judged = [
        (env_id, run, run.summary["envs"][env_id])
        for env_id in envs
        for run in runs
        if "judge_base_rate" in run.summary["envs"].get(env_id, {})
    ]
    if judged:
        out.append(
            "<h2>Judges against their base rate</h2><p>Solutions are shown in random order, so "
            "a judge that never reads them scores the base rate.</p><table><tr><th>env</th>"
            "<th>policy</th><th>judge accuracy</th><th>base rate</th></tr>"
        )
        out.extend(
            f"<tr><td>{html.escape(env_id)}</td><td>{html.escape(run.name)}</td>"
            f"<td class='n'>{_fmt(m.get('judge_accuracy'))}</td>"
            f"<td class='n'>{_fmt(m['judge_base_rate'])}</td></tr>"
            for env_id, run, m in judged
        )
        out.append("</table>")
    out.append("<h2>Charts</h2><div class='charts'>")
    out.extend(_bar_chart(env_id, runs) for env_id in envs)
    out.append(_scatter(runs))
    out.append("</div>")
    for caption, path in (images or {}).items():
        data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
        out.append(
            f"<h2>{html.escape(caption)}</h2><img alt='{html.escape(caption)}' "
            f"src='data:image/png;base64,{data}' style='max-width:100%'>"
        )
    for section in sections:
        out.extend(_section(section))
    out.extend(_transcripts(runs, envs))
    out.append("<h2>Provenance</h2>")
    for run in runs:
        out.append(
            f"<details><summary>{html.escape(run.name)}</summary><pre>"
            f"{html.escape(json.dumps(run.meta, indent=2))}</pre></details>"
        )
    out.append("</body></html>")
    return "\n".join(out)


def write_report(
    run_dirs: Sequence[str | Path],
    out_dir: str | Path,
    *,
    images: dict[str, Path] | None = None,
    sections: Sequence[Section] = (),
) -> tuple[Path, Path]:
    """Write ``leaderboard.md`` and ``index.html`` for the given runs into ``out_dir``."""
    runs = [load_run(d) for d in run_dirs]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    md, page = out_dir / "leaderboard.md", out_dir / "index.html"
    md.write_text(markdown(runs), encoding="utf-8")
    page.write_text(html_page(runs, images=images, sections=sections), encoding="utf-8")
    return md, page
