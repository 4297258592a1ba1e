r"""Tic-tac-toe rules, a perfect-play solver and a tolerant move parser (no Gym imports).

A board is a 9-character string, row by row from the top left: ``"X"``, ``"O"`` or ``"."``
(empty). Cells are numbered 1-9 in the same order, as players see them::

     1 | 2 | 3
    ---+---+---
     4 | 5 | 6
    ---+---+---
     7 | 8 | 9

``X`` always moves first, so the side to move follows from the counts of marks.
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from rllm_envs.text import answer_text, tag_matches

__all__ = [
    "EMPTY",
    "EMPTY_BOARD",
    "LINES",
    "winner",
    "is_full",
    "to_move",
    "legal_moves",
    "play",
    "validate_board",
    "game_value",
    "best_moves",
    "oracle_move",
    "heuristic_move",
    "random_opening",
    "parse_move",
    "render_board",
]

EMPTY = "."
EMPTY_BOARD = EMPTY * 9
#: The eight winning lines (0-based cell indices).
LINES: tuple[tuple[int, int, int], ...] = (
    (0, 1, 2),
    (3, 4, 5),
    (6, 7, 8),
    (0, 3, 6),
    (1, 4, 7),
    (2, 5, 8),
    (0, 4, 8),
    (2, 4, 6),
)


def winner(board: str) -> str | None:
    """``"X"`` or ``"O"`` if that mark has three in a row, else ``None``."""
    for a, b, c in LINES:
        if board[a] != EMPTY and board[a] == board[b] == board[c]:
            return board[a]
    return None


def is_full(board: str) -> bool:
    """Whether no empty cell is left."""
    return EMPTY not in board


def to_move(board: str) -> str:
    """The mark whose turn it is (``X`` moves first)."""
    return "X" if board.count("X") == board.count("O") else "O"


def legal_moves(board: str) -> list[int]:
    """The empty cells, 1-based, in increasing order (none once the game is over)."""
    if winner(board) is not None:
        return []
    return [i + 1 for i, c in enumerate(board) if c == EMPTY]


def play(board: str, cell: int) -> str:
    """The board after the side to move marks ``cell`` (1-based; must be legal)."""
    if cell not in legal_moves(board):
        raise ValueError(f"Cell {cell} is not a legal move on board {board!r}.")
    i = cell - 1
    return board[:i] + to_move(board) + board[i + 1 :]


def validate_board(board: object) -> str:
    """Return ``board`` if it is a reachable position, else raise :class:`ValueError`."""
    if not isinstance(board, str) or len(board) != 9 or set(board) - {"X", "O", EMPTY}:
        raise ValueError(f"Expects a board of 9 characters from 'X', 'O', '.', actual: {board!r}.")
    x, o = board.count("X"), board.count("O")
    if x - o not in (0, 1):
        raise ValueError(f"Expects X to have as many marks as O or one more, actual: {board!r}.")
    wins = {m for m in "XO" if any(board[a] == board[b] == board[c] == m for a, b, c in LINES)}
    if len(wins) > 1 or ("X" in wins and x == o) or ("O" in wins and x != o):
        raise ValueError(f"Board {board!r} cannot arise in a game.")
    return board


@cache
def _negamax(board: str) -> int:
    """Value for the side to move: > 0 wins, < 0 loses, 0 draws; faster wins score higher."""
    if winner(board) is not None:
        # The previous mover has won; losing earlier (more empty cells) is worse.
        return -(1 + board.count(EMPTY))
    if is_full(board):
        return 0
    return max(-_negamax(play(board, cell)) for cell in legal_moves(board))


def game_value(board: str) -> int:
    """The perfect-play result for the side to move: ``1`` win, ``0`` draw, ``-1`` loss."""
    return int(np.sign(_negamax(board)))


def best_moves(board: str) -> list[int]:
    """Every move of perfect play: it keeps the best result, winning fastest or losing slowest."""
    moves = legal_moves(board)
    if not moves:
        return []
    scores = {cell: -_negamax(play(board, cell)) for cell in moves}
    top = max(scores.values())
    return [cell for cell in moves if scores[cell] == top]


def oracle_move(board: str) -> int | None:
    """The perfect-play move that sets the most traps (opponent replies that lose value).

    Among :func:`best_moves`, prefer the one after which the most opponent replies are
    mistakes, so the oracle beats imperfect players as often as it can; ties go to the lowest
    cell, so the choice is deterministic.
    """
    moves = best_moves(board)
    if not moves:
        return None

    def traps(cell: int) -> int:
        after = play(board, cell)
        replies = legal_moves(after)
        if not replies:
            return 0
        best = set(best_moves(after))
        value = game_value(after)
        return sum(1 for r in replies if r not in best and -game_value(play(after, r)) < value)

    return max(moves, key=lambda cell: (traps(cell), -cell))


def heuristic_move(board: str, rng: np.random.Generator) -> int | None:
    """A rule-of-thumb move: win, else block, else centre, else a corner, else any (random)."""
    moves = legal_moves(board)
    if not moves:
        return None
    me = to_move(board)
    them = "O" if me == "X" else "X"
    for mark in (me, them):  # complete my line first, else block theirs
        for a, b, c in LINES:
            line = [board[a], board[b], board[c]]
            if line.count(mark) == 2 and line.count(EMPTY) == 1:
                return (a, b, c)[line.index(EMPTY)] + 1
    if 5 in moves:
        return 5
    corners = [c for c in (1, 3, 7, 9) if c in moves]
    pool = corners or moves
    return int(pool[int(rng.integers(len(pool)))])


def random_opening(rng: np.random.Generator, plies: int) -> str:
    """A position after ``plies`` uniformly random moves (``plies`` <= 4 never ends a game)."""
    board = EMPTY_BOARD
    for _ in range(plies):
        moves = legal_moves(board)
        board = play(board, int(moves[int(rng.integers(len(moves)))]))
    return board


# ------------------------------------------------------------------------------- parsing

# Explicit answer containers; the last one wins, and its content must hold the move.
# ``<move>`` and ``<answer>`` blocks are read by :func:`tag_matches` (linear; the regex
# ``<move>(.*?)</move>`` was quadratic in the number of unclosed opening tags).
_CONTAINER_TAGS = ("move", "answer")
_CONTAINERS = (
    re.compile(r"\\boxed\{([^{}]*)\}"),
    re.compile(r"(?:^|\n)\s*\**\s*(?:final\s+)?(?:move|answer)\s*\**\s*[:=]\s*(.+)", re.IGNORECASE),
)
# The column's digit ends the reference: "column 31" or "column 3.5" names no column 3.
_ROW_COL = re.compile(
    r"row\s*([1-3])\s*[,;/ ]*\s*(?:and\s+)?(?:col(?:umn)?)\s*([1-3])(?![0-9A-Za-z]|[.,][0-9])",
    re.IGNORECASE,
)
_PAIR = re.compile(r"\(\s*([1-3])\s*,\s*([1-3])\s*\)")
_COORD = re.compile(r"(?<![A-Za-z0-9])([abcABC])([1-3])(?![0-9A-Za-z])")
# A lone digit: not part of a number, a word ("5th", "3x3") or a decimal.
_DIGIT = re.compile(r"(?<![0-9.,A-Za-z])([1-9])(?![0-9A-Za-z]|[.,][0-9])")
# A row or column number outside a full reference ("row 2, column 31") names no cell.
_AXIS = re.compile(r"\b(?:row|col(?:umn)?)\s*[0-9]+", re.IGNORECASE)


def _cell_refs(text: str) -> list[tuple[int, int, int]]:
    """Every cell reference in ``text`` as ``(start, end, cell)``; pairs hide their digits."""
    refs: list[tuple[int, int, int]] = []
    for pattern, col_first in ((_ROW_COL, False), (_PAIR, False), (_COORD, True)):
        for m in pattern.finditer(text):
            if col_first:
                col, row = "abc".index(m.group(1).lower()) + 1, int(m.group(2))
            else:
                row, col = int(m.group(1)), int(m.group(2))
            refs.append((m.start(), m.end(), (row - 1) * 3 + col))
    covered = [(s, e) for s, e, _ in refs] + [m.span() for m in _AXIS.finditer(text)]
    for m in _DIGIT.finditer(text):
        if not any(s <= m.start() < e for s, e in covered):
            refs.append((m.start(), m.end(), int(m.group(1))))
    return refs


def parse_move(text: str) -> tuple[int | None, str | None]:
    r"""Read a move (1-based cell) from a model reply; never raises.

    Accepted: a cell number ``"5"``; a coordinate ``"b2"`` (column letter a-c, row 1-3);
    ``"row 2, column 3"``; ``"(2, 3)"`` (row, column); any of these inside ``<move>...</move>``,
    ``<answer>...</answer>``, ``\boxed{...}`` or after ``Move:`` / ``Answer:``; or a reasoning
    text whose last cell reference is the move. Only the answer part is read
    (:func:`rllm_envs.text.answer_text`).
    When a container is present, the last one must hold the move.

    Returns:
        ``(cell, None)``, or ``(None, reason)`` when no move can be read.
    """
    body = answer_text(text)
    containers: list[tuple[int, str]] = []
    for tag in _CONTAINER_TAGS:
        containers += tag_matches(body, tag)
    for pattern in _CONTAINERS:
        containers += [(m.start(), m.group(1)) for m in pattern.finditer(body)]
    if containers:
        content = max(containers, key=lambda c: c[0])[1]
        refs = _cell_refs(content)
        if not refs:
            return None, f"The answer {content.strip()[:60]!r} names no cell 1-9."
        return max(refs, key=lambda r: r[1])[2], None
    refs = _cell_refs(body)
    if not refs:
        return None, "No move found: reply with a cell number 1-9, e.g. <move>5</move>."
    return max(refs, key=lambda r: r[1])[2], None


def render_board(board: str) -> str:
    """The board as text: marks where played, cell numbers where empty."""
    cells = [c if c != EMPTY else str(i + 1) for i, c in enumerate(board)]
    rows = [" " + " | ".join(cells[r * 3 : r * 3 + 3]) for r in range(3)]
    return "\n---+---+---\n".join(rows)
