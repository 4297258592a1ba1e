"""Settings and bookkeeping of a rollout: the config, one episode's plan, running totals."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rllm_adapters.backends.base import SamplingParams
from rllm_adapters.error import AdapterConfigError
from rllm_agents.trajectory import Trajectory

__all__ = [
    "ENV_BACKENDS",
    "EpisodeSpec",
    "RolloutConfig",
    "RolloutStats",
    "episode_specs",
    "family_sampling",
]

ENV_BACKENDS = ("thread", "process", "ray")
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
            raise AdapterConfigError(f"Expects `num_envs` >= 1, actual: {self.num_envs!r}.")
        if self.group_size < 1:
            raise AdapterConfigError(f"Expects `group_size` >= 1, actual: {self.group_size!r}.")
        if self.env_backend not in ENV_BACKENDS:
            raise AdapterConfigError(
                f"Expects `env_backend` in {ENV_BACKENDS}, actual: {self.env_backend!r}."
            )
        if self.mode not in _MODES:
            raise AdapterConfigError(f"Expects `mode` in {_MODES}, actual: {self.mode!r}.")
        if self.max_turns is not None and self.max_turns < 1:
            raise AdapterConfigError(
                f"Expects `max_turns` >= 1 or None, actual: {self.max_turns!r}."
            )


#: Token limit of a turn when neither the caller nor the env family's agent names one.
DEFAULT_MAX_TOKENS = 256


def family_sampling(
    env_id: str,
    sampling: SamplingParams,
    *,
    max_tokens: int | None = None,
    agent: str | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> SamplingParams:
    """``sampling`` with the decoding the env family's agent asks for.

    The family's stop strings are added (its parser reads a reply cut before them); its token
    limit (:meth:`rllm_agents.Agent.sampling_hints`) is used unless ``max_tokens`` is given,
    else :data:`DEFAULT_MAX_TOKENS`.
    """
    from rllm_agents import make_agent

    hints = make_agent(env_id, agent, **dict(agent_kwargs or {})).sampling_hints()
    if max_tokens is None:
        max_tokens = int(hints.get("max_tokens", DEFAULT_MAX_TOKENS))
    stop = tuple(dict.fromkeys((*sampling.stop, *hints.get("stop", ()))))
    return sampling.with_(max_tokens=max_tokens, stop=stop)


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


def episode_specs(
    config: RolloutConfig,
    tasks: Sequence[int | Mapping[str, Any]] | None,
    num_tasks: int | None,
) -> list[EpisodeSpec]:
    """The episodes of a rollout: ``group_size`` samples of each task group."""
    if tasks is not None and num_tasks is not None:
        raise AdapterConfigError("Pass either `tasks` or `num_tasks`, not both.")
    groups: list[dict[str, Any] | None]
    if tasks is not None:
        groups = [{"index": int(t)} if isinstance(t, int) else {"task": dict(t)} for t in tasks]
    else:
        count = num_tasks if num_tasks is not None else max(1, config.num_envs // config.group_size)
        if count < 1:
            raise AdapterConfigError(f"Expects `num_tasks` >= 1, actual: {count!r}.")
        groups = [None] * count
    specs: list[EpisodeSpec] = []
    for g, options in enumerate(groups):
        for s in range(config.group_size):
            specs.append(EpisodeSpec(len(specs), g, s, config.seed + g, options))
    return specs
