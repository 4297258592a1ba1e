"""Behaviour of rllm/FrozenLake-v1 beyond the shared conformance matrix."""

from __future__ import annotations

import re

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.toy_text.frozen_lake import MAPS

import rllm_envs
from rllm_envs.frozenlake import DIFFICULTY_PRESETS, FrozenLakeEnv
from tests.envs.conformance import oracle, run_episode


def test_quickstart_prints_a_readable_board_and_instructions():
    env = gym.make("rllm/FrozenLake-v1")
    obs, info = env.reset(seed=0)
    assert "P" in obs and "G" in obs and "Legend" in obs
    assert "Right" in obs and "<action>" in obs
    start = next(
        [r, c] for r, row in enumerate(info["map"]) for c, ch in enumerate(row) if ch == "S"
    )
    assert info["position"] == start and info["turn"] == 0


def test_make_with_module_prefix_works_without_prior_import():
    import subprocess
    import sys

    code = (
        "import gymnasium as gym; env = gym.make('rllm_envs:rllm/FrozenLake-v1'); "
        "print(env.reset(seed=0)[0][:40])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "FrozenLake" in out.stdout


def test_fixed_map_4x4_is_gymnasiums_classic_layout():
    env = gym.make("rllm/FrozenLake-v1", map_name="4x4")
    _, info = env.reset(seed=0)
    assert info["map"] == MAPS["4x4"]
    assert {env.reset(seed=s)[1]["task_id"] for s in range(5)} == {"frozenlake-4x4-s0-0"}


def test_random_maps_depend_on_seed_and_have_a_path():
    env = FrozenLakeEnv(difficulty=4)
    maps = set()
    for seed in range(10):
        steps = run_episode(env, oracle, seed=seed)
        maps.add(tuple(steps[0][4]["map"]))
        assert steps[-1][4]["is_correct"]
        assert len(steps[0][4]["map"]) == DIFFICULTY_PRESETS[4][0]
    assert len(maps) > 5


def test_task_is_a_pure_function_of_task_seed_index_and_difficulty():
    a = FrozenLakeEnv(difficulty=3, task_seed=1).tasks[17]
    b = FrozenLakeEnv(difficulty=3, task_seed=1).tasks[17]
    c = FrozenLakeEnv(difficulty=3, task_seed=2).tasks[17]
    assert a == b and a["map"] != c["map"]


def test_dynamics_match_gymnasium_frozenlake_step_for_step():
    ours = gym.make("rllm/FrozenLake-v1", map_name="8x8", is_slippery=True, max_turns=200)
    theirs = gym.make("FrozenLake-v1", map_name="8x8", is_slippery=True)
    ours.reset(seed=11)
    theirs.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(200):
        a = int(rng.integers(4))
        _, _, t1, _, info = ours.step(rllm_envs.frozenlake.ACTION_NAMES[a])
        s2, r2, t2, _, _ = theirs.step(a)
        assert info["position"] == [s2 // 8, s2 % 8]
        # Gymnasium's reward is our `success` component (ours also charges a fall).
        assert (info["reward_components"]["success"], t1) == (float(r2), t2)
        if t1:
            seed = int(rng.integers(1000))
            ours.reset(seed=seed)
            theirs.reset(seed=seed)


def test_goal_hole_blocked_and_invalid_outcomes():
    env = FrozenLakeEnv(desc=["SH", "FG"], max_turns=5)
    env.reset(seed=0)
    *_, info = env.step("up")
    assert info["outcome"] == "blocked" and info["position"] == [0, 0]
    _, reward, terminated, _, info = env.step("What should I do?")
    assert info["outcome"] == "invalid" and info["invalid_action"] and reward == 0.0
    assert not terminated
    _, reward, terminated, _, info = env.step("Right")
    assert info["outcome"] == "hole" and terminated
    # The fall at turn 3 of 5 costs the default -0.05; one unreadable reply in 3 turns charges
    # the 2 skipped turns 2/3 of an unreadable reply (the invalid-action weight is 0 here).
    assert info["reward_components"]["hole"] == 1.0 and reward == pytest.approx(-0.05)
    assert info["reward_components"]["invalid_action"] == pytest.approx(2 / 3)
    env.reset(seed=0)
    env.step("down")
    obs, reward, terminated, _, info = env.step("right")
    assert info["outcome"] == "goal" and terminated and reward == 1.0 and info["is_correct"]
    assert "win" in obs


@pytest.mark.parametrize("reply", ["32", "3.5", "31 steps", "\\boxed{31}", "<action>-2</action>"])
def test_a_number_is_an_invalid_action_not_its_leading_digit(reply):
    env = gym.make("rllm/FrozenLake-v1", map_name="8x8")
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(reply)
    assert info["outcome"] == "invalid" and info["invalid_action"] and info["action"] is None
    assert info["position"] == [0, 0] and reward == 0.0 and not (terminated or truncated)
    assert obs.startswith("Invalid action:") and "Left, Down, Right, Up" in obs


def test_echoing_the_move_counter_does_not_walk_the_fixed_map():
    # Each turn, the move counter of the last observation, as the reward-hacking check's echo
    # policies reply: with leading digits read as moves it reached the 8x8 goal every time.
    env = gym.make("rllm/FrozenLake-v1", map_name="8x8")
    obs, _ = env.reset(seed=0)
    for _ in range(64):
        counter = re.findall(r"\d+", obs.splitlines()[-1]) or ["0"]
        obs, _, terminated, truncated, info = env.step(f"\\boxed{{{counter[-1]}}}")
        if terminated or truncated:
            break
    assert not info["is_correct"]


def test_turn_limit_truncates():
    env = FrozenLakeEnv(max_turns=3)
    env.reset(seed=0)
    results = [env.step("nothing") for _ in range(3)]
    assert [r[3] for r in results] == [False, False, True]
    assert not any(r[2] for r in results)


def test_invalid_action_penalty_via_reward_weights():
    env = FrozenLakeEnv(reward_weights={"invalid_action": -0.1})
    env.reset(seed=0)
    _, reward, *_ = env.step("??")
    assert reward == pytest.approx(-0.1)


def test_slippery_oracle_beats_random_by_far():
    env = FrozenLakeEnv(map_name="4x4", is_slippery=True, max_turns=100)
    rng = np.random.default_rng(0)

    def random_policy(env, obs, info):
        return rllm_envs.frozenlake.ACTION_NAMES[int(rng.integers(4))]

    def success(policy):
        return np.mean([run_episode(env, policy, seed=s)[-1][4]["is_correct"] for s in range(200)])

    # Gymnasium's 4x4 slippery optimum is ~0.74 with enough steps; random is ~0.015.
    assert success(oracle) > 0.6
    assert success(random_policy) < 0.1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"difficulty": 9}, "difficulty"),
        ({"size": 1}, "size"),
        ({"hole_density": 0.9}, "hole_density"),
        ({"map_name": "5x5"}, "map_name"),
        ({"map_name": "4x4", "desc": ["SG"]}, "not both"),
        ({"desc": ["SX", "FG"]}, "desc"),
        ({"max_turns": 0}, "max_turns"),
        ({"reward_weights": {"sucess": 1.0}}, "Did you mean `success`"),
        ({"render_mode": "rgb_array"}, "render_mode"),
    ],
)
def test_bad_kwargs_raise_with_a_fix(kwargs, match):
    with pytest.raises(rllm_envs.InvalidEnvConfig, match=match):
        FrozenLakeEnv(**kwargs)


def test_bad_task_record_is_a_programmer_error():
    env = FrozenLakeEnv()
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="FrozenLake task"):
        env.reset(options={"task": {"map": ["FFF"]}})
    obs, info = env.reset(options={"task": {"map": ["SFG"]}})
    assert info["task_id"].startswith("custom-") and info["map"] == ["SFG"]


def test_render_ansi_has_no_escape_codes():
    env = FrozenLakeEnv(render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert isinstance(text, str) and "P" in text and "\x1b" not in text
