"""Exact group advantages: no spread gives exactly 0; shift and scale invariance (hypothesis)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
hypothesis = pytest.importorskip("hypothesis")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rllm_adapters.trainer import algorithms as alg  # noqa: E402

ESTIMATORS = [
    pytest.param({"estimator": "grpo"}, id="grpo"),
    pytest.param({"estimator": "grpo", "normalize_std": False}, id="grpo-no-std"),
    pytest.param({"estimator": "rloo"}, id="rloo"),
]

# Rewards on a 0.1 grid in [-5, 5]: any real spread is >= 0.1, far above the zero-spread rule's
# rounding tolerance, so the properties hold exactly as stated.
reward = st.integers(-50, 50).map(lambda k: k / 10)
groups_of_rewards = st.lists(st.lists(reward, min_size=2, max_size=8), min_size=1, max_size=5)
constant = st.floats(-100, 100, allow_nan=False)


def _flat(groups):
    returns = torch.tensor([r for g in groups for r in g], dtype=torch.float32)
    ids = torch.tensor([i for i, g in enumerate(groups) for _ in g])
    return returns, ids


@pytest.mark.parametrize("kwargs", ESTIMATORS)
@pytest.mark.parametrize("value", [0.1, 0.3, 1 / 3, -0.7, 1e4 + 0.1, 0.0])
@pytest.mark.parametrize("n", [2, 3, 8, 64])
def test_constant_group_gets_exactly_zero(kwargs, value, n):
    # float32 used to leave a rounding gap from the group mean: GRPO gave -0.0074 for 0.1.
    returns = torch.full((n,), value, dtype=torch.float32)
    adv = alg.group_advantages(returns, torch.zeros(n, dtype=torch.long), **kwargs)
    assert adv.tolist() == [0.0] * n


@pytest.mark.parametrize("kwargs", ESTIMATORS)
@given(value=st.floats(-1e6, 1e6, allow_nan=False, width=32), n=st.integers(2, 64))
@settings(deadline=None, max_examples=60)
def test_any_constant_group_is_exactly_zero(kwargs, value, n):
    returns = torch.full((n,), value, dtype=torch.float32)
    adv = alg.group_advantages(returns, torch.zeros(n, dtype=torch.long), **kwargs)
    assert torch.count_nonzero(adv) == 0


def test_returns_that_differ_only_by_float32_rounding_have_no_signal():
    # 0.1 + 0.2 and 0.3 summed in float32 differ in the last bit: noise, not a reward spread.
    a = torch.tensor([0.1, 0.2], dtype=torch.float32).sum()
    b = torch.tensor(0.3, dtype=torch.float32)
    returns = torch.stack([a, b, b, a])
    for kwargs in ({"estimator": "grpo"}, {"estimator": "rloo"}):
        adv = alg.group_advantages(returns, torch.zeros(4, dtype=torch.long), **kwargs)
        assert adv.tolist() == [0.0] * 4


@pytest.mark.parametrize("kwargs", ESTIMATORS)
@given(groups=groups_of_rewards, shift=constant)
@settings(deadline=None, max_examples=80)
def test_invariant_to_adding_a_constant_to_a_group(kwargs, groups, shift):
    returns, ids = _flat(groups)
    shifted = returns.double() + torch.where(ids == 0, shift, 0.0).double()
    base = alg.group_advantages(returns.double(), ids, **kwargs)
    moved = alg.group_advantages(shifted, ids, **kwargs)
    assert torch.allclose(base, moved, atol=1e-6)
    # Every group with no spread stays at exactly 0.
    for g, rewards in enumerate(groups):
        if len(set(rewards)) == 1:
            assert torch.count_nonzero(moved[ids == g]) == 0


@given(groups=groups_of_rewards, scale=st.floats(0.01, 100))
@settings(deadline=None, max_examples=80)
def test_grpo_with_std_is_invariant_to_positive_scaling(groups, scale):
    returns, ids = _flat(groups)
    base = alg.group_advantages(returns.double(), ids, estimator="grpo", eps=0.0)
    scaled = alg.group_advantages(returns.double() * scale, ids, estimator="grpo", eps=0.0)
    assert torch.allclose(base, scaled, atol=1e-9)


@given(groups=groups_of_rewards)
@settings(deadline=None, max_examples=60)
def test_signal_groups_marks_exactly_the_groups_with_spread(groups):
    returns, ids = _flat(groups)
    keep = alg.signal_groups(returns, ids)
    for g, rewards in enumerate(groups):
        assert bool(keep[ids == g].all()) == (len(set(rewards)) > 1)
        assert bool(keep[ids == g].any()) == (len(set(rewards)) > 1)
    for estimator in alg.GROUP_ESTIMATORS:
        adv = alg.group_advantages(returns, ids, estimator=estimator)
        # Dropped samples lose nothing: their advantage is exactly 0.
        assert torch.count_nonzero(adv[~keep]) == 0


def test_whitening_equal_advantages_gives_zero_not_amplified_noise():
    # GAE advantages that are all equal up to rounding: whitening used to divide the rounding
    # noise by sqrt(1e-8), i.e. multiply it by 1e4.
    values = torch.tensor([[0.1, 0.1, 0.1]], dtype=torch.float32)
    values[0, 1] = torch.nextafter(values[0, 1], torch.tensor(1.0))
    mask = torch.ones(1, 3)
    assert alg.masked_whiten(values, mask).tolist() == [[0.0, 0.0, 0.0]]
    spread = alg.masked_whiten(torch.tensor([[1.0, 2.0, 3.0]]), mask)
    assert torch.allclose(spread.mean(), torch.tensor(0.0), atol=1e-6)
