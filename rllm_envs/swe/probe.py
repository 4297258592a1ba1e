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

A module is *complete* when every check the rewrite knows was rewritten and nothing else
that decides a test is left in it: a ``raise AssertionError``, ``pytest.fail``, ``self.fail``,
a call of a ``pytest.raises`` outside ``with``, a helper whose name starts with ``assert``
from elsewhere, or ``pytest.mark.parametrize`` (its table can hold expected values, which
stay in the probe). A test of an incomplete module still runs as a probe, but some of its
checks run in the sandbox's process, where a patch could forge them; the judge says so
(:attr:`rllm_envs.swe.judge.Verdict.verdict_trust`).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

__all__ = ["probe_source", "same", "same_observations", "OBSERVE", "OBSERVING"]

#: The names the probe binds to ``pytest.observe`` and ``pytest.observing``.
OBSERVE = "__rllm_observe__"
OBSERVING = "__rllm_observing__"
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
_DECIDERS = ("assert",)


def _expected(node: ast.expr) -> bool:
    """Whether ``node`` is an expected value written in the test.

    A constant expression (literals and arithmetic on them), or ``pytest.approx`` of one.
    """
    if isinstance(node, ast.Call) and _dotted(node.func) in ("pytest.approx", "approx"):
        return bool(node.args) and all(_expected(a) for a in node.args)
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


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else ""
    return ""


def _made_from_literals(node: ast.expr) -> bool:
    """Whether ``node`` is a class building a value from literals (``Interval(1, 9)``)."""
    if _expected(node):
        return True
    if not isinstance(node, ast.Call) or not _dotted(node.func)[-1:].isalpha():
        return False
    if not _dotted(node.func).rsplit(".", 1)[-1][:1].isupper():
        return False  # a function or method call, not a class building a value
    values = [*node.args, *(k.value for k in node.keywords)]
    return all(not isinstance(v, ast.Starred) and _made_from_literals(v) for v in values)


def _pick(operands: list[ast.expr], probe: _Probe) -> list[ast.expr]:
    """The operands of one comparison to observe: the computed ones, not the expected ones.

    When more than one is computed and exactly one is not built from literals, the others
    are the expected side (dropped); otherwise every computed operand is observed and the
    module is incomplete (an expected value may be computed in the probe itself).
    """
    computed = [o for o in operands if not _expected(o)]
    if len(computed) < 2:
        return computed
    made = [o for o in computed if not _made_from_literals(o)]
    if len(made) == 1:
        return made
    probe.complete = False
    return computed


def _observed(test: ast.expr, probe: _Probe) -> list[ast.expr]:
    """The computed values a check of ``test`` depends on."""
    if isinstance(test, ast.Compare):
        return _pick([test.left, *test.comparators], probe)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _observed(test.operand, probe)
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [e for v in test.values for e in _observed(v, probe)]
    if isinstance(test, ast.Call) and _dotted(test.func) in ("isinstance", "issubclass"):
        return [test.args[0]] if test.args else []
    return [] if _expected(test) else [test]


def _observe(values: list[ast.expr], at: ast.AST) -> list[ast.stmt]:
    calls: list[ast.stmt] = [
        ast.Expr(ast.Call(ast.Name(OBSERVE, ast.Load()), [v], [])) for v in values
    ]
    for call in calls:
        ast.copy_location(call, at)
    return calls or [ast.copy_location(ast.Pass(), at)]


class _Probe(ast.NodeTransformer):
    def __init__(self) -> None:
        self.complete = True
        self.raises_names = {"pytest.raises"}

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST:
        if node.module == "pytest":
            for alias in node.names:
                if alias.name == "raises":
                    self.raises_names.add(alias.asname or "raises")
        return node

    def visit_Assert(self, node: ast.Assert) -> Any:
        self.generic_visit(node)
        return _observe(_observed(node.test, self), node)

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        self.generic_visit(node)
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if target is not None and _dotted(target).rsplit(".", 1)[-1] in (
            "AssertionError",
            "Failed",
            "failureException",
        ):
            self.complete = False
        return node

    def visit_With(self, node: ast.With) -> ast.AST:
        for item in node.items:
            call = item.context_expr
            if not isinstance(call, ast.Call):
                continue
            name = _dotted(call.func)
            if name in self.raises_names or name.endswith(".assertRaises"):
                message = any(k.arg == "match" for k in call.keywords)
                if name.endswith(".assertRaises"):
                    message = False
                item.context_expr = ast.copy_location(
                    ast.Call(
                        ast.Name(OBSERVING, ast.Load()),
                        [ast.Constant(True)] if message else [],
                        [],
                    ),
                    call,
                )
            elif name.endswith(".assertRaisesRegex"):
                item.context_expr = ast.copy_location(
                    ast.Call(ast.Name(OBSERVING, ast.Load()), [ast.Constant(True)], []), call
                )
        self.generic_visit(node)
        return node

    def visit_Expr(self, node: ast.Expr) -> Any:
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
            method = call.func.attr
            count = 1 if method in _UNITTEST_ONE else 2 if method in _UNITTEST_TWO else 0
            if count and _dotted(call.func.value) == "self":
                args = [self.visit(a) for a in call.args[:count]]
                return _observe(_pick(args, self), node)
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = _dotted(node.func)
        last = name.rsplit(".", 1)[-1]
        if (
            name in self.raises_names
            or name in ("pytest.fail", "self.fail", "pytest.mark.parametrize")
            or last in ("assertRaises", "assertRaisesRegex", "assertWarns", "parametrize")
            or (last.startswith(_DECIDERS) and last != OBSERVE)
        ):
            # What decides a test outside an observation (only reached for what the
            # rewrites above left in place).
            self.complete = False
        return node


@lru_cache(maxsize=4096)
def probe_source(source: str) -> tuple[str, bool]:
    """The probe of test module ``source`` and whether it is complete (module docstring).

    A module that does not parse is returned as it is, incomplete.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return source, False
    probe = _Probe()
    tree = probe.visit(tree)
    header = ast.parse(f"from pytest import observe as {OBSERVE}, observing as {OBSERVING}\n").body[
        0
    ]
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
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", probe.complete


def same_observations(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Whether a test's record ``{"observed": [...], "end": [...]}`` matches the reference's.

    Every observation in order (:func:`same`), as many as the reference made, and the same end.
    """
    seen, want = actual.get("observed"), expected.get("observed")
    if not isinstance(seen, list) or not isinstance(want, list) or len(seen) != len(want):
        return False
    if not all(same(e, a) for e, a in zip(want, seen, strict=True)):
        return False
    return same(expected.get("end"), actual.get("end"))


def same(expected: Any, actual: Any, depth: int = 0) -> bool:
    """Whether observation ``actual`` matches the reference's ``expected`` (host side).

    Exact, but for numbers (an ``int`` and a ``float`` compare by value, exactly; two floats
    within pytest.approx's default tolerance) and raised exceptions (the submission's may be
    a subclass of the reference's).
    """
    if depth > 200:
        return False
    if not isinstance(expected, list) or not isinstance(actual, list) or not expected:
        return bool(expected == actual)
    tag = expected[0]
    numbers = ("int", "float")
    if tag in numbers and actual[:1] and actual[0] in numbers and len(actual) == 2:
        if "int" in (tag, actual[0]):
            return _equal_numbers(expected[1], actual[1])
        return _close(expected[1], actual[1])
    if tag == "raised" and actual[:1] == ["raised"] and len(actual) == len(expected):
        names = expected[1]
        return (
            isinstance(names, list)
            and isinstance(actual[1], list)
            and bool(names)
            and names[0] in actual[1]
            and expected[2:] == actual[2:]
        )
    if len(expected) != len(actual):
        return False
    return all(same(e, a, depth + 1) for e, a in zip(expected, actual, strict=True))


def _equal_numbers(a: Any, b: Any) -> bool:
    """``a == b`` as Python compares an int with an int or a float: exactly."""
    if type(a) is str and a == b:
        return True
    try:
        x = int(a) if isinstance(a, str) and a.lstrip("-").isdigit() else float(a)
        y = int(b) if isinstance(b, str) and b.lstrip("-").isdigit() else float(b)
    except (TypeError, ValueError, OverflowError):
        return False
    return bool(x == y)


def _close(a: Any, b: Any) -> bool:
    """Two floats (as ``repr`` text) within pytest.approx's default tolerance."""
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError, OverflowError):
        return False
    if x == y or (math.isnan(x) and math.isnan(y)):
        return True
    return abs(x - y) <= max(1e-6 * abs(x), 1e-12)
