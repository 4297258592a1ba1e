"""Debate's reward and a debater that only copies the others' answer (issue #25).

Adopting another debater's answer is what debate is for, so a copier is paid for its final
answer like anyone else. What the reward must not do is pay for nothing: a copier's reward is
bounded by the work of the other debaters in the same episode, and is 0 where no debater
solves the problem (self-play, where every debater is the copying policy).
"""

from __future__ import annotations

import re
from collections import Counter

import rllm_envs
from rllm_envs.multiagent import ScriptedPolicy
from rllm_envs.tasks import EVAL_TASK_SEED

_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def copier(obs: str) -> str:
    """The most common boxed answer shown by the others (round 1: a fixed non-answer, so that
    only agreement, never a lucky constant, could pay copiers who play alone)."""
    shown = [b for b in _BOXED.findall(obs) if b != "<answer>"]
    return "\\boxed{%s}" % (Counter(shown).most_common(1)[0][0] if shown else "unsure")


def play(copiers: set[str], episodes: int) -> dict[str, float]:
    env = rllm_envs.make_parallel("rllm/Debate-v1", task_seed=EVAL_TASK_SEED)
    solver = ScriptedPolicy("heuristic", seed=1)
    totals: Counter[str] = Counter()
    for seed in range(episodes):
        obs, infos = env.reset(seed=seed)
        last: dict[str, float] = {}
        while env.agents:
            actions = {
                a: copier(obs[a]) if a in copiers else solver(env, a)
                for a in env.agents
                if infos[a]["acting"]
            }
            obs, rewards, _, _, infos = env.step(actions)
            last.update(rewards)
        totals.update(last)
    return {a: totals[a] / episodes for a in totals}


def test_a_copier_earns_no_more_than_the_debaters_it_copies():
    rewards = play({"debater_0"}, 12)
    others = max(rewards["debater_1"], rewards["debater_2"])
    assert rewards["debater_0"] <= others + 1e-9, rewards


def test_copiers_alone_earn_nothing():
    rewards = play({"debater_0", "debater_1", "debater_2"}, 8)
    assert all(r == 0 for r in rewards.values()), rewards


def test_a_copied_worked_example_earns_nothing_even_where_its_answer_is_right():
    """The hacking check's copy-demonstration policy was paid on an evaluation task whose answer
    was the example's 67 (session 26): Debate did not apply the demonstrations rule."""
    from rllm_envs.demonstrations import MATH

    env = rllm_envs.make_parallel("rllm/Debate-v1", n_rounds=1)
    env.reset(seed=0, options={"task": {"problem": "Compute $60 + 7$.", "answer": "67"}})
    _, rewards, _, _, infos = env.step(
        {"debater_0": MATH.replies[0], "debater_1": "\\boxed{67}", "debater_2": "\\boxed{66}"}
    )
    assert rewards["debater_0"] == 0.0
    assert set(infos["debater_0"]["reward_components"].values()) == {0.0}
    assert infos["debater_0"]["copied_demonstration"] == MATH.name
    assert "worked example" in infos["debater_0"]["invalid_reason"]
    assert rewards["debater_1"] == 1.0  # the right answer alone is not a copy
    assert "copied_demonstration" not in infos["debater_1"]
