"""Trajectory training views, the invariant check, and JSONL/Parquet round trips."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rllm_agents import (
    Step,
    TokenExactnessError,
    Trajectory,
    TrajectoryWriter,
    read_trajectories,
    write_trajectories,
)


def make_trajectory(**overrides) -> Trajectory:
    s0 = Step(
        prompt_ids=[1, 2, 3],
        completion_ids=[10, 11],
        logprobs=[-0.5, -0.25],
        response="a",
        action="a",
        observation="obs 1",
        reward=0.0,
        info={"turn": 1, "np": np.float32(0.5), "arr": np.arange(2)},
    )
    s1 = Step(
        prompt_ids=[1, 2, 3, 10, 11, 7, 8],
        completion_ids=[12],
        logprobs=[-1.0],
        response="b",
        action="b",
        observation="obs 2 ☃",
        reward=1.0,
        terminated=True,
        info={"turn": 2, "is_correct": True},
        finish_reason="length",
    )
    fields = dict(env_id="rllm/X-v0", task_id="t0", seed=3, group=1, sample=2, steps=[s0, s1])
    fields.update(overrides)
    return Trajectory(**fields)


def test_training_views_align():
    t = make_trajectory()
    assert t.token_ids() == [1, 2, 3, 10, 11, 7, 8, 12]
    assert t.loss_mask() == [0, 0, 0, 1, 1, 0, 0, 1]
    assert t.logprobs() == [0, 0, 0, -0.5, -0.25, 0, 0, -1.0]
    assert t.token_rewards() == [0, 0, 0, 0, 0, 0, 0, 1.0]
    assert t.prompt_length() == 3
    assert t.total_reward == 1.0 and t.is_correct and t.num_turns == 2
    assert t.num_completion_tokens == 3
    t.check_token_exact()


def test_invariant_violations_are_reported():
    t = make_trajectory()
    t.steps[1].prompt_ids = [1, 2, 3, 10, 99, 7]
    with pytest.raises(TokenExactnessError, match="position 4"):
        t.check_token_exact()
    t = make_trajectory()
    t.steps[0].logprobs = [-0.5]
    with pytest.raises(TokenExactnessError, match="logprobs"):
        t.check_token_exact()


def test_empty_trajectory():
    t = Trajectory(env_id="x", initial_info={"is_correct": False})
    assert t.token_ids() == [] and t.loss_mask() == [] and not t.is_correct
    t.check_token_exact()


def test_json_round_trip_converts_numpy():
    t = make_trajectory()
    data = json.loads(t.to_json())
    assert data["steps"][0]["info"] == {"turn": 1, "np": 0.5, "arr": [0, 1]}
    assert data["total_reward"] == 1.0
    back = Trajectory.from_dict(data)
    assert back.token_ids() == t.token_ids() and back.steps[1].observation == "obs 2 ☃"


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_writers_round_trip(tmp_path, suffix):
    pytest.importorskip("pyarrow")
    trajectories = [make_trajectory(group=g) for g in range(3)]
    path = write_trajectories(trajectories, tmp_path / "sub" / f"t{suffix}")
    back = read_trajectories(path)
    assert [b.group for b in back] == [0, 1, 2]
    assert all(b.token_ids() == trajectories[0].token_ids() for b in back)
    assert back[0].steps[0].info["arr"] == [0, 1]


def test_parquet_has_flat_training_columns(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    with TrajectoryWriter(tmp_path / "t.parquet", row_group_size=2) as writer:
        for g in range(5):
            writer.write(make_trajectory(group=g))
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.num_rows == 5
    row = table.slice(0, 1).to_pylist()[0]
    assert row["token_ids"] == [1, 2, 3, 10, 11, 7, 8, 12]
    assert row["loss_mask"] == [0, 0, 0, 1, 1, 0, 0, 1]
    assert row["total_reward"] == 1.0 and row["prompt_length"] == 3


def test_jsonl_streams_and_appends(tmp_path):
    path = tmp_path / "t.jsonl"
    with TrajectoryWriter(path) as writer:
        writer.write(make_trajectory())
        # Flushed per trajectory: readable before the writer closes.
        assert len(read_trajectories(path)) == 1
    with TrajectoryWriter(path, append=True) as writer:
        writer.write(make_trajectory())
    assert len(read_trajectories(path)) == 2


def test_unknown_format(tmp_path):
    from rllm_agents.error import AgentConfigError

    with pytest.raises(AgentConfigError, match="format"):
        TrajectoryWriter(tmp_path / "x.csv", format="csv")


def test_token_source_round_trips_and_old_records_default_to_engine():
    t = make_trajectory(token_exact=False, token_source="retokenized")
    back = Trajectory.from_dict(json.loads(t.to_json()))
    assert (back.token_source, back.token_exact) == ("retokenized", False)
    old = t.to_dict()
    del old["token_source"]  # written before the field existed
    assert Trajectory.from_dict(old).token_source == "engine"
