"""Episode store: episodes written per second by 16 concurrent writer processes, vs JSONL lines.

Both sides run in the same pool of 16 processes (started once) on the same trajectories: 2-turn
token-exact episodes with a 300-token prompt and 200-token completions (logprobs, info,
messages), distinct per writer. One round: every writer stores ``PER_WRITER`` episodes one at
a time into a fresh target --

* baseline ``test_jsonl_16_writers``: one shared JSONL file, each writer appending and flushing
  a line per episode (:class:`rllm_agents.writers.TrajectoryWriter` with ``append=True``, what
  the leaderboard and rollouts write today);
* ``test_store_16_writers``: one shared SQLite store, one transaction per episode
  (:meth:`rllm_agents.store.EpisodeStore.put`, WAL, ``synchronous=NORMAL``, dedup by hash).

The ratio is ``speedup`` = JSONL median round time / store median round time (the store's
throughput as a fraction of raw appends; :mod:`benchmarks.perf._ratios`); ``episodes_per_s`` of
each is in ``extra_info``. Goal: >= 0.5, i.e. writing to the store instead of a JSONL file at
most halves a rollout's write throughput (what dedup, queryable columns and crash-safe
transactions may cost). With ``--benchmark-disable`` (the CI smoke run) a round has 2
episodes per writer.
"""

from __future__ import annotations

import multiprocessing
import random
import time
from dataclasses import replace
from pathlib import Path

import pytest

from benchmarks.perf._ratios import median_ratio, record
from rllm_agents.store import EpisodeStore
from rllm_agents.trajectory import Step, Trajectory
from rllm_agents.writers import TrajectoryWriter

WRITERS = 16
PER_WRITER = 40
SMOKE_PER_WRITER = 2

_BASE: list[Trajectory] = []


def _trajectory(i: int) -> Trajectory:
    rng = random.Random(i)
    sequence = [rng.randrange(150_000) for _ in range(300)]
    steps = []
    for turn in range(2):
        completion = [rng.randrange(150_000) for _ in range(200)]
        text = f"<think>turn {turn} of episode {i}</think><answer>(3 + 5) * 7</answer>"
        steps.append(
            Step(
                prompt_ids=list(sequence),
                completion_ids=completion,
                logprobs=[-rng.expovariate(2.0) for _ in completion],
                response=text,
                action=text,
                observation="Incorrect: the expression equals 56, not 57.",
                reward=float(turn == 1),
                terminated=turn == 1,
                info={"turn": turn + 1, "is_correct": turn == 1, "verdict": "wrong_value"},
            )
        )
        sequence = sequence + completion + [rng.randrange(150_000) for _ in range(20)]
    return Trajectory(
        env_id="rllm/Countdown-v1",
        task_id=f"countdown-d1-s0-{i}",
        seed=i,
        initial_observation="Using the numbers [3, 5, 7], create an expression that equals 57.",
        messages=[{"role": "user", "content": "Using the numbers [3, 5, 7] ..."}],
        steps=steps,
        finish="terminated",
        metadata={"policy": "bench", "model": "tiny", "wall_s": 0.5},
    )


def _init(count: int) -> None:
    _BASE[:] = [_trajectory(i) for i in range(count)]


def _write(kind: str, path: str, worker: int, count: int) -> None:
    episodes = [replace(t, sample=worker) for t in _BASE[:count]]
    if kind == "jsonl":
        with TrajectoryWriter(path, format="jsonl", append=True) as writer:
            for t in episodes:
                writer.write(t)
    else:
        with EpisodeStore(path) as store:
            for t in episodes:
                store.put(t, run="bench")


@pytest.fixture(scope="module")
def pool():
    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(WRITERS, initializer=_init, initargs=(PER_WRITER,)) as p:
        yield p


def _bench(benchmark, pool, tmp_path: Path, kind: str) -> None:
    per_writer = SMOKE_PER_WRITER if benchmark.disabled else PER_WRITER
    state = {"round": 0}
    times: list[float] = []

    def setup():
        state["round"] += 1
        path = tmp_path / f"{kind}-{state['round']}.{'jsonl' if kind == 'jsonl' else 'db'}"
        return (str(path),), {}

    def run(path: str) -> None:
        started = time.perf_counter()
        # A writer that dies leaves starmap waiting for ever: fail instead.
        pool.starmap_async(_write, [(kind, path, w, per_writer) for w in range(WRITERS)]).get(
            timeout=600
        )
        times.append(time.perf_counter() - started)

    benchmark.pedantic(run, setup=setup, rounds=1 if benchmark.disabled else 5, iterations=1)
    path = tmp_path / f"{kind}-{state['round']}.{'jsonl' if kind == 'jsonl' else 'db'}"
    if kind == "jsonl":
        stored = sum(1 for _ in path.open(encoding="utf-8"))
    else:
        with EpisodeStore(path, read_only=True) as store:
            stored = len(store)
    assert stored == WRITERS * per_writer
    times.sort()
    benchmark.extra_info.update(
        writers=WRITERS,
        episodes_per_round=WRITERS * per_writer,
        episodes_per_s=round(WRITERS * per_writer / times[len(times) // 2], 1),
        bytes_per_episode=round(
            sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists()) / stored
        ),
    )


def test_jsonl_16_writers(benchmark, pool, tmp_path):
    benchmark.extra_info.update(label="JSONL appends (TrajectoryWriter), 16 writer processes")
    _bench(benchmark, pool, tmp_path, "jsonl")
    record(benchmark)


def test_store_16_writers(benchmark, pool, tmp_path):
    per_writer = SMOKE_PER_WRITER if benchmark.disabled else PER_WRITER
    benchmark.extra_info.update(
        label=f"SQLite episode store, {WRITERS} writer processes, one transaction per episode",
        baseline="test_jsonl_16_writers",
        baseline_label="one shared JSONL file, a flushed line per episode",
        metric="speedup",
        goal=0.5,
        work=[WRITERS * per_writer, "episodes"],
    )
    _bench(benchmark, pool, tmp_path, "store")
    median_ratio(benchmark)
