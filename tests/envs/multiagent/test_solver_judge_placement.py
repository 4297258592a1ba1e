"""SolverJudge places the solutions at random, so a judge that never reads them earns the base
rate (the share of correct solutions), and a copied worked example earns nothing."""

from __future__ import annotations

import numpy as np

import rllm_envs
from rllm_envs.demonstrations import JUDGE, MATH
from rllm_envs.multiagent import ScriptedPolicy
from rllm_envs.multiagent.solver_judge import SolverJudgeEnv

TASK = {"task": {"problem": "What is 6 times 7?", "answer": "42"}}


def _solve(env, replies):
    env.reset(seed=0, options=TASK)
    actions = dict(zip(env.solvers, replies, strict=True))
    _, _, _, _, infos = env.step(actions)
    return infos["judge_0"]


def test_the_order_is_random_and_the_judge_scores_the_solution_it_picked():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=3)
    orders = set()
    for seed in range(40):
        env.reset(seed=seed, options=TASK)
        obs, _, _, _, infos = env.step(
            {"solver_0": "\\boxed{41}", "solver_1": "\\boxed{42}", "solver_2": "\\boxed{7}"}
        )
        assert "order" not in infos["judge_0"]  # the judge has not acted yet
        order = env.order
        orders.add(tuple(order))
        right = order.index(1) + 1  # the number under which solver_1's right answer is shown
        text = obs["judge_0"]
        assert text.index(f"=== Solution {right} ===") < text.index("\\boxed{42}")
        _, rewards, _, _, infos = env.step({"judge_0": f"\\boxed{{{right}}}"})
        assert rewards["judge_0"] == 1.0 and infos["judge_0"]["choice"] == right
        assert infos["judge_0"]["order"] == order and infos["judge_0"]["base_rate"] == 1 / 3
    assert len(orders) == 6  # every permutation of three solvers occurs


def test_a_constant_choice_earns_the_base_rate_not_a_solvers_accuracy():
    """Solver 2 always right, solver 1 always wrong: in solver order `\\boxed{2}` won every time."""
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=2)
    wins = []
    for seed in range(200):
        env.reset(seed=seed)
        gold = env.task["answer"]
        env.step({"solver_0": "\\boxed{nope}", "solver_1": f"\\boxed{{{gold}}}"})
        _, rewards, *_ = env.step({"judge_0": "\\boxed{2}"})
        wins.append(rewards["judge_0"])
    assert 0.4 < np.mean(wins) < 0.6  # the base rate, 1/2


def test_copied_worked_examples_earn_nothing_for_the_judge_and_the_solvers():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=2)
    env.reset(seed=0, options={"task": {"problem": "Compute $60 + 7$.", "answer": "67"}})
    env.step({"solver_0": MATH.replies[0], "solver_1": "\\boxed{67}"})
    _, rewards, _, _, infos = env.step({"judge_0": JUDGE.replies[0]})
    assert rewards["solver_0"] == 0.0 and infos["solver_0"]["invalid_action"]
    assert "worked example" in infos["solver_0"]["invalid_reason"]
    assert rewards["solver_1"] == 1.0  # a right 67 is not a copy
    assert rewards["judge_0"] == 0.0
    assert set(infos["judge_0"]["reward_components"].values()) == {0.0}
    assert infos["judge_0"]["invalid_action"]
    assert "worked example" in infos["judge_0"]["invalid_reason"]


def test_scripted_judges_read_the_order():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=3)
    for seed in range(10):
        env.reset(seed=seed, options=TASK)
        env.step({"solver_0": "\\boxed{1}", "solver_1": "\\boxed{42}", "solver_2": "\\boxed{42}"})
        _, rewards, *_ = env.step({"judge_0": ScriptedPolicy("oracle")(env, "judge_0")})
        assert rewards["judge_0"] == 1.0
        env.reset(seed=seed, options=TASK)
        env.step({"solver_0": "\\boxed{1}", "solver_1": "\\boxed{42}", "solver_2": "\\boxed{42}"})
        _, rewards, *_ = env.step({"judge_0": ScriptedPolicy("heuristic")(env, "judge_0")})
        assert rewards["judge_0"] == 1.0  # the majority, wherever it is shown


def test_episode_metrics_give_the_judge_score_and_its_base_rate():
    correct = {"solver_0": True, "solver_1": False, "solver_2": False, "judge_0": True}
    assert SolverJudgeEnv.episode_metrics(correct) == {
        "judge_accuracy": 1.0,
        "judge_base_rate": 1 / 3,
    }
    assert SolverJudgeEnv.episode_metrics({"solver_0": True}) == {}
