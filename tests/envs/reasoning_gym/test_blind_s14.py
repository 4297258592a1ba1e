"""Blind red-team s14: move puzzles of rllm/ReasoningGym-v0.

* rush_hour paid a random walk: reasoning-gym reads every ``X+n`` of the answer and skips a
  blocked step silently, so about 4,000 characters of random moves over the board's letters,
  ending ``A+5``, solved 20 of 150 boards (the constant ``A+5``: 0 of 150). Moves are now
  replayed strictly: one that cannot be made in full makes the answer wrong.
* sokoban paid a random walk of ``LRUD`` too (1 to 3 of 100 boards), for the same reason: its
  moves are now replayed strictly as well.
* rush_hour and rubiks_cube hung on short answers: a move's cells (``A+30000000``: 9 s) and a
  move's repeat count (``U100000``: 11 s) were played one at a time, unbounded.
"""

from __future__ import annotations

import copy
import random
import re
from collections import deque

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import gymnasium as gym  # noqa: E402

import rllm_envs  # noqa: E402, F401
from rllm_envs.reasoning_gym.safe_scoring import (  # noqa: E402
    CUBE_MAX_TURNS,
    RUSH_MAX_MOVES,
    safe_scorer,
)

ENV_ID = "rllm/ReasoningGym-v0"


def _rush_env():
    return gym.make(ENV_ID, dataset="rush_hour", size=64, config={"max_moves": 6})


def _letters(observation: str) -> list[str]:
    rows = re.findall(r"^[.A-Zx]{6}$", observation, flags=re.M)
    return sorted({c for row in rows for c in row if c.isupper()})


def _random_walk(observation: str, rng: random.Random) -> str:
    """The red-team's policy: random moves of the letters shown, then the red car out."""
    letters = _letters(observation)
    moves = [f"{rng.choice(letters)}{rng.choice('+-')}5" for _ in range(RUSH_MAX_MOVES - 1)]
    return "<answer>" + " ".join([*moves, "A+5"]) + "</answer>"


def _solve(board_config: str) -> str:
    """A shortest solution by breadth-first search over reasoning-gym's own board."""
    from reasoning_gym.games.rush_hour import Board

    start = Board(board_config)
    seen = {tuple(p.position for p in start._pieces)}
    queue = deque([(start, [])])
    while queue:
        board, path = queue.popleft()
        if board.solved:
            return " ".join(path)
        for index, piece in enumerate(board._pieces):
            if piece.fixed:
                continue
            for cells in (-4, -3, -2, -1, 1, 2, 3, 4):
                after = copy.deepcopy(board)
                moved = after._pieces[index]
                letter = chr(ord("A") + index)
                after.move(letter, cells)
                if abs(moved.position - piece.position) != abs(cells) * piece.stride:
                    continue
                key = tuple(p.position for p in after._pieces)
                if key not in seen:
                    seen.add(key)
                    queue.append(
                        (after, [*path, f"{letter}{'+' if cells > 0 else '-'}{abs(cells)}"])
                    )
    raise AssertionError(f"no solution of {board_config}")


def test_a_random_walk_of_moves_solves_no_rush_hour_board():
    env = _rush_env()
    rng = random.Random(0)
    paid = 0
    for seed in range(60):
        observation, _ = env.reset(seed=seed)
        _, reward, *_ = env.step(_random_walk(observation, rng))
        paid += reward > 0
    assert paid == 0


def test_a_solution_pays_and_the_same_with_a_blocked_move_does_not():
    env = _rush_env()
    for seed in range(6):
        env.reset(seed=seed)
        task = env.unwrapped.task
        solution = _solve(task["metadata"]["board_config"])
        _, reward, *_ = env.step(f"<answer>{solution}</answer>")
        assert reward == 1.0, (seed, solution)
        score = safe_scorer("rush_hour")
        entry = {"metadata": task["metadata"]}
        assert score(solution.replace(" ", ", "), entry) == 1.0  # commas between moves
        assert score(f"Move {solution}", entry) == 0.0  # moves only
        # A move blocked on the way first: reasoning-gym skipped it and paid; it is not made.
        blocked = _blocked_move(task["metadata"]["board_config"])
        assert reasoning_gym_scorer(f"{blocked} {solution}", entry) == 1.0
        assert score(f"{blocked} {solution}", entry) == 0.0


def reasoning_gym_scorer(answer: str, entry: dict) -> float:
    from reasoning_gym.factory import get_score_answer_fn

    return float(get_score_answer_fn("rush_hour")(answer, entry))


def _blocked_move(board_config: str) -> str:
    """A move of a car that reasoning-gym's board cannot make in full from the start."""
    from reasoning_gym.games.rush_hour import Board

    start = Board(board_config)
    for index, piece in enumerate(start._pieces):
        for cells in (4, -4):
            after = copy.deepcopy(start)
            letter = chr(ord("A") + index)
            after.move(letter, cells)
            if not piece.fixed and after._pieces[index].position == piece.position:
                return f"{letter}{'+' if cells > 0 else '-'}4"  # not a cell made
    raise AssertionError(f"every car of {board_config} moves")


def test_rush_hour_moves_are_bounded_before_any_is_played(monkeypatch):
    from reasoning_gym.games.rush_hour import Board

    played = []
    original = Board.move

    def move(self, target, steps):
        played.append(steps)
        return original(self, target, steps)

    monkeypatch.setattr(Board, "move", move)
    env = _rush_env()
    env.reset(seed=0)
    for answer in ("A+3000000", "B-99", "A+1 " * (RUSH_MAX_MOVES + 1)):
        _, reward, *_ = env.step(f"<answer>{answer.strip()}</answer>")
        assert reward == 0.0
        env.reset(seed=0)
    assert played == []  # refused before a move is made


def _inverse(moves: str) -> str:
    inverted = []
    for move in reversed(moves.split()):
        inverted.append(move[:-1] if move.endswith("'") else move + "'")
    return " ".join(inverted)


def test_a_rubiks_cube_solution_pays_and_huge_repeat_counts_are_not_played(monkeypatch):
    env = gym.make(ENV_ID, dataset="rubiks_cube", size=16)
    env.reset(seed=1)
    solution = _inverse(env.unwrapped.task["metadata"]["scramble_moves"])
    _, reward, *_ = env.step(f"<answer>{solution}</answer>")
    assert reward == 1.0

    from magiccube.cube import Cube

    turned = []
    original = Cube.rotate

    def rotate(self, movements):
        turned.append(len(str(movements).split()))
        return original(self, movements)

    monkeypatch.setattr(Cube, "rotate", rotate)
    for answer in (f"U{CUBE_MAX_TURNS + 1}", "U" * 3 + "9" * 40, f"{solution} " + "U4 " * 300):
        env.reset(seed=1)
        turned.clear()
        _, reward, *_ = env.step(f"<answer>{answer}</answer>")
        assert reward == 0.0
        assert turned == [], answer  # refused before the cube is turned


@pytest.mark.slow  # 8 s: a search of every board
def test_a_random_walk_solves_no_sokoban_board_and_the_solutions_still_pay():
    from reasoning_gym.factory import get_score_answer_fn

    env = gym.make(ENV_ID, dataset="sokoban", size=64)
    ours, theirs = safe_scorer("sokoban"), get_score_answer_fn("sokoban")
    rng = random.Random(0)
    walks_paid = {"ours": 0, "reasoning-gym": 0}
    for seed in range(60):
        env.reset(seed=seed)
        task = env.unwrapped.task
        entry = {"metadata": task["metadata"], "answer": task["answer"]}
        walk = "".join(rng.choice("LRUD") for _ in range(3990))
        walks_paid["ours"] += ours(walk, entry) > 0
        walks_paid["reasoning-gym"] += theirs(walk, entry) > 0
        _, reward, *_ = env.step(f"<answer>{task['answer']}</answer>")
        assert reward == 1.0, seed
        assert ours(" ".join(task["answer"]), entry) == 1.0  # spaces between moves
        assert ours(f"x{task['answer']}", entry) == 0.0  # moves only
    assert walks_paid["reasoning-gym"] > 0  # the walk the red team measured (1 to 3 in 100)
    assert walks_paid["ours"] == 0
