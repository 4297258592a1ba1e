"""Degenerate policies that learn from other tasks: a surface classifier and a fixed shape.

Both solve nothing: they read other tasks' questions and answers, never the reasoning a task
asks for. :func:`rllm_envs.testing.check_reward_hacking` plays them like its other policies,
with two differences:

* ``unsupported(env, memory)`` says why a policy cannot run on an env (no task source with
  questions and answers, answers that are no expressions); the report then lists it as
  ``unsupported`` with that reason instead of playing it.
* ``bar(memory)`` is the policy it must beat besides the random baseline: the best constant
  answer of the same draws. A classifier that only learns a skewed answer distribution earns
  what the constant earns, which :data:`~rllm_envs.testing.hacking.DEGENERATE_POLICIES`'
  ``constant-answer`` already judges; a tell is what it earns beyond that.

:class:`SurfaceClassifier` fits a naive Bayes of the answer on the surface features of the
question (:func:`rllm_envs.reasoning_gym.surface.features`: tokens, adjacent pairs, tokens on
a line with a name, counts, the length and distinct characters of the strings that end the
question and how two of them compare) over the env's own training draws (``env.unwrapped.tasks``
records, other tasks than the one played) and answers each episode's task with its
prediction. It is the checker's side of ``rllm/ReasoningGym-v0``'s surface probe
(:mod:`rllm_envs.reasoning_gym.surface`), which refuses such families for held-out
evaluation; an env of any kind whose answers follow from its question's wording fails it.

:class:`FixedShape` reads the oracle's answers to other tasks as expressions, replaces their
numbers by slots (``(a + b) - c``), and answers every task with the most common shape filled
with the numbers its question gives, in order (Countdown: a popular operator shape solves a
share of tasks without any search).

:class:`CountRegression` and :class:`GridDistances` fit an integer answer by least squares on
what the question's counts give (how often each token and symbol occurs) and on its grid's
geometry (distances between its symbols' cells, walls and rules ignored): the structural
shortcuts of counting and grid tasks that no surface feature shows.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np

from rllm_envs.tasks import question_text

__all__ = [
    "CountRegression",
    "FixedShape",
    "GridDistances",
    "SurfaceClassifier",
    "constant_bar",
    "count_features",
    "grid_features",
]

#: Task fields that hold a reference answer (as the reference probe reads them).
_REFERENCE_FIELDS = ("answer", "answers", "solution", "target")
#: Answers the classifier models (the most common of the training draws).
_MAX_CLASSES = 40
#: Count features the regression fits (the most common of the training draws): few enough
#: that a few hundred draws fit them without memorising single questions.
MAX_COUNT_FEATURES = 40
_INTEGER = re.compile(r"-?\d{1,12}")
_F = TypeVar("_F")


def _reference(record: Mapping[str, Any]) -> str | None:
    for name in _REFERENCE_FIELDS:
        value = record.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    return None


def _label(answer: str) -> str:
    return " ".join(answer.casefold().split())


@dataclass
class _Fit:
    """A fitted classifier: its vocabulary, class answers and log tables."""

    columns: dict[str, int]
    answers: list[str]
    log_p: np.ndarray
    log_q: np.ndarray
    prior: np.ndarray
    constant: str

    def predict(self, question: str) -> str:
        from rllm_envs.reasoning_gym.surface import features

        x = np.zeros(len(self.columns))
        for name in features(question):
            j = self.columns.get(name)
            if j is not None:
                x[j] = 1.0
        scores = x @ self.log_p + (1.0 - x) @ self.log_q + self.prior
        return self.answers[int(scores.argmax())]


def constant_bar(answers: Sequence[str]) -> str | None:
    """The most common answer (the best constant) among ``answers``."""
    counts = Counter(_label(a) for a in answers)
    if not counts:
        return None
    best = counts.most_common(1)[0][0]
    return next(a for a in answers if _label(a) == best)


class _Predictor(Protocol):
    constant: str

    def predict(self, question: str) -> str: ...


@dataclass
class _FromTasks:
    """A policy fitted on the env's own task records (questions and reference answers).

    Subclasses fit with ``_fit_records``; this reads the records, keeps one fit per env and
    one without the played question's own draws, and answers each episode's first turn.
    """

    draws: int = 300
    min_draws: int = 60
    #: Whether the policy reads a question's lines (a grid's rows) or its words alone.
    layout: ClassVar[bool] = False
    # Fits by env (a fresh copy per check: ``dataclasses.replace`` starts them empty).
    _fits: dict[int, tuple[_Predictor | None, str | None]] = field(
        default_factory=dict, init=False, repr=False
    )
    _records_of: dict[int, list[tuple[str, str]]] = field(
        default_factory=dict, init=False, repr=False
    )
    _without: dict[tuple[int, str], _Predictor | None] = field(
        default_factory=dict, init=False, repr=False
    )
    # Features by (featurizer, question): each fit without a played question reads the same
    # draws again, so a question's features are computed once per check, not once per episode.
    _features: dict[tuple[Hashable, str], Any] = field(default_factory=dict, init=False, repr=False)

    def _memo(self, featurize: Callable[[str], _F], key: Hashable) -> Callable[[str], _F]:
        """``featurize`` remembered by question under ``key`` (its results are read only)."""

        def cached(question: str) -> _F:
            if (key, question) not in self._features:
                self._features[key, question] = featurize(question)
            return self._features[key, question]

        return cached

    def _records(self, env: Any) -> tuple[list[tuple[str, str]], str | None]:
        tasks = getattr(getattr(env, "unwrapped", env), "tasks", None)
        if tasks is None or not hasattr(tasks, "__getitem__") or not hasattr(tasks, "__len__"):
            return [], "the env has no task source (env.unwrapped.tasks) to read other tasks from"
        size = len(tasks)
        if size < self.min_draws:
            return [], f"its task source has {size} tasks, fewer than {self.min_draws}"
        picks = np.unique(np.linspace(0, size - 1, min(self.draws, size)).astype(int))
        records = []
        for i in picks:
            try:
                record = tasks[int(i)]
            except Exception:  # noqa: BLE001 - a source that cannot be read is unsupported
                return [], "its task source could not be read by index"
            if not isinstance(record, Mapping):
                return [], "its tasks are not records"
            answer = _reference(record)
            if answer is not None:
                records.append((question_text(record, layout=self.layout), answer))
        if len(records) < self.min_draws:
            return [], (
                f"only {len(records)} of its tasks hold a reference answer "
                f"({'/'.join(_REFERENCE_FIELDS)}); the policy needs {self.min_draws}"
            )
        return records, None

    def _fit(self, env: Any) -> tuple[_Predictor | None, str | None]:
        key = id(getattr(env, "unwrapped", env))
        if key not in self._fits:
            records, why = self._records(env)
            self._records_of[key] = records
            self._fits[key] = (None, why) if why is not None else self._fit_records(records)
        return self._fits[key]

    def _fit_for(self, env: Any, question: str) -> _Predictor | None:
        """The fit, or one without the training draws of this very question.

        So the policy has no memory of the played task's own answer.
        """
        fit = self._fit(env)[0]
        key = id(getattr(env, "unwrapped", env))
        records = self._records_of.get(key, [])
        if fit is None or all(q != question for q, _ in records):
            return fit
        if (key, question) not in self._without:
            rest = [(q, a) for q, a in records if q != question]
            self._without[(key, question)] = self._fit_records(rest)[0]
        return self._without[(key, question)]

    def _fit_records(self, records: list[tuple[str, str]]) -> tuple[_Predictor | None, str | None]:
        raise NotImplementedError

    def unsupported(self, env: Any, memory: Sequence[Any] = ()) -> str | None:
        """Why the policy cannot run on ``env`` (``None``: it can)."""
        return self._fit(env)[1]

    def bar(self, env: Any) -> str | None:
        """The best constant answer of the training draws (the bar the policy must beat)."""
        fit = self._fit(env)[0]
        return None if fit is None else fit.constant

    def __call__(self, ctx: Any) -> str | None:
        """The predicted answer to the episode's task, written as the env's answer."""
        if ctx.turn > 0:
            return None
        # The played task's question as the source's records show it (its visible text).
        base = getattr(ctx.env, "unwrapped", ctx.env)
        task = getattr(base, "task", None)
        question = (
            question_text(task, layout=self.layout)
            if isinstance(task, Mapping)
            else ctx.first_observation
        )
        fit = self._fit_for(ctx.env, question)
        return None if fit is None else ctx.answer(fit.predict(question))


@dataclass
class SurfaceClassifier(_FromTasks):
    """Answers with a naive Bayes of the answer on the question's surface features.

    Attributes:
        draws: Training draws read from the env's task source (spread over it).
        min_draws: Fewer records with a question and an answer: ``unsupported``.
    """

    name: str = "surface-classifier"
    summary: str = (
        "a naive Bayes of the answer on the question's surface tokens, fitted on other "
        "tasks' questions and answers"
    )
    fix: str = (
        "make the answer independent of the question's surface: balance answers within "
        "surface strata (redraw tasks whose surface predicts their answer), or change the "
        "generator so the wording, counts and symbols do not give the answer away."
    )

    def _fit_records(self, records: list[tuple[str, str]]) -> tuple[_Predictor | None, str | None]:
        from rllm_envs.reasoning_gym.surface import features

        labels = [_label(a) for _, a in records]
        counts = Counter(labels)
        classes = [a for a, _ in counts.most_common(_MAX_CLASSES)]
        raw: dict[str, str] = {}
        for (_, answer), label in zip(records, labels, strict=True):
            raw.setdefault(label, answer)
        surface = self._memo(lambda q: frozenset(features(q)), "surface")
        feats = [surface(q) for q, _ in records]
        freq: Counter[str] = Counter()
        for f in feats:
            freq.update(f)
        low = max(3, 0.02 * len(records))
        # Sorted by count, then name: features are sets, and ties in their (hash-seeded)
        # order changed the vocabulary's cut and the float sums, so the verdict (list_functions
        # paid 0.04 against 0.005 under one PYTHONHASHSEED of six: a red CI run by chance).
        kept = [n for n, c in freq.items() if low <= c <= len(records) - low]
        vocab = sorted(kept, key=lambda n: (-freq[n], n))[:4000]
        columns = {n: j for j, n in enumerate(vocab)}
        index = {a: i for i, a in enumerate(classes)}
        x = np.zeros((len(records), len(vocab)))
        y = np.zeros((len(records), len(classes)))
        for i, (f, label) in enumerate(zip(feats, labels, strict=True)):
            for n in f:
                if n in columns:
                    x[i, columns[n]] = 1.0
            if label in index:
                y[i, index[label]] = 1.0
        mass = y.sum(axis=0) + 1e-12
        p = (x.T @ y + 1.0) / (mass + 2.0)
        fit = _Fit(
            columns=columns,
            answers=[raw[a] for a in classes],
            log_p=np.log(p),
            log_q=np.log1p(-p),
            prior=np.log(mass / mass.sum()),
            constant=raw[classes[0]],
        )
        return fit, None


def count_features(question: str) -> Counter[str]:
    """How often each token and each symbol occurs in ``question`` (and its size counts).

    The tokens are the surface probe's (:func:`rllm_envs.reasoning_gym.surface.features`); a
    symbol is any character that is neither a letter, a digit nor a space (``#`` of a grid,
    ``1`` cells are the token ``1``).
    """
    from rllm_envs.reasoning_gym.surface import features

    out = Counter({n: c for n, c in features(question).items() if n.startswith(("tok:", "len:"))})
    out.update(f"chr:{c}" for c in question if not (c.isalnum() or c.isspace()))
    return out


@dataclass
class _Linear:
    """A least-squares fit of an integer answer on a question's features."""

    featurize: Callable[[str], Mapping[str, float]]
    columns: dict[str, int]
    weights: np.ndarray
    constant: str

    def predict(self, question: str) -> str:
        x = np.zeros(len(self.columns) + 1)
        x[-1] = 1.0
        for name, value in self.featurize(question).items():
            j = self.columns.get(name)
            if j is not None:
                x[j] = value
        return str(int(round(float(x @ self.weights))))


def _integer_records(
    records: list[tuple[str, str]], min_draws: int
) -> tuple[list[tuple[str, int]], str | None]:
    numbers = [(q, int(a)) for q, a in records if _INTEGER.fullmatch(a.strip())]
    if len(numbers) < max(min_draws, 0.9 * len(records)):
        return [], f"only {len(numbers)} of its {len(records)} reference answers are integers"
    return numbers, None


@dataclass
class _Shifted:
    """One feature's value plus a constant: the answer is a count or a distance, give or take."""

    featurize: Callable[[str], Mapping[str, float]]
    feature: str
    offset: int
    constant: str

    def predict(self, question: str) -> str:
        return str(int(round(self.featurize(question).get(self.feature, 0))) + self.offset)


def _fit_integer(
    numbers: list[tuple[str, int]], featurize: Callable[[str], Mapping[str, float]]
) -> _Predictor:
    """The better fit of integer answers on the :data:`MAX_COUNT_FEATURES` most common features.

    Of two, the one that gives more training answers exactly: least squares over them all,
    or the one feature that plus a constant gives the most (least squares spreads weight over
    correlated features, and its rounding misses an answer one of them gives outright: a
    maze's start-to-goal distance).
    """
    feats = [featurize(q) for q, _ in numbers]
    docs: Counter[str] = Counter()
    for f in feats:
        docs.update(f.keys())
    # Features whose value varies, the most common first (name on ties: no hash order).
    varied = [n for n in docs if len({f.get(n, 0) for f in feats}) > 1]
    vocab = sorted(varied, key=lambda n: (-docs[n], n))[:MAX_COUNT_FEATURES]
    columns = {n: j for j, n in enumerate(vocab)}
    x = np.zeros((len(numbers), len(vocab) + 1))
    x[:, -1] = 1.0
    for i, f in enumerate(feats):
        for n, c in f.items():
            j = columns.get(n)
            if j is not None:
                x[i, j] = c
    y = np.array([a for _, a in numbers], dtype=float)
    # A little ridge: collinear features (tokens and their symbols) stay well posed.
    ridge = 1e-6 * max(1.0, float(np.abs(x).max())) ** 2
    weights = np.linalg.solve(x.T @ x + ridge * np.eye(x.shape[1]), x.T @ y)
    constant = Counter(str(a) for _, a in numbers).most_common(1)[0][0]
    best: _Predictor = _Linear(featurize, columns, weights, constant)
    hits = int((np.round(x @ weights) == y).sum())
    for j, name in enumerate(vocab):
        offsets, counts = np.unique(y - np.round(x[:, j]), return_counts=True)
        k = int(counts.argmax())
        if counts[k] > hits:
            hits = int(counts[k])
            best = _Shifted(featurize, name, int(offsets[k]), constant)
    return best


@dataclass
class CountRegression(_FromTasks):
    """Answers an integer with a fit of the answer on the question's counts.

    A structural shortcut the classifier cannot see: an answer that follows from how often
    something occurs (``largest_island`` answered by counting every land cell, connectivity
    ignored; a score that is a count of some mark). Fitted on the env's own training draws
    (its integer answers, the counts of the :data:`MAX_COUNT_FEATURES` most common count
    features) and rounded; unsupported where answers are not integers.

    Attributes:
        draws: Training draws read from the env's task source (spread over it).
        min_draws: Fewer records with a question and an integer answer: ``unsupported``.
    """

    name: str = "count-regression"
    summary: str = (
        "a fit of the integer answer (least squares, or one count plus a constant) on how "
        "often each token and symbol occurs in the question, fitted on other tasks' questions "
        "and answers"
    )
    fix: str = (
        "make the answer independent of what the question's counts give: redraw tasks "
        "whose answer a count (or a sum of counts) of the question's marks gives, or ask "
        "something the counts do not determine."
    )

    def _fit_records(self, records: list[tuple[str, str]]) -> tuple[_Predictor | None, str | None]:
        numbers, why = _integer_records(records, self.min_draws)
        if why is not None:
            return None, why
        return _fit_integer(numbers, self._memo(count_features, "counts")), None


#: A grid needs this many rows and columns.
_GRID_MIN = 3
#: Symbols a grid's features name (shared ones, then roles in order): a few (wall, passage,
#: start, goal; empty, fresh, rotten) keep their pairs within the fitted features.
_GRID_SYMBOLS = 4


def _largest_grid(question: str) -> list[list[str]] | None:
    """The largest grid a question shows (``None``: none).

    A grid is a run of lines of equally many short cells (characters, or tokens where the
    line has spaces), at least :data:`_GRID_MIN` by :data:`_GRID_MIN`.
    """
    found: list[list[list[str]]] = []
    run: list[list[str]] = []
    for line in [*question.splitlines(), ""]:
        text = line.strip()
        cells = text.split() if " " in text else list(text)
        fits = len(cells) >= _GRID_MIN and all(len(c) <= 3 for c in cells)
        if fits and (not run or len(cells) == len(run[0])):
            run.append(cells)
            continue
        if len(run) >= _GRID_MIN:
            found.append(run)
        run = [cells] if fits else []
    return max(found, key=lambda g: len(g) * len(g[0]), default=None)


def _symbol_order(question: str, grid: list[list[str]]) -> list[str]:
    """A grid's symbols in the order a role is read from.

    First those the question quotes, in the order it quotes them (a legend names the start
    before the goal), then the rest by their first cell in the grid.
    """
    cells = [c for row in grid for c in row]
    place = {}
    for k, symbol in enumerate(cells):
        if symbol not in place:
            quoted = [question.find(q + symbol + q) for q in ("'", '"', "`")]
            mentions = [i for i in quoted if i >= 0]
            place[symbol] = min(mentions) if mentions else len(question) + k
    return sorted(place, key=place.__getitem__)


def grid_features(question: str, alphabet: frozenset[str] = frozenset()) -> dict[str, float]:
    """Geometry of the largest grid in ``question``, walls and rules ignored.

    Its size; each symbol's cell count; for each ordered pair of symbols ``a``, ``b`` the
    Manhattan distance from the nearest ``a`` to its nearest ``b`` and from the farthest ``a``
    to its nearest ``b`` (rotten_oranges' spreading read without spreading; a maze's start to
    its goal through walls). A symbol is named by itself where it is in ``alphabet`` (the
    symbols most grids of the env share: ``0``, ``1``, ``2``) and otherwise by its role: its
    rank among the grid's other symbols in :func:`_symbol_order` (a maze's start and goal
    letters change from task to task).
    """
    grid = _largest_grid(question)
    if grid is None:
        return {}
    out: dict[str, float] = {"grid:rows": len(grid), "grid:cols": len(grid[0])}
    others = [s for s in _symbol_order(question, grid) if s not in alphabet]
    names = {s: f"sym:{s}" for s in alphabet} | {s: f"role:{k}" for k, s in enumerate(others)}
    cells: dict[str, list[tuple[int, int]]] = {}
    for r, row in enumerate(grid):
        for c, symbol in enumerate(row):
            cells.setdefault(symbol, []).append((r, c))
    kept = sorted(cells, key=lambda s: names[s])[:_GRID_SYMBOLS]
    places = {s: np.array(cells[s], dtype=float) for s in kept}
    for s in kept:
        out[f"{names[s]}:count"] = len(places[s])
    for a in kept:
        for b in kept:
            if a == b:
                continue
            gaps = np.abs(places[a][:, None, :] - places[b][None, :, :]).sum(axis=2)
            nearest = gaps.min(axis=1)
            out[f"{names[a]}>{names[b]}:min"] = float(nearest.min())
            out[f"{names[a]}>{names[b]}:max"] = float(nearest.max())
    return out


@dataclass
class GridDistances(_FromTasks):
    """Answers an integer with a fit on the geometry of the question's grid.

    A structural shortcut neither the classifier nor the counts see: an answer that follows
    from where a grid's symbols lie, the task's walls or rules ignored (``maze``: the
    Manhattan distance from start to goal; ``rotten_oranges``: the farthest fresh orange's
    distance to its nearest rotten one). Features: :func:`grid_features`, fitted on the env's
    own training draws and rounded; unsupported where answers are not integers or too few
    questions show a grid.

    Attributes:
        draws: Training draws read from the env's task source (spread over it).
        min_draws: Fewer records with a grid and an integer answer: ``unsupported``.
    """

    layout: ClassVar[bool] = True
    name: str = "grid-distances"
    summary: str = (
        "a fit of the integer answer (least squares, or one distance plus a constant) on the "
        "distances between the cells of the question's grid symbols (walls and rules "
        "ignored), fitted on other tasks' questions and answers"
    )
    fix: str = (
        "make the answer independent of the grid's plain geometry: redraw tasks whose answer "
        "the distance between its marks gives (walls or rules that change nothing), or ask "
        "something the distances do not determine."
    )

    def _fit_records(self, records: list[tuple[str, str]]) -> tuple[_Predictor | None, str | None]:
        numbers, why = _integer_records(records, self.min_draws)
        if why is not None:
            return None, why
        grid_of = self._memo(_largest_grid, "grid")
        grids = [g for g in (grid_of(q) for q, _ in numbers) if g is not None]
        shown = len(grids)
        if shown < max(self.min_draws, 0.9 * len(numbers)):
            return None, f"only {shown} of its {len(numbers)} questions show a grid"
        # Symbols named by themselves: those at least half the grids hold.
        held: Counter[str] = Counter()
        for grid in grids:
            held.update({c for row in grid for c in row})
        alphabet = frozenset(s for s, n in held.items() if 2 * n >= shown)
        return _fit_integer(
            numbers, self._memo(partial(grid_features, alphabet=alphabet), alphabet)
        ), None


#: A number as an expression shows it.
_NUM = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
#: An operator between numbers.
_OPERATOR = re.compile(r"[-+*/×÷^]")


def shape_of(expression: str) -> tuple[str, int] | None:
    """An expression's shape (its numbers as slots ``{}``) and its slot count.

    ``None`` for text without an operator between numbers (no expression).
    """
    numbers = _NUM.findall(expression)
    if len(numbers) < 2 or not _OPERATOR.search(_NUM.sub("", expression)):
        return None
    shape = " ".join(_NUM.sub("{}", expression).split())
    return shape, len(numbers)


@dataclass
class FixedShape:
    """Answers with the most common expression shape of other tasks, filled with its numbers.

    The numbers are those the question gives, in order.
    """

    name: str = "fixed-shape"
    summary: str = (
        "the most common expression shape of the oracle's answers to other tasks (e.g. "
        "`({} + {}) - {}`), filled with the numbers the question gives, in order; each "
        "further try the next most common shape"
    )
    fix: str = (
        "redraw tasks that a popular fixed shape solves (keep their share at chance), or "
        "grade something a shape cannot fill in (the task's own structure)."
    )

    @staticmethod
    def _shapes(memory: Sequence[Any]) -> Counter[tuple[str, int]]:
        shapes: Counter[tuple[str, int]] = Counter()
        for m in memory:
            reference = getattr(m, "reference", None)
            shape = shape_of(reference) if isinstance(reference, str) else None
            if shape is not None:
                shapes[shape] += 1
        return shapes

    def unsupported(self, env: Any, memory: Sequence[Any] = ()) -> str | None:
        """Why the policy cannot run: the oracle's answers are not expressions of numbers."""
        answers = [m.reference for m in memory if getattr(m, "reference", None) is not None]
        if not answers:
            return "the oracle's actions show no answer to read a shape from"
        shaped = sum(self._shapes([m]).total() > 0 for m in memory if m.reference is not None)
        if 2 * shaped < len(answers):
            return (
                f"only {shaped} of {len(answers)} oracle answers are expressions of numbers "
                "(the env's answers are no expressions)"
            )
        return None

    def bar(self, env: Any) -> str | None:
        """No constant bar beyond the random baseline: an expression answer is task-bound."""
        return None

    def __call__(self, ctx: Any) -> str | None:
        """The shape ranked ``ctx.turn`` by frequency, filled with the question's numbers.

        Each further try of a multi-try episode plays the next most common shape: with
        feedback after a wrong answer, ``k`` blind shapes solve about ``k`` times one's share
        (att25g: five shapes on Countdown's smallest difficulty). ``None``: too few numbers,
        or no shape left.
        """
        ranked = self._shapes(ctx.memory).most_common()
        if ctx.turn >= len(ranked):
            return None
        (shape, slots), _ = ranked[ctx.turn]
        numbers = _NUM.findall(ctx.first_observation)
        if len(numbers) < slots:
            return None
        return ctx.answer(shape.format(*numbers[:slots]))
