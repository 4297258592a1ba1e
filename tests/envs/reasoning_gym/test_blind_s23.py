"""Blind red-team s23 (att25i): two more reasoning shortcuts of rllm/ReasoningGym-v0 families.

* family_relationships: the asked people's places in the marriage sentences (named first,
  always the husband; named second, the wife; neither, a child) and whether they are
  married to each other, looked up in a table of training draws' answers: the family tree is
  never traced;
* string_insertion: every pattern's character inserted after each match in the original
  string, the rule to skip past an insertion never applied (matches seldom overlap at the
  default string length).

Committed in ``surface.KNOWN_TELLS``: refused for held-out evaluation, a warning when used for
training. The shortcuts are written here from the red team's description; each must still
beat the best constant by the margin on evaluation draws, or the entry should go.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

from tests.envs.reasoning_gym.test_blind_s17 import assert_beats_the_best_constant  # noqa: E402

_ASKED = re.compile(r"(?:What is|What relation is|How is) (\w+) (?:to|related to) (\w+)")


def _places(question: str) -> tuple[str, ...]:
    """The asked people's places in the marriage sentences and whether they are married."""
    asked = _ASKED.search(question)
    if asked is None:
        return ("?",)

    def place(name: str) -> str:
        if re.search(rf"\b{name} is married to", question):
            return "first"
        return "second" if re.search(rf"married to {name}\.", question) else "neither"

    a, b = asked.group(1), asked.group(2)
    married = bool(re.search(rf"\b{a} is married to {b}\.|\b{b} is married to {a}\.", question))
    return (place(a), place(b), str(married))


def _family_relationships() -> Callable[[str], str]:
    from rllm_envs.reasoning_gym.balance import BalancedTasks

    table: defaultdict[tuple[str, ...], Counter[str]] = defaultdict(Counter)
    source = BalancedTasks("family_relationships", task_seed=0)  # the training universe
    for i in range(600):
        task = source.task(i)
        table[_places(task["question"])][task["answer"]] += 1

    def policy(question: str) -> str:
        seen = table.get(_places(question))
        return seen.most_common(1)[0][0] if seen else "mother"

    return policy


_INSERTIONS = {"ABCD": "A", "BCDE": "B", "CDEA": "C", "DEAB": "D", "EABC": "E"}


def _string_insertion(question: str) -> str:
    string = question.strip().split()[-1]
    out = []
    for j, char in enumerate(string):
        out.append(char)
        inserted = _INSERTIONS.get(string[max(0, j - 3) : j + 1])
        if j >= 3 and inserted is not None:
            out.append(inserted)
    return "".join(out)


@pytest.mark.slow
def test_family_relationships_places_beat_the_best_constant_on_evaluation_draws():
    assert_beats_the_best_constant("family_relationships", _family_relationships())


@pytest.mark.slow
def test_string_insertion_without_skipping_beats_the_best_constant_on_evaluation_draws():
    assert_beats_the_best_constant("string_insertion", _string_insertion)


@pytest.mark.parametrize("family", ["family_relationships", "string_insertion"])
def test_a_family_with_a_shortcut_is_refused_for_held_out_evaluation(family, monkeypatch):
    from rllm_envs.reasoning_gym import tasks as rg_tasks
    from rllm_envs.reasoning_gym.surface import KNOWN_TELLS

    assert family in KNOWN_TELLS
    monkeypatch.setattr(rg_tasks.ReasoningGymTasks, "surface_tell", lambda self: None)
    assert rg_tasks.ReasoningGymTasks(family).held_out_reason() is not None
