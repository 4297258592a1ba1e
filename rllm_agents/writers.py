"""Write and read trajectories as JSONL or Parquet.

JSONL keeps everything, one trajectory per line, flushed as each one arrives (a crashed run
keeps what it wrote). Parquet is columnar for trainers: one row per trajectory with the flat
training view (``token_ids``, ``loss_mask``, ``logprobs``, ``token_rewards``), summary columns
and the full record as a JSON string column (``record``) so nothing is lost::

    with TrajectoryWriter("out/rollouts.parquet") as writer:
        for trajectory in trajectories:
            writer.write(trajectory)
    trajectories = read_trajectories("out/rollouts.parquet")
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from rllm_agents.error import AgentConfigError
from rllm_agents.trajectory import Trajectory
from rllm_envs.error import require

__all__ = ["TrajectoryWriter", "read_trajectories", "write_trajectories"]

_FORMATS = ("jsonl", "parquet")


def _format_of(path: Path, fmt: str | None) -> str:
    if fmt is None:
        fmt = "parquet" if path.suffix == ".parquet" else "jsonl"
    if fmt not in _FORMATS:
        raise AgentConfigError(f"Expects a trajectory format in {_FORMATS}, actual: {fmt!r}.")
    return fmt


def _parquet_row(trajectory: Trajectory) -> dict[str, Any]:
    return {
        "env_id": trajectory.env_id,
        "task_id": None if trajectory.task_id is None else str(trajectory.task_id),
        "seed": trajectory.seed,
        "group": trajectory.group,
        "sample": trajectory.sample,
        "num_turns": trajectory.num_turns,
        "total_reward": trajectory.total_reward,
        "is_correct": trajectory.is_correct,
        "finish": trajectory.finish,
        "token_exact": trajectory.token_exact,
        "prompt_length": trajectory.prompt_length(),
        "token_ids": trajectory.token_ids(),
        "loss_mask": trajectory.loss_mask(),
        "logprobs": trajectory.logprobs(),
        "token_rewards": trajectory.token_rewards(),
        "record": trajectory.to_json(),
    }


def _parquet_schema():  # noqa: ANN202  (a pyarrow schema)
    pa = require("pyarrow", "datasets", feature="Parquet trajectories")
    return pa.schema(
        [
            ("env_id", pa.string()),
            ("task_id", pa.string()),
            ("seed", pa.int64()),
            ("group", pa.int64()),
            ("sample", pa.int64()),
            ("num_turns", pa.int32()),
            ("total_reward", pa.float64()),
            ("is_correct", pa.bool_()),
            ("finish", pa.string()),
            ("token_exact", pa.bool_()),
            ("prompt_length", pa.int32()),
            ("token_ids", pa.list_(pa.int32())),
            ("loss_mask", pa.list_(pa.int8())),
            ("logprobs", pa.list_(pa.float32())),
            ("token_rewards", pa.list_(pa.float32())),
            ("record", pa.string()),
        ]
    )


class TrajectoryWriter:
    """Stream trajectories to a ``.jsonl`` or ``.parquet`` file.

    Args:
        path: Output file; its folder is created.
        format: ``"jsonl"`` or ``"parquet"``; by default from the suffix (else JSONL).
        append: Append to an existing JSONL file instead of overwriting it.
        row_group_size: Parquet trajectories buffered per row group.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        format: str | None = None,
        append: bool = False,
        row_group_size: int = 256,
    ) -> None:
        self.path = Path(path)
        self.format = _format_of(self.path, format)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.count = 0
        self._rows: list[dict[str, Any]] = []
        self._row_group_size = row_group_size
        self._file: IO[str] | None = None
        self._parquet: Any = None
        if self.format == "jsonl":
            self._file = open(self.path, "a" if append else "w", encoding="utf-8")  # noqa: SIM115
        else:
            pq = require("pyarrow.parquet", "datasets", feature="Parquet trajectories")
            self._parquet = pq.ParquetWriter(str(self.path), _parquet_schema())

    def write(self, trajectory: Trajectory) -> None:
        """Write one trajectory (JSONL lines are flushed at once)."""
        if self._file is not None:
            self._file.write(trajectory.to_json() + "\n")
            self._file.flush()
        else:
            self._rows.append(_parquet_row(trajectory))
            if len(self._rows) >= self._row_group_size:
                self._flush_parquet()
        self.count += 1

    def _flush_parquet(self) -> None:
        if not self._rows:
            return
        pa = require("pyarrow", "datasets", feature="Parquet trajectories")
        table = pa.Table.from_pylist(self._rows, schema=_parquet_schema())
        self._parquet.write_table(table)
        self._rows = []

    def close(self) -> None:
        """Flush and close the file."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._parquet is not None:
            self._flush_parquet()
            self._parquet.close()
            self._parquet = None

    def __enter__(self) -> TrajectoryWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def write_trajectories(
    trajectories: Iterable[Trajectory], path: str | os.PathLike[str], *, format: str | None = None
) -> Path:
    """Write ``trajectories`` to ``path`` (JSONL or Parquet by suffix) and return the path."""
    with TrajectoryWriter(path, format=format) as writer:
        for trajectory in trajectories:
            writer.write(trajectory)
    return writer.path


def read_trajectories(
    path: str | os.PathLike[str], *, format: str | None = None
) -> list[Trajectory]:
    """Read trajectories written by :class:`TrajectoryWriter`."""
    path = Path(path)
    if _format_of(path, format) == "jsonl":
        with open(path, encoding="utf-8") as f:
            return [Trajectory.from_dict(json.loads(line)) for line in f if line.strip()]
    pq = require("pyarrow.parquet", "datasets", feature="Parquet trajectories")
    records = pq.read_table(str(path), columns=["record"]).column("record").to_pylist()
    return [Trajectory.from_dict(json.loads(r)) for r in records]
