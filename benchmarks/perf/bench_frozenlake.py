"""Step cost of rllm/FrozenLake-v1 (text in, text out) vs Gymnasium's own FrozenLake-v1.

Both sides go through ``gym.make`` (the same default wrappers), on Gymnasium's fixed ``"4x4"``
map, not slippery, 100 steps at most, playing the same cycle of moves with a reset whenever an
episode ends. Before timing, both envs walk the cycle side by side and must visit the same
cells and end the same episodes, so the two sides do the same work (rllm's step adds what it
is for: parsing the reply and writing the board as text). Goal: at most 10x the raw step
(ratio of medians, :mod:`benchmarks.perf._ratios`).
"""

from __future__ import annotations

import gymnasium as gym

import rllm_envs  # noqa: F401  (registers the ids)
from benchmarks.perf._ratios import median_ratio, record

MOVES = [1, 1, 2, 2, 1, 2, 0, 3]  # Down Down Right Right Down Right Left Up
NAMES = ["Left", "Down", "Right", "Up"]
ACTION_NAMES = [NAMES[a] for a in MOVES]
FREE_TEXT = [f"<think>the hole is near, so...</think> <action>{NAMES[a]}</action>" for a in MOVES]
GOAL = 10
BASELINE = "test_gymnasium_frozenlake_step"


def _gymnasium_env():
    return gym.make("FrozenLake-v1", map_name="4x4", is_slippery=False, max_episode_steps=100)


def _rllm_env():
    return gym.make("rllm/FrozenLake-v1", map_name="4x4", is_slippery=False, max_turns=100)


def _stepper(env, actions):
    env.reset(seed=0)
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % len(actions)
        obs, _, terminated, truncated, info = env.step(actions[i])
        if terminated or truncated:
            env.reset()
        return obs, terminated or truncated, info

    return step


def _check_same_walk(replies, steps: int = 48) -> None:
    """Both envs, stepped by the same cycle, visit the same cells and end the same episodes."""
    gym_step, rllm_step = _stepper(_gymnasium_env(), MOVES), _stepper(_rllm_env(), replies)
    for _ in range(steps):
        cell, gym_done, _ = gym_step()
        _, rllm_done, info = rllm_step()
        assert info.get("action") is not None, "the reply was not parsed as a move"
        assert gym_done == rllm_done
        if not gym_done:
            assert info["position"] == [cell // 4, cell % 4]


def test_gymnasium_frozenlake_step(benchmark):
    benchmark.extra_info.update(label="Gymnasium `FrozenLake-v1` step (integer action)")
    benchmark(_stepper(_gymnasium_env(), MOVES))
    record(benchmark)


def test_rllm_frozenlake_step(benchmark):
    _check_same_walk(ACTION_NAMES)
    benchmark.extra_info.update(
        label="`rllm/FrozenLake-v1` step, reply = an action name",
        baseline=BASELINE,
        baseline_label="Gymnasium `FrozenLake-v1` step (integer action)",
        goal=GOAL,
        work=[1, "steps"],
    )
    benchmark(_stepper(_rllm_env(), ACTION_NAMES))
    median_ratio(benchmark)


def test_rllm_frozenlake_step_free_text(benchmark):
    _check_same_walk(FREE_TEXT)
    benchmark.extra_info.update(
        label="`rllm/FrozenLake-v1` step, reply = free text with `<think>` and `<action>` tags",
        baseline=BASELINE,
        baseline_label="Gymnasium `FrozenLake-v1` step (integer action)",
        goal=GOAL,
        work=[1, "steps"],
    )
    benchmark(_stepper(_rllm_env(), FREE_TEXT))
    median_ratio(benchmark)
