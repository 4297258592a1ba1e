"""Tolerant parsing of tool calls from raw model output.

:func:`parse_tool_calls` accepts, in this order of precedence:

1. **Hermes / Qwen tags** -- ``<tool_call>{"name": "f", "arguments": {...}}</tool_call>``,
   any number per reply. A final unclosed ``<tool_call>`` (a reply cut at the token limit)
   is still read. Each block is one call (or a JSON list of calls).
2. **OpenAI-style structured calls** -- a message dict (or its JSON text) with
   ``"tool_calls": [{"id": ..., "type": "function", "function": {"name": ..., "arguments":
   "<JSON string>"}}]``, a single ``{"type": "function", "function": {...}}`` object, or a
   list of either. Also accepted as Python objects, not only text.
3. **Bare JSON** -- a JSON object with ``"name"`` and ``"arguments"`` (or ``"parameters"``)
   anywhere in the text, e.g. inside a fenced code block, when no tags are present. This also
   reads Mistral's ``[TOOL_CALLS][{...}, ...]`` and Llama 3's ``<|python_tag|>{...}``.

Inside a call, ``arguments`` may be an object or a JSON string holding one (the OpenAI wire
format); ``parameters`` and ``args`` are read as aliases. Where strict JSON fails, a Python
literal (single quotes, ``True``/``None``) is tried with :func:`ast.literal_eval`, which
evaluates literals only -- never code -- and only on short inputs. Only the answer part of a
reply is read (:func:`rllm_envs.text.answer_text`): text before the last ``</think>`` is
reasoning, and a reply cut inside an unclosed ``<think>`` calls nothing.

Malformed input never raises: every block that cannot be read adds a model-readable sentence
to :attr:`ParsedCalls.errors`. Work is bounded for adversarial input (a cap on the number of
calls, of candidate JSON objects tried, and on the size handed to ``literal_eval``).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rllm_envs.text import answer_text
from rllm_envs.tools.base import ToolCall

__all__ = ["ParsedCalls", "parse_tool_calls", "MAX_CALLS", "strip_reasoning"]

#: At most this many calls are read from one reply; more are reported as an error.
MAX_CALLS = 8
#: At most this many ``{`` positions are tried when looking for bare JSON objects.
_MAX_BARE_ATTEMPTS = 32
#: ``ast.literal_eval`` is only tried on blocks up to this many characters.
_MAX_LITERAL_CHARS = 20_000
_SHOW = 80

_TAG_RE = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL | re.IGNORECASE)
_FENCE_RE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_DECODER = json.JSONDecoder()


@dataclass
class ParsedCalls:
    """The result of :func:`parse_tool_calls`.

    Attributes:
        calls: The calls read, in order (at most :data:`MAX_CALLS`).
        errors: One sentence per part that looked like a call but could not be read.
        format: ``"hermes"``, ``"openai"``, ``"json"`` or ``None`` when nothing call-like was
            found.
    """

    calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    format: str | None = None

    @property
    def found(self) -> bool:
        """Whether the reply tried to call a tool (successfully or not)."""
        return bool(self.calls or self.errors)


#: The answer part of a reply (reasoning is not an action): :func:`rllm_envs.text.answer_text`.
strip_reasoning = answer_text


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _SHOW else text[: _SHOW - 3] + "..."


def _loads(text: str) -> tuple[Any, str | None]:
    """Decode a JSON (or, failing that, Python-literal) value; return (value, error)."""
    text = text.strip()
    fenced = _FENCE_RE.match(text)
    if fenced:
        text = fenced.group(1).strip()
    try:
        return json.loads(text), None
    except RecursionError:
        return None, "the JSON is nested too deeply"
    except ValueError as e:
        if isinstance(e, json.JSONDecodeError):
            error = f"invalid JSON ({e.msg} at character {e.pos})"
        else:
            error = f"invalid JSON ({e})"
    if len(text) <= _MAX_LITERAL_CHARS and text[:1] in "{[":
        try:
            return ast.literal_eval(text), None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            pass
    return None, error


def _call_from(obj: Any, where: str) -> tuple[list[ToolCall], list[str]]:
    """Interpret a decoded value as one or more calls."""
    if isinstance(obj, list):
        calls: list[ToolCall] = []
        errors: list[str] = []
        for i, item in enumerate(obj[: MAX_CALLS + 1]):
            c, e = _call_from(item, f"{where} item {i + 1}")
            calls += c
            errors += e
        return calls, errors
    if not isinstance(obj, Mapping):
        shown = _short(json.dumps(obj, default=str))
        return [], [f"{where}: expected a JSON object with `name` and `arguments`, got {shown}"]
    if "tool_calls" in obj:
        return _call_from(obj["tool_calls"] or [], where)
    call_id = obj.get("id") if isinstance(obj.get("id"), str) else None
    body: Mapping[str, Any] = obj
    if isinstance(obj.get("function"), Mapping):
        body = obj["function"]
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        return [], [f"{where}: the call has no `name` (a string naming the tool)"]
    for key in ("arguments", "parameters", "args"):
        if key in body:
            arguments = body[key]
            break
    else:
        arguments = {}
    if isinstance(arguments, str):
        # The OpenAI wire format carries arguments as a JSON string.
        if arguments.strip():
            decoded, error = _loads(arguments)
            if error is not None:
                return [], [f"{where}: the arguments of `{_short(name)}` are not {error}"]
            arguments = decoded
        else:
            arguments = {}
    if arguments is None:
        arguments = {}
    return [ToolCall(name=name.strip(), arguments=arguments, id=call_id)], []


def _looks_like_call(obj: Any) -> bool:
    if isinstance(obj, list):
        return bool(obj) and all(_looks_like_call(o) for o in obj)
    if not isinstance(obj, Mapping):
        return False
    if "tool_calls" in obj:
        return isinstance(obj["tool_calls"], list)
    if isinstance(obj.get("function"), Mapping):
        return True
    return isinstance(obj.get("name"), str) and any(
        k in obj for k in ("arguments", "parameters", "args")
    )


def _finish(calls: list[ToolCall], errors: list[str], fmt: str | None) -> ParsedCalls:
    if len(calls) > MAX_CALLS:
        errors = [
            *errors,
            f"too many tool calls in one reply ({len(calls)}); only the first {MAX_CALLS} "
            "were read",
        ]
        calls = calls[:MAX_CALLS]
    return ParsedCalls(calls=calls, errors=errors, format=fmt if (calls or errors) else None)


def parse_tool_calls(reply: Any) -> ParsedCalls:
    """Read the tool calls in a model reply.

    Args:
        reply: The model output: text, or an OpenAI-style message / call object / list.

    Returns:
        The calls and the errors (see the module docstring for the accepted forms).

    Examples:
        >>> parse_tool_calls('<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>').calls
        [ToolCall(name='add', arguments={'a': 1}, id=None)]
        >>> parse_tool_calls('<tool_call>{oops</tool_call>').errors[0][:33]
        'tool call 1 is not valid JSON: in'
    """
    if not isinstance(reply, str):
        if isinstance(reply, Mapping | list | tuple) and not isinstance(reply, str):
            obj = list(reply) if isinstance(reply, tuple) else reply
            if _looks_like_call(obj):
                return _finish(*_call_from(obj, "tool call"), "openai")
        return ParsedCalls()
    text = strip_reasoning(reply)
    calls: list[ToolCall] = []
    errors: list[str] = []
    fmt: str | None = None

    if "<tool_call>" in text.lower():
        for i, match in enumerate(_TAG_RE.finditer(text)):
            if i > MAX_CALLS:
                errors.append(f"too many <tool_call> blocks; only the first {MAX_CALLS} were read")
                break
            where = f"tool call {i + 1}"
            body = match.group(1)
            if not body.strip():
                errors.append(f"{where} is empty")
                continue
            obj, error = _loads(body)
            if error is not None:
                errors.append(f"{where} is not valid JSON: {error}: {_short(body)}")
                continue
            c, e = _call_from(obj, where)
            calls += c
            errors += e
        return _finish(calls, errors, "hermes")

    stripped = text.strip()
    if stripped[:1] in "{[" or stripped.startswith("```"):
        obj, error = _loads(stripped)
        if error is None and _looks_like_call(obj):
            calls, errors = _call_from(obj, "tool call")
            return _finish(calls, errors, "openai" if _is_openai(obj) else "json")

    # Bare JSON objects embedded in prose: try a bounded number of `{` positions.
    attempts, pos = 0, text.find("{")
    while pos >= 0 and attempts < _MAX_BARE_ATTEMPTS and len(calls) <= MAX_CALLS:
        attempts += 1
        try:
            obj, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pos = text.find("{", pos + 1)
            continue
        if _looks_like_call(obj):
            fmt = fmt or ("openai" if _is_openai(obj) else "json")
            c, e = _call_from(obj, f"tool call {len(calls) + 1}")
            calls += c
            errors += e
        pos = text.find("{", end)
    return _finish(calls, errors, fmt)


def _is_openai(obj: Any) -> bool:
    if isinstance(obj, Sequence) and not isinstance(obj, str):
        return any(_is_openai(o) for o in obj)
    return isinstance(obj, Mapping) and ("tool_calls" in obj or "function" in obj)
