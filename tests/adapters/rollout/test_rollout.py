"""The rollout loop on the transformers backend: every registered env, groups, vector envs,
env workers, streaming, limits and the command line."""

from __future__ import annotations

import asyncio
import threading
import time

import gymnasium as gym
import pytest

import rllm_envs
from rllm_adapters.backends.base import SamplingParams
from rllm_adapters.env_workers import EnvFactory
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.rollout import RolloutConfig, RolloutStats, rollout, rollout_stream
from rllm_envs.error import DependencyNotInstalled
from tests.adapters.helpers import assert_token_exact

pytest.importorskip("torch")

SMALL = SamplingParams(max_tokens=8, temperature=1.0, seed=0)
SINGLE_AGENT_IDS = [entry.id for entry in rllm_envs.ENVS]


def small_config(**overrides) -> RolloutConfig:
    fields = dict(num_envs=4, group_size=2, sampling=SMALL, max_turns=2, progress=False)
    fields.update(overrides)
    return RolloutConfig(**fields)


def buildable(env_id: str) -> None:
    try:
        gym.make(env_id).close()
    except DependencyNotInstalled as e:
        pytest.skip(f"{env_id}: {e}")


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS)
def test_token_exact_on_every_registered_env(env_id, hf_policy):
    """The invariant on every registered single-agent env (new envs are picked up here)."""
    buildable(env_id)
    trajectories = rollout(env_id, hf_policy, small_config(), num_tasks=1)
    assert len(trajectories) == 2
    for t in trajectories:
        assert t.env_id == env_id and t.num_turns >= 1
        assert t.finish in ("terminated", "truncated")
        assert_token_exact(t, hf_policy.tokenizer)
        assert t.messages[-1]["role"] in ("assistant", "user", "tool")
        assert all(s.finish_reason in ("stop", "length") for s in t.steps)
        assert all(len(s.completion_ids) <= SMALL.max_tokens for s in t.steps)
    # Both samples of the group played the same task.
    assert trajectories[0].task_id == trajectories[1].task_id
    assert trajectories[0].initial_observation == trajectories[1].initial_observation


def test_groups_share_tasks_and_groups_differ(hf_policy):
    config = small_config(group_size=3, num_envs=6, max_turns=1)
    trajectories = rollout("rllm/FrozenLake-v1", hf_policy, config, num_tasks=2)
    assert [(t.group, t.sample) for t in trajectories] == [(g, s) for g in (0, 1) for s in range(3)]
    by_group = {g: {t.initial_observation for t in trajectories if t.group == g} for g in (0, 1)}
    assert all(len(obs) == 1 for obs in by_group.values())
    assert by_group[0] != by_group[1]
    assert [t.seed for t in trajectories] == [0, 0, 0, 1, 1, 1]


def test_explicit_tasks_by_index_and_record(hf_policy):
    record = {"map": ["SF", "FG"]}
    trajectories = rollout(
        "rllm/FrozenLake-v1",
        hf_policy,
        small_config(group_size=1, max_turns=1),
        tasks=[3, record],
    )
    assert trajectories[0].initial_info["task_index"] == 3
    assert trajectories[1].task_id.startswith("custom-")
    assert "S F" in trajectories[1].initial_observation.replace("P", "S")


def test_stream_yields_trajectories_as_they_finish(hf_policy):
    stats = RolloutStats()

    async def collect():
        seen = []
        async for t in rollout_stream(
            "rllm/FrozenLake-v1", hf_policy, small_config(), num_tasks=2, stats=stats
        ):
            seen.append((t.group, t.sample, stats.episodes))
        return seen

    seen = asyncio.run(collect())
    assert sorted((g, s) for g, s, _ in seen) == [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert [n for _, _, n in seen] == [1, 2, 3, 4]  # counted as each one streams out
    assert stats.completion_tokens > 0 and stats.turns >= 4


class SlowStepEnv(gym.Wrapper):
    """Counts env steps in flight at once (a sandbox-like slow step)."""

    lock = threading.Lock()
    active = 0
    peak = 0

    def step(self, action):
        cls = type(self)
        with cls.lock:
            cls.active += 1
            cls.peak = max(cls.peak, cls.active)
        time.sleep(0.2)
        try:
            return self.env.step(action)
        finally:
            with cls.lock:
                cls.active -= 1


def slow_frozenlake():
    return SlowStepEnv(gym.make("rllm/FrozenLake-v1"))


def test_env_steps_run_off_the_event_loop_concurrently(hf_policy):
    SlowStepEnv.peak = 0
    trajectories = rollout(
        slow_frozenlake, hf_policy, small_config(num_envs=4, group_size=1), num_tasks=4
    )
    assert len(trajectories) == 4
    assert SlowStepEnv.peak >= 2  # several episodes were inside env.step at the same time
    assert trajectories[0].env_id == "rllm/FrozenLake-v1"


def test_process_env_workers(hf_policy):
    trajectories = rollout(
        EnvFactory("rllm/FrozenLake-v1", {"difficulty": 2}),
        hf_policy,
        small_config(env_backend="process", num_envs=2),
        num_tasks=1,
    )
    assert len(trajectories) == 2
    assert "5" in trajectories[0].initial_observation  # a 5x5 board from the kwargs
    for t in trajectories:
        assert_token_exact(t, hf_policy.tokenizer)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gymnasium_vector_env_input(mode, hf_policy):
    vec = gym.make_vec("rllm/FrozenLake-v1", num_envs=2, vectorization_mode=mode, max_turns=3)
    try:
        trajectories = rollout(vec, hf_policy, small_config(max_turns=None), num_episodes=3)
    finally:
        vec.close()
    assert len(trajectories) == 3
    for t in trajectories:
        assert_token_exact(t, hf_policy.tokenizer)
        assert t.finish in ("terminated", "truncated")
        # Whole episodes: the env's own turn limit or a terminal state.
        assert t.num_turns == 3 or t.steps[-1].terminated


def test_vector_env_same_step_autoreset_and_turn_cap(hf_policy):
    from gymnasium.vector import AutoresetMode

    vec = gym.make_vec(
        "rllm/FrozenLake-v1",
        num_envs=2,
        vectorization_mode="sync",
        max_turns=4,
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
    )
    try:
        trajectories = rollout(vec, hf_policy, small_config(max_turns=2), num_episodes=4)
    finally:
        vec.close()
    assert len(trajectories) == 4
    assert all(t.num_turns <= 2 for t in trajectories)
    for t in trajectories:
        assert_token_exact(t, hf_policy.tokenizer)


def test_context_limit_ends_the_episode(hf_policy):
    from rllm_adapters.backends.transformers import TransformersPolicy
    from rllm_agents import ChatTokenizer, make_agent

    env = gym.make("rllm/FrozenLake-v1")
    obs, info = env.reset(seed=0)
    first = ChatTokenizer(hf_policy.tokenizer).initial_prompt(
        make_agent("rllm/FrozenLake-v1").reset(obs, info)
    )
    # Room for the first reply (cut to 5 tokens) but not for the next observation.
    limit = len(first) + 5
    short = TransformersPolicy(hf_policy.model, hf_policy.tokenizer, max_model_len=limit)
    try:
        config = small_config(max_turns=None, group_size=1, num_envs=1)
        (t,) = rollout("rllm/FrozenLake-v1", short, config, num_tasks=1)
    finally:
        short.close()
    assert t.finish == "context"
    assert t.num_turns == 1 and len(t.steps[0].completion_ids) <= 5
    assert len(t.token_ids()) <= limit
    assert_token_exact(t, hf_policy.tokenizer)


def test_agent_override_and_system_prompt(hf_policy):
    config = small_config(max_turns=1, agent_kwargs={"system_prompt": "Be terse."})
    (t, _) = rollout("rllm/FrozenLake-v1", hf_policy, config, num_tasks=1, agent="generic")
    assert t.metadata["agent"] == "GenericAgent"
    assert t.messages[0] == {"role": "system", "content": "Be terse."}
    assert "Be terse." in hf_policy.tokenizer.decode(t.steps[0].prompt_ids)


def test_invalid_inputs_raise_early(hf_policy):
    env = gym.make("rllm/FrozenLake-v1")
    with pytest.raises(AdapterConfigError, match="single env instance"):
        rollout(env, hf_policy, small_config())
    with pytest.raises(AdapterConfigError, match="num_envs"):
        RolloutConfig(num_envs=0)
    with pytest.raises(AdapterConfigError, match="env_backend"):
        RolloutConfig(env_backend="gpu")
    with pytest.raises(AdapterConfigError, match="either"):
        rollout("rllm/FrozenLake-v1", hf_policy, small_config(), tasks=[0], num_tasks=1)
    with pytest.raises(AdapterConfigError, match="max_tokens"):
        SamplingParams(max_tokens=0)


def test_env_pool_is_reused_across_rollouts(hf_policy):
    from rllm_adapters.rollout import EnvPool

    with EnvPool("rllm/FrozenLake-v1", 2, env_kwargs={"max_turns": 2}) as pool:
        first = rollout(pool, hf_policy, small_config(max_turns=None), num_tasks=1)
        envs = [w.env for w in pool.workers]
        second = rollout(pool, hf_policy, small_config(max_turns=None), num_tasks=2)
        assert [w.env for w in pool.workers] == envs  # same env objects, not rebuilt
    assert pool.workers == []
    assert len(first) == 2 and len(second) == 4
    assert first[0].initial_observation == second[0].initial_observation  # same seed, task
    for t in first + second:
        assert t.num_turns <= 2
        assert_token_exact(t, hf_policy.tokenizer)


def test_a_workers_turn_limit_is_the_envs_so_its_last_turn_settles_the_episode():
    """s36 att36i: the loop's own `max_turns` cut FrozenLake episodes short of the env's
    limit, so the refund of progress on an episode without the goal never ran (+0.83 a map
    on the committed config with the rollout's `max_turns=12`). The worker tells the env."""
    from rllm_adapters.env_workers import ProcessEnvWorker, ThreadEnvWorker
    from rllm_envs.frozenlake import FrozenLakeEnv

    kwargs = {
        "desc": ["SFFF", "FHFH", "FFFH", "HFFG"],
        "reward_weights": {"progress": 1.0},
    }

    async def play(worker) -> tuple[float, bool, int]:
        _, info = await worker.reset(seed=0, max_turns=3)
        total, truncated = 0.0, False
        for move in ("Right", "Right", "Down"):
            _, _, _, truncated, step_info = await worker.step(move)
            total += step_info["reward_components"]["progress"]
        await worker.close()
        return total, truncated, info["max_turns"]

    for worker in (
        ThreadEnvWorker(FrozenLakeEnv(**kwargs)),
        ProcessEnvWorker(EnvFactory("rllm/FrozenLake-v1", kwargs)),
    ):
        total, truncated, limit = asyncio.run(play(worker))
        assert limit == 3 and truncated and total == pytest.approx(0.0)


def test_the_rollout_loops_turn_limit_reaches_the_env(hf_policy):
    trajectories = rollout(
        "rllm/FrozenLake-v1",
        hf_policy,
        small_config(group_size=1, num_envs=2, max_turns=2),
        num_tasks=2,
        env_kwargs={"reward_weights": {"progress": 1.0}},
    )
    for t in trajectories:
        assert t.initial_info["max_turns"] == 2
        if not t.steps[-1].terminated:
            assert t.steps[-1].truncated  # the env's own truncation, on the loop's last turn
            progress = sum(s.info["reward_components"]["progress"] for s in t.steps)
            assert progress == pytest.approx(0.0)


def test_a_vector_envs_sub_envs_take_the_loops_turn_limit(hf_policy):
    """s37 att37g F1: a vector env's sub-envs reset themselves, without the option: the
    loop's `max_turns` cut their episodes and FrozenLake kept the progress (0.588 a map)."""
    vec = gym.make_vec(
        "rllm/FrozenLake-v1",
        num_envs=2,
        vectorization_mode="sync",
        reward_weights={"progress": 1.0},
    )
    try:
        trajectories = rollout(vec, hf_policy, small_config(max_turns=2), num_episodes=4)
        assert vec.get_attr("max_turns") == (2, 2)
    finally:
        vec.close()
    for t in trajectories:
        if not any(s.terminated for s in t.steps):
            progress = sum(s.info["reward_components"]["progress"] for s in t.steps)
            assert progress == pytest.approx(0.0)
