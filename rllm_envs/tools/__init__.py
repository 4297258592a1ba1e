r"""The tool framework: tools, a registry, a tolerant tool-call parser and built-in tools.

A :class:`Tool` pairs an OpenAI function-calling schema with a Python callable; a
:class:`ToolRegistry` executes :class:`ToolCall`\\ s read from model text by
:func:`parse_tool_calls`, turning every failure into text for the model. Built in: an exact
``calculator``, a sandboxed ``python`` tool, ``final_answer``, date and unit tools and table
look-ups and ``search`` over any retriever (BM25 in :mod:`rllm_envs.search`).
"""

from __future__ import annotations

from rllm_envs.tools.base import DEFAULT_MAX_OUTPUT_CHARS, Tool, ToolCall, ToolRegistry, ToolResult
from rllm_envs.tools.builtin import (
    CALCULATOR,
    CONVERT_UNITS,
    DATE_ADD,
    DAYS_BETWEEN,
    FINAL_ANSWER,
    WEEKDAY,
    PythonTool,
    Retriever,
    SearchFunction,
    TableLookup,
    ToolFailure,
    python_tool,
    search_tool,
    table_tool,
)
from rllm_envs.tools.calculator import CalculatorError, calculate, evaluate
from rllm_envs.tools.parser import MAX_CALLS, ParsedCalls, parse_tool_calls, strip_reasoning
from rllm_envs.tools.schema import check_schema, validate_arguments

__all__ = [
    "Tool",
    "ToolCall",
    "ToolResult",
    "ToolRegistry",
    "DEFAULT_MAX_OUTPUT_CHARS",
    "ParsedCalls",
    "parse_tool_calls",
    "strip_reasoning",
    "MAX_CALLS",
    "check_schema",
    "validate_arguments",
    "CALCULATOR",
    "FINAL_ANSWER",
    "DATE_ADD",
    "DAYS_BETWEEN",
    "WEEKDAY",
    "CONVERT_UNITS",
    "PythonTool",
    "Retriever",
    "SearchFunction",
    "search_tool",
    "python_tool",
    "table_tool",
    "TableLookup",
    "ToolFailure",
    "CalculatorError",
    "calculate",
    "evaluate",
]
