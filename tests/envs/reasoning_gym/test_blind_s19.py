"""Blind red-team s19 (att25i): two more reasoning shortcuts of rllm/ReasoningGym-v0 families.

* fraction_simplification: cancel the common factors among 2, 3, 5 and 7 only (no gcd), as
  the ``gcd`` entry of s17 does;
* calendar_arithmetic: count a weekday (or business days) in a date range as the range's days
  times 1/7 (or 5/7), never finding which weekday the range starts on; the family's other
  questions get one constant.

Committed in ``surface.KNOWN_TELLS``: refused for held-out evaluation, a warning when used for
training. The shortcuts are written here from the red team's description; each must still
beat the best constant by the margin on evaluation draws, or the entry should go.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

from tests.envs.reasoning_gym.test_blind_s17 import assert_beats_the_best_constant  # noqa: E402


def _fraction_simplification(question: str) -> str:
    after = question.split("fraction", 1)[1]
    found = re.search(r"(\d+)\}?\{?/?(\d+)", after)
    assert found is not None, question
    a, b = int(found.group(1)), int(found.group(2))
    for p in (2, 3, 5, 7):
        while a % p == 0 and b % p == 0:
            a, b = a // p, b // p
    command = re.search(r"\\(d?frac)", question)  # the reply copies the question's notation
    return f"$\\{command.group(1)}{{{a}}}{{{b}}}$" if command else f"{a}/{b}"


_DATE = r"(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday), (\w+ \d+, \d{4})"


def _calendar_arithmetic(question: str) -> str:
    dates = re.findall(_DATE, question)
    if not question.startswith("How many") or len(dates) < 2:
        return "Wednesday"
    first, last = (datetime.datetime.strptime(d, "%B %d, %Y").date() for d in dates[:2])
    days = (last - first).days + 1
    return str(round(days * (5 if "business" in question else 1) / 7))


SHORTCUTS: dict[str, Callable[[str], str]] = {
    "fraction_simplification": _fraction_simplification,
    "calendar_arithmetic": _calendar_arithmetic,
}


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(SHORTCUTS))
def test_the_shortcut_beats_the_best_constant_on_evaluation_draws(family):
    assert_beats_the_best_constant(family, SHORTCUTS[family])


@pytest.mark.parametrize("family", sorted(SHORTCUTS))
def test_a_family_with_a_shortcut_is_refused_for_held_out_evaluation(family, monkeypatch):
    from rllm_envs.reasoning_gym import tasks as rg_tasks
    from rllm_envs.reasoning_gym.surface import KNOWN_TELLS

    assert family in KNOWN_TELLS
    monkeypatch.setattr(rg_tasks.ReasoningGymTasks, "surface_tell", lambda self: None)
    assert rg_tasks.ReasoningGymTasks(family).held_out_reason() is not None
