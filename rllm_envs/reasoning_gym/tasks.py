"""Task source of ``rllm/ReasoningGym-v0``: any reasoning-gym family, by name.

``pip install "rllm-envs[reasoning-gym]"``. A source wraps one reasoning-gym procedural
dataset (``reasoning_gym.create_dataset(name, seed=, size=, **config)``); task ``i`` is the
dataset's item ``i``: ``{"question", "answer", "metadata"}``. The family's configuration comes
from ``config`` (the dataset config's fields), optionally on top of a curriculum level
(reasoning-gym's own curricula: ``difficulty`` sets every attribute's level, ``curriculum``
single attributes).

Universes: ``task_seed`` ``u`` uses reasoning-gym seed ``u * UNIVERSE_STRIDE``. Families draw
item ``i`` from seed ``+ i``, so two universes never share a generator seed and an evaluation
universe (e.g. ``task_seed=1_000_003``) shares no task draw with training on universe 0 (a
family with a small problem space can still produce the same question text in both).
"""

from __future__ import annotations

import copy
import functools
import json
import random
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rllm_envs.error import InvalidEnvConfig, did_you_mean, require
from rllm_envs.reasoning_gym.spec import DEFAULT_SIZE, UNIVERSE_STRIDE
from rllm_envs.tasks import Task, TaskSource

__all__ = ["ReasoningGymTasks", "family_names", "scorer_for", "oracle_answer"]

_FEATURE = "rllm/ReasoningGym-v0"


def _rg() -> Any:
    return require("reasoning_gym", "reasoning-gym", feature=_FEATURE)


def family_names() -> list[str]:
    """Every reasoning-gym family name (``dataset=`` values), sorted."""
    _rg()
    from reasoning_gym.factory import DATASETS

    return sorted(DATASETS)


@functools.cache
def _default_scorer(name: str) -> Callable[[str | None, dict[str, Any]], float]:
    from reasoning_gym.factory import get_score_answer_fn

    return get_score_answer_fn(name)


def scorer_for(task: Mapping[str, Any]) -> Callable[[str | None, dict[str, Any]], float]:
    """reasoning-gym's ``score_answer`` for a task record (its source family's)."""
    _rg()
    metadata = task.get("metadata") or {}
    # A composite dataset's items name the family that made them.
    name = str(metadata.get("source_dataset") or task["dataset"])
    return _default_scorer(name)


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
        if difficulty is not None or curriculum:
            if dataset not in CURRICULA:
                raise InvalidEnvConfig(
                    f"reasoning-gym dataset {dataset!r} has no curriculum; drop `difficulty` and "
                    "`curriculum` and set its `config` fields instead."
                )
            fields = {**self._curriculum_fields(dataset, difficulty, curriculum), **fields}
        self.dataset_name = dataset
        self.size = size
        self.task_seed = task_seed
        self.difficulty = difficulty
        self.curriculum = dict(curriculum or {})
        self.config = fields
        self.name = f"reasoning-gym-{dataset}-s{task_seed}"
        try:
            self._dataset: Any = _create(dataset, task_seed, size, fields)
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

    def task(self, index: int) -> Task:
        """Item ``index`` of the family's dataset as a task record."""
        # Some families also draw from the global `random`/`numpy.random` generators; seeding
        # them per task keeps task i a pure function of the arguments. The caller's generator
        # states are restored afterwards.
        py_state, np_state = random.getstate(), np.random.get_state()
        random.seed(self.task_seed * UNIVERSE_STRIDE + index)
        np.random.seed([index & 0xFFFFFFFF, index >> 32, self.task_seed & 0xFFFFFFFF])
        try:
            item = self._dataset[index]
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)
        return {
            "id": f"{self.name}-{index}",
            "dataset": self.dataset_name,
            "question": str(item["question"]),
            "answer": item.get("answer"),
            "metadata": dict(item.get("metadata") or {}),
        }

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_dataset"] = None  # rebuilt from the arguments (some hold open generators)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._dataset = _create(self.dataset_name, self.task_seed, self.size, self.config)


def _create(name: str, task_seed: int, size: int, fields: Mapping[str, Any]) -> Any:
    """reasoning-gym's dataset for universe ``task_seed`` (config given as plain data)."""
    rg = _rg()
    fields = dict(fields)
    if name == "composite" and isinstance(fields.get("datasets"), (list, tuple)):
        from reasoning_gym.composite import DatasetSpec

        fields["datasets"] = [
            DatasetSpec(**spec) if isinstance(spec, Mapping) else spec
            for spec in fields["datasets"]
        ]
    return rg.create_dataset(name, seed=task_seed * UNIVERSE_STRIDE, size=size, **fields)
