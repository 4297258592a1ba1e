r"""Countdown rules: the answer format, a safe exact-arithmetic parser, and scoring.

A Countdown task gives a list of numbers (``task["nums"]``) and a ``task["target"]``; the
answer is an arithmetic expression over the numbers with ``+ - * /`` and parentheses, given in
``<answer>...</answer>`` tags (matched case-insensitively, in the answer part of the reply as
:mod:`rllm_envs.text` defines it: after the last ``</think>``). This module is plain Python
(no Gymnasium import) so trainers can call :func:`score` directly::

    >>> task = {"nums": [2, 3, 4], "target": 20}
    >>> score("<think>5 * 4 = 20</think> <answer>(2 + 3) * 4</answer>", task)
    1.0
    >>> grade("<answer>(2 + 3) * 4 * 4</answer>", task).verdict
    'illegal_numbers'
    >>> grade("<answer>2 * 3 * 4</answer>", task).reason
    'the expression equals 24, not 20'
    >>> score("<answer>4 * (3 + 2)</answer>", {"nums": [2, 3, 4, 9], "target": 20}, use_all=False)
    1.0

**The parser** is a hand-written recursive-descent parser over a fixed grammar (no ``eval``,
no ``ast``)::

    answer     := expression [ "=" integer ]
    expression := term { ("+" | "-") term }
    term       := factor { ("*" | "/") factor }
    factor     := integer | "(" expression ")"
    integer    := ASCII digits

There is no unary minus and no exponent, so values stay small. Whitespace is ignored, and the
Unicode operators ``×``, ``·``, ``÷``, ``−`` and ``–`` (and LaTeX's ``\times``, ``\cdot``,
``\div``) are read as ``*``, ``/`` and ``-``, and so is a letter ``x`` or ``X`` written after a
number or ``)`` (``25 x 4``); one ``$..$``, ``\(..\)``, ``**..**`` or
Markdown backquotes around the whole answer and a final period are dropped. An optional
trailing ``= <integer>`` (the claimed result, as in ``3 + 4 = 7``) is allowed and ignored: the
expression's own value is what is graded. Arithmetic is exact (:class:`fractions.Fraction`), so
``(7 / 3) * 3`` is exactly 7. Hostile input cannot blow up: at most
:data:`MAX_EXPRESSION_LENGTH` characters, :data:`MAX_NUMBERS` numbers of at most
:data:`MAX_DIGITS` digits each and :data:`MAX_DEPTH` levels of parentheses are read; anything
beyond is a parse error. Parsing and grading never raise on any string.

**The components** (each 0 or 1; see :class:`Grade`) form a ladder, so none can be earned
without doing what it names:

``format``                The last ``<answer>...</answer>`` block parses with the grammar and
                          is an attempt at this task: its numbers are drawn from ``nums``, each
                          at most as often as given. The prompt's example, the target written
                          alone or another task's answer is not, and earns nothing.
``valid_expression``      ... and evaluates exactly (no division by zero).
``uses_allowed_numbers``  ... it parses, and its numbers are drawn from ``nums``, each given
                          number used at most once (exactly once with ``use_all=True``).
``value``                 ... all of the above, and its value equals ``target``.

The answer is an expression by design (the task is to find it), so the final-form rule of
the math envs does not apply here; what is graded is the expression's own value.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from rllm_envs.text import answer_text

__all__ = [
    "ANSWER_CLOSE",
    "ANSWER_OPEN",
    "COMPONENTS",
    "MAX_DEPTH",
    "MAX_DIGITS",
    "MAX_EXPRESSION_LENGTH",
    "MAX_NUMBERS",
    "Grade",
    "Parsed",
    "extract_answer",
    "format_number",
    "grade",
    "parse_expression",
    "prompt",
    "score",
]

ANSWER_OPEN = "<answer>"
ANSWER_CLOSE = "</answer>"
#: Names of the reward components, in ladder order.
COMPONENTS = ("format", "valid_expression", "uses_allowed_numbers", "value")
#: Longest answer (characters between the tags) that is parsed at all.
MAX_EXPRESSION_LENGTH = 1_000
#: Most numbers one expression may contain.
MAX_NUMBERS = 32
#: Most digits of one number.
MAX_DIGITS = 12
#: Deepest parenthesis nesting.
MAX_DEPTH = 32

_OPEN_RE = re.compile(re.escape(ANSWER_OPEN), re.IGNORECASE)
_CLOSE_RE = re.compile(re.escape(ANSWER_CLOSE), re.IGNORECASE)
#: The en dash too: typesetting turns "25 - 5" into "25 – 5" (s36 att36c, a parse error).
_OPERATOR_ALIASES = {"×": "*", "÷": "/", "−": "-", "–": "-", "·": "*"}
#: LaTeX spellings of the operators, and math-mode or bold wrappers around the whole answer
#: (att33f: `3 \times 4`, `$3*4$`, `**3*4**` were parse errors): read as the plain answer.
_LATEX_OPERATORS = (("\\times", "*"), ("\\cdot", "*"), ("\\div", "/"))
_WRAPPERS = (
    ("$$", "$$"),
    ("$", "$"),
    ("\\(", "\\)"),
    ("\\[", "\\]"),
    ("**", "**"),
    ("`", "`"),  # Markdown code (att36c)
)


def _unwrapped(text: str) -> str:
    """``text`` without one wrapper around it, a final period and LaTeX operator names."""
    text = text.strip()
    for left, right in _WRAPPERS:
        if len(text) > len(left) + len(right) and text.startswith(left) and text.endswith(right):
            text = text[len(left) : -len(right)].strip()
            break
    text = text.removesuffix(".").rstrip()
    for name, symbol in _LATEX_OPERATORS:
        text = text.replace(name, symbol)
    return text


_WHITESPACE = frozenset(" \t\r\n")
_DIGITS = frozenset("0123456789")
_SYMBOLS = frozenset("+-*/()=")


class _ParseError(Exception):
    """Internal: why an answer does not parse (never leaves this module)."""


@dataclass(frozen=True)
class Parsed:
    """An answer that parsed.

    Attributes:
        expression: The expression as written (stripped, without a trailing ``= n``).
        numbers: The numbers it uses, in order of appearance.
        value: Its exact value, or ``None`` when it divides by zero.
    """

    expression: str
    numbers: tuple[int, ...]
    value: Fraction | None


def _tokenize(text: str) -> list[str | int]:
    tokens: list[str | int] = []
    i, n = 0, len(text)
    count = 0
    while i < n:
        ch = _OPERATOR_ALIASES.get(text[i], text[i])
        if ch in _WHITESPACE:
            i += 1
        elif ch in _DIGITS:
            j = i
            while j < n and text[j] in _DIGITS:
                j += 1
            if j - i > MAX_DIGITS:
                raise _ParseError(f"a number has more than {MAX_DIGITS} digits")
            count += 1
            if count > MAX_NUMBERS:
                raise _ParseError(f"more than {MAX_NUMBERS} numbers")
            tokens.append(int(text[i:j]))
            i = j
        elif ch in _SYMBOLS:
            tokens.append(ch)
            i += 1
        elif ch in "xX" and tokens and (isinstance(tokens[-1], int) or tokens[-1] == ")"):
            # "25 x 4": a letter x after a number or ')' is the times sign people type (s37
            # att37g: 21/50 oracle expressions written so were parse errors). Anywhere else
            # it stays an unexpected character; the parser still checks what follows.
            tokens.append("*")
            i += 1
        else:
            raise _ParseError(f"unexpected character {text[i]!r} at position {i}")
    return tokens


class _Parser:
    """Recursive descent over the token list; evaluates as it parses."""

    def __init__(self, tokens: list[str | int], unary_minus: bool = False) -> None:
        self.tokens = tokens
        self.unary_minus = unary_minus
        self.pos = 0
        self.numbers: list[int] = []
        self.div_by_zero = False

    def peek(self) -> str | int | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def expression(self, depth: int) -> Fraction:
        value = self.term(depth)
        while self.peek() in ("+", "-"):
            op = self.tokens[self.pos]
            self.pos += 1
            right = self.term(depth)
            value = value + right if op == "+" else value - right
        return value

    def term(self, depth: int) -> Fraction:
        value = self.factor(depth)
        while self.peek() in ("*", "/"):
            op = self.tokens[self.pos]
            self.pos += 1
            right = self.factor(depth)
            if op == "*":
                value = value * right
            elif right == 0:
                # Keep parsing (the syntax is still checked); the value is undefined.
                self.div_by_zero = True
                value = Fraction(0)
            else:
                value = value / right
        return value

    def factor(self, depth: int) -> Fraction:
        token = self.peek()
        if isinstance(token, int):
            self.pos += 1
            self.numbers.append(token)
            return Fraction(token)
        if token == "(":
            if depth >= MAX_DEPTH:
                raise _ParseError(f"parentheses nested deeper than {MAX_DEPTH}")
            self.pos += 1
            value = self.expression(depth + 1)
            if self.peek() != ")":
                raise _ParseError("missing ')'")
            self.pos += 1
            return value
        if token is None:
            raise _ParseError("the expression ends where a number or '(' was expected")
        if token == "-" and self.unary_minus:
            if depth >= MAX_DEPTH:
                raise _ParseError(f"unary minus or parentheses nested deeper than {MAX_DEPTH}")
            self.pos += 1
            return -self.factor(depth + 1)
        if token in ("+", "-"):
            raise _ParseError(f"unary {token!r} is not allowed (use only binary + - * /)")
        raise _ParseError(f"unexpected {token!r} where a number or '(' was expected")


def _parse(text: str, unary_minus: bool = False) -> Parsed:
    if len(text) > MAX_EXPRESSION_LENGTH:
        raise _ParseError(f"the answer is longer than {MAX_EXPRESSION_LENGTH} characters")
    text = _unwrapped(text)
    tokens = _tokenize(text)
    if "=" in tokens:
        at = tokens.index("=")
        claim = tokens[at + 1 :]
        if len(claim) != 1 or not isinstance(claim[0], int):
            raise _ParseError("'=' must be followed by one integer (the claimed result) only")
        tokens = tokens[:at]
        expression = text[: text.index("=")].strip()
    else:
        expression = text.strip()
    if not tokens:
        raise _ParseError("the answer is empty")
    parser = _Parser(tokens, unary_minus)
    value = parser.expression(0)
    if parser.pos != len(tokens):
        raise _ParseError(f"unexpected {tokens[parser.pos]!r} after a complete expression")
    return Parsed(
        expression=expression,
        numbers=tuple(parser.numbers),
        value=None if parser.div_by_zero else value,
    )


def parse_expression(text: str, *, unary_minus: bool = False) -> tuple[Parsed | None, str | None]:
    """Parse and exactly evaluate an answer expression; never raises.

    Args:
        text: The expression (the content of the answer tags).
        unary_minus: Also read a unary ``-`` before a number or ``(`` (``-2 + 3``,
            ``4*(-1 + 7)``), as reasoning-gym's countdown references are written; Countdown's
            own grammar has none. Nesting of unary minus counts against :data:`MAX_DEPTH`.

    Returns:
        ``(parsed, None)`` on success, or ``(None, reason)`` with the reason in words.
    """
    if not isinstance(text, str):
        return None, f"expects a string, got {type(text).__name__}"
    try:
        return _parse(text, unary_minus), None
    except _ParseError as e:
        return None, str(e)
    except RecursionError:  # unreachable with MAX_DEPTH, kept as a last line of defence
        return None, "the expression is nested too deeply"


def extract_answer(response: str) -> str | None:
    """The content of the last complete ``<answer>...</answer>`` block, or ``None``.

    Only the answer part of the reply is read (:mod:`rllm_envs.text`: the text after the last
    ``</think>``; nothing when a ``<think>`` is left open). Tags match case-insensitively, and
    the search is linear in the length of ``response``.
    """
    if not isinstance(response, str):
        return None
    text = answer_text(response)
    closes = list(_CLOSE_RE.finditer(text))
    if not closes:
        return None
    end = closes[-1].start()
    opens = list(_OPEN_RE.finditer(text, 0, end))
    if not opens:
        return None
    return text[opens[-1].end() : end]


def format_number(value: Fraction) -> str:
    """``7`` for an integer value, ``7/3`` otherwise."""
    return str(value.numerator) if value.denominator == 1 else str(value)


@dataclass(frozen=True)
class Grade:
    """The verdict on one response.

    Attributes:
        components: ``{name: 0.0 | 1.0}`` for each of :data:`COMPONENTS`.
        verdict: ``"correct"``, ``"wrong_value"``, ``"illegal_numbers"``,
            ``"division_by_zero"``, ``"parse_error"`` or ``"no_answer"`` (the first failure
            on the ladder, numbers checked before division).
        reason: Why the answer is not correct, in words (``None`` when correct).
        expression: The parsed expression, or ``None``.
        value: Its exact value as text (``"7"``, ``"7/3"``), or ``None``.
        numbers_used: The numbers it uses, in order.
    """

    components: dict[str, float]
    verdict: str
    reason: str | None = None
    expression: str | None = None
    value: str | None = None
    numbers_used: list[int] = field(default_factory=list)

    @property
    def correct(self) -> bool:
        """Whether the answer reaches the target legally."""
        return self.verdict == "correct"


def _zero() -> dict[str, float]:
    return dict.fromkeys(COMPONENTS, 0.0)


def numbers_problem(used: Sequence[int], nums: Sequence[int], *, use_all: bool) -> str | None:
    """Why ``used`` is not a legal use of ``nums`` (each at most/exactly once), or ``None``."""
    have, want = Counter(nums), Counter(used)
    extra = sorted((want - have).elements())
    if extra:
        not_given = sorted({n for n in extra if n not in have})
        if not_given:
            return f"uses {not_given[0]}, which is not among the numbers {list(nums)}"
        return f"uses {extra[0]} more often than it is given in {list(nums)}"
    if use_all:
        unused = sorted((have - want).elements())
        if unused:
            return f"does not use {unused} (every number must be used exactly once)"
    return None


def grade(response: str | None, task: Mapping[str, Any], *, use_all: bool = True) -> Grade:
    """Grade a whole response against a task; never raises on the response.

    Args:
        response: The model's response (the answer is its last ``<answer>`` block).
        task: A task with ``nums`` (list of int) and ``target`` (int).
        use_all: Every number must be used exactly once (``True``, the TinyZero rule) or at
            most once (``False``, the TV-show rule).

    Returns:
        The :class:`Grade`.
    """
    content = extract_answer(response) if isinstance(response, str) else None
    if content is None:
        return Grade(_zero(), "no_answer", "no <answer>...</answer> block found")
    parsed, error = parse_expression(content)
    if parsed is None:
        return Grade(_zero(), "parse_error", f"the answer does not parse: {error}")
    nums = [int(n) for n in task["nums"]]
    target = Fraction(int(task["target"]))
    components = _zero()
    problem = numbers_problem(parsed.numbers, nums, use_all=use_all)
    # Shaping pays only for an attempt at this task: numbers it does not give (the prompt's
    # example, the target itself) earn no `format` credit.
    drawn = problem is None or numbers_problem(parsed.numbers, nums, use_all=False) is None
    components["format"] = float(drawn)
    components["uses_allowed_numbers"] = float(problem is None)
    components["valid_expression"] = float(drawn and parsed.value is not None)
    value_text = None if parsed.value is None else format_number(parsed.value)
    common: dict[str, Any] = {
        "expression": parsed.expression,
        "value": value_text,
        "numbers_used": list(parsed.numbers),
    }
    if problem is not None:
        return Grade(components, "illegal_numbers", f"the expression {problem}", **common)
    if parsed.value is None:
        return Grade(components, "division_by_zero", "the expression divides by zero", **common)
    if parsed.value != target:
        reason = f"the expression equals {value_text}, not {format_number(target)}"
        return Grade(components, "wrong_value", reason, **common)
    components["value"] = 1.0
    return Grade(components, "correct", None, **common)


def score(answer: str | None, task: Mapping[str, Any], *, use_all: bool = True) -> float:
    """1.0 if the response's answer reaches ``task["target"]`` legally, else 0.0."""
    return grade(answer, task, use_all=use_all).components["value"]


def prompt(nums: Sequence[int], target: int, *, use_all: bool = True) -> str:
    """The self-contained task statement, with the exact answer format."""
    rule = "each number exactly once" if use_all else "each number at most once"
    return (
        f"Using the numbers {list(nums)}, create an expression that equals {target}. "
        f"You may use + - * / and parentheses, and {rule}; division is exact (fractions "
        "are allowed along the way), and there is no unary minus. You may reason first; "
        "give the final expression in <answer> </answer> tags, for example "
        "<answer>(1 + 2) * 3</answer>."
    )
