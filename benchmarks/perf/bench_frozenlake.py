"""Step cost of rllm/FrozenLake-v0 (text in, text out) vs Gymnasium's own FrozenLake-v1.

Both go through ``gym.make`` (same default wrappers), same fixed 4x4 map, not slippery, and a
fixed cycle of moves with a reset whenever an episode ends. Goal: within 10x of the raw step.
"""

from __future__ import annotations

import gymnasium as gym

import rllm_envs  # noqa: F401  (registers the ids)

MOVES = [1, 1, 2, 2, 1, 2, 0, 3]  # Down Down Right Right Down Right Left Up
NAMES = ["Left", "Down", "Right", "Up"]


def _stepper(env, actions):
    env.reset(seed=0)
    state = {"i": 0}

    def step():
        i = state["i"] = (state["i"] + 1) % len(actions)
        _, _, terminated, truncated, _ = env.step(actions[i])
        if terminated or truncated:
            env.reset()

    return step


def test_gymnasium_frozenlake_step(benchmark):
    env = gym.make("FrozenLake-v1", map_name="4x4", is_slippery=False)
    benchmark(_stepper(env, MOVES))


def test_rllm_frozenlake_step(benchmark):
    env = gym.make("rllm/FrozenLake-v0", map_name="4x4", max_turns=100)
    benchmark.extra_info.update(baseline="test_gymnasium_frozenlake_step", goal=10)
    benchmark(_stepper(env, [NAMES[a] for a in MOVES]))


def test_rllm_frozenlake_step_free_text(benchmark):
    env = gym.make("rllm/FrozenLake-v0", map_name="4x4", max_turns=100)
    benchmark.extra_info.update(baseline="test_gymnasium_frozenlake_step", goal=10)
    replies = [f"<think>the hole is near, so...</think> <action>{NAMES[a]}</action>" for a in MOVES]
    benchmark(_stepper(env, replies))
