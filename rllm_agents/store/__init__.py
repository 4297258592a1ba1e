"""An episode store: trajectories in one SQLite file, safe for many writers, queryable.

Every rollout, leaderboard run or training iteration can write its trajectories here one at a
time, from many threads and processes at once, and read them back identically::

    from rllm_agents.store import EpisodeStore

    with EpisodeStore("runs/episodes.db") as store:
        store.put(trajectory, run="grpo-1", model="tiny-qwen", env_kwargs={"difficulty": 2})
        wins = store.trajectories(env="rllm/Countdown-v1", run="grpo-1", correct=True)
        store.export_parquet("runs/grpo-1.parquet", run="grpo-1")
        store.pass_at_k([1, 4], run="grpo-1")

**What is stored.** One row per episode: the whole :class:`~rllm_agents.trajectory.Trajectory`
as JSON (token ids, logprobs and rewards of every step, messages, info, metadata; the loss mask
and the flat training view are derived from it), plus columns to query on -- ``run``,
``env_id``, ``env_kwargs``, ``model``, ``task_id``, ``seed``, ``total_reward``, ``is_correct``
-- and the ``versions`` of the packages that produced it, ``timings`` and the time it was stored.
JSON floats are written with ``repr`` (shortest exact form, ``NaN``/``Infinity`` included), so
floats come back bit for bit. Values that are not JSON (numpy scalars, tuples) come back as
:func:`~rllm_agents.trajectory.to_jsonable` makes them, as in the JSONL writer.

**Concurrency and crashes.** SQLite in WAL mode: readers never block writers, writers take the
write lock one at a time (``BEGIN IMMEDIATE``) and wait up to ``timeout`` seconds for it (the
busy timeout) instead of failing. Each episode is one transaction, so a writer killed at any
moment (even ``SIGKILL``) loses at most the episode it was writing and leaves the file
readable. ``synchronous=NORMAL`` (the default) survives process crashes; pass ``durable=True``
(``synchronous=FULL``) to also survive power loss, at some write speed. Each thread and each
forked process gets its own connection, so one :class:`EpisodeStore` may be shared freely.

**Damage is reported, never returned.** Every read of a trajectory checks the SHA-256 of its
stored JSON against the episode's hash, and the query columns against the trajectory; every read
of the columns alone (``summaries``, filtered ``count``, ``runs``, ``pass_at_k``) checks their
MAC, reading every row that could change the answer, filtered out or not. A mismatch raises
:class:`DamagedEpisode` naming the row id (:meth:`EpisodeStore.verify` lists every damaged and
missing episode). Opening refuses what is not a store: a 0-byte file or an SQLite file without
the store's tables (unless ``initialize=True``), another file format, and a write-ahead log cut
shorter than the commits its index (``-shm``) records, which SQLite itself would open silently
with the cut episodes gone; and a log with a changed byte (SQLite then drops that commit and
every later one): every open checks the log's frame checksums first, and the first opener
that finds SQLite kept fewer frames than the index recorded keeps the log in
``DB-wal.damaged``. The schema must be exactly the store's own
(checked at open, in ``verify``, and before every read and write that finds it changed): a
trigger, view, extra index or changed column definition is refused, since it would change what
the store's SQL does (an episode acknowledged and dropped, a filter matching other runs) without
changing a stored value. A store on a read-only file or mount opens read-only. A NaN total
reward, and a seed or other integer outside signed 64 bits, are refused at ``put`` before
anything is written (SQLite stores NaN as NULL); infinite rewards are stored (``list --json`` and
``passk --json`` print them as the strings ``"inf"`` / ``"-inf"``: strict JSON has no infinity).

**Edits without the key are reported** (schema version 5, :mod:`rllm_agents.store.integrity` has
the threat model). Each store has a secret key in a mode-0600 file outside the database
(``DB.key``, or ``key=`` / ``--key`` / ``$RLLM_STORE_KEY``) and a random identity; each
episode's row id and query columns carry an HMAC-SHA256 under the key bound to that identity
(stores sharing a key file do not accept each other's rows), and the store keeps a MAC'd count
of the episodes written (ids run 1, 2, 3, ...). A changed field with its digest recomputed fails
its MAC; a deleted row below the count raises :class:`MissingEpisodes` from every read that
aggregates or lists, and ``verify``; a count set back below signed rows is reported by
``verify`` (``repair-mark`` raises it). Pending samples and pins (``meta`` rows) carry MACs
too, pending samples a number from a MAC'd count and are never deleted (settled or dropped,
their state is rewritten): a planted, changed or deleted one raises :class:`DamagedMeta` from
``pending``, ``pass_at_k`` and ``pin``, and ``verify`` lists it. Not detected: a
**rollback** -- the newest episodes (or pending samples) deleted and an earlier value of their
count put back (or a whole earlier copy of the store), which is a state the store really was
in -- unless ``keep-mark`` keeps a copy of the counts beside the key (then every read reports
it); ``verify`` prints the count and the last episode's MAC to
compare with a record kept elsewhere. Nor is a whole store replaced by another that shares its
key file, unless ``keep-mark`` recorded which store lives at that path. Stores of versions 1 to
4 are refused with the command that upgrades them in place after checking them (:func:`upgrade`,
CLI ``upgrade``); an unkeyed store (1 or 2) is upgraded only with ``--unkeyed``, the operator's
word that it never had a key, and never while files a keyed store leaves lie beside it or its
key; it gets a new key, never an existing one, and is only as trustworthy as whoever could write
it before.

**Dedup.** A trajectory's hash is the SHA-256 of its canonical JSON (sorted keys); the same
trajectory written again under the same run, model and env kwargs (a retried write, a
re-imported file) is stored once, keeping the first write's versions and timings; under another
run, model or env kwargs it is another episode (kwargs compare as JSON: ``{"n": 2}`` and
``{"n": 2.0}`` are two configurations).

**pass@k** leaves out episodes played on tasks the client passed (task id ``custom-...``)
unless ``include_custom=True`` (CLI ``passk --include-custom``).

**CLI.** ``python -m rllm_agents.store DB [--key KEY] COMMAND``, the commands ``list``,
``show``, ``export``, ``import``, ``verify``, ``passk``, ``upgrade``, ``repair-mark`` and
``keep-mark``: list
episodes with filters, show one as a readable transcript, export to / import from Parquet,
check every episode against its MAC and that none is missing, the unbiased pass@k, upgrade an
older store (``--unkeyed``, ``--shared-key``, ``--accept-missing``), raise a count that was set
back over the signed episodes past it, and keep the count beside the key.
"""

from rllm_agents.store.cli import main
from rllm_agents.store.damage import (
    DamagedEpisode,
    DamagedMeta,
    DamagedStore,
    MissingEpisodes,
    check_wal,
)
from rllm_agents.store.episode_store import EpisodeStore
from rllm_agents.store.schema import (
    SCHEMA_VERSION,
    Put,
    StoredEpisode,
    content_hash,
    package_versions,
)
from rllm_agents.store.transcript import transcript
from rllm_agents.store.upgrade import upgrade

__all__ = [
    "EpisodeStore",
    "Put",
    "StoredEpisode",
    "DamagedEpisode",
    "DamagedMeta",
    "DamagedStore",
    "MissingEpisodes",
    "SCHEMA_VERSION",
    "content_hash",
    "package_versions",
    "check_wal",
    "transcript",
    "main",
    "upgrade",
]
