"""The episode store: exact round trips, queries, dedup, Parquet, pass@k, threads, the CLI."""

from __future__ import annotations

import json
import math
import os
import random
import sqlite3
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rllm_agents.error import AgentConfigError
from rllm_agents.store import EpisodeStore, content_hash, main
from rllm_agents.trajectory import Step, Trajectory
from rllm_agents.writers import write_trajectories

ODD_FLOATS = [-0.0, 5e-324, sys.float_info.max, -float("inf"), 0.1 + 0.2, 1 / 3, -1e-300]


def make_trajectory(i: int, *, turns: int = 2, prompt_len: int = 40, completion_len: int = 30):
    """Trajectory ``i``: a token-exact multi-turn episode whose content depends only on ``i``."""
    rng = random.Random(i)
    steps = []
    sequence = [rng.randrange(50_000) for _ in range(prompt_len)]
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": f"Task {i}: reach 24 with [1, 3, 4, 6] ☃"},
    ]
    for turn in range(turns):
        completion = [rng.randrange(50_000) for _ in range(completion_len)]
        logprobs = [-rng.expovariate(1.0) for _ in completion]
        logprobs[0] = ODD_FLOATS[(i + turn) % len(ODD_FLOATS)]
        last = turn == turns - 1
        reward = float(last and i % 3 == 0)
        response = f"<think>try {turn}</think><answer>6 / (1 - 3 / 4)</answer> #{i}"
        steps.append(
            Step(
                prompt_ids=list(sequence),
                completion_ids=completion,
                logprobs=logprobs,
                response=response,
                action=response.split("</think>")[-1],
                observation="Correct." if reward else f"Incorrect: try again ({turn})",
                reward=reward,
                terminated=last,
                truncated=False,
                info={
                    "turn": turn + 1,
                    "is_correct": bool(reward),
                    "reward_components": {"format": 1.0, "value": reward},
                    "nested": {"list": [1, 2.5, None, "x"], "empty": {}},
                    "invalid_reason": None,
                },
                finish_reason="stop" if turn % 2 == 0 else "length",
            )
        )
        messages.append({"role": "assistant", "content": response})
        if not last:
            messages.append({"role": "user", "content": "Incorrect: try again"})
        glue = [rng.randrange(50_000) for _ in range(5)]
        sequence = sequence + completion + glue
    return Trajectory(
        env_id="rllm/Countdown-v1" if i % 2 == 0 else "rllm/Math-v1",
        task_id=f"task-{i % 5}",
        seed=i,
        group=i % 5,
        sample=i // 5,
        initial_observation=messages[1]["content"],
        initial_info={"task_id": f"task-{i % 5}", "turn": 0, "nums": [1, 3, 4, 6]},
        messages=messages,
        steps=steps,
        token_exact=True,
        finish="terminated",
        metadata={"policy": "oracle", "model": f"model-{i % 2}", "wall_s": 0.125 * i},
    )


def same_bits(a: Trajectory, b: Trajectory) -> bool:
    """Equal, and every float equal bit for bit (-0.0 is not 0.0; NaN equals NaN)."""
    return _canonical_floats(a) == _canonical_floats(b)


def _canonical_floats(t: Trajectory) -> str:
    return json.dumps(t.to_dict(), sort_keys=True, default=repr, allow_nan=True)


@pytest.fixture
def store(tmp_path):
    with EpisodeStore(tmp_path / "episodes.db") as s:
        yield s


# ----------------------------------------------------------------------- round trips


def test_round_trip_is_exact_for_every_field(store):
    originals = [make_trajectory(i) for i in range(12)]
    for t in originals:
        assert store.put(t, run="r1").new
    back = store.trajectories()
    assert back == originals
    assert all(same_bits(a, b) for a, b in zip(back, originals, strict=True))
    assert [t.steps[0].logprobs[0] for t in back][:3] == ODD_FLOATS[:3]
    assert math.copysign(1.0, back[0].steps[0].logprobs[0]) == -1.0  # -0.0 survived
    for a, b in zip(back, originals, strict=True):
        assert a.loss_mask() == b.loss_mask() and a.logprobs() == b.logprobs()
        assert a.token_ids() == b.token_ids()


def test_stored_columns_and_defaults(store):
    t = make_trajectory(3)
    put = store.put(t, run="eval", env_kwargs={"difficulty": 2}, timings={"gen_s": 1.5})
    episode = store.get(put.id)
    assert episode.hash == put.hash == content_hash(t)
    assert (episode.run, episode.env_id, episode.model) == ("eval", t.env_id, "model-1")
    assert episode.env_kwargs == {"difficulty": 2} and episode.timings == {"gen_s": 1.5}
    assert (episode.task_id, episode.seed, episode.group, episode.sample) == ("task-3", 3, 3, 0)
    assert episode.total_reward == t.total_reward and episode.is_correct == t.is_correct
    assert episode.num_turns == 2 and episode.finish == "terminated"
    assert "python" in episode.versions and "gymnasium" in episode.versions
    # Defaults from the trajectory's metadata: model, and timings from keys ending in _s.
    other = store.get(store.put(make_trajectory(4)).id)
    assert other.model == "model-0" and other.timings == {"wall_s": 0.5} and other.run is None


def test_nan_and_numpy_values_come_back_as_json(store):
    np = pytest.importorskip("numpy")
    t = make_trajectory(1)
    t.steps[0].logprobs[1] = float("nan")
    t.steps[0].info["np"] = np.float32(0.5)
    t.steps[0].info["arr"] = np.arange(3)
    back = store.get(store.put(t).id).trajectory
    assert math.isnan(back.steps[0].logprobs[1])
    assert back.steps[0].info["np"] == 0.5 and back.steps[0].info["arr"] == [0, 1, 2]


finite = st.floats(allow_nan=False)


@settings(max_examples=40, deadline=None)
@given(
    logprobs=st.lists(finite, min_size=1, max_size=20),
    reward=finite,
    text=st.text(max_size=200),
    ids=st.lists(st.integers(0, 2**31 - 1), max_size=30),
)
def test_any_floats_and_text_round_trip_bit_for_bit(tmp_path_factory, logprobs, reward, text, ids):
    path = tmp_path_factory.mktemp("h") / "e.db"
    step = Step(ids, list(range(len(logprobs))), logprobs, text, text, text, reward)
    t = Trajectory(env_id="rllm/X-v0", task_id=text, steps=[step], messages=[{"c": text}])
    with EpisodeStore(path) as s:
        back = s.get(s.put(t).id).trajectory
    assert same_bits(back, t)


@pytest.mark.parametrize("env_id", ["rllm/Countdown-v1", "rllm/Math-v1", "rllm/FrozenLake-v1"])
def test_real_env_episodes_round_trip(store, env_id):
    """Trajectories recorded from real env steps (info as the env returns it)."""
    import gymnasium as gym

    import rllm_envs  # noqa: F401
    from rllm_agents.trajectory import to_jsonable

    env = gym.make(env_id)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        t = Trajectory(
            env_id=env_id,
            task_id=str(info["task_id"]),
            seed=seed,
            initial_observation=obs,
            initial_info=to_jsonable(info),
        )
        prompt = list(range(10))
        while True:
            action = env.unwrapped.oracle_action()
            obs, reward, terminated, truncated, info = env.step(action)
            completion = [7, 8, 9]
            t.steps.append(
                Step(
                    list(prompt),
                    completion,
                    [-0.1, -0.2, -0.3],
                    action,
                    action,
                    obs,
                    float(reward),
                    terminated,
                    truncated,
                    to_jsonable(info),
                )
            )
            prompt = prompt + completion + [1, 2]
            if terminated or truncated:
                break
        t.finish = "terminated" if terminated else "truncated"
        t.check_token_exact()
        assert store.get(store.put(t, env_kwargs={}).id).trajectory == t
    env.close()


# ------------------------------------------------------------------ queries and dedup


def test_queries_filter_by_env_model_run_task_and_reward(store):
    for i in range(30):
        store.put(make_trajectory(i), run="a" if i < 20 else "b")
    assert len(store) == 30 and store.runs() == {"a": 20, "b": 10}
    assert store.count(env="rllm/Countdown-v1") == 15
    assert store.count(model="model-1", run="a") == 10
    assert {e.task_id for e in store.summaries(task="task-2")} == {"task-2"}
    assert store.count(task="task-2") == 6
    correct = store.trajectories(correct=True)
    assert correct and all(t.is_correct for t in correct)
    assert store.count(correct=True) == 10  # i % 3 == 0
    assert store.count(min_reward=0.5) == 10 and store.count(max_reward=0.5) == 20
    page = [e.id for e in store.summaries(limit=5, offset=10)]
    assert page == list(range(11, 16))
    assert all(e.trajectory is None for e in store.summaries(limit=2))
    with pytest.raises(AgentConfigError):
        store.count(env=3)
    with pytest.raises(TypeError):
        store.count(colour="red")


def test_dedup_by_content_hash_run_and_model(store):
    t = make_trajectory(0)
    first = store.put(t)
    again = store.put(make_trajectory(0))
    assert first.new and not again.new and again.id == first.id and again.hash == first.hash
    assert len(store) == 1
    changed = store.put(replace(make_trajectory(0), sample=99))
    assert changed.new and len(store) == 2
    puts = store.put_many([make_trajectory(0), make_trajectory(1), make_trajectory(1)])
    assert [p.new for p in puts] == [False, True, False] and len(store) == 3


def test_the_same_episode_under_another_run_or_model_is_stored_again(store):
    # A deterministic baseline re-run under a new name: each run keeps all its episodes
    # (issue #31 S5: the second run's episodes used to be dropped as duplicates of the first).
    for run in ("baseline-day1", "baseline-day2"):
        puts = [store.put(make_trajectory(i), run=run, model="m") for i in range(3)]
        assert all(p.new for p in puts)
    assert store.runs() == {"baseline-day1": 3, "baseline-day2": 3}
    samples: dict[str, int] = {}
    for row in store.pass_at_k([1]).values():
        samples[row["run"]] = samples.get(row["run"], 0) + row["samples"]
    assert samples == {"baseline-day1": 3, "baseline-day2": 3}
    other_model = store.put(make_trajectory(0), run="baseline-day1", model="m2")
    assert other_model.new and len(store) == 7
    retried = store.put(make_trajectory(0), run="baseline-day2", model="m")
    assert not retried.new and retried.id == 4 and len(store) == 7
    assert store.put(make_trajectory(0), run=None, model=None).new
    assert not store.put(make_trajectory(0), run=None, model=None).new  # None matches None
    # A hash now names up to one episode per run and model: a full hash names them all.
    with pytest.raises(KeyError, match="stored more than once.*give the row id"):
        store.get(other_model.hash)
    assert store.get(other_model.id).run == "baseline-day1"


def test_get_by_id_hash_and_prefix(store):
    put = store.put(make_trajectory(5))
    assert store.get(put.hash).id == put.id == store.get(put.hash[:8]).id
    for bad in ("zzzzzz", "abc", 999, put.hash[:6].upper()):
        with pytest.raises(KeyError):
            store.get(bad)


def test_put_many_is_all_or_nothing(store):
    store.put(make_trajectory(0))
    with pytest.raises(AgentConfigError):
        store.put_many([make_trajectory(1), "not a trajectory"])  # type: ignore[list-item]
    assert len(store) == 1


# ------------------------------------------------------------------------ pass@k


def test_pass_at_k_uses_the_unbiased_estimator(store):
    from benchmarks.leaderboard.passk import pass_at_k

    # Task t0: 4 samples, 1 correct; t1: 4 samples, 0 correct; t2: 1 sample, correct (at
    # k=2 its missing sample counts as a failure: s16 att29e F1).
    plan = {"t0": [1, 0, 0, 0], "t1": [0, 0, 0, 0], "t2": [1]}
    for task, outcomes in plan.items():
        for sample, ok in enumerate(outcomes):
            step = Step(
                [1], [2], [-0.5], "r", "r", "", float(ok), True, info={"is_correct": bool(ok)}
            )
            t = Trajectory(env_id="rllm/X-v0", task_id=task, sample=sample, steps=[step])
            store.put(t, run="run1")
    table = store.pass_at_k([1, 2])
    row = table["run1|rllm/X-v0"]
    assert row["tasks"] == 3 and row["samples"] == 9
    # Every task counts as sampled 4 times (the most-sampled task's count): t2's 3 missing
    # samples are failures (s16 att29e F1, att31e).
    assert row["pass@1"] == pytest.approx((0.25 + 0.0 + 0.25) / 3)
    assert row["pass@2"] == pytest.approx((pass_at_k(4, 1, 2) + 0.0 + pass_at_k(4, 1, 2)) / 3)
    assert row["short@1"] == 1 and row["short@2"] == 1
    five = store.pass_at_k([5])["run1|rllm/X-v0"]
    assert five["pass@5"] == pytest.approx(2 / 3) and five["short@5"] == 3
    with pytest.raises(AgentConfigError):
        store.pass_at_k([0])


# ------------------------------------------------------------------------ Parquet


def test_parquet_export_import_round_trip(store, tmp_path):
    pytest.importorskip("pyarrow")
    originals = [make_trajectory(i) for i in range(10)]
    for i, t in enumerate(originals):
        store.put(t, run="r", env_kwargs={"i": i})
    out = tmp_path / "out.parquet"
    assert store.export_parquet(out, row_group_size=3) == 10
    assert store.export_parquet(tmp_path / "some.parquet", env="rllm/Math-v1") == 5
    assert store.export_parquet(tmp_path / "none.parquet", run="missing") == 0
    with EpisodeStore(tmp_path / "copy.db") as copy:
        assert copy.import_parquet(out) == (10, 0)
        assert copy.import_parquet(out) == (0, 10)
        a, b = list(store.episodes()), list(copy.episodes())
        assert [x.trajectory for x in a] == [y.trajectory for y in b] == originals
        for x, y in zip(a, b, strict=True):
            assert (x.hash, x.run, x.env_kwargs, x.versions, x.timings, x.created) == (
                y.hash,
                y.run,
                y.env_kwargs,
                y.versions,
                y.timings,
                y.created,
            )
            assert same_bits(x.trajectory, y.trajectory)


def test_imports_trajectory_writer_parquet_files(store, tmp_path):
    pytest.importorskip("pyarrow")
    path = write_trajectories([make_trajectory(i) for i in range(4)], tmp_path / "w.parquet")
    assert store.import_parquet(path, run="imported") == (4, 0)
    assert store.runs() == {"imported": 4}
    assert store.trajectories() == [make_trajectory(i) for i in range(4)]


# ------------------------------------------------------------------ threads, modes


def test_many_threads_share_one_store(store):
    errors = []

    def writer(w):
        try:
            for i in range(20):
                store.put(make_trajectory(1000 * w + i), run=f"w{w}")
            store.put(make_trajectory(999_999))  # every thread writes this one: stored once
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(store) == 8 * 20 + 1
    for w in range(8):
        assert store.trajectories(run=f"w{w}") == [make_trajectory(1000 * w + i) for i in range(20)]


def test_wal_mode_read_only_and_bad_arguments(tmp_path):
    path = tmp_path / "e.db"
    with EpisodeStore(path) as s:
        s.put(make_trajectory(0))
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with EpisodeStore(path, read_only=True) as ro:
        assert len(ro) == 1
        with pytest.raises(AgentConfigError, match="read-only"):
            ro.put(make_trajectory(1))
    for kwargs in ({"path": ":memory:"}, {"path": path, "timeout": 0}):
        with pytest.raises(AgentConfigError):
            EpisodeStore(**kwargs)
    with pytest.raises(AgentConfigError, match="No episode store"):
        EpisodeStore(tmp_path / "missing.db", read_only=True)
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(AgentConfigError, match="schema version 99"):
        EpisodeStore(path)


def test_store_pickles_as_its_path(store):
    import pickle

    store.put(make_trajectory(0))
    clone = pickle.loads(pickle.dumps(store))
    assert clone.path == store.path and len(clone) == 1
    clone.close()


# ---------------------------------------------------------------------------- CLI


def test_cli_list_show_export_import_passk(store, tmp_path, capsys):
    for i in range(6):
        store.put(make_trajectory(i), run="cli")
    db = str(store.path)
    assert main([db, "list", "--env", "rllm/Countdown-v1"]) == 0
    out = capsys.readouterr().out
    assert "3 of 3 episodes" in out and "rllm/Countdown-v1" in out and "rllm/Math-v1" not in out
    assert main([db, "list", "--json", "--correct"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == [1, 4] and all(r["is_correct"] for r in rows)

    assert main([db, "show", "1"]) == 0
    text = capsys.readouterr().out
    assert "--- system\nBe brief." in text and "--- user\nTask 0" in text
    assert "--- assistant (turn 1, 30 tokens)" in text and "reward 1" in text
    assert "<answer>6 / (1 - 3 / 4)</answer>" in text
    assert main([db, "show", store.get(2).hash[:10], "--tokens"]) == 0
    assert "loss_mask [0, 0" in capsys.readouterr().out
    assert main([db, "show", "--json", "3"]) == 0
    assert Trajectory.from_dict(json.loads(capsys.readouterr().out)) == make_trajectory(2)
    assert main([db, "show", "999"]) == 1

    out_file = tmp_path / "x.parquet"
    assert main([db, "export", str(out_file), "--run", "cli"]) == 0
    assert "exported 6 episodes" in capsys.readouterr().out
    assert main([str(tmp_path / "new.db"), "import", str(out_file)]) == 0
    assert "imported 6 new episodes (0 already stored)" in capsys.readouterr().out

    assert main([db, "passk", "-k", "1", "-k", "2"]) == 0
    out = capsys.readouterr().out
    assert "pass@1" in out and "pass@2" in out and "cli" in out
    assert main([db, "passk", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert {r["env"] for r in table} == {"rllm/Countdown-v1", "rllm/Math-v1"}
    with pytest.raises(SystemExit):
        main([str(tmp_path / "missing.db"), "list"])


def test_cli_runs_as_a_module(store):
    import subprocess

    store.put(make_trajectory(0))
    out = subprocess.run(
        [sys.executable, "-m", "rllm_agents.store", str(store.path), "list"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "1 of 1 episodes" in out.stdout


def test_a_value_its_column_would_convert_is_refused_before_anything_is_written(tmp_path):
    """att31c M2: ``put`` acknowledged seed ``2.0`` (also ``np.float64``), group ``1.0``,
    env ``5`` and seed ``"12"``; SQLite stored them converted to the column's type, so the MAC
    (written over the value given) failed on read, and every read of the whole store raised
    ``DamagedEpisode``. Such values are refused; numpy integers are stored as integers."""
    np = pytest.importorskip("numpy")

    def episode(**fields):
        trajectory = Trajectory(env_id="rllm/Math-v1", task_id="t1", **fields)
        trajectory.steps.append(
            Step(
                prompt_ids=[1],
                completion_ids=[2],
                logprobs=[-0.1],
                response="r",
                action="a",
                observation="o",
                reward=1.0,
                info={"is_correct": True},
            )
        )
        return trajectory

    with EpisodeStore(tmp_path / "e.db") as store:
        store.put(episode(seed=1), run="good")
        for fields in (
            {"seed": 2.0},
            {"seed": np.float64(2.0)},
            {"seed": "12"},
            {"group": 1.0},
            {"sample": "3"},
            {"env_id": 5},
        ):
            trajectory = episode(**{k: v for k, v in fields.items() if k != "env_id"})
            if "env_id" in fields:
                trajectory = replace(trajectory, env_id=fields["env_id"])
            with pytest.raises(AgentConfigError, match="Nothing was written"):
                store.put(trajectory, run="bad")
        with pytest.raises(AgentConfigError, match="run"):
            store.put(episode(seed=3), run=7)
        assert store.put(episode(seed=np.int64(4), group=np.int32(2)), run="good").new
    with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
        assert store.count() == 2 and store.verify() == []
        seeds = sorted(t.seed for t in store.trajectories())
        assert seeds == [1, 4] and all(type(s) is int for s in seeds)


def test_stopping_a_task_after_its_failures_does_not_raise_pass_at_k(tmp_path):
    """s16 att29e F1: tasks with fewer than k samples were left out of pass@k, so a client
    that sees each grade sampled k-1 times, added a k-th sample only where one was right and
    stopped elsewhere: pass@4 1.0 for a policy whose honest pass@4 is 0.87. Missing samples
    now count as failures."""
    import random

    rng = random.Random(0)

    def put(store, run, task, ok, sample):
        step = Step([1], [2], [-0.5], "r", "r", "", float(ok), True, info={"is_correct": ok})
        trajectory = Trajectory(env_id="rllm/X-v0", task_id=task, sample=sample, steps=[step])
        store.put(trajectory, run=run)

    with EpisodeStore(tmp_path / "e.db") as store:
        for t in range(60):
            outcomes = [rng.random() < 0.3 for _ in range(4)]
            for i, ok in enumerate(outcomes):
                put(store, "honest", f"t{t}", ok, i)
            for i, ok in enumerate(outcomes[:3]):
                put(store, "stopping", f"t{t}", ok, i)
            if any(outcomes[:3]):
                put(store, "stopping", f"t{t}", outcomes[3], 3)
        table = store.pass_at_k([4])
    honest, stopping = table["honest|rllm/X-v0"], table["stopping|rllm/X-v0"]
    assert stopping["pass@4"] <= honest["pass@4"] < 1.0
    assert stopping["tasks"] == 60 and stopping["short@4"] > 0


def test_sampling_a_task_until_its_first_success_does_not_raise_pass_at_k(tmp_path):
    """s16 att31e: with unequal counts, a writer that samples each task until its first
    success (up to 8) read pass@1 0.51 for a policy right 0.3 of the time. Every task now
    counts as sampled as often as the most-sampled one."""
    import random

    rng = random.Random(1)
    with EpisodeStore(tmp_path / "e.db") as store:
        for t in range(200):
            for i in range(8):
                ok = rng.random() < 0.3
                step = Step(
                    [1], [2], [-0.5], "r", "r", "", float(ok), True, info={"is_correct": ok}
                )
                store.put(
                    Trajectory(env_id="rllm/X-v0", task_id=f"t{t}", sample=i, steps=[step]), run="r"
                )
                if ok:
                    break
        row = store.pass_at_k([1])["r|rllm/X-v0"]
    assert row["pass@1"] < 0.3 and row["short@1"] > 0


def test_show_reads_six_digits_as_the_row_or_the_hash_prefix_that_finds_an_episode():
    """s40 att40e F2, att40l F1: an all-digit hash prefix (one in 16 at six characters) was
    read as a row id, and ``show`` printed another episode with exit code 0."""
    from types import SimpleNamespace

    from rllm_agents.store.cli import _episode

    class FakeStore:  # a fake of EpisodeStore.get alone, for the CLI's lookup
        def __init__(self, rows: dict[int, str]) -> None:
            self.rows = rows

        def get(self, key):
            if isinstance(key, int):
                if key in self.rows:
                    return SimpleNamespace(id=key)
                raise KeyError(f"no episode {key}")
            hits = [i for i, h in self.rows.items() if h.startswith(key)]
            if not hits:
                raise KeyError(f"No episode {key!r}")
            if len(hits) > 1:
                raise KeyError(f"{key!r} matches episodes {hits}")
            return SimpleNamespace(id=hits[0])

    by_hash = FakeStore({3: "002162ab", 2161: "ffee"})
    assert _episode(by_hash, "002162").id == 3  # no row 2162: the hash prefix
    assert _episode(FakeStore({2162: "aa", 3: "ffee"}), "002162").id == 2162
    assert _episode(by_hash, "3").id == 3  # under six characters: a row id only
    with pytest.raises(KeyError, match="both row id"):
        _episode(FakeStore({2162: "aa", 3: "002162ab"}), "002162")
    with pytest.raises(KeyError, match="matches episodes"):  # att40l F1: not the row
        _episode(FakeStore({3: "00000312", 4: "000003ab", 5: "000003ab"}), "000003")
    with pytest.raises(KeyError):
        _episode(by_hash, "777777")


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("completion_ids", 2**31, "token ids"),  # att40h F1: 2**63 broke every export
        ("completion_ids", 2**63, "token ids"),
        ("completion_ids", -1, "token ids"),
        ("completion_ids", True, "token ids"),  # att40j F2: a bool broke every export
        ("prompt_ids", 7.9, "token ids"),  # att40j F3: exported as 7, silently
        ("logprobs", "x", "logprobs"),  # att40j F2
        ("logprobs", None, "logprobs"),
        ("logprobs", 10**400, "logprobs"),  # att40l F2: no float holds it
    ],
)
def test_a_value_the_training_view_cannot_hold_is_refused_before_anything_is_written(
    store, field, value, match
):
    """s40 att40h F1, att40j F2-F4: such a value was stored and verified, then broke every
    export that held it (after writing the row groups before it) or was cut silently."""
    trajectory = make_trajectory(0)
    getattr(trajectory.steps[-1], field)[3] = value
    with pytest.raises(AgentConfigError, match=match):
        store.put(trajectory, run="r")
    longer = make_trajectory(1)
    longer.steps[0].logprobs.append(-1.0)  # att40j F4: out of line with the ids
    with pytest.raises(AgentConfigError, match="logprobs"):
        store.put(longer, run="r")
    cancelling = make_trajectory(4)  # att40m F1: exported one float per step
    cancelling.steps[0].reward, cancelling.steps[1].reward = 10**400, -(10**400)
    with pytest.raises(AgentConfigError, match="reward"):
        store.put(cancelling, run="r")
    keyed = make_trajectory(3)
    keyed.steps[0].prompt_ids = {7: None}  # type: ignore[assignment]  # att40l F2
    with pytest.raises(AgentConfigError, match="token ids"):
        store.put(keyed, run="r")
    flag = make_trajectory(2)
    flag.token_exact = "no"  # type: ignore[assignment]  # att40j F2
    with pytest.raises(AgentConfigError, match="token_exact"):
        store.put(flag, run="r")
    assert store.count() == 0


def test_an_export_that_fails_part_way_leaves_the_file_it_would_replace(
    store, tmp_path, monkeypatch
):
    """s40 att40h F1: a failing export left the row groups written before the failure as a
    well-formed, shorter Parquet file in place of the last good one."""
    pytest.importorskip("pyarrow")
    from rllm_agents.store import parquet

    for i in range(10):
        store.put(make_trajectory(i), run="r")
    out = tmp_path / "out.parquet"
    assert store.export_parquet(out, row_group_size=3) == 10
    before = out.read_bytes()
    real = parquet._canonical
    calls = []

    def fails_at_the_eighth(value):  # a fault injected into the export of something else
        calls.append(value)
        if len(calls) > 21:
            raise OverflowError("injected")
        return real(value)

    monkeypatch.setattr(parquet, "_canonical", fails_at_the_eighth)
    with pytest.raises(OverflowError):
        store.export_parquet(out, row_group_size=3)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_two_exports_to_one_file_at_once_do_not_share_a_partial_file(store, tmp_path):
    """s40 att40j F1: both wrote into one `.NAME.partial`: the export that said it succeeded
    left a corrupt file or the other's rows."""
    pytest.importorskip("pyarrow")
    import threading

    import pyarrow.parquet as pq

    for i in range(60):
        store.put(make_trajectory(i), run="a" if i % 2 else "b")
    out = tmp_path / "out.parquet"
    counts: dict[str, int] = {}

    def export(run: str) -> None:
        with EpisodeStore(store.path) as mine:
            counts[run] = mine.export_parquet(out, row_group_size=4, run=run)

    threads = [threading.Thread(target=export, args=(run,)) for run in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert counts == {"a": 30, "b": 30}
    table = pq.read_table(out)  # whole, and one export's rows
    assert table.num_rows == 30 and len(set(table.column("run").to_pylist())) == 1
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_numpy_values_are_refused_or_stored_as_json_can_hold_them():
    """s40 att40l, att40m: numpy ints and float32s crashed ``put`` with a raw ``TypeError``
    (they are not JSON); they are refused with a message saying what to do, while float64
    (a float) is stored."""
    np = pytest.importorskip("numpy")
    from rllm_agents.store.episode_store import _is_number, _logprobs, _token_ids

    assert not _token_ids(list(np.array([2, 3]))) and _token_ids(np.array([2, 3]).tolist())
    assert _logprobs(list(np.array([-0.5]))) and not _logprobs(list(np.array([-0.5], np.float32)))
    assert _is_number(np.float64(1.0)) and not _is_number(np.float32(1.0))
    assert not _is_number(10**400) and not _is_number(True)


def test_an_export_onto_the_store_s_own_files_is_refused_and_keeps_the_umask(store, tmp_path):
    """s40 att40o F1: ``export ep.db`` onto the store itself replaced it (5 of 5 episodes lost,
    rc 0); F5: exports were left 0600 (the temporary file's mode)."""
    pytest.importorskip("pyarrow")
    store.put(make_trajectory(0), run="r")
    for own in (store.path, f"{store.path}-wal", store.key_path):
        with pytest.raises(AgentConfigError, match="own files"):
            store.export_parquet(own)
    assert store.count() == 1
    umask = os.umask(0o022)
    try:
        out = tmp_path / "o.parquet"
        store.export_parquet(out)
    finally:
        os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o644


def test_a_failed_import_says_what_it_stored(store, tmp_path):
    """s40 att40o F2: a bad record after the first batch said "Nothing was written" when the
    batches before it were stored."""
    pytest.importorskip("pyarrow")
    with EpisodeStore(tmp_path / "src.db") as source:
        for i in range(6):
            source.put(make_trajectory(i), run="r")
        source.export_parquet(tmp_path / "good.parquet")
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "good.parquet")
    records = table.column("record").to_pylist()
    records[-1] = records[-1].replace('"prompt_ids": [', '"prompt_ids": [-1, ', 1)
    pq.write_table(
        table.set_column(table.schema.get_field_index("record"), "record", [records]),
        tmp_path / "bad.parquet",
    )
    with pytest.raises(AgentConfigError, match="The 3 new episodes before it were stored"):
        store.import_parquet(tmp_path / "bad.parquet", batch_size=3)
    assert store.count() == 3


def test_att40p_store_findings(store, tmp_path, capsys):
    """s40 att40p: an export onto the key's mark replaced it (F2); colliding env_kwargs keys
    lost a value (F3); a newline in ``finish`` printed a fake row (F4); a NaN filter matched
    nothing silently (F5)."""
    pytest.importorskip("pyarrow")
    from rllm_agents.store.cli import main

    with pytest.raises(AgentConfigError, match="distinct as strings"):
        store.put(make_trajectory(1), run="r", env_kwargs={1: "a", "1": "b"})
    odd = make_trajectory(2)
    odd.finish = "stop\n2 deadbeef0000 victim\x1b[1A"
    store.put(odd, run="r")
    assert store.count() == 1
    marks = [p for p in tmp_path.rglob("*") if p.name.startswith(Path(store.key_path).name + ".")]
    for own in [*marks, Path(f"{store.path}.lock")]:
        with pytest.raises(AgentConfigError, match="own files"):
            store.export_parquet(own)
    assert store.export_parquet(tmp_path / f"{Path(store.path).name}2.parquet") == 1
    with pytest.raises(AgentConfigError, match="nan"):
        store.count(min_reward=float("nan"))
    capsys.readouterr()
    assert main([str(store.path), "list"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 3  # header, one row, count


def test_a_history_that_does_not_extend_exports_with_one_length(store, tmp_path):
    """s40 att40p F1: a later turn's prompt shorter than an earlier turn's prompt and
    completion (token_exact=False) was stored and verified, then broke every export."""
    pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    slid = make_trajectory(0, turns=2)
    slid.steps[1].prompt_ids = slid.steps[1].prompt_ids[:2]
    slid.token_exact = False
    store.put(slid, run="r")
    assert store.export_parquet(tmp_path / "o.parquet") == 1
    row = pq.read_table(tmp_path / "o.parquet").to_pylist()[0]
    n = len(row["token_ids"])
    assert len(row["loss_mask"]) == len(row["logprobs"]) == len(row["token_rewards"]) == n


def test_an_episode_that_does_not_read_back_as_given_is_refused(store, tmp_path):
    """s41 att41b F1/F2: a tuple task id, a key whose ``str()`` is "is_correct" and a float
    subclass summing to another total were acknowledged, then read as damaged: every
    unfiltered export and verify of the store failed from then on."""

    class Key:
        def __str__(self) -> str:
            return "is_correct"

    class Odd(float):
        def __radd__(self, other: object) -> float:
            return 5.0

    tupled = make_trajectory(1)
    tupled.task_id = ("gsm8k", 17)  # type: ignore[assignment]
    keyed = make_trajectory(2)
    keyed.steps[-1].info = {Key(): True}
    summed = make_trajectory(3)
    summed.steps[-1].reward = Odd(0.0)
    for bad, column in ((tupled, "task_id"), (keyed, "is_correct"), (summed, "total_reward")):
        with pytest.raises(AgentConfigError, match=f"does not read back as given: its {column}"):
            store.put(bad, run="r")
    numbered = make_trajectory(4)
    numbered.task_id = 17  # type: ignore[assignment]  # an int id reads back as the same text
    store.put(numbered, run="r")
    store.put(make_trajectory(5), run="r")
    assert store.verify() == []
    assert store.export_parquet(tmp_path / "o.parquet") == 2


def test_a_re_templated_history_trains_only_what_was_sampled():
    """s41 att41b F3: where a later prompt re-renders the history (token_exact=False), an
    earlier turn's span fell on the new prompt's tokens: they were masked as sampled and given
    that turn's logprobs. A turn counts only where its prompt begins the last sequence, and
    its span keeps only the ids that are its completion's there; the reward of a turn not
    held goes on the last id."""
    retemplated = Trajectory(
        env_id="e",
        token_exact=False,
        steps=[
            Step([10, 11], [20, 21], [-1.0, -2.0], "r", "a", reward=0.5),
            Step([10, 99, 98, 97, 96], [40], [-3.0], "r", "a", reward=1.0),
        ],
    )
    assert retemplated.loss_mask() == [0, 0, 0, 0, 0, 1]
    assert retemplated.logprobs() == [0.0, 0.0, 0.0, 0.0, 0.0, -3.0]
    assert retemplated.token_rewards() == [0.0, 0.0, 0.0, 0.0, 0.0, 1.5]
    # s41 att41c F1: a window slid by a turn, each completion starting with the same id (7):
    # an earlier turn's old prompt length pointed at a later turn's first id, or at the env's.
    slid = Trajectory(
        env_id="e",
        token_exact=False,
        steps=[
            Step([1, 2], [7, 101], [-1.0, -1.1], "r", "a", reward=0.25),
            Step([1, 2, 7, 101, 20, 21], [7, 201], [-2.0, -2.1], "r", "a"),
            Step([1, 2, 20, 21, 7, 201, 30, 31], [7, 301], [-3.0, -3.1], "r", "a", reward=1.0),
        ],
    )
    assert slid.loss_mask() == [0] * 8 + [1, 1]
    assert slid.logprobs() == [0.0] * 8 + [-3.0, -3.1]
    assert slid.token_rewards() == [0.0] * 9 + [1.25]
    # A turn whose completion the next prompt keeps only in part: the part kept is trained.
    partly = Trajectory(
        env_id="e",
        token_exact=False,
        steps=[
            Step([10], [20, 21, 22], [-1.0, -2.0, -4.0], "r", "a"),
            Step([10, 20, 21, 7], [40], [-3.0], "r", "a"),
        ],
    )
    assert partly.loss_mask() == [0, 1, 1, 0, 1]
    assert partly.logprobs() == [0.0, -1.0, -2.0, 0.0, -3.0]
    exact = make_trajectory(6, turns=3)
    starts = [len(step.prompt_ids) for step in exact.steps]
    assert exact.loss_mask() == [
        int(any(s <= i < s + 30 for s in starts)) for i in range(len(exact.token_ids()))
    ]


def test_turns_recorded_without_ids_keep_their_rewards_in_the_training_view():
    """s41 att41e: a first turn with no ids lost its reward (F1); a last turn with no ids (a
    text-only reply) emptied the whole view, every id and reward of the episode (F2)."""
    no_ids = Step([], [], [], "r", "a", reward=1.0)
    first = Trajectory(
        env_id="e",
        token_exact=False,
        steps=[no_ids, Step([1, 2, 3], [4, 5], [-0.1, -0.2], "r", "a")],
    )
    assert first.token_rewards() == [0.0, 0.0, 0.0, 0.0, 1.0]
    last = Trajectory(
        env_id="e",
        token_exact=False,
        steps=[Step([1, 2, 3], [4, 5], [-0.1, -0.2], "r", "a", reward=0.5), no_ids],
    )
    assert last.token_ids() == [1, 2, 3, 4, 5]
    assert last.loss_mask() == [0, 0, 0, 1, 1]
    assert sum(last.token_rewards()) == last.total_reward == 1.5


def test_every_reward_sits_on_a_sampled_id():
    """s41 att41j F1: a last turn with a prompt and no completion (a reply recorded without the
    engine's ids) put its reward on a prompt id, which a GAE batch (rewards read where the
    mask is 1) dropped: the session trained as reward 0. A reward sits on a sampled id."""
    episode = Trajectory(
        env_id="e",
        token_exact=False,
        steps=[
            Step([1, 2], [3, 4], [-0.1, -0.2], "r", "a", reward=0.25),
            Step([1, 2, 3, 4, 5, 6], [], [], "r", "a", reward=1.0),
        ],
    )
    mask, rewards = episode.loss_mask(), episode.token_rewards()
    assert mask == [0, 0, 1, 1, 0, 0]
    assert rewards == [0.0, 0.0, 0.0, 1.25, 0.0, 0.0]
    assert all(m for m, r in zip(mask, rewards, strict=True) if r)


def test_a_retried_turn_keeps_the_logprobs_of_the_turn_the_history_went_on_from():
    """s41 att41l F1: a turn retried at the same prompt (after a hot swap) shared its first ids
    with the turn the history went on from, and wrote its own logprobs over that turn's; F2:
    an empty first prompt had its first id trained, predicted from itself."""

    def episode(kept_first: bool) -> Trajectory:
        first = Step([1, 2, 3], [10, 11, 12], [-1.0] * 3, "r", "a")
        retry = Step([1, 2, 3], [10, 11, 99], [-9.0] * 3, "r", "a")
        kept = first if kept_first else retry
        last = Step([1, 2, 3, *kept.completion_ids, 5], [20], [-2.0], "r", "a", reward=1.0)
        return Trajectory(env_id="e", token_exact=False, steps=[first, retry, last])

    assert episode(True).logprobs() == [0.0, 0.0, 0.0, -1.0, -1.0, -1.0, 0.0, -2.0]
    assert episode(False).logprobs() == [0.0, 0.0, 0.0, -9.0, -9.0, -9.0, 0.0, -2.0]
    empty = Trajectory(env_id="e", steps=[Step([], [7, 8, 9], [-0.1, -0.2, -0.3], "r", "a")])
    assert empty.loss_mask() == [0, 1, 1] and empty.logprobs() == [0.0, -0.2, -0.3]


def test_the_same_trajectory_under_other_env_kwargs_is_another_episode(store):
    # s41 att41n: a second put under other env kwargs was acknowledged as a duplicate of the
    # first and its kwargs lost; the same kwargs (in another key order) stay a duplicate.
    first = store.put(make_trajectory(0), run="r", env_kwargs={"difficulty": 1, "size": 4})
    other = store.put(make_trajectory(0), run="r", env_kwargs={"difficulty": 2, "size": 4})
    again = store.put(make_trajectory(0), run="r", env_kwargs={"size": 4, "difficulty": 1})
    assert first.new and other.new and not again.new and again.id == first.id
    assert sorted(e.env_kwargs["difficulty"] for e in store.episodes(run="r")) == [1, 2]


def test_an_export_onto_a_mark_named_after_a_symlinked_key_is_refused(tmp_path):
    """s42 att42f F1: the marks are named after the key's path as given; through a symlink
    to the key, the guard compared the resolved key and let an export replace a mark (the
    store then could be neither read nor written)."""
    pytest.importorskip("pyarrow")
    (tmp_path / "keys").mkdir()
    with EpisodeStore(tmp_path / "ep.db", key=tmp_path / "keys" / "real.key") as store:
        store.put(make_trajectory(0), run="r")
    (tmp_path / "k").symlink_to(tmp_path / "keys" / "real.key")
    with EpisodeStore(tmp_path / "ep.db", key=tmp_path / "k") as store:
        store.keep_mark()
        store.put(make_trajectory(1), run="r")
        marks = sorted(p for p in tmp_path.iterdir() if p.name.startswith("k."))
        assert marks
        for mark in marks:
            with pytest.raises(AgentConfigError, match="own files"):
                store.export_parquet(mark)
        assert store.count() == 2 and store.verify() == []


def test_an_import_refuses_what_an_export_never_writes(store, tmp_path):
    """s42 att42i F2: `created` as a Parquet bool was stored as 1.0, and `versions` or
    `timings` as JSON `null` were replaced by this process's without a word."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    with EpisodeStore(tmp_path / "src.db") as source:
        source.put(make_trajectory(0), run="r")
        source.export_parquet(tmp_path / "good.parquet")
    table = pq.read_table(tmp_path / "good.parquet")
    for name, value in (("created", pa.array([True])), ("versions", pa.array(["null"]))):
        bad = table.set_column(table.schema.get_field_index(name), name, value)
        pq.write_table(bad, tmp_path / "bad.parquet")
        with pytest.raises(AgentConfigError, match=name):
            store.import_parquet(tmp_path / "bad.parquet")
    assert store.count() == 0
    assert store.import_parquet(tmp_path / "good.parquet") == (1, 0)
