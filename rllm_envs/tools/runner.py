"""One model turn of tool use: parse the reply, find a final answer, run the other calls.

Shared by the tool environments so every one reads replies, reports errors and formats tool
results the same way. :func:`run_turn` never raises on model output.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rllm_envs.text import is_placeholder, tag_contents
from rllm_envs.tools.base import ToolCall, ToolRegistry, ToolResult
from rllm_envs.tools.parser import parse_tool_calls, strip_reasoning
from rllm_envs.utils import to_jsonable

__all__ = ["TurnReport", "run_turn", "call_format_help", "placeholder_arguments"]

#: ``<answer>...</answer>``: a final answer written without a tool call (the last one counts).


@dataclass
class TurnReport:
    """What one reply did.

    Attributes:
        calls: The calls that were read (executed or intercepted), in order.
        results: Results of the executed calls, aligned with ``executed``.
        executed: The calls that ran (not the final answer).
        final_answer: The submitted answer text, or ``None``.
        errors: Parse errors and unusable calls, as sentences for the model.
        invalid_calls: Number of unusable parts (parse errors, unknown tools, bad arguments).
        problems: What was unusable, one sentence each (the ``invalid_reason``).
        format: The call format detected by the parser, or ``"answer_tag"``.
    """

    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    executed: list[ToolCall] = field(default_factory=list)
    final_answer: str | None = None
    errors: list[str] = field(default_factory=list)
    invalid_calls: int = 0
    problems: list[str] = field(default_factory=list)
    format: str | None = None

    def add(self, call: ToolCall, result: ToolResult) -> None:
        """Record an executed call, counting it as invalid if it could not be used."""
        self.executed.append(call)
        self.results.append(result)
        if result.error in ("unknown_tool", "invalid_arguments"):
            self.invalid_calls += 1
            self.problems.append(result.output.removeprefix("Error: "))

    def refuse(self, message: str) -> None:
        """Record an unusable part of the reply (shown to the model, counted as invalid)."""
        self.errors.append(message)
        self.problems.append(message)
        self.invalid_calls += 1

    def invalid_reason(self) -> str | None:
        """The problems joined into one line (``None`` when every part was usable)."""
        if not self.invalid_calls:
            return None
        return "; ".join(self.problems)[:500] or "unusable tool call"

    @property
    def nothing_usable(self) -> bool:
        """The reply held no call that ran and no answer."""
        return self.final_answer is None and not self.executed

    def observation(self) -> str:
        """Tool results and errors as the next observation."""
        parts = []
        for call, result in zip(self.executed, self.results, strict=True):
            status = "" if result.ok else " (error)"
            parts.append(f"[{call.name} result{status}]\n{result.output}")
        for error in self.errors:
            parts.append(f"[error] {error}")
        return "\n\n".join(parts)

    def info(self) -> dict[str, Any]:
        """The ``info`` entries describing this turn (JSON-able, deterministic)."""
        return {
            "tool_calls": [
                {"name": c.name, "arguments": to_jsonable(c.arguments)} for c in self.calls
            ],
            "tool_results": [{"name": r.name, "ok": r.ok, "error": r.error} for r in self.results],
            "call_format": self.format,
        }


def placeholder_arguments(arguments: Any, examples: Sequence[str] = ()) -> bool:
    """Whether a call passes a placeholder: a string argument that is not a real value.

    Placeholders are judged by :func:`rllm_envs.text.is_placeholder` (``""``, ``"..."``,
    ``"<query>"``, a value the prompt showed as an example).
    """
    if not isinstance(arguments, Mapping):
        return False
    return any(
        isinstance(value, str) and is_placeholder(value, examples) for value in arguments.values()
    )


def run_turn(
    registry: ToolRegistry, reply: str, *, max_calls: int = 8, examples: Sequence[str] = ()
) -> TurnReport:
    """Parse ``reply`` and execute its calls with ``registry``.

    The final answer comes from a call of a tool with ``is_final=True`` (its ``answer``
    argument) or, when the reply holds no such call, from the last ``<answer>...</answer>``.
    Calls after the first ``max_calls`` are not run (and are reported).

    Nothing is earned by copying the instructions: a call with a placeholder or example
    argument (:func:`placeholder_arguments`) is not run, and a final answer that is a
    placeholder or an example value is not taken; both count as invalid calls, with a
    sentence saying why.

    Args:
        registry: The environment's tools.
        reply: The model output.
        max_calls: Most calls executed in one turn.
        examples: The example values the env's prompt showed (argument values and answers).

    Returns:
        The report of the turn.
    """
    text = strip_reasoning(reply)
    parsed = parse_tool_calls(text)
    report = TurnReport(calls=list(parsed.calls), errors=list(parsed.errors), format=parsed.format)
    report.invalid_calls = len(parsed.errors)
    report.problems = list(parsed.errors)
    for call in parsed.calls:
        tool = registry.get(call.name)
        if tool is not None and tool.is_final:
            problem = registry.check(call)
            if problem is not None:
                report.refuse(problem.output.removeprefix("Error: "))
                continue
            answer = str(call.arguments["answer"])
            if is_placeholder(answer, examples):
                report.refuse(_placeholder_answer(answer))
                continue
            if report.final_answer is None:
                report.final_answer = answer
            continue
        if report.final_answer is not None:
            continue  # calls after the answer do not run: the episode is over
        if tool is not None and placeholder_arguments(call.arguments, examples):
            report.refuse(
                f"the call of `{call.name[:64]}` passes a placeholder or an example value "
                f"({_short_json(call.arguments)}); it was not run: pass real values"
            )
            continue
        if len(report.executed) >= max_calls:
            report.errors.append(
                f"only {max_calls} tool calls run per turn; `{call.name[:64]}` was skipped"
            )
            continue
        report.add(call, registry.execute(call))
    if report.final_answer is None:
        tags = tag_contents(text, "answer")
        if tags:
            answer = tags[-1].strip()
            report.format = report.format or "answer_tag"
            if is_placeholder(answer, examples):
                report.refuse(_placeholder_answer(answer))
            else:
                report.final_answer = answer
    return report


def _placeholder_answer(answer: str) -> str:
    shown = answer if len(answer) <= 40 else answer[:37] + "..."
    return (
        f"the answer {shown!r} is a placeholder or an example from the instructions, not an "
        "answer; it was not taken: submit your actual answer"
    )


def _short_json(value: Any) -> str:
    text = json.dumps(to_jsonable(value), ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def call_format_help(example: ToolCall) -> str:
    """The call-format paragraph of a first observation, with one example call."""
    return (
        "To call a tool, write a block like\n"
        f"{example.to_text()}\n"
        "(a JSON object with the tool's name and its arguments). You may make several calls "
        "in one reply; each result comes back in the next message. When you know the answer, "
        'call final_answer, e.g. <tool_call>{"name": "final_answer", "arguments": {"answer": '
        '"..."}}</tool_call>, or write <answer>...</answer>.'
    )
