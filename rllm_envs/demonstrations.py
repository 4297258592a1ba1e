r"""Worked examples agents show before a task, and the rule that a copy of one earns nothing.

A family's agent may show one worked exchange of an *invented* task before the real one
(:mod:`rllm_agents.agent` reads them from here): a small instruct model copies a format it
has seen far more reliably than one described in words. What a model sees it can also copy,
so the envs know these examples and pay nothing for a copy:

* a reply that repeats a demonstration's worked reply (whitespace and case aside) earns 0 in
  every reward component that pays, on every task (a component that costs, a fall or an
  unreadable reply, still costs: the step happened);
* a reply that gives a demonstration's final answer (:attr:`Demonstration.answers`, e.g.
  ``\boxed{67}``) earns nothing either unless that answer is right for the task at hand (a
  constant answer is then worth its base rate, as any constant is).

:class:`rllm_envs.core.TextEnv` applies the rule on every step (its ``demonstrations``
class attribute lists the examples it knows; every env knows all of :data:`DEMONSTRATIONS`),
and the multi-agent envs that grade replies apply :func:`copied_demonstration` too.
No Gymnasium import.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from rllm_envs.text import answer_text

__all__ = [
    "Demonstration",
    "DEMONSTRATIONS",
    "JUDGE",
    "MATH",
    "SEARCH",
    "TOOL",
    "copied_demonstration",
    "demonstration_replies",
]

Message = dict[str, Any]


@dataclass(frozen=True)
class Demonstration:
    """One worked exchange of an invented task.

    Attributes:
        name: Short id (reported in ``info["copied_demonstration"]``).
        messages: The chat messages (user, assistant and tool turns), ending with the
            assistant's reply.
        answers: The final answers a copy would give, as written in the reply (a box, a
            tool call, an entity name). Empty when the answer is a choice any real reply
            may also make (a judge's solution number): then only a copy of the whole reply
            is caught.
    """

    name: str
    messages: tuple[Message, ...]
    answers: tuple[str, ...] = ()

    @property
    def replies(self) -> tuple[str, ...]:
        """The assistant turns of the exchange."""
        return tuple(m["content"] for m in self.messages if m["role"] == "assistant")


#: The math families' worked example (a boxed final answer after one line of working). Its
#: numbers are above the procedural families' small operands.
MATH = Demonstration(
    "math",
    (
        {"role": "user", "content": "Compute $12 + 5 \\times 11$."},
        {
            "role": "assistant",
            "content": "First $5 \\times 11 = 55$, then $12 + 55 = 67$.\n\n\\boxed{67}",
        },
    ),
    answers=("\\boxed{67}",),
)

#: The tool families' worked example: the first call of an invented task with an invented
#: tool. It stops at the call: with a tool result and a final call after it, SmolLM2-135M
#: copied the ``<tool_response>`` block instead of calling.
TOOL = Demonstration(
    "tool",
    (
        {
            "role": "user",
            "content": "Solve the task below by calling tools.\n\nTask: How many words are in "
            "the sentence 'the quick brown fox'?\n\nTools:\n- word_count(text: string): Count "
            "the words of a text.\n- final_answer(answer: string | number): Submit your final "
            "answer.",
        },
        {
            "role": "assistant",
            "content": '<tool_call>{"name": "word_count", "arguments": {"text": "the quick '
            'brown fox"}}</tool_call>',
        },
    ),
    answers=('"name": "word_count"', "the quick brown fox"),
)

#: The search family's worked example: the first search of a question on an invented person.
SEARCH = Demonstration(
    "search",
    (
        {"role": "user", "content": "Question: In which city was the painter Oskar Melvane born?"},
        {"role": "assistant", "content": "<search>Oskar Melvane</search>"},
    ),
    answers=("Oskar Melvane",),
)

#: The judge's worked example: an invented problem, one wrong and one right solution.
JUDGE = Demonstration(
    "judge",
    (
        {
            "role": "user",
            "content": "You are the judge. 2 solver(s) answered this problem:\n\nProblem: "
            "Compute $15 + 4 \\times 12$.\n\n=== Solution 1 ===\n$15 + 4 = 19$, then $19 "
            "\\times 12 = 228$.\n\n\\boxed{228}\n\n=== Solution 2 ===\nFirst $4 \\times 12 = "
            "48$, then $15 + 48 = 63$.\n\n\\boxed{63}\n\nCheck the solutions and select the one "
            "whose final answer is correct. Reply with its number (1-2) in \\boxed{...}.",
        },
        {
            "role": "assistant",
            "content": "Solution 1 adds before it multiplies. Solution 2 multiplies first: "
            "$4 \\times 12 = 48$ and $15 + 48 = 63$, which is right.\n\n\\boxed{2}",
        },
    ),
)

#: Every demonstration the library's agents show; every env pays nothing for a copy of one.
DEMONSTRATIONS: tuple[Demonstration, ...] = (MATH, TOOL, SEARCH, JUDGE)


def _squash(text: str) -> str:
    return "".join(text.split()).casefold()


_BOXED = re.compile(r"\\(?:boxed|fbox)\{((?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*)\}")
_WRAPPER = re.compile(r"\\(?:text|textbf|mathrm|mathbf|mathit|operatorname|displaystyle)\s*")
_NUMBER = re.compile(r"^\+?0*(\d+)(?:\.0*)?$")


def _value(text: str) -> str:
    r"""A boxed value with its spelling undone: ``\text{+067.0}`` -> ``67``."""
    value = _WRAPPER.sub("", _squash(text)).replace("{", "").replace("}", "").replace("$", "")
    number = _NUMBER.match(value)
    return number.group(1) if number else value


def _boxed_values(text: str) -> set[str]:
    return {_value(m) for m in _BOXED.findall(text)}


def demonstration_replies(
    demonstrations: Iterable[Demonstration] = DEMONSTRATIONS,
) -> list[str]:
    """Every assistant reply of ``demonstrations`` (what a copying policy would send)."""
    return [reply for d in demonstrations for reply in d.replies]


def copied_demonstration(
    reply: str,
    *,
    correct: bool = False,
    demonstrations: Sequence[Demonstration] = DEMONSTRATIONS,
) -> str | None:
    """The name of the demonstration ``reply`` copies, or ``None``.

    Only the answer part of the reply is read (:func:`rllm_envs.text.answer_text`), with
    whitespace and case ignored.

    Args:
        reply: The model's reply (the env's action).
        correct: Whether the env graded the reply right for its task: a reply that only
            gives a demonstration's answer is not a copy when that answer is right.
        demonstrations: The demonstrations to check against.

    Returns:
        The demonstration's :attr:`Demonstration.name` when the reply repeats one of its
        worked replies, or gives one of its :attr:`Demonstration.answers` and is not right.
    """
    answer = answer_text(reply)
    text = _squash(answer)
    if not text:
        return None
    boxed: set[str] | None = None  # the reply's boxed values, read once when first needed
    for demo in demonstrations:
        replies, answers, shown = _keys(demo)
        if any(r in text for r in replies):
            return demo.name
        if correct:
            continue
        if any(a in text for a in answers):
            return demo.name
        # The same boxed value spelled another way (\text{67}, +67, 067.0) is the same answer.
        if shown:
            if boxed is None:
                boxed = _boxed_values(answer)
            if shown & boxed:
                return demo.name
    return None


#: What :func:`copied_demonstration` compares, per demonstration (by identity: its messages
#: are dicts, so it is not hashable): squashed replies, squashed answers, boxed values.
_KEYS: dict[int, tuple[Demonstration, tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]]] = {}


def _keys(demo: Demonstration) -> tuple[tuple[str, ...], tuple[str, ...], frozenset[str]]:
    cached = _KEYS.get(id(demo))
    if cached is None or cached[0] is not demo:
        keys = (
            tuple(s for s in map(_squash, demo.replies) if s),
            tuple(s for s in map(_squash, demo.answers) if s),
            frozenset(v for a in demo.answers for v in _boxed_values(a)),
        )
        if len(_KEYS) > 1024:  # demonstrations are few; a bound all the same
            _KEYS.clear()
        cached = _KEYS[id(demo)] = (demo, keys)
    return cached[1]
