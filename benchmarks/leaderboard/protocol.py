"""The leaderboard's episode protocol: what a player is asked to play and what it reports.

Shared by the scripted players (:mod:`benchmarks.leaderboard.players`) and the model player
(:mod:`benchmarks.leaderboard.model_player`); it imports neither, so they do not import each
other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import rllm_envs

if TYPE_CHECKING:
    from rllm_adapters.multiagent_play import MultiAgentEpisode

__all__ = [
    "ColumnJob",
    "EpisodeRecord",
    "EvalEpisode",
    "Player",
    "RecordSink",
    "is_multiagent",
    "multiagent_record",
]


def is_multiagent(env_id: str) -> bool:
    """Whether ``env_id`` is a multi-agent (PettingZoo) env."""
    return env_id in rllm_envs.list_multiagent_envs()


@dataclass(frozen=True)
class EvalEpisode:
    """One evaluation episode of a leaderboard column.

    Attributes:
        env_id: The env.
        row: Evaluation task number (0..n_tasks-1); the samples of one row form a pass@k group.
        task_index: Task index in the env's source (``row`` modulo the source size).
        sample: Sample number within the row (0..k-1).
        seed: Reset seed (also seeds the random policy).
        column: The leaderboard column it belongs to (``"<env id>@<variant>"``; empty: the
            env id), so a transcript names the column it was played for.
    """

    env_id: str
    row: int
    task_index: int
    sample: int
    seed: int
    column: str = ""

    @property
    def label(self) -> str:
        """The column's name (the env id when the column has no variant)."""
        return self.column or self.env_id

    def record(self, **outcome: Any) -> EpisodeRecord:
        """This episode's record: its identity and ``outcome`` (the other record fields)."""
        return EpisodeRecord(
            self.env_id, self.row, self.task_index, self.sample, self.seed, **outcome
        )


@dataclass
class EpisodeRecord:
    """The outcome of one evaluation episode (one line of ``episodes.jsonl``).

    ``metrics`` holds an env's own per-episode figures (a judge's accuracy next to its base
    rate, from the env class's ``episode_metrics``); the summary averages each.
    """

    env_id: str
    row: int
    task_index: int
    sample: int
    seed: int
    task_id: str
    reward: float
    success: bool
    turns: int
    tokens: int
    wall_s: float
    invalid_actions: int
    metrics: dict[str, float] = field(default_factory=dict)


def _episode_metrics(env_id: str, correct: dict[str, bool]) -> dict[str, float]:
    """The env class's ``episode_metrics(correct)`` (e.g. a judge's base rate), if it has one."""
    cls = rllm_envs.resolve(rllm_envs.env_entry(env_id).entry_point)
    metrics = getattr(cls, "episode_metrics", None)
    return dict(metrics(correct)) if callable(metrics) else {}


def multiagent_record(
    spec: EvalEpisode, episode: MultiAgentEpisode, wall_s: float
) -> EpisodeRecord:
    """A multi-agent episode as a record: mean return, joint success of the player's agents."""
    return spec.record(
        task_id=episode.task_id,
        reward=episode.reward,
        success=episode.success,
        turns=episode.turns,
        tokens=episode.tokens,
        wall_s=wall_s,
        invalid_actions=episode.invalid_actions,
        metrics=_episode_metrics(spec.env_id, dict(episode.correct)),
    )


class Player(Protocol):
    """What the leaderboard runner needs from a player (what plays one policy spec)."""

    name: str

    def play(
        self, episodes: Sequence[EvalEpisode], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        """Play ``episodes`` (all of one env) and yield each record as it finishes."""
        ...

    def config(self) -> dict[str, Any]:
        """The player's settings, for provenance."""
        ...

    def close(self) -> None:
        """Release what the player holds (engines, threads)."""
        ...


@dataclass(frozen=True)
class ColumnJob:
    """The episodes of one leaderboard column, for a policy that plays columns concurrently.

    Attributes:
        column: The column (``"<env id>@<variant>"`` or an env id).
        episodes: Its episodes (all of one env).
        env_kwargs: The env's constructor kwargs for this column.
    """

    column: str
    episodes: Sequence[EvalEpisode]
    env_kwargs: dict[str, Any]


#: Called with ``(column, record)`` as each episode of a concurrent play ends.
RecordSink = Callable[[str, EpisodeRecord], None]
