"""Env workers kept across rollouts (:class:`EnvPool`) and how an ``env`` argument becomes them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym

from rllm_adapters.env_workers import EnvFactory, EnvWorker, ProcessEnvWorker, ThreadEnvWorker
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.rollout.config import ENV_BACKENDS

__all__ = ["EnvPool", "env_factory"]


def env_factory(env: Any, env_kwargs: Mapping[str, Any] | None) -> Callable[[], gym.Env]:
    """A zero-argument env constructor from an id (with kwargs) or a factory."""
    if isinstance(env, str):
        return EnvFactory(env, dict(env_kwargs or {}))
    if env_kwargs:
        raise AdapterConfigError("`env_kwargs` only applies when `env` is an id.")
    if isinstance(env, gym.Env):
        raise AdapterConfigError(
            "Expects `env` to be an id, an EnvFactory, a zero-argument callable or a vector "
            "env, actual: a single env instance (one instance cannot run several episodes at "
            "once; pass a factory such as `lambda: MyEnv()`)."
        )
    if not callable(env):
        raise AdapterConfigError(f"Expects `env` to be an id or a callable, actual: {env!r}.")
    return env


async def _make_workers(
    factory: Callable[[], gym.Env],
    count: int,
    backend: str,
    executor: Any,
    ray_actor_options: dict[str, Any] | None = None,
) -> list[EnvWorker]:
    if backend == "thread":
        envs = await asyncio.gather(*(asyncio.to_thread(factory) for _ in range(count)))
        return [ThreadEnvWorker(env, executor) for env in envs]
    if backend == "process":
        return list(
            await asyncio.gather(
                *(asyncio.to_thread(ProcessEnvWorker, factory) for _ in range(count))
            )
        )
    from rllm_adapters.ray_workers import RayEnvWorker

    return list(
        await asyncio.gather(
            *(asyncio.to_thread(RayEnvWorker, factory, ray_actor_options) for _ in range(count))
        )
    )


class EnvPool:
    """Env workers kept across rollouts: build envs once, reuse them for every rollout call.

    Trainers call the rollout once per iteration; a pool saves re-creating the envs (and
    processes or Ray actors) each time. Pass it as the ``env`` of
    :func:`~rllm_adapters.rollout.rollout` / :func:`~rllm_adapters.rollout.rollout_stream`; at most
    ``size`` episodes run at once. Close it when done (it is a context manager). After a
    rollout that raised, close the pool rather than reusing it.

    Args:
        env: An env id, an :class:`EnvFactory` or a picklable zero-argument callable.
        size: Number of env workers.
        backend: ``"thread"``, ``"process"`` or ``"ray"``.
        env_kwargs: Env constructor kwargs when ``env`` is an id.
        ray_actor_options: ``.options(...)`` of each Ray actor.
    """

    def __init__(
        self,
        env: str | EnvFactory | Callable[[], gym.Env],
        size: int,
        *,
        backend: str = "thread",
        env_kwargs: Mapping[str, Any] | None = None,
        ray_actor_options: dict[str, Any] | None = None,
    ) -> None:
        if size < 1:
            raise AdapterConfigError(f"Expects an EnvPool `size` >= 1, actual: {size!r}.")
        if backend not in ENV_BACKENDS:
            raise AdapterConfigError(f"Expects `backend` in {ENV_BACKENDS}, actual: {backend!r}.")
        self.factory = env_factory(env, env_kwargs)
        self.size = size
        self.backend = backend
        self.ray_actor_options = ray_actor_options
        self.executor = ThreadPoolExecutor(max_workers=size, thread_name_prefix="rllm-env")
        self.workers: list[EnvWorker] = []

    async def start(self) -> list[EnvWorker]:
        """Create the workers (once) and return them."""
        if not self.workers:
            self.workers = await _make_workers(
                self.factory, self.size, self.backend, self.executor, self.ray_actor_options
            )
        return self.workers

    async def aclose(self) -> None:
        """Close every env and worker."""
        workers, self.workers = self.workers, []
        await asyncio.gather(*(w.close() for w in workers), return_exceptions=True)
        self.executor.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        """Close every env and worker (from synchronous code)."""
        asyncio.run(self.aclose())

    def __enter__(self) -> EnvPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
