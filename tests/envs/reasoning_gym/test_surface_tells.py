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
from rllm_envs.reasoning_gym.surface import KNOWN_TELLS, surface_tell  # noqa: E402

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


@pytest.mark.parametrize("name", ["game_of_life_halting", "circuit_logic", "course_schedule"])
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
