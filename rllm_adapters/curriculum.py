"""Curricula: which difficulty level each task of a training iteration is drawn from.

Every env whose constructor takes a difficulty knob (``difficulty`` for Math, ToolUse,
Search, Countdown and FrozenLake; any other kwarg through ``kwarg``) can be trained with a
curriculum. The trainer keeps one env pool per level (built with ``{kwarg: level}`` merged
into ``env_kwargs``), asks :meth:`CurriculumSampler.sample` for the level of each task group,
and reports every episode's success back with :meth:`CurriculumSampler.record`.

Three kinds (``kind``):

``uniform``
    Every level gets an equal share of the tasks: task ``j`` of a call goes to level
    ``levels[(offset + j) % L]`` and the offset moves on by the call's task count, so shares
    stay equal over iterations even with one task per iteration.

``schedule``
    A fixed schedule ``[[iteration, level], ...]`` (0-based iterations, increasing, the first
    at 0): from each listed iteration on, tasks come from that level. A ``replay`` fraction
    of tasks goes to lower levels as in ``adaptive``.

``adaptive``
    Keep the learner's success at its current level inside ``band = [low, high]``:

    * Each level keeps a window of the success of its last ``window`` episodes (every sample
      of a group counts as one episode).
    * After each iteration (:meth:`CurriculumSampler.update`), once the current level has had
      at least ``min_episodes`` episodes since the last move (default: ``window``, so the
      window holds only episodes played since then), the rule looks at that level's windowed
      success ``s``: ``s > high`` promotes to the next level, ``s < low`` demotes to the
      previous one, otherwise it stays. At the ends of ``levels`` it stays.
    * Replay: each task goes, with probability ``replay``, to a lower level drawn uniformly
      (none at the lowest level), so earlier skills keep being practised and their windows
      stay fresh.

Everything random comes from the sampler's own generator (seeded), so the same seed and the
same outcomes give the same levels; :meth:`CurriculumSampler.state_dict` round-trips it for
checkpoints. Under several processes each rank adapts to its own episodes (seed
``train.seed + rank``); the logged metrics are the mean over ranks.

Metrics (:meth:`CurriculumSampler.metrics`, logged every iteration by the trainer):
``curriculum/level`` (the current level for ``adaptive``, the scheduled one for
``schedule``, the hardest for ``uniform``), ``curriculum/level_index``,
``curriculum/success/<level>`` (windowed success; NaN before any episode) and
``curriculum/episodes/<level>`` (episodes at that level since the previous call), for every
level, so every process logs the same keys.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rllm_adapters.error import AdapterConfigError

__all__ = ["CURRICULUM_KINDS", "CurriculumConfig", "CurriculumSampler"]

CURRICULUM_KINDS = ("adaptive", "schedule", "uniform")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AdapterConfigError(message)


@dataclass
class CurriculumConfig:
    """A curriculum over an env's difficulty levels (``rollout.curriculum`` in a config).

    Attributes:
        kind: ``"adaptive"``, ``"schedule"`` or ``"uniform"`` (see the module docstring).
        levels: Values of ``kwarg``, easiest first (at least one; no repeats).
        kwarg: The env constructor argument the level sets.
        band: ``[low, high]`` target success at the current level (``adaptive``).
        window: Episodes per level in the success window.
        min_episodes: Episodes at the current level since the last move before the next
            decision (default: ``window``).
        replay: Probability that a task goes to a lower level (``adaptive``, ``schedule``).
        start: The first level (``adaptive``; default: the easiest).
        schedule: ``[[iteration, level], ...]`` (``schedule``), the first at iteration 0.
    """

    kind: str = "adaptive"
    levels: list[Any] = field(default_factory=lambda: [1, 2, 3])
    kwarg: str = "difficulty"
    band: tuple[float, float] = (0.3, 0.8)
    window: int = 64
    min_episodes: int | None = None
    replay: float = 0.2
    start: Any = None
    schedule: list[tuple[int, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        _check(
            self.kind in CURRICULUM_KINDS,
            f"Expects `curriculum.kind` in {CURRICULUM_KINDS}, actual: {self.kind!r}.",
        )
        _check(
            isinstance(self.levels, (list, tuple)) and len(self.levels) >= 1,
            "Expects `curriculum.levels` to be a non-empty list of the env's "
            f"`{self.kwarg}` values, easiest first, actual: {self.levels!r}.",
        )
        self.levels = list(self.levels)
        _check(
            len({repr(v) for v in self.levels}) == len(self.levels),
            f"Expects `curriculum.levels` without repeats, actual: {self.levels!r}.",
        )
        _check(
            isinstance(self.kwarg, str) and bool(self.kwarg),
            f"Expects `curriculum.kwarg` to be an env argument name, actual: {self.kwarg!r}.",
        )
        band = tuple(float(b) for b in self.band)
        _check(
            len(band) == 2 and 0.0 <= band[0] <= band[1] <= 1.0,
            f"Expects `curriculum.band` to be [low, high] with 0 <= low <= high <= 1, actual: "
            f"{self.band!r}.",
        )
        self.band = (band[0], band[1])
        _check(
            isinstance(self.window, int) and self.window >= 1,
            f"Expects `curriculum.window` to be an int >= 1, actual: {self.window!r}.",
        )
        if self.min_episodes is None:
            self.min_episodes = self.window
        _check(
            isinstance(self.min_episodes, int) and self.min_episodes >= 1,
            f"Expects `curriculum.min_episodes` to be an int >= 1, actual: {self.min_episodes!r}.",
        )
        _check(
            0.0 <= float(self.replay) < 1.0,
            f"Expects `curriculum.replay` in [0, 1), actual: {self.replay!r}.",
        )
        self.replay = float(self.replay)
        if self.start is not None:
            _check(
                self.start in self.levels,
                f"Expects `curriculum.start` to be one of `levels` {self.levels}, actual: "
                f"{self.start!r}.",
            )
        self.schedule = _parse_schedule(self.schedule, self.levels)
        if self.kind == "schedule":
            _check(
                bool(self.schedule) and self.schedule[0][0] == 0,
                "`curriculum.kind: schedule` needs `curriculum.schedule: [[0, level], "
                "[iteration, level], ...]` starting at iteration 0, actual: "
                f"{self.schedule!r}.",
            )


def _parse_schedule(schedule: Any, levels: Sequence[Any]) -> list[tuple[int, Any]]:
    items = list(schedule.items()) if isinstance(schedule, Mapping) else list(schedule or [])
    out: list[tuple[int, Any]] = []
    for item in items:
        _check(
            isinstance(item, (list, tuple)) and len(item) == 2,
            f"Expects each `curriculum.schedule` entry to be [iteration, level], actual: {item!r}.",
        )
        iteration, level = item
        try:
            iteration = int(iteration)
        except (TypeError, ValueError):
            raise AdapterConfigError(
                f"Expects a schedule iteration to be an int, actual: {iteration!r}."
            ) from None
        _check(
            level in levels,
            f"Expects schedule level {level!r} to be one of `curriculum.levels` {list(levels)}.",
        )
        out.append((iteration, level))
    iterations = [it for it, _ in out]
    _check(
        iterations == sorted(set(iterations)) and all(it >= 0 for it in iterations),
        f"Expects `curriculum.schedule` iterations >= 0 and increasing, actual: {iterations}.",
    )
    return out


class CurriculumSampler:
    """Draws each task's level and adapts to the success reported back (module docstring).

    Args:
        config: The curriculum.
        seed: Seed of the sampler's generator (replay draws).
    """

    def __init__(self, config: CurriculumConfig, seed: int = 0) -> None:
        self.config = config
        self.levels = list(config.levels)
        self._rng = np.random.default_rng(seed)
        self.windows: list[deque[bool]] = [deque(maxlen=config.window) for _ in self.levels]
        self.current = self.levels.index(config.start) if config.start is not None else 0
        #: Episodes at the current level since the last move (``adaptive``).
        self.since_move = 0
        self.promotions = 0
        self.demotions = 0
        self._offset = 0
        self._iteration = 0
        self._recent = [0] * len(self.levels)

    # ------------------------------------------------------------------ choosing levels

    def frontier(self, iteration: int | None = None) -> int:
        """Index of the level tasks come from (besides replay) at ``iteration``."""
        kind = self.config.kind
        if kind == "uniform":
            return len(self.levels) - 1
        if kind == "schedule":
            it = self._iteration if iteration is None else iteration
            level = self.config.schedule[0][1]
            for start, scheduled in self.config.schedule:
                if start <= it:
                    level = scheduled
            return self.levels.index(level)
        return self.current

    @property
    def level(self) -> Any:
        """The frontier level (see ``curriculum/level``)."""
        return self.levels[self.frontier()]

    def sample(self, num_tasks: int, iteration: int) -> list[Any]:
        """The level of each of ``num_tasks`` task groups of ``iteration``."""
        self._iteration = iteration
        if self.config.kind == "uniform":
            n = len(self.levels)
            out = [self.levels[(self._offset + j) % n] for j in range(num_tasks)]
            self._offset = (self._offset + num_tasks) % n
            return out
        top = self.frontier(iteration)
        chosen: list[Any] = []
        for _ in range(num_tasks):
            index = top
            if top > 0 and self.config.replay > 0 and self._rng.random() < self.config.replay:
                index = int(self._rng.integers(top))
            chosen.append(self.levels[index])
        return chosen

    # ------------------------------------------------------------------ feedback

    def record(self, level: Any, successes: Iterable[bool]) -> None:
        """Add the outcomes of episodes played at ``level`` to its window."""
        index = self.levels.index(level)
        for success in successes:
            self.windows[index].append(bool(success))
            self._recent[index] += 1
            if index == self.current:
                self.since_move += 1

    def success(self, level: Any) -> float:
        """Windowed success at ``level`` (NaN before any episode)."""
        window = self.windows[self.levels.index(level)]
        return sum(window) / len(window) if window else math.nan

    def update(self) -> int:
        """Apply the ``adaptive`` rule once (call after each iteration).

        Returns:
            +1 for a promotion, -1 for a demotion, 0 otherwise (always 0 for the other kinds).
        """
        if self.config.kind != "adaptive" or self.since_move < (self.config.min_episodes or 0):
            return 0
        low, high = self.config.band
        rate = self.success(self.levels[self.current])
        move = 0
        if rate > high and self.current < len(self.levels) - 1:
            move = 1
            self.promotions += 1
        elif rate < low and self.current > 0:
            move = -1
            self.demotions += 1
        if move:
            self.current += move
            self.since_move = 0
        return move

    def metrics(self) -> dict[str, float]:
        """The ``curriculum/*`` metrics (and reset the per-call episode counts)."""
        level = self.level
        out: dict[str, float] = {
            "curriculum/level": float(level) if isinstance(level, (int, float)) else math.nan,
            "curriculum/level_index": float(self.frontier()),
            "curriculum/promotions": float(self.promotions),
            "curriculum/demotions": float(self.demotions),
        }
        for index, value in enumerate(self.levels):
            out[f"curriculum/success/{value}"] = self.success(value)
            out[f"curriculum/episodes/{value}"] = float(self._recent[index])
        self._recent = [0] * len(self.levels)
        return out

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The sampler's state (JSON-able)."""
        return {
            "windows": [list(w) for w in self.windows],
            "current": self.current,
            "since_move": self.since_move,
            "promotions": self.promotions,
            "demotions": self.demotions,
            "offset": self._offset,
            "rng": self._rng.bit_generator.state,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output."""
        for window, values in zip(self.windows, state["windows"], strict=True):
            window.clear()
            window.extend(bool(v) for v in values)
        self.current = int(state["current"])
        self.since_move = int(state["since_move"])
        self.promotions = int(state["promotions"])
        self.demotions = int(state["demotions"])
        self._offset = int(state["offset"])
        self._rng.bit_generator.state = state["rng"]
