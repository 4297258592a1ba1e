r"""Symbolic comparison of two LaTeX answers with sympy: the slow path of the grader.

This module is run as a separate worker process by :mod:`rllm_envs.math.grader` (``python
_symbolic.py`` speaks JSON lines on stdin/stdout), so a runaway computation can be stopped by
killing the process, from any thread. It imports only the standard library and sympy, and can
also be imported and called directly (tests do), without any time bound.

LaTeX is translated by a small recursive-descent converter into a Python expression made only of
whitelisted sympy constructors (``Symbol('x')``, ``Integer(3)``, ``sqrt(...)``...), parsed with
``evaluate=False`` so that a power tower such as ``9^9^9^9`` is inspected (and refused) before
anything is computed.
"""

from __future__ import annotations

import ast
import json
import math
import random
import sys
import time
from typing import Any

import mpmath
import sympy
from sympy.parsing.sympy_parser import parse_expr

if __package__:
    from rllm_envs.math._latex import Unsupported, to_python
else:  # run as a script (the worker): import the sibling file, not the whole package
    from _latex import Unsupported, to_python  # type: ignore[no-redef]

__all__ = ["Unsupported", "latex_to_sympy", "expressions_equal", "equations_equal", "serve"]


def _real_root(x: Any, n: Any) -> sympy.Expr:
    r"""``\sqrt[n]{x}`` as the in-process evaluator reads it (``\sqrt[3]{-8}`` is -2).

    Real for an odd ``n`` and a real negative ``x``, else sympy's principal root.

    sympy's own ``root`` is principal (att34b: ``\sqrt[3]{-2} - \sqrt[3]{2} e^{i\pi/3}`` was
    0 here and -1.9 - 1.1i in process, a gap each side read its own way).
    """
    x, n = sympy.sympify(x), sympy.sympify(n)
    if n.is_integer and n.is_odd and x.is_extended_real and x.is_extended_negative:
        return -sympy.root(-x, n)
    return sympy.root(x, n)


def latex_to_sympy(text: str) -> sympy.Expr:
    r"""Parse a LaTeX (or plain) math expression into an *unevaluated* sympy expression.

    Args:
        text: The expression, e.g. ``"\frac{\sqrt{3}}{2} + x^2"``.

    Returns:
        The expression, built with ``evaluate=False``.

    Raises:
        Unsupported: If the input uses notation the converter does not handle, is too long or
            too deeply nested.
    """
    code = to_python(text)
    try:
        # Python's grammar first: the in-process side parses with `ast`, and sympy's tokenizer
        # joins or reads what `ast` refuses (`* *` as `**`, att33k): one grammar for both.
        ast.parse(code, mode="eval")
        expr = parse_expr(code, local_dict={"root": _real_root}, evaluate=False)
    except (SyntaxError, TypeError, ValueError, AttributeError, RecursionError, MemoryError) as e:
        raise Unsupported(f"cannot parse: {e}") from e
    if not isinstance(expr, sympy.Basic):
        raise Unsupported("not an expression")
    return expr


def _finite_log2(value: sympy.Basic) -> float | None:
    """``log2 |value|`` computed without overflow (``None`` if not a finite nonzero number)."""
    try:
        magnitude = sympy.Abs(value.evalf(15)).evalf(15)
    except (TypeError, ValueError, OverflowError, RecursionError):
        return None
    if not isinstance(magnitude, sympy.Float) or magnitude == 0:
        return None
    result = float(mpmath.log(mpmath.mpf(magnitude._mpf_), 2))
    return result if math.isfinite(result) else None


def _check_magnitude(expr: sympy.Basic, depth: int = 0) -> None:
    """Refuse expressions whose exact evaluation would be astronomically large."""
    if depth > 200:
        raise Unsupported("expression tree too deep")
    for arg in expr.args:
        _check_magnitude(arg, depth + 1)
    if isinstance(expr, sympy.Pow):
        base, exp = expr.args
        if not exp.free_symbols:
            exp_size = _finite_log2(exp)
            if exp_size is None and exp.is_number and exp not in (sympy.S.Zero,):
                # An exponent we cannot even evaluate in floating point is too big to use.
                if exp.has(sympy.Pow, sympy.factorial):
                    raise Unsupported("exponent too large")
            if exp_size is not None and exp_size > 17:  # |exponent| > ~131k
                base_size = _finite_log2(base) if not base.free_symbols else 1.0
                if base_size is None or abs(base_size) > 1e-12:
                    raise Unsupported("power too large")
            if exp_size is not None and not base.free_symbols:
                base_size = _finite_log2(base)
                if base_size is not None and abs(base_size) * 2.0**exp_size > 2e6:
                    raise Unsupported("power too large")
    elif isinstance(expr, (sympy.factorial, sympy.binomial)):
        n = expr.args[0]
        size = _finite_log2(n) if n.is_number else None
        if size is not None and size > 14:
            raise Unsupported("factorial too large")


def _evaluate(text: str) -> sympy.Expr:
    expr = latex_to_sympy(text)
    _check_magnitude(expr)
    try:
        return expr.doit()
    except (TypeError, ValueError, ZeroDivisionError, AttributeError, RecursionError) as e:
        raise Unsupported(f"cannot evaluate: {e}") from e


def _terminating(value: sympy.Expr) -> bool:
    """Whether ``value`` is a rational number with a finite decimal expansion."""
    if not value.is_Rational:
        return False
    q = int(value.q)
    for p in (2, 5):
        while q % p == 0:
            q //= p
    return q == 1


def _close(a: complex, b: complex, rel: float) -> bool:
    """Relative closeness; against an exact zero, closeness to 1e-25 (rounding noise)."""
    if a == 0 or b == 0:
        return abs(a - b) <= 1e-25
    return abs(a - b) <= rel * max(abs(a), abs(b))


_PRECISION = 30


def _numeric(expr: sympy.Expr, subs: dict[sympy.Symbol, sympy.Rational]) -> complex | None:
    try:
        value = complex(expr.evalf(_PRECISION, subs=subs))
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None
    if not (math.isfinite(value.real) and math.isfinite(value.imag)):
        return None
    return value


def expressions_equal(prediction: str, gold: str, *, tolerant: bool = False) -> bool:
    r"""Whether two LaTeX expressions are mathematically equal.

    Constants are compared by 30-digit evaluation of their difference; expressions with free
    symbols by evaluation at random rational points (falling back to ``simplify``).

    Args:
        prediction: The model's expression.
        gold: The reference expression.
        tolerant: Accept a relative error up to 1e-6 when the gold value has no finite
            decimal expansion (e.g. a rounded decimal for ``\sqrt{2}`` or ``1/3``).

    Returns:
        Whether they are equal.

    Raises:
        Unsupported: If either side cannot be parsed or is unsafe to evaluate.
    """
    a, b = _evaluate(prediction), _evaluate(gold)
    if a == b:
        return True
    symbols = sorted(a.free_symbols | b.free_symbols, key=str)
    if not symbols:
        va, vb = _numeric(a, {}), _numeric(b, {})
        if va is None or vb is None:
            if va is None and vb is None and (a.has(sympy.oo, sympy.zoo) or b.has(sympy.oo)):
                return bool(a == b)
            try:
                return bool(sympy.simplify(a - b) == 0)
            except Exception:  # sympy raises many types on odd input
                return False
        if a.is_Rational and b.is_Rational:
            exact = bool(a == b)  # exact arithmetic settles it (1e100 + 1 is not 1e100)
        else:
            # evalf of the difference raises its working precision through cancellation.
            difference = _numeric(a - b, {})
            scale = max(abs(va), abs(vb))
            exact = difference is not None and (
                abs(difference) <= 1e-25 * scale if scale else abs(difference) <= 1e-25
            )
        if exact:
            return True
        return bool(tolerant and not _terminating(b) and _close(va, vb, 1e-6))
    return _agree_at_random_points(a, b, symbols)


def _agree_at_random_points(a: sympy.Expr, b: sympy.Expr, symbols: list[Any]) -> bool:
    rng = random.Random(0)  # deterministic verdicts
    agreed = 0
    for _ in range(8):
        subs = {s: sympy.Rational(rng.randint(7, 300), rng.randint(11, 97)) for s in symbols}
        va, vb = _numeric(a, subs), _numeric(b, subs)
        if va is None or vb is None:
            continue
        if not _close(va, vb, 1e-15):
            return False
        agreed += 1
        if agreed >= 3:
            return True
    try:
        return bool(sympy.simplify(a - b) == 0)
    except Exception:  # sympy raises many types on odd input
        return False


def equations_equal(lhs1: str, rhs1: str, lhs2: str, rhs2: str) -> bool:
    """Whether ``lhs1 = rhs1`` and ``lhs2 = rhs2`` describe the same relation.

    True when ``lhs1 - rhs1`` is a nonzero constant multiple of ``lhs2 - rhs2``.

    Raises:
        Unsupported: If a side cannot be parsed or is unsafe to evaluate.
    """
    d1 = _evaluate(lhs1) - _evaluate(rhs1)
    d2 = _evaluate(lhs2) - _evaluate(rhs2)
    symbols = sorted(d1.free_symbols | d2.free_symbols, key=str)
    if not symbols:
        return False
    rng = random.Random(1)
    ratio: complex | None = None
    agreed = 0
    for _ in range(10):
        subs = {s: sympy.Rational(rng.randint(7, 300), rng.randint(11, 97)) for s in symbols}
        v1, v2 = _numeric(d1, subs), _numeric(d2, subs)
        if v1 is None or v2 is None or abs(v2) < 1e-12 or abs(v1) < 1e-12:
            continue
        r = v1 / v2
        if ratio is None:
            ratio = r
        elif not _close(r, ratio, 1e-12):
            return False
        agreed += 1
        if agreed >= 3:
            return True
    return False


def handle(request: dict[str, Any]) -> dict[str, Any]:
    """Answer one request.

    Requests: ``{"op": "expr", "a", "b", "tolerant"}`` (:func:`expressions_equal`),
    ``{"op": "eq", "sides": [l1, r1, l2, r2]}`` (:func:`equations_equal`), ``{"op": "ping"}``
    and ``{"op": "busy", "seconds": s}`` (computes for ``s`` seconds without yielding: a
    diagnostic that lets tests check the caller's time bound on a runaway computation).
    """
    try:
        if request["op"] == "expr":
            tolerant = bool(request.get("tolerant", False))
            ok = expressions_equal(request["a"], request["b"], tolerant=tolerant)
        elif request["op"] == "eq":
            ok = equations_equal(*request["sides"])
        elif request["op"] == "ping":
            ok = True
        elif request["op"] == "busy":
            end = time.monotonic() + float(request.get("seconds", 1.0))
            while time.monotonic() < end:
                pass
            ok = True
        else:
            return {"error": f"unknown op {request['op']!r}"}
        return {"equal": bool(ok)}
    except Unsupported as e:
        return {"error": f"unsupported: {e}"}
    except RecursionError:
        return {"error": "unsupported: too deep"}
    except Exception as e:  # the worker must survive anything sympy raises
        return {"error": f"{type(e).__name__}: {e}"[:300]}


def serve() -> None:
    """Worker loop: one JSON request per stdin line, one JSON answer per stdout line."""
    try:
        import resource

        # A memory bomb must not take the machine down with it: cap the worker's address space.
        limit = 4 * 1024**3
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass
    if hasattr(sys, "set_int_max_str_digits"):  # Python >= 3.10.7
        sys.set_int_max_str_digits(5000)
    handle({"op": "expr", "a": "\\frac{1}{2}+x", "b": "x+0.5"})  # warm sympy's caches
    out = sys.stdout
    out.write('{"ready": true}\n')
    out.flush()
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            reply: dict[str, Any] = {"error": "bad request"}
        else:
            reply = handle(request)
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    serve()
