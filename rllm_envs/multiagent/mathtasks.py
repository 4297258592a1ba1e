r"""Shared pieces of the multi-agent math envs (solver-judge, debate); no Gym imports.

Tasks and grading come from :mod:`rllm_envs.math` (its procedural generator, dataset schema
and grader), so a multi-agent math episode scores exactly like ``rllm/Math-v1``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.math import extract_answer, is_equivalent, procedural_tasks, score_response
from rllm_envs.tasks import DatasetTasks, Mixture, Task, TaskSource, load_records, task_rng
from rllm_envs.text import answer_text, tag_matches

__all__ = [
    "ANSWER_FORMAT",
    "math_tasks",
    "check_math_task",
    "grade",
    "boxed",
    "wrong_answer",
    "Decoys",
    "majority_answer",
    "clip_middle",
    "parse_choice",
    "check_count",
]

#: The answer format every math role is asked for (what the grader extracts best).
#: Its example is a template (``<answer>``), not a number a small model would copy.
ANSWER_FORMAT = r"Put your final answer once, at the end, in \boxed{<answer>}."


def math_tasks(
    *,
    difficulty: int,
    task_seed: int,
    families: Sequence[str] | None,
    dataset: str | None,
    split: str | None,
    field_map: Mapping[str, str] | None,
) -> TaskSource:
    """The task source: :mod:`rllm_envs.math`'s procedural problems, or a dataset file.

    Args:
        difficulty: Difficulty of procedural problems (1-5).
        task_seed: Seed of the procedural task universe.
        families: Restrict procedural problems to these ``rllm_envs.math`` families.
        dataset: A local ``.jsonl``/``.json``/``.parquet`` file or ``"hf:<name>"`` with
            ``problem`` and ``answer`` fields (after ``field_map``); ``None`` = procedural.
        split: Split of an ``hf:`` dataset.
        field_map: ``{"problem": column, "answer": column}`` renames for the dataset.
    """
    if dataset is None:
        return procedural_tasks(seed=task_seed, difficulty=difficulty, families=families)
    records = load_records(dataset, split=split)
    return DatasetTasks(
        records,
        name=str(dataset).rsplit("/", 1)[-1],
        required=("problem", "answer"),
        field_map=field_map,
        transform=_stringify_answer,
    )


def _stringify_answer(task: Task) -> Task:
    task["answer"] = str(task["answer"])
    task["problem"] = str(task["problem"])
    return task


def check_math_task(task: Task) -> None:
    """Raise :class:`InvalidEnvConfig` unless ``task`` has a text ``problem`` and ``answer``."""
    for key in ("problem", "answer"):
        if not isinstance(task.get(key), (str, int, float)) or str(task[key]).strip() == "":
            raise InvalidEnvConfig(
                f"Expects a math task record with a non-empty `{key}`, actual: {task!r}."
            )
    task["problem"], task["answer"] = str(task["problem"]), str(task["answer"])


def grade(
    response: str, gold: str, problem: str | None = None
) -> tuple[float, str | None, str | None]:
    """Score a reply against the reference answer with :mod:`rllm_envs.math`; never raises.

    The rule is ``rllm/Math-v1``'s (:func:`rllm_envs.math.score_response`): the answer counts
    only as the value in final form, so a reply that copies the problem's expression, or
    leaves arithmetic in its answer, scores 0.

    Args:
        response: The agent's reply.
        gold: The reference answer.
        problem: The problem text (copies of its expressions and requested forms are checked).

    Returns:
        ``(score in [0, 1], extracted answer or None, invalid reason or None)``; the reason is
        set when the reply holds no final answer at all (a format failure).
    """
    score, verdict = score_response(response, gold, problem=problem)
    if verdict == "no_answer":
        return 0.0, None, "No final answer found. " + ANSWER_FORMAT
    return float(score), extract_answer(response), None


def boxed(answer: str) -> str:
    """A reply that states ``answer`` in the requested format."""
    return f"The final answer is \\boxed{{{answer}}}."


_DIGITS = re.compile(r"\d+")
_FRAC = re.compile(r"\\d?frac\{(\d+)\}\{(\d+)\}")
_SQRT = re.compile(r"\\sqrt\{(\d+)\}")
_SHIFTS = (-10, -3, -2, -1, 1, 2, 3, 10)


def _in_lowest_terms(text: str) -> bool:
    """Whether every fraction is reduced and every radical simplified.

    A wrong answer in an unsimplified form would tell a judge it is wrong without any maths.
    """
    for num, den in _FRAC.findall(text):
        a, b = int(num), int(den)
        if b <= 1 or a == 0 or np.gcd(a, b) != 1:
            return False
    for radicand in _SQRT.findall(text):
        n = int(radicand)
        if n < 2 or any(n % (k * k) == 0 for k in range(2, int(n**0.5) + 1)):
            return False
    return True


def _shift_one_number(text: str, rng: np.random.Generator) -> str:
    """``text`` with one of its integers moved a little (a positive one stays positive).

    The LaTeX around it (fraction, radical, expression) keeps its form.
    """
    spans = [m.span() for m in _DIGITS.finditer(text)]
    start, end = spans[int(rng.integers(len(spans)))]
    old = int(text[start:end])
    value = old + int(rng.choice(_SHIFTS))
    if value < 1 and old >= 1:
        value = old + int(rng.integers(1, 4))
    return text[:start] + str(max(value, 0)) + text[end:]


def wrong_answer(gold: str, rng: np.random.Generator) -> str:
    r"""A plausible answer that is *not* equivalent to ``gold`` (for simulated fallible agents).

    It has the form of ``gold``: one integer of it is moved a little, so a fraction stays a
    reduced fraction, a radical a simplified radical, an expression the same expression and an
    integer an integer. A gold with no digit (``\pi``, ``x``) gets a coefficient or
    loses/gains its sign instead. Its size still leans (small positive integers move up more
    often) and several such answers surround the gold: the simulated agents draw
    :class:`Decoys` instead, and use this only for a task that has no source to draw from.
    """
    text = gold.strip()
    fallback = None
    for _ in range(32):
        if _DIGITS.search(text):
            candidate = _shift_one_number(text, rng)
        elif text.startswith("-"):
            candidate = text[1:].strip()
        else:
            candidate = rng.choice([f"-{text}", f"{int(rng.integers(2, 6))} {text}"])
        candidate = str(candidate)
        if is_equivalent(candidate, gold):
            continue
        if _in_lowest_terms(candidate):
            return candidate
        fallback = fallback or candidate
    return fallback if fallback is not None else f"{text} + 1"


#: How many tasks :meth:`Decoys.draw` looks at for another answer before it shifts the gold.
_DECOY_TRIES = 256


class Decoys:
    r"""The wrong answers of one episode's simulated fallible agents: other tasks' answers.

    A wrong answer made from the gold (:func:`wrong_answer`: one integer moved a little) gave
    the gold away to a judge that never reads the problem: small positive integers were moved
    up more often than down (they stay positive), so the smallest answer was more often right,
    and with three or more solvers every wrong answer sat around the gold, so the answer
    nearest the others was (session 17, att25f). A decoy here is the answer of another task
    of the same family (or, for a dataset, of the same dataset), distinct from the gold and
    from the episode's other decoys: it is drawn as the gold was, so no rule on the answers
    alone (size, sign, form, position among the others) tells which is right. A judge that reads the
    problem still can. A client-written task (no family, not from the source) falls back to
    :func:`wrong_answer`.
    """

    def __init__(self, tasks: TaskSource, task: Task, from_source: bool) -> None:
        self.tasks, self.gold = tasks, str(task["answer"]).strip()
        self.family = task.get("family")
        self.from_source = from_source or self.family is not None
        self.drawn: list[str] = []

    def draw(self, rng: np.random.Generator) -> str:
        """One more wrong answer (a fresh one while the source has them)."""
        size = len(self.tasks)
        # A procedural source names a task's family from its index's first draw: other
        # families' tasks are skipped without being made (a decoy costs one task, not ten).
        mixture = getattr(self.tasks, "generate", None)
        seed = getattr(self.tasks, "seed", 0)
        if not (isinstance(mixture, Mixture) and isinstance(seed, int) and self.family):
            mixture, seed = None, 0
        for _ in range(_DECOY_TRIES if self.from_source and size > 1 else 0):
            index = int(rng.integers(size))
            if mixture is not None and mixture.pick(task_rng(seed, index)) != self.family:
                continue
            other = self.tasks[index]
            if self.family is not None and other.get("family") != self.family:
                continue
            answer = str(other.get("answer", "")).strip()
            if not answer or any(is_equivalent(answer, seen) for seen in (self.gold, *self.drawn)):
                continue
            self.drawn.append(answer)
            return answer
        answer = wrong_answer(self.gold, rng)
        self.drawn.append(answer)
        return answer


def majority_answer(answers: Sequence[str | None], strict: bool = False) -> int | None:
    """Index of the first answer of the largest group of equivalent answers (``None`` if none).

    ``strict``: only a group of two or more that is larger than every other one counts (no
    tie broken by position: debaters that followed the first of equally supported answers
    all took a lone guess's side, so a copier that never read the problem out-earned them,
    session 17 att29f).
    """
    groups: list[list[int]] = []
    for i, answer in enumerate(answers):
        if answer is None:
            continue
        for group in groups:
            first = answers[group[0]]
            assert first is not None
            if is_equivalent(answer, first):
                group.append(i)
                break
        else:
            groups.append([i])
    if not groups:
        return None
    largest = max(groups, key=len)  # max keeps the earliest group on ties
    if strict and (len(largest) < 2 or sum(len(g) == len(largest) for g in groups) > 1):
        return None
    return largest[0]


def clip_middle(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters, keeping its start and its end (the answer)."""
    if len(text) <= limit:
        return text
    marker = "\n[... middle cut ...]\n"
    head = max(0, (limit - len(marker)) // 3)
    tail = max(0, limit - len(marker) - head)
    return text[:head] + marker + (text[-tail:] if tail else "")


_CHOICE_CONTAINERS = (
    re.compile(r"\\boxed\{\s*([^{}]*?)\s*\}"),
    re.compile(
        r"(?:^|\n)\s*\**\s*(?:final\s+)?(?:answer|choice|selection|verdict)\s*\**\s*[:=]\s*(.+)",
        re.IGNORECASE,
    ),
)
# A label's number is whole: "Solution 2.5" names no solution 2.
_LABELLED = re.compile(
    r"(?:solution|solver|candidate|option|#)\s*(\d+)(?![\w]|[.,]\d)", re.IGNORECASE
)
_NUMBER = re.compile(r"(?<![\w.])(\d+)(?![\w]|\.\d)")


def parse_choice(text: str, n: int) -> tuple[int | None, str | None]:
    r"""Read a 1-based choice among ``n`` options from a reply; never raises.

    Accepted: ``\boxed{2}``, ``<answer>2</answer>``, ``Answer: 2`` / ``Selection: Solution 2``
    (the last such container wins and must hold the choice); otherwise the last
    ``"Solution 2"`` / ``"#2"`` mention, else the last standalone number. Only the answer part
    is read (:func:`rllm_envs.text.answer_text`).

    Returns:
        ``(choice, None)`` with ``1 <= choice <= n``, or ``(None, reason)``.
    """
    body = answer_text(text)
    # ``<answer>`` blocks by tag_matches: linear, where ``<answer>(.*?)</answer>`` was quadratic.
    found: list[tuple[int, str]] = tag_matches(body, "answer")
    for pattern in _CHOICE_CONTAINERS:
        found += [(m.start(), m.group(1)) for m in pattern.finditer(body)]
    scope = max(found, key=lambda f: f[0])[1] if found else body
    labelled = _LABELLED.findall(scope)
    numbers = labelled or _NUMBER.findall(scope)
    if not numbers:
        return None, f"No choice found: reply with a solution number 1-{n}, e.g. \\boxed{{1}}."
    choice = int(numbers[-1][:6])
    if not 1 <= choice <= n:
        return None, f"Choice {choice} is out of range: pick a solution number 1-{n}."
    return choice, None


def check_count(name: str, value: Any, low: int, high: int) -> int:
    """Return ``value`` if it is an int in ``[low, high]``, else raise :class:`InvalidEnvConfig`."""
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
        raise InvalidEnvConfig(
            f"Expects `{name}` to be an int in [{low}, {high}], actual: {value!r}."
        )
    return value
