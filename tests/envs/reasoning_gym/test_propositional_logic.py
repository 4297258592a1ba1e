"""rllm/ReasoningGym-v0, ``propositional_logic``: a conclusion that restates the premises
(their conjunction, a premise doubled, negated twice or weakened) earns nothing, whatever its
spelling, while the reference conclusion scores 1 in both universes."""

from __future__ import annotations

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import rllm_envs.testing as kit  # noqa: E402
from rllm_envs.reasoning_gym import ReasoningGymEnv, grade  # noqa: E402
from rllm_envs.reasoning_gym.premises import (  # noqa: E402
    MAX_ATOMS,
    premises_are_consistent,
    restates_premises,
)
from rllm_envs.tasks import EVAL_TASK_SEED  # noqa: E402

N = 60


def _wrap(p: str) -> str:
    return p if p.startswith("(") else f"({p})"


#: Replies built from the premises alone, without inferring anything.
ATTACKS = {
    "premise 1": lambda ps: ps[0],
    "premise 1 without spaces": lambda ps: ps[0].replace(" ", ""),
    "not not premise 1": lambda ps: f"¬¬{_wrap(ps[0])}",
    "premise 1 and itself": lambda ps: f"({_wrap(ps[0])} ∧ {_wrap(ps[0])})",
    "premise 1 or itself": lambda ps: f"({_wrap(ps[0])} ∨ {_wrap(ps[0])})",
    "premise 1 or an atom": lambda ps: f"({_wrap(ps[0])} ∨ P)",
    "premises 1 and 2": lambda ps: f"({_wrap(ps[0])} ∧ {_wrap(ps[1])})",
    "premises 2 or 1": lambda ps: f"({_wrap(ps[1])} ∨ {_wrap(ps[0])})",
    "premises 1 iff 2": lambda ps: f"({_wrap(ps[0])} ↔ {_wrap(ps[1])})",
    "premises 1 and 2, or an atom": lambda ps: f"(({_wrap(ps[0])} ∧ {_wrap(ps[1])}) ∨ Q)",
    "every premise": lambda ps: "(" + " ∧ ".join(_wrap(p) for p in ps) + ")",
}


@pytest.mark.parametrize("task_seed", [0, EVAL_TASK_SEED])
def test_the_reference_scores_and_restated_premises_earn_nothing(task_seed):
    env = ReasoningGymEnv(dataset="propositional_logic", task_seed=task_seed)
    wins = dict.fromkeys(ATTACKS, 0)
    for index in range(N):
        env.reset(options={"index": index})
        task = env.unwrapped.task
        premises = task["metadata"]["premises"]
        _, reward, *_, info = env.step(env.unwrapped.oracle_action())
        assert reward == 1.0 and info["verdict"] == "correct", (index, premises)
        for name, attack in ATTACKS.items():
            result = grade(f"<answer>{attack(premises)}</answer>", task)
            assert result.score == 0.0 and not result.correct, (name, premises, result)
            wins[name] += result.correct
        env.reset(options={"index": index})
        _, reward, *_, info = env.step(f"<answer>{kit.GARBAGE}</answer>")
        assert reward == 0.0 and info["reward_components"]["score"] == 0.0
    assert not any(wins.values())


def test_the_env_reports_a_restatement_in_its_verdict():
    env = ReasoningGymEnv(dataset="propositional_logic")
    env.reset(options={"index": 0})
    premises = env.unwrapped.task["metadata"]["premises"]
    _, reward, *_, info = env.step(f"<answer>¬¬{_wrap(premises[0])}</answer>")
    assert reward == 0.0 and info["verdict"] == "restated_premises"
    assert info["reward_components"] == {"correct": 0.0, "score": 0.0}


def test_restatements_are_decided_by_truth_tables():
    premises = ["P", "(P → Q)"]
    for trivial in (
        "P",
        "¬¬P",
        "(P ∨ P)",
        "(P ∨ R)",  # a weakening of a premise
        "(¬P → P)",  # equivalent to a premise, spelled otherwise
        "(P ∧ (P → Q))",
        "(P ∧ Q)",  # equivalent to the conjunction of both premises
        "((P → Q) ↔ P)",
        "((P ∧ (¬P ∨ Q)) ∨ R)",
    ):
        assert restates_premises(trivial, premises) is True, trivial
    for inferred in ("Q", "(Q ∨ R)", "(Q ∧ (P ∨ R))"):
        assert restates_premises(inferred, premises) is False, inferred
    # Undecidable: left to reasoning-gym's scorer.
    assert restates_premises("(P ∧", premises) is None
    many = [f"(A{i} ∨ B{i})" for i in range(MAX_ATOMS)]
    assert restates_premises("(A0 ∨ B0)", many) is None
    assert premises_are_consistent(["P", "¬(P ∨ R)"]) is False
    assert premises_are_consistent(premises) is True


def _first_two_atoms_iff(premises: list[str]) -> str:
    atoms = sorted({c for p in premises for c in p if c.isalpha() and c.isupper()})
    return f"({atoms[0]} ↔ {atoms[1]})" if len(atoms) > 1 else f"¬¬{atoms[0]}"


#: Why the best fixed conclusion still pays (issue #25, open): reasoning-gym pays any valid
#: consequence that is no tautology, and a task's premises make on average 8 of the 68
#: functions of one or two of its atoms (P..S) valid non-restating consequences, so over those
#: 68 the shares sum to about 8: whatever the draws' weights, some fixed conclusion over P and
#: Q earns about 12% or more (measured: `(P ↔ Q)` 28% train, 32% eval). Only tasks with a
#: single such consequence (under 5% of draws) would balance, at 20 times the draw cost.
#: Renaming atoms per task would stop the constant but not `(X ↔ Y)` of the question's first
#: atoms, which earns the same.
OPEN_CONSTANT = (
    "propositional_logic pays any valid consequence; weak two-atom conclusions are valid for "
    "about 30% of its premise sets (see the comment above)"
)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=OPEN_CONSTANT)
def test_a_fixed_or_templated_conclusion_earns_no_more_than_a_fair_share():
    env = ReasoningGymEnv(dataset="propositional_logic")
    wins = {"(P ↔ Q)": 0, "first two atoms iff": 0}
    for index in range(N):
        env.reset(options={"index": index})
        task = env.unwrapped.task
        replies = {
            "(P ↔ Q)": "(P ↔ Q)",
            "first two atoms iff": _first_two_atoms_iff(task["metadata"]["premises"]),
        }
        for name, reply in replies.items():
            wins[name] += grade(f"<answer>{reply}</answer>", task).correct
    assert max(wins.values()) <= 0.1 * N, wins
