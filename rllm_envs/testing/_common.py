"""What the single- and multi-agent checkers share: rules, how they run, reports, the fuzzer.

Also the context a check gets and the helpers checks fail with. A checker is a table of
:class:`Rule` s, one check function per rule taking the checker's :class:`Context`, and a
call to :func:`run_rules`.
"""

from __future__ import annotations

import inspect
import pickle
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TypeVar

import numpy as np

__all__ = [
    "DOC_SECTIONS",
    "GARBAGE",
    "HOSTILE_ACTIONS",
    "Rule",
    "RuleFailure",
    "ConformanceError",
    "ConformanceReport",
    "SkipRule",
    "fuzz_actions",
]

C = TypeVar("C", bound="Context")
T = TypeVar("T")

#: The sections every env docstring has (Gymnasium's documentation-page layout).
DOC_SECTIONS = (
    "## Description",
    "## Observation",
    "## Action",
    "## Reward",
    "## Episode End",
    "## Information",
    "## Arguments",
    "## Version History",
)

#: A well-meant but useless answer: words, a snowman, a broken tool call, an open ``\\boxed{``.
GARBAGE = "qwzx ☃ <tool_call>{not json</tool_call> \\boxed{"

#: Actions a model (or a buggy caller) can produce that an env must take without raising.
HOSTILE_ACTIONS: tuple[Any, ...] = ("", "x" * 1_000_000, "\x00\ud800\uffff", None, b"\xff\xfe", 42)

# A fuzzing alphabet: printable text, markup our parsers look for, control and zero-width
# characters, combining marks, right-to-left overrides, astral-plane emoji and lone surrogates.
_FUZZ_ALPHABET = (
    "abcXYZ019 \t\n\r.,;:!?-+*/=<>()[]{}\\\"'`|$#@&%^~_"
    "àéßñΣΩ∑∫√∞≤≠中文字日本語한국어😀🚀🔥"
    "\x00\x07\x1b\x7f\u200b\u200d\u2028\u202e\ufeff\ufffd\u0301\u0336"
    "\ud800\udfff"
)
_FUZZ_FRAGMENTS = (
    "\\boxed{",
    "}",
    "\\boxed{42}",
    "<tool_call>",
    "</tool_call>",
    '{"name": "calculator", "arguments": {"expression": "1/0"}}',
    "```python\n",
    "```",
    "<answer>",
    "</answer>",
    "LEFT",
    "right",
    "Answer: ",
    "import os; os._exit(1)",
    "A1",
    "-1e309",
    "NaN",
)


@dataclass(frozen=True)
class Rule:
    """One rule of the contract.

    Attributes:
        name: Short id used in messages and in ``rules=`` / ``skip=``.
        summary: What the rule demands.
        fix: How to make a failing env pass.
    """

    name: str
    summary: str
    fix: str


@dataclass
class RuleFailure:
    """One broken rule: which, for which env, what was seen, and how to fix it."""

    rule: Rule
    env: str
    detail: str

    def __str__(self) -> str:
        return (
            f"[{self.rule.name}] {self.env}: {self.detail}\n"
            f"    rule: {self.rule.summary}\n"
            f"    fix:  {self.rule.fix}"
        )


class ConformanceError(AssertionError):
    """Raised by the checkers when an env breaks one or more rules.

    Attributes:
        failures: Every broken rule, in the order checked.
        report: The full :class:`ConformanceReport`.
    """

    def __init__(self, report: ConformanceReport) -> None:
        self.report = report
        self.failures = list(report.failures)
        n = len(self.failures)
        super().__init__(
            f"{report.env} breaks {n} rule{'s' if n != 1 else ''} of the rllm-envs contract:\n"
            + "\n".join(str(f) for f in self.failures)
        )


@dataclass
class ConformanceReport:
    """What a checker did: the rules that passed, were skipped (and why) and failed."""

    env: str
    passed: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failures: list[RuleFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when no rule failed."""
        return not self.failures

    def __str__(self) -> str:
        lines = [f"{self.env}: {len(self.passed)} passed, {len(self.skipped)} skipped, "]
        lines[0] += f"{len(self.failures)} failed"
        lines += [f"  skipped {name}: {why}" for name, why in self.skipped.items()]
        lines += [f"  {f}" for f in self.failures]
        return "\n".join(lines)


class SkipRule(Exception):
    """A rule does not apply to this env (the reason is reported, not failed)."""


class Fail(Exception):
    """A rule's check saw a violation (the message says what)."""


def ensure(condition: Any, message: str) -> None:
    """Fail the current rule with ``message`` unless ``condition`` holds."""
    if not condition:
        raise Fail(message)


@dataclass
class Context:
    """What every check of a checker reads (each checker adds its own options).

    Attributes:
        make: Builds a fresh env (the multi-agent checker passes constructor kwargs to it).
        garbage: The garbage answer.
        seeds: Seeds of the oracle and garbage episodes.
        info_keys: Keys required in the info of ``reset`` and ``step``.
        step_info_keys: Keys required in the info of ``step`` only.
        fuzz_episodes: Episodes of random Unicode actions.
    """

    make: Callable[..., Any]
    garbage: str
    seeds: tuple[int, ...]
    info_keys: tuple[str, ...]
    step_info_keys: tuple[str, ...]
    fuzz_episodes: int


def run_rules(
    label: str,
    table: Mapping[str, Rule],
    checks: Mapping[str, Callable[[C], None]],
    ctx: C,
    selected: Iterable[str] | None,
    skip: Iterable[str],
    raise_on_failure: bool,
) -> ConformanceReport:
    """Run the selected rules of ``table`` on ``ctx``, collecting passes, skips and failures.

    Never stops early: an env that raises inside a check breaks that rule only.

    Raises:
        ConformanceError: When a rule failed and ``raise_on_failure`` is true.
        ValueError: For a rule name not in ``table``.
    """
    names = list(table) if selected is None else list(selected)
    unknown = [n for n in [*names, *skip] if n not in table]
    if unknown:
        raise ValueError(f"Unknown rule(s) {unknown}; the rules are {list(table)}.")
    report = ConformanceReport(env=label)
    skip_set = set(skip)
    for name in names:
        rule, check = table[name], partial(checks[name], ctx)
        if name in skip_set:
            report.skipped[name] = "skipped by the caller"
            continue
        try:
            check()
        except SkipRule as e:
            report.skipped[name] = str(e)
        except Fail as e:
            report.failures.append(RuleFailure(rule, label, str(e)))
        except Exception as e:  # an env that raises breaks the rule being checked
            detail = f"raised {type(e).__name__}: {_short(e)}"
            report.failures.append(RuleFailure(rule, label, detail))
        else:
            report.passed.append(name)
    if raise_on_failure and report.failures:
        raise ConformanceError(report)
    return report


def label(name: str, kwargs: Mapping[str, Any]) -> str:
    """How reports name an env: ``name``, then its constructor kwargs as ``(k=v, ...)``."""
    if not kwargs:
        return name
    return name + "(" + ", ".join(f"{k}={v!r}" for k, v in kwargs.items()) + ")"


def attempt(what: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``; an exception fails the rule with ``"<what> raised <type>: <message>"``."""
    try:
        return fn(*args)
    except Exception as e:
        raise Fail(f"{what} raised {type(e).__name__}: {e}") from e


def expect_raise(
    fn: Callable[[], Any], what: str, kinds: tuple[type[BaseException], ...] = ()
) -> None:
    """Fail with ``"<what> did not raise"`` unless ``fn()`` raises one of ``kinds``.

    The default kinds are the ones a config or programmer error may be: ``ValueError``,
    ``TypeError``, ``KeyError`` or a Gymnasium error.
    """
    import gymnasium as gym

    kinds = kinds or (ValueError, TypeError, KeyError, gym.error.Error)
    try:
        fn()
    except kinds:
        return
    raise Fail(f"{what} did not raise")


def check_doc_sections(cls: type) -> str:
    """Fail unless the docstring of ``cls`` has every section of :data:`DOC_SECTIONS`."""
    doc = inspect.getdoc(cls) or ""
    missing = [s for s in DOC_SECTIONS if s not in doc]
    ensure(not missing, f"the {cls.__name__} docstring lacks {missing}")
    return doc


def record_warnings(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> list[str]:
    """Call ``fn`` and return the text of every warning it emitted."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn(*args, **kwargs)
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def unexpected(messages: Sequence[str], allow: Iterable[str]) -> list[str]:
    """The messages that contain none of the allowlisted substrings."""
    allowed = tuple(allow)
    return [m for m in messages if not any(a in m for a in allowed)]


def fuzz_actions(rng: np.random.Generator, n: int, max_length: int = 400) -> Iterator[str]:
    """``n`` random hostile strings: random Unicode mixed with fragments of real answers."""
    alphabet = list(_FUZZ_ALPHABET)
    for _ in range(n):
        pieces: list[str] = []
        length = int(rng.integers(0, max_length + 1))
        while sum(map(len, pieces)) < length:
            if rng.random() < 0.2:
                pieces.append(_FUZZ_FRAGMENTS[int(rng.integers(len(_FUZZ_FRAGMENTS)))])
            else:
                k = int(rng.integers(1, 16))
                pieces.append(
                    "".join(alphabet[int(i)] for i in rng.integers(len(alphabet), size=k))
                )
        yield "".join(pieces)[:max_length]


def pickle_roundtrip(obj: Any) -> Any:
    """``pickle.loads(pickle.dumps(obj))``."""
    return pickle.loads(pickle.dumps(obj))


def _short(e: BaseException, limit: int = 300) -> str:
    text = str(e)
    return text if len(text) <= limit else text[:limit] + "..."


def describe(value: Any, limit: int = 80) -> str:
    """A short ``repr`` for messages."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
