"""``rllm/Countdown-v1``: reach a target number from given numbers with + - * /."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from rllm_envs.core import TextEnv, Transition
from rllm_envs.countdown.rules import COMPONENTS, grade, prompt
from rllm_envs.countdown.solver import solve
from rllm_envs.countdown.tasks import (
    check_task_record,
    countdown_dataset_tasks,
    load_countdown_tasks,
    procedural_tasks,
)
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.tasks import Task, TaskSource

__all__ = ["CountdownEnv", "CUSTOM_TASK_MAX_STATES"]

#: Solver budget (distinct states) for a client-written task (``options={"task": ...}``): a
#: custom task of 6-12 large numbers with no solution ran the default 200,000-state search,
#: 3-7 s of pure Python holding the GIL (issue #31, F3). 20,000 states is about a tenth of that.
CUSTOM_TASK_MAX_STATES = 20_000

_OPS = ("+", "-", "*", "/")


class CountdownEnv(TextEnv):
    """Combine the given numbers with ``+ - * /`` into an expression equal to the target.

    ## Description
    The Countdown numbers game as used for RL of reasoning (TinyZero): a list of numbers and a
    target; the answer is one arithmetic expression over the numbers. The rules and grading
    live in :mod:`rllm_envs.countdown.rules` (a hand-written parser with bounded length, depth
    and number sizes; no ``eval``; exact rational arithmetic with :class:`fractions.Fraction`).
    By default every number must be used exactly once (the TinyZero rule, ``use_all=True``);
    with ``use_all=False`` each number may be used at most once (the TV-show rule). Tasks come
    from a procedural generator whose every task has a known solution (a difficulty knob sets
    how many numbers and how large; :mod:`rllm_envs.countdown.tasks`), or from a dataset in
    the common ``nums``/``target`` schema (e.g. ``Jiayi-Pan/Countdown-Tasks-3to4``).

    ## Observation
    The numbers, the target, the rule (exactly or at most once), and the answer format
    (:func:`rllm_envs.countdown.rules.prompt`). After an answer the observation says whether it
    was correct and, if not, why (its value, the misused number, the parse error); when the
    episode ends unsolved it gives a reference solution.

    ## Action
    The model's full response. Its answer is the content of the last complete
    ``<answer>...</answer>`` block (tags in any case), e.g. ``<answer>(25 - 5) * 4</answer>``:
    integers, binary ``+ - * /`` and parentheses (``×``, ``÷``, ``−`` are accepted; no unary
    minus; an optional trailing ``= <integer>`` is ignored). Only the answer part of the reply
    is read (:mod:`rllm_envs.text`): text up to the last ``</think>`` is reasoning, and a reply
    whose ``<think>`` is never closed has no answer.

    ## Reward
    Weighted sum (``reward_weights``) of four components, each 0 or 1, that form a ladder (none
    can be earned without doing what it names):

    - ``format`` (weight 0.0, log only): the last answer block exists, parses and is an
      attempt at this task (its numbers are among the given ones, each at most as often as
      given): the prompt's example or the target written alone earns 0.
    - ``valid_expression`` (weight 0.0): that, and it evaluates (no division by zero).
    - ``uses_allowed_numbers`` (weight 0.0): it parses and uses only the given numbers, each
      at most once (exactly once when ``use_all``).
    - ``value`` (weight 1.0): all the above, and it equals the target.

    The default reward is 1 for a correct answer and 0 otherwise. TinyZero-style shaping (0.1
    for a well-formed answer) is ``reward_weights={"format": 0.1, "value": 0.9}``; since any
    well-formed attempt earns it, keep a shaping weight below the policy's solve rate.
    Procedural targets are never reached by a one-operator fold (all numbers added,
    multiplied, or folded with one operator). Every answer is some fixed *shape* (a template
    over the sorted numbers, such as ``(c + b) - a``), so a policy that always plays one shape
    does earn ``value`` without searching, on the tasks that shape solves; with four numbers
    or fewer the generator balances draws by shape (:mod:`rllm_envs.countdown.tasks`) so that
    no shape solves more than about 3% of the tasks, except with three numbers (difficulty
    1), where every task is one of 192 templates and several solve each: there the best
    shapes solve several times that share (a measured floor of this difficulty, issue #25:
    ``check_reward_hacking`` with :class:`rllm_envs.testing.learned.FixedShape` reports it).

    ## Episode End
    Terminates after the answer (``max_turns=1``, the default). With ``max_turns > 1`` an
    incorrect answer gets feedback and another try; the episode terminates on a correct
    answer or after the last try. It never truncates. Only the try that ends the episode is
    paid (its shaping components too; earlier tries pay nothing). Each try is another fixed
    shape for a policy that does not search, so ``k`` tries of the most popular shapes solve
    about ``k`` times the single-shape share above, without ever reading the target; the
    ``value`` of a multi-try episode is only as hard to earn as ``max_turns`` allows: train
    multi-try Countdown at difficulty 2 or more.

    ## Information
    The common keys of :mod:`rllm_envs.core`, plus ``nums`` (``list[int]``), ``target``
    (``int``), ``use_all`` (``bool``) and ``difficulty`` (``int`` for procedural tasks, else
    ``None``); on ``step`` also ``verdict`` (``"correct"``, ``"wrong_value"``,
    ``"illegal_numbers"``, ``"division_by_zero"``, ``"parse_error"`` or ``"no_answer"``),
    ``expression`` (``str | None``, the parsed answer), ``value`` (``str | None``, its exact
    value such as ``"7"`` or ``"7/3"``), ``numbers_used`` (``list[int]``) and, on the step that
    ends the episode, ``reference_solution`` (``str | None``; not with
    ``reveal_reference=False``). ``invalid_action`` is set when the answer is missing or does
    not parse.

    ## Arguments
    - ``dataset`` (str | path | list of records, default ``None``): a local ``.jsonl``,
      ``.json`` or ``.parquet`` file in the ``nums``/``target`` schema, ``"hf:<name>"`` (needs
      network and the ``datasets`` extra), or records. ``None`` uses the procedural generator.
    - ``field_map`` (dict): ``{"nums": column, "target": column}`` for other schemas.
    - ``split`` (str): split of an ``hf:`` dataset.
    - ``difficulty`` (int 1-5, default 1): preset of procedural tasks (3 numbers up to 10 at 1;
      6 numbers up to 100 at 5; see :data:`rllm_envs.countdown.tasks.DIFFICULTY_PRESETS`).
    - ``num_count`` (int, default ``None``): override the preset's number count (2-12).
    - ``max_number`` (int, default ``None``): override the preset's largest number.
    - ``use_all`` (bool, default ``True``): every number exactly once (``False``: at most once).
    - ``task_seed`` (int, default 0): seed of the procedural task universe; task ``i`` is a
      pure function of ``(task_seed, i, difficulty, num_count, max_number)``.
    - ``max_turns`` (int, default 1): answer attempts.
    - ``reveal_reference`` (bool, default ``True``): show a solution when an episode ends
      unsolved (in the observation and ``info["reference_solution"]``). ``False`` withholds it
      and does not run the solver: whoever plays the env (a client of a server, see
      :mod:`rllm_adapters.openenv`, which defaults to ``False``) cannot read a dataset's
      solutions off wrong replies and replay them on the same task index. The solver searches
      at most :data:`CUSTOM_TASK_MAX_STATES` states for a client-written task.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version.
    - v1: ``format`` and ``valid_expression`` need the given
      numbers (the prompt's example and the bare target earned them); procedural targets
      are never the sum, product or a one-operator fold of the numbers (adding every number
      up solved 17% of difficulty-1 tasks without any search). Since then, with four
      numbers or fewer, draws are balanced by shape (a fixed template over the sorted
      numbers, ``(c + b) - a`` at difficulty 1, ``((a - b) + c) + d`` at 3, solved 17% and
      10% of evaluation tasks with no search); the tasks of difficulties 1-3 changed;
      ``reveal_reference`` was added (the solution was always shown).
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "format": 0.0,
        "valid_expression": 0.0,
        "uses_allowed_numbers": 0.0,
        "value": 1.0,
    }

    def __init__(
        self,
        *,
        dataset: str | Path | Sequence[Mapping[str, Any]] | None = None,
        field_map: Mapping[str, str] | None = None,
        split: str | None = None,
        difficulty: int = 1,
        num_count: int | None = None,
        max_number: int | None = None,
        use_all: bool = True,
        task_seed: int = 0,
        max_turns: int = 1,
        reveal_reference: bool = True,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(reveal_reference, bool):
            raise InvalidEnvConfig(
                f"Expects `reveal_reference` to be a bool, actual: {reveal_reference!r}."
            )
        if not isinstance(use_all, bool):
            raise InvalidEnvConfig(f"Expects `use_all` to be a bool, actual: {use_all!r}.")
        tasks: TaskSource
        if dataset is None:
            if field_map is not None:
                raise InvalidEnvConfig("`field_map` applies to a `dataset`; none was given.")
            tasks = procedural_tasks(
                seed=task_seed, difficulty=difficulty, num_count=num_count, max_number=max_number
            )
        else:
            if difficulty != 1 or num_count is not None or max_number is not None:
                raise InvalidEnvConfig(
                    "`difficulty`, `num_count` and `max_number` shape procedural tasks; they "
                    "cannot be combined with a `dataset` (filter the dataset's records instead)."
                )
            if isinstance(dataset, (str, Path)):
                tasks = load_countdown_tasks(dataset, field_map=field_map, split=split)
            elif isinstance(dataset, (list, tuple)):
                tasks = countdown_dataset_tasks(dataset, name="records", field_map=field_map)
            else:
                raise InvalidEnvConfig(
                    "Expects `dataset` to be a file path, 'hf:<name>' or a list of records, "
                    f"actual type: {type(dataset).__name__}."
                )
        self.use_all = use_all
        self.reveal_reference = reveal_reference
        super().__init__(
            tasks=tasks, max_turns=max_turns, reward_weights=reward_weights, render_mode=render_mode
        )
        self._solution: str | None = None
        self._solution_ready = False

    def _check_task(self, task: Task) -> None:
        try:
            check_task_record(task)
        except ValueError as e:
            raise InvalidEnvConfig(f"Expects a Countdown task record: {e}.") from e

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._solution, self._solution_ready = None, False
        return prompt(task["nums"], task["target"], use_all=self.use_all), self._task_info()

    def _task_info(self) -> dict[str, Any]:
        assert self.task is not None
        return {
            "nums": list(self.task["nums"]),
            "target": self.task["target"],
            "use_all": self.use_all,
            "difficulty": self.task.get("difficulty"),
        }

    def reference_solution(self) -> str | None:
        """A solution of the current task: the task's own, else the solver's (``None`` if none).

        A task's ``solution`` is used only if it grades correct under this env's rule; the
        solver runs at most once per episode, with :data:`CUSTOM_TASK_MAX_STATES` states for a
        client-written task.
        """
        assert self.task is not None, "Call reset() before reference_solution()."
        if not self._solution_ready:
            given = self.task.get("solution")
            if (
                isinstance(given, str)
                and grade(f"<answer>{given}</answer>", self.task, use_all=self.use_all).correct
            ):
                self._solution = given
            else:
                budget = (
                    {} if self.task_index is not None else {"max_states": CUSTOM_TASK_MAX_STATES}
                )
                self._solution = solve(
                    self.task["nums"], self.task["target"], use_all=self.use_all, **budget
                )
            self._solution_ready = True
        return self._solution

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        result = grade(action, self.task, use_all=self.use_all)
        correct = result.correct
        last = correct or self.turn >= self.max_turns
        text = "Correct." if correct else f"Incorrect: {result.reason}."
        info: dict[str, Any] = {
            **self._task_info(),
            "verdict": result.verdict,
            "expression": result.expression,
            "value": result.value,
            "numbers_used": result.numbers_used,
        }
        if last and self.reveal_reference:
            solution = self.reference_solution()
            info["reference_solution"] = solution
            if not correct:
                text += (
                    f" A solution: {solution}."
                    if solution is not None
                    else " No solution was found for this task."
                )
        else:
            text += f" Try again ({self.max_turns - self.turn} attempts left)."
        invalid = result.verdict in ("no_answer", "parse_error")
        return Transition(
            observation=text,
            # Only the try that ends the episode is paid: shaping on every try let a policy
            # that never solves earn max_turns times its weights (2.0 at 20 tries against
            # the oracle's 1.0), and made solving late pay more (s37 att37e).
            reward_components={
                name: result.components[name] if last else 0.0 for name in COMPONENTS
            },
            terminated=last,
            correct=correct,
            invalid_reason=result.reason if invalid else None,
            info=info,
        )

    def oracle_action(self) -> str:
        """A correct answer (reasoning-free); for an unsolvable task, the numbers summed."""
        assert self.task is not None, "Call reset() before oracle_action()."
        solution = self.reference_solution()
        if solution is None:
            solution = " + ".join(str(n) for n in self.task["nums"])
        return f"<answer>{solution}</answer>"

    def random_action(self) -> str:
        """A random well-formed answer: the numbers in a random order with random operators.

        All numbers with ``use_all``, else a random non-empty subset. It draws from
        ``action_space``'s generator, never from ``np_random``.
        """
        assert self.task is not None, "Call reset() before random_action()."
        rng = self.action_space.np_random
        nums = list(self.task["nums"])
        order = [nums[int(i)] for i in rng.permutation(len(nums))]
        if not self.use_all:
            order = order[: int(rng.integers(1, len(order) + 1))]
        parts = [str(order[0])]
        for n in order[1:]:
            parts += [_OPS[int(rng.integers(len(_OPS)))], str(n)]
        return f"<answer>{' '.join(parts)}</answer>"
