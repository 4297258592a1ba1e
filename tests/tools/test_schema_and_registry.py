"""Argument validation, tool definitions and safe execution through the registry."""

from __future__ import annotations

import pickle

import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.tools import (
    CALCULATOR,
    FINAL_ANSWER,
    Tool,
    ToolCall,
    ToolRegistry,
    check_schema,
    validate_arguments,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "minLength": 1, "maxLength": 20},
        "days": {"type": "integer", "minimum": 0, "maximum": 10},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "ratio": {"type": ["number", "null"]},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_valid_arguments_have_no_problems():
    assert validate_arguments(SCHEMA, {"city": "Oslo", "days": 3, "unit": "c"}) == []
    assert validate_arguments(SCHEMA, {"city": "Oslo", "days": 3.0, "ratio": None}) == []


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ({}, "missing required argument `city`"),
        ({"city": 3}, "arguments.city: expected string, got integer 3"),
        ({"city": "x", "days": "3"}, 'arguments.days: expected integer, got string "3"'),
        ({"city": "x", "days": True}, "expected integer, got boolean"),
        ({"city": "x", "days": 2.5}, "expected integer, got number"),
        ({"city": "x", "days": 11}, "must be <= 10"),
        ({"city": "x", "unit": "k"}, 'must be one of "c", "f"'),
        ({"city": "x", "tags": ["a", 1]}, "arguments.tags[1]: expected string"),
        ({"city": "x", "tags": ["a", "b", "c"]}, "at most 2 items"),
        ({"city": "x", "colour": 1}, "unknown argument `colour`"),
        ({"city": ""}, "at least 1 characters"),
        ([1, 2], "arguments: expected object, got array"),
        ("Oslo", "expected object, got string"),
    ],
)
def test_invalid_arguments_are_named(arguments, fragment):
    problems = validate_arguments(SCHEMA, arguments)
    assert any(fragment in p for p in problems), problems


def test_messages_stay_short_for_huge_values():
    problems = validate_arguments(SCHEMA, {"city": "x" * 1_000_000})
    assert problems and all(len(p) < 300 for p in problems)


def test_check_schema_rejects_unsupported_keywords():
    check_schema(SCHEMA)
    with pytest.raises(InvalidEnvConfig, match="unsupported keyword"):
        check_schema({"type": "object", "patternProperties": {}})
    with pytest.raises(InvalidEnvConfig, match="unknown type"):
        check_schema({"type": "float"})
    with pytest.raises(InvalidEnvConfig, match="requires properties"):
        check_schema({"type": "object", "properties": {}, "required": ["x"]})


def _echo(**kwargs):
    return ", ".join(f"{k}={v}" for k, v in sorted(kwargs.items()))


def _boom(city):
    raise RuntimeError("service unavailable")


def _long(city):
    return "y" * 10_000


def _tool(name, fn=_echo):
    return Tool(name=name, description="d", parameters=SCHEMA, function=fn)


def test_tool_schema_is_openai_function_format():
    schema = CALCULATOR.schema()
    assert schema["type"] == "function"
    assert schema["function"]["name"] == "calculator"
    assert schema["function"]["parameters"]["required"] == ["expression"]
    assert CALCULATOR.signature() == "calculator(expression: string)"
    assert "answer: string | number" in FINAL_ANSWER.signature()


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "naïve"])
def test_tool_names_are_checked(name):
    with pytest.raises(InvalidEnvConfig):
        _tool(name)


def test_tool_parameters_must_be_an_object_schema():
    with pytest.raises(InvalidEnvConfig, match="type 'object'"):
        Tool(name="t", description="d", parameters={"type": "string"}, function=_echo)


def test_registry_executes_and_reports_errors():
    registry = ToolRegistry([_tool("weather"), _tool("boom", _boom), _tool("long", _long)])
    assert registry.names == ["weather", "boom", "long"] and len(registry) == 3
    ok = registry.execute(ToolCall("weather", {"city": "Oslo", "days": 2}))
    assert ok.ok and ok.output == "city=Oslo, days=2"

    unknown = registry.execute(ToolCall("wether", {"city": "Oslo"}))
    assert not unknown.ok and unknown.error == "unknown_tool"
    assert "Did you mean `weather`" in unknown.output

    bad = registry.execute(ToolCall("weather", {"city": 1}))
    assert bad.error == "invalid_arguments" and "weather(city: string" in bad.output

    failed = registry.execute(ToolCall("boom", {"city": "x"}))
    assert failed.error == "tool_error" and "service unavailable" in failed.output

    cut = registry.execute(ToolCall("long", {"city": "x"}))
    assert cut.ok and cut.truncated and len(cut.output) == registry.max_output_chars


def test_registry_rejects_duplicates_and_lists_schemas():
    with pytest.raises(InvalidEnvConfig, match="already registered"):
        ToolRegistry([_tool("a"), _tool("a")])
    registry = ToolRegistry([_tool("a"), CALCULATOR])
    assert [s["function"]["name"] for s in registry.schemas()] == ["a", "calculator"]
    assert "- calculator(expression: string):" in registry.describe()


def test_registry_pickles():
    registry = ToolRegistry([CALCULATOR, FINAL_ANSWER])
    clone = pickle.loads(pickle.dumps(registry))
    assert clone.execute(ToolCall("calculator", {"expression": "2^10"})).output == "1024"
