"""Answer balancing of ``rllm/ReasoningGym-v0``: no single answer is a large share of tasks."""

from __future__ import annotations

import pickle
from collections import Counter

import gymnasium as gym
import pytest

pytest.importorskip("reasoning_gym")

from rllm_envs.reasoning_gym.balance import (  # noqa: E402
    MAX_SHARE,
    BalancedTasks,
    answer_key,
    keep_probabilities,
)
from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks  # noqa: E402


def test_keep_probabilities_water_fill_to_the_target_share():
    # Three skewed labels: balanced to a third each.
    skewed = {"on": 0.7, "off": 0.2, "undetermined": 0.1}
    keep = keep_probabilities(skewed, labels=3)
    weights = {a: s * keep.get(a, 1.0) for a, s in skewed.items()}
    assert weights["on"] == pytest.approx(0.1) and weights["off"] == pytest.approx(0.1)
    assert "undetermined" not in keep
    # Open answers: the common one is cut to MAX_SHARE of the kept draws.
    shares = {"infeasible": 0.35, **{str(i): 0.65 / 65 for i in range(65)}}
    keep = keep_probabilities(shares, labels=66)
    kept = {a: s * keep.get(a, 1.0) for a, s in shares.items()}
    assert kept["infeasible"] / sum(kept.values()) == pytest.approx(MAX_SHARE, rel=1e-6)
    assert set(keep) == {"infeasible"}
    # Already balanced: nothing is redrawn.
    assert keep_probabilities({"True": 0.5, "False": 0.5}, labels=2) == {}


def test_a_skewed_family_is_balanced_and_stays_a_pure_function_of_its_arguments():
    raw = ReasoningGymTasks("shortest_path", size=200)
    balanced = BalancedTasks("shortest_path", size=200)
    before = Counter(answer_key(raw[i]) for i in range(200))
    after = Counter(answer_key(balanced[i]) for i in range(200))
    assert before["infeasible"] / 200 > 0.25  # the family's skew
    assert after.most_common(1)[0][1] / 200 < 0.1
    assert balanced.answer_shares()["infeasible"] > 0.25  # reported as the family draws it
    assert BalancedTasks("shortest_path", size=200)[17] == balanced[17]
    assert pickle.loads(pickle.dumps(balanced))[17] == balanced[17]


def test_the_env_draws_balanced_tasks_and_a_balanced_family_is_unchanged():
    env = gym.make("rllm/ReasoningGym-v0", dataset="shortest_path", size=64)
    answers = Counter()
    for seed in range(64):
        env.reset(seed=seed)
        answers[answer_key(env.unwrapped.task)] += 1
    assert answers.most_common(1)[0][1] <= 10, answers.most_common(3)
    # basic_arithmetic has open answers, none common: the same tasks as without balancing.
    raw, balanced = (
        ReasoningGymTasks("basic_arithmetic", size=32),
        BalancedTasks("basic_arithmetic", size=32),
    )
    assert [raw[i] for i in range(32)] == [balanced[i] for i in range(32)]
