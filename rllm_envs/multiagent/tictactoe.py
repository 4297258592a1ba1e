"""``rllm/TicTacToe-v0``: two language models play tic-tac-toe against each other, in text."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import numpy as np

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.multiagent.base import AgentOutcome, MultiAgentTextEnv
from rllm_envs.multiagent.tictactoe_rules import (
    game_value,
    heuristic_move,
    is_full,
    legal_moves,
    oracle_move,
    parse_move,
    play,
    random_opening,
    render_board,
    to_move,
    validate_board,
    winner,
)
from rllm_envs.tasks import ProceduralTasks, Task

__all__ = ["TicTacToeEnv", "generate_opening", "env", "parallel_env"]

AGENTS = ("player_0", "player_1")


def generate_opening(rng: np.random.Generator, *, opening_plies: int) -> Task:
    """A task: a position after ``opening_plies`` random moves, and which agent plays X."""
    board = random_opening(rng, opening_plies)
    return {"board": board, "x_agent": AGENTS[int(rng.integers(2))]}


class TicTacToeEnv(MultiAgentTextEnv):
    r"""Two agents play tic-tac-toe, each seeing the board as text and replying with a move.

    ## Description
    A competitive two-player game (PettingZoo ``ParallelEnv``; the AEC form comes from
    ``rllm_envs.make_aec``). Agents ``player_0`` and ``player_1`` take turns marking cells of a
    3x3 grid; three of one's marks in a row, column or diagonal wins, a full board without one
    is a draw. Each task is a seed-determined opening: ``opening_plies`` random moves already
    played (so openings differ between tasks) and which agent plays ``X`` (``X`` moves first
    from an empty board; the side to move follows from the counts of marks). Every move goes
    through the legal-move checker (:func:`~rllm_envs.multiagent.tictactoe_rules.legal_moves`).

    Roles: ``x`` (the agent playing ``X``) and ``o`` (the agent playing ``O``); which agent has
    which mark is part of the task (``info["role"]``, ``info["mark"]``). Only the agent to move
    acts at a step (``info["acting"]``); the other's action is ignored.

    ## Observation
    Per agent, a self-contained text: the rules, the agent's mark, the board (cell numbers 1-9
    shown in empty cells), the opponent's last move, whose turn it is, the legal moves and the
    answer format. The waiting agent is told to wait; at the end both see the final board and
    the result.

    ## Action
    Free text from the agent to move. The parser
    (:func:`~rllm_envs.multiagent.tictactoe_rules.parse_move`) accepts a cell number ``"5"``,
    ``"<move>5</move>"``, ``"\boxed{5}"``, ``"Move: 5"``, a coordinate ``"b2"`` (column a-c,
    row 1-3), ``"row 2, column 2"``, ``"(2, 2)"`` or a reasoning text whose last cell reference
    is the move. Only the answer part is read (:mod:`rllm_envs.text`: text before the last
    ``</think>`` is ignored; a reply cut inside an unclosed ``<think>`` has no move).

    ## Reward
    Per agent, the weighted sum of components (``reward_weights``), given at the step the game
    ends: ``win`` = 1 for the winner (weight 1.0), ``loss`` = 1 for the loser (weight -1.0),
    ``draw`` = 1 for both on a draw (weight 0.0, log only; set it to e.g. 0.5 to reward draws)
    and ``illegal_move`` = 1 for an agent whose reply is not a legal move (weight -1.0).
    **Illegal move** (PettingZoo semantics, as its ``TerminateIllegalWrapper``): a reply that
    is unreadable, names an occupied cell or no cell at all ends the game at once; the offender
    gets the ``illegal_move`` penalty and the opponent 0 (not a win). The weights must make an
    illegal move cost at least as much as a loss and a draw (``InvalidEnvConfig`` otherwise):
    a seat about to lose would otherwise earn more by ending the game with an illegal reply,
    and take the win away from the other seat.

    ## Episode End
    Terminates for both agents on a win, a draw or an illegal move (at most 9 moves). There
    is no truncation.

    ## Information
    The common keys of :mod:`rllm_envs.multiagent.base` (``is_correct`` = this agent has won)
    plus ``mark`` (``"X"`` or ``"O"``), ``board`` (9 characters ``X``/``O``/``.``, row by row),
    ``legal_moves`` (1-based cells, empty once the game is over) and, on ``step``, ``move``
    (the cell this agent played at this step, or ``None``) and ``outcome``: ``"moved"``,
    ``"waiting"``, ``"win"``, ``"loss"``, ``"draw"``, ``"illegal_move"`` (this agent's
    illegal reply ended the game) or ``"opponent_illegal_move"``.

    ## Arguments
    - ``opening_plies`` (int 0-4, default 2): random moves already played in each task. With 0
      every task is the empty board (tasks then differ only in who plays ``X``).
    - ``task_seed`` (int, default 0): seed of the task universe; task ``i`` is a pure function
      of ``(task_seed, i, opening_plies)``. A task record (``options={"task": ...}``) is
      ``{"board": "X...O....", "x_agent": "player_0"}``.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.multiagent.base.MultiAgentTextEnv`.

    ## Version History
    - v0: Initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": "rllm_tictactoe_v0"}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "win": 1.0,
        "loss": -1.0,
        "draw": 0.0,
        "illegal_move": -1.0,
    }

    def __init__(
        self,
        *,
        opening_plies: int = 2,
        task_seed: int = 0,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(opening_plies, int) or not 0 <= opening_plies <= 4:
            raise InvalidEnvConfig(
                "Expects `opening_plies` to be an int in [0, 4] (five moves can end a game), "
                f"actual: {opening_plies!r}."
            )
        tasks = ProceduralTasks(
            partial(generate_opening, opening_plies=opening_plies),
            name=f"tictactoe-p{opening_plies}",
            seed=task_seed,
        )
        super().__init__(
            tasks=tasks,
            possible_agents=AGENTS,
            reward_weights=reward_weights,
            render_mode=render_mode,
        )
        w = self.reward_weights
        if not w["win"] > w["draw"] >= w["loss"]:
            raise InvalidEnvConfig(
                "Expects reward weights `win` > `draw` >= `loss`, actual: win "
                f"{w['win']}, draw {w['draw']}, loss {w['loss']}. Otherwise losing (or drawing) "
                "pays at least what winning does (s36 att36i: win 0, loss 0.5 was accepted)."
            )
        if w["illegal_move"] > min(w["loss"], w["draw"]):
            raise InvalidEnvConfig(
                "Expects reward weight `illegal_move` <= `loss` and <= `draw`, actual: "
                f"illegal_move {w['illegal_move']}, loss {w['loss']}, draw {w['draw']}. "
                "Otherwise a seat about to lose earns more by resigning with an illegal reply "
                "(and the other seat loses its win)."
            )
        self.opening_plies = opening_plies
        self.board = ""
        self.marks: dict[str, str] = {}
        self.result = ""  # "", "X", "O", "draw" or "illegal:<agent>"
        self.last_move: tuple[str, int] | None = None
        self.illegal_reason: str | None = None

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        try:
            board = validate_board(task.get("board"))
        except ValueError as e:
            raise InvalidEnvConfig(f"Invalid tic-tac-toe task record: {e}") from e
        if winner(board) is not None or is_full(board):
            raise InvalidEnvConfig(f"Task board {board!r} is already decided; pass a live game.")
        if task.get("x_agent") not in AGENTS:
            raise InvalidEnvConfig(
                f"Expects task['x_agent'] in {list(AGENTS)}, actual: {task.get('x_agent')!r}."
            )

    def _start(self, task: Task) -> None:
        self.board = str(task["board"])
        x_agent = str(task["x_agent"])
        o_agent = AGENTS[1] if x_agent == AGENTS[0] else AGENTS[0]
        self.marks = {x_agent: "X", o_agent: "O"}
        self.result = ""
        self.last_move = None
        self.illegal_reason = None

    def _role(self, agent: str) -> str:
        return self.marks.get(agent, "X").lower()

    def _acting_agents(self) -> list[str]:
        if self.result:
            return []
        mark = to_move(self.board)
        return [a for a in self.agents if self.marks[a] == mark]

    def _act(self, actions: dict[str, str]) -> tuple[dict[str, AgentOutcome], set[str]]:
        (mover,) = actions
        opponent = self._opponent(mover)
        cell, reason = parse_move(actions[mover])
        if cell is not None and cell not in legal_moves(self.board):
            reason = f"Cell {cell} is already taken; legal moves were {legal_moves(self.board)}."
        if reason is not None:
            self.result, self.illegal_reason = f"illegal:{mover}", reason
            return {
                mover: AgentOutcome(
                    {"illegal_move": 1.0},
                    correct=False,
                    invalid_reason=reason,
                    info={"move": None, "outcome": "illegal_move"},
                ),
                opponent: AgentOutcome(
                    correct=False, info={"move": None, "outcome": "opponent_illegal_move"}
                ),
            }, set(AGENTS)
        assert cell is not None
        self.board = play(self.board, cell)
        self.last_move = (mover, cell)
        won = winner(self.board)
        if won is not None:
            self.result = won
            return {
                mover: AgentOutcome({"win": 1.0}, correct=True, info=_step(cell, "win")),
                opponent: AgentOutcome({"loss": 1.0}, correct=False, info=_step(None, "loss")),
            }, set(AGENTS)
        if is_full(self.board):
            self.result = "draw"
            return {
                mover: AgentOutcome({"draw": 1.0}, correct=False, info=_step(cell, "draw")),
                opponent: AgentOutcome({"draw": 1.0}, correct=False, info=_step(None, "draw")),
            }, set(AGENTS)
        return {
            mover: AgentOutcome(info=_step(cell, "moved")),
            opponent: AgentOutcome(info=_step(None, "waiting")),
        }, set()

    def _observe(self, agent: str) -> str:
        mark = self.marks[agent]
        other = "O" if mark == "X" else "X"
        lines = [
            f"You are playing tic-tac-toe as {mark}; your opponent plays {other}. Players take "
            "turns marking one empty cell; three of your marks in a row, column or diagonal "
            "wins, and a full board without one is a draw.",
            "",
            "Board (empty cells show their numbers):",
            render_board(self.board),
            "",
        ]
        if self.last_move is not None:
            who, cell = self.last_move
            lines.append(
                f"Last move: {'you' if who == agent else 'your opponent'} "
                f"({self.marks[who]}) played {cell}."
            )
        if self.result:
            lines.append(self._result_text(agent))
        elif to_move(self.board) == mark:
            moves = ", ".join(map(str, legal_moves(self.board)))
            lines += [
                f"It is your turn. Legal moves: {moves}.",
                "Reply with the number of one empty cell, e.g. <move>5</move>. A reply that is "
                "not a legal move loses the game with a penalty.",
            ]
        else:
            lines.append(f"It is your opponent's ({other}) turn. Wait: your reply is ignored.")
        return "\n".join(lines)

    def _info(self, agent: str, acting: set[str]) -> dict[str, Any]:
        return {
            **super()._info(agent, acting),
            "mark": self.marks[agent],
            "board": self.board,
            "legal_moves": [] if self.result else legal_moves(self.board),
        }

    def _render_text(self) -> str:
        marks = ", ".join(f"{a} = {m}" for a, m in sorted(self.marks.items()))
        status = self.result or f"{to_move(self.board)} to move"
        return f"{render_board(self.board)}\n({marks}; {status})"

    # ---------------------------------------------------------------- scripted policies

    def oracle_action(self, agent: str) -> str:
        """Perfect play (minimax), preferring moves that set traps; see ``oracle_move``."""
        return f"<move>{oracle_move(self.board)}</move>"

    def heuristic_action(self, agent: str, rng: np.random.Generator) -> str:
        """Win, else block, else centre, else a corner, else any legal cell."""
        return f"<move>{heuristic_move(self.board, rng)}</move>"

    def random_action(self, agent: str, rng: np.random.Generator) -> str:
        """A uniformly random legal cell."""
        moves = legal_moves(self.board)
        return f"<move>{moves[int(rng.integers(len(moves)))]}</move>"

    def game_value(self, agent: str) -> int:
        """Perfect-play result of the current position for ``agent``: 1 win, 0 draw, -1 loss."""
        value = game_value(self.board)
        return value if to_move(self.board) == self.marks[agent] else -value

    # ---------------------------------------------------------------------- internals

    def _opponent(self, agent: str) -> str:
        return AGENTS[1] if agent == AGENTS[0] else AGENTS[0]

    def _result_text(self, agent: str) -> str:
        if self.result.startswith("illegal:"):
            offender = self.result.split(":", 1)[1]
            if offender == agent:
                return (
                    f"Game over: your reply was not a legal move. {self.illegal_reason} You lose."
                )
            return "Game over: your opponent's reply was not a legal move. No winner."
        if self.result == "draw":
            return "Game over: the board is full. It is a draw."
        return "Game over: you win!" if self.result == self.marks[agent] else "Game over: you lose."


def _step(move: int | None, outcome: str) -> dict[str, Any]:
    return {"move": move, "outcome": outcome}


def parallel_env(**kwargs: Any) -> TicTacToeEnv:
    """The parallel (PettingZoo ``ParallelEnv``) form; kwargs as :class:`TicTacToeEnv`."""
    return TicTacToeEnv(**kwargs)


def env(**kwargs: Any) -> Any:
    """The AEC form (PettingZoo ``parallel_to_aec``); kwargs as :class:`TicTacToeEnv`."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(TicTacToeEnv(**kwargs))
