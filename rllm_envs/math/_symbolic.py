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

import json
import math
import random
import re
import sys
from typing import Any

import mpmath
import sympy
from sympy.parsing.sympy_parser import parse_expr

__all__ = ["Unsupported", "latex_to_sympy", "expressions_equal", "equations_equal", "serve"]

#: Deepest bracket nesting the converter follows (deeper input is refused, not recursed into).
MAX_DEPTH = 40
#: Longest expression (characters) the converter accepts.
MAX_LENGTH = 1_000


class Unsupported(ValueError):
    """The input is outside what the converter or the safety checks accept."""


_TOKEN = re.compile(
    r"\s*(\\[a-zA-Z]+|\\.|\d+\.\d*|\.\d+|\d+|[a-zA-Z]|[-+*/^_()\[\]{}!|,'])", re.ASCII
)

_FUNCTIONS = {
    "\\sin": "sin",
    "\\cos": "cos",
    "\\tan": "tan",
    "\\cot": "cot",
    "\\sec": "sec",
    "\\csc": "csc",
    "\\arcsin": "asin",
    "\\arccos": "acos",
    "\\arctan": "atan",
    "\\sinh": "sinh",
    "\\cosh": "cosh",
    "\\tanh": "tanh",
    "\\ln": "log",
    "\\log": "log",
    "\\exp": "exp",
}
_CONSTANTS = {"\\pi": "pi", "\\infty": "oo", "\\infinity": "oo", "\\e": "E"}
_GREEK = {
    "\\alpha",
    "\\beta",
    "\\gamma",
    "\\delta",
    "\\epsilon",
    "\\varepsilon",
    "\\theta",
    "\\lambda",
    "\\mu",
    "\\phi",
    "\\varphi",
    "\\omega",
    "\\sigma",
    "\\tau",
    "\\rho",
    "\\psi",
    "\\xi",
    "\\eta",
    "\\zeta",
    "\\kappa",
    "\\nu",
    "\\chi",
}
_TIMES = {"*", "\\cdot", "\\times", "\\ast"}
_OPEN = {"(": ")", "[": "]", "{": "}"}


def _tokenize(text: str) -> list[str]:
    tokens: list[str] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise Unsupported(f"unexpected character {text[pos]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


class _Converter:
    """Turns LaTeX tokens into a Python expression over whitelisted sympy names."""

    def __init__(self, tokens: list[str]) -> None:
        self.toks = tokens
        self.i = 0
        self.depth = 0

    def peek(self) -> str | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        if self.i >= len(self.toks):
            raise Unsupported("unexpected end of input")
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def expect(self, tok: str) -> None:
        if self.take() != tok:
            raise Unsupported(f"expected {tok!r}")

    def convert(self) -> str:
        out = self.seq(frozenset())
        if self.i != len(self.toks):
            raise Unsupported(f"unbalanced {self.toks[self.i]!r}")
        return out

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Unsupported("nesting too deep")

    def group(self, close: str) -> str:
        self.enter()
        inner = self.seq(frozenset({close}))
        self.expect(close)
        self.depth -= 1
        if not inner:
            raise Unsupported("empty group")
        return f"({inner})"

    def arg(self) -> str:
        """One macro argument: a ``{...}`` group, or a single token (one digit of a number)."""
        tok = self.take()
        if tok == "{":
            return self.group("}")
        if tok[0].isdigit():
            if len(tok) > 1:  # `\frac12` and `x^23` take one digit: push the rest back
                self.toks[self.i - 1 : self.i] = [tok[0], tok[1:]]
            return f"Integer({tok[0]})"
        self.i -= 1
        return self.atom()

    def atom(self) -> str:
        """One operand: a number, a letter, a constant, a group or a macro."""
        tok = self.take()
        if tok[0].isdigit() or tok[0] == ".":
            if "." in tok:
                return f"Rational('{tok}')"
            if len(tok) > 2000:
                raise Unsupported("number too long")
            return f"Integer({tok})"
        if tok.isalpha() and len(tok) == 1:
            return self.variable(tok)
        if tok in _OPEN:
            return self.group(_OPEN[tok])
        if tok == "|":
            self.enter()
            inner = self.seq(frozenset({"|"}))
            self.expect("|")
            self.depth -= 1
            return f"Abs({inner})"
        if tok == "\\{":
            return self.group("\\}")
        if tok in _CONSTANTS:
            return _CONSTANTS[tok]
        if tok in _GREEK:
            return self.variable(tok[1:])
        if tok in ("\\frac", "\\dfrac", "\\tfrac", "\\cfrac"):
            num, den = self.arg(), self.arg()
            return f"(({num})/({den}))"
        if tok in ("\\binom", "\\dbinom", "\\tbinom"):
            n, k = self.arg(), self.arg()
            _check_literal(n)
            return f"binomial({n}, {k})"
        if tok == "\\sqrt":
            if self.peek() == "[":
                self.take()
                index = self.group("]")
                return f"root({self.arg()}, {index})"
            return f"sqrt({self.arg()})"
        if tok in _FUNCTIONS:
            return self.function(_FUNCTIONS[tok], tok)
        if tok in ("\\operatorname", "\\mathrm", "\\text", "\\mathbf"):
            raise Unsupported(f"{tok} in an expression")
        raise Unsupported(f"unsupported token {tok!r}")

    def variable(self, name: str) -> str:
        if name == "e":
            return "E"
        if name == "i":
            return "I"
        if self.peek() == "_":
            self.take()
            sub = self.take()
            if sub == "{":
                parts = []
                while self.peek() not in ("}", None):
                    parts.append(self.take())
                self.expect("}")
                sub = "".join(parts)
            if not re.fullmatch(r"[A-Za-z0-9]{1,8}", sub):
                raise Unsupported("unsupported subscript")
            name = f"{name}_{sub}"
        return f"Symbol('{name}')"

    def function(self, name: str, tok: str) -> str:
        power = base = None
        for _ in range(2):
            if self.peek() == "^":
                self.take()
                power = self.arg()
            elif self.peek() == "_" and tok == "\\log":
                self.take()
                base = self.arg()
        if self.peek() is None:
            raise Unsupported("function without argument")
        argument = self.atom()
        if self.peek() == "^" and not argument.startswith("("):  # `\sin x^2` is sin(x^2)
            self.take()
            argument = f"({argument})**({self.arg()})"
        call = f"{name}({argument}, {base})" if base else f"{name}({argument})"
        return f"({call})**({power})" if power else call

    def seq(self, closers: frozenset[str]) -> str:
        out: list[str] = []
        prev_operand = False
        while True:
            tok = self.peek()
            if tok is None or tok in closers:
                break
            if tok in ("+", "-"):
                self.take()
                out.append(tok)
                prev_operand = False
            elif tok in _TIMES:
                self.take()
                out.append("*")
                prev_operand = False
            elif tok in ("/", "\\div"):
                self.take()
                out.append("/")
                prev_operand = False
            elif tok == "^":
                self.take()
                if not prev_operand:
                    raise Unsupported("exponent without base")
                nxt = self.peek()
                # `2^10` means 2^{10} to every reader, though TeX would typeset 2^{1}0.
                power = self.atom() if nxt is not None and nxt.isdigit() else self.arg()
                out[-1] = f"({out[-1]})**({power})"
            elif tok == "!":
                self.take()
                if not prev_operand:
                    raise Unsupported("factorial without operand")
                _check_literal(out[-1])
                out[-1] = f"factorial({out[-1]})"
            elif tok == "'":
                raise Unsupported("prime notation")
            elif tok == ",":
                raise Unsupported("comma inside an expression")
            else:
                operand = self.atom()
                if prev_operand:
                    out.append("*")
                out.append(operand)
                prev_operand = True
        return " ".join(out)


def _check_literal(code: str) -> None:
    """Refuse a factorial or binomial of a literal so big that sympy would compute it for long."""
    m = re.fullmatch(r"\(*Integer\((\d+)\)\)*", code)
    if m and len(m.group(1)) > 4:
        raise Unsupported("factorial too large")


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
    if len(text) > MAX_LENGTH:
        raise Unsupported("expression too long")
    code = _Converter(_tokenize(text)).convert()
    if not code:
        raise Unsupported("empty expression")
    try:
        expr = parse_expr(code, evaluate=False)
    except (SyntaxError, TypeError, ValueError, AttributeError) as e:
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
    return abs(a - b) <= rel * max(1.0, abs(b))


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
        if _close(va, vb, 1e-20):
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
    """Answer one request: ``{"op": "expr", "a", "b", "tolerant"}`` or ``{"op": "eq", ...}``."""
    try:
        if request["op"] == "expr":
            tolerant = bool(request.get("tolerant", False))
            ok = expressions_equal(request["a"], request["b"], tolerant=tolerant)
        elif request["op"] == "eq":
            ok = equations_equal(*request["sides"])
        elif request["op"] == "ping":
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
