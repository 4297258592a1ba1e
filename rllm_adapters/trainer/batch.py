"""Turn token-exact trajectories into padded training tensors.

Each trajectory is one sequence (``Trajectory.token_ids()``: the last prompt plus the last
completion, which contains every earlier turn). Its *actions* are the positions where the loss
mask is 1 -- the ids the policy sampled -- and everything else (prompts, observations, template
glue) is context only. The env's reward for a turn sits on the turn's last generated token.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

import torch

from rllm_agents.trajectory import Trajectory

__all__ = ["Batch", "episode_returns", "trajectories_to_batch"]


@dataclass
class Batch:
    """Padded tensors of a set of episodes (``B`` rows, ``L`` tokens, ``A`` actions).

    Attributes:
        input_ids: ``[B, L]`` right-padded ids.
        attention_mask: ``[B, L]``.
        positions: ``[B, A]`` index of the hidden state that predicts each action token.
        targets: ``[B, A]`` the action token ids.
        action_mask: ``[B, A]`` 1 for real actions.
        rewards: ``[B, A]`` env reward after each action token.
        rollout_logprobs: ``[B, A]`` the sampler's logprobs (0 where it gave none).
        has_rollout_logprobs: ``[B]`` whether the sampler returned logprobs for the row.
        returns: ``[B]`` float64 episode returns (``Trajectory.total_reward``): the one
            source of the return that signal-group selection and group advantages read.
        groups: ``[B]`` task group ids.
        lengths: ``[B]`` sequence lengths.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    positions: torch.Tensor
    targets: torch.Tensor
    action_mask: torch.Tensor
    rewards: torch.Tensor
    rollout_logprobs: torch.Tensor
    has_rollout_logprobs: torch.Tensor
    returns: torch.Tensor
    groups: torch.Tensor
    lengths: torch.Tensor

    @property
    def size(self) -> int:
        """Number of rows."""
        return int(self.input_ids.shape[0])

    def select(self, rows: Sequence[int] | torch.Tensor) -> Batch:
        """The given rows, trimmed to their longest sequence and action count."""
        index = torch.as_tensor(rows, dtype=torch.long)
        length = int(self.lengths[index].max().item()) if len(index) else 0
        actions = int(self.action_mask[index].sum(1).max().item()) if len(index) else 0
        actions = max(actions, 1)
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)[index]
            if f.name in ("input_ids", "attention_mask"):
                value = value[:, :length]
            elif value.dim() == 2:
                value = value[:, :actions]
            out[f.name] = value
        return Batch(**out)

    def to(self, device: torch.device | str) -> Batch:
        """The batch on ``device``."""
        return Batch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})


def episode_returns(trajectories: Sequence[Trajectory]) -> torch.Tensor:
    """``[B]`` float64: each episode's return, the sum of its env rewards."""
    return torch.tensor([t.total_reward for t in trajectories], dtype=torch.float64)


def trajectories_to_batch(trajectories: Sequence[Trajectory], pad_id: int = 0) -> Batch:
    """Pad trajectories (each with at least one step) into a :class:`Batch`."""
    if not trajectories:
        raise ValueError("Expects at least one trajectory.")
    rows = []
    for traj in trajectories:
        ids = traj.token_ids()
        mask = traj.loss_mask()
        if not ids or not any(mask):
            raise ValueError(
                f"Trajectory {traj.task_id!r} (group {traj.group}) has no generated tokens; "
                "filter such episodes out before training."
            )
        logprobs = traj.logprobs()
        rewards = traj.token_rewards()
        action_at = [t for t, m in enumerate(mask) if m]
        has_lp = all(len(s.logprobs) == len(s.completion_ids) for s in traj.steps)
        rows.append(
            (
                ids,
                action_at,
                [rewards[t] for t in action_at],
                [logprobs[t] for t in action_at],
                has_lp,
                traj.group,
            )
        )
    B = len(rows)
    L = max(len(r[0]) for r in rows)
    A = max(len(r[1]) for r in rows)
    input_ids = torch.full((B, L), pad_id, dtype=torch.long)
    attention_mask = torch.zeros((B, L), dtype=torch.long)
    positions = torch.zeros((B, A), dtype=torch.long)
    targets = torch.zeros((B, A), dtype=torch.long)
    action_mask = torch.zeros((B, A), dtype=torch.float32)
    rewards_t = torch.zeros((B, A), dtype=torch.float32)
    rollout_lp = torch.zeros((B, A), dtype=torch.float32)
    for i, (ids, action_at, rewards, logprobs, _, _) in enumerate(rows):
        n, a = len(ids), len(action_at)
        input_ids[i, :n] = torch.tensor(ids, dtype=torch.long)
        attention_mask[i, :n] = 1
        at = torch.tensor(action_at, dtype=torch.long)
        # A prompt is never empty, so every action token has a predecessor.
        positions[i, :a] = (at - 1).clamp(min=0)
        targets[i, :a] = input_ids[i, at]
        action_mask[i, :a] = 1.0
        rewards_t[i, :a] = torch.tensor(rewards, dtype=torch.float32)
        rollout_lp[i, :a] = torch.tensor(logprobs, dtype=torch.float32)
    return Batch(
        input_ids=input_ids,
        attention_mask=attention_mask,
        positions=positions,
        targets=targets,
        action_mask=action_mask,
        rewards=rewards_t,
        rollout_logprobs=rollout_lp,
        has_rollout_logprobs=torch.tensor([r[4] for r in rows], dtype=torch.bool),
        returns=episode_returns(trajectories),
        groups=torch.tensor([r[5] for r in rows], dtype=torch.long),
        lengths=torch.tensor([len(r[0]) for r in rows], dtype=torch.long),
    )
