"""README and docs/ tables generated from the committed benchmark results and the registry.

Every figure of a README performance table comes from a file in ``benchmarks/results/``
that ``python -m benchmarks.perf --out benchmarks/results/<name>.json`` wrote (with the
machine, versions and commit). README marks each generated table::

    <!-- results:sandbox_judge -->
    ...generated...
    <!-- /results:sandbox_judge -->

``python -m benchmarks.readme`` rewrites those blocks from the files; ``--check`` exits
non-zero when README is out of step (``tests/test_readme.py`` runs the check). A perf-suite
file whose rows carry ``extra_info["label"]`` (and ``baseline_label``, ``work``) is shown as
what was measured, its baseline, both times, the ratio and its metric, and the goal met or
missed; other perf-suite files keep the plain table of benchmark names.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def pages() -> list[Path]:
    """README and the ``docs/*.md`` pages, the files whose generated blocks this module keeps."""
    return [README, *sorted(DOCS.glob("*.md"))]


def docs_text() -> str:
    """README and every docs page, in that order, as one text (for tests that find sections)."""
    return "\n".join(path.read_text(encoding="utf-8") for path in pages())


RESULTS = ROOT / "benchmarks" / "results"
_BLOCK = re.compile(r"<!-- results:(?P<name>[\w.-]+) -->\n.*?<!-- /results:(?P=name) -->", re.S)


def _commit(data: dict[str, Any]) -> str:
    """The short commit of a results file (``git_commit`` in files older than one provenance)."""
    return str(data.get("commit") or data.get("git_commit") or "")[:10]


def _versions(data: dict[str, Any]) -> dict[str, str]:
    """The package versions of a results file: under ``machine``, or at the top in older files."""
    return dict(data.get("versions") or data.get("machine", {}).get("versions", {}))


def _load(machine: dict[str, Any]) -> str:
    """How busy the machine was: sampled during the run, at its start and end, or at the end."""
    during = machine.get("load_average_1m_during") or {}
    if during:
        return f"load {during['min']}-{during['max']} (mean {during['mean']}) during the run"
    if "load_average_start" in machine:
        return (
            f"load average {machine['load_average_start'][0]} at the start and "
            f"{machine.get('load_average_end', ['?'])[0]} at the end"
        )
    return f"load {machine.get('load_average_1m', '?')} at the end"


def _goal(row: dict[str, Any]) -> str:
    goal = row.get("goal")
    if goal is None:
        return ""
    sign = ">=" if row.get("metric") in ("speedup", "throughput_ratio") else "<="
    mark = {True: "met", False: "**missed**", None: ""}[row.get("meets_goal")]
    return f"{sign} {goal} ({mark})"


def _render_agreement(name: str, data: dict[str, Any]) -> str:
    """The math grader's file: speed against math-verify and agreement with labels."""
    speed = data["speed"]
    lines = [
        '| case set | cases | `answer_format="boxed"` | `answer_format="any"` | math-verify |',
        "|---|---|---|---|---|",
    ]
    for label, row in data["agreement"].items():
        lines.append(
            f"| {label.replace('_', ' ')} | {row['cases']} | {row['rllm_boxed']} | "
            f"**{row['rllm_any']}** | {row['math_verify']} |"
        )
    met = "met" if speed["speedup"] >= speed["goal"] else "**missed**"
    machine = data.get("machine", {})
    versions = ", ".join(f"{k} {v}" for k, v in sorted(_versions(data).items()))
    lines += [
        "",
        f"Boxed-mode grading of the {speed['mix_items']}-response mix: "
        f"{speed['rllm_boxed_median_s'] * 1000:.0f} ms vs math-verify's "
        f"{speed['math_verify_median_s'] * 1000:.0f} ms (medians), **{speed['speedup']:.0f}x** "
        f"(goal >= {speed['goal']}x, {met}). From `benchmarks/results/{name}.json` "
        f"({data.get('time', '?')}, commit `{_commit(data)}`, "
        f"{machine.get('cpu_count', '?')} CPUs, Python {machine.get('python', '?')}; {versions}).",
    ]
    return "\n".join(lines)


def _pct(row: dict[str, Any]) -> str:
    low, high = row["ci95"]
    count = f"{row['successes']}/{row['n']}; " if "successes" in row else f"n = {row['n']}; "
    return f"{row['success']:.1%} ({count}95% Wilson [{low:.1%}, {high:.1%}])"


_STAGES = {
    "before_sft": "before SFT (random init)",
    "after_sft": "after SFT",
    "after_rl": "after RL (GRPO from the SFT checkpoint)",
}


def _render_distill(name: str, data: dict[str, Any]) -> str:
    """The distillation recipe's file: held-out success per stage."""
    held, settings, timings = data["held_out"], data["settings"], data.get("timings_s", {})
    lines = [
        f"Teacher `{data['teacher']}`, {data['teacher_episodes']} episodes (success "
        f"{data['teacher_success']:.0%}; {int(data['sft_data'].get('data/episodes_kept', 0))} kept "
        f"after dedup), SFT {settings['sft_epochs']} epochs, GRPO {settings['rl_iterations']} "
        f"iterations x {settings['rl_episodes_per_iteration']} episodes, held-out "
        f"**n = {held['n_maps']} maps** ({held['decoding']}):",
        "",
        "| stage | held-out success | maps whose layout SFT never saw |",
        "|---|---|---|",
    ]
    for key, label in _STAGES.items():
        row = data["success"][key]
        unseen = row["unseen_layouts"]
        lines.append(
            f"| {label} | **{_pct(row)}** | {unseen['success']:.1%} "
            f"({round(unseen['success'] * unseen['n'])}/{unseen['n']}) |"
        )
    machine = data.get("machine", {})
    total = float(timings.get("total_s", 0.0))
    parts = ", ".join(
        f"{k.removesuffix('_s')} {v:.0f} s" for k, v in timings.items() if k != "total_s"
    )
    lines += [
        "",
        f"{held['layout_seen_in_sft_data']:.0%} of the held-out maps (new task indices) have a "
        "layout that also occurs in the SFT data, so the last column is the stricter test. Time: "
        f"{total / 60:.1f} min in all ({parts}) on "
        f"{machine.get('cpu_count', machine.get('cpus', '?'))} CPUs "
        f"({machine.get('note') or _load(machine)}). From `benchmarks/results/{name}.json`.",
    ]
    return "\n".join(lines)


def _render_curriculum(name: str, data: dict[str, Any]) -> str:
    """The curriculum experiment's file: episodes and CPU time to the target, per seed."""
    target = data["target_success_at_hardest"]
    lines = [
        f"| seed | episodes to {target} at the hardest level: adaptive | uniform | CPU-s to it: "
        "adaptive | uniform | hardest-level success then: adaptive | uniform |",
        "|---|---|---|---|---|---|---|",
    ]
    for seed in data["seeds"]:
        arms = data["runs"][str(seed)]["arms"]
        cells = []
        for key in ("episodes", "cpu_s"):
            values = {arm: (arms[arm].get("reached") or {}).get(key) for arm in arms}
            best = min((v for v in values.values() if v is not None), default=None)
            for arm in ("adaptive", "uniform"):
                value = values.get(arm)
                text = "not reached" if value is None else f"{value:,}"
                if key == "episodes" and value is not None:
                    text += f" (iteration {arms[arm]['reached']['iteration']})"
                cells.append(f"**{text}**" if value is not None and value == best else text)
        cells += [f"{arms[arm]['final_hardest_success']:.2f}" for arm in ("adaptive", "uniform")]
        lines.append(f"| {seed} | " + " | ".join(cells) + " |")
    machine = data.get("machine", {})
    lines += [
        "",
        f"Verdict: {data['verdict']}. From `benchmarks/results/{name}.json` ({data['time']}, "
        f"`{data['command']}`; {machine.get('cpu_count', '?')} CPUs, load "
        f"{machine.get('load_average_1m', '?')}).",
    ]
    return "\n".join(lines)


def _render_robustness(name: str, data: dict[str, Any]) -> str:
    """The FrozenLake robustness grid: per layout, seeds that reached 0.9 and final success."""
    lines = [
        "| layout | seeds that reached 0.9 success | iteration it was reached (per seed) "
        "| mean final success | mean final fall rate |",
        "|---|---|---|---|---|",
    ]
    for layout, summary in data["per_layout"].items():
        mine = [r for r in data["runs"] if r["layout"] == layout]
        reached = ", ".join(
            f"{r['seed']}: {r['reached_0_9_at'] if r['reached_0_9_at'] else 'never'}" for r in mine
        )
        lines.append(
            f"| `{layout}` | {summary['reached_0_9']}/{summary['runs']} | {reached} | "
            f"{summary['mean_final_success']:.2f} | {summary.get('mean_final_fall_rate', 0):.2f} |"
        )
    known = [r["load_average_1m_at_start"] for r in data["runs"] if "load_average_1m_at_start" in r]
    starts = f", {min(known)}-{max(known)} at the runs' starts" if known else ""
    machine = data.get("machine", {})
    lines += [
        "",
        f"Final success: the mean of each run's last five iterations. From "
        f"`benchmarks/results/{name}.json` ({data['time']}, `{data['command']}`, commit "
        f"`{_commit(data)}`; {machine.get('cpu_count', '?')} CPUs, {_load(machine)}{starts}).",
    ]
    return "\n".join(lines)


def _render_real_model(name: str, data: dict[str, Any]) -> str:
    """The real-model RL experiment's file: held-out pass@1 before and after, the goal."""
    base, trained, training = data["base"], data["trained"], data["training"]
    lines = [
        "| model | held-out pass@1 | 95% Wilson interval | format rate (one clean box) |",
        "|---|---|---|---|",
    ]
    for label, row in (("before (base model)", base), ("after GRPO", trained)):
        fmt = row.get("format_rate")
        lines.append(
            f"| {label} | **{row['pass_at_1']:.1%}** ({row['correct']}/{row['num_tasks']}) | "
            f"[{row['ci95'][0]:.1%}, {row['ci95'][1]:.1%}] | "
            f"{'' if fmt is None else f'{fmt:.1%}'} |"
        )
    machine = data.get("machine", {})
    goal = data.get("goal")
    if goal is not None:
        # The file's own goal (issue #27: a ratio of the base, intervals apart).
        ratio = "n/a" if goal.get("ratio") is None else f"{goal['ratio']:.2f}x"
        goal_text = (
            f"Goal (held-out pass@1 >= {goal['ratio_target']}x the base, 95% intervals apart): "
            f"{'met' if goal['met'] else '**missed**'} (ratio {ratio}, intervals apart: "
            f"{goal['intervals_apart']})."
        )
    else:
        doubled = trained["pass_at_1"] >= 2 * base["pass_at_1"]
        rose = trained["pass_at_1"] - base["pass_at_1"] >= 0.10
        apart = trained["ci95"][0] > base["ci95"][1]
        met = "met" if doubled and rose and apart else "**missed**"
        goal_text = (
            f"Goal (held-out pass@1 doubles, rises by >= 10 points, intervals apart): {met} "
            f"(doubled: {doubled}, +10 points: {rose}, intervals apart: {apart})."
        )
    per_update = training.get("seconds_per_update")
    pace = (
        f" ({training.get('updates')} updates, {per_update:.0f} s per update)"
        if per_update is not None
        else ""
    )
    lines += [
        "",
        f"{goal_text} Training: {training.get('iterations')} GRPO iterations{pace}, "
        f"{training.get('episodes')} episodes, "
        f"{training.get('groups_skipped')} zero-signal groups skipped before the forward pass. "
        f"From `benchmarks/results/{name}.json` ({data['time']}, `{data['command']}`, config "
        f"`{data['config']}`; {machine.get('cpu_count', '?')} CPUs, {_load(machine)}).",
    ]
    if name != "real_model_rl" and any(o.startswith("lora.r=") for o in data.get("overrides", [])):
        lines += _lora_against_full(data)
    return "\n".join(lines)


def _lora_against_full(data: dict[str, Any]) -> list[str]:
    """A LoRA run's training against the committed full fine-tuning run's first iterations.

    Shown only when both runs used one config (and so one seed).
    """
    path = RESULTS / "real_model_rl.json"
    full = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    if full.get("config") != data.get("config"):
        return []
    mine, theirs = data["training"], full["training"]
    n = len(mine["reward_curve"])
    if n == 0 or len(theirs["reward_curve"]) < n:
        return []
    last = max(0, n - 10)

    def mean(values: list[float]) -> str:
        return f"{sum(values) / len(values):.3f}"

    lora = ", ".join(o for o in data["overrides"] if o.startswith(("lora.", "optim.lr")))
    return [
        "",
        f"| first {n} iterations, same config and seed | full fine-tuning (`real_model_rl.json`) | "
        f"LoRA ({lora}) |",
        "|---|---|---|",
        f"| training reward, mean of iterations 1-{n} | {mean(theirs['reward_curve'][:n])} | "
        f"{mean(mine['reward_curve'])} |",
        f"| sampled success, mean of iterations {last + 1}-{n} | "
        f"{mean(theirs['success_curve'][last:n])} | {mean(mine['success_curve'][last:])} |",
        f"| update seconds per iteration (forward, backward, optimizer; the full run's over "
        f"all its {theirs['iterations']}) | {theirs['stages_s'].get('update_s', 0.0):.1f} | "
        f"{mine['stages_s'].get('update_s', 0.0):.1f} |",
    ]


def _interval(row: dict[str, Any]) -> str:
    """A held-out evaluation's pass@1 with its 95% interval."""
    return (
        f"**{row['pass_at_1']:.1%}** ({row['correct']}/{row['num_tasks']}) "
        f"[{row['ci95'][0]:.1%}, {row['ci95'][1]:.1%}]"
    )


def _render_trl_comparison(name: str, data: dict[str, Any]) -> str:
    """TRL's GRPOTrainer against our trainer on one config: held-out lift, curves, time."""
    ours = json.loads((ROOT / data["ours"]).read_text(encoding="utf-8"))
    mine, theirs = ours["training"], data["training"]
    step_s, generate_s = theirs["step_s"], theirs["generate_and_score_s"]
    updates = theirs["updates"]

    def tail(curve: list[float]) -> str:
        return f"{curve[0]:.3f} -> {sum(curve[-5:]) / len(curve[-5:]):.3f}"

    trl = _versions(data).get("trl", "?")
    machine = data.get("machine", {})
    gpus = machine.get("gpus") or []
    if "rollout.backend=transformers" in ours.get("overrides", []):
        sampler = "sampling with `generate`"
    else:
        sampler = "vLLM sampling" if gpus else "vLLM-CPU sampling"
    where = f"one {gpus[0]} GPU" if gpus else f"{machine.get('cpu_count', '?')} CPUs"
    lines = [
        f"| | ours (`rllm_adapters.trainer`, {sampler}) | TRL {trl} `GRPOTrainer` "
        "(sampling with `generate`) |",
        "|---|---|---|",
        f"| optimizer updates | {mine['updates']} ({mine['iterations']} batches, "
        f"{mine['updates_skipped']} with no signal skipped) | {updates} |",
        f"| held-out pass@1 after (base: {_interval(ours['base'])}) | {_interval(ours['trained'])} "
        f"| {_interval(data['trained']) if 'trained' in data else 'not evaluated'} |",
        f"| training reward: first batch -> mean of the last five | "
        f"{tail(mine['reward_curve'])} | {tail(theirs['reward'])} |",
        f"| wall seconds per update (sampling, scoring, update) | "
        f"{mine['seconds_per_update']:.1f} | {theirs['wall_s'] / updates:.1f} |",
        f"| of which the update (forward, backward, optimizer) | "
        f"{mine['stages_s']['update_s']:.1f} | "
        f"{sum(a - b for a, b in zip(step_s, generate_s, strict=True)) / updates:.1f} |",
    ]
    # The curves batch by batch (every k-th batch of a long run: at most 20 columns).
    curve, trl_curve = mine["reward_curve"], theirs["reward"]
    shown = range(0, len(curve), -(-len(curve) // 20))
    lines += [
        "",
        "| batch | " + " | ".join(str(i + 1) for i in shown) + " |",
        "|---|" + "---|" * len(shown),
        "| ours: reward | " + " | ".join(f"{curve[i]:.2f}" for i in shown) + " |",
        "| TRL: reward | "
        + " | ".join(f"{trl_curve[i]:.2f}" if i < len(trl_curve) else "" for i in shown)
        + " |",
    ]
    lines += [
        "",
        f"From `benchmarks/results/{name}.json` ({data['time']}, `{data['command']}`, commit "
        f"`{_commit(data)}`; {_load(data.get('machine', {}))}) and `{data['ours']}` "
        f"({ours['time']}, `{ours['command']}`; {_load(ours.get('machine', {}))}), {where}.",
    ]
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def _timed(seconds: float | None, extra: dict[str, Any], rate_key: str) -> str:
    if seconds is None:
        return ""
    text = _duration(float(seconds))
    work, rate = extra.get("work"), extra.get(rate_key)
    if work and rate is not None:
        shown = f"{float(rate):,.0f}" if rate >= 100 else f"{float(rate):.3g}"
        text += f" ({shown} {work[1]}/s)"
    return text


_METRICS = {"time_ratio": "time", "speedup": "speedup", "throughput_ratio": "throughput"}


def _render_perf(name: str, data: dict[str, Any]) -> str:
    """A perf-suite file whose rows carry labels: what, against what, ratio, goal met or not."""
    lines = [
        "| measured | time | baseline (same run) | baseline time | ratio | goal |",
        "|---|---|---|---|---|---|",
    ]
    versions = _versions(data)
    loads = []
    for row in data["rows"]:
        extra = row.get("extra", {})
        versions.update(extra.get("versions", {}))
        if extra.get("load_1m") is not None:
            loads.append(float(extra["load_1m"]))
        medians = extra.get("ratio_of") == "medians"
        ours = extra.get("median_s") if medians else row.get("mean_s")
        base = extra.get("baseline_median_s") if medians else row.get("baseline_mean_s")
        metric = _METRICS.get(row["metric"], row["metric"].replace("_", " "))
        ratio = f"**{row['ratio']:.2f}x** {metric}" + ("" if medians else " (means)")
        goal = row.get("goal")
        if goal is None:
            goal_text = "none"
        else:
            sign = ">=" if row["metric"] in ("speedup", "throughput_ratio") else "<="
            mark = {True: "met", False: "**missed**", None: ""}[row.get("meets_goal")]
            goal_text = f"{sign} {goal}x: {mark}"
        if extra.get("overhead_us_per_step") is not None:  # what a server adds to each step
            goal_text = f"adds {float(extra['overhead_us_per_step']):,.0f} µs a step"
            if extra.get("server_cpu_us_per_step") is not None:  # the figure above is CPU
                goal_text = (
                    f"adds {float(extra['overhead_us_per_step']):,.0f} µs of server CPU a step "
                    f"(round trip {float(extra['roundtrip_overhead_us_per_step']):+,.0f} µs)"
                )
            if extra.get("overhead_goal_us") is not None:
                met = "met" if extra.get("overhead_goal_met") else "**missed**"
                goal_text += f"; <= {extra['overhead_goal_us']} µs: {met}"
        label = str(extra.get("label") or f"`{row['benchmark']}`").replace("|", "\\|")
        baseline = str(extra.get("baseline_label") or f"`{row['baseline']}`").replace("|", "\\|")
        lines.append(
            f"| {label} | {_timed(ours, extra, 'per_s')} | {baseline} | "
            f"{_timed(base, extra, 'baseline_per_s')} | {ratio} | {goal_text} |"
        )
    machine = data.get("machine", {})
    listed = ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))
    during = f"{min(loads):.1f}-{max(loads):.1f} after the rows, " if loads else ""
    lines += [
        "",
        "Times are medians (means in a row marked `(means)`: its baseline was timed apart); "
        "`time` = our time / the baseline's, `speedup` = the baseline's time / ours. From "
        f"`benchmarks/results/{name}.json` ({data.get('time', '?')}, commit "
        f"`{_commit(data)}`, {machine.get('cpu_count', '?')} CPUs, 1-minute "
        f"load {during}{machine.get('load_average_1m', '?')} at the end, "
        f"Python {machine.get('python', '?')}; "
        f"{listed}).",
    ]
    return "\n".join(lines)


def _warm_cold_cell(figures: dict[str, Any] | None, key: str) -> str:
    if not figures or figures.get(key) is None:
        return ""
    value, unit = float(figures[key]), str(figures.get("unit", ""))
    shown = f"{value:,.0f}" if unit.endswith("/s") and value >= 100 else f"{value:.3g}"
    return f"{shown} {unit}"


def _render_warm_cold(name: str, data: dict[str, Any]) -> str:
    """A perf file whose rows carry ``warm`` and ``cold`` figures (measured and baseline)."""
    lines = [
        "| measured | baseline (same run) | warm: measured | warm: baseline | ratio (warm) | "
        "cold (first call): measured | cold: baseline | goal |",
        "|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for row in data["rows"]:
        extra = row.get("extra", {})
        warm, cold = extra.get("warm"), extra.get("cold")
        metric = row["metric"].replace("_ratio", "").replace("_", " ")
        lines.append(
            f"| `{row['benchmark']}` | `{row['baseline']}` | {_warm_cold_cell(warm, 'ours')} | "
            f"{_warm_cold_cell(warm, 'baseline')} | **{row['ratio']:.2f}x** {metric} | "
            f"{_warm_cold_cell(cold, 'ours')} | {_warm_cold_cell(cold, 'baseline')} | "
            f"{_goal(row) or 'none'} |"
        )
        if extra.get("note"):
            load = extra.get("load_1m")
            during = "" if load is None else f" (1-minute load {load} after the row)"
            notes.append(f"- `{row['benchmark']}`: {extra['note']}{during}.")
    machine = data.get("machine", {})
    versions = ", ".join(f"{k} {v}" for k, v in sorted(_versions(data).items()))
    lines += ["", *notes, *([""] if notes else [])]
    lines.append(
        "Warm: the rounds after the first call; cold: the first call. From "
        f"`benchmarks/results/{name}.json` ({data.get('time', '?')}, commit "
        f"`{_commit(data)}`, {machine.get('cpu_count', '?')} CPUs, 1-minute "
        f"load {machine.get('load_average_1m', '?')} at the end, "
        f"Python {machine.get('python', '?')}; {versions})."
    )
    return "\n".join(lines)


def _render_main_leaderboard(name: str, data: dict[str, Any]) -> str:
    """The main job's summary: pass@1 per policy and env, format rates, stage timings."""
    policies = sorted(data["policies"].items(), key=lambda kv: -(kv[1]["overall_pass@1"] or 0))
    envs = list(data["settings"]["envs"])

    def cell(value: float | None, digits: int = 2) -> str:
        return "–" if value is None or value != value else f"{value:.{digits}f}"

    lines = ["| policy | overall pass@1 | " + " | ".join(f"`{e}`" for e in envs) + " |"]
    lines.append("|---|---|" + "---|" * len(envs))
    for policy, row in policies:
        cells = [cell(row["envs"].get(e, {}).get("pass@1")) for e in envs]
        lines.append(f"| {policy} | {cell(row['overall_pass@1'], 3)} | " + " | ".join(cells) + " |")
    lines += ["", "Format rate (share of turns whose reply the env could parse):", ""]
    lines.append("| policy | " + " | ".join(f"`{e}`" for e in envs) + " |")
    lines.append("|---|" + "---|" * len(envs))
    for policy, row in policies:
        cells = [cell(row["envs"].get(e, {}).get("format_rate")) for e in envs]
        lines.append(f"| {policy} | " + " | ".join(cells) + " |")
    stages = ", ".join(f"{k} {v / 60:.1f} min" for k, v in data["stages_s"].items())
    machine, settings = data.get("machine", {}), data["settings"]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(_versions(data).items()) if k != "rllm-envs")
    rl = data.get("real_model_rl") or {}
    lines += [
        "",
        f"{settings['n_tasks']} tasks per env, k={settings['k']}. Time: "
        f"**{data['total_s'] / 60:.1f} min** in all ({stages}) on {machine.get('cpu_count', '?')} "
        f"CPUs, {_load(machine)}. From "
        f"`benchmarks/results/{name}.json` ({data['time']}, `{data['command']}`, commit "
        f"`{_commit(data)}`; {versions}).",
    ]
    if rl:
        text = (
            f"Real-model RL on the page: the result committed when the job ran, "
            f"`{rl['source']}` of `{rl['command']}` ({rl['time']}), not rerun by the job: "
            f"held-out pass@1 of {rl['model']} on {rl['held_out_tasks']} {rl['env']} tasks "
            f"{rl['before_pass@1']:.1%} before and {rl['after_pass@1']:.1%} after GRPO."
        )
        now_path = ROOT / rl["source"]
        now = json.loads(now_path.read_text(encoding="utf-8")) if now_path.is_file() else None
        if now and now.get("time") != rl["time"] and "base" in now and "trained" in now:
            # The page is not rerun when a later real-model run is committed: say so.
            text += (
                f" The file now holds a later run ({now['time']}): "
                f"{now['base']['pass_at_1']:.1%} before and "
                f"{now['trained']['pass_at_1']:.1%} after."
            )
        lines += ["", text]
    return "\n".join(lines)


def _render_heldout_overlap(name: str, data: dict[str, Any]) -> str:
    """What the training and evaluation universes share, and what memorising one earns."""
    lines = [
        "| env | kwargs | universe key | shared questions / keys / facts | "
        "memorised lookup (best key) | constant answer |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["envs"]:
        memo = row.get("memorisation")
        if not isinstance(memo, dict) or "lookup" not in memo:
            continue
        best_key, best = max(memo["lookup"].items(), key=lambda item: item[1]["rate"])
        kwargs = ", ".join(f"{k}={v}" for k, v in row["env_kwargs"].items()) or "default"
        facts = "-" if row.get("facts") is None else row["facts"]
        lines.append(
            f"| `{row['env']}` | {kwargs} | {row.get('universe_key', '?')} | "
            f"{row['questions']} / {row['keys']} / {facts} | "
            f"{best['rate']:.3f} ({best_key}) | {memo['constant']['rate']:.3f} |"
        )
    machine = data.get("machine", {})
    lines.append("")
    lines.append(
        f"From `benchmarks/results/{name}.json` (`{data.get('command', '?')}`, "
        f"{data.get('time', '?')}, commit `{_commit(data)}`, "
        f"{machine.get('cpu_count', '?')} CPUs): first {data['envs'][0].get('num_tasks', '?')} "
        "tasks of the training seed 0 against the evaluation seed. A lookup replays the "
        "oracle's training replies under a key of the question (the whole question, its sorted "
        "or ordered numbers, its template); it must earn no more than the constant answer."
    )
    return "\n".join(lines)


def _render_private_grading(name: str, data: dict[str, Any]) -> str:
    """What a privately graded server's timing tells of a verdict, per setting."""
    lines = [
        "| `--score-reply-s` | `--score-work-s` | reply time: AUC (z) | a second session's "
        "replies: AUC (z) | means right / wrong (reply; second session) |",
        "|---|---|---|---|---|",
    ]
    for row in data["settings"]:
        reply, near = row["reply"], row["neighbour"]
        lines.append(
            f"| {row['score_reply_s']:g} | {row['score_work_s']:g} | "
            f"{reply['auc_right_slower']:.3f} ({reply['z']:+.1f}) | "
            f"{near['auc_right_slower']:.3f} ({near['z']:+.1f}) | "
            f"{reply['mean_ms']['right']:.2f} / {reply['mean_ms']['wrong']:.2f} ms; "
            f"{near['mean_ms']['right']:.2f} / {near['mean_ms']['wrong']:.2f} ms |"
        )
    machine = data.get("machine", {})
    lines.append("")
    lines.append(
        f"From `benchmarks/results/{name}.json` (`{data.get('command', '?')}`, "
        f"{data.get('time', '?')}, commit `{_commit(data)}`, {machine.get('cpu_count', '?')} "
        f"CPUs, {_load(machine)}): `{data['env']}` `{data['env_kwargs'].get('dataset')}` with a "
        f"private seed, {data['pairs']} right/wrong pairs of warmed tasks per setting "
        "(alternating which comes first, the settings' trials interleaved). AUC: the chance "
        "that a right answer's time is the longer of a right/wrong pair (0.5: no signal); the "
        f"second session times its own `state` replies for {data['window_ms']:g} ms after the "
        "step is sent and keeps the longest."
    )
    return "\n".join(lines)


def render(name: str) -> str:
    """The Markdown table of ``benchmarks/results/<name>.json``."""
    data = json.loads((RESULTS / f"{name}.json").read_text(encoding="utf-8"))
    if "agreement" in data:
        return _render_agreement(name, data)
    if "teacher" in data and "success" in data:
        return _render_distill(name, data)
    if "episodes_to_target" in data:
        return _render_curriculum(name, data)
    if "ours" in data and "generate_and_score_s" in data.get("training", {}):
        return _render_trl_comparison(name, data)
    if "base" in data and "trained" in data:
        return _render_real_model(name, data)
    if "policies" in data and "stages_s" in data:
        return _render_main_leaderboard(name, data)
    if "per_layout" in data:
        return _render_robustness(name, data)
    if "settings" in data and "window_ms" in data:
        return _render_private_grading(name, data)
    if "eval_seed_start" in data:
        return _render_heldout_overlap(name, data)
    if any(row.get("extra", {}).get("label") for row in data.get("rows", [])):
        return _render_perf(name, data)
    if any("warm" in row.get("extra", {}) for row in data.get("rows", [])):
        return _render_warm_cold(name, data)
    lines = [
        "| benchmark | median | baseline | ratio | goal |",
        "|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        seconds = row.get("median_s") or row["mean_s"]
        host_cpu = row.get("extra", {}).get("host_cpu_ms")
        shown = f"{float(seconds) * 1000:.1f} ms"
        if host_cpu is not None:  # the judging process's own CPU, next to the step's wall time
            shown += f" (host CPU {float(host_cpu):.2f} ms)"
        lines.append(
            f"| `{row['benchmark']}` | {shown} | `{row['baseline']}` | "
            f"{row['ratio']:.2f}x {row['metric'].replace('_', ' ')} | {_goal(row)} |"
        )
    machine = data.get("machine", {})
    versions = ", ".join(f"{k} {v}" for k, v in sorted(_versions(data).items()))
    lines.append("")
    lines.append(
        f"From `benchmarks/results/{name}.json` ({data.get('time', '?')}, commit "
        f"`{_commit(data)}`, {machine.get('cpu_count', '?')} CPUs, load "
        f"{machine.get('load_average_1m', '?')}, "
        f"Python {machine.get('python', '?')}; {versions})."
    )
    return "\n".join(lines)


def render_envs() -> str:
    """The table of every registered id, from the registry rows (``<!-- registry:envs -->``)."""
    import rllm_envs

    lines = ["| id | agents | what |", "|---|---|---|"]
    for rows, kind in ((rllm_envs.ENVS, "single"), (rllm_envs.MULTIAGENT_ENVS, "multi")):
        for row in rows:
            extra = f' (`pip install "rllm-envs[{row.extra}]"`)' if row.extra else ""
            lines.append(f"| `{row.id}` | {kind} | {row.description}{extra} |")
    return "\n".join(lines)


_ENVS_BLOCK = re.compile(r"<!-- registry:envs -->\n.*?<!-- /registry:envs -->", re.S)


def rewrite(text: str) -> str:
    """``text`` with every results block (and the registry's env table) regenerated."""

    def block(match: re.Match[str]) -> str:
        name = match.group("name")
        return f"<!-- results:{name} -->\n{render(name)}\n<!-- /results:{name} -->"

    text = _ENVS_BLOCK.sub(
        lambda _: f"<!-- registry:envs -->\n{render_envs()}\n<!-- /registry:envs -->", text
    )
    return _BLOCK.sub(block, text)


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.readme``."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.readme", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if a page is out of step")
    args = parser.parse_args(argv)
    stale = []
    for path in pages():
        text = path.read_text(encoding="utf-8")
        new = rewrite(text)
        if new == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(new, encoding="utf-8")
    if args.check and stale:
        print(f"generated tables out of step in {stale}: run `python -m benchmarks.readme`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
