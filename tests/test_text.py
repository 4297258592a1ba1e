"""The one text rule for the answer part of a reply, and every parser that follows it."""

from __future__ import annotations

import pytest

from rllm_agents import GenericAgent
from rllm_envs.frozenlake.lake import parse_action
from rllm_envs.math import extract_answer
from rllm_envs.multiagent.mathtasks import parse_choice
from rllm_envs.multiagent.tictactoe_rules import parse_move
from rllm_envs.text import answer_text, is_placeholder, split_reply
from rllm_envs.tools import parse_tool_calls


@pytest.mark.parametrize(
    ("reply", "answer"),
    [
        ("plain", "plain"),
        ("  spaced \n", "spaced"),
        ("<think>a</think> b", "b"),
        ("<think>a</think>b<think>c</think> d", "d"),
        ("<THINK>a</Think> b", "b"),
        ("reasoning without an opening tag</think> b", "b"),
        ("<think>cut at the token limit", ""),
        ("hidden answer <think>then cut", ""),
        ("<think>a</think> b <think>cut again", ""),
        ("", ""),
    ],
)
def test_answer_part(reply, answer):
    assert answer_text(reply) == answer
    assert answer_text(answer_text(reply)) == answer_text(reply)  # idempotent


def test_split_reply_says_whether_thinking_finished():
    parts = split_reply("<think>x</think> y")
    assert (parts.reasoning, parts.answer, parts.finished) == ("<think>x</think>", "y", True)
    assert not split_reply("<think>x").finished


@pytest.mark.parametrize(
    "text",
    [
        "",
        "...",
        "…",
        " ? ",
        "<answer>",
        "<name>",
        "< tool_name >",
        "[your answer]",
        '"your query"',
        "{answer}",
        "TODO",
    ],
)
def test_placeholders(text):
    assert is_placeholder(text)


@pytest.mark.parametrize(
    "text",
    [
        "Paris",
        "42",
        "2024-01-05",
        "no",
        "the Kora river",
        "{1, 2}",
        "[3, 4]",
        "(1, 2)",
        "x < y > z",
    ],
)
def test_real_answers_are_not_placeholders(text):
    assert not is_placeholder(text)


def test_example_values_are_placeholders():
    assert is_placeholder(" 12 * 7 ", examples=["12 * 7"])
    assert not is_placeholder("12 * 8", examples=["12 * 7"])


# Every parser reads the same answer part: (parse(reply) -> found anything?, a valid reply).
PARSERS = {
    "frozenlake": (lambda r: parse_action(r)[0] is not None, "<action>Left</action>"),
    "tictactoe": (lambda r: parse_move(r)[0] is not None, "<move>5</move>"),
    "choice": (lambda r: parse_choice(r, 3)[0] is not None, "\\boxed{2}"),
    "tool_calls": (
        lambda r: bool(parse_tool_calls(r).calls),
        '<tool_call>{"name": "f", "arguments": {}}</tool_call>',
    ),
    "agent": (lambda r: bool(GenericAgent().act(r)), "anything"),
    "math": (lambda r: extract_answer(r) is not None, "so \\boxed{7}"),
}


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_parser_follows_the_rule(name):
    found, valid = PARSERS[name]
    assert found(valid)
    assert found(f"<think>plan</think>{valid}")
    assert found(f"<THINK>plan</THINK>\n{valid}")
    # Cut while thinking: no answer, even one written before the open block.
    assert not found(f"{valid} <think>second thoughts, cut")
    assert not found(f"<think>{valid} and more, cut")


def test_to_jsonable_is_total():
    import numpy as np

    from rllm_envs.utils import to_jsonable

    nested: list = []
    cursor = nested
    for _ in range(5000):
        cursor.append([])
        cursor = cursor[0]
    value = {"a": np.int64(3), "b": (1, {2}), "c": np.array([1.5]), 4: object}
    assert to_jsonable(value) == {"a": 3, "b": [1, [2]], "c": [1.5], "4": str(object)}
    assert isinstance(to_jsonable(nested), str)


def test_to_jsonable_finite_writes_strict_json():
    import json

    import numpy as np

    from rllm_envs.utils import to_jsonable

    value = {"x": [float("inf"), np.float32("nan"), -np.inf], "y": 0.5}
    assert to_jsonable(value)["x"][0] == float("inf")  # the store keeps them exact
    strict = to_jsonable(value, finite=True)
    assert strict == {"x": ["inf", "nan", "-inf"], "y": 0.5}
    json.dumps(strict, allow_nan=False)


# ------------------------------------------------------- hostile tag spam (issue #31, F4)
# ``re.findall(r"<tag>(.*?)</tag>")`` retried every opening tag to the end of the text:
# a 256K action of unclosed opening tags took over a minute while holding the GIL (the whole
# env server froze). Each family's parser must read such an action like any other reply.
# The child process's timeout is only a hang guard (the linear parse takes milliseconds).
_SPAM = 262_144
_HOSTILE_FAMILIES = {
    "frozenlake": (
        "from rllm_envs.frozenlake.lake import parse_action\n"
        "a, why = parse_action(('<action>' * N)[:N])\n"
        "assert a is None and why, (a, why)\n"
    ),
    "tictactoe": (
        "from rllm_envs.multiagent.tictactoe_rules import parse_move\n"
        "for tag in ('<move>', '<answer>'):\n"
        "    cell, why = parse_move((tag * N)[:N])\n"
        "    assert cell is None and why, (cell, why)\n"
    ),
    "mathtasks": (
        "from rllm_envs.multiagent.mathtasks import parse_choice\n"
        "choice, why = parse_choice(('<answer>' * N)[:N], 3)\n"
        "assert choice is None and why, (choice, why)\n"
    ),
    "reasoning_gym": (
        "from rllm_envs.reasoning_gym.scoring import answer_blocks\n"
        "assert answer_blocks(('<answer>' * N)[:N]) == []\n"
        "assert answer_blocks('<answer>ok</answer>' + ('<answer>' * N)[:N]) == ['ok']\n"
    ),
    "search": (
        "import rllm_envs\n"
        "env = rllm_envs.make('rllm/Search-v1')\n"
        "env.reset(seed=0)\n"
        "for tag in ('<search>', '<answer>'):\n"
        "    obs, reward, term, trunc, info = env.step((tag * N)[:N])\n"
        "    assert reward == 0.0 and not term, info\n"
    ),
    "tooluse": (
        "import rllm_envs\n"
        "env = rllm_envs.make('rllm/ToolUse-v1')\n"
        "env.reset(seed=0)\n"
        "obs, reward, term, trunc, info = env.step(('<answer>' * N)[:N])\n"
        "assert reward == 0.0 and info['invalid_action'], info\n"
    ),
}


@pytest.mark.parametrize("family", sorted(_HOSTILE_FAMILIES))
def test_unclosed_tag_spam_parses_like_any_reply(family: str) -> None:
    import subprocess
    import sys

    code = f"N = {_SPAM}\n" + _HOSTILE_FAMILIES[family]
    try:
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{family}: parsing {_SPAM} characters of unclosed tags did not finish")
    assert done.returncode == 0, done.stderr[-2000:]


def test_tag_contents_is_findall_of_the_lazy_pattern() -> None:
    import random
    import re

    from rllm_envs.text import tag_contents, tag_matches

    lazy = re.compile(r"<answer>(.*?)</answer>", re.IGNORECASE | re.DOTALL)
    pieces = ["<answer>", "</answer>", "<ANSWER>", "</Answer>", "x", "\n", "<answ", "er>", "</"]
    rng = random.Random(0)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert tag_contents(text, "answer") == lazy.findall(text), text
        assert tag_matches(text, "answer") == [(m.start(), m.group(1)) for m in lazy.finditer(text)]
