"""The asynchronous rollout loop: many episodes at once, token-exact trajectories out.

::

    from adapters.backends import make_policy
    from adapters.rollout import RolloutConfig, rollout

    policy = make_policy("transformers", "tiny")        # or "vllm", "openai"
    config = RolloutConfig(num_envs=8, group_size=4)
    trajectories = rollout("rllm/FrozenLake-v0", policy, config, num_tasks=2)

How it runs:

* ``num_tasks`` tasks (or the given ``tasks``) times ``group_size`` samples are episodes; every
  sample of a task resets with the same seed (and task), so a group is G samples of one task.
* ``num_envs`` env workers each run one episode at a time. An episode asks the policy for its
  next action as soon as its previous env step returns: there are no lock-step batches; the
  backend batches whatever requests are in flight (vLLM continuously).
* Env calls run off the event loop -- in a thread pool, in worker processes or in Ray actors
  (``env_backend``) -- so a slow sandboxed step never stalls generation for other episodes.
* Finished trajectories stream out of :func:`rollout_stream` as they complete; a progress bar
  shows episodes, generated tokens/s and the mean reward.

Prompts are token-exact (:class:`rllm_agents.chat.ChatTokenizer`): each turn's prompt is the
previous prompt + completion + template glue + the new observation, and every trajectory is
checked against that invariant. Chat-only backends (an OpenAI-compatible chat API) give
``token_exact=False`` trajectories.

A ``gymnasium`` vector env (``gym.make_vec``) is accepted as the env too; it is stepped in
lock-step (its API needs every sub-env's action at once), with its autoreset mode honoured.

Command line (writes one JSONL or Parquet file per env)::

    python -m adapters.rollout --env all --backend vllm --model tiny --out rollouts/
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import math
import os
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import gymnasium as gym

from adapters.backends.base import Generation, Policy, SamplingParams
from adapters.env_workers import EnvFactory, EnvWorker, ProcessEnvWorker, ThreadEnvWorker
from rllm_agents.agent import Agent, make_agent
from rllm_agents.chat import ChatTokenizer
from rllm_agents.trajectory import Step, Trajectory, to_jsonable
from rllm_envs.error import InvalidEnvConfig

__all__ = [
    "EnvPool",
    "EpisodeSpec",
    "RolloutConfig",
    "RolloutStats",
    "main",
    "rollout",
    "rollout_stream",
    "single_agent_env_ids",
]

EnvLike = Union[str, EnvFactory, Callable[[], gym.Env], gym.vector.VectorEnv, "EnvPool"]
AgentLike = str | type[Agent] | Agent | None
_ENV_BACKENDS = ("thread", "process", "ray")
_MODES = ("auto", "tokens", "chat")


@dataclass
class RolloutConfig:
    """Settings of a rollout.

    Attributes:
        num_envs: Env workers, i.e. episodes in flight at once.
        group_size: Samples per task (G of GRPO); each group shares its reset seed and task.
        sampling: Sampling parameters of every turn (``max_tokens`` is per turn).
        env_backend: Where envs run: ``"thread"`` (default), ``"process"`` or ``"ray"``.
        ray_actor_options: ``.options(...)`` of each Ray env actor.
        seed: Base seed: task group ``g`` resets with ``seed + g``; with ``sampling.seed``
            set, each request's seed is derived from it, the episode and the turn.
        max_turns: Stop an episode after this many model turns even if the env has not ended
            (``None``: the env's own limit).
        mode: ``"tokens"`` (token-exact, needs a local tokenizer), ``"chat"`` (the backend's
            chat API) or ``"auto"`` (tokens when the backend has a tokenizer).
        agent_kwargs: Passed to the agent class (``system_prompt=``, ``think=``).
        chat_template_kwargs: Passed to the chat template (e.g. ``{"enable_thinking": False}``).
        check_token_exact: Verify the invariant on every finished trajectory (cheap).
        progress: Show a progress bar (on stderr).
    """

    num_envs: int = 16
    group_size: int = 1
    sampling: SamplingParams = field(default_factory=SamplingParams)
    env_backend: str = "thread"
    ray_actor_options: dict[str, Any] | None = None
    seed: int = 0
    max_turns: int | None = None
    mode: str = "auto"
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    check_token_exact: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        if self.num_envs < 1:
            raise InvalidEnvConfig(f"Expects `num_envs` >= 1, actual: {self.num_envs!r}.")
        if self.group_size < 1:
            raise InvalidEnvConfig(f"Expects `group_size` >= 1, actual: {self.group_size!r}.")
        if self.env_backend not in _ENV_BACKENDS:
            raise InvalidEnvConfig(
                f"Expects `env_backend` in {_ENV_BACKENDS}, actual: {self.env_backend!r}."
            )
        if self.mode not in _MODES:
            raise InvalidEnvConfig(f"Expects `mode` in {_MODES}, actual: {self.mode!r}.")
        if self.max_turns is not None and self.max_turns < 1:
            raise InvalidEnvConfig(f"Expects `max_turns` >= 1 or None, actual: {self.max_turns!r}.")


@dataclass(frozen=True)
class EpisodeSpec:
    """One episode to run: which task group and sample, and how to reset.

    Attributes:
        index: Position of the episode in the rollout.
        group: Task group (samples of one task share it).
        sample: Sample index within the group.
        seed: ``reset`` seed.
        options: ``reset`` options (``{"index": i}`` or ``{"task": record}``), or ``None``.
    """

    index: int
    group: int
    sample: int
    seed: int | None
    options: dict[str, Any] | None = None


@dataclass
class RolloutStats:
    """Running totals of a rollout (updated as episodes finish)."""

    episodes: int = 0
    turns: int = 0
    completion_tokens: int = 0
    total_reward: float = 0.0
    correct: int = 0
    started: float = field(default_factory=time.perf_counter)

    @property
    def elapsed(self) -> float:
        """Seconds since the rollout started."""
        return time.perf_counter() - self.started

    @property
    def tokens_per_second(self) -> float:
        """Generated tokens per second of wall time."""
        return self.completion_tokens / max(self.elapsed, 1e-9)

    @property
    def mean_reward(self) -> float:
        """Mean total reward per finished episode."""
        return self.total_reward / self.episodes if self.episodes else 0.0

    def add(self, trajectory: Trajectory) -> None:
        """Count a finished trajectory."""
        self.episodes += 1
        self.turns += trajectory.num_turns
        self.completion_tokens += trajectory.num_completion_tokens
        self.total_reward += trajectory.total_reward
        self.correct += int(trajectory.is_correct)


# ----------------------------------------------------------------------------- helpers


def _episode_specs(
    config: RolloutConfig,
    tasks: Sequence[int | Mapping[str, Any]] | None,
    num_tasks: int | None,
) -> list[EpisodeSpec]:
    if tasks is not None and num_tasks is not None:
        raise InvalidEnvConfig("Pass either `tasks` or `num_tasks`, not both.")
    groups: list[dict[str, Any] | None]
    if tasks is not None:
        groups = [{"index": int(t)} if isinstance(t, int) else {"task": dict(t)} for t in tasks]
    else:
        count = num_tasks if num_tasks is not None else max(1, config.num_envs // config.group_size)
        if count < 1:
            raise InvalidEnvConfig(f"Expects `num_tasks` >= 1, actual: {count!r}.")
        groups = [None] * count
    specs: list[EpisodeSpec] = []
    for g, options in enumerate(groups):
        for s in range(config.group_size):
            specs.append(EpisodeSpec(len(specs), g, s, config.seed + g, options))
    return specs


def _factory(env: EnvLike, env_kwargs: Mapping[str, Any] | None) -> Callable[[], gym.Env]:
    if isinstance(env, str):
        return EnvFactory(env, dict(env_kwargs or {}))
    if env_kwargs:
        raise InvalidEnvConfig("`env_kwargs` only applies when `env` is an id.")
    if isinstance(env, gym.Env):
        raise InvalidEnvConfig(
            "Expects `env` to be an id, an EnvFactory, a zero-argument callable or a vector "
            "env, actual: a single env instance (one instance cannot run several episodes at "
            "once; pass a factory such as `lambda: MyEnv()`)."
        )
    if not callable(env):
        raise InvalidEnvConfig(f"Expects `env` to be an id or a callable, actual: {env!r}.")
    return env


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # progress is optional
        return None
    return tqdm(total=total, desc=desc, unit="ep", dynamic_ncols=True, file=sys.stderr)


def _update_progress(bar: Any, stats: RolloutStats) -> None:
    if bar is None:
        return
    bar.update(1)
    bar.set_postfix(
        tok_s=f"{stats.tokens_per_second:.0f}", reward=f"{stats.mean_reward:.3f}", refresh=False
    )


class _Episode:
    """Runs one episode with an agent on an env worker through a policy."""

    def __init__(
        self,
        policy: Policy,
        chat: ChatTokenizer | None,
        config: RolloutConfig,
        agent_spec: AgentLike,
    ) -> None:
        self.policy = policy
        self.chat = chat
        self.config = config
        self.agent_spec = agent_spec

    def new_agent(self, env_id: str) -> Agent:
        if isinstance(self.agent_spec, Agent):
            # One conversation per episode: concurrent episodes need their own copy.
            return copy.deepcopy(self.agent_spec)
        return make_agent(env_id, self.agent_spec, **self.config.agent_kwargs)

    def params(self, prompt_len: int, episode: int, turn: int) -> SamplingParams | None:
        sampling = self.config.sampling
        changes: dict[str, Any] = {}
        limit = self.policy.max_model_len
        if limit is not None and self.chat is not None:
            budget = limit - prompt_len
            if budget < 1:
                return None
            if budget < sampling.max_tokens:
                changes["max_tokens"] = budget
        if sampling.seed is not None:
            changes["seed"] = (sampling.seed + 1_000_003 * episode + 7_919 * turn) % 2**31
        if self.chat is not None:
            extra = set(sampling.stop_token_ids) | set(self.chat.end_of_turn_ids)
            if extra != set(sampling.stop_token_ids):
                changes["stop_token_ids"] = tuple(sorted(extra))
        return sampling.with_(**changes) if changes else sampling

    async def start(
        self, observation: Any, info: Mapping[str, Any], env_id: str, spec: EpisodeSpec
    ) -> tuple[Agent, Trajectory, list[int]]:
        agent = self.new_agent(env_id)
        messages = agent.reset(str(observation), info)
        trajectory = Trajectory(
            env_id=env_id,
            task_id=None if info.get("task_id") is None else str(info.get("task_id")),
            seed=spec.seed,
            group=spec.group,
            sample=spec.sample,
            initial_observation=str(observation),
            initial_info=to_jsonable(dict(info)),
            token_exact=self.chat is not None,
            metadata={
                "policy": self.policy.name,
                "mode": "tokens" if self.chat is not None else "chat",
                "agent": type(agent).__name__,
            },
        )
        prompt = self.chat.initial_prompt(messages, agent.tools) if self.chat is not None else []
        return agent, trajectory, prompt

    async def generate(
        self, agent: Agent, prompt: list[int], spec: EpisodeSpec, turn: int
    ) -> tuple[Generation, list[int]] | None:
        params = self.params(len(prompt), spec.index, turn)
        if params is None:
            return None
        if self.chat is not None:
            return await self.policy.generate(prompt, params), prompt
        generation = await self.policy.chat(agent.messages, params, agent.tools)
        return generation, list(generation.prompt_ids or [])

    def record(
        self,
        trajectory: Trajectory,
        generation: Generation,
        prompt: list[int],
        action: str,
        transition: tuple[Any, Any, Any, Any, Any],
    ) -> Step:
        observation, reward, terminated, truncated, info = transition
        step = Step(
            prompt_ids=list(prompt),
            completion_ids=list(generation.completion_ids or []),
            logprobs=[float(x) for x in (generation.logprobs or [])],
            response=generation.text,
            action=action,
            observation=str(observation),
            reward=float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=to_jsonable(dict(info)),
            finish_reason=generation.finish_reason,
        )
        trajectory.steps.append(step)
        return step

    def finish(self, trajectory: Trajectory, agent: Agent, finish: str, started: float) -> None:
        trajectory.finish = finish
        trajectory.messages = list(agent.messages)
        trajectory.metadata["wall_s"] = round(time.perf_counter() - started, 4)
        if self.config.check_token_exact and trajectory.token_exact:
            trajectory.check_token_exact()

    async def run(self, worker: EnvWorker, spec: EpisodeSpec) -> Trajectory:
        started = time.perf_counter()
        observation, info = await worker.reset(seed=spec.seed, options=spec.options)
        agent, trajectory, prompt = await self.start(observation, info, worker.env_id, spec)
        turn = 0
        while True:
            result = await self.generate(agent, prompt, spec, turn)
            if result is None:
                self.finish(trajectory, agent, "context", started)
                return trajectory
            generation, used_prompt = result
            action = agent.act(generation.text)
            transition = await worker.step(action)
            step = self.record(trajectory, generation, used_prompt, action, transition)
            turn += 1
            if step.terminated or step.truncated:
                finish = "terminated" if step.terminated else "truncated"
                self.finish(trajectory, agent, finish, started)
                return trajectory
            if self.config.max_turns is not None and turn >= self.config.max_turns:
                self.finish(trajectory, agent, "truncated", started)
                return trajectory
            new_messages = agent.observe(
                step.observation, step.reward, step.terminated, step.truncated, transition[4]
            )
            if self.chat is not None:
                prompt = self.chat.append(
                    used_prompt, step.completion_ids, new_messages, agent.tools
                )


def _chat_for(policy: Policy, config: RolloutConfig) -> ChatTokenizer | None:
    mode = config.mode
    if mode == "auto":
        mode = "tokens" if policy.supports_token_ids else "chat"
    if mode == "chat":
        return None
    if not policy.supports_token_ids:
        raise InvalidEnvConfig(
            f"mode='tokens' needs a backend with a local tokenizer; {policy.name} has none. "
            "Pass a tokenizer to the backend or use mode='chat'."
        )
    return ChatTokenizer(policy.tokenizer, chat_template_kwargs=config.chat_template_kwargs)


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
    from adapters.ray_workers import RayEnvWorker

    return list(
        await asyncio.gather(
            *(asyncio.to_thread(RayEnvWorker, factory, ray_actor_options) for _ in range(count))
        )
    )


class EnvPool:
    """Env workers kept across rollouts: build envs once, reuse them for every rollout call.

    Trainers call the rollout once per iteration; a pool saves re-creating the envs (and
    processes or Ray actors) each time. Pass it as the ``env`` of :func:`rollout` /
    :func:`rollout_stream`; at most ``size`` episodes run at once. Close it when done (it is a
    context manager). After a rollout that raised, close the pool rather than reusing it.

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
            raise InvalidEnvConfig(f"Expects an EnvPool `size` >= 1, actual: {size!r}.")
        if backend not in _ENV_BACKENDS:
            raise InvalidEnvConfig(f"Expects `backend` in {_ENV_BACKENDS}, actual: {backend!r}.")
        self.factory = _factory(env, env_kwargs)
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


# ----------------------------------------------------------------------------- the loop


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
    chat = _chat_for(policy, config)
    runner = _Episode(policy, chat, config, agent)
    if isinstance(env, gym.vector.VectorEnv):
        async for trajectory in _vector_stream(env, runner, config, num_episodes, stats):
            yield trajectory
        return
    if num_episodes is not None:
        raise InvalidEnvConfig("`num_episodes` is for vector envs; pass `num_tasks` or `tasks`.")
    specs = _episode_specs(config, tasks, num_tasks)
    count = min(config.num_envs, len(specs))
    pool = env if isinstance(env, EnvPool) else None
    if pool is None:
        pool = EnvPool(
            _factory(env, env_kwargs),
            count,
            backend=config.env_backend,
            ray_actor_options=config.ray_actor_options,
        )
    elif env_kwargs:
        raise InvalidEnvConfig("`env_kwargs` only applies when `env` is an id.")
    owned = pool is not env
    workers: list[EnvWorker] = []
    bar = None
    tasks_running: list[asyncio.Task[None]] = []
    try:
        workers = (await pool.start())[:count]
        bar = _progress(len(specs), workers[0].env_id, config.progress)
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
            _update_progress(bar, stats)
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


# -------------------------------------------------------------------- vector envs


def _unbatch(value: Any, index: int) -> Any:
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            if key.startswith("_"):
                continue
            mask = value.get(f"_{key}")
            if mask is not None and not bool(mask[index]):
                continue
            out[key] = _unbatch(item, index)
        return out
    try:
        return value[index]
    except (TypeError, IndexError, KeyError):
        return value


async def _vector_stream(
    vec_env: gym.vector.VectorEnv,
    runner: _Episode,
    config: RolloutConfig,
    num_episodes: int | None,
    stats: RolloutStats,
) -> AsyncIterator[Trajectory]:
    from gymnasium.vector import AutoresetMode

    n = vec_env.num_envs
    total = num_episodes if num_episodes is not None else n
    mode = vec_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        raise InvalidEnvConfig(
            f"Vector envs with autoreset_mode={mode} are not supported; make them with "
            "vector_kwargs={'autoreset_mode': AutoresetMode.NEXT_STEP} (or SAME_STEP)."
        )
    spec = getattr(vec_env, "spec", None)
    env_id = spec.id if spec is not None else type(vec_env).__name__
    bar = _progress(total, env_id, config.progress)
    observations, infos = await asyncio.to_thread(vec_env.reset, seed=config.seed)
    started_count = 0
    states: list[dict[str, Any] | None] = [None] * n

    async def begin(i: int, observation: Any, info: Mapping[str, Any]) -> None:
        nonlocal started_count
        if started_count >= total:
            states[i] = None
            return
        episode = EpisodeSpec(started_count, started_count, 0, None, None)
        started_count += 1
        agent, trajectory, prompt = await runner.start(observation, info, env_id, episode)
        states[i] = {
            "spec": episode,
            "agent": agent,
            "trajectory": trajectory,
            "prompt": prompt,
            "turn": 0,
            "started": time.perf_counter(),
        }

    for i in range(n):
        await begin(i, observations[i], _unbatch(infos, i))
    # A sub-env without an episode (cut by max_turns or the context, or idle once enough
    # episodes started) is stepped with "" until it ends; then it resets into a new episode.
    resetting = [False] * n
    finished = 0

    def close_episode(i: int, end: str) -> Trajectory:
        nonlocal finished
        state = states[i]
        assert state is not None
        runner.finish(state["trajectory"], state["agent"], end, state["started"])
        states[i] = None
        finished += 1
        stats.add(state["trajectory"])
        _update_progress(bar, stats)
        return state["trajectory"]

    try:
        while finished < total:

            async def decide(i: int) -> tuple[Generation, list[int]] | None:
                state = states[i]
                if state is None or resetting[i]:
                    return None
                return await runner.generate(
                    state["agent"], state["prompt"], state["spec"], state["turn"]
                )

            results = await asyncio.gather(*(decide(i) for i in range(n)))
            actions: list[str] = []
            for i, result in enumerate(results):
                state = states[i]
                if state is not None and not resetting[i] and result is None:
                    yield close_episode(i, "context")
                    state = None
                if state is not None and result is not None:
                    state["generation"], state["used_prompt"] = result
                    actions.append(state["agent"].act(result[0].text))
                else:
                    actions.append("")
            step_out = await asyncio.to_thread(vec_env.step, actions)
            observations, rewards, terminated, truncated, infos = step_out
            for i in range(n):
                info_i = _unbatch(infos, i)
                if resetting[i]:  # NEXT_STEP: this step was the sub-env's reset
                    resetting[i] = False
                    await begin(i, observations[i], info_i)
                    continue
                ended = bool(terminated[i] or truncated[i])
                state = states[i]
                if state is not None:
                    observation = observations[i]
                    step_info = info_i
                    if ended and mode == AutoresetMode.SAME_STEP:
                        observation = info_i.get("final_obs", observation)
                        step_info = info_i.get("final_info", info_i)
                    transition = (observation, rewards[i], terminated[i], truncated[i], step_info)
                    step = runner.record(
                        state["trajectory"],
                        state["generation"],
                        state["used_prompt"],
                        actions[i],
                        transition,
                    )
                    state["turn"] += 1
                    if ended:
                        yield close_episode(i, "terminated" if terminated[i] else "truncated")
                    elif config.max_turns is not None and state["turn"] >= config.max_turns:
                        yield close_episode(i, "truncated")
                    else:
                        new = state["agent"].observe(
                            step.observation, step.reward, False, False, step_info
                        )
                        if runner.chat is not None:
                            state["prompt"] = runner.chat.append(
                                state["used_prompt"],
                                step.completion_ids,
                                new,
                                state["agent"].tools,
                            )
                if ended and states[i] is None:
                    if mode == AutoresetMode.SAME_STEP:
                        await begin(i, observations[i], info_i)
                    else:
                        resetting[i] = True
    finally:
        if bar is not None:
            bar.close()


# ------------------------------------------------------------------------------ CLI


def single_agent_env_ids() -> list[str]:
    """Every registered single-agent id of ``rllm_envs`` (the registry table)."""
    import rllm_envs

    return [entry.id for entry in rllm_envs.ENVS]


def _iter_envs(spec: str) -> Iterator[str]:
    if spec == "all":
        yield from single_agent_env_ids()
    else:
        yield from (s.strip() for s in spec.split(",") if s.strip())


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m adapters.rollout",
        description="Roll out a policy on rllm-envs environments and write trajectories.",
    )
    parser.add_argument("--env", default="all", help="env id, comma-separated ids, or 'all'")
    parser.add_argument(
        "--backend", default="transformers", choices=["transformers", "vllm", "openai"]
    )
    parser.add_argument(
        "--model", default="tiny", help="HF folder or hub id; 'tiny' builds the tiny model"
    )
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible server (openai)")
    parser.add_argument("--api", default="completions", choices=["completions", "chat"])
    parser.add_argument("--num-tasks", type=int, default=4)
    parser.add_argument("--group-size", type=int, default=2)
    parser.add_argument("--num-envs", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--max-turns", type=int, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--env-backend", default="thread", choices=list(_ENV_BACKENDS))
    parser.add_argument("--max-model-len", type=int, default=4096)
    parser.add_argument("--out", default="rollouts", help="output folder")
    parser.add_argument("--format", default="jsonl", choices=["jsonl", "parquet"])
    parser.add_argument("--no-progress", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    from adapters.backends import make_policy
    from rllm_agents.writers import TrajectoryWriter
    from rllm_envs.error import DependencyNotInstalled

    args = _parser().parse_args(argv)
    if args.backend == "vllm":
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
    policy = make_policy(
        args.backend,
        args.model,
        base_url=args.base_url,
        api=args.api,
        max_model_len=args.max_model_len,
        seed=args.seed,
    )
    config = RolloutConfig(
        num_envs=args.num_envs,
        group_size=args.group_size,
        sampling=SamplingParams(
            max_tokens=args.max_tokens, temperature=args.temperature, seed=args.seed
        ),
        env_backend=args.env_backend,
        seed=args.seed,
        max_turns=args.max_turns,
        progress=not args.no_progress,
    )
    out = Path(args.out)
    status = 0
    try:
        for env_id in _iter_envs(args.env):
            path = out / (env_id.replace("/", "_") + "." + args.format)
            stats = RolloutStats()
            try:
                with TrajectoryWriter(path) as writer:

                    async def run(
                        writer: TrajectoryWriter = writer,
                        env_id: str = env_id,
                        stats: RolloutStats = stats,
                    ) -> None:
                        async for trajectory in rollout_stream(
                            env_id, policy, config, num_tasks=args.num_tasks, stats=stats
                        ):
                            writer.write(trajectory)

                    asyncio.run(run())
            except DependencyNotInstalled as e:
                print(f"[rollout] skipped {env_id}: {e}", file=sys.stderr)
                path.unlink(missing_ok=True)
                continue
            tok_s = stats.tokens_per_second if math.isfinite(stats.tokens_per_second) else 0.0
            print(
                f"[rollout] {env_id}: {stats.episodes} episodes, {stats.turns} turns, "
                f"{stats.completion_tokens} tokens ({tok_s:.0f} tok/s), mean reward "
                f"{stats.mean_reward:.3f}, correct {stats.correct}/{stats.episodes} -> {path}"
            )
    finally:
        policy.close()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
