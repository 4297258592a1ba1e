"""Readable transcripts: one JSON line per episode with its conversation and outcome.

Trajectory files keep every id and logprob for training; a transcript keeps what a person
reads to see what a model did: the messages, each reply and action, rewards and the outcome.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

from rllm_agents.trajectory import Trajectory

__all__ = ["TranscriptWriter", "transcript"]


def transcript(trajectory: Trajectory, **extra: Any) -> dict[str, Any]:
    """The readable view of one episode (``extra`` keys, e.g. the evaluation row, first)."""
    return {
        **extra,
        "env_id": trajectory.env_id,
        "task_id": trajectory.task_id,
        "seed": trajectory.seed,
        "agent": trajectory.metadata.get("agent"),
        "policy": trajectory.metadata.get("policy"),
        "reward": trajectory.total_reward,
        "is_correct": trajectory.is_correct,
        "finish": trajectory.finish,
        "token_source": trajectory.token_source,
        "messages": trajectory.messages,
        "turns": [
            {
                "response": step.response,
                "action": step.action,
                "reward": step.reward,
                "finish_reason": step.finish_reason,
                "observation": step.observation,
            }
            for step in trajectory.steps
        ],
    }


class TranscriptWriter:
    """Appends transcripts to a JSONL file, flushed per episode (a context manager)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] = self.path.open("a", encoding="utf-8")

    def write(self, trajectory: Trajectory, **extra: Any) -> None:
        """Append one episode."""
        self._file.write(json.dumps(transcript(trajectory, **extra), ensure_ascii=False) + "\n")
        self._file.flush()

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> TranscriptWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
