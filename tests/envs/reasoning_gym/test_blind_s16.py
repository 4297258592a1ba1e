"""Blind red-teams s16 (att25c, att25d): reasoning shortcuts of rllm/ReasoningGym-v0 families.

Ten families pay a policy that skips the task's reasoning far above their best constant, on
the evaluation universe too, while neither the surface classifiers nor ``check_reward_hacking``
see it (they read tokens and string statistics, not positions, adjacency or arithmetic):

* maze: the Manhattan distance from start to goal, walls ignored;
* largest_island: every ``1`` of the grid counted, connectivity ignored;
* tsumego: the empty point with the most stones next to it;
* shortest_path: all vertical moves, then all horizontal ones, obstacles ignored;
* rotten_oranges: the farthest fresh orange's distance to its nearest rotten one;
* ransom_note: whether the note's letters are a subset of the magazine's (counts ignored);
* count_primes: the prime-number theorem's estimate instead of a count;
* color_cube_rotation: the asked side's colour before the rotations (att25d);
* mahjong_puzzle: the hand without its removals (att25d);
* binary_matrix: distances 0, 1 or "2 or more" from the neighbours alone, no search (att25d).

Like ``lcm`` (s12 L4) they are committed in ``surface.KNOWN_TELLS``: refused for held-out
evaluation, and a warning when one is used for training. The shortcuts below are the red
team's policies, kept as tests: each must still beat its family's best constant by the margin
on evaluation draws, or the entry should go.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import gymnasium as gym  # noqa: E402

import rllm_envs  # noqa: E402, F401
from rllm_envs.reasoning_gym import scoring  # noqa: E402
from rllm_envs.reasoning_gym import tasks as rg_tasks  # noqa: E402

ENV_ID = "rllm/ReasoningGym-v0"


def _maze(question: str) -> str:
    grid = question.split("```")[1].strip("\n").split("\n")
    legend = re.search(r"from '(.)' \(start\) to '(.)' \(goal\)", question)
    assert legend is not None
    start, goal = legend.group(1), legend.group(2)
    where = {ch: (r, c) for r, row in enumerate(grid) for c, ch in enumerate(row)}
    if start not in where or goal not in where:
        return "0"
    (r0, c0), (r1, c1) = where[start], where[goal]
    return str(abs(r0 - r1) + abs(c0 - c1))


def _largest_island(question: str) -> str:
    return str(question.split("grid:")[1].split("An island")[0].count("1"))


def _tsumego(question: str) -> str:
    board = question.split("```")[1].strip("\n").split("\n")
    columns = board[0].split()
    rows = {int(line.split()[0]): line.split()[1:] for line in board[1:]}
    best: tuple[int, str] | None = None
    for r, cells in rows.items():
        for c, cell in enumerate(cells):
            if cell != ".":
                continue
            stones = sum(
                r + dr in rows and 0 <= c + dc < len(cells) and rows[r + dr][c + dc] != "."
                for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1))
            )
            if best is None or stones > best[0]:
                best = (stones, f"{columns[c]}{r}")
    assert best is not None
    return best[1]


def _shortest_path(question: str) -> str:
    grid = [line.split() for line in question.split("grid:")[-1].strip().split("\n") if line]
    where = {ch: (r, c) for r, row in enumerate(grid) for c, ch in enumerate(row)}
    (r0, c0), (r1, c1) = where["*"], where["#"]
    dr, dc = r1 - r0, c1 - c0
    moves = (["down"] * dr if dr > 0 else ["up"] * -dr) + (
        ["right"] * dc if dc > 0 else ["left"] * -dc
    )
    return " ".join(moves)


def _rotten_oranges(question: str) -> str:
    grid = [
        line.split()
        for line in question.split("\n")
        if line.strip() and set(line.split()) <= set("012") and len(line.split()) > 3
    ]
    cells = [(r, c, v) for r, row in enumerate(grid) for c, v in enumerate(row)]
    rotten = [(r, c) for r, c, v in cells if v == "2"]
    fresh = [(r, c) for r, c, v in cells if v == "1"]
    if not fresh:
        return "0"
    if not rotten:
        return "-1"
    return str(max(min(abs(a - x) + abs(b - y) for x, y in rotten) for a, b in fresh))


def _ransom_note(question: str) -> str:
    note = re.search(r"Ransom note: (\S*)", question)
    magazine = re.search(r"Magazine: (\S*)", question)
    assert note is not None and magazine is not None
    return str(set(note.group(1)) <= set(magazine.group(1)))


def _count_primes(question: str) -> str:
    numbers = [int(x) for x in re.findall(r"\d+", question.split("Give your final")[0])]
    low, high = sorted(numbers[:2])

    def li(x: float) -> float:  # the offset logarithmic integral, by the series of Ramanujan
        if x < 2:
            return 0.0
        ln = math.log(x)
        total = sum(
            (-1) ** (n - 1)
            * ln**n
            / (math.factorial(n) * 2 ** (n - 1))
            * sum(1 / (2 * k + 1) for k in range((n - 1) // 2 + 1))
            for n in range(1, 60)
        )
        return 0.5772156649015329 + math.log(ln) + math.sqrt(x) * total

    return str(round(li(high + 0.5) - li(max(low - 0.5, 2))))


def _color_cube_rotation(question: str) -> str:
    side = re.search(r"color of the (\w+) side", question)
    assert side is not None
    before = re.search(rf"a (\w+) {side.group(1)} side", question)
    return before.group(1) if before else "red"


def _mahjong_puzzle(question: str) -> str:
    initial = re.search(r"initial cards (\w+)", question)
    adds = re.findall(r"Add an? (\w) card", question)
    if initial is None or not adds:
        return "Pass"
    hand, new = list(initial.group(1)) + adds[:-1], adds[-1]
    if hand.count(new) >= 2:
        return "Peng"
    o, held = ord(new), set(hand)
    pairs = ((o - 2, o - 1), (o - 1, o + 1), (o + 1, o + 2))
    return "Chi" if any(chr(a) in held and chr(b) in held for a, b in pairs) else "Pass"


def _binary_matrix(question: str) -> str:
    rows = [
        line.split()
        for line in question.strip().splitlines()
        if re.fullmatch(r"[01]( [01])*", line.strip())
    ]
    n, m = len(rows), len(rows[0])

    def distance(i: int, j: int) -> str:
        if rows[i][j] == "0":
            return "0"
        near = [(i + a, j + b) for a, b in ((1, 0), (-1, 0), (0, 1), (0, -1))]
        inside = [(x, y) for x, y in near if 0 <= x < n and 0 <= y < m]
        return "1" if any(rows[x][y] == "0" for x, y in inside) else "2"

    return "\n".join(" ".join(distance(i, j) for j in range(m)) for i in range(n))


SHORTCUTS: dict[str, Callable[[str], str]] = {
    "color_cube_rotation": _color_cube_rotation,
    "mahjong_puzzle": _mahjong_puzzle,
    "binary_matrix": _binary_matrix,
    "maze": _maze,
    "largest_island": _largest_island,
    "tsumego": _tsumego,
    "shortest_path": _shortest_path,
    "rotten_oranges": _rotten_oranges,
    "ransom_note": _ransom_note,
    "count_primes": _count_primes,
}


def _shortcut_and_best_constant(family: str, n: int) -> tuple[float, float]:
    from rllm_envs.reasoning_gym.balance import BalancedTasks
    from rllm_envs.tasks import EVAL_SEED_START

    # The env's own task stream: answers balanced as rllm/ReasoningGym-v0 serves them.
    source = BalancedTasks(family, task_seed=EVAL_SEED_START)
    hit, answers = 0, {}
    for index in range(n):
        task: dict[str, Any] = source.task(index)
        hit += scoring.grade(
            f"<answer>{SHORTCUTS[family](task['question'])}</answer>", task
        ).correct
        answers[task["answer"]] = answers.get(task["answer"], 0) + 1
    return hit / n, max(answers.values()) / n


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(SHORTCUTS))
def test_the_shortcut_beats_the_best_constant_on_evaluation_draws(family):
    shortcut, constant = _shortcut_and_best_constant(family, 100)
    assert shortcut > constant + 0.05, (family, shortcut, constant)


@pytest.mark.parametrize("family", sorted(SHORTCUTS))
def test_a_family_with_a_shortcut_is_refused_for_held_out_evaluation_and_warns(family, monkeypatch):
    from rllm_envs.reasoning_gym import reasoning_gym_env
    from rllm_envs.reasoning_gym.surface import KNOWN_TELLS

    assert family in KNOWN_TELLS
    # The classifiers do not find these: the committed entry decides.
    monkeypatch.setattr(rg_tasks.ReasoningGymTasks, "surface_tell", lambda self: None)
    reason = rg_tasks.ReasoningGymTasks(family).held_out_reason()
    assert reason is not None  # for the tell, or first for another reason (mahjong_puzzle)
    reasoning_gym_env._WARNED.discard(family)
    with pytest.warns(UserWarning, match=re.escape(KNOWN_TELLS[family][:40])):
        gym.make(ENV_ID, dataset=family, size=4).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym.make(ENV_ID, dataset=family, size=4).close()


def test_a_config_or_size_names_its_tasks_apart():
    """att31e: ``difficulty``, ``config`` and ``size`` drew other questions at index 0 under
    the same task id, so pass@k merged different tasks (pass@4 0.986 stored for a true 0.5)."""
    ids, questions = set(), set()
    for kwargs in ({}, {"difficulty": 3}, {"config": {"max_value": 50}}, {"size": 50}):
        env = gym.make(ENV_ID, dataset="gcd", **kwargs)
        _, info = env.reset(options={"index": 0})
        ids.add(info["task_id"])
        questions.add(env.unwrapped.task["question"])
        env.close()
    assert len(ids) == len(questions) == 4
    assert "reasoning-gym-gcd-s0-0" in ids  # the default config keeps its ids
