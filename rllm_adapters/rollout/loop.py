"""The asynchronous loop: episodes on env workers, each turn as soon as its env step returns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from rllm_adapters.backends.base import Policy
from rllm_adapters.env_workers import EnvFactory, EnvWorker
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.rollout.config import EpisodeSpec, RolloutConfig, RolloutStats, episode_specs
from rllm_adapters.rollout.episode import AgentLike, EpisodeRunner
from rllm_adapters.rollout.pool import EnvPool, env_factory
from rllm_adapters.rollout.progress import progress_bar, update_progress
from rllm_adapters.rollout.vector import vector_stream
from rllm_agents.chat import ChatTokenizer
from rllm_agents.trajectory import Trajectory

__all__ = ["EnvLike", "rollout", "rollout_stream"]

EnvLike = str | EnvFactory | Callable[[], gym.Env] | gym.vector.VectorEnv | EnvPool


def _chat_for(policy: Policy, config: RolloutConfig) -> ChatTokenizer | None:
    mode = config.mode
    if mode == "auto":
        mode = "tokens" if policy.supports_token_ids else "chat"
    if mode == "chat":
        return None
    if not policy.supports_token_ids:
        raise AdapterConfigError(
            f"mode='tokens' needs a backend with a local tokenizer; {policy.name} has none. "
            "Pass a tokenizer to the backend or use mode='chat'."
        )
    return ChatTokenizer(policy.tokenizer, chat_template_kwargs=config.chat_template_kwargs)


async def rollout_stream(
    env: EnvLike,
    policy: Policy,
    config: RolloutConfig | None = None,
    *,
    tasks: Sequence[int | Mapping[str, Any]] | None = None,
    num_tasks: int | None = None,
    num_episodes: int | None = None,
    agent: AgentLike = None,
    env_kwargs: Mapping[str, Any] | None = None,
    stats: RolloutStats | None = None,
) -> AsyncIterator[Trajectory]:
    """Run episodes concurrently and yield each trajectory as soon as it finishes.

    Args:
        env: An env id, an :class:`EnvFactory`, a picklable zero-argument callable returning
            an env, an :class:`EnvPool` (workers reused across calls) or a ``gymnasium``
            vector env.
        policy: The backend.
        config: Rollout settings.
        tasks: Task indices or task records, one group of ``group_size`` samples each.
        num_tasks: Number of task groups, each reset with seed ``config.seed + group``
            (default: ``num_envs // group_size``).
        num_episodes: For a vector env only: episodes to collect (default: its ``num_envs``).
        agent: Agent override (name, class or instance); default from the env id.
        env_kwargs: Env constructor kwargs when ``env`` is an id.
        stats: Filled with running totals.

    Yields:
        Finished trajectories, in completion order.
    """
    config = config or RolloutConfig()
    stats = stats if stats is not None else RolloutStats()
    runner = EpisodeRunner(policy, _chat_for(policy, config), config, agent)
    if isinstance(env, gym.vector.VectorEnv):
        async for trajectory in vector_stream(env, runner, config, num_episodes, stats):
            yield trajectory
        return
    if num_episodes is not None:
        raise AdapterConfigError("`num_episodes` is for vector envs; pass `num_tasks` or `tasks`.")
    specs = episode_specs(config, tasks, num_tasks)
    count = min(config.num_envs, len(specs))
    pool = env if isinstance(env, EnvPool) else None
    if pool is None:
        pool = EnvPool(
            env_factory(env, env_kwargs),
            count,
            backend=config.env_backend,
            ray_actor_options=config.ray_actor_options,
        )
    elif env_kwargs:
        raise AdapterConfigError("`env_kwargs` only applies when `env` is an id.")
    owned = pool is not env
    bar = None
    tasks_running: list[asyncio.Task[None]] = []
    try:
        workers = (await pool.start())[:count]
        bar = progress_bar(len(specs), workers[0].env_id, config.progress)
        pending: asyncio.Queue[EpisodeSpec] = asyncio.Queue()
        for spec in specs:
            pending.put_nowait(spec)
        done: asyncio.Queue[Trajectory | BaseException] = asyncio.Queue()

        async def work(worker: EnvWorker) -> None:
            while True:
                try:
                    spec = pending.get_nowait()
                except asyncio.QueueEmpty:
                    return
                try:
                    done.put_nowait(await runner.run(worker, spec))
                except asyncio.CancelledError:
                    raise
                except BaseException as e:  # surfaced to the consumer, then everything stops
                    done.put_nowait(e)
                    return

        tasks_running = [asyncio.create_task(work(w)) for w in workers]
        for _ in range(len(specs)):
            item = await done.get()
            if isinstance(item, BaseException):
                raise item
            stats.add(item)
            update_progress(bar, stats)
            yield item
    finally:
        for task in tasks_running:
            task.cancel()
        await asyncio.gather(*tasks_running, return_exceptions=True)
        if owned:
            await pool.aclose()
        if bar is not None:
            bar.close()


def rollout(
    env: EnvLike,
    policy: Policy,
    config: RolloutConfig | None = None,
    **kwargs: Any,
) -> list[Trajectory]:
    """Synchronous :func:`rollout_stream`: run everything and return the trajectories.

    The trajectories are sorted by episode (group, then sample). Must not be called from a
    running event loop (use :func:`rollout_stream` there).
    """

    async def collect() -> list[Trajectory]:
        return [t async for t in rollout_stream(env, policy, config, **kwargs)]

    out = asyncio.run(collect())
    return sorted(out, key=lambda t: (t.group, t.sample))
