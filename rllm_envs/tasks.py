r"""Task sources: where an environment's tasks come from.

Two kinds, behind one random-access interface (:class:`TaskSource`):

* :class:`ProceduralTasks` -- an offline generator. Task ``i`` is a pure function of
  ``(seed, i)`` and the generator's own parameters (its difficulty), so it is reproducible
  across processes and machines with no data files. This is every env's embedded default.

Procedural task seeds come in two universes that share no question: seeds below
:data:`EVAL_SEED_START` are the **training** universe (every env's default ``task_seed=0``),
seeds from it up are the **evaluation** universe (:data:`EVAL_TASK_SEED`, used by the
leaderboard and held-out evaluations). A question belongs to one universe by a hash of its
universe key (:func:`question_key`): the sorted multiset of the numbers the policy sees (``3``,
``3.0`` and ``03`` are one number, signs are dropped, ``3/4`` holds 3 and 4), or, for a question
without numbers, its canonical text (names masked, case and whitespace folded). A source only
yields questions of its own universe, so training on any training seed never shows an evaluation
question, nor one that differs from it only in the words around the same numbers or in their
order (``lcm(4, 6)`` and ``lcm(6, 4)``; a rectangle's width and length swapped), which a policy
that memorises answers by the numbers of a question would otherwise look up. A generator whose
numbers do not split its questions (the same template constants in every question) is keyed by
canonical text instead (:meth:`ProceduralTasks.universe_key`).
* :class:`DatasetTasks` -- records read by :func:`load_records` from a local JSONL/JSON/Parquet
  file, or from the Hugging Face hub (``"hf:<name>"``, needs network and the ``datasets``
  extra), mapped onto the family's schema with ``field_map``.

A task is a plain ``dict`` with at least an ``"id"`` key; each family documents its fields.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import numbers
import pickle
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np

from rllm_envs.error import InvalidDataset, InvalidEnvConfig, require

__all__ = [
    "Task",
    "TaskSource",
    "ProceduralTasks",
    "DatasetTasks",
    "load_records",
    "rename_fields",
    "task_rng",
    "EVAL_SEED_START",
    "EVAL_TASK_SEED",
    "seed_universe",
    "question_text",
    "canonical_text",
    "number_key",
    "text_key",
    "question_key",
    "question_universe",
    "key_universe",
    "Mixture",
    "AnswerBalance",
    "answer_balance",
    "SlotSearch",
    "search_every_slot",
    "answer_label",
    "MAX_ANSWER_SHARE",
    "MIN_SLOT_SHARE",
    "MIN_UNIVERSE_KEYS",
    "grow_probe",
]

Task = dict[str, Any]

#: Procedural sources are unbounded in principle; this is the index range they expose.
PROCEDURAL_SIZE = 2**31 - 1
#: Task seeds from here up are the evaluation universe; seeds below it are for training.
EVAL_SEED_START = 2**30
#: The evaluation universe's default seed (leaderboard and held-out evaluations).
EVAL_TASK_SEED = EVAL_SEED_START
#: One question in this many belongs to the evaluation universe.
_EVAL_SHARE = 8
#: Draws of one task index before a source too small to split keeps its first draw.
_MAX_DRAWS = 64
#: Task fields that hold the question, in order of preference.
_QUESTION_FIELDS = ("problem", "question", "prompt", "statement", "problem_statement")
#: Task fields a policy never sees (answers, solutions, grading data): never part of a key.
_HIDDEN_FIELDS = frozenset(
    {
        "id",
        "answer",
        "answers",
        "solution",
        "solutions",
        "reference",
        "reference_answer",
        "gold",
        "patch",
        "test_patch",
        "hidden_tests",
        "metadata",
        "plan",
        "hops",
        "difficulty",
        "family",
    }
)
#: A word starting with a letter; masked when it is capitalised (a capital, then a small
#: letter: names, places, and sentence starts, harmlessly). All-capital words (``"HHFG"``,
#: ``"ABC"``) and single capitals are data or variables and stay.
_WORD = re.compile(r"(?<!\w)[^\W\d_][\w'\u2019]*")
#: A number as a policy reads it: a run of digits, with its decimals. Signs are not part of it
#: (``x - 3`` and ``x + (-3)`` hold one 3), a fraction holds its numerator and denominator
#: (``\frac{3}{4}``, ``3/4`` and ``4/3`` hold 3 and 4: reciprocals, ``a \times b`` against
#: ``a \div 1/b``, often share an answer), and digits touching letters count (``7th``,
#: ``x^2``, ``player_0``).
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")
#: The largest share one answer may hold of a universe's tasks where its answers allow it (a
#: family with ``k < 20`` possible answers is balanced to ``1 / k`` each).
MAX_ANSWER_SHARE = 0.05
#: Distinct universe keys each universe must show among a generator's probe draws for a key to
#: split it: with fewer, one question of a universe could hold more than ``MAX_ANSWER_SHARE`` of
#: its tasks, and a constant answer would win it.
MIN_UNIVERSE_KEYS = round(1 / MAX_ANSWER_SHARE)
#: Draws a generator is probed with (seed independent) to choose its universe key and answer
#: balance: about 32 of them fall in the evaluation universe, enough to show 20 distinct keys.
_PROBES = 256
#: Draws of one task index, when answers are balanced, before the rarest draw of the universe is
#: kept: a balanced slot holds at least MIN_SLOT_SHARE of a universe's draws.
_MAX_BALANCED_DRAWS = 4096
#: Tasks a procedural source keeps after making them (the most recent).
_RECENT_TASKS = 256


def seed_universe(seed: int) -> str:
    """``"eval"`` for a task seed of the evaluation universe, else ``"train"``."""
    return "eval" if int(seed) >= EVAL_SEED_START else "train"


def question_text(task: Mapping[str, Any], *, layout: bool = False) -> str:
    """What a policy could memorise of a task: its question field, else its visible fields.

    Without a question field, every field but the id and the hidden ones (answers, solutions,
    grading data) is serialised. Whitespace is collapsed, so two renderings of one question
    are one question; ``layout=True`` keeps a question field's lines (a grid's rows).
    """
    for key in _QUESTION_FIELDS:
        value = task.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip() if layout else " ".join(value.split())
    rest = {k: v for k, v in task.items() if k not in _HIDDEN_FIELDS}
    return json.dumps(rest, sort_keys=True, default=str)


def _capitalised(word: str) -> bool:
    return word[0].isupper() and any(c.islower() for c in word)


def canonical_text(text: str) -> str:
    """``text`` with capitalised words masked, case and whitespace folded, numbers kept.

    Two questions that differ only in names ("Ana is 34 years older than Bo" and "Goran is 34
    years older than Ivo"), in capitalisation or in layout have one canonical text.
    """
    masked = _WORD.sub(lambda m: "N" if _capitalised(m.group()) else m.group(), text)
    return " ".join(masked.casefold().split())


def _question(task: Mapping[str, Any]) -> tuple[str, bool]:
    """What the policy sees of ``task`` and whether it is a natural-language question field."""
    for key in _QUESTION_FIELDS:
        value = task.get(key)
        if isinstance(value, str) and value.strip():
            return value, True
    return question_text(task), False


def number_key(text: str) -> str | None:
    """The sorted multiset of the numbers in ``text``; ``None`` if it has none.

    ``3``, ``03`` and ``3.0`` are one number; signs are dropped and a fraction gives its two
    numbers (see ``_NUMBER``). Number words stay words: every generator here writes its data
    in digits, and its wording differs between templates.
    """
    values = sorted(Decimal(m.group()) for m in _NUMBER.finditer(text))
    if not values:
        return None
    return "numbers: " + " ".join(_plain(v) for v in values)


def _plain(value: Decimal) -> str:
    """``value`` without exponent or trailing zeros (``3.0`` and ``03`` are ``3``)."""
    text = f"{value:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def text_key(task: Mapping[str, Any]) -> str:
    """The canonical text of what the policy sees (:func:`canonical_text`), numbers kept.

    A natural-language question field is canonicalised; a task without one is keyed by its
    visible fields (:func:`question_text`). The universe key of a generator whose numbers do
    not split its questions, and of every question without numbers.
    """
    text, natural = _question(task)
    return canonical_text(text) if natural else text


def question_key(task: Mapping[str, Any]) -> str:
    """The universe key of a task: the numbers the policy sees, whatever the words around them.

    The sorted multiset of the numbers of its question (:func:`number_key`), so questions that
    differ only in wording, names or the order of their numbers share a key; a question without
    numbers is keyed by its canonical text (:func:`text_key`). Without a question field the
    visible fields are read (:func:`question_text`: never answers or solutions). A family with
    a better canonical form (Countdown: the sorted numbers and the target) passes its own
    ``key`` to :class:`ProceduralTasks`.
    """
    text, _ = _question(task)
    return number_key(text) or text_key(task)


def key_universe(key: str) -> str:
    """The universe (``"train"`` or ``"eval"``) a universe key belongs to, by a stable hash."""
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return "eval" if int.from_bytes(digest, "big") % _EVAL_SHARE == 0 else "train"


def question_universe(
    task: Mapping[str, Any], key: Callable[[Mapping[str, Any]], str] | None = None
) -> str:
    """The universe a task's question belongs to: :func:`key_universe` of its key.

    Args:
        task: The task record.
        key: The family's key function (default :func:`question_key`).
    """
    return key_universe((key or question_key)(task))


KeyFn = Callable[[Mapping[str, Any]], str]


def splitting_key(probe: Sequence[Mapping[str, Any]], candidates: Sequence[KeyFn]) -> KeyFn | None:
    """The first of ``candidates`` that splits a generator's questions into two rich universes.

    A key splits when, among the ``probe`` draws, each universe shows at least
    :data:`MIN_UNIVERSE_KEYS` distinct keys: enough questions that none need hold more than
    :data:`MAX_ANSWER_SHARE` of a universe's tasks (where one still draws more often, answer
    balancing caps its answer: ``ProceduralTasks(balance=True)``). A key that leaves a universe
    a handful of questions (a small template space whose few keys happen to hash to
    ``"eval"``) does not split: the next candidate is tried, and ``None`` (both universes draw
    from every question, reported as not held out) is returned when none splits.
    """
    for key in candidates:
        if _split_verdict(probe, key) == "yes":
            return key
    return None


def grow_probe(
    probe: list[Task], draw: Callable[[int], Task], candidates: Sequence[KeyFn], most: int
) -> list[Task]:
    """``probe`` grown with ``draw(i)`` while the first candidate that may split is unsure.

    Unsure: a universe shows fewer than 20 keys, but most of its draws are distinct or so
    many keys were drawn once that more draws would show 20 (:func:`_estimated_keys`). The
    probe grows four times at a time, up to ``most`` draws.
    """
    while len(probe) < most:
        verdicts = [_split_verdict(probe, k) for k in candidates]
        if "unsure" not in verdicts[: verdicts.index("yes") if "yes" in verdicts else None]:
            break
        probe = probe + [draw(i) for i in range(len(probe), min(most, 4 * len(probe)))]
    return probe


def _split_verdict(probe: Sequence[Mapping[str, Any]], key: KeyFn) -> str:
    """``"yes"``, ``"no"``, or ``"unsure"`` (too few draws yet to show a rich space's 20 keys)."""
    counts: dict[str, dict[str, int]] = {"train": {}, "eval": {}}
    for task in probe:
        k = key(task)
        side = counts[key_universe(k)]
        side[k] = side.get(k, 0) + 1
    verdicts = set()
    for side in counts.values():
        if not side:
            return "no"
        if len(side) < MIN_UNIVERSE_KEYS:
            # Most draws distinct, or many keys seen once: more draws would show more keys.
            rich = len(side) >= sum(side.values()) / 2
            rich = rich or _estimated_keys(side) >= MIN_UNIVERSE_KEYS
            verdicts.add("unsure" if rich else "no")
    return "no" if "no" in verdicts else "unsure" if verdicts else "yes"


def _estimated_keys(counts: Mapping[str, int]) -> float:
    """The distinct keys a side would show with many more draws (Chao1, bias-corrected).

    Keys drawn once (``f1``) against keys drawn twice (``f2``) tell whether more draws would
    show more keys: a rich space still shows mostly new keys, an exhausted one repeats them.
    """
    f1 = sum(1 for c in counts.values() if c == 1)
    f2 = sum(1 for c in counts.values() if c == 2)
    return len(counts) + f1 * (f1 - 1) / (2 * (f2 + 1))


def answer_label(task: Mapping[str, Any]) -> str | None:
    """A task's reference answer as compared across tasks (``None``: the task has none).

    Unicode-normalised, case and whitespace folded; a non-string answer is its JSON.
    """
    answer = task.get("answer")
    if answer is None:
        return None
    if not isinstance(answer, str):
        answer = json.dumps(answer, sort_keys=True, default=str)
    return " ".join(unicodedata.normalize("NFKC", answer).casefold().split())


class AnswerBalance:
    """Slots that cap each common answer's share of a universe's tasks at ``1 / slots``.

    Each common answer has a slot of its own; the other answers (the pool: rarer ones, and any
    the sample did not show) share the remaining slots. Each task has a slot (:meth:`target`)
    and keeps a draw whose answer belongs to it. So each common answer holds one slot's share,
    ``1 / slots``, of the universe's tasks, whatever its true share (exactly, to one task, in a
    training universe; on average in an evaluation universe, where exact counts would let a
    client count), and a pool answer holds its part of the pool slots (see
    :func:`answer_balance`). Without pool slots, pool answers are not drawn. Which tasks share
    a slot is the key's secret: with one offset per seed (slot ``(hash(seed) + i) % slots``),
    a client that learnt a family's offset from a few graded replies answered a quarter of a
    private-seed server's Math tasks from their index alone (issue #31, att31t F3), and with
    per-block orders it read a task's block-mates off one reply (s25 att25t F1).

    Args:
        slots: The number of slots.
        assigned: ``{answer label: slot}`` of the common answers (one each).
        counts: The sample counts of the labels (to keep the rarest draw when a slot is not
            filled within the draw limit); absent labels count 0.
    """

    def __init__(
        self, slots: int, assigned: Mapping[str, int], counts: Mapping[str, int] | None = None
    ) -> None:
        self.slots = int(slots)
        self.assigned = dict(assigned)
        self.counts = dict(counts or {})
        self._taken = frozenset(self.assigned.values())
        self._pool = frozenset(range(self.slots)) - self._taken
        self._all = frozenset(range(self.slots))

    @property
    def pool_slots(self) -> int:
        """Slots that the pool answers (those not assigned a slot of their own) fill."""
        return self.slots - len(self._taken)

    def accepts(self, label: str | None, target: int) -> bool:
        """Whether a draw with answer ``label`` (:func:`answer_label`) fills slot ``target``."""
        return target in self.fills(label)

    def fills(self, label: str | None) -> frozenset[int]:
        """The slots a draw with answer ``label`` fills (a pool answer: every pool slot)."""
        if label is None:
            return self._all
        slot = self.assigned.get(label)
        return self._pool if slot is None else frozenset((slot,))

    def rarity(self, label: str | None) -> int:
        """The sample count of ``label``: the fallback draw of an unfilled slot is the rarest."""
        return 0 if label is None else self.counts.get(label, 0)

    def target(self, seed: int, index: int, source: str = "", size: int = 0) -> int:
        """The slot task ``index`` of a universe of ``size`` tasks (task seed ``seed``) fills.

        ``source`` names the universe (family, part, size), so sources served with one seed
        take their slots apart. How depends on the seed's universe (:func:`seed_universe`):

        - **Training** seeds: ``π(index) % slots``, where ``π`` is a permutation of the
          universe's indices keyed by the source and the seed (:func:`_keyed_permutation`).
          Each slot holds ``size // slots`` tasks or one more, exactly, so a common answer
          never passes its cap however small the universe (slots drawn per task on their own
          left gsm_symbolic's '5' on 6% of a 64-task training universe against its 5%, s26),
          and which tasks share a slot is the key's secret. A policy cannot count across
          episodes, so exactness costs nothing there.
        - **Evaluation** seeds: a hash of the task alone. With exact slots a client that sees
          graded replies can count: the tasks left hold the slots not yet used up (a yes/no
          universe of 64 tasks: 0.571 against 0.5, docs/integrations.md). Independent slots
          tell it nothing of the tasks left; a common answer then holds ``1 / slots`` on
          average (a binomial spread on a small set).

        Per-block orders (each run of ``slots`` consecutive tasks taking every slot once) let a
        client that chooses indices read a task's block-mates off one graded reply (s25 att25t
        F1); neither scheme has blocks. Without a ``size`` (or past it), a training task's slot
        is a hash of the task too.
        """
        if seed_universe(seed) == "train" and 0 <= index < size:
            key = hashlib.blake2b(f"slot:{source}:{seed}".encode(), digest_size=16).digest()
            return _keyed_permutation(index, size, key) % self.slots
        digest = hashlib.blake2b(f"slot:{source}:{seed}:{index}".encode(), digest_size=16)
        return int.from_bytes(digest.digest(), "big") % self.slots

    def __repr__(self) -> str:
        return (
            f"AnswerBalance(slots={self.slots}, common={len(self.assigned)} answers, "
            f"pool_slots={self.pool_slots})"
        )


def _keyed_permutation(index: int, size: int, key: bytes) -> int:
    """Where a permutation of ``range(size)`` keyed by ``key`` sends ``index``.

    A four-round Feistel network on the smallest even number of bits that holds ``size``,
    walked until it lands in range (cycle walking keeps it a permutation of the range): the
    image of one index says nothing of another's without the key.
    """
    half = max(1, ((size - 1).bit_length() + 1) // 2)
    mask = (1 << half) - 1
    value = index
    while True:
        left, right = value >> half, value & mask
        for round_ in range(4):
            data = key + bytes((round_,)) + right.to_bytes(16, "big")
            mixed = int.from_bytes(hashlib.blake2b(data, digest_size=16).digest(), "big")
            left, right = right, left ^ (mixed & mask)
        value = (left << half) | right
        if value < size:
            return value


#: Whether a balanced task's search goes on until every slot has a draw (:func:`search_every_slot`).
_EVERY_SLOT = False


def search_every_slot(enabled: bool = True) -> None:
    """Make the search for a new balanced task draw on until every answer slot has a draw.

    Process-wide. A balanced task is the first draw whose answer fills its slot, so a task
    whose slot's answers are rare takes more draws to find: a client that timed a server's
    first reset of each index learnt answers from the time (s26 att26 F1: self_reference
    0.32 against the best constant's 0.21). Drawing on until every slot has a draw makes the
    number of draws, and so the time, the same whatever the task's slot; the task found is
    the same draw. It costs a new task about 3 to 4 times the draws, so the env server turns
    it on only for an operator's private ``task_seed``
    (``rllm_adapters.openenv.server.create_app``: the default seeds' tasks anyone can make);
    in-process use, where no client times resets, does not.
    """
    global _EVERY_SLOT
    _EVERY_SLOT = bool(enabled)


class SlotSearch:
    """The search for one balanced task: the first draw that fills its slot is the task.

    :meth:`offer` each draw of the universe that may be a task, in order, until it says the
    search is done; :attr:`found` is then the task (``None``: the slot was not filled).
    """

    def __init__(self, balance: AnswerBalance | None, target: int) -> None:
        self.balance = balance
        self.target = target
        self.found: Task | None = None
        self._filled: set[int] = set()

    def offer(self, label: str | None, draw: Task) -> bool:
        """Offer ``draw`` (answer ``label``); whether the search is done."""
        if self.balance is None:
            self.found = self.found or draw
            return True
        if not _EVERY_SLOT:
            if self.balance.accepts(label, self.target):
                self.found = draw
            return self.found is not None
        fills = self.balance.fills(label)
        if self.found is None and self.target in fills:
            self.found = draw
        self._filled |= fills
        return len(self._filled) == self.balance.slots


#: The least share of a universe's draws that one slot's answers may hold: a common answer
#: rarer than this has no slot of its own, and the pool needs as much to fill a slot, so a task
#: costs at most about ``1 / MIN_SLOT_SHARE`` draws.
MIN_SLOT_SHARE = 1 / 64
#: Times an answer must be seen to get a slot of its own: its share known to about half, so a
#: rare answer seen by chance does not get a slot that costs many draws to fill.
_MIN_SLOT_COUNT = 5


def answer_balance(
    labels: Sequence[str | None], pooled: Sequence[str | None] = ()
) -> AnswerBalance | None:
    """The balance a universe needs, from the answer labels of a sample of its draws.

    The most slots (up to 20 = ``1 / MAX_ANSWER_SHARE``) over the choices of how many of the most
    common answers get a slot of their own (``c``). Each such answer must be seen five times and
    hold at least :data:`MIN_SLOT_SHARE` of the sample; the pool (the other answers, mass ``r``)
    gets ``f`` slots, as many as keep its largest answer (its count plus one standard error, so an
    underestimate does not lift it) within one slot's share: ``f = r / top``, and none if the pool
    holds less than :data:`MIN_SLOT_SHARE`. So a common answer holds ``1 / (c + f)`` of the tasks
    and a pool answer at most about as much: a family with ``k < 20`` labels of reasonable mass is
    balanced to ``1 / k`` each (yes/no to a half, weekdays to a seventh), a skewed one with a long
    tail (letter counts) to ``1 / (c + f)``, an open-answer family to at most
    :data:`MAX_ANSWER_SHARE`. Ties go to the fewest draws per task. ``None`` when no answer needs a
    slot of its own (the pool alone does as well: no answer is common), or the sample is too small
    (under 8 labels, or one label).

    ``pooled`` is accepted for compatibility and not used: each universe is balanced on its own
    stream's sample.
    """
    del pooled
    counts = _counts(labels)
    n = sum(counts.values())
    if n < 8 or len(counts) < 2:
        return None
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    best: tuple[int, float, int, int] | None = None  # (slots, -cost, common, pool slots)
    taken = 0
    cost = 0.0  # sum over the common slots of draws per task (n / count)
    for common in range(min(len(ranked), MIN_UNIVERSE_KEYS) + 1):
        if common:
            count = ranked[common - 1][1]
            if count < max(_MIN_SLOT_COUNT, MIN_SLOT_SHARE * n):
                break
            taken += count
            cost += n / count
        rest = n - taken
        pool = 0
        if common < len(ranked) and rest >= MIN_SLOT_SHARE * n:
            top = ranked[common][1]
            pool = max(1, int(rest / (top + math.sqrt(top))))
        slots = min(MIN_UNIVERSE_KEYS, common + pool)
        pool = slots - common
        if slots < 2:
            continue
        draws = (cost + (pool * n / rest if pool else 0.0)) / slots
        option = (slots, -draws, common, pool)
        if best is None or option[:2] > best[:2]:
            best = option
    if best is None or best[2] == 0:
        return None
    slots, _, common, _ = best
    assigned = {label: j for j, (label, _) in enumerate(ranked[:common])}
    return AnswerBalance(slots, assigned, counts)


def _counts(labels: Iterable[str | None]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for label in labels:
        if label is not None:
            counts[label] = counts.get(label, 0) + 1
    return counts


class Mixture:
    """A generator made of named parts: a part drawn uniformly, then a task of that part.

    :class:`ProceduralTasks` chooses the universe key and the answer balance of each part on
    its own, and redraws within the part a task index drew, so one part's small question space
    neither collapses a universe nor shifts the parts' weights.

    Args:
        parts: ``{name: generate}``, each a picklable ``(rng) -> task``.
        field: The task field that names its part (set on every task).
    """

    def __init__(
        self, parts: Mapping[str, Callable[[np.random.Generator], Task]], *, field: str
    ) -> None:
        if not parts:
            raise InvalidEnvConfig("Expects a Mixture of at least one part.")
        self.parts = dict(parts)
        self.names = tuple(self.parts)
        self.field = field

    def pick(self, rng: np.random.Generator) -> str:
        """The part a task draws (uniform)."""
        return self.names[int(rng.integers(len(self.names)))]

    def __call__(self, rng: np.random.Generator) -> Task:
        """A task of a uniformly drawn part (no universe or balance: see ProceduralTasks)."""
        name = self.pick(rng)
        task = self.parts[name](rng)
        task[self.field] = name
        return task


def probe_rng(index: int) -> np.random.Generator:
    """The generator of probe draw ``index``: the same for every task seed (and universe)."""
    return np.random.default_rng(np.random.SeedSequence([0x70726F6265, index, 0, 0]))


def check_difficulty(difficulty: object, levels: Iterable[int]) -> int:
    """``difficulty`` as an int if it is one of ``levels``; the one check every env uses.

    Integers of any kind (``numpy.int64`` included) are accepted; ``True``/``False`` and
    floats are not, although ``True in [1, 2]`` holds in Python.

    Raises:
        InvalidEnvConfig: For anything else, naming the allowed levels.
    """
    allowed = sorted(levels)
    if isinstance(difficulty, bool) or not isinstance(difficulty, numbers.Integral):
        ok = False
    else:
        ok = int(difficulty) in allowed
    if not ok:
        raise InvalidEnvConfig(
            f"Expects `difficulty` to be an int in {allowed}, actual: {difficulty!r}."
        )
    return int(difficulty)  # type: ignore[call-overload]


def task_rng(seed: int, index: int) -> np.random.Generator:
    """The random generator for task ``index`` of a procedural source seeded with ``seed``."""
    return np.random.default_rng(np.random.SeedSequence([seed, index]))


class TaskSource(ABC):
    """A random-access, finite collection of tasks."""

    name: str

    @abstractmethod
    def __len__(self) -> int:
        """Number of tasks."""

    @abstractmethod
    def task(self, index: int) -> Task:
        """Return task ``index`` (``0 <= index < len(self)``); always a fresh dict."""

    def prepare(self) -> None:  # noqa: B027 (a source with nothing to prepare does nothing)
        """Do now what the first tasks would do once per process (a server, before serving)."""

    def __getitem__(self, index: int) -> Task:
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise InvalidEnvConfig(
                f"Expects a task index to be an int, actual type: {type(index).__name__}."
            )
        n = len(self)
        if not 0 <= index < n:
            raise InvalidEnvConfig(
                f"Expects a task index in [0, {n}) for task source `{self.name}`, actual: {index}."
            )
        return self.task(int(index))

    def universe_key(self, task: Mapping[str, Any]) -> str:
        """The key that decides the universe of ``task`` (default :func:`question_key`)."""
        return question_key(task)


class ProceduralTasks(TaskSource):
    """Tasks made on demand by ``generate(rng)``, where ``rng = task_rng(seed, index)``.

    The source yields only questions of its seed's universe (:func:`seed_universe`, decided by
    the hash of the task's universe key): a draw whose question belongs to the other universe
    is drawn again from ``SeedSequence([seed, index, attempt])``. The universe key is ``key``,
    else the coarsest of :func:`question_key` (the numbers) and :func:`text_key` (the
    canonical text) that splits the generator into two universes of at least
    :data:`MIN_UNIVERSE_KEYS` distinct questions each (:func:`splitting_key` over ``_PROBES``
    draws of seed-independent generators, so every seed keys alike). A source of one task, or
    one whose keys do not split it keeps the first draw: with a small question space both
    universes then draw from the same questions (not held out); where no question repeats
    (each task a new question: random names, a table of its own, with few keys because names
    are masked), nothing is shared either (:meth:`questions_repeat`).

    With ``balance=True`` the answers are balanced too, on the stream the source yields: the probe
    draws of the seed's universe (about 128, 512 where some answer is common) estimate its answer
    shares and, where one is common, :class:`AnswerBalance` slots (:func:`answer_balance`) give each
    common answer ``1 / slots`` of the universe's tasks (exactly, to one task, for a single
    generator: :meth:`AnswerBalance.target`) and the rarer ones the other slots: each label of
    reasonable mass gets a slot, up to ``1 / MAX_ANSWER_SHARE`` slots, so a constant answer earns
    about what a guess among the labels would. An unfilled slot (past the draw limit) takes the
    rarest answer drawn.

    A :class:`Mixture` generator is split and balanced part by part: task ``i`` draws its part
    first and redraws only within it.

    Args:
        generate: A picklable callable (module-level function, ``functools.partial``, callable
            object or :class:`Mixture`) that builds one task dict from a ``numpy`` generator.
            Its parameters (difficulty, sizes) are bound into it.
        name: Prefix of task ids, e.g. ``"frozenlake-d1"``.
        seed: Seed of the task universe; task ``i`` is the same for the same seed.
        size: Number of distinct indices exposed.
        key: A picklable callable giving a task's universe key: the canonical form of what
            the policy sees, equal for near-duplicates (default: see above). It must not read
            answers or solutions.
        balance: Balance reference answers (:func:`answer_label` of each task) as above.
        split: Redraw a question of the other universe (the default). ``False`` for a
            generator whose questions are all of its seed's universe already (Search: each
            task seed plays its own world, named with words of its universe): no question is
            redrawn for its key, so the seed keeps every question of its world, and
            :meth:`splitting_keys` reads ``None``. Answers are still balanced.
        probe: For a generator whose tasks are costly to build: a picklable callable that
            draws from ``rng`` exactly what ``generate`` does for the question and answer
            fields and returns only those (and the fields a ``key`` reads). The probe draws
            that choose the key and the answer balance (up to ``4 * _PROBES``) use it.
    """

    def __init__(
        self,
        generate: Callable[[np.random.Generator], Task],
        *,
        name: str,
        seed: int = 0,
        size: int = PROCEDURAL_SIZE,
        key: KeyFn | None = None,
        balance: bool = False,
        split: bool = True,
        probe: Callable[[np.random.Generator], Task] | None = None,
    ) -> None:
        if probe is not None and isinstance(generate, Mixture):
            raise InvalidEnvConfig("`probe` applies to a plain generator, not a Mixture.")
        if not isinstance(seed, (int, np.integer)) or seed < 0:
            raise InvalidEnvConfig(
                f"Expects `task_seed` to be a non-negative int, actual: {seed!r}."
            )
        if size < 1:
            raise InvalidEnvConfig(f"Expects a procedural source size >= 1, actual: {size}.")
        self.generate = generate
        self.name = name
        self.seed = int(seed)
        self.size = int(size)
        self.key = key
        self.balance = bool(balance)
        self.split = bool(split)
        self.probe = probe
        self._plans: dict[str, _Plan] = {}
        self._recent: dict[int, Task] = {}

    def __len__(self) -> int:
        return self.size

    def _candidates(self) -> tuple[KeyFn, ...]:
        return (self.key,) if self.key is not None else (question_key, text_key)

    def _parts(self) -> dict[str, Callable[[np.random.Generator], Task]]:
        gen = self.generate
        return dict(gen.parts) if isinstance(gen, Mixture) else {"": gen}

    def prepare(self) -> None:
        """Choose every part's plan now (cached for the process).

        The first task of each part chooses it otherwise (34-123 ms a part of Math's, s39
        att39f F2).
        """
        for part in self._parts():
            self._plan(part)

    def _plan(self, part: str) -> _Plan:
        if part not in self._plans:
            candidates = self._candidates() if self.split else ()
            self._plans[part] = _cached_plan(
                self.probe or self._parts()[part], candidates, self.balance
            )
        return self._plans[part]

    def _part_of(self, task: Mapping[str, Any]) -> str:
        gen = self.generate
        if isinstance(gen, Mixture):
            name = task.get(gen.field)
            return str(name) if name in gen.parts else gen.names[0]
        return ""

    def splitting_keys(self) -> dict[str, KeyFn | None]:
        """Per part (``""`` for a plain generator), the key that splits it; ``None``: no split."""
        return {part: self._plan(part).key for part in self._parts()}

    def splitting_key(self) -> KeyFn | None:
        """The key that splits this generator into universes; ``None`` if any part is unsplit.

        For a :class:`Mixture`, see :meth:`splitting_keys` for each part's.
        """
        keys = list(self.splitting_keys().values())
        return None if any(k is None for k in keys) else keys[0]

    def answer_balance(self, part: str = "") -> AnswerBalance | None:
        """The answer balance of this seed's universe (of ``part`` of a :class:`Mixture`)."""
        return self._plan(part).balance[seed_universe(self.seed)]

    def answer_slot(self, index: int, part: str = "") -> int | None:
        """The answer slot task ``index`` fills (``None`` when ``part`` is not balanced)."""
        balance = self.answer_balance(part) if self.size > 1 else None
        if balance is None:
            return None
        return balance.target(self.seed, index, f"{self.name}:{part}:{self.size}", self.size)

    def questions_repeat(self, part: str = "") -> bool:
        """Whether a question of this generator (``part`` of a :class:`Mixture`) recurs.

        ``False`` when no question text repeats among the probe draws: each task is a new
        question (random names, a table of its own), so one unsplit universe shares nothing
        with another either, and a policy that memorises training answers finds none to
        replay.
        """
        return self._plan(part).repeats

    def universe_key(self, task: Mapping[str, Any]) -> str:
        """The key that decides the universe of ``task`` (see the class docstring).

        An unsplit part whose questions never repeat (:meth:`questions_repeat`) is keyed by
        its question text: what two universes would share if they shared anything.
        """
        plan = self._plan(self._part_of(task))
        if plan.key is None and not plan.repeats:
            return question_text(task)
        return (plan.key or self._candidates()[-1])(task)

    def task(self, index: int) -> Task:
        """Task ``index`` (a question of the seed's universe, answers balanced).

        Recently made tasks are kept (a pure function of the index: a group of rollouts, or
        a replay, resets one task many times, and a balanced task of the evaluation universe
        costs about ``8 * slots`` draws).
        """
        kept = self._recent.get(index)
        if kept is None:
            kept = self._make(index)
            if len(self._recent) >= _RECENT_TASKS:
                del self._recent[next(iter(self._recent))]
            self._recent[index] = kept
        return copy.deepcopy(kept)

    def _make(self, index: int) -> Task:
        gen = self.generate
        rng = task_rng(self.seed, index)
        if isinstance(gen, Mixture):
            part = gen.pick(rng)
            draw_part = gen.parts[part]
        else:
            part, draw_part = "", gen
        task = draw_part(rng)
        if self.size > 1:
            plan = self._plan(part)
            universe = seed_universe(self.seed)
            balance = plan.balance[universe]
            target = self.answer_slot(index, part) or 0
            if plan.key is not None or balance is not None:
                fallback: Task | None = None
                rarest = 0
                search = SlotSearch(balance, target)
                limit = _MAX_DRAWS * 8 if balance is None else _MAX_BALANCED_DRAWS
                for attempt in range(limit):
                    draw = (
                        task if attempt == 0 else draw_part(_redraw_rng(self.seed, index, attempt))
                    )
                    if plan.key is not None and key_universe(plan.key(draw)) != universe:
                        continue
                    label = answer_label(draw)
                    done = search.offer(label, draw)
                    # Past the limit, the rarest answer drawn: a common one would pass its cap.
                    # Kept on every draw, found or not: the same work whatever the slot.
                    rarity = 0 if balance is None else balance.rarity(label)
                    if balance is not None and (fallback is None or rarity < rarest):
                        fallback, rarest = draw, rarity
                    if done:
                        break
                task = search.found or fallback or task
        if isinstance(gen, Mixture):
            task[gen.field] = part
        task.setdefault("id", f"{self.name}-s{self.seed}-{index}")
        return task

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_plans"] = {}  # chosen again (and cached) where it is unpickled
        state["_recent"] = {}
        return state


class _Plan:
    """A generator part's universe key, answer balance per universe, and question repeats.

    ``repeats`` is ``False`` when no question text repeats among the probe draws.
    """

    def __init__(
        self, key: KeyFn | None, balance: dict[str, AnswerBalance | None], repeats: bool = True
    ) -> None:
        self.key = key
        self.balance = balance
        self.repeats = repeats


#: Plans already chosen in this process: by the pickled generator, candidates and balance flag,
#: or by the objects themselves when they do not pickle (a local function).
_PLANS: dict[object, _Plan] = {}


def _cached_plan(
    generate: Callable[[np.random.Generator], Task], candidates: tuple[KeyFn, ...], balance: bool
) -> _Plan:
    ident: object
    try:
        ident = pickle.dumps((generate, candidates, balance))
    except (pickle.PicklingError, AttributeError, TypeError):
        ident = (generate, candidates, balance)
    if ident not in _PLANS:
        if len(_PLANS) >= 1024:
            _PLANS.clear()
        probe = [generate(probe_rng(i)) for i in range(_PROBES)]
        probe = grow_probe(probe, lambda i: generate(probe_rng(i)), candidates, 4 * _PROBES)
        key = splitting_key(probe, candidates)
        balances: dict[str, AnswerBalance | None] = {"train": None, "eval": None}
        if balance:
            more: list[Task] = []
            for universe in balances:
                stream = _universe_labels(probe, key, universe)
                counts = _counts(stream)
                if counts and max(counts.values()) >= 2 and len(probe) < 4 * _PROBES:
                    # An answer repeats: count the shares on a larger sample of this
                    # universe (the evaluation universe holds about an eighth of the draws),
                    # so that which answers get a slot of their own (each seen five times and
                    # holding MIN_SLOT_SHARE of the draws) and how many slots the rarer ones
                    # fill are known well.
                    more = more or [generate(probe_rng(i)) for i in range(len(probe), 4 * _PROBES)]
                    stream += _universe_labels(more, key, universe)
                balances[universe] = answer_balance(stream)
        texts = [question_text(t) for t in probe]
        _PLANS[ident] = _Plan(key, balances, repeats=len(set(texts)) < len(texts))
    return _PLANS[ident]


def _universe_labels(
    draws: Sequence[Mapping[str, Any]], key: KeyFn | None, universe: str
) -> list[str | None]:
    return [answer_label(t) for t in draws if key is None or key_universe(key(t)) == universe]


def _redraw_rng(seed: int, index: int, attempt: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed, index, attempt]))


def rename_fields(
    record: Mapping[str, Any], field_map: Mapping[str, str] | None, *, name: str, index: int
) -> dict[str, Any]:
    """A copy of ``record`` with the ``{schema_field: record_field}`` renames of ``field_map``.

    Unmapped fields keep their names.

    Raises:
        InvalidDataset: If a mapped record field is missing (names the dataset ``name``, the
            record ``index`` and the fields it has).
    """
    task = dict(record)
    for schema_field, record_field in (field_map or {}).items():
        if record_field not in record:
            raise InvalidDataset(
                f"Dataset `{name}` record {index} has no field `{record_field}` (mapped to "
                f"`{schema_field}` by field_map). Available fields: {sorted(record)}."
            )
        task[schema_field] = record[record_field]
    return task


class DatasetTasks(TaskSource):
    """Tasks read from records, with fields renamed onto a family's schema.

    Args:
        records: The raw records (dicts).
        name: Source name used in task ids and error messages.
        required: Schema fields every task must have after mapping.
        field_map: ``{schema_field: record_field}`` renames, for datasets whose columns have
            other names (e.g. ``{"problem": "question"}``). Unmapped fields keep their names.
        transform: Optional picklable callable applied to each mapped record (e.g. to parse a
            GSM8K ``#### 42`` answer). It may raise :class:`ValueError` for a bad record.

    Raises:
        InvalidDataset: If there are no records or a required field is missing.
    """

    def __init__(
        self,
        records: Sequence[Mapping[str, Any]],
        *,
        name: str,
        required: Sequence[str] = (),
        field_map: Mapping[str, str] | None = None,
        transform: Callable[[Task], Task] | None = None,
    ) -> None:
        if len(records) == 0:
            raise InvalidDataset(f"Dataset `{name}` has no records.")
        field_map = dict(field_map or {})
        tasks: list[Task] = []
        for i, record in enumerate(records):
            task = rename_fields(record, field_map, name=name, index=i)
            missing = [f for f in required if f not in task]
            if missing:
                hint = ", ".join(f'"{f}": "<column>"' for f in missing)
                raise InvalidDataset(
                    f"Dataset `{name}` record {i} lacks required field(s) {missing}; available "
                    f"fields: {sorted(record)}. Pass field_map={{{hint}}} to map your columns."
                )
            if transform is not None:
                try:
                    task = transform(task)
                except ValueError as e:
                    raise InvalidDataset(f"Dataset `{name}` record {i}: {e}") from e
            task["id"] = str(task.get("id", f"{name}-{i}"))
            tasks.append(task)
        self.name = name
        self._tasks = tasks

    def __len__(self) -> int:
        return len(self._tasks)

    def task(self, index: int) -> Task:
        """Return a copy of record ``index``."""
        return dict(self._tasks[index])


def load_records(dataset: str | Path, *, split: str | None = None) -> list[dict[str, Any]]:
    """Read a list of records from a local file or the Hugging Face hub.

    Args:
        dataset: A local ``.jsonl``, ``.json`` (a list of objects) or ``.parquet`` file, or
            ``"hf:<name>"`` / ``"hf:<name>:<config>"`` to load through ``datasets`` (needs
            network access and ``pip install "rllm-envs[datasets]"``).
        split: The split for ``hf:`` datasets (default ``"test"``); ignored for files.

    Returns:
        The records as dicts.

    Raises:
        InvalidDataset: If the file is missing, unreadable or of an unknown format.
        DependencyNotInstalled: If Parquet or ``hf:`` is used without the extra.
    """
    spec = str(dataset)
    if spec.startswith("hf:"):
        return _load_hf(spec[3:], split or "test")
    path = Path(spec).expanduser()
    if not path.is_file():
        raise InvalidDataset(
            f"Expects `dataset` to be a local .jsonl/.json/.parquet file or 'hf:<name>', "
            f"actual: {spec!r} (no such file)."
        )
    suffix = path.suffix.lower()
    try:
        if suffix == ".jsonl":
            with path.open(encoding="utf-8") as f:
                records = [json.loads(line) for line in f if line.strip()]
        elif suffix == ".json":
            records = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(records, dict) and "data" in records:
                records = records["data"]
        elif suffix == ".parquet":
            pq = require("pyarrow.parquet", "datasets", feature="Reading Parquet datasets")
            records = pq.read_table(path).to_pylist()
        else:
            raise InvalidDataset(
                f"Expects `dataset` to end in .jsonl, .json or .parquet, actual: {path.name!r}."
            )
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InvalidDataset(f"Cannot parse dataset file {path}: {e}") from e
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise InvalidDataset(f"Expects dataset file {path} to hold a list of JSON objects.")
    return records


def _load_hf(name: str, split: str) -> list[dict[str, Any]]:
    datasets = require("datasets", "datasets", feature="Loading `hf:` datasets")
    repo, _, config = name.partition(":")
    try:
        ds = datasets.load_dataset(repo, config or None, split=split)
    except Exception as e:  # the hub raises many types; all mean "cannot load this"
        raise InvalidDataset(
            f"Cannot load hf:{name} split {split!r} ({type(e).__name__}: {e}). Loading from the "
            "hub needs network access; offline, download it once and pass the local file path."
        ) from e
    return [dict(r) for r in ds]
