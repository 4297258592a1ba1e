"""``rllm/ToolUse-v1``: multi-turn function calling on tasks that need tools."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rllm_envs.core import TextEnv, Transition
from rllm_envs.error import InvalidDataset, InvalidEnvConfig, did_you_mean
from rllm_envs.tasks import (
    DatasetTasks,
    Mixture,
    ProceduralTasks,
    Task,
    TaskSource,
    check_difficulty,
    load_records,
)
from rllm_envs.tools import (
    CALCULATOR,
    CONVERT_UNITS,
    DATE_ADD,
    DAYS_BETWEEN,
    FINAL_ANSWER,
    WEEKDAY,
    Tool,
    ToolCall,
    ToolRegistry,
    python_tool,
    table_tool,
)
from rllm_envs.tools.runner import run_turn
from rllm_envs.tooluse.tasks import (
    DEFAULT_FAMILIES,
    FAMILIES,
    MAX_DIFFICULTY,
    family_task,
    score_answer,
)

__all__ = ["ToolUseEnv", "BUILTIN_TOOLS", "EXAMPLE_EXPRESSION", "EXAMPLE_ANSWER"]

#: The calculator call the prompt shows as an example: part of no task's solution.
EXAMPLE_EXPRESSION = "12 * (3 + 4)"
#: The answer placeholder the prompt shows (it is refused if submitted).
EXAMPLE_ANSWER = "<your answer>"
#: Example values of non-string arguments in the call-format example.
_EXAMPLE_VALUES: dict[str, Any] = {"integer": 7, "number": 2.5, "boolean": True}


def _example_value(name: str, schema: Mapping[str, Any]) -> Any:
    """The call-format example's value of argument ``name``.

    An argument that takes a string gets the ``<name>`` placeholder (refused if sent as is).
    Any other gets a value of its type: a quoted placeholder for an integer would teach the
    type error the schema check refuses (SmolLM2-135M copied ``"days": "198"``).
    """
    types = schema.get("type")
    names = [types] if isinstance(types, str) else list(types or [])
    if "string" in names:
        return f"<{name}>"
    return next((_EXAMPLE_VALUES[t] for t in names if t in _EXAMPLE_VALUES), f"<{name}>")


#: Built-in tools a task may name in its ``tools`` field.
BUILTIN_TOOLS: dict[str, Tool] = {
    t.name: t for t in (CALCULATOR, CONVERT_UNITS, DATE_ADD, DAYS_BETWEEN, WEEKDAY)
}


def _math_record(task: Task) -> Task:
    """Map a math record (``question``/``answer``) onto the tool-use task schema."""
    answer = task["answer"]
    if isinstance(answer, list | tuple):
        if not answer:
            raise ValueError("the `answer` list is empty")
        answer = answer[0]
    if answer is None or not str(answer).strip():
        raise ValueError("the `answer` is empty")
    answer = str(answer).strip()
    return {
        **task,
        "question": str(task["question"]),
        "answer": answer,
        "answer_type": "math",
        "family": "math",
        "tools": ["calculator"],
        "tables": [],
        "plan": [[{"name": "final_answer", "arguments": {"answer": answer}}]],
    }


class ToolUseEnv(TextEnv):
    r"""Solve tasks by calling tools: look-ups, unit and date arithmetic, chains, exact math.

    ## Description
    A multi-turn function-calling environment. Each task is built around tools: the total of
    an order from a product catalogue (``lookup``) and a chain of look-ups through a company
    directory (``chain``) need them, since those facts exist only behind the tools; exact unit
    conversions (``units``), date arithmetic (``dates``), exact arithmetic that is tedious by
    hand (``arith``) and counting and iteration problems that call for a short program
    (``program``, opt-in) are made routine by them, though a model may also work them out
    itself; or math problems from a dataset, where the calculator and Python help (like
    rLLM's math-with-tool setup). The model calls tools, reads their results and submits a
    final answer. Tasks are procedural: task ``i`` is a pure function of ``(task_seed, i,
    difficulty)`` and names are invented, so the answers cannot be recalled from memory.

    ## Observation
    The first observation holds the task, the list of tools with their arguments, the call
    format with an example and the number of turns, so a model without a chat template can
    use it. Later observations hold each tool's result (``[name result]`` blocks) and any
    error about the reply (malformed JSON, unknown tool, wrong arguments, a tool's own error).

    ## Action
    Free text with tool calls, parsed by :func:`rllm_envs.tools.parse_tool_calls`: Hermes/Qwen
    ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (several per reply),
    a bare JSON call, or OpenAI-style ``tool_calls``. The final answer is a ``final_answer``
    call or ``<answer>...</answer>``. Only the answer part of the reply is read
    (:mod:`rllm_envs.text`: text before the last ``</think>`` is ignored; a reply cut inside
    an unclosed ``<think>`` has no call). Copying the instructions earns nothing: a final
    answer that is a placeholder (``"..."``, ``"<your answer>"``) or the prompt's example is
    refused, and a call with a placeholder or example argument (``{"expression": "12 * (3 +
    4)"}``, ``{"name": ""}``) is not run; both count as ``invalid_call`` and the episode goes
    on.

    ## Reward
    The weighted sum of components (``reward_weights``): ``correct`` = 1 when the final answer
    is right (weight 1.0; for numbers and expressions the math grader's
    :func:`rllm_envs.math.grade_answer`, which pays only for the value in final form: the
    question's own expression, such as ``a * b - c ** 2`` or the harmonic sum written out, or
    any arithmetic left in the answer earns 0; for dates, the one date the answer names, in
    any unambiguous form (``2053-11-21``, ``November 21, 2053``, ``Friday, 21 Nov 2053``; a
    wrong weekday, two dates or ``03/05/2053`` earn 0); case- and punctuation-insensitive
    equality for names; a short lead-in such as "The answer is" is read past);
    ``invalid_call`` = the number of unusable parts of the reply (parse errors, unknown tools,
    bad arguments, placeholder or example arguments, a placeholder answer), or 1 for a reply
    with no call and no answer (weight 0.0, log only; pass
    ``reward_weights={"invalid_call": -0.05}`` for a small penalty). It only ever subtracts:
    its best value, 0, is what a reply whose every call is real gets, so no reply earns reward
    from it without a correct answer.

    ## Episode End
    Terminates on a final answer (right or wrong). Truncates after ``max_turns`` replies.

    ## Information
    The common keys of :mod:`rllm_envs.core` plus ``tools`` (the OpenAI function-calling
    schemas of this episode's tools, on reset and every step), ``family`` and ``difficulty``;
    on ``step``: ``tool_calls`` (``[{"name", "arguments"}]`` read from the reply),
    ``tool_results`` (``[{"name", "ok", "error"}]`` for the calls that ran), ``call_format``
    (``"hermes"``, ``"json"``, ``"openai"``, ``"answer_tag"`` or ``None``) and ``answer`` (the
    submitted answer or ``None``).

    ## Arguments
    - ``families`` (list of str, default ``lookup``, ``units``, ``dates``, ``chain``,
      ``arith``): the task families drawn from; add ``program`` for counting and iteration
      problems whose oracle runs Python in the sandbox (needs firejail or bubblewrap).
    - ``difficulty`` (int 1-5, default 1): order size, number of quantities, date steps, chain
      length (``difficulty + 1`` hops) and number sizes.
    - ``dataset`` (path or ``"hf:<name>"``, optional): math problems with ``question`` and
      ``answer`` fields (rename with ``field_map``, e.g. ``{"question": "problem"}``) instead
      of the procedural tasks; their oracle submits the reference answer.
    - ``field_map`` (dict, optional): column renames for ``dataset``.
    - ``python`` (bool, default True): offer the ``python`` tool, which runs code through
      :func:`rllm_envs.sandbox.run` (never unsandboxed).
    - ``python_time_limit`` (float, default 5.0): seconds per Python run. One reply may run
      up to ``max_calls_per_turn`` programs, one after another: with the defaults a step can
      hold a sandbox for about 8 x 5 = 40 s, and an episode of 12 turns for about 8 minutes
      (issue #31, F6). A server for untrusted clients can serve ``python=False``, or a smaller
      ``python_time_limit`` or ``max_calls_per_turn`` (``--env-kwargs``).
    - ``sandbox_backend`` (str, optional): the sandbox backend (default: automatic).
    - ``max_calls_per_turn`` (int, default 8), ``max_output_chars`` (int, default 4000): bounds
      on one reply's calls and on each tool result.
    - ``task_seed`` (int, default 0), ``max_turns`` (int, default 12), ``reward_weights``,
      ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version.
    - v1: a math answer counts only as the value in final form
      (the question's expression copied into ``<answer>`` earned 1); a ``units`` task never
      converts a unit to itself, and no task's answer is one of its question's numbers.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "invalid_call": 0.0}

    def __init__(
        self,
        *,
        families: Sequence[str] | None = None,
        difficulty: int = 1,
        dataset: str | Path | None = None,
        field_map: Mapping[str, str] | None = None,
        python: bool = True,
        python_time_limit: float = 5.0,
        sandbox_backend: str | None = None,
        max_calls_per_turn: int = 8,
        max_output_chars: int = 4000,
        task_seed: int = 0,
        max_turns: int = 12,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        difficulty = check_difficulty(difficulty, range(1, MAX_DIFFICULTY + 1))
        chosen = list(DEFAULT_FAMILIES) if families is None else list(families)
        if isinstance(families, str) or not chosen:
            raise InvalidEnvConfig(
                f"Expects `families` to be a non-empty list of names from {list(FAMILIES)}, "
                f"actual: {families!r}."
            )
        for name in chosen:
            if name not in FAMILIES:
                raise InvalidEnvConfig(
                    f"Unknown task family `{name}`; known: {list(FAMILIES)}."
                    + did_you_mean(name, FAMILIES)
                )
        if not isinstance(max_calls_per_turn, int) or max_calls_per_turn < 1:
            raise InvalidEnvConfig(
                f"Expects `max_calls_per_turn` to be an int >= 1, actual: {max_calls_per_turn!r}."
            )
        if "program" in chosen and not python:
            raise InvalidEnvConfig(
                "The `program` family is solved with the Python tool; keep `python=True` or "
                "drop `program` from `families`."
            )
        tasks: TaskSource
        if dataset is not None:
            records = load_records(dataset)
            tasks = DatasetTasks(
                records,
                name=Path(str(dataset)).stem,
                required=("question", "answer"),
                field_map=field_map,
                transform=_math_record,
            )
        else:
            if field_map is not None:
                raise InvalidEnvConfig("`field_map` only applies with `dataset`.")
            name = f"tooluse-d{difficulty}-" + "+".join(chosen)
            # Each family is split into universes and answer-balanced on its own: a family's
            # small question space (the harmonic sums) or few labels (weekdays) stay its own.
            mixture = Mixture(
                {
                    f: partial(family_task, family=f, difficulty=difficulty)
                    for f in dict.fromkeys(chosen)
                },
                field="family",
            )
            tasks = ProceduralTasks(mixture, name=name, seed=task_seed, balance=True)
        super().__init__(
            tasks=tasks, max_turns=max_turns, reward_weights=reward_weights, render_mode=render_mode
        )
        self.families = tuple(chosen)
        self.difficulty = difficulty
        self.max_calls_per_turn = max_calls_per_turn
        self.max_output_chars = max_output_chars
        self._python = (
            python_tool(time_limit=python_time_limit, backend=sandbox_backend) if python else None
        )
        self.registry = ToolRegistry(max_output_chars=max_output_chars)
        self._schemas: list[dict[str, Any]] = []
        self._progress = 0
        self._answer: str | None = None

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        missing = [f for f in ("question", "answer", "answer_type") if f not in task]
        if missing:
            raise InvalidEnvConfig(
                f"A ToolUse task record needs fields {missing}; see rllm_envs.tooluse.tasks."
            )
        try:
            self._build_registry(task)
        except InvalidEnvConfig as e:
            raise InvalidDataset(f"Unusable tools in the task record: {e}") from e

    def _build_registry(self, task: Task) -> ToolRegistry:
        tools: list[Tool] = []
        for spec in task.get("tables", []):
            tools.append(table_tool(spec))
        for name in task.get("tools", []):
            if name not in BUILTIN_TOOLS:
                raise InvalidEnvConfig(
                    f"Unknown built-in tool `{name}`; known: {sorted(BUILTIN_TOOLS)}."
                )
            tools.append(BUILTIN_TOOLS[name])
        if self._python is not None:
            tools.append(self._python)
        tools.append(FINAL_ANSWER)
        return ToolRegistry(tools, max_output_chars=self.max_output_chars)

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        self.registry = self._build_registry(task)
        self._schemas = self.registry.schemas()
        self._progress = 0
        self._answer = None
        observation = "\n".join(
            [
                "Solve the task below by calling tools.",
                "",
                f"Task: {task['question']}",
                "",
                "Tools:",
                self.registry.describe(),
                "",
                self._format_help(),
                f"You have {self.max_turns} replies.",
            ]
        )
        return observation, self._extra_info(task)

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        report = run_turn(
            self.registry, action, max_calls=self.max_calls_per_turn, examples=self._examples
        )
        info = {**self._extra_info(self.task), **report.info(), "answer": report.final_answer}
        self._advance_plan(report.calls)
        if report.final_answer is not None:
            self._answer = report.final_answer
            correct = score_answer(report.final_answer, self.task) == 1.0
            verdict = "correct" if correct else "not correct"
            observation = f"Final answer received: {report.final_answer[:200]!s}. It is {verdict}."
            head = report.observation()
            return Transition(
                observation=(head + "\n\n" + observation) if head else observation,
                reward_components={"correct": float(correct), "invalid_call": report.invalid_calls},
                terminated=True,
                correct=correct,
                invalid_reason=report.invalid_reason(),
                info=info,
            )
        left = self.max_turns - self.turn
        if report.nothing_usable and not report.errors:
            reason = "no tool call and no final answer found"
            observation = (
                f"No tool call or final answer found in your reply. Call a tool with "
                f'<tool_call>{{"name": ..., "arguments": {{...}}}}</tool_call> or answer with '
                f"final_answer. Tools: {', '.join(self.registry.names)}. {left} replies left."
            )
            return Transition(
                observation=observation,
                reward_components={"correct": 0.0, "invalid_call": 1.0},
                invalid_reason=reason,
                info=info,
            )
        return Transition(
            observation=report.observation() + f"\n\n{left} replies left.",
            reward_components={"correct": 0.0, "invalid_call": float(report.invalid_calls)},
            invalid_reason=report.invalid_reason(),
            info=info,
        )

    def oracle_action(self) -> str:
        """The next turn of the task's scripted tool plan (ending with ``final_answer``)."""
        assert self.task is not None, "Call reset() before oracle_action()."
        plan = self.task["plan"]
        turn = plan[min(self._progress, len(plan) - 1)]
        return "\n".join(ToolCall(c["name"], c["arguments"]).to_text() for c in turn)

    def _render_text(self) -> str:
        return self.last_observation

    # ---------------------------------------------------------------------- internals

    _examples: ClassVar[tuple[str, ...]] = (EXAMPLE_EXPRESSION, EXAMPLE_ANSWER)

    def _example_call(self) -> ToolCall:
        """A call that shows the format and is part of no solution (never the task's plan)."""
        if "calculator" in self.registry:
            return ToolCall("calculator", {"expression": EXAMPLE_EXPRESSION})
        tool = next((t for t in self.registry if not t.is_final), None)
        if tool is None:
            return ToolCall("final_answer", {"answer": EXAMPLE_ANSWER})
        properties = tool.parameters.get("properties", {})
        required = tool.parameters.get("required") or list(properties)
        return ToolCall(
            tool.name, {name: _example_value(name, properties.get(name, {})) for name in required}
        )

    def _format_help(self) -> str:
        """The call-format paragraph of the first observation, with neutral examples."""
        final = ToolCall("final_answer", {"answer": EXAMPLE_ANSWER})
        return (
            "To call a tool, write a block like\n"
            f"{self._example_call().to_text()}\n"
            "(a JSON object with the tool's name and its arguments; this example only shows "
            "the form). You may make several calls in one reply; each result comes back in the "
            "next message. When you know the answer, call final_answer with it, e.g. "
            f"{final.to_text()}, or write <answer>your answer</answer>. Placeholders and "
            "copies of these examples are not accepted."
        )

    def _advance_plan(self, calls: list[ToolCall]) -> None:
        """Move the oracle to the next plan turn once the current one has been made."""
        assert self.task is not None
        plan = self.task["plan"]
        if self._progress >= len(plan):
            return
        wanted = [(c["name"], c["arguments"]) for c in plan[self._progress]]
        if [(c.name, c.arguments) for c in calls] == wanted:
            self._progress += 1

    def _extra_info(self, task: Task) -> dict[str, Any]:
        return {
            "tools": self._schemas,
            "family": task.get("family", "custom"),
            "difficulty": task.get("difficulty", self.difficulty),
        }
