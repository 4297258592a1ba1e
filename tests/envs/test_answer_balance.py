"""No answer is a large share of any procedural generator's tasks, in either universe.

For every procedural family (and sub-family) and difficulty of Math, ToolUse, Countdown and the
fast reasoning-gym families, tasks are drawn from the env's own task source on the training
and the evaluation universe, and the most common reference answer's share must stay within
``max(1 / min(labels, slots), MAX_ANSWER_SHARE)`` plus sampling noise (each task draws its
slot on its own, so a slot's share of ``n`` tasks is binomial): a constant answer then earns no
more than a guess among the labels. The fast lane draws a few tasks per case; the slow lane
draws many.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest

from rllm_envs.tasks import (
    EVAL_TASK_SEED,
    MAX_ANSWER_SHARE,
    MIN_SLOT_SHARE,
    MIN_UNIVERSE_KEYS,
    AnswerBalance,
    Mixture,
    ProceduralTasks,
    TaskSource,
    answer_balance,
    answer_label,
    key_universe,
)

SEEDS = {"train": 0, "eval": EVAL_TASK_SEED}


def bound(labels: int, n: int, slots: int | None = None) -> float:
    """The largest share a balanced answer may show in ``n`` draws (4 sigma over its cap).

    ``slots``: the source's answer slots, when it balances (each common answer holds one).
    """
    cap = max(1 / max(min(labels, slots or labels), 1), MAX_ANSWER_SHARE)
    return cap + 4 * math.sqrt(cap * (1 - cap) / n) + 1 / n


def planned_slots(source: TaskSource) -> int | None:
    """The number of answer slots ``source`` balances with (``None``: it does not, or it mixes
    parts balanced apart)."""
    if isinstance(getattr(source, "generate", None), Mixture):
        return None
    plan = getattr(source, "answer_balance", lambda: None)()
    return None if plan is None else plan.slots


def most_common_share(source: TaskSource, n: int) -> tuple[str | None, float, int]:
    counts = Counter(answer_label(source[i]) for i in range(n))
    label, count = counts.most_common(1)[0]
    return label, count / n, len(counts)


def math_cases() -> list[tuple[str, Callable[[int], TaskSource]]]:
    from rllm_envs.math.generators import DIFFICULTIES, FAMILIES, procedural_tasks

    return [
        (f"math-{f}-d{d}", lambda s, f=f, d=d: procedural_tasks(seed=s, difficulty=d, families=[f]))
        for f in FAMILIES
        for d in DIFFICULTIES
    ]


def tooluse_cases() -> list[tuple[str, Callable[[int], TaskSource]]]:
    import gymnasium as gym

    import rllm_envs  # noqa: F401
    from rllm_envs.tooluse.tasks import FAMILIES, MAX_DIFFICULTY

    def make(seed: int, f: str, d: int) -> TaskSource:
        env = gym.make("rllm/ToolUse-v1", families=[f], difficulty=d, task_seed=seed)
        return env.unwrapped.tasks

    return [
        (f"tooluse-{f}-d{d}", lambda s, f=f, d=d: make(s, f, d))
        for f in FAMILIES
        for d in range(1, MAX_DIFFICULTY + 1)
    ]


def countdown_cases() -> list[tuple[str, Callable[[int], TaskSource]]]:
    from rllm_envs.countdown.tasks import DIFFICULTY_PRESETS, procedural_tasks

    return [
        (f"countdown-d{d}", lambda s, d=d: procedural_tasks(seed=s, difficulty=d))
        for d in DIFFICULTY_PRESETS
    ]


#: reasoning-gym families with few labels or skewed answers (the attacks' and more), fast to
#: generate: the fast lane runs the attacks' three, the slow lane all and more.
RG_FAST = [
    "count_bits",
    "family_relationships",
    "self_reference",
    "aiw",
    "syllogism",
    "circuit_logic",
    "isomorphic_strings",
    "ransom_note",
    "game_of_life_halting",
    "calendar_arithmetic",
    "shortest_path",
    "gcd",
]


def rg_cases(names: list[str]) -> list[tuple[str, Callable[[int], TaskSource]]]:
    pytest.importorskip("reasoning_gym")
    from rllm_envs.reasoning_gym.balance import BalancedTasks

    return [(f"rg-{n}", lambda s, n=n: BalancedTasks(n, task_seed=s)) for n in names]


def check(make: Callable[[int], TaskSource], name: str, n: int) -> None:
    for universe, seed in SEEDS.items():
        source = make(seed)
        label, share, labels = most_common_share(source, n)
        slots = planned_slots(source)
        assert share <= bound(labels, n, slots), (
            f"{name} ({universe} universe): answer {label!r} is {share:.0%} of {n} tasks "
            f"({labels} labels, {slots} slots, bound {bound(labels, n, slots):.0%})"
        )


ALL = math_cases() + tooluse_cases() + countdown_cases()
#: The fast lane: the attacks' cases (Math combinatorics d1, ToolUse dates d2 and arith d2) and
#: a few representative others, cheap to generate; the slow lane runs every family and
#: difficulty.
FAST = [
    c
    for c in ALL
    if c[0]
    in {
        "math-combinatorics-d1",
        "math-geometry-d1",
        "tooluse-dates-d2",
        "tooluse-arith-d2",
        "tooluse-lookup-d1",
        "countdown-d1",
    }
]


@pytest.mark.parametrize(("name", "make"), FAST, ids=[c[0] for c in FAST])
def test_no_answer_dominates_a_procedural_family(name, make):
    check(make, name, 40)


@pytest.mark.parametrize(
    "family",
    # The costliest families to balance: the many-draws test below covers them.
    [
        pytest.param(f, marks=pytest.mark.slow) if f in ("count_bits", "self_reference") else f
        for f in RG_FAST[:3]
    ],
)
def test_no_answer_dominates_a_reasoning_gym_family(family):
    ((name, make),) = rg_cases([family])
    check(make, name, 60)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "make"), ALL, ids=[c[0] for c in ALL])
def test_no_answer_dominates_a_procedural_family_many_draws(name, make):
    check(make, name, 400)


@pytest.mark.slow
@pytest.mark.parametrize(
    "family",
    [
        *RG_FAST,
        # A long tail: '1' is a third of the raw tasks, counts past 7 are each under 3%. Slots
        # of rare labels used to run out of draws and fall back to '1' (18% of 300 tasks).
        "letter_counting",
        "dice",
    ],
)
def test_no_answer_dominates_a_reasoning_gym_family_many_draws(family):
    ((name, make),) = rg_cases([family])
    check(make, name, 300)


def test_balance_caps_every_common_answer_whatever_the_sample_says():
    # Weekday-like: 7 labels, one drawn half the time; the sample even misjudges it.
    labels = ["mon"] * 60 + ["tue", "wed", "thu", "fri", "sat", "sun"] * 6
    plan = answer_balance(labels)
    assert isinstance(plan, AnswerBalance) and plan.slots == 7

    def skewed(rng):
        day = "mon" if rng.random() < 0.6 else str(rng.choice(["tue", "wed", "thu", "fri"]))
        return {"question": f"Which day? {int(rng.integers(10**6))}", "answer": day}

    source = ProceduralTasks(skewed, name="days", balance=True)
    counts = Counter(source[i]["answer"] for i in range(300))
    assert counts["mon"] / 300 <= 0.3, counts  # 0.6 unbalanced; 5 labels seen: 0.2 + noise
    # An open-answer family with no common answer is left as it is.
    assert answer_balance([str(i) for i in range(64)]) is None


def _long_tail(rng):
    # letter_counting's shape: '1' a third of the draws, then a geometric tail to 16.
    count = min(int(rng.geometric(0.35)), 16)
    return {"question": f"How many letters? {int(rng.integers(10**9))}", "answer": str(count)}


def test_a_long_tail_is_capped_at_one_slot_per_answer_of_reasonable_mass():
    labels = [str(min(int(x), 16)) for x in np.random.default_rng(0).geometric(0.35, size=512)]
    plan = answer_balance(labels)
    assert isinstance(plan, AnswerBalance) and plan.slots >= 7 and plan.pool_slots >= 1
    assert plan.assigned["1"] != plan.assigned["2"]
    # Every slot holds answers worth at least MIN_SLOT_SHARE of the draws: none runs dry.
    counts = Counter(labels)
    pool = sum(c for a, c in counts.items() if a not in plan.assigned)
    assert min([*(counts[a] for a in plan.assigned), pool]) >= MIN_SLOT_SHARE * len(labels)
    for universe, seed in SEEDS.items():
        source = ProceduralTasks(_long_tail, name="tail", seed=seed, balance=True)
        drawn = Counter(source[i]["answer"] for i in range(400))
        # (7 or more slots: the evaluation universe's sample is the smaller one.)
        slots = source.answer_balance().slots
        assert slots >= 7, (universe, source.answer_balance())
        # '1' is a third of the raw draws; no answer, common or in the pool, passes one slot's
        # share (binomial: each task draws its slot on its own).
        assert max(drawn.values()) / 400 <= bound(slots, 400), (universe, drawn)
        # A common answer stands only on tasks of its own slot.
        assigned = source.answer_balance().assigned
        for i in range(400):
            if source[i]["answer"] in assigned:
                assert source.answer_slot(i) == assigned[source[i]["answer"]], (universe, i)


@pytest.mark.slow  # 6 s of redrawing a rare answer: the full suite runs it
def test_a_slot_that_runs_dry_falls_back_to_the_rarest_answer():
    # The sample promised a common 'b'; the generator never draws it: its slot's tasks take
    # the rarest answer drawn, not the common 'a'.
    plan = AnswerBalance(2, {"a": 0, "b": 1}, {"a": 60, "b": 40, "c": 1})

    def no_b(rng):
        answer = "a" if rng.random() < 0.95 else "c"
        return {"question": f"Which? {int(rng.integers(10**9))}", "answer": answer}

    source = ProceduralTasks(no_b, name="dry", seed=0, balance=True)
    source._plans[""] = type(source._plan(""))(None, {"train": plan, "eval": plan})
    drawn = {i: source[i]["answer"] for i in range(200)}
    assert {i for i, a in drawn.items() if a == "c"} == {
        i for i in drawn if source.answer_slot(i) == 1
    }
    assert set(drawn.values()) == {"a", "c"}


def test_a_split_that_leaves_a_universe_few_questions_is_not_used():
    def small(rng):
        # 12 questions: a universe would keep one or two of them.
        n = int(rng.integers(12))
        return {"question": f"How many ways to arrange {n} + 3 books?", "answer": str(n)}

    source = ProceduralTasks(small, name="small", seed=EVAL_TASK_SEED)
    assert source.splitting_key() is None

    def rich(rng):
        a, b = (int(x) for x in rng.integers(1, 10**6, size=2))
        return {"question": f"What is {a} + {b}?", "answer": str(a + b)}

    held = ProceduralTasks(rich, name="rich", seed=EVAL_TASK_SEED)
    assert held.splitting_key() is not None
    assert {key_universe(held.universe_key(held[i])) for i in range(20)} == {"eval"}
    assert MIN_UNIVERSE_KEYS == 20


def test_the_math_mixture_splits_and_balances_each_family_on_its_own():
    from rllm_envs.math.generators import procedural_tasks

    families = ["word_problem", "combinatorics", "number_theory"]
    source = procedural_tasks(seed=EVAL_TASK_SEED, difficulty=1, families=families)
    keys = source.splitting_keys()
    # Each family keeps 20 questions per universe (combinatorics d1 through its enlarged
    # spaces), so each splits.
    assert all(key is not None for key in keys.values()), keys
    drawn = Counter(source[i]["family"] for i in range(90))
    assert min(drawn.values()) >= 15, drawn  # no family's weight collapses


def _agrees(pairs: list[tuple[int, int]], slots: int) -> None:
    """Pairs of slots agree as often as a guess (within 4 standard errors)."""
    guess = 1 / slots
    share = sum(a == b for a, b in pairs) / len(pairs)
    noise = 4 * math.sqrt(guess * (1 - guess) / len(pairs))
    assert abs(share - guess) <= noise, (share, guess)


@pytest.mark.parametrize("universe", ["train", "eval"])
@pytest.mark.parametrize("slots", [2, 11, 20])
def test_a_tasks_slot_tells_nothing_of_anothers(slots, universe):
    """Issue #31 (att31t F3): slot ``(hash(seed) + i) % slots`` made one offset per seed give
    every task's slot (97 of 97 Math tasks of a private-seed server answered from their index).
    s25 att25t F1: per-block orders (each block of ``slots`` consecutive tasks taking every slot
    once) gave a yes/no task's block-mate from one graded reply, 100 of 100. In both universes
    neighbours, block-mates, a learnt offset and another source or seed agree with a task's
    slot as often as a guess."""
    plan = AnswerBalance(slots, {str(i): i for i in range(slots)})
    seed, n = SEEDS[universe] + 8_675_309, 400 * slots + 3
    source = f"family:part:{n}"
    targets = [plan.target(seed, i, source, n) for i in range(n)]
    assert plan.target(seed, 5, source, n) == targets[5]  # a task's own, every call
    _agrees([(targets[i], targets[i + 1]) for i in range(0, n - 1, 2)], slots)  # a block-mate
    offset = targets[0] % slots
    _agrees([(targets[i], (offset + i) % slots) for i in range(1, n)], slots)  # learnt offset
    other = [plan.target(seed, i, "family:other-part:" + str(n), n) for i in range(n)]
    _agrees(list(zip(targets, other, strict=True)), slots)  # another source, the same seed
    _agrees([(t, plan.target(seed + 1, i, source, n)) for i, t in enumerate(targets)], slots)


@pytest.mark.parametrize("slots", [2, 11, 20])
def test_a_training_universe_fills_each_slot_exactly(slots):
    """s26: slots drawn per task on their own left a 64-task training universe's common answer
    at 6% of its 5% cap (gsm_symbolic's '5' failed the hacking check). A training universe's
    slots are a keyed permutation of its indices: each holds its share to one task."""
    plan = AnswerBalance(slots, {str(i): i for i in range(slots)})
    for n in (64, 400 * slots + 3):
        counts = Counter(
            plan.target(SEEDS["train"] + 5, i, f"family:part:{n}", n) for i in range(n)
        )
        assert set(counts) == set(range(slots)), counts
        assert max(counts.values()) - min(counts.values()) <= 1, counts


def _card_counter_share(seed: int, n: int, universes: int) -> float:
    """The share of right bets of a client of yes/no universes of ``n`` tasks (task seeds
    ``seed``, ``seed + 1``, ...) that sees each task's slot after betting on it and bets on the
    slot with the most tasks left if each slot held its exact share."""
    plan = AnswerBalance(2, {"yes": 0, "no": 1})
    right = 0
    for u in range(universes):
        left = Counter({0: n - n // 2, 1: n // 2})
        for i in range(n):
            target = plan.target(seed + u, i, f"yes_no:part:{n}", n)
            right += target == max(left, key=lambda k: (left[k], -k))
            left[target] -= 1
    return right / (n * universes)


def test_a_card_counter_gains_in_training_universes_only():
    """Exact shares let a client that has seen most of a small universe's answers bet on the
    slots left over: 0.571 against 0.5 on yes/no x 64 tasks (docs/integrations.md). An
    evaluation universe's slots are drawn per task, and the same counter earns a guess."""
    assert 0.55 <= _card_counter_share(SEEDS["train"], 64, 300) <= 0.60  # 0.573
    assert 0.48 <= _card_counter_share(SEEDS["eval"], 64, 300) <= 0.52  # 0.495


@pytest.fixture
def every_slot():
    from rllm_envs.tasks import search_every_slot

    search_every_slot()
    yield
    search_every_slot(False)


def _skewed(rng):
    # 'a' most of the time, 'c' rarely: a task of c's slot takes many draws to find.
    answer = str(rng.choice(["a", "b", "c"], p=[0.8, 0.15, 0.05]))
    return {"question": f"Which letter? {int(rng.integers(10**9))}", "answer": answer}


def _draws_per_slot(source: ProceduralTasks, index: int, monkeypatch) -> dict[int, tuple]:
    """(draws made, task found) of task ``index`` with each slot forced as its target."""
    calls = []
    generate = source.generate
    seen = {}
    for slot in range(source.answer_balance().slots):
        monkeypatch.setattr(source, "answer_slot", lambda i, part="", s=slot: s)
        monkeypatch.setattr(source, "generate", lambda rng: calls.append(1) or generate(rng))
        source._recent.clear()
        calls.clear()
        task = source[index]
        seen[slot] = (len(calls), task["answer"])
    return seen


def test_a_served_search_draws_as_often_whatever_the_tasks_slot(every_slot, monkeypatch):
    """s26 att26 F1: a task whose slot's answers are rare took more draws to find, and a client
    that timed a server's first reset of each index learnt answers from the time
    (self_reference 0.32 against the best constant's 0.21). The server's search draws on
    until every slot has a draw: the count (the time) is the same for every slot."""
    source = ProceduralTasks(_skewed, name="skewed", seed=3, balance=True)
    plan = source.answer_balance()
    assert plan is not None and plan.slots == 3, plan
    for index in range(12):
        seen = _draws_per_slot(source, index, monkeypatch)
        assert len({draws for draws, _ in seen.values()}) == 1, (index, seen)
        assert {answer for _, answer in seen.values()} == {"a", "b", "c"}, seen


def test_a_served_search_finds_the_same_tasks(monkeypatch):
    from rllm_envs.tasks import search_every_slot

    source = ProceduralTasks(_skewed, name="skewed", seed=3, balance=True)
    plain = [source[i] for i in range(40)]
    source._recent.clear()
    search_every_slot()
    try:
        assert [source[i] for i in range(40)] == plain
    finally:
        search_every_slot(False)
    # Without it, the count of draws tells the slot: the leak this closes.
    counts = {draws for draws, _ in _draws_per_slot(source, 0, monkeypatch).values()}
    assert len(counts) > 1


def test_what_a_card_counter_gets_from_exact_slots_is_what_the_docs_say():
    """docs/integrations.md: exact slots let a client that sees every answer bet on the label
    with the most tasks left. Its exact expected share (dynamic programming over the counts
    left) for the universes the docs quote."""

    def expected(quota: tuple[int, ...]) -> float:
        """Expected right bets over the tasks of ``quota`` (counts per label), each task's
        label then shown: states by how many tasks are left, fewest first."""
        states, frontier = {quota}, [quota]
        while frontier:
            left = frontier.pop()
            for k, count in enumerate(left):
                rest = tuple(sorted(left[:k] + (count - 1,) + left[k + 1 :]))
                if count and rest not in states:
                    states.add(rest)
                    frontier.append(rest)
        value: dict[tuple[int, ...], float] = {}
        for left in sorted(states, key=sum):
            n = sum(left)
            value[left] = (
                0.0
                if n == 0
                else max(left) / n
                + sum(
                    count / n * value[tuple(sorted(left[:k] + (count - 1,) + left[k + 1 :]))]
                    for k, count in enumerate(left)
                    if count
                )
            )
        return value[quota]

    def share(n: int, labels: int) -> float:
        quota = tuple(sorted(n // labels + (k < n % labels) for k in range(labels)))
        return expected(quota) / n

    assert round(share(64, 2), 3) == 0.571
    assert round(share(64, 4), 3) == 0.345
    assert round(share(1000, 2), 3) == 0.519
