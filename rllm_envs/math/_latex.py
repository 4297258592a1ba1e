r"""LaTeX math to a Python expression over whitelisted constructors (no sympy import).

The converter behind both comparison engines of the grader: :mod:`rllm_envs.math._numeric`
(in-process, mpmath) and :mod:`rllm_envs.math._symbolic` (sympy, in a worker process). Its
output uses only ``Integer(<digits>)``, ``Rational('<decimal>')``, ``Symbol('<name>')``, the
constants ``pi``, ``E``, ``I``, ``oo``, the functions in :data:`FUNCTION_NAMES` and the
operators ``+ - * / **`` -- so it can be parsed with :mod:`ast` and evaluated safely.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "FUNCTION_NAMES", "Unsupported", "to_python"]

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


#: Function names that can appear in :func:`to_python`'s output.
FUNCTION_NAMES = frozenset(_FUNCTIONS.values()) | {
    "sqrt",
    "root",
    "Abs",
    "factorial",
    "binomial",
    "Integer",
    "Rational",
    "Symbol",
}


_TWO_OPERATORS = re.compile(r"[*/]\s+[*/]")


def to_python(text: str) -> str:
    """Translate LaTeX math to a Python expression string (see the module docstring).

    Raises:
        Unsupported: On notation outside the converter, too long or too deeply nested input.
    """
    if len(text) > MAX_LENGTH:
        raise Unsupported("expression too long")
    # Python's `**` is a power; two operators written apart (`\cdot \cdot`, `* *`, `/ /`)
    # are no expression: sympy's parser would join them into `**` or `//` (att33k: copied
    # arithmetic `(E) \cdot\cdot 1` read as E^1 passed as final and equal).
    code = _Converter(_tokenize(text.replace("**", "^"))).convert()
    if not code:
        raise Unsupported("empty expression")
    if _TWO_OPERATORS.search(code):
        raise Unsupported("two operators in a row")
    return code
