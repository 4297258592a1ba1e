r"""Text rules for the answer part of a model reply: one definition for every parser and agent.

No Gymnasium import; every env parser (FrozenLake moves, tool calls, tic-tac-toe moves, math
answers, code blocks) and every agent in :mod:`rllm_agents` reads replies through these rules,
so a reply means the same thing wherever it goes.

**Reasoning.** A reply may hold reasoning in ``<think>...</think>`` (tags matched
case-insensitively). The *answer part* is:

1. the text after the last ``</think>``, when the reply closes a think block (with or without
   its ``<think>``: some chat templates open the block in the prompt);
2. **nothing** (``""``) when a ``<think>`` is still open at the end -- one with no ``</think>``
   after it. Such a reply was cut while thinking (at the token limit): it has no answer, and
   text written before that ``<think>`` is not read either, so an answer cannot be hidden
   ahead of an unfinished block;
3. the whole reply otherwise.

Leading and trailing whitespace of the answer part is removed. The rule is idempotent: the
answer part of an answer part is itself.

**Placeholders.** :func:`is_placeholder` says whether an answer is a template left unfilled
(``"..."``, ``"<answer>"``, ``"your answer"``) or one of the example values a prompt showed;
tool envs refuse such answers instead of grading them, so copying the instructions earns
nothing.

Examples:
    >>> answer_text("<think>2 + 2 is 4</think> The answer is 4.")
    'The answer is 4.'
    >>> answer_text("<THINK>still thinking ...")
    ''
    >>> answer_text("plain reply")
    'plain reply'
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "THINK_OPEN",
    "THINK_CLOSE",
    "ReplyParts",
    "split_reply",
    "answer_text",
    "is_placeholder",
    "PLACEHOLDER_WORDS",
    "tag_contents",
    "tag_matches",
]

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
_OPEN_RE = re.compile(re.escape(THINK_OPEN), re.IGNORECASE)
_CLOSE_RE = re.compile(re.escape(THINK_CLOSE), re.IGNORECASE)


@dataclass(frozen=True)
class ReplyParts:
    """A reply split by the reasoning rule (module docstring).

    Attributes:
        reasoning: The text up to and including the last ``</think>`` (or from an unclosed
            ``<think>`` to the end); ``""`` when the reply has none.
        answer: The answer part, whitespace-stripped; ``""`` when thinking never finished.
        finished: False when a ``<think>`` was left open (the reply has no answer).
    """

    reasoning: str
    answer: str
    finished: bool


def split_reply(reply: str) -> ReplyParts:
    """Split ``reply`` into its reasoning and its answer part (rules in the module docstring)."""
    text = reply if isinstance(reply, str) else str(reply)
    closes = list(_CLOSE_RE.finditer(text))
    start = closes[-1].end() if closes else 0
    if _OPEN_RE.search(text, start):
        return ReplyParts(reasoning=text, answer="", finished=False)
    return ReplyParts(reasoning=text[:start], answer=text[start:].strip(), finished=True)


def answer_text(reply: str) -> str:
    """The answer part of a reply (``""`` for a reply cut while thinking)."""
    return split_reply(reply).answer


_TAG_RES: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {}


def tag_matches(text: str, tag: str) -> list[tuple[int, str]]:
    """Every complete ``<tag>...</tag>`` in ``text`` as ``(start, content)``, in linear time.

    ``start`` is the index of the opening tag; the pairing rule is :func:`tag_contents`'s.
    """
    pair = _TAG_RES.get(tag)
    if pair is None:
        pair = (
            re.compile(re.escape(f"<{tag}>"), re.IGNORECASE),
            re.compile(re.escape(f"</{tag}>"), re.IGNORECASE),
        )
        _TAG_RES[tag] = pair
    open_re, close_re = pair
    found: list[tuple[int, str]] = []
    pos = 0
    while (opening := open_re.search(text, pos)) is not None:
        closing = close_re.search(text, opening.end())
        if closing is None:
            break
        found.append((opening.start(), text[opening.end() : closing.start()]))
        pos = closing.end()
    return found


def tag_contents(text: str, tag: str) -> list[str]:
    """The contents of every complete ``<tag>...</tag>`` in ``text``, in order, in linear time.

    The same list as ``re.findall(r"<tag>(.*?)</tag>", text, re.IGNORECASE | re.DOTALL)``,
    without its cost: that pattern retries every opening tag to the end of the text, so a reply
    of k opening tags and no closing one costs O(k * n) (a 64 KiB action took seconds, and
    ``re`` holds the GIL, freezing every thread of a server). Here each opening tag is paired
    with the nearest closing tag after it, and the scan stops at the first opening tag with no
    closing tag after it (no later one can have one either).

    Examples:
        >>> tag_contents("<answer>1</answer> <ANSWER>2</answer>", "answer")
        ['1', '2']
        >>> tag_contents("<answer><answer>x</answer>", "answer")
        ['<answer>x']
        >>> tag_contents("<answer>" * 3, "answer")
        []
    """
    return [content for _, content in tag_matches(text, tag)]


#: Words that, alone, are a template rather than an answer (after normalisation).
PLACEHOLDER_WORDS = frozenset(
    {
        "answer",
        "the answer",
        "your answer",
        "final answer",
        "your final answer",
        "the final answer",
        "answer here",
        "your answer here",
        "query",
        "your query",
        "search query",
        "your search query",
        "value",
        "result",
        "text",
        "string",
        "todo",
        "tbd",
    }
)
_BRACKETS = ("<>", "[]", "{}", "()")
# `<name>`, `<your answer>`, `<tool_name>`: a slot to fill, never a value.
_SLOT = re.compile(r"<\s*[a-z][a-z _-]*\s*>")


def _normal(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).replace("\u2026", "...")
    return " ".join(text.lower().split())


def is_placeholder(answer: object, examples: Iterable[str] = ()) -> bool:
    """Whether ``answer`` is an unfilled template or a value copied from a prompt's example.

    A placeholder is: empty or only punctuation (``"..."``, ``"?"``); a slot in angle brackets
    (``"<name>"``, ``"<your answer>"``); one of :data:`PLACEHOLDER_WORDS` (``"your answer"``),
    also inside brackets or quotes (``"[your query]"``); or equal (case- and
    space-insensitively) to one of ``examples``, the example values the prompt itself showed.

    Args:
        answer: The submitted text (non-strings are read with ``str``).
        examples: Example values shown in the prompt.

    Returns:
        True for a placeholder.

    Examples:
        >>> is_placeholder("...")
        True
        >>> is_placeholder("<your answer>")
        True
        >>> is_placeholder("Paris")
        False
        >>> is_placeholder("Paris", examples=["Paris"])
        True
    """
    text = _normal(str(answer))
    if not any(ch.isalnum() for ch in text):
        return True
    core = text.strip(" \"'`*_.:")
    if _SLOT.fullmatch(core):
        return True
    while len(core) >= 2 and core[0] + core[-1] in _BRACKETS:
        core = core[1:-1].strip(" \"'`*_.:")
    if core in PLACEHOLDER_WORDS or not any(ch.isalnum() for ch in core):
        return True
    return any(text == _normal(str(e)) or core == _normal(str(e)) for e in examples)
