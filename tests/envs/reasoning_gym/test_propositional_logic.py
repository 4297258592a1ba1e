"""rllm/ReasoningGym-v0, ``propositional_logic``: a conclusion that restates the premises
(their conjunction, a premise doubled, negated twice or weakened) earns nothing, whatever its
spelling, and neither does a weak conclusion a constant policy could give everywhere, while
the reference conclusion and other specific ones score 1 in both universes."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import rllm_envs.testing as kit  # noqa: E402
from rllm_envs.reasoning_gym import ReasoningGymEnv, grade  # noqa: E402
from rllm_envs.reasoning_gym.premises import (  # noqa: E402
    MAX_ATOMS,
    MAX_VALID_SHARE,
    _equivalent,
    _parse,
    is_informative,
    premises_are_consistent,
    restates_premises,
    valid_share,
)
from rllm_envs.reasoning_gym.tasks import oracle_answer  # noqa: E402
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


@pytest.mark.slow  # 7-24 s: thousands of premise sets per universe (the full suite runs it)
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


@pytest.mark.slow  # the env's first reset measures its premise sets (10-20 s a process)
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


def _two_literal_formulas(atoms: str) -> list[str]:
    """Every literal, and every formula of two literals of different atoms and one connective."""
    literals = [a for a in atoms] + [f"¬{a}" for a in atoms]
    out = list(literals)
    for x, y in itertools.permutations(literals, 2):
        if x[-1] != y[-1]:
            out += [f"({x} {op} {y})" for op in ("∧", "∨", "→", "↔")]
    return out


#: Issue #25: reasoning-gym pays any valid consequence that is no tautology, and a task's
#: premises make weak two-atom formulas valid often: ``(P ↔ Q)`` for a third of the default
#: premise sets, so as a constant it earned 28% (train) and 32% (eval). A conclusion is now
#: paid only when it is equivalent to the reference or follows from at most 5% of the
#: config's premise sets (:func:`rllm_envs.reasoning_gym.premises.is_informative`), and the
#: answer balance keeps each reference formula (up to equivalence) to 5% of tasks.
@pytest.mark.slow
def test_a_fixed_or_templated_conclusion_earns_no_more_than_a_fair_share():
    env = ReasoningGymEnv(dataset="propositional_logic")
    constants = _two_literal_formulas("PQR")
    wins = dict.fromkeys([*constants, "first two atoms iff"], 0)
    for index in range(N):
        env.reset(options={"index": index})
        task = env.unwrapped.task
        replies = {c: c for c in constants}
        replies["first two atoms iff"] = _first_two_atoms_iff(task["metadata"]["premises"])
        for name, reply in replies.items():
            wins[name] += grade(f"<answer>{reply}</answer>", task).correct
    best = max(wins, key=lambda k: wins[k])
    # 5% of tasks each in expectation (each task's answer slot is drawn on its own), so the
    # best of ~70 constants stays within 4 sigma of it; the fixed iff earned 28-32% before.
    bound = 0.05 * N + 4 * (N * 0.05 * 0.95) ** 0.5
    assert wins["(P ↔ Q)"] <= bound and wins["first two atoms iff"] <= bound, wins
    assert wins[best] <= bound, (best, wins[best])


@pytest.mark.slow  # 20-40 s: the premise sets of both universes
@pytest.mark.parametrize("task_seed", [0, EVAL_TASK_SEED])
def test_the_reference_and_other_specific_conclusions_earn_1(task_seed):
    """The reference pays on at least 95% of tasks, and so does a valid conclusion other than
    the reference that follows from at most 5% of the premise sets (an honest solver's)."""
    env = ReasoningGymEnv(dataset="propositional_logic", task_seed=task_seed)
    paid = specific = 0
    for index in range(N):
        env.reset(options={"index": index})
        task = env.unwrapped.task
        paid += grade(env.unwrapped.oracle_action(), task).correct
        reference = oracle_answer(task)
        premises = task["metadata"]["premises"]
        atoms = "".join(task["metadata"]["variables"])
        for formula in _two_literal_formulas(atoms):
            share = valid_share(formula, task["metadata"])
            if share is None or share > MAX_VALID_SHARE or restates_premises(formula, premises):
                continue
            if is_informative(formula, task["metadata"], None) and _follows(formula, premises):
                if _equivalent(formula, reference):
                    continue
                result = grade(f"<answer>{formula}</answer>", task)
                assert result.correct, (formula, premises, reference, result)
                specific += 1
                break
    assert paid >= 0.95 * N, paid
    assert specific >= 0.1 * N, specific  # 10 of 60 train tasks have one


def _follows(formula: str, premises: list[str]) -> bool:
    """Whether ``formula`` is a valid consequence of ``premises`` and no tautology."""
    parsed = _parse([formula, *premises])
    assert parsed is not None
    (conclusion, *given), table = parsed
    target, conj = table.mask(conclusion), table.full
    for premise in given:
        conj &= table.mask(premise)
    return conj & ~target == 0 and target != table.full


def test_weak_conclusions_are_refused_by_their_share_of_premise_sets():
    metadata = {"difficulty": {"vars": (2, 4), "statements": (2, 4), "complexity": (1, 3)}}
    assert valid_share("(P ↔ Q)", metadata) > 0.2
    assert valid_share("(P ∨ ¬P)", metadata) == 1.0
    assert is_informative("(P ↔ Q)", metadata, None) is False
    # Equivalent to the reference: paid whatever its share.
    assert is_informative("(¬P ∨ Q)", metadata, "(P → Q)") is True
    assert is_informative("(P ∧", metadata, None) is None
    assert valid_share("(P ↔ Q)", {}) is None
    task = {
        "dataset": "propositional_logic",
        "question": "Given:\n1. (P ↔ Q)\n.2. R\n.What can we conclude?",
        "answer": None,
        "metadata": {
            "source_dataset": "propositional_logic",
            "premises": ["(P ↔ Q)", "R", "(R → (P ∧ S))"],
            "variables": ["P", "Q", "R", "S"],
            "example_answer": "(Q ∧ S)",
            **metadata,
        },
    }
    assert grade("<answer>(Q ∧ S)</answer>", task).correct
    weak = grade("<answer>(P ∨ Q)</answer>", task)
    assert weak.verdict == "weak_conclusion" and weak.score == 0.0
