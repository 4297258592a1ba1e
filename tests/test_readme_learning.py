"""README's FrozenLake learning-proof figures are the committed metrics files' own numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.readme import docs_text

ROOT = Path(__file__).resolve().parents[1]
README = docs_text()  # README and the docs pages
LEARNING = ROOT / "docs" / "learning"


def _metrics(name: str) -> list[dict]:
    path = LEARNING / f"{name}_metrics.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _first_at(rows: list[dict], success: float) -> dict:
    return next(row for row in rows if row["rollout/success"] >= success)


def _row(label: str) -> str:
    section = README.split("### Learning proof on CPU", 1)[1].split("\n### ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith(f"| {label}")]
    assert len(rows) == 1, f"README's learning table has no single row starting {label!r}"
    return rows[0]


def test_ppo_rows_match_the_committed_metrics():
    rows = _metrics("frozenlake_ppo")
    first = _first_at(rows, 0.9)
    last10 = sum(r["rollout/success"] for r in rows[-10:]) / 10
    assert (
        f"iteration {first['iteration']}, **{first['time_s'] / 60:.1f} min** wall-clock "
        f"including setup ({first['perf/process_cpu_s']:.0f} CPU-s)"
    ) in _row("first iteration")
    assert f"**{last10:.1%}** success" in _row("last 10 iterations")
    whole = _row("whole run")
    assert f"({len(rows)} iterations, {rows[-1]['episodes']:,} episodes)" in whole
    assert f"{rows[-1]['time_s'] / 60:.1f} min, {rows[-1]['perf/process_cpu_s']:.0f} CPU-s" in whole
    # The Quick start quotes the same run's training time.
    quick = " ".join(README.split("## Quick start", 1)[1].split("\n## ", 1)[0].split())
    assert f"training takes {rows[-1]['time_s'] / 60:.1f} min for the {len(rows)} PPO" in quick
    untrained = _row("untrained model")
    assert f"{rows[0]['rollout/success']:.0%} success" in untrained
    assert f"{rows[0]['rollout/invalid_action_rate']:.0%} invalid actions" in untrained
    mismatch = {r["logprob_mismatch/mean_abs"] for r in rows}
    if mismatch == {0.0}:
        assert f"0.0 in all {len(rows)} iterations" in _row("sampler vs trainer")


def test_grpo_row_matches_the_committed_metrics():
    rows = _metrics("frozenlake_grpo")
    first = _first_at(rows, 0.9)
    last10 = sum(r["rollout/success"] for r in rows[-10:]) / 10
    assert (
        f"≥ 90% at iteration {first['iteration']} ({first['time_s'] / 60:.1f} min), "
        f"last 10: {last10:.1%}"
    ) in _row("GRPO variant")


@pytest.mark.slow
def test_random_baseline_row_is_measured():
    """The random policy's row, measured again with the main job's own function (~30 s)."""
    from benchmarks.main import measure_random_success

    config = json.loads((LEARNING / "frozenlake_ppo_config.json").read_text(encoding="utf-8"))
    result = measure_random_success(config["env"], config["env_kwargs"], 20_000, seed=0)
    assert f"{result['success_rate']:.2%} success ({result['successes']} of 20,000)" in _row(
        "random policy"
    )


def test_curriculum_prose_matches_its_results_file():
    """The figures README derives in words from ``benchmarks/results/curriculum.json``."""
    path = ROOT / "benchmarks" / "results" / "curriculum.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    section = README.split("### Curricula", 1)[1].split("\n### ", 1)[0]
    prose = " ".join(section.replace("<!-- /results:curriculum -->", "\0").split("\0")[1].split())
    episodes, cpu = data["episodes_to_target"], data["cpu_s_to_target"]
    fewer = sorted(
        round(100 * (1 - u / a))
        for a, u in zip(episodes["adaptive"], episodes["uniform"], strict=True)
    )
    less_cpu = sorted(
        round(100 * (1 - a / u)) for a, u in zip(cpu["adaptive"], cpu["uniform"], strict=True)
    )
    assert all(f > 0 for f in fewer), "README says uniform needed fewer episodes on every seed"
    assert f"({fewer[0]}% and {fewer[-1]}% fewer)" in prose
    assert f"{less_cpu[0]}-{less_cpu[-1]}% less CPU" in prose
    base = data["baselines_at_hardest"]
    before = " ".join(section.split("<!-- results:curriculum -->")[0].split())
    assert (
        f"on {base['maps']} such maps a random move succeeds {base['random_move']:.0%} of the "
        f"time, a random choice of Right or Down {base['right_or_down']:.0%}"
    ) in before
