"""Combinatorics: no template's answer is fixed by a surface feature of its question.

The letter-arrangement questions once drew from a handful of letter-count patterns per
difficulty, so a table from the word's length to the answer, learned on the training
universe, solved most of the evaluation universe without counting a letter.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest
import sympy

from rllm_envs.math import procedural_tasks
from rllm_envs.math.generators import DIFFICULTIES, family_task
from rllm_envs.tasks import EVAL_TASK_SEED, task_rng

_WORD = re.compile(r"How many distinct arrangements of the letters of ([A-Z]+) are there\?")


def _template(problem: str) -> str:
    if "committee" in problem:
        return "committee"
    if "prizes" in problem:
        return "prizes"
    assert _WORD.fullmatch(problem), problem
    return "arrangements"


def _top_shares(difficulty: int, draws: int) -> dict[str, float]:
    answers: dict[str, Counter[str]] = defaultdict(Counter)
    for i in range(draws):
        task = family_task(task_rng(11, i), family="combinatorics", difficulty=difficulty)
        answers[_template(task["problem"])][task["answer"]] += 1
    assert set(answers) == {"committee", "prizes", "arrangements"}
    return {t: c.most_common(1)[0][1] / c.total() for t, c in answers.items()}


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_no_combinatorics_template_has_a_common_answer(difficulty):
    # About 2000 draws per template.
    shares = _top_shares(difficulty, 6000)
    assert max(shares.values()) <= 0.05, shares


def _arrangements(seed: int, difficulty: int, count: int) -> list[tuple[str, str]]:
    source = procedural_tasks(seed=seed, difficulty=difficulty, families=["combinatorics"])
    found: list[tuple[str, str]] = []
    i = 0
    while len(found) < count:
        task = source[i]
        i += 1
        word = _WORD.fullmatch(task["problem"])
        if word is not None:
            found.append((word.group(1), task["answer"]))
    return found


@pytest.mark.parametrize(
    "difficulty",
    [1, pytest.param(2, marks=pytest.mark.slow), pytest.param(3, marks=pytest.mark.slow)],
)
def test_the_word_length_does_not_give_the_arrangements_away(difficulty):
    # The attack: the most common training answer for each word length, played on the
    # evaluation universe. Four lengths share dozens of answers, so it stays near the floor
    # of a few lengths over many answers (0.07 at difficulty 1) instead of most questions.
    by_length: dict[int, Counter[str]] = defaultdict(Counter)
    for word, answer in _arrangements(0, difficulty, 400):
        by_length[len(word)][answer] += 1
    table = {length: c.most_common(1)[0][0] for length, c in by_length.items()}
    held = _arrangements(EVAL_TASK_SEED, difficulty, 400)
    solved = sum(table.get(len(word)) == answer for word, answer in held) / len(held)
    assert solved <= 0.12, (solved, {n: c.most_common(3) for n, c in by_length.items()})
    assert all(len(c) >= 8 for c in by_length.values()), by_length


def test_arrangement_words_vary_their_letter_counts_at_each_length():
    patterns: dict[int, set[tuple[int, ...]]] = defaultdict(set)
    for word, answer in _arrangements(0, 1, 300):
        counts = tuple(sorted(Counter(word).values(), reverse=True))
        patterns[len(word)].add(counts)
        expected = sympy.factorial(len(word))
        for c in counts:
            expected //= sympy.factorial(c)
        assert answer == str(expected), word
    assert all(len(p) >= 8 for p in patterns.values()), patterns
