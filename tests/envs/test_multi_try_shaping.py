"""Only the try that ends a multi-try episode is paid (s37 att37e).

Countdown and Math paid their shaping components (``format``, ``valid_expression``,
``uses_allowed_numbers``) on every try: the same well-formed wrong answer every try earned
``max_turns`` times the weights without solving (Countdown at 20 tries: 2.0 against the
oracle's 1.0), and an answer that solved on the last try earned more than one that solved at
once.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401

_SHAPED = {"format": 0.1, "valid_expression": 0.1, "uses_allowed_numbers": 0.1, "value": 0.7}
CASES = [
    (
        "rllm/Countdown-v1",
        {"difficulty": 3, "reward_weights": _SHAPED},
        lambda env: "<answer>" + " + ".join(map(str, env.unwrapped.task["nums"])) + "</answer>",
    ),
    (
        "rllm/Math-v1",
        {"reward_weights": {"correct": 1.0, "format": 0.1}},
        lambda env: "So the answer is \\boxed{7}.",
    ),
]


def _returns(env_id, kwargs, wrong, tries, solve_last):
    env = gym.make(env_id, max_turns=tries, **kwargs)
    totals = []
    for index in range(12):
        env.reset(options={"index": index})
        total, done, turn = 0.0, False, 0
        while not done:
            turn += 1
            last = turn == tries
            action = env.unwrapped.oracle_action() if solve_last and last else wrong(env)
            _, reward, terminated, truncated, _ = env.step(action)
            total += float(reward)
            done = terminated or truncated
        totals.append(total)
    return totals


@pytest.mark.parametrize(("env_id", "kwargs", "wrong"), CASES, ids=["countdown", "math"])
def test_a_try_that_does_not_end_the_episode_pays_nothing(env_id, kwargs, wrong):
    once = _returns(env_id, kwargs, wrong, 1, solve_last=False)
    for tries in (3, 6):
        # Never solving earns what one try earns, however many tries there are.
        assert _returns(env_id, kwargs, wrong, tries, solve_last=False) == pytest.approx(once)
    # Solving on the last of 4 tries earns no more than solving at once.
    at_once = _returns(env_id, kwargs, wrong, 1, solve_last=True)
    late = _returns(env_id, kwargs, wrong, 4, solve_last=True)
    assert all(a <= b + 1e-9 for a, b in zip(late, at_once, strict=True)), (late, at_once)
