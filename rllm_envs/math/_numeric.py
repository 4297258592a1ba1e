"""In-process numeric comparison with mpmath: settles most expression comparisons in microseconds.

The converter's output (:func:`rllm_envs.math._latex.to_python`) is parsed with :mod:`ast` and
interpreted here (never ``eval``-ed) over 50-digit mpmath numbers, with guards that make every
operation cheap: powers whose result would be astronomically large, and factorials or
binomials of big arguments, make the comparison *inconclusive* instead of being computed.

:func:`decide` answers ``True`` (equal to about 40 digits, at three random points when there
are variables), ``False`` (clearly different) or ``None`` (inconclusive: unsupported notation,
infinities, a near miss, a huge dynamic range) -- and the grader then asks sympy, in its worker
process.
"""

from __future__ import annotations

import ast
import random
import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import mpmath

from rllm_envs.math._latex import Unsupported, to_python

__all__ = ["decide", "too_large", "value"]

_DPS = 50
#: Digits of the second evaluation that tells a real gap from rounding (three times 50).
PRECISE_DPS = 150
_local = threading.local()


class _Inconclusive(Exception):
    """The value cannot be computed safely or meaningfully in floating point."""


class _TooLarge(_Inconclusive):
    """A value on the way passes the magnitude bound (2^400, or a power past it)."""


def _ctx(dps: int = _DPS) -> Any:
    """An mpmath context of ``dps`` digits for this thread.

    mpmath functions adjust their context's precision while they run: one context per
    thread and precision.
    """
    contexts = getattr(_local, "contexts", None)
    if contexts is None:
        contexts = _local.contexts = {}
    ctx = contexts.get(dps)
    if ctx is None:
        ctx = contexts[dps] = mpmath.MPContext()
        ctx.dps = dps
    return ctx


class _Evaluator:
    def __init__(
        self, ctx: Any, values: dict[str, Any], memo: dict[int, Any] | None = None
    ) -> None:
        self.ctx = ctx
        self.values = values
        self.max_mag = 0  # largest binary magnitude seen: bounds the rounding error
        #: Per node (by id, for one tree that outlives it): its value and largest magnitude,
        #: or the exception it raised. The final-form rule evaluates every subexpression of
        #: an answer: without it a nest of 190 functions was evaluated 18,000 times (att33g).
        self.memo = memo

    def track(self, value: Any) -> Any:
        ctx = self.ctx
        if not ctx.isfinite(value):
            raise _Inconclusive
        if value != 0:
            mag = int(ctx.mag(value))
            if mag > 400 or mag < -400:
                raise _TooLarge
            self.max_mag = max(self.max_mag, mag)
        return value

    def eval(self, node: ast.AST) -> Any:
        if self.memo is None:
            return self._eval(node)
        found = self.memo.get(id(node))
        if found is None:
            outer, self.max_mag = self.max_mag, 0
            try:
                found = (self._eval(node), self.max_mag)
            except (_Inconclusive, ArithmeticError, ValueError) as e:
                found = e
            self.max_mag = outer
            self.memo[id(node)] = found
        if isinstance(found, BaseException):
            raise found
        self.max_mag = max(self.max_mag, found[1])
        return found[0]

    def _eval(self, node: ast.AST) -> Any:
        ctx = self.ctx
        if isinstance(node, ast.Expression):
            return self.eval(node.body)
        if isinstance(node, ast.BinOp):
            a, b = self.eval(node.left), self.eval(node.right)
            op = node.op
            if isinstance(op, ast.Add):
                return self.track(a + b)
            if isinstance(op, ast.Sub):
                return self.track(a - b)
            if isinstance(op, ast.Mult):
                return self.track(a * b)
            if isinstance(op, ast.Div):
                if b == 0:
                    raise _Inconclusive
                return self.track(a / b)
            if isinstance(op, ast.Pow):
                return self.track(self.power(a, b))
            raise _Inconclusive
        if isinstance(node, ast.UnaryOp):
            value = self.eval(node.operand)
            if isinstance(node.op, ast.USub):
                return -value
            if isinstance(node.op, ast.UAdd):
                return value
            raise _Inconclusive
        if isinstance(node, ast.Name):
            constants = {"pi": ctx.pi, "E": ctx.e, "I": ctx.mpc(0, 1)}
            if node.id in constants:
                return +constants[node.id]
            raise _Inconclusive  # oo: infinities are compared symbolically
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            return self.call(node.func.id, node.args)
        raise _Inconclusive

    def power(self, base: Any, exp: Any) -> Any:
        ctx = self.ctx
        if base == 0:
            if exp == 0:
                return ctx.mpf(1)  # as sympy has it: `0^{0}` is 1
            if ctx.re(exp) < 0:
                raise _Inconclusive
            return ctx.mpf(0)
        # |result| ~ 2^(|exp| * log2|base|): refuse what would not fit in the magnitude bound.
        size = abs(exp) * abs(ctx.log(abs(base), 2))
        if size > 1000:
            raise _TooLarge
        return ctx.power(base, exp)

    def call(self, name: str, args: list[ast.expr]) -> Any:
        ctx = self.ctx
        if name in ("Integer", "Rational", "Symbol"):
            if len(args) != 1 or not isinstance(args[0], ast.Constant):
                raise _Inconclusive
            literal = args[0].value
            if name == "Symbol":
                return self.values[str(literal)]
            return self.track(ctx.mpf(literal if isinstance(literal, int) else str(literal)))
        values = [self.eval(a) for a in args]
        if name in ("factorial", "binomial"):
            if any(abs(v) > 1000 for v in values):
                raise _TooLarge
            if name == "factorial":
                return self.track(ctx.factorial(values[0]))
            return self.track(ctx.binomial(values[0], values[1]))
        if name == "log" and len(values) == 2:
            if values[1] in (0, 1) or values[0] == 0:
                raise _Inconclusive
            return self.track(ctx.log(values[0]) / ctx.log(values[1]))
        if name == "root" and len(values) == 2:
            # Real for an odd index (att33k: an earlier principal-power branch shadowed this
            # one, so `-\sqrt[3]{2}` was not `\sqrt[3]{-2}`).
            return self.track(_real_root(ctx, values[0], values[1]))
        function = _FUNCTIONS.get(name)
        if function is None or len(values) != 1:
            raise _Inconclusive
        if name in ("log", "cot", "csc") and values[0] == 0:
            raise _Inconclusive
        return self.track(function(ctx, values[0]))


_FUNCTIONS: dict[str, Callable[[Any, Any], Any]] = {
    "sqrt": lambda c, x: c.sqrt(x),
    "Abs": lambda c, x: abs(x),
    "exp": lambda c, x: c.exp(x) if abs(x) < 500 else _too_large(),
    "log": lambda c, x: c.log(x),
    "sin": lambda c, x: c.sin(x),
    "cos": lambda c, x: c.cos(x),
    "tan": lambda c, x: c.tan(x),
    "cot": lambda c, x: c.cot(x),
    "sec": lambda c, x: c.sec(x),
    "csc": lambda c, x: c.csc(x),
    "asin": lambda c, x: c.asin(x),
    "acos": lambda c, x: c.acos(x),
    "atan": lambda c, x: c.atan(x),
    "sinh": lambda c, x: c.sinh(x) if abs(x) < 500 else _too_large(),
    "cosh": lambda c, x: c.cosh(x) if abs(x) < 500 else _too_large(),
    "tanh": lambda c, x: c.tanh(x),
}


def _too_large() -> Any:
    raise _TooLarge


def _real_root(ctx: Any, x: Any, n: Any) -> Any:
    r"""The ``n``-th root of ``x`` as competition math reads it: real for an odd ``n``.

    ``\sqrt[3]{-8}`` is -2 (a principal complex root would make it ``1 + \sqrt{3} i``).
    """
    if isinstance(x, ctx.mpc) or isinstance(n, ctx.mpc) or n == 0 or n != int(n):
        raise _Inconclusive
    n = int(n)
    if x >= 0:
        return ctx.root(x, n)
    if n % 2:
        return -ctx.root(-x, n)
    raise _Inconclusive


def _symbols(tree: ast.AST) -> set[str]:
    return {
        str(node.args[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "Symbol"
        and node.args
        and isinstance(node.args[0], ast.Constant)
    }


def _parse(text: str) -> ast.Expression:
    try:
        return ast.parse(to_python(text), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise _Inconclusive from e


def _evaluate_pair(
    a: ast.AST, b: ast.AST, points: dict[str, tuple[int, int]], dps: int
) -> tuple[Any, Any, Any, int]:
    """Both sides at ``dps`` digits, the variables at ``points`` (``p / q``).

    Returns ``(ctx, a, b, largest binary exponent on the way)``.
    """
    ctx = _ctx(dps)
    values = {name: ctx.mpf(p) / q for name, (p, q) in points.items()}
    ea, eb = _Evaluator(ctx, values), _Evaluator(ctx, values)
    va, vb = ea.eval(a), eb.eval(b)
    return ctx, va, vb, max(ea.max_mag, eb.max_mag, 0)


def _compare_at(
    a: ast.AST, b: ast.AST, points: dict[str, tuple[int, int]], tolerant: bool
) -> bool | None:
    ctx, va, vb, max_mag = _evaluate_pair(a, b, points, _DPS)
    # Rounding error is below 2^max_mag * 1e-50: differences far above it are real, and
    # agreement far below it is equality -- unless the numbers are so big (above ~1e30) that
    # a difference of 1 could hide in the rounding, or so small that a relative check fails.
    scale = ctx.mpf(2) ** max_mag
    diff = abs(va - vb)
    if diff <= scale * ctx.mpf(10) ** (-40):
        if max_mag <= 100 and (diff == 0 or diff <= ctx.mpf(10) ** (-30) * abs(vb)):
            return True
        return None
    if diff > scale * ctx.mpf(10) ** (-25) and diff > ctx.mpf(10) ** (-12) * max(1, abs(vb)):
        if tolerant and diff <= ctx.mpf(10) ** (-6) * max(1, abs(vb)):
            return None  # a rounded decimal: sympy decides if the gold is exact-terminating
        return False
    # Between the two: rounding (cancellations amplify it) or a real gap too small to tell
    # at 50 digits. A hundred more digits shrink rounding by 1e100 and leave a real gap
    # where it was: unequal here, not left to sympy, which reads some notation otherwise
    # (att34b: a gap of 1e-18 built from `\sqrt[3]{-2}`, real here and principal there, was
    # 0 to sympy: each number n of a problem as `e^{\log n + X/D}` paid half of all tasks).
    if tolerant:
        return None  # a long decimal's rounding (`0.33333333333333333333` for 1/3): sympy
    ctx, va, vb, max_mag = _evaluate_pair(a, b, points, PRECISE_DPS)
    if abs(va - vb) > ctx.mpf(2) ** max_mag * ctx.mpf(10) ** (-100):
        return False
    return None


def decide(prediction: str, gold: str, *, tolerant: bool = False) -> bool | None:
    """Compare two LaTeX expressions numerically: ``True``, ``False`` or ``None`` (unsure).

    Args:
        prediction: The model's expression.
        gold: The reference expression.
        tolerant: A decimal approximation may be involved: near misses are left to sympy.

    Returns:
        The verdict, or ``None`` when only a symbolic comparison can tell.
    """
    try:
        a, b = _parse(prediction), _parse(gold)
        names = sorted(_symbols(a) | _symbols(b))
        if not names:
            return _compare_at(a, b, {}, tolerant)
        rng = random.Random(0)  # deterministic verdicts
        agreed = 0
        for _ in range(6):
            points = {n: (rng.randint(7, 300), rng.randint(11, 97)) for n in names}
            try:
                verdict = _compare_at(a, b, points, False)
            except _Inconclusive:
                continue  # a singular point: try another
            if verdict is False:
                return False
            if verdict is None:
                return None
            agreed += 1
            if agreed >= 3:
                return True
        return None
    except (_Inconclusive, Unsupported, RecursionError, MemoryError, ValueError, ZeroDivisionError):
        return None
    except (TypeError, ArithmeticError):
        return None


def too_large(text: str) -> bool:
    """Whether a constant LaTeX expression passes the in-process magnitude bound on the way."""
    try:
        tree = _parse(text)
        if _symbols(tree):
            return False
        _Evaluator(_ctx(), {}).eval(tree)
    except _TooLarge:
        return True
    except Exception:  # anything else it cannot read is not "too large"
        return False
    return False


def value(text: str) -> Fraction | None:
    """The value of a constant LaTeX expression, to about 40 digits, as a fraction.

    ``None`` when it has variables, is not real and finite, or cannot be computed.
    """
    try:
        tree = _parse(text)
        if _symbols(tree):
            return None
        ctx = _ctx()
        v = _Evaluator(ctx, {}).eval(tree)
        if isinstance(v, ctx.mpc) or not ctx.isfinite(v):
            return None
        return Fraction(ctx.nstr(v, 45, strip_zeros=False, min_fixed=-(10**6), max_fixed=10**6))
    except (_Inconclusive, Unsupported, RecursionError, MemoryError, ValueError, ZeroDivisionError):
        return None
    except (TypeError, ArithmeticError, AttributeError):
        return None
