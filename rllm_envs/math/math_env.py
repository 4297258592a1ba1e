r"""``rllm/Math-v1``: answer a math problem; the final ``\boxed{}`` answer is graded exactly."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from rllm_envs.core import TextEnv, Transition
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.math.generators import procedural_tasks
from rllm_envs.math.grader import (
    ANSWER_FORMATS,
    DEFAULT_TIMEOUT,
    AnswerFormat,
    extract_answer_and_source,
    format_issue,
    grade_answer,
)
from rllm_envs.math.loaders import load_math_tasks, math_dataset_tasks
from rllm_envs.tasks import Task, TaskSource

__all__ = ["MathEnv", "ANSWER_FORMAT", "score"]

#: The answer-format instruction appended to every problem. The example is a template, not a
#: number a model could copy into its answer (a copied template gets no ``format`` credit).
ANSWER_FORMAT = (
    "Solve the problem. You may reason step by step; then give your final answer once, at the "
    "end, within \\boxed{}: \\boxed{<answer>} with <answer> replaced by your result."
)


_NO_ANSWER = "no final answer found (expected \\boxed{...})"


def score(
    answer: str | None,
    task: Mapping[str, Any],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    answer_format: AnswerFormat = "boxed",
) -> float:
    """Score a whole response against a task: 1.0 for its value in final form, else 0.0.

    ``answer_format`` is the extraction mode of :func:`rllm_envs.math.score_response`; the
    task's ``problem`` (when it has one) is passed to :func:`rllm_envs.math.grade_answer`, so
    a copy of the problem's expression or a decimal where it asks for an exact form scores 0.
    """
    if answer is None:
        return 0.0
    extracted, _ = extract_answer_and_source(answer, answer_format=answer_format)
    if extracted is None:
        return 0.0
    problem = task.get("problem")
    verdict = grade_answer(
        extracted,
        str(task["answer"]),
        problem=problem if isinstance(problem, str) else None,
        timeout=timeout,
        answer_format=answer_format,
    )
    return 1.0 if verdict.equal else 0.0


class MathEnv(TextEnv):
    r"""Solve a math problem and give the final answer in ``\boxed{}``.

    ## Description
    Single-turn math question answering. Tasks come from an offline procedural generator
    (ten families: arithmetic, fractions, linear and quadratic equations, linear systems,
    number theory, combinatorics, sequences, geometry and word problems, with a difficulty
    knob; every answer is computed exactly with sympy) or from a dataset file in the MATH /
    MATH-500, GSM8K, AIME/AMC or DeepScaleR schema. The answer is graded by
    :mod:`rllm_envs.math.grader`: the last ``\boxed{}`` is extracted and compared with the
    gold answer by meaning (``\frac{1}{2}`` = ``0.5`` = ``x = 1/2``; sets ignore order;
    intervals, tuples and matrices do not; named tuples match by name), with a hard time
    bound, and it must be the value in final form (:func:`rllm_envs.math.grade_answer`).

    ## Observation
    The problem text followed by the answer-format instruction (:data:`ANSWER_FORMAT`):
    reason freely and end with ``\boxed{<answer>}``. After an answer, the observation says
    whether it was correct (and, when the episode ends without a correct answer, the reference
    answer, unless ``reveal_reference=False``).

    ## Action
    The model's full response. Text before the last ``</think>`` is ignored; a response
    with ``<think>`` but no ``</think>`` has no answer. With ``answer_format="boxed"`` (the
    default) the answer is the content of the last ``\boxed{...}`` (or ``\fbox{...}``); as a
    documented fallback, a last "final answer is X", "answer: X" or "#### X" phrase is graded
    too (but earns no ``format`` credit). ``answer_format="any"`` (for evaluation) also reads
    LaTeX math, a bare answer or the last number, with lenient number rules
    (:func:`rllm_envs.math.compare`).

    ## Reward
    Weighted sum (``reward_weights``) of ``correct`` (weight 1.0) and ``format`` (weight 0.0,
    log only). ``correct`` pays for the asked value in final form and for nothing else: the
    final answer equals the gold answer and has no work left in it
    (:func:`rllm_envs.math.final_form_issue`): a copy of the problem's expression, arithmetic
    between numbers (``3+4``), a power, factorial or binomial of numbers, a reducible radical
    or an unreduced fraction scores 0, and so does a decimal where the problem asks for an
    exact form ("in terms of :math:`\pi`", "as a fraction", "exact"). ``format`` pays for one
    clean final answer (:func:`rllm_envs.math.format_issue`): after ``</think>`` exactly one
    ``\boxed{}``, closed, non-empty, not a template such as the prompt's ``<answer>``, and
    holding a value in final form; so ``\boxed{42} \times \boxed{5}``, ``\boxed{}``,
    ``\boxed{<answer>}`` and a boxed copy of the problem get 0. It cannot be earned without a
    boxed final-form value, but a wrong value earns it too: a shaping weight must stay below
    the policy's correctness rate (``configs/math_smollm2_grpo.yaml`` uses 0.05). The reward
    is 1 for a correct answer and 0 otherwise by default.

    ## Episode End
    Terminates after the answer (``max_turns=1``, the default). With ``max_turns > 1`` a
    wrong or missing answer gets feedback and another try, and the episode terminates on a
    correct answer or after the last try. It never truncates. Only the try that ends the
    episode is paid (its ``format`` too; earlier tries pay nothing). A correct answer on any
    try pays in full, so the reward then measures success within ``max_turns`` tries, and guessing
    has ``max_turns`` chances: boxing the family's commonest answers one per try, never
    reading the problem, earned 0.108 against one guess's 0.018 at ``max_turns=5`` (s27 att27).
    Compare such runs with a random baseline that uses every try (the reward-hacking check's
    does), not with single-try chance.

    ## Information
    The common keys of :mod:`rllm_envs.core`, plus ``family`` and ``difficulty`` (for
    procedural tasks; ``None`` otherwise) and, on ``step``: ``extracted_answer``
    (``str | None``), ``answer_source`` (``"boxed"``, ``"phrase"`` or ``None``; in ``"any"``
    mode also ``"latex"``, ``"bare"`` or ``"number"``), ``format_issue`` (why ``format`` is 0:
    one of :data:`rllm_envs.math.FORMAT_ISSUES`, or ``None``), ``final_form_issue`` (why an
    answer equal to the gold is not in final form: one of
    :data:`rllm_envs.math.FINAL_FORM_ISSUES`, or ``None``), ``grade`` (``"correct"``,
    ``"incorrect"``, ``"not_final_form"``, ``"no_answer"`` or ``"timeout"``) and, on the step
    that ends the episode, ``reference_answer`` (not with ``reveal_reference=False``).
    ``invalid_action`` is set when no answer was found.

    ## Arguments
    - ``dataset`` (str | path | list of records, default ``None``): a local ``.jsonl``,
      ``.json`` or ``.parquet`` file, ``"hf:<name>[:<config>]"`` (needs network and the
      ``datasets`` extra), or records. ``None`` uses the procedural generator.
    - ``dataset_format`` (``"auto"``, ``"default"``, ``"math"``, ``"gsm8k"``, ``"aime"``):
      see :mod:`rllm_envs.math.loaders`; the default schema is ``problem``/``answer``.
    - ``field_map`` (dict): ``{"problem": column, "answer": column}`` for other schemas.
    - ``split`` (str): split of an ``hf:`` dataset.
    - ``difficulty`` (int 1-5, default 1): difficulty of procedural tasks (not with ``dataset``).
    - ``families`` (list of str): restrict procedural tasks to these families
      (:data:`rllm_envs.math.FAMILIES`).
    - ``task_seed`` (int, default 0): seed of the procedural task universe; task ``i`` is a
      pure function of ``(task_seed, i, difficulty)``.
    - ``max_turns`` (int, default 1): answer attempts.
    - ``timeout`` (float, default 5.0): seconds one answer comparison may take (its own work;
      waiting for a shared sympy worker does not count).
    - ``reveal_reference`` (bool, default ``True``): show the reference answer when an
      episode ends without a correct one (in the observation and ``info["reference_answer"]``).
      ``False`` withholds it: whoever plays the env (a client of a server, see
      :mod:`rllm_adapters.openenv`, which defaults to ``False``) cannot read a dataset's answers
      off wrong replies and replay them on the same task index.
    - ``answer_format`` (``"boxed"`` or ``"any"``, default ``"boxed"``): how the ``correct``
      component reads the answer: strict, for RL rewards, or lenient, for evaluation and
      datasets whose answers are not boxed. ``format`` always applies the boxed rule.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version.
    - v1: ``format`` requires one clean final box (it was 1 for any ``\boxed{}``, which
      GRPO learned to game with ``\boxed{42} \times \boxed{5}``); the prompt's example is
      ``\boxed{<answer>}`` instead of ``\boxed{42}``, which small models copied;
      ``correct`` and ``format`` need the value in final form (copying the problem's
      expression into the box earned 1 on every arithmetic and fractions task); named tuples
      match by name; procedural problems never contain their own answer; tasks come from
      held-out universes keyed by their numbers; ``answer_format``,
      ``info["format_issue"]`` and ``info["final_form_issue"]`` were added;
      ``reveal_reference`` was added (the reference was always shown).
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "format": 0.0}

    def __init__(
        self,
        *,
        dataset: str | Path | Sequence[Mapping[str, Any]] | None = None,
        dataset_format: str = "auto",
        field_map: Mapping[str, str] | None = None,
        split: str | None = None,
        difficulty: int = 1,
        families: Sequence[str] | None = None,
        task_seed: int = 0,
        max_turns: int = 1,
        timeout: float = DEFAULT_TIMEOUT,
        answer_format: AnswerFormat = "boxed",
        reveal_reference: bool = True,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(reveal_reference, bool):
            raise InvalidEnvConfig(
                f"Expects `reveal_reference` to be a bool, actual: {reveal_reference!r}."
            )
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise InvalidEnvConfig(f"Expects `timeout` to be a number > 0, actual: {timeout!r}.")
        if answer_format not in ANSWER_FORMATS:
            raise InvalidEnvConfig(
                f"Expects `answer_format` to be one of {ANSWER_FORMATS}, actual: {answer_format!r}."
            )
        if dataset is not None and (families is not None or difficulty != 1):
            raise InvalidEnvConfig(
                "`difficulty` and `families` choose procedural tasks; they cannot be combined "
                "with a `dataset` (filter the dataset's records instead)."
            )
        tasks: TaskSource
        if dataset is None:
            if field_map is not None:
                raise InvalidEnvConfig("`field_map` applies to a `dataset`; none was given.")
            tasks = procedural_tasks(seed=task_seed, difficulty=difficulty, families=families)
        elif isinstance(dataset, (str, Path)):
            tasks = load_math_tasks(
                dataset, dataset_format=dataset_format, field_map=field_map, split=split
            )
        elif isinstance(dataset, (list, tuple)):
            tasks = math_dataset_tasks(
                dataset, name="records", dataset_format=dataset_format, field_map=field_map
            )
        else:
            raise InvalidEnvConfig(
                "Expects `dataset` to be a file path, 'hf:<name>' or a list of records, "
                f"actual type: {type(dataset).__name__}."
            )
        self.timeout = float(timeout)
        self.reveal_reference = reveal_reference
        self.answer_format: AnswerFormat = answer_format
        super().__init__(
            tasks=tasks, max_turns=max_turns, reward_weights=reward_weights, render_mode=render_mode
        )

    def _check_task(self, task: Task) -> None:
        for key in ("problem", "answer"):
            if not isinstance(task.get(key), str) or not task[key].strip():
                raise InvalidEnvConfig(
                    f"Expects a math task record to have a non-empty string `{key}`, "
                    f"actual: {task.get(key)!r}."
                )

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        observation = f"{task['problem'].strip()}\n\n{ANSWER_FORMAT}"
        return observation, {"family": task.get("family"), "difficulty": task.get("difficulty")}

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        gold = str(self.task["answer"])
        problem = str(self.task["problem"])
        answer, source = extract_answer_and_source(action, answer_format=self.answer_format)
        issue = format_issue(action, gold=gold, problem=problem)
        final_issue: str | None = None
        if answer is None:
            grade = "no_answer"
            correct = False
        else:
            verdict = grade_answer(
                answer,
                gold,
                problem=problem,
                timeout=self.timeout,
                answer_format=self.answer_format,
            )
            correct = verdict.equal
            final_issue = verdict.issue
            grade = "correct" if correct else "incorrect"
            if verdict.reason in ("timeout", "not_final_form"):
                grade = verdict.reason
        last = correct or self.turn >= self.max_turns
        if correct:
            text = "Correct."
        elif answer is None:
            text = "No final answer found. Put your final answer within \\boxed{}, once."
        elif final_issue is not None and grade == "not_final_form":
            text = (
                "Not an answer in final form "
                f"({final_issue.replace('_', ' ')}): give the value itself, fully simplified."
            )
        else:
            text = "Incorrect."
        if last and not correct and self.reveal_reference:
            text += f" The reference answer is \\boxed{{{gold}}}."
        elif not last:
            text += f" Try again ({self.max_turns - self.turn} attempts left)."
        info: dict[str, Any] = {
            "extracted_answer": answer,
            "answer_source": source,
            "format_issue": issue,
            "final_form_issue": final_issue,
            "grade": grade,
            "family": self.task.get("family"),
            "difficulty": self.task.get("difficulty"),
        }
        if last and self.reveal_reference:
            info["reference_answer"] = gold
        return Transition(
            observation=text,
            # Only the try that ends the episode is paid: `format` on every try let a policy
            # that never solves earn max_turns times its weight, and made solving late pay
            # more than solving at once (s37 att37e).
            reward_components={
                "correct": float(correct),
                "format": float(issue is None and last),
            },
            terminated=last,
            correct=correct,
            invalid_reason=None if answer is not None else _NO_ANSWER,
            info=info,
        )

    def oracle_action(self) -> str:
        """The reference answer, boxed."""
        assert self.task is not None, "Call reset() before oracle_action()."
        return f"\\boxed{{{self.task['answer']}}}"
