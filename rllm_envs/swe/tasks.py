"""SWE tasks: the embedded procedural source and the task record schema.

A task is a SWE-bench-shaped record: ``instance_id``, ``problem_statement``, ``patch`` (the
reference fix, a unified diff against the base), ``test_patch`` (the hidden tests, a diff
against the base), ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (pytest node ids), optionally
``FAIL_TO_PASS_UNSHOWN`` (the fail-to-pass tests that neither the issue nor another task
shows, that the issue's answer does not pass, on which the buggy code does not raise (generic
error handling passes those) and that keep none of the issue's numbers or lengths in its
place (a fix gated on them passes those): partial credit counts only these, none pays only a
resolved task; default all of ``FAIL_TO_PASS``), and the base
repository: ``files`` (``{path: text}``, the embedded source) or ``repo_path`` and
``base_commit`` (a git repository on disk, see :mod:`rllm_envs.swe.loader`).

:func:`generate` makes task ``i`` of the embedded source from ``rng = task_rng(seed, i)``: one
of the projects of :mod:`rllm_envs.swe.projects` under one of its package names, with one
seeded bug (two from difficulty 4), the tests that expose it held back as hidden
fail-to-pass tests together with fresh cases around the issue's call (so the example the
issue shows is not all a fix must get right), and an issue written from what the buggy
code does (the code is run in-process: it is this package's own, never model-written). The
reference fix is the reverse of the seeded change. No Gymnasium import.
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from rllm_envs.error import InvalidDataset
from rllm_envs.swe.projects import DISTRACTORS, PROJECTS, Bug, Module, Project
from rllm_envs.swe.repo import Files, make_diff

__all__ = [
    "generate",
    "probe",
    "base_files",
    "fixed_files",
    "check_task",
    "check_patches",
    "MAX_DIFFICULTY",
    "REQUIRED",
]

#: Difficulty levels: 1 names the file, 2 the function, 3 only the behaviour (and adds a
#: module with no bug), 4 two bugs, 5 two bugs and two modules with no bug.
MAX_DIFFICULTY = 5
#: Fields every task record has.
REQUIRED = ("problem_statement", "test_patch", "FAIL_TO_PASS")
_VERSION = "0.4.2"


def _test_file(module: Module, pkg: str, names: list[str]) -> str:
    header = module.test_header.replace("PKG", pkg)
    return header + "".join("\n\n" + module.tests[n] for n in names)


def _project_files(project: Project, pkg: str, extra: tuple[Module, ...]) -> dict[str, str]:
    files = {
        "README.md": f"# {pkg}\n\n{project.description.capitalize()}.\n\n"
        f"Run the tests with `python -m pytest tests`.\n",
        "pyproject.toml": f'[project]\nname = "{pkg}"\nversion = "{_VERSION}"\n'
        'requires-python = ">=3.9"\n',
        f"{pkg}/__init__.py": f'"""{pkg}: {project.description}."""\n\n'
        f'__version__ = "{_VERSION}"\n',
    }
    for module in (*project.modules, *extra):
        files[f"{pkg}/{module.name}.py"] = module.source.replace("PKG", pkg)
        files[f"tests/test_{module.name}.py"] = _test_file(module, pkg, list(module.tests))
    return files


@lru_cache(maxsize=128)
def _compiled(source: str) -> Any:
    return compile(source, "<module>", "exec")


def _behaviour(source: str, call: str) -> tuple[bool, str]:
    """What ``call`` does with the module ``source``: ``(raised, text)``."""
    namespace: dict[str, Any] = {"__name__": "repro"}
    exec(_compiled(source), namespace)
    *setup, last = call.strip().split("\n")
    try:
        if setup:
            exec("\n".join(setup), namespace)
        return False, repr(eval(last, namespace))
    except Exception as e:
        return True, f"{type(e).__name__}: {e}"


def _bug_sources(project_key: str, bug_index: int) -> tuple[Bug, str, str]:
    """A seeded bug with its module's fixed and buggy source."""
    project = next(p for p in PROJECTS if p.key == project_key)
    bug = project.bugs[bug_index]
    source = project.module(bug.module).source
    return bug, source, source.replace(bug.old, bug.new, 1)


@lru_cache(maxsize=256)
def _repro(project_key: str, bug_index: int) -> tuple[tuple[bool, str], tuple[bool, str]]:
    bug, source, buggy = _bug_sources(project_key, bug_index)
    return _behaviour(buggy, bug.call), _behaviour(source, bug.call)


#: Hidden cases made per bug besides the module's own tests (see :func:`_cases`).
CASES_PER_BUG = 2
_CASE_TRIES = 40


def _mutate(call: str, rng: np.random.Generator, *, pad: bool = False) -> str:
    """``call`` with its numbers and the letters and digits of its strings changed at random.

    Changes are consistent (equal values and equal characters change alike), so a call whose
    behaviour depends on two values being equal, or on a string's shape, keeps that shape.
    ``pad``: strings also get spaces or a repeated character at random places (for a bug
    whose wrong inputs differ from the issue's only in length or spacing).
    """
    import string

    numbers: dict[int | float, int | float] = {}
    chars: dict[str, str] = {}

    def char(c: str) -> str:
        if c not in chars:
            pool = (
                string.digits
                if c.isdigit()
                else string.ascii_uppercase
                if c.isupper()
                else string.ascii_lowercase
            )
            chars[c] = c if rng.random() < 0.3 else pool[int(rng.integers(len(pool)))]
        return chars[c]

    class Change(ast.NodeTransformer):
        def visit_Constant(self, node: ast.Constant) -> ast.AST:
            value = node.value
            if isinstance(value, bool) or not isinstance(value, (int, float, str)):
                return node
            if isinstance(value, str):
                new: str | int | float = "".join(
                    char(c) if c.isascii() and c.isalnum() else c for c in value
                )
                if pad and isinstance(new, str):
                    at = int(rng.integers(len(new) + 1))
                    extra = " " if rng.random() < 0.6 or not new else new[min(at, len(new) - 1)]
                    new = new[:at] + extra * int(rng.integers(1, 3)) + new[at:]
            else:
                if value not in numbers:
                    keep = rng.random() < 0.3
                    if isinstance(value, int):
                        numbers[value] = value if keep else max(value + int(rng.integers(-3, 6)), 0)
                    else:
                        numbers[value] = value if keep else round(value * rng.uniform(0.5, 3.0), 2)
                new = numbers[value]
            return ast.copy_location(ast.Constant(new), node)

    return ast.unparse(Change().visit(ast.parse(call)))


def _plain(text: str) -> bool:
    try:
        return repr(ast.literal_eval(text)) == text
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False


@lru_cache(maxsize=1024)
def _cases(project_key: str, bug_index: int, seed: int) -> tuple[tuple[str, str], ...]:
    """Hidden cases around the reported behaviour: ``(code, expected repr)`` pairs.

    The issue's call with its numbers changed at random, kept when the fixed code returns a
    plain value and the buggy code does something else. They make the hidden tests check
    more than the example the issue shows, so special-casing that example earns nothing.
    """
    bug, source, buggy = _bug_sources(project_key, bug_index)
    rng = np.random.default_rng(seed)
    found: dict[str, str] = {}
    # Plain mutations first; padded ones only when those find too few (a bug whose wrong
    # inputs differ from the issue's only in length or spacing, e.g. ``is_valid('0')``),
    # so that every task has hidden cases beyond the issue's example (att30 M1).
    for tries in range(2 * _CASE_TRIES):
        if tries >= _CASE_TRIES and len(found) >= CASES_PER_BUG:
            break
        code = _mutate(bug.call, rng, pad=tries >= _CASE_TRIES)
        if code == _mutate_normal(bug.call) or code in found:
            continue
        raised, value = _behaviour(source, code)
        if raised:
            # An exception the fix raises: kept when it is a built-in one the buggy code
            # does not raise.
            kind = value.split(":", 1)[0]
            if not isinstance(getattr(builtins, kind, None), type):
                continue
            if _behaviour(buggy, code)[1].split(":", 1)[0] == kind:
                continue
            value = "raises " + kind
        elif not _plain(value) or _same(_behaviour(buggy, code), value):
            continue
        found[code] = value
        if len(found) == CASES_PER_BUG:
            break
    return tuple(found.items())


def _mutate_normal(call: str) -> str:
    return ast.unparse(ast.parse(call))


#: Hidden cases per bug whose input has another shape than the issue's (see :func:`_reshaped`).
RESHAPED_PER_BUG = 2


def _skeleton(code: str) -> str:
    """``code`` with every run of letters and digits made ``#``.

    What a fix gated on "looks like the issue's example" compares (punctuation, spacing,
    the number of elements).
    """
    return re.sub(r"[A-Za-z0-9]+", "#", code)


def _reshape(call: str, rng: np.random.Generator) -> str:
    """``call`` with its structure changed once or twice at random (``_mutate`` keeps it).

    A list or tuple gets an element more (a copy of one, so equal elements stay equal) or
    one less; a string a piece repeated or removed, spaces or one of its separators put in;
    a number is negated or given more digits; a setup call (``cart.add(...)``) is repeated.
    Many results are not valid inputs; :func:`_reshaped` keeps those that still show the
    bug.
    """
    tree = ast.parse(call)
    nodes = list(ast.walk(tree))
    seqs = [n for n in nodes if isinstance(n, (ast.List, ast.Tuple)) and n.elts]
    strs = [n for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    nums = [
        n
        for n in nodes
        if isinstance(n, ast.Constant)
        and isinstance(n.value, (int, float))
        and not isinstance(n.value, bool)
    ]
    calls = [n for n in tree.body[:-1] if isinstance(n, ast.Expr)]
    kinds = [
        k for k, have in (("seq", seqs), ("str", strs), ("num", nums), ("stmt", calls)) if have
    ]
    if not kinds:
        return ast.unparse(tree)
    for _ in range(int(rng.integers(1, 3))):
        kind = kinds[int(rng.integers(len(kinds)))]
        op = rng.random()
        if kind == "seq":
            seq = seqs[int(rng.integers(len(seqs)))]
            at = int(rng.integers(len(seq.elts)))
            if op < 0.4 and len(seq.elts) > 1:
                del seq.elts[at]
            else:
                seq.elts.insert(int(rng.integers(len(seq.elts) + 1)), copy.deepcopy(seq.elts[at]))
        elif kind == "str":
            const = strs[int(rng.integers(len(strs)))]
            text = str(const.value)
            i = int(rng.integers(len(text) + 1))
            if op < 0.3 and text:
                j = min(len(text), i + int(rng.integers(1, 4)))
                const.value = text[:i] + text[i:j] * 2 + text[j:]
            elif op < 0.55 and len(text) > 1:
                const.value = text[:i] + text[i + int(rng.integers(1, 3)) :]
            elif op < 0.8:
                const.value = text[:i] + " " * int(rng.integers(1, 3)) + text[i:]
            else:
                seps = sorted({c for c in text if not c.isalnum()}) or [" "]
                const.value = text[:i] + seps[int(rng.integers(len(seps)))] + text[i:]
        elif kind == "num":
            const = nums[int(rng.integers(len(nums)))]
            value: Any = const.value
            # Its type is kept (a float where an int is expected is seldom a valid input).
            const.value = -value if op < 0.5 else value * 10 + int(rng.integers(1, 9))
        else:
            stmt = calls[int(rng.integers(len(calls)))]
            tree.body.insert(tree.body.index(stmt) + 1, copy.deepcopy(stmt))
    return ast.unparse(ast.fix_missing_locations(tree))


def _outcome(source: str, buggy: str, code: str) -> str | None:
    """The expected side of a hidden case for ``code``, or None.

    ``"raises Kind"`` or a plain repr; None when the buggy code passes the case or the
    fixed code's result cannot be written.
    """
    raised, value = _behaviour(source, code)
    if raised:
        # An exception the fix raises: kept when it is a built-in one the buggy code does
        # not raise.
        kind = value.split(":", 1)[0]
        if not isinstance(getattr(builtins, kind, None), type):
            return None
        if _behaviour(buggy, code)[1].split(":", 1)[0] == kind:
            return None
        *setup, _ = code.split("\n")
        if setup and _behaviour(source, "\n".join([*setup, "None"]))[0]:
            # The test checks only its last line in ``pytest.raises`` (a repeated
            # ``cart.remove`` raising in the setup would fail on the reference).
            return None
        return "raises " + kind
    if not _plain(value) or _same(_behaviour(buggy, code), value):
        return None
    return value


def _differs(expected: str, answer: str) -> bool:
    """Whether a case expecting ``expected`` is failed by returning the issue's ``answer``."""
    if expected.startswith("raises ") or answer.startswith("raises "):
        return expected != answer
    return not _same((False, answer), expected)


@lru_cache(maxsize=4096)
def _buggy_raises(project_key: str, bug_index: int, code: str) -> bool:
    """Whether the buggy code raises on a case's ``code``.

    Such a case is still fail-to-pass, but partial credit does not count it: generic error
    handling passes it without fixing anything. Turning every exception into the expected
    kind (s20 att30d: up to 0.5) or retrying a call without the keyword the buggy code
    rejects (s20 att30e: a renamed ``suffix`` then falls back to its default, right whenever
    the text is short) earned partial credit while the issue's own call still failed.
    """
    return _behaviour(_bug_sources(project_key, bug_index)[2], code)[0]


@lru_cache(maxsize=4096)
def _values(code: str) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """The numbers and the literal lengths written in ``code``, in the order they appear.

    A sign is folded into its number; lengths are those of list, tuple, set, dict and string
    literals.
    """
    numbers: list[float] = []
    lengths: list[int] = []

    def number(node: ast.AST) -> float | None:
        value = node.value if isinstance(node, ast.Constant) else None
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = number(node.operand)
            if value is not None:
                numbers.append(-value if isinstance(node.op, ast.USub) else value)
                return
        if isinstance(node, ast.Constant):
            value = number(node)
            if value is not None:
                numbers.append(value)
            elif isinstance(node.value, str):
                lengths.append(len(node.value))
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            lengths.append(len(node.elts))
        elif isinstance(node, ast.Dict):
            lengths.append(len(node.keys))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(code))
    return tuple(numbers), tuple(lengths)


def _shares_a_value(code: str, call: str) -> bool:
    """Whether a case keeps one of the issue's numbers or lengths in its place.

    Such a case is still fail-to-pass, but partial credit does not count it: the fix applied
    only when an input equals the issue's (``if len(values) == 4``, ``if width == 7``) passed
    most of them while the bug stayed everywhere else (s20 att30f: 0.262 at d4, as much as
    an honest fix of one of two bugs).
    """
    numbers, lengths = _values(code)
    issue_numbers, issue_lengths = _values(call)
    # Compared place by place over the shorter list: a reshaped case has more or fewer.
    return any(a == b for a, b in zip(numbers, issue_numbers, strict=False)) or any(
        a == b for a, b in zip(lengths, issue_lengths, strict=False)
    )


def _issue_answer(project_key: str, bug_index: int) -> str:
    raised, text = _repro(project_key, bug_index)[1]
    return "raises " + text.split(":", 1)[0] if raised else text


@lru_cache(maxsize=1024)
def _reshaped(project_key: str, bug_index: int, seed: int) -> tuple[tuple[str, str], ...]:
    r"""Hidden cases whose input has another shape than the issue's call (s12 F1).

    ``(code, expected repr)`` pairs, kept as in :func:`_cases` (the fixed code returns a
    plain value or raises a built-in exception, the buggy code does something else).

    The cases of :func:`_cases` keep the issue's skeleton (its punctuation, spacing and
    number of elements), so a fix that runs only for inputs shaped like the example (``if
    re.fullmatch(r"\d+-\d+,,\d+, ", text)``) and keeps the bug elsewhere passed them all.
    These change the structure (:func:`_reshape`), then the values (:func:`_mutate`). A
    case whose skeleton differs from the issue's and whose answer differs from the issue's
    is preferred; where no input of another skeleton shows the bug (``check_digit`` takes
    any string of digits, all one skeleton) the cases differ in length and values.
    """
    bug, source, buggy = _bug_sources(project_key, bug_index)
    rng = np.random.default_rng([seed, 1])
    issue = _mutate_normal(bug.call)
    answer = _issue_answer(project_key, bug_index)
    taken = {issue, *(code for code, _ in _cases(project_key, bug_index, seed))}
    found: dict[str, tuple[str, int]] = {}
    for tries in range(10 * _CASE_TRIES):
        ranks = [r for _, r in found.values()]
        if ranks.count(3) >= RESHAPED_PER_BUG or (
            tries >= 4 * _CASE_TRIES and len(ranks) >= RESHAPED_PER_BUG and max(ranks) >= 2
        ):
            break
        code = _mutate(_reshape(bug.call, rng), rng)
        if code in taken or code in found:
            continue
        expected = _outcome(source, buggy, code)
        if expected is None:
            continue
        # Another skeleton first, then another answer than the issue's.
        rank = 2 * (_skeleton(code) != _skeleton(issue)) + _differs(expected, answer)
        found[code] = (expected, rank)
    best = sorted(found.items(), key=lambda item: -item[1][1])
    chosen: list[tuple[str, str]] = []
    while best and len(chosen) < RESHAPED_PER_BUG:
        # Of the best ranked, one whose answer no chosen case has, where there is one.
        pool = [item for item in best if item[1][1] == best[0][1][1]]
        seen = {expected for _, expected in chosen}
        pick = next((item for item in pool if item[1][0] not in seen), pool[0])
        chosen.append((pick[0], pick[1][0]))
        best.remove(pick)
    return tuple(chosen)


@lru_cache(maxsize=1024)
def _controls(project_key: str, bug_index: int, seed: int) -> tuple[tuple[str, str], ...]:
    """A hidden pass-to-pass case where every hidden case expects the issue's answer (s12 F2).

    For a bug whose every fail-to-pass case expects the issue's own answer:
    ``window([1, 2], 0)`` must raise whatever
    the input, ``is_valid('0')`` is ``False`` for every code the bug gets wrong, so copying
    the issue's answer passed them all. The case is the issue's call with its values changed
    (so with the issue's skeleton, where copying the answer pays) or reshaped, on which the
    buggy and the fixed code agree on an answer other than the issue's. Empty when a
    fail-to-pass case already expects another answer.
    """
    answer = _issue_answer(project_key, bug_index)
    cases = _cases(project_key, bug_index, seed) + _reshaped(project_key, bug_index, seed)
    if any(_differs(expected, answer) for _, expected in cases):
        return ()
    bug, source, buggy = _bug_sources(project_key, bug_index)
    rng = np.random.default_rng([seed, 2])
    issue = _mutate_normal(bug.call)
    for tries in range(10 * _CASE_TRIES):
        # A third keep the issue's skeleton (where copying the answer would pay).
        code = _mutate(bug.call if tries % 3 == 0 else _reshape(bug.call, rng), rng)
        if code == issue:
            continue
        raised, value = _behaviour(source, code)
        if raised or not _plain(value) or not _same(_behaviour(buggy, code), value):
            continue
        if _differs(value, answer):
            return ((code, value),)
    return ()


def _case_test(name: str, code: str, expected: str) -> str:
    *setup, last = code.split("\n")
    # Every case imports pytest the same way: an import only the raise cases had marked
    # them in the probe (att37d F4: 48/48 `window` raise tasks paid keeping the bug).
    body = "    import pytest\n\n" + "".join(f"    {line}\n" for line in setup)
    if expected.startswith("raises "):
        kind = expected.split()[1]
        return f"def {name}():\n{body}    with pytest.raises({kind}):\n        {last}\n"
    if _has_float(ast.literal_eval(expected)):
        # Another correct formula may round the last bit differently.
        expected = f"pytest.approx({expected})"
    return f"def {name}():\n{body}    assert {last} == {expected}\n"


def _same(outcome: tuple[bool, str], expected: str) -> bool:
    """Whether the buggy ``outcome`` passes the case for ``expected`` (approx for floats)."""
    raised, text = outcome
    if raised or not _plain(text):
        return False
    return _close(ast.literal_eval(text), ast.literal_eval(expected))


def _close(a: Any, b: Any) -> bool:
    if isinstance(b, float) and isinstance(a, (int, float)) and not isinstance(a, bool):
        return abs(a - b) <= max(1e-6 * abs(b), 1e-12)
    if isinstance(b, (list, tuple)) and type(a) is type(b) and len(a) == len(b):
        return all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, dict) and isinstance(a, dict) and a.keys() == b.keys():
        return all(_close(a[k], b[k]) for k in b)
    return bool(a == b)


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple, set)):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return False


def _does(outcome: tuple[bool, str], *, past: bool) -> str:
    raised, text = outcome
    if raised:
        return f"raises `{text}`" if past else f"raise `{text}`"
    return f"returns `{text}`" if past else f"return `{text}`"


def _issue_part(project: Project, index: int, pkg: str, difficulty: int) -> tuple[str, str]:
    bug = project.bugs[index]
    actual, expected = _repro(project.key, index)
    name = bug.function.split(".")[0]
    code = f"from {pkg}.{bug.module} import {name}\n\n{bug.call.strip()}"
    if difficulty == 1:
        title = f"`{bug.function}` in `{pkg}/{bug.module}.py` is wrong"
    elif difficulty == 2:
        title = f"`{bug.function}` gives a wrong result"
    else:
        title = f"Wrong result when I {bug.summary}"
    if expected[0] and not actual[0]:
        tail = f"It {_does(actual, past=True)}, but it should {_does(expected, past=False)}."
    elif actual[0] and not expected[0]:
        tail = f"It {_does(actual, past=True)}; it should {_does(expected, past=False)}."
    else:
        tail = f"It {_does(actual, past=True)}, but it should {_does(expected, past=False)}."
    body = f"I use {pkg} to {bug.summary}. This code:\n\n```python\n{code}\n```\n\n{tail}"
    return title, body


def _pick_bugs(project: Project, rng: np.random.Generator, count: int) -> list[int]:
    chosen: list[int] = []
    for i in (int(j) for j in rng.permutation(len(project.bugs))):
        bug = project.bugs[i]
        if all(project.bugs[j].function != bug.function for j in chosen):
            chosen.append(i)
        if len(chosen) == count:
            break
    return sorted(chosen)


def _choose(rng: np.random.Generator, difficulty: int) -> tuple[Project, str, list[int]]:
    """A task's project, package name and bugs: the draws its issue statement depends on."""
    project = PROJECTS[int(rng.integers(len(PROJECTS)))]
    pkg = project.names[int(rng.integers(len(project.names)))]
    return project, pkg, _pick_bugs(project, rng, 2 if difficulty >= 4 else 1)


def _statement(project: Project, pkg: str, bugs: list[int], difficulty: int) -> str:
    parts = [_issue_part(project, i, pkg, difficulty) for i in bugs]
    if len(parts) == 1:
        return f"{parts[0][0]}\n\n{parts[0][1]}\n"
    statement = f"Two problems in {pkg}\n\n" + "\n\n".join(
        f"{n}. {title}\n\n{body}" for n, (title, body) in enumerate(parts, 1)
    )
    return statement + "\n"


def probe(rng: np.random.Generator, *, difficulty: int = 1) -> dict[str, Any]:
    """What :func:`generate` shows a policy (the issue statement) for the same ``rng``.

    For the task source's probe draws: the hidden test cases, most of a task's cost, are not
    built (the source's first plan draws about a thousand).
    """
    project, pkg, bugs = _choose(rng, difficulty)
    return {
        "repo": pkg,
        "project": project.key,
        "difficulty": difficulty,
        "problem_statement": _statement(project, pkg, bugs, difficulty),
    }


def generate(rng: np.random.Generator, *, difficulty: int = 1) -> dict[str, Any]:
    """One embedded SWE task (see the module docstring)."""
    project, pkg, bugs = _choose(rng, difficulty)
    extra = DISTRACTORS[: 0 if difficulty < 3 else 1 if difficulty < 5 else 2]
    fixed = _project_files(project, pkg, extra)
    buggy = dict(fixed)
    f2p: list[str] = []
    for i in bugs:
        bug: Bug = project.bugs[i]
        path = f"{pkg}/{bug.module}.py"
        buggy[path] = buggy[path].replace(bug.old, bug.new, 1)
        f2p += [f"tests/test_{bug.module}.py::{t}" for t in bug.breaks if t not in f2p]
    f2p = list(dict.fromkeys(f2p))
    hidden_p2p: list[str] = []
    # What partial credit counts: the fresh cases drawn for this task that expect another
    # answer than the issue's. The module's own fail-to-pass tests are the same in every task
    # of the project (one calls the issue's example), and a case expecting the issue's answer
    # is passed by code that returns it whenever the bug shows the issue's symptom (s14).
    unshown: list[str] = []
    for i in bugs:
        bug = project.bugs[i]
        path = f"tests/test_{bug.module}.py"
        stem = bug.function.replace(".", "_").lower()
        seed = int(rng.integers(2**31))
        cases = _cases(project.key, i, seed) + _reshaped(project.key, i, seed)
        answer = _issue_answer(project.key, i)
        for n, (code, expected) in enumerate(cases, 1):
            name = f"test_reported_{stem}_{n}"
            fixed[path] += "\n\n" + _case_test(name, code, expected)
            f2p.append(f"{path}::{name}")
            if (
                _differs(expected, answer)
                and not _buggy_raises(project.key, i, code)
                and not _shares_a_value(code, bug.call)
            ):
                unshown.append(f"{path}::{name}")
        for n, (code, expected) in enumerate(_controls(project.key, i, seed), len(cases) + 1):
            name = f"test_reported_{stem}_{n}"
            fixed[path] += "\n\n" + _case_test(name, code, expected)
            hidden_p2p.append(f"{path}::{name}")
    base = dict(buggy)
    p2p: list[str] = []
    for module in (*project.modules, *extra):
        path = f"tests/test_{module.name}.py"
        kept = [n for n in module.tests if f"{path}::{n}" not in f2p]
        base[path] = _test_file(module, pkg, kept)
        p2p += [f"{path}::{n}" for n in kept]
    p2p += hidden_p2p
    statement = _statement(project, pkg, bugs, difficulty)
    sources = sorted({f"{pkg}/{project.bugs[i].module}.py" for i in bugs})
    tests = sorted({t.split("::")[0] for t in f2p})
    return {
        "repo": pkg,
        "project": project.key,
        "difficulty": difficulty,
        "bug_kinds": [project.bugs[i].kind for i in bugs],
        "bug_functions": [project.bugs[i].function for i in bugs],
        "files": base,
        "problem_statement": statement,
        "patch": make_diff(base, fixed, only=sources),
        "test_patch": make_diff(base, fixed, only=tests),
        "FAIL_TO_PASS": f2p,
        "FAIL_TO_PASS_UNSHOWN": unshown,
        "PASS_TO_PASS": p2p,
    }


def check_task(task: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidDataset` unless ``task`` is a usable SWE task record."""
    missing = [f for f in REQUIRED if f not in task]
    if "files" not in task and not ("repo_path" in task and "base_commit" in task):
        missing.append("files (or repo_path and base_commit)")
    if missing:
        raise InvalidDataset(
            f"A SWE task record needs fields {missing}; see rllm_envs.swe.tasks for the schema."
        )
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        value = task.get(key, [])
        if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
            raise InvalidDataset(f"Expects `{key}` to be a list of test ids, actual: {value!r}.")
    if not task["FAIL_TO_PASS"]:
        raise InvalidDataset("Expects at least one FAIL_TO_PASS test in a SWE task.")
    unshown = task.get("FAIL_TO_PASS_UNSHOWN")
    if unshown is not None and (
        not isinstance(unshown, (list, tuple)) or not set(unshown) <= set(task["FAIL_TO_PASS"])
    ):
        raise InvalidDataset(
            "Expects `FAIL_TO_PASS_UNSHOWN` to be a list of FAIL_TO_PASS test ids (empty: "
            f"partial credit only for a resolved task), actual: {unshown!r}."
        )
    for key in ("patch", "test_patch", "problem_statement"):
        if task.get(key) is not None and not isinstance(task[key], str):
            raise InvalidDataset(
                f"Expects a SWE task's `{key}` to be a str, actual: {type(task[key]).__name__}."
            )
    from rllm_envs.swe.repo import modules_outside_tests

    outside = modules_outside_tests(str(task.get("test_patch") or ""))
    if outside:
        raise InvalidDataset(
            f"The task's `test_patch` changes Python modules outside the test suite "
            f"({outside[:3]!r}): hidden tests may only add or change the test suite's files "
            "(test_*.py, *_test.py, tests.py, or under tests/, test/, testing/)."
        )
    if "files" in task:
        files = task["files"]
        if not isinstance(files, Mapping):
            raise InvalidDataset("Expects a task's `files` to be a mapping of path to text.")
        bad = [p for p, t in files.items() if not isinstance(p, str) or not isinstance(t, str)]
        if bad:
            raise InvalidDataset(
                f"Expects a task's `files` to map str paths to str texts; not so for {bad[:3]!r}."
            )
    else:
        from rllm_envs.swe.loader import check_commit

        if not isinstance(task["repo_path"], str):
            raise InvalidDataset("Expects a task's `repo_path` to be a str (a git repository).")
        check_commit(task["base_commit"])


def check_patches(task: Mapping[str, Any], base: Files) -> None:
    """Raise :class:`InvalidDataset` unless the task's ``patch`` and ``test_patch`` apply.

    Run at reset, so a broken record fails before an episode is played on it.
    """
    from rllm_envs.swe.repo import PatchError, apply_diff

    for key in ("patch", "test_patch"):
        diff = str(task.get(key) or "")
        if not diff.strip():
            continue
        try:
            apply_diff(base, diff)
        except PatchError as e:
            raise InvalidDataset(
                f"The task's `{key}` does not apply to its base repository: {e}"
            ) from e


def base_files(task: Mapping[str, Any]) -> Files:
    """The pristine base repository of a task (cached for tasks read from git)."""
    if "files" in task:
        files = task["files"]
        if not isinstance(files, Mapping):
            raise InvalidDataset("Expects a task's `files` to be a mapping of path to text.")
        return files
    from rllm_envs.swe.loader import checkout

    return checkout(str(task["repo_path"]), str(task["base_commit"]))


def fixed_files(task: Mapping[str, Any]) -> dict[str, str]:
    """The base with the reference ``patch`` applied (the oracle's repository)."""
    from rllm_envs.swe.repo import apply_diff

    files = dict(base_files(task))
    patch = str(task.get("patch") or "")
    if not patch.strip():
        return files
    for path, text in apply_diff(files, patch).items():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text
    return files
