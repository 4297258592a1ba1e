"""The code-task record every loader returns, and the readers of fields several schemas share."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from typing import Any

Record = Mapping[str, Any]
Task = dict[str, Any]


def _json_field(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, str):
        return json.loads(value)
    return value


def _tests(pairs: list[tuple[Any, Any]]) -> list[dict[str, str]]:
    return [{"input": _text(i), "output": _text(o)} for i, o in pairs]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def _task(**fields: Any) -> Task:
    task: Task = {
        "id": "",
        "title": "",
        "question": "",
        "starter_code": "",
        "kind": "stdin",
        "func_name": None,
        "public_tests": [],
        "hidden_tests": [],
        "solution": None,
        "solution_cpp": None,
        "time_limit": None,
        "difficulty": "",
        "source": "",
        "lenient": False,
        "prelude": None,
        "unconverted": [],
    }
    task.update(fields)
    task["verdict_trust"] = "in_process" if task["kind"] == "assert" else "host"
    if not task["question"]:
        raise ValueError("the problem has no statement")
    if not task["public_tests"] and not task["hidden_tests"]:
        raise ValueError("the problem has no tests")
    if task["kind"] == "functional" and not task["func_name"]:
        raise ValueError("functional tests need a function name")
    return task


def _call_args(value: Any, n: int) -> list[Any]:
    """The arguments of call-based test ``n``: a list, or one JSON value per line.

    rLLM's and verl's preprocessing store each APPS/TACO call's arguments as a string of
    JSON lines; a raw record stores the list itself.
    """
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [_json_value(line, f"input {n}") for line in value.split("\n") if line.strip()]
    raise ValueError(
        f"Expects the arguments of call-based test {n} to be a list or JSON lines, actual "
        f"type: {type(value).__name__}."
    )


def _json_value(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(
            f"cannot read {what} {text[:80]!r} as a JSON (or Python literal) value; call-based "
            "tests give each argument as one JSON value per line"
        ) from None


def _call_tests(
    inputs: Sequence[Any], outputs: Sequence[Any], *, serialized: bool | None = None
) -> list[dict[str, str]]:
    """Functional tests from call arguments and return values (TACO, PrimeIntellect)."""
    if len(inputs) != len(outputs):
        raise ValueError("the tests have different numbers of inputs and outputs")
    tests = []
    for n, (args_value, out) in enumerate(zip(inputs, outputs, strict=True)):
        args = _call_args(args_value, n)
        is_text = isinstance(args_value, str) if serialized is None else serialized
        if is_text and isinstance(out, str):
            out = _json_value(out, f"output {n}")
        try:
            tests.append(
                {
                    "input": "\n".join(json.dumps(a, allow_nan=False) for a in args),
                    "output": json.dumps(out, allow_nan=False),
                }
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"call-based test {n} is not JSON: {e}") from None
    return tests


def _seconds(value: Any) -> float | None:
    """``2``, ``"2.0"``, ``"2 seconds"`` or CodeContests' ``{"seconds", "nanos"}``."""
    if value is None or value == "":
        return None
    if isinstance(value, Mapping):
        return float(value.get("seconds") or 0) + float(value.get("nanos") or 0) / 1e9 or None
    if isinstance(value, (int, float)):
        return float(value) or None
    try:
        return float(str(value).split()[0]) or None
    except ValueError:
        return None
