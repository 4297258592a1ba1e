"""Countdown tasks: a procedural generator with a guaranteed solution, and a dataset loader.

A task record is ``{"id", "nums": list[int], "target": int}``, plus ``"solution"`` (a
reference expression) and ``"difficulty"`` for procedural tasks.

**Procedural tasks** (:func:`procedural_tasks`): task ``i`` is a pure function of
``(seed, i, difficulty)`` (and of ``num_count``/``max_number`` when given). The numbers are
drawn uniformly from ``1..max_number`` (repeats allowed), then combined, two at a time in a
random order with random operators, into one value, keeping every intermediate a positive
integer (``a - b`` only when ``a > b``, ``a / b`` only when ``b`` divides ``a`` and ``b > 1``).
That value is the target, so every task is solvable using each number exactly once (hence
also under the at-most-once rule), and the expression built is the reference ``solution``.
Targets outside ``1..max_target``, equal to one of the numbers, or reached by a one-operator
fold (every number added or multiplied, or folded with one operator in the given or sorted
order: :func:`trivial_targets`) are redrawn. Every other expression is also a fixed *shape*: a
template that needs no search once the numbers are sorted (``(c + b) - a`` over ``a <= b <=
c``). Left alone, the generator's draws favour some shapes (one solved 17% of the tasks of
three numbers, and 10-15% of four). With four numbers or fewer, draws are therefore thinned by
shape (:func:`shape_hits`, :func:`shape_balance`): a draw that popular shapes solve is kept
with a probability that keeps each shape's share of the tasks near :data:`SHAPE_CAP` (with
three numbers every task is one of 192 templates and several solve each, so the best shape
still solves 9-11% of 1,000 tasks of either universe, a shape drawn at random about 4%:
issue #25's open floor). With five or six numbers there
are too many shapes for this (10^4 to 10^5 per order) and the best one measured solves
about 3% and 1% of evaluation tasks. A task's universe (training or evaluation,
:mod:`rllm_envs.tasks`) is decided by :func:`countdown_key`, the sorted numbers and the
target, so a reordering of a training task is never an evaluation task.

=============  =========  ============  ============
difficulty     numbers    values        targets
=============  =========  ============  ============
1              3          1-10          1-50
2              4          1-25          1-100
3              4          1-100         1-200
4              5          1-100         1-500
5              6          1-100         1-1000
=============  =========  ============  ============

**Datasets** (:func:`load_countdown_tasks`): the common Countdown schema, as in
``Jiayi-Pan/Countdown-Tasks-3to4`` (TinyZero): records with ``nums`` (a list of integers) and
``target`` (an integer), in a local JSONL/JSON/Parquet file or ``"hf:<name>"``; other column
names through ``field_map``.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

import numpy as np

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.tasks import DatasetTasks, ProceduralTasks, Task, check_difficulty, load_records

__all__ = [
    "DIFFICULTY_PRESETS",
    "SHAPE_CAP",
    "ShapeBalance",
    "MAX_TASK_NUMBERS",
    "Preset",
    "check_task_record",
    "countdown_dataset_tasks",
    "countdown_key",
    "generate_task",
    "load_countdown_tasks",
    "procedural_tasks",
    "shape_balance",
    "shape_hits",
    "trivial_targets",
]

#: Most numbers a task may have (the solver and the prompt stay small).
MAX_TASK_NUMBERS = 12
#: Largest number or target a task may hold.
MAX_TASK_VALUE = 10**9


@dataclass(frozen=True)
class Preset:
    """One difficulty level: how many numbers, how large, and the target range.

    Attributes:
        num_count: How many numbers a task gives.
        max_number: Numbers are drawn from ``1..max_number``.
        max_target: Targets lie in ``1..max_target``.
    """

    num_count: int
    max_number: int
    max_target: int

    def __post_init__(self) -> None:
        if not 2 <= self.num_count <= MAX_TASK_NUMBERS:
            raise InvalidEnvConfig(
                f"Expects `num_count` in [2, {MAX_TASK_NUMBERS}], actual: {self.num_count!r}."
            )
        if not 2 <= self.max_number <= MAX_TASK_VALUE:
            raise InvalidEnvConfig(
                f"Expects `max_number` in [2, {MAX_TASK_VALUE}], actual: {self.max_number!r}."
            )
        if not 1 <= self.max_target <= MAX_TASK_VALUE:
            raise InvalidEnvConfig(
                f"Expects `max_target` in [1, {MAX_TASK_VALUE}], actual: {self.max_target!r}."
            )


DIFFICULTY_PRESETS: dict[int, Preset] = {
    1: Preset(3, 10, 50),
    2: Preset(4, 25, 100),
    3: Preset(4, 100, 200),
    4: Preset(5, 100, 500),
    5: Preset(6, 100, 1000),
}

_ATTEMPTS_PER_DRAW = 20
_DRAWS = 10


def _wrap(expr: str) -> str:
    return expr if expr.isdigit() else f"({expr})"


def _build(rng: np.random.Generator, nums: list[int]) -> tuple[int, str]:
    """Combine ``nums`` pairwise at random into one positive integer and its expression."""
    pool = [(n, str(n)) for n in nums]
    while len(pool) > 1:
        i, j = (int(k) for k in rng.choice(len(pool), size=2, replace=False))
        (a, ea), (b, eb) = pool[i], pool[j]
        if a < b:
            (a, ea), (b, eb) = (b, eb), (a, ea)
        ops = ["+", "*"]
        if a > b:
            ops.append("-")
        if b > 1 and a % b == 0:
            ops.append("/")
        op = ops[int(rng.integers(len(ops)))]
        value = {"+": a + b, "*": a * b, "-": a - b, "/": a // b if b else 0}[op]
        item = (value, f"{_wrap(ea)} {op} {_wrap(eb)}")
        pool = [p for k, p in enumerate(pool) if k not in (i, j)] + [item]
    return pool[0]


def _fold(values: Sequence[int], op: str) -> Fraction | None:
    total = Fraction(values[0])
    for v in values[1:]:
        if op == "+":
            total += v
        elif op == "-":
            total -= v
        elif op == "*":
            total *= v
        elif v == 0:
            return None
        else:
            total /= v
    return total


def trivial_targets(nums: Sequence[int]) -> set[int]:
    """Values a policy reaches without searching: ``nums`` folded with one operator.

    Every number added, subtracted, multiplied or divided in turn, in the given order and
    sorted either way (``a + b + c``, ``c - b - a``, ...). A target among them would pay a
    constant-shape answer.
    """
    found: set[int] = set()
    for order in (list(nums), sorted(nums), sorted(nums, reverse=True)):
        for op in "+-*/":
            value = _fold(order, op)
            if value is not None and value.denominator == 1:
                found.add(int(value))
    return found


#: Most numbers whose every shape is enumerated and balanced (4: 24 orders x 320 templates).
SHAPE_NUMBERS = 4
#: The share of tasks a single fixed shape should solve at most, where shapes are balanced.
SHAPE_CAP = 0.03
#: Raw draws that estimate each shape's share (once per preset and process).
_SHAPE_PROBE = 600


def _template_values(orders: np.ndarray) -> np.ndarray:
    """Every expression template's value over each row of ``orders`` (an order of the numbers).

    Returns a ``(orders, templates)`` float64 array (nan/inf for ``/0``). A template is a
    binary tree over the numbers in an order with an operator at each node; its column
    depends only on the number count, so a column names the same template for every task.
    All orders are computed at once: one array operation per tree split.
    """
    n = orders.shape[1]
    table = {(i, i): orders[:, i : i + 1].astype(np.float64) for i in range(n)}
    with np.errstate(all="ignore"):
        for length in range(2, n + 1):
            for i in range(n - length + 1):
                j = i + length - 1
                parts = []
                for k in range(i, j):
                    a, b = table[(i, k)][:, :, None], table[(k + 1, j)][:, None, :]
                    parts += [a + b, a - b, a * b, a / b]
                table[(i, j)] = np.concatenate(
                    [part.reshape(len(orders), -1) for part in parts], axis=1
                )
    return table[(0, n - 1)]


@lru_cache(maxsize=256)  # a 4-number entry is 7680 floats (61 kB)
def _sorted_shape_values(nums: tuple[int, ...]) -> tuple[np.ndarray, int]:
    """Every template over every order of the sorted ``nums``, and the count per order."""
    ordered = sorted(nums)
    orders = np.array(
        [[ordered[i] for i in perm] for perm in itertools.permutations(range(len(nums)))]
    )
    values = _template_values(orders)
    return values.ravel(), values.shape[1]


def shape_hits(nums: Sequence[int], target: int) -> frozenset[int]:
    """The fixed shapes that reach ``target`` from ``nums`` (empty above :data:`SHAPE_NUMBERS`).

    A shape is an expression template over the sorted numbers: an order of their positions
    (``c, a, b`` for ``a <= b <= c``), a tree and an operator at each node, numbered the same
    way for every task of that many numbers. A policy that always plays one shape needs no
    search; its reward is the share of tasks the shape solves. Templates over the numbers as
    given are among them (the given order is a random order of the sorted numbers).
    """
    if not 2 < len(nums) <= SHAPE_NUMBERS:
        return frozenset()
    values, _ = _sorted_shape_values(tuple(sorted(int(n) for n in nums)))
    close = np.abs(values - target) <= 1e-9 * max(1.0, abs(float(target)))
    return frozenset(int(i) for i in np.flatnonzero(close))


def _draw(rng: np.random.Generator, preset: Preset) -> tuple[list[int], int, str] | None:
    """A raw draw: numbers and a target that pass every rule but the shape balance."""
    nums = [int(n) for n in rng.integers(1, preset.max_number + 1, size=preset.num_count)]
    # With two numbers every expression is a one-operator fold: nothing to exclude.
    trivial = trivial_targets(nums) if len(nums) > 2 else set()
    for _ in range(_ATTEMPTS_PER_DRAW):
        target, solution = _build(rng, nums)
        if 1 <= target <= preset.max_target and target not in nums and target not in trivial:
            return nums, target, solution
    return None


@dataclass(frozen=True)
class ShapeBalance:
    """How draws are thinned by shape: keep one with ``min(1, scale / max share of its shapes)``.

    Attributes:
        shares: Each shape's share of the raw draws (estimated from a fixed probe).
        scale: The keep probability of a draw whose most popular shape has share ``scale``.
        max_share: The largest share of a shape among the kept probe draws.
    """

    shares: Mapping[int, float]
    scale: float
    max_share: float

    def keep(self, hits: frozenset[int]) -> float:
        """The probability of keeping a draw solved by the shapes ``hits``."""
        top = max((self.shares.get(h, 0.0) for h in hits), default=0.0)
        return 1.0 if top <= self.scale else self.scale / top


@lru_cache(maxsize=32)
def shape_balance(preset: Preset) -> ShapeBalance | None:
    """The shape balance of ``preset`` (``None`` above :data:`SHAPE_NUMBERS` numbers).

    Estimated once from :data:`_SHAPE_PROBE` raw draws of a generator seeded by the preset
    alone (the same for every task seed). The keep rule bounds a shape's share of the kept
    tasks by ``scale / (share of draws kept)``; ``scale`` is the largest that brings every
    shape to :data:`SHAPE_CAP` on the probe, or, where no scale does (three numbers: every
    task is some shape, and a task is solved by several), the one with the smallest largest
    share among those that keep a tenth of the draws or more.
    """
    if not 2 < preset.num_count <= SHAPE_NUMBERS:
        return None
    rng = np.random.default_rng([0x5A9E, preset.num_count, preset.max_number, preset.max_target])
    probe = []
    for _ in range(_SHAPE_PROBE):
        draw = _draw(rng, preset)
        if draw is not None:
            probe.append(shape_hits(draw[0], draw[1]))
    counts: dict[int, int] = {}
    for hits in probe:
        for h in hits:
            counts[h] = counts.get(h, 0) + 1
    if not probe or not counts:
        return None
    shares = {h: c / len(probe) for h, c in counts.items()}
    tops = [max((shares[h] for h in hits), default=0.0) for hits in probe]
    best: ShapeBalance | None = None
    for scale in sorted(set(tops), reverse=True):
        keep = np.array([1.0 if t <= scale else scale / t for t in tops])
        if keep.mean() < 0.1:
            break
        kept: dict[int, float] = {}
        for hits, k in zip(probe, keep, strict=True):
            for h in hits:
                kept[h] = kept.get(h, 0.0) + k
        top = max(kept.values()) / keep.sum()
        if best is None or top < best.max_share:
            best = ShapeBalance(shares, float(scale), float(top))
        if top <= SHAPE_CAP:
            break
    return best


def generate_task(rng: np.random.Generator, *, preset: Preset, difficulty: int | None) -> Task:
    """One solvable task drawn with ``rng`` (see the module docstring for the rule)."""
    balance = shape_balance(preset)
    for _ in range(_DRAWS * (10 if balance is not None else 1)):
        draw = _draw(rng, preset)
        if draw is None:
            continue
        nums, target, solution = draw
        if balance is not None and rng.random() >= balance.keep(shape_hits(nums, target)):
            continue
        return {"nums": nums, "target": target, "solution": solution, "difficulty": difficulty}
    # Unlucky (or a tiny target range): the sum of two or more positive numbers exceeds each
    # of them, so it is a valid, non-trivial target even if it is above `max_target`.
    nums = [int(n) for n in rng.integers(1, preset.max_number + 1, size=preset.num_count)]
    return {
        "nums": nums,
        "target": sum(nums),
        "solution": " + ".join(str(n) for n in nums),
        "difficulty": difficulty,
    }


def countdown_key(task: Mapping[str, Any]) -> str:
    """The universe key of a Countdown task: its numbers sorted, and its target.

    Only what the prompt shows, in a canonical order: the numbers' order and the reference
    solution do not change which tasks a memorised answer solves.
    """
    nums = sorted(int(n) for n in task["nums"])
    return f"countdown:{','.join(map(str, nums))}->{int(task['target'])}"


def resolve_preset(
    difficulty: int, num_count: int | None = None, max_number: int | None = None
) -> Preset:
    """The preset of ``difficulty`` with ``num_count``/``max_number`` overrides applied."""
    difficulty = check_difficulty(difficulty, DIFFICULTY_PRESETS)
    base = DIFFICULTY_PRESETS[difficulty]
    for name, value in (("num_count", num_count), ("max_number", max_number)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise InvalidEnvConfig(f"Expects `{name}` to be an int or None, actual: {value!r}.")
    return Preset(
        num_count=base.num_count if num_count is None else num_count,
        max_number=base.max_number if max_number is None else max_number,
        max_target=base.max_target,
    )


def procedural_tasks(
    *,
    seed: int = 0,
    difficulty: int = 1,
    num_count: int | None = None,
    max_number: int | None = None,
) -> ProceduralTasks:
    """The procedural Countdown source: task ``i`` is a pure function of its arguments and ``i``.

    Args:
        seed: Seed of the task universe.
        difficulty: A level of :data:`DIFFICULTY_PRESETS` (1-5).
        num_count: Override of the preset's number count.
        max_number: Override of the preset's largest number.
    """
    preset = resolve_preset(difficulty, num_count, max_number)
    name = f"countdown-d{difficulty}"
    if num_count is not None or max_number is not None:
        name += f"-n{preset.num_count}-m{preset.max_number}"
    generate = partial(generate_task, preset=preset, difficulty=difficulty)
    return ProceduralTasks(generate, name=name, seed=seed, key=countdown_key)


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what} {value!r} is a boolean, not an integer")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    raise ValueError(f"{what} {value!r} is not an integer")


def check_task_record(task: Task) -> Task:
    """Validate and normalise a record's ``nums`` and ``target`` (raises :class:`ValueError`).

    Numbers and the target must be integers in ``0..10**9`` (floats like ``24.0`` and digit
    strings are accepted), with 1 to :data:`MAX_TASK_NUMBERS` numbers.
    """
    nums = task.get("nums")
    if isinstance(nums, np.ndarray):
        nums = nums.tolist()
    if not isinstance(nums, (list, tuple)) or not 1 <= len(nums) <= MAX_TASK_NUMBERS:
        raise ValueError(
            f"`nums` must be a list of 1 to {MAX_TASK_NUMBERS} integers, actual: {nums!r}"
        )
    values = [_as_int(n, "number") for n in nums]
    target = _as_int(task.get("target"), "target")
    for v in [*values, target]:
        if not 0 <= v <= MAX_TASK_VALUE:
            raise ValueError(f"numbers and target must lie in [0, {MAX_TASK_VALUE}], actual: {v}")
    task["nums"] = values
    task["target"] = target
    return task


def countdown_dataset_tasks(
    records: Sequence[Mapping[str, Any]],
    *,
    name: str = "countdown",
    field_map: Mapping[str, str] | None = None,
) -> DatasetTasks:
    """Countdown tasks from records in the ``nums``/``target`` schema (see module docstring)."""
    return DatasetTasks(
        records,
        name=name,
        required=("nums", "target"),
        field_map=field_map,
        transform=check_task_record,
    )


def load_countdown_tasks(
    dataset: str | Path,
    *,
    field_map: Mapping[str, str] | None = None,
    split: str | None = None,
) -> DatasetTasks:
    """Read a Countdown dataset: a local ``.jsonl``/``.json``/``.parquet`` file or ``hf:<name>``.

    Args:
        dataset: The file, or ``"hf:Jiayi-Pan/Countdown-Tasks-3to4"`` when online.
        field_map: ``{"nums": column, "target": column}`` for other column names.
        split: Split of an ``hf:`` dataset (``"train"`` for Countdown-Tasks-3to4).

    Raises:
        InvalidDataset: If the file is missing or a record is not a valid task.
    """
    records = load_records(dataset, split=split)
    return countdown_dataset_tasks(records, name=Path(str(dataset)).stem, field_map=field_map)
