"""The leaderboard's format rate: the share of the policy's turns whose reply the env could
parse (``info["invalid_action"]`` unset), per env, in the summary, the Markdown and the page."""

from __future__ import annotations

import math

from benchmarks.leaderboard.protocol import EpisodeRecord
from benchmarks.leaderboard.report import html_page, load_run, markdown
from benchmarks.leaderboard.runner import LeaderboardConfig, format_rate, run

FL = "rllm/FrozenLake-v1"
MATH = "rllm/Math-v1"


def _record(turns: int, invalid: int) -> EpisodeRecord:
    return EpisodeRecord(
        env_id=MATH, row=0, task_index=0, sample=0, seed=0, task_id="t", reward=0.0,
        success=False, turns=turns, tokens=1, wall_s=0.0, invalid_actions=invalid,
    )  # fmt: skip


def test_format_rate_counts_turns():
    assert format_rate([_record(1, 0), _record(1, 1)]) == 0.5
    assert format_rate([_record(4, 1)]) == 0.75
    assert math.isnan(format_rate([]))


def test_oracle_parses_everywhere_and_the_report_shows_it(tmp_path):
    run(LeaderboardConfig(policy="oracle", envs=[FL, MATH], n_tasks=3), tmp_path, progress=False)
    result = load_run(tmp_path / "oracle")
    assert {e: m["format_rate"] for e, m in result.summary["envs"].items()} == {FL: 1.0, MATH: 1.0}
    text = markdown([result])
    assert "Format rate" in text and "| oracle | 1.00 | 1.00 |" in text
    assert "<th>format</th>" in html_page([result])
