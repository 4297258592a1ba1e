"""``rllm/FrozenLake-v1``: Gymnasium's FrozenLake, played through text."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import numpy as np
from gymnasium.envs.toy_text.frozen_lake import MAPS
from gymnasium.envs.toy_text.frozen_lake import FrozenLakeEnv as GymFrozenLake
from gymnasium.envs.toy_text.utils import categorical_sample

from rllm_envs.core import TextEnv, Transition
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.frozenlake.lake import (
    ACTION_NAMES,
    MAX_MAP_SIZE,
    optimal_policy,
    parse_action,
    progress_potentials,
    random_map,
    render_board,
    validate_map,
)
from rllm_envs.tasks import ProceduralTasks, Task, check_difficulty

__all__ = ["FrozenLakeEnv", "DIFFICULTY_PRESETS", "generate_lake"]

#: difficulty -> (map size, hole density, slippery). Explicit kwargs override a preset.
DIFFICULTY_PRESETS: dict[int, tuple[int, float, bool]] = {
    1: (4, 0.2, False),
    2: (5, 0.2, False),
    3: (6, 0.25, False),
    4: (8, 0.25, False),
    5: (8, 0.3, True),
}

_ACTIONS_LINE = "Actions: Left, Down, Right, Up (one per turn)."


def generate_lake(rng: np.random.Generator, *, size: int, hole_density: float) -> Task:
    """A random ``size`` x ``size`` map with a guaranteed safe path (:func:`random_map`)."""
    return {"map": random_map(rng, size, hole_density)}


def _fixed_lake(rows: list[str], rng: np.random.Generator) -> Task:
    return {"map": list(rows)}


class FrozenLakeEnv(TextEnv):
    r"""Cross a frozen lake from the start to the goal without falling into a hole, in text.

    ## Description
    Gymnasium's ``FrozenLake`` (its map generator, transition table and step) played through
    text. The agent starts at ``S`` and must reach ``G``; ``H`` cells are holes. By default
    each task is a random map with a guaranteed safe path, drawn from the seed, whose start
    and goal cells are drawn too (so no fixed move sequence solves many maps); fixed maps
    (Gymnasium's ``"4x4"`` and ``"8x8"``, or any ``desc``) are available.

    ## Observation
    A self-contained text: the rules, the board with coordinates (``P`` marks the player),
    a legend, the allowed actions and the answer format. Later observations start with what
    the last action did (moved, slipped, blocked by the edge, or could not be read).
    No ANSI codes.

    ## Action
    Free text. The parser (:func:`rllm_envs.frozenlake.lake.parse_action`) accepts e.g.
    ``"Right"``, ``"right"``, ``"R"``, ``"→"``, ``"2"``, ``"<action>Right</action>"``,
    ``"\boxed{Right}"``, ``"Answer: Right"`` or a reasoning text whose last direction word is
    the move. Only the answer part is read (:mod:`rllm_envs.text`: text before the last
    ``</think>`` is ignored; a reply cut inside an unclosed ``<think>`` has no move).

    ## Reward
    The weighted sum of components (``reward_weights``), each paying for one thing:

    - ``success`` (weight 1.0): 1 on the turn the goal is reached, else 0.
    - ``hole`` (weight -0.05): 1 on the turn the player falls into a hole, else 0.
    - ``invalid_action`` (weight 0.0, log only): 1 on a turn whose reply held no action,
      else 0; on a fall, also the unreadable replies the fall skips at the episode's own
      rate (its unreadable replies so far per turn played, times the turns left). Pass e.g.
      ``reward_weights={"invalid_action": -0.1}`` for a penalty per unreadable reply.
    - ``progress`` (weight 0.0, log only): potential-based shaping towards the goal, the
      move's change of ``-d / D`` (``d`` the safe moves left to the goal, ``D`` the
      farthest cell's; a hole is -1: :func:`~rllm_envs.frozenlake.lake.progress_potentials`).
      An episode's sum is its last cell's potential minus its start's: at most what reaching
      the goal earns, and for a fall the least any episode from its start can net (``hole``
      then makes it less), so it cannot make dying early pay. An episode the turn limit
      cuts off, or an unreadable reply ends (``invalid_ends``), nets 0: its last turn gives
      back what the walk earned (without that, walking to the goal's neighbour and waiting
      there, or replying garbage there, paid up to ``1 - 1/D``, s36 att36c and att36f); a
      driver that stops an episode without a step settles it the same way (:meth:`settle`,
      which the rollout loop calls when the context is full). It
      gives a policy that never reached the goal a direction to explore in. Pass e.g.
      ``reward_weights={"progress": 1.0}``; a negative weight is refused.

    A fall costs ``|w_hole|`` more than playing on validly (which costs nothing), and it
    does not simply escape the invalid-action penalty: the replies it skips are charged at
    the rate the episode has replied unreadably so far. That rate is what the episode
    *showed*, not what the policy would do next: a policy that often replies unreadably can
    still gain by falling right after a run of valid moves (the board tells it where it
    is), most of all on its first move when the start is next to a hole (a rate of 0 is
    charged). ``invalid_ends=True`` closes that: an unreadable reply ends the episode (one
    ``invalid_action`` charge, as in GEM's and TextArena's games), so nothing is left for a
    fall to escape, and the constructor then requires ``w_hole <= w_invalid``: a fall costs
    at least what the worst way of playing on can cost. The constructor requires
    ``w_hole < 0`` and ``w_invalid <= 0`` (else :class:`rllm_envs.error.InvalidEnvConfig`).
    In v0 a fall cost nothing, and a policy that often replied with no action learned to
    walk into a hole at turn 2 to stop paying the invalid-action penalty. A fall costs
    little on its own, so a policy still explores by walking (a charge per turn a fall
    throws away made standing still at an edge the policy that a from-scratch model
    learned instead of reaching the goal).

    ## Episode End
    Terminates on reaching the goal or falling into a hole, and with ``invalid_ends=True``
    on an unparsable reply. Truncates after ``max_turns`` actions. Otherwise an unparsable
    action uses a turn and leaves the player in place.

    ## Information
    The common keys of :mod:`rllm_envs.core` plus ``position`` (``[row, col]``, 0-based),
    ``map`` (the rows), ``is_slippery`` and, on ``step``, ``action`` (the parsed action name
    or ``None``) and ``outcome`` (``"moved"``, ``"slipped"``, ``"blocked"``, ``"hole"``,
    ``"goal"`` or ``"invalid"``).

    ## Arguments
    - ``difficulty`` (int 1-5, default 1): preset of map size, hole density and slipperiness
      (see ``DIFFICULTY_PRESETS``); 1 = 4x4 not slippery, 5 = 8x8 with 30% holes, slippery.
    - ``size`` (int >= 2): side of random maps (overrides the preset).
    - ``hole_density`` (float in [0, 0.5]): probability of a hole per cell (overrides).
    - ``is_slippery`` (bool): Gymnasium's slippery ice (overrides): the move goes the intended
      way with probability ``success_rate``, else to either side.
    - ``success_rate`` (float, default 1/3): as in Gymnasium.
    - ``map_name`` (``"4x4"`` / ``"8x8"``) or ``desc`` (list of rows): a fixed map instead of
      random ones. A map (``desc`` or a passed task record's ``map``) has at most 32 rows
      and 32 columns (``MAX_MAP_SIZE``, the largest random map); a larger one is refused.
    - ``task_seed`` (int, default 0): seed of the random-map universe; task ``i`` is a pure
      function of ``(task_seed, i, difficulty)``.
    - ``max_turns`` (int, default ``4 * size``, ``8 * size`` if slippery).
    - ``invalid_ends`` (bool, default False): an unparsable reply ends the episode (see
      Reward); for training a policy from scratch, whose early replies are mostly unreadable.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version. Random maps draw the start and goal cells too (Gymnasium's
      generator keeps them in fixed corners, where one map's path replayed blind solved
      other maps far more often than random moves).
    - v1: Reward: a ``hole`` component (weight -0.05) charges a fall, and a fall is charged
      the unreadable replies it skips at the episode's rate (``invalid_action``); weights
      with ``hole >= 0`` or ``invalid_action > 0`` are refused. In v0 a fall paid 0 and
      ended the invalid-action penalty. Random maps draw the start and goal cells. Later,
      without a version bump (a new kwarg, off by default, so v1's rewards are unchanged):
      ``invalid_ends``; ``progress`` (weight 0 by default).
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "success": 1.0,
        "hole": -0.05,
        "invalid_action": 0.0,
        "progress": 0.0,
    }

    def __init__(
        self,
        *,
        difficulty: int = 1,
        size: int | None = None,
        hole_density: float | None = None,
        is_slippery: bool | None = None,
        success_rate: float = 1.0 / 3.0,
        map_name: str | None = None,
        desc: list[str] | None = None,
        task_seed: int = 0,
        max_turns: int | None = None,
        invalid_ends: bool = False,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.invalid_ends = bool(invalid_ends)
        difficulty = check_difficulty(difficulty, DIFFICULTY_PRESETS)
        preset_size, preset_density, preset_slippery = DIFFICULTY_PRESETS[difficulty]
        size = preset_size if size is None else size
        hole_density = preset_density if hole_density is None else hole_density
        self.is_slippery = preset_slippery if is_slippery is None else bool(is_slippery)
        if not isinstance(size, int) or not 2 <= size <= MAX_MAP_SIZE:
            raise InvalidEnvConfig(
                f"Expects `size` to be an int in [2, {MAX_MAP_SIZE}], actual: {size!r}."
            )
        if not 0.0 <= hole_density <= 0.5:
            raise InvalidEnvConfig(
                f"Expects `hole_density` in [0, 0.5] (denser maps rarely have a path), "
                f"actual: {hole_density!r}."
            )
        if not 0.0 < success_rate <= 1.0:
            raise InvalidEnvConfig(f"Expects `success_rate` in (0, 1], actual: {success_rate!r}.")
        self.success_rate = float(success_rate)
        if map_name is not None and desc is not None:
            raise InvalidEnvConfig("Pass either `map_name` or `desc`, not both.")
        if map_name is not None:
            if map_name not in MAPS:
                raise InvalidEnvConfig(
                    f"Expects `map_name` in {sorted(MAPS)}, actual: {map_name!r}; "
                    "pass `desc=[...]` for a custom map."
                )
            desc = MAPS[map_name]
        if desc is not None:
            try:
                rows = validate_map(desc)
            except ValueError as e:
                raise InvalidEnvConfig(f"Invalid `desc`: {e}") from e
            name = f"frozenlake-{map_name or 'custom'}"
            tasks = ProceduralTasks(partial(_fixed_lake, rows), name=name, seed=task_seed, size=1)
            size = max(len(rows), len(rows[0]))
        else:
            name = f"frozenlake-d{difficulty}-{size}x{size}"
            generate = partial(generate_lake, size=size, hole_density=hole_density)
            tasks = ProceduralTasks(generate, name=name, seed=task_seed)
        if max_turns is None:
            max_turns = (8 if self.is_slippery else 4) * size
        super().__init__(
            tasks=tasks, max_turns=max_turns, reward_weights=reward_weights, render_mode=render_mode
        )
        self._check_shaping()
        self._lake: GymFrozenLake | None = None
        self._rows: list[str] = []
        self._policy: np.ndarray | None = None
        self._potentials: list[float] = []
        self._unreadable = 0  # unreadable replies this episode
        self._start_cell = 0  # where the episode started (progress is refunded to it)

    def _check_shaping(self) -> None:
        """Refuse weights under which falling into a hole pays as much as playing on."""
        w = self.reward_weights
        if not (w["hole"] < 0.0 and w["invalid_action"] <= 0.0):
            raise InvalidEnvConfig(
                f"Expects reward weights `hole` < 0 and `invalid_action` <= 0, actual: hole "
                f"{w['hole']}, invalid_action {w['invalid_action']}. Otherwise falling into a "
                "hole pays at least as much as playing on (a policy learns to die early). Pass "
                "e.g. reward_weights={'hole': -0.05, 'invalid_action': -0.1}."
            )
        if self.invalid_ends and w["hole"] > w["invalid_action"]:
            raise InvalidEnvConfig(
                f"With `invalid_ends=True`, expects reward weight `hole` <= `invalid_action`, "
                f"actual: hole {w['hole']}, invalid_action {w['invalid_action']}. Otherwise "
                "falling into a hole costs less than the unreadable reply it replaces (a "
                "policy learns to die early). Pass e.g. reward_weights={'hole': -0.1, "
                "'invalid_action': -0.1}."
            )
        if w["progress"] < 0.0:
            raise InvalidEnvConfig(
                f"Expects reward weight `progress` >= 0, actual: {w['progress']}. A negative "
                "weight pays for walking away from the goal and for falling."
            )

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        try:
            validate_map(task.get("map", []))
        except ValueError as e:
            raise InvalidEnvConfig(f"Invalid FrozenLake task record: {e}") from e

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        rows = list(task["map"])
        if rows != self._rows or self._lake is None:
            # Building Gymnasium's transition table costs more than a step: reuse it per map.
            self._lake = GymFrozenLake(
                desc=rows, is_slippery=self.is_slippery, success_rate=self.success_rate
            )
            self._rows, self._policy = rows, None
            self._potentials = progress_potentials(rows)
        # One source of randomness: Gymnasium's step samples slips from our np_random.
        self._lake.np_random = self.np_random
        # Same draw as Gymnasium's reset, so a fixed map replays Gymnasium's episodes exactly.
        self._lake.s = int(categorical_sample(self._lake.initial_state_distrib, self.np_random))
        self._lake.lastaction = None
        self._start_cell = self._lake.s
        self._unreadable = 0
        observation = "\n".join(
            [
                "You are playing FrozenLake. Walk from the start to the goal G without "
                "stepping into a hole H.",
                self._slip_rule(),
                "",
                self._board_text(),
                "",
                f"You have {self.max_turns} moves. Reply with exactly one action, for example "
                "`Right` or `<action>Right</action>`.",
            ]
        )
        return observation, self._state_info()

    def _act(self, action: str) -> Transition:
        assert self._lake is not None
        action_id, reason = parse_action(action)
        if action_id is None:
            self._unreadable += 1
            if self.invalid_ends:
                feedback = f"Invalid action: {reason} Game over."
            else:
                feedback = f"Invalid action: {reason} You stay where you are."
            return self._transition(feedback, "invalid", None, 0.0, self.invalid_ends, reason)
        before = self._lake.s
        state, reward, terminated, _, _ = self._lake.step(action_id)
        name = ACTION_NAMES[action_id]
        moved = _direction(before, int(state), len(self._rows[0]))
        if self._rows_cell(int(state)) == "H":
            outcome, text = "hole", f"You chose {name} and fell into a hole. Game over."
        elif reward > 0:
            outcome, text = "goal", f"You chose {name} and reached the goal. You win!"
        elif moved is None:
            outcome, text = "blocked", f"You chose {name}, but the edge of the lake stops you."
        elif moved != action_id:
            outcome = "slipped"
            text = f"You chose {name}, but slipped and moved {ACTION_NAMES[moved]}."
        else:
            outcome, text = "moved", f"You moved {name}."
        # A fall skips the turns left; their unreadable replies are charged at the episode's
        # rate (see the class docstring). With `invalid_ends` there is nothing to skip: the
        # next unreadable reply would end the episode anyway, at no more than a fall's cost.
        skipped = 0.0
        if outcome == "hole" and not self.invalid_ends:
            skipped = self._unreadable / self.turn * (self.max_turns - self.turn)
        progress = self._potentials[int(state)] - self._potentials[before]
        return self._transition(
            text,
            outcome,
            name,
            float(reward),
            bool(terminated),
            None,
            skipped=skipped,
            progress=progress,
        )

    def oracle_action(self) -> str:
        """The optimal move (shortest safe path; most likely to succeed when slippery)."""
        assert self._lake is not None, "Call reset() before oracle_action()."
        if self._policy is None:
            self._policy = optimal_policy(self._lake.P, self._lake.nrow * self._lake.ncol)
        return ACTION_NAMES[int(self._policy[self._lake.s])]

    def random_action(self) -> str:
        """A uniformly random direction (random over the four moves, not over all strings)."""
        return ACTION_NAMES[int(self.action_space.np_random.integers(len(ACTION_NAMES)))]

    def _render_text(self) -> str:
        return self._board_text() if self._lake is not None else ""

    # ---------------------------------------------------------------------- internals

    def _transition(
        self,
        text: str,
        outcome: str,
        action: str | None,
        success: float,
        terminated: bool,
        reason: str | None,
        skipped: float = 0.0,
        progress: float = 0.0,
    ) -> Transition:
        assert self._lake is not None
        if outcome not in ("goal", "hole") and (terminated or self.turn >= self.max_turns):
            # Ended without the goal or a fall (the turn limit, or an unreadable reply under
            # `invalid_ends`): the episode's shaping nets 0, as if it ended where it started.
            # Only reaching the goal keeps what the walk earned (s36 att36c, att36f).
            progress += self._potentials[self._start_cell] - self._potentials[self._lake.s]
        parts = [text]
        if not terminated:
            left = self.max_turns - self.turn
            parts += ["", self._board_text(), "", f"{left} moves left. Your next action?"]
        return Transition(
            observation="\n".join(parts),
            reward_components={
                "success": success,
                "hole": float(outcome == "hole"),
                "invalid_action": float(reason is not None) + skipped,
                "progress": progress,
            },
            terminated=terminated,
            correct=success > 0,
            invalid_reason=reason,
            info={**self._state_info(), "action": action, "outcome": outcome},
        )

    def _closing_components(self) -> dict[str, float]:
        # An episode stopped from outside nets no shaping, as one its turn limit ends does.
        assert self._lake is not None
        start, now = self._start_cell, int(self._lake.s)
        return {"progress": float(self._potentials[start] - self._potentials[now])}

    def _slip_rule(self) -> str:
        if not self.is_slippery:
            return "The ice is not slippery: you always move in the direction you choose."
        side = (1.0 - self.success_rate) / 2
        return (
            f"The ice is slippery: you move in the chosen direction with probability "
            f"{self.success_rate:.2f}, and to each side of it with probability {side:.2f}."
        )

    def _board_text(self) -> str:
        assert self._lake is not None
        return "\n".join(
            [
                render_board(self._rows, self._lake.s),
                "Legend: P = you, S = start, F = frozen (safe), H = hole, G = goal. "
                "Rows are numbered from the top, columns from the left.",
                _ACTIONS_LINE + " Moving off the edge leaves you in place.",
            ]
        )

    def _rows_cell(self, state: int) -> str:
        ncol = len(self._rows[0])
        return self._rows[state // ncol][state % ncol]

    def _state_info(self) -> dict[str, Any]:
        assert self._lake is not None
        ncol = len(self._rows[0])
        return {
            "position": [int(self._lake.s) // ncol, int(self._lake.s) % ncol],
            "map": list(self._rows),
            "is_slippery": self.is_slippery,
        }


def _direction(before: int, after: int, ncol: int) -> int | None:
    """Which action id moves ``before`` to ``after`` (``None`` if the player did not move)."""
    (r0, c0), (r1, c1) = divmod(before, ncol), divmod(after, ncol)
    return {(0, -1): 0, (1, 0): 1, (0, 1): 2, (-1, 0): 3}.get((r1 - r0, c1 - c0))
