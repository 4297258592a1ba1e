"""Test-strength audit of code tasks: degenerate programs must not pass a task's hidden tests.

A task whose hidden tests a program without the algorithm passes (a constant answer, the
statement's examples hard-coded, echoing the input, the sum of its numbers...) pays full
reward for a guess. :func:`audit_task` runs a library of such programs on the host, as plain
functions of a test's input (no sandbox: they are ours, not a model's), compares their
answers the way the judge does, and also flags hidden tests dominated by one answer (a
guess of that answer, plus the trivial cases, then passes most of them).

Every degenerate program also answers the statement's examples correctly (looked up by
input), as a program that hard-codes them would.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from rllm_envs.sandbox.harness import canonical_value, stdout_matches

# Answers a guessing program prints whatever the task.
_STDIN_CONSTANTS = ("", "0", "1", "-1", "2", "YES", "NO", "Yes", "No", "IMPOSSIBLE", "NONE")
_PER_QUERY = ("YES", "NO", "Yes", "No", "0", "1", "-1")
_VALUE_CONSTANTS: tuple[Any, ...] = (0, 1, -1, True, False, None, [], "", [0, 1], [-1, -1])
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
# A single answer on more than this share of the hidden tests dominates them.
DOMINANT_SHARE = 0.5


@dataclass(frozen=True)
class Finding:
    """One weakness of a task's hidden tests."""

    task_id: str
    # "degenerate" (a program passed them all), "dominant" (one answer rules them) or
    # "dominant first token" (one value rules the first part of a structured answer).
    check: str
    subject: str  # the program's name, or the dominant answer or token
    detail: str


def _numbers(text: str) -> list[float | int]:
    return [float(n) if "." in n else int(n) for n in _NUMBER.findall(text)]


def _constant(answer: Any) -> Callable[[Any], Any]:
    return lambda _: answer


def _per_query(answer: str) -> Callable[[str], str]:
    def program(text: str) -> str:
        found = _numbers(text)
        count = found[0] if found and isinstance(found[0], int) else 1
        return "\n".join([answer] * min(max(count, 1), 10**5))

    return program


def _stdin_programs(outputs: Iterable[str]) -> dict[str, Callable[[str], str]]:
    def numbers_after_first(text: str) -> list[float | int]:
        found = _numbers(text)
        return found[1:] or found

    def fmt(values: list[Any]) -> str:
        return " ".join(map(str, values))

    programs: dict[str, Callable[[str], str]] = {
        "echo input": lambda s: s,
        "first line": lambda s: (s.splitlines() or [""])[0],
        "last line": lambda s: (s.splitlines() or [""])[-1],
        "first token": lambda s: (s.split() or [""])[0],
        "last token": lambda s: (s.split() or [""])[-1],
        "count of numbers": lambda s: str(len(numbers_after_first(s))),
        "sum of numbers": lambda s: str(sum(numbers_after_first(s))),
        "sum of all numbers": lambda s: str(sum(_numbers(s))),
        "min of numbers": lambda s: str(min(numbers_after_first(s), default=0)),
        "max of numbers": lambda s: str(max(numbers_after_first(s), default=0)),
        "max minus min": lambda s: str(
            max(numbers_after_first(s), default=0) - min(numbers_after_first(s), default=0)
        ),
        "numbers sorted": lambda s: fmt(sorted(numbers_after_first(s))),
        "numbers reversed": lambda s: fmt(numbers_after_first(s)[::-1]),
        "second line": lambda s: (s.splitlines() + ["", ""])[1],
    }
    programs["numbers echoed"] = lambda s: fmt(numbers_after_first(s))
    for constant in (*_STDIN_CONSTANTS, *outputs):
        programs[f"constant {constant.strip()[:40]!r}"] = _constant(constant)
    for answer in _PER_QUERY:  # "t queries" answered alike: the same line t times
        programs[f"{answer!r} per query"] = _per_query(answer)
    return programs


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, list):
        return [x for item in value for x in _flatten(item)]
    return [value]


def _functional_programs(outputs: Iterable[Any]) -> dict[str, Callable[[list[Any]], Any]]:
    def nums(args: list[Any]) -> list[Any]:
        return [x for x in _flatten(args) if isinstance(x, int | float) and not isinstance(x, bool)]

    def first(args: list[Any]) -> Any:
        return args[0] if args else None

    programs: dict[str, Callable[[list[Any]], Any]] = {
        "first argument": first,
        "last argument": lambda a: a[-1] if a else None,
        "first argument sorted": lambda a: sorted(first(a)) if isinstance(first(a), list) else 0,
        "first argument reversed": lambda a: first(a)[::-1] if isinstance(first(a), list) else 0,
        "length of first argument": lambda a: len(first(a)) if hasattr(first(a), "__len__") else 0,
        "first element": lambda a: (
            first(a)[0] if isinstance(first(a), list | str) and first(a) else None
        ),
        "flattened": lambda a: _flatten(first(a)),
        "sum of numbers": lambda a: sum(nums(a)),
        "min of numbers": lambda a: min(nums(a), default=0),
        "max of numbers": lambda a: max(nums(a), default=0),
    }
    for constant in (*_VALUE_CONSTANTS, *outputs):
        programs[f"constant {json.dumps(constant)[:40]}"] = _constant(constant)
    return programs


def _value_matches(value: Any, expected: str) -> bool:
    try:
        return canonical_value(value) == canonical_value(json.loads(expected))
    except (TypeError, ValueError):
        return False


def _passes_all(
    program: Callable[[Any], Any],
    tests: list[dict[str, str]],
    examples: dict[str, str],
    matches: Callable[[Any, str], bool],
    parse: Callable[[str], Any],
) -> bool:
    for test in tests:
        if test["input"] in examples:  # the statement's answer, hard-coded
            answer: Any = examples[test["input"]]
            if matches is _value_matches:
                answer = json.loads(answer)
        else:
            try:
                answer = program(parse(test["input"]))
            except Exception:  # a degenerate program that crashes fails that test
                return False
        if not matches(answer, test["output"]):
            return False
    return True


def _parse_args(text: str) -> list[Any]:
    return [json.loads(line) for line in text.split("\n") if line.strip()]


def _answer_key(task: dict[str, Any], output: str) -> str:
    if task["kind"] == "stdin":
        return " ".join(output.split())
    try:
        return canonical_value(json.loads(output))
    except (TypeError, ValueError):
        return output


def dominant_answer(task: dict[str, Any]) -> tuple[str, int] | None:
    """The hidden tests' most common answer and its count, when it is on over half of them."""
    hidden = task["hidden_tests"]
    counts = Counter(_answer_key(task, t["output"]) for t in hidden)
    if not counts:
        return None
    answer, count = counts.most_common(1)[0]
    return (answer, count) if count > DOMINANT_SHARE * len(hidden) else None


def dominant_first_token(task: dict[str, Any]) -> tuple[str, int] | None:
    """A structured stdin answer's first part, and its count, when over half the tests share it.

    Applies where most answer lines have several parts ("count total"). A guess of that
    part plus a shortcut for the rest (``1`` merged interval of length ``max(r) - min(l)``)
    otherwise passes most tests without the algorithm.
    """
    if task["kind"] != "stdin":
        return None
    lines = [t["output"].strip().split("\n")[0].split() for t in task["hidden_tests"]]
    structured = [line for line in lines if len(line) >= 2]
    if len(structured) * 2 <= len(lines):
        return None
    counts = Counter(line[0] for line in lines if line)
    token, count = counts.most_common(1)[0]
    return (token, count) if count > DOMINANT_SHARE * len(lines) else None


def audit_task(task: dict[str, Any]) -> list[Finding]:
    """The weaknesses of one stdin or functional task's hidden tests (empty: none found).

    Assert-kind tasks (judged in the submission's process) are not audited: their tests are
    code, not answers.
    """
    if task["kind"] not in ("stdin", "functional"):
        return []
    hidden = task["hidden_tests"]
    findings: list[Finding] = []
    dominant = dominant_answer(task)
    if dominant is not None:
        answer, count = dominant
        findings.append(
            Finding(
                task["id"],
                "dominant",
                answer,
                f"{count} of {len(hidden)} hidden tests answer {answer[:60]!r}",
            )
        )
    first = dominant_first_token(task)
    if first is not None:
        token, count = first
        findings.append(
            Finding(
                task["id"],
                "dominant first token",
                token,
                f"{count} of {len(hidden)} hidden answers start with {token[:60]!r}",
            )
        )
    examples = {t["input"]: t["output"] for t in task["public_tests"]}
    outputs = {t["output"] for t in hidden} | set(examples.values())
    if task["kind"] == "stdin":
        stdin_programs = _stdin_programs(sorted(outputs))
        passed = [
            name
            for name, program in stdin_programs.items()
            if _passes_all(program, hidden, examples, stdout_matches, str)
        ]
    else:
        values = [json.loads(o) for o in sorted(outputs)]
        functional_programs = _functional_programs(values)
        passed = [
            name
            for name, program in functional_programs.items()
            if _passes_all(program, hidden, examples, _value_matches, _parse_args)
        ]
    findings += [
        Finding(task["id"], "degenerate", name, f"{name!r} passes all {len(hidden)} hidden tests")
        for name in passed
    ]
    return findings


def audit(tasks: Iterable[dict[str, Any]]) -> list[Finding]:
    """:func:`audit_task` over a task set."""
    return [finding for task in tasks for finding in audit_task(task)]
