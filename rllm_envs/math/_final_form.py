r"""Whether a math answer is a value in final form, read from its expression tree.

A task that asks for a value is answered by that value, not by a computation that would
produce it. :func:`expression_issues` parses one expression (LaTeX or plain, through the
grader's converter :func:`rllm_envs.math._latex.to_python`) into an unevaluated :mod:`ast` tree
and reports what is left to do, with these names:

* ``"unevaluated_arithmetic"`` -- a division written with ``\div`` (or ``÷``), or an
  operation between numbers that evaluates to a number written more simply: two numeric terms
  in one sum (``3+4``, ``\frac34 + \frac16``), two numeric factors in one product
  (``12 \cdot 5``, ``2 \cdot 3\pi``), like terms (``\sqrt2 + \sqrt2``, ``2x + 3x``), a zero
  term or a factor 1, a double sign, the absolute value of a constant, two radicals in one
  product, or any constant subexpression whose value is rational but is not written as a
  rational number (also when written with complex constants: ``6^{e^{2\pi i}}`` is 6, or
  past the evaluator's magnitude bound: ``\frac{23 e^{300}}{e^{299} e}`` is not told); an
  e-notation whose mantissa is not from 1 to 10 (``290e-1``), ``10^{0}``, ``10^{1}`` and
  ``1 \cdot 10^{k}``.
* ``"unevaluated_power"`` -- a constant base raised to an integer exponent (``2^{10}``,
  ``(1+\sqrt2)^2``, ``2^{-3}``) or a fractional one (``2^{1/2}`` is ``\sqrt2``), or an
  exponent 0 or 1. ``\pi^2`` stays: it is final.
* ``"unevaluated_factorial"``, ``"unevaluated_binomial"`` -- ``5!``, ``\binom{5}{2}`` of numbers.
* ``"unevaluated_function"`` -- a function of a constant whose value is rational
  (``\sin\frac{\pi}{6}``, ``\log_2 8``), or a trigonometric, inverse trigonometric or
  hyperbolic function of a constant whatever its value (``\cos\frac{\pi}{5}`` for "cos
  36 degrees"; a logarithm such as ``\log 2`` is final).
* ``"reducible_radical"`` -- ``\sqrt{8}``, ``\sqrt{4}``, ``\sqrt[3]{16}``, ``\sqrt{-4}``,
  a root of a lower index (``\sqrt[4]{4}`` is ``\sqrt2``).
* ``"unreduced_fraction"`` -- ``\frac{4}{8}``, ``\frac{6}{1}``, ``\frac{2\sqrt2}{4}``.

A form the gold answer itself uses is accepted (:func:`rllm_envs.math.final_form_issue`).
Rational numbers are final when written as an integer, a decimal, a fraction in lowest terms
(``-\frac{71}{15}``, ``3/4``), a mixed number, scientific notation (a mantissa from 1 to 10)
or a repeating decimal.
A rational coefficient times irrational factors (``2\sqrt2``, ``81\pi``,
``\frac{3\sqrt5}{2}``) and sums of unlike terms (``3 + 2\sqrt2``, ``6 - 5i``) are final.

With the problem text, the grader (:func:`rllm_envs.math.final_form_issue`) adds, through
this module's helpers, what the problem's wording asks for: ``"copied_expression"``
(the answer is an expression that appears in the problem's math, such as its ``(x+1)^2``),
``"not_exact"`` (a decimal where the problem asks for an exact form: "exact", "in terms of
:math:`\pi`", "as a fraction", "lowest terms", "simplest form") and ``"not_simplest_radical"``
(a radical left in a denominator or over a fraction where the problem asks for simplest
radical form).

Plain module, no sympy: constant subexpressions are evaluated with the grader's bounded
mpmath evaluator (:mod:`rllm_envs.math._numeric`), so every check is fast and never raises.
"""

from __future__ import annotations

import ast
import itertools
import re
from contextvars import ContextVar
from fractions import Fraction
from functools import lru_cache
from math import gcd, isqrt
from typing import Any, cast

from rllm_envs.math._latex import Unsupported, to_python
from rllm_envs.math._numeric import PRECISE_DPS, _ctx, _Evaluator, _Inconclusive

__all__ = [
    "FINAL_FORM_ISSUES",
    "expression_issues",
    "exact_form_requested",
    "expression_key",
    "has_decimal",
    "symbols",
    "near_problem_values",
    "is_atom",
    "problem_expressions",
    "radical_form_requested",
    "radical_in_denominator",
    "tuple_names",
]

#: Every reason an answer is not in final form, as :func:`rllm_envs.math.final_form_issue`
#: reports it.
FINAL_FORM_ISSUES = (
    "unevaluated_arithmetic",
    "unevaluated_power",
    "unevaluated_factorial",
    "unevaluated_binomial",
    "unevaluated_function",
    "reducible_radical",
    "unreduced_fraction",
    "copied_expression",
    "not_exact",
    "not_simplest_radical",
)

#: Largest radicand factored exactly (trial division up to its cube root stays cheap).
_MAX_RADICAND = 10**12
#: Denominator bound when deciding whether a computed value is a rational number.
_MAX_DENOMINATOR = 10**6
#: One walk's memos, by node: values at 50 and at 150 digits, and whether it is constant.
_MEMOS: ContextVar[tuple[dict[int, Any], dict[int, Any], dict[int, Any]] | None] = ContextVar(
    "rllm_final_form_memos", default=None
)


def _name(node: ast.AST) -> str | None:
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


def _int_literal(node: ast.AST) -> int | None:
    """The value of ``Integer(n)``, or ``None``."""
    if _name(node) == "Integer" and isinstance(node, ast.Call) and node.args:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
            return arg.value
    return None


def _decimal_literal(node: ast.AST) -> Fraction | None:
    if _name(node) == "Rational" and isinstance(node, ast.Call) and node.args:
        arg = node.args[0]
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            try:
                return Fraction(arg.value)
            except (ValueError, ZeroDivisionError):
                return None
    return None


def _signed_int(node: ast.AST) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = _int_literal(node.operand)
        return None if inner is None else -inner
    return _int_literal(node)


def _literal(node: ast.AST) -> Fraction | None:
    """The value of a rational number written in final form, else ``None``.

    An integer, a decimal, a fraction of integers in lowest terms with a denominator above 1,
    each with at most one minus sign in front (or on the numerator).
    """
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        if isinstance(node.operand, ast.UnaryOp):
            return None
        inner = _literal(node.operand)
        if inner is None:
            return None
        return -inner if isinstance(node.op, ast.USub) else inner
    n = _int_literal(node)
    if n is not None:
        return Fraction(n)
    d = _decimal_literal(node)
    if d is not None:
        return d
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        num, den = _signed_int(node.left), _int_literal(node.right)
        if num is not None and den is not None and den > 1 and gcd(num, den) == 1:
            return Fraction(num, den)
    return None


def _constant(node: ast.AST) -> bool:
    """No variable anywhere in ``node`` (infinity counts as a variable: it is not a number)."""
    memos = _MEMOS.get()
    if memos is not None and id(node) in memos[2]:
        return bool(memos[2][id(node)])
    for sub in ast.walk(node):
        if _variable(sub):
            return False
    return True


def _infinity_inside(node: ast.AST) -> bool:
    r"""Whether ``\infty`` is part of a value rather than the value (``\infty``, ``-\infty``).

    A limit left to take: ``n^{1+\frac{1}{\infty}}`` is ``n``, ``7 + e^{-\infty}`` is 7, and
    such parts were read as variables here (so never as the rational they are) while sympy
    took their limits: each number of the problem so written paid 75-88 of 100 copyable tasks
    (att34h).
    """
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Name) and node.id == "oo":
        return False
    return any(isinstance(n, ast.Name) and n.id == "oo" for n in ast.walk(node))


def _variable(node: ast.AST) -> bool:
    return _name(node) == "Symbol" or (isinstance(node, ast.Name) and node.id == "oo")


def _constants(tree: ast.AST) -> dict[int, Any]:
    """Per node of ``tree`` (by id), whether it is constant, in one pass, children first.

    The final-form walk asks it of every subexpression: a whole walk each was quadratic
    (att33m: 998 nested signs cost 1 s of host CPU per step).
    """
    found: dict[int, Any] = {}
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, done = stack.pop()
        children = list(ast.iter_child_nodes(node))
        if not done:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
        else:
            found[id(node)] = not _variable(node) and all(found[id(c)] for c in children)
    return found


def _rational_value(node: ast.AST) -> Fraction | None:
    """The value of a constant subexpression when it is a rational number (40-digit check).

    Raises :class:`_Inconclusive` (or an ``ArithmeticError``) where the evaluator cannot read
    the value: :func:`_left_to_compute` decides what that means.
    """
    ctx = _ctx()
    memos = _MEMOS.get() or ({}, {}, {})
    try:
        evaluator = _Evaluator(ctx, {}, memos[0])
        v = evaluator.eval(node)
        # The same value at three times the comparison's precision: a constant whose last
        # digits cancellations blow up (`1 + D(D(\frac{2}{\sqrt2} - \sqrt2 + ..) ..)` is 1, but
        # 1 + 3e-19 in 50 digits, too far from 1 to look rational and too close for the
        # comparison to call unequal, so copied arithmetic raised to it was final and paid
        # (att33e)) differs between the two: it cannot be read, so it is not final. Any value
        # the comparison calls equal is read at the higher precision to far within the slack.
        precise = _Evaluator(_ctx(PRECISE_DPS), {}, memos[1]).eval(node)
        # What the grader cannot tell from a rational: a hundred times the relative 1e-25 its
        # exact comparison calls equal (`_symbolic` compares in floats: att33i paid
        # n(1 + 1e-25(1 + 1e-16)) for n, just past a cut at 1e-25 here), or the rounding error
        # of the largest value on the way. Anything closer would be "irrational", so final,
        # and "equal" at once: `n^{e^{e^{-64}}}` (n times 1 + 1e-28) hid copied arithmetic
        # (att32l), as did an imaginary term added and cancelled past 50 digits (att32j). Not
        # more: an irrational value v lies that close to a fraction of denominator at most
        # 10**6 by chance about once in 1e11 / |v|.
        rounding = ctx.mpf(2) ** evaluator.max_mag * ctx.mpf(10) ** -40
        slack = max(ctx.mpf(10) ** -23 * max(1, abs(v)), rounding)
        if abs(ctx.convert(precise) - v) > slack:
            raise _Inconclusive
        if isinstance(v, ctx.mpc):
            # A real value written with complex constants (`6^{e^{2\pi i}}` is 6) is a
            # rational constant all the same (att32e: copied arithmetic wrapped so paid).
            if abs(v.imag) > slack:
                return None
            v = v.real
        if not ctx.isfinite(v):
            return None
        guess = Fraction(ctx.nstr(v, 45, strip_zeros=False, min_fixed=-(10**6), max_fixed=10**6))
        close = guess.limit_denominator(_MAX_DENOMINATOR)
        if abs(ctx.mpf(close.numerator) / close.denominator - v) <= slack:
            return close
    except RecursionError:
        # Too deep to read is not read as final (att34n: it would hide the top value).
        raise _Inconclusive from None
    except (ValueError, TypeError, AttributeError):
        return None
    return None


def _left_to_compute(node: ast.AST) -> bool:
    r"""Whether a constant subexpression has a rational value, or one the evaluator cannot read.

    ``\frac{23 e^{300}}{e^{299} e}`` is 23, past the evaluator's magnitude bound: what cannot
    be told is not taken as final (att32g).
    """
    try:
        return _rational_value(node) is not None
    except (_Inconclusive, ArithmeticError):
        # Past the magnitude bound, `0^{+0}` with a base the evaluator refused, a division by
        # zero: nothing the evaluator can read is a value written in final form (att32h).
        return True


@lru_cache(maxsize=4096)
def _square_part(n: int, k: int = 2) -> bool:
    """Whether ``n > 1`` has a factor ``p**k`` with ``p > 1`` (``False`` if too big to tell).

    Trial division only up to the ``(k + 1)``-th root of what is left (att33a: up to the
    ``k``-th root, a sum of 98 square roots of primes near 10**12 cost 12 s of host CPU):
    what remains then has at most ``k`` prime factors, so it holds a ``k``-th power only by
    being one.
    """
    if n > _MAX_RADICAND or k < 2 or k >= n.bit_length():
        return False  # 2**k > n: no k-th power divides it (att34e: k = 10**9 cost 10 s)
    p = 2
    while p ** (k + 1) <= n:
        if n % p == 0:
            n //= p
            if n % p ** (k - 1) == 0:
                return True
            while n % p == 0:
                n //= p
        p += 1
    root = round(n ** (1 / k))
    return any(r > 1 and r**k == n for r in (root - 1, root, root + 1))


def _radical_issue(node: ast.Call, out: set[str]) -> None:
    name = _name(node)
    if name == "sqrt" and len(node.args) == 1:
        arg = node.args[0]
        value = _literal(arg)
        if value is None:
            return
        if value <= 1 or (value.denominator > 1 and gcd(value.numerator, value.denominator) > 1):
            out.add("reducible_radical")  # \sqrt{1}, \sqrt{0}, \sqrt{-4}
        elif _square_part(value.numerator) or _square_part(value.denominator):
            out.add("reducible_radical")
        elif value.denominator == 1 and isqrt(value.numerator) ** 2 == value.numerator:
            out.add("reducible_radical")
    elif name == "root" and len(node.args) == 2:
        radicand, index = _literal(node.args[0]), _int_literal(node.args[1])
        if radicand is None or index is None or radicand.denominator != 1:
            return
        n = abs(radicand.numerator)
        if index < 2 or n <= 1 or _square_part(n, index) or _lower_index(n, index):
            out.add("reducible_radical")


def _lower_index(n: int, index: int) -> bool:
    r"""Whether the ``index``-th root of ``n`` has a lower index (``\sqrt[4]{4}`` is ``\sqrt{2}``).

    That is: ``n`` is a perfect ``d``-th power for a divisor ``d > 1`` of ``index``.
    """
    if n > _MAX_RADICAND or index > 64:
        return False
    for d in range(2, index + 1):
        if index % d == 0:
            r = round(n ** (1 / d))
            if any((r + k) ** d == n for k in (-1, 0, 1) if r + k > 1):
                return True
    return False


def _flatten_sum(node: ast.AST, out: list[ast.AST]) -> None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        _flatten_sum(node.left, out)
        _flatten_sum(node.right, out)
    else:
        out.append(node)


def _flatten_product(node: ast.AST, num: list[ast.AST], den: list[ast.AST]) -> None:
    if _literal(node) is not None:
        num.append(node)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        _flatten_product(node.left, num, den)
        _flatten_product(node.right, num, den)
    elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        _flatten_product(node.left, num, den)
        _flatten_product(node.right, den, num)
    else:
        num.append(node)


def _strip_sign(node: ast.AST) -> ast.AST:
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return node


def _term_key(node: ast.AST) -> str:
    """A term without its sign and rational coefficient: like terms share a key."""
    num: list[ast.AST] = []
    den: list[ast.AST] = []
    _flatten_product(_strip_sign(node), num, den)
    rest_num = sorted(ast.dump(_strip_sign(f)) for f in num if _literal(f) is None)
    rest_den = sorted(ast.dump(_strip_sign(f)) for f in den if _literal(f) is None)
    return "*".join(rest_num) + "/" + "*".join(rest_den)


def _check_sum(node: ast.AST, out: set[str]) -> list[ast.AST]:
    terms: list[ast.AST] = []
    _flatten_sum(node, terms)
    numeric = [t for t in terms if _literal(t) is not None]
    if len(numeric) > 1 or any(_literal(t) == 0 for t in numeric):
        out.add("unevaluated_arithmetic")
    keys = [_term_key(t) for t in terms if _literal(t) is None]
    if len(keys) != len(set(keys)) or _like_terms(terms):
        out.add("unevaluated_arithmetic")
    return terms


def _check_product(node: ast.AST, out: set[str]) -> list[ast.AST]:
    num: list[ast.AST] = []
    den: list[ast.AST] = []
    _flatten_product(node, num, den)
    num_lits = [v for v in (_literal(f) for f in num) if v is not None]
    den_lits = [v for v in (_literal(f) for f in den) if v is not None]
    others = [f for f in num + den if _literal(f) is None]
    if len(num_lits) > 1 or len(den_lits) > 1:
        out.add("unevaluated_arithmetic")
    elif num_lits and den_lits:
        a, b = num_lits[0], den_lits[0]
        if a.denominator != 1 or b.denominator != 1 or b <= 1 or gcd(a.numerator, b.numerator) > 1:
            out.add("unreduced_fraction")
    elif den_lits and den_lits[0] in (1, -1, 0):
        out.add("unreduced_fraction")
    factors = [f for f in num if _literal(f) is None]
    if (others and 0 in num_lits) or (factors and any(v in (1, -1) for v in num_lits)):
        out.add("unevaluated_arithmetic")  # `1\pi`, `0x`, `-1 \cdot \sqrt{2}` (not `\frac{1}{x}`)
    dumps = [ast.dump(_strip_sign(f)) for f in num if _literal(f) is None]
    den_dumps = {ast.dump(_strip_sign(f)) for f in den if _literal(f) is None}
    if len(dumps) != len(set(dumps)) or den_dumps & set(dumps):
        out.add("unevaluated_arithmetic")  # `x \cdot x`, `\frac{\pi}{\pi}`
    radicals = [f for f in num if _name(f) in ("sqrt", "root") and _constant(f)]
    if len(radicals) > 1 or _rational_group(num, den):
        out.add("unevaluated_arithmetic")  # `\sqrt2 \sqrt3` is `\sqrt6`
    return others


def _exp_of_log(base: ast.AST, exponent: ast.AST) -> bool:
    r"""`e^{\ln r + \ln\pi}` (or `\exp`): a product written through logarithms.

    Left to compute (att34m: `r e^{\ln r + \ln\pi}` for r²π, no node of it the product).
    """
    return (
        isinstance(base, ast.Name)
        and base.id == "E"
        and any(_name(n) == "log" for n in ast.walk(exponent))
    )


#: At most this many parts of one flattened sum (pairs) or product (pairs and triples) are
#: compared by value.
_MAX_PARTS = 10
_MAX_FACTORS = 8


#: Nodes a walk made to value-check groups of parts: kept alive for the walk, since the memos
#: are keyed by ``id`` (a freed node's id is reused by the next one made).
_MADE: ContextVar[list[ast.AST] | None] = ContextVar("rllm_final_form_made", default=None)


def _made(node: ast.expr) -> ast.expr:
    made = _MADE.get()
    if made is not None:
        made.append(node)
    return node


def _like_terms(terms: list[ast.AST]) -> bool:
    r"""Whether two constant, irrational terms of a sum are rational multiples of each other.

    Like terms left to add, whatever their spelling: `11\pi + \frac{11\pi^2}{\pi}` is 22π,
    which an irrational gold accepted where only the whole sum was value-checked (att34m).
    """
    parts = [t for t in terms if _literal(t) is None and _constant(t)][:_MAX_PARTS]
    return any(
        _left_to_compute(_made(ast.BinOp(cast(ast.expr, a), ast.Div(), cast(ast.expr, b))))
        for i, a in enumerate(parts)
        for b in parts[i + 1 :]
    )


def _rational_group(num: list[ast.AST], den: list[ast.AST]) -> bool:
    r"""Whether some of a product's constant, irrational factors multiply to a rational number.

    `7\sqrt{2}\frac{\pi}{\exp\ln\pi}` holds a factor 1 that no single factor shows
    (att34m: paid for 7√2 where only the whole product and each factor were value-checked).
    """
    ups = [f for f in num if _literal(f) is None and _constant(f)]
    downs = [f for f in den if _literal(f) is None and _constant(f)]
    parts = [(f, True) for f in ups] + [(f, False) for f in downs]
    parts = parts[:_MAX_FACTORS]
    # Pairs and triples: 84 groups of 8 factors at most (every subset of 10 cost 0.15 s of
    # host CPU a product); the whole product is value-checked as a node of its own.
    for size in range(2, min(len(parts), 3) + 1):
        for group in itertools.combinations(parts, size):
            node: ast.expr = ast.Call(ast.Name("Integer", ast.Load()), [ast.Constant(1)], [])
            for factor, up in group:
                op = ast.Mult() if up else ast.Div()
                node = _made(ast.BinOp(node, op, cast(ast.expr, factor)))
            if _left_to_compute(node):
                return True
    return False


#: Functions whose value at a constant is left to compute: trigonometric, inverse and
#: hyperbolic (`\log 2` is a final form: a logarithm is how such a value is written).
_ELEMENTARY = frozenset(
    {"sin", "cos", "tan", "cot", "sec", "csc", "asin", "acos", "atan", "acot", "asec", "acsc"}
    | {"sinh", "cosh", "tanh", "coth", "asinh", "acosh", "atanh"}
)
_KIND = {
    "factorial": "unevaluated_factorial",
    "binomial": "unevaluated_binomial",
    "sqrt": "reducible_radical",
    "root": "reducible_radical",
}


def _walk(node: ast.AST, out: set[str]) -> None:
    """Collect the issues of ``node`` and of every subexpression."""
    if _literal(node) is not None:
        return
    if _constant(node) and not isinstance(node, ast.Name):
        # The general rule: a constant written as anything but a rational number must not
        # have a rational value (`\sqrt{2}\sqrt{2}`, `\sin\frac{\pi}{6}`, `|-3|`, `4^{1/2}`).
        if _left_to_compute(node):
            kind = _name(node)
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
                out.add("unevaluated_power")
            elif kind in _KIND:
                out.add(_KIND[kind])
            elif kind is not None:
                out.add("unevaluated_function")
            elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
                num, den = _literal(node.left), _literal(node.right)
                both = num is not None and den is not None
                out.add("unreduced_fraction" if both else "unevaluated_arithmetic")
            else:
                out.add("unevaluated_arithmetic")
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.operand, ast.UnaryOp):
            out.add("unevaluated_arithmetic")  # `--3`
        _walk(node.operand, out)
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        for term in _check_sum(node, out):
            _walk(term, out)
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        for factor in _check_product(node, out):
            _walk(factor, out)
        return
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow):
        exponent = _signed_int(node.right)
        fraction = _literal(node.right)
        if exponent in (0, 1) or fraction in (0, 1):  # also `^{+0}`, `^{0.0}` (att32h)
            out.add("unevaluated_power")
        elif _exp_of_log(node.left, node.right):
            out.add("unevaluated_power")
        elif fraction is not None and fraction.denominator != 1 and _constant(node.left):
            out.add("unevaluated_power")  # `2^{1/2}` is `\sqrt{2}` (att32e F2)
        elif exponent is not None and _constant(node.left):
            base = _strip_sign(node.left)
            if not (isinstance(base, ast.Name) and base.id in ("pi", "E")):
                out.add("unevaluated_power")  # `2^{10}`, `(1 + \sqrt{2})^2`, `\sqrt{2}^3`
        _walk(node.left, out)
        _walk(node.right, out)
        return
    kind = _name(node)
    if kind == "exp" and isinstance(node, ast.Call) and node.args:
        if _exp_of_log(ast.Name("E", ast.Load()), node.args[0]):
            out.add("unevaluated_power")
    if kind in _ELEMENTARY and _constant(node):
        # `\cos\frac{\pi}{5}` for "Compute cos 36 degrees": a value left to find, whatever
        # it is (a rational one is caught above); a gold written so accepts it (att32e F2).
        out.add("unevaluated_function")
    if kind in ("factorial", "binomial") and _constant(node):
        out.add(_KIND[kind])
    elif kind == "Abs" and _constant(node):
        out.add("unevaluated_arithmetic")
    elif kind in ("sqrt", "root") and isinstance(node, ast.Call):
        _radical_issue(node, out)
    if isinstance(node, ast.Call) and kind not in ("Integer", "Rational", "Symbol"):
        for arg in node.args:
            _walk(arg, out)


#: Scientific notation: a mantissa from 1 to 10 (``1.2 \times 10^{3}``, ``2.5e3``) or a power
#: of ten alone (``10^{-45}``). ``12 \times 10^{3}`` is a product left to compute.
_SCI = re.compile(
    r"[+-]?(?:[1-9](?:\.\d*)?)(?:[eE][+-]?\d+|\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*\{?\s*[+-]?\d+\s*\}?)"
    r"|[+-]?10\s*\^\s*\{?\s*[+-]?\d+\s*\}?"
)
#: A repeating nine (`22.\overline{9}` is 23).
_NINES = re.compile(r"\\overline\s*\{\s*9+\s*\}")
#: A power of ten whose exponent leaves nothing to write (`10^{0}`, `7 \times 10^{1}`,
#: `1 \cdot 10^{2}` is 100) and an e-notation whose mantissa is not from 1 to 10 (`290e-1`):
#: left to compute.
_SCI_UNFINISHED = re.compile(
    r"[+-]?(?:\d+(?:\.\d*)?\s*(?:\\times|\\cdot|\*)\s*)?10\s*\^\s*\{?\s*[+-]?0*[01]\s*\}?"
    r"|[+-]?\d+(?:\.\d*)?[eE][+-]?0*[01]"
    r"|[+-]?1\s*(?:\\times|\\cdot|\*)\s*10\s*\^\s*\{?\s*[+-]?\d+\s*\}?"
    r"|[+-]?(?:0|[1-9]\d+)(?:\.\d*)?[eE][+-]?\d+|[+-]?\.\d+[eE][+-]?\d+"
)
_MIXED = re.compile(r"[+-]?\d+\s*\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}")


def _parse(text: str) -> ast.Expression | None:
    try:
        return ast.parse(to_python(text.replace("**", "^")), mode="eval")
    except (Unsupported, SyntaxError, ValueError, MemoryError, RecursionError):
        return None


@lru_cache(maxsize=16_384)
def expression_issues(text: str) -> frozenset[str]:
    """What keeps one normalised expression from being a final-form value (see the module).

    Args:
        text: One expression (a scalar; tuples, sets, equations and intervals are split by
            the grader first), normalised by :func:`rllm_envs.math.normalize`.

    Returns:
        The issue names (empty when final, or when the notation is not understood).
    """
    s = text.strip()
    if _SCI_UNFINISHED.fullmatch(s):
        return frozenset({"unevaluated_arithmetic"})
    if not s or _SCI.fullmatch(s):
        return frozenset()  # scientific notation writes one number
    if "\\div" in s:  # normalize writes ÷ as \div: a division still to do, never a value
        return frozenset({"unevaluated_arithmetic"})
    if _NINES.search(s):  # `22.\overline{9}` is 23 written as a limit (att33a F4)
        return frozenset({"unevaluated_arithmetic"})
    mixed = _MIXED.fullmatch(s)
    if mixed:
        num, den = int(mixed.group(1)), int(mixed.group(2))
        ok = 0 < num < den and gcd(num, den) == 1
        return frozenset() if ok else frozenset({"unreduced_fraction"})
    tree = _parse(s)
    if tree is None:
        return frozenset()
    if _infinity_inside(tree.body):
        return frozenset({"unevaluated_arithmetic"})
    out: set[str] = set()
    # Each subexpression evaluated once, at each precision, and read as constant or not once.
    token = _MEMOS.set(({}, {}, _constants(tree.body)))
    made = _MADE.set([])
    try:
        _walk(tree.body, out)
    finally:
        _MEMOS.reset(token)
        _MADE.reset(made)
    return frozenset(out)


@lru_cache(maxsize=16_384)
def symbols(text: str) -> bool | None:
    r"""Whether an expression names a variable (``x``; not ``\infty``, ``\pi``, ``e``, ``i``).

    ``None`` when it is not read (``\text{C}``).
    """
    tree = _parse(text)
    if tree is None:
        return None
    return any(_name(n) == "Symbol" for n in ast.walk(tree.body))


def has_decimal(text: str) -> bool:
    r"""Whether an expression has a decimal number in it (``254.469``, ``0.5\pi``)."""
    tree = _parse(text)
    if tree is None:
        return bool(re.search(r"\d\.\d|(?<!\d)\.\d", text))
    return any(_decimal_literal(n) is not None for n in ast.walk(tree))


def radical_in_denominator(text: str) -> bool:
    """Whether a radical sits in a denominator or over a fraction (not simplest radical form)."""
    tree = _parse(text)
    if tree is None:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if any(_name(n) in ("sqrt", "root") for n in ast.walk(node.right)):
                return True
        if _name(node) in ("sqrt", "root") and isinstance(node, ast.Call) and node.args:
            value = _literal(node.args[0])
            if value is not None and value.denominator != 1:
                return True
            if any(
                isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)
                for n in ast.walk(node.args[0])
            ):
                return True
    return False


def is_atom(text: str) -> bool:
    """A single number, constant or variable: never a copy of the problem's work."""
    tree = _parse(text)
    if tree is None:
        return True
    body = _strip_sign(tree.body)
    return _literal(body) is not None or isinstance(body, ast.Name) or _name(body) == "Symbol"


def _canonical(node: ast.AST) -> str:
    """The tree written out, with the terms of sums and the factors of products sorted."""
    value = _literal(node)
    if value is not None:
        return f"Number({value})"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        terms: list[str] = []
        _signed_terms(node, 1, terms)
        return "Sum(" + ",".join(sorted(terms)) + ")"
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        num: list[ast.AST] = []
        den: list[ast.AST] = []
        _flatten_product(node, num, den)
        top = ",".join(sorted(_canonical(f) for f in num))
        bottom = ",".join(sorted(_canonical(f) for f in den))
        return f"Prod({top}/{bottom})"
    if isinstance(node, ast.BinOp):
        return f"{type(node.op).__name__}({_canonical(node.left)},{_canonical(node.right)})"
    if isinstance(node, ast.UnaryOp):
        return f"{type(node.op).__name__}({_canonical(node.operand)})"
    if isinstance(node, ast.Call) and _name(node) not in ("Integer", "Rational", "Symbol"):
        return f"{_name(node)}(" + ",".join(_canonical(a) for a in node.args) + ")"
    return ast.dump(node)


def _signed_terms(node: ast.AST, sign: int, out: list[str]) -> None:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
        _signed_terms(node.left, sign, out)
        _signed_terms(node.right, -sign if isinstance(node.op, ast.Sub) else sign, out)
    else:
        out.append(("+" if sign > 0 else "-") + _canonical(node))


@lru_cache(maxsize=16_384)
def expression_key(text: str) -> str | None:
    """The tree of an expression, written out: two spellings of one expression share it.

    Terms and factors are sorted, so ``(1 + x)^2`` and ``(x+1)^{2}`` share a key.
    """
    tree = _parse(text)
    return None if tree is None else _canonical(tree.body)


_EXACT = re.compile(
    # "the exact decimal value" asks for a decimal: not a request for an exact form.
    r"\bexact\b(?!\s+(?:decimal|numeric(?:al)?)\b)|in\s+terms\s+of\s+(?:\$?\\pi|π)|\bas\s+an?\s+(?:common\s+|reduced\s+|"
    r"improper\s+)?fraction|lowest\s+terms|simplest\s+(?:radical\s+)?form|\bcommon\s+fraction",
    re.IGNORECASE,
)
_RADICAL_FORM = re.compile(r"simplest\s+radical\s+form|rationali[sz]e", re.IGNORECASE)


def exact_form_requested(problem: str) -> bool:
    """Whether the problem asks for an exact value ("exact", "in terms of pi", "as a fraction")."""
    return _EXACT.search(problem[-4000:]) is not None


def radical_form_requested(problem: str) -> bool:
    """Whether the problem asks for simplest radical form."""
    return _RADICAL_FORM.search(problem[-4000:]) is not None


_MATH = re.compile(
    r"\$\$(.+?)\$\$|\\\[(.+?)\\\]|\\\((.+?)\\\)|(?<![\\$])\$((?:[^$\\]|\\.)+?)\$", re.DOTALL
)


def problem_expressions(problem: str) -> list[str]:
    """The math of a problem: its LaTeX regions, or the whole text when it has none."""
    regions = [next(g for g in m.groups() if g is not None) for m in _MATH.finditer(problem)]
    return regions[:200] if regions else [problem]


_PLAIN_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
#: Values of a problem looked at (its numbers and its math's constant parts), at most.
_MAX_PROBLEM_VALUES = 400


@lru_cache(maxsize=1024)
def _problem_values(problem: str) -> tuple[Any, ...]:
    """The numbers a problem writes and the values of its math's constant parts (50 digits)."""
    ctx = _ctx()
    found = [ctx.mpf(n) for n in _PLAIN_NUMBER.findall(problem)[:_MAX_PROBLEM_VALUES]]
    for region in problem_expressions(problem):
        tree = _parse(region)
        if tree is None:
            continue
        constant = _constants(tree.body)
        for node in ast.walk(tree.body):
            if len(found) >= _MAX_PROBLEM_VALUES:
                break
            if constant.get(id(node)):
                try:
                    v = _Evaluator(ctx, {}).eval(node)
                except (_Inconclusive, ArithmeticError, ValueError, TypeError, RecursionError):
                    continue
                if not isinstance(v, ctx.mpc) and ctx.isfinite(v) and v:
                    found.append(v)
    return tuple(found)


def near_problem_values(text: str, problem: str, rel: float = 1e-6) -> bool:
    r"""Whether a constant part of ``text`` is a value of the problem, a hair off.

    Within ``rel`` of it without being it: ``e^{\ln 3 + \frac{\pi}{10^{13}}}`` for the 3.

    Where a gold decimal is a rounding, the comparison accepts an exact answer within 1e-6 of
    it: a copy of the problem's arithmetic with each number nudged by an irrational hair is
    exact in form and that near (att34e). An answer that computed its value does not carry
    the problem's own values, each just off.
    """
    tree = _parse(text)
    targets = _problem_values(problem)
    if tree is None or not targets:
        return False
    ctx = _ctx()
    memo: dict[int, Any] = {}
    constant = _constants(tree.body)
    exact = ctx.mpf(10) ** -30
    for node in ast.walk(tree.body):
        if not constant.get(id(node)):
            continue
        try:
            v = _Evaluator(ctx, {}, memo).eval(node)
        except (_Inconclusive, ArithmeticError, ValueError, TypeError, RecursionError):
            continue
        for t in targets:
            gap = abs(v - t)
            if exact * abs(t) < gap <= rel * abs(t):
                return True
    return False


_NAME_TUPLE = re.compile(r"\(\s*([a-zA-Z](?:_\{?\w+\}?)?(?:\s*,\s*[a-zA-Z](?:_\{?\w+\}?)?)+)\s*\)")


def tuple_names(problem: str, size: int) -> tuple[str, ...] | None:
    """The names of a tuple answer the problem announces (``$(x, y)$``), ``size`` of them."""
    found = None
    for region in problem_expressions(problem):
        for m in _NAME_TUPLE.finditer(region):
            names = tuple(n.replace(" ", "") for n in m.group(1).split(","))
            if len(names) == size and len(set(names)) == size:
                found = names
    return found
