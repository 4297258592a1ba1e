"""The conformance matrix: every registered id goes through every contract test.

Registering an env in ``rllm_envs.ENVS`` enrols it here automatically; test names carry the id.
"""

from __future__ import annotations

import pickle
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rllm_envs
from rllm_envs.core import INFO_KEYS, STEP_INFO_KEYS, TextEnv
from rllm_envs.spaces import UnicodeText
from tests.envs.conformance import (
    ALL_ENTRIES,
    ALL_IDS,
    DOC_SECTIONS,
    garbage,
    make_or_skip,
    oracle,
    run_episode,
)

pytestmark = pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)


def test_check_env_without_warnings(entry):
    env = make_or_skip(entry.id)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env.unwrapped, skip_render_check=True)
    messages = [str(w.message) for w in caught]
    assert messages == [], messages
    env.close()


def test_passive_checker_make_reset_step(entry):
    env = make_or_skip(entry.id)  # gym.make adds the PassiveEnvChecker and OrderEnforcing
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and obs.strip()
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert isinstance(obs, str) and isinstance(reward, float)
    env.close()


def test_spaces_are_unicode_text(entry):
    env = make_or_skip(entry.id)
    assert isinstance(env.unwrapped, TextEnv)
    assert isinstance(env.observation_space, UnicodeText)
    assert isinstance(env.action_space, UnicodeText)
    env.close()


def test_docstring_is_a_documentation_page(entry):
    env = make_or_skip(entry.id)
    doc = type(env.unwrapped).__doc__ or ""
    missing = [s for s in DOC_SECTIONS if s not in doc]
    assert not missing, f"{entry.id} docstring lacks sections {missing}"
    env.close()


def test_info_keys_are_stable(entry):
    env = make_or_skip(entry.id)
    _, info = env.reset(seed=1)
    assert set(INFO_KEYS) <= set(info)
    assert info["turn"] == 0
    _, _, _, _, info = env.step(env.unwrapped.oracle_action())
    assert set(INFO_KEYS + STEP_INFO_KEYS) <= set(info)
    assert info["turn"] == 1
    assert set(info["reward_components"]) == set(env.unwrapped.default_reward_weights)
    env.close()


def _mixed_policy(rng: np.random.Generator):
    def policy(env, obs, info):
        if rng.random() < 0.5:
            return env.unwrapped.oracle_action()
        return env.action_space.sample()

    return policy


def test_seeded_determinism(entry):
    if entry.nondeterministic:
        pytest.skip(f"{entry.id} is registered nondeterministic")
    runs = []
    for _ in range(2):
        env = make_or_skip(entry.id)
        env.action_space.seed(7)
        runs.append(run_episode(env, _mixed_policy(np.random.default_rng(7)), seed=123))
        env.close()
    assert runs[0] == runs[1]


def test_different_seeds_give_different_tasks(entry):
    env = make_or_skip(entry.id)
    ids = {env.reset(seed=s)[1]["task_id"] for s in range(8)}
    observations = {env.reset(seed=s)[0] for s in range(8)}
    env.close()
    if len(env.unwrapped.tasks) > 1:
        assert len(ids) > 1 and len(observations) > 1


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_vector_env_returns_real_text(entry, mode):
    single = make_or_skip(entry.id)
    expected = [single.reset(seed=s)[0] for s in (3, 4)]
    single.close()
    venv = gym.make_vec(entry.id, num_envs=2, vectorization_mode=mode)
    try:
        obs, infos = venv.reset(seed=[3, 4])
        assert list(obs) == expected
        actions = list(venv.call("oracle_action"))
        obs, rewards, terminated, truncated, infos = venv.step(actions)
        assert all(isinstance(o, str) for o in obs)
        assert rewards.shape == (2,)
    finally:
        venv.close()


def test_pickle_round_trip_mid_episode(entry):
    env = make_or_skip(entry.id)
    env.reset(seed=5)
    action = env.unwrapped.oracle_action()
    clone = pickle.loads(pickle.dumps(env))
    a = env.step(action)
    b = clone.step(action)
    assert a == b
    env.close()
    clone.close()


def test_oracle_reaches_reward_one(entry):
    env = make_or_skip(entry.id)
    for seed in range(5):
        steps = run_episode(env, oracle, seed=seed)
        total = sum(s[1] for s in steps)
        assert steps[-1][4]["is_correct"], f"seed {seed}: oracle did not solve the task"
        assert total == pytest.approx(1.0), f"seed {seed}: oracle return {total}"
    env.close()


def test_garbage_gets_zero(entry):
    env = make_or_skip(entry.id)
    for seed in range(3):
        steps = run_episode(env, garbage, seed=seed)
        assert sum(s[1] for s in steps) <= 0.0
        assert not steps[-1][4]["is_correct"]
        assert any(s[4].get("invalid_action") for s in steps[1:])
    env.close()


def test_huge_and_odd_actions_never_raise(entry):
    env = make_or_skip(entry.id)
    for action in ["", "x" * 1_000_000, "\x00\ud800\uffff", None, b"\xff\xfe", 42]:
        env.reset(seed=0)
        obs, reward, terminated, truncated, info = env.unwrapped.step(action)
        assert obs in env.observation_space
        assert isinstance(reward, float)
    assert info["action_truncated"] is False
    env.reset(seed=0)
    *_, info = env.unwrapped.step("y" * (env.action_space.max_length + 1))
    assert info["action_truncated"] is True
    env.close()


def test_step_before_reset_is_a_programmer_error(entry):
    env = make_or_skip(entry.id).unwrapped
    with pytest.raises(gym.error.ResetNeeded):
        env.step("anything")


def test_reset_options_select_a_task(entry):
    env = make_or_skip(entry.id)
    obs_a, info_a = env.reset(seed=0, options={"index": 0})
    obs_b, info_b = env.reset(seed=99, options={"index": 0})
    assert obs_a == obs_b and info_a["task_index"] == 0
    task = env.unwrapped.task
    obs_c, info_c = env.reset(options={"task": task})
    assert obs_c == obs_a and info_c["task_index"] is None
    with pytest.raises(rllm_envs.InvalidEnvConfig):
        env.reset(options={"indx": 0})
    env.close()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(st.text(max_size=400), min_size=1, max_size=6), seed=st.integers(0, 50))
def test_random_unicode_actions_never_raise(entry, actions, seed):
    env = make_or_skip(entry.id).unwrapped
    env.reset(seed=seed)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space
        assert 0.0 <= abs(reward) < float("inf")
        assert set(STEP_INFO_KEYS) <= set(info)
        if terminated or truncated:
            env.reset(seed=seed)
    env.close()


def test_random_action_is_a_string_and_keeps_the_episode_seeded(entry):
    env = make_or_skip(entry.id).unwrapped
    env.reset(seed=0)
    state = env.np_random.bit_generator.state
    actions = [env.random_action() for _ in range(5)]
    assert all(isinstance(a, str) and a in env.action_space for a in actions)
    assert env.np_random.bit_generator.state == state
    env.close()
