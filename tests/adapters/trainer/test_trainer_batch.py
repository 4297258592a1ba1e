"""Trajectories to training tensors: actions are exactly the loss-masked ids."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from rllm_adapters.trainer.batch import trajectories_to_batch  # noqa: E402
from rllm_agents.trajectory import Step, Trajectory  # noqa: E402


def _two_turn(group=0):
    first = Step(
        prompt_ids=[1, 2, 3],
        completion_ids=[7, 8],
        logprobs=[-0.5, -0.25],
        response="a",
        action="a",
        reward=0.0,
    )
    # next prompt = prompt + completion + glue/observation (9, 10)
    second = Step(
        prompt_ids=[1, 2, 3, 7, 8, 9, 10],
        completion_ids=[11],
        logprobs=[-1.0],
        response="b",
        action="b",
        reward=1.0,
        terminated=True,
    )
    traj = Trajectory(env_id="x", group=group, steps=[first, second])
    traj.check_token_exact()
    return traj


def _one_turn():
    step = Step(
        prompt_ids=[4, 5],
        completion_ids=[6],
        logprobs=[-2.0],
        response="c",
        action="c",
        reward=0.5,
        terminated=True,
    )
    return Trajectory(env_id="x", group=1, steps=[step])


def test_batch_positions_targets_rewards_and_logprobs():
    batch = trajectories_to_batch([_two_turn(), _one_turn()], pad_id=0)
    assert batch.input_ids.tolist() == [[1, 2, 3, 7, 8, 9, 10, 11], [4, 5, 6, 0, 0, 0, 0, 0]]
    assert batch.attention_mask.sum(1).tolist() == [8, 3]
    assert batch.action_mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch.targets[0].tolist() == [7, 8, 11]
    # the hidden state before each action token predicts it
    assert batch.positions[0].tolist() == [2, 3, 6]
    assert batch.positions[1, 0] == 1
    for row in range(2):
        n = int(batch.action_mask[row].sum())
        ids = batch.input_ids[row]
        assert ids[batch.positions[row, :n] + 1].tolist() == batch.targets[row, :n].tolist()
    # rewards sit on each turn's last generated token
    assert batch.rewards.tolist() == [[0.0, 0.0, 1.0], [0.5, 0.0, 0.0]]
    assert batch.rollout_logprobs[0].tolist() == [-0.5, -0.25, -1.0]
    assert batch.groups.tolist() == [0, 1]
    # each episode's return, in float64, from the same source as signal-group selection
    assert batch.returns.dtype == torch.float64 and batch.returns.tolist() == [1.0, 0.5]
    assert bool(batch.has_rollout_logprobs.all())


def test_select_trims_padding():
    batch = trajectories_to_batch([_two_turn(), _one_turn()])
    sub = batch.select([1])
    assert sub.input_ids.shape == (1, 3) and sub.positions.shape == (1, 1)


def test_empty_trajectory_is_rejected():
    with pytest.raises(ValueError, match="no generated tokens"):
        trajectories_to_batch([Trajectory(env_id="x")])
