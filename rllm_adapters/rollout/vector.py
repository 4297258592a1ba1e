"""A ``gymnasium`` vector env as the rollout's env: every sub-env stepped in lock-step.

The vector API needs every sub-env's action at once, so the turn of each live episode is
decided concurrently, then the vector env steps once. Each episode is the same
:class:`~rllm_adapters.rollout.episode.EpisodeState` the async path uses, driven by the same
:class:`~rllm_adapters.rollout.episode.EpisodeRunner` moves. Both autoreset modes the rollout can
follow are honoured: ``NEXT_STEP`` (the step after an end is the sub-env's reset) and
``SAME_STEP`` (the final observation arrives in ``info["final_obs"]``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

import gymnasium as gym

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.rollout.config import EpisodeSpec, RolloutConfig, RolloutStats
from rllm_adapters.rollout.episode import EpisodeRunner, EpisodeState
from rllm_adapters.rollout.progress import progress_bar, update_progress
from rllm_agents.trajectory import Trajectory

__all__ = ["vector_stream"]


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


async def vector_stream(
    vec_env: gym.vector.VectorEnv,
    runner: EpisodeRunner,
    config: RolloutConfig,
    num_episodes: int | None,
    stats: RolloutStats,
) -> AsyncIterator[Trajectory]:
    """Play ``num_episodes`` (default: one per sub-env) and yield each as it finishes."""
    from gymnasium.vector import AutoresetMode

    n = vec_env.num_envs
    total = num_episodes if num_episodes is not None else n
    mode = vec_env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP)
    if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        raise AdapterConfigError(
            f"Vector envs with autoreset_mode={mode} are not supported; make them with "
            "vector_kwargs={'autoreset_mode': AutoresetMode.NEXT_STEP} (or SAME_STEP)."
        )
    spec = getattr(vec_env, "spec", None)
    env_id = spec.id if spec is not None else type(vec_env).__name__
    bar = progress_bar(total, env_id, config.progress)
    if config.max_turns is not None:
        _cap_sub_env_turns(vec_env, config.max_turns)
    observations, infos = await asyncio.to_thread(vec_env.reset, seed=config.seed)
    started = 0
    # A sub-env without an episode (cut by max_turns or the context, or idle once enough
    # episodes started) is stepped with "" until it ends; then it resets into a new episode.
    states: list[EpisodeState | None] = [None] * n
    resetting = [False] * n
    finished = 0

    def begin(i: int, observation: Any, info: Mapping[str, Any]) -> None:
        nonlocal started
        if started >= total:
            states[i] = None
            return
        episode = EpisodeSpec(started, started, 0, None, None)
        started += 1
        states[i] = runner.start(observation, info, env_id, episode)

    def close(i: int, end: str) -> Trajectory:
        nonlocal finished
        state = states[i]
        assert state is not None
        states[i] = None
        finished += 1
        trajectory = runner.finish(state, end)
        stats.add(trajectory)
        update_progress(bar, stats)
        return trajectory

    async def decide(i: int) -> str:
        state = states[i]
        if state is None or resetting[i]:
            return ""
        action = await runner.decide(state)
        return "" if action is None else action

    for i in range(n):
        begin(i, observations[i], _unbatch(infos, i))
    try:
        while finished < total:
            actions = list(await asyncio.gather(*(decide(i) for i in range(n))))
            for i, state in enumerate(states):
                if state is not None and not resetting[i] and state.pending is None:
                    runner.settle(state, _settle_sub_env(vec_env, i))
                    yield close(i, "context")
            step_out = await asyncio.to_thread(vec_env.step, actions)
            observations, rewards, terminated, truncated, infos = step_out
            for i in range(n):
                info_i = _unbatch(infos, i)
                if resetting[i]:  # NEXT_STEP: this step was the sub-env's reset
                    resetting[i] = False
                    begin(i, observations[i], info_i)
                    continue
                ended = bool(terminated[i] or truncated[i])
                state = states[i]
                if state is not None:
                    observation, step_info = observations[i], info_i
                    if ended and mode == AutoresetMode.SAME_STEP:
                        observation = info_i.get("final_obs", observation)
                        step_info = info_i.get("final_info", info_i)
                    transition = (observation, rewards[i], terminated[i], truncated[i], step_info)
                    end = runner.advance(state, transition)
                    if end is not None:
                        yield close(i, end)
                if ended and states[i] is None:
                    if mode == AutoresetMode.SAME_STEP:
                        begin(i, observations[i], info_i)
                    else:
                        resetting[i] = True
    finally:
        if bar is not None:
            bar.close()


def _settle_sub_env(vec_env: Any, index: int) -> tuple[float, dict[str, float]]:
    """The closing reward of sub-env ``index``'s episode, which the loop stops (a full context).

    The sub-env itself plays on with empty actions until it ends (its steps are not the
    episode's), so its episode is not ended here, only its closing reward read
    (:meth:`rllm_envs.core.TextEnv.closing_reward`, a query): Gymnasium's vector API calls a
    method on every sub-env at once, ``SyncVectorEnv`` and ``AsyncVectorEnv`` alike (att38c
    F3: an ``AsyncVectorEnv`` kept FrozenLake's progress, 0.509 a map, when only the
    in-process sub-envs were read). Sub-envs without it settle for nothing.
    """
    try:
        closing = vec_env.call("closing_reward")
    except Exception:  # not every env has one (any Gymnasium vector env is accepted)
        return 0.0, {}
    if not (isinstance(closing, (list, tuple)) and 0 <= index < len(closing)):
        return 0.0, {}
    found = closing[index]
    if not (isinstance(found, tuple) and len(found) == 2):
        return 0.0, {}
    return float(found[0]), dict(found[1])


def _cap_sub_env_turns(vec_env: Any, max_turns: int) -> None:
    """Cap each sub-env's ``max_turns`` at the loop's own limit.

    A sub-env resets itself (autoreset, no options), so the loop's limit is set on it once:
    its episodes then end on the env's own last turn where the loop stops them (s37 att37g:
    FrozenLake kept the walk's progress, 0.588 a map, when the loop cut them). Sub-envs
    without an int ``max_turns`` are left as they are.
    """
    try:
        limits = vec_env.get_attr("max_turns")
    except Exception:  # not every env has one (any Gymnasium vector env is accepted)
        return
    if all(isinstance(n, int) and not isinstance(n, bool) for n in limits):
        vec_env.set_attr("max_turns", [min(n, max_turns) for n in limits])
