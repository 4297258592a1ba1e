"""An exact, safe calculator: arithmetic on model-written expressions without ``eval``.

The expression is parsed with :func:`ast.parse` (``mode="eval"``) and the syntax tree is
walked by :func:`evaluate`, which accepts only numbers, ``+ - * / // % **`` (``^`` also means
power, as in mathematics), parentheses, the constants ``pi`` and ``e`` and a fixed list of
functions (:data:`FUNCTIONS`). Arithmetic is exact (SymPy integers and rationals; a decimal
literal such as ``0.1`` is the rational 1/10), so ``1/3 + 1/6`` is ``1/2``, and irrational
results stay symbolic (``sqrt(8)`` is ``2*sqrt(2)``) with a decimal value alongside.

Work is bounded before it is done: the expression length, the number of syntax nodes, the
nesting depth, exponents, factorial/binomial arguments and the size of every intermediate
integer are capped, so no input can make a step slow or exhaust memory.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from typing import Any

import sympy

__all__ = ["CalculatorError", "evaluate", "calculate", "FUNCTIONS", "MAX_EXPRESSION_CHARS"]

#: Longest accepted expression.
MAX_EXPRESSION_CHARS = 1000
_MAX_NODES = 400
_MAX_DEPTH = 40
#: Largest integer (in bits) any intermediate result may have.
_MAX_BITS = 14_000  # below Python's 4300-digit str() limit
_MAX_EXPONENT = 10_000
_MAX_FACTORIAL = 2_000
#: Arguments of transcendental functions and symbolic powers stay below this many bits.
_MAX_SYMBOLIC_BITS = 2_048
_DIGITS = 15
#: floor/ceil/// of an irrational value: largest magnitude (its digits are what SymPy computes).
_MAX_ROUNDED = 10**40


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


def _int_arg(value: sympy.Expr, name: str, low: int, high: int) -> int:
    if not (value.is_Integer and low <= int(value) <= high):
        raise CalculatorError(f"{name} expects an integer in [{low}, {high}], got {value}")
    return int(value)


def _factorial(n: sympy.Expr) -> sympy.Expr:
    return sympy.factorial(_int_arg(n, "factorial", 0, _MAX_FACTORIAL))


def _binomial(n: sympy.Expr, k: sympy.Expr) -> sympy.Expr:
    return sympy.binomial(
        _int_arg(n, "binomial", 0, 10 * _MAX_FACTORIAL), _int_arg(k, "binomial", -(10**9), 10**9)
    )


def _gcd(*args: sympy.Expr) -> sympy.Expr:
    if not args or not all(a.is_Integer for a in args):
        raise CalculatorError("gcd expects integers")
    return sympy.Integer(math.gcd(*(int(a) for a in args)))


def _lcm(*args: sympy.Expr) -> sympy.Expr:
    if not args or not all(a.is_Integer for a in args):
        raise CalculatorError("lcm expects integers")
    return sympy.Integer(math.lcm(*(int(a) for a in args)))


def _round(x: sympy.Expr, digits: sympy.Expr | None = None) -> sympy.Expr:
    places = 0 if digits is None else _int_arg(digits, "round", 0, 50)
    value = sympy.Rational(x) if x.is_Rational else sympy.nsimplify(sympy.N(x, 60), rational=True)
    scaled = value * sympy.Integer(10) ** places
    # Round half away from zero, as people (not bankers) do.
    sign = -1 if scaled < 0 else 1
    whole = sympy.floor(abs(scaled) + sympy.Rational(1, 2))
    return sympy.Rational(sign * whole, 10**places)


def _mod_pow(base: sympy.Expr, exp: sympy.Expr, mod: sympy.Expr) -> sympy.Expr:
    # Modular exponentiation costs about bits(e) multiplications of bits(m)-bit numbers: at the
    # 14,000-bit cap of other integers, one call ran 14 s holding the GIL (issue #31, F8).
    # Exponent and modulus stay within _MAX_SYMBOLIC_BITS (a few ms at the cap).
    b = _int_arg(base, "pow", -(2**_MAX_BITS), 2**_MAX_BITS)
    for name, value, low in (("exponent", exp, 0), ("modulus", mod, 1)):
        if not (value.is_Integer and low <= int(value) <= 2**_MAX_SYMBOLIC_BITS):
            raise CalculatorError(
                f"pow(b, e, m) needs an integer {name} in [{low}, 2^{_MAX_SYMBOLIC_BITS}]"
            )
    e, m = int(exp), int(mod)
    return sympy.Integer(pow(b % m, e, m))


def _rounding(fn: Callable[[sympy.Expr], sympy.Expr]) -> Callable[[sympy.Expr], sympy.Expr]:
    """``floor``/``ceil`` of an irrational value only below _MAX_ROUNDED in magnitude.

    SymPy finds the integer part of an irrational value by evaluating it to as many digits as
    it has: ``floor((1 + sqrt(2))**9999)`` took 5 s (issue #31, F8).
    """

    def rounded(x: sympy.Expr) -> sympy.Expr:
        if not x.is_Rational:
            approx = sympy.N(x, _DIGITS)
            if not approx.is_Number or not approx.is_finite or abs(approx) > _MAX_ROUNDED:
                raise CalculatorError(
                    f"{fn.__name__} of an irrational value needs a real value of magnitude at "
                    f"most 10^{len(str(_MAX_ROUNDED)) - 1}"
                )
        return fn(x)

    return rounded


def _minmax(pick: Callable[..., Any]) -> Callable[..., sympy.Expr]:
    def fn(*args: sympy.Expr) -> sympy.Expr:
        if not args or not all(a.is_real for a in args):
            raise CalculatorError("min/max expect real numbers")
        return pick(*args)

    return fn


#: Functions an expression may call (name -> implementation on SymPy values).
FUNCTIONS: dict[str, Callable[..., sympy.Expr]] = {
    "sqrt": sympy.sqrt,
    "cbrt": sympy.cbrt,
    "abs": sympy.Abs,
    "exp": sympy.exp,
    "log": sympy.log,
    "ln": sympy.log,
    "log10": lambda x: sympy.log(x, 10),
    "log2": lambda x: sympy.log(x, 2),
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
    "asin": sympy.asin,
    "acos": sympy.acos,
    "atan": sympy.atan,
    "floor": _rounding(sympy.floor),
    "ceil": _rounding(sympy.ceiling),
    "round": _round,
    "factorial": _factorial,
    "binomial": _binomial,
    "comb": _binomial,
    "gcd": _gcd,
    "lcm": _lcm,
    "pow": lambda b, e, m=None: _pow(b, e) if m is None else _mod_pow(b, e, m),
    "min": _minmax(sympy.Min),
    "max": _minmax(sympy.Max),
}
#: name -> (fewest, most) arguments; ``None`` = any number.
_ARITY: dict[str, tuple[int, int | None]] = {
    **{name: (1, 1) for name in FUNCTIONS},
    "log": (1, 2),
    "round": (1, 2),
    "binomial": (2, 2),
    "comb": (2, 2),
    "pow": (2, 3),
    "gcd": (1, None),
    "lcm": (1, None),
    "min": (1, None),
    "max": (1, None),
}
_CONSTANTS: dict[str, sympy.Expr] = {"pi": sympy.pi, "e": sympy.E, "E": sympy.E}


def _check_size(value: sympy.Expr) -> sympy.Expr:
    if value.is_Rational:
        if max(int(value.p).bit_length(), int(value.q).bit_length()) > _MAX_BITS:
            raise CalculatorError(f"intermediate result exceeds {_MAX_BITS} bits")
    elif value.has(sympy.zoo, sympy.nan) or value in (sympy.oo, -sympy.oo):
        raise CalculatorError("the result is undefined (division by zero or infinity)")
    return value


def _pow(base: sympy.Expr, exp: sympy.Expr) -> sympy.Expr:
    if exp.is_Integer:
        e = int(exp)
        if abs(e) > _MAX_EXPONENT:
            raise CalculatorError(f"exponent {e} is larger than {_MAX_EXPONENT}")
        if base.is_Rational:
            bits = max(int(base.p).bit_length(), int(base.q).bit_length())
            if bits * abs(e) > _MAX_BITS:
                raise CalculatorError(f"the power has more than {_MAX_BITS} bits")
            if base == 0 and e < 0:
                raise CalculatorError("division by zero")
        return base**exp
    # Non-integer exponents stay symbolic; keep their operands small.
    for part in (base, exp):
        if part.is_Rational and max(int(part.p).bit_length(), int(part.q).bit_length()) > 2048:
            raise CalculatorError("operands of a non-integer power are too large")
    if base == 0 and exp.is_negative:
        raise CalculatorError("division by zero")
    return base**exp


def _divide(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if b == 0:
        raise CalculatorError("division by zero")
    return a / b


def _floordiv(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if b == 0:
        raise CalculatorError("division by zero")
    return _FLOOR(a / b)


def _mod(a: sympy.Expr, b: sympy.Expr) -> sympy.Expr:
    if b == 0:
        raise CalculatorError("modulo by zero")
    if not (a.is_Rational and b.is_Rational):
        raise CalculatorError("% expects rational operands")
    return a - b * sympy.floor(a / b)


_FLOOR = _rounding(sympy.floor)

_BINOPS: dict[type[ast.operator], Callable[[sympy.Expr, sympy.Expr], sympy.Expr]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _divide,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: _pow,
}


def _number(value: object, literal: str | None = None) -> sympy.Expr:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError(f"only numbers are allowed, got {type(value).__name__} {value!r}")
    if isinstance(value, int):
        if value.bit_length() > _MAX_BITS:
            raise CalculatorError(f"a number exceeds {_MAX_BITS} bits")
        return sympy.Integer(value)
    if not math.isfinite(value):
        raise CalculatorError("the number is too large")
    # The literal as written is exact (0.1 is 1/10, and 0.123456789012345678901 keeps every
    # digit); repr() is the fallback, the shortest text that round-trips the float.
    if literal is not None:
        try:
            return sympy.Rational(literal.replace("_", ""))
        except (TypeError, ValueError):
            pass
    return sympy.Rational(repr(value))


def _eval(node: ast.AST, depth: int, src: str) -> sympy.Expr:
    if depth > _MAX_DEPTH:
        raise CalculatorError(f"the expression is nested more than {_MAX_DEPTH} levels deep")
    if isinstance(node, ast.Expression):
        return _eval(node.body, depth + 1, src)
    if isinstance(node, ast.Constant):
        literal = ast.get_source_segment(src, node) if isinstance(node.value, float) else None
        return _number(node.value, literal)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd | ast.USub):
        value = _eval(node.operand, depth + 1, src)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise CalculatorError(f"operator {type(node.op).__name__} is not allowed")
        left = _eval(node.left, depth + 1, src)
        right = _eval(node.right, depth + 1, src)
        return _check_size(op(left, right))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name `{node.id}` (constants: pi, e)")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            shown = node.func.id if isinstance(node.func, ast.Name) else "this"
            raise CalculatorError(
                f"function `{shown}` is not available; use one of {', '.join(sorted(FUNCTIONS))}"
            )
        if node.keywords:
            raise CalculatorError("keyword arguments are not allowed")
        low, high = _ARITY[node.func.id]
        if len(node.args) < low or (high is not None and len(node.args) > high):
            raise CalculatorError(f"wrong number of arguments for {node.func.id}")
        args = [_eval(a, depth + 1, src) for a in node.args]
        for a in args:
            if a.is_Rational and not a.is_Integer and node.func.id in ("factorial",):
                raise CalculatorError("factorial expects an integer")
            if (
                a.is_Rational
                and int(abs(a.p)).bit_length() > _MAX_SYMBOLIC_BITS
                and (
                    node.func.id not in ("abs", "gcd", "lcm", "pow", "min", "max", "floor", "ceil")
                )
            ):
                raise CalculatorError(f"the argument of {node.func.id} is too large")
        try:
            return _check_size(FUNCTIONS[node.func.id](*args))
        except TypeError as e:
            raise CalculatorError(f"wrong number of arguments for {node.func.id}") from e
    raise CalculatorError(f"`{type(node).__name__}` is not allowed in an expression")


def evaluate(expression: str) -> sympy.Expr:
    """Evaluate an arithmetic expression exactly.

    Args:
        expression: E.g. ``"2^10 + binomial(10, 3) / 4"``.

    Returns:
        The exact SymPy value.

    Raises:
        CalculatorError: If the expression is not allowed, malformed or too costly.
    """
    if not isinstance(expression, str):
        raise CalculatorError("the expression must be a string")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    text = (
        expression.replace("^", "**")
        .replace("×", "*")
        .replace("·", "*")
        .replace("÷", "/")
        .replace("−", "-")
        .replace("√", "sqrt")
        .strip()
    )
    if not text:
        raise CalculatorError("the expression is empty")
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise CalculatorError(f"cannot parse the expression ({type(e).__name__})") from e
    count = 0
    for _ in ast.walk(tree):
        count += 1
        if count > _MAX_NODES:
            raise CalculatorError(f"the expression has more than {_MAX_NODES} parts")
    try:
        return _eval(tree, 0, text)
    except CalculatorError:
        raise
    except Exception as e:  # sympy on model input: its own bugs included (AttributeError)
        raise CalculatorError(f"cannot evaluate the expression ({type(e).__name__})") from e


def _terminating_decimal(p: int, q: int) -> str | None:
    """``p/q`` as an exact decimal string if it terminates within 40 places, else None."""
    twos = fives = 0
    d = q
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    places = max(twos, fives)
    if d != 1 or places > 40:
        return None
    scaled = abs(p) * 10**places // q
    digits = str(scaled).rjust(places + 1, "0")
    text = f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return ("-" if p < 0 else "") + text


def format_value(value: sympy.Expr) -> str:
    """Exact value, plus a decimal approximation when the exact form is not an integer."""
    if value.is_Integer:
        return str(value)
    exact = str(value)
    if value.is_Rational:
        decimal = _terminating_decimal(int(value.p), int(value.q))
        if decimal is not None:
            return f"{exact} = {decimal}"
    try:
        approx = sympy.N(value, _DIGITS)
    except Exception:  # sympy on model input: no approximation, the exact form stands
        return exact
    if approx.is_real is False:
        return exact
    text = str(approx)
    if "." in text and "e" not in text.lower():
        text = text.rstrip("0").rstrip(".")
    return exact if text == exact else f"{exact} (≈ {text})"


def calculate(expression: str) -> str:
    """The ``calculator`` tool: evaluate ``expression`` and return the result as text."""
    return format_value(evaluate(expression))
