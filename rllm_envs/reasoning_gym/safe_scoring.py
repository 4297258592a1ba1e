"""Scorers that never run text as code (issue #31, F2/F2b/F3).

Several reasoning-gym families score an answer by running it as Python: ``eval(answer)``
(``string_insertion``, ``spiral_matrix``, ``binary_matrix``, ``n_queens``), ``eval`` of the
task's own reference or metadata (``number_sorting``, ``bitwise_arithmetic``: a client-written
task brings them) or ``sympy.parse_expr`` (``polynomial_multiplication``, ``simple_integration``,
``intermediate_integration``, ``puzzle24``, ``countdown``), which runs ``eval`` too. The text
comes from the model (or a client), and the scorer runs in the host process: an answer could
run any command there, or rewrite the scorer so that every later answer pays 1.

This module closes the class:

* :func:`evaluating_calls` reads the installed reasoning-gym source of a family's
  ``score_answer`` (and of every reasoning-gym function or method it calls) for calls of
  :data:`EVALUATING_CALLS` (``eval``, ``exec``, ``parse_expr``, ``sympify``...). A family
  whose source cannot be read counts as evaluating.
* :data:`OVERRIDES` holds this module's own scorers for the evaluating families: the same
  rules, with ``ast.literal_eval`` for the literal families, :func:`parse_math` (a
  whitelisted Python-syntax parser with bounds on size, depth, numbers and powers) for the
  sympy ones, and Countdown's ``+ - * /`` grammar over integer literals (exact fractions, no
  names, calls or powers: :func:`_arithmetic`) for ``puzzle24`` and ``countdown``. They never
  call the family's scorer. One override is of a family that runs no text:
  ``complex_arithmetic``, whose scorer pays a NaN answer 1.0; its override scores only a
  finite parse (by reasoning-gym's tamper-checked scorer).
* :func:`safe_scorer` gives the override of an evaluating family, refuses one without an
  override (:class:`UnsafeScorer`: an upgrade of reasoning-gym that adds one is refused, never
  trusted), and otherwise gives reasoning-gym's scorer, checked on every call for tampering
  (its code object must be the one it had when first fetched).
* :func:`check_family` refuses, when an env is made, a family whose scorer would be refused.
"""

from __future__ import annotations

import ast
import cmath
import functools
import inspect
import json
import math
import random
import re
import textwrap
import time
import types
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

__all__ = [
    "EVALUATING_CALLS",
    "MAX_NUMBER_BITS",
    "OVERRIDES",
    "UnsafeExpression",
    "UnsafeScorer",
    "check_family",
    "evaluating_calls",
    "evaluating_families",
    "parse_math",
    "safe_scorer",
    "scan_scorer",
]

Scorer = Callable[[Any, dict[str, Any]], float]

#: Calls that run text as code (by name or attribute name, wherever they come from).
EVALUATING_CALLS = frozenset(
    {
        "eval",
        "exec",
        "compile",
        "__import__",
        "parse_expr",
        "sympify",
        "S",
        "parse_latex",
        "lambdify",
    }
)
#: Modules any call into which counts as evaluating (deserialisers that run code).
_EVALUATING_MODULES = ("pickle", "marshal", "dill", "cloudpickle", "subprocess", "os")

#: A bigger number (numerator or denominator) is refused while parsing: about 3,000 digits.
MAX_NUMBER_BITS = 10_000
#: Power exponents: a literal rational of at most this size (no towers: ``9**9**9`` is refused).
MAX_EXPONENT = 1000
#: Syntax nodes of one expression.
MAX_NODES = 4000
#: Nesting depth of one expression (sums and products are flattened first).
MAX_DEPTH = 60
#: Text longer than this is not parsed.
MAX_TEXT = 8000


class UnsafeScorer(Exception):
    """A family's scorer runs text as code and this module has no safe scorer for it."""


class UnsafeExpression(ValueError):
    """Text :func:`parse_math` refuses (not in its grammar, or over a bound)."""


# ------------------------------------------------------------------------------ the scan


def _function_of(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            return value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
    return None


def _scan(fn: Any, cls: type, seen: set[Any], found: set[str], depth: int = 0) -> None:
    if fn in seen or depth > 8:
        return
    seen.add(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        found.add(f"<no source: {getattr(fn, '__qualname__', fn)}>")
        return
    names = getattr(fn, "__globals__", {})
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func, target = node.func, None
        if isinstance(func, ast.Name):
            if func.id in EVALUATING_CALLS:
                found.add(func.id)
            target = names.get(func.id)
        elif isinstance(func, ast.Attribute):
            if func.attr in EVALUATING_CALLS:
                found.add(func.attr)
            if isinstance(func.value, ast.Name):
                if func.value.id in ("self", "cls", "super"):
                    method = _function_of(cls, func.attr)
                    if isinstance(method, types.FunctionType):  # any method of the scorer's
                        _scan(method, cls, seen, found, depth + 1)
                else:
                    base = names.get(func.value.id)
                    if isinstance(base, types.ModuleType):
                        if base.__name__.split(".")[0] in _EVALUATING_MODULES:
                            found.add(f"{base.__name__}.{func.attr}")
                        target = getattr(base, func.attr, None)
        if isinstance(target, types.ModuleType):
            continue
        if isinstance(target, types.FunctionType) and (target.__module__ or "").startswith(
            "reasoning_gym"
        ):
            _scan(target, cls, seen, found, depth + 1)


def scan_scorer(dataset_cls: type) -> frozenset[str]:
    """The code-running calls a dataset class's ``score_answer`` makes.

    Read from the source of ``score_answer``, of every method of the class it calls
    (``self._helper(...)``) and of every reasoning-gym function it calls (``helper(...)``,
    ``module.helper(...)``), to a depth of 8: calls named in :data:`EVALUATING_CALLS` and
    calls into :data:`_EVALUATING_MODULES`. Empty for a scorer that runs no text;
    ``"<no source: ...>"`` when a function's source cannot be read (it counts as evaluating).
    """
    found: set[str] = set()
    scorer = _function_of(dataset_cls, "score_answer")
    if not isinstance(scorer, types.FunctionType):
        return frozenset({f"<no source: {dataset_cls.__qualname__}.score_answer>"})
    _scan(scorer, dataset_cls, set(), found)
    return frozenset(found)


@functools.cache
def evaluating_calls(family: str) -> frozenset[str]:
    """The code-running calls of the installed reasoning-gym scorer of ``family``.

    :func:`scan_scorer` of the family's dataset class, cached.
    """
    from reasoning_gym.factory import DATASETS

    return scan_scorer(DATASETS[family][0])


def evaluating_families() -> dict[str, frozenset[str]]:
    """Every installed family whose scorer runs text as code, with the calls found."""
    from reasoning_gym.factory import DATASETS

    result = {}
    for name in sorted(DATASETS):
        calls = evaluating_calls(name)
        if calls:
            result[name] = calls
    return result


def check_family(family: str) -> None:
    """Refuse a family whose scorer runs text as code and has no safe override here.

    ``composite`` is checked by its component families (its items name them). Another family's
    scorer is fetched (and cached) here, when an env is made, so that the code object its
    tamper check compares with is the one it had before any answer was scored.

    Raises:
        InvalidEnvConfig: For such a family.
    """
    from rllm_envs.error import InvalidEnvConfig

    if family == "composite":
        return
    calls = evaluating_calls(family)
    if family in OVERRIDES or not calls:
        # Fetched now, before any answer is scored: the guard's reference code object.
        safe_scorer(family)
        return
    if calls:
        raise InvalidEnvConfig(
            f"reasoning-gym's {family!r} scorer runs the answer as code ({sorted(calls)}) in "
            "this process and rllm-envs has no safe scorer for it "
            "(rllm_envs.reasoning_gym.safe_scoring.OVERRIDES); it is not played."
        )


def _refused(family: str) -> Scorer:
    def refuse(answer: Any, entry: dict[str, Any]) -> float:
        raise UnsafeScorer(f"reasoning-gym's {family!r} scorer runs text as code; it is not called")

    return refuse


def _guarded(family: str) -> Scorer:
    from reasoning_gym.factory import get_score_answer_fn

    method = get_score_answer_fn(family)
    func = getattr(method, "__func__", method)
    code = func.__code__
    owner = type(getattr(method, "__self__", None))

    def score(answer: Any, entry: dict[str, Any]) -> float:
        current = _function_of(owner, "score_answer") if owner is not type(None) else func
        if func.__code__ is not code or (current is not None and current is not func):
            raise UnsafeScorer(f"reasoning-gym's {family!r} scorer was changed in this process")
        return float(method(answer, entry))

    return score


@functools.cache
def safe_scorer(family: str) -> Scorer:
    """The scorer of ``family`` that runs no text as code (see the module docstring).

    The override of an evaluating family; for one without an override (and ``composite``,
    whose items must name their family), a scorer that raises :class:`UnsafeScorer`; else
    reasoning-gym's, which raises :class:`UnsafeScorer` if its code was swapped.
    """
    if family in OVERRIDES:
        return OVERRIDES[family]()
    if family == "composite" or evaluating_calls(family):
        return _refused(family)
    return _guarded(family)


# ------------------------------------------------------------------ literal families


def _literal(text: str) -> Any:
    """``ast.literal_eval`` of bounded text (never runs code)."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise UnsafeExpression("not a bounded string")
    return ast.literal_eval(text)


def _string_insertion() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        oracle = entry["answer"]
        if isinstance(answer, str):
            if answer == oracle:
                return 1.0
            try:  # a Python list of characters
                if "".join(_literal(answer)) == oracle:
                    return 0.1
            except Exception:  # noqa: BLE001 - not a literal: wrong
                pass
        return 0.0

    return score


def _spiral_matrix() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        oracle = str(entry["answer"]).strip()
        if isinstance(answer, str) and answer:
            answer = answer.strip()
            if answer == oracle:
                return 1.0
            try:  # a Python list
                if " ".join(str(item) for item in _literal(answer)) == oracle:
                    return 0.1
            except Exception:  # noqa: BLE001 - not a literal: wrong
                pass
        return 0.0

    return score


def _binary_matrix() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        oracle = entry["answer"]
        if isinstance(answer, str):
            if answer == oracle:
                return 1.0
            try:  # a Python list of lists
                matrix = _literal(answer)
                if "\n".join(" ".join(str(x) for x in row) for row in matrix) == oracle:
                    return 0.1
            except Exception:  # noqa: BLE001 - not a literal: wrong
                pass
        return 0.0

    return score


def _n_queens() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        if isinstance(answer, str):
            valid = entry["metadata"]["valid_answers"]
            if answer in valid:
                return 1.0
            try:  # a Python list of rows
                board = _literal(answer)
                if "\n".join(" ".join(x for x in row) for row in board) in valid:
                    return 0.5
            except Exception:  # noqa: BLE001 - not a literal: wrong
                pass
        return 0.0

    return score


def _no_constant(name: str) -> Any:
    """JSON's ``NaN``/``Infinity`` are not numbers an answer may use."""
    raise UnsafeExpression(f"{name} is not a number")


def _number_sorting() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        try:
            try:
                given = json.loads(answer.replace("'", '"'), parse_constant=_no_constant)
            except (json.JSONDecodeError, UnsafeExpression):
                return 0.0
            if not isinstance(given, list):
                return 0.0
            try:
                expected = json.loads(entry["answer"])
            except json.JSONDecodeError:
                expected = _literal(entry["answer"])
            if len(given) != len(expected):
                return 0.0
            values = [float(n) for n in given]
            if not all(map(math.isfinite, values)):  # NaN compares as sorted and near anything
                return 0.0
            targets = [float(n) for n in expected]
            descending = entry["metadata"]["direction"] != "ascending"
            if values != sorted(values, reverse=descending):
                return 0.0
            if any(abs(a - b) > 1 for a, b in zip(values, targets, strict=True)):
                return 0.0
            return 1.0
        except Exception:  # noqa: BLE001 - anything unreadable is wrong
            return 0.0

    return score


_INT_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b,
    ast.BitXor: lambda a, b: a ^ b,
    ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b,
}


def _int_value(node: ast.AST, depth: int = 0) -> int:
    """An integer expression (``+ - * << >> & | ^ ~``, int literals), bounded; else refused."""
    if depth > MAX_DEPTH:
        raise UnsafeExpression("too deep")
    if isinstance(node, ast.Constant) and type(node.value) is int:
        value = node.value
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        inner = _int_value(node.operand, depth + 1)
        value = (
            -inner
            if isinstance(node.op, ast.USub)
            else ~inner
            if isinstance(node.op, ast.Invert)
            else inner
        )
    elif isinstance(node, ast.BinOp) and type(node.op) in _INT_OPS:
        a, b = _int_value(node.left, depth + 1), _int_value(node.right, depth + 1)
        if isinstance(node.op, (ast.LShift, ast.RShift)) and not 0 <= b <= MAX_NUMBER_BITS:
            raise UnsafeExpression("shift out of range")
        if isinstance(node.op, ast.LShift) and a.bit_length() + b > MAX_NUMBER_BITS:
            raise UnsafeExpression("number too large")
        if isinstance(node.op, ast.Mult) and a.bit_length() + b.bit_length() > MAX_NUMBER_BITS:
            raise UnsafeExpression("number too large")
        value = _INT_OPS[type(node.op)](a, b)
    else:
        raise UnsafeExpression(f"not an integer expression: {type(node).__name__}")
    if value.bit_length() > MAX_NUMBER_BITS:
        raise UnsafeExpression("number too large")
    return value


def _bitwise_arithmetic() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        if isinstance(answer, str):
            try:
                problem = entry["metadata"]["problem"]
                if not isinstance(problem, str) or len(problem) > MAX_TEXT:
                    return 0.0
                expected = _int_value(ast.parse(problem.strip(), mode="eval").body)
                if len(answer) <= 4000 and int(answer, 0) == expected:
                    return 1.0
            except Exception:  # noqa: BLE001 - anything unreadable is wrong
                pass
        return 0.0

    return score


# ------------------------------------------------------------------------ sympy families

_FUNCTIONS = (
    "sin cos tan cot sec csc asin acos atan acot sinh cosh tanh asinh acosh atanh exp log sqrt Abs"
).split()
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9]{0,15}\Z")


def _sympy() -> Any:
    import sympy

    return sympy


def _check_number(value: Any) -> Any:
    sympy = _sympy()
    if isinstance(value, sympy.Rational):
        if max(int(value.p).bit_length(), int(value.q).bit_length()) > MAX_NUMBER_BITS:
            raise UnsafeExpression("number too large")
    elif isinstance(value, sympy.Float) and not value.is_finite:
        raise UnsafeExpression("not a finite number")
    return value


#: A rational under a root (or a log, ...) is at most this big: sympy factors it.
MAX_ROOT_BITS = 256


def _check_root(base: Any, exponent: Any) -> None:
    sympy = _sympy()
    if not isinstance(base, sympy.Rational) or isinstance(exponent, sympy.Integer):
        return
    if max(int(base.p).bit_length(), int(base.q).bit_length()) > MAX_ROOT_BITS:
        raise UnsafeExpression("number under a root too large")


def _chain(node: ast.AST, ops: tuple[type, ...]) -> list[tuple[bool, ast.AST]]:
    """The operands of a left-nested chain of ``ops`` (``a - b + c``), each with its sign."""
    items: list[tuple[bool, ast.AST]] = []
    while isinstance(node, ast.BinOp) and isinstance(node.op, ops):
        items.append((isinstance(node.op, (ast.Sub, ast.Div)), node.right))
        node = node.left
    items.append((False, node))
    return items[::-1]


class _Builder:
    def __init__(self, local: Mapping[str, Any], symbols: bool) -> None:
        self.sympy = _sympy()
        self.local = dict(local)
        self.symbols = symbols

    def build(self, node: ast.AST, depth: int = 0) -> Any:
        sympy = self.sympy
        if depth > MAX_DEPTH:
            raise UnsafeExpression("too deep")
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            terms = [
                (-self.build(n, depth + 1) if neg else self.build(n, depth + 1))
                for neg, n in _chain(node, (ast.Add, ast.Sub))
            ]
            return _check_number(sympy.Add(*terms))
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            factors = []
            for inverse, n in _chain(node, (ast.Mult, ast.Div)):
                value = self.build(n, depth + 1)
                factors.append(sympy.Pow(value, -1) if inverse else value)
            return _check_number(sympy.Mul(*factors))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
            return self._power(node, depth)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = self.build(node.operand, depth + 1)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Constant):
            value = node.value
            if type(value) is int:
                return _check_number(sympy.Integer(value))
            if type(value) is float:
                if not math.isfinite(value):
                    raise UnsafeExpression("not a finite number")
                return sympy.Float(value)
            raise UnsafeExpression("only numbers")
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise UnsafeExpression(f"{type(node).__name__} is not allowed")

    def _name(self, name: str) -> Any:
        sympy = self.sympy
        if name in self.local:
            return self.local[name]
        constants = {"pi": sympy.pi, "E": sympy.E, "I": sympy.I}
        if name in constants:
            return constants[name]
        if not self.symbols or name in _FUNCTIONS or not _NAME.match(name):
            raise UnsafeExpression(f"name {name!r} is not allowed")
        return sympy.Symbol(name)

    def _power(self, node: ast.BinOp, depth: int) -> Any:
        sympy = self.sympy
        exponent = self.build(node.right, depth + 1)
        if not isinstance(exponent, sympy.Rational):
            raise UnsafeExpression("a power's exponent must be a number")
        if abs(exponent) > MAX_EXPONENT or exponent.q > MAX_EXPONENT:
            raise UnsafeExpression("exponent too large")
        base = self.build(node.left, depth + 1)
        _check_root(base, exponent)
        if isinstance(base, sympy.Rational):
            bits = max(int(base.p).bit_length(), int(base.q).bit_length())
            if bits * abs(exponent) > MAX_NUMBER_BITS:
                raise UnsafeExpression("power too large")
        elif base.is_number and base.has(sympy.Pow) and abs(exponent) > 4:
            raise UnsafeExpression("power of a power too large")
        return _check_number(sympy.Pow(base, exponent))

    def _call(self, node: ast.Call, depth: int) -> Any:
        sympy = self.sympy
        if not isinstance(node.func, ast.Name) or node.keywords:
            raise UnsafeExpression("only plain calls of known functions")
        name = node.func.id
        args = [self.build(a, depth + 1) for a in node.args]
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise UnsafeExpression("only plain calls of known functions")
        if name == "abs":
            name = "Abs"
        if name not in _FUNCTIONS:
            raise UnsafeExpression(f"function {name!r} is not allowed")
        if len(args) != 1 and not (name == "log" and len(args) == 2):
            raise UnsafeExpression(f"{name} takes one argument")
        for arg in args:  # sympy factors small rationals under roots and logs
            _check_root(arg, sympy.Rational(1, 2))
        return getattr(sympy, name)(*args)


def parse_math(
    text: str,
    local: Mapping[str, Any] | None = None,
    *,
    symbols: bool = True,
) -> Any:
    """A sympy expression from Python-syntax math text, without running the text.

    The grammar: numbers, ``+ - * / **`` and parentheses, names (in ``local``; ``pi``, ``E``,
    ``I``; other identifiers become symbols when ``symbols``), calls of elementary functions
    (``sin`` ... ``sqrt``, ``Abs``). No unevaluated operator (``Integral``, ``Derivative``,
    ``Sum``, ``Limit``, ``Subs``...): an answer wrapping the question in one is not an answer.
    Bounded: :data:`MAX_TEXT` characters, :data:`MAX_NODES` nodes, :data:`MAX_DEPTH` levels,
    numbers of :data:`MAX_NUMBER_BITS` bits, exponents that are literal numbers up to
    :data:`MAX_EXPONENT` (so ``9**9**9`` is refused before anything is computed). An
    expression holding a non-finite value (``1/0``, ``0/0``, ``log(0)``: ``zoo``, ``nan``,
    ``oo``) is refused.

    Raises:
        UnsafeExpression: For text outside the grammar or over a bound.
    """
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise UnsafeExpression("not a bounded string")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise UnsafeExpression(f"cannot parse: {e}") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise UnsafeExpression("expression too large")
    try:
        result = _Builder(local or {}, symbols).build(tree.body)
    except RecursionError:
        raise UnsafeExpression("too deep") from None
    sympy = _sympy()
    if result.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):  # 1/0, 0/0, log(0)
        raise UnsafeExpression("not a finite expression")
    return result


def _polynomial_multiplication() -> Scorer:
    def score(answer: Any, entry: dict[str, Any]) -> float:
        if isinstance(answer, str):
            try:
                if parse_math(answer) == parse_math(entry["answer"]):
                    return 1.0
            except Exception:  # noqa: BLE001 - anything unreadable is wrong
                pass
        return 0.0

    return score


#: Points at which an antiderivative's derivative is compared with the integrand.
_POINTS = 6
#: The most terms a derivative may have before it is built: a product of ``k`` factors of the
#: variable has a derivative of ``k`` terms of ``k`` factors (att31b D1: 360 ``sin(k*x)``
#: factors, 3,900 characters, cost 12 s of CPU), so a product counts ``k * k``.
MAX_DIFF_WORK = 2000
#: CPU seconds (of the scoring thread) after which an integration check stops, unpaid.
MAX_CHECK_SECONDS = 2.0


def _diff_work(expression: Any, x: Any) -> int:
    """The size of ``d/dx expression`` as built term by term (see :data:`MAX_DIFF_WORK`)."""
    sympy = _sympy()
    work = 0
    for node in sympy.preorder_traversal(expression):
        if isinstance(node, sympy.Mul):
            varying = sum(1 for a in node.args if a.has(x))
            work += varying * len(node.args)
        else:
            work += 1
    return work


def _integration() -> Scorer:
    """``d/dx answer == integrand``, decided at random points (no ``simplify``: bounded time)."""

    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        try:
            sympy = _sympy()
            metadata = entry["metadata"]
            name = metadata["variable"]
            if not isinstance(name, str) or not _NAME.match(name):
                return 0.0
            x = sympy.Symbol(name)
            # No Integral (or any unevaluated operator) in an answer: d/dx Integral(f, x) is f.
            given = parse_math(answer, {name: x, "C": sympy.Symbol("C")})
            integrand = parse_math(metadata["integrand"], {name: x})
            if _diff_work(given, x) > MAX_DIFF_WORK:
                return 0.0
            start = time.thread_time()
            difference = sympy.diff(given, x) - integrand
            if difference == 0:
                return 1.0
            if difference.free_symbols - {x} or difference.has(sympy.Integral):
                return 0.0
            rng = random.SystemRandom()
            agreed = 0
            for _ in range(_POINTS):
                if time.thread_time() - start > MAX_CHECK_SECONDS:
                    return 0.0
                point = sympy.Rational(rng.randint(500, 2500), 1000)
                gap = complex(difference.evalf(30, subs={x: point}))
                size = complex(integrand.evalf(30, subs={x: point}))
                if not all(map(math.isfinite, (gap.real, gap.imag, size.real, size.imag))):
                    continue
                if abs(gap) > 1e-9 * max(1.0, abs(size)):
                    return 0.0
                agreed += 1
            return 1.0 if agreed >= 3 else 0.0
        except Exception:  # noqa: BLE001 - anything unreadable is wrong
            return 0.0

    return score


def _config(family: str) -> Any:
    from reasoning_gym.factory import DATASETS

    return DATASETS[family][1]()


def _arithmetic(text: str) -> Any:
    """An integer-arithmetic answer: exact value and the numbers it uses, or ``None``.

    puzzle24's and countdown's answers are read by Countdown's own grammar
    (:func:`rllm_envs.countdown.rules.parse_expression`, with the unary minus reasoning-gym's
    countdown references use): plain decimal integers, ``+ - * /`` and parentheses, exact
    :class:`~fractions.Fraction` arithmetic. No names, no calls, no powers, no other literal
    (``pi``, ``E``, ``I``, ``sqrt``, ``0x18``, ``24e0``, ``2.0``): each would be a term the
    number check cannot see, a free value (blind red-team s12 H1/H2: ``(a*b*c*d)*(I-I)`` plus
    24 built from ``E/E`` paid 100 of 100). ``=`` is refused (the prompt says none). ``None``
    for text outside the grammar; a division by zero has value ``None``.
    """
    from rllm_envs.countdown.rules import parse_expression

    if not isinstance(text, str) or "=" in text:
        return None
    parsed, _ = parse_expression(text.strip(), unary_minus=True)
    return parsed


def _puzzle24() -> Scorer:
    config = _config("puzzle24")

    def score(answer: Any, entry: dict[str, Any]) -> float:
        try:
            parsed = _arithmetic(answer)
            if parsed is None or parsed.value is None:
                return 0.01
            used = list(parsed.numbers)
            numbers = [int(n) for n in entry["metadata"]["numbers"]]
            if sorted(used) != sorted(numbers) or any(
                not config.min_value <= n <= config.max_value for n in used
            ):
                return 0.01
            return 1.0 if parsed.value == 24 else 0.01
        except Exception:  # noqa: BLE001 - anything unreadable earns the floor
            return 0.01

    return score


def _countdown() -> Scorer:
    """reasoning-gym's rule: every given number used exactly once (as a multiset)."""

    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str) or not answer.strip():
            return 0.01
        try:
            parsed = _arithmetic(answer)
            if parsed is None or parsed.value is None:
                return 0.01
            numbers = [int(n) for n in entry["metadata"]["numbers"]]
            if sorted(parsed.numbers) != sorted(numbers):
                return 0.05
            if parsed.value == Fraction(int(entry["metadata"]["target"])):
                return 1.0
            return 0.05
        except Exception:  # noqa: BLE001 - anything unreadable earns the floor
            return 0.01

    return score


def _complex_arithmetic() -> Scorer:
    """reasoning-gym's scorer, but a non-finite answer earns 0 (blind red-team s12 H3).

    reasoning-gym scores ``min(1.0, exp(-distance))``; for ``nan + nan i`` the distance is NaN
    and ``min(1.0, nan)`` is 1.0. Its own parser reads the answer first (reasoning-gym's code,
    which runs no text): a parse that is not a finite complex number earns 0, and the
    scorer, tamper-checked (:func:`_guarded`), is called only for a finite one.
    """
    from reasoning_gym.factory import DATASETS

    parse = DATASETS["complex_arithmetic"][0].parse_string_to_complex
    family = _guarded("complex_arithmetic")

    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        try:
            value = parse(answer)
        except Exception:  # noqa: BLE001 - unreadable: wrong
            return 0.0
        if not isinstance(value, complex) or not cmath.isfinite(value):
            return 0.0
        raw = family(answer, entry)
        return raw if math.isfinite(raw) else 0.0

    return score


# ------------------------------------------------------------------ move puzzles

#: A Rush Hour move: a piece's letter, a direction and a number of cells.
_RUSH_MOVE = re.compile(r"([A-Z])([+-])(\d{1,2})")
#: The most moves a Rush Hour answer may make (reasoning-gym's hardest boards take about 50).
RUSH_MAX_MOVES = 200
#: The most quarter turns a Rubik's cube answer may make (``U3`` is three).
CUBE_MAX_TURNS = 1000


def _rush_hour() -> Scorer:
    """Rush Hour replayed strictly: every move made in full (blind red-team s14).

    reasoning-gym's ``Board.perform_moves`` reads every ``X+n`` anywhere in the text and skips
    a blocked step silently, so a long random walk of moves over the board's letters ended
    solved on 20 of 150 boards without looking at them; and it loops over a move's cells one
    at a time (``A+30000000`` took 9 s). Here the answer is moves only, separated by spaces or
    commas, at most :data:`RUSH_MAX_MOVES`, each of a movable piece by 1 to 4 cells, every
    cell free (reasoning-gym's own board and move, checked afterwards): an answer with a move
    that cannot be made in full is wrong. A legal answer that does not solve earns
    reasoning-gym's 0.01.
    """
    from reasoning_gym.games.rush_hour import BOARD_SIZE, MIN_PIECE_SIZE, Board

    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        tokens = [t for t in re.split(r"[\s,]+", answer.strip()) if t]
        if not tokens or len(tokens) > RUSH_MAX_MOVES:
            return 0.0
        board = Board(entry["metadata"]["board_config"])
        pieces = board._pieces  # reasoning-gym keeps them private
        for token in tokens:
            move = _RUSH_MOVE.fullmatch(token)
            if move is None:
                return 0.0
            letter, sign, count = move.groups()
            index, cells = ord(letter) - ord("A"), int(count)
            if not 1 <= cells <= BOARD_SIZE - MIN_PIECE_SIZE or index >= len(pieces):
                return 0.0
            piece = pieces[index]
            before = piece.position
            board.move(letter, cells if sign == "+" else -cells)
            if piece.fixed or abs(piece.position - before) != cells * piece.stride:
                return 0.0  # a wall, or a move blocked on the way
        return 1.0 if board.solved else 0.01

    return score


def _sokoban() -> Scorer:
    """Sokoban replayed strictly: every move made (blind red-team s14, as rush_hour).

    reasoning-gym plays each character of the answer and skips one that is no move or whose
    move is blocked, so a random walk solves a board now and then (1 to 3 of 100). Here the
    answer is ``L``/``R``/``U``/``D`` only (spaces and commas between them aside), each move
    made on reasoning-gym's own game: a blocked one makes the answer wrong.
    """
    import numpy as np
    from reasoning_gym.games.contrib.sokoban.src.game import Game
    from reasoning_gym.games.contrib.sokoban.src.utils import is_solved

    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        moves = re.sub(r"[\s,]+", "", answer)
        if not moves or set(moves) - set("LRUD"):
            return 0.0
        rows = entry["metadata"]["gamestr"].replace(" ", "").strip().split("\n")
        matrix = np.array([list(row) for row in rows])
        game = Game(height=matrix.shape[0], width=matrix.shape[1])
        game.load_puzzle_matrix(matrix)
        for move in moves:
            if game.player.update(key=move) != 1:
                return 0.0  # into a wall, or a box that cannot move
        return 1.0 if is_solved(game.get_curr_state()) else 0.0

    return score


def _rubiks_cube() -> Scorer:
    """reasoning-gym's scorer, for answers of at most :data:`CUBE_MAX_TURNS` turns.

    Its scorer repeats a move as often as its count says (``U100000`` is 100,000 turns of
    the cube: 11 s; blind red-team s14). The turns are counted the way it expands them, and
    an answer of more earns 0 without being played.
    """
    family = _guarded("rubiks_cube")

    def score(answer: Any, entry: dict[str, Any]) -> float:
        if not isinstance(answer, str):
            return 0.0
        turns = 0
        for token in answer.split():
            count = re.fullmatch(r"[^\d]*(\d*)", token)
            if count is None:
                continue  # reasoning-gym skips such a token too
            digits = count.group(1)
            if len(digits) > 4:
                return 0.0
            turns += int(digits) if digits else 1
            if turns > CUBE_MAX_TURNS:
                return 0.0
        return family(answer, entry)

    return score


#: This module's scorers of the families whose reasoning-gym scorer runs text as code.
OVERRIDES: dict[str, Callable[[], Scorer]] = {
    "string_insertion": _string_insertion,
    "spiral_matrix": _spiral_matrix,
    "binary_matrix": _binary_matrix,
    "n_queens": _n_queens,
    "number_sorting": _number_sorting,
    "bitwise_arithmetic": _bitwise_arithmetic,
    "polynomial_multiplication": _polynomial_multiplication,
    "simple_integration": _integration,
    "intermediate_integration": _integration,
    "puzzle24": _puzzle24,
    "countdown": _countdown,
    # Not evaluating families, whose scorers are gamed or hang on short answers (see each).
    "complex_arithmetic": _complex_arithmetic,
    "rush_hour": _rush_hour,
    "rubiks_cube": _rubiks_cube,
    "sokoban": _sokoban,
}
