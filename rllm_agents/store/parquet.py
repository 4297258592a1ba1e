"""Parquet in and out of the episode store (the flat training view plus the full record)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rllm_agents.error import AgentConfigError
from rllm_agents.store.schema import _canonical
from rllm_agents.trajectory import Trajectory
from rllm_envs.error import require

if TYPE_CHECKING:
    from rllm_agents.store.episode_store import EpisodeStore

# The store's own columns, after TrajectoryWriter's.
_EXTRA_PARQUET = (
    ("hash", "string"),
    ("run", "string"),
    ("model", "string"),
    ("env_kwargs", "string"),
    ("versions", "string"),
    ("timings", "string"),
    ("created", "float64"),
)


def export_episodes(
    store: EpisodeStore, path: str | os.PathLike[str], *, row_group_size: int, **filters: Any
) -> int:
    """:meth:`EpisodeStore.export_parquet`."""
    pa = require("pyarrow", "datasets", feature="Parquet export")
    from rllm_agents.writers import _parquet_schema

    schema = _parquet_schema()
    for name, kind in _EXTRA_PARQUET:
        schema = schema.append(pa.field(name, getattr(pa, kind)()))
    out = Path(path)
    # The store's file and every file named after it or its key (-wal, -shm, .lock, the key's
    # marks: att40p F2 replaced a mark, and the store could be neither read nor written), by
    # their names as given and as resolved: the marks are named after the key's path as given
    # (s42 att42f F1: through a symlinked key, an export replaced the mark).
    targets = {out.absolute(), out.resolve()}
    own = {p for f in (store.path, store.key_path) for p in (Path(f).absolute(), Path(f).resolve())}
    if any(
        target.parent == f.parent
        and (target.name == f.name or target.name.startswith((f"{f.name}-", f"{f.name}.")))
        for target in targets
        for f in own
    ):
        # Its own file, WAL or key: moved into place, the export replaced the store (s40
        # att40o F1: 5 of 5 episodes lost, "exported" rc 0).
        raise AgentConfigError(f"Refusing to export onto the store's own files: {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    # Written beside and moved into place whole: an export that fails part way leaves the
    # file it would replace as it was, not a shorter file that reads as complete (s40 att40h).
    # A name of its own: two exports to one target wrote into one file (s40 att40j F1).
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=".rllm-export-", suffix=".partial")
    os.close(fd)
    partial = Path(name)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(partial, 0o666 & ~umask)  # as a file written in place (mkstemp's is 0600: att40o F5)
    try:
        count = _write_episodes(store, partial, schema, row_group_size, filters)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)
    return count


def _write_episodes(
    store: EpisodeStore, out: Path, schema: Any, row_group_size: int, filters: dict[str, Any]
) -> int:
    pa = require("pyarrow", "datasets", feature="Parquet export")
    pq = require("pyarrow.parquet", "datasets", feature="Parquet export")
    from rllm_agents.writers import _parquet_row

    count = 0
    rows: list[dict[str, Any]] = []
    with pq.ParquetWriter(str(out), schema) as writer:
        for episode in store.episodes(**filters):
            assert episode.trajectory is not None
            row = _parquet_row(episode.trajectory)
            row.update(
                hash=episode.hash,
                run=episode.run,
                model=episode.model,
                env_kwargs=_canonical(episode.env_kwargs),
                versions=_canonical(episode.versions),
                timings=_canonical(episode.timings),
                created=episode.created,
            )
            rows.append(row)
            count += 1
            if len(rows) >= row_group_size:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                rows = []
        if rows or count == 0:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
    return count


def import_episodes(
    store: EpisodeStore, path: str | os.PathLike[str], *, run: str | None, batch_size: int
) -> tuple[int, int]:
    """:meth:`EpisodeStore.import_parquet`."""
    pq = require("pyarrow.parquet", "datasets", feature="Parquet import")
    file = pq.ParquetFile(str(path))
    names = set(file.schema_arrow.names)
    if "record" not in names:
        raise AgentConfigError(f"{path} has no `record` column: not a trajectory file.")
    columns = ["record", *[n for n, _ in _EXTRA_PARQUET if n in names]]
    new = duplicates = 0
    for batch in file.iter_batches(batch_size=batch_size, columns=columns):
        rows: list[Any] = []
        for item in batch.to_pylist():
            try:
                trajectory = Trajectory.from_dict(json.loads(item["record"]))
                row = store._row(
                    trajectory,
                    item.get("run") if item.get("run") is not None else run,
                    item.get("model"),
                    _json_object(item, "env_kwargs"),
                    _json_object(item, "versions"),
                    _json_object(item, "timings"),
                    item.get("created"),
                )
            except (AgentConfigError, TypeError, ValueError, KeyError, AttributeError) as e:
                # Earlier batches are committed: say so (s40 att40o F2: "Nothing was
                # written" after 256 episodes were).
                raise AgentConfigError(
                    f"{path}: record {new + duplicates + len(rows) + 1} cannot be stored "
                    f"({type(e).__name__}: {e}). The {new} new episodes before it were stored; "
                    "nothing from it on was."
                ) from e
            rows.append(row)
        for put in store._write(rows):
            new += put.new
            duplicates += not put.new
    return new, duplicates


def _json_object(item: dict[str, Any], name: str) -> dict[str, Any] | None:
    """Column ``name`` of an imported row: absent, or the JSON object an export writes.

    Any other JSON (``null``, a list) is refused: stored as "not given", it was replaced by
    this process's versions and default timings without a word (s42 att42i F2).
    """
    value = item.get(name)
    if value is None:
        return None
    parsed = json.loads(value)
    if not isinstance(parsed, dict):
        raise ValueError(f"its `{name}` column is not a JSON object: {value[:80]!r}")
    return parsed
