"""The tool-call parser over well-formed, malformed and adversarial replies."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rllm_envs.tools import MAX_CALLS, ToolCall, parse_tool_calls


def _one(tool="add", **arguments):
    return json.dumps({"name": tool, "arguments": arguments})


# ------------------------------------------------------------------------- well-formed


def test_hermes_single_call():
    parsed = parse_tool_calls(f"<tool_call>{_one(a=1, b=2)}</tool_call>")
    assert parsed.calls == [ToolCall("add", {"a": 1, "b": 2})]
    assert parsed.errors == [] and parsed.format == "hermes"


def test_hermes_several_calls_with_prose_and_newlines():
    reply = (
        "I will look both up.\n<tool_call>\n"
        + _one("get", name="x")
        + "\n</tool_call>\n<tool_call>"
        + _one("get", name="y")
        + "</tool_call> done"
    )
    parsed = parse_tool_calls(reply)
    assert [c.arguments["name"] for c in parsed.calls] == ["x", "y"]


def test_hermes_block_holding_a_list_of_calls():
    body = json.dumps([{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"k": 1}}])
    parsed = parse_tool_calls(f"<tool_call>{body}</tool_call>")
    assert [c.name for c in parsed.calls] == ["a", "b"]


def test_arguments_as_json_string_and_aliases():
    wire = json.dumps({"name": "f", "arguments": json.dumps({"q": "hi"})})
    assert parse_tool_calls(f"<tool_call>{wire}</tool_call>").calls[0].arguments == {"q": "hi"}
    alias = json.dumps({"name": "f", "parameters": {"q": 1}})
    assert parse_tool_calls(f"<tool_call>{alias}</tool_call>").calls[0].arguments == {"q": 1}
    missing = json.dumps({"name": "f"})
    assert parse_tool_calls(f"<tool_call>{missing}</tool_call>").calls[0].arguments == {}


def test_unclosed_final_block_is_read():
    parsed = parse_tool_calls(f"<tool_call>{_one(a=1)}")
    assert parsed.calls == [ToolCall("add", {"a": 1})]


def test_reasoning_before_think_end_is_ignored():
    reply = (
        f"<think><tool_call>{_one('bad')}</tool_call></think><tool_call>{_one('good')}</tool_call>"
    )
    assert [c.name for c in parse_tool_calls(reply).calls] == ["good"]


def test_tags_are_case_insensitive_and_fenced_json_inside_tags():
    reply = f"<TOOL_CALL>```json\n{_one(a=1)}\n```</TOOL_CALL>"
    assert parse_tool_calls(reply).calls == [ToolCall("add", {"a": 1})]


def test_bare_json_object():
    parsed = parse_tool_calls(_one(a=1))
    assert parsed.calls == [ToolCall("add", {"a": 1})] and parsed.format == "json"


def test_bare_json_inside_prose_and_code_fence():
    reply = f"Let me call it:\n```json\n{_one(a=2)}\n```\nThen I'll see."
    parsed = parse_tool_calls(reply)
    assert parsed.calls == [ToolCall("add", {"a": 2})] and parsed.format == "json"


def test_plain_json_that_is_not_a_call_is_not_a_call():
    assert not parse_tool_calls('{"answer": 42}').found
    assert not parse_tool_calls("The set {1, 2} has two elements.").found


def test_openai_message_object_and_text():
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "f", "arguments": '{"x": 1}'},
            },
            {"id": "call_2", "type": "function", "function": {"name": "g", "arguments": "{}"}},
        ],
    }
    for reply in (message, json.dumps(message), message["tool_calls"]):
        parsed = parse_tool_calls(reply)
        assert parsed.calls == [ToolCall("f", {"x": 1}, "call_1"), ToolCall("g", {}, "call_2")]
        assert parsed.format == "openai"


def test_single_openai_function_object():
    obj = {"type": "function", "function": {"name": "f", "arguments": {"x": 2}}}
    assert parse_tool_calls(json.dumps(obj)).calls == [ToolCall("f", {"x": 2})]


@pytest.mark.parametrize(
    "reply",
    [
        '[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]',
        '<|python_tag|>{"name": "a", "parameters": {"x": 1}}<|eom_id|>',
        '<tool_call>{"type": "function", "function": {"name": "a", "arguments": "{}"}}</tool_call>',
    ],
    ids=["mistral", "llama3", "openai-in-tags"],
)
def test_other_model_families_formats(reply):
    parsed = parse_tool_calls(reply)
    assert parsed.calls and parsed.calls[0].name == "a" and parsed.errors == []


def test_python_literal_fallback():
    parsed = parse_tool_calls(
        "<tool_call>{'name': 'f', 'arguments': {'flag': True, 'n': None}}</tool_call>"
    )
    assert parsed.calls == [ToolCall("f", {"flag": True, "n": None})]


def test_trailing_comma_is_tolerated():
    parsed = parse_tool_calls('<tool_call>{"name": "f", "arguments": {"a": 1,},}</tool_call>')
    assert parsed.calls == [ToolCall("f", {"a": 1})]


def test_to_text_round_trips():
    call = ToolCall("calc", {"expression": "1 + 1", "ü": "☃"})
    assert parse_tool_calls(call.to_text()).calls == [call]


# --------------------------------------------------------------------------- malformed


@pytest.mark.parametrize(
    "reply, fragment",
    [
        ("<tool_call>{not json</tool_call>", "not valid JSON"),
        ("<tool_call></tool_call>", "is empty"),
        ('<tool_call>{"arguments": {}}</tool_call>', "has no `name`"),
        ('<tool_call>{"name": 3, "arguments": {}}</tool_call>', "has no `name`"),
        ('<tool_call>"just a string"</tool_call>', "expected a JSON object"),
        ('<tool_call>{"name": "f", "arguments": "{oops"}</tool_call>', "arguments of `f`"),
        ('<tool_call>{"name": "f", "arguments": {"a": 1,}}}</tool_call>', "not valid JSON"),
    ],
)
def test_malformed_blocks_become_errors(reply, fragment):
    parsed = parse_tool_calls(reply)
    assert parsed.calls == []
    assert len(parsed.errors) == 1 and fragment in parsed.errors[0]
    assert parsed.found


def test_good_and_bad_blocks_mix():
    reply = f"<tool_call>{_one('ok')}</tool_call><tool_call>{{broken</tool_call>"
    parsed = parse_tool_calls(reply)
    assert [c.name for c in parsed.calls] == ["ok"] and len(parsed.errors) == 1
    assert "tool call 2" in parsed.errors[0]


def test_non_object_arguments_are_kept_for_validation():
    parsed = parse_tool_calls('<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>')
    assert parsed.calls == [ToolCall("f", [1, 2])]


def test_nothing_call_like():
    for reply in ["", "   ", "The answer is 42.", "\\boxed{3}", None, 42, b"bytes"]:
        parsed = parse_tool_calls(reply)
        assert not parsed.found and parsed.format is None


# ------------------------------------------------------------------------- adversarial


def test_too_many_calls_are_capped():
    reply = "".join(f"<tool_call>{_one(i=i)}</tool_call>" for i in range(50))
    parsed = parse_tool_calls(reply)
    assert len(parsed.calls) == MAX_CALLS
    assert any("too many" in e for e in parsed.errors)


@pytest.mark.parametrize(
    "reply",
    [
        "[" * 200_000,
        "{" * 200_000,
        '{"a":' * 50_000,
        "<tool_call>" + "[" * 200_000,
        "<tool_call>" * 20_000,
        '{"name": "x", "arguments": ' * 20_000,
        "<tool_call>{'a': " + "(" * 50_000 + "</tool_call>",
        "\x00\ud800" * 10_000 + "<tool_call>\x00</tool_call>",
    ],
    ids=[
        "brackets",
        "braces",
        "nested-keys",
        "tag-brackets",
        "many-tags",
        "nested-calls",
        "literal-parens",
        "control-chars",
    ],  # fmt: skip
)
def test_adversarial_input_never_raises(reply):
    parsed = parse_tool_calls(reply)
    assert len(parsed.calls) <= MAX_CALLS
    assert all(isinstance(e, str) and len(e) < 1000 for e in parsed.errors)


def test_huge_argument_values_survive():
    big = "x" * 200_000
    parsed = parse_tool_calls(f"<tool_call>{_one(code=big)}</tool_call>")
    assert parsed.calls[0].arguments["code"] == big
    assert all(len(e) < 1000 for e in parsed.errors)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_random_text_never_raises(text):
    parsed = parse_tool_calls(text)
    assert isinstance(parsed.calls, list) and isinstance(parsed.errors, list)


@settings(max_examples=100, deadline=None)
@given(
    st.text(min_size=1, max_size=30),
    st.dictionaries(st.text(max_size=10), st.integers() | st.text(max_size=20), max_size=4),
)
def test_any_wellformed_call_round_trips(name, arguments):
    name = name.strip() or "f"
    parsed = parse_tool_calls(ToolCall(name, arguments).to_text())
    if "</tool_call>" in json.dumps(arguments, ensure_ascii=False) or "</tool_call>" in name:
        return  # a closing tag inside a string legitimately ends the block early
    if "</think>" in name or "</think>" in json.dumps(arguments, ensure_ascii=False):
        return
    assert parsed.calls == [ToolCall(name, arguments)]
