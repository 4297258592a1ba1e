"""Held-out means held out against a policy that memorises training answers: looked up by the
whole question, by its numbers in any order, or in order, a memorised answer earns on
evaluation tasks no more than the most common training answer does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.heldout import ATTACK_KEYS, measure_memorisation

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "heldout_overlap.json"
#: Attack keys that look an evaluation question up among memorised training questions (the
#: template key gives the most common answer of a template, which every universe shares: an
#: answer prior, reported but not a held-out leak).
MEMORISED_KEYS = ("question", "numbers", "ordered_numbers")


#: Open findings (issue #25), xfail(strict) in the live test below: the committed file's rows
#: for them are checked to still show the gain, so a fix shows up as a failure here too.
KNOWN_OPEN = {
    ("rllm/ReasoningGym-v0", "aiw"): "aiw splits by canonical text (its numbers are too few): "
    "the same numbers about other people, in another universe, have the same answer",
    ("rllm/ReasoningGym-v0", "coin_flip"): "coin_flip's questions (at least k heads in n flips) "
    "are too few for each universe to keep 20: not split, both universes share them",
}


def _gains(attack, slack=0.02):
    """The memorised keys whose lookup beats the constant policy by more than ``slack``."""
    n, constant = attack["num_tasks"], attack["constant"]["correct"]
    return [
        f"{key}: {attack['lookup'][key]['correct']}/{n} vs constant {constant}/{n}"
        for key in MEMORISED_KEYS
        if attack["lookup"][key]["correct"] > constant + slack * n
    ]


def test_the_committed_memorisation_attack_gains_nothing():
    report = json.loads(RESULTS.read_text(encoding="utf-8"))
    # Files written before benchmarks.provenance name the commit `git_commit`.
    assert (report.get("commit") or report.get("git_commit")) and report["machine"]["versions"]
    measured = 0
    for row in report["envs"]:
        label = f"{row['env']} {row['env_kwargs']}"
        if (row["env"], row["env_kwargs"].get("dataset")) in KNOWN_OPEN:
            assert _gains(row["memorisation"]), f"{label}: fixed? drop it from KNOWN_OPEN"
            continue
        attack = row["memorisation"]
        if "skipped" in attack:  # a game: no answer to memorise (replays are the checker's)
            continue
        # A family may be unsplit where its questions never repeat (names and tables of its
        # own), never because its questions are too few: the universes would share them.
        assert "too few questions" not in row["universe_key"], label
        measured += 1
        assert attack["num_tasks"] == row["num_tasks"] and set(attack["lookup"]) == set(
            ATTACK_KEYS
        ), label
        assert not _gains(attack), (label, _gains(attack))
    assert measured >= 20


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        ("rllm/Math-v1", {"families": ["word_problem"]}),
        ("rllm/Math-v1", {"families": ["geometry"]}),
        ("rllm/Math-v1", {"families": ["fractions"]}),
        ("rllm/Math-v1", {"families": ["combinatorics"]}),
        ("rllm/Math-v1", {"families": ["quadratic_equation"], "difficulty": 2}),
        ("rllm/ReasoningGym-v0", {"dataset": "lcm"}),
        ("rllm/ReasoningGym-v0", {"dataset": "products"}),
        pytest.param(
            "rllm/ReasoningGym-v0",
            {"dataset": "aiw"},
            marks=pytest.mark.xfail(
                strict=True, reason=KNOWN_OPEN[("rllm/ReasoningGym-v0", "aiw")]
            ),
        ),
        pytest.param(
            "rllm/ReasoningGym-v0",
            {"dataset": "coin_flip"},
            marks=pytest.mark.xfail(
                strict=True, reason=KNOWN_OPEN[("rllm/ReasoningGym-v0", "coin_flip")]
            ),
        ),
    ],
)
def test_memorised_training_answers_earn_no_more_than_a_constant_on_evaluation(env_id, kwargs):
    # Questions with the same numbers in other words or another order share a universe, so a
    # policy that looks evaluation questions up by their numbers finds nothing to replay.
    attack = measure_memorisation(env_id, kwargs, num_tasks=200)
    assert not _gains(attack), _gains(attack)
    assert attack["lookup"]["numbers"]["hits"] == attack["lookup"]["question"]["hits"] == 0


def test_a_memorised_reply_is_replayed_and_graded_by_the_env():
    # On the training universe itself every question is remembered: the lookup is the oracle.
    attack = measure_memorisation(
        "rllm/Math-v1", {"families": ["arithmetic"]}, num_tasks=30, eval_seed=0
    )
    assert attack["lookup"]["question"]["hits"] == attack["lookup"]["question"]["correct"] == 30
    assert attack["constant"]["correct"] < 30
    assert "skipped" in measure_memorisation("rllm/TicTacToe-v0")


@pytest.mark.parametrize("family", ["chain", "lookup"])
def test_a_family_whose_questions_never_repeat_needs_no_split(family):
    # ToolUse's chain and lookup questions name people and products made up for each task and
    # ask about a table of its own: names masked, every question reads alike (one key, so no
    # key splits them), yet no question recurs, in a universe or across. Nothing to replay.
    from benchmarks.heldout import _sources, measure_overlap
    from rllm_envs.tasks import EVAL_TASK_SEED

    env, tasks = _sources("rllm/ToolUse-v1", {"families": [family]}, EVAL_TASK_SEED)
    env.close()
    assert tasks.splitting_keys()[family] is None and not tasks.questions_repeat(family)
    row = measure_overlap("rllm/ToolUse-v1", {"families": [family]}, num_tasks=150)
    assert row["universe_key"] == "none (questions never repeat)"
    assert row["questions"] == row["keys"] == 0 and row["distinct"]["questions"] == [150, 150]
    attack = measure_memorisation("rllm/ToolUse-v1", {"families": [family]}, num_tasks=60)
    # Numbers an observation shares (its tools' text, an order's quantities) are no question.
    assert attack["lookup"]["question"]["hits"] == 0
    assert not _gains(attack) and attack["constant"]["correct"] <= 1
