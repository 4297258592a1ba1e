"""Model players for leaderboard runs: vLLM, an OpenAI-compatible server, transformers.

Single-agent envs run through the token-exact rollout loop (:mod:`rllm_adapters.rollout`), many
episodes at once. Multi-agent envs run through :mod:`rllm_adapters.multiagent_play`: one
``rllm_agents`` conversation per agent the model plays (system prompt, ``<think>`` handling),
the end-of-turn stop ids on every request, the registry's opponents, all episodes concurrently.
A leaderboard run plays every env column at once through one engine
(:meth:`ModelPlayer.play_columns`), so requests from all envs share the engine's batches.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import rllm_envs
from benchmarks.leaderboard.protocol import (
    ColumnJob,
    EpisodeRecord,
    EvalEpisode,
    RecordSink,
    is_multiagent,
    multiagent_record,
)
from rllm_envs.error import InvalidEnvConfig

if TYPE_CHECKING:
    from rllm_adapters.multiagent_play import MultiAgentEpisode

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


class ModelPlayer:
    """A language model evaluated through one of the adapters' backends.

    Args:
        spec: ``vllm:<path or hub id>``, ``hf:<path>`` or ``openai:<base url>:<model>``;
            a model name (``tiny``, ``smollm2-135m-instruct``; :mod:`rllm_adapters.models`)
            means the locally built model.
        temperature: Sampling temperature (0 = greedy).
        max_tokens: Most tokens per model turn; ``None`` (default): what the env family's
            agent asks for (:meth:`rllm_agents.Agent.sampling_hints`), else 256. The
            family's stop strings always apply.
        concurrency: Episodes in flight at once per env column (:meth:`play_columns` plays
            every column at the same time).
        agent: Agent override: a name (``"frozenlake-board"``...) or ``"module:Class"`` (e.g. the
            agent a checkpoint was trained with); default: the one the env's registry row
            names (single- and multi-agent envs alike).
        agent_kwargs: Passed to the agent (``system_prompt=``, ``think=``).
        engine_kwargs: Passed to the backend's constructor (e.g. ``dtype``, vLLM's
            ``max_model_len``; a local checkpoint loads in its own dtype by default; the vLLM
            backend's CPU defaults apply, :func:`rllm_adapters.backends.vllm.cpu_engine_defaults`).
        env_settings: Per env id, the decoding this env needs instead of the defaults above
            (``temperature``, ``max_tokens``, ``agent``, ``agent_kwargs``): e.g. a checkpoint
            trained with one-token moves on FrozenLake keeps ``max_tokens=1`` and its
            training agent there, and gets the env's own agent and a real token budget
            everywhere else.
        transcripts: A JSONL file to append each episode's conversation to (multi-agent:
            each played agent's).
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
            from rllm_adapters.backends import make_policy

            kwargs: dict[str, Any] = dict(self.engine_kwargs)
            if self.backend == "openai":
                from rllm_adapters.models import model_names

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
        from rllm_adapters.backends import SamplingParams
        from rllm_adapters.rollout.config import family_sampling

        family = family_sampling(
            env_id,
            SamplingParams(),
            max_tokens=own.get("max_tokens", self.max_tokens),
            agent=agent,
            agent_kwargs=agent_kwargs,
        )
        return _Decoding(
            temperature=float(own.get("temperature", self.temperature)),
            max_tokens=family.max_tokens,
            agent=agent,
            agent_kwargs=agent_kwargs,
            stop=family.stop,
        )

    def _sampling(self, decoding: _Decoding, seed: int) -> Any:
        from rllm_adapters.backends import SamplingParams

        return SamplingParams(
            max_tokens=decoding.max_tokens,
            temperature=decoding.temperature,
            stop=decoding.stop,
            seed=seed,
            logprobs=False,
        )

    def play(
        self, episodes: Sequence[EvalEpisode], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        """Play the episodes of one env and yield each record as it finishes."""
        if not episodes:
            return
        records: queue.Queue[Any] = queue.Queue()
        job = ColumnJob(episodes[0].label, episodes, env_kwargs)

        def target() -> None:
            try:
                self.play_columns([job], lambda _, record: records.put(record))
            except BaseException as e:  # re-raised in the caller's thread
                records.put(e)
            records.put(_DONE)

        # The event loop runs in a thread so that records reach the caller as they finish.
        thread = threading.Thread(target=target, name="rllm-leaderboard-play", daemon=True)
        thread.start()
        while (item := records.get()) is not _DONE:
            if isinstance(item, BaseException):
                thread.join()
                raise item
            yield item
        thread.join()

    def play_columns(self, jobs: Sequence[ColumnJob], on_record: RecordSink) -> None:
        """Play every column's episodes at once, through one engine.

        All columns share the backend, so the engine batches requests from every env
        (``concurrency`` episodes in flight per column): a 135M model on a CPU generates
        several times more tokens per second at batch 50 than at batch 5, and a slow env
        (a multi-turn game, a sandboxed test run) no longer holds the others up.
        ``on_record(column, record)`` is called as each episode ends (in this thread).
        """
        jobs = [j for j in jobs if j.episodes]
        if not jobs:
            return
        writer = _TranscriptSink(self.transcripts)
        try:
            asyncio.run(self._play_columns(jobs, on_record, writer))
        finally:
            writer.close()

    async def _play_columns(
        self, jobs: Sequence[ColumnJob], on_record: RecordSink, writer: _TranscriptSink
    ) -> None:
        backend = await asyncio.to_thread(self._backend)  # an engine start blocks for a while
        plays = []
        for job in jobs:
            if is_multiagent(job.episodes[0].env_id):
                plays.append(self._play_multiagent(job, backend, on_record, writer))
                continue
            # Rollout group g resets with `config.seed + g`. The protocol's seeds are
            # `seed + row * k + sample`, consecutive in plan order, so one rollout plays every
            # episode with its own seed; a resumed plan with gaps runs episode by episode.
            first = job.episodes[0]
            consecutive = all(s.seed == first.seed + i for i, s in enumerate(job.episodes))
            batches = [list(job.episodes)] if consecutive else [[s] for s in job.episodes]
            plays.extend(self._play_batch(job, b, backend, on_record, writer) for b in batches)
        await asyncio.gather(*plays)

    async def _play_batch(
        self,
        job: ColumnJob,
        batch: Sequence[EvalEpisode],
        backend: Any,
        on_record: RecordSink,
        writer: _TranscriptSink,
    ) -> None:
        from rllm_adapters.rollout import RolloutConfig, rollout_stream

        decoding = self.decoding(batch[0].env_id)
        config = RolloutConfig(
            agent_kwargs=decoding.agent_kwargs,
            num_envs=min(self.concurrency, len(batch)),
            group_size=1,
            seed=batch[0].seed,
            progress=False,
            sampling=self._sampling(decoding, batch[0].seed),
        )
        stream = rollout_stream(
            batch[0].env_id,
            backend,
            config,
            tasks=[s.task_index for s in batch],
            agent=decoding.agent,
            env_kwargs=job.env_kwargs,
        )
        async for trajectory in stream:
            spec = batch[trajectory.group]
            invalid = [bool(s.info.get("invalid_action")) for s in trajectory.steps]
            writer.trajectory(
                trajectory,
                column=job.column,
                row=spec.row,
                sample=spec.sample,
                env_kwargs=job.env_kwargs,
                invalid_actions=invalid,
            )
            on_record(
                job.column,
                spec.record(
                    task_id=str(trajectory.task_id),
                    reward=float(trajectory.total_reward),
                    success=bool(trajectory.is_correct),
                    turns=trajectory.num_turns,
                    tokens=trajectory.num_completion_tokens,
                    wall_s=float(trajectory.metadata.get("wall_s", 0.0)),
                    invalid_actions=sum(invalid),
                ),
            )

    async def _play_multiagent(
        self, job: ColumnJob, backend: Any, on_record: RecordSink, writer: _TranscriptSink
    ) -> None:
        from rllm_adapters.multiagent_play import play_episode

        episodes = job.episodes
        decoding = self.decoding(episodes[0].env_id)
        limit = asyncio.Semaphore(self.concurrency)

        async def one(spec: EvalEpisode) -> None:
            async with limit:
                start = time.perf_counter()
                env = rllm_envs.make_parallel(spec.env_id, **job.env_kwargs)
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
                record = multiagent_record(spec, episode, time.perf_counter() - start)
                writer.multiagent(episode, spec, job, policy=self.name)
                on_record(job.column, record)

        await asyncio.gather(*(one(s) for s in episodes))


_DONE = object()


class _TranscriptSink:
    """Appends readable transcripts (one JSON line per episode) when a path is given."""

    def __init__(self, path: Path | None) -> None:
        self._file: IO[str] | None = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("a", encoding="utf-8")

    def _write(self, line: dict[str, Any]) -> None:
        if self._file is not None:
            self._file.write(json.dumps(line, ensure_ascii=False) + "\n")
            self._file.flush()  # an interrupted run keeps every finished episode

    def trajectory(self, trajectory: Any, **extra: Any) -> None:
        """A single-agent episode (the rollout loop's transcript, ``extra`` keys first)."""
        if self._file is not None:
            from rllm_adapters.rollout.transcripts import transcript

            self._write(transcript(trajectory, **extra))

    def multiagent(
        self, episode: MultiAgentEpisode, spec: EvalEpisode, job: ColumnJob, *, policy: str
    ) -> None:
        """A multi-agent episode: each played agent's conversation and return."""
        self._write(
            {
                "column": job.column,
                "row": spec.row,
                "sample": spec.sample,
                "env_kwargs": job.env_kwargs,
                "env_id": episode.env_id,
                "task_id": episode.task_id,
                "seed": spec.seed,
                "policy": policy,
                "reward": episode.reward,
                "is_correct": episode.success,
                "finish": "terminated",
                "joint_steps": episode.turns,
                "returns": episode.returns,
                "agents": episode.messages,
            }
        )

    def close(self) -> None:
        """Close the file."""
        if self._file is not None:
            self._file.close()
