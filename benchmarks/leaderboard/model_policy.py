"""Model policies for leaderboard runs: vLLM, an OpenAI-compatible server, transformers.

Single-agent envs run through the token-exact rollout loop (:mod:`adapters.rollout`), many
episodes at once. Multi-agent envs run through :mod:`adapters.multiagent_play`: one
``rllm_agents`` conversation per agent the model plays (system prompt, ``<think>`` handling),
the end-of-turn stop ids on every request, the registry's opponents, all episodes concurrently.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rllm_envs
from benchmarks.leaderboard.protocol import (
    EpisodeRecord,
    EpisodeSpec,
    is_multiagent,
    multiagent_record,
)
from rllm_envs.error import InvalidEnvConfig

#: Spec prefix -> adapters backend name.
PREFIXES = {"vllm": "vllm", "hf": "transformers", "openai": "openai"}


def parse_spec(spec: str) -> tuple[str, str, str | None]:
    """``"vllm:<model>"`` / ``"hf:<path>"`` / ``"openai:<base url>:<model>"`` -> parts.

    Returns:
        ``(backend, model, base_url)``.
    """
    prefix, _, rest = spec.partition(":")
    if prefix not in PREFIXES or not rest:
        raise InvalidEnvConfig(
            f"Expects a model policy spec 'vllm:<model>', 'hf:<path>' or "
            f"'openai:<base url>:<model>', actual: {spec!r}."
        )
    if prefix == "openai":
        base_url, sep, model = rest.rpartition(":")
        if not sep or not base_url.startswith(("http://", "https://")) or not model:
            raise InvalidEnvConfig(
                f"Expects 'openai:<base url>:<model>', e.g. "
                f"'openai:http://127.0.0.1:8000/v1:my-model', actual: {spec!r}."
            )
        return "openai", model, base_url
    return PREFIXES[prefix], rest, None


#: What ``env_settings`` may set for one env.
_ENV_SETTINGS = frozenset({"temperature", "max_tokens", "agent", "agent_kwargs"})


@dataclass(frozen=True)
class _Decoding:
    temperature: float
    max_tokens: int
    agent: str | None
    agent_kwargs: dict[str, Any]
    stop: tuple[str, ...] = ()


class ModelPolicy:
    """A language model evaluated through one of the adapters' backends.

    Args:
        spec: ``vllm:<path or hub id>``, ``hf:<path>`` or ``openai:<base url>:<model>``;
            a model name (``tiny``, ``smollm2-135m-instruct``; :mod:`adapters.models`)
            means the locally built model.
        temperature: Sampling temperature (0 = greedy).
        max_tokens: Most tokens per model turn; ``None`` (default): what the env family's
            agent asks for (:meth:`rllm_agents.Agent.sampling_hints`), else 256. The
            family's stop strings always apply.
        concurrency: Episodes in flight at once.
        agent: Agent override: a name (``"frozenlake"``...) or ``"module:Class"`` (e.g. the
            agent a checkpoint was trained with); default: the one the env's registry row
            names (single- and multi-agent envs alike).
        agent_kwargs: Passed to the agent (``system_prompt=``, ``think=``).
        engine_kwargs: Passed to the backend's constructor (e.g. ``dtype``, vLLM's
            ``max_model_len``; a local checkpoint loads in its own dtype by default).
        env_settings: Per env id, the decoding this env needs instead of the defaults above
            (``temperature``, ``max_tokens``, ``agent``, ``agent_kwargs``): e.g. a checkpoint
            trained with one-token moves on FrozenLake keeps ``max_tokens=1`` and its
            training agent there, and gets the env's own agent and a real token budget
            everywhere else.
        transcripts: A JSONL file to append each single-agent episode's conversation to.
    """

    def __init__(
        self,
        spec: str,
        *,
        temperature: float = 0.6,
        max_tokens: int | None = None,
        concurrency: int = 16,
        agent: str | None = None,
        agent_kwargs: dict[str, Any] | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        env_settings: dict[str, dict[str, Any]] | None = None,
        transcripts: str | Path | None = None,
    ) -> None:
        self.backend, self.model, self.base_url = parse_spec(spec)
        self.name = spec
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.concurrency = concurrency
        self.agent = agent
        self.agent_kwargs = dict(agent_kwargs or {})
        self.engine_kwargs = dict(engine_kwargs or {})
        self.env_settings = {k: dict(v) for k, v in (env_settings or {}).items()}
        for env_id, settings in self.env_settings.items():
            unknown = set(settings) - _ENV_SETTINGS
            if unknown:
                raise InvalidEnvConfig(
                    f"Expects `env_settings[{env_id!r}]` keys in {sorted(_ENV_SETTINGS)}, "
                    f"actual: {sorted(unknown)}."
                )
        self.transcripts = None if transcripts is None else Path(transcripts)
        self._policy: Any = None

    def config(self) -> dict[str, Any]:
        """Settings for provenance."""
        return {
            "backend": self.backend,
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "concurrency": self.concurrency,
            "agent": self.agent,
            "agent_kwargs": self.agent_kwargs,
            "engine_kwargs": self.engine_kwargs,
            "env_settings": self.env_settings,
        }

    def _backend(self) -> Any:
        if self._policy is None:
            from adapters.backends import make_policy

            kwargs: dict[str, Any] = dict(self.engine_kwargs)
            if self.backend == "openai":
                from adapters.models import model_names

                local = self.model in model_names() or os.path.isdir(self.model)
                kwargs.update(base_url=self.base_url, api="completions" if local else "chat")
            self._policy = make_policy(self.backend, self.model, **kwargs)
        return self._policy

    def close(self) -> None:
        """Release the backend (engine, threads, connections)."""
        if self._policy is not None:
            self._policy.close()
            self._policy = None

    def decoding(self, env_id: str) -> _Decoding:
        """The decoding and agent ``env_id`` is played with (defaults + ``env_settings``)."""
        own = self.env_settings.get(env_id, {})
        agent = own.get("agent", self.agent)
        agent_kwargs = dict(own.get("agent_kwargs", self.agent_kwargs))
        # The family's stop strings always apply (its parser reads replies cut before them);
        # its token limit applies unless one is given.
        from rllm_agents import make_agent

        hints = make_agent(env_id, agent, **agent_kwargs).sampling_hints()
        max_tokens = own.get("max_tokens", self.max_tokens)
        if max_tokens is None:
            max_tokens = hints.get("max_tokens", 256)
        stop = tuple(hints.get("stop", ()))
        return _Decoding(
            temperature=float(own.get("temperature", self.temperature)),
            max_tokens=int(max_tokens),
            agent=agent,
            agent_kwargs=agent_kwargs,
            stop=stop,
        )

    def _sampling(self, decoding: _Decoding, seed: int) -> Any:
        from adapters.backends import SamplingParams

        return SamplingParams(
            max_tokens=decoding.max_tokens,
            temperature=decoding.temperature,
            stop=decoding.stop,
            seed=seed,
            logprobs=False,
        )

    def play(
        self, episodes: Sequence[EpisodeSpec], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        """Play the episodes of one env and yield each record as it finishes."""
        if not episodes:
            return
        if is_multiagent(episodes[0].env_id):
            yield from asyncio.run(self._play_multiagent(episodes, env_kwargs))
            return
        yield from self._play_single(episodes, env_kwargs)

    def _play_single(
        self, episodes: Sequence[EpisodeSpec], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        from adapters.rollout import RolloutConfig, rollout

        decoding = self.decoding(episodes[0].env_id)
        # Rollout group g resets with `config.seed + g`. The protocol's seeds are
        # `seed + row * k + sample`, consecutive in plan order, so one concurrent rollout plays
        # every episode with its own seed; a resumed plan with gaps runs episode by episode.
        first = episodes[0]
        consecutive = all(s.seed == first.seed + i for i, s in enumerate(episodes))
        batches = [list(episodes)] if consecutive else [[s] for s in episodes]
        for batch in batches:
            start = time.perf_counter()
            config = RolloutConfig(
                agent_kwargs=decoding.agent_kwargs,
                num_envs=min(self.concurrency, len(batch)),
                group_size=1,
                seed=batch[0].seed,
                progress=False,
                sampling=self._sampling(decoding, batch[0].seed),
            )
            trajectories = rollout(
                batch[0].env_id,
                self._backend(),
                config,
                tasks=[s.task_index for s in batch],
                agent=decoding.agent,
                env_kwargs=env_kwargs,
            )
            wall = (time.perf_counter() - start) / len(batch)
            self._write_transcripts(batch, trajectories, env_kwargs)
            for spec, trajectory in zip(batch, trajectories, strict=True):
                yield EpisodeRecord(
                    env_id=spec.env_id,
                    row=spec.row,
                    task_index=spec.task_index,
                    sample=spec.sample,
                    seed=spec.seed,
                    task_id=str(trajectory.task_id),
                    reward=float(trajectory.total_reward),
                    success=bool(trajectory.is_correct),
                    turns=trajectory.num_turns,
                    tokens=trajectory.num_completion_tokens,
                    wall_s=wall,
                    invalid_actions=sum(
                        bool(s.info.get("invalid_action")) for s in trajectory.steps
                    ),
                )

    def _write_transcripts(
        self, batch: Sequence[EpisodeSpec], trajectories: Sequence[Any], env_kwargs: dict[str, Any]
    ) -> None:
        if self.transcripts is None:
            return
        from adapters.rollout.transcripts import TranscriptWriter

        with TranscriptWriter(self.transcripts) as writer:
            for spec, trajectory in zip(batch, trajectories, strict=True):
                writer.write(trajectory, row=spec.row, sample=spec.sample, env_kwargs=env_kwargs)

    async def _play_multiagent(
        self, episodes: Sequence[EpisodeSpec], env_kwargs: dict[str, Any]
    ) -> list[EpisodeRecord]:
        from adapters.multiagent_play import play_episode

        backend = self._backend()
        decoding = self.decoding(episodes[0].env_id)
        limit = asyncio.Semaphore(self.concurrency)

        async def one(spec: EpisodeSpec) -> EpisodeRecord:
            async with limit:
                start = time.perf_counter()
                env = rllm_envs.make_parallel(spec.env_id, **env_kwargs)
                try:
                    episode = await play_episode(
                        env,
                        backend,
                        env_id=spec.env_id,
                        sampling=self._sampling(decoding, spec.seed),
                        seed=spec.seed,
                        options={"index": spec.task_index},
                        agent=decoding.agent,
                        agent_kwargs=decoding.agent_kwargs,
                    )
                finally:
                    env.close()
                return multiagent_record(spec, episode, time.perf_counter() - start)

        return list(await asyncio.gather(*(one(s) for s in episodes)))
