"""Env workers in Ray actors: step envs on any node of a Ray cluster.

Each :class:`RayEnvWorker` owns one env inside a Ray actor; the rollout loop awaits the actor's
``reset``/``step`` like any other :class:`rllm_adapters.env_workers.EnvWorker`, so generation on the
driver overlaps env steps anywhere in the cluster (for example sandboxed code execution on CPU
nodes while the GPUs generate).

Single machine::

    import ray
    from rllm_adapters.rollout import RolloutConfig, rollout

    ray.init(num_cpus=4)
    trajectories = rollout("rllm/FrozenLake-v1", policy, RolloutConfig(env_backend="ray"))

Multi-node: start a head node (``ray start --head --port=6379``) and workers on other machines
(``ray start --address=<head-ip>:6379``), each with ``rllm-envs`` (and the env's extras and
sandbox packages) installed, then call ``ray.init(address="auto")`` on the driver before the
rollout. ``RolloutConfig(ray_actor_options={"num_cpus": 1, "resources": {...}})`` places the
actors (e.g. on nodes that advertise a custom ``sandbox`` resource).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym

from rllm_adapters.env_workers import EnvWorker
from rllm_envs.error import require

__all__ = ["RayEnvWorker", "ray_env_actor_class"]

_ACTOR_CLASS: Any = None


class _EnvActor:
    """The body of the Ray actor (kept as a plain class so it pickles by reference)."""

    def __init__(self, factory: Callable[[], gym.Env]) -> None:
        self.env = factory()
        spec = getattr(self.env, "spec", None)
        self.env_id = spec.id if spec is not None else type(self.env.unwrapped).__name__

    def get_env_id(self) -> str:
        return self.env_id

    def reset(
        self, seed: int | None, options: dict[str, Any] | None, max_turns: int | None = None
    ) -> Any:
        from rllm_adapters.env_workers import reset_env

        return reset_env(self.env, seed, options, max_turns)

    def step(self, action: Any) -> Any:
        return self.env.step(action)

    def settle(self) -> Any:
        from rllm_adapters.env_workers import settle_env

        return settle_env(self.env)

    def close(self) -> None:
        self.env.close()


def ray_env_actor_class() -> Any:
    """The ``ray.remote`` actor class (created on first use so Ray stays optional)."""
    global _ACTOR_CLASS
    if _ACTOR_CLASS is None:
        ray = require("ray", "ray", feature="Ray env workers")
        _ACTOR_CLASS = ray.remote(_EnvActor)
    return _ACTOR_CLASS


class RayEnvWorker(EnvWorker):
    """One env in a Ray actor.

    Ray must be initialised (``ray.init(...)``) before the first worker is created; if it is
    not, a local Ray instance is started with Ray's defaults.

    Args:
        factory: A picklable callable building the env (e.g. :class:`EnvFactory`).
        actor_options: ``.options(...)`` for the actor (``num_cpus``, ``resources``, ...).
    """

    def __init__(
        self, factory: Callable[[], gym.Env], actor_options: dict[str, Any] | None = None
    ) -> None:
        ray = require("ray", "ray", feature="Ray env workers")
        self._ray = ray
        options = {"num_cpus": 0.5, **(actor_options or {})}
        self.actor = ray_env_actor_class().options(**options).remote(factory)
        self.env_id = ray.get(self.actor.get_env_id.remote())

    async def reset(
        self,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """``env.reset`` in the actor."""
        return await self.actor.reset.remote(seed, options, max_turns)

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.step`` in the actor."""
        return await self.actor.step.remote(action)

    async def settle(self) -> tuple[float, dict[str, float]]:
        """:func:`~rllm_adapters.env_workers.settle_env` in the actor."""
        return await self.actor.settle.remote()

    async def close(self) -> None:
        """Close the env and kill the actor."""
        try:
            await self.actor.close.remote()
        finally:
            self._ray.kill(self.actor)
