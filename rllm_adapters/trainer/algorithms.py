"""Pure tensor math of the trainer: advantages, losses, KL estimators and KL control.

Everything here works on *action-level* tensors of shape ``[batch, actions]``: one entry per
token the policy produced (the positions where a trajectory's loss mask is 1), in order, padded
at the end and described by a 0/1 ``mask`` of the same shape. Observation and template tokens
never appear: in a multi-turn episode the env's reply is part of the transition between two
action tokens, exactly as the environment is part of the transition in classic RL.

No torch import at module level, so the module can be imported (and documented) without the
``train`` extra; every function takes and returns ``torch.Tensor``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = [
    "AdaptiveKLController",
    "FixedKLController",
    "GROUP_ESTIMATORS",
    "gae_advantages",
    "group_advantages",
    "importance_weights",
    "no_spread",
    "signal_groups",
    "kl_estimate",
    "masked_mean",
    "masked_whiten",
    "entropy_from_logits",
    "explained_variance",
    "logprob_mismatch",
    "policy_loss",
    "value_loss",
]


#: Estimators of :func:`group_advantages` (no critic: the group is the baseline).
GROUP_ESTIMATORS = ("grpo", "rloo")


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of ``values`` where ``mask`` is 1 (0 when the mask is empty)."""
    total = (values * mask).sum() if dim is None else (values * mask).sum(dim)
    count = mask.sum() if dim is None else mask.sum(dim)
    return total / count.clamp(min=1)


def masked_whiten(
    values: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8, spread_tol: float = 1e-6
) -> torch.Tensor:
    """Zero-mean, unit-variance over the masked entries (masked-out entries become 0).

    Computed in float64. Entries that are all equal (within :func:`no_spread`'s tolerance)
    whiten to exactly 0: dividing their rounding noise by ``sqrt(eps)`` would turn it into
    advantages of order 1.
    """
    import torch

    v = values.double()
    m = mask.double()
    selected = v[m > 0]
    if selected.numel() == 0 or no_spread(selected, spread_tol):
        return torch.zeros_like(values)
    mean = masked_mean(v, m)
    var = masked_mean((v - mean) ** 2, m)
    return ((v - mean) * (var + eps).rsqrt() * m).to(values.dtype)


def no_spread(values: torch.Tensor, tol: float = 1e-6) -> bool:
    """Whether ``values`` are all equal up to ``tol * max(1, max |values|)``.

    Rewards arrive in float32 (about 1e-7 relative rounding), so returns that should be
    equal can differ in their last bits; such a spread is noise, not signal.
    """
    if values.numel() < 2:
        return True
    v = values.double()
    spread = float(v.max() - v.min())
    scale = max(1.0, float(v.abs().max()))
    return spread <= tol * scale


def gae_advantages(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    *,
    gamma: float,
    lam: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over each row's action tokens.

    The value after a row's last action is 0: an episode ends when the env terminates it or
    the turn limit (part of the observation, so the state stays Markov) truncates it.

    Args:
        rewards: ``[B, A]`` reward received after each action token.
        values: ``[B, A]`` critic value of the state each action token was sampled in.
        mask: ``[B, A]`` 1 for real action tokens (a prefix of each row).
        gamma: Discount per action token.
        lam: GAE lambda.

    Returns:
        ``(advantages, returns)``, both ``[B, A]`` and 0 where ``mask`` is 0.
    """
    import torch

    rewards, values, mask = rewards.float(), values.float(), mask.float()
    advantages = torch.zeros_like(rewards)
    last = torch.zeros(rewards.shape[0], dtype=rewards.dtype, device=rewards.device)
    next_value = torch.zeros_like(last)
    for t in range(rewards.shape[1] - 1, -1, -1):
        m = mask[:, t]
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        last = (delta + gamma * lam * last) * m
        advantages[:, t] = last
        # Padding after a row's end leaves next_value at 0 (the terminal value).
        next_value = values[:, t] * m
    returns = (advantages + values) * mask
    return advantages, returns


def group_advantages(
    returns: torch.Tensor,
    groups: torch.Tensor,
    *,
    estimator: str,
    normalize_std: bool = True,
    eps: float = 1e-6,
    spread_tol: float = 1e-6,
) -> torch.Tensor:
    """Episode-level advantages from the returns of samples of the same task.

    Computed in float64 with an explicit zero-spread rule: a group whose returns are all
    equal (see :func:`no_spread`) carries no signal and gets exactly 0 under every estimator.
    In float32, a group of rewards all 0.1 used to get -0.0074 each from GRPO (a rounding gap
    of ~7e-9 from the mean divided by a near-zero std plus ``eps``).

    Args:
        returns: ``[B]`` episode returns.
        groups: ``[B]`` integer group ids (samples of one task share an id).
        estimator: ``"grpo"`` (return minus the group mean, divided by the group std when
            ``normalize_std``) or ``"rloo"`` (return minus the mean of the *other* samples).
        normalize_std: GRPO only.
        eps: Added to the std.
        spread_tol: Relative tolerance of the zero-spread rule.

    Returns:
        ``[B]`` advantages in the dtype of ``returns`` (float32 for integer input); a group of
        one sample, or with no spread, gets 0.
    """
    import torch

    if estimator not in GROUP_ESTIMATORS:
        raise ValueError(f"Expects `estimator` in {GROUP_ESTIMATORS}, actual: {estimator!r}.")
    r_all = returns.double()
    out = torch.zeros_like(r_all)
    for g in torch.unique(groups):
        idx = (groups == g).nonzero(as_tuple=True)[0]
        r = r_all[idx]
        n = r.numel()
        if n < 2 or no_spread(r, spread_tol):
            continue
        if estimator == "grpo":
            adv = r - r.mean()
            if normalize_std:
                adv = adv / (r.std(unbiased=True) + eps)
        else:
            adv = r - (r.sum() - r) / (n - 1)
        out[idx] = adv
    dtype = returns.dtype if returns.is_floating_point() else torch.float32
    return out.to(dtype)


def signal_groups(
    returns: torch.Tensor, groups: torch.Tensor, spread_tol: float = 1e-6
) -> torch.Tensor:
    """``[B]`` bool: whether each sample's group has a return spread (a GRPO/RLOO signal).

    Groups of one sample and groups without spread give every group estimator exactly 0
    (:func:`group_advantages`): their samples can be dropped before the forward pass.
    """
    import torch

    keep = torch.zeros(returns.shape[0], dtype=torch.bool)
    for g in torch.unique(groups):
        idx = (groups == g).nonzero(as_tuple=True)[0]
        keep[idx] = not no_spread(returns[idx], spread_tol)
    return keep


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, kind: str) -> torch.Tensor:
    """Per-token estimate of KL(policy || reference) from sampled-token logprobs.

    ``"k1"``: ``logp - ref``; ``"k2"``: ``(logp - ref)^2 / 2``; ``"k3"``: Schulman's unbiased,
    always non-negative ``exp(ref - logp) - (ref - logp) - 1`` (clamped for stability).
    """
    import torch

    log_ratio = logp - ref_logp
    if kind == "k1":
        return log_ratio
    if kind == "k2":
        return 0.5 * log_ratio**2
    if kind == "k3":
        neg = torch.clamp(-log_ratio, min=-20.0, max=20.0)
        return torch.exp(neg) - neg - 1.0
    raise ValueError(f"Expects KL estimator in ('k1', 'k2', 'k3'), actual: {kind!r}.")


def explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    """``1 - Var(returns - values) / Var(returns)`` over the masked tokens (NaN: no variance)."""
    var_ret = masked_mean((returns - masked_mean(returns, mask)) ** 2, mask)
    if float(var_ret) < 1e-12:
        return float("nan")
    diff = returns - values
    var_diff = masked_mean((diff - masked_mean(diff, mask)) ** 2, mask)
    return float(1.0 - var_diff / var_ret)


def logprob_mismatch(
    trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor
) -> dict[str, float]:
    """How far the trainer's logprobs of the sampled tokens are from the sampler's.

    Returns:
        ``mean_abs`` and ``max_abs`` of the difference and ``kl``, KL(sampler || trainer)
        estimated (k3) on the sampled tokens.
    """
    diff = (trainer_logp - sampler_logp) * mask
    n = float(mask.sum().clamp(min=1))
    return {
        "mean_abs": float(diff.abs().sum() / n),
        "max_abs": float(diff.abs().max()),
        "kl": float((kl_estimate(sampler_logp, trainer_logp, "k3") * mask).sum() / n),
    }


def importance_weights(
    trainer_logp: torch.Tensor,
    sampler_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    mode: str,
    max_ratio: float | None,
    min_ratio: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Importance weights ``pi_trainer / pi_sampler`` for the sampler/trainer mismatch (TRL's).

    The sampler (vLLM, maybe bf16 or other kernels) and the trainer's recomputation at the
    rollout weights give the sampled tokens slightly different probabilities; weighting each
    token's policy loss by their ratio corrects the gradient for having sampled from the
    former (Yao et al. 2025, "Your efficient RL framework secretly brings you off-policy RL
    training"; TRL's ``vllm_importance_sampling_mode``).

    Args:
        trainer_logp: ``[B, A]`` the trainer's logprobs of the sampled tokens (old policy).
        sampler_logp: ``[B, A]`` the sampler's logprobs of the same tokens.
        mask: ``[B, A]``.
        mode: ``"token_truncate"``, ``"token_mask"``, ``"sequence_truncate"`` or
            ``"sequence_mask"`` (one ratio per row: the product over its tokens).
        max_ratio: Upper bound (``None``: none).
        min_ratio: Lower bound (``None``: none).

    Returns:
        ``(weights, masked)``: ``[B, A]`` weights (no gradient) and a ``[B, A]`` 0/1 tensor of
        the tokens whose ratio fell outside the bounds (``*_mask`` modes zero them).
    """
    import torch

    diff = ((trainer_logp - sampler_logp) * mask).detach().double()
    if mode.startswith("sequence"):
        diff = diff.sum(-1, keepdim=True)
    ratio = torch.exp(diff.clamp(max=50.0))
    low = -math.inf if min_ratio is None else min_ratio
    high = math.inf if max_ratio is None else max_ratio
    outside = (ratio < low) | (ratio > high)
    if mode.endswith("truncate"):
        ratio = ratio.clamp(min=0.0 if min_ratio is None else min_ratio, max=max_ratio)
    elif mode.endswith("mask"):
        ratio = ratio.masked_fill(outside, 0.0)
    else:
        raise ValueError(
            "Expects importance sampling `mode` in ('token_truncate', 'token_mask', "
            f"'sequence_truncate', 'sequence_mask'), actual: {mode!r}."
        )
    shape = trainer_logp.shape
    weights = ratio.expand(shape).to(trainer_logp.dtype) * mask
    return weights, outside.expand(shape).to(trainer_logp.dtype) * mask


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the softmax over the last dimension."""
    import torch

    logp = torch.log_softmax(logits.float(), dim=-1)
    return -(logp.exp() * logp).sum(-1)


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float,
    clip_high: float,
    normalizer: float,
    weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO's clipped surrogate, summed over masked tokens and divided by ``normalizer``.

    Args:
        logp: ``[B, A]`` logprobs under the policy being optimised.
        old_logp: ``[B, A]`` logprobs under the policy that collected the data.
        advantages: ``[B, A]``.
        mask: ``[B, A]``.
        clip_low: Ratio clip below ``1 - clip_low``.
        clip_high: Ratio clip above ``1 + clip_high`` (equal to ``clip_low`` for plain PPO).
        normalizer: Token count the sum is divided by (the same for every micro-batch of an
            update, so micro-batches of different sizes add up to a token mean).
        weights: ``[B, A]`` per-token weights of the clipped surrogate (importance weights
            for the sampler/trainer mismatch, :func:`importance_weights`); ``None``: 1.

    Returns:
        ``(loss, stats)`` with the clip fraction and the approximate KL to the old policy.
    """
    import torch

    log_ratio = (logp - old_logp).clamp(-20.0, 20.0)
    ratio = torch.exp(log_ratio)
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    per_token = torch.maximum(unclipped, clipped)
    if weights is not None:
        per_token = per_token * weights
    loss = (per_token * mask).sum() / normalizer
    with torch.no_grad():
        stats = {
            "clip_frac": masked_mean((clipped > unclipped).float(), mask),
            "approx_kl": masked_mean(0.5 * log_ratio**2, mask),
            "ratio": masked_mean(ratio, mask),
        }
    return loss, stats


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip: float | None,
    normalizer: float,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Half squared error to the returns, pessimistically clipped around the old values."""
    import torch

    error = (values - returns) ** 2
    if clip is not None:
        clipped_values = old_values + (values - old_values).clamp(-clip, clip)
        error_clipped = (clipped_values - returns) ** 2
        per_token = torch.maximum(error, error_clipped)
        clip_frac = masked_mean((error_clipped > error).float(), mask)
    else:
        per_token = error
        clip_frac = torch.zeros((), device=values.device)
    loss = 0.5 * (per_token * mask).sum() / normalizer
    return loss, {"value_clip_frac": clip_frac.detach()}


@dataclass
class FixedKLController:
    """A constant KL coefficient."""

    value: float

    def update(self, current_kl: float, n_steps: int) -> None:
        """Nothing to adapt."""

    def state_dict(self) -> dict[str, Any]:
        """Checkpoint state."""
        return {"value": self.value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.value = float(state["value"])


@dataclass
class AdaptiveKLController:
    """Adaptive KL coefficient of Ziegler et al. (2019), "Fine-Tuning LMs from Human Preferences".

    The coefficient moves proportionally (error clipped to +-20%) towards keeping the measured
    KL at ``target``, on a time scale of ``horizon`` samples.
    """

    value: float
    target: float
    horizon: int

    def update(self, current_kl: float, n_steps: int) -> None:
        """Adapt after a rollout of ``n_steps`` samples with mean KL ``current_kl``."""
        if not math.isfinite(current_kl):
            return
        error = min(max(current_kl / self.target - 1.0, -0.2), 0.2)
        self.value *= 1.0 + error * n_steps / self.horizon

    def state_dict(self) -> dict[str, Any]:
        """Checkpoint state."""
        return {"value": self.value}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`."""
        self.value = float(state["value"])
