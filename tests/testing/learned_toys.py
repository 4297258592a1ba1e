"""Toy envs a learned degenerate policy hacks (:mod:`rllm_envs.testing.learned`).

Module-level classes (not test-local) so they pickle like a user's env would.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import numpy as np

from rllm_envs.core import TextEnv, Transition
from rllm_envs.tasks import ProceduralTasks, Task
from rllm_envs.text import tag_contents


def _board(rng: np.random.Generator, adjacent: bool) -> str:
    """12 cells; two live cells side by side exactly when ``adjacent``."""
    while True:
        cells = [int(c) for c in rng.integers(0, 2, size=12)]
        if any(a and b for a, b in zip(cells, cells[1:], strict=False)) == adjacent:
            return " ".join(map(str, cells))


def _halting_task(rng: np.random.Generator) -> Task:
    halts = bool(rng.integers(2))
    board = _board(rng, adjacent=not halts)
    return {
        "question": f"Will this one-row board of Life halt? Answer yes or no.\n{board}",
        "answer": "yes" if halts else "no",
    }


def _shape_task(rng: np.random.Generator) -> Task:
    a, b, c = (int(x) for x in rng.integers(2, 30, size=3))
    return {
        "question": f"Using the numbers [{a}, {b}, {c}], make {a * b - c}. Use each once.",
        "numbers": [a, b, c],
        "target": a * b - c,
        "answer": f"{a} * {b} - {c}",
    }


def _skewed_task(rng: np.random.Generator) -> Task:
    common = rng.random() < 0.3
    answer = 7 if common else int(rng.integers(100, 10**6))
    return {
        "question": f"Puzzle {int(rng.integers(10**9))}: which number am I thinking of?",
        "answer": str(answer),
    }


def _region_task(rng: np.random.Generator) -> Task:
    """A board whose ``#`` cells form one connected region (a random walk)."""
    cells = {(0, 0)}
    r = c = 0
    for _ in range(int(rng.integers(2, 14))):
        dr, dc = ((0, 1), (1, 0), (0, -1), (-1, 0))[int(rng.integers(4))]
        r, c = min(max(r + dr, 0), 4), min(max(c + dc, 0), 4)
        cells.add((r, c))
    board = "\n".join(" ".join("#" if (i, j) in cells else "." for j in range(5)) for i in range(5))
    return {
        "question": f"{board}\nHow many cells has the largest connected region of # cells?",
        "answer": str(len(cells)),
    }


def _maze_task(rng: np.random.Generator) -> Task:
    """A 7x7 maze of ``#`` walls between two letters (new letters each task): the fewest steps
    between them. Its walls block no straight path in most draws, so the plain distance is
    the answer there."""
    from collections import deque

    start, goal = (chr(c) for c in rng.choice(np.arange(65, 91), size=2, replace=False))
    while True:
        grid = [["#" if rng.random() < 0.12 else "." for _ in range(7)] for _ in range(7)]
        (r0, c0), (r1, c1) = (divmod(int(p), 7) for p in rng.choice(49, size=2, replace=False))
        grid[r0][c0], grid[r1][c1] = start, goal
        steps = {(r0, c0): 0}
        queue = deque([(r0, c0)])
        while queue:
            r, c = queue.popleft()
            for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if 0 <= nr < 7 and 0 <= nc < 7 and grid[nr][nc] != "#" and (nr, nc) not in steps:
                    steps[nr, nc] = steps[r, c] + 1
                    queue.append((nr, nc))
        if (r1, c1) in steps:
            break
    board = "\n".join("".join(row) for row in grid)
    return {
        "question": f"Walk from '{start}' to '{goal}' ('#' = wall):\n{board}\nHow many steps?",
        "answer": str(steps[r1, c1]),
    }


class _AnswerEnv(TextEnv):
    """A one-turn env that reads the last ``<answer>``.

    ## Description
    Test env.

    ## Observation
    The question and the answer format.

    ## Action
    ``<answer>...</answer>``.

    ## Reward
    ``correct`` (weight 1).

    ## Episode End
    After one answer.

    ## Information
    The common keys of :mod:`rllm_envs.core`.

    ## Arguments
    ``task_seed``.

    ## Version History
    - v0: test only.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0}
    generate = staticmethod(_halting_task)

    def __init__(self, *, task_seed: int = 0) -> None:
        tasks = ProceduralTasks(partial(type(self).generate), name="learned-toy", seed=task_seed)
        super().__init__(tasks=tasks, max_turns=1)

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        return f"{task['question']}\n\nGive the answer in <answer></answer> tags.", {}

    def right(self, answer: str) -> bool:
        assert self.task is not None
        return answer.strip().lower() == str(self.task["answer"])

    def _act(self, action: str) -> Transition:
        found = tag_contents(action, "answer")
        correct = bool(found) and self.right(found[-1])
        return Transition(
            "Correct." if correct else "Wrong.",
            {"correct": float(correct)},
            terminated=True,
            correct=correct,
            invalid_reason=None if found else "no answer",
        )

    def oracle_action(self) -> str:
        assert self.task is not None
        return f"<answer>{self.task['answer']}</answer>"


class SurfaceTellEnv(_AnswerEnv):
    """Hackable: the answer is ``no`` exactly when the board shows ``1 1`` (balanced answers,
    so every constant and the uniform guess earn a half)."""


class FixedShapeEnv(_AnswerEnv):
    """Hackable: every task is solved by ``a * b - c`` of its numbers in order."""

    generate = staticmethod(_shape_task)

    def right(self, answer: str) -> bool:
        assert self.task is not None
        numbers = sorted(
            int(t) for t in answer.replace("*", " ").replace("-", " ").split() if t.isdigit()
        )
        if numbers != sorted(self.task["numbers"]) or not set(answer) <= set("0123456789 +-*()"):
            return False
        try:
            return bool(eval(answer, {"__builtins__": {}}) == self.task["target"])  # noqa: S307
        except Exception:  # noqa: BLE001 - a malformed expression is wrong
            return False


class SkewedAnswerEnv(_AnswerEnv):
    """Nothing on the surface: 30% of the answers are ``7``, the rest rarely repeat. A
    classifier can only learn the constant ``7`` (which the constant-answer policies judge)."""

    generate = staticmethod(_skewed_task)


class CountTellEnv(_AnswerEnv):
    """Hackable: its boards hold one region, so counting every ``#`` answers without any
    search for regions (a classifier of the surface sees that ``#`` occurs, not how often)."""

    generate = staticmethod(_region_task)


class GridTellEnv(_AnswerEnv):
    """Hackable: a maze whose walls seldom matter, so the distance between its start and goal
    letters, walls ignored, answers most tasks without a search (the letters change, so no
    token count or surface word gives it)."""

    generate = staticmethod(_maze_task)
