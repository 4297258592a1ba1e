"""Transcripts on the leaderboard page: what each policy did, per env, escaped.

Scripted policies write the same transcript format as model policies (observations as user
turns, actions as assistant turns); the page shows a few episodes per env and policy, a
success and a failure first, and model text is shown as text, never as markup.
"""

from __future__ import annotations

import json

import pytest

from benchmarks.leaderboard.report import Section, html_page, load_run, pick_examples
from benchmarks.leaderboard.runner import LeaderboardConfig, run
from rllm_envs.tasks import EVAL_TASK_SEED

FL = "rllm/FrozenLake-v1"
MATH = "rllm/Math-v1"


def test_scripted_runs_write_transcripts_the_page_shows(tmp_path):
    config = LeaderboardConfig(policy="oracle", envs=[FL, MATH], n_tasks=4, transcripts=True)
    run(config, tmp_path, progress=False)
    lines = (tmp_path / "oracle" / "transcripts.jsonl").read_text().splitlines()
    items = [json.loads(x) for x in lines]
    assert sorted((t["column"], t["row"]) for t in items) == sorted(
        (env, row) for env in (FL, MATH) for row in range(4)
    )
    lake = next(t for t in items if t["column"] == FL)
    assert lake["is_correct"] and lake["messages"][0]["role"] == "user"
    # One assistant message per move; the env's last word is the final turn's observation.
    assert sum(m["role"] == "assistant" for m in lake["messages"]) == len(lake["turns"])
    assert "goal" in lake["turns"][-1]["observation"].lower()

    result = load_run(tmp_path / "oracle", examples=2)
    assert {env: len(ts) for env, ts in result.transcripts.items()} == {FL: 2, MATH: 2}
    page = html_page([result])
    assert "id='transcripts'" in page and "feedback (end of episode)" in page
    assert page.count("class='episode'") == 4


def test_variant_columns_keep_their_own_transcripts(tmp_path):
    column = f"{FL}@random-4x4"
    config = LeaderboardConfig(
        policy="random",
        envs=[FL, column],
        n_tasks=2,
        env_kwargs={column: {"size": 4, "is_slippery": False}},
        transcripts=True,
    )
    run(config, tmp_path, progress=False)
    shown = load_run(tmp_path / "random").transcripts
    assert set(shown) == {FL, column}
    # The column's own kwargs, played in the evaluation universe (the leaderboard's split).
    expected = {"size": 4, "is_slippery": False, "task_seed": EVAL_TASK_SEED}
    assert all(t["env_kwargs"] == expected for t in shown[column])


def _episode(row: int, correct: bool, reply: str = "Right") -> dict:
    return {
        "column": FL,
        "row": row,
        "sample": 0,
        "task_id": f"t{row}",
        "reward": float(correct),
        "is_correct": correct,
        "finish": "terminated",
        "messages": [
            {"role": "system", "content": "Play."},
            {"role": "user", "content": "The board."},
            {"role": "assistant", "content": reply},
        ],
        "turns": [{"response": reply, "action": "Right", "reward": float(correct)}],
    }


def test_examples_show_a_success_and_a_failure_first():
    items = [_episode(0, False), _episode(1, False), _episode(2, False), _episode(3, True)]
    picked = pick_examples(items, per_env=2)[FL]
    assert [t["row"] for t in picked] == [0, 3]
    # A resumed run that wrote an episode twice shows it once.
    assert len(pick_examples([_episode(0, True), _episode(0, True)], 3)[FL]) == 1


def test_model_text_is_shown_as_text(tmp_path):
    config = LeaderboardConfig(policy="random", envs=[FL], n_tasks=1, transcripts=True)
    run(config, tmp_path, progress=False)
    result = load_run(tmp_path / "random")
    hostile = "<script>alert('x')</script><img src=x onerror=alert(1)>"
    result.transcripts = {FL: [_episode(0, False, reply=hostile)]}
    section = Section("A <b>title</b>", "text <script>", ("a<", "b"), [["<i>x</i>", "1"]])
    page = html_page([result], sections=[section])
    assert "<script>" not in page and "<img src=x" not in page and "<i>x</i>" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "A &lt;b&gt;title&lt;/b&gt;" in page


def test_long_messages_are_cut_on_the_page(tmp_path):
    config = LeaderboardConfig(policy="random", envs=[FL], n_tasks=1, transcripts=True)
    run(config, tmp_path, progress=False)
    result = load_run(tmp_path / "random")
    result.transcripts = {FL: [_episode(0, False, reply="x" * 50_000)]}
    page = html_page([result])
    assert "more characters not shown" in page and "x" * 50_000 not in page


@pytest.mark.parametrize("line", ["", "{cut", "[1, 2]"])
def test_a_bad_transcript_line_is_skipped(tmp_path, line):
    config = LeaderboardConfig(policy="oracle", envs=[FL], n_tasks=2, transcripts=True)
    run(config, tmp_path, progress=False)
    path = tmp_path / "oracle" / "transcripts.jsonl"
    path.write_text(path.read_text() + line + "\n")
    assert len(load_run(tmp_path / "oracle").transcripts[FL]) == 2
