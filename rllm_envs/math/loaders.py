r"""Math datasets in their published schemas, read into task records ``{problem, answer}``.

Supported formats (``dataset_format=``), detected automatically from the first record when
``"auto"``:

===============  ==============================================================================
``"default"``    ``problem`` and ``answer`` fields (MATH-500, DeepScaleR
                 ``problem/answer/solution``, AI-MO AIME/AMC validation sets, your own files).
``"math"``       Hendrycks MATH: ``problem`` and ``solution``; the answer is the last
                 ``\boxed{}`` of the solution.
``"gsm8k"``      GSM8K: ``question`` and ``answer`` whose last line is ``#### 72``; the
                 reasoning before it is kept as ``solution``.
``"aime"``       AIME-style capitalised ``Problem``/``Answer`` (e.g. AIME 2024 sets); integer
                 answers.
===============  ==============================================================================

Numeric answers (``142``, ``142.0``) become strings (``"142"``). ``unique_id``/``ID`` become
the task ``id``. Files are read with :func:`rllm_envs.tasks.load_records` (local JSONL, JSON or
Parquet, or ``"hf:<name>"`` through ``datasets`` when online).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.math.grader import _last_boxed
from rllm_envs.tasks import DatasetTasks, Task, load_records

__all__ = ["DATASET_FORMATS", "detect_format", "load_math_tasks", "math_dataset_tasks"]

DATASET_FORMATS = ("auto", "default", "math", "gsm8k", "aime")


def _answer_text(value: Any) -> str:
    """A gold answer as a string: ``142.0`` -> ``"142"``; strings are stripped."""
    if isinstance(value, bool):
        raise ValueError(f"answer {value!r} is a boolean, not a math answer")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ValueError(f"answer {value!r} is empty or not a string/number")


def _id_from(task: Task) -> Task:
    for key in ("unique_id", "ID", "Id"):
        if "id" not in task and key in task:
            task["id"] = str(task[key])
    return task


def default_transform(task: Task) -> Task:
    """``problem``/``answer`` records (MATH-500, DeepScaleR, AIME/AMC): clean the answer."""
    task["answer"] = _answer_text(task["answer"])
    if not isinstance(task["problem"], str) or not task["problem"].strip():
        raise ValueError("empty problem")
    return _id_from(task)


def math_transform(task: Task) -> Task:
    r"""Hendrycks MATH: the answer is the last ``\boxed{}`` of the solution."""
    if "answer" not in task or task["answer"] in (None, ""):
        boxed = _last_boxed(str(task.get("solution", "")))
        if not boxed:
            raise ValueError("the solution has no \\boxed{} answer")
        task["answer"] = boxed
    return default_transform(task)


def gsm8k_transform(task: Task) -> Task:
    """GSM8K: ``answer`` is ``<reasoning>`` then ``#### 72``; keep 72, the rest is solution."""
    raw = str(task["answer"])
    if "####" not in raw:
        raise ValueError("a GSM8K answer must end with '#### <number>'")
    reasoning, _, final = raw.rpartition("####")
    task["solution"] = reasoning.strip()
    task["answer"] = final.strip().replace(",", "")
    return default_transform(task)


_FORMATS: dict[str, tuple[dict[str, str], Any]] = {
    "default": ({}, default_transform),
    "math": ({}, math_transform),
    "gsm8k": ({"problem": "question"}, gsm8k_transform),
    "aime": ({"problem": "Problem", "answer": "Answer"}, default_transform),
}


def detect_format(record: Mapping[str, Any]) -> str:
    """Guess the dataset format from one record's fields (see the module docstring)."""
    if "problem" in record and "answer" in record:
        return "default"
    if "Problem" in record and "Answer" in record:
        return "aime"
    if "question" in record and "####" in str(record.get("answer", "")):
        return "gsm8k"
    if "problem" in record and "solution" in record:
        return "math"
    return "default"


def math_dataset_tasks(
    records: Sequence[Mapping[str, Any]],
    *,
    name: str,
    dataset_format: str = "auto",
    field_map: Mapping[str, str] | None = None,
) -> DatasetTasks:
    """Turn raw records into math task records ``{id, problem, answer, ...}``.

    Args:
        records: The records, in one of :data:`DATASET_FORMATS`.
        name: Source name (used in task ids and errors).
        dataset_format: One of :data:`DATASET_FORMATS`; ``"auto"`` detects it.
        field_map: ``{"problem": column, "answer": column}`` for other schemas; it overrides
            the format's own mapping.

    Returns:
        The task source.

    Raises:
        InvalidEnvConfig: On an unknown format.
        InvalidDataset: On records lacking fields or answers.
    """
    if dataset_format not in DATASET_FORMATS:
        raise InvalidEnvConfig(
            f"Expects `dataset_format` in {list(DATASET_FORMATS)}, actual: {dataset_format!r}."
        )
    if not records:
        raise InvalidDataset(f"Dataset `{name}` has no records.")
    fmt = detect_format(records[0]) if dataset_format == "auto" else dataset_format
    if field_map and dataset_format == "auto":
        fmt = "gsm8k" if fmt == "gsm8k" else "default"
    mapping, transform = _FORMATS[fmt]
    if fmt == "math" and not any("answer" in r for r in records[:1]):
        required: tuple[str, ...] = ("problem", "solution")
    else:
        required = ("problem", "answer")
    return DatasetTasks(
        records,
        name=name,
        required=required,
        field_map={**mapping, **dict(field_map or {})},
        transform=transform,
    )


def load_math_tasks(
    dataset: str | Path,
    *,
    dataset_format: str = "auto",
    field_map: Mapping[str, str] | None = None,
    split: str | None = None,
) -> DatasetTasks:
    """Read a math dataset file (or ``hf:<name>``) into a task source.

    Args:
        dataset: Local ``.jsonl``/``.json``/``.parquet`` file, or ``"hf:<name>[:<config>]"``.
        dataset_format: One of :data:`DATASET_FORMATS` (default ``"auto"``).
        field_map: Column renames onto ``problem``/``answer``.
        split: Split for ``hf:`` datasets.

    Returns:
        The task source.
    """
    records = load_records(dataset, split=split)
    name = Path(str(dataset)).stem if not str(dataset).startswith("hf:") else str(dataset)[3:]
    return math_dataset_tasks(
        records, name=name, dataset_format=dataset_format, field_map=field_map
    )
