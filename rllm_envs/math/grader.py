r"""Math answer grading: extract the final answer from a response and compare it to the gold.

A plain module (no Gymnasium import). Public API:

* :func:`extract_answer` -- the final answer of a model response, or ``None``.
* :func:`is_equivalent` -- whether two bare answers are mathematically the same.
* :func:`score_response` -- ``(score, reason)`` for a whole response against a gold answer:
  the reward, which also requires the answer to be in final form.
* :func:`grade_answer` -- the same for an extracted answer, as a :class:`Verdict`.
* :func:`final_form_issue` -- why an answer is not the asked value in final form, or ``None``.
* :func:`compare` -- like :func:`is_equivalent`, with the reason.

**Extraction** (:func:`extract_answer`) has two modes, picked with ``answer_format`` on
:func:`extract_answer`, :func:`compare`, :func:`is_equivalent` and :func:`score_response`.
``"boxed"`` (the default; strict, for RL rewards), first rule that finds something wins:

1. Only the text after the last ``</think>`` is read; a response with ``<think>`` but no
   ``</think>`` never finished thinking and has no answer.
2. The content of the last ``\boxed{...}`` or ``\fbox{...}`` (nested braces allowed; also
   ``\boxed 5``).
3. Fallback: the last "final answer is X" / "answer: X" / "#### X" phrase (GSM8K style), up to
   the end of its line, with a trailing period and ``$`` removed.

``"any"`` (lenient, for evaluation and datasets whose answers are not boxed), after rule 1:
the last ``\boxed{}`` (with the boxes right before it that only connectors separate, so
``\boxed{1}, \boxed{2}`` is ``1, 2``); the last "the answer is X" / "Answer: X" phrase (the
math right after it, or what follows its last "is"); GSM8K's ``#### X``; the last LaTeX math
(``$...$``, ``$$...$$``, ``\(...\)``, ``\[...\]``; inline math stays on one line; ``$1$ and
$2$`` is ``1, 2``); the whole reply when it reads as an answer rather than prose; and finally
the last number in the text (not glued to a word: ``AZYUK2A`` has none). In this mode both
sides of :func:`compare` may be free text, and numbers are read leniently: currency (``$``,
``€``, ``£``, ...) and units go, thousands separators (``,``, ``,\!``, ``{,}``, thin and plain
spaces between groups of three) go, a comma is a decimal comma unless it groups thousands
(``2,74`` and ``0,111`` are decimals, ``1,000`` is a thousand); ``x \approx 11`` is 11 and
``x = 1/3 \approx 0.33`` is 1/3; ``lhs = value`` counts as its value when ``lhs`` is a
computation or a name (``|AB| = 1``), not an equation to solve (``a + 3z = 0``), also in a
list (``AB=4, CD=5`` is ``4, 5``; ``p=5,q=2;p=7,q=2`` is ``(5,2),(7,2)``). Boxes join as
math-verify joins them (fewer than 10 characters apart, or fewer than 70 with ``and``/
``or``/``,``/``;`` between and different contents; never across a sentence or a colon); an
unclosed last box reads to the end of its line; a "final answer is" phrase after the boxes
wins; a number in the prose after the last math wins; inline math broken over lines is not
read. In this mode only: a decimal with k >= 2 places equals a value with no finite decimal
expansion when it is that value rounded to k places (``0.33`` is 1/3, ``2.6667`` is 8/3,
``1.41`` is ``\sqrt2``; ``0.25`` is not ``0.253``, ``0.3`` is not 1/3; in ``"boxed"`` mode a
decimal matches such a value only within a relative error of 1e-6, and never where the
problem asks for an exact form); answer sets ignore repeated elements; ``or`` glued between
parts (``(11,7)or(7,11)``) separates them; sums and products of numeric matrix literals are
computed; ``W(x) = 1`` and ``W(n) = 1`` name the same value.

**Final form** (:func:`final_form_issue`, applied by :func:`score_response` and
:func:`grade_answer`, the reward): a task that asks for a value is answered by the value, not
by a computation that equals it. The answer's expression tree is read
(:mod:`rllm_envs.math._final_form`) and must have no arithmetic left between numbers
(``3+4``, ``\frac34+\frac16``), no power, factorial or binomial of numbers (``2^{10}``,
``5!``, ``\binom{5}{2}``), no reducible radical (``\sqrt8``) or unreduced fraction
(``\frac48``), no constant subexpression with a rational value (``\sin\frac{\pi}{6}``); given
the problem, it must not copy an expression of the problem and must have the exact form the
problem asks for ("exact", "in terms of :math:`\pi`", "as a fraction", "simplest radical
form"). ``\frac12``, ``0.5``, ``2\sqrt2``, ``-\frac{71}{15}``, ``81\pi`` and ``3+2\sqrt2``
are final. A form the gold answer uses itself is accepted. Named tuple answers (``y = 1,
x = 3``) are matched by name, in the order the problem announces (``$(x, y)$``) or else
alphabetically; unnamed ones by position. :func:`compare` and :func:`is_equivalent` decide
equivalence only.

**Format** (:func:`format_issue`, the ``format`` reward of ``rllm/Math-v1``): one clean
final answer, i.e. after the last ``</think>`` exactly one ``\boxed{}``, closed, non-empty,
at most :data:`MAX_ANSWER_LENGTH` characters, not a template (``<answer>``, "your
answer", ``...``: :func:`is_placeholder`) and a value in final form. Multi-box replies,
empty boxes, a copied template and a boxed computation get no format credit.

**Equivalence** (:func:`is_equivalent`), fast first and exact always:

1. Both answers are normalised (``$``, ``\left``/``\right``, spacing commands, ``\text{}``
   wrappers, ``\dfrac``, degrees ``^\circ``, ``\%``, thousands separators ``1{,}000``, units
   such as ``\text{ cm}`` after a number or ``\pi``) and parsed into a structure: a scalar, an
   equation, a tuple/point, an interval or a union of them, a set, a comma-separated list, a
   matrix or plain text. ``x = 3`` becomes ``3`` (a single variable on one side); ``a \pm b``
   becomes the set ``{a + b, a - b}``, as does one ``\pm`` inside a term
   (``\frac{-5 \pm \sqrt{13}}{2}``); ``x \ge 2`` becomes the interval ``[2, \infty)``, as do
   ``-x \le -2`` and ``3x \ge 6``; ``1 \le |z| \le 2`` becomes ``[-2, -1] \cup [1, 2]``;
   ``(0; -2; 6)`` is a tuple; ``\quad`` glued to a name (``,\quadx_2``) is a space.
2. Structures compare by their meaning: sets, lists and unions ignore order; tuples,
   intervals (including which ends are closed) and matrices do not; a one-column matrix equals
   the tuple of its entries; text compares case- and punctuation-insensitively.
3. Scalars compare, in order: identical normalised strings (microseconds); exact rational
   arithmetic on numbers (integers, decimals, fractions, mixed numbers like ``3\frac{1}{2}``,
   repeating decimals ``0.\overline{3}``, scientific notation); then, in process, 50-digit
   mpmath evaluation of both sides (:mod:`rllm_envs.math._numeric`; at three random points when
   there are variables), which settles clear agreement or disagreement; and only when that is
   inconclusive (infinities, near misses, huge numbers, unsupported notation), sympy in a
   worker process (:mod:`rllm_envs.math._symbolic`: exact arithmetic, evaluation of the
   difference with cancellation-aware precision, ``simplify``). Equations compare as equal
   when one is a nonzero multiple of the other (``y = 2x + 1`` vs ``2x - y + 1 = 0``).
   A decimal answer matches a value with no finite decimal expansion (``1/3``,
   ``\sqrt{2}``) within a relative error of 1e-6; every other comparison is exact.
   Percent signs are dropped (``50\%`` equals ``50``, not ``0.5``), as are degree marks,
   and a residue's modulus (``18 \pmod{41}`` and ``n \equiv 18 \pmod{41}`` are ``18``).

**math-verify** is not used as a fallback: it decides equivalence only (``3+4`` is 7 to
it), and it runs in a separate process. Agreement with it, on its own test suite too, is
measured by ``benchmarks/perf/bench_math.py`` (``benchmarks/results/math.json``).

**Time bound.** Every comparison finishes within ``timeout`` seconds (default
:data:`DEFAULT_TIMEOUT`): the normalised fast paths are linear-time on inputs capped at
:data:`MAX_ANSWER_LENGTH`, and sympy runs in a separate worker process that is killed when the
deadline passes. This works the same from the main thread, other threads and subprocesses
(no ``signal.alarm``). A timed-out comparison counts as not equivalent (reason ``"timeout"``).
The bound is the comparison's own work: the workers (``min(4, cpus)`` per process) are shared
by every caller of the process (every session of a server, every episode of a trainer), a
caller takes a free one first come, first served and holds one at most, and neither that wait
nor a worker's start (the sympy import) counts against ``timeout``: a busy pool delays a
verdict, it never makes a correct answer a ``"timeout"``.
Results are cached: parsed answers (so each gold answer is parsed once) and verdicts.
"""

from __future__ import annotations

import atexit
import json
import math
import os
import re
import select
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from rllm_envs.math import _final_form
from rllm_envs.math._final_form import FINAL_FORM_ISSUES
from rllm_envs.math._numeric import decide, too_large, value
from rllm_envs.text import split_reply

__all__ = [
    "ANSWER_FORMATS",
    "AnswerFormat",
    "DEFAULT_TIMEOUT",
    "FINAL_FORM_ISSUES",
    "FORMAT_ISSUES",
    "MAX_ANSWER_LENGTH",
    "Verdict",
    "extract_answer",
    "extract_answer_and_source",
    "final_form_issue",
    "format_issue",
    "grade_answer",
    "is_equivalent",
    "is_placeholder",
    "compare",
    "score_response",
    "normalize",
    "shutdown_workers",
    "warm_up",
]

#: Seconds a single comparison may take (parsing, fast paths and sympy together).
DEFAULT_TIMEOUT = 5.0
#: Answers longer than this (characters, after extraction) are compared as strings only.
MAX_ANSWER_LENGTH = 2_000
#: Most elements compared in one set/list/tuple (bigger collections compare as strings).
MAX_ELEMENTS = 64
#: Deepest bracket nesting parsed structurally.
MAX_NESTING = 40

# ================================================================================ extraction

#: Units and counted things that may follow a number (``12 cm``, ``5 apples``).
_UNITS = (
    r"(?:square\s+|sq\.?\s+|cubic\s+)?(?:kilomet(?:er|re)s?|millimet(?:er|re)s?|"
    r"millilit(?:er|re)s?|milligrams?|centimetres?|mg|mL|tonnes?|tons?|"
    r"units?|cm|mm|km|m|meters?|metres?|centimeters?|inch(?:es)?|"
    r"in|feet|foot|ft|yards?|yd|miles?|mi|mph|km/h|kg|g|grams?|kilograms?|pounds?|lbs?|oz|ounces?|"
    r"liters?|litres?|l|ml|gallons?|dollars?|cents?|USD|EUR|GBP|JPY|euros?|hours?|hrs?|minutes?|mins?|seconds?|secs?|s|"
    r"days?|weeks?|months?|years?|degrees?|percent(?:age)?|pct|students?|people|persons?|apples?|marbles?|"
    r"cookies?|books?|points?|ways?|times?|sq|cu)"
)
_BOX = re.compile(r"\\(?:boxed|fbox)\s*")
_FALLBACKS = [
    re.compile(r"final answer\s*(?:is|:)?\s*[:=]?\s*(.+)", re.IGNORECASE),
    re.compile(r"(?:^|\n)\s*#{2,}\s*([^\n#].*)"),
    re.compile(r"\banswer\s*(?:is|:)\s*(.+)", re.IGNORECASE),
]


def _braced(text: str, start: int, limit: int = 20_000) -> tuple[str, int] | None:
    r"""The content of the ``{...}`` group opening at ``text[start]``, and the index after it.

    Groups longer than ``limit`` characters count as unclosed (no answer is that long), which
    keeps extraction linear on adversarial replies such as ``"\\boxed{" * 10**5``.
    """
    depth = 0
    for i in range(start, min(len(text), start + limit)):
        c = text[i]
        if c == "\\":
            continue
        if c == "{" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif c == "}" and (i == 0 or text[i - 1] != "\\"):
            depth -= 1
            if depth == 0:
                return text[start + 1 : i], i + 1
    return None


def _last_boxed(text: str) -> str | None:
    for m in reversed(list(_BOX.finditer(text))[-50:]):
        end = m.end()
        if end < len(text) and text[end] == "{":
            got = _braced(text, end)
            if got is not None:
                return got[0].strip()
        elif m.group(0).endswith((" ", "\t")) or (end < len(text) and text[end].isalnum()):
            # `\boxed 5` / `\boxed5`: one token up to whitespace or `$`.
            token = re.match(r"[^\s$]+", text[end:])
            if token:
                return token.group(0)
    return None


#: The extraction modes: ``"boxed"`` (strict, for RL rewards) and ``"any"`` (lenient, for
#: evaluation and datasets whose answers are not boxed). See the module docstring.
ANSWER_FORMATS = ("boxed", "any")
AnswerFormat = Literal["boxed", "any"]


def _check_format(answer_format: str) -> None:
    # A programmer error (a config value), not model output: raise with the fix.
    if answer_format not in ANSWER_FORMATS:
        raise ValueError(
            f"Expects `answer_format` to be one of {ANSWER_FORMATS}, actual: {answer_format!r}."
        )


def extract_answer(response: str, *, answer_format: AnswerFormat = "boxed") -> str | None:
    r"""Extract the final answer from a full model response.

    Args:
        response: The model's output (reasoning and answer).
        answer_format: ``"boxed"`` (strict: the last ``\boxed{}``, then a final-answer
            phrase) or ``"any"`` (lenient: also LaTeX math, a bare answer, the last number).

    Returns:
        The answer text (LaTeX, without the ``\boxed{}``), or ``None`` when there is none.
        Never raises on model output.
    """
    return extract_answer_and_source(response, answer_format=answer_format)[0]


def _answer_part(response: str) -> str | None:
    """The answer part (:func:`rllm_envs.text.split_reply`); ``None`` if thinking never finished."""
    parts = split_reply(response)
    return parts.answer if parts.finished else None


def extract_answer_and_source(
    response: str, *, answer_format: AnswerFormat = "boxed"
) -> tuple[str | None, str | None]:
    r"""Like :func:`extract_answer`, also saying which rule found the answer.

    Returns:
        ``(answer, source)`` where ``source`` is ``"boxed"`` (a ``\boxed{}``/``\fbox{}``),
        ``"phrase"`` (the "final answer is ..." fallback) or ``None`` when nothing was found;
        in ``"any"`` mode also ``"latex"`` (the last ``$...$``/``\(...\)``/``\[...\]``/
        ``$$...$$``), ``"bare"`` (the whole reply is an answer) or ``"number"`` (the last
        number in the text).
    """
    _check_format(answer_format)
    if not isinstance(response, str) or not response:
        return None, None
    text = _answer_part(response)
    if text is None:
        return None, None
    if answer_format == "any":
        return _extract_any(text)
    boxed = _last_boxed(text)
    if boxed is not None:
        return (boxed, "boxed") if boxed else (None, None)
    # Fallback phrases only look at the tail, so a 1 MB reply costs a bounded scan.
    tail = text[-4000:]
    for pattern in _FALLBACKS:
        matches = list(pattern.finditer(tail))
        if matches:
            answer = matches[-1].group(1).splitlines()[0] if matches[-1].group(1) else ""
            answer = _trim_phrase(answer)
            if answer:
                return answer, "phrase"
    return None, None


def _trim_phrase(answer: str) -> str:
    # The phrase may go on: "... is 5. Next, ..." or "... is 5 because ...".
    answer = re.split(r"\.\s+(?=[A-Z])|\s+(?:because|since|as|which)\s", answer)[0]
    answer = re.sub(r"^[\s*_]+|[\s*_]+$", "", answer)  # Markdown emphasis
    answer = re.sub(r"[.。]$", "", answer).strip()
    answer = re.sub(r"^\$+|\$+$", "", answer).strip()
    return re.sub(r"[.。]$", "", answer).strip()


# --------------------------------------------------------------- lenient ("any") extraction

#: "The final answer is X", "Answer: X", "the answer is X" (the last one wins).
_ANSWER_PHRASE = re.compile(
    r"\b(?:final\s+answer|answer)\s*(?:is\s*[:=]?|[:=])\s*(.+)", re.IGNORECASE
)
#: GSM8K's final line.
_GSM8K = re.compile(r"(?:^|\n)\s*####\s*([^\n]+)")
#: LaTeX math regions; inline ``$...$`` and ``\(...\)`` stay on one line, display math may
#: span lines. ``\$`` inside a region is an escaped dollar, not a delimiter.
_MATH_REGION = re.compile(
    r"\$\$((?:[^$\\]|\\.)+?)\$\$"
    r"|\\\[(.+?)\\\]"
    r"|\\\(([^\n]+?)\\\)"
    r"|(?<![\\$])\$((?:[^$\n\\]|\\[^\n])+?)\$",
    re.DOTALL,
)
#: A number in prose: not glued to a word on its left (``AZYUK2A`` has none); thousands
#: groups by ``,``, ``{,}``, ``\,``, thin or plain spaces; a decimal point or comma; a slash.
_GROUP_SEP = r"(?:,\\!\s*|,|\{,\}|\\,|[ \u2009\u202f\u00a0])"
_PROSE_NUMBER = re.compile(
    r"(?<![\w.\\])[-\u2212]?(?:\d{1,3}(?:" + _GROUP_SEP + r"\d{3})+(?!\d)|\d+)"
    r"(?:[.,]\d+)?(?:/\d+)?(?![\d])"
)
_WORD = re.compile(r"(?<![\\a-zA-Z])[a-zA-Z]{2,}")
_TEXT_ARG = re.compile(r"\\(?:text|textbf|mathrm|mbox|begin|end)\s*\{[^{}]*\}")
#: Words an answer may contain (functions, connectives); units are allowed too.
_MATH_VOCABULARY = frozenset(
    "sin cos tan cot sec csc log ln lg exp sqrt pi inf infty arcsin arccos arctan sinh cosh "
    "tanh mod gcd lcm det max min and or".split()
)
#: Two-letter words that only prose has (longer variable names like `ab` are products).
_PROSE_SHORT = frozenset("is so it be we an as at by if of on to he me my do us am".split())
_UNIT_WORD = re.compile(_UNITS, re.IGNORECASE)
#: Longest reply read whole as a bare answer (longer ones are prose, or worse).
_BARE_LIMIT = 200


def _is_bare(text: str) -> bool:
    r"""Whether ``text`` reads as an answer by itself rather than as prose.

    An answer is math (with ``\text{}``, function names, units, "and"/"or"), or a few words
    without digits (``Evelyn``, ``north east``); anything else with words is prose.
    """
    if len(text) > _BARE_LIMIT or "\n" in text.strip():
        return False
    words = _WORD.findall(_GLUED_OR.sub(", ", _TEXT_ARG.sub(" ", text)))
    if not re.search(r"\d", text):
        return len(words) <= 4 and not any(w.lower() in _PROSE_SHORT for w in words)
    for w in words:
        low = w.lower()
        if low in _PROSE_SHORT or (
            len(w) >= 3 and low not in _MATH_VOCABULARY and not _UNIT_WORD.fullmatch(w)
        ):
            return False
    return True


#: What may separate the parts of one multi-part answer: `\boxed{1}, \boxed{2}`,
#: `$1$ and $2$`, `\boxed{a} \quad \text{and} \quad \boxed{b}`.
_CONNECTOR = re.compile(
    r"(?:\s|,|;|\$|\\[()\[\]]|\\q?quad(?![a-zA-Z])|\\[,;:! ]|\\text\s*\{\s*(?:and|or|,)?\s*\}"
    r"|\b(?:and|or)\b)*"
)
_REGION_CONNECTOR = re.compile(r"[\s,;]*(?:\b(?:and|or)\b)?[\s,;]*")
_MAX_PARTS = 16


def _content(m: re.Match[str]) -> str:
    return next(g for g in m.groups() if g is not None).strip()


#: The end of a sentence: boxes in different sentences are separate results.
_SENTENCE_END = re.compile(r"[.!?]\s+[A-Z]")
#: A word or mark that separates the parts of one answer.
_PART_SEPARATOR = re.compile(r"\b(?:and|or)\b|,|;")


def _joined_boxes(text: str) -> tuple[str, int] | None:
    r"""The last ``\boxed{}`` with the boxes before it on its line, and where the last ends.

    Boxes are parts of one answer when only connectors separate them (``\boxed{1}, \boxed{2}``),
    when fewer than 10 characters do (``\boxed{a} ++ \boxed{b}``), or when fewer than 70 do
    and they include a separator (``and``, ``or``, ``,``, ``;``) and the contents differ
    (``\boxed{1} papers and \boxed{2} bins``, ``$y_1 = \boxed{a}$ and $y_2 = \boxed{b}$``) --
    math-verify's rule; a box further away is an intermediate result, and a repeated box
    (``\boxed{4} ... so \boxed{4}``) counts once. A last ``\boxed{`` that is never closed
    reads to the end of its line. A gap that ends in a colon introduces a new answer
    (``\boxed{3}, corrected: \boxed{-3}`` is ``-3``), and boxes in different sentences
    (``... \boxed{3} (first try). Then ...``) are separate results.
    """
    boxes: list[tuple[int, int, str]] = []
    for m in list(_BOX.finditer(text))[-50:]:
        end = m.end()
        if end < len(text) and text[end] == "{":
            got = _braced(text, end)
            if got is not None:
                boxes.append((m.start(), got[1], got[0].strip()))
    last = list(_BOX.finditer(text[-20_000:]))
    if last and (not boxes or len(text) - 20_000 + last[-1].start() > boxes[-1][1]):
        m = last[-1]
        start = max(0, len(text) - 20_000) + m.end()
        if start < len(text) and text[start] == "{" and _braced(text, start) is None:
            rest = text[start + 1 :].split("\n", 1)[0]
            rest = re.sub(r"[\s.$]+$", "", rest).strip()
            if rest:
                return rest, len(text)
    if not boxes:
        single = _last_boxed(text)
        return (single, len(text)) if single is not None else None
    group = [boxes[-1]]
    for box in reversed(boxes[:-1]):
        if len(group) >= _MAX_PARTS or box[1] > group[0][0]:
            break  # enough, or the last box is nested in this one
        gap = text[box[1] : group[0][0]]
        if box[2] == group[0][2] and (len(gap) < 10 or _CONNECTOR.fullmatch(gap)):
            continue  # the same box twice in a row
        near = len(gap) < 10 or (
            len(gap) < 70
            and box[2] != group[0][2]
            and _PART_SEPARATOR.search(gap) is not None
            and not gap.rstrip(" $").endswith(":")  # "first \boxed{3}, corrected: \boxed{-3}"
            and not _SENTENCE_END.search(gap)
        )
        if not (near or _CONNECTOR.fullmatch(gap)):
            break
        group.insert(0, box)
    return ", ".join(c for _, _, c in group if c), group[-1][1]


def _from_segment(text: str) -> tuple[str | None, str | None]:
    """The answer in a piece of text: its last math region(s), itself, or its last number."""
    tail = text[-8000:]
    regions = [m for m in _MATH_REGION.finditer(tail) if _content(m)]
    if regions:
        # Whichever comes last is the answer: math, or a number in the prose after it
        # ("... $d = 90/n$ ... so there are 12 sequences").
        after = list(_PROSE_NUMBER.finditer(tail, regions[-1].end()))
        if after:
            return after[-1].group(0), "number"
        parts = [regions[-1]]
        for m in reversed(regions[:-1]):
            gap = tail[m.end() : parts[0].start()]
            if len(parts) >= _MAX_PARTS or len(gap) > 12 or not _REGION_CONNECTOR.fullmatch(gap):
                break
            parts.insert(0, m)
        return ", ".join(_content(m) for m in parts), "latex"
    stripped = text.strip().strip("*_").strip()
    stripped = re.sub(r"[.。]$", "", stripped).strip()
    if stripped and _is_bare(stripped):
        return stripped, "bare"
    numbers = list(_PROSE_NUMBER.finditer(tail))
    if numbers:
        return numbers[-1].group(0), "number"
    return None, None


_DOUBLED = re.compile(r"(?<!\\)\\\\(?=[a-zA-Z])")
_IS = re.compile(r".*\b(?:is|are|equals|be)\b\s*[:=]?\s*(.+)$", re.IGNORECASE | re.DOTALL)


#: Inline math that spans lines is malformed (``Answer $ \n 9 \n $``): nothing in it is read.
#: A ``$`` opens such a span only when a line break follows it (``$5`` is a price).
_BROKEN_INLINE = re.compile(
    r"\\\((?:(?!\\\)).)*?\n(?:(?!\\\)).)*?\\\)|(?<![\\$])\$[ \t]*\n[^$]*?(?<!\\)\$(?!\$)", re.DOTALL
)
_FINAL_PHRASE = re.compile(r"\bfinal\s+answer\b", re.IGNORECASE)


def _last_phrase(tail: str) -> re.Match[str] | None:
    """The last answer phrase, innermost first: "Final Answer: The final answer is X" is X."""
    phrases = list(_ANSWER_PHRASE.finditer(tail))
    if not phrases:
        return None
    m = phrases[-1]
    for _ in range(5):
        inner = list(_ANSWER_PHRASE.finditer(tail, m.start(1), m.end(1)))
        if not inner:
            break
        m = inner[-1]
    return m


def _extract_any(text: str) -> tuple[str | None, str | None]:
    if "\\\\" in text and "\\begin" not in text:
        # Doubly escaped LaTeX (`\\frac`, from JSON or code) outside any environment.
        text = _DOUBLED.sub(r"\\", text)
    if "\n" in text and ("$" in text or "\\(" in text):
        text = _BROKEN_INLINE.sub(" ", text[-20_000:])
    tail = text[-8000:]
    phrase_match = _last_phrase(tail)
    boxed = _joined_boxes(text)
    if boxed and boxed[0]:
        # "Final answer: the final answer is $10,455$" after the boxes of intermediate steps.
        offset = len(text) - len(tail)
        final_after_box = (
            phrase_match is not None
            and offset + phrase_match.start() >= boxed[1]
            and _FINAL_PHRASE.search(tail, phrase_match.start(), phrase_match.start(1))
        )
        if not final_after_box:
            return boxed[0], "boxed"
    if phrase_match is not None:
        phrase = phrase_match.group(1)
        # The answer stays on its line unless it opens display math.
        if not re.match(r"\s*(?:\\\[|\$\$)", phrase):
            phrase = phrase.splitlines()[0] if phrase.strip() else ""
        first = _MATH_REGION.match(phrase.lstrip())
        if first is not None and _content(first):
            # "The answer is $x$. Check: $...$": the math right after the phrase.
            return _content(first), "phrase"
        answer = _trim_phrase(phrase)
        said = _IS.match(answer)  # "The largest $n$ is 34"
        for segment in ([said.group(1)] if said else []) + [answer]:
            got, _ = _from_segment(segment) if segment else (None, None)
            if got:
                return got, "phrase"
    gsm = list(_GSM8K.finditer(tail))
    if gsm:
        answer = _trim_phrase(gsm[-1].group(1))
        if answer:
            return answer, "phrase"
    return _from_segment(text)


# ---------------------------------------------------------------------- the format rule

#: Box contents that are a template, not an answer: ``<answer>``, ``\langle answer\rangle``,
#: "your answer", ``...``, ``?``.
_PLACEHOLDER_WORDS = frozenset({"your", "final", "the", "answer", "result", "here", "value"})
_PLACEHOLDER_ANGLE = re.compile(r"<[^<>]{0,40}>|\\langle\s*[a-zA-Z _\\-]*\\rangle")
_PLACEHOLDER_DOTS = re.compile(r"(?:\s|\.|\?|…|\\[lc]?dots|\\ldots|_)+")


def is_placeholder(content: str) -> bool:
    r"""Whether a box content is a template rather than an answer (``<answer>``, ``...``)."""
    s = _unwrap(content.replace("$", "")).strip()
    if not s or _PLACEHOLDER_ANGLE.fullmatch(s) or _PLACEHOLDER_DOTS.fullmatch(s):
        return True
    words = {w.lower() for w in re.findall(r"[a-zA-Z]+", s)}
    return (
        re.fullmatch(r"[a-zA-Z\s:_-]+", s) is not None
        and words <= _PLACEHOLDER_WORDS
        and bool(words & {"answer", "result"})
    )


#: Reasons :func:`format_issue` returns.
FORMAT_ISSUES = (
    "no_box",
    "multiple_boxes",
    "empty_box",
    "placeholder",
    "unclosed_box",
    "too_long",
    "unfinished_thinking",
    "not_final_form",
)


def format_issue(
    response: str, *, gold: str | None = None, problem: str | None = None
) -> str | None:
    r"""What keeps a response from giving one clean final answer, or ``None`` if it does.

    The rule (the ``format`` reward of ``rllm/Math-v1``): the answer part (after the last
    ``</think>``; a ``<think>`` that is never closed is ``"unfinished_thinking"``) holds
    exactly one ``\boxed{}``/``\fbox{}`` (``"no_box"``, ``"multiple_boxes"``), closed
    (``"unclosed_box"``), with a non-empty content (``"empty_box"``) of at most
    :data:`MAX_ANSWER_LENGTH` characters (``"too_long"``) that is not a template such as the
    prompt's ``<answer>`` (``"placeholder"``, see :func:`is_placeholder`) and is a value in
    final form (``"not_final_form"``, see :func:`final_form_issue`: a boxed computation or a
    copy of the problem's expression is not an answer). Reasoning inside
    ``<think>...</think>`` may box whatever it likes.

    Args:
        response: The model's whole reply.
        gold: The reference answer, if known (forms it uses itself are final).
        problem: The problem text, if known (copies of its expressions are not final).

    Returns:
        One of :data:`FORMAT_ISSUES`, or ``None``. Never raises on model output.
    """
    if not isinstance(response, str) or not response:
        return "no_box"
    text = _answer_part(response)
    if text is None:
        return "unfinished_thinking"
    boxes = _BOX.findall(text)
    if not boxes:
        return "no_box"
    if len(boxes) > 1:
        return "multiple_boxes"
    content = _last_boxed(text)
    if content is None:
        return "unclosed_box"
    if not content:
        return "empty_box"
    if len(content) > MAX_ANSWER_LENGTH:
        return "too_long"
    if is_placeholder(content):
        return "placeholder"
    if final_form_issue(content, gold=gold, problem=problem) is not None:
        return "not_final_form"
    return None


# ============================================================================= normalisation

_UNICODE = {
    "\u2212": "-",
    "\u2013": "-",
    "\u00d7": "\\times ",
    "\u22c5": "\\cdot ",
    "\u00b7": "\\cdot ",
    "\u00f7": "\\div ",
    "\u03c0": "\\pi ",
    "\u221a": "\\sqrt",
    "\u221e": "\\infty ",
    "\u2264": "\\le ",
    "\u2265": "\\ge ",
    "\u2261": "\\equiv ",
    "\u222a": "\\cup ",
    "\u00b0": "",
    "\u00a0": " ",
    "\u2009": " ",
    "\u200b": "",
}
_WRAPPERS = re.compile(
    r"\\(?:text|textbf|textit|textrm|textnormal|textsf|texttt|textup|mathrm|mathbf|mathit|mathsf|mathtt|mbox|"
    r"operatorname|mathnormal)\s*\{"
)
_DROP = re.compile(
    r"\\(?:displaystyle|textstyle|left|right|big|Big|bigg|Bigg)(?![a-zA-Z])"
    r"|(?<!\\)\\[,;:! ]|\\q?quad"  # also glued to a name: `,\quadx_2 = 1`
    r"|\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree|\\%|%|\\\$|\\mathdollar"
)
_UNIT_TAIL = re.compile(
    r"^(.*?(?:\d|\\pi)[^a-zA-Z]*?)\s*(?:\\?\s*)" + _UNITS + r"(?:\s*\^\s*\{?[23]\}?)?\s*$"
)
_MOD_TAIL = re.compile(
    r"(?<=\S)\s*(?:\\pmod\s*(?:\{[^{}]*\}|\d+)|\(\s*\\?(?:bmod|mod)(?![a-zA-Z])\s*[^()]*\)"
    r"|(?:\\(?:bmod|mod)|(?<![a-zA-Z\\])mod)\s*(?:\{\s*\d+\s*\}|\d+))\s*$"
)
_EQUIV = re.compile(r"\\equiv(?![a-zA-Z])")
_SPACED_GROUP = re.compile(r"(\d)\s*\{\s*,\s*\}\s*(?=\d{3})")
_LATEX_GROUP = re.compile(
    r"(\d)(?:,?\s*\\[!,:; ]|,?\s*~|,?\s*\\(?:thinspace|enspace|quad)\b)\s*(?=\d{3}(?!\d))"
)
_SPACED_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(?:(?:,|\{,\})\d{3})+(?:\.\d+)?$")


def _unwrap(text: str) -> str:
    r"""Replace ``\text{...}``-like wrappers by their content (iteratively; no recursion)."""
    for _ in range(50):
        m = _WRAPPERS.search(text)
        if m is None:
            return text
        got = _braced(text, m.end() - 1)
        if got is None:
            return text[: m.start()] + text[m.end() :]
        text = text[: m.start()] + got[0] + text[got[1] :]
    return text


_PLAIN_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_DISPLAY = re.compile(r"^\\\[|\\\]$|^\\\(|\\\)$")
_BOXED_START = re.compile(r"\\(?:boxed|fbox)\s*\{")
_OVERLINE_NAME = re.compile(r"\\overline\s*\{([A-Za-z]+)\}")
_FRAC_VARIANT = re.compile(r"\\[dtc]frac")
_SHORT_FRAC = re.compile(r"\\frac\s*(\d)\s*(\d)")
_INVERSE_TRIG = re.compile(r"\\(sin|cos|tan|cot|sec|csc)\s*\^\s*(?:\{\s*-\s*1\s*\}|-\s*1(?!\d))")
_BINOM_VARIANT = re.compile(r"\\[dt]binom")
_LE = re.compile(r"\\(?:leq?slant|leq?)(?![a-zA-Z])")
_GE = re.compile(r"\\(?:geq?slant|geq?)(?![a-zA-Z])")
_NE = re.compile(r"\\neq?(?![a-zA-Z])")
_DOTS = re.compile(r"\\(?:dots|ldots|cdots)")
_SPACES = re.compile(r"\s+")
_SPACED_MIXED = re.compile(r"^([+-]?\d+) (\d+)/(\d+)$")
_IN_PREFIX = re.compile(r"^(?:[a-zA-Z]\s*)?\\in(?![a-zA-Z])\s*")
_COMMAND = re.compile(r"\\[a-zA-Z]+")
_LETTER = re.compile(r"[a-zA-Z]")


def normalize(answer: str) -> str:
    """Normalise a bare answer's notation (see the module docstring); never raises."""
    s = answer.strip()
    if len(s) > MAX_ANSWER_LENGTH or _PLAIN_NUMBER.fullmatch(s):
        # Too long to be a real answer (compared as a string), or already a plain number.
        return s
    for k, v in _UNICODE.items():
        if k in s:
            s = s.replace(k, v)
    s = s.replace("\\$", " ").replace("$", "")
    if "\\" in s or "~" in s:
        # A thousands separator written as a LaTeX space (MATH's `10,\!080`, `5\,182`,
        # `5~182`) groups digits: written as `{,}` before the spaces go.
        s = _LATEX_GROUP.sub(r"\1{,}", s)
    if "!=" in s:
        s = s.replace("!=", "\\ne ")
    if "\\" in s:
        s = s.replace("\\langle", "(").replace("\\rangle", ")")
        s = _DISPLAY.sub("", s.strip())
        s = _unwrap(s)
        boxed = _BOXED_START.match(s)
        if boxed:  # a bare answer that is itself boxed
            got = _braced(s, boxed.end() - 1)
            if got is not None and got[1] == len(s):
                s = got[0]
        # `0.\overline{3}` is a repeating decimal; `\overline{AB}` a segment, named AB.
        s = _OVERLINE_NAME.sub(r"\1", s)
        s = _DROP.sub(" ", s)
        s = _FRAC_VARIANT.sub(r"\\frac", s)
        s = _SHORT_FRAC.sub(r"\\frac{\1}{\2}", s)  # `3 \frac12` is a mixed number
        s = _INVERSE_TRIG.sub(r"\\arc\1", s)  # `\tan^{-1} 2` is `\arctan 2`
        s = _BINOM_VARIANT.sub(r"\\binom", s)
        s = s.replace("\\lt", "<").replace("\\gt", ">")
        s = _NE.sub(r"\\ne ", s)
        s = _LE.sub(r"\\le ", s)
        s = _GE.sub(r"\\ge ", s)
        s = _DOTS.sub(r"\\ldots", s)
        s = _EQUIV.sub("=", s)
    elif "%" in s:
        s = s.replace("%", "")
    if "mod" in s:
        # A congruence's modulus after the residue (`18 \pmod{41}`, `n \equiv 18 \pmod{41}`,
        # `18 (mod 41)`): the residue is the answer (att36c, att36f: one so written paid 0).
        # Also after a full stop, `18 \pmod{41}.`, and as plain text, `18 mod 41` (s37 att37b:
        # 0/60 honest residues so written).
        s, cut = _MOD_TAIL.subn("", s.rstrip().rstrip("."))
        if cut:  # `\equiv 18 \pmod{41}` (`≡ 18 (mod 41)`) with no left side: the residue
            s = s.strip().removeprefix("=")
    s = _SPACES.sub(" ", s).strip()
    # A mixed number written with a space, `3 1/2`, would read as 31/2 once spaces go.
    s = _SPACED_MIXED.sub(r"\1\\frac{\2}{\3}", s)
    if "\\in" in s:
        s = _IN_PREFIX.sub("", s)
    s = s.rstrip(".").strip()
    m = _UNIT_TAIL.match(s) if len(s) <= 200 and _LETTER.search(s) else None
    if m and not _LETTER.search(_COMMAND.sub("", m.group(1))):
        s = m.group(1).strip()
    if _SPACED_THOUSANDS.match(s):  # `5 182`: the whole answer in groups of three
        s = s.replace(" ", "")
    if "{" in s and "," in s:
        s = _SPACED_GROUP.sub(r"\1{,}", s)  # `14 {, }916`
    if "," in s and _THOUSANDS.match(s):
        s = s.replace("{,}", "").replace(",", "")
    return s


_CMD_BEFORE_LETTER = re.compile(r"(\\[a-zA-Z]+)\s+(?=[a-zA-Z])")
_SHORT_ARGS = re.compile(r"\\(frac|binom)(\d)(\d)")
_SHORT_SQRT = re.compile(r"\\sqrt(\d)")
_SHORT_POWER = re.compile(r"\^(\d+)")


def _canon(s: str) -> str:
    """A spacing-free canonical spelling used for exact string comparison."""
    if _PLAIN_NUMBER.fullmatch(s):
        return s[1:] if s.startswith("+") else s
    s = _CMD_BEFORE_LETTER.sub(r"\1{}", s)
    s = s.replace(" ", "")
    s = _SHORT_ARGS.sub(r"\\\1{\2}{\3}", s)
    s = _SHORT_SQRT.sub(r"\\sqrt{\1}", s)
    s = _SHORT_POWER.sub(r"^{\1}", s)
    s = s.replace("{}", "")
    if s.startswith("+"):
        s = s[1:]
    return s


# ================================================================================= numbers

_INT = r"\d+"
_DEC = r"(?:\d+\.\d*|\.\d+)"
_NUM = rf"(?:{_DEC}|{_INT})"
_NUMBER_PATTERNS = [
    (re.compile(rf"([+-]?)({_NUM})"), "plain"),
    (re.compile(rf"([+-]?)({_INT})/({_INT})"), "slash"),
    (re.compile(rf"([+-]?)\\frac\{{([+-]?{_INT})\}}\{{([+-]?{_INT})\}}"), "frac"),
    (re.compile(rf"([+-]?)({_INT})\\frac\{{({_INT})\}}\{{({_INT})\}}"), "mixed"),
    (re.compile(rf"([+-]?)({_NUM})[eE]([+-]?{_INT})"), "sci"),
    (re.compile(rf"([+-]?)({_NUM})(?:\\times|\\cdot|\*)\{{?10\}}?\^\{{([+-]?{_INT})\}}"), "sci"),
    (re.compile(rf"([+-]?)10\^\{{([+-]?{_INT})\}}"), "pow10"),
    (re.compile(r"([+-]?)(\d*)\.(\d*)\\overline\{(\d{1,50})\}"), "repeating"),
]
_MAX_EXPONENT = 400


@dataclass(frozen=True)
class _Number:
    value: Fraction
    decimal: bool  # written with a decimal point (an approximation, maybe)
    places: int = 0  # digits after the decimal point, as written


def _parse_number(s: str) -> _Number | None:
    """Parse ``s`` (canonical form) as an exact rational number, or return ``None``."""
    if len(s) > 400 or not s or s[-1] == "." and len(s) == 1:
        return None
    for pattern, kind in _NUMBER_PATTERNS:
        m = pattern.fullmatch(s)
        if m is None:
            continue
        sign = -1 if m.group(1) == "-" else 1
        try:
            if kind == "plain":
                digits = m.group(2)
                places = len(digits) - digits.index(".") - 1 if "." in digits else 0
                return _Number(sign * Fraction(digits), "." in digits, places)
            if kind in ("slash", "frac"):
                den = Fraction(m.group(3))
                return None if den == 0 else _Number(sign * Fraction(m.group(2)) / den, False)
            if kind == "mixed":
                den = Fraction(m.group(4))
                if den == 0:
                    return None
                return _Number(sign * (Fraction(m.group(2)) + Fraction(m.group(3)) / den), False)
            if kind == "sci":
                exponent = int(m.group(3))
                if abs(exponent) > _MAX_EXPONENT:
                    return None
                return _Number(sign * Fraction(m.group(2)) * Fraction(10) ** exponent, True)
            if kind == "repeating":
                whole, fixed, period = m.group(2) or "0", m.group(3), m.group(4)
                head = Fraction(f"{whole}.{fixed}" if fixed else whole)
                tail = Fraction(int(period), (10 ** len(period) - 1) * 10 ** len(fixed))
                return _Number(sign * (head + tail), False)
            if kind == "pow10":
                exponent = int(m.group(2))
                if abs(exponent) > _MAX_EXPONENT:
                    return None
                return _Number(sign * Fraction(10) ** exponent, False)
        except (ValueError, ZeroDivisionError, OverflowError):
            return None
    return None


def _terminating(value: Fraction) -> bool:
    q = value.denominator
    for p in (2, 5):
        while q % p == 0:
            q //= p
    return q == 1


def _nudged(answer: str, gold: str, problem: str) -> bool:
    """Whether an exact answer to a rounded decimal gold carries the problem's values, nudged.

    See :func:`rllm_envs.math._final_form.near_problem_values`.
    """
    a, g = _expr(normalize(answer)), _expr(normalize(gold))
    if a.number is not None or g.number is None or not _rounded(g.number):
        return False
    return _final_form.near_problem_values(a.text, problem)


def _rounded(number: _Number | None) -> bool:
    """Whether a decimal looks rounded (`1.414214`, `3.14159`), not exact as written.

    6 significant digits or more, 4 of them or more after the point, trailing zeros not
    counted: not `2.500000`, `2.0`, `1234567.0` or `12.75`; never where the problem asks for
    the exact decimal (:data:`_EXACT_DECIMAL`).
    """
    if number is None or not number.decimal or _EXACT_DECIMAL.get():
        return False
    written = str((abs(number.value) * 10**number.places).numerator)  # the digits, as an int
    digits = written.rstrip("0")
    places = number.places - (len(written) - len(digits))
    return len(digits) >= 6 and places >= 4


def _rounds_to(decimal: _Number, exact: Fraction) -> bool:
    """Whether ``decimal`` is ``exact`` rounded to its places (``"any"`` mode).

    A decimal with k >= 2 places written for a value with no finite decimal
    expansion is right when it is that value rounded to k places (``0.33`` for 1/3).
    """
    k = decimal.places
    return 2 <= k <= 50 and abs(decimal.value - exact) <= Fraction(1, 2 * 10**k)


def _short_decimal(v: Fraction) -> bool:
    """Whether ``v`` (an approximation to 1e-40) is a decimal of at most 12 places."""
    scaled = v * 10**12
    return abs(scaled - round(scaled)) < Fraction(1, 10**20)


def _numbers_equal(pred: _Number, gold: _Number, lenient: bool = False) -> bool:
    if pred.value == gold.value:
        return True
    if pred.decimal != gold.decimal:
        dec, exact_side = (pred, gold) if pred.decimal else (gold, pred)
        if lenient and not _terminating(exact_side.value) and _rounds_to(dec, exact_side.value):
            return True
        # A rounded decimal matches a value with no finite decimal expansion (1/3, 2/3): a
        # gold only where it looks rounded and the problem did not ask for the exact decimal
        # (att34k: a fraction off by 4e-7 paid 33-64/100 ToolUse unit conversions).
        if gold.decimal and not _rounded(gold):
            return False
        exact = gold.value if pred.decimal else pred.value
        if _terminating(exact):
            return False
        g = gold.value
        scale = abs(g) if abs(g) > 1 else Fraction(1)
        return abs(pred.value - g) <= Fraction(1, 10**6) * scale
    return False


# =============================================================================== structures


@dataclass(frozen=True)
class _Expr:
    text: str  # normalised
    canon: str
    number: _Number | None
    is_text: bool


@dataclass(frozen=True)
class _Eq:
    lhs: _Expr
    rhs: _Expr
    #: For ``x = <value>`` (one variable on one side): the value, compared with bare answers.
    value: _Node | None = None


@dataclass(frozen=True)
class _Seq:
    kind: str  # "tuple" (ordered), "set" (unordered), "list" (top-level commas), "union"
    items: tuple[_Node, ...]


@dataclass(frozen=True)
class _Interval:
    lo: _Expr
    hi: _Expr
    lo_closed: bool
    hi_closed: bool


@dataclass(frozen=True)
class _Matrix:
    rows: tuple[tuple[_Expr, ...], ...]


_Node = _Expr | _Eq | _Seq | _Interval | _Matrix

_OPENERS = {"(": ")", "[": "]", "{": "}"}
_CLOSERS = {")", "]", "}"}
_MATH_WORDS = re.compile(
    r"\\[a-zA-Z]+|\b(?:sin|cos|tan|cot|sec|csc|log|ln|exp|sqrt|pi|sinh|cosh|tanh|arcsin|arccos|"
    r"arctan|infty|inf|oo)\b"
)
_VARIABLE = re.compile(r"[a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?|\\(?:alpha|beta|gamma|theta|lambda)")


def _depth_ok(s: str) -> bool:
    depth = 0
    for c in s:
        if c in "([{":
            depth += 1
            if depth > MAX_NESTING:
                return False
        elif c in ")]}":
            depth -= 1
    return True


def _split_top(s: str, seps: tuple[str, ...]) -> list[str]:
    """Split ``s`` at separators that are outside every bracket (linear scan)."""
    if not any(sep in s for sep in seps):
        return [s.strip()]
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c == "\\" and i + 1 < n and s[i + 1] in "{}":
            depth += 1 if s[i + 1] == "{" else -1
            i += 2
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0:
            for sep in seps:
                if s.startswith(sep, i):
                    parts.append(s[start:i])
                    i += len(sep)
                    start = i
                    break
            else:
                i += 1
                continue
            continue
        i += 1
    parts.append(s[start:])
    return [p.strip() for p in parts]


def _matching_close(s: str, open_index: int) -> int:
    """Index of the bracket closing the one at ``open_index`` (any bracket kind), or -1."""
    depth = 0
    for i in range(open_index, len(s)):
        if s[i] in "([{":
            depth += 1
        elif s[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _is_text(s: str) -> bool:
    if re.fullmatch(r"(?i)yes|no|true|false|none", s):
        return True
    rest = _MATH_WORDS.sub(" ", s)
    return re.search(r"[^\W\d_]{3,}", rest) is not None


def _text_key(s: str) -> str:
    return re.sub(r"[\W_]+", "", s.replace("\\", " ")).lower()


def _expr(s: str) -> _Expr:
    s = s.strip()
    while len(s) >= 2 and s[0] == "{" and _matching_close(s, 0) == len(s) - 1:
        s = s[1:-1].strip()
    canon = _canon(s)
    return _Expr(s, canon, _parse_number(canon), _is_text(s))


def _parse(answer: str) -> _Node:
    s = normalize(answer)
    if len(s) > MAX_ANSWER_LENGTH or not _depth_ok(s):
        return _Expr(s, s, None, True)
    # A LaTeX group around the whole answer, `{1, 3}`, is only grouping (`\{1, 3\}` is a set).
    while len(s) >= 2 and s[0] == "{" and _matching_close(s, 0) == len(s) - 1:
        s = s[1:-1].strip()
    # A matrix, also inside brackets: `\left[\begin{array}{cc}...\end{array}\right]`.
    m = re.fullmatch(
        r"[\[(]?\s*\\begin\{([pbvBV]?matrix|array)\}(?:\{[^}]*\})?(.*)\\end\{\1\}\s*[\])]?", s, re.S
    )
    if m:
        rows = [r for r in re.split(r"\\\\", m.group(2)) if r.strip()]
        cells = tuple(tuple(_expr(c) for c in r.split("&")) for r in rows)
        if cells and all(len(r) == len(cells[0]) for r in cells):
            return _Matrix(cells)
    parts = _split_top(s, (",", ";", " or ", " and ", "\\text{ or }"))
    parts = [p for p in parts if p]
    if len(parts) > 1:
        if len(parts) > MAX_ELEMENTS:
            return _Expr(s, _canon(s), None, True)
        return _Seq("list", tuple(_parse_item(p) for p in parts))
    return _parse_item(s)


def _parse_item(s: str) -> _Node:
    s = s.strip()
    if s.startswith("\\{") and s.endswith("\\}"):
        inner = s[2:-2]
        items = [p for p in _split_top(inner, (",", ";")) if p]
        return _Seq("set", tuple(_parse_item(p) for p in items[:MAX_ELEMENTS]))
    union = _split_top(s, ("\\cup",))
    if len(union) > 1:
        return _Seq("union", tuple(_parse_item(p) for p in union))
    if s.startswith("\\langle") and s.endswith("\\rangle"):
        items = _split_top(s[7:-7], (",",))
        return _Seq("tuple", tuple(_parse_item(p) for p in items[:MAX_ELEMENTS]))
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and _matching_close(s, 0) == len(s) - 1:
        items = _split_top(s[1:-1], (",",))
        if len(items) == 1 and ";" in s:
            items = _split_top(s[1:-1], (";",))  # `(0; -2; 6)`: coordinates after a decimal comma
        if len(items) == 1 and s[0] == "(" and s[-1] == ")":
            return _parse_item(items[0])
        if len(items) == 2 and (s[0] == "[" or s[-1] == "]"):
            return _Interval(_expr(items[0]), _expr(items[1]), s[0] == "[", s[-1] == "]")
        if len(items) <= MAX_ELEMENTS and all(items):
            return _Seq("tuple", tuple(_parse_item(p) for p in items))
    interval = _inequality(s)
    if interval is not None:
        return interval
    absolute = _abs_inequality(s)
    if absolute is not None:
        return absolute
    sides = _split_top(s, ("=",))
    if len(sides) >= 2 and all(sides):
        lhs, rhs = sides[0], sides[-1]
        if len(sides) > 2:
            return _parse_item(rhs)  # `x = 2 + 1 = 3`: the last value
        if _VARIABLE.fullmatch(lhs.replace(" ", "")) or _FUNCTION_OF.fullmatch(lhs):
            if not _VARIABLE.fullmatch(rhs.replace(" ", "")):
                return _Eq(_expr(lhs), _expr(rhs), _parse_item(rhs))
        if _VARIABLE.fullmatch(rhs.replace(" ", "")):
            return _Eq(_expr(lhs), _expr(rhs), _parse_item(lhs))
        if re.fullmatch(r"\(\s*[a-zA-Z](?:\s*,\s*[a-zA-Z])+\s*\)", lhs):
            return _Eq(_expr(lhs), _expr(rhs), _parse_item(rhs))  # `(x, y) = (1, 2)`
        return _Eq(_expr(lhs), _expr(rhs))
    pm = _split_top(s, ("\\pm", "\\mp"))
    if len(pm) == 2:
        a, b = pm
        plus, minus = _expr(f"{a}+{b}" if a else b), _expr(f"{a}-({b})" if a else f"-({b})")
        return _Seq("set", (plus, minus))
    if s.count("\\pm") + s.count("\\mp") == 1:
        # ``\frac{-5 \pm \sqrt{13}}{2}``: a sign inside a term (the quadratic formula's
        # usual spelling) gives the two values it writes.
        sign = "\\pm" if "\\pm" in s else "\\mp"
        first, second = ("+", "-") if sign == "\\pm" else ("-", "+")
        return _Seq("set", (_expr(s.replace(sign, first)), _expr(s.replace(sign, second))))
    return _expr(s)


#: ``f(x)`` or ``f^{-1}(x)`` on the left of ``=``: the right side is the answer.
_FUNCTION_OF = re.compile(r"[a-zA-Z](?:\^\{?-1\}?)?\([a-z]\)")
_INEQ = re.compile(r"(\\le |\\ge |<=|>=|<|>)")


def _inequality(s: str) -> _Interval | None:
    r"""``x > 2``, ``x \le 3`` or ``1 < x \le 4`` as an interval (one variable only)."""
    pieces = _INEQ.split(s)
    if len(pieces) not in (3, 5):
        return None
    terms = [p.strip() for p in pieces[0::2]]
    ops = [p.strip() for p in pieces[1::2]]
    if not all(terms):
        return None
    variables = [
        i
        for i, t in enumerate(terms)
        if _VARIABLE.fullmatch(t.replace(" ", "")) or _FUNCTION_OF.fullmatch(t.replace(" ", ""))
    ]
    if not variables and len(terms) == 2:
        # `-x > -1` is `x < 1`; `2x \le 6` is `x \le 3` (a numeric coefficient, numeric bound).
        for i, t in enumerate(terms):
            scaled = _scaled_variable(t, terms[1 - i])
            if scaled is not None:
                coefficient, var, limit = scaled
                flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "\\le": "\\ge", "\\ge": "\\le"}
                op = flip[ops[0]] if coefficient < 0 else ops[0]
                return _inequality(f"{var} {op} {limit}" if i == 0 else f"{limit} {op} {var}")
    inf, neg = _expr("\\infty"), _expr("-\\infty")

    def less(op: str) -> bool:
        return op in ("<", "<=", "\\le")

    if len(terms) == 2 and len(variables) == 1:
        op = ops[0]
        var_left = variables[0] == 0
        bound = _expr(terms[1] if var_left else terms[0])
        closed = op in ("<=", ">=", "\\le", "\\ge")
        upper = less(op) == var_left  # x < b or b > x: b is the upper bound
        if upper:
            return _Interval(neg, bound, False, closed)
        return _Interval(bound, inf, closed, False)
    if len(terms) == 3 and variables == [1] and less(ops[0]) == less(ops[1]):
        lo, hi = _expr(terms[0]), _expr(terms[2])
        c0, c1 = ops[0] in ("<=", "\\le", ">=", "\\ge"), ops[1] in ("<=", "\\le", ">=", "\\ge")
        if less(ops[0]):
            return _Interval(lo, hi, c0, c1)
        return _Interval(hi, lo, c1, c0)
    return None


_COEFFICIENT = re.compile(r"([+-]?(?:\d+(?:\.\d+)?)?)\s*(" + _VARIABLE.pattern + r")")


def _negated(text: str) -> str:
    t = text.strip()
    if t.startswith("-"):
        return t[1:].strip()
    return f"-{t}" if _parse_number(_canon(t)) is not None else f"-({t})"


def _scaled_variable(term: str, other: str) -> tuple[Fraction, str, str] | None:
    """``(k, v, b / k)`` when ``term`` is ``k v`` (k a number, not 1) against the bound ``b``."""
    m = _COEFFICIENT.fullmatch(term.replace(" ", ""))
    if m is None or m.group(1) in ("", "+"):
        return None
    if m.group(1) == "-":
        return Fraction(-1), m.group(2), _negated(other)
    k = Fraction(m.group(1))
    bound = _parse_number(_canon(other))
    if k == 0 or bound is None:
        return None
    value = bound.value / k
    text = (
        str(value.numerator) if value.denominator == 1 else f"{value.numerator}/{value.denominator}"
    )
    return k, m.group(2), text


_ABS_OF = re.compile(r"\|?\s*\|\s*(" + _VARIABLE.pattern + r")\s*\\?\|")


def _abs_inequality(s: str) -> _Node | None:
    r"""An inequality on ``|z|`` as the interval or union it means.

    ``|z| \le b`` as ``[-b, b]``; ``a \le |z| \le b`` (``a > 0``) as ``[-b, -a] \cup [a, b]``;
    ``|z| > a`` as ``(-\infty, -a) \cup (a, \infty)``. Bounds must be numbers.
    """
    if "|" not in s:
        return None
    pieces = _INEQ.split(s)
    if len(pieces) not in (3, 5):
        return None
    terms = [p.strip() for p in pieces[0::2]]
    ops = [p.strip() for p in pieces[1::2]]
    closed = [op in ("<=", ">=", "\\le", "\\ge") for op in ops]
    less = [op in ("<", "<=", "\\le") for op in ops]
    var_at = [i for i, t in enumerate(terms) if _ABS_OF.fullmatch(t)]
    numbers = [_parse_number(_canon(t)) if i not in var_at else None for i, t in enumerate(terms)]
    if len(var_at) != 1:
        return None
    inf, neg = _expr("\\infty"), _expr("-\\infty")
    if len(terms) == 2:
        i = var_at[0]
        bound = numbers[1 - i]
        if bound is None or bound.value <= 0:
            return None
        b = terms[1 - i]
        if less[0] == (i == 0):  # |z| < b
            return _Interval(_expr(_negated(b)), _expr(b), closed[0], closed[0])
        return _Seq(
            "union",
            (
                _Interval(neg, _expr(_negated(b)), False, closed[0]),
                _Interval(_expr(b), inf, closed[0], False),
            ),
        )
    if var_at != [1] or less[0] != less[1] or numbers[0] is None or numbers[2] is None:
        return None
    (lo, c_lo), (hi, c_hi) = ((terms[0], closed[0]), (terms[2], closed[1]))
    if not less[0]:
        (lo, c_lo), (hi, c_hi) = (hi, c_hi), (lo, c_lo)
    lo_n = numbers[0] if less[0] else numbers[2]
    if lo_n is None or lo_n.value <= 0:
        return None
    return _Seq(
        "union",
        (
            _Interval(_expr(_negated(hi)), _expr(_negated(lo)), c_hi, c_lo),
            _Interval(_expr(lo), _expr(hi), c_lo, c_hi),
        ),
    )


@lru_cache(maxsize=16_384)
def _prepare(answer: str) -> _Node:
    """Parse an answer once (the gold of a task is compared many times)."""
    return _parse(answer)


# =============================================================================== comparison


class _Timeout(Exception):
    """The deadline of a comparison passed."""


class _Budget:
    """The time one comparison may compute: a deadline that waits do not use up.

    Waiting for a sympy worker (other comparisons hold every slot) or for a new worker to
    start (the sympy import) is not the comparison's own work: :meth:`paused` moves the
    deadline on by that wait, so a busy pool delays an answer but never turns it into a
    ``"timeout"``.
    """

    __slots__ = ("deadline", "pausable")

    def __init__(self, timeout: float, *, pausable: bool = True) -> None:
        self.deadline = time.monotonic() + timeout
        self.pausable = pausable

    def passed(self) -> bool:
        return time.monotonic() >= self.deadline

    @contextmanager
    def paused(self) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            if self.pausable:
                self.deadline += time.monotonic() - started


@dataclass(frozen=True)
class Verdict:
    """The outcome of :func:`compare`.

    Attributes:
        equal: Whether the answers are equivalent (for :func:`grade_answer`: and the answer
            is in final form).
        reason: ``"equal"``, ``"not_equal"``, ``"timeout"``, ``"empty"`` or (only from
            :func:`grade_answer`) ``"not_final_form"``.
        issue: Why the answer is not in final form (one of :data:`FINAL_FORM_ISSUES`), when
            ``reason`` is ``"not_final_form"``; else ``None``.
    """

    equal: bool
    reason: str
    issue: str | None = None


def _expr_equal(p: _Expr, g: _Expr, deadline: _Budget, lenient: bool = False) -> bool:
    if not p.canon or not g.canon:
        return False  # nothing left after normalisation ("$", "+", "\text{}") is no answer
    if p.canon == g.canon:
        return True
    if p.number is not None and g.number is not None:
        return _numbers_equal(p.number, g.number, lenient)
    if p.is_text or g.is_text:
        return p.is_text and g.is_text and _text_key(p.text) == _text_key(g.text)
    if lenient and (p.number is None) != (g.number is None):
        dec, other = (p, g) if p.number is not None else (g, p)
        if dec.number is not None and dec.number.decimal and dec.number.places >= 2:
            v = value(other.text)
            # Rounded to the places written (`1.41` for `\sqrt{2}`); not for values that
            # are themselves short decimals (`0.253` is not `0.25`).
            if v is not None and not _short_decimal(v) and _rounds_to(dec.number, v):
                return True
    if not p.text or not g.text:
        return False
    # Tolerance applies when exactly one side is a decimal approximation: a number written
    # with a decimal point, not an expression with one inside (att33m: `\exp(\log 3 +
    # 0.00000002)` for each number of the problem was within 1e-6 of a 1/3-like gold, so
    # equal, and no single part left to compute). The exact side is passed second, as "b".
    p_dec = p.number is not None and p.number.decimal
    g_dec = g.number is not None and g.number.decimal
    a, b = (p.text, g.text) if not g_dec else (g.text, p.text)
    # A gold decimal short enough to be exact (`2.5`, `2.0`) is matched exactly by an exact
    # answer: within 1e-6 of it, a copy of the problem's arithmetic with each number nudged
    # by an irrational hair (final in form) was paid 100/100 (att34e). A long one (`1.414214`)
    # is a rounding, which the exact answer it rounds need only come near.
    tolerant = (p_dec and not g_dec) or (g_dec and not p_dec and _rounded(g.number))
    # mpmath in process settles almost every case in well under a millisecond; sympy (in the
    # worker) only sees what it cannot: infinities, near misses, unsupported notation.
    verdict = decide(a, b, tolerant=tolerant)
    if verdict is not None:
        return verdict
    if too_large(p.text) and not too_large(g.text):
        # A value past the evaluator's bound where the gold's is not: never paid (the
        # final-form rule refuses what it cannot read), and sympy is not asked (att33g: a
        # tower of `\exp` held its worker for the whole 5 s timeout at every step).
        return False
    if deadline.passed():
        raise _Timeout
    return _symbolic({"op": "expr", "a": a, "b": b, "tolerant": tolerant}, deadline)


_DECIMAL = re.compile(r"\d\.\d|(?<!\d)\.\d")


def _match_unordered(
    ps: tuple[_Node, ...], gs: tuple[_Node, ...], deadline: _Budget, lenient: bool = False
) -> bool:
    if lenient:
        # `"any"` mode: an answer set lists each element once (`(1, 2), (1, 2)` is one pair).
        ps, gs = tuple(dict.fromkeys(ps)), tuple(dict.fromkeys(gs))
    if len(ps) != len(gs):
        return False
    remaining = list(gs)
    for p in ps:
        for j, g in enumerate(remaining):
            if _node_equal(p, g, deadline, lenient):
                del remaining[j]
                break
        else:
            return False
    return True


def _as_items(node: _Node) -> tuple[_Node, ...] | None:
    """A one-row or one-column matrix as a flat tuple of entries."""
    if isinstance(node, _Matrix):
        if len(node.rows) == 1:
            return tuple(node.rows[0])
        if all(len(r) == 1 for r in node.rows):
            return tuple(r[0] for r in node.rows)
    return None


def _node_equal(p: _Node, g: _Node, deadline: _Budget, lenient: bool = False) -> bool:
    if deadline.passed():
        raise _Timeout
    if isinstance(g, _Expr) and isinstance(p, _Expr):
        return _expr_equal(p, g, deadline, lenient)
    if isinstance(p, _Eq) != isinstance(g, _Eq):
        # `x = 3` against a bare `3`: compare the value.
        eq, other = (p, g) if isinstance(p, _Eq) else (g, p)
        assert isinstance(eq, _Eq)
        if eq.value is None:
            return False
        return (
            _node_equal(eq.value, other, deadline, lenient)
            if eq is p
            else _node_equal(other, eq.value, deadline, lenient)
        )
    if isinstance(p, _Seq) and isinstance(g, _Seq):
        if p.kind == "tuple" or g.kind == "tuple":
            ordered = p.kind in ("tuple", "list") and g.kind in ("tuple", "list")
            if not ordered or len(p.items) != len(g.items):
                return False
            return all(
                _node_equal(a, b, deadline, lenient) for a, b in zip(p.items, g.items, strict=True)
            )
        return _match_unordered(p.items, g.items, deadline, lenient)
    if isinstance(p, _Seq) and p.kind in ("set", "union", "list") and len(p.items) == 1:
        return _node_equal(p.items[0], g, deadline, lenient)
    if isinstance(g, _Seq) and g.kind in ("set", "union", "list") and len(g.items) == 1:
        return _node_equal(p, g.items[0], deadline, lenient)
    if isinstance(p, _Interval) and isinstance(g, _Interval):
        return (
            p.lo_closed == g.lo_closed
            and p.hi_closed == g.hi_closed
            and _expr_equal(p.lo, g.lo, deadline, lenient)
            and _expr_equal(p.hi, g.hi, deadline, lenient)
        )
    if isinstance(p, _Interval) != isinstance(g, _Interval):
        # An open interval (a, b) is spelled like the point (a, b).
        interval, other = (p, g) if isinstance(p, _Interval) else (g, p)
        assert isinstance(interval, _Interval)
        if isinstance(other, _Seq) and other.kind == "tuple" and len(other.items) == 2:
            if interval.lo_closed or interval.hi_closed:
                return False
            a, b = other.items
            if isinstance(a, _Expr) and isinstance(b, _Expr):
                return _expr_equal(a, interval.lo, deadline, lenient) and _expr_equal(
                    b, interval.hi, deadline
                )
        return False
    if isinstance(p, _Matrix) and isinstance(g, _Matrix):
        if [len(r) for r in p.rows] != [len(r) for r in g.rows]:
            return False
        p_cells = [a for row in p.rows for a in row]
        g_cells = [b for row in g.rows for b in row]
        return all(
            _expr_equal(a, b, deadline, lenient) for a, b in zip(p_cells, g_cells, strict=True)
        )
    if isinstance(p, _Matrix) or isinstance(g, _Matrix):
        p_items = _as_items(p) if isinstance(p, _Matrix) else None
        g_items = _as_items(g) if isinstance(g, _Matrix) else None
        p_seq = p.items if isinstance(p, _Seq) and p.kind in ("tuple", "list") else p_items
        g_seq = g.items if isinstance(g, _Seq) and g.kind in ("tuple", "list") else g_items
        if p_seq is None or g_seq is None or len(p_seq) != len(g_seq):
            return False
        return all(_node_equal(a, b, deadline, lenient) for a, b in zip(p_seq, g_seq, strict=True))
    if isinstance(p, _Eq) and isinstance(g, _Eq):
        if lenient and p.value is not None and g.value is not None:
            constant = not _LETTER.search(_COMMAND.sub("", p.rhs.text + g.rhs.text))
            if constant and _node_equal(p.value, g.value, deadline, lenient):
                return True  # `W(x) = 1` and `W(n) = 1`: the same value named differently
        if p.lhs.canon == g.lhs.canon and p.value is not None and g.value is not None:
            return _node_equal(p.value, g.value, deadline, lenient)
        if p.lhs.canon == g.lhs.canon and _expr_equal(p.rhs, g.rhs, deadline, lenient):
            return True
        if p.rhs.canon == g.rhs.canon and _expr_equal(p.lhs, g.lhs, deadline, lenient):
            return True
        sides = [p.lhs.text, p.rhs.text, g.lhs.text, g.rhs.text]
        return _symbolic({"op": "eq", "sides": sides}, deadline)
    return False


#: Whether the problem asks for the exact decimal ("no rounding"): a long gold decimal is then
#: the value as written, not a rounding that an exact answer need only come near (att34k:
#: ToolUse's unit tasks paid a fraction off by 4e-7 on 33-64 of 100 tasks).
_EXACT_DECIMAL: ContextVar[bool] = ContextVar("rllm_math_exact_decimal", default=False)
_NO_ROUNDING = re.compile(r"\b(?:no|without) rounding\b|\bnot rounded\b|\bexact decimal\b", re.I)


@lru_cache(maxsize=65_536)
def _compare_cached(prediction: str, gold: str, timeout: float, exact: bool = False) -> bool:
    # Raises _Timeout (not cached by lru_cache) when the deadline passes.
    token = _EXACT_DECIMAL.set(exact)
    try:
        return _node_equal(_prepare(prediction), _prepare(gold), _Budget(timeout))
    finally:
        _EXACT_DECIMAL.reset(token)


# ------------------------------------------------------------------ lenient ("any") compare

_CURRENCY_HEAD = re.compile(r"^(?:\\\$|\$|€|£|¥|₹|US\$|USD|EUR|GBP)\s*")
_CURRENCY_TAIL = re.compile(
    r"\s*(?:\\\$|\$|€|£|¥|₹|USD|EUR|GBP|euros?|dollars?|\\text\{\s*(?:euros?|dollars?|USD|EUR)\s*\})$"
)
_SUPERSCRIPT = re.compile(r"[²³]")
#: A number and an optional unit; ``^2``/``^3`` only on a unit (``25 m^2``): on the number
#: itself (``5^2``) it is a power left to evaluate, not a unit to drop.
_NUMBER_UNIT = re.compile(
    r"([-+]?[\d.,{}\\! \u2009\u202f]*\d)\s*(?:" + _UNITS + r"\s*(?:\^\{?[23]\}?)?)?"
)
_GROUPED = re.compile(r"[-+]?[1-9]\d{0,2}(?:" + _GROUP_SEP + r"\d{3})+(?:\.\d+)?")
_DECIMAL_COMMA = re.compile(r"([-+]?\d+),(\d+)")


def _lenient_number(s: str) -> str | None:
    """A number written with grouping or a decimal comma, in plain notation, else ``None``."""
    s = s.strip().replace("\u2212", "-")
    if _GROUPED.fullmatch(s):
        return re.sub(_GROUP_SEP, "", s)
    m = _DECIMAL_COMMA.fullmatch(s)
    if m:
        whole, frac = m.groups()
        # `1,000` groups thousands; `1,5`, `1000,99` and `0,111` have a decimal comma.
        grouping = len(frac) == 3 and 1 <= len(whole.lstrip("+-")) <= 3
        if not grouping or whole.lstrip("+-") == "0":
            return f"{whole}.{frac}"
    return None


def _lenient_rewrite(answer: str) -> str:
    r"""Reading of a free-form answer for ``"any"`` mode: currency, units and separators off.

    ``$1,000.99``, ``1,000.99€``, ``1 000 m²`` and ``2,74`` become ``1000.99``, ``1000.99``,
    ``1000`` and ``2.74``. Only a single number keeps its reading changed; anything else is
    returned as is.
    """
    approx = _split_top(answer, ("\\approx",))
    if len(approx) > 1 and all(approx):
        # `x \approx 11` is 11; `x = 1/3 \approx 0.33` is its exact value, 1/3.
        answer = approx[-1] if _VARIABLE.fullmatch(approx[0].replace(" ", "")) else approx[0]
    s = _SUPERSCRIPT.sub(lambda m: "^2" if m.group(0) == "²" else "^3", answer.strip())
    s = _CURRENCY_TAIL.sub("", _CURRENCY_HEAD.sub("", s)).strip()
    m = _NUMBER_UNIT.fullmatch(s)
    if m is None:
        return answer
    number = m.group(1).replace("{,}", ",").replace("\\,", " ").strip()
    plain = _lenient_number(number)
    if plain is not None:
        return plain
    return number if _PLAIN_NUMBER.fullmatch(number) else answer


#: ``or`` glued between two parts: ``(11,7)or(7,11)``, ``W(x)=1orW(x)=-1``.
_GLUED_OR = re.compile(r"(?<=[\d)\]}])\s*or\s*(?=[(\[{A-Za-z\d\\-])")


def _named_value(node: _Node) -> _Node:
    r"""A named quantity ``AB = 4`` as its value (``"any"`` mode, see :func:`_computation`).

    Also inside a list (``AB=4, CD=5`` is ``4, 5``).
    """
    if isinstance(node, _Eq) and node.value is None and _computation(node):
        return _parse_item(node.rhs.text)
    if isinstance(node, _Seq) and node.kind in ("list", "set"):
        return _Seq(node.kind, tuple(_named_value(n) for n in node.items))
    return node


def _solution_groups(s: str) -> _Node | None:
    """Solutions split by ``;``, each a list of ``name = value``, as a set of tuples.

    ``p=5,q=2;p=7,q=2`` is the set of tuples ``(5, 2), (7, 2)``.
    """
    groups = _split_top(s, (";",))
    if len(groups) < 2 or len(groups) > MAX_ELEMENTS:
        return None
    tuples: list[_Node] = []
    for group in groups:
        items = [_parse_item(x) for x in _split_top(group, (",",))]
        if len(items) < 2 or not all(isinstance(x, _Eq) and x.value is not None for x in items):
            return None
        tuples.append(
            _Seq("tuple", tuple(x.value for x in items if isinstance(x, _Eq) and x.value))
        )
    return _Seq("set", tuple(tuples))


_MATRIX_LITERAL = re.compile(r"\\begin\{([pbvBV]?matrix)\}(.*?)\\end\{\1\}", re.DOTALL)


def _matrix_arithmetic(s: str) -> _Matrix | None:
    r"""Sums, differences and products of numeric matrix literals, computed exactly.

    ``"any"`` mode (``\begin{pmatrix}1\\2\end{pmatrix} + \begin{pmatrix}3\\4\end{pmatrix}``).
    """
    literals = list(_MATRIX_LITERAL.finditer(s))
    if len(literals) < 2 or len(literals) > 8:
        return None
    values: list[list[list[Fraction]]] = []
    ops: list[str] = []
    for i, m in enumerate(literals):
        gap = s[literals[i - 1].end() : m.start()] if i else s[: m.start()]
        op = gap.replace(" ", "")
        if i == 0 and op:
            return None
        if i and op not in ("+", "-", "", "\\cdot", "\\times", "*"):
            return None
        if i:
            ops.append(op if op in ("+", "-") else "*")
        rows = [r for r in re.split(r"\\\\", m.group(2)) if r.strip()]
        matrix = []
        for r in rows:
            row = []
            for cell in r.split("&"):
                n = _parse_number(_canon(normalize(cell)))
                if n is None:
                    return None
                row.append(n.value)
            matrix.append(row)
        if not matrix or any(len(r) != len(matrix[0]) for r in matrix):
            return None
        values.append(matrix)
    if s[literals[-1].end() :].strip():
        return None
    # Products bind tighter than sums.
    terms: list[tuple[int, list[list[Fraction]]]] = [(1, values[0])]
    for op, mat in zip(ops, values[1:], strict=True):
        if op == "*":
            sign, left = terms[-1]
            if len(left[0]) != len(mat):
                return None
            inner, cols = range(len(mat)), range(len(mat[0]))
            product = [
                [sum((row[k] * mat[k][j] for k in inner), Fraction(0)) for j in cols]
                for row in left
            ]
            terms[-1] = (sign, product)
        else:
            terms.append((1 if op == "+" else -1, mat))
    shape = (len(terms[0][1]), len(terms[0][1][0]))
    if any((len(mat), len(mat[0])) != shape for _, mat in terms):
        return None
    total = [
        [sum((sg * mat[i][j] for sg, mat in terms), Fraction(0)) for j in range(shape[1])]
        for i in range(shape[0])
    ]
    return _Matrix(tuple(tuple(_expr(_fraction_text(v)) for v in row) for row in total))


def _fraction_text(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


@lru_cache(maxsize=16_384)
def _prepare_any(answer: str) -> _Node:
    """Parse an answer with the ``"any"``-mode readings.

    Glued ``or``, ``;`` solution groups, named quantities as values, matrix arithmetic.
    """
    s = _GLUED_OR.sub(", ", answer) if "or" in answer else answer
    if "\\begin" in s:
        m = _matrix_arithmetic(normalize(s))
        if m is not None:
            return m
    if ";" in s:
        groups = _solution_groups(normalize(s))
        if groups is not None:
            return groups
    return _named_value(_prepare(s))


@lru_cache(maxsize=65_536)
def _compare_any_cached(prediction: str, gold: str, timeout: float, exact: bool = False) -> bool:
    token = _EXACT_DECIMAL.set(exact)
    try:
        return _compare_any(prediction, gold, _Budget(timeout))
    finally:
        _EXACT_DECIMAL.reset(token)


def _compare_any(prediction: str, gold: str, deadline: _Budget) -> bool:
    p, g = _prepare(prediction), _prepare(gold)
    if _node_equal(p, g, deadline, True):
        return True
    p2, g2 = _prepare_any(prediction), _prepare_any(gold)
    if (p2, g2) != (p, g) and _node_equal(p2, g2, deadline, True):
        return True
    p2s, g2s = _lenient_rewrite(prediction), _lenient_rewrite(gold)
    if (p2s, g2s) != (prediction, gold):
        p, g = _prepare(p2s), _prepare(g2s)
        if _node_equal(p, g, deadline, True):
            return True
    # `\frac{1}{2}\$ = \frac{10}{9}`: a worked computation (no variable on the left) whose
    # value is its last side; `a + 3z = 0` stays an equation.
    if isinstance(p, _Eq) and _computation(p) and not isinstance(g, _Eq):
        return _node_equal(_prepare(p.rhs.text), g, deadline, True)
    if isinstance(g, _Eq) and _computation(g) and not isinstance(p, _Eq):
        return _node_equal(p, _prepare(g.rhs.text), deadline, True)
    return False


def _computation(eq: _Eq) -> bool:
    """``lhs = value``: a worked computation, or a named quantity (``|AB| = 1``, ``A:B = 1``).

    The value has no variables; the left side has none either, or is a name, product or
    ratio of names with no ``+``/``-`` (``a + 3z = 0`` is an equation to solve, not a value).
    """
    if eq.value is not None or _LETTER.search(_COMMAND.sub("", eq.rhs.text)):
        return False
    lhs = _COMMAND.sub("", eq.lhs.text)
    return not _LETTER.search(lhs) or not re.search(r"[+-]", lhs)


def _free_form(answer: str) -> str:
    """In ``"any"`` mode a bare answer may be free text: read its answer out of it."""
    got = extract_answer(answer, answer_format="any") if len(answer) <= 100_000 else None
    return got if got else answer


def compare(
    prediction: str,
    gold: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    answer_format: AnswerFormat = "boxed",
) -> Verdict:
    """Compare two bare answers and say why.

    Args:
        prediction: The model's answer (e.g. the output of :func:`extract_answer`).
        gold: The reference answer.
        timeout: Seconds the comparison may take; past it the answer counts as wrong.
        answer_format: ``"boxed"`` (exact notation rules) or ``"any"``: both sides may be
            free text (their answer is extracted as :func:`extract_answer` does in ``"any"``
            mode), and a single number may carry currency, units, thousands separators
            (``,``, thin or plain spaces) or a decimal comma (``2,74``; ``1,000`` stays a
            thousand); an equation chain ``a = b`` whose left side is not a variable counts
            as its value ``b``.

    Returns:
        A :class:`Verdict`. Never raises on the content of ``prediction``.
    """
    return _verdict(prediction, gold, timeout, answer_format, extracted=False)


def _verdict(
    prediction: str,
    gold: str,
    timeout: float,
    answer_format: str,
    *,
    extracted: bool,
    problem: str | None = None,
) -> Verdict:
    _check_format(answer_format)
    if not isinstance(prediction, str) or not prediction.strip():
        return Verdict(False, "empty")
    pred, ref = prediction.strip(), str(gold).strip()
    try:
        if answer_format == "any":
            # An answer already extracted from a response is not read again.
            pred = pred if extracted else _free_form(pred).strip()
            ref = _free_form(ref).strip()
        named = _by_name(pred, ref, problem)
        if named == "":
            return Verdict(False, "not_equal")
        pred = named or pred
        exact = bool(problem and _NO_ROUNDING.search(problem))
        if answer_format == "any":
            equal = _compare_any_cached(pred, ref, float(timeout), exact)
        else:
            equal = _compare_cached(pred, ref, float(timeout), exact)
    except _Timeout:
        return Verdict(False, "timeout")
    except (RecursionError, MemoryError):
        return Verdict(False, "not_equal")
    return Verdict(equal, "equal" if equal else "not_equal")


_NAME = re.compile(r"[a-zA-Z](?:_\{?[a-zA-Z0-9]+\}?)?")


def _by_name(prediction: str, gold: str, problem: str | None) -> str | None:
    """A named answer (``y = 1, x = 3``) for an unnamed tuple gold, put in the gold's order.

    The order is the one the problem announces (``$(x, y)$``), else alphabetical for a tuple
    gold (a plain list of solutions stays unordered). Returns the values as a tuple in that
    order, ``""`` when the names are not the announced ones (the answer is wrong), or
    ``None`` when the rule does not apply (compared as written).
    """
    if len(prediction) > MAX_ANSWER_LENGTH or "=" not in prediction:
        return None
    g = _prepare(gold)
    if not isinstance(g, _Seq) or g.kind not in ("tuple", "list") or len(g.items) < 2:
        return None
    if any(isinstance(item, _Eq) for item in g.items):
        return None  # a named gold: equations are matched by their names already
    p = _prepare(prediction)
    if not isinstance(p, _Seq) or p.kind not in ("tuple", "list"):
        return None
    named: dict[str, str] = {}
    for item in p.items:
        if not isinstance(item, _Eq) or item.value is None:
            return None
        lhs = item.lhs.canon.replace("{", "").replace("}", "")
        if not _NAME.fullmatch(item.lhs.canon) or lhs in named:
            return None
        named[lhs] = item.rhs.text
    if len(named) != len(g.items):
        return ""
    announced = _final_form.tuple_names(problem, len(named)) if problem else None
    if announced is not None:
        order = [n.replace("{", "").replace("}", "") for n in announced]
        if set(order) != set(named):
            return ""
    elif g.kind == "list":
        return None  # `1, 3` lists solutions in any order: `x_1 = 3, x_2 = 1` is fine
    else:
        order = sorted(named)
    return "(" + ", ".join(named[n] for n in order) + ")"


def _leaves(node: _Node) -> list[str]:
    """The scalar expressions of a parsed answer (text answers have none)."""
    if isinstance(node, _Expr):
        return [] if node.is_text else [node.text]
    if isinstance(node, _Eq):
        if node.value is not None:
            return _leaves(node.value)
        if not _LETTER.search(_COMMAND.sub("", node.lhs.text)):
            return _leaves(node.rhs)  # `2 \times 3 = 6`: the work, then the value it ends on
        return _leaves(node.lhs) + _leaves(node.rhs)
    if isinstance(node, _Seq):
        return [leaf for item in node.items for leaf in _leaves(item)]
    if isinstance(node, _Interval):
        return _leaves(node.lo) + _leaves(node.hi)
    return [leaf for row in node.rows for cell in row for leaf in _leaves(cell)]


_PROBLEM_SPLIT = (",", ";", "=", "\\le ", "\\ge ", "<", ">", "\\ne ", "\\equiv", "\\approx")


@lru_cache(maxsize=4096)
def _problem_keys(problem: str) -> frozenset[str]:
    """Expression trees written in the problem (each math region and its top-level parts)."""
    keys: set[str] = set()
    for region in _final_form.problem_expressions(problem):
        s = normalize(region)
        if len(s) > MAX_ANSWER_LENGTH or not _depth_ok(s):
            continue
        for part in [s, *_split_top(s, _PROBLEM_SPLIT)]:
            try:
                key = _final_form.expression_key(part)
            except RecursionError:
                continue  # the problem's own notation is not the model's doing
            if key is not None:
                keys.add(key)
    return frozenset(keys)


@lru_cache(maxsize=16_384)
def _value_leaves(answer: str, answer_format: str) -> tuple[str, ...]:
    text = answer.strip()
    if answer_format == "any":
        text = _lenient_rewrite(text)
    if len(text) > MAX_ANSWER_LENGTH:
        return ()
    return tuple(_leaves(_prepare(text)))


def _variables_for_values(answer: str, gold: str, answer_format: str) -> bool:
    r"""Whether the answer writes a variable where the gold's values are constants.

    ``(3+\frac{x^2}{x}-x)(4+..)`` equals a number at every point, but a variable that cancels
    hides the arithmetic from the final-form rules, which read constant parts only (att32g).
    Compared value by value, where answer and gold have as many; a gold value with a variable
    of its own pairs with anything, an infinite one with no variable (att34e: an infinite
    endpoint, counted as a variable, turned the rule off for the whole interval, so
    `(\frac{bt - \frac{at^2}{t}}{t}, \infty)` paid 100/100 for `(b - a, \infty)`).
    """
    got, want = _value_leaves(answer, answer_format), _value_leaves(gold, answer_format)
    if not got or len(got) != len(want):
        return False
    symbols = _final_form.symbols
    return any(symbols(g) and symbols(w) is False for g, w in zip(got, want, strict=True))


@lru_cache(maxsize=16_384)
def _issues(answer: str, problem: str | None, answer_format: str) -> frozenset[str]:
    text = answer.strip()
    if answer_format == "any":
        text = _lenient_rewrite(text)
    if len(text) > MAX_ANSWER_LENGTH:
        return frozenset()
    leaves = _leaves(_prepare(text))
    found: set[str] = set()
    if "\\begin" in text and _matrix_arithmetic(normalize(text)) is not None:
        found.add("unevaluated_arithmetic")  # a sum or product of matrices, left to compute
    for leaf in leaves:
        found |= _final_form.expression_issues(leaf)
    if problem:
        # An atom is never a copy: the problem's expressions are read only for a compound
        # answer (reading them is most of a plain number's grading time).
        compound = [leaf for leaf in leaves if not _final_form.is_atom(leaf)]
        keys = _problem_keys(problem) if compound else frozenset()
        if any(_final_form.expression_key(leaf) in keys for leaf in compound):
            found.add("copied_expression")
        if _final_form.exact_form_requested(problem) and any(
            _final_form.has_decimal(leaf) for leaf in leaves
        ):
            found.add("not_exact")
        if _final_form.radical_form_requested(problem) and any(
            _final_form.radical_in_denominator(leaf) for leaf in leaves
        ):
            found.add("not_simplest_radical")
    return frozenset(found)


def final_form_issue(
    answer: str,
    *,
    gold: str | None = None,
    problem: str | None = None,
    answer_format: AnswerFormat = "boxed",
) -> str | None:
    r"""Why a bare answer is not the asked value in final form, or ``None`` if it is.

    An answer is in final form when nothing is left to compute: no arithmetic between numbers
    (``3+4``, ``12 \cdot 5 - 7``, ``\frac34 + \frac16``), no power, factorial or binomial of
    numbers (``2^{10}``, ``5!``, ``\binom{5}{2}``), no reducible radical (``\sqrt{8}``) or
    unreduced fraction (``\frac{4}{8}``); with a ``problem``, also no copy of an expression
    written in it, no decimal where it asks for an exact form ("exact", "in terms of
    :math:`\pi`", "as a fraction") and no radical in a denominator where it asks for simplest
    radical form. The answer's expression tree is read (:mod:`rllm_envs.math._final_form`),
    so the rule is about structure, not spelling: ``\frac{1}{2}``, ``0.5``, ``2\sqrt{2}``,
    ``-\frac{71}{15}``, ``81\pi`` and ``3 + 2\sqrt{2}`` are final.

    A form the ``gold`` answer itself uses is accepted (a dataset whose gold is ``2^{100}``
    accepts ``2^{100}``). Where the gold's values are constants, an answer that writes a
    variable in their place is not final either (``23(\sin^2 x + \cos^2 x)``, a variable that
    cancels hides the arithmetic).

    Args:
        answer: The bare answer (e.g. from :func:`extract_answer`).
        gold: The reference answer, if known.
        problem: The problem text, if known.
        answer_format: ``"any"`` first reads currency, units and separators leniently.

    Returns:
        One of :data:`FINAL_FORM_ISSUES`, or ``None``. Never raises on model output.
    """
    _check_format(answer_format)
    if not isinstance(answer, str) or not answer.strip():
        return None
    try:
        found = _issues(answer, problem or None, answer_format)
        if found and gold is not None:
            found -= _issues(str(gold), problem or None, answer_format)
        if (
            not found
            and gold is not None
            and _variables_for_values(answer, str(gold), answer_format)
        ):
            found = frozenset({"unevaluated_arithmetic"})
        if not found and gold is not None and problem and _nudged(answer, str(gold), problem):
            found = frozenset({"unevaluated_arithmetic"})
    except (RecursionError, MemoryError):
        # Too deep to read (att33m: 998 nested signs): nothing read is no final form.
        return "unevaluated_arithmetic"
    return next((name for name in FINAL_FORM_ISSUES if name in found), None)


def grade_answer(
    answer: str,
    gold: str,
    *,
    problem: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    answer_format: AnswerFormat = "boxed",
) -> Verdict:
    """Grade an extracted answer as a reward does: equivalent to the gold, and in final form.

    Args:
        answer: The bare answer (the output of :func:`extract_answer`).
        gold: The reference answer.
        problem: The problem text: copies of its expressions earn nothing, the exact form it
            asks for is required, and a named tuple (``y = 1, x = 3``) is read in the order
            it announces (``$(x, y)$``).
        timeout: Seconds the comparison may take.
        answer_format: ``"boxed"`` or ``"any"`` (see :func:`compare`).

    Returns:
        A :class:`Verdict`: ``equal`` only for an equivalent answer in final form, and the
        reason ``"not_final_form"`` (with its ``issue``) for an equivalent one that is not.
        Never raises on the content of ``answer``.
    """
    verdict = _verdict(answer, gold, timeout, answer_format, extracted=True, problem=problem)
    if not verdict.equal:
        return verdict
    issue = final_form_issue(answer, gold=gold, problem=problem, answer_format=answer_format)
    return verdict if issue is None else Verdict(False, "not_final_form", issue)


def is_equivalent(
    prediction: str,
    gold: str,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    answer_format: AnswerFormat = "boxed",
) -> bool:
    r"""Whether two bare answers are mathematically equivalent.

    Args:
        prediction: The model's answer, e.g. ``"\frac{1}{2}"`` or ``"x = 0.5"``.
        gold: The reference answer, e.g. ``"1/2"``.
        timeout: Seconds the comparison may take (counts as not equivalent past it).
        answer_format: ``"boxed"`` (default: bare answers, exact notation rules) or
            ``"any"`` (free-form answers; see :func:`compare`).

    Returns:
        ``True`` if equivalent. Never raises on the content of ``prediction``.

    Examples:
        >>> is_equivalent(r"\dfrac{1}{2}", "0.5")
        True
        >>> is_equivalent("(1, 2]", "(1, 2)")
        False
        >>> is_equivalent("Answer: $1,000.99", "1000.99", answer_format="any")
        True
    """
    return compare(prediction, gold, timeout=timeout, answer_format=answer_format).equal


def score_response(
    response: str,
    gold: str,
    *,
    problem: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    answer_format: AnswerFormat = "boxed",
) -> tuple[float, str]:
    r"""Score a full model response against a gold answer.

    Args:
        response: The model's whole output; its final answer is found with
            :func:`extract_answer`.
        gold: The reference answer.
        problem: The problem text (see :func:`grade_answer`); without it the final-form
            rule still applies, but copies and requested forms are not checked.
        timeout: Seconds the comparison may take.
        answer_format: ``"boxed"`` (default, for RL rewards: the last ``\boxed{}`` after
            ``</think>``, or a final-answer phrase) or ``"any"`` (for evaluation and unboxed
            data: also LaTeX math, ``#### x``, a bare answer or the last number; lenient
            number rules, see :func:`compare`).

    Returns:
        ``(score, reason)``: ``(1.0, "correct")`` for an equivalent answer in final form
        (:func:`grade_answer`), or ``0.0`` with ``"no_answer"`` (no final answer found: a
        format failure), ``"not_final_form"`` (the value, but with work left in it or
        copied from the problem), ``"incorrect"`` or ``"timeout"``.
    """
    answer = extract_answer(response, answer_format=answer_format)
    if answer is None:
        return 0.0, "no_answer"
    verdict = grade_answer(
        answer, gold, problem=problem, timeout=timeout, answer_format=answer_format
    )
    if verdict.equal:
        return 1.0, "correct"
    if verdict.reason in ("timeout", "not_final_form"):
        return 0.0, verdict.reason
    return 0.0, "incorrect"


# =================================================================== the sympy worker pool

_WORKER_SCRIPT = str(Path(__file__).with_name("_symbolic.py"))
#: Seconds a new worker may take to start (sympy import); not part of a comparison's bound.
_STARTUP_TIMEOUT = 60.0


class _Worker:
    """One sympy worker process, spoken to with JSON lines over pipes."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-u", _WORKER_SCRIPT],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # our own process group: killing it never hits the caller
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.fd = self.proc.stdout.fileno()
        self.buffer = b""
        self.ready = False
        self.started = time.monotonic()

    def wait_ready(self, budget: _Budget) -> None:
        """Wait for the worker's start-up line (the sympy import), at most ``_STARTUP_TIMEOUT``.

        The wait is not the comparison's work: it is paused in ``budget``, unless the budget
        is not pausable (:func:`warm_up`), which then ends it at its deadline.

        Raises:
            _Timeout: If an unpausable budget ran out first (the worker may still be starting).
            EOFError: If the worker died, or did not start within ``_STARTUP_TIMEOUT``.
        """
        if self.ready:
            return
        limit = self.started + _STARTUP_TIMEOUT
        with budget.paused():
            try:
                self._readline(limit if budget.pausable else min(budget.deadline, limit))
            except _Timeout:
                if time.monotonic() >= limit:
                    raise EOFError("sympy worker did not start") from None
                raise
        self.ready = True

    def _readline(self, deadline: float) -> bytes:
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _Timeout
            # poll, not select: select() refuses descriptor numbers past 1023, which a
            # trainer holding many files and sockets reaches.
            poller = select.poll()
            poller.register(self.fd, select.POLLIN)
            if not poller.poll(max(1, math.ceil(remaining * 1000))):
                raise _Timeout
            chunk = os.read(self.fd, 65536)
            if not chunk:
                raise EOFError("sympy worker exited")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line

    def request(self, payload: dict[str, Any], deadline: float) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(payload).encode() + b"\n")
        self.proc.stdin.flush()
        reply: dict[str, Any] = json.loads(self._readline(deadline))
        return reply

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, 9)
        except (ProcessLookupError, PermissionError, OSError):
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass


class _Slots:
    """The pool's worker slots, handed out first come, first served.

    A :class:`threading.Semaphore` lets the thread that releases a slot take it straight back
    (it never sleeps in between), so a caller that sends one slow comparison after another
    kept the slot while the others waited out their deadlines. Here a released slot goes to
    the longest waiter: a caller waits behind at most one request of each caller ahead.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.free = size
        self.lock = threading.Lock()
        self.waiting: deque[threading.Event] = deque()

    def acquire(self, timeout: float | None = None) -> bool:
        """Take a slot, waiting in turn (at most ``timeout`` seconds); whether one was taken."""
        with self.lock:
            if self.free and not self.waiting:
                self.free -= 1
                return True
            ticket = threading.Event()
            self.waiting.append(ticket)
        got = False
        try:
            got = ticket.wait(timeout)  # release() hands its slot over by setting the ticket
        finally:
            if not got:  # timed out or interrupted: leave the queue, or pass on a late slot
                with self.lock:
                    late = ticket not in self.waiting
                    if not late:
                        self.waiting.remove(ticket)
                if late:
                    self.release()
        return got

    def release(self) -> None:
        with self.lock:
            if self.waiting:
                self.waiting.popleft().set()
            else:
                self.free += 1


class _Pool:
    """Sympy workers shared by the threads of one process (forked children make their own).

    Every comparison of the process (every session of a server, every episode of a trainer)
    queues here for a slot, first come, first served (:class:`_Slots`); a thread holds at
    most one slot, and the wait for it is not part of the comparison's time bound.
    """

    def __init__(self, size: int) -> None:
        self.pid = os.getpid()
        self.idle: list[_Worker] = []
        self.lock = threading.Lock()
        self.slots = _Slots(size)

    def run(self, payload: dict[str, Any], budget: _Budget) -> dict[str, Any]:
        with budget.paused():
            wait = None if budget.pausable else max(0.0, budget.deadline - time.monotonic())
            if not self.slots.acquire(wait):
                raise _Timeout
        try:
            with self.lock:
                worker = self.idle.pop() if self.idle else None
            if worker is None or worker.proc.poll() is not None:
                worker = _Worker()
            try:
                worker.wait_ready(budget)
            except _Timeout:
                # Still importing sympy: keep it for the next call rather than start over, so
                # a short timeout never kills workers before they can ever answer.
                with self.lock:
                    self.idle.append(worker)
                raise
            except BaseException:
                worker.kill()
                raise
            try:
                reply = worker.request(payload, budget.deadline)
            except BaseException:
                worker.kill()  # mid-computation or broken: never reuse it
                raise
            with self.lock:
                self.idle.append(worker)
            return reply
        finally:
            self.slots.release()

    def close(self) -> None:
        with self.lock:
            workers, self.idle = self.idle, []
        for worker in workers:
            worker.kill()


_pool: _Pool | None = None
_pool_lock = threading.Lock()


def _get_pool() -> _Pool:
    global _pool
    with _pool_lock:
        if _pool is None or _pool.pid != os.getpid():
            # After a fork the parent's workers belong to the parent: start fresh ones.
            _pool = _Pool(size=max(1, min(4, os.cpu_count() or 1)))
        return _pool


def shutdown_workers() -> None:
    """Stop this process's sympy workers (they restart on demand; also runs at exit)."""
    global _pool
    with _pool_lock:
        pool, _pool = _pool, None
    if pool is not None and pool.pid == os.getpid():
        pool.close()


atexit.register(shutdown_workers)


def _forget_pool_after_fork() -> None:
    # A forked child must not touch the parent's workers, nor a lock another thread held.
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def warm_up(timeout: float = _STARTUP_TIMEOUT) -> bool:
    """Start a sympy worker now (about a second), so the first slow comparison does not wait.

    Returns:
        Whether a worker answered within ``timeout`` seconds.
    """
    try:
        reply = _get_pool().run({"op": "ping"}, _Budget(timeout, pausable=False))
    except (_Timeout, EOFError, OSError, ValueError):
        return False
    return bool(reply.get("equal"))


def _symbolic(payload: dict[str, Any], budget: _Budget | float) -> bool:
    """Ask a sympy worker; an error (unparsable input) means "not shown equal".

    ``budget`` may also be a deadline (``time.monotonic()`` seconds) that waits do use up.
    """
    if not isinstance(budget, _Budget):
        budget = _Budget(budget - time.monotonic(), pausable=False)
    if budget.passed():
        raise _Timeout
    try:
        reply = _get_pool().run(payload, budget)
    except (EOFError, OSError, ValueError):
        return False
    return bool(reply.get("equal", False))
