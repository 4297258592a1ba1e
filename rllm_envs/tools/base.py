r"""Tools: a name, a description, a JSON-schema for the arguments and a call that returns text.

A :class:`Tool` is what a function-calling model sees (its :meth:`Tool.schema` is the OpenAI
``{"type": "function", "function": {...}}`` format that chat templates accept as ``tools=``)
plus the Python callable that runs it. A :class:`ToolRegistry` holds the tools of one
environment and executes parsed :class:`ToolCall`\\ s; every failure -- an unknown tool, wrong
arguments, an exception inside the tool, an over-long output -- becomes a
:class:`ToolResult` whose text tells the model what went wrong. Nothing raises on model output.

Tools must pickle (environments cross process boundaries), so their ``function`` is a
module-level function or a callable object, never a lambda or closure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from rllm_envs.error import InvalidEnvConfig, did_you_mean
from rllm_envs.tools.schema import check_schema, validate_arguments

__all__ = ["Tool", "ToolCall", "ToolResult", "ToolRegistry", "DEFAULT_MAX_OUTPUT_CHARS"]

#: Tool outputs longer than this many characters are cut (with a visible marker).
DEFAULT_MAX_OUTPUT_CHARS = 4000
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass(frozen=True)
class ToolCall:
    """One parsed call of a tool.

    Attributes:
        name: The tool name as the model wrote it.
        arguments: The decoded arguments (model output: any JSON value; validated later).
        id: The call id, when the model (or an OpenAI-style message) gave one.
    """

    name: str
    arguments: Any = field(default_factory=dict)
    id: str | None = None

    def to_text(self) -> str:
        """The call in Hermes/Qwen form: ``<tool_call>{"name": ..., "arguments": ...}``."""
        body = json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)
        return f"<tool_call>{body}</tool_call>"


@dataclass(frozen=True)
class ToolResult:
    """What executing one :class:`ToolCall` produced.

    Attributes:
        name: The called tool's name.
        output: Text for the model: the tool's output, or what was wrong with the call.
        ok: False when the call could not be executed or the tool failed.
        error: A short error kind when ``ok`` is False: ``"unknown_tool"``,
            ``"invalid_arguments"`` or ``"tool_error"``.
        truncated: The output was longer than the registry's limit and was cut.
    """

    name: str
    output: str
    ok: bool = True
    error: str | None = None
    truncated: bool = False


@dataclass(frozen=True)
class Tool:
    """A callable tool with an OpenAI function-calling description.

    Args:
        name: The function name models call (letters, digits, ``_`` and ``-``).
        description: What the tool does, for the model.
        parameters: JSON schema of the arguments object (see :mod:`rllm_envs.tools.schema`).
        function: Called with the validated arguments as keyword arguments; returns text (any
            other value is converted with ``str``). Must be picklable.
        is_final: The tool ends the episode with an answer (environments intercept it).

    Raises:
        InvalidEnvConfig: If the name or schema is unusable.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    function: Callable[..., Any] | None = None
    is_final: bool = False

    def __post_init__(self) -> None:
        if not self.name or not set(self.name) <= _NAME_CHARS or len(self.name) > 64:
            raise InvalidEnvConfig(
                f"Expects a tool name of 1-64 letters, digits, '_' or '-', actual: {self.name!r}."
            )
        check_schema(self.parameters, where=f"{self.name}.parameters")
        if self.parameters.get("type") != "object":
            raise InvalidEnvConfig(
                f"Expects tool `{self.name}` parameters to have type 'object' (the arguments of a "
                f"function call), actual: {self.parameters.get('type')!r}."
            )
        if self.function is None and not self.is_final:
            raise InvalidEnvConfig(f"Tool `{self.name}` needs a `function` (or is_final=True).")

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-calling description (pass a list of these as ``tools=``)."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": json.loads(json.dumps(self.parameters)),
            },
        }

    def signature(self) -> str:
        """A one-line human-readable signature, e.g. ``calculator(expression: string)``."""
        props: Mapping[str, Any] = self.parameters.get("properties", {})
        required = set(self.parameters.get("required", []))
        parts = []
        for arg, sub in props.items():
            kind = sub.get("type", "any")
            kind = " | ".join(kind) if isinstance(kind, list) else kind
            parts.append(f"{arg}: {kind}" + ("" if arg in required else " (optional)"))
        return f"{self.name}({', '.join(parts)})"


class ToolRegistry:
    """The tools of one environment, by name, with safe execution.

    Args:
        tools: The tools, in the order they are listed to the model.
        max_output_chars: Tool outputs are cut to this many characters.

    Raises:
        InvalidEnvConfig: If two tools share a name.
    """

    def __init__(
        self, tools: Iterable[Tool] = (), *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    ) -> None:
        if max_output_chars < 100:
            raise InvalidEnvConfig(
                f"Expects `max_output_chars` >= 100, actual: {max_output_chars!r}."
            )
        self.max_output_chars = int(max_output_chars)
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool) -> None:
        """Add ``tool``; its name must be new."""
        if tool.name in self._tools:
            raise InvalidEnvConfig(f"A tool named `{tool.name}` is already registered.")
        self._tools[tool.name] = tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or ``None``."""
        return self._tools.get(name)

    @property
    def names(self) -> list[str]:
        """Tool names in listing order."""
        return list(self._tools)

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function-calling schemas of every tool (``info["tools"]``)."""
        return [tool.schema() for tool in self._tools.values()]

    def describe(self) -> str:
        """The tools as text, for a model without a chat template."""
        lines = []
        for tool in self._tools.values():
            lines.append(f"- {tool.signature()}: {tool.description}")
        return "\n".join(lines)

    def check(self, call: ToolCall) -> ToolResult | None:
        """The error result for an unusable ``call`` (unknown tool, bad arguments), or None."""
        tool = self._tools.get(call.name)
        if tool is None:
            shown = call.name[:64]
            return ToolResult(
                call.name,
                f"Error: unknown tool `{shown}`.{did_you_mean(call.name, self._tools)} "
                f"Available tools: {', '.join(self._tools)}.",
                ok=False,
                error="unknown_tool",
            )
        problems = validate_arguments(tool.parameters, call.arguments)
        if problems:
            return ToolResult(
                tool.name,
                f"Error: invalid arguments for `{tool.name}`: "
                + "; ".join(problems[:5])
                + f". Expected: {tool.signature()}.",
                ok=False,
                error="invalid_arguments",
            )
        return None

    def execute(self, call: ToolCall) -> ToolResult:
        """Run ``call``; any problem becomes an error result. Never raises on model output."""
        failed = self.check(call)
        if failed is not None:
            return failed
        tool = self._tools[call.name]
        if tool.function is None:
            return ToolResult(tool.name, "", ok=True)
        try:
            output = tool.function(**dict(call.arguments))
            text = output if isinstance(output, str) else str(output)
        except Exception as e:  # a tool's exception is feedback for the model, not a crash
            message = str(e)[:500] or type(e).__name__
            return ToolResult(tool.name, f"Error: {message}", ok=False, error="tool_error")
        truncated = len(text) > self.max_output_chars
        if truncated:
            marker = f"\n[... output truncated to {self.max_output_chars} characters ...]"
            text = text[: self.max_output_chars - len(marker)] + marker
        return ToolResult(tool.name, text, ok=True, truncated=truncated)
