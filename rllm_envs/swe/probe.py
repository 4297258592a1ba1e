"""Probes: hidden tests that report what they computed instead of deciding a verdict.

:func:`probe_source` rewrites a test module on the host so that every check in it reports
the values it checked and drops what it expected: ``assert f(x) == [1, 2]`` becomes
``pytest.observe(f(x))`` (the literal ``[1, 2]`` is not in the probe), ``assert a == b`` with
two computed sides observes both, ``assert x`` and ``assert not x`` observe ``x``, ``unittest``
assertions observe their computed arguments, and a ``pytest.raises`` (or ``assertRaises``)
block becomes a ``pytest.observing()`` block that records the types of what it raised (and
the message when the test matched one). The sandbox reports these observations as data
(:mod:`rllm_envs.swe.executor`), and :func:`same` compares them on the host with the
observations of the same probe run on the reference repository in another sandbox
(:mod:`rllm_envs.swe.judge`). A patch that wants to pass must make its code produce the
reference's values: the expected values are not in its sandbox.

Only literals (and ``pytest.approx`` of literals) are expected sides: a call is computed,
whatever its name (``assert Interval(3, 1) == expected`` observes both sides). ``all(...)`` /
``any(...)`` over a comprehension become a loop observing each element; ``if bad: raise ...``
(or ``pytest.fail``) in a test becomes the observations of ``assert not bad``; a comparison,
``bool(...)``, a ``startswith``-like predicate or a ``re.search`` nested in an observed value
drops its literal too. Floats compare exactly unless the test gave a tolerance
(``pytest.approx``, ``isclose``, ``assertAlmostEqual``, ``abs(got - want) < tol``:
``observe(value, approx=(rel, abs))``; a tolerance may be a named constant of the module,
``TOL = 1e-9`` or a class's ``EPS``). Arithmetic with a literal in an observed value
(``abs(mean(xs) - 2.5) < 1e-9``, ``round(x - 2.5, 6) == 0``, ``len(xs) + 1 == 4``) observes
its computed operands instead: the result would be decided by the ``__sub__``/``__abs__`` of
an object the submission made, which is handed the literal; deeper inside an observed value
(``[x - 2.5]``, a comprehension, an f-string) or in an assignment, loop or comprehension
feeding one (a mismatch list, an ``ok = False`` flag) it is noted
(:func:`_sandbox_operations`), except ``max(abs(a - b) for a, b in zip(X, [..])) < tol``,
observed per element of ``X`` with the tolerance. ``"x" in text`` and ``match="x"`` observe
the text and name a check the host runs on it (:attr:`Probe.predicates`). A
``pytest.warns`` / ``assertWarns`` block records the classes
of the warnings it caught (and their messages where the test matched one).

Expected values held in literal tables (``for x, want in CASES: assert f(x) == want``,
``parametrize`` lists, ``zip(INPUTS, EXPECTED)``, dicts, class attributes, a local
``expected``) are moved out first (:mod:`rllm_envs.swe.tables`): each read of a table's
element is taken as a literal, and the element positions whose every read the rewrite dropped
become placeholders (:func:`probe_module`; parametrized cases get opaque ids,
:attr:`Probe.labels`).

A module is *complete* when every check the rewrite knows was rewritten and nothing else
that decides a test or keeps an expected value is left in it; otherwise
:func:`probe_report` says why, one ``NOTE_*`` sentence per kind: two computed sides compared
(an expected value may be computed in the probe), an identity check between computed values
(observed as the bool ``a is b``), a table whose expected values could not be moved, a ``raise`` or
``pytest.fail`` left in a test, a ``pytest.raises`` call outside ``with``, an ``assert*``
helper from elsewhere, a ``parametrize`` the host cannot label, a literal compared inside an
observed value.
A test of an incomplete module still runs as a probe, but what is noted stays readable or
decided in the sandbox's process; the judge says so
(:attr:`rllm_envs.swe.judge.Verdict.verdict_trust` and ``weakened``).
"""

from __future__ import annotations

import array
import ast
import base64
import bisect
import builtins
import calendar
import collections
import copy
import csv
import datetime
import decimal
import difflib
import faulthandler
import fnmatch
import fractions
import glob
import hmac
import html
import html.parser
import importlib
import io
import ipaddress
import json
import locale
import logging
import math
import mimetypes
import operator
import os
import pathlib
import pprint
import queue
import random
import re
import secrets
import shlex
import signal
import socket
import sqlite3
import string
import struct
import sys
import tempfile
import textwrap
import threading
import time
import unicodedata
import unittest
import urllib.parse
import uuid
import warnings
import zoneinfo
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from rllm_envs.swe import tables as _tables

__all__ = [
    "probe_source",
    "probe_report",
    "probe_module",
    "Probe",
    "is_literal",
    "same",
    "same_observations",
    "same_check",
    "checked",
    "index_map",
    "remap_indices",
    "OBSERVE",
    "OBSERVING",
    "ISINSTANCE",
    "NOTE_ECHO",
    "NOTE_DEEP",
    "NOTE_ANY",
    "Fixture",
    "echoed",
    "given_by_fixtures",
    "module_functions",
    "opaque_name",
]

#: The names the probe binds to ``pytest.observe`` and ``pytest.observing``.
OBSERVE = "__rllm_observe__"
OBSERVING = "__rllm_observing__"
#: The name the probe binds to ``pytest.observe_isinstance`` (``isinstance`` decided by the
#: runner from the real MRO, not by a metaclass of the repository's).
ISINSTANCE = "__rllm_isinstance__"
_UNITTEST_ONE = frozenset(
    {"assertTrue", "assertFalse", "assertIsNone", "assertIsNotNone", "assert_", "failUnless"}
)
_UNITTEST_TWO = frozenset(
    {
        "assertEqual",
        "assertEquals",
        "assertNotEqual",
        "assertAlmostEqual",
        "assertNotAlmostEqual",
        "assertIs",
        "assertIsNot",
        "assertIn",
        "assertNotIn",
        "assertIsInstance",
        "assertNotIsInstance",
        "assertGreater",
        "assertGreaterEqual",
        "assertLess",
        "assertLessEqual",
        "assertCountEqual",
        "assertListEqual",
        "assertTupleEqual",
        "assertDictEqual",
        "assertSetEqual",
        "assertSequenceEqual",
        "assertMultiLineEqual",
        "assertRegex",
        "assertNotRegex",
    }
)
#: The parameter names of unittest's assertions (their checked arguments, in order).
_UNITTEST_NAMES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("assertTrue", "assertFalse", "assert_", "failUnless"),
        ("expr",),
    ),
    **dict.fromkeys(("assertIsNone", "assertIsNotNone"), ("obj",)),
    **dict.fromkeys(
        (
            "assertEqual",
            "assertEquals",
            "assertNotEqual",
            "assertAlmostEqual",
            "assertNotAlmostEqual",
            "assertCountEqual",
            "assertMultiLineEqual",
        ),
        ("first", "second"),
    ),
    **dict.fromkeys(("assertIs", "assertIsNot"), ("expr1", "expr2")),
    **dict.fromkeys(("assertIn", "assertNotIn"), ("member", "container")),
    **dict.fromkeys(("assertIsInstance", "assertNotIsInstance"), ("obj", "cls")),
    **dict.fromkeys(
        ("assertGreater", "assertGreaterEqual", "assertLess", "assertLessEqual"), ("a", "b")
    ),
    "assertListEqual": ("list1", "list2"),
    "assertTupleEqual": ("tuple1", "tuple2"),
    "assertDictEqual": ("d1", "d2"),
    "assertSetEqual": ("set1", "set2"),
    "assertSequenceEqual": ("seq1", "seq2"),
    "assertRegex": ("text", "expected_regex"),
    "assertNotRegex": ("text", "unexpected_regex"),
}
#: Names a call that decides a test starts with (unittest's old ``failIf``/``failUnless*``).
_DECIDERS = ("assert", "failIf", "failUnless")
_FAILS = frozenset({"pytest.fail", "self.fail", "fail"})
#: Notes (why a probe is not complete) a verdict reports in ``info["verdict_weakened"]``.
NOTE_TWO_SIDES = "a check compares two computed values (an expected one may be in the probe)"
NOTE_IDENTITY = "an identity check (is / is not) is observed as a bool the sandbox computes"
NOTE_TABLE = "a table's expected values are read other ways too (they stay in the probe)"
NOTE_RAISE = "a raise or fail decides a test in the sandbox's process"
NOTE_RAISES_CALL = "a pytest.raises / assertRaises call outside a with block"
NOTE_RAISES_BODY = "a raises or warns block is not one observed call (it is told apart)"
NOTE_PATTERN = "a raises or warns pattern is not a literal (its text stays readable in the probe)"
NOTE_WARNING_FILTER = "a warning filter (filterwarnings, simplefilter) decides in the sandbox"
NOTE_MESSAGE_READABLE = "a message part checked on the host is readable in the probe"
NOTE_RAISES_AS = "a raises or warns block's `as` name is read other than as checked on the host"
NOTE_HELPER = "an assert helper from elsewhere decides a test in the sandbox's process"
NOTE_PARAMETRIZE = "a parametrize table whose expected values stay in the probe"
NOTE_CASE_IDS = "a parametrize case's id is a word the test wrote (it may say what it checks)"
NOTE_SYNTAX = "the test module does not parse"
NOTE_DEEP = "the test module is too deeply nested to rewrite"
NOTE_ANY = "an any(...) (or not all(...)) is checked element by element"
NOTE_ECHO = (
    "an expected value is written elsewhere in the module as an input (the sandbox can read it)"
)
NOTE_INNER = "an observed value compares with a literal inside it (a decision in the sandbox)"
#: Why a verdict is ``host_partial`` when the hidden tests add code that computes a value
#: from its input (:func:`suite_functions`): a patch finds it through ``sys.modules`` and
#: calls it with its input, and a reference implementation beside the tests is then its
#: answer (s41 att41o: 10/10 paid).
NOTE_SUITE_FUNCTION = (
    "the hidden tests add code outside their tests that computes a value from its input "
    "(a helper, a test double, a table of functions: a patch can call it for the expected values)"
)
#: Why a verdict is ``host_partial`` when a check is a method of the value under test given
#: the expected value (att30c M2).
NOTE_METHOD_CHECK = (
    "a check's result comes from a method of the value under test given an argument "
    "(``x.equals(12)``: the submission's method decides it)"
)
#: Method names that compare their receiver with their argument (``x.equals(12)``,
#: ``x.compare(12) == 0``), whatever the check does with the result.
_VERDICT_METHODS = frozenset(
    {"compare", "cmp", "compare_to", "compareto", "equals", "equal", "eq", "ne", "same"}
    | {"same_as", "isclose", "close_to", "almost_equal", "allclose"}
    | {"match", "matches", "fullmatch", "contains", "includes", "differs", "between"}
    | {"within", "agrees", "accepts", "satisfies", "equivalent"}
)
#: Names of modules whose functions a check calls (not methods of a value).
_MODULE_ROOTS = frozenset(sys.stdlib_module_names) | {"np", "numpy", "pytest", "pd", "pandas"}
_VERDICT_PREFIXES = ("is_", "has_", "equals", "compare", "match", "contains", "same", "differ")
NOTE_CALL_CHECK = (
    "a check's result comes from a helper or predicate call the probe does not rewrite "
    "(its expected argument stays in the probe and the sandbox decides it)"
)
#: Modules whose functions, called as a check, compare their arguments (``fnmatch.fnmatch``,
#: ``operator.eq``, ``math.isclose`` with a computed expected side, ``np.allclose``).
_PREDICATE_MODULES = ("fnmatch.", "operator.", "math.", "cmath.", "re.", "np.", "numpy.")
#: Methods of builtin values whose literal argument is compared with the receiver.
_VALUE_METHODS = frozenset(
    {
        "count",
        "find",
        "rfind",
        "index",
        "rindex",
        "replace",
        "removeprefix",
        "removesuffix",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__contains__",
    }
)
#: Predicates of builtin values whose literal argument is an expected value: the receiver
#: is observed instead (``s.startswith("ab")`` observes ``s``, as ``"ab" in s`` does).
_PREDICATES = frozenset({"startswith", "endswith", "issubset", "issuperset", "isdisjoint"})
_PATTERNS = frozenset({"re.match", "re.search", "re.fullmatch"})


@dataclass
class _Marks:
    """Reads of table elements the probe takes as literals, and those it dropped."""

    marked: set[tuple[Any, ...]] = field(default_factory=set)
    dropped: set[tuple[Any, ...]] = field(default_factory=set)
    #: The expected sides left out, each with the computed sides it was compared with
    #: (what the code under test is given there): :func:`_secrets`.
    expected: list[tuple[ast.AST, tuple[ast.AST, ...]]] = field(default_factory=list)


_MARKS: ContextVar[_Marks | None] = ContextVar("rllm_swe_probe_marks", default=None)
#: The test module's named numbers (``TOL = 1e-9``, ``self.EPS``) a tolerance may be given by.
_CONSTANTS: ContextVar[Mapping[str, float] | None] = ContextVar(
    "rllm_swe_probe_constants", default=None
)
_CHAINS = (ast.Name, ast.Attribute, ast.Subscript)
#: Per name the test module binds once, by importing it from the standard library, what it
#: names (``{"date": "datetime.date", "dt": "datetime"}``): :func:`_written_value`.
_STDLIB: ContextVar[Mapping[str, str] | None] = ContextVar("rllm_swe_probe_stdlib", default=None)
#: Standard-library types whose call on written values is a written value: an expected side
#: (``next_day(d) == date(2020, 1, 2)``), left out of the probe like a literal.
_WRITTEN_CLASSES: Mapping[str, type] = {
    "datetime.date": datetime.date,
    "datetime.datetime": datetime.datetime,
    "datetime.time": datetime.time,
    "datetime.timedelta": datetime.timedelta,
    "datetime.timezone": datetime.timezone,
    "decimal.Decimal": decimal.Decimal,
    "fractions.Fraction": fractions.Fraction,
    "uuid.UUID": uuid.UUID,
}
_WRITTEN_CALLS = frozenset(_WRITTEN_CLASSES)
#: Standard-library constants that are written values too.
_WRITTEN_NAMES = frozenset({"datetime.timezone.utc", "math.pi", "math.e", "math.tau", "math.inf"})


def _drop(node: ast.AST, beside: Sequence[ast.AST] = (), expected: bool = True) -> None:
    """The probe leaves ``node`` (an expected side) out: record it and the table reads in it.

    ``beside``: the computed sides it is compared with. ``expected=False``: a tolerance.
    """
    marks = _MARKS.get()
    if marks is None:
        return
    if expected:
        marks.expected.append((node, tuple(beside)))
    if not marks.marked:
        return
    stack = [node]
    while stack:
        inner = stack.pop()
        if isinstance(inner, _CHAINS) and _tables.node_key(inner) in marks.marked:
            # A read inside it (``TABLE[key]``'s key) is not an expected side itself.
            marks.dropped.add(_tables.node_key(inner))
            continue
        stack.extend(ast.iter_child_nodes(inner))


def is_literal(node: ast.expr) -> bool:
    """Whether ``node`` is a constant expression (or ``pytest.approx`` of one)."""
    token, stdlib = _MARKS.set(None), _STDLIB.set(None)
    try:
        return _expected(node)
    finally:
        _MARKS.reset(token)
        _STDLIB.reset(stdlib)


def _stdlib_names(tree: ast.Module, bound: Mapping[str, int] | None = None) -> dict[str, str]:
    """Names ``tree`` binds once, by an import from the standard library: what they name."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                local = alias.asname or alias.name.split(".")[0]
                found[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    bound = _binding_counts(tree) if bound is None else bound
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    return {k: v for k, v in found.items() if bound.get(k) == 1 and v.split(".")[0] in stdlib}


def _written_name(node: ast.expr) -> str:
    """What ``node`` (a name or attribute chain) names in the standard library, else ``""``."""
    known = _STDLIB.get()
    dotted = _dotted(node)
    if not known or not dotted:
        return ""
    head, _, rest = dotted.partition(".")
    if head not in known:
        return ""
    return f"{known[head]}.{rest}" if rest else known[head]


def _written_value(node: ast.expr) -> bool:
    """A standard-library value written in the test: ``date(2020, 1, 2)``, ``math.pi``."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return _written_name(node) in _WRITTEN_NAMES
    if not isinstance(node, ast.Call) or _written_name(node.func) not in _WRITTEN_CALLS:
        return False
    arguments = [*node.args, *(k.value for k in node.keywords)]
    return (
        not any(isinstance(a, ast.Starred) for a in node.args)
        and all(k.arg is not None for k in node.keywords)
        and all(_expected(a) for a in arguments)
    )


def _expected(node: ast.expr) -> bool:
    """Whether ``node`` is an expected value written in the test.

    A constant expression (literals and arithmetic on them), or ``pytest.approx`` of one; a
    standard-library value the module imported and wrote (``date(2020, 1, 2)``, ``math.pi``);
    also a read of a table's element that only ever flows to expected sides
    (:mod:`rllm_envs.swe.tables`). A call of anything else (``Interval(1, 3)``) runs code
    of the repository: it is computed, never an expected side.
    """
    if isinstance(node, _CHAINS):
        marks = _MARKS.get()
        if marks is not None and _tables.node_key(node) in marks.marked:
            return True
    if _written_value(node):
        return True
    if _approx(node) is not None:
        return bool(node.args) and all(_expected(a) for a in node.args)  # type: ignore[attr-defined]
    if isinstance(node, ast.BinOp):
        return _expected(node.left) and _expected(node.right)
    if isinstance(node, ast.UnaryOp):
        return _expected(node.operand)
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(_expected(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and _expected(k) for k in node.keys) and all(
            _expected(v) for v in node.values
        )
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


#: The nodes of a test that holds nothing but constants (``False``, ``0``, ``1 == 2``).
_CONSTANT_NODES = (
    ast.Constant,
    ast.UnaryOp,
    ast.BinOp,
    ast.BoolOp,
    ast.Compare,
    ast.Tuple,
    ast.List,
    ast.Set,
    ast.Dict,
    ast.expr_context,
    ast.operator,
    ast.unaryop,
    ast.boolop,
    ast.cmpop,
)
#: The comparison a two-argument unittest assertion of two constants makes.
_UNITTEST_OPS: dict[str, type[ast.cmpop]] = {
    **dict.fromkeys(
        (
            "assertEqual",
            "assertEquals",
            "assertListEqual",
            "assertTupleEqual",
            "assertDictEqual",
            "assertSetEqual",
            "assertSequenceEqual",
            "assertMultiLineEqual",
        ),
        ast.Eq,
    ),
    "assertNotEqual": ast.NotEq,
    "assertIs": ast.Is,
    "assertIsNot": ast.IsNot,
    "assertIn": ast.In,
    "assertNotIn": ast.NotIn,
    "assertGreater": ast.Gt,
    "assertGreaterEqual": ast.GtE,
    "assertLess": ast.Lt,
    "assertLessEqual": ast.LtE,
}


def _checked_arguments(call: ast.Call, method: str, count: int) -> list[ast.expr] | None:
    """The ``count`` checked arguments of unittest assertion ``call``, positional or keyword.

    ``None`` when they cannot be placed (a ``*args`` / ``**kwargs``, an unknown keyword).
    """
    names = _UNITTEST_NAMES.get(method, ())
    if len(names) != count or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    found: list[ast.expr | None] = [*call.args[:count], *[None] * (count - len(call.args))]
    known = {*names, "msg", "places", "delta"}
    for keyword in call.keywords:
        if keyword.arg is None or keyword.arg not in known:
            return None
        if keyword.arg in names:
            at = names.index(keyword.arg)
            if found[at] is not None:
                return None
            found[at] = keyword.value
    if any(a is None for a in found):
        return None
    return [a for a in found if a is not None]


def _constant(node: ast.expr) -> bool:
    """Whether ``node`` holds only constants: a fail statement's test (``assert False``)."""
    return all(isinstance(n, _CONSTANT_NODES) for n in ast.walk(node))


def _constant_assert(method: str, args: list[ast.expr]) -> ast.Assert | None:
    """The plain ``assert`` a unittest assertion of constants makes (``None``: not known).

    ``self.assertTrue(False)`` / ``self.assertEqual(1, 2)`` decide nothing about the code, but
    a test that reaches them fails: kept as an ``assert`` statement (which no submission can
    rebind), whose failure ends the test as the reference's never does.
    """
    test = _unittest_test(method, args)
    return None if test is None else ast.Assert(test, None)


def _unittest_test(method: str, args: list[ast.expr]) -> ast.expr | None:
    """What unittest assertion ``method`` of ``args`` asserts (``None``: not known).

    ``assertFalse(x)`` is ``not x``, ``assertNotIn(a, b)`` is ``a not in b``.
    """
    test: ast.expr
    if method in ("assertTrue", "assert_", "failUnless"):
        test = args[0]
    elif method == "assertFalse":
        test = ast.UnaryOp(ast.Not(), args[0])
    elif method in ("assertIsNone", "assertIsNotNone"):
        op = ast.Is() if method == "assertIsNone" else ast.IsNot()
        test = ast.Compare(args[0], [op], [ast.Constant(None)])
    elif method in _UNITTEST_OPS and len(args) == 2:
        test = ast.Compare(args[0], [_UNITTEST_OPS[method]()], [args[1]])
    else:
        return None
    return test


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _finite(value: int | float) -> bool:
    """Whether a number is finite (an ``int`` always is, however large: no float conversion)."""
    return type(value) is int or math.isfinite(value)


def _number(node: ast.expr | None) -> int | float | None:
    """A non-negative finite number written in the test: a literal or a named constant.

    An ``int`` stays an ``int``: the host compares it exactly, as Python does (att34a: a
    literal past 2**53 read as a float, ``9223372036854775807`` as ``2.0**63``, let the
    unchanged code pass ``<= sys.maxsize``-like bounds on the host that pytest fails).
    """
    if node is None:
        return None
    if isinstance(node, (ast.Name, ast.Attribute)):
        return (_CONSTANTS.get() or {}).get(_dotted(node))
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if type(value) in (int, float) and _finite(value) and value >= 0:
        return value
    return None


def _literal_numbers(node: ast.expr) -> list[int | float] | None:
    """The numbers of a literal list or tuple of numbers (any sign), else ``None``."""
    if not isinstance(node, (ast.List, ast.Tuple)) or not node.elts:
        return None
    try:
        values = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if all(type(v) in (int, float) and _finite(v) for v in values):
        return list(values)
    return None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _approx(node: ast.expr) -> tuple[float, float] | None:
    """``(rel, abs)`` of a ``pytest.approx(...)`` call (pytest's defaults), else ``None``."""
    if not (isinstance(node, ast.Call) and _dotted(node.func) in ("pytest.approx", "approx")):
        return None
    nan_ok = _keyword(node, "nan_ok")
    if nan_ok is not None and not (isinstance(nan_ok, ast.Constant) and type(nan_ok.value) is bool):
        return None  # a computed flag: observed as a computed side
    # (``nan_ok=True`` with a literal expected value changes nothing: a literal is never NaN)
    rel, tol = _number(_keyword(node, "rel")), _number(_keyword(node, "abs"))
    if rel is None:
        rel = 0.0 if tol is not None else 1e-6
    return rel, 1e-12 if tol is None else tol


def _isclose(node: ast.expr) -> tuple[ast.expr, tuple[float, float]] | None:
    """The computed argument and ``(rel, abs)`` of ``math.isclose(x, literal)``, else ``None``."""
    if not (
        isinstance(node, ast.Call)
        and _dotted(node.func) in ("math.isclose", "isclose", "cmath.isclose")
        and len(node.args) == 2
    ):
        return None
    computed = [a for a in node.args if not _expected(a)]
    if len(computed) != 1:
        return None
    for a in node.args:
        if a is not computed[0]:
            _drop(a, computed)
    rel = _number(_keyword(node, "rel_tol"))
    tol = _number(_keyword(node, "abs_tol"))
    return computed[0], (1e-9 if rel is None else rel, 0.0 if tol is None else tol)


#: The names the test module binds anywhere (``"*"``: a star import may bind any).
_BOUND: ContextVar[set[str] | None] = ContextVar("rllm_swe_probe_bound", default=None)


def _binding_counts(tree: ast.Module) -> dict[str, int]:
    """How many times ``tree`` binds each name.

    An assignment, a deletion, ``global``, a definition, an import, an argument; an attribute
    store counts for its attribute's name.
    """
    bound: dict[str, int] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(
            node.ctx, (ast.Store, ast.Del)
        ):
            names.append(node.id if isinstance(node, ast.Name) else node.attr)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.extend(node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.alias):
            names.append((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.arg):
            names.append(node.arg)
        for name in names:
            bound[name] = bound.get(name, 0) + 1
    return bound


def _constants(tree: ast.Module, bound: Mapping[str, int]) -> dict[str, float]:
    """The named numbers of test module ``tree`` a tolerance may be given by.

    A module-level ``TOL = 1e-9`` or a class-level ``EPS = 1e-6`` (read as ``TOL``,
    ``self.EPS``, ``cls.EPS`` or ``Class.EPS``): a non-negative finite number bound once in
    the whole module, and never bound, deleted or declared ``global`` / ``nonlocal``
    anywhere else (a name the test could change is not a constant).
    """
    found: dict[str, float] = {}

    def scan(body: list[ast.stmt], klass: str | None) -> None:
        for statement in body:
            target: ast.expr | None = None
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
                target, value = statement.targets[0], statement.value
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                target, value = statement.target, statement.value
            if not isinstance(target, ast.Name) or bound.get(target.id) != 1:
                continue
            number = _number(value)
            if number is None:
                continue
            if klass is None:
                found[target.id] = number
            else:
                for head in ("self", "cls", klass):
                    found[f"{head}.{target.id}"] = number

    scan(tree.body, None)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            scan(node.body, node.name)
    return found


#: Calls an arithmetic check is wrapped in (their result is decided by the value inside).
_WRAPPERS = frozenset(
    {
        *("abs", "round", "float", "int", "complex", "math.fabs", "fabs", "math.floor"),
        *("math.ceil", "str", "repr", "len", "sorted", "list", "tuple", "set", "sum"),
        *("min", "max"),
    }
)


def _unwrapped(node: ast.expr) -> ast.expr:
    """``node`` without the wrappers ``abs(...)``, ``round(..., 3)``, ``-...`` around it.

    (``max(x - 2.5, 0)``: the other arguments must be literals.)
    """
    while True:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            node = node.operand
        elif (
            isinstance(node, ast.Call)
            and _dotted(node.func) in _WRAPPERS
            and node.args
            and not node.keywords
            and not isinstance(node.args[0], ast.Starred)
            and all(_expected(a) for a in node.args[1:])
        ):
            node = node.args[0]
        else:
            return node


def _arithmetic(node: ast.expr, probe: _Probe) -> list[_Check] | None:
    """The operands an arithmetic observed value is decided by (``None``: not arithmetic).

    ``abs(mean(xs) - 2.5)`` computed in the sandbox is decided by the ``__sub__`` /
    ``__abs__`` of whatever ``mean`` returned, which is handed the literal: an object that
    answers ``0.0`` would match the reference without computing anything. So the operands
    are observed instead (each by its exact type and value), and a literal operand is left
    out of the probe like any expected side. A difference of two computed values compares
    them (:data:`NOTE_TWO_SIDES`).
    """
    inner = _unwrapped(node)
    if not isinstance(inner, ast.BinOp):
        return None
    operands = [inner.left, inner.right]
    computed = [o for o in operands if not _expected(o)]
    for o in operands:
        if not any(o is c for c in computed):
            _drop(o, computed)
    if len(computed) == 2 and isinstance(inner.op, ast.Sub):
        probe.note(NOTE_TWO_SIDES)
    return [c for o in computed for c in _value(o, probe)]


def _below_bound(test: ast.Compare) -> tuple[ast.expr, ast.expr] | None:
    """``(x, bound)`` of a single ``x < bound`` / ``<=`` (or ``bound > x`` / ``>=``)."""
    if len(test.ops) != 1:
        return None
    op, left, right = test.ops[0], test.left, test.comparators[0]
    if isinstance(op, (ast.Lt, ast.LtE)):
        return left, right
    if isinstance(op, (ast.Gt, ast.GtE)):
        return right, left
    return None


def _within(test: ast.Compare, probe: _Probe) -> list[_Check] | None:
    """``abs(got - want) < tol`` (or ``<=``, ``tol > ...``): ``got`` within ``tol`` on the host.

    ``want`` a literal: ``got`` is observed with the absolute tolerance ``tol`` (a literal
    or a named constant of the module, :func:`_constants`) and compared on the host with
    the reference's; neither ``want`` nor the comparison is in the probe. Both computed:
    both are observed so (:data:`NOTE_TWO_SIDES`). ``None``: not this shape.
    """
    split = _below_bound(test)
    if split is None:
        return None
    difference, bound = split
    tolerance = _number(bound)
    if tolerance is None or not (
        isinstance(difference, ast.Call)
        and _dotted(difference.func) in ("abs", "math.fabs", "fabs")
        and len(difference.args) == 1
        and not difference.keywords
        and isinstance(difference.args[0], ast.BinOp)
        and isinstance(difference.args[0].op, ast.Sub)
    ):
        return None
    operands = [difference.args[0].left, difference.args[0].right]
    computed = [o for o in operands if not _expected(o)]
    if not computed:
        return None
    for o in operands:
        if not any(o is c for c in computed):
            _drop(o, computed)
    _drop(bound, expected=False)
    if len(computed) == 2:
        probe.note(NOTE_TWO_SIDES)
    return [
        _Check(c.value, c.approx or (0.0, tolerance)) for o in computed for c in _value(o, probe)
    ]


#: The checks of a plain text the host runs itself (a text the sandbox observed, a literal
#: the host holds): ``"in"`` / ``"not in"`` (a substring), ``"search"`` (``re.search`` of a
#: pattern without repetition), ``startswith`` / ``endswith`` (and their negations). The
#: probe names the check by the index of its (kind, literal) in the module's
#: :attr:`Probe.predicates`. A raises block's rule is in :attr:`Probe.blocks` instead.
PREDICATES = (
    "in",
    "not in",
    "search",
    "near",
    "order",
    "truthy",
    "falsy",
    "startswith",
    "endswith",
    "not startswith",
    "not endswith",
)


@dataclass
class _Found:
    """The host's tables a rewrite fills: each entry with the function it was made in."""

    predicates: list[tuple[str, str]] = field(default_factory=list)
    predicate_owners: list[str] = field(default_factory=list)
    blocks: list[tuple[str, str]] = field(default_factory=list)
    block_owners: list[str] = field(default_factory=list)


_FOUND: ContextVar[_Found | None] = ContextVar("_FOUND", default=None)
#: The function (``Class.test_a``; ``""``: module code) whose checks are being rewritten.
_OWNER: ContextVar[str] = ContextVar("_OWNER", default="")


def _predicate(check: tuple[str, str]) -> int:
    """A new index for ``check`` in the module's table, one per check in the source.

    Never shared by equal checks: the sandbox reads the probe's code, and an index shared by
    every ``assert x`` (and another by every ``assert not x``) told a patch, from the
    unchanged code's passing checks, which answer a hidden check wanted (att36a: paid 1.0
    with trust ``host`` keeping the bug; a raises block's class likewise).
    """
    found = _FOUND.get()
    if found is None:
        return -1
    found.predicates.append(check)
    found.predicate_owners.append(_OWNER.get())
    return len(found.predicates) - 1


def _raised_names(expected: ast.expr | None) -> list[str]:
    """The builtin exceptions a raises block names (``(TypeError, ValueError)``).

    The host accepts what pytest would: a class deriving from one of them (att33d: a
    reference raising ``class BadValue(ValueError)`` failed an honest ``ValueError``, as did
    the other class of a tuple). Only a bare name the test module never binds is known to be
    the builtin (att33h: a repository's ``TimeoutError`` imported by the test, or a second
    class named ``Error``, was taken for another class and the unchanged code was paid);
    other names keep the reference's class rule. Under a star import, which may bind any
    name, it is marked ``?``: the builtin only where the reference's class derives from it
    and from no other class of that name. The names stay on the host (:func:`_block_holds`).
    """
    items = expected.elts if isinstance(expected, ast.Tuple) else [expected] if expected else []
    bound = _BOUND.get() or set()
    star = "?" if "*" in bound else ""
    return [
        f"builtins.{item.id}{star}"
        for item in items
        if isinstance(item, ast.Name)
        and item.id not in bound
        and isinstance(getattr(builtins, item.id, None), type)
        and issubclass(getattr(builtins, item.id), BaseException)
    ]


def _block(check: tuple[str, str]) -> ast.Call:
    """``__rllm_observing__(k)``: the same block for a raises block and for a value check.

    A raises block that looked like no other check told a patch which calls must raise
    (att36d: raising the issue's exception for exactly those literal calls paid 1.0 on 3/3
    ``window`` tasks, the bug kept). Every observed check is now such a block around
    ``__rllm_observe__(call)``; only the host's table (:attr:`Probe.blocks`; ``check``:
    ``("raises", rule)`` or ``("value", "")``) says whether a raise or a value was expected.
    """
    found = _FOUND.get()
    index = -1
    if found is not None:
        found.blocks.append(check)
        found.block_owners.append(_OWNER.get())
        index = len(found.blocks) - 1
    return ast.Call(ast.Name(OBSERVING, ast.Load()), [ast.Constant(index)], [])


def _raises_block(
    kind: str,
    expected: ast.expr | None,
    pattern: ast.expr | None,
    message: bool,
    body: list[ast.stmt],
    checks: Sequence[tuple[str, ast.Constant]] = (),
) -> ast.With:
    """The block of a raises or warns check (``kind``): what ``body`` raised or warned.

    ``pattern``: the test's ``match=`` (run on the host where it is a literal without
    repetition, else the message must equal the reference's); ``message``: the message is
    compared although no literal pattern was given (``assertRaisesRegex`` of a name).
    The body's last expression is observed as a value check's is, so a patch that does not
    raise leaves a value where the reference's record has its exception.
    """
    import json

    rule: Any = None
    if isinstance(pattern, ast.Constant) and type(pattern.value) is str:
        rule = ["search", pattern.value]
    elif message or pattern is not None:
        rule = "exact"
    folded = [[how, literal.value] for how, literal in checks]
    names = json.dumps({"classes": _raised_names(expected), "message": rule, "checks": folded})
    if kind == "warns":
        names = json.dumps({"message": rule})
    last = body[-1] if body else None
    targets = (
        last.targets
        if isinstance(last, ast.Assign)
        else [last.target]
        if isinstance(last, ast.AnnAssign)
        else []
    )
    if (
        isinstance(last, (ast.Assign, ast.AnnAssign))
        and last.value is not None
        and all(isinstance(t, ast.Name) for t in targets)
        # A warns block's assignment is read later: bound (`(a := make())`), it looked like
        # no other check and told the call (att38b F2: 5/5 paid); kept, it is noted.
        and kind == "raises"
    ):
        # `y = f(-3)`: the reference raises before `y` is bound, so nothing reads it; kept,
        # the assignment told a patch which call must raise (att37d F2). Only to plain
        # names: `o.size = -1` / `o["k"] = -1` call the code's setter, which must stay
        # (att37h F1: turned into its value, the unchanged code was paid 35/35).
        body = [*body[:-1], ast.copy_location(ast.Expr(last.value), last)]
    if body and isinstance(body[-1], ast.Expr) and not _is_observation(body[-1].value):
        last = body[-1]
        observed = ast.Call(ast.Name(OBSERVE, ast.Load()), [last.value], [])
        # Not a value of the reference's (it raised there): no literal of it is compared
        # in the sandbox, so the analyses of observed values skip it (:func:`_observes_value`).
        observed.rllm_raises = True  # type: ignore[attr-defined]
        body = [*body[:-1], ast.copy_location(ast.Expr(observed), last)]
    return ast.With([ast.withitem(_block((kind, names)), None)], body or [ast.Pass()])


def _is_observation(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _dotted(node.func) == OBSERVE


def _observes_value(node: ast.AST) -> bool:
    """Whether ``node`` observes a value the reference computed (not a raises block's call)."""
    return _is_observation(node) and not getattr(node, "rllm_raises", False)


class _Check:
    """One value a check observes, with the tolerance the test allowed (``None``: exact)."""

    def __init__(
        self,
        value: ast.expr,
        approx: tuple[float, float] | None = None,
        unordered: bool = False,
        host: tuple[str, str] | None = None,
    ) -> None:
        self.value = value
        self.approx = approx
        self.unordered = unordered
        #: The test's own check of a plain text, run on the host (:data:`PREDICATES`).
        self.host = host
        #: An operator of the test acts on the value (``"operated"``; ``"truth"``: only its
        #: truth is asked), where ``None``: the value is what the test compares for
        #: equality. See :func:`_mark_operated`.
        self.op: str | None = None


def _membership(test: ast.Compare, probe: _Probe) -> list[_Check] | None:
    """``"b" in tags(x)`` / ``not in``: the container, observed without its order.

    Membership does not depend on the order of a ``list`` or ``tuple`` (which may come from
    hashing strings, seeded afresh in every sandbox), so its elements are compared as a
    multiset (``observe(..., unordered=True)``); every element must still equal the
    reference's. ``None``: not this shape.
    """
    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.In, ast.NotIn)):
        return None
    member, container = test.left, test.comparators[0]
    if not _expected(member) or _expected(container):
        return None
    _drop(member, [container])
    host = None
    if isinstance(member, ast.Constant) and type(member.value) is str and test is probe.asserted:
        # ``"negative" in str(e.value)``: on a plain text the host runs the check itself.
        # Only where the comparison is what the test asserts (under ``not`` the other way
        # round): inside ``(.. in ..) == False`` or ``a or b`` its truth is not required.
        present = isinstance(test.ops[0], ast.In) != bool(probe.negated % 2)
        host = ("in" if present else "not in", member.value)
    return [
        _Check(
            c.value,
            c.approx,
            unordered=c.value is container,
            host=host if c.value is container else None,
        )
        for c in _value(container, probe)
    ]


def _pick(operands: list[ast.expr], probe: _Probe) -> list[_Check]:
    """The operands of one comparison to observe: the computed ones, not the expected ones.

    Only literals (and ``pytest.approx`` of literals) are expected sides. When more than one
    operand is computed, every one is observed and the module is incomplete (an expected
    value may be computed in the probe itself).
    """
    computed = [o for o in operands if not _expected(o)]
    for o in operands:
        if not any(o is c for c in computed):
            _drop(o, computed)
    if len(computed) >= 2:
        probe.note(NOTE_TWO_SIDES)
    tolerances = [t for t in (_approx(o) for o in operands) if t is not None]
    approx = tolerances[0] if tolerances else None
    found = [c for o in computed for c in _value(o, probe)]
    return [_Check(c.value, c.approx or approx, c.unordered) for c in found]


def _value(node: ast.expr, probe: _Probe) -> list[_Check]:
    """What to observe for computed value ``node``.

    A comparison, ``not``, ``and`` / ``or`` or ``bool(...)`` inside is a check of its own
    (its literal side dropped); a builtin predicate with a literal argument observes its
    receiver; any other comparison with a literal left inside is noted (the sandbox decides
    it, and the literal is readable there).
    """
    if isinstance(node, ast.Compare) or (
        isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)
    ):
        return _observed(node, probe)
    if isinstance(node, ast.BoolOp):
        return [c for v in node.values for c in _observed(v, probe)]
    if isinstance(node, ast.Call) and not node.keywords:
        name = _dotted(node.func)
        if name == "bool" and len(node.args) == 1:
            return _observed(node.args[0], probe)
        if (
            isinstance(node.func, ast.Attribute)
            and node.func.attr in _PREDICATES
            and node.args
            and all(_expected(a) for a in node.args)
            and not _expected(node.func.value)
        ):
            for a in node.args:
                _drop(a, [node.func.value])
            checks = _value(node.func.value, probe)
            literal = node.args[0]
            if (
                node is probe.asserted
                and node.func.attr in ("startswith", "endswith")
                and len(node.args) == 1
                and isinstance(literal, ast.Constant)
                and type(literal.value) is str
            ):
                # ``assert name.lower().startswith("item #")``: the host runs it on the text.
                kind = node.func.attr if not probe.negated % 2 else f"not {node.func.attr}"
                for check in checks:
                    if check.value is node.func.value:
                        check.host = (kind, literal.value)
            return checks
        if name in _PATTERNS and len(node.args) == 2 and _expected(node.args[0]):
            _drop(node.args[0], [node.args[1]])
            return _value(node.args[1], probe)
    arithmetic = _arithmetic(node, probe)
    if arithmetic is not None:
        return arithmetic
    if _literal_arithmetic(node):
        probe.note(NOTE_INNER)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Compare) and any(
            _expected(o) and not (isinstance(o, ast.Constant) and o.value in (None, True, False))
            for o in (inner.left, *inner.comparators)
        ):
            probe.note(NOTE_INNER)
            break
    if _decided_by_call(node, probe):
        probe.note(NOTE_CALL_CHECK)
    if _method_verdict(node, named=True):
        probe.note(NOTE_METHOD_CHECK)
    return [_Check(node)]


def _method_verdict(node: ast.expr, named: bool) -> bool:
    """Whether ``node`` is a method of a computed value given an argument (att30c M2).

    ``assert area(3, 4).equals(12)``: the result is the check, and the submission's method
    decides it. ``named``: only a comparing method's name counts (``x.compare(12) == 0``,
    where the result is also compared); otherwise the receiver must be computed by a call.
    A module's function (``re.match``, ``math.isclose``, ``os.path.exists``) is not a
    method of a value.
    """
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
        return False
    receiver = node.func.value
    if not (node.args or node.keywords) or _expected(receiver):
        return False
    name = node.func.attr.lower()
    if name.startswith("__") or name in _COMPARING_METHODS:
        return False  # dunders and a value's comparing methods are noted by other rules
    chain = receiver
    while isinstance(chain, ast.Attribute):
        chain = chain.value
    if isinstance(chain, ast.Name) and chain.id in _MODULE_ROOTS:
        return False
    if not named:
        return any(isinstance(n, ast.Call) for n in ast.walk(receiver))
    return not named or name in _VERDICT_METHODS or name.startswith(_VERDICT_PREFIXES)


#: Calls whose arguments are part of the observed value, not inputs of the code under test.
_VALUE_CALLS = _WRAPPERS | {"str", "repr", "bool", "max", "min", "sum", "len", "sorted"}


def _literal_number(node: ast.expr) -> bool:
    """Whether ``node`` is an expected number (a table's element counts: its type is unknown)."""
    if not _literal_argument(node):
        return False
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return True
    return type(value) in (int, float, complex)


def _literal_arithmetic(node: ast.expr) -> bool:
    """Whether observed value ``node`` holds arithmetic of a computed value with a number.

    ``[mean(xs) - 2.5]``, ``(got - 2.5).real``: the computed operand's methods are handed
    the literal and decide the result (an object answering ``0.0`` to ``- 2.5`` matches
    without computing anything). A text operand is a path or a format
    (``(tmp_path / "a.txt").read_text()``, ``("%d" % n).strip()``), not looked into;
    neither are arguments of other calls (``f(n - 1)``), indices, comprehensions and lambdas:
    inputs.
    """
    stack = [node]
    while stack:
        inner = stack.pop()
        if isinstance(inner, ast.BinOp):
            sides = (inner.left, inner.right)
            if any(_literal_number(o) for o in sides) and not all(_expected(o) for o in sides):
                return True
            stack.extend(sides)
        elif isinstance(inner, (ast.UnaryOp, ast.Starred)):
            stack.append(inner.operand if isinstance(inner, ast.UnaryOp) else inner.value)
        elif isinstance(inner, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(inner.elts)
        elif isinstance(inner, ast.Dict):
            stack.extend(v for v in (*inner.keys, *inner.values) if v is not None)
        elif isinstance(inner, (ast.Attribute, ast.Subscript)):
            stack.append(inner.value)
        elif isinstance(inner, ast.Call):
            stack.append(inner.func)
            if _dotted(inner.func) in _VALUE_CALLS:
                stack.extend(inner.args)
        elif isinstance(inner, ast.IfExp):
            stack.extend((inner.body, inner.orelse))
    return False


def _literal_argument(node: ast.expr) -> bool:
    return _expected(node) and not (
        isinstance(node, ast.Constant) and node.value in (None, True, False)
    )


def _decided_by_call(node: ast.expr, probe: _Probe) -> bool:
    """Whether observed value ``node`` is a call that compares inside (with its expected side).

    A helper of the test module (``_same(got, "x")``, a lambda), a predicate of a comparing
    module (``fnmatch.fnmatch``, ``operator.eq``, ``math.isclose``), a literal's method
    (``("x",).index(got)``), a comparing method with a literal argument (``got.count("x")``)
    or a call given both a computed value and a literal (``check(slugify(x), "x")``): its
    result is the sandbox's decision, and its literal stays in the probe.
    """
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = _dotted(func)
    if name.startswith(_SETUP_FIXTURES):
        return False  # it sets up, it does not compare (s41 att41i F2: withheld 10/10)
    arguments = [*node.args, *(k.value for k in node.keywords)]
    literal = any(_literal_argument(a) for a in arguments)
    return (
        isinstance(func, ast.Lambda)
        or name in probe.helpers
        or name.startswith(_PREDICATE_MODULES)
        or (isinstance(func, ast.Attribute) and _expected(func.value))
        or (isinstance(func, ast.Attribute) and func.attr in _VALUE_METHODS and literal)
        or (
            literal
            and any(_computed_call(n) for a in arguments for n in ast.walk(a))
            and name not in ("len", "sorted", "list", "tuple", "set", "str", "repr", "type")
        )
    )


#: Fixtures whose methods set a test up (``monkeypatch.setenv("TZ", "utc".upper())``).
_SETUP_FIXTURES = ("monkeypatch.", "caplog.set_level", "tmp_path_factory.")


#: Builtins whose call on written values is a written value too (``int('7')``, ``abs(-3)``):
#: the guard keeps ``builtins`` as it was, so no repository code runs there.
_PURE_BUILTINS = frozenset(
    {"int", "float", "abs", "len", "max", "min", "round", "str", "bool", "tuple", "list"}
    | {"set", "frozenset", "sorted", "sum", "range", "chr", "ord", "divmod", "pow", "bytes"}
)


def _computed_call(node: ast.AST) -> bool:
    """Whether ``node`` is a call that computes a value.

    Anything but a builtin of :data:`_PURE_BUILTINS` on written values (or on such calls)
    or a written standard-library value (:func:`_written_value`): ``clamp(33, 2,
    int('7'))`` is given written values only, as ``clamp(33, 2, 7)`` is.
    """
    if not isinstance(node, ast.Call) or _written_value(node):
        return False
    return not (
        isinstance(node.func, ast.Name)
        and node.func.id in _PURE_BUILTINS
        and not node.keywords
        and all(
            _expected(a) or (isinstance(a, ast.Call) and not _computed_call(a)) for a in node.args
        )
    )


def _left_decisions(tree: ast.Module) -> bool:
    """Whether a function of the probe still compares a computed value with a literal.

    What the rewrite left outside observations: ``if got == "x": return`` before an
    ``assert False``, a ``match`` over literal cases: the literal is in the probe and the
    sandbox decides the branch.
    """
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(_literal_argument(o) for o in operands) and not all(
                    _expected(o) for o in operands
                ):
                    return True
            elif isinstance(node, ast.MatchValue):
                return True
    return False


def _strip_strings(tree: ast.Module) -> None:
    """Drop string statements (docstrings) from the probe: they may state expected values.

    A test's docstring ("slugify('Hello World') gives 'hello-world'") would be readable as
    ``__doc__`` in the sandbox; no check reads it.
    """
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            statements = getattr(node, name, None)
            if not isinstance(statements, list) or not statements:
                continue
            kept = [
                s
                for s in statements
                if not (
                    isinstance(s, ast.Expr)
                    and isinstance(s.value, ast.Constant)
                    and isinstance(s.value.value, (str, bytes))
                )
            ]
            if len(kept) != len(statements):
                if not kept and name == "body":
                    kept = [ast.copy_location(ast.Pass(), statements[0])]
                setattr(node, name, kept)


def _helpers(tree: ast.Module) -> set[str]:
    """Functions of a test module a check may call: its functions, lambdas and methods."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(node.name)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
            found.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    found.update((f"self.{inner.name}", f"cls.{inner.name}"))
                    found.add(f"{node.name}.{inner.name}")
    return {n for n in found if not n.rsplit(".", 1)[-1].startswith("test")}


def _identity(test: ast.Compare, probe: _Probe) -> list[_Check]:
    """``a is b`` between two computed values: whether they are one object (a bool)."""
    found = []
    left = test.left
    for op, right in zip(test.ops, test.comparators, strict=True):
        if isinstance(op, (ast.Is, ast.IsNot)) and not _expected(left) and not _expected(right):
            probe.note(NOTE_IDENTITY)
            found.append(_Check(ast.Compare(left, [ast.Is()], [right])))
        left = right
    return found


def _none_check(test: ast.Compare, probe: _Probe) -> list[_Check] | None:
    """``x is None`` / ``x is not None``: the bool ``x is None`` (``is`` cannot be faked).

    Not ``x`` itself: a value with a timestamp or an id never repeats the reference's.
    """
    if len(test.ops) != 1 or not isinstance(test.ops[0], (ast.Is, ast.IsNot)):
        return None
    left, right = test.left, test.comparators[0]
    for computed, other in ((left, right), (right, left)):
        if isinstance(other, ast.Constant) and other.value is None and not _expected(computed):
            checks = _value(computed, probe)
            if len(checks) == 1 and checks[0].value is computed:
                return [_Check(ast.Compare(computed, [ast.Is()], [ast.Constant(None)]))]
            return checks
    return None


def _observed(test: ast.expr, probe: _Probe) -> list[_Check]:
    """The computed values a check of ``test`` depends on."""
    if isinstance(test, ast.Compare):
        within = _within(test, probe)
        if within is not None:
            return within
        member = _membership(test, probe)
        if member is not None:
            return member
        none = _none_check(test, probe)
        if none is not None:
            return none
        return _pick([test.left, *test.comparators], probe) + _identity(test, probe)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _observed(test.operand, probe)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [e for v in test.values for e in _observed(v, probe)]
    if isinstance(test, ast.Call) and _dotted(test.func) in ("isinstance", "issubclass"):
        if not test.args:
            return []
        checks = _value(test.args[0], probe)
        if (
            _dotted(test.func) == "isinstance"
            and len(checks) == 1
            and checks[0].value is test.args[0]
        ):
            # Only the type is checked: observe whether the value's real type is one of the
            # classes (a value with a timestamp or an id never repeats the reference's;
            # ``type()`` cannot be faked by ``__class__``). ``isinstance(x, (int, float))``
            # accepts ``3.0`` where the reference returns ``3``, as pytest does.
            kind = ast.Call(ast.Name("type", ast.Load()), [test.args[0]], [])
            if len(test.args) == 2 and all(
                isinstance(n, (ast.Name, ast.Attribute, ast.Tuple, ast.Load))
                for n in ast.walk(test.args[1])
            ):
                # The runner's own check: a repository class's metaclass (or a rebound
                # ``issubclass``) does not decide it.
                kind = ast.Call(ast.Name(ISINSTANCE, ast.Load()), [test.args[0], test.args[1]], [])
            return [_Check(kind)]
        return checks
    close = _isclose(test)
    if close is not None:
        return [_Check(c.value, c.approx or close[1]) for c in _value(close[0], probe)]
    if _expected(test):
        _drop(test)
        return []
    if _method_verdict(test, named=False):
        probe.note(NOTE_METHOD_CHECK)  # ``assert area(3, 4).accepted_by(12)``
    return _value(test, probe)


def _aggregate(test: ast.expr) -> ast.GeneratorExp | ast.ListComp | ast.SetComp | None:
    """The comprehension of ``all(...)`` / ``any(...)`` (each element is a check of its own)."""
    if (
        isinstance(test, ast.Call)
        and _dotted(test.func) in ("all", "any", "builtins.all", "builtins.any")
        and len(test.args) == 1
        and not test.keywords
        and isinstance(test.args[0], (ast.GeneratorExp, ast.ListComp, ast.SetComp))
    ):
        return test.args[0]
    return None


def _statements(test: ast.expr, probe: _Probe, at: ast.AST) -> list[ast.stmt]:
    """The observations replacing a check that ``test`` is true.

    ``all(E for x in I if C)`` / ``any(...)`` become a loop observing every element's
    computed values (a single bool would be the sandbox's decision); what ``I`` holds for
    the expected sides is moved out of the probe when it is a literal table
    (:mod:`rllm_envs.swe.tables`), and noted when it is not.
    """
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        probe.negated += 1
        try:
            return _statements(test.operand, probe, at)
        finally:
            probe.negated -= 1
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) and not probe.negated % 2:
        # Each part must hold. Not under a negation: `not (a and b)` needs one part false,
        # not each (att35m: split, the reference of `assert not (f("ab") and f(""))` failed
        # its own test); there the parts' values are observed as an `or`'s are.
        return [s for v in test.values for s in _statements(v, probe, at)]
    deviation = _deviation(test, probe, at)
    if deviation is None:
        deviation = _chained_order(test, probe, at)
    if deviation is not None:
        return deviation
    near = _near(test, probe) if not probe.negated else None
    if near is None and not probe.negated:
        near = _order(test, probe)
    if near is not None:
        return _observe([near], at)
    comprehension = _aggregate(test)
    if comprehension is None:
        probe.asserted = test
        try:
            checks = _observed(test, probe)
        finally:
            probe.asserted = None
        if (
            len(checks) == 1
            and checks[0].value is test
            and checks[0].approx is None
            and checks[0].host is None
            and not checks[0].unordered
            and not isinstance(test, (ast.Compare, ast.BoolOp, ast.UnaryOp))
        ):
            # ``assert jitter()``: the test asks only for truthiness; the host decides it from
            # the observed value (a clock or random value never repeats the reference's).
            checks[0].host = ("falsy" if probe.negated % 2 else "truthy", "")
        _mark_operated(test, checks)
        return _observe(checks, at)
    if _dotted(test.func).endswith("all") == bool(probe.negated % 2):  # type: ignore[attr-defined]
        # `any(...)` or `not all(...)`: one element deciding is enough, which checks of each
        # element cannot say (att33n: the reference failed its own `any(v > 5 for v in ..)`).
        probe.note(NOTE_ANY)
    body = _statements(comprehension.elt, probe, at)
    for generator in reversed(comprehension.generators):
        for condition in reversed(generator.ifs):
            body = [ast.copy_location(ast.If(condition, body, []), at)]
        loop: ast.stmt
        if generator.is_async:
            loop = ast.AsyncFor(generator.target, generator.iter, body, [])
        else:
            loop = ast.For(generator.target, generator.iter, body, [])
        body = [ast.copy_location(loop, at)]
    return body


_ORDER_OPS = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.NotEq: "!="}


def _order(test: ast.expr, probe: _Probe) -> _Check | None:
    """``stamp() > 0``, ``0 <= ratio()``: one computed number ordered against a number literal.

    The value is observed and the host checks the test's own comparison on it (an
    ``"order"`` predicate), not equality with the reference's value (a clock, a random draw
    or an id never repeats it). ``None``: not this shape.
    """
    import json

    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return None
    op = _ORDER_OPS.get(type(test.ops[0]))
    if op is None:
        return None
    left, right = test.left, test.comparators[0]
    flipped = {">": "<", ">=": "<=", "<": ">", "<=": ">=", "!=": "!="}
    for computed, other, how in ((left, right, op), (right, left, flipped[op])):
        value = _number(other) if isinstance(other, (ast.Constant, ast.UnaryOp)) else None
        if value is None or _expected(computed):
            continue
        if not _expected(other):
            continue
        checks = _value(computed, probe)
        if len(checks) != 1 or checks[0].value is not computed or checks[0].approx is not None:
            return None
        _drop(other, [computed])
        return _Check(computed, host=("order", json.dumps([how, value])))
    return None


#: The name a chained order check binds its computed value to (evaluated once, as Python does).
_CHAINED = "__rllm_chained__"


def _chained_order(test: ast.expr, probe: _Probe, at: ast.AST) -> list[ast.stmt] | None:
    """``0 <= jitter() <= 1``: a computed number between two number literals, both on the host.

    The value is bound once and observed twice, each time with one bound's ``"order"``
    predicate (att34g: it was compared with the reference's value, which a clock or a random
    draw never repeats: the reference scored 0 against itself). ``None``: not this shape.
    """
    import json

    if probe.negated or not (isinstance(test, ast.Compare) and len(test.ops) == 2):
        return None
    low, value, high = test.left, *test.comparators
    ops = [_ORDER_OPS.get(type(o)) for o in test.ops]
    bounds = [
        _number(b) if isinstance(b, (ast.Constant, ast.UnaryOp)) else None for b in (low, high)
    ]
    if None in ops or "!=" in ops or None in bounds or _expected(value):
        return None
    if not (_expected(low) and _expected(high)):
        return None
    checks = _value(value, probe)
    if len(checks) != 1 or checks[0].value is not value or checks[0].approx is not None:
        return None
    _drop(low, [value])
    _drop(high, [value])
    flipped = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
    bound = ast.copy_location(ast.Assign([ast.Name(_CHAINED, ast.Store())], value), at)
    observed = [
        _Check(ast.Name(_CHAINED, ast.Load()), host=("order", json.dumps([how, b])))
        for how, b in ((flipped[str(ops[0])], bounds[0]), (str(ops[1]), bounds[1]))
    ]
    return [bound, *_observe(observed, at)]


def _near(test: ast.expr, probe: _Probe) -> _Check | None:
    """A tolerance check of one computed number against a number literal, run on the host.

    ``x == pytest.approx(12, abs=5)``, ``abs(x - 12) <= 5``, ``math.isclose(x, 12,
    rel_tol=0.4)``: ``x`` is observed and the host checks it against the test's own literal
    and tolerance (a ``"near"`` predicate), not against the reference's value (which may sit
    anywhere in the band: the unchanged code could match it while an honest fix the test
    accepts would not). ``None``: not this shape (or a computed side needs its own rewrite).
    """
    import json

    found: tuple[ast.expr, Any, list[Any]] | None = None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], ast.Eq):
            for computed, other in ((left, right), (right, left)):
                tolerance = _approx(other)
                args = other.args if tolerance else []  # type: ignore[attr-defined]
                value: Any = _number(args[0]) if args else None
                if value is None and args:
                    value = _literal_numbers(args[0])  # `approx([1.0, 2.0], abs=0.02)`
                if tolerance is not None and value is not None and not _expected(computed):
                    if len(args) == 1:
                        found = (computed, value, [*tolerance, "approx"])
        split = _below_bound(test)
        bound = _number(split[1]) if split is not None else None
        if split is not None and bound is not None:
            difference = split[0]
            if (
                isinstance(difference, ast.Call)
                and _dotted(difference.func) in ("abs", "math.fabs", "fabs")
                and len(difference.args) == 1
                and not difference.keywords
                and isinstance(difference.args[0], ast.BinOp)
                and isinstance(difference.args[0].op, ast.Sub)
            ):
                a, b = difference.args[0].left, difference.args[0].right
                strict = isinstance(test.ops[0], (ast.Lt, ast.Gt))
                for computed, other in ((a, b), (b, a)):
                    value = _number(other)
                    if value is not None and not _expected(computed):
                        found = (computed, value, [0.0, bound, "lt" if strict else "le"])
    elif (
        isinstance(test, ast.Call)
        and _dotted(test.func) in ("math.isclose", "isclose")
        and len(test.args) == 2
    ):
        for computed, other in ((test.args[0], test.args[1]), (test.args[1], test.args[0])):
            value = _number(other)
            if value is not None and not _expected(computed):
                rel = _number(_keyword(test, "rel_tol"))
                tol = _number(_keyword(test, "abs_tol"))
                found = (computed, value, [1e-9 if rel is None else rel, tol or 0.0, "isclose"])
    if found is None:
        return None
    computed, value, rule = found
    checks = _value(computed, probe)
    finite = all(map(_finite, value)) if isinstance(value, list) else _finite(value)
    if len(checks) != 1 or checks[0].value is not computed or not finite:
        return None
    for node in ast.walk(test):
        if isinstance(node, ast.expr) and node is not computed and _expected(node):
            _drop(node, [computed])
    return _Check(computed, host=("near", json.dumps([value, *rule])))


def _near_zero(test: ast.expr) -> tuple[ast.expr, ast.expr] | None:
    """``math.isclose(total, 0, abs_tol=tol)`` (either order): ``(total, tol)``; else ``None``."""
    if not (
        isinstance(test, ast.Call)
        and _dotted(test.func) in ("math.isclose", "isclose")
        and len(test.args) == 2
        and all(k.arg in ("abs_tol", "rel_tol") for k in test.keywords)
    ):
        return None
    bound = _keyword(test, "abs_tol")
    relative = _keyword(test, "rel_tol")
    if bound is None:
        return None
    if relative is not None:
        rel = _number(relative)
        if rel is None or not 0 <= rel < 1:
            return None
    zero = [
        isinstance(a, ast.Constant) and a.value == 0 and type(a.value) in (int, float)
        for a in test.args
    ]
    if zero.count(True) != 1:
        return None
    return test.args[1 if zero[0] else 0], bound


def _deviation(test: ast.expr, probe: _Probe, at: ast.AST) -> list[ast.stmt] | None:
    """``max(abs(a - b) for a, b in zip(X, [..])) < tol`` as ``for a in X: observe(a)``.

    Each element of ``X`` is observed with the absolute tolerance ``tol`` (``sum(...)``:
    ``tol`` shared among the literal's elements) and compared on the host with the
    reference's; the expected list and the differences are not in the probe (computed in the
    sandbox, they were decided by the ``__sub__`` of whatever ``X`` held, handed the
    literal). ``zip(LIT, X)`` and ``abs(b - a)`` too, and ``math.isclose(total, 0,
    abs_tol=tol)`` (``|total| <= tol`` for any ``rel_tol`` below 1). ``None``: not this shape.
    """
    close = _near_zero(test)
    if close is not None:
        total, bound = close
    elif not isinstance(test, ast.Compare) or (split := _below_bound(test)) is None:
        return None
    else:
        total, bound = split
    tolerance = _number(bound)
    if (
        tolerance is None
        or not isinstance(total, ast.Call)
        or _dotted(total.func) not in ("max", "sum")
        or len(total.args) != 1
        or total.keywords
        or not isinstance(total.args[0], (ast.GeneratorExp, ast.ListComp))
    ):
        return None
    comprehension = total.args[0]
    if len(comprehension.generators) != 1:
        return None
    generator = comprehension.generators[0]
    target, source, element = generator.target, generator.iter, comprehension.elt
    if (
        generator.ifs
        or generator.is_async
        or not isinstance(target, ast.Tuple)
        or len(target.elts) != 2
        or not all(isinstance(t, ast.Name) for t in target.elts)
        or not isinstance(source, ast.Call)
        or _dotted(source.func) != "zip"
        or len(source.args) != 2
        or source.keywords
        or not isinstance(element, ast.Call)
        or _dotted(element.func) not in ("abs", "math.fabs", "fabs")
        or len(element.args) != 1
        or element.keywords
        or not isinstance(element.args[0], ast.BinOp)
        or not isinstance(element.args[0].op, ast.Sub)
    ):
        return None
    names = [t.id for t in target.elts]  # type: ignore[attr-defined]
    sides = [element.args[0].left, element.args[0].right]
    if (
        not all(isinstance(o, ast.Name) for o in sides)
        or sorted(
            o.id  # type: ignore[attr-defined]
            for o in sides
        )
        != sorted(names)
        or names[0] == names[1]
    ):
        return None
    # A literal list, or a table's (``want = [..]`` bound once: its reads are the target's).
    operand = {o.id: o for o in sides}  # type: ignore[attr-defined]
    literal = [
        _expected(a) or _expected(operand[n]) for a, n in zip(source.args, names, strict=True)
    ]
    if literal.count(True) != 1:
        return None
    want, got = (0, 1) if literal[0] else (1, 0)
    expected = source.args[want]
    if _dotted(total.func) == "sum":
        if not isinstance(expected, (ast.List, ast.Tuple)) or not expected.elts:
            return None
        tolerance = tolerance / len(expected.elts)
    _drop(expected, [source.args[got]])
    _drop(operand[names[want]])
    _drop(bound, expected=False)
    values = _literal_numbers(expected)
    if values is not None and not probe.negated:
        # The literal list stays on the host: each element within the tolerance of its own
        # literal (att33n: against the reference's element, a band twice as wide around
        # another centre paid a wrong fix and refused a right one). The elements zip pairs.
        import json

        strict = close is None and isinstance(test.ops[0], (ast.Lt, ast.Gt))  # type: ignore[attr-defined]
        rule = json.dumps([values, 0.0, tolerance, "lt" if strict else "le"])
        pairs = ast.Call(
            ast.Name("zip", ast.Load()),
            [source.args[got], ast.List([ast.Constant(0) for _ in values], ast.Load())],
            [],
        )
        pair = ast.Tuple([ast.Name(n, ast.Store()) for n in (names[got], names[want])], ast.Store())
        elements = ast.ListComp(
            ast.Name(names[got], ast.Load()), [ast.comprehension(pair, pairs, [], 0)]
        )
        return _observe([_Check(elements, host=("near", rule))], at)
    body = _observe([_Check(ast.Name(names[got], ast.Load()), (0.0, tolerance))], at)
    loop = ast.For(ast.Name(names[got], ast.Store()), source.args[got], body, [])
    return [ast.copy_location(loop, at)]


#: Comparisons decided by the observed values themselves (their state is compared on the host).
_EQUALITY_OPS = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
#: unittest's two-argument assertions that compare their arguments for equality or identity.
_UNITTEST_EQUALITY = frozenset(
    {
        *("assertEqual", "assertEquals", "assertNotEqual", "assertIs", "assertIsNot"),
        *("assertDictEqual", "assertListEqual", "assertTupleEqual", "assertSetEqual"),
        *("assertSequenceEqual", "assertMultiLineEqual", "assertIsInstance"),
        "assertNotIsInstance",
    }
)


def _mark_operated(test: ast.expr, checks: list[_Check]) -> None:
    """Mark the checks whose value an operator of ``test`` acts on (``check.op``).

    A value's state stands for what the test checks only when the test compares it for
    equality: its truth, ``in``, an order, arithmetic or a method (``Version("1.9") <
    "1.10"``, ``not Stack()``, ``Duration(90) - 30 == 60``) are decided by the methods of its
    class, which a submission may change while the state stays the reference's (att34d: the
    unchanged code paid 1.0 ``host`` on 14 such shapes). The sandbox then records whether a
    class of the repository is involved (:func:`rllm_envs.swe.executor.observe`).
    """
    parents = {id(c): node for node in ast.walk(test) for c in ast.iter_child_nodes(node)}
    for check in checks:
        parent = parents.get(id(check.value))
        if check.op is not None or parent is None:
            continue  # the test itself (its truth: see _observe) or a node the probe made
        equality = isinstance(parent, ast.Compare) and all(
            isinstance(o, _EQUALITY_OPS) for o in parent.ops
        )
        if not equality:
            check.op = "operated"


def _observe(values: list[_Check], at: ast.AST) -> list[ast.stmt]:
    calls: list[ast.stmt] = []
    for check in values:
        keywords = []
        op = check.op
        if op is None and check.host is not None and check.host[0] in ("truthy", "falsy"):
            op = "truth"
        elif op is None and (check.host is not None or check.approx or check.unordered):
            op = "operated"  # a tolerance, an order, a membership or a text check
        if op is not None:
            keywords.append(ast.keyword("op", ast.Constant(op)))
        if check.host is not None:
            keywords.append(ast.keyword("host", ast.Constant(_predicate(check.host))))
        if check.approx is not None:
            tolerance = ast.Tuple([ast.Constant(t) for t in check.approx], ast.Load())
            keywords.append(ast.keyword("approx", tolerance))
        if check.unordered:
            keywords.append(ast.keyword("unordered", ast.Constant(True)))
        call = ast.Expr(ast.Call(ast.Name(OBSERVE, ast.Load()), [check.value], keywords))
        calls.append(ast.copy_location(call, at))
    if not calls:
        return [ast.copy_location(ast.Pass(), at)]
    # The block a raises check is made of too (:func:`_block`): which calls must raise is
    # not in the probe.
    item = _block(("value", ""))
    item.rllm_value = True  # type: ignore[attr-defined]
    block = ast.copy_location(ast.With([ast.withitem(item, None)], calls), at)
    return [ast.fix_missing_locations(block)]


#: The names of the helpers that check a raise or a warning (``self.assertRaises``).
_RAISES_HELPERS = frozenset(
    {"assertRaises", "assertRaisesRegex", "assertWarns", "assertWarnsRegex"}
)


def _module_callables(tree: ast.Module) -> set[str]:
    """Names ``tree`` makes callable itself.

    Its functions, classes and methods (at any depth), and names assigned a lambda or a
    ``partial``.
    """
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            value = node.value
            made = isinstance(value, ast.Lambda) or (
                isinstance(value, ast.Call) and _dotted(value.func).endswith("partial")
            )
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if made:
                found.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return found


def _raise_checked_in_the_sandbox(tree: ast.Module) -> bool:
    """Whether a raise (or warning) is checked where the sandbox decides it.

    The rewrite leaves these shapes to the sandbox's process, the class readable there: a
    patch raising the issue's exception at exactly the calls such a check makes, and
    keeping the bug, was paid 1.0 ``host`` (att37c, att37d: 32/32 records). Noted shapes:
    ``try`` with a handler of a named class inside any function (``try: f(x); assert False
    / except E: pass``, a flag, ``except E as e: print(e)``, ``except*``, a helper
    ``check_raises(f, x)``), unless the handler only skips the test;
    ``contextlib.suppress``; ``warnings.catch_warnings``; a context manager class of the
    module (its ``__exit__``); ``pytest`` used as a value (``pt = pytest``,
    ``getattr(pytest, "raises")``) or reached through ``sys.modules``; an ``assertRaises``
    / ``assertWarns`` of anything but ``self`` or a dotted name.
    """
    modules = {"pytest"}
    imported: set[str] = set()  # names an import binds, from outside the standard library
    stdlib = set(getattr(sys, "stdlib_module_names", ()))
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules.update(
                a.asname for a in node.names if a.name == "pytest" and a.asname is not None
            )
            source = node.module if isinstance(node, ast.ImportFrom) else None
            for a in node.names:
                root = (source or a.name).split(".")[0]
                if root not in stdlib and root not in ("pytest", "_pytest") and a.name != "*":
                    imported.add(a.asname or a.name.split(".")[0])
    attribute_bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for function in functions:
        for node in ast.walk(function):
            if isinstance(node, (ast.Try, ast.TryStar)) and any(
                not _skips(h.body) for h in node.handlers
            ):
                return True  # a bare `except:` too (att37f F3)
            if isinstance(node, ast.withitem) and isinstance(node.context_expr, ast.Call):
                name = _dotted(node.context_expr.func).rsplit(".", 1)[-1]
                if name in ("suppress", "catch_warnings"):
                    return True
            if isinstance(node, ast.Call) and _dotted(node.func).endswith("catch_warnings"):
                return True
            if isinstance(node, ast.Call) and _repository_raises_helper(node, imported):
                return True
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(
            isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) and b.name == "__exit__"
            for b in node.body
        ):
            return True
        if (
            isinstance(node, ast.Name)
            and node.id in modules
            and isinstance(node.ctx, ast.Load)
            and id(node) not in attribute_bases
        ):
            return True
        if isinstance(node, ast.Attribute) and (
            (node.attr == "modules" and _dotted(node.value) == "sys")
            or (node.attr in _RAISES_HELPERS and not _dotted(node.value))
        ):
            return True
    return False


#: Words of a helper that checks a raise or a warning (`raises`, `check_raises`,
#: `external_error_raised`, `assert_warns`, `expect_error`, `throws`).
_RAISE_WORDS = re.compile(r"rais|warn|throw|error|except", re.IGNORECASE)


#: How the names of exception and warning classes end (``ParseError``, ``ValueFailure``).
_EXCEPTION_ENDINGS = ("Error", "Exception", "Warning", "Failure", "Fault", "Exit", "Interrupt")


def _names_exception(node: ast.expr) -> bool:
    """Whether ``node`` names an exception or warning class (``ValueError``, ``exc.Bad``)."""
    last = _dotted(node).rsplit(".", 1)[-1]
    builtin = getattr(builtins, last, None)
    return bool(last) and (
        (isinstance(builtin, type) and issubclass(builtin, BaseException))
        or last.endswith(_EXCEPTION_ENDINGS)
    )


def _repository_raises_helper(call: ast.Call, imported: set[str]) -> bool:
    """Whether ``call`` is a raise or warning check imported from the repository.

    ``from acme._testing import raises`` then ``with raises(E): f(x)``: the helper is the
    repository's, which a submission may edit, and it stays in the probe, so it tells the
    call that must raise (att38a F1: a patch keeping the bug and making the helper pass
    was paid 1.0 ``host`` on 5/5 records of each of three shapes). Known by its name's
    words (``check_raises``), or by an exception class among its arguments whatever its
    name (att38b F1: ``raises as expect``, ``fails(E)``, ``tm.check(E, f, -3)``: 15/15).
    """
    name = _dotted(call.func)
    if not name or name.split(".")[0] not in imported:
        return False
    arguments = [*call.args, *(k.value for k in call.keywords)]
    return bool(_RAISE_WORDS.search(name.rsplit(".", 1)[-1])) or any(
        _names_exception(a) for a in arguments
    )


def _skips(body: list[ast.stmt]) -> bool:
    """Whether ``body`` only skips the test (``pytest.skip(..)``, ``self.skipTest(..)``)."""
    return (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Call)
        and _dotted(body[0].value.func).rsplit(".", 1)[-1] in ("skip", "skipTest")
    )


def _fails(body: list[ast.stmt], raises_names: set[str]) -> bool:
    """Whether ``body`` only fails the test (``raise ...`` / ``pytest.fail(...)``)."""
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Raise):
        return statement.exc is not None
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and _dotted(statement.value.func) in _FAILS
    )


class _Probe(ast.NodeTransformer):
    def __init__(self) -> None:
        self.notes: list[str] = []
        self.raises_names = {"pytest.raises"}
        self.warns_names = {"pytest.warns", "pytest.deprecated_call"}
        self.fails = set(_FAILS)
        #: The functions being rewritten, innermost last.
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.in_test = 0
        self.helpers: set[str] = set()
        #: Names the module itself makes callable (:func:`_module_callables`).
        self.module_callables: set[str] = set()
        self.predicates: tuple[tuple[str, str], ...] = ()
        self.blocks: tuple[tuple[str, str], ...] = ()
        self.owners: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
        #: How many ``not`` the check being rewritten is under (a host tolerance check,
        #: :func:`_near`, is only made for a check that must hold).
        self.negated = 0
        #: The expression the check being rewritten asserts (its truth is required, under
        #: ``negated`` ``not``): host checks of plain texts are made only for it.
        self.asserted: ast.expr | None = None

    def note(self, why: str) -> None:
        if why not in self.notes:
            self.notes.append(why)

    def visit_Import(self, node: ast.Import) -> ast.AST:
        for alias in node.names:
            if alias.name == "pytest" and alias.asname:
                # ``import pytest as pt``: ``pt.raises`` is rewritten as ``pytest.raises`` is
                # (att37c: left in the probe, it was decided in the sandbox, trust ``host``).
                self.raises_names.add(f"{alias.asname}.raises")
                self.warns_names.update(
                    f"{alias.asname}.{name}" for name in ("warns", "deprecated_call")
                )
                self.fails.add(f"{alias.asname}.fail")
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self._noted_reference(node)
        self.generic_visit(node)
        return node

    def visit_Name(self, node: ast.Name) -> ast.AST:
        self._noted_reference(node)
        return node

    def _noted_reference(self, node: ast.Attribute | ast.Name) -> None:
        """Note a raises / warns helper used as a value (``raises = pytest.raises``).

        Calls of it are rewritten (or noted) where they are made; a name bound to it is not
        known to the rewrite, so its block would stay decided in the sandbox (att37c: paid
        1.0 ``host`` keeping the bug).
        """
        if not isinstance(node.ctx, ast.Load):
            return
        name = _dotted(node)
        last = name.rsplit(".", 1)[-1]
        if name in self.raises_names or name in self.warns_names or last in _RAISES_HELPERS:
            self.note(NOTE_RAISES_CALL)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        if node.module == "pytest":
            for alias in node.names:
                if alias.name == "raises":
                    self.raises_names.add(alias.asname or "raises")
                elif alias.name in ("warns", "deprecated_call"):
                    self.warns_names.add(alias.asname or alias.name)
        return node

    def _check_shape(self, block: ast.With, kind: str) -> None:
        """Note a raises or warns block that is not one observed call, as value checks are.

        Setup statements, a nested block, statements after the call: only a raises or warns
        block holds them (att37f F1: 10/10 paid keeping the bug on each shape). A value
        check inside a raises block (``with pytest.raises(AssertionError): assert ok(x)``)
        must fail, not hold: noted too (att38a F7: its truth was checked as required, the
        unchanged code paid 1.0 and the reference 0).
        """
        body = block.body
        function = self.functions[-1].name if self.functions else ""
        if not function.startswith("test"):
            # A raise check in a helper (`def _assert_rejected(v): with raises(E): f(v)`):
            # the helper's frame, whatever its name, tells a raise check from a value check
            # made in the test itself (att38d F1: 6/6 paid on neutral helper names).
            self.note(NOTE_RAISES_BODY)
        if (
            kind == "warns"
            and len(body) == 1
            and isinstance(body[0], ast.With)
            and len(body[0].items) == 1
            and getattr(body[0].items[0].context_expr, "rllm_value", False)
        ):
            # `with pytest.warns(W): assert f() == 1`: the value check's observations are
            # the block's own (one block, as any check).
            body = block.body = body[0].body
        first = body[0] if len(body) == 1 else None
        one_call = isinstance(first, ast.Expr) and _is_observation(first.value)
        if one_call and self._through_module_code(first.value.args[0]):  # type: ignore[union-attr]
            self.note(NOTE_RAISES_BODY)
        # Only a body that raises by itself (`raise ValueError`) acts on nothing of the code;
        # any other statement (`c += -10`, `del r["k"]`, `o.size = -1`) is told apart (att37h
        # F2: 10/10 paid raising at such statements).
        if not one_call and not all(isinstance(s, ast.Raise) for s in body):
            self.note(NOTE_RAISES_BODY)

    def _through_module_code(self, call: ast.expr) -> bool:
        """Whether a raises or warns block's call goes through the test module's own code.

        A lambda (named or not), a function or method the module defines (``def bad():
        f(-3)``, ``self.call_bad()``), a ``partial``, any call's result called: its frame, or
        its line, sits between the test and the code and tells the call must raise (att38b
        F3: 35/35 paid on 7 such shapes).
        """
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        if isinstance(func, (ast.Lambda, ast.Call)):
            return True
        if isinstance(func, ast.Name):
            return func.id in self.module_callables
        # `self.call_bad()`, `Call(-4).go()`, `obj.m()`: a method of the module's own
        # classes, whatever the receiver (att38d F2: 6/6 paid on `Call(-4).go()`).
        return isinstance(func, ast.Attribute) and func.attr in self.module_callables

    def _read_after(self, target: ast.expr | None) -> bool:
        """Whether what ``target`` binds may be read (``as info`` and ``info`` read later).

        A target other than plain names (``as self.info``), or one outside a function, is
        taken as read.
        """
        if target is None:
            return False
        if not all(
            isinstance(n, (ast.Name, ast.Tuple, ast.List))
            for n in ast.walk(target)
            if not isinstance(n, ast.expr_context)
        ):
            return True
        names = {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        if not self.functions:
            return True
        return any(
            isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load)
            for n in ast.walk(self.functions[-1])
        )

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        self.functions.append(node)
        try:
            return self._function_body(node)
        finally:
            self.functions.pop()

    def _function_body(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.AST:
        test = node.name.startswith("test")
        outer, self.in_test = self.in_test, (1 if test else 0)
        owner = _OWNER.set(f"{_OWNER.get()}.{node.name}".lstrip("."))
        try:
            self.generic_visit(node)
        finally:
            _OWNER.reset(owner)
        self.in_test = outer
        return node

    def visit_ClassDef(self, node: ast.ClassDef) -> ast.AST:
        owner = _OWNER.set(f"{_OWNER.get()}.{node.name}".lstrip("."))
        try:
            self.generic_visit(node)
        finally:
            _OWNER.reset(owner)
        return node

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._function(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> ast.AST:
        return self._function(node)

    def visit_Lambda(self, node: ast.Lambda) -> ast.AST:
        outer, self.in_test = self.in_test, 0
        self.generic_visit(node)
        self.in_test = outer
        return node

    def visit_Assert(self, node: ast.Assert) -> Any:
        if _constant(node.test):
            # A fail statement (``else: assert False, "should raise"``): it holds no value
            # of the code, so it stays, and a test that reaches it ends failed, unlike the
            # reference's. Its message may state the expected value: dropped.
            return ast.copy_location(ast.Assert(node.test, None), node)
        self.generic_visit(node)
        return _statements(node.test, self, node)

    def visit_If(self, node: ast.If) -> Any:
        # ``if bad: raise ...`` in a test is ``assert not bad``.
        if self.in_test and not node.orelse and _fails(node.body, self.raises_names):
            test = self.visit(node.test)
            self.negated += 1  # the check is that ``test`` does not hold
            try:
                return _statements(test, self, node)
            finally:
                self.negated -= 1
        self.generic_visit(node)
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        self.generic_visit(node)
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if self.in_test or (
            target is not None
            and _dotted(target).rsplit(".", 1)[-1]
            in ("AssertionError", "Failed", "failureException")
        ):
            self.note(NOTE_RAISE)
        return node

    def visit_With(self, node: ast.With) -> ast.AST:
        raises: list[tuple[str, ast.expr | None, ast.expr | None, bool] | None] = []
        for item in node.items:
            call = item.context_expr
            name = _dotted(call.func) if isinstance(call, ast.Call) else ""
            if not isinstance(call, ast.Call):
                raises.append(None)
            elif name in self.raises_names or name.endswith(".assertRaises"):
                match = [k.value for k in call.keywords if k.arg == "match"]
                if name.endswith(".assertRaises"):
                    match = []
                if match and isinstance(match[0], ast.Constant):
                    _drop(match[0], node.body)
                elif match:
                    self.note(NOTE_PATTERN)  # `match=MSG`: MSG read through sys.modules (att38a F4)
                named = [*call.args[:1]]
                named += [k.value for k in call.keywords if k.arg == "expected_exception"]
                raises.append(
                    ("raises", named[0] if named else None, match[0] if match else None, False)
                )
            elif name.endswith(".assertRaisesRegex"):
                # positional or `expected_regex=` (att38b: the keyword was compared whole)
                pattern = call.args[1:2] or [
                    k.value for k in call.keywords if k.arg == "expected_regex"
                ]
                if pattern and isinstance(pattern[0], ast.Constant):
                    _drop(pattern[0], node.body)
                elif pattern:
                    self.note(NOTE_PATTERN)
                raises.append(
                    (
                        "raises",
                        call.args[0] if call.args else None,
                        pattern[0] if pattern else None,
                        True,
                    )
                )
            elif name in self.warns_names or name.endswith((".assertWarns", ".assertWarnsRegex")):
                # What warned is recorded (the classes, and the messages where the test
                # matched one); the expected class and pattern are not in the probe, and the
                # block is every check's (att37d F3: a `warns=True` block told a patch where
                # to warn, 4/4 shapes paid 1.0 keeping the bug).
                if name.endswith(".assertWarnsRegex"):
                    pattern = call.args[1:2] or [
                        k.value for k in call.keywords if k.arg == "expected_regex"
                    ]
                else:
                    pattern = [k.value for k in call.keywords if k.arg == "match"]
                if pattern and isinstance(pattern[0], ast.Constant):
                    _drop(pattern[0], node.body)
                elif pattern:
                    self.note(NOTE_PATTERN)
                regex = name.endswith(".assertWarnsRegex")
                raises.append(("warns", None, pattern[0] if pattern else None, regex))
            else:
                raises.append(None)
        for item, check in zip(node.items, raises, strict=True):
            if check is not None:  # replaced below, not a raises call left in the probe
                item.context_expr = ast.Constant(None)
        outer, self.in_test = self.in_test, 0  # a raise in a raises block is what it expects
        self.generic_visit(node)
        self.in_test = outer
        # ``with a, pytest.raises(E), b: body`` is ``with a: with pytest.raises(E): with b:
        # body``: each raises item becomes its own block, the items around it kept in order.
        body: list[ast.stmt] = node.body
        kept: list[ast.withitem] = []
        for item, check in reversed(list(zip(node.items, raises, strict=True))):
            if check is None:
                kept.insert(0, item)
                continue
            if kept:
                body = [ast.copy_location(ast.With(kept, body), node)]
                kept = []
            folded = getattr(node, "rllm_checks", ()) if check[0] == "raises" else ()
            for _, literal in folded:
                _drop(literal, body)  # an expected side, out of the probe (`_fold_caught_reads`)
            block = _raises_block(*check, body, folded)
            self._check_shape(block, check[0])
            if self._read_after(item.optional_vars):
                # `as info` then `info.value.code`: kept, so a raises block is told apart
                # (att37d F2, att38a F2: paid 1.0 `host` keeping the bug): noted. The message
                # checks `_fold_caught_reads` moves to the host left no read; an unread name
                # goes.
                block.items[0].optional_vars = item.optional_vars
                self.note(NOTE_RAISES_AS)
            body = [ast.copy_location(block, node)]
        if kept:
            return ast.copy_location(ast.With(kept, body), node) if body is not node.body else node
        ast.fix_missing_locations(body[0])
        return body[0]

    def visit_Expr(self, node: ast.Expr) -> Any:
        call = node.value
        block = self._raises_call(call)
        if block is not None:
            return ast.copy_location(block, node)
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            method = call.func.attr
            count = 1 if method in _UNITTEST_ONE else 2 if method in _UNITTEST_TWO else 0
            if method == "fail" and _dotted(call.func.value) == "self":
                # ``self.fail(msg)``: kept as ``assert False`` (a submission can rebind
                # ``TestCase.fail``, not an assert statement; the message is dropped).
                return ast.copy_location(ast.Assert(ast.Constant(False), None), node)
            if count and _dotted(call.func.value) == "self":
                raw = _checked_arguments(call, method, count)
                if raw is None:
                    # Arguments the probe cannot place (``**kwargs``, an unknown keyword):
                    # the assertion stays, decided in the sandbox.
                    self.note(NOTE_HELPER)
                    self.generic_visit(node)
                    return node
                if len(raw) == count and all(_constant(a) for a in raw):
                    kept = _constant_assert(method, raw)
                    if kept is None:
                        self.note(NOTE_HELPER)
                        return node
                    return ast.copy_location(kept, node)
                args = [self.visit(a) for a in raw]
                if count == 1 or method in ("assertIn", "assertNotIn"):
                    # What it asserts, checked as an ``assert`` of it is (att33b): a host
                    # check of ``assertFalse(x)`` must know that ``x`` must not hold, and
                    # ``assertIn("#3", text)`` is ``"#3" in text`` (a substring on the host).
                    test = _unittest_test(method, args)
                    return [node] if test is None else _statements(test, self, node)
                checks = _pick(args, self)
                if method in ("assertAlmostEqual", "assertNotAlmostEqual"):
                    delta = _number(_keyword(call, "delta"))
                    places = _number(_keyword(call, "places"))
                    tolerance = delta if delta is not None else 0.5 * 10 ** -(places or 7)
                    checks = [_Check(c.value, (0.0, tolerance)) for c in checks]
                if method in ("assertIs", "assertIsNot") and len(args) == 2:
                    compare = ast.Compare(args[0], [ast.Is()], [args[1]])
                    checks += _identity(compare, self)
                if method in _UNITTEST_EQUALITY:
                    _mark_operated(ast.Compare(args[0], [ast.Eq()], args[1:2]), checks)
                else:
                    for check in checks:  # an order, a count, a regex: the value's methods
                        check.op = check.op or "operated"
                return _observe(checks, node)
        if (
            self.in_test
            and isinstance(call, ast.Call)
            and _dotted(call.func) not in self.helpers
            and _decided_by_call(call, self)
        ):
            # ``check_slug(slugify(x), "hello-world")``: a helper from elsewhere (the
            # repository, which the submission may edit) checks a value against a literal.
            self.note(NOTE_CALL_CHECK)
        self.generic_visit(node)
        return node

    def _raises_call(self, call: ast.expr) -> ast.With | None:
        """The ``with`` block of a raises call made as a statement (``None``: not one).

        ``self.assertRaises(E, f, *a)`` / ``pytest.raises(E, f, *a)`` observe what ``f(*a)``
        raises, as :meth:`visit_With` does (``assertRaisesRegex(E, r, f, *a)`` also records
        the message).
        """
        if not isinstance(call, ast.Call) or any(isinstance(a, ast.Starred) for a in call.args[:3]):
            return None
        name = _dotted(call.func)
        if name in self.raises_names or name == "self.assertRaises":
            skip, message = 1, False
        elif name == "self.assertRaisesRegex":
            skip, message = 2, True
        else:
            return None
        if len(call.args) <= skip or (name in self.raises_names and call.keywords):
            return None
        target: ast.expr = ast.Call(call.args[skip], call.args[skip + 1 :], call.keywords)
        function = call.args[skip]
        if (
            isinstance(function, ast.Lambda)
            and not call.args[skip + 1 :]
            and not call.keywords
            and not any((function.args.posonlyargs, function.args.args, function.args.kwonlyargs))
            and function.args.vararg is None
            and function.args.kwarg is None
        ):
            # `assertRaises(E, lambda: f(x))`: the lambda's body is the call (att37f F2: a
            # `<lambda>` frame on the test's line told the call must raise).
            target = function.body
        elif isinstance(function, ast.Lambda):
            # `lambda *a: f(*a)` given `x`, `lambda a=(x,): f(*a)`: its frame still tells
            # the call (att38a F5: 5/5 paid on each).
            self.note(NOTE_RAISES_BODY)
        outer, self.in_test = self.in_test, 0  # a raise here is what it expects
        inner = self.visit(ast.Expr(target))
        self.in_test = outer
        body = inner if isinstance(inner, list) else [inner]
        pattern = call.args[1] if message else None
        if isinstance(pattern, ast.Constant):
            _drop(pattern, body)
        elif pattern is not None:
            self.note(NOTE_PATTERN)
        block = _raises_block("raises", call.args[0], pattern, message, body)
        self._check_shape(block, "raises")
        return block

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        if (
            name in self.raises_names
            or name in self.warns_names
            or last
            in (
                "assertRaises",
                "assertRaisesRegex",
                "assertWarns",
                "assertWarnsRegex",
            )
        ):
            self.note(NOTE_RAISES_CALL)
        elif name in self.fails:
            self.note(NOTE_RAISE)
        elif name == "pytest.mark.parametrize" or last == "parametrize":
            pass  # its table: see rllm_envs.swe.tables
        elif last.startswith(_DECIDERS) and last != OBSERVE:
            # What decides a test outside an observation (only reached for what the
            # rewrites above left in place).
            self.note(NOTE_HELPER)
        return node


@dataclass(frozen=True)
class Probe:
    """The probe of a test module.

    Attributes:
        text: The probe's source.
        notes: Why it is incomplete (``()``: complete).
        labels: Per parametrized test whose table lost its expected values (``name`` or
            ``Class::name``), the probe's id suffix of each original one
            (``"[Hello World-hello-world]" -> "[0]"``): the host asks the sandbox for those.
        predicates: The checks of plain texts the host runs itself (``(kind, literal)``,
            :data:`PREDICATES`), by the index the probe's ``observe(..., host=k)`` names.
        blocks: What each check's block (``__rllm_observing__(k)``, :func:`_block`) expects:
            ``("raises", rule)`` (a raises block: the classes named and how its message is
            checked) or ``("value", "")`` (a value check), by index ``k``.
        owners: The function each entry of ``predicates`` and of ``blocks`` was made in
            (``Class.test_a``): where a module is cut to some of its tests, the host maps the
            cut probe's indices to the whole one's (:func:`index_map`).
        hidden: Per test (``name`` or ``Class::name``; ``""``: checks outside any test),
            the expected values left out that it does not give the code under test: none
            may be readable in the sandbox (:data:`NOTE_ECHO`).
        inputs: The values the probe holds as literals (the sandbox can read them).
        requests: Per test, the fixtures it may request (by argument name).
        fixtures: The module's fixtures, by name (for the modules a ``conftest.py`` serves).
        names: The probe's name of each test function, method and test class
            (:func:`_opaque_test_names`); :meth:`node_id` maps ids with it.
        functions: The module's functions a patch could call for a value
            (:func:`suite_functions`).
    """

    text: str
    notes: tuple[str, ...]
    labels: Mapping[str, Mapping[str, str]]
    predicates: tuple[tuple[str, str], ...] = ()
    hidden: Mapping[str, frozenset[Any]] = field(default_factory=dict)
    inputs: frozenset[Any] = frozenset()
    requests: Mapping[str, frozenset[str]] = field(default_factory=dict)
    fixtures: Mapping[str, Fixture] = field(default_factory=dict)
    blocks: tuple[tuple[str, str], ...] = ()
    owners: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())
    names: Mapping[str, str] = field(default_factory=dict)
    functions: frozenset[str] = frozenset()

    def node_id(self, node: str) -> str:
        """The probe's node id of original node id ``node`` (of this module)."""
        path, sep, rest = node.partition("::")
        name, bracket, label = rest.partition("[")
        known = self.labels.get(name) if sep and bracket else None
        mapped = known.get(bracket + label) if known is not None else None
        if sep:
            name = "::".join(self.names.get(part, part) for part in name.split("::"))
        return node if not sep else f"{path}::{name}{bracket + label if mapped is None else mapped}"


#: Rounds of :func:`probe_module` (each unmarks table elements whose reads were not all
#: dropped); past it nothing moves.
_ROUNDS = 12


def _message_check(
    statement: ast.stmt, name: str, system_exit: bool = False
) -> tuple[str, ast.Constant] | None:
    """The check of a caught exception's message ``statement`` makes, if it is only that.

    ``assert "x" in str(N.value)``, ``assert str(N.value) == "x"``, ``N.match("x")`` (and
    ``assert`` of it), ``self.assertIn("x", str(N.exception))``,
    ``self.assertEqual(str(N.exception), "x")`` (either order), ``assert N.typename ==
    "E"``, and with ``system_exit`` ``assert N.value.code == 2``: ``("in" | "eq" | "search" |
    "typename", the literal)``; else ``None``.
    """

    def message(node: ast.expr) -> bool:  # str(N.value) / str(N.exception)
        return (
            isinstance(node, ast.Call)
            and _dotted(node.func) == "str"
            and len(node.args) == 1
            and not node.keywords
            and _dotted(node.args[0]) in (f"{name}.value", f"{name}.exception")
        )

    def text(node: ast.expr) -> ast.Constant | None:
        return node if isinstance(node, ast.Constant) and type(node.value) is str else None

    def exit_code(code: ast.expr, literal: ast.expr) -> bool:  # N.value.code == 2
        return (
            _dotted(code) in (f"{name}.value.code", f"{name}.exception.code")
            and isinstance(literal, ast.Constant)
            and type(literal.value) in (int, str)
        )

    test: ast.expr | None = None
    if isinstance(statement, ast.Assert) and not any(
        isinstance(n, ast.Name) and n.id == name for n in ast.walk(statement.msg or ast.Pass())
    ):
        # Its message (`, "neg"`: att38a F2) is shown only when the check fails: it goes too.
        test = statement.test
    elif isinstance(statement, ast.Expr):
        test = statement.value
    if test is None:
        return None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, right = test.left, test.comparators[0]
        if isinstance(test.ops[0], ast.In) and text(left) and message(right):
            return "in", left  # type: ignore[return-value]
        if isinstance(test.ops[0], ast.Eq):
            for a, b in ((left, right), (right, left)):
                if message(a) and text(b):
                    return "eq", b  # type: ignore[return-value]
                if _dotted(a) == f"{name}.typename" and text(b):
                    return "typename", b  # type: ignore[return-value]
                if system_exit and exit_code(a, b):
                    # A SystemExit's record is its code, by type (`sys.exit("2")` is not
                    # `sys.exit(2)`: att38d F4, compared as text it paid 5/5).
                    return "code", b  # type: ignore[return-value]
        return None
    if not isinstance(test, ast.Call) or test.keywords:
        return None
    called = _dotted(test.func)
    literal = text(test.args[0]) if len(test.args) == 1 else None
    if called == f"{name}.match" and literal is not None:
        return None if _REPEATS & set(str(literal.value)) else ("search", literal)
    if called == "self.assertIn" and len(test.args) == 2 and text(test.args[0]):
        return ("in", test.args[0]) if message(test.args[1]) else None  # type: ignore[return-value]
    if called == "self.assertEqual" and len(test.args) == 2:
        for a, b in ((test.args[0], test.args[1]), (test.args[1], test.args[0])):
            if message(a) and text(b):
                return "eq", b  # type: ignore[return-value]
            if system_exit and exit_code(a, b):  # `assertEqual(cm.exception.code, 2)`
                return "code", b  # type: ignore[return-value]
    return None


def _fold_caught_reads(tree: ast.Module) -> None:
    """Fold the message checks after a raises block ``as N`` into the block.

    ``with pytest.raises(E) as info: f(-3)`` then ``assert "neg" in str(info.value)``: a
    name only a raises block binds, read by a later line, told a patch which call must raise
    (att37d F2: paid 1.0 ``host`` keeping the bug). Where every later read of ``N`` is such a
    check (:func:`_message_check`), the checks leave the probe and go with the block
    (``rllm_checks``, run by the host on the message it records), and so does ``as N``.
    """
    functions = [
        n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    for function in functions:
        _fold_in(function)


def _raises_as(statement: ast.stmt) -> tuple[str, str] | None:
    """``(kind, N)`` of a raises or warns block ``with pytest.raises(E) as N``, or ``None``.

    ``kind``: ``"raises"``, ``"exit"`` (a raises block of ``SystemExit``) or ``"warns"``.
    """
    if not (
        isinstance(statement, ast.With)
        and len(statement.items) == 1
        and isinstance(statement.items[0].optional_vars, ast.Name)
        and isinstance(statement.items[0].context_expr, ast.Call)
    ):
        return None
    call = statement.items[0].context_expr
    called, name = _dotted(call.func), statement.items[0].optional_vars.id
    if called.endswith(".assertRaises") or called.rsplit(".", 1)[-1] == "raises":
        exits = bool(call.args) and _dotted(call.args[0]) in ("SystemExit", "builtins.SystemExit")
        return ("exit" if exits else "raises"), name
    if called.endswith(".assertWarns") or called.rsplit(".", 1)[-1] in ("warns", "deprecated_call"):
        return "warns", name
    return None


def _warned_at_all(statement: ast.stmt, name: str) -> bool:
    """Whether ``statement`` only asks that a warns block ``as N`` caught something.

    ``assert rec``, ``assert len(rec)``, ``assert len(rec) >= 1``: true of any block that
    passed, so it goes with the block.
    """
    if not isinstance(statement, ast.Assert):
        return False
    test = statement.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        bound = test.comparators[0]
        if not (isinstance(bound, ast.Constant) and type(bound.value) is int):
            return False
        op, least = test.ops[0], bound.value
        if not (
            (isinstance(op, ast.Gt) and least == 0) or (isinstance(op, ast.GtE) and least == 1)
        ):
            return False
        test = test.left
    if isinstance(test, ast.Call) and _dotted(test.func) == "len" and len(test.args) == 1:
        test = test.args[0]
    return isinstance(test, ast.Name) and test.id == name


def _fold_in(function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
    def mentions(node: ast.AST, name: str) -> int:
        return sum(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))

    for holder in ast.walk(function):
        for field_name in ("body", "orelse", "finalbody"):
            statements = getattr(holder, field_name, None)
            if not isinstance(statements, list):
                continue
            names = {f[1] for f in map(_raises_as, statements) if f is not None}
            for name in sorted(names):
                # Each block's reads run to the next block binding the same name (`as e`
                # twice: att38a F2); all of them fold, or none. (Looked up again for each
                # name: folding one removes statements.)
                found = [_raises_as(s) for s in statements]
                blocks = [i for i, f in enumerate(found) if f is not None and f[1] == name]
                ends = [*blocks[1:], len(statements)]
                folds = []
                for at, end in zip(blocks, ends, strict=True):
                    kind = found[at][0]  # type: ignore[index]
                    reads = [s for s in statements[at + 1 : end] if mentions(s, name)]
                    checks: list[Any]
                    if kind == "warns":  # only what the block itself implies goes
                        checks = [] if all(_warned_at_all(s, name) for s in reads) else [None]
                    else:
                        checks = [_message_check(s, name, kind == "exit") for s in reads]
                    folds.append((statements[at], reads, checks))
                # Every use of the name in the function: the blocks' own and these reads.
                used = sum(1 + sum(mentions(r, name) for r in reads) for _, reads, _ in folds)
                if used != mentions(function, name) or any(None in c for _, _, c in folds):
                    continue
                gone = set()
                for block, reads, checks in folds:
                    block.rllm_checks = checks
                    block.items[0].optional_vars = None
                    gone |= {id(r) for r in reads}
                statements[:] = [s for s in statements if id(s) not in gone]


def _transform(source: str, marked: set[tuple[Any, ...]]) -> tuple[Any, _Probe, _Marks, Any]:
    tree = ast.parse(source)
    _fold_caught_reads(tree)
    found = _tables.analyse(tree)
    marks = _Marks(set(marked))
    counts = _binding_counts(tree)  # once for the three readers below
    constants = _CONSTANTS.set(_constants(tree, counts))
    stdlib = _STDLIB.set(_stdlib_names(tree, counts))
    token = _MARKS.set(marks)
    found_token = _FOUND.set(_Found())
    bound = _BOUND.set(set(counts))
    try:
        probe = _Probe()
        probe.helpers = _helpers(tree)
        probe.module_callables = _module_callables(tree)
        tree = probe.visit(tree)
        made = _FOUND.get() or _Found()
        probe.predicates, probe.blocks = tuple(made.predicates), tuple(made.blocks)
        probe.owners = (tuple(made.predicate_owners), tuple(made.block_owners))
    finally:
        _MARKS.reset(token)
        _CONSTANTS.reset(constants)
        _STDLIB.reset(stdlib)
        _FOUND.reset(found_token)
        _BOUND.reset(bound)
    return tree, probe, marks, found


def _frozen(value: Any) -> Any:
    """A hashable key of a literal value, by kind.

    Numbers by value (``1050`` and ``1050.0`` are one key, ``True`` another); a text and its
    bytes (UTF-8) are one value (``b"aGk="`` decodes to ``"aGk="`` in one call).
    """
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_frozen(v) for v in value))
    if isinstance(value, (set, frozenset)):
        return (type(value).__name__, frozenset(_frozen(v) for v in value))
    if isinstance(value, dict):
        return ("dict", frozenset((_frozen(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, bytes):
        return ("text", value.decode("utf-8", "surrogateescape"))
    if isinstance(value, str):
        return ("text", value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return ("number", value)  # by value: 1050 and 1050.0 are one key
    return (type(value).__name__, value)


def _aliases(key: Any) -> set[Any]:
    """``key`` and the other literals that write its value: a number's text (``"1050"``)."""
    kind, value = key
    if kind == "number":
        found = {key, ("text", repr(value))}
        if isinstance(value, float) and value.is_integer():
            found.add(("text", repr(int(value))))
        return found
    if kind == "complex":
        return {key, *(("number", part) for part in (value.real, value.imag) if part)}
    if kind == "call":
        # A written standard-library value is also its text and number: another test writing
        # `"12.34"` shows `Decimal("12.34")`, `"2020-01-02"` shows `date(2020, 1, 2)`
        # (att32d). Not its arguments: the year of a date does not tell the date.
        found = {key}
        built = _built(key)
        if built is not None:
            found.add(("text", str(built)))
            if hasattr(built, "isoformat"):
                found.add(("text", built.isoformat()))
            if isinstance(built, datetime.datetime):
                # Its day too: `datetime(2020, 2, 1, 9, 30)` shows `date(2020, 2, 1)` (att32i).
                found.add(("text", built.date().isoformat()))
            found |= _number_aliases(built)
        return found
    return {key}


def _number_aliases(value: Any) -> set[Any]:
    """A written ``Decimal`` or ``Fraction`` as a number: ``Decimal("12.34")`` is ``12.34``."""
    try:
        if isinstance(value, decimal.Decimal):
            if not value.is_finite() or abs(value.adjusted()) > 30:
                return set()
            value = fractions.Fraction(value)
        if (
            not isinstance(value, fractions.Fraction)
            or abs(value.numerator) > 10**30 * value.denominator
        ):
            return set()
        found = {("number", float(value))}
        if value.denominator == 1:
            found.add(("number", int(value)))
        return found
    except (ArithmeticError, ValueError, OverflowError):
        return set()


def _built(key: Any, depth: int = 0) -> Any:
    """The value of a written standard-library call's key (:func:`_literal_key`), or ``None``.

    Built on the host from literals only, by the classes of :data:`_WRITTEN_CLASSES`.
    """
    kind, value = key
    if kind in ("text", "number"):
        return value
    if kind != "call" or depth > 8:
        return None
    name, arguments, keywords = value
    if name not in _WRITTEN_CLASSES:
        return None
    args = [None if a is None else _built(a, depth + 1) for a in arguments]
    kwargs = {k: None if a is None else _built(a, depth + 1) for k, a in keywords}
    if any(a is None for a in args) or any(a is None for a in kwargs.values()):
        return None
    try:
        with decimal.localcontext() as context:
            context.traps[decimal.Overflow] = context.traps[decimal.InvalidOperation] = True
            return _WRITTEN_CLASSES[name](*args, **kwargs)
    except (ValueError, TypeError, OverflowError, ArithmeticError):
        return None


_LITERAL_NODES = (ast.Constant, ast.UnaryOp, ast.List, ast.Tuple, ast.Set, ast.Dict)


def _literal_key(node: ast.AST) -> Any:
    """The key (:func:`_frozen`) of literal ``node``'s value, or ``None`` when it is not one.

    A standard-library value written in the test (``date(2020, 1, 2)``) is keyed as written.
    """
    if isinstance(node, (ast.Call, ast.Name, ast.Attribute)) and _written_value(node):
        if not isinstance(node, ast.Call):
            return ("name", _written_name(node))
        arguments = tuple(map(_literal_key, node.args))
        keywords = tuple((k.arg, _literal_key(k.value)) for k in node.keywords)
        return ("call", (_written_name(node.func), arguments, keywords))
    if not isinstance(node, _LITERAL_NODES):
        return None
    try:
        return _frozen(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


#: The longest text (or bytes) a constant expression is folded into (:func:`_folded_key`).
_FOLD_MAX = 4096
_FOLD_OPS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
}
_UNARY_OPS: dict[type, Any] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Invert: operator.invert,
}
_NOT_FOLDED = object()


def _folded_key(node: ast.AST) -> Any:
    """The key of a constant expression the compiler folds into one constant, else ``None``.

    ``"hello" + " world"``, ``60 * 60``, ``"ab" * 3``: no literal node holds the value, but
    the test function's ``__code__.co_consts`` does, where the sandbox reads it (att36h: a
    pass-to-pass input ``"hello" + " world"`` was a fail-to-pass test's expected value, and
    the echo check, reading literal nodes, missed it: paid 1.0 ``host`` without the fix).
    Folded here as far as Python would, within bounds (texts of at most :data:`_FOLD_MAX`
    characters, integers of at most 256 bits).
    """
    value = _folded(node, 0)
    return None if value is _NOT_FOLDED else _frozen(value)


def _folded(node: ast.AST, depth: int) -> Any:
    if depth > 32:
        return _NOT_FOLDED
    if isinstance(node, ast.Constant):
        value = node.value
        ok = isinstance(value, (str, bytes, int, float, complex))
        return value if ok else _NOT_FOLDED
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY_OPS:
        operand = _folded(node.operand, depth + 1)
        if operand is _NOT_FOLDED:
            return _NOT_FOLDED
        try:
            return _UNARY_OPS[type(node.op)](operand)
        except TypeError:
            return _NOT_FOLDED
    if not isinstance(node, ast.BinOp) or type(node.op) not in _FOLD_OPS:
        return _NOT_FOLDED
    left, right = _folded(node.left, depth + 1), _folded(node.right, depth + 1)
    if left is _NOT_FOLDED or right is _NOT_FOLDED:
        return _NOT_FOLDED
    sized = [v for v in (left, right) if isinstance(v, (str, bytes))]
    counts = [v for v in (left, right) if isinstance(v, int) and not isinstance(v, bool)]
    if isinstance(node.op, ast.Mult) and sized and counts:
        if len(sized[0]) * max(counts[0], 0) > _FOLD_MAX:
            return _NOT_FOLDED
    if isinstance(node.op, (ast.Pow, ast.LShift)) and isinstance(right, (int, float)):
        if abs(right) > 256 or (isinstance(left, int) and left.bit_length() > 256):
            return _NOT_FOLDED
    try:
        value = _FOLD_OPS[type(node.op)](left, right)
    except (ArithmeticError, TypeError, ValueError, MemoryError):
        return _NOT_FOLDED
    if isinstance(value, (str, bytes)) and len(value) > _FOLD_MAX:
        return _NOT_FOLDED
    if isinstance(value, int) and value.bit_length() > 256:
        return _NOT_FOLDED
    return value


def _literal_keys(node: ast.AST) -> set[Any]:
    """The keys of every literal in ``node``: whole values, their parts, folded expressions.

    A constant expression counts as the value the compiler folds it into (:func:`_folded_key`).

    The arguments of a written standard-library value are not parts of it: the year of an
    expected ``date(2021, 1, 1)`` written elsewhere does not tell the date.
    """
    found, stack = set(), [node]
    while stack:
        inner = stack.pop()
        key = _literal_key(inner)
        if key is None and isinstance(inner, ast.BinOp):
            key = _folded_key(inner)
        if key is not None:
            found.add(key)
            if key[0] == "call":
                continue
        stack.extend(ast.iter_child_nodes(inner))
    return found


#: Numbers a guess finds anyway (counts, indices, small sizes): not told by the module.
_SMALL = 16


def _telling(key: Any) -> bool:
    """Whether literal ``key`` (:func:`_frozen`) tells something a guess would not find."""
    kind, value = key
    if kind == "call":
        return any(k is not None and _telling(k) for k in value[1]) or any(
            k is not None and _telling(k) for _, k in value[2]
        )
    if kind == "text":
        return len(value.strip()) >= 2
    if kind == "number":
        return not (float(value).is_integer() and abs(value) <= _SMALL)
    if kind == "complex":
        return True
    if kind == "dict":
        return any(_telling(k) or _telling(v) for k, v in value)
    if kind in ("list", "tuple", "set", "frozenset"):
        return any(_telling(v) for v in value)
    return False


@dataclass(frozen=True)
class _Scope:
    """A function or method of a test module, as far as who gives a test its inputs."""

    span: tuple[int, int]  # its lines, decorators included
    name: str  # ``test_x`` or ``Class::test_x``
    klass: str | None
    arguments: frozenset[str]  # the fixtures it may request
    fixture: str | None  # the fixture it defines
    autouse: bool
    setup: bool  # ``setUp``, ``setup_method``, ``setup_module``, ...

    @property
    def test(self) -> bool:
        return self.name.rpartition("::")[2].startswith("test") and self.fixture is None


#: Functions that run before a test and hand it its inputs (what they pass is given).
_FIXTURE_DECORATORS = ("fixture", "pytest.fixture")
_SETUP_NAMES = frozenset(
    {"setUp", "setup", "setup_method", "setup_class", "setUpClass", "setup_module"}
    | {"setup_function", "setUpModule"}
)


def module_functions(
    tree: ast.Module,
) -> Iterator[tuple[str | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The module's functions and its classes' methods, in order, each with its class."""
    for statement in tree.body:
        klass = statement.name if isinstance(statement, ast.ClassDef) else None
        members = statement.body if isinstance(statement, ast.ClassDef) else [statement]
        for node in members:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield klass, node


#: Functions pytest or unittest calls around tests (their values are not asked for).
_AROUND_NAMES = _SETUP_NAMES | {
    "setUpTestData",
    "tearDown",
    "teardown",
    "teardown_method",
    "teardown_class",
    "tearDownClass",
    "teardown_module",
    "teardown_function",
    "tearDownModule",
    "asyncSetUp",
    "asyncTearDown",
}


#: pytest's built-in fixtures: a fixture taking only these takes no input of its caller's
#: choosing (``request`` does when the fixture reads ``request.param``).
_NO_INPUT = frozenset(
    {"tmp_path", "tmpdir", "tmp_path_factory", "tmpdir_factory"}
    | {"monkeypatch", "capsys", "capfd", "caplog", "recwarn"}
)
#: Calls that make or find a callable (``partial(str.replace, "-")``, ``eval("lambda ...")``).
_CALLABLE_MAKERS = frozenset(
    {"partial", "partialmethod", "methodcaller", "attrgetter", "itemgetter", "getattr"}
    | {"lru_cache", "cache", "wraps", "compose"}
    | {"eval", "exec", "type", "__import__", "import_module", "vars", "globals"}
)
#: Calls that keep or show what they are given (a list's ``append``, ``setattr``, ``print``,
#: a logger's methods): a computed value handed to one leaves the function.
_KEEPERS = frozenset(
    {"append", "extend", "insert", "add", "update", "setdefault", "setattr", "__setitem__"}
    | {"write", "writelines", "print", "put", "send"}
    | {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
)


#: ``unittest.mock``'s doubles and patchers, and which of their arguments are settings: every
#: other argument is kept (a replacement, a side effect, a wrapped object, a patched dict's
#: values, a double's configured attributes), and a patch reaches it through the patched
#: function's ``patchings``, the patched object or the double (s44 att44a F1, att44c).
_DOUBLE_SETTINGS = {
    "patch": ("spec", "create", "spec_set", "autospec", "new_callable"),
    "object": ("spec", "create", "spec_set", "autospec", "new_callable"),
    "multiple": ("spec", "create", "spec_set", "autospec", "new_callable"),
    "dict": ("clear",),
    "Mock": ("spec", "spec_set", "name", "unsafe", "parent", "_new_name", "_new_parent"),
    "MagicMock": ("spec", "spec_set", "name", "unsafe", "parent"),
    "AsyncMock": ("spec", "spec_set", "name", "unsafe", "parent"),
    "NonCallableMock": ("spec", "spec_set", "name", "unsafe", "parent"),
    "NonCallableMagicMock": ("spec", "spec_set", "name", "unsafe", "parent"),
    "PropertyMock": ("spec", "spec_set", "name", "unsafe", "parent"),
    "create_autospec": ("spec_set", "instance", "_parent", "_name", "unsafe"),
    "configure_mock": (),
}
#: The positional arguments each keeps (``patch(target, new)``, ``patch.dict(d, values)``).
_KEPT_FROM = {"patch": 1, "object": 2, "dict": 1}
#: The standard packages the host imports to read what a kept name holds (``socket.timeout``
#: is an exception class, ``sys.maxsize`` a value). Only these: a task handed in by a client
#: names the modules, and some act when imported (``test.autotest`` runs CPython's test
#: suite, ``asyncio.__main__`` a shell). Another module's names count unless they read as an
#: exception class.
_READ_MODULES = frozenset(
    {"abc", "argparse", "array", "asyncio", "base64", "bisect", "builtins", "bz2", "calendar"}
    | {"codecs", "collections", "concurrent", "configparser", "contextlib", "copy", "csv"}
    | {"faulthandler", "mimetypes"}
    | {"dataclasses", "datetime", "decimal", "difflib", "email", "enum", "errno", "fnmatch"}
    | {"fractions", "functools", "getpass", "gettext", "glob", "gzip", "hashlib", "heapq"}
    | {"hmac", "html", "http", "importlib", "inspect", "io", "ipaddress", "itertools", "json"}
    | {"locale", "logging", "lzma", "math", "numbers", "operator", "os", "pathlib", "pickle"}
    | {"platform", "pprint", "queue", "random", "re", "secrets", "select", "shlex", "shutil"}
    | {"signal", "smtplib", "socket", "sqlite3", "ssl", "statistics", "string", "struct"}
    | {"subprocess", "sys", "tarfile", "tempfile", "textwrap", "threading", "time", "traceback"}
    | {"types", "typing", "unicodedata", "unittest", "urllib", "uuid", "warnings", "weakref"}
    | {"xml", "zipfile", "zlib", "zoneinfo"}
)


def _resolved(dotted: str, origins: Mapping[str, str]) -> tuple[bool, Any]:
    """(found, what) a dotted name of the standard library or the builtins names on the host.

    ``origins``: each imported name's module path (``{"dt": "datetime.datetime"}``).
    """
    root, _, rest = dotted.partition(".")
    origin = origins.get(root, f"builtins.{root}" if root in _BUILTIN_NAMES else "")
    parts = [*origin.split("."), *(rest.split(".") if rest else [])]
    if not origin or parts[0] not in _READ_MODULES:
        return False, None
    for at in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        if any(part.startswith("_") for part in parts[1:at]):
            continue  # `asyncio.__main__`: only public modules are imported
        try:
            value: Any = importlib.import_module(".".join(parts[:at]))
        except Exception:
            continue
        try:
            for part in parts[at:]:
                value = getattr(value, part)
        except AttributeError:
            return False, None
        return True, value
    return False, None


def _exception_class(value: Any, dotted: str) -> bool:
    """Whether a kept name is an exception class (``side_effect=socket.timeout``)."""
    if isinstance(value, type):
        return issubclass(value, BaseException)
    return dotted.rpartition(".")[2].endswith(("Error", "Exception", "Exit", "Interrupt"))


def _chosen_function(
    value: ast.Name | ast.Attribute,
    origins: Mapping[str, str],
    delegates: frozenset[str],
    classes: bool = True,
) -> bool:
    """Whether a name is a standard or built-in function (or class, with ``classes``).

    Read on the host where it can be: ``str.title`` is; ``sys.maxsize``, an exception class,
    and the code under test's or the module's own names (read apart) are not.
    """
    dotted = _dotted(value)
    root = dotted.partition(".")[0]
    if not dotted or root in delegates:
        return False
    found, what = _resolved(dotted, origins)
    if found:
        return (
            callable(what)
            and not _exception_class(what, dotted)
            and (classes or not isinstance(what, type))
            and getattr(what, "__module__", None) != "typing"  # `x: List[int]` is a type
        )
    # Not found: a local's, or a name the host cannot read (counted unless it reads as an
    # exception class).
    known = root in origins or root in _BUILTIN_NAMES
    return known and not _exception_class(None, dotted)


def _names_function(
    value: ast.Name | ast.Attribute, origins: Mapping[str, str], delegates: frozenset[str]
) -> bool:
    """Whether a kept name is a function the suite chose.

    A standard function or class (:func:`_chosen_function`), or a method read off a name not
    of the code under test's (``PRICE.format``: s44 att44e F1).
    """
    root = _dotted(value).partition(".")[0]
    if isinstance(value, ast.Attribute) and value.attr in _BOUND_METHODS:
        return root not in delegates
    return _chosen_function(value, origins, delegates)


def _lambda_computes(node: ast.Lambda) -> bool:
    """Whether a lambda's body is more than its parameters and literals, packed.

    A property of a parameter runs code (``lambda p: p.stem``, ``lambda d: d.year``: s44
    att44g F1, 5/5 paid), and a method left uncalled is a function (``lambda s: s.title``).
    """
    given = _parameters(node.args)

    def plain(value: ast.expr) -> bool:
        if is_literal(value):
            return True
        if isinstance(value, ast.Name):
            return value.id in given
        if isinstance(value, ast.Starred):
            return plain(value.value)
        if isinstance(value, ast.List | ast.Tuple | ast.Set):
            return all(map(plain, value.elts))
        if isinstance(value, ast.Dict):
            return all(k is None or plain(k) for k in value.keys) and all(map(plain, value.values))
        return False

    return not plain(node.body)


def _lambda_keeps(node: ast.Lambda, origins: Mapping[str, str], delegates: frozenset[str]) -> bool:
    """Whether a lambda handed to a double or a mark computes, or returns a chosen function.

    One of no arguments only where it returns a function (``lambda: str.title``, s44 att44e
    F3) or computes a value (``lambda: "ann lee".title()``); a fixed clock (``side_effect=
    lambda: datetime(2020, 1, 2)``, withheld before) computes nothing.
    """
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
    for default in defaults:  # `lambda s, conv=str.title: s` (s44 att44g F3)
        if isinstance(default, ast.Lambda) and _lambda_keeps(default, origins, delegates):
            return True
        if isinstance(default, ast.Name | ast.Attribute):
            if _names_function(default, origins, delegates):
                return True
    if node.args.args or node.args.vararg or node.args.kwarg:
        return _lambda_computes(node)
    for part in ast.walk(node.body):
        if isinstance(part, ast.BinOp | ast.JoinedStr | ast.Lambda):
            return True
        if isinstance(part, ast.Call) and isinstance(part.func, ast.Attribute):
            if not _dotted(part.func):
                return True  # a method of a value
        if isinstance(part, ast.Call) and _dotted(part.func).rpartition(".")[2] in _CALLABLE_MAKERS:
            return True
    body = node.body
    return isinstance(body, ast.Name | ast.Attribute) and _names_function(body, origins, delegates)


def _spies_itself(call: ast.Call, name: str, wrapped: ast.expr, origins: Mapping[str, str]) -> bool:
    """Whether ``wraps=`` wraps the very object the patcher replaces.

    ``patch.object(time, "sleep", wraps=time.sleep)``, or a class of the patched name
    (``patch("pkg.core.datetime", wraps=datetime)``, freezing a clock): the spy passes
    through to it. A function of the same name is another one (``patch("pkg.core.title",
    wraps=str.title)`` handed the project's function an answer: s44 att44e F4, 5/5 paid).
    """
    dotted = _dotted(wrapped)
    if name == "object" and len(call.args) > 1:
        attribute = call.args[1]
        if isinstance(attribute, ast.Constant) and isinstance(attribute.value, str):
            owner = _dotted(call.args[0])
            return bool(owner) and dotted == f"{owner}.{attribute.value}"
    if name == "patch" and call.args:
        target = call.args[0]
        if isinstance(target, ast.Constant) and isinstance(target.value, str):
            found, what = _resolved(dotted, origins)
            last = target.value.rpartition(".")[2]
            return found and isinstance(what, type) and what.__name__ == last == dotted
    return False


def _kept_by_doubles(
    node: ast.AST,
    origins: Mapping[str, str],
    delegates: frozenset[str],
    doubles: frozenset[str] = frozenset(),
) -> bool:
    """Whether a double or patcher in ``node`` keeps a function the suite chose.

    What it keeps (:data:`_DOUBLE_SETTINGS`), through containers: a lambda that computes, a
    callable made (``partial(...)``), a method read off a value (``'${:,.2f}'.format``), or a
    function or class of the standard library or the builtins (``side_effect=str.title``,
    ``{'display': str.title}``); not one of the code under test's (``wraps=core.clean`` spies
    on the patch's own), an exception class, a value (``new=sys.maxsize``), nor the patched
    name itself (``patch("pkg.core.datetime", wraps=datetime)``).
    """
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        name = _dotted(call.func).rpartition(".")[2] or getattr(call.func, "attr", "")
        # A class of the module built on a double is one (`class Fake(mock.Mock)`).
        settings = _DOUBLE_SETTINGS.get("Mock" if name in doubles else name)
        if settings is None:
            continue
        kept = [k.value for k in call.keywords if k.arg not in (*settings, "wraps")]
        at = _KEPT_FROM.get(name)
        if at is not None and len(call.args) > at:
            kept.append(call.args[at])
        kept += [
            k.value
            for k in call.keywords
            if k.arg == "wraps" and not _spies_itself(call, name, k.value, origins)
        ]
        while kept:
            value = kept.pop()
            if isinstance(value, ast.Dict):
                kept.extend(v for v in value.values if v is not None)
            elif isinstance(value, ast.List | ast.Tuple | ast.Set):
                kept.extend(value.elts)
            elif isinstance(value, ast.Lambda):
                if _lambda_keeps(value, origins, delegates):
                    return True
            elif isinstance(value, ast.Call):
                if _dotted(value.func).rpartition(".")[2] in _CALLABLE_MAKERS:
                    return True
            elif isinstance(value, ast.Attribute) and not _dotted(value):
                if value.attr in _BOUND_METHODS:
                    return True
                kept.append(value.value)
            elif isinstance(value, ast.Name | ast.Attribute):
                if _names_function(value, origins, delegates):
                    return True
            else:  # `(str.title,)[0]`, `a if x else b`: what it is made of
                kept.extend(c for c in ast.iter_child_nodes(value) if isinstance(c, ast.expr))
    return False


def _decorator_picks(
    decorator: ast.expr,
    origins: Mapping[str, str],
    delegates: frozenset[str],
    doubles: frozenset[str] = frozenset(),
) -> bool:
    """Whether a decorator keeps a function the suite chose.

    A decorator runs at import, so what it keeps is in every test's process, whatever it
    decorates (s44 att44a F1: ``@mock.patch(..., side_effect=lambda d: ...)`` on another
    test, 5/5 paid; att44c: ``parametrize('ref', [str.title])``). Read: computing lambdas,
    callables made, what doubles keep, and functions (not classes) of the standard library
    or the builtins among its arguments (``parametrize("conv", [int, float])`` holds none).
    """
    # What is called is no function kept (`mock.patch.object(...)`), and what a double keeps
    # is read by `_kept_by_doubles` (`patch.object(time, "sleep", wraps=time.sleep)`).
    calls = [n for n in ast.walk(decorator) if isinstance(n, ast.Call)]
    called = {id(part) for n in calls for part in ast.walk(n.func)}
    called |= {
        id(part)
        for n in calls
        if (_dotted(n.func).rpartition(".")[2] or getattr(n.func, "attr", "")) in _DOUBLE_SETTINGS
        for part in ast.walk(n)
    }
    for node in ast.walk(decorator):
        if isinstance(node, ast.Lambda) and _lambda_keeps(node, origins, delegates):
            return True
        if isinstance(node, ast.Call):
            if _dotted(node.func).rpartition(".")[2] in _CALLABLE_MAKERS:
                return True
        if (
            isinstance(node, ast.Name | ast.Attribute)
            and node is not decorator
            and id(node) not in called
            and isinstance(node.ctx, ast.Load)
            and (
                (isinstance(node, ast.Attribute) and node.attr in _BOUND_METHODS)
                or _chosen_function(node, origins, delegates, classes=False)
            )
            and _dotted(node).partition(".")[0] not in delegates
        ):
            return True
    return _kept_by_doubles(decorator, origins, delegates, doubles)


def _parameters(arguments: ast.arguments) -> set[str]:
    """The names a function's ``arguments`` bind (``*args`` and ``**kwargs`` too)."""
    named = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    named += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {a.arg for a in named}


def _uncomputed(value: ast.expr | None, given: set[str]) -> bool:
    """Whether ``value`` holds nothing computed (a literal, a ``given`` name, a container).

    A literal is the module's text, which the echo check reads (:data:`NOTE_ECHO`).
    """
    if value is None or is_literal(value):
        return True
    if isinstance(value, ast.Name):
        return value.id in given
    if isinstance(value, ast.Attribute) and _dotted(value):  # `request.param`, `self.name`
        return _dotted(value).partition(".")[0] in given
    if isinstance(value, ast.Starred):
        return _uncomputed(value.value, given)
    if isinstance(value, ast.List | ast.Tuple | ast.Set):
        return all(_uncomputed(e, given) for e in value.elts)
    if isinstance(value, ast.Dict):
        return all(_uncomputed(k, given) for k in value.keys) and all(
            _uncomputed(v, given) for v in value.values
        )
    return False


def _computed(
    value: ast.expr | None,
    given: set[str],
    delegates: frozenset[str],
    around: bool = False,
    local: dict[str, list[ast.expr]] | None = None,
    steer: _Steerable | None = None,
) -> bool:
    """Whether ``value`` is computed here.

    Not if :func:`_uncomputed`, nor if a call of a function or class of ``delegates`` (the
    repository's, or the module's own, read apart) given uncomputed arguments
    (``Greeter(**kw)``: what the code under test computes is no answer). ``around`` (a
    set-up or a fixture without inputs, which the patch calls with its own object): an
    attribute of a parameter is not computed, nor is a call given no computed argument
    (``tempfile.mkdtemp()``, ``self.client.get("/")``: the patch's object answers those),
    nor a path joined with a literal (``tmp_path / "f.txt"``); arithmetic and text built
    from them are (``"Hello, " + self.person.title()``), and so is a library method called
    on a value the patch can choose (``steer``: ``NAME.title()`` of a module global it
    rebinds, ``self.name.title()`` of an attribute its own object holds, ``date(2024, 3,
    5).strftime(...)`` after it rebinds ``date``: s44 att44m, 5/5 paid each). ``local``:
    there, what each local name was assigned (``data = {...}; data.update(extra); return
    data``), in both kinds.
    """
    if _uncomputed(value, given):
        return False
    if isinstance(value, ast.Name):
        if steer is not None and value.id in steer.fed:
            return True  # a local library code given the patch's values changed or filled
        if local is None or value.id not in local:
            return False  # a module's name (a stored value, which the walk reads), a builtin
        held = local.pop(value.id)  # popped: a name assigned from itself ends here
        return not held or any(_computed(v, given, delegates, around, local, steer) for v in held)
    if around and isinstance(value, ast.Attribute) and _dotted(value):
        return False  # a name read (`shutil.rmtree`), not computed
    if around and steer is not None and isinstance(value, ast.IfExp):
        # As an `if` statement is read: its test only when library code computes it from the
        # patch's values (`"cmd.exe" if sys.platform.startswith("win") else "/bin/sh"`).
        return steer.decides(value.test) or any(
            _computed(v, given, delegates, around, local, steer) for v in (value.body, value.orelse)
        )
    if around and steer is not None and value is not None and steer.fixed(value, frozenset()):
        return False  # a path the module's text fixes (`f"file://{DATA}/x.html"`)
    if around and isinstance(value, ast.Call):
        if steer is not None and (steer.runs_library(value) or steer.runs_function(value)):
            return True
        handed = [*value.args, *(k.value for k in value.keywords)]
        return any(_computed(a, given, delegates, around, local, steer) for a in handed)
    if around and isinstance(value, ast.BinOp) and _path_join(value):
        return _computed(value.left, given, delegates, around, local, steer)
    if around and steer is not None and isinstance(value, ast.BinOp):
        if isinstance(value.op, ast.Div) and steer.fixed(value.left, frozenset()):
            return False  # `tmp_path / DB_NAME`: a path joined from two inputs (documented)
    if isinstance(value, ast.Call):
        root = _dotted(value.func).partition(".")[0]
        handed = [*value.args, *(k.value for k in value.keywords)]
        return not (root in delegates and all(_uncomputed(a, given) for a in handed))
    if isinstance(value, ast.Lambda):
        return _computed(value.body, given | _parameters(value.args), delegates)
    return True


_BUILTIN_NAMES = frozenset(dir(builtins))


@dataclass(frozen=True)
class _Around:
    """What :class:`_Steerable` reads of the module around a set-up or fixture.

    ``modules``: names bound by ``import``; ``mocks``: the harness's (``mock``, ``pytest``);
    ``origins``: each imported name's module path; ``values``: what each name the module
    binds at its top is assigned (``[]`` for a function, a class or an import); ``held``:
    what ``self``'s attributes and the module's fixtures hold, module-wide.
    """

    modules: frozenset[str] = frozenset()
    mocks: frozenset[str] = frozenset()
    origins: Mapping[str, str] = field(default_factory=dict)
    values: Mapping[str, list[ast.expr]] = field(default_factory=dict)
    #: What each ``self.X`` (``cls.X``, a class attribute ``X``) is assigned anywhere in the
    #: module, and what each of its fixtures returns or yields, by the fixture's name.
    held: Mapping[str, list[ast.expr]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Steerable:
    """What a set-up or an input-less fixture reads that a patch can choose.

    ``given``: its parameters; ``assigned``: what each of its local names is assigned;
    ``delegates``: the code under test's names and the module's own (what they compute is
    no answer); ``around``: the module's (:class:`_Around`).
    """

    given: set[str]
    assigned: Mapping[str, list[ast.expr]]
    delegates: frozenset[str]
    around: _Around
    #: Locals whose own methods are handed a value the patch can choose (`h.update(x)`).
    fed: frozenset[str] = frozenset()

    def feeding(self, function: ast.AST) -> _Steerable:
        """This, with :attr:`fed` read off ``function``'s calls.

        A local is fed when its own method is handed such a value (``h.update(self.payload)``,
        not a fresh container's storing method) or when library code given such a value is
        handed the local (``Random(SEED).shuffle(items)``: s45 att45g, 5/5 paid).
        """
        fed = set(self.fed)
        calls = [node for node in ast.walk(function) if isinstance(node, ast.Call)]
        for _ in range(2):  # a local fed from one fed before
            steer = replace(self, fed=frozenset(fed))
            for node in calls:
                func = node.func
                if (
                    isinstance(func, ast.Attribute)
                    and isinstance(func.value, ast.Name)
                    and func.value.id in self.assigned
                    and func.attr not in _STORING_METHODS
                    and any(map(steer.steered, _handed(node)))
                ):
                    fed.add(func.value.id)
                if steer.runs_library(node) or steer.runs_function(node):
                    fed |= {
                        a.id
                        for a in _handed(node)
                        if isinstance(a, ast.Name) and a.id in self.assigned
                    }
        return replace(self, fed=frozenset(fed))

    def runs_library(self, call: ast.Call) -> bool:
        """Whether ``call`` is a library method on a value the patch can choose."""
        func = call.func
        if not isinstance(func, ast.Attribute):
            return False
        if func.attr not in _LIBRARY_METHODS:
            # Any method of an object a library call made here (`sha256(PAYLOAD).hexdigest()`,
            # `Random(SEED).sample(ITEMS, 2)`, `buf.getvalue()` after `csv.writer(buf)`: s45
            # att45g F1, 5/5 paid each).
            return self._library_made(func.value) and (
                self.steered(func.value) or any(map(self.steered, _handed(call)))
            )
        if func.attr in _HTTP_VERBS:  # `self.client.get("/")`: the patch's object answers
            return False
        if func.attr in _PATH_METHODS | _FILE_METHODS:  # `tmp_path.parent.mkdir()`
            return False
        receiver = func.value
        if isinstance(receiver, ast.Name) and receiver.id in self.given | self.around.modules:
            return False  # the patch's own object answers; a module's function
        if isinstance(receiver, ast.Name) and receiver.id in self.assigned:
            if func.attr in _STORING_METHODS:
                return False  # a fresh container it fills computes nothing
        if _dotted(receiver).partition(".")[0] in self.around.modules:
            # A module's function (`os.path.join`: :meth:`runs_function`'s), a lookup
            # (`os.environ.get`); not a method of what a module holds
            # (`pkg.config.DEFAULT_NAME.title()`: s45 att45e F3).
            if self._no_data(receiver) or _one_of(self._callee(_dotted(func)), _MAKERS):
                return False
            found, _ = _resolved(_dotted(receiver), self.around.origins)
            return found or func.attr in _VALUE_METHODS_ALL
        # A global the patch rebinds, a local assigned one (`name = NAME; name.title()`: s45
        # att45a F2, 5/5 paid), `self.name`, `request.param.stem`, `date(2024, 3, 5)`: the
        # patch runs the set-up on an object of its own or rebinds the name (s44 att44m);
        # or a fixed receiver given such a value (`"-".join(NAME)`).
        return self.steered(receiver) or any(map(self.steered, _handed(call)))

    def decides(self, part: ast.AST, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``part`` computes from the patch's values with library code.

        A call that does (:meth:`runs_library`, :meth:`runs_function`), or a local assigned
        such a computation (``a = ip_address(TEXT)``, then ``if a.is_private``; ``private =
        ip_address(TEXT).is_private``, then ``if private``: s45 att45o F1, 5/5 paid); not a
        test of a standard module's value against literals (``sys.platform.startswith("win")``:
        a platform guard).
        """
        for node in ast.walk(part):
            if isinstance(node, ast.Call) and not self._platform_test(node):
                if self.runs_library(node) or self.runs_function(node):
                    return True
            # An operator or a property that runs a library object's code on the patch's
            # values (`GATEWAY in LAN` of an `ip_network`, `DUE > CUTOFF`, `GW.is_private`:
            # s45 att45s, 5/5 paid).
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                if any(map(self._library_valued, operands)) and any(
                    map(self.reads_patch, operands)
                ):
                    return True
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                # Or a library type's property on an imported value (`GATEWAY.is_private`
                # of `from pkg.settings import GATEWAY`: s46 att46a F1).
                library = self._library_valued(node.value) or node.attr in _LIBRARY_PROPERTIES
                if library and self.reads_patch(node.value):
                    return True
            if isinstance(node, ast.Name) and node.id in self.assigned and node.id not in seen:
                held = self.assigned[node.id]
                if any(self.decides(v, seen | {node.id}) for v in held):
                    return True
        return False

    def reads_patch(self, value: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``value`` reads a value the patch chooses.

        A module global, an imported value (``from pkg.settings import GATEWAY``,
        ``settings.AMOUNT``, ``os.environ["GW"]``: s46 att46a F1, 5/5 paid), a parameter,
        ``self``'s attribute, or a local assigned one; not a call of literals alone
        (``shutil.which("git")``, ``find_spec("numpy")``), nor a module, a function or a
        class.
        """
        for node in ast.walk(value):
            if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                root = _dotted(node).partition(".")[0]
                if root in self.around.origins and root not in {*self.assigned, *self.given}:
                    if not self._no_data(node) and not self._standard_number(node):
                        return True
                continue
            if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
                continue
            name = node.id
            if name in self.given and name not in _NO_INPUT:  # not `tmp_path`: the harness's
                return True
            if name in self.assigned:
                if name not in seen and any(
                    self.reads_patch(v, seen | {name}) for v in self.assigned[name]
                ):
                    return True
                continue
            if name in self.around.origins:
                if name not in self.around.modules and not (
                    self._no_data(node) or self._standard_number(node)
                ):
                    return True  # an imported value the patch rebinds
                continue
            if name in self.around.values and not self.fixed(node, frozenset()):
                return True  # a module global (not a path the module's text fixes)
        return False

    def _library_valued(self, value: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``value`` holds an object a library call made, here or at module level.

        ``LAN = ipaddress.ip_network("10.0.0.0/8")``; not a lookup, a clock or a tool
        (:data:`_MAKERS`: ``os.environ.get("CI") == "1"`` is a guard).
        """
        if isinstance(value, ast.Name) and value.id in seen:
            return False
        if isinstance(value, ast.Name) and value.id not in self.assigned:
            held = self.around.values.get(value.id, [])
            if value.id in self.around.origins:
                return False  # an imported name (a module, a function, a class)
            return any(self._library_valued(v, seen | {value.id}) for v in held)
        if isinstance(value, ast.Attribute):
            return self._library_valued(value.value, seen)
        if isinstance(value, ast.Call) and _one_of(self._callee(_dotted(value.func)), _MAKERS):
            return False
        return self._library_made(value, seen)

    def _random_id(self, value: ast.expr) -> bool:
        """A random id or bytes made from nothing (``uuid.uuid4()``, ``secrets.token_hex()``)."""
        return (
            isinstance(value, ast.Call)
            and not _handed(value)
            and _one_of(self._callee(_dotted(value.func)), _RANDOM_SOURCES)
        )

    def _platform_test(self, call: ast.Call) -> bool:
        """A method of a standard module's value given literals (``sys.platform.startswith``)."""
        func = call.func
        if not isinstance(func, ast.Attribute) or not all(map(is_literal, _handed(call))):
            return False
        root = _dotted(func.value).partition(".")[0]
        if root not in self.around.modules or root in self.assigned or root in self.given:
            return False  # a name the module binds (`input = self.sample`: s45 att45q, 5/5)
        found, _ = _resolved(_dotted(func.value), self.around.origins)
        return found

    def configures(self, call: ast.Call) -> bool:
        """Whether ``call`` configures the process and computes nothing it keeps there.

        One of :data:`_CONFIGURES` (``random.seed(SEED)``) or a logger's
        :data:`_CONFIGURING_METHODS` (``getLogger(NAME).setLevel(logging.DEBUG)``); not one
        that parses what it is given and keeps the result (:data:`_PARSING_CONFIGURES`,
        ``setLevel``) given the patch's values: ``logger.setLevel(LEVEL)`` kept a level
        name's number where the patch reads it back (s46 att46c F1, 5/5 paid).
        """
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else ""
        callee = self._callee(_dotted(func))
        if not (name in _CONFIGURING_METHODS or _one_of(callee, _CONFIGURES)):
            return False
        return not self.parses_patch(call)

    def parses_patch(self, call: ast.Call) -> bool:
        """Whether ``call`` parses a value the patch chooses into state it keeps.

        A level set on any receiver (``setLevel``, ``caplog.set_level``, ``at_level``:
        ``self.handler.setLevel(LEVEL)``, s46 att46g F1, 5/5 paid) or one of
        :data:`_PARSING_CONFIGURES`, given what :meth:`reads_patch` (``basicConfig``: its
        ``level``; a format is stored as given).
        """
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else ""
        callee = self._callee(_dotted(func))
        parsed = _handed(call)
        if _one_of(callee, (logging.basicConfig,)) or name in _LEVEL_SETTERS:
            # The level, not a logger's name (`caplog.set_level(logging.DEBUG, logger=NAME)`:
            # att46i's honest fixture) nor a format, which are stored as given.
            parsed = [k.value for k in call.keywords if k.arg == "level"]
            parsed += call.args[:1] if name in _LEVEL_SETTERS else []
        elif not _one_of(callee, _PARSING_CONFIGURES):
            return False
        return any(map(self.reads_patch, parsed))

    def writes_environ(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The environment variables ``function`` writes a value the patch chooses to.

        Any write that names ``environ`` (``os.environ["TZ"] = TZ``, an alias, an annotated
        or augmented assignment: ``os.environ |= ENV``, ``update``, ``setdefault``,
        ``mock.patch.dict(os.environ, TZ=TZ)``) or sets a variable (``os.putenv``,
        ``monkeypatch.setenv("TZ", TZ)``), given a value that :meth:`reads_patch`; ``"*"``
        where the name is not written out.
        """
        environ = {
            name for name, values in self.assigned.items() if any(_names_environ(v) for v in values)
        }

        def names(part: ast.AST) -> bool:
            return _names_environ(part) or any(
                isinstance(n, ast.Name) and n.id in environ for n in ast.walk(part)
            )

        written: set[str] = set()
        for statement in function.body:
            for node in _walk_outside_functions(statement):
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    hit = [t for t in targets if names(t)]
                    if hit and node.value is not None and self.reads_patch(node.value):
                        if self._read_from_environ(node.value):
                            continue  # put back as it was (`os.environ["TZ"] = self.old`)
                        for target in hit:
                            key = target.slice if isinstance(target, ast.Subscript) else None
                            written |= _variable_names([key] if key else [node.value], [])
                elif isinstance(node, ast.Call) and any(map(self.reads_patch, _handed(node))):
                    last = _dotted(node.func).rpartition(".")[2]
                    on_environ = names(node.func)
                    if last in ("setenv", "putenv") or (
                        on_environ and last in ("setdefault", "__setitem__")
                    ):
                        written |= _variable_names(node.args[:1], [])
                    elif on_environ and last == "update":
                        written |= _variable_names(node.args, node.keywords)
                    elif last == "dict" and any(map(names, node.args[:1])):  # `patch.dict`
                        written |= _variable_names(node.args[1:], node.keywords)
        return written

    def _read_from_environ(self, value: ast.expr) -> bool:
        """Whether ``value`` is what a set-up read from the environment (to put it back).

        ``self.old`` or a local assigned ``os.environ.get("TZ")`` (``os.getenv``, an item,
        ``pop``) anywhere in the module: ``tearDown`` restoring it writes nothing the patch
        chose that the environment did not already hold (s46 att46k's honest set-up).
        """
        key = _held_key(value)
        held = self.assigned.get(key) if key in self.assigned else self.around.held.get(key)
        if not held:
            return False
        return all(
            _names_environ(v)
            or (isinstance(v, ast.Call) and _dotted(v.func).rpartition(".")[2] == "getenv")
            for v in held
        )

    def reads_environ(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The environment variables library calls of ``function`` parse (:data:`_READS_ENVIRON`).

        ``time.tzset()`` reads ``TZ``, ``os.path.expanduser`` ``HOME``, however imported
        (by the call's last name); ``os.path.expandvars`` any (``"*"``).
        """
        read: set[str] = set()
        for statement in function.body:
            for node in _walk_outside_functions(statement):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.attr if isinstance(func, ast.Attribute) else _dotted(func)
                    # What an alias names (`from time import tzset as reset_zone`: s46
                    # att46k F3, 5/5 paid).
                    real = getattr(self._callee(_dotted(func)), "__name__", name)
                    if _dotted(func) == "gettext.find" or name != "find":
                        read |= _READS_ENVIRON.get(name, frozenset())
                        read |= _READS_ENVIRON.get(str(real), frozenset())
        return read

    def seeds_random(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The generators ``function`` seeds with a value the patch chooses.

        ``"random"`` for the ``random`` module's shared one (``random.seed(SEED)``), else the
        seeded object's name (``self.rng.seed(SEED)``: s46 att46k F4, 5/5 paid).
        """
        seeded: set[str] = set()
        for statement in function.body:
            for node in _walk_outside_functions(statement):
                if not (isinstance(node, ast.Call) and any(map(self.reads_patch, _handed(node)))):
                    continue
                if _one_of(self._callee(_dotted(node.func)), (random.seed,)):
                    seeded.add("random")
                elif isinstance(node.func, ast.Attribute) and node.func.attr == "seed":
                    seeded.add(_held_key(node.func.value) or _dotted(node.func.value))
        return seeded - {""}

    def draws_random(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The generators ``function`` draws from (``random.randint(1, 6)``, ``rng.random()``)."""
        drawn: set[str] = set()
        for statement in function.body:
            for node in _walk_outside_functions(statement):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                if node.func.attr == "seed":
                    continue
                if getattr(self._callee(_dotted(node.func)), "__self__", None) is _SHARED_RANDOM:
                    drawn.add("random")
                else:
                    drawn.add(_held_key(node.func.value) or _dotted(node.func.value))
        return drawn - {""}

    def runs_on_patch(self, value: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``value`` runs library code on the patch's values, a local followed.

        A call that does (:meth:`runs_library`, :meth:`runs_function`) and reads them
        (:meth:`reads_patch`, or a comprehension's name over them: not ``cm.__enter__()`` of
        ``warnings.catch_warnings()``), not one that configures: whether it raises answers
        for it.
        """
        walked = list(_walk_outside_functions(value))
        over = {
            n.id
            for comp in walked
            if isinstance(comp, ast.comprehension) and self.reads_patch(comp.iter)
            for n in ast.walk(comp.target)
            if isinstance(n, ast.Name)
        }

        def reads(part: ast.expr) -> bool:
            names = {n.id for n in ast.walk(part) if isinstance(n, ast.Name)}
            return bool(names & over) or self.reads_patch(part)

        for node in walked:
            if isinstance(node, ast.Call) and self.parses_patch(node):
                return True
            if isinstance(node, ast.Call) and not self.configures(node):
                if self.runs_library(node) or self.runs_function(node):
                    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
                    if any(map(reads, _handed(node))) or (receiver is not None and reads(receiver)):
                        return True
            if isinstance(node, ast.Name) and node.id in self.assigned and node.id not in seen:
                if any(self.runs_on_patch(v, seen | {node.id}) for v in self.assigned[node.id]):
                    return True
        return False

    def writes(self, call: ast.Call) -> bool:
        """Whether ``call`` is handed a place it could write to that the patch can read.

        A local, a parameter or an attribute of ``self`` (``json.dump(x, f)``,
        ``bisect.insort(self.names, x)``, ``csv.writer(f).writerows(x)``), or a value computed
        from the patch's (``os.environ.update({"U": capwords(NAME)})``); not a module's value
        (``sys.path.insert(0, "src")``).
        """
        places = list(_handed(call))
        receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
        while isinstance(receiver, ast.Call):  # `csv.writer(f).writerows(rows)`
            places += _handed(receiver)
            receiver = receiver.func.value if isinstance(receiver.func, ast.Attribute) else None
        if receiver is not None:
            places.append(receiver)
        for place in places:
            root = _dotted(place).partition(".")[0]
            if root in self.assigned or root in self.given:
                return True
            if isinstance(place, ast.Call) and (
                self.runs_library(place) or self.runs_function(place)
            ):
                return True
        return False

    def _library_made(self, value: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``value`` is an object a library call made here (or a local holding one).

        Or an attribute of ``self`` assigned one anywhere in the module, or a parameter
        naming a fixture that returns one (``self.cfg = ConfigParser()`` in ``setUpClass``, a
        base class or the class body, then ``self.cfg.read_string(CONF)``; ``def
        loaded(parser): parser.read_string(CONF)``: s46 att46i F2, att46k F1, F2, 5/5 paid).
        """
        if isinstance(value, ast.Name) and value.id in self.assigned and value.id not in seen:
            held = self.assigned[value.id]
            return any(self._library_made(v, seen | {value.id}) for v in held)
        dotted = _held_key(value)
        if dotted in self.around.held and dotted not in seen:
            held = self.around.held[dotted]
            return any(self._library_made(v, seen | {dotted}) for v in held)
        if not isinstance(value, ast.Call):
            return False
        name = _dotted(value.func)
        root = name.partition(".")[0]
        if name:
            return not (root in self.delegates | self.around.mocks or root in self.given)
        return (
            self._library_made(value.func.value) if isinstance(value.func, ast.Attribute) else False
        )

    def runs_function(self, call: ast.Call) -> bool:
        """Whether ``call`` is a library or built-in function given a value the patch can choose.

        ``capwords(self.name)``, ``format(self.amount, ",.2f")``, ``json.dumps(DATA)``,
        ``sorted(ITEMS)`` (s45 att45a F1, 5/5 paid each), ``shlex.join(ARGS)``,
        ``os.path.realpath(NAME)`` (s45 att45c F2). Not the code under test's or the module's
        own functions, the harness's, a parameter's (the patch's object answers), a name the
        module never binds (a repository's wildcard import), plumbing
        (:data:`_NEUTRAL_CALLS`, :data:`_NEUTRAL_FUNCTIONS`), :data:`_MAKERS` given no
        keywords (a tool made, ``re.compile(PATTERN)``: a configured object, documented; a
        copy, a clock, a lookup), ``str`` or ``bool`` of a value no library call made, or a
        path joined (``os.path.join(self.tmp, NAME)``: documented).
        """
        name = _dotted(call.func)
        root = name.partition(".")[0]
        if not name or root in self.delegates | self.around.mocks or root in self.given:
            return False
        if name in _NEUTRAL_CALLS or name.rpartition(".")[2] in _NEUTRAL_FUNCTIONS:
            return False
        what = self._callee(name)
        if what is None:
            # Not resolved: a local or a module name holding a function, a standard function
            # the host does not read (counted), or a name the module never binds (not).
            if root not in self.assigned and root not in self.around.values:
                return False
        elif _one_of(what, _TEMP_MAKERS) and {k.arg for k in call.keywords} <= _TEMP_NAMING:
            return False  # `tempfile.mkdtemp(prefix=PREFIX)`: the name holds it as given
        elif _one_of(what, _MAKERS) and not call.keywords:
            # A tool made (`random.Random(SEED)`), a copy, a clock's reading, an environment
            # lookup (a library class that computes counts:
            # `str(timedelta(seconds=S))`, `Counter(TEXT)`: s45 att45e F1, 5/5 paid).
            return False
        elif (
            _one_of(what, _CONVERSIONS)
            and len(call.args) == 1
            and not call.keywords
            and (
                not self._library_made(call.args[0])  # `str(fromisoformat(S))`: att45i
                or self._random_id(call.args[0])  # `str(uuid.uuid4())`
            )
        ):
            return False  # `int(os.environ.get("PORT", "8000"))`
        elif _one_of(what, _JOINS):
            return False  # a path joined (`os.path.join(self.tmp, NAME)`: documented)
        return any(map(self.steered, _handed(call)))

    def _standard_number(self, value: ast.expr) -> bool:
        """A standard module's number (``logging.DEBUG``, ``signal.SIGALRM``, ``LC_ALL``).

        Read as fixed where a configuring call is given it (documented: a patch that rebinds
        ``logging.DEBUG`` to a level's name has ``setLevel(logging.DEBUG)`` parse it).
        """
        found, what = _resolved(_dotted(value), self.around.origins)
        return found and isinstance(what, int)

    def _no_data(self, value: ast.expr) -> bool:
        """A standard name holding no data: a module, a function, a class, ``timezone.utc``.

        Text, numbers, containers and mappings (``string.ascii_lowercase``, ``os.environ``)
        are the patch's to rebind or change (s45 att45e F3, 5/5 paid), as is what a module
        the host does not read holds (``pkg.config.DEFAULT_NAME``).
        """
        found, what = _resolved(_dotted(value), self.around.origins)
        return found and not isinstance(what, _DATA_KINDS)

    def _callee(self, name: str) -> Any:
        """What the standard or built-in name ``name`` is on the host (None: not one)."""
        root = name.partition(".")[0]
        if root in self.assigned or root in self.given:
            return None
        if root in self.around.values and root not in self.around.origins:
            return None  # bound by the module itself (`format = capwords`, a def)
        found, what = _resolved(name, self.around.origins)
        return what if found else None

    def steered(self, value: ast.expr) -> bool:
        """Whether the patch can choose what ``value`` holds when it runs the set-up.

        A global it rebinds, an attribute of its own object, a call of a name it rebinds
        (``date(2024, 3, 5)``), a local assigned one of those; not what :meth:`fixed` is.
        """
        return not self.fixed(value, frozenset())

    def _path(self, value: ast.expr, seen: frozenset[str]) -> bool:
        """Whether a module name's ``value`` is a path the module's text fixes.

        ``__file__``, a path call of fixed values (``Path(__file__)``), its ``parent``,
        ``parents[1]``, a join with literals, another such name.
        """
        if isinstance(value, ast.Name):
            return value.id == "__file__" or (
                value.id in self.around.values and self.fixed(value, seen)
            )
        if isinstance(value, ast.Attribute):
            return value.attr in ("parent", "parents") and self._path(value.value, seen)
        if isinstance(value, ast.Subscript):
            return self._path(value.value, seen) and self.fixed(value.slice, seen)
        if isinstance(value, ast.BinOp) and _path_join(value):
            return self._path(value.left, seen)
        if isinstance(value, ast.Call):
            what = self._callee(_dotted(value.func))
            return _one_of(what, _PATH_CALLS) and all(self.fixed(a, seen) for a in _handed(value))
        return False

    def fixed(self, value: ast.expr, seen: frozenset[str]) -> bool:
        """Whether ``value`` is fixed by the module's text: a literal, a module, a path.

        Paths: ``__file__``, the harness's folders (``tmp_path``), the module's names
        assigned only paths (``DATA = Path(__file__).parent / "data"``, not what is read
        from one: s45 att45c F1), path calls of fixed values (``Path``, ``os.path.join``), a
        path's ``parent``, joins with literals, a path's paths (``(DATA / "in").glob("*")``,
        ``glob.glob``, ``os.listdir``); standard names holding no data (``timezone.utc``),
        f-strings of fixed values. Not a built-in's call: the patch rebinds its name (s45
        att45k F5). Not what
        a file holds: the patch rewrites it, or rebinds ``open`` or the path (s45 att45e F2:
        ``capwords((DATA / "name.txt").read_text())``, 5/5 paid). The patch could rebind
        ``__file__`` and these names too, and would learn a path's parent, a join or a
        listing (documented).
        """
        if _uncomputed(value, set()):
            return True
        if isinstance(value, ast.Name):
            name = value.id
            if name in seen:
                return True
            if name in self.fed:
                return False  # `h = sha256(); h.update(self.payload)`
            if name in self.assigned and name not in self.given:
                held = self.assigned[name]
                return bool(held) and all(self.fixed(v, seen | {name}) for v in held)
            if name in self.around.values and name not in self.around.origins:
                # Only a path: a global holding a value is the patch's to rebind (att45a).
                held = self.around.values[name]
                return bool(held) and all(self._path(v, seen | {name}) for v in held)
            if name in self.around.origins:
                return self._no_data(value)  # `from datetime import timezone`
            return name in self.around.modules or name in _NO_INPUT or name == "__file__"
        if isinstance(value, ast.Attribute):
            if _dotted(value) and self._no_data(value):
                return True  # `timezone.utc`, a module, a function
            return value.attr in ("parent", "parents") and self.fixed(value.value, seen)
        if isinstance(value, ast.Subscript):  # `Path(__file__).parents[1]`
            return self.fixed(value.value, seen) and self.fixed(value.slice, seen)
        if isinstance(value, ast.BinOp) and _path_join(value):
            return self.fixed(value.left, seen)
        if isinstance(value, ast.JoinedStr):
            return all(self.fixed(v, seen) for v in value.values)
        if isinstance(value, ast.FormattedValue):
            spec = value.format_spec
            return (
                value.conversion == -1
                and self.fixed(value.value, seen)
                and (spec is None or self.fixed(spec, seen))
            )
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Attribute) and func.attr in _PATH_RESULTS:
                calls = self.fixed(func.value, seen)  # `(DATA / "in").glob("*.txt")`
            else:
                what = self._callee(_dotted(func))
                # Not a built-in: the patch rebinds `dict` in the module as it rebinds a
                # global (`json.dumps(dict(name="demo"), indent=2)`: s45 att45k F5, 5/5 paid).
                calls = _one_of(what, _PATH_CALLS)
            return calls and all(self.fixed(a, seen) for a in _handed(value))
        return False


#: What a name bound other than by an assignment holds (a def, an import, a loop's name):
#: never fixed.
_ELSEWHERE: ast.expr = ast.Name("<bound elsewhere>", ast.Load())


def _one_of(what: Any, objects: Sequence[Any]) -> bool:
    """Whether ``what`` is one of ``objects`` (bound methods compare equal, not identical)."""
    for candidate in objects:
        try:
            if what is candidate or (callable(what) and what == candidate):
                return True
        except Exception:  # a value's own `__eq__`
            continue
    return False


def _decided_by(node: ast.AST) -> list[ast.AST]:
    """What decides where ``node`` goes.

    A test, a ``match``'s subject, a loop's iterable, a ``with``'s context, a ``try``'s body
    (what raises there).
    """
    if isinstance(node, ast.If | ast.While | ast.Assert):
        return [node.test]
    if isinstance(node, ast.Match):  # and its cases' guards (s45 att45o F2, 5/5 paid)
        # A value pattern compares with the subject, a class pattern tests its class: read
        # as the comparison and the call they make (`case LAN.network_address:`, att45s).
        patterns = [p for case in node.cases for p in ast.walk(case.pattern)]
        values = [p.value for p in patterns if isinstance(p, ast.MatchValue)]
        classes = [p.cls for p in patterns if isinstance(p, ast.MatchClass)]
        return [
            node.subject,
            *(case.guard for case in node.cases if case.guard is not None),
            *([ast.Compare(node.subject, [ast.Eq()] * len(values), values)] if values else []),
            *(ast.Call(cls, [node.subject], []) for cls in classes),
        ]
    if isinstance(node, ast.Expr) and not isinstance(node.value, ast.Call):
        # `ip_address(x).is_private or self.skipTest(...)`, an operator that raises (att45o F3).
        return [node.value]
    if isinstance(node, ast.For | ast.AsyncFor):
        return [node.iter]
    if isinstance(node, ast.Try):
        return list(node.body) if node.handlers else []
    return [node.context_expr] if isinstance(node, ast.withitem) else []


def _keys(targets: Sequence[ast.expr]) -> list[ast.expr]:
    """The keys and indices ``targets`` write (``reg[key] = ...``, ``del reg[key]``)."""
    return [t.slice for target in targets for t in ast.walk(target) if isinstance(t, ast.Subscript)]


def _handed(call: ast.Call) -> list[ast.expr]:
    """What ``call`` is handed: its arguments and keywords' values."""
    return [*call.args, *(k.value for k in call.keywords)]


#: Calls that make, find or list paths: given fixed values, their result is fixed.
_PATH_CALLS = (
    *(pathlib.Path, pathlib.PurePath, pathlib.PosixPath, pathlib.PurePosixPath, os.fspath),
    *(os.path.join, os.path.dirname, os.path.abspath, os.path.realpath, os.path.expanduser),
    *(tempfile.mkdtemp, tempfile.gettempdir, glob.glob, glob.iglob, os.listdir),
)
#: A path's methods whose result is a path (or paths): fixed on a fixed path.
_PATH_RESULTS = frozenset(
    {"joinpath", "resolve", "absolute", "with_name", "with_suffix", "glob", "rglob", "iterdir"}
)
#: What a standard name may hold that the patch can rebind to its own input.
_DATA_KINDS = (str, bytes, int, float, complex, list, tuple, dict, set, frozenset, Mapping)
#: A path joined by concatenation: the documented "path joined" class (a `Path(...)` or
#: `urljoin` normalises: `str(PurePosixPath(WHERE))` answers a `normalize` task, s45 att45g F3).
_JOINS = (os.path.join,)
#: Calls that make a tool (a configured pattern, a random generator, a log handler), copy a
#: value, read a clock or the environment: no value a patch could ask for. (Not a parse: a
#: fixture returning `fromisoformat(STAMP)` answered a `parse_stamp` task, s45 att45i, 5/5.)
_MAKERS = (
    *(re.compile, random.Random, random.SystemRandom, io.StringIO, io.BytesIO, zoneinfo.ZoneInfo),
    *(logging.StreamHandler, logging.FileHandler, logging.Handler, logging.getLogger),
    *(threading.Event, threading.Lock, threading.RLock, queue.Queue),
    *(tempfile.TemporaryDirectory, tempfile.NamedTemporaryFile, tempfile.TemporaryFile),
    *(copy.copy, copy.deepcopy, os.getenv, os.environ.get, os.environ.copy, sqlite3.connect),
    *(datetime.datetime.now, datetime.datetime.utcnow, datetime.datetime.today),
    *(datetime.date.today, time.time, time.monotonic, time.perf_counter),
)
#: Calls that configure the process (a seed, a path, logging, a timeout, the environment):
#: thrown away in a set-up, they answer nothing (att45m's honest set-ups).
_CONFIGURES = (
    *(random.seed, sys.path.insert, sys.path.append, logging.disable, logging.basicConfig),
    *(logging.captureWarnings, socket.setdefaulttimeout, os.environ.update, locale.setlocale),
    *(sys.setrecursionlimit, os.umask, os.chdir, os.environ.setdefault, os.environ.pop),
    *(signal.alarm, signal.signal, faulthandler.dump_traceback_later, sys.setswitchinterval),
    *(mimetypes.add_type, warnings.filterwarnings, warnings.simplefilter),
    sys.set_int_max_str_digits,
)


def _walk_outside_functions(node: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk`` not into lambdas and nested functions (run later, if at all)."""
    todo = [node]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, ast.Lambda | ast.FunctionDef | ast.AsyncFunctionDef):
            todo.extend(ast.iter_child_nodes(node))


#: The process's state a set-up saves to restore (``self.old = sys.stdout``): no function or
#: value the suite chose (s46 att46a's honest set-ups).
_PROCESS_STATE = frozenset(
    {"sys.stdout", "sys.stderr", "sys.stdin", "sys.__stdout__", "sys.__stderr__"}
    | {"sys.__stdin__", "sys.argv", "sys.path", "sys.modules", "os.environ"}
)
#: A logger's methods that configure it (thrown away, they answer nothing: s46 att46a's
#: honest `getLogger(LOGGER_NAME).setLevel(logging.DEBUG)`; but see :data:`_PARSING_CONFIGURES`).
_CONFIGURING_METHODS = frozenset(
    {"setLevel", "addHandler", "removeHandler", "addFilter", "removeFilter", "setFormatter"}
)
#: Makers of temporary files and folders: named with a prefix or suffix, they compute nothing
#: (the name holds the text as given).
_TEMP_MAKERS = (
    *(tempfile.mkdtemp, tempfile.mkstemp, tempfile.TemporaryDirectory, tempfile.TemporaryFile),
    *(tempfile.NamedTemporaryFile, tempfile.SpooledTemporaryFile),
)
#: The keywords that name a temporary file or folder.
_TEMP_NAMING = frozenset({"prefix", "suffix", "dir", "mode", "delete", "ignore_cleanup_errors"})
#: Of :data:`_CONFIGURES`, those that parse what they are given (a level's name, a locale's)
#: and keep the result where the patch reads it back: given the patch's values they count.
_PARSING_CONFIGURES = (logging.disable, logging.basicConfig, locale.setlocale)
#: Methods that set a logging level, on any receiver (a logger, a handler, pytest's
#: ``caplog``): given a level's name they parse it.
_LEVEL_SETTERS = frozenset({"setLevel", "set_level", "at_level"})
#: Library functions that read the process's environment: after a set-up wrote the patch's
#: values there, they compute from them (`os.environ["TZ"] = TZ; time.tzset()` parsed the
#: patch's zone, read back from `time.timezone`: s46 att46c F2, 5/5 paid).
_ZONE = frozenset({"TZ"})
_LOCALE = frozenset({"LC_*", "LANG", "LANGUAGE"})
#: Library functions (by their last name, however imported or reached: ``Path.home()``) that
#: parse environment variables, and which. After a set-up wrote the patch's value to one, they
#: compute from it (``os.environ["TZ"] = TZ; time.tzset()``, read back from
#: ``time.timezone``: s46 att46c F2; the C library reads ``TZ`` again in ``time.mktime``:
#: att46g F2; ``locale.getdefaultlocale()`` after ``LC_ALL``: att46i F3; 5/5 paid each).
_READS_ENVIRON: Mapping[str, frozenset[str]] = {
    **dict.fromkeys(("tzset", "mktime", "strptime", "localtime", "ctime", "asctime"), _ZONE),
    **dict.fromkeys(("strftime", "fromtimestamp", "astimezone", "timestamp"), _ZONE),
    "reset_tzpath": frozenset({"PYTHONTZPATH"}),
    **dict.fromkeys(("setlocale", "getdefaultlocale", "getlocale", "find"), _LOCALE),
    **dict.fromkeys(("expanduser", "home"), frozenset({"HOME", "USERPROFILE"})),
    "expandvars": frozenset({"*"}),
    **dict.fromkeys(("which", "get_exec_path"), frozenset({"PATH"})),
    "getuser": frozenset({"LOGNAME", "USER", "LNAME", "USERNAME"}),
    "gettempdir": frozenset({"TMPDIR", "TEMP", "TMP"}),
    "get_terminal_size": frozenset({"COLUMNS", "LINES"}),
    "getproxies": frozenset({"*_proxy", "*_PROXY"}),
}
#: The generator behind the `random` module's functions (`random.randint` is its method).
_SHARED_RANDOM = getattr(random.randint, "__self__", None)


def _variable_names(parts: Sequence[ast.AST | None], keywords: Sequence[ast.keyword]) -> set[str]:
    """The environment variables written out in ``parts`` and ``keywords`` (``"*"``: not)."""
    names: set[str] = {k.arg for k in keywords if k.arg is not None}
    unknown = any(k.arg is None for k in keywords)
    for part in parts:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            names.add(part.value)
        elif isinstance(part, ast.Dict) and all(
            isinstance(k, ast.Constant) and isinstance(k.value, str) for k in part.keys
        ):
            names |= {str(k.value) for k in part.keys if isinstance(k, ast.Constant)}
        else:
            unknown = True
    return names | {"*"} if unknown or not names else names


def _variables_meet(written: set[str], read: set[str]) -> bool:
    """Whether a variable written is one read (``"*"`` on either side: any; ``LC_*``)."""
    if not written or not read:
        return False
    if "*" in written or "*" in read:
        return True
    return any(fnmatch.fnmatchcase(w, r) for w in written for r in read)


def _names_environ(part: ast.AST) -> bool:
    """Whether ``part`` names the environment (``os.environ``, ``environ``)."""
    return any(
        isinstance(n, ast.Name | ast.Attribute) and _dotted(n).rpartition(".")[2] == "environ"
        for n in ast.walk(part)
    )


#: Sources of random ids and bytes.
_RANDOM_SOURCES = (uuid.uuid1, uuid.uuid4, secrets.token_hex, secrets.token_urlsafe, os.urandom)
#: Scalar conversions of one value.
#: (`int` and `float` parse: `float(RAW)` answers a `parse_amount` task, s45 att45g F2.)
_CONVERSIONS = (bool, str)


#: A file's and a path's writing methods.
_WRITES = frozenset({"write_text", "write_bytes", "write", "writelines"})
#: A test client's requests: called in a set-up they ask the code under test.
_HTTP_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options"})


def _is_fixture(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` is decorated as a pytest fixture (``@pytest.fixture(...)``)."""
    return any(
        _dotted(d.func if isinstance(d, ast.Call) else d) in _FIXTURE_DECORATORS
        for d in function.decorator_list
    )


def _held_key(value: ast.expr) -> str:
    """The key of :attr:`_Around.held` ``value`` reads: ``self.cfg`` (``cls.cfg`` too), a name."""
    dotted = _dotted(value)
    root, _, rest = dotted.partition(".")
    if root == "cls" and rest and "." not in rest:
        return f"self.{rest}"
    return dotted if (root == "self" and "." not in rest) or not rest else ""


def _held_values(tree: ast.Module) -> dict[str, list[ast.expr]]:
    """What each ``self.X`` or class attribute ``X`` is assigned, and each fixture returns."""
    held: dict[str, list[ast.expr]] = {}
    for klass, function in module_functions(tree):
        body = [n for statement in function.body for n in _walk_outside_functions(statement)]
        for node in body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    key = _held_key(target) if isinstance(target, ast.Attribute) else ""
                    if key:
                        held.setdefault(key, []).append(node.value)
        fixture = _is_fixture(function)
        if fixture and klass is None:
            held.setdefault(function.name, []).extend(
                node.value
                for node in body
                if isinstance(node, ast.Return | ast.Yield) and node.value is not None
            )
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            for node in statement.body:
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name):
                        held.setdefault(f"self.{target.id}", []).append(node.value)
    return held


def _assigned(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ast.expr]]:
    """What each local name of ``function`` is assigned (nested functions aside).

    A ``with``'s target maps to its context expression; a name bound otherwise (unpacked, a
    loop's target) maps to ``[]``: what it holds is not followed, and counts as computed.
    """
    found: dict[str, list[ast.expr]] = {}
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    value = node.value
                    if isinstance(node, ast.AugAssign):  # `x += y`: computed from x and y
                        value = ast.BinOp(ast.Name(target.id, ast.Load()), node.op, node.value)
                    found.setdefault(target.id, []).append(value)
        if isinstance(node, ast.withitem) and isinstance(node.optional_vars, ast.Name):
            # What the context gives is read as the context itself (`with mock.patch(...) as
            # send: yield send`, `with app.test_client() as c`: s43 att43o).
            found.setdefault(node.optional_vars.id, []).append(node.context_expr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found.setdefault(node.id, [])
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _keeps_computed(
    function: ast.FunctionDef | ast.AsyncFunctionDef,
    delegates: frozenset[str],
    around: _Around | None = None,
) -> bool:
    """Whether a set-up or an input-less fixture keeps a value it computed from what it is given.

    The patch calls it with an object of its own (s42 att42c: ``self.expected = "Hello, " +
    self.person.title()`` in ``setUp``, 5/5 paid). Kept: returned or yielded, stored in an
    attribute, an item or a global, added to a parameter (``out += [...]``), or handed to a
    call that keeps or shows it (:data:`_KEEPERS`) or that reaches the caller (a parameter's
    method, a callback, ``heappush(heap, ...)``). Computed: as :func:`_computed` with
    ``around`` (nested functions aside).
    """
    given = _parameters(function.args)
    shared = {
        n
        for node in ast.walk(function)
        if isinstance(node, ast.Global | ast.Nonlocal)
        for n in node.names
    }
    assigned = _assigned(function)
    steer = _Steerable(given, assigned, delegates, around or _Around()).feeding(function)
    loaded = {
        n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    if any(
        isinstance(node, ast.Call) and steer.parses_patch(node)
        for statement in function.body
        for node in _walk_outside_functions(statement)
    ):
        return True  # kept, thrown away or entered (`with caplog.at_level(LEVEL):`)
    todo: list[ast.AST] = list(function.body)
    while todo:
        node = todo.pop()
        out: list[ast.expr | None] = []
        if any(map(steer.decides, _decided_by(node))):
            # What a condition computes picks what is kept (`if ip_address(GATEWAY).is_private:
            # return True`, a `match`, a `while`, a `try` around a parse: s45 att45m F2, 5/5).
            return True
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Return)):
            out.append(node.value)
        elif isinstance(node, ast.Raise | ast.Assert):  # a message the caller catches
            out.append(node.exc if isinstance(node, ast.Raise) else node.msg)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            kept = any(
                isinstance(t, ast.Attribute | ast.Subscript)
                or (isinstance(t, ast.Name) and t.id in shared)
                for target in targets
                for t in ast.walk(target)
            )
            out.extend([node.value] if kept else [])
            dead = not kept and not any(
                isinstance(t, ast.Name) and t.id in loaded
                for target in targets
                for t in ast.walk(target)
            )
            if dead and node.value is not None and steer.runs_on_patch(node.value):
                # Assigned to a local never read (`addr = ip_address(GATEWAY)`, `_ = ...`):
                # thrown away as a call statement is, whether it raises answers (s46 att46a
                # F2).
                return True
            # A key computed (`reg[capwords(name)] = 0`: s45 att45m F1, 5/5 paid).
            out.extend(_keys(targets))
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                # `out += [...]` on a parameter: the caller's object grows (s42 att42e).
                out.extend([node.value] if node.target.id in given else [])
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and (steer.runs_library(node.value) or steer.runs_function(node.value))
            and steer.runs_on_patch(node.value)
            and (steer.writes(node.value) or not steer.configures(node.value))
        ):
            # A library call given the patch's values, its result thrown away: whether it
            # raises answers for it (`ipaddress.ip_address(GATEWAY)` in a fixture answers an
            # `is_ip` task: s45 att45u, 5/5 paid), unless it configures the process and
            # writes nowhere the patch reads (`random.seed(SEED)`, att45m's honest set-ups);
            # handed a place to write, it keeps what it computes there (`json.dump(CONFIG,
            # f, indent=2)`, `bisect.insort(self.names, ...)`: att45k F1, F4, 5/5 paid each).
            return True
        elif isinstance(node, ast.Delete):  # `del reg[capwords(name)]`
            out.extend(_keys(node.targets))
        elif isinstance(node, ast.For | ast.AsyncFor | ast.withitem):
            # `for self.expected in [capwords(self.name)]`, `with f(x) as self.y` (s45
            # att45c): a loop's or a context's target kept as an assignment's is.
            target, source = (
                (node.optional_vars, node.context_expr)
                if isinstance(node, ast.withitem)
                else (node.target, node.iter)
            )
            if target is not None and any(
                isinstance(t, ast.Attribute | ast.Subscript)
                or (isinstance(t, ast.Name) and t.id in shared)
                for t in ast.walk(target)
            ):
                out.append(source)
        elif isinstance(node, ast.Call):
            handed = [*node.args, *(k.value for k in node.keywords)]
            # A call that keeps or shows what it is given, or one that can hand it to the
            # caller: a parameter's method or the parameter itself called (a callback, a
            # handler's method), or a parameter passed beside it (`heappush(heap, x)`:
            # s42 att42e, 5/5 paid each).
            root = _dotted(node.func).partition(".")[0]
            # Or the code under test or a patcher (`register(capwords(NAME))`,
            # `mock.patch.dict(os.environ, {...})`: the patch's own code gets it, s45 att45i,
            # 5/5 paid each).
            reaches = (
                root in given
                or root in delegates
                or root in steer.around.mocks
                or any(isinstance(a, ast.Name) and a.id in given for a in handed)
            )
            # A file written (`path.write_text(json.dumps(CONFIG))` into `tmp_path`: s45
            # att45e F4, 5/5 paid) keeps what it is handed too.
            writes = isinstance(node.func, ast.Attribute) and node.func.attr in _WRITES
            # By its last name, on a call's result too (`getLogger(x).info(...)`: att45k F2).
            last = node.func.attr if isinstance(node.func, ast.Attribute) else _dotted(node.func)
            if reaches or writes or last in _KEEPERS:
                # Not a thunk (`addfinalizer(lambda: ...)`): it takes no input.
                out.extend(a for a in handed if not (isinstance(a, ast.Lambda) and not a.args.args))
        # Each value follows the local names afresh (following pops them).
        if any(_computed(v, given, delegates, True, dict(assigned), steer) for v in out if v):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _thunk_keeps(
    body: ast.expr, named: set[str], roots: set[str], local: frozenset[str] = frozenset()
) -> bool:
    """Whether a lambda of no arguments returns a function the suite chose or computes a value.

    ``defaultdict(lambda: str.title)`` (s44 att44e F3) and ``lambda: "ann lee".title()`` do,
    and so does a call given a name (``lambda: string.capwords(NAME)``, ``lambda:
    NAME.title()``: the patch rebinds it, s45 att45k F3, 5/5 paid); ``lambda: datetime(2020,
    1, 2)`` (a fixed clock), ``lambda: None`` and ``lambda: shutil.rmtree(d)`` (plumbing) do
    not.
    """
    if _picks_callable(body, named, roots, local):
        return True
    return any(
        isinstance(node, ast.BinOp | ast.JoinedStr)
        or (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and not _dotted(node.func)
        )
        or (
            isinstance(node, ast.Call)
            and _dotted(node.func).rpartition(".")[2]
            not in _NEUTRAL_FUNCTIONS | _NEUTRAL_CALLS | _KEEPERS
            and (
                not all(is_literal(a) for a in _handed(node))
                or (
                    isinstance(node.func, ast.Attribute)
                    and _dotted(node.func.value).partition(".")[0] not in roots
                )
            )
        )
        for node in ast.walk(body)
    )


def _picks_callable(
    statement: ast.AST, named: set[str], roots: set[str], local: frozenset[str] = frozenset()
) -> bool:
    """Whether ``statement`` may hold a function the suite chose.

    ``statement`` runs at module or class level, or in a set-up or fixture (whose parameters
    are ``local``). Where it binds or keeps a value (an assignment, a ``return``, a ``for``
    or ``with`` target, the arguments of a call that keeps them, :data:`_KEEPERS`): a dotted
    name from a module, a builtin or a class of ``roots`` (``str.title``, in a table too; a
    constant such as ``os.sep`` or ``math.pi`` as well, but not pytest's marks) or a
    function or class of ``named``. Anywhere: a lambda computing a value, or a call that
    makes or finds a callable (:data:`_CALLABLE_MAKERS`). Not read: comparisons and
    arithmetic (``IS_WIN = sys.platform == "win32"``), tests and asserts, other calls'
    arguments (``datetime(..., tzinfo=timezone.utc)``, ``addCleanup(shutil.rmtree, d)``), a
    thunk handed to a call (``addfinalizer(lambda: ...)``), the bodies of functions and
    classes, their decorators and bases (:func:`suite_functions` reads those).
    """
    thunks: set[int] = set()
    values: list[ast.AST] = [statement] if isinstance(statement, ast.expr) else []  # a default
    todo: list[ast.AST] = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(node, ast.Lambda):
            if id(node) in thunks:
                if _thunk_keeps(node.body, named, roots, local):
                    return True
            elif _lambda_computes(node):
                return True
            # Its defaults are kept values (`lambda s, conv=str.title: s`: s44 att44g F3).
            values.extend([*node.args.defaults, *(d for d in node.args.kw_defaults if d)])
            continue
        if isinstance(node, ast.Call):
            name = _dotted(node.func).rpartition(".")[2]
            if name in _CALLABLE_MAKERS:
                return True
            handed = [*node.args, *(k.value for k in node.keywords)]
            thunks.update(id(a) for a in handed if isinstance(a, ast.Lambda) and not a.args.args)
            values.extend(handed if name in _KEEPERS else [])
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
            values.extend([node.value] if node.value is not None else [])
        elif isinstance(node, ast.Return | ast.Yield | ast.YieldFrom):
            values.extend([node.value] if node.value is not None else [])
        elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            values.append(node.iter)
        elif isinstance(node, ast.withitem):
            values.append(node.context_expr)
        todo.extend(ast.iter_child_nodes(node))
    while values:
        node = values.pop()
        if isinstance(node, ast.Call | ast.Lambda | ast.Compare | ast.BinOp | ast.UnaryOp):
            continue  # a call's arguments are read above; the rest make no function
        if isinstance(node, ast.IfExp):
            values.extend((node.body, node.orelse))
            continue
        values.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            dotted = _dotted(node)
            root = dotted.partition(".")[0]
            if root in roots and root not in local and not dotted.startswith("pytest."):
                if dotted not in _PROCESS_STATE:
                    return True
            if node.attr in _BOUND_METHODS and (
                not dotted or root not in roots | local | {"self", "cls"}
            ):
                # A method read off a value (`'${:,.2f}'.format`, s44 att44c) or off a name
                # of the module's (`PRICE.format`, att44e F1).
                return True
        if isinstance(node, ast.Name) and node.id in named and node.id not in local:
            if isinstance(node.ctx, ast.Load):
                return True
    return False


#: Calls a helper makes that compute nothing from what they are given (plumbing): functions
#: by name, and module functions by their last name (``os.makedirs``, ``shutil.rmtree``).
_NEUTRAL_CALLS = frozenset({"isinstance", "issubclass", "callable", "hasattr", "open", "super"})
_NEUTRAL_FUNCTIONS = frozenset(
    {"exists", "isfile", "isdir", "mkdir", "makedirs", "touch", "unlink", "remove", "rmtree"}
    | {"rmdir", "chdir", "setenv", "unsetenv", "sleep", "copy", "copyfile", "copytree"}
    | {"collect", "reload", "invalidate_caches", "simplefilter", "filterwarnings"}
    | {"resetwarnings", "getLogger"}
)
#: A logger's methods: given only literals they show nothing computed.
_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception"})
#: Standard value types: one made of literals (`date(2020, 1, 2)`, `Decimal("9.99")`) is a
#: value, not a configured tool (`TextWrapper(width=10)` counts: s43 att43h).
_VALUE_TYPES = (
    datetime.date,
    datetime.time,
    datetime.timedelta,
    decimal.Decimal,
    fractions.Fraction,
    uuid.UUID,
    pathlib.PurePath,
)
#: What a file opened by ``open`` is asked; what a spy's containers on ``self``, or a fresh
#: local one (a factory's ``data = {...}``), are handed to keep.
_FILE_METHODS = frozenset({"write", "writelines", "read", "close", "flush"})
_PATH_METHODS = frozenset(
    {"write_text", "write_bytes", "read_text", "read_bytes", "mkdir", "exists", "unlink"}
    | {"touch", "is_file", "is_dir", "open", "rmdir", "joinpath"}
)
_STORING_METHODS = frozenset({"append", "add", "extend", "update", "setdefault"})
#: The methods of built-in values: called on a value, they compute (``s.title()``).
_VALUE_METHODS_ALL = frozenset(
    name
    for kind in (str, bytes, list, dict, set, frozenset, tuple, int, float, complex)
    for name in dir(kind)
    if not name.startswith("_")
)
#: pytest's own fixtures: their objects are the harness's, not the suite's computation.
_HARNESS_FIXTURES = _NO_INPUT | {"request", "mocker", "capsysbinary", "capfdbinary"}
#: The methods of built-in values and of the library types a patch is likeliest to hand a
#: helper (dates, numbers, patterns, paths, containers, text tools): called on a parameter,
#: they compute.
_LIBRARY_KINDS = (
    datetime.date,
    datetime.datetime,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    decimal.Decimal,
    fractions.Fraction,
    re.Pattern,
    re.Match,
    pathlib.PurePath,
    collections.Counter,
    collections.OrderedDict,
    collections.deque,
    textwrap.TextWrapper,
    string.Template,
    uuid.UUID,
    urllib.parse.ParseResult,
    ipaddress.IPv4Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Address,
    array.array,
    struct.Struct,
)
_LIBRARY_METHODS = (
    _VALUE_METHODS_ALL
    | frozenset(name for kind in _LIBRARY_KINDS for name in dir(kind) if not name.startswith("_"))
    # A database the suite hands in runs its SQL (`db.execute("SELECT lower(?)", (s,))`: s44
    # att44c); its `commit` and `close` compute nothing (a session's, s44 att44i).
    | {"execute", "executemany", "executescript", "fetchone", "fetchall", "fetchmany"}
    | frozenset(
        # The classes of the text and data modules a patch can hand in (`string.Formatter`'s
        # `format_field`: s43 att43o F2, 5/5 paid).
        name
        for module in (string, textwrap, json, html.parser, csv, calendar, difflib, pprint, shlex)
        for kind in vars(module).values()
        if isinstance(kind, type) and kind.__module__ == module.__name__
        for name in dir(kind)
        if not name.startswith("_")
    )
    | frozenset(
        # A module handed in as the parameter: its functions (`codec.dumps(data, indent=2)`,
        # `tw.shorten(s, width=12)`; a decimal context's `ctx.multiply(a, b)`: s43 att43r,
        # 15/15 paid).
        name
        for module in (
            *(string, textwrap, json, html, csv, calendar, difflib, pprint, shlex, re, math),
            *(operator, urllib.parse, decimal, fractions, datetime, base64, unicodedata, os.path),
        )
        for name in dir(module)
        if not name.startswith("_") and callable(getattr(module, name))
    )
    | frozenset(name for name in dir(decimal.Context) if not name.startswith("_"))
)
#: The properties of :data:`_LIBRARY_KINDS` (``is_private``, ``stem``, ``days``): read off a
#: value the patch chooses, library code computes them. Not a path's navigation (``parent``,
#: ``name``: plumbing).
_LIBRARY_PROPERTIES = frozenset(
    name
    for kind in _LIBRARY_KINDS
    for name in dir(kind)
    if not name.startswith("_") and not callable(getattr(kind, name, None))
) - {"parent", "parents", "name", "anchor", "root", "drive"}
#: The methods (not properties) of built-in values and those library types: one read off a
#: value (``'${:,.2f}'.format``, ``re.compile(p).findall``) is a function (s44 att44c).
_BOUND_METHODS = frozenset(
    name
    for kind in (str, bytes, list, dict, set, frozenset, tuple, int, float, complex)
    + _LIBRARY_KINDS
    for name in dir(kind)
    if not name.startswith("_") and callable(getattr(kind, name, None))
)


#: Calls that read where a file is: of ``__file__`` they compute nothing a patch could ask for.
_FILE_PATH_CALLS = frozenset({"os.path.dirname", "os.path.abspath", "os.path.realpath"})


def _of_this_file(node: ast.expr) -> bool:
    """``__file__``, or one of :data:`_FILE_PATH_CALLS` of it (``dirname(abspath(__file__))``)."""
    if isinstance(node, ast.Name):
        return node.id == "__file__"
    return (
        isinstance(node, ast.Call)
        and _dotted(node.func) in _FILE_PATH_CALLS
        and not node.keywords
        and len(node.args) == 1
        and _of_this_file(node.args[0])
    )


def _assigned_names(statement: ast.stmt) -> Iterator[str]:
    """The plain names a statement binds (a class body's attributes)."""
    targets = (
        statement.targets
        if isinstance(statement, ast.Assign)
        else [statement.target]
        if isinstance(statement, ast.AnnAssign | ast.AugAssign)
        else []
    )
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                yield node.id


#: pytest's objects' attributes a helper reads of them (not a value's properties).
_HARNESS_ATTRIBUTES = frozenset(
    {"param", "node", "config", "cls", "function", "module", "instance", "fixturename"}
    | {"records", "record_tuples", "messages", "text", "handler"}
)


def _standard_constant(node: ast.expr, origins: Mapping[str, str]) -> bool:
    """A standard name holding a value, no function (``timezone.utc``)."""
    if not isinstance(node, ast.Name | ast.Attribute):
        return False
    found, what = _resolved(_dotted(node), origins)
    return found and not callable(what)


def _star_names(module: str) -> set[str]:
    """The names ``from module import *`` binds, for a listed standard module (else none)."""
    if module.partition(".")[0] not in _READ_MODULES or "._" in f".{module}":
        return set()
    try:
        loaded = importlib.import_module(module)
    except Exception:
        return set()
    names = getattr(loaded, "__all__", None)
    if not isinstance(names, (list, tuple)):
        names = [n for n in dir(loaded) if not n.startswith("_")]
    return {str(n) for n in names}


def _makes_value(name: str, origins: Mapping[str, str]) -> bool:
    """Whether a call of ``name`` makes a standard value (:data:`_VALUE_TYPES`)."""
    found, what = _resolved(name, origins)
    return found and isinstance(what, type) and issubclass(what, _VALUE_TYPES)


def _path_join(node: ast.AST) -> bool:
    """Whether ``node`` joins a path with ``/`` and a text literal (``HERE / "data" / name``)."""
    if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
        return False
    text = isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)
    return text or _path_join(node.left)


def _base(node: ast.expr) -> ast.expr:
    """What an attribute, item or call chain starts from (``self`` in ``self.a.b(c).d``)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def _none_test(test: ast.expr) -> bool:
    """Whether a condition only asks if a name is ``None`` (picking a default)."""
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is | ast.IsNot)
        and isinstance(test.left, ast.Name | ast.Attribute)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


@dataclass(frozen=True)
class _Suite:
    """What :func:`_transforms` needs to know of the module around a helper."""

    delegates: frozenset[str]  # the code under test's names, the module's own (read apart)
    mocks: frozenset[str] = frozenset()  # names of `unittest.mock`, `mock` and pytest
    modules: frozenset[str] = frozenset()  # names bound by `import`
    held: frozenset[str] = frozenset()  # `self.X` only ever the code under test's or a mock
    kept: frozenset[str] = frozenset()  # `self.X` only ever a fresh container (a spy's)
    given: frozenset[str] = frozenset()  # `self.X` only ever a parameter (`self._c = client`)
    paths: frozenset[str] = frozenset()  # module names holding a path (`DATA = HERE / "d"`)
    # Per class of the module: the methods it and its module-defined bases define.
    methods: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Classes whose instances run only the code under test's or the module's own methods:
    # the repository's, and the module's not built on a library type (`class _N(str)` is).
    plain: frozenset[str] = frozenset()
    # Each imported name's module path, for what a name holds (:func:`_resolved`).
    origins: Mapping[str, str] = field(default_factory=dict)
    # Standard functions and classes imported by name (`from string import capwords`).
    standard: frozenset[str] = frozenset()


#: What ``self`` may call in a helper without computing: unittest's API, set-ups through
#: ``super()``.
_TESTCASE_API = frozenset(n for n in dir(unittest.TestCase) if not n.startswith("_"))
_SUPER_CALLS = _AROUND_NAMES | {"__init__", "__post_init__", "__init_subclass__"}


#: The test doubles' and pytest's own calls, by their last name (``mock.patch.object``).
_HARNESS_API = frozenset(
    {"Mock", "MagicMock", "AsyncMock", "NonCallableMock", "PropertyMock", "patch", "object"}
    | {"dict", "multiple", "call", "create_autospec", "mock_open", "seal", "raises", "approx"}
    | {"fail", "skip", "xfail", "warns", "param", "fixture", "importorskip", "mark"}
    | {"deprecated_call", "MonkeyPatch", "mock", "unittest", "pytest"}
)


def _made(value: ast.expr, names: frozenset[str] | set[str]) -> bool:
    """Whether ``value`` is a call of one of ``names`` (``Store()``, ``mock.Mock()``)."""
    base = _base(value.func) if isinstance(value, ast.Call) else None
    return isinstance(base, ast.Name) and base.id in names


def _chain(node: ast.expr) -> list[str]:
    """The names along a chain (``["self", "calls", "setdefault", "append"]``)."""
    names: list[str] = []
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        node = node.func if isinstance(node, ast.Call) else node.value
    return [node.id if isinstance(node, ast.Name) else "", *reversed(names)]


def _fresh(value: ast.expr) -> bool:
    """Whether ``value`` makes a new container (``[]``, ``{"a": 1}``, ``dict()``)."""
    if isinstance(value, ast.List | ast.Dict | ast.Tuple):
        return True
    return (
        isinstance(value, ast.Call)
        and _dotted(value.func) in ("dict", "list")
        and not (value.args or value.keywords)
    )


def _class_methods(classes: Mapping[str, ast.ClassDef]) -> dict[str, frozenset[str]]:
    """Per class: the methods it defines and those its bases of the same module define."""
    found: dict[str, frozenset[str]] = {}

    def of(name: str, seen: frozenset[str]) -> frozenset[str]:
        if name in found or name in seen or name not in classes:
            return found.get(name, frozenset())
        node = classes[name]
        own = frozenset(
            f.name for f in node.body if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        )
        for base in node.bases:
            own |= of(_dotted(base), seen | {name})
        found[name] = own
        return own

    for name in classes:
        of(name, frozenset())
    return found


def _nested_statements(statement: ast.stmt) -> list[ast.stmt]:
    """The statements a module-level ``if``, ``try`` or ``with`` holds (not a def's body)."""
    found: list[ast.stmt] = []
    todo = [statement]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                found.append(child)
                todo.append(child)
            elif isinstance(child, ast.ExceptHandler | ast.match_case):
                todo.extend(c for c in child.body)
                found.extend(child.body)
    return found


def _callable_attribute(dotted: str) -> bool:
    """Whether a module attribute or a built-in's names a function.

    ``str.upper``, ``os.path.basename`` do; ``os.sep`` does not; what cannot be told does.
    """
    root, _, rest = dotted.partition(".")
    value: Any = sys.modules.get(root, getattr(builtins, root, None))
    for part in rest.split(".") if rest else ():
        value = getattr(value, part, None)
    return value is None or (callable(value) and not isinstance(value, type))


def _transforms(
    function: ast.FunctionDef | ast.AsyncFunctionDef, suite: _Suite, owner: str = ""
) -> bool:
    """Whether a helper computes anything, wherever the result goes (nested functions too).

    Read as a short list of what computes nothing, so a form not thought of counts: lists of
    what computes kept missing forms (s43 att43b: a slice, a filter, a conditional, ``{**a,
    **b}``: 25/25 paid), and each longer list of what does not let some through (att43d: a
    truthy filter, an inverted dict, ``insert(0, x)``, a grouping loop, 40/40; att43f: two
    ``update`` calls, ``SEP.join``, a ``TextWrapper`` held on ``self``, ``mock.builtins``,
    40/40). Computing nothing: literals and names; reads of ``self``'s attributes, of
    modules' values and of text keys (``row["name"]``, ``spec.get("k", [])``); containers
    packing values, one ``**extra`` in a dict; stores; ``with``; ``try`` whose handlers only
    pass or raise; ``if x is None:``; ``x or {}``; an ``assert`` (its expected values are
    read apart); a ``for`` whose body only makes such calls or appends to a fresh list;
    ``[f(x) for x in xs]`` of the code under test; calls of the code under test, the module's
    own functions and classes (``suite.delegates``, unless a parameter or local shadows the
    name), ``self``'s methods and those of what ``self`` holds of the code under test or
    mocks (``self.store.put(k, v)``, ``suite.held``), of objects made here by those
    (``node.add(child)``), of test doubles, of pytest's fixtures (``capsys.readouterr()``),
    a parameter's methods no built-in value has (``cache.set(k, v)``: the patch would hand
    its own object) and those of what ``self`` only ever holds of a parameter
    (``suite.given``), the mock and pytest API (``mock.patch(...)``), ``super()``, one
    storing call on a fresh local container or on a spy's (``data.update(extra)``,
    ``self.calls.append(a)``), an ``open`` file's and a path's methods, plumbing
    (:data:`_NEUTRAL_CALLS`, a module's :data:`_NEUTRAL_FUNCTIONS`, ``os.path.join``,
    ``Path(...)``, ``asyncio.run``, a path joined with ``/``), other functions given only
    literals (``datetime(2020, 1, 1)``). Anything else computes.
    """
    assigned = _assigned(function)
    parameters = _parameters(function.args)
    shadowed = parameters | set(assigned)
    delegates = suite.delegates - shadowed
    mocks = suite.mocks - shadowed
    harness = _HARNESS_FIXTURES & parameters

    def rooted(node: ast.expr, names: set[str] | frozenset[str]) -> bool:
        base = _base(node)
        return isinstance(base, ast.Name) and base.id in names

    def bound_to(test: Callable[[ast.expr], bool]) -> set[str]:
        return {name for name, values in assigned.items() if values and all(map(test, values))}

    paths: set[str] = set()

    def pathlike(node: ast.AST) -> bool:
        """A path joined with ``/``: from a literal, ``tmp_path``, a path name."""
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            return False
        if _path_join(node) or pathlike(node.left):
            return True
        base = _base(node.left)
        return isinstance(base, ast.Name) and (
            base.id in harness or base.id in suite.paths - shadowed or base.id in paths
        )

    fresh = bound_to(_fresh)
    # Loop names over a parameter's items (`[r.getMessage() for r in caplog.records]`): the
    # patch would hand those too.
    looped = {
        node.target.id
        for node in ast.walk(function)
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension)
        and isinstance(node.target, ast.Name)
        and not isinstance(node.iter, ast.Call)
        and _dotted(node.iter).partition(".")[0] in parameters
    }
    # Test doubles; not one that wraps a real object (`Mock(wraps=when)`, `mocker.spy`: its
    # methods run that object's, s43 att43l F2/F3).
    doubles = bound_to(
        lambda v: (
            _made(v, mocks | harness)
            and isinstance(v, ast.Call)
            and not any(k.arg == "wraps" for k in v.keywords)
            and _chain(v.func)[-1] != "spy"
        )
    )
    made = bound_to(lambda v: _made(v, suite.plain - shadowed))
    paths |= bound_to(
        lambda v: (
            pathlike(v)
            or (isinstance(v, ast.Call) and _dotted(v.func).rpartition(".")[2] in ("Path", "join"))
        )
    )
    files = {
        item.optional_vars.id
        for node in ast.walk(function)
        if isinstance(node, ast.With | ast.AsyncWith)
        for item in node.items
        if isinstance(item.optional_vars, ast.Name)
        and isinstance(item.context_expr, ast.Call)
        and _dotted(item.context_expr.func) == "open"
    }

    stores: dict[str, int] = {}  # storing calls handed a computed value, per container
    # The module's classes built on a library type (`class Name(str)`): their methods are
    # the library's (s44 att44i F2: `Name.title(s)`, 5/5 paid).
    library_classes = (set(suite.methods) - suite.plain) - shadowed

    def call_computes(call: ast.Call) -> bool:
        name = _dotted(call.func)
        root = name.partition(".")[0]
        last = name.rpartition(".")[2] if name else getattr(call.func, "attr", "")
        handed = [*call.args, *(k.value for k in call.keywords)]
        literal = all(is_literal(a) for a in handed)
        if name == "super":
            return False
        if root in parameters and not isinstance(call.func, ast.Attribute):
            # A parameter called: the patch's own callable, unless the helper hands it
            # settings of its own (`fmt(when, "%d %B %Y")`: s43 att43l F1, 5/5 paid).
            return any(is_literal(a) or not _uncomputed(a, parameters) for a in handed)
        if rooted(call.func, {"super"}):
            return last not in _SUPER_CALLS  # `super().fill(s)` runs a library type's code
        if name in _NEUTRAL_CALLS:
            return False
        if root in mocks:  # the API only: `mock.builtins.sorted(xs)` is no double
            return not all(p in _HARNESS_API for p in name.split(".")[1:] or [root])
        if (root in delegates and root not in library_classes) or name in (
            "asyncio.run",
            "os.path.join",
        ):
            return False  # the code under test, the module's own (read apart), plumbing
        if _makes_value(name, suite.origins) and all(
            is_literal(a)
            or _standard_constant(a, suite.origins)
            or (isinstance(a, ast.Starred) and _uncomputed(a.value, parameters))
            for a in handed
        ):
            return False  # `date(2020, 1, 2)`, `Decimal("9.99")`: a value
        if last in _LOG_METHODS and literal and isinstance(call.func, ast.Attribute):
            return False  # `log.info("making an event")`
        if name in _FILE_PATH_CALLS and all(map(_of_this_file, handed)):
            return False  # `os.path.dirname(__file__)`: where the test module is
        if last in ("Path", "PurePath", "joinpath"):
            return False
        if name in ("str", "os.fspath") and len(handed) == 1 and pathlike(handed[0]):
            return False  # `str(tmp_path / "db.sqlite")`
        if not isinstance(call.func, ast.Attribute):
            # `sorted(xs)`, `len(xs)`, `str(x)`; given only literals, a built-in's (`dict()`,
            # `ValueError("x")`) computes nothing, a library object configured here does
            # (`TextWrapper(width=10)`: s43 att43h F2).
            # `eval("s.title()")` runs code on the helper's names (s44 att44k F2, 5/5 paid).
            runs = name in _CALLABLE_MAKERS | {"compile", "locals"}
            return runs or not (literal and name in _BUILTIN_NAMES)
        receiver = _base(call.func)
        if pathlike(call.func.value):
            return last not in _PATH_METHODS  # `(DATA / name).read_text()`
        if not isinstance(receiver, ast.Name):
            return True  # a method of a computed value: `" ".join(w)`, `(a or b).title()`
        direct = isinstance(call.func.value, ast.Name)
        chain = _chain(call.func)
        if receiver.id in doubles or (receiver.id in harness and direct):
            return False  # a Mock's, `capsys.readouterr()`; not `request.param.title()`
        if last in ("items", "keys", "values") and not handed:
            return False  # a view: what the loop or comprehension around it does is read
        if last == "get" and handed and literal:
            return False  # `spec.get("children", [])`: a text key read
        if receiver.id in ("self", "cls"):
            if len(chain) == 2:
                # Its class's own method (read apart) or unittest's; not one a library base
                # type runs (`class _Name(str)`: `self.title()`, s43 att43h F1, 5/5 paid).
                # Its class's (`owner`'s), not another class's of the same name (att43j F3).
                return not (chain[1] in suite.methods.get(owner, ()) or chain[1] in _TESTCASE_API)
            if chain[1] in suite.held:
                return False  # what it holds of the code under test
            if chain[1] in suite.kept and last in _STORING_METHODS:
                return False  # a spy's `self.calls.append(a)`
            if chain[1] in suite.given and len(chain) == 3:
                # What its maker was handed, as a parameter's methods (Flask's `AuthActions`:
                # `self._client.post("/auth/login", ...)`, s44 att44a).
                return last in _LIBRARY_METHODS
            return True  # `self.name.title()`, `self.wrapper.fill(s)`
        if receiver.id in made:
            return False  # an object the code under test made: `node.add(child)`
        if receiver.id in paths and direct:
            return last not in _PATH_METHODS
        if receiver.id in files and direct:
            return last not in _FILE_METHODS
        if receiver.id in fresh and direct and last in _STORING_METHODS:
            if literal:
                return False
            stores[receiver.id] = stores.get(receiver.id, 0) + 1
            return stores[receiver.id] > 1  # `cfg.update(a); cfg.update(b)` merges
        if receiver.id in suite.modules - shadowed:
            return last not in _NEUTRAL_FUNCTIONS  # a module's function (`os.makedirs(p)`)
        if receiver.id in looped and direct:
            return last in _LIBRARY_METHODS
        if (
            receiver.id in parameters
            and direct
            and last in _STORING_METHODS
            and all(_uncomputed(a, parameters) for a in handed)
        ):
            return False  # `session.add(event)`: the caller's object keeps what it handed
        if receiver.id in parameters and receiver.id not in assigned:
            # The patch would hand its own object: a method no built-in value or common
            # library type has computes nothing here (`cache.set(k, v)`); one they have does
            # (`when.strftime("%d %B %Y")`, `amount.quantize(CENT)`: s43 att43j F1), and so
            # does a method of what calling the parameter made (`cls(width=10).fill(s)`, F2).
            made_here = not _dotted(call.func)
            return made_here or last in _LIBRARY_METHODS
        return True  # a local's method: `buf.read()`, `SEP.join(names)`

    # The body only: decorators and defaults are read apart (`_picks_callable`).
    nodes = [node for statement in function.body for node in ast.walk(statement)]
    # Names called, or read through (`timezone.utc`): judged as the call or the attribute.
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    called |= {id(n.value) for n in nodes if isinstance(n, ast.Attribute)}
    skip: set[int] = set()
    for node in nodes:
        if isinstance(node, ast.Call):
            # A method and the attributes leading to it: the call is read, by its name.
            func: ast.expr = node.func
            while isinstance(func, ast.Attribute):
                skip.add(id(func))
                func = func.value
        if isinstance(node, ast.Assert) and not any(
            isinstance(n, ast.NamedExpr) for n in ast.walk(node)
        ):
            skip.update(id(n) for n in ast.walk(node))  # its test and message
        if isinstance(node, ast.If | ast.IfExp) and _none_test(node.test):
            skip.update(id(n) for n in ast.walk(node.test))
            skip.add(id(node))
        if pathlike(node):
            skip.add(id(node))
        if (
            isinstance(node, ast.BoolOp)
            and isinstance(node.op, ast.Or)
            and sum(not is_literal(v) for v in node.values) == 1
            and isinstance(node.values[0], ast.Name | ast.Attribute)
        ):
            skip.add(id(node))  # `payload or {}`: a default
    for node in nodes:
        if id(node) in skip or (isinstance(node, ast.expr) and is_literal(node)):
            continue
        if isinstance(
            node,
            ast.BinOp
            | ast.JoinedStr
            | ast.UnaryOp
            | ast.BoolOp
            | ast.Compare
            | ast.IfExp
            | ast.If
            | ast.While
            | ast.Match
            | ast.AugAssign
            | ast.SetComp
            | ast.DictComp
            | ast.Set,
        ):
            return True
        if isinstance(node, ast.For | ast.AsyncFor) and (
            node.orelse
            or not all(isinstance(b, ast.Expr) and isinstance(b.value, ast.Call) for b in node.body)
            or any(
                isinstance(b, ast.Expr)
                and isinstance(b.value, ast.Call)
                and isinstance(b.value.func, ast.Attribute)
                and rooted(b.value.func, fresh)
                and b.value.func.attr != "append"
                for b in node.body
            )
        ):
            return True  # a loop that keeps or picks: `seen.add(x)`, `out.extend(x)`
        if isinstance(node, ast.ListComp | ast.GeneratorExp):
            mapped = (
                len(node.generators) == 1
                and not node.generators[0].ifs
                and isinstance(node.elt, ast.Call)
                and (
                    rooted(node.elt.func, delegates)
                    # a method of what a parameter holds: `[r.getMessage() for r in
                    # caplog.records]` (s44 att44g, withheld)
                    or (
                        isinstance(node.elt.func, ast.Attribute)
                        and isinstance(node.elt.func.value, ast.Name)
                        and node.elt.func.value.id in looped
                        and node.elt.func.attr not in _LIBRARY_METHODS
                    )
                )
            )
            if not mapped:
                return True  # `[y for x in xs for y in x]`, `[k for k, v in d.items() if v]`
        if isinstance(node, ast.Try | ast.TryStar) and any(
            not isinstance(b, ast.Pass | ast.Raise) for h in node.handlers for b in h.body
        ):
            return True  # `try: return d["nick"] except KeyError: return d["name"]`
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            key = node.slice
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                return True  # `s[:n]`, `xs[-1]`, `d[k]`
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            base = _base(node)
            dotted = _dotted(node)
            if not isinstance(base, ast.Name):
                return True  # an attribute of a computed value
            if base.id in suite.modules - shadowed or (
                base.id not in shadowed and base.id in dir(builtins)
            ):
                if _callable_attribute(dotted):
                    return True  # `str.upper`, `os.path.basename` handed on (a side effect)
            elif base.id in ("self", "cls"):
                chain = _chain(node)
                # `self.path.stem`: a property of what it holds (s44 att44i F1, 5/5 paid),
                # unless it holds the code under test's or a spy's.
                if len(chain) > 2 and chain[1] not in suite.held | suite.kept:
                    return True
            elif base.id in harness:
                chain = _chain(node)
                # pytest's objects' own attributes (`caplog.records`, `request.node`); not a
                # property of a parameter's value (`request.param.stem`: att44i F3).
                if chain[1] not in _HARNESS_ATTRIBUTES or (chain[1] == "param" and len(chain) > 2):
                    return True
            elif base.id in library_classes:
                return True  # `Name.title`, `P(p).stem` of `class P(PurePosixPath)` (att44i F2)
            elif not (
                base.id in doubles
                or base.id in delegates
                or base.id in mocks
                or _standard_constant(node, suite.origins)  # `timezone.utc` (s44 att44k)
            ):
                # `parts.hostname`, `p.stem`, `x.__class__`: a property computes; a module
                # object's method handed on (`side_effect = _WRAP.fill`: s43 att43h) too.
                return True
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and node.id in suite.standard - shadowed
            and id(node) not in called
        ):
            return True  # `conv = capwords`: a standard function handed on (s44 att44i F4)
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Tuple | ast.List) for t in node.targets
        ):
            return True  # `a, b = pair`: unpacking picks (`return b, a`)
        if isinstance(node, ast.List | ast.Tuple) and any(
            isinstance(e, ast.Starred) for e in node.elts
        ):
            return True  # `[*a, *b]`, `[*seen]`
        if isinstance(node, ast.Dict):
            unpacked = [v for k, v in zip(node.keys, node.values, strict=True) if k is None]
            if len(unpacked) > 1 or any(not isinstance(v, ast.Name) for v in unpacked):
                return True  # `{**a, **b}`
        if isinstance(node, ast.Call) and call_computes(node):
            return True
    return False


def _test_class(node: ast.ClassDef) -> bool:
    """Whether pytest or unittest collects ``node``'s ``test*`` methods as tests."""
    return node.name.startswith("Test") or any(
        _dotted(b).rpartition(".")[2].endswith("TestCase") for b in node.bases
    )


def suite_functions(tree: ast.Module) -> frozenset[str]:
    """What test module ``tree`` holds that a patch could call to compute a value, as source.

    A function, method or lambda defined outside the module's tests that computes anything
    (:func:`_transforms`; a set-up or an input-less fixture: one keeping a value computed
    from what it is given, :func:`_keeps_computed`): a patch reaches it through
    ``sys.modules`` and calls it with its own input, so a reference implementation beside
    the tests (``def _oracle(s): return s.title()``) answers for it (s41 att41o: 10/10 paid;
    s42 att42a, att42c, att42g: a test double's constructor, a spy's ``append``, a cache, a
    raise, a closure, 5/5 each). And a
    statement run at module or class level, or in a set-up or fixture, that may hold a
    function the suite chose (:func:`_picks_callable`: ``TRANSFORMS = {"display":
    str.title}``, ``eval("lambda ...")``: s42 att42a, 5/5 each). Not counted: tests and what
    they define (a callback a test hands the code under test is the test's choice), set-up
    and tear-down themselves, pytest hooks, a fixture taking no input of its caller's
    choosing (what it returns is a stored value, which the reference's walk reads), imports
    (a module's functions are the patch's to try anyway) and pytest's marks.
    """
    found: set[str] = set()
    # Each imported name and the top package it comes from.
    imported = {
        (alias.asname or alias.name).partition(".")[0]: (
            (node.module or "") if isinstance(node, ast.ImportFrom) else alias.name
        ).partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        and getattr(node, "module", None) != "__future__"
        for alias in node.names
    }
    # Each imported name's module path (`{"dt": "datetime.datetime"}`), for what it holds.
    origins = {
        (alias.asname or alias.name.partition(".")[0]): (
            f"{node.module}.{alias.name}"
            if isinstance(node, ast.ImportFrom)
            else (alias.name if alias.asname else alias.name.partition(".")[0])
        )
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        or (isinstance(node, ast.ImportFrom) and node.module and not node.level)
        for alias in node.names
    }
    froms = {
        alias.asname or alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module != "__future__"
        for alias in node.names
    }
    # `from string import *`: the names a listed standard module gives (s44 att44k F1: its
    # `capwords` in a table, 5/5 paid).
    unread_stars = []  # a wildcard import of a standard module the host does not read
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            if any(alias.name == "*" for alias in node.names):
                given = _star_names(node.module)
                origins.update({name: f"{node.module}.{name}" for name in given})
                froms |= given
                if not given and node.module.partition(".")[0] in sys.stdlib_module_names:
                    unread_stars.append(node)
    froms.discard("*")
    own = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not node.name.startswith(("test", "Test"))
    }
    named = own | froms
    roots = named | set(imported) | set(dir(builtins))
    # Every name the module binds at its top, and the builtins (a name it never binds comes
    # from a repository's wildcard import: the code under test's).
    # What each name the module binds at its top is assigned (a def, a class, an import, a
    # loop's name: nothing followed).
    values: dict[str, list[ast.expr]] = {}
    for statement in tree.body:
        for node in [statement, *_nested_statements(statement)]:
            bound: list[str] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                bound = [node.name]
            elif isinstance(node, ast.Import | ast.ImportFrom):
                bound = [(a.asname or a.name).partition(".")[0] for a in node.names]
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign) and node.value:
                for name in _assigned_names(node):
                    values.setdefault(name, []).append(node.value)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.With | ast.AsyncWith):
                bound = [
                    n.id
                    for n in ast.walk(node)
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
                ]
            for name in bound:
                values.setdefault(name, []).append(_ELSEWHERE)
    # A module-level alias of one of those is one too (`S = string`, then `S.capwords`).
    for _ in range(2):
        roots |= {
            target.id
            for statement in tree.body
            if isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Name)
            and statement.value.id in roots
            for target in statement.targets
            if isinstance(target, ast.Name)
        }
    # What a call of these computes is the code under test's, or read apart (the module's own).
    # Module-level definitions only: a method's name is no function of the module (a fake's
    # `json` method let `json.dumps(...)` through: s43 att43o F1, 10/10 paid).
    top = {
        node.name
        for statement in tree.body
        for node in [statement, *_nested_statements(statement)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        and not node.name.startswith(("test", "Test"))
    }
    delegates = frozenset(top) | frozenset(
        name for name, package in imported.items() if package not in sys.stdlib_module_names
    )

    # The harness's own: `unittest.mock`'s doubles and patches, pytest's helpers.
    mocks = frozenset(
        n for n, package in imported.items() if package in ("unittest", "mock", "pytest")
    )
    # What `self.X` holds anywhere in the module: only ever the code under test's objects or
    # mocks (`self.store = Store()`), or only ever fresh containers (a spy's `self.calls`).
    attributes: dict[str, list[ast.expr]] = {}
    # Values that are a parameter of the function assigning them (`self._client = client`).
    handed = {
        id(node.value)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef)
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Name)
        and node.value.id in _parameters(function.args) - {"self", "cls"}
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Attribute) and _dotted(target).count(".") == 1:
                    if _dotted(target).partition(".")[0] in ("self", "cls"):
                        attributes.setdefault(target.attr, []).append(node.value)
    classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    doubles: frozenset[str] = frozenset()
    for _ in range(len(classes) + 1):  # a class on a double is one, and a class on that
        doubles |= {
            name
            for name, node in classes.items()
            if any(
                _dotted(b).rpartition(".")[2] in _DOUBLE_SETTINGS.keys() | doubles
                for b in node.bases
            )
        }
    # What the module's classes define (methods, class attributes): `self.X` reads those.
    defined = {
        name
        for node in classes.values()
        for statement in node.body
        for name in (
            [statement.name]
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            else list(_assigned_names(statement))
        )
    }
    plain = {n for n, p in imported.items() if p not in sys.stdlib_module_names} - {"pytest"}
    for _ in range(len(classes) + 1):  # a class on a plain class is plain
        plain |= {
            name
            for name, node in classes.items()
            if all(_dotted(b) in plain | {"object"} for b in node.bases)
        }
    modules = frozenset(
        (alias.asname or alias.name).partition(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    )
    setting = _Around(modules, mocks, origins, values, _held_values(tree))
    suite = _Suite(
        delegates,
        mocks,
        modules,
        frozenset(
            a
            for a, vs in attributes.items()
            # not of a module class built on a library type (`_W(width=10)`: s44 att44k)
            if all(_made(v, (delegates - (set(classes) - plain)) | mocks) for v in vs)
        ),
        frozenset(a for a, vs in attributes.items() if all(map(_fresh, vs))),
        frozenset(a for a, vs in attributes.items() if all(id(v) in handed for v in vs))
        # Or never set here: the harness base's (Django's `self.client.login(...)`).
        | frozenset(
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "self"
            and node.attr not in attributes.keys() | defined
        ),
        frozenset(
            t.id
            for node in tree.body
            if isinstance(node, ast.Assign)
            for t in node.targets
            if isinstance(t, ast.Name)
            and any(
                (isinstance(n, ast.Name) and n.id == "__file__")
                or (isinstance(n, ast.Call) and _dotted(n.func).rpartition(".")[2] == "Path")
                or _path_join(n)
                for n in ast.walk(node.value)
            )
        ),
        _class_methods(classes),
        frozenset(plain),
        origins,
        frozenset(
            name
            for name in froms
            if _chosen_function(ast.Name(id=name, ctx=ast.Load()), origins, delegates)
        ),
    )

    def visit(
        node: ast.AST, where: str, local: frozenset[str] = frozenset(), owner: str = ""
    ) -> None:
        """Visit ``node``, a statement at the suite's level.

        ``where``: ``"module"``, ``"test class"``, ``"class"`` or ``"body"`` (of a set-up or
        fixture).
        """
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            for decorator in node.decorator_list:  # tests' and test classes' too
                if _decorator_picks(decorator, origins, delegates, doubles):
                    found.add(ast.dump(decorator))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = node.name
            fixture = _is_fixture(node)
            defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d)]
            if any(_picks_callable(d, named, roots) for d in defaults):
                found.add(ast.dump(node))  # `def _helper(f=lambda s: s.title())`, a test's too
            if name.startswith("test") and not fixture and where in ("module", "test class"):
                return  # a test (a `test*` method of a helper class is no test)
            if name.startswith("pytest_"):
                return
            arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
            # `request` hands a fixture its parameter (the fixtures it names are the suite's:
            # read as a set-up's attributes are).
            asks = any(isinstance(n, ast.Attribute) and n.attr == "param" for n in ast.walk(node))
            inputs = [
                a
                for a in arguments
                if a.arg not in _NO_INPUT and (a.arg != "request" or asks) and a.arg != "self"
            ]
            around = fixture or name in _AROUND_NAMES
            # What a helper (or a fixture taking inputs) computes counts wherever it goes; a
            # set-up's or an input-less fixture's when it keeps it (s42 att42c: `setUp` called
            # with the patch's own object, `self.expected = "Hello, " + self.person.title()`).
            if around and not (fixture and inputs):
                counted = _keeps_computed(node, delegates, setting)
            else:
                counted = _transforms(node, suite, owner)
                if any(isinstance(n, ast.Global | ast.Nonlocal) for n in ast.walk(node)):
                    # What it binds in the module is the module's (`global _D; _D = str.title`).
                    counted = counted or any(_picks_callable(n, named, roots) for n in node.body)
                if fixture and all(a.arg in setting.held for a in inputs):
                    # Its inputs are the module's fixtures: a patch calls it with them made as
                    # pytest would (`def loaded(parser): parser.read_string(CONF)`: s46 att46k
                    # F2, 5/5 paid), so it is read as an input-less one too.
                    counted = counted or _keeps_computed(node, delegates, setting)
            if counted:
                found.add(ast.dump(node))
            if around:  # what a fixture or set-up runs is the suite's too
                for inner in node.body:
                    visit(inner, "body", frozenset(a.arg for a in arguments) | set(_assigned(node)))
            return
        if isinstance(node, ast.ClassDef) and node.keywords:
            # What a class statement hands `__init_subclass__` is kept (`class
            # TitleCase(Case, conv=str.title)`: s44 att44g F2, 5/5 paid).
            handed = ast.List(elts=[k.value for k in node.keywords], ctx=ast.Load())
            if _decorator_picks(handed, origins, delegates, doubles):
                found.add(ast.dump(node))
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                visit(inner, "test class" if _test_class(node) else "class", owner=node.name)
            return
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if (
            isinstance(node, ast.Assign | ast.AnnAssign)
            and node.value is not None
            and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets)
            and _decorator_picks(node.value, origins, delegates, doubles)
        ):
            found.add(ast.dump(node))  # marks as a decorator's (s44 att44e F2)
        if (
            isinstance(node, ast.AnnAssign)
            and where != "body"
            and _decorator_picks(
                ast.List(elts=[node.annotation], ctx=ast.Load()), origins, delegates
            )
        ):
            found.add(ast.dump(node))  # `CONV: capwords` keeps it in `__annotations__` (att44i)
        if _picks_callable(node, named, roots, local) or _kept_by_doubles(
            node, origins, delegates, doubles
        ):
            found.add(ast.dump(node))
        for block in ast.iter_child_nodes(node):  # an `if`'s, a `try`'s, a `with`'s body
            if isinstance(block, ast.stmt | ast.ExceptHandler | ast.match_case):
                visit(block, where, local, owner)

    for statement in tree.body:
        visit(statement, "module")
    found.update(_state_fed_and_read(tree, setting, delegates))
    # Its names are unknown here, so whatever uses them may be a standard function the suite
    # chose (`from posixpath import *`, then `{'base': basename}`: s44 att44m F2, 5/5 paid).
    found.update(ast.dump(node) for node in unread_stars)
    return frozenset(found)


def _state_fed_and_read(tree: ast.Module, around: _Around, delegates: frozenset[str]) -> list[str]:
    """Set-ups and fixtures that feed the patch's values into process state a library parses.

    The environment: one writes a variable (:meth:`_Steerable.writes_environ`), one has a
    library parse it (:meth:`_Steerable.reads_environ`), the same or another of the
    module's (``os.environ["TZ"] = TZ`` in ``setUpClass``, ``time.tzset()`` in ``setUp``;
    ``monkeypatch.setenv("TZ", TZ)`` in a fixture: read back from ``time.timezone``, s46
    att46c F2, att46e F1-F7, 5/5 paid each). The shared generator: one seeds it with the
    patch's value, one draws from it (``random.seed(SEED); self.lucky =
    random.randint(1, 100)``: att46i F1, 5/5 paid).
    """
    found: dict[str, list[str]] = {}
    written: set[str] = set()
    read: set[str] = set()
    seeded: set[str] = set()
    drawn: set[str] = set()
    for _, node in module_functions(tree):
        fixture = _is_fixture(node)
        if not (fixture or node.name in _AROUND_NAMES):
            continue
        steer = _Steerable(_parameters(node.args), _assigned(node), delegates, around)
        writes, reads = steer.writes_environ(node), steer.reads_environ(node)
        written |= writes
        read |= reads
        seeds, draws = steer.seeds_random(node), steer.draws_random(node)
        seeded |= seeds
        drawn |= draws
        for kind, hit in (("writes", writes), ("reads", reads), ("seeds", seeds), ("draws", draws)):
            if hit:
                found.setdefault(kind, []).append(ast.dump(node))
    counted = []
    if _variables_meet(written, read):
        counted += [*found["writes"], *found["reads"]]
    if seeded & drawn:
        counted += [*found["seeds"], *found["draws"]]
    return counted


def _scopes(tree: ast.Module) -> list[_Scope]:
    """The module's functions and its classes' methods, in order."""
    found: list[_Scope] = []
    for klass, node in module_functions(tree):
        fixture, autouse = None, False
        for decorator in node.decorator_list:
            call = decorator if isinstance(decorator, ast.Call) else None
            if _dotted(call.func if call else decorator) not in _FIXTURE_DECORATORS:
                continue
            fixture = node.name
            for keyword in call.keywords if call else ():
                if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
                    fixture = str(keyword.value.value)
                if keyword.arg == "autouse" and isinstance(keyword.value, ast.Constant):
                    autouse = bool(keyword.value.value)
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        arguments = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
        found.append(
            _Scope(
                (start, node.end_lineno or node.lineno),
                f"{klass}::{node.name}" if klass else node.name,
                klass,
                frozenset(a.arg for a in arguments),
                fixture,
                autouse,
                node.name in _SETUP_NAMES,
            )
        )
    return found


#: A fixture as another module needs it: the values it gives, the fixtures it requests,
#: whether every test gets it.
Fixture = tuple[frozenset[Any], frozenset[str], bool]


def given_by_fixtures(requested: frozenset[str], fixtures: Mapping[str, Fixture]) -> set[Any]:
    """The values the ``fixtures`` a test requests (those they request, autouse ones) give it."""
    given: set[Any] = set()
    todo = [*requested, *(n for n, f in fixtures.items() if f[2])]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in fixtures:
            continue
        seen.add(name)
        keys, more, _ = fixtures[name]
        given |= keys
        todo += more
    return given


@dataclass(frozen=True)
class _Secrets:
    hidden: dict[str, frozenset[Any]]
    inputs: frozenset[Any]
    requests: dict[str, frozenset[str]]
    fixtures: dict[str, Fixture]


def _secrets(expected: Sequence[tuple[ast.AST, Sequence[ast.AST]]], tree: ast.Module) -> _Secrets:
    """What the sandbox must not read, and what it can, in probe ``tree``.

    ``hidden``: per test (``""``: a check outside any test, a helper's or a module table's),
    the telling expected values left out of the probe that the test did not give the code
    under test itself; ``inputs``: the telling literals the probe holds (with the other ways
    to write them, :func:`_aliases`). An expected value may be written elsewhere as an
    input (``decode("aGk=") == "hi"`` next to ``encode("hi") == "aGk="``): the sandbox
    reads it in the probe's source, its code objects or the loader's files, and a
    submission returns it without the fix (:data:`NOTE_ECHO`). A value the test gave the
    code under test before the check is not one: among the arguments it was compared with
    (``truncate("hi", 9) == "hi"``), earlier in the same test (``cart.add("apple")`` before
    ``cart.items == {"apple": 1}``), in a fixture the test requests (directly or through
    another fixture, or an autouse one) or in its class's or module's setup.
    ``requests``/``fixtures``: what another module's fixtures (a ``conftest.py``) give is
    subtracted by :func:`rllm_envs.swe.judge.probe_notes`. Linear in the module's size.
    """
    scopes = _scopes(tree)
    starts = [scope.span[0] for scope in scopes]

    def scope_of(node: ast.AST) -> _Scope | None:
        line = getattr(node, "lineno", None)
        at = bisect.bisect_right(starts, line) - 1 if line is not None else -1
        return scopes[at] if at >= 0 and line <= scopes[at].span[1] else None  # type: ignore[operator]

    def position(node: ast.AST) -> tuple[int, int]:
        return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))

    # A literal is given where it is an argument of a call that acts (the code under test's,
    # a method of an object the test made, as ``cart.add("apple")``, a helper's, the standard
    # library's, as ``shutil.copy(a, tmp_path / "two.txt")``); one merely written (a
    # fixture's return value, ``self.x = ..``, an unused local, ``str("x")``) is readable.
    inert = _PURE_BUILTINS | {"print", "repr", "type", "isinstance", "hash", "id"}
    inert |= {OBSERVE, OBSERVING, ISINSTANCE}
    passed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _dotted(node.func) not in inert:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                passed.update(id(inner) for inner in ast.walk(argument))
    inputs: set[Any] = set()
    written: dict[str, set[Any]] = {}  # per function, the telling literals it passes
    first: dict[tuple[str, Any], tuple[int, int]] = {}  # (function, key) -> first passed
    for node in ast.walk(tree):
        key = _literal_key(node) if hasattr(node, "lineno") else None
        if key is None and isinstance(node, ast.BinOp):
            key = _folded_key(node)  # one constant in the code objects the sandbox reads
        if key is None or not _telling(key):
            continue
        inputs |= _aliases(key)
        scope = scope_of(node)
        if scope is not None and id(node) in passed:
            written.setdefault(scope.name, set()).add(key)
            at = position(node)
            for alias in _aliases(key):  # `g(1050)` gives "1050" too
                if at < first.get((scope.name, alias), (sys.maxsize, 0)):
                    first[scope.name, alias] = at
    fixtures: dict[str, Fixture] = {
        s.fixture: (frozenset(written.get(s.name, ())), s.arguments, s.autouse)
        for s in scopes
        if s.fixture is not None
    }
    setups: dict[str | None, set[Any]] = {}  # per class (None: the module), its setup's
    for s in scopes:
        if s.setup:
            setups.setdefault(s.klass, set()).update(written.get(s.name, ()))

    def given_before(test: _Scope) -> set[Any]:
        found = given_by_fixtures(test.arguments, fixtures) | setups.get(None, set())
        return found | setups.get(test.klass, set()) if test.klass is not None else found

    setup_of: dict[str, set[Any]] = {}
    hidden: dict[str, set[Any]] = {}
    for node, beside in expected:
        told = {k for k in _literal_keys(node) if _telling(k)}
        if not told:
            continue
        # Given in the same check, or earlier in the same function, as itself or as another
        # way to write it (`g('8080') == 8080`: att37d FN-1 withheld the reference fix).
        given = {a for b in beside for k in _literal_keys(b) for a in _aliases(k)}
        told = {k for k in told if not _aliases(k) & given}
        scope, at = scope_of(node), position(node)
        if scope is not None:
            name = scope.name
            told = {
                k
                for k in told
                if min(first.get((name, a), (sys.maxsize, 0)) for a in _aliases(k)) >= at
            }
        bucket = scope.name if scope is not None and scope.test else ""
        if scope is not None and scope.test:
            if bucket not in setup_of:
                setup_of[bucket] = given_before(scope)
            told -= setup_of[bucket]
        if told:
            hidden.setdefault(bucket, set()).update(told)
    return _Secrets(
        {k: frozenset(v) for k, v in hidden.items()},
        frozenset(inputs),
        {s.name: s.arguments for s in scopes if s.test},
        fixtures,
    )


def echoed(hidden: frozenset[Any] | set[Any], readable: frozenset[Any] | set[Any]) -> bool:
    """Whether one of the ``hidden`` values is written among the ``readable`` ones."""
    return any(_aliases(k) & readable for k in hidden)


@lru_cache(maxsize=4096)
def probe_module(source: str) -> Probe:
    """The probe of test module ``source`` (:func:`_probe_module`); never raises on a record.

    A module too deeply nested to rewrite (Python's recursion limit, ``2+2+...`` of
    thousands of terms) is returned as it is, incomplete.
    """
    try:
        return _probe_module(source)
    except (RecursionError, MemoryError):
        return Probe(source, (NOTE_DEEP,), {})


def _probe_module(source: str) -> Probe:
    """The probe of test module ``source`` (see the module docstring).

    Expected values held in literal tables are moved out first (:mod:`rllm_envs.swe.tables`):
    every read of a table element is taken as a literal; an element path whose reads were
    not all dropped by the rewrite stays (and the rewrite runs again without it), the others
    become placeholders. A module that does not parse is returned as it is, incomplete.
    """
    try:
        first = _tables.analyse(ast.parse(source))
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return Probe(source, (NOTE_SYNTAX,), {})
    marked = set(first.uses)
    flowed: set[tuple[Any, ...]] | None = None
    for _ in range(_ROUNDS):
        tree, probe, marks, found = _transform(source, marked)
        if flowed is None:
            flowed = marks.marked & marks.dropped  # reads that are expected sides
        moved = found.movable(marks.marked, marks.dropped)
        keep = {k for k in marks.marked if found.uses.get(k) in moved}
        if keep == marked:
            break
        marked = keep
    else:
        tree, probe, marks, found = _transform(source, set())
        moved = set()
    found.rewrite(moved)
    _strip_strings(tree)
    stdlib = _STDLIB.set(_stdlib_names(tree))
    try:
        secrets = _secrets([*marks.expected, *found.moved_values], tree)
    finally:
        _STDLIB.reset(stdlib)
    if any(echoed(h, secrets.inputs) for h in secrets.hidden.values()):
        probe.note(NOTE_ECHO)
    if _left_decisions(tree) or _sandbox_operations(tree):
        probe.note(NOTE_INNER)
    parsed = ast.parse(source)
    if _raise_checked_in_the_sandbox(parsed):
        probe.note(NOTE_RAISE)
    filters = ("filterwarnings", "simplefilter")
    if any(
        (isinstance(n, ast.Attribute) and n.attr in filters)
        or (isinstance(n, ast.ImportFrom) and any(a.name in filters for a in n.names))
        for n in ast.walk(parsed)
    ):
        # `@pytest.mark.filterwarnings("error")`: every observed block records a warning
        # and passes it on, so a test that must not warn passed a patch warning on every
        # call (att38a F6: 5/5 paid); a filter set in a test decides the same way.
        probe.note(NOTE_WARNING_FILTER)
    for key in flowed or ():
        origin = first.uses[key]
        # An empty literal (``errors = []`` a callback fills, then ``assert not errors``)
        # holds no expected value to stay in the probe (s40 att40d: every correct fix of
        # that shape was withheld, 25/25).
        if origin not in moved and not _tables.empty(first.tables.get(origin.table)):
            probe.note(NOTE_PARAMETRIZE if origin.table.startswith("@") else NOTE_TABLE)
    if found.unlabelled:
        probe.note(NOTE_PARAMETRIZE)
    if _worded_case_ids(tree):
        probe.note(NOTE_CASE_IDS)
    if found.dynamic and found.tables:
        probe.note(NOTE_TABLE)
    header = ast.parse(
        f"from pytest import observe as {OBSERVE}, observing as {OBSERVING}, "
        f"observe_isinstance as {ISINSTANCE}\n"
    ).body[0]
    at = 0
    for at, statement in enumerate(tree.body):  # noqa: B007
        docstring = (
            at == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        )
        future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
        if not (docstring or future):
            break
    else:
        at = len(tree.body)
    tree.body.insert(at, header)
    names = _opaque_test_names(tree)
    _opaque_identifiers(tree)
    if _message_readable(tree, probe.blocks):
        probe.note(NOTE_MESSAGE_READABLE)
    text = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    return Probe(
        text,
        tuple(probe.notes),
        found.labels,
        probe.predicates,
        secrets.hidden,
        secrets.inputs,
        secrets.requests,
        secrets.fixtures,
        probe.blocks,
        probe.owners,
        names,
        suite_functions(parsed),
    )


#: The key of the names a probe gives tests (this process's own; no sandbox holds it).
_NAME_KEY = secrets.token_bytes(32)


#: The letters of a probe's test names: no digit or lowercase word to find in a probe.
_NAME_LETTERS = "BCDFGHJKLMNPQRSTVWXZ"


_ALNUM = re.compile(r"[^0-9a-z]")


def _message_readable(tree: ast.Module, blocks: Sequence[tuple[str, str]]) -> bool:
    """Whether a part of a message a raises block checks on the host is readable in the probe.

    ``assert "negative" in str(e.value)`` goes to the host, but the word may still sit in a
    string or a name of the probe (a parametrize id, a ``print``, ``NEGATIVE_INPUT``): a
    patch keeping the bug and adding every string and name of the test module to its
    message was paid 1.0 on 25/25 (att38b F5). A literal checked by ``==`` is not: adding
    anything breaks it.
    """
    import json

    parts: set[str] = set()
    for kind, rule_text in blocks:
        if kind != "raises":
            continue
        rule = json.loads(rule_text)
        message = rule.get("message")
        if isinstance(message, list) and message[:1] == ["search"]:
            parts.add(str(message[1]))
        checks = rule.get("checks") or []
        parts |= {str(literal) for how, literal in checks if how not in ("eq", "typename")}
    # Compared on letters and digits alone: `at least` is read in `AT_LEAST_INPUT`, `AtLeast`.
    parts = {k for k in (_ALNUM.sub("", p.casefold()) for p in parts) if k}
    if not parts:
        return False
    readable: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            readable.append(node.value)
        elif isinstance(node, ast.Name):
            readable.append(node.id)
        elif isinstance(node, ast.Attribute):
            readable.append(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            readable.append(node.name)
        elif isinstance(node, ast.arg):
            readable.append(node.arg)
        elif isinstance(node, ast.alias):
            readable += [node.name, node.asname or ""]
    keys = [_ALNUM.sub("", r.casefold()) for r in readable]
    return any(part in key for key in keys for part in parts)


def opaque_name(name: str, prefix: str) -> str:
    """A keyed digest of ``name`` in capital consonants after ``prefix`` (this process's key)."""
    digest = hmac.new(_NAME_KEY, name.encode(), "sha256").digest()
    return prefix + "".join(_NAME_LETTERS[b % len(_NAME_LETTERS)] for b in digest[:16])


def _opaque_test_names(tree: ast.Module) -> dict[str, str]:
    """Rename the module's tests (functions and methods ``test*``, classes holding them).

    A test's name says what it checks (``test_rejects_negative``): a patch reading the
    running test's name (a frame, ``traceback.extract_stack``) raised only under such names
    and kept the bug (s37 att37f F5: 10/10 paid 1.0 ``host``). The probe's names are keyed
    digests of the originals (the same name, the same digest, in every probe of this process:
    a module cut to some of its tests maps alike), and every reference to them in the module
    (a subclass, ``self.test_x``) is renamed with them.

    Returns:
        Each original name's probe name.
    """
    names: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name.startswith("test"):
                names[node.name] = opaque_name(node.name, "test_")
        elif isinstance(node, ast.ClassDef):
            methods = [
                b.name
                for b in node.body
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef))
                and b.name.startswith("test")
            ]
            if methods:
                names[node.name] = opaque_name(node.name, "Test_")
                names.update({m: opaque_name(m, "test_") for m in methods})
    if not names:
        return names
    for found in ast.walk(tree):
        if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.name = names.get(found.name, found.name)
        elif isinstance(found, ast.Name):
            found.id = names.get(found.id, found.id)
        elif isinstance(found, ast.Attribute):
            found.attr = names.get(found.attr, found.attr)
    return names


#: Names a test suite's code keeps whatever it binds: what the runner, pytest or unittest
#: look up by name (hooks, marks, the fixtures the runner provides) and ``self`` / ``cls``.
_KEPT_NAMES = frozenset(
    {
        "pytestmark",
        "pytest_plugins",
        "setup_module",
        "teardown_module",
        "setup_function",
        "teardown_function",
        "setup_method",
        "teardown_method",
        "setup_class",
        "teardown_class",
        "setUp",
        "tearDown",
        "setUpClass",
        "tearDownClass",
        "setUpModule",
        "tearDownModule",
        "asyncSetUp",
        "asyncTearDown",
        "maxDiff",
        "longMessage",
        "runTest",
        "self",
        "cls",
        "request",
        "monkeypatch",
        "capsys",
        "capfd",
        "capsysbinary",
        "capfdbinary",
        "caplog",
        "recwarn",
        "tmp_path",
        "tmpdir",
        "tmp_path_factory",
        "tmpdir_factory",
        "pytestconfig",
    }
)
#: Calls whose string arguments name fixtures or parametrize arguments: the call's name, and
#: the index of that argument (``None``: every one).
_NAME_STRINGS = {"parametrize": 0, "usefixtures": None, "getfixturevalue": 0}


def _suite_module(module: str | None, level: int) -> bool:
    """Whether an import of ``module`` (``level``: its dots) is of the test suite."""
    if level:
        return True
    parts = (module or "").split(".")
    return parts[0] in ("tests", "test", "testing") or any(
        p == "conftest" or p.startswith("test_") or p.endswith("_test") for p in parts
    )


def _imports_modules(node: ast.ImportFrom) -> bool:
    """Whether ``from P import x`` takes modules of a package of the suite.

    ``from tests import cases``, ``from . import helpers``, rather than names of a module.
    """
    return node.module is None or node.module.rpartition(".")[2] in ("tests", "test", "testing")


def _worded_case_ids(tree: ast.Module) -> bool:
    """Whether a parametrize case keeps an id with a letter the test wrote.

    ``ids=["too_high", "negative"]``, ``pytest.param(150, id="over_limit")``: the probe's
    marks (and source) hold them beside the values, so a patch read which arguments a
    "bad" case passes and raised only for those (att39e F2: 5/5 paid). Ids the probe gave
    (a table whose expected values moved: ``[0]``) are digits.
    """
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg in ("ids", "id"):
                for found in ast.walk(keyword.value):
                    if isinstance(found, ast.Constant) and isinstance(found.value, str):
                        if any(c.isalpha() for c in found.value):
                            return True
                    elif keyword.arg == "ids" and not isinstance(
                        found, (ast.List, ast.Tuple, ast.Constant, ast.Load)
                    ):
                        return True  # ids made by code (a function, a comprehension)
    return False


def _opaque_identifiers(tree: ast.Module) -> None:
    """Rename the suite's names that repository code can reach (as :func:`_opaque_test_names`).

    A name says what the code around it checks: a patch that read its caller's line, a
    test module's globals (``sys.modules``) or its marks raised only near a constant
    ``TOO_HIGH``, a fixture ``negative_value``, a parametrize argument ``invalid`` or
    ``cases.WRONG``, and kept the bug (s39 att39c F1: 30/30 paid 1.0 ``host`` on six shapes).
    Renamed, each to a keyed digest (the same in every module of this process, so fixtures
    and imports match): the module's top-level names (constants, functions, classes, names
    imported from the suite), the parameters of tests and fixtures (fixture and parametrize
    names) with the strings that name them (``parametrize``, ``usefixtures``,
    ``getfixturevalue``, ``indirect``, a fixture's ``name=``), and the attributes of the
    suite's modules. Not renamed, so that nothing the code reads by a name's text changes
    (s39 att39g F1, F2: a helper's renamed keywords made ``kw.get("args", D)`` read its
    default, and the unchanged code matched the reference 5/5): a helper's, a lambda's or a
    class's parameters, keywords, class members and attributes, and every name spelled as
    one of them. What a function's body holds otherwise (its locals, its strings) is not
    readable in the sandbox (``linecache``, the source and ``__code__`` are hidden). Kept
    too: what the runner or pytest look up by name (:data:`_KEPT_NAMES`), builtins, dunders
    and names imported from outside the suite.
    """
    kept = set(_KEPT_NAMES) | set(dir(builtins))
    renamable: set[str] = set()
    suite_modules: set[str] = set()  # names bound to a module of the suite
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.asname or alias.name.partition(".")[0]
                (suite_modules if _suite_module(alias.name, 0) else kept).add(name)
        elif isinstance(node, ast.ImportFrom):
            suite = _suite_module(node.module, node.level)
            for alias in node.names:
                name = alias.asname or alias.name
                if not suite:
                    kept.add(name)
                elif _imports_modules(node):
                    suite_modules.add(name)
                    kept.add(alias.name)  # a module's file keeps its name
                elif alias.name != "*":
                    renamable.update({alias.name, name})
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            params = {a.arg for a in _arguments(node.args)}
            runner_called = not isinstance(node, ast.Lambda) and (
                node.name.startswith("test") or _fixture(node)
            )
            (renamable if runner_called else kept).update(params)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:  # its members keep their names
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    kept.add(item.name)
                else:
                    kept.update(
                        t.id
                        for t in ast.walk(item)
                        if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
                    )
        elif isinstance(node, ast.keyword) and node.arg:
            kept.add(node.arg)
    kept.update(  # what other objects' attributes are called (a module of the suite's aside)
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and not (isinstance(n.value, ast.Name) and n.value.id in suite_modules)
    )
    for statement in tree.body:  # the module's top level
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            renamable.add(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
            renamable.update(
                t.id
                for t in ast.walk(statement)
                if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)
            )
    kept |= {n for n in renamable if n.startswith("__") and n.endswith("__")}
    kept |= {n for n in renamable if _OPAQUE.fullmatch(n)}
    renamed = {n: opaque_name(n, "v_") for n in renamable - kept}

    def new(name: str) -> str:
        return renamed.get(name, name)

    shared_kept = set(_KEPT_NAMES) | set(dir(builtins))

    def shared(name: str) -> str:
        """A top-level name of another module of the suite (read as its attribute)."""
        plain = name in shared_kept or name.startswith("__") or _OPAQUE.fullmatch(name)
        return name if plain else opaque_name(name, "v_")

    def strings(node: ast.AST) -> None:
        """Rename the names a string (or a list of strings) holds: ``"bad, want"``."""
        for found in ast.walk(node):
            if isinstance(found, ast.Constant) and isinstance(found.value, str):
                parts = [p.strip() for p in found.value.split(",")]
                if parts and all(p.isidentifier() for p in parts):
                    found.value = ", ".join(new(p) for p in parts)

    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            node.id = new(node.id)
        elif isinstance(node, ast.arg):
            node.arg = new(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            node.name = new(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            node.name = new(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            node.names = [new(n) for n in node.names]
        elif isinstance(node, ast.ImportFrom) and _suite_module(node.module, node.level):
            for alias in node.names:
                if alias.name != "*" and not _imports_modules(node):
                    local = new(alias.asname or alias.name)
                    alias.name = shared(alias.name)
                    alias.asname = None if local == alias.name else local
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in suite_modules:
                node.attr = shared(node.attr)
        elif isinstance(node, ast.Call):
            callee = node.func
            name = callee.attr if isinstance(callee, ast.Attribute) else getattr(callee, "id", "")
            for keyword in node.keywords:
                if keyword.arg == "indirect" or (name == "fixture" and keyword.arg == "name"):
                    strings(keyword.value)
            if name in _NAME_STRINGS and node.args:
                at = _NAME_STRINGS[name]
                for argument in node.args if at is None else node.args[at : at + 1]:
                    strings(argument)


def _fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``node`` is decorated as a pytest fixture (the runner calls it by name)."""
    return any("fixture" in ast.unparse(d) for d in node.decorator_list)


#: A name a probe made (a test's, or :func:`_opaque_identifiers`'): never renamed again.
_OPAQUE = re.compile(r"(test_|Test_|v_)[BCDFGHJKLMNPQRSTVWXZ]{16}")


def _arguments(args: ast.arguments) -> list[ast.arg]:
    """Every parameter of a signature."""
    return [
        *args.posonlyargs,
        *args.args,
        *([args.vararg] if args.vararg else []),
        *args.kwonlyargs,
        *([args.kwarg] if args.kwarg else []),
    ]


def probe_report(source: str) -> tuple[str, tuple[str, ...]]:
    """The probe of test module ``source`` and why it is incomplete (``()``: complete)."""
    found = probe_module(source)
    return found.text, found.notes


def probe_source(source: str) -> tuple[str, bool]:
    """The probe of test module ``source`` and whether it is complete (:func:`probe_report`)."""
    probe, notes = probe_report(source)
    return probe, not notes


def index_map(whole: Probe, cut: Probe) -> tuple[dict[int, int], dict[int, int]]:
    """Where each host-check index of ``cut`` (a module cut to some tests) is in ``whole``.

    ``(predicates, blocks)``, each ``{cut index: whole index}``. A test kept whole makes the
    same checks in both, in the same order: an index maps by its function and its place
    there. A function whose checks differ (``-1``) maps to nothing, so its records never
    match (s37 att37c F3: without the map, a check after a cut one named another index
    than the reference's table, and the reference patch scored 0 on its own tests).
    """
    maps = []
    for tables in (
        (whole.predicates, whole.owners[0], cut.predicates, cut.owners[0]),
        (whole.blocks, whole.owners[1], cut.blocks, cut.owners[1]),
    ):
        full, full_owners, part, part_owners = tables
        by_owner: dict[str, list[int]] = {}
        for index, owner in enumerate(full_owners):
            by_owner.setdefault(owner, []).append(index)
        mine: dict[str, list[int]] = {}
        for index, owner in enumerate(part_owners):
            mine.setdefault(owner, []).append(index)
        mapping: dict[int, int] = {}
        for owner, indices in mine.items():
            theirs = by_owner.get(owner, [])
            same_checks = len(theirs) == len(indices) and all(
                part[i] == full[j] for i, j in zip(indices, theirs, strict=True)
            )
            for i, j in zip(indices, theirs if same_checks else [-1] * len(indices), strict=True):
                mapping[i] = j
        maps.append(mapping)
    return maps[0], maps[1]


def remap_indices(
    observations: Any, predicates: Mapping[int, int], blocks: Mapping[int, int]
) -> Any:
    """``observations`` with each ``["host", k, ..]`` / ``["block", k, ..]`` renumbered.

    An index the maps do not hold becomes ``-1`` (no check: never equal).
    """
    if not isinstance(observations, list):
        return observations
    if (
        len(observations) == 3
        and observations[0] in ("host", "block")
        and type(observations[1]) is int
    ):
        table = predicates if observations[0] == "host" else blocks
        return [
            observations[0],
            table.get(observations[1], -1),
            remap_indices(observations[2], predicates, blocks),
        ]
    return [remap_indices(o, predicates, blocks) for o in observations]


def same_observations(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any],
    predicates: Sequence[tuple[str, str]] = (),
    blocks: Sequence[tuple[str, str]] = (),
) -> bool:
    """Whether a test's record ``{"observed": [...], "end": [...]}`` matches the reference's.

    Every observation in order (:func:`same_check`), as many as the reference made, and the
    same end. ``predicates`` / ``blocks``: the test module's :attr:`Probe.predicates` and
    :attr:`Probe.blocks`.
    """
    seen, want = actual.get("observed"), expected.get("observed")
    if not isinstance(seen, list) or not isinstance(want, list):
        return False
    seen, want = checked(seen, blocks), checked(want, blocks)
    if len(seen) != len(want):
        return False
    if not all(same_check(e, a, predicates, blocks) for e, a in zip(want, seen, strict=True)):
        return False
    return same(expected.get("end"), actual.get("end"))


def checked(observed: list[Any], blocks: Sequence[tuple[str, str]]) -> list[Any]:
    """``observed`` without what warned in blocks that do not check warnings.

    Every block records the warnings its body emitted (a warns block must look like any
    other, att37d F3); only a warns block's are compared.
    """
    return [
        o
        for o in observed
        if not (
            isinstance(o, list)
            and len(o) == 3
            and o[0] == "block"
            and isinstance(o[2], list)
            and o[2][:1] == ["warned"]
            and not (type(o[1]) is int and 0 <= o[1] < len(blocks) and blocks[o[1]][0] == "warns")
        )
    ]


def same_check(
    expected: Any,
    actual: Any,
    predicates: Sequence[tuple[str, str]] = (),
    blocks: Sequence[tuple[str, str]] = (),
) -> bool:
    """Whether one observation matches the reference's: :func:`same`, or a block's record.

    ``["block", k, ["raised", MRO names, message]]``: what check ``k``'s block raised
    (:func:`_block_holds`, by ``blocks[k]``).
    """
    if isinstance(expected, list) and expected[:1] == ["block"]:
        return (
            len(expected) == 3
            and isinstance(actual, list)
            and len(actual) == 3
            and actual[:2] == expected[:2]
            and _block_holds(blocks, expected[1], expected[2], actual[2])
        )
    if isinstance(actual, list) and actual[:1] == ["block"]:
        return False
    return same(expected, actual, predicates=predicates)


#: Observations that stand for a value the sandbox could not report: never equal.
_NEVER_EQUAL = ("cut", "unobservable")


def same(
    expected: Any,
    actual: Any,
    depth: int = 0,
    tolerance: tuple[float, float] | None = None,
    predicates: Sequence[tuple[str, str]] = (),
) -> bool:
    """Whether observation ``actual`` matches the reference's ``expected`` (host side).

    Exact: numbers by value (``2 == 2.0``, as ``==`` compares them), floats within a
    tolerance only where the test asked for one (``["approx", [rel, abs], value]``: the
    reference's tolerance, never the submission's), a raised exception is of the reference's
    class or of a class deriving from it alone (its MRO's qualified names equal, or one more
    in front). A value the sandbox could not observe
    (``unobservable``, ``cut``) is never equal; one too big to send is compared by its digest.
    ``["host", k, value]``: where ``value`` is a plain text, the test's own check
    ``predicates[k]`` (``"x" in text``, ``match="x"``) run here decides; otherwise, as
    before, the value equals the reference's.
    """
    if depth > 200:
        return False
    if not isinstance(expected, list) or not isinstance(actual, list) or not expected:
        return type(expected) is type(actual) and bool(expected == actual)
    tag = expected[0]
    if tag in _NEVER_EQUAL or actual[:1] and actual[0] in _NEVER_EQUAL:
        return False
    if tag == "operated" or actual[:1] == ["operated"]:
        # An operator the repository's classes decide (att34d): both sides must be such, and
        # only their states are compared, which is all a verdict that is then withheld
        # (``host_partial``) can go by.
        return (
            tag == "operated"
            and len(expected) == 2
            and actual[:1] == ["operated"]
            and len(actual) == 2
            and same(expected[1], actual[1], depth + 1, tolerance, predicates)
        )
    if tag == "host" and len(expected) == 3:
        if actual[:1] != ["host"] or len(actual) != 3 or actual[1] != expected[1]:
            return False
        if _holds(predicates, expected[1], actual[2]):
            return True
        if _decides(predicates, expected[1], actual[2]):
            # The test's own check decides (a tolerance around its literal, an order, a
            # truth value): never equality with the reference's value, which the unchanged
            # code may sit near, or which a clock or random value never repeats.
            return False
        return same(expected[2], actual[2], depth + 1, tolerance, predicates)
    if tag == "approx" and len(expected) == 3:
        if actual[:1] != ["approx"] or len(actual) != 3:
            return False
        allowed = _tolerance(expected[1])
        return allowed is not None and same(expected[2], actual[2], depth + 1, allowed)
    numbers = ("int", "float")
    if tag in numbers and actual[:1] and actual[0] in numbers and len(actual) == 2:
        if tolerance is not None:
            return _close(expected[1], actual[1], tolerance)
        return _equal_numbers(expected[1], actual[1])
    if (
        tolerance is None
        and type(tag) is str
        and actual[:1]
        and type(actual[0]) is str
        and actual[0] != tag
        and _python_equal(expected, actual, depth)
    ):
        return True
    if tag == "raised" and actual[:1] == ["raised"] and len(actual) == len(expected):
        # The reference's class, or one class deriving from it alone (``class
        # InvalidPercent(ValueError)``, which ``pytest.raises(ValueError)`` passes): the
        # module-qualified names of the whole MRO equal, or one more name in front. A class
        # whose MRO merely contains the reference's (one exception deriving from every usual
        # type) would match whatever the reference raised: multiple inheritance puts two
        # names or more in front (C3 keeps shared bases last), so it never matches.
        names, got = expected[1], actual[1]
        return (
            isinstance(names, list)
            and bool(names)
            and all(type(n) is str for n in names)
            and isinstance(got, list)
            and (got == names or (got[1:] == names and type(got[0]) is str))
            and all(
                same(e, a, depth + 1, None, predicates)
                for e, a in zip(expected[2:], actual[2:], strict=True)
            )
        )
    if tag == "object" and actual[:1] == ["object"] and tolerance is None:
        exact = _exact_number(expected)
        if exact is not None:  # `Decimal("3.30") == Decimal("3.3")`, by value
            return exact == _exact_number(actual)
    if len(expected) != len(actual):
        return False
    return all(same(e, a, depth + 1, tolerance) for e, a in zip(expected, actual, strict=True))


#: Characters that make a ``match=`` pattern more than a plain search: repetition and
#: back references (the host would run a pattern whose time may grow past linear).
_REPEATS = frozenset("*+?{\\")


#: Observation kinds whose truth value the host knows.
_TRUTHY_KINDS = frozenset({"bool", "int", "float", "str", "bytes", "list", "tuple", "dict", "none"})


def _number_view(value: Any) -> Any:
    """A number observation, also of an ``int`` / ``float`` subclass (its base value).

    ``["sub", "units.Meters", ["float", "1.0"]]``: what ``float``'s own arithmetic saw; a
    subclass that overrides ``__sub__`` / ``__abs__`` is still checked by that base value.
    """
    if (
        isinstance(value, list)
        and len(value) == 3
        and value[0] == "sub"
        and isinstance(value[2], list)
        and len(value[2]) == 2
        and value[2][0] in ("int", "float")
    ):
        return value[2]
    return value


def _decides(predicates: Sequence[tuple[str, str]], index: Any, value: Any) -> bool:
    """Whether host check ``predicates[index]`` alone decides observation ``value``."""
    if type(index) is not int or not 0 <= index < len(predicates):
        return False
    kind = predicates[index][0]
    if kind in ("near", "order"):
        value = _number_view(value)
    if not (isinstance(value, list) and value):
        return False
    if kind == "near" and value[0] in ("list", "tuple"):
        return True  # a literal list's check (a number's check never holds for a list)
    if kind in ("near", "order"):
        return value[0] in ("int", "float")
    if kind in ("truthy", "falsy"):
        return value[0] in _TRUTHY_KINDS
    return False


def _truth(value: list[Any]) -> bool | None:
    kind = value[0]
    if kind == "none":
        return False
    if len(value) != 2:
        return None
    data = value[1]
    if kind == "bool":
        return data is True
    if kind in ("int", "float"):
        try:
            return bool(_parse_number(data))
        except (TypeError, ValueError, OverflowError):
            return None
    if kind in ("str", "bytes", "list", "tuple", "dict"):
        return len(data) > 0 if isinstance(data, (str, list)) else None
    return None


def _order_holds(rule_text: str, value: Any) -> bool:
    import json
    import operator

    if not (isinstance(value, list) and len(value) == 2 and value[0] in ("int", "float")):
        return False
    try:
        how, bound = json.loads(rule_text)
        got = _parse_number(value[1])
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False
    compare = {
        ">": operator.gt,
        ">=": operator.ge,
        "<": operator.lt,
        "<=": operator.le,
        "!=": operator.ne,
    }.get(how)
    if compare is None or type(bound) not in (int, float):
        return False
    return bool(compare(got, bound))


def _near_holds(rule_text: str, value: Any) -> bool:
    """Whether observed number ``value`` is within the test's tolerance of its literal.

    A literal list (``approx([1.0, 2.0], abs=0.02)``): a list or tuple of as many numbers,
    each within the tolerance of its literal (att33n: each was compared with the reference's
    element, a band twice as wide around another centre).
    """
    import json

    try:
        want, rel, tol, kind = json.loads(rule_text)
    except (TypeError, ValueError, RecursionError):
        return False
    if not isinstance(want, list):
        return _near_number(want, rel, tol, kind, value)
    items = value[1] if isinstance(value, list) and len(value) == 2 else None
    if items is None or value[0] not in ("list", "tuple") or not isinstance(items, list):
        return False
    return len(items) == len(want) and all(
        _near_number(w, rel, tol, kind, _number_view(item))
        for w, item in zip(want, items, strict=True)
    )


def _near_number(want: Any, rel: Any, tol: Any, kind: Any, value: Any) -> bool:
    """Whether observed number ``value`` is within ``tol`` / ``rel`` of ``want`` by ``kind``."""
    if not (isinstance(value, list) and len(value) == 2 and value[0] in ("int", "float")):
        return False
    # Python's own arithmetic on the types the test has: an int minus an int is exact (att34a:
    # as floats, 2**53 + 1 was within 1 of 2**53); ``math.isclose`` converts to float itself.
    try:
        got = _parse_number(value[1])
        if type(want) not in (int, float) or not (_finite(got) and _finite(want)):
            return False
        if kind == "isclose":
            return math.isclose(got, want, rel_tol=rel, abs_tol=tol)
        gap = abs(got - want)
        if kind == "approx":  # pytest.approx: ``rel`` scales the expected value only
            return bool(gap <= max(rel * abs(want), tol))
        if kind == "lt":
            return bool(gap < tol)
        if kind == "le":
            return bool(gap <= tol)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return False  # past a float (pytest raises there too)
    return False


def _named_mro(name: str) -> list[str] | None:
    """The MRO names of builtin exception ``name`` (``"builtins.ValueError"``; else ``None``)."""
    module, _, attribute = name.partition(".")
    kind = getattr(builtins, attribute, None) if module == "builtins" else None
    if isinstance(kind, type) and issubclass(kind, BaseException):
        return [f"builtins.{k.__qualname__}" for k in kind.__mro__ if k is not object]
    return None


def _block_holds(blocks: Sequence[tuple[str, str]], index: Any, expected: Any, actual: Any) -> bool:
    """Whether what check ``blocks[index]``'s block raised matches the reference's record.

    A raises block (:func:`_raises_block`): the class is one the test named, as pytest says
    (:func:`_named_class`), or the reference's (:func:`same`); the message is checked only
    where the test matched one (its literal pattern run here, else equal to the reference's).
    A value check's block raised on the reference too (a ``try`` or a raises block around the
    check caught it): the reference's class.
    """
    import json

    if type(index) is not int or not 0 <= index < len(blocks):
        return False
    kind, rule_text = blocks[index]
    if kind == "warns" and isinstance(expected, list) and expected[:1] == ["warned"]:
        return _warned_holds(rule_text, expected, actual)
    if not (
        isinstance(expected, list)
        and isinstance(actual, list)
        and len(expected) == len(actual) == 3
        and expected[0] == actual[0] == "raised"
    ):
        return False
    reference, got = expected[1], actual[1]
    if not (isinstance(reference, list) and isinstance(got, list)):
        return False
    if not all(type(n) is str for n in [*reference, *got]):
        return False
    if kind in ("value", "warns"):
        return same(expected[:2], actual[:2])
    if kind != "raises":
        return False
    try:
        rule = json.loads(rule_text)
        names, message = list(rule["classes"]), rule["message"]
    except (ValueError, TypeError, KeyError):
        return False
    if not (
        any(_named_class(name, reference, got) for name in names) or same(expected[:2], actual[:2])
    ):
        return False
    folded = rule.get("checks") or []
    if not all(_message_holds(check, actual[2], got) for check in folded):
        return False
    if message is None:
        return True
    if isinstance(message, list) and len(message) == 2 and message[0] == "search":
        if type(message[1]) is str and not _REPEATS & set(message[1]):
            return _holds([("search", message[1])], 0, actual[2])
    return same(expected[2], actual[2])


def _message_holds(check: Any, text: Any, classes: list[str]) -> bool:
    """Whether a folded message check (:func:`_message_check`) holds for what was raised.

    ``text``: the message the block recorded (``["str", text]``; a ``SystemExit``'s code as
    ``observe`` records it, ``["int", "2"]``, whose message is its text); ``classes``: the
    raised class's MRO names (a ``typename`` check reads the first one's name).
    """
    if not (isinstance(check, list) and len(check) == 2):
        return False
    how, literal = check
    if how == "code":  # a SystemExit's code, by type: `sys.exit("2")` is not `sys.exit(2)`
        return (type(literal) is int and text == ["int", str(literal)]) or (
            type(literal) is str and text == ["str", literal]
        )
    if type(literal) is not str:
        return False
    if how == "typename":
        return bool(classes) and classes[0].rsplit(".", 1)[-1] == literal
    if text == ["none"]:  # `sys.exit()`: its message is empty
        text = ["str", ""]
    elif isinstance(text, list) and len(text) == 2 and text[0] == "int":
        text = ["str", text[1]]
    if not (isinstance(text, list) and len(text) == 2 and text[0] == "str"):
        return False
    if how == "in":
        return _holds([("in", literal)], 0, text)
    if how == "eq":
        return text[1] == literal
    if how == "search":
        return not _REPEATS & set(literal) and _holds([("search", literal)], 0, text)
    return False


def _warned_holds(rule_text: str, expected: list[Any], actual: Any) -> bool:
    """Whether what a warns block caught matches the reference's.

    The same classes, and the messages where the test matched one (its literal pattern
    found in one of them here, else all equal to the reference's).
    """
    import json

    if not (isinstance(actual, list) and len(actual) == len(expected) == 3):
        return False
    if actual[0] != "warned" or not same(expected[1], actual[1]):
        return False
    try:
        message = json.loads(rule_text)["message"]
    except (ValueError, TypeError, KeyError):
        return False
    if message is None:
        return True
    if isinstance(message, list) and len(message) == 2 and message[0] == "search":
        texts = actual[2][1] if isinstance(actual[2], list) and len(actual[2]) == 2 else None
        if type(message[1]) is str and not _REPEATS & set(message[1]) and isinstance(texts, list):
            return any(_holds([("search", message[1])], 0, t) for t in texts)
    return same(expected[2], actual[2])


#: What a probe raises where its rewrite went wrong (a name, an attribute, an import or a
#: keyword it renamed and a use it missed): never what a passing test's block caught unless
#: the test named it.
_REWRITE_ERRORS = frozenset(
    f"builtins.{name}"
    for name in (
        "NameError",
        "UnboundLocalError",
        "AttributeError",
        "ImportError",
        "ModuleNotFoundError",
        "TypeError",
    )
)


def sound_reference(observed: Any, blocks: Sequence[tuple[str, str]]) -> bool:
    """Whether the reference's probe records are what its passing test can have done.

    A block whose reference raised a rewrite's error (:data:`_REWRITE_ERRORS`) that the test
    did not name, or whose message names a name the probe made, means the probe broke, not
    the code: the submission would break alike, and the records would match whatever it does
    (a missed rename made unchanged code pay 5/5 in s39's own check; a renamed callback's
    ``TypeError`` where the test expected one, att39e F1). Such a test is not decided on the
    host.
    """
    import json

    if not isinstance(observed, list):
        return True
    for record in observed:
        if not (
            isinstance(record, list)
            and len(record) == 3
            and record[0] == "block"
            and isinstance(record[2], list)
            and record[2][:1] == ["raised"]
            and isinstance(record[2][1], list)
            and record[2][1][:1]
        ):
            continue
        raised = record[2][1]
        if raised[0] not in _REWRITE_ERRORS:
            continue
        if _OPAQUE.search(json.dumps(record[2][2:], default=str)):
            return False  # it names what the probe renamed (a keyword, a callback, a name)
        index = record[1]
        named: list[Any] = []
        if type(index) is int and 0 <= index < len(blocks) and blocks[index][0] == "raises":
            try:
                named = list(json.loads(blocks[index][1])["classes"])
            except (ValueError, TypeError, KeyError):
                named = []
        if not any(_named_class(name, raised, raised) for name in named):
            return False
    return True


def _named_class(name: Any, reference: list[str], got: list[str]) -> bool:
    """Whether a raised class (MRO names ``got``) is builtin ``name`` as pytest says.

    Its MRO from that class on must be that class's own (single inheritance from there: a
    class deriving from several exception types, which would match whatever was named, keeps
    only its last base's chain intact).
    """
    own = _named_mro(name.removesuffix("?")) if type(name) is str else None
    if not own:
        return False
    if name.endswith("?"):
        # Maybe a star-imported class of that name: only the builtin the reference's class
        # derives from, and no other class of its name.
        tail = f".{own[0].partition('.')[2]}"
        if own[0] not in reference or any(n.endswith(tail) for n in reference if n != own[0]):
            return False
    return own[0] in got and got[got.index(own[0]) :] == own


def _holds(predicates: Sequence[tuple[str, str]], index: Any, value: Any) -> bool:
    """Whether the test's check ``predicates[index]`` holds for observed plain text ``value``."""
    if type(index) is not int or not 0 <= index < len(predicates):
        return False
    if predicates[index][0] == "near" and type(predicates[index][1]) is str:
        return _near_holds(predicates[index][1], _number_view(value))
    if predicates[index][0] == "order" and type(predicates[index][1]) is str:
        return _order_holds(predicates[index][1], _number_view(value))
    if predicates[index][0] in ("truthy", "falsy"):
        truth = _truth(value) if isinstance(value, list) and value else None
        return truth is not None and truth == (predicates[index][0] == "truthy")
    if not (isinstance(value, list) and len(value) == 2 and value[0] == "str"):
        return False
    text = value[1]
    kind, literal = predicates[index]
    if type(text) is not str or type(literal) is not str:
        return False
    if kind == "in":
        return literal in text
    if kind == "not in":
        return literal not in text
    if kind in ("startswith", "endswith"):
        return bool(getattr(text, kind)(literal))
    if kind in ("not startswith", "not endswith"):
        return not getattr(text, kind[4:])(literal)
    if kind == "search" and not _REPEATS & set(literal):
        import re

        try:
            return re.search(literal, text) is not None
        except (re.error, RecursionError, OverflowError):
            return False
    return False


def _tolerance(value: Any) -> tuple[float, float] | None:
    if not isinstance(value, list) or len(value) != 2:
        return None
    if not all(type(v) in (int, float) and math.isfinite(v) and v >= 0 for v in value):
        return None
    return float(value[0]), float(value[1])


#: Longest number text the host parses (a longer one is compared as text: ints of 4000
#: digits or more are observed as digests, and parsing is quadratic in the length).
_NUMBER_CHARS = 4400


#: Observation tags of plain values a ``sub`` (a subclass's stored plain value) compares as.
_PLAIN_TAGS = frozenset(
    {"int", "float", "str", "bytes", "list", "tuple", "dict", "set", "frozenset"}
)


def _python_equal(expected: list[Any], actual: list[Any], depth: int) -> bool:
    """Whether two observations of different kinds are equal as Python's ``==`` says (att32i).

    Read from what the runner observed (the exact type, a subclass's stored value), never from
    a method of the value: a ``frozenset`` and a ``set`` of the same elements, an
    ``OrderedDict`` or a ``defaultdict`` and its plain dict, exact numbers
    (``Decimal``, ``Fraction``, ``int``, ``float``) of the same value. A ``bool`` stays apart
    from ``1``, as before.
    """
    kinds = {expected[0], actual[0]}
    if kinds == {"set", "frozenset"} and len(expected) == len(actual) == 2:
        return same(["set", expected[1]], ["set", actual[1]], depth + 1)
    if _standard_sub(expected) and actual[0] in _PLAIN_TAGS:
        return same(expected[2], actual, depth + 1)
    if _standard_sub(actual) and expected[0] in _PLAIN_TAGS:
        return same(expected, actual[2], depth + 1)
    a = _exact_number(expected)
    return a is not None and a == _exact_number(actual)


#: Standard-library subclasses of plain types whose ``==`` is the plain value's.
_STANDARD_SUBS = frozenset(
    {
        *("collections.OrderedDict", "collections.defaultdict", "collections.UserDict"),
        "collections.Counter",  # its == with a plain dict is dict's (att34f: 0 host for 1.0)
    }
)


def _standard_sub(value: list[Any]) -> bool:
    """A ``sub`` observation of a standard-library class.

    A repository's own subclass of a plain type stays a kind of its own: its ``==`` may be
    anything under pytest.
    """
    return value[0] == "sub" and len(value) == 3 and value[1] in _STANDARD_SUBS


def _exact_number(value: list[Any]) -> fractions.Fraction | None:
    """The exact value of an observed number, or ``None``.

    ``int``, ``float``, ``Decimal`` (its repr) and ``Fraction`` (its two ints).
    """
    try:
        if value[0] in ("int", "float") and len(value) == 2:
            number = _parse_number(value[1])
            return fractions.Fraction(number) if math.isfinite(number) else None
        if value[0] != "object" or len(value) != 3:
            return None
        if value[1] == "decimal.Decimal" and value[2][:1] == ["str"]:
            text = value[2][1]
            if not (isinstance(text, str) and text.startswith("Decimal('") and text.endswith("')")):
                return None
            if len(text) > _NUMBER_CHARS:
                return None  # parsing is not linear: bounded as an int's or a float's text
            exact = decimal.Decimal(text[9:-2])
            if not exact.is_finite() or abs(exact.adjusted()) > 400:
                return None
            if len(exact.as_tuple().digits) > 400:
                return None  # bounded work on the host (the exponent is bounded above)
            return fractions.Fraction(exact)
        if value[1] == "fractions.Fraction" and value[2][:1] == ["dict"]:
            fields = {k[1]: v for k, v in value[2][1] if k[:1] == ["str"] and v[:1] == ["int"]}
            num, den = fields.get("_numerator"), fields.get("_denominator")
            if num is None or den is None:
                return None
            if len(str(num[1])) > 400 or len(str(den[1])) > 400:
                return None  # bounded work on the host
            return fractions.Fraction(int(num[1]), int(den[1]))
    except (TypeError, ValueError, IndexError, ArithmeticError, OverflowError, ZeroDivisionError):
        return None
    return None


def _parse_number(text: Any) -> int | float:
    if not isinstance(text, str) or len(text) > _NUMBER_CHARS:
        raise ValueError("not a number")
    return int(text) if text.lstrip("-").isdigit() else float(text)


def _equal_numbers(a: Any, b: Any) -> bool:
    """``a == b`` as Python compares an int with an int or a float: exactly."""
    if type(a) is str and a == b:
        return True
    try:
        return bool(_parse_number(a) == _parse_number(b))
    except (TypeError, ValueError, OverflowError):
        return False


def _close(a: Any, b: Any, tolerance: tuple[float, float]) -> bool:
    """Two numbers (as text) within ``(rel, abs)`` of each other."""
    try:
        exact_x, exact_y = _parse_number(a), _parse_number(b)
        if type(exact_x) is int and type(exact_y) is int:
            # Exactly, as pytest.approx subtracts two ints (as floats, ints past 2**53 that
            # differ by one were the same).
            rel, tol = tolerance
            gap = abs(exact_x - exact_y)
            return gap == 0 or bool(gap <= max(rel * max(abs(exact_x), abs(exact_y)), tol))
        x, y = float(exact_x), float(exact_y)
    except (TypeError, ValueError, OverflowError):
        return False
    if x == y:
        return True
    if not (math.isfinite(x) and math.isfinite(y)):
        # As pytest.approx and math.isclose: an infinity is close only to the same infinity
        # (inf - inf and rel * inf would make it close to every number), nan to nothing
        # (``approx(..., nan_ok=True)`` is not a tolerance the probe moves out).
        return False
    rel, tol = tolerance
    return abs(x - y) <= max(rel * max(abs(x), abs(y)), tol)


# -- F1/F1b: operations with a literal that the sandbox evaluates -------------------------

#: Builtins (and module functions) whose arguments are part of the value they return: an
#: operation inside them is evaluated in the sandbox as part of the observed value.
_TRANSPARENT_CALLS = frozenset(
    {
        *_VALUE_CALLS,
        *("abs", "all", "any", "bool", "complex", "dict", "divmod", "enumerate", "filter"),
        *("float", "format", "frozenset", "int", "iter", "list", "map", "next", "pow"),
        *("range", "reversed", "round", "set", "sorted", "str", "tuple", "zip"),
        *("functools.reduce", "statistics.mean", "statistics.fmean", "statistics.median"),
    }
)
#: Calls that combine their arguments arithmetically (``sum([x, -2.5])``, ``divmod(x, 2.5)``).
_COMBINING_CALLS = frozenset(
    {"sum", "min", "max", "divmod", "pow", "math.fsum", "math.prod", "math.dist", "math.hypot"}
)
#: Constructors of a value from literals (``Decimal("0.5")``, ``np.array([..])``): a literal.
_VALUE_CONSTRUCTORS = frozenset(
    {"float", "int", "complex", "str", "bytes", "Decimal", "decimal.Decimal", "Fraction"}
    | {"fractions.Fraction", "array.array", "collections.Counter", "Counter", "OrderedDict"}
)
#: Calls whose result holds their argument's elements (a taint follows them).
_CARRYING_CALLS = frozenset(
    {"list", "tuple", "set", "frozenset", "sorted", "reversed", "iter", "dict", "range"}
)
#: Calls outside the repository that do not compare their arguments with each other: a
#: literal argument is a parameter (``round(x, 2)``, ``getattr(x, "a", 0)``), not an
#: expected value. Every other such call given a literal and a computed value (``set([x,
#: 12])``, ``sorted([x, 12])``, ``Counter``, ``functools.reduce(operator.eq, ..)``) may
#: compare them in C, out of the probe's sight (P1c).
_NONCOMPARING_CALLS = frozenset(
    {
        *("abs", "round", "float", "int", "complex", "math.fabs", "fabs", "math.floor"),
        *("math.ceil", "str", "repr", "len", "list", "tuple", "iter", "reversed"),
        *("enumerate", "zip", "range", "isinstance", "issubclass", "getattr", "hasattr"),
        *("type", "id", "callable", "print", "format", "bool", "next", "hash", "vars"),
    }
)
#: Calls that apply their first argument to the rest (a callable, not a value).
_HIGHER_ORDER = frozenset(
    {"map", "filter", "itertools.starmap", "starmap", "functools.reduce", "reduce"}
    | {"itertools.filterfalse", "filterfalse", "itertools.takewhile", "itertools.dropwhile"}
)
#: Methods that put their argument into a hashed container (it is compared with the keys).
_HASHING_METHODS = frozenset({"add", "update", "setdefault", "discard", "remove", "fromkeys"})
#: Methods of builtin values that compare their argument with the receiver's elements.
_COMPARING_METHODS = (
    _VALUE_METHODS
    | _PREDICATES
    | frozenset(
        {"union", "intersection", "difference", "symmetric_difference", "remove", "discard"}
        | {"intersection_update", "difference_update", "symmetric_difference_update"}
    )
)


def _plain(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in (None, True, False, Ellipsis)


class _Literals:
    """Which names of a function hold literals (or elements of them) in the probe.

    A name bound to a literal (``want = [0.25, 0.5]``, a module constant), a loop or
    comprehension target over one (``for w in [..]``), or the matching position of a
    ``zip(got, [..])`` / ``enumerate([..])`` target. Moved table elements are integer
    placeholders in the probe: literals too.
    """

    def __init__(
        self, function: ast.AST, module: set[str], found: _ModuleLiterals | None = None
    ) -> None:
        self.names = set(module)
        self.found = found or _ModuleLiterals()
        #: Names bound to a value built outside the repository from a literal (``{12}``,
        #: ``partial(operator.eq, 12)``, ``{12}.__contains__``), and to a call given one
        #: (``check = checker(12)``): see :meth:`holds` and :meth:`foreign_check`.
        self.built: set[str] = set(self.found.built)
        self.curried: set[str] = set(self.found.curried)
        #: Names bound to a row of literals and computed values (``for p in zip(got, [..])``,
        #: ``map(lambda p: .., zip(got, [..]))``): an operation between its parts meets both.
        self.mixed: set[str] = set()
        changed = True
        while changed:
            changed = False
            for node in ast.walk(function):
                bound: list[str] = []
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                    value = node.value
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    if value is not None and self.literal(value):
                        bound = [n for t in targets for n in _names(t)]
                elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                    bound = self._targets(node.target, node.iter)
                    self._mix(
                        _names(node.target) if isinstance(node.target, ast.Name) else [], node.iter
                    )
                elif (
                    isinstance(node, ast.Call)
                    and _dotted(node.func) in ("map", "filter", "itertools.starmap", "sorted")
                    and node.args
                    and isinstance(node.args[0], ast.Lambda)
                ):
                    params = [a.arg for a in node.args[0].args.args]
                    iterables = node.args[1:]
                    if len(params) == len(iterables):
                        bound = [
                            p for p, i in zip(params, iterables, strict=True) if self.literal(i)
                        ]
                    for i in iterables:
                        self._mix(params, i)
                new = set(bound) - self.names
                if new:
                    self.names |= new
                    changed = True
                if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                    value = node.value
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names = {n for t in targets for n in _names(t)}
                    if value is not None and names - self.built and self.holds(value):
                        self.built |= names
                        changed = True
                    if value is not None and names - self.curried and self.calls_with(value):
                        self.curried |= names
                        changed = True
        self._meeting(function)

    def _meeting(self, function: ast.AST) -> None:
        """Which names hold both a literal and a computed value (P1c), to a fixed point.

        ``got = [area(3, 4), 12]``, ``s.add(area(3, 4)); s.add(12)``: :attr:`blended`.
        :attr:`hashed` are those a hashed container holds (``add``, ``update``, ``d[k] =``,
        ``|=``): putting the second value in compares it with the first, in C.
        """
        self.local: set[str] = set()
        self.given: set[str] = set()
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            arguments = function.args
            self.given = {
                a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
            }
        bindings: list[tuple[list[str], list[ast.expr]]] = []
        self.hashed: set[str] = set()
        # Names bound to a builtin container (a display, a comprehension, a call outside the
        # repository): only their methods (``add``, ``append``) feed them. A repository
        # object's ``calc.add(2, 3)`` takes inputs.
        containers: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                value = node.value
                built = isinstance(
                    value,
                    (
                        ast.List,
                        ast.Tuple,
                        ast.Set,
                        ast.Dict,
                        ast.ListComp,
                        ast.SetComp,
                        ast.DictComp,
                    ),
                ) or (
                    isinstance(value, ast.Call)
                    and bool(_dotted(value.func))
                    and _dotted(value.func).split(".")[0] in self.found.foreign
                )
                if built:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    containers.update(t.id for t in targets if isinstance(t, ast.Name))
        for node in ast.walk(function):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                        self.hashed.add(t.value.id)
                        # (a repository object's ``obj[k] = v`` is its own ``__setitem__``)
                        bindings.append(([t.value.id], [t.slice]))
                names = [n for t in targets if not isinstance(t, ast.Subscript) for n in _names(t)]
                if node.value is not None and names:
                    bindings.append((names, [node.value]))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if isinstance(node.op, (ast.BitOr, ast.BitAnd, ast.BitXor, ast.Sub)):
                    self.hashed.add(node.target.id)
                bindings.append(([node.target.id], [node.value]))
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
                bindings.append((_names(node.target), [node.iter]))
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                bindings.append((_names(node.optional_vars), [node.context_expr]))
            elif isinstance(node, ast.Lambda) and node is not function:
                self.given |= {a.arg for a in (*node.args.posonlyargs, *node.args.args)}
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in containers
                and node.func.attr not in ("get", "pop", "index", "count")
            ):
                receiver = node.func.value.id
                if node.func.attr in _HASHING_METHODS:
                    self.hashed.add(receiver)
                feeds = node.args[:1] if node.func.attr == "setdefault" else node.args
                bindings.append(([receiver], list(feeds)))
        for names, _ in bindings:
            self.local.update(names)
        self.derived: set[str] = self.given - self.names
        self.fed_literal: set[str] = set()
        self.blended: set[str] = set()
        changed = True
        while changed:
            changed = False
            for names, feeds in bindings:
                kinds = [self.kinds(f) for f in feeds]
                literal = any(k[0] for k in kinds)
                derived = any(k[1] for k in kinds)
                for n in names:
                    if derived and n not in self.derived:
                        self.derived.add(n)
                        changed = True
                    if literal and n not in self.fed_literal:
                        self.fed_literal.add(n)
                        changed = True
                self.blended = self.derived & self.fed_literal

    def _name_kinds(self, name: str) -> tuple[bool, bool]:
        if name in self.names:
            return True, name in self.derived
        literal = name in self.fed_literal or name in self.built
        if name in self.local or name in self.given:
            return literal, name in self.derived
        if name in self.found.foreign or name in self.found.built:
            return literal, False
        return literal, True  # a name of the repository (``area``, a module value)

    def kinds(self, node: ast.expr) -> tuple[bool, bool]:
        """Whether ``node``'s value may hold (a literal, a value of the code under test).

        Looks through displays, operators, comprehensions and calls outside the
        repository; a call of repository code is a computed value (its literal arguments
        are inputs).
        """
        literal = derived = False
        stack: list[ast.expr] = [node]
        while stack and not (literal and derived):
            inner = stack.pop()
            if isinstance(inner, ast.Name):
                a, b = self._name_kinds(inner.id)
                literal, derived = literal or a, derived or b
            elif isinstance(inner, ast.Constant):
                # (``1 in (None, True, False)`` holds: the type tells a number from a flag)
                literal = literal or type(inner.value) not in (type(None), bool, type(...))
            elif isinstance(inner, (ast.List, ast.Tuple, ast.Set)):
                stack.extend(inner.elts)
            elif isinstance(inner, ast.Dict):
                stack.extend(k for k in inner.keys if k is not None)
            elif isinstance(inner, ast.DictComp):
                stack.append(inner.key)
            elif isinstance(inner, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                stack.append(inner.elt)
            elif isinstance(inner, (ast.Starred, ast.Attribute, ast.Subscript, ast.Await)):
                stack.append(inner.value)
            elif isinstance(inner, ast.BinOp):
                sides = (inner.left, inner.right)
                if any(isinstance(o, ast.Constant) for o in sides) and any(
                    self.kinds(o)[1] for o in sides
                ):
                    derived = True  # ``tmp_path / "a"``, ``x + 1``: a value made from an input
                else:
                    stack.extend(sides)  # ``got + [12]``: elements of both
            elif isinstance(inner, ast.UnaryOp):
                stack.append(inner.operand)
            elif isinstance(inner, ast.BoolOp):
                stack.extend(inner.values)
            elif isinstance(inner, ast.IfExp):
                stack.extend((inner.body, inner.orelse))
            elif isinstance(inner, (ast.Compare, ast.JoinedStr, ast.FormattedValue)):
                stack.extend(ast.iter_child_nodes(inner))  # type: ignore[arg-type]
            elif isinstance(inner, ast.Call):
                name = _dotted(inner.func)
                root = name.split(".")[0]
                arguments = [*inner.args, *(k.value for k in inner.keywords)]
                if isinstance(inner.func, ast.Name) and not self._foreign(inner.func.id):
                    derived = True  # the code under test: its arguments are inputs
                elif name and self._foreign(root):
                    stack.extend(arguments)
                elif isinstance(inner.func, ast.Attribute):
                    receiver = inner.func.value
                    if (
                        not (isinstance(receiver, ast.Name) and receiver.id in self.blended)
                        and (self.kinds(receiver)[1])
                    ):
                        derived = True  # a computed value's method: its arguments are inputs
                    else:
                        stack.append(receiver)  # ``[12].copy()``, ``got.copy()``
                        stack.extend(arguments)
                elif isinstance(inner.func, ast.Lambda):
                    stack.extend(arguments)
                else:
                    stack.append(inner.func)
                    stack.extend(arguments)
        return literal, derived

    def _foreign(self, name: str) -> bool:
        return name in self.found.foreign and name not in self.local and name not in self.given

    def compares_inside(self, call: ast.Call) -> bool:
        """Whether ``call`` (outside the repository) is given a literal and a computed value.

        ``set([area(3, 4), 12])``, ``sorted([x, 12])[0]``, ``Counter(got)`` with ``got``
        holding both, ``set([x]).difference([12])``, ``functools.reduce(operator.eq, ..)``,
        ``all(map(operator.eq, got, [12]))``: the call may hash, order or compare them in C,
        where the probe cannot see it. Calls of the code under test take inputs;
        :data:`_NONCOMPARING_CALLS` take parameters.
        """
        name = _dotted(call.func)
        if name in (OBSERVE, OBSERVING, ISINSTANCE) or name in _NONCOMPARING_CALLS:
            return False
        parts = [*call.args, *(k.value for k in call.keywords if k.arg != "key")]
        if (
            name in _HIGHER_ORDER
            and parts
            and isinstance(parts[0], (ast.Name, ast.Attribute))
            and not self.kinds(parts[0])[0]
        ):
            parts = parts[1:]  # ``map(area, [3], [4])``: the function takes the rest as inputs
        func = call.func
        if isinstance(func, ast.Name):
            if not self._foreign(func.id) and func.id not in self.built:
                return False
        elif isinstance(func, ast.Attribute):
            root = name.split(".")[0]
            if name and self._foreign(root):
                pass  # ``collections.Counter``, ``dict.fromkeys``: a module's function
            elif func.attr in _COMPARING_METHODS or (
                func.attr in ("get", "pop", "setdefault", "__getitem__")
                and self.kinds(func.value)[0]
            ):
                # ``set([x]).union([12])``, ``dict(zip([x], [1])).get(12)``: the receiver
                # meets the argument (a lookup in a computed value, ``r.get("a")``, does not)
                parts.append(func.value)
            else:
                return False  # a method of a value (its arguments are inputs)
        elif not isinstance(func, (ast.Lambda, ast.Call)):
            return False
        kinds = [self.kinds(p) for p in parts]
        return any(k[0] for k in kinds) and any(k[1] for k in kinds)

    def _mix(self, names: list[str], source: ast.expr) -> None:
        if isinstance(source, ast.Call) and _dotted(source.func) in ("zip", "enumerate", "map"):
            kinds = [self.literal(a) for a in source.args]
            if any(kinds) and (not all(kinds) or _dotted(source.func) == "enumerate"):
                self.mixed.update(names)

    def _targets(self, target: ast.expr, source: ast.expr) -> list[str]:
        name = _dotted(source.func) if isinstance(source, ast.Call) else ""
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(source, ast.Call):
            args = source.args
            if name == "zip" and len(args) == len(target.elts):
                return [
                    n
                    for t, a in zip(target.elts, args, strict=True)
                    if self.literal(a)
                    for n in _names(t)
                ]
            if name == "enumerate" and args and len(target.elts) == 2:
                return _names(target.elts[1]) if self.literal(args[0]) else []
        if self.literal(source):
            return _names(target)
        if (
            isinstance(source, ast.Call)
            and isinstance(source.func, ast.Attribute)
            and source.func.attr in ("items", "keys", "values")
            and self.literal(source.func.value)
        ):
            return _names(target)
        return []

    def literal(self, node: ast.expr) -> bool:
        """Whether ``node`` is a literal in the probe (or holds only literals)."""
        if isinstance(node, ast.Name):
            return node.id in self.names
        if (
            isinstance(node, ast.Attribute)
            and node.attr in self.found.attrs
            and isinstance(node.value, ast.Name)
            and (node.value.id in ("self", "cls") or node.value.id in self.found.classes)
        ):
            return True
        if isinstance(node, (ast.Subscript, ast.Attribute)):
            return self.literal(node.value)
        if isinstance(node, ast.Starred):
            return self.literal(node.value)
        name = _dotted(node.func) if isinstance(node, ast.Call) else ""
        if isinstance(node, ast.Call) and (
            name in _CARRYING_CALLS
            or name in ("zip", "enumerate")
            or name in _VALUE_CONSTRUCTORS
            or name.endswith((".array", ".asarray", ".float64", ".int64"))
        ):
            arguments = [*node.args, *(k.value for k in node.keywords)]
            return bool(arguments) and all(self.literal(a) for a in arguments)
        if isinstance(node, ast.BinOp):
            return self.literal(node.left) and self.literal(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.literal(node.operand)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return bool(node.elts) and all(self.literal(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return (
                bool(node.values)
                and all(k is not None and self.literal(k) for k in node.keys)
                and all(self.literal(v) for v in node.values)
            )
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.literal(node.elt) and all(self.literal(g.iter) for g in node.generators)
        return is_literal(node) and not _plain(node)

    def holds(self, node: ast.expr) -> bool:
        """Whether ``node``'s value is built outside the repository from a literal.

        A literal, a display holding one, a call of a builtin, standard-library or
        test-module callable given one (``set([12])``, ``partial(operator.eq, 12)``,
        ``dict.fromkeys([12])``, ``make(12)``), a lambda with a literal default, and an
        attribute, item or method result of such a value (``{12}.__contains__``).
        ``itemgetter`` / ``attrgetter`` take keys (inputs), not expected values.
        """
        if _plain(node):
            return False
        if self.literal(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.built
        if (
            isinstance(node, ast.Attribute)
            and node.attr in self.found.built_attrs
            and isinstance(node.value, ast.Name)
            and (node.value.id in ("self", "cls") or node.value.id in self.found.classes)
        ):
            return True
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            return self.holds(node.value)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self.holds(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.holds(e) for e in (*node.keys, *node.values) if e is not None)
        if isinstance(node, ast.Lambda):
            defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
            return any(self.holds(d) for d in defaults)
        if isinstance(node, ast.BinOp):
            return self.holds(node.left) or self.holds(node.right)
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name.rsplit(".", 1)[-1] in ("itemgetter", "attrgetter"):
                return False
            arguments = [*node.args, *(k.value for k in node.keywords)]
            foreign = isinstance(node.func, ast.Lambda) or (
                bool(name) and name.split(".")[0] in self.found.foreign
            )
            if foreign and any(self.holds(a) for a in arguments):
                return True
            return not isinstance(node.func, ast.Name) and self.holds(node.func)
        return False

    def calls_with(self, node: ast.expr) -> bool:
        """Whether ``node`` is a call given a literal (its result may be a predicate on it)."""
        if not isinstance(node, ast.Call):
            return False
        arguments = [*node.args, *(k.value for k in node.keywords)]
        return any(self.holds(a) for a in arguments)

    def computed(self, node: ast.expr) -> bool:
        """Whether ``node`` may hold a value of the code under test (not only literals)."""
        if isinstance(node, ast.Slice):
            return any(
                self.computed(p) for p in (node.lower, node.upper, node.step) if p is not None
            )
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return any(self.computed(e) for e in node.elts)
        if isinstance(node, ast.Dict):
            return any(self.computed(e) for e in (*node.keys, *node.values) if e is not None)
        return not _plain(node) and not self.literal(node) and not self.holds(node)

    def foreign_check(self, call: ast.Call) -> bool:
        """Whether ``call`` hands a computed value to a callee that holds a literal.

        ``partial(operator.eq, 12)(x)``, ``{12}.__contains__(x)``, ``d.get(x)`` with a
        literal ``d``, ``set([12]).issuperset({x})``, ``checker(12)(x)`` (a predicate made
        from the literal), ``any(map(partial(operator.eq, 12), [x]))``: the comparison with
        the literal runs in the sandbox, in code the probe does not rewrite.
        """
        arguments = [*call.args, *(k.value for k in call.keywords)]
        if not any(self.computed(a) for a in arguments):
            return False
        func = call.func
        if isinstance(func, ast.Call) and self.calls_with(func):
            return True
        if isinstance(func, ast.Name) and func.id in self.curried:
            return True
        if not isinstance(func, ast.Name) and self.holds(func):
            return True
        if isinstance(func, ast.Name) and func.id in self.built:
            return True
        # A predicate holding a literal handed to a higher-order call (``map``, ``key=``).
        return any(
            self.holds(a)
            and isinstance(a, (ast.Call, ast.Lambda, ast.Name, ast.Attribute))
            and not self.literal(a)
            for a in arguments
        )

    def meets(self, operands: list[ast.expr]) -> bool:
        """Whether a literal and a computed value meet among ``operands``."""
        operands = [o for o in operands if not _plain(o)]
        rows = [o for o in operands if _root(o) in self.mixed]
        if rows and len(operands) >= 2:
            return True
        kinds = [self.literal(o) for o in operands]
        return any(kinds) and not all(kinds)


def _root(node: ast.expr) -> str:
    while isinstance(node, (ast.Subscript, ast.Attribute, ast.Starred)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


@dataclass
class _ModuleLiterals:
    """What holds literals module-wide: names, class attributes, fixtures and classes."""

    names: set[str] = field(default_factory=set)
    attrs: set[str] = field(default_factory=set)
    fixtures: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    #: Names of builtins, the standard library, pytest/numpy and the test module's own
    #: functions: callables outside the repository (see :meth:`_Literals.holds`).
    foreign: set[str] = field(default_factory=set)
    #: Module names and class attributes built outside the repository from a literal.
    built: set[str] = field(default_factory=set)
    built_attrs: set[str] = field(default_factory=set)
    curried: set[str] = field(default_factory=set)


def _literal_assignment(statement: ast.stmt) -> list[str]:
    if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        if is_literal(statement.value) and not _plain(statement.value):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            return [n for t in targets for n in _names(t)]
    return []


def _module_literals(tree: ast.Module) -> _ModuleLiterals:
    """What holds literals in test module ``tree``.

    Module constants and class attributes bound to literals (read as ``self.X``, ``cls.X``
    or ``Class.X``), and fixtures that return a literal.
    """
    found = _ModuleLiterals()
    for statement in tree.body:
        found.names.update(_literal_assignment(statement))
    found.foreign = _foreign_names(tree)
    module = _Literals(ast.Module(body=[], type_ignores=[]), found.names, found)
    for _ in range(3):  # names built from names built before
        for statement in tree.body:
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
                targets = (
                    statement.targets if isinstance(statement, ast.Assign) else [statement.target]
                )
                names = {n for t in targets for n in _names(t)}
                if module.holds(statement.value):
                    found.built |= names
                    module.built |= names
                if module.calls_with(statement.value):
                    found.curried |= names
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                if (
                    isinstance(statement, (ast.Assign, ast.AnnAssign))
                    and statement.value is not None
                ):
                    targets = (
                        statement.targets
                        if isinstance(statement, ast.Assign)
                        else [statement.target]
                    )
                    if module.holds(statement.value) or module.calls_with(statement.value):
                        found.built_attrs.update(n for t in targets for n in _names(t))
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            found.classes.add(node.name)
            for statement in node.body:
                found.attrs.update(_literal_assignment(statement))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
            _dotted(d.func if isinstance(d, ast.Call) else d).endswith("fixture")
            for d in node.decorator_list
        ):
            if any(
                isinstance(r, ast.Return) and r.value is not None and is_literal(r.value)
                for r in ast.walk(node)
            ):
                found.fixtures.add(node.name)
    return found


#: Top-level modules outside the repository besides the standard library.
_FOREIGN_MODULES = frozenset({"pytest", "numpy", "np", "_pytest", "hypothesis"})


def _foreign_names(tree: ast.Module) -> set[str]:
    """Names in ``tree`` that call code outside the repository.

    Builtins, names imported from the standard library (or pytest, numpy), and the test
    module's own functions.
    """
    found = {n for n in dir(builtins) if not n.startswith("_")}
    stdlib = set(getattr(sys, "stdlib_module_names", ())) | _FOREIGN_MODULES
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in stdlib:
                    found.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] in stdlib:
                found.update(a.asname or a.name for a in node.names)
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.add(statement.name)
    return found


def _parametrized(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The argument names a ``parametrize`` decorator gives ``function`` (its table's)."""
    names: set[str] = set()
    for decorator in function.decorator_list:
        if not (
            isinstance(decorator, ast.Call)
            and _dotted(decorator.func).endswith("parametrize")
            and decorator.args
        ):
            continue
        first = decorator.args[0]
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names.update(n.strip() for n in first.value.split(","))
        elif isinstance(first, (ast.List, ast.Tuple)):
            names.update(
                e.value for e in first.elts if isinstance(e, ast.Constant) and type(e.value) is str
            )
    return names


def _observed_region(function: ast.AST) -> list[ast.expr]:
    """The expressions of ``function`` whose values reach an observation.

    The observations' arguments; the values, iterables, conditions and mutating calls
    (``errors.append(g)``) that bind or change a name read in one, and the conditions and
    loops around them (``for g, w in zip(..): if g != w: ok = False``), to a fixed point.
    One pass indexes what binds or changes each name; each name and expression is then
    followed once.
    """
    parents: dict[ast.AST, ast.AST] = {}
    roots: list[ast.expr] = []
    binders: dict[str, list[tuple[ast.AST, list[ast.expr]]]] = {}
    for node in ast.walk(function):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
        bound: list[str] = []
        feeds: list[ast.expr] = []
        if _observes_value(node):
            roots.extend(node.args)  # type: ignore[attr-defined]
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None:
                bound = [n for t in targets for n in _names(t)]
                feeds = [node.value, *targets]
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            bound, feeds = _names(node.target), [node.iter]
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            bound, feeds = _names(node.optional_vars), [node.context_expr]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
        ):
            bound = [node.func.value.id]
            feeds = [*node.args, *(k.value for k in node.keywords)]
        for name in set(bound):
            binders.setdefault(name, []).append((node, feeds))
    seen_names: set[str] = set()
    seen_nodes: set[int] = set()
    region: list[ast.expr] = []
    while roots:
        root = roots.pop()
        if id(root) in seen_nodes:
            continue
        seen_nodes.add(id(root))
        region.append(root)
        names = {n.id for n in ast.walk(root) if isinstance(n, ast.Name)} - seen_names
        seen_names |= names
        for name in names:
            for node, feeds in binders.get(name, ()):
                roots.extend(feeds)
                at = parents.get(node)
                while at is not None and at is not function:
                    if isinstance(at, (ast.If, ast.While)):
                        roots.append(at.test)
                    elif isinstance(at, (ast.For, ast.AsyncFor)):
                        roots.append(at.iter)
                    elif isinstance(at, ast.comprehension):
                        roots.extend(at.ifs)
                    at = parents.get(at)
    return region


def _operations(node: ast.expr, literals: _Literals, whole_observed: bool = False) -> bool:
    """Whether observed expression ``node`` has a literal meet a computed value.

    In an operation the sandbox evaluates as part of the value: arithmetic, a comparison, a
    combining builtin (``sum([x, -2.5])``), a dunder or a display's method
    (``x.__sub__(2.5)``, ``{x: 1}.get(2.5)``). Arguments of the code under test
    (``f(n - 1)``) and indices are inputs: not looked into.
    """
    stack: list[ast.AST] = [node]
    while stack:
        inner = stack.pop()
        if isinstance(inner, ast.BinOp):
            text = [
                o
                for o in (inner.left, inner.right)
                if isinstance(o, ast.Constant) and isinstance(o.value, (str, bytes))
            ]
            form = text and isinstance(inner.op, (ast.Mod, ast.Div))
            if not form and literals.meets([inner.left, inner.right]):
                return True
            stack.extend((inner.left, inner.right))
        elif isinstance(inner, ast.Compare):
            if literals.meets([inner.left, *inner.comparators]):
                return True
            stack.extend((inner.left, *inner.comparators))
        elif isinstance(inner, ast.Call):
            name = _dotted(inner.func)
            arguments = [*inner.args, *(k.value for k in inner.keywords)]
            if literals.foreign_check(inner):
                return True
            whole = inner is node and name == "sorted" and whole_observed
            if not whole and literals.compares_inside(inner):
                # (``sorted([x, 1])`` observed whole: every element reaches the host, which
                # compares each with the reference's; a part of it, ``[0]``, does not.)
                return True
            if name in _COMBINING_CALLS or name.startswith("operator."):
                spread = [
                    e
                    for a in arguments
                    for e in (a.elts if isinstance(a, (ast.List, ast.Tuple, ast.Set)) else [a])
                ]
                if literals.meets(spread):
                    return True
            if isinstance(inner.func, ast.Attribute):
                receiver = inner.func.value
                dunder = inner.func.attr.startswith("__")
                display = isinstance(
                    receiver, (ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Constant, ast.JoinedStr)
                )
                if (dunder or display) and literals.meets([receiver, *arguments]):
                    return True
                stack.append(receiver)
                if dunder or display:
                    stack.extend(arguments)
            elif (
                isinstance(inner.func, ast.Lambda)
                or name in _TRANSPARENT_CALLS
                or (name and literals._foreign(name.split(".")[0]))
            ):
                stack.append(inner.func)
                stack.extend(arguments)
        elif isinstance(inner, ast.Subscript):
            if isinstance(inner.value, (ast.List, ast.Tuple, ast.Dict)) and literals.meets(
                [inner.value, inner.slice]
            ):
                return True
            if literals.holds(inner.value) and literals.computed(inner.slice):
                # ``{12: 1}[x]``, ``Counter([12])[x]``, ``TABLE[x]``: the container's
                # ``__getitem__`` hashes and compares the computed key with the literal.
                return True
            stack.append(inner.value)
        elif isinstance(inner, ast.Lambda):
            stack.append(inner.body)
        elif isinstance(inner, ast.Name) and inner.id in literals.hashed & literals.blended:
            # ``s.add(area(3, 4)); s.add(12)``: the set compared them when it took the second.
            return True
        elif isinstance(inner, (ast.Set, ast.Dict)) and literals.meets(
            [k for k in (inner.elts if isinstance(inner, ast.Set) else inner.keys) if k is not None]
        ):
            # ``{12: True, x: True}``: building it hashes and compares the keys.
            return True
        elif isinstance(inner, (ast.expr, ast.comprehension, ast.keyword, ast.arguments)):
            stack.extend(ast.iter_child_nodes(inner))
    return False


def _sandbox_operations(tree: ast.Module) -> bool:
    """Whether a literal meets a computed value where the sandbox decides an observation.

    In an observed value, or in a loop, comprehension or assignment feeding one.

    ``max(abs(a - b) for a, b in zip(got, [0.25, 0.5])) < 1e-9``, ``f"{got[1] - 0.5:.6f}"``,
    ``[w for w in ["a"] if w not in got]``, ``ok = False`` in a loop over ``zip(got, want)``:
    the computed operand's methods are handed the literal (or a name bound from one) and
    decide the result, and the literal stays in the probe.
    """
    module = _module_literals(tree)
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = {a.arg for a in (*function.args.posonlyargs, *function.args.args)}
        given = _parametrized(function) | (arguments & module.fixtures)
        literals = _Literals(function, module.names | given, module)
        observed = {
            id(a)
            for n in ast.walk(function)
            if isinstance(n, ast.Call) and _observes_value(n)
            for a in n.args[:1]
        }
        if any(_operations(e, literals, id(e) in observed) for e in _observed_region(function)):
            return True
    return False
