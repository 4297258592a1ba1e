"""No grading reaches an agent that still plays: its info, observation and reward before it acts
do not depend on the reference answer, and policies that read info earn no more for it.

The policies are those of the session-9 attack (a judge picking the slot whose solver scored 1,
a debater keeping an answer its info calls correct and switching one it calls wrong); before
the fix they earned 0.705 (judge, base rate 0.52) and 0.885 (debater, plurality vote 0.625).
"""

from __future__ import annotations

import collections
import copy
from typing import Any

import numpy as np
import pytest

import rllm_envs

PROBLEM = "What is 6 times 7?"
GRADING_KEYS = ("score", "scores", "order", "base_rate", "round_scores", "choice")


def _task(answer: str) -> dict[str, Any]:
    return {"task": {"problem": PROBLEM, "answer": answer}}


def _replies(agent: str, turn: int) -> str:
    # Fixed replies, some right for reference 42 and some for reference 41.
    if agent == "judge_0":
        return "\\boxed{2}"
    k = int(agent.rsplit("_", 1)[1])
    return f"\\boxed{{{(41, 42, 7)[(k + turn) % 3]}}}"


def _parallel_views(env_id: str, answer: str, **kwargs: Any) -> list[Any]:
    """What every still-playing agent is told at every step (parallel API)."""
    env = rllm_envs.make_parallel(env_id, **kwargs)
    obs, infos = env.reset(seed=0, options=_task(answer))
    views: list[Any] = [(a, obs[a], infos[a]) for a in env.agents]
    turn = 0
    while env.agents:
        actions = {a: _replies(a, turn) for a in env.agents if infos[a]["acting"]}
        obs, rewards, terms, truncs, infos = env.step(actions)
        turn += 1
        for a in infos:
            if not (terms[a] or truncs[a]):
                views.append((turn, a, obs[a], rewards[a], infos[a]))
    return views


def _aec_views(env_id: str, answer: str, **kwargs: Any) -> list[Any]:
    """What every agent sees through ``env.last()`` whenever it is about to act (AEC API)."""
    env = rllm_envs.make_aec(env_id, **kwargs)
    env.reset(seed=0, options=_task(answer))
    views: list[Any] = []
    counts: collections.Counter[str] = collections.Counter()
    for agent in env.agent_iter(max_iter=200):
        obs, reward, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        views.append((agent, obs, reward, copy.deepcopy(info)))
        env.step(_replies(agent, counts[agent]) if info["acting"] else None)
        counts[agent] += 1
    return views


CASES = [
    ("rllm/SolverJudge-v1", {"n_solvers": 3}),
    ("rllm/SolverJudge-v1", {"n_solvers": 1}),
    ("rllm/Debate-v1", {"n_debaters": 3, "n_rounds": 3}),
    ("rllm/Debate-v1", {"n_debaters": 2, "n_rounds": 2}),
]


@pytest.mark.parametrize("env_id, kwargs", CASES)
@pytest.mark.parametrize("views", [_parallel_views, _aec_views], ids=["parallel", "aec"])
def test_a_playing_agent_is_told_nothing_that_depends_on_the_reference(views, env_id, kwargs):
    right, wrong = views(env_id, "42", **kwargs), views(env_id, "41", **kwargs)
    assert len(right) > len(kwargs)  # every agent was seen before it acted
    assert right == wrong
    for view in right:
        info = view[-1]
        assert not info["is_correct"]
        assert not set(GRADING_KEYS) & set(info), info


def _every_parallel_view(env_id: str, answer: str, **kwargs: Any) -> list[Any]:
    """Everything ``step`` returns, for every agent, while any agent still plays (parallel).

    A policy that plays every seat (the registry rows of these envs have no scripted seat)
    reads every seat's view, a finished agent's last step included.
    """
    env = rllm_envs.make_parallel(env_id, **kwargs)
    obs, infos = env.reset(seed=0, options=_task(answer))
    views: list[Any] = [(obs, infos)]
    turn = 0
    while env.agents:
        actions = {a: _replies(a, turn) for a in env.agents if infos[a]["acting"]}
        step = env.step(actions)
        obs, infos = step[0], step[4]
        turn += 1
        if env.agents:  # the last step, which ends the episode for all, may grade
            views.append(copy.deepcopy(step))
    return views


def _every_aec_view(env_id: str, answer: str, **kwargs: Any) -> list[Any]:
    """``observe``, reward, ends and info of every agent while any agent still plays (AEC)."""
    env = rllm_envs.make_aec(env_id, **kwargs)
    env.reset(seed=0, options=_task(answer))
    views: list[Any] = []
    counts: collections.Counter[str] = collections.Counter()
    for agent in env.agent_iter(max_iter=200):
        if not env.unwrapped.agents:
            break
        seen = {}
        for a in env.possible_agents:
            try:
                observation = env.observe(a)
            except KeyError:  # not in the last step's return
                continue
            seen[a] = (
                observation,
                env.rewards.get(a),
                env._cumulative_rewards.get(a),
                env.terminations.get(a),
                env.truncations.get(a),
                copy.deepcopy(env.infos.get(a)),
            )
        views.append((agent, seen))
        _, _, term, trunc, info = env.last()
        if term or trunc:
            env.step(None)
            continue
        env.step(_replies(agent, counts[agent]) if info["acting"] else None)
        counts[agent] += 1
    return views


@pytest.mark.parametrize("env_id, kwargs", CASES)
@pytest.mark.parametrize("views", [_every_parallel_view, _every_aec_view], ids=["parallel", "aec"])
def test_no_agents_view_depends_on_the_reference_while_any_agent_plays(views, env_id, kwargs):
    # SolverJudge-v1 failed this before the fix: the solvers' last step, the one that handed
    # the judge its solutions, held "The reference answer is ...", is_correct, score and
    # their rewards (and AEC observe(solver) showed it while the judge was to act).
    right, wrong = views(env_id, "42", **kwargs), views(env_id, "41", **kwargs)
    assert len(right) >= 2  # reset and at least one step before the end
    assert right == wrong
    text = repr(right)
    assert "reference" not in text and "is_correct': True" not in text
    for key in GRADING_KEYS:
        assert f"'{key}'" not in text, key


def test_grading_arrives_for_every_agent_when_the_episode_ends():
    env = rllm_envs.make_parallel("rllm/SolverJudge-v1", n_solvers=2)
    env.reset(seed=0, options=_task("42"))
    _, rewards, terms, _, infos = env.step({"solver_0": "\\boxed{42}", "solver_1": "\\boxed{41}"})
    assert not any(terms.values()) and set(rewards.values()) == {0.0}
    assert "score" not in infos["solver_0"] and not infos["solver_0"]["is_correct"]
    right = env.order.index(0) + 1
    obs, rewards, terms, _, infos = env.step({"judge_0": f"\\boxed{{{right}}}"})
    assert all(terms.values()) and rewards == {"solver_0": 1.0, "solver_1": 0.0, "judge_0": 1.0}
    assert infos["solver_0"]["score"] == 1.0 and infos["solver_0"]["answer"] == "42"
    assert infos["solver_0"]["is_correct"] and not infos["solver_1"]["is_correct"]
    assert "reference answer is 42" in obs["solver_1"]
    judge = infos["judge_0"]
    assert rewards["judge_0"] == 1.0 and judge["is_correct"]
    assert judge["scores"] == [1.0, 0.0] and judge["base_rate"] == 0.5
    assert judge["order"] == env.order and judge["choice"] == right


def _judge_reading_info(n: int, aec: bool) -> tuple[float, float]:
    """The attack's judge (pick the slot whose solver scored 1) against ``\\boxed{1}``."""
    leak, constant = [], []
    for seed in range(n):
        for policy, out in (("leak", leak), ("constant", constant)):
            if aec:
                env = rllm_envs.make_aec("rllm/SolverJudge-v1")
                env.reset(seed=seed)
                base = env.unwrapped
                final = None
                for agent in env.agent_iter(max_iter=20):
                    _, reward, term, trunc, info = env.last()
                    if term or trunc:
                        final = reward if agent == "judge_0" else final
                        env.step(None)
                        continue
                    if not info["acting"]:
                        env.step(None)
                    elif agent != "judge_0":
                        rng = np.random.default_rng(seed * 7 + base.solvers.index(agent))
                        env.step(base.heuristic_action(agent, rng))
                    else:
                        env.step(_judge_choice(info) if policy == "leak" else "\\boxed{1}")
                assert final is not None
                out.append(final)
            else:
                env = rllm_envs.make_parallel("rllm/SolverJudge-v1")
                env.reset(seed=seed)
                actions = {
                    a: env.heuristic_action(a, np.random.default_rng(seed * 7 + i))
                    for i, a in enumerate(env.solvers)
                }
                _, _, _, _, infos = env.step(actions)
                reply = _judge_choice(infos["judge_0"]) if policy == "leak" else "\\boxed{1}"
                _, rewards, *_ = env.step({"judge_0": reply})
                out.append(rewards["judge_0"])
    return float(np.mean(leak)), float(np.mean(constant))


def _judge_choice(info: dict[str, Any]) -> str:
    order, scores = info.get("order"), info.get("scores")
    good = [k for k, i in enumerate(order or [], 1) if scores and scores[i] >= 1]
    return f"\\boxed{{{good[0] if good else 1}}}"


@pytest.mark.parametrize("aec", [False, True], ids=["parallel", "aec"])
def test_a_judge_reading_its_info_earns_the_base_rate(aec):
    leak, constant = _judge_reading_info(60, aec)
    assert leak == constant  # the info names no slot: the policy falls back to \boxed{1}


def _debater_reading_info(n: int, rounds: int) -> dict[str, float]:
    """The attack's debater_0 (keep an answer its info calls correct, else try another's)."""
    out: dict[str, list[float]] = {"leak": [], "blind": [], "plurality": []}
    env = rllm_envs.make_parallel("rllm/Debate-v1", n_rounds=rounds)
    a0, a1 = env.possible_agents[:2]
    for seed in range(n):
        for policy, rewards_of in out.items():
            _, infos = env.reset(seed=seed)
            first = {
                a: env.heuristic_action(a, np.random.default_rng(seed * 10 + i))
                for i, a in enumerate(env.agents)
            }
            acts, rewards = dict(first), {}
            first_answers: list[Any] = []
            for r in range(rounds):
                _, rewards, terms, _, infos = env.step(acts)
                if all(terms.values()):
                    break
                mine = infos[a0]
                first_answers = first_answers or list(mine["answers"])
                if policy in ("leak", "blind"):
                    # "blind" is the same policy never told its answer is right.
                    told = mine["is_correct"] or mine.get("score", 0) >= 1
                    told = told or mine["reward_components"]["round_correct"] >= 1
                    told = told and policy == "leak"
                    others = [x for x in first_answers[1:] if x is not None]
                    if told or not others:
                        nxt = acts[a0]
                    else:
                        nxt = f"\\boxed{{{others[min(r, len(others) - 1)]}}}"
                else:
                    votes = collections.Counter(x for x in mine["answers"] if x is not None)
                    nxt = f"\\boxed{{{votes.most_common(1)[0][0]}}}" if votes else first[a0]
                acts = {a0: nxt, a1: first[a1]}
            rewards_of.append(rewards[a0])
    assert out["leak"] == out["blind"]  # its info told it nothing, episode by episode
    return {k: float(np.mean(v)) for k, v in out.items()}


def test_a_debater_reading_its_info_learns_nothing_before_the_end():
    _debater_reading_info(40, 3)


@pytest.mark.slow
@pytest.mark.parametrize("rounds", [2, 3])
def test_a_debater_reading_its_info_earns_no_more_than_plurality_vote(rounds):
    means = _debater_reading_info(200, rounds)
    # 200 episodes: the standard error of each mean is about 0.035.
    assert means["leak"] <= means["plurality"] + 0.05, means
