"""Task source of ``rllm/ReasoningGym-v0``: any reasoning-gym family, by name.

``pip install "rllm-envs[reasoning-gym]"``. A source wraps one reasoning-gym procedural
dataset (``reasoning_gym.create_dataset(name, seed=, size=, **config)``); task ``i`` is the
dataset's item ``i``: ``{"question", "answer", "metadata"}``. The family's configuration comes
from ``config`` (the dataset config's fields), optionally on top of a curriculum level
(reasoning-gym's own curricula: ``difficulty`` sets every attribute's level, ``curriculum``
single attributes).

Universes: task seeds below :data:`rllm_envs.tasks.EVAL_SEED_START` are the training universe,
seeds from it up the evaluation universe (the leaderboard's). A question belongs to one of the
two by a hash of its universe key (:func:`rllm_envs.tasks.question_key`: the sorted numbers it
shows, whatever the words around them; for a family whose numbers are only its template's, the
canonical text with names masked, :func:`rllm_envs.tasks.text_key`) and a source yields only
questions of its seed's universe, drawing again when needed, so training never shows an
evaluation question nor one that differs from it only in wording, names or number order. A
task whose answer can be read off its question is drawn again too
(:meth:`ReasoningGymTasks.answer_in_question`). Each task seed also has its own generator seeds:
draw ``a`` of task seed ``u`` uses a reasoning-gym seed hashed from ``(u, a)``, from which
families derive item ``i`` (``seed + i``).

Held out: a family and config have an evaluation universe a memorising policy gains nothing
on unless :meth:`ReasoningGymTasks.held_out_reason` says why not: too few questions to split
(``family_relationships``), or split by text while its numbers, too few to split by, decide
its answers (``aiw`` at its default six people, ``coin_flip`` at 15 flips: looked up by their
numbers, training answers earned 183/500 on aiw's evaluation tasks against a constant's
84/500). Their tasks still come from their seed's universe, but held-out evaluation
(``benchmarks.heldout``) refuses them with the reason; a config with more numbers splits them
by their numbers (``aiw``: ``{"max_entities": 16}``, ``coin_flip``: ``{"max_trials": 40}``).
A family is not held out either where its answers are predictable from the question's surface
(:mod:`rllm_envs.reasoning_gym.surface`: ``game_of_life_halting``'s ``1 1``, ``circuit_logic``'s
output gate, ``course_schedule``'s pair count, and ``aiw`` at 16 people, whose answer is a
count it shows plus one; :meth:`ReasoningGymTasks.surface_tell`).

A draw the generator fails on (``maze``: "Could not find suitable path cell") is drawn again
with the next generator seeds; a family that fails on every draw of a task raises
:class:`~rllm_envs.error.InvalidEnvConfig`.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rllm_envs.error import InvalidEnvConfig, did_you_mean, require
from rllm_envs.reasoning_gym.spec import DEFAULT_SIZE
from rllm_envs.tasks import (
    MIN_UNIVERSE_KEYS,
    AnswerBalance,
    KeyFn,
    SlotSearch,
    Task,
    TaskSource,
    answer_label,
    grow_probe,
    key_universe,
    question_key,
    seed_universe,
    splitting_key,
    text_key,
)

__all__ = [
    "ReasoningGymTasks",
    "family_names",
    "numbers_recall_answers",
    "scorer_for",
    "oracle_answer",
    "task_label",
]

_FEATURE = "rllm/ReasoningGym-v0"


def _rg() -> Any:
    return require("reasoning_gym", "reasoning-gym", feature=_FEATURE)


#: reasoning-gym families whose generator runs code from its data with ``exec`` in the
#: generating process (``codeio`` runs LLM-rewritten snippets; one wrote files into the working
#: directory here). Tasks are made on the host, outside any sandbox, so they are refused.
HOST_CODE_FAMILIES = frozenset({"codeio"})


def family_names() -> list[str]:
    """Every reasoning-gym family name this env plays (``dataset=`` values), sorted."""
    _rg()
    from reasoning_gym.factory import DATASETS

    return sorted(set(DATASETS) - HOST_CODE_FAMILIES)


def composite_parts(fields: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(family, config)`` of each part in a ``composite`` config's ``datasets``.

    A part is a mapping or a reasoning-gym ``DatasetSpec``; its config is returned as given.
    """
    parts = []
    for spec in fields.get("datasets") or ():
        if isinstance(spec, Mapping):
            parts.append((str(spec.get("name")), spec.get("config")))
        else:
            parts.append((str(getattr(spec, "name", None)), getattr(spec, "config", None)))
    return parts


def _refuse_host_code(name: str, fields: Mapping[str, Any]) -> None:
    names = {name}
    if name == "composite":
        names.update(family for family, _ in composite_parts(fields))
    refused = sorted(names & HOST_CODE_FAMILIES)
    if refused:
        raise InvalidEnvConfig(
            f"reasoning-gym's {refused} generator runs code snippets from its data with exec() "
            "in this process, outside any sandbox; rllm-envs does not make its tasks. For code "
            "tasks use rllm/Code-v0, whose programs run in the sandbox."
        )


def scorer_for(task: Mapping[str, Any]) -> Callable[[str | None, dict[str, Any]], float]:
    """The scorer of a task record's source family: one that runs no text as code.

    reasoning-gym's ``score_answer``, or this suite's own for a family whose scorer runs the
    answer (or the task's reference) as Python, or a refusal
    (:func:`rllm_envs.reasoning_gym.safe_scoring.safe_scorer`; issue #31).
    """
    from rllm_envs.reasoning_gym.safe_scoring import safe_scorer

    _rg()
    metadata = task.get("metadata") or {}
    # A composite dataset's items name the family that made them.
    name = str(metadata.get("source_dataset") or task["dataset"])
    return safe_scorer(name)


#: Metadata keys where families without a single ``answer`` keep a known solution.
_SOLUTION_KEYS = ("possible_answer", "example_correct_answer", "example_answer", "solution")


def oracle_answer(task: Mapping[str, Any]) -> str | None:
    """A known correct answer of a task: its ``answer``, or a solution in its metadata.

    Candidates are checked with the family's scorer; ``None`` when none scores 1 (some
    families, e.g. ``rush_hour``, only verify solutions).
    """
    entry = {"question": task["question"], "answer": task["answer"], "metadata": task["metadata"]}
    candidates: list[Any] = [task.get("answer")]
    metadata = task.get("metadata") or {}
    candidates += [metadata[k] for k in _SOLUTION_KEYS if k in metadata]
    score = scorer_for(task)
    for value in candidates:
        if value is None:
            continue
        texts = [value] if isinstance(value, str) else [json.dumps(value), str(value)]
        if isinstance(value, Mapping):
            texts.append(json.dumps({str(k): v for k, v in value.items()}))
        for text in texts:
            try:
                if float(score(text, copy.deepcopy(entry))) >= 1.0:
                    return text
            except Exception:  # noqa: BLE001 - a candidate a scorer rejects is no oracle
                continue
    return None


def _source_name(dataset: str, task_seed: int, size: int, config: Mapping[str, Any]) -> str:
    """The prefix of a source's task ids (``reasoning-gym-<family>-s<seed>`` by default).

    Another config or size draws other tasks at the same index, so its ids carry a digest of
    them: pass@k groups samples by task id, and one id over two tasks merged them (att31e).
    """
    if not config and size == DEFAULT_SIZE:
        return f"reasoning-gym-{dataset}-s{task_seed}"
    canonical = json.dumps({"config": config, "size": size}, sort_keys=True, default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:8]
    return f"reasoning-gym-{dataset}-c{digest}-s{task_seed}"


class ReasoningGymTasks(TaskSource):
    """Tasks of one reasoning-gym family (see the module docstring).

    Args:
        dataset: The family name (see :func:`family_names`).
        size: Tasks in the universe.
        task_seed: The universe (non-negative int).
        config: Fields of the family's config dataclass (e.g. ``{"min_terms": 3}``).
        difficulty: reasoning-gym curriculum level for every attribute (0 = easiest); the
            family must have a curriculum.
        curriculum: ``{attribute: level}`` curriculum levels of single attributes.

    Raises:
        InvalidEnvConfig: For an unknown family, an invalid config or curriculum level.
    """

    def __init__(
        self,
        dataset: str,
        *,
        size: int = DEFAULT_SIZE,
        task_seed: int = 0,
        config: Mapping[str, Any] | None = None,
        difficulty: int | None = None,
        curriculum: Mapping[str, int] | None = None,
    ) -> None:
        _rg()
        from reasoning_gym.factory import CURRICULA, DATASETS

        if not isinstance(dataset, str) or dataset not in DATASETS:
            raise InvalidEnvConfig(
                f"Unknown reasoning-gym dataset {dataset!r}."
                + did_you_mean(str(dataset), sorted(DATASETS))
                + " See rllm_envs.reasoning_gym.family_names()."
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise InvalidEnvConfig(f"Expects `size` to be an int >= 1, actual: {size!r}.")
        if isinstance(task_seed, bool) or not isinstance(task_seed, int) or task_seed < 0:
            raise InvalidEnvConfig(
                f"Expects `task_seed` to be a non-negative int, actual: {task_seed!r}."
            )
        fields = dict(config or {})
        for reserved in ("seed", "size"):
            if reserved in fields:
                raise InvalidEnvConfig(
                    f"Pass `{reserved}` as the env's `task_seed`/`size`, not inside `config`."
                )
        if dataset == "composite" and any(
            isinstance(part, Mapping) and "seed" in part for _, part in composite_parts(fields)
        ):
            raise InvalidEnvConfig(
                "A composite part's `seed` is made from the env's `task_seed`; drop it from the "
                "part's `config`."
            )
        if difficulty is not None or curriculum:
            if dataset not in CURRICULA:
                raise InvalidEnvConfig(
                    f"reasoning-gym dataset {dataset!r} has no curriculum; drop `difficulty` and "
                    "`curriculum` and set its `config` fields instead."
                )
            fields = {**self._curriculum_fields(dataset, difficulty, curriculum), **fields}
        _refuse_host_code(dataset, fields)
        self.dataset_name = dataset
        self.size = size
        self.task_seed = task_seed
        self.difficulty = difficulty
        self.curriculum = dict(curriculum or {})
        self.config = fields
        self.name = _source_name(dataset, task_seed, size, fields)
        self._probes: list[tuple[str, str]] | None = None
        self._failure = ""
        try:
            self._datasets: dict[int, Any] = {
                0: _create(dataset, task_seed, size, fields, stream=self._stream())
            }
        except (TypeError, ValueError, AssertionError, KeyError) as e:
            raise InvalidEnvConfig(
                f"reasoning-gym rejected the config of {dataset!r} ({fields}): {e}"
            ) from e

    @staticmethod
    def _curriculum_fields(
        dataset: str, difficulty: int | None, curriculum: Mapping[str, int] | None
    ) -> dict[str, Any]:
        from dataclasses import asdict

        from reasoning_gym.factory import create_curriculum

        curr = create_curriculum(dataset)
        if difficulty is not None:
            top = max(len(a.levels) for a in curr.attributes.values()) - 1
            if isinstance(difficulty, bool) or not isinstance(difficulty, int):
                raise InvalidEnvConfig(
                    f"Expects `difficulty` to be an int in [0, {top}], actual: {difficulty!r}."
                )
            if not 0 <= difficulty <= top:
                raise InvalidEnvConfig(
                    f"Expects `difficulty` in [0, {top}] for {dataset!r}, actual: {difficulty}."
                )
            curr.set_global_level(difficulty)
        for attr, level in dict(curriculum or {}).items():
            if attr not in curr.attributes:
                raise InvalidEnvConfig(
                    f"{dataset!r} has no curriculum attribute {attr!r}."
                    + did_you_mean(attr, list(curr.attributes))
                    + f" Its attributes: {sorted(curr.attributes)}."
                )
            top = len(curr.attributes[attr].levels) - 1
            if isinstance(level, bool) or not isinstance(level, int) or not 0 <= level <= top:
                raise InvalidEnvConfig(
                    f"Expects curriculum level of {attr!r} in [0, {top}], actual: {level!r}."
                )
            curr.set_attr_level(attr, level)
        generated = curr.generate_configuration({})
        return {k: v for k, v in asdict(generated).items() if k not in ("seed", "size")}

    def __len__(self) -> int:
        return self.size

    def _draw(self, index: int, attempt: int) -> dict[str, Any]:
        """Item ``index`` of draw ``attempt`` (attempt ``a`` uses its own generator seeds)."""
        dataset = self._datasets.get(attempt)
        if dataset is None:
            dataset = _create(
                self.dataset_name, self.task_seed, self.size, self.config, attempt, self._stream()
            )
            self._datasets[attempt] = dataset
        return self._item(dataset, index, self.task_seed, attempt, self._stream())

    def _stream(self) -> str:
        """What, besides the task seed, a task draw's generator seeds come from.

        The family and config: one seed served with two configs gave 14 of 200 tasks alike
        (s26 att26 F2). Probe draws (seed 0) leave it out: each family's fixed sample.
        """
        return json.dumps([self.dataset_name, self.config], sort_keys=True, default=str)

    def _probe_item(self, dataset: Any, index: int, attempt: int | None = None) -> dict[str, Any]:
        """Probe draw ``index`` (an item the generator fails on is replaced by a later one).

        Raises:
            InvalidEnvConfig: When the generator fails on every replacement too.
        """
        failure: GeneratorFailure | None = None
        attempt = _PROBE_ATTEMPT if attempt is None else attempt
        for k in range(_PROBE_RETRIES):
            try:
                return self._item(dataset, (index + k * 104729) % len(dataset), 0, attempt)
            except GeneratorFailure as e:
                failure = failure or e
        raise InvalidEnvConfig(
            f"{failure} (and on {_PROBE_RETRIES - 1} other items): this family and config do "
            "not generate tasks reliably; change its config."
        )

    def _item(
        self, dataset: Any, index: int, task_seed: int, attempt: int, stream: str = ""
    ) -> dict[str, Any]:
        # Some families also draw from the global `random`/`numpy.random` generators; seeding
        # them per item from the whole task seed keeps task i a pure function of the arguments
        # (and as hard to guess as the task seed). The caller's generator states are restored.
        py_state, np_state = random.getstate(), np.random.get_state()
        wide = _digest(task_seed, attempt, index, "global", *_also(stream), bits=256)
        random.seed(wide)
        np.random.seed([(wide >> (32 * k)) & 0xFFFFFFFF for k in range(8)])
        base = dataset.seed
        if self.dataset_name in _NARROW_SEED:
            # reasoning-gym's item rng is seeded `dataset.seed + index`: each item its own.
            dataset.seed = _item_seed(task_seed, attempt, index, stream) - index
        try:
            item = dataset[index]
        except Exception as e:  # noqa: BLE001 - a generator's own failure on one draw
            raise GeneratorFailure(
                f"reasoning-gym's {self.dataset_name!r} generator failed on item {index} of "
                f"draw {attempt} of task seed {task_seed} (config {self.config}): "
                f"{type(e).__name__}: {e}"
            ) from e
        finally:
            dataset.seed = base
            random.setstate(py_state)
            np.random.set_state(np_state)
        if self.dataset_name in _INTEGRATION and "Integral(" in str(item.get("answer")):
            # sympy could not integrate it: the reference is the question again, which no
            # answer may be (safe_scoring refuses Integral), so the draw is replaced.
            raise GeneratorFailure(
                f"reasoning-gym's {self.dataset_name!r} reference of item {index} (draw "
                f"{attempt}, task seed {task_seed}) is an unevaluated integral"
            )
        return {
            "id": f"{self.name}-{index}",
            "dataset": self.dataset_name,
            "question": str(item["question"]),
            "answer": item.get("answer"),
            "metadata": dict(item.get("metadata") or {}),
        }

    def splitting_key(self) -> KeyFn | None:
        """The key that splits this family into universes; ``None`` for a tiny family.

        The coarsest of :func:`~rllm_envs.tasks.question_key` (the numbers) and
        :func:`~rllm_envs.tasks.text_key` that :func:`~rllm_envs.tasks.splitting_key` accepts
        on probe draws made with generator seeds no task seed uses, so every task seed of a
        family and config keys alike.
        """
        ident = (self.dataset_name, self.size, json.dumps(self.config, sort_keys=True, default=str))
        if ident not in _SPLITS:
            n = min(_PROBE_DRAWS, self.size)
            dataset = _create(self.dataset_name, 0, self.size, self.config, _PROBE_ATTEMPT)
            probe = [self._probe_item(dataset, i) for i in range(n)]
            candidates = (question_key, text_key)
            most = min(_MAX_PROBE_DRAWS, self.size)
            probe = grow_probe(probe, lambda i: self._probe_item(dataset, i), candidates, most)
            _SPLITS[ident] = splitting_key(probe, candidates)
        return _SPLITS[ident]

    def universe_key(self, task: Mapping[str, Any]) -> str:
        """The key that decides the universe of ``task`` (:meth:`splitting_key`'s)."""
        return (self.splitting_key() or text_key)(task)

    def held_out_reason(self) -> str | None:
        """Why this family and config have no held-out evaluation universe; ``None`` if they do.

        Held out means a policy that memorises training answers, or reads them off the
        question's surface, gains nothing on evaluation tasks. Three kinds of family fail it:

        * too few questions to split (:meth:`splitting_key` is ``None``): both universes
          draw from all of them;
        * split by canonical text (its numbers are too few to split by) while its numbers
          decide its answers: a policy that looks an evaluation question up among training
          questions by its numbers (as a multiset or in order) beats the most common
          training answer on probe draws (:func:`numbers_recall_answers`), as ``aiw``'s
          sisters-and-brothers counts do;
        * answers predictable from the question's surface (:meth:`surface_tell`): a shallow
          classifier fitted on training-universe draws beats the best constant on
          evaluation-universe draws (``game_of_life_halting``, ``circuit_logic``,
          ``course_schedule``, ...), or, at the default config, a tell measured otherwise
          and committed in :data:`~rllm_envs.reasoning_gym.surface.KNOWN_TELLS`
          (``syllogism``'s quantifiers);
        * answers looked up in data that reasoning-gym's install ships (``arc_agi``'s ARC
          tasks, a book's sentences: :data:`~rllm_envs.reasoning_gym.surface.PUBLIC_POOLS`);
        * a ``composite`` that mixes a family which is not held out (:meth:`components`):
          that family's reason, named.

        The tasks are still drawn from the seed's universe (a text split keeps exact
        questions apart); held-out evaluations (``benchmarks.heldout``) refuse such a family
        with this reason, and a config with more numbers (``aiw``: ``max_entities``,
        ``coin_flip``: ``max_trials``) makes it split by its numbers.
        """
        for name, config in self.components():
            reason = ReasoningGymTasks(name, config=config).held_out_reason()
            if reason is not None:
                return f"reasoning-gym 'composite' mixes {name!r}: {reason}"
        from rllm_envs.reasoning_gym.surface import PUBLIC_POOLS

        pool = PUBLIC_POOLS.get(self.dataset_name)
        if pool is not None:
            return (
                f"reasoning-gym {self.dataset_name!r}: answers looked up in public data: "
                f"{pool}. Both universes draw from that data, so a held-out score on it "
                "measures memory, not the reasoning. Use it for training only (knowing this)."
            )
        key = self.splitting_key()
        if key is None:
            return (
                f"reasoning-gym {self.dataset_name!r} with config {self.config} has too few "
                "distinct questions to split into training and evaluation universes that "
                f"each show {MIN_UNIVERSE_KEYS}: both universes share them. Use it for "
                "training only, or widen its config (more numbers, larger ranges)."
            )
        leak = self._number_leak() if key is text_key else None
        if leak is not None:
            return (
                f"reasoning-gym {self.dataset_name!r} with config {self.config} splits by "
                "canonical text (its numbers are too few to split by), yet its numbers decide "
                f"its answers: looking evaluation questions up by their numbers among training "
                f"questions answered {leak}. Use it for training only, or widen its config so "
                "that its numbers split it (more or larger numbers)."
            )
        tell = self.surface_tell()
        if tell is None and not self.config:
            # A tell the classifiers cannot find (syllogism's quantifiers), known at the default
            # config (surface.KNOWN_TELLS).
            from rllm_envs.reasoning_gym.surface import KNOWN_TELLS

            known = KNOWN_TELLS.get(self.dataset_name)
            if known is not None:  # worded as a measured one is (and as its warning says)
                tell = f"answers predictable from the question's surface: {known}"
        if tell is not None:
            return (
                f"reasoning-gym {self.dataset_name!r} with config {self.config}: {tell}. A "
                "policy trained on it learns the tell, and a held-out score on it measures the "
                "tell, not the reasoning. Use it for training only (knowing this), or pick "
                "another family or config."
            )
        return None

    def surface_tell(self) -> str | None:
        """The family's surface tell on probe draws (:mod:`rllm_envs.reasoning_gym.surface`).

        :data:`_SURFACE_DRAWS` draws with generator seeds no task seed uses, split into
        universes by :meth:`splitting_key`: classifiers fitted on the training-universe ones
        are scored on the evaluation-universe ones. ``None``: no tell (or too few draws of a
        universe to judge, or a family too small to split). Measured once per process and
        config. A family too slow for 2000 draws
        (:data:`~rllm_envs.reasoning_gym.surface.SLOW_FAMILIES`) is read from the committed
        scan at its default config (:data:`~rllm_envs.reasoning_gym.surface.SLOW_SCANS`) and
        measured by :meth:`bounded_surface_tell` at another.
        """
        from rllm_envs.reasoning_gym.surface import (
            MIN_EVAL_DRAWS,
            SLOW_FAMILIES,
            SLOW_SCANS,
            surface_tell,
            surface_tell_folds,
        )

        if self.dataset_name in SLOW_FAMILIES:
            if not self.config and self.dataset_name in SLOW_SCANS:
                return SLOW_SCANS[self.dataset_name][0]
            return self.bounded_surface_tell()[0]
        key = self.splitting_key()
        if key is None:
            return None
        ident = (self.dataset_name, json.dumps(self.config, sort_keys=True, default=str))
        if ident not in _SURFACE:
            dataset = _create(self.dataset_name, 0, _SURFACE_DRAWS, self.config, _SURFACE_ATTEMPT)
            probe = [self._probe_item(dataset, i, _SURFACE_ATTEMPT) for i in range(_SURFACE_DRAWS)]
            train = [t for t in probe if key_universe(key(t)) == "train"]
            held = [t for t in probe if key_universe(key(t)) == "eval"]
            found = surface_tell(train, held)
            if found[1].get("n", 0) < MIN_EVAL_DRAWS:
                # Too few evaluation draws to judge (a family with answerless draws, such as
                # a composite mixing one): every draw in two folds instead.
                found = surface_tell_folds(probe, _text_fold)
            _SURFACE[ident] = found
        return _SURFACE[ident][0]

    def bounded_surface_tell(self) -> tuple[str | None, dict[str, Any]]:
        """The surface probe on :data:`~rllm_envs.reasoning_gym.surface.BOUNDED_DRAWS` draws.

        For a family too slow for :meth:`surface_tell`'s universe split
        (:data:`~rllm_envs.reasoning_gym.surface.SLOW_FAMILIES`): two folds by a hash of each
        draw's canonical text, each scored by the other's fit
        (:func:`~rllm_envs.reasoning_gym.surface.surface_tell_folds`). Returns the tell (or
        ``None``) and its statistics; measured once per process and config.
        """
        from rllm_envs.reasoning_gym.surface import BOUNDED_DRAWS, surface_tell_folds

        ident = (f"{self.dataset_name}:bounded", json.dumps(self.config, sort_keys=True))
        if ident not in _SURFACE:
            n = BOUNDED_DRAWS
            dataset = _create(self.dataset_name, 0, n, self.config, _SURFACE_ATTEMPT)
            probe = [self._probe_item(dataset, i, _SURFACE_ATTEMPT) for i in range(n)]
            _SURFACE[ident] = surface_tell_folds(probe, _text_fold)
        return _SURFACE[ident]

    def components(self) -> list[tuple[str, dict[str, Any]]]:
        """``(family, config)`` of each family a ``composite`` mixes (none for another family)."""
        if self.dataset_name != "composite":
            return []
        return [(name, dict(config or {})) for name, config in composite_parts(self.config)]

    def _number_leak(self) -> str | None:
        key = text_key
        ident = (self.dataset_name, self.size, json.dumps(self.config, sort_keys=True, default=str))
        if ident not in _NUMBER_LEAKS:
            dataset = _create(self.dataset_name, 0, self.size, self.config, _PROBE_ATTEMPT)
            n = min(_MAX_PROBE_DRAWS, self.size)
            probe = [self._probe_item(dataset, i) for i in range(n)]
            _NUMBER_LEAKS[ident] = numbers_recall_answers(probe, key)
        return _NUMBER_LEAKS[ident]

    def task(self, index: int) -> Task:
        """Task ``index`` (see :meth:`_search`), a fresh copy of this process's memo of it.

        A task is a pure function of the source's arguments and its index; finding one can take
        thousands of draws (``propositional_logic``: a truth table each), and a check or a
        training run resets to the same tasks many times over, in envs made afresh.
        """
        # A balanced source draws its tasks unbalanced while it measures its answer shares.
        key = (self._ident(), index, self.answer_balance() is not None)
        found = _TASKS.get(key)
        if found is None:
            found = self._search(index)
            if len(_TASKS) >= _MAX_MEMO:  # drop the oldest (tolerant of another thread)
                _TASKS.pop(next(iter(_TASKS), None), None)  # type: ignore[arg-type]
            _TASKS[key] = found
        return copy.deepcopy(found)

    def _ident(self) -> tuple[str, int, int, str]:
        """The arguments that decide every task: family, task seed, size and config."""
        config = json.dumps(self.config, sort_keys=True, default=str)
        return (self.dataset_name, self.task_seed, self.size, config)

    def _search(self, index: int) -> Task:
        """Task ``index``: the first draw of the seed's universe whose answer is not read off.

        As :class:`rllm_envs.tasks.ProceduralTasks`: a question belongs to the training or the
        evaluation universe by a hash of its universe key (:meth:`universe_key`); a draw of
        the other universe is drawn again (with other generator seeds). So is a draw whose
        answer can be read off the question (:meth:`answer_in_question`), which pays a policy
        that echoes the question (string_insertion's answer is mostly its input string). A
        family too small to split (no key splits it, :meth:`splitting_key`) draws from all its
        questions; one whose answers are always in the question (a needle in a haystack)
        keeps its first draw of the universe. A draw showing a memory address (an object's
        default repr, different in every process) is drawn again like a read-off one, and so
        is a ``propositional_logic`` draw whose reference only restates its premises
        (:func:`_restates_premises`).
        """
        first = self._safe_draw(index, 0)
        if self.size == 1 and first is not None:
            return first
        universe = seed_universe(self.task_seed)
        key = self.splitting_key()
        balance = self.answer_balance()
        search = SlotSearch(balance, self.answer_slot(index) or 0)
        in_universe: dict[str, Any] | None = None
        unbalanced: dict[str, Any] | None = None
        rarest = 0
        readable = 0
        limit = MAX_DRAWS * MAX_DRAWS_READ_OFF * (1 if balance is None else 4)
        if self.dataset_name == "propositional_logic":
            limit *= PREMISE_REDRAWS
        failures = 0
        for attempt in range(limit):
            found = first if attempt == 0 else self._safe_draw(index, attempt)
            if found is None:
                failures += 1
                if failures >= MAX_DRAWS and failures == attempt + 1:
                    break
                continue
            draw = found
            read_off = self.answer_in_question(draw) or _shows_an_address(draw)
            readable += read_off
            if key is None or key_universe(key(draw)) == universe:
                # Counted apart (and only for a draw of the universe: it takes truth tables):
                # most propositional_logic draws restate their premises, yet about one in 15
                # does not, so the family is redrawn up to the full limit.
                read_off = read_off or _restates_premises(draw)
                label = task_label(draw)
                if not read_off and search.offer(label, draw):
                    assert search.found is not None  # done: its slot is filled
                    return search.found
                # Past the limit, the rarest answer drawn: a common one would pass its cap.
                # Kept on every draw, found or not: the same work whatever the slot (timing).
                rarity = 0 if balance is None else balance.rarity(label)
                if not read_off and (unbalanced is None or rarity < rarest):
                    unbalanced, rarest = draw, rarity
                in_universe = in_universe or draw
            if attempt + 1 >= _NATURE_DRAWS and readable + failures == attempt + 1:
                break  # every draw is read off: the family's nature
        result = search.found or unbalanced or in_universe or first
        if result is None:
            raise InvalidEnvConfig(
                f"reasoning-gym's {self.dataset_name!r} generator failed on every draw of task "
                f"{index} (task seed {self.task_seed}, config {self.config}): {self._failure}. "
                "Change its config."
            )
        return result

    def _safe_draw(self, index: int, attempt: int) -> dict[str, Any] | None:
        """Draw ``attempt`` of task ``index``; ``None`` where the generator fails on it.

        A generator that raises on a draw (``maze``'s "Could not find suitable path cell")
        fails on that draw only: the task draws again with the next generator seeds.
        """
        try:
            return self._draw(index, attempt)
        except GeneratorFailure as e:
            self._failure = str(e)
            return None

    def answer_balance(self) -> AnswerBalance | None:
        """The answer balance of the tasks (none here; see ``BalancedTasks``)."""
        return None

    def answer_slot(self, index: int) -> int | None:
        """The answer slot task ``index`` fills (``None`` when the answers are not balanced)."""
        balance = self.answer_balance()
        if balance is None:
            return None
        return balance.target(self.task_seed, index, json.dumps(self._ident()), self.size)

    def answer_in_question(self, task: Mapping[str, Any]) -> bool:
        """Whether ``task``'s answer can be read off its question verbatim.

        Case and spacing aside; an answer under 3 characters only as a whole word or number
        (``prime_factorization`` of 97 is "97": the question's number echoed was right on 10
        of 100 draws). An answer that the family's questions name as one of their
        options (``"true"``, ``"yes"``, ``"infeasible"``: it also occurs in the question of
        another task with another answer, or in most of the family's questions, as a
        template's "(Answer Yes or No)" does even where the probes all answer the same) is a
        choice, not a read-off.
        """
        answer = _normal(task.get("answer"))
        if not answer or not _occurs(answer, _normal(task.get("question"))):
            return False
        vocabulary = self._vocabulary()
        named = [q for q, _ in vocabulary if _occurs(answer, q)]
        if 2 * len(named) > len(vocabulary):
            return False
        return not any(_occurs(answer, q) and answer != a for q, a in vocabulary)

    def _vocabulary(self) -> list[tuple[str, str]]:
        """(question, answer) of the family's first tasks of draw 0: the options it names."""
        if self._probes is None:
            draws = [self._safe_draw(i, 0) for i in range(min(_PROBES, self.size))]
            probes = [d for d in draws if d is not None]
            self._probes = [(_normal(p["question"]), _normal(p["answer"])) for p in probes]
        return self._probes

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_datasets"] = {}  # rebuilt from the arguments (some hold open generators)
        state["_probes"] = None
        return state


#: Tasks already found in this process (:meth:`ReasoningGymTasks.task`), oldest first.
_TASKS: dict[tuple[tuple[str, int, int, str], int, bool], Task] = {}
#: The most tasks the memo keeps.
_MAX_MEMO = 8192
#: Draws of one task index before a family too small to split keeps its first draw.
MAX_DRAWS = 64
#: Draws of one task index, all read off, that show a family whose answers always are (a
#: needle in a haystack): 64 kept about 4 in 60 of string_insertion's tasks read off (19 in 20
#: of its draws are), by chance.
_NATURE_DRAWS = 2 * MAX_DRAWS
#: Draws (in units of MAX_DRAWS) allowed to find a draw of the universe whose answer is not
#: read off: few of string_insertion's tasks qualify, and one in eight is of the universe.
MAX_DRAWS_READ_OFF = 8
#: More draws (a factor) for propositional_logic: about one draw in 15 infers something
#: (:func:`_restates_premises`) and about one in 7 is of the evaluation universe.
PREMISE_REDRAWS = 4
#: Probe draws that choose a family's universe key (fewer than a generator's: some families
#: take a second per item; up to :data:`_MAX_PROBE_DRAWS` where the evaluation side's keys are
#: still too few to judge), and their draw number (no task's).
_PROBE_DRAWS = 64
_PROBE_ATTEMPT = 2**31 - 1
#: The most probe draws: a rich family whose evaluation side shows fewer than 20 keys in 256
#: draws (about 32 of them evaluation draws) grows to this many before a coarser key is tried.
_MAX_PROBE_DRAWS = 1024
#: Number lookups already measured (:meth:`ReasoningGymTasks.held_out_reason`), by family,
#: size and config.
_NUMBER_LEAKS: dict[tuple[str, int, str], str | None] = {}
#: Surface tells already measured (:meth:`ReasoningGymTasks.surface_tell`), by family and
#: config: the tell and its statistics.
_SURFACE: dict[tuple[str, str], tuple[str | None, dict[str, Any]]] = {}
#: Probe draws of the surface probe (about one in eight is of the evaluation universe: some
#: 250, above :data:`rllm_envs.reasoning_gym.surface.MIN_EVAL_DRAWS`) and their draw number.
_SURFACE_DRAWS = 2000
_SURFACE_ATTEMPT = 2**31 - 2
#: Items a probe tries in place of one its generator fails on.
_PROBE_RETRIES = 8
#: Splitting keys already chosen in this process, by family, size and config.
_SPLITS: dict[tuple[str, int, str], KeyFn | None] = {}
#: Tasks whose questions show the options a family names (see ``answer_in_question``).
_PROBES = 8


#: A Python object's default repr (``<Sensor object at 0x7f...>``): it differs per process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


#: A number as a memorising policy reads it (signs aside), as ``benchmarks.heldout`` does.
_DIGITS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def numbers_recall_answers(probe: list[dict[str, Any]], key: KeyFn) -> str | None:
    """Whether the numbers of a question recall its answer across the split ``key`` makes.

    On the ``probe`` draws, split into universes by ``key``: a policy that remembers the most
    common training answer under each question's numbers (their multiset, or their order)
    answers each evaluation draw with the one remembered under its numbers, else with the
    most common training answer (the constant). Returns a short account (``"41/146 against
    the constant's 19/146"``) when a lookup beats the constant by more than
    :data:`_LOOKUP_SLACK` of the evaluation draws (and 2 draws), else ``None``. Draws without
    an answer are left out.
    """
    from collections import Counter

    def numbers(task: Mapping[str, Any], ordered: bool) -> object:
        found = _DIGITS.findall(str(task.get("question")))
        return tuple(found if ordered else sorted(found, key=lambda n: (float(n), n)))

    labelled = [(t, answer_label(t)) for t in probe]
    train = [(t, a) for t, a in labelled if a is not None and key_universe(key(t)) == "train"]
    held = [(t, a) for t, a in labelled if a is not None and key_universe(key(t)) == "eval"]
    if not train or not held:
        return None
    constant = Counter(a for _, a in train).most_common(1)[0][0]
    base = sum(a == constant for _, a in held)
    for ordered in (False, True):
        seen: dict[object, Counter[str]] = {}
        for task, answer in train:
            seen.setdefault(numbers(task, ordered), Counter())[answer] += 1
        recalled = sum(
            a == (seen[k].most_common(1)[0][0] if (k := numbers(t, ordered)) in seen else constant)
            for t, a in held
        )
        if recalled - base > max(2, _LOOKUP_SLACK * len(held)):
            return f"{recalled}/{len(held)} against the constant's {base}/{len(held)}"
    return None


#: The share of evaluation draws by which a number lookup may beat the constant on probes
#: (at 0.05, coin_flip's 11 of 140 against 4 passed on one universe of probes while the
#: held-out benchmark's lookup gained 2.2% of 500 tasks, past its 2%).
_LOOKUP_SLACK = 0.03


# Families whose reference may be left an unevaluated Integral by reasoning-gym's sympy.
_INTEGRATION = frozenset({"simple_integration", "intermediate_integration"})


class GeneratorFailure(RuntimeError):
    """reasoning-gym's generator raised on one draw (a task draws again; see ``task``)."""


def _text_fold(task: Mapping[str, Any]) -> int:
    """A draw's fold in the two-fold surface probe: a hash of its canonical text."""
    return hashlib.blake2b(text_key(task).encode(), digest_size=1).digest()[0] & 1


def _shows_an_address(task: Mapping[str, Any]) -> bool:
    """Whether a task's text holds a memory address: it is no pure function of its seed."""
    return bool(_ADDRESS.search(f"{task.get('question')}\n{task.get('answer')}"))


def task_label(task: Mapping[str, Any]) -> str | None:
    """A task's answer as the answer balance compares it across tasks.

    :func:`rllm_envs.tasks.answer_label` of its answer, except in ``propositional_logic``,
    whose tasks have no answer but a reference conclusion: there, the reference up to
    equivalence (:func:`rllm_envs.reasoning_gym.premises.reference_class`), so no formula is
    the reference of more than 5% of tasks and a constant conclusion earns no more by being
    some tasks' reference.
    """
    metadata = task.get("metadata") or {}
    if (metadata.get("source_dataset") or task.get("dataset")) != "propositional_logic":
        return answer_label(task)
    from rllm_envs.reasoning_gym.premises import reference_class

    return reference_class(metadata, oracle_answer(task))


def _restates_premises(task: Mapping[str, Any]) -> bool:
    """Whether a ``propositional_logic`` draw has no conclusion worth inferring.

    Its reference restates the premises (:func:`rllm_envs.reasoning_gym.premises.
    restates_premises`: most of reasoning-gym's references weaken a premise, ``(P ∨ Q)`` from
    ``P``), the premises contradict each other (every formula follows), or it has no
    reference the scorer pays in full. Such a draw would make a restated premise a right
    answer, which the scorer (:mod:`rllm_envs.reasoning_gym.scoring`) never pays.
    """
    from rllm_envs.reasoning_gym.premises import premises_are_consistent, restates_premises

    metadata = task.get("metadata") or {}
    if (metadata.get("source_dataset") or task.get("dataset")) != "propositional_logic":
        return False
    premises = metadata.get("premises")
    if not isinstance(premises, list) or not all(isinstance(p, str) for p in premises):
        return False
    reference = oracle_answer(task)
    if reference is None or premises_are_consistent(premises) is False:
        return True
    return restates_premises(reference, premises) is True


def _occurs(answer: str, text: str) -> bool:
    """Whether ``answer`` is in ``text``.

    From 3 characters anywhere; a shorter one as a whole token ("97" in "of 97.", not in
    "1970" or "0.97").
    """
    if len(answer.replace(" ", "")) >= 3:
        return answer in text
    return re.search(rf"(?<!\w)(?<!\d\.){re.escape(answer)}(?!\w)(?!\.\d)", text) is not None


def _normal(text: object) -> str:
    if not isinstance(text, str):
        return ""
    return " ".join(unicodedata.normalize("NFKC", text).lower().split())


#: reasoning-gym families that seed NumPy's legacy generator with ``seed + i``, which takes
#: 32-bit seeds only: their draws get a 32-bit base, and each item its own (``_item_seed``).
_NARROW_SEED = frozenset({"pool_matrix"})


def _digest(*parts: object, bits: int) -> int:
    text = ":".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=bits // 8).digest(), "big")


def _also(stream: str) -> tuple[str, ...]:
    """``stream`` as a further part of a seed's digest (none for a probe draw's ``""``)."""
    return (stream,) if stream else ()


def _base_seed(
    task_seed: int,
    attempt: int,
    size: int,
    narrow: bool = False,
    part: int | None = None,
    stream: str = "",
) -> int:
    """reasoning-gym seed of draw ``attempt`` of task seed ``task_seed`` (items use ``+ i``).

    128 bits of a hash of them and the universe's size (another size, other tasks).
    reasoning-gym seeds item ``i`` with ``Random(seed + i)``, so a client that finds a draw's
    seed from one question it was served can make every other task of the draw and read off
    its answer; with 32 bits, a search over the public generator did that in CPU-minutes
    (session 24 att31u: 229 of 1,000 ``chain_sum`` tasks paid). A narrow family's seed stays
    below ``2**32 - size``; :meth:`ReasoningGymTasks._item` then seeds each of its items
    apart (:func:`_item_seed`). ``part`` is a composite's part number, ``stream`` the family
    and config of a task draw (:meth:`ReasoningGymTasks._stream`).
    """
    if narrow:
        return _digest(task_seed, attempt, size, part, *_also(stream), bits=64) % (2**32 - size)
    return _digest(task_seed, attempt, size, part, *_also(stream), bits=128)


def _item_seed(task_seed: int, attempt: int, index: int, stream: str = "") -> int:
    """A narrow family's 32-bit seed of item ``index``: finding it tells nothing of another."""
    return _digest(task_seed, attempt, index, *_also(stream), bits=64) % 2**32


def _create(
    name: str,
    task_seed: int,
    size: int,
    fields: Mapping[str, Any],
    attempt: int = 0,
    stream: str = "",
) -> Any:
    """reasoning-gym's dataset of draw ``attempt`` in universe ``task_seed`` (config as data).

    ``stream``: see :func:`_base_seed`.
    """
    rg = _rg()
    fields = dict(fields)
    if name == "composite" and isinstance(fields.get("datasets"), (list, tuple)):
        from reasoning_gym.composite import DatasetSpec

        parts = []
        for k, spec in enumerate(fields["datasets"]):
            spec = DatasetSpec(**spec) if isinstance(spec, Mapping) else copy.copy(spec)
            # Each part its own seed: reasoning-gym's default (the composite's + k + 1) would
            # make a narrow part's 32 bits every part's.
            part_size = int(spec.config.get("size", size))
            narrow = spec.name in _NARROW_SEED
            seed = _base_seed(task_seed, attempt, part_size, narrow, part=k, stream=stream)
            parts.append(DatasetSpec(spec.name, spec.weight, {**spec.config, "seed": seed}))
        fields["datasets"] = parts
    seed = _base_seed(task_seed, attempt, size, name in _NARROW_SEED, stream=stream)
    return rg.create_dataset(name, seed=seed, size=size, **fields)
