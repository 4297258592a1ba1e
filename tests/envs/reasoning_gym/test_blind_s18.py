"""Blind red-team s18 (att25h): two more reasoning shortcuts of rllm/ReasoningGym-v0 families.

* mini_sudoku: fill each blank whose row and column leave one digit, never reading the 2x2
  boxes, then each row's missing digits in order;
* n_queens: pair the rows without a queen with the columns without one, in order, never
  reading the diagonals.

Committed in ``surface.KNOWN_TELLS``: refused for held-out evaluation, a warning when used for
training. The shortcuts are written here from the red team's description; each must still
beat the best constant by the margin on evaluation draws, or the entry should go.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

from tests.envs.reasoning_gym.test_blind_s17 import assert_beats_the_best_constant  # noqa: E402


def _board(question: str, cell: str) -> list[list[str]]:
    """The question's last grid: rows of space-separated cells matching ``cell``."""
    rows = [line.split() for line in question.splitlines()]
    grid = [r for r in rows if r and all(re.fullmatch(cell, c) for c in r)]
    size = len(grid[-1])
    return [r for r in grid if len(r) == size][-size:]


def _mini_sudoku(question: str) -> str:
    grid = _board(question, r"[1-4_]")
    digits = {"1", "2", "3", "4"}
    changed = True
    while changed:
        changed = False
        for row in grid:
            for j, value in enumerate(row):
                if value == "_":
                    left = digits - set(row) - {r[j] for r in grid}
                    if len(left) == 1:
                        row[j] = left.pop()
                        changed = True
    for row in grid:
        missing = iter(sorted(digits - set(row)))
        row[:] = [next(missing) if v == "_" else v for v in row]
    return "\n".join(" ".join(row) for row in grid)


def _n_queens(question: str) -> str:
    grid = _board(question, r"[_Q]")
    rows = [i for i, row in enumerate(grid) if "Q" not in row]
    cols = [j for j in range(len(grid)) if all(row[j] != "Q" for row in grid)]
    for i, j in zip(rows, cols, strict=False):
        grid[i][j] = "Q"
    return "\n".join(" ".join(row) for row in grid)


SHORTCUTS: dict[str, Callable[[str], str]] = {"mini_sudoku": _mini_sudoku, "n_queens": _n_queens}


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
