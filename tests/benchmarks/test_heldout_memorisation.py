"""Held-out means held out against a policy that memorises training answers: looked up by the
whole question, by its numbers in any order, or in order, a memorised answer earns on
evaluation tasks no more than the most common training answer does."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchmarks.heldout import ATTACK_KEYS, measure_memorisation, measure_overlap, refuse_unheld

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "heldout_overlap.json"
#: Attack keys that look an evaluation question up among memorised training questions (the
#: template key gives the most common answer of a template, which every universe shares: an
#: answer prior, reported but not a held-out leak).
MEMORISED_KEYS = ("question", "numbers", "ordered_numbers")

#: Settings without a held-out universe, measured to show why: their numbers decide their
#: answers but are too few to split by (a text split keeps exact questions apart, not the
#: numbers), or their answers are predictable from the question's surface (aiw at 16 people:
#: a count it shows plus one, issue #25), so held-out evaluation refuses them
#: (``benchmarks.heldout.refuse_unheld``).
NOT_HELD_OUT = {
    ("rllm/ReasoningGym-v0", '{"dataset": "aiw"}'),
    ("rllm/ReasoningGym-v0", '{"config": {"max_entities": 16}, "dataset": "aiw"}'),
    ("rllm/ReasoningGym-v0", '{"dataset": "coin_flip"}'),
    ("rllm/ReasoningGym-v0", '{"dataset": "circuit_logic"}'),
    ("rllm/ReasoningGym-v0", '{"dataset": "course_schedule"}'),
    # A known tell (surface.KNOWN_TELLS): string_insertion's every match inserted. (lcm's
    # larger number is no tell since its read-off draws are drawn again: held out, s25.)
    ("rllm/ReasoningGym-v0", '{"dataset": "string_insertion"}'),
}
#: The reason of a setting whose answers a surface classifier reads (no memorisation needed).
SURFACE = "answers predictable from the question's surface"


def _gains(attack, slack=0.02):
    """The memorised keys whose lookup beats the constant policy by more than ``slack``."""
    n, constant = attack["num_tasks"], attack["constant"]["correct"]
    return [
        f"{key}: {attack['lookup'][key]['correct']}/{n} vs constant {constant}/{n}"
        for key in MEMORISED_KEYS
        if attack["lookup"][key]["correct"] > constant + slack * n
    ]


def _quoted_gain(reason: str, slack: float = 0.02) -> bool:
    """Whether a refusal quotes a lookup that beat the constant (the env's own measurement:
    "answered 11/140 against the constant's 4/140"). A universe's draws are noisy around the
    answer caps, so the benchmark's lookup may land within the slack where the env's did not
    (coin_flip after the s26 redraw: 27/500 against 29/500)."""
    found = re.search(r"answered (\d+)/(\d+) against the constant's (\d+)/(\d+)", reason)
    if found is None:
        return False
    hits, n, constant, _ = (int(g) for g in found.groups())
    return hits > constant + slack * n


def test_the_committed_memorisation_attack_gains_nothing():
    report = json.loads(RESULTS.read_text(encoding="utf-8"))
    # Files written before benchmarks.provenance name the commit `git_commit`.
    assert (report.get("commit") or report.get("git_commit")) and report["machine"]["versions"]
    measured = 0
    unheld = set()
    for row in report["envs"]:
        label = f"{row['env']} {row['env_kwargs']}"
        if row.get("held_out") is False:
            # Refused by held-out evaluation, with the reason; measured to show the leak (a
            # memorised lookup, or a surface tell that needs no memory).
            assert row["not_held_out"], label
            reason = row["not_held_out"]
            assert _gains(row["memorisation"]) or SURFACE in reason or _quoted_gain(reason), label
            assert "not held out" in row["universe_key"], label  # the docs table says so
            unheld.add((row["env"], json.dumps(row["env_kwargs"], sort_keys=True)))
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
    assert measured >= 20 and unheld == NOT_HELD_OUT


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
        # aiw and coin_flip with numbers enough to split by (their defaults have too few).
        ("rllm/ReasoningGym-v0", {"dataset": "aiw", "config": {"max_entities": 16}}),
        ("rllm/ReasoningGym-v0", {"dataset": "coin_flip", "config": {"max_trials": 40}}),
    ],
)
def test_memorised_training_answers_earn_no_more_than_a_constant_on_evaluation(env_id, kwargs):
    # Questions with the same numbers in other words or another order share a universe, so a
    # policy that looks evaluation questions up by their numbers finds nothing to replay.
    attack = measure_memorisation(env_id, kwargs, num_tasks=200)
    assert not _gains(attack), _gains(attack)
    assert attack["lookup"]["numbers"]["hits"] == attack["lookup"]["question"]["hits"] == 0


def test_a_family_whose_answers_show_on_the_question_surface_is_not_held_out():
    # circuit_logic's answer follows from its output gate (a one-feature rule: 0.81 against a
    # constant's 0.59 on balanced answers); held-out evaluation refuses it and says why.
    with pytest.raises(ValueError, match="no held-out evaluation universe.*question's surface"):
        refuse_unheld("rllm/ReasoningGym-v0", {"dataset": "circuit_logic"})


@pytest.mark.parametrize("dataset", ["aiw", "coin_flip"])
def test_a_family_whose_numbers_decide_its_answers_but_cannot_split_is_not_held_out(dataset):
    # aiw (the sisters of Alice's brother: sisters + 1) and coin_flip (k heads in n flips)
    # show too few numbers for each universe to keep 20 keys of them; split by text, a policy
    # that looked evaluation questions up by their numbers earned 183/500 on aiw against a
    # constant's 84/500. Held-out evaluation now refuses them and says why and what to do.
    kwargs = {"dataset": dataset}
    with pytest.raises(ValueError, match="no held-out evaluation universe.*numbers"):
        refuse_unheld("rllm/ReasoningGym-v0", kwargs)
    row = measure_overlap("rllm/ReasoningGym-v0", kwargs, num_tasks=50)
    assert row["held_out"] is False and "widen its config" in row["not_held_out"]
    refuse_unheld("rllm/ReasoningGym-v0", {"dataset": "chain_sum"})  # held out: no error


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
