"""Advantages, losses, KL estimators and KL control of the trainer (pure tensor math)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rllm_adapters.trainer import algorithms as alg  # noqa: E402


def _gae_reference(rewards, values, gamma, lam):
    adv = np.zeros(len(rewards))
    last = 0.0
    for t in reversed(range(len(rewards))):
        next_value = values[t + 1] if t + 1 < len(rewards) else 0.0
        delta = rewards[t] + gamma * next_value - values[t]
        last = delta + gamma * lam * last
        adv[t] = last
    return adv, adv + np.asarray(values)


def test_gae_matches_reference_loop_per_row_with_padding():
    rewards = torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.5, -0.1, 0.0, 0.0]])
    values = torch.tensor([[0.2, 0.4, 0.8, 9.0], [0.1, 0.3, 9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    adv, ret = alg.gae_advantages(rewards, values, mask, gamma=0.9, lam=0.8)
    for row, n in enumerate([3, 2]):
        ref_adv, ref_ret = _gae_reference(
            rewards[row, :n].tolist(), values[row, :n].tolist(), 0.9, 0.8
        )
        assert np.allclose(adv[row, :n].numpy(), ref_adv, atol=1e-6)
        assert np.allclose(ret[row, :n].numpy(), ref_ret, atol=1e-6)
        # Padding never leaks into advantages (the 9.0 values are ignored).
        assert torch.all(adv[row, n:] == 0)


def test_gae_lambda_one_gamma_one_is_return_minus_value():
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.3, 0.5, 0.7]])
    adv, ret = alg.gae_advantages(rewards, values, torch.ones(1, 3), gamma=1.0, lam=1.0)
    assert torch.allclose(ret, torch.ones(1, 3))
    assert torch.allclose(adv, 1.0 - values)


def test_grpo_and_rloo_group_advantages():
    returns = torch.tensor([1.0, 0.0, 0.0, 1.0, 5.0, 5.0, 2.0])
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 2])
    grpo = alg.group_advantages(returns, groups, estimator="grpo")
    std = torch.tensor([1.0, 0.0, 0.0, 1.0]).std()
    assert torch.allclose(grpo[:4], (returns[:4] - 0.5) / (std + 1e-6))
    assert torch.allclose(grpo[4:6], torch.zeros(2))  # identical returns: no signal
    assert grpo[6] == 0  # a group of one
    rloo = alg.group_advantages(returns, groups, estimator="rloo")
    assert torch.allclose(rloo[:4], torch.tensor([1 - 1 / 3, -2 / 3, -2 / 3, 1 - 1 / 3]))
    plain = alg.group_advantages(returns, groups, estimator="grpo", normalize_std=False)
    assert torch.allclose(plain[:4], returns[:4] - 0.5)
    with pytest.raises(ValueError, match="estimator"):
        alg.group_advantages(returns, groups, estimator="ppo")


def test_policy_loss_clips_only_in_the_direction_of_the_advantage():
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 0.5, 1.5, 0.5]]))
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]])
    mask = torch.ones(1, 4)
    loss, stats = alg.policy_loss(logp, old, adv, mask, clip_low=0.2, clip_high=0.2, normalizer=4.0)
    # Token 0: ratio 1.5 > 1.2 with A>0 -> clipped to 1.2; token 1: ratio 0.5 with A>0 stays;
    # token 2: ratio 1.5 with A<0 stays (pessimistic); token 3: ratio 0.5 with A<0 -> 0.8.
    expected = -(1.2 + 0.5 - 1.5 - 0.8) / 4
    assert math.isclose(float(loss), expected, rel_tol=1e-5)
    assert math.isclose(float(stats["clip_frac"]), 0.5)


def test_policy_loss_gradient_raises_logprob_of_positive_advantage_and_respects_mask():
    logp = torch.zeros(1, 3, requires_grad=True)
    adv = torch.tensor([[1.0, -1.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    loss, _ = alg.policy_loss(
        logp, torch.zeros(1, 3), adv, mask, clip_low=0.2, clip_high=0.2, normalizer=2.0
    )
    loss.backward()
    assert logp.grad[0, 0] < 0 < logp.grad[0, 1]  # descent raises token 0, lowers token 1
    assert logp.grad[0, 2] == 0  # masked out


def test_value_loss_clipping_is_pessimistic():
    returns = torch.tensor([[1.0]])
    old = torch.tensor([[0.0]])
    new = torch.tensor([[0.9]])
    clipped, stats = alg.value_loss(new, old, returns, torch.ones(1, 1), clip=0.2, normalizer=1)
    # max((0.9-1)^2, (0.2-1)^2) / 2
    assert math.isclose(float(clipped), 0.5 * 0.64, rel_tol=1e-5)
    assert float(stats["value_clip_frac"]) == 1.0
    unclipped, _ = alg.value_loss(new, old, returns, torch.ones(1, 1), clip=None, normalizer=1)
    assert math.isclose(float(unclipped), 0.5 * 0.01, rel_tol=1e-4)


def test_kl_estimators():
    logp = torch.tensor([-1.0, -2.0, -0.5])
    ref = torch.tensor([-1.0, -1.0, -1.5])
    assert torch.allclose(alg.kl_estimate(logp, ref, "k1"), logp - ref)
    assert torch.allclose(alg.kl_estimate(logp, ref, "k2"), 0.5 * (logp - ref) ** 2)
    k3 = alg.kl_estimate(logp, ref, "k3")
    assert torch.all(k3 >= 0) and k3[0] == 0
    with pytest.raises(ValueError):
        alg.kl_estimate(logp, ref, "k4")
    # k3 is unbiased: its mean over samples of p estimates KL(p || q).
    gen = torch.Generator().manual_seed(0)
    p = torch.tensor([0.7, 0.2, 0.1])
    q = torch.tensor([0.4, 0.4, 0.2])
    samples = torch.multinomial(p, 200_000, replacement=True, generator=gen)
    estimate = alg.kl_estimate(p.log()[samples], q.log()[samples], "k3").mean()
    exact = (p * (p / q).log()).sum()
    assert abs(float(estimate - exact)) < 0.01


def test_entropy_and_masked_helpers():
    uniform = torch.zeros(2, 8)
    assert torch.allclose(alg.entropy_from_logits(uniform), torch.full((2,), math.log(8)))
    values = torch.tensor([[1.0, 2.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    assert float(alg.masked_mean(values, mask)) == 1.5
    white = alg.masked_whiten(values, mask)
    assert abs(float(white[0, :2].mean())) < 1e-6 and white[0, 2] == 0


def test_adaptive_kl_controller_moves_towards_target_and_fixed_does_not():
    ctl = alg.AdaptiveKLController(0.1, target=0.05, horizon=100)
    ctl.update(0.5, n_steps=10)  # KL far above target: coefficient grows (error capped at 20%)
    assert math.isclose(ctl.value, 0.1 * 1.02)
    ctl.update(0.0, n_steps=10)
    assert ctl.value < 0.1 * 1.02
    restored = alg.AdaptiveKLController(1.0, 0.05, 100)
    restored.load_state_dict(ctl.state_dict())
    assert restored.value == ctl.value
    fixed = alg.FixedKLController(0.3)
    fixed.update(10.0, 100)
    assert fixed.value == 0.3
