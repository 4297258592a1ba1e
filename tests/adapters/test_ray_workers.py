"""Env workers in Ray actors, on a small local Ray instance that is always shut down."""

from __future__ import annotations

import time

import pytest

ray = pytest.importorskip("ray")

from rllm_adapters.backends.base import SamplingParams  # noqa: E402
from rllm_adapters.env_workers import EnvFactory  # noqa: E402
from rllm_adapters.ray_workers import RayEnvWorker  # noqa: E402
from rllm_adapters.rollout import RolloutConfig, rollout  # noqa: E402
from tests.adapters.helpers import assert_token_exact  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        object_store_memory=80 * 1024 * 1024,
    )
    try:
        yield
    finally:
        ray.shutdown()


def test_rollout_steps_envs_in_ray_actors(local_ray, hf_policy):
    config = RolloutConfig(
        num_envs=2,
        group_size=2,
        sampling=SamplingParams(max_tokens=8, seed=0),
        max_turns=2,
        env_backend="ray",
        ray_actor_options={"num_cpus": 0.5},
        progress=False,
    )
    trajectories = rollout(
        EnvFactory("rllm/FrozenLake-v1", {"difficulty": 2}), hf_policy, config, num_tasks=1
    )
    assert len(trajectories) == 2
    for t in trajectories:
        assert t.env_id == "rllm/FrozenLake-v1"
        assert_token_exact(t, hf_policy.tokenizer)
    # The actors are gone once the rollout ends: their CPU reservations come back.
    deadline = time.monotonic() + 30
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU", 0) == 2


def test_ray_worker_matches_a_local_env(local_ray):
    import asyncio

    import gymnasium as gym

    import rllm_envs  # noqa: F401

    kwargs = {"reward_weights": {"progress": 1.0}}

    async def remote():
        worker = RayEnvWorker(EnvFactory("rllm/FrozenLake-v1", kwargs))
        try:
            first = await worker.reset(seed=5)
            step = await worker.step("Down")
            closing = await worker.settle()
        finally:
            await worker.close()
        return first, step, closing

    (obs, info), step, closing = asyncio.run(remote())
    env = gym.make("rllm/FrozenLake-v1", **kwargs)
    local_obs, local_info = env.reset(seed=5)
    assert obs == local_obs and info == local_info
    assert step[:4] == env.step("Down")[:4]
    assert closing == env.unwrapped.settle()  # a loop that stops the episode settles it
