r"""Procedural math problems with exact answers: the offline default task source of Math-v1.

Each family is a module-level function ``(rng, difficulty) -> task`` where ``rng`` is a
``numpy`` generator and ``difficulty`` an int from 1 (one-step, small numbers) to 5 (several
steps, bigger numbers, irrational or rational answers). Every answer is computed exactly with
sympy (or exact integer arithmetic) and written in LaTeX (``sympy.latex``), so it is the gold
string the grader compares against. A task is ``{"problem", "answer", "family", "difficulty"}``;
:func:`procedural_tasks` wraps them in a :class:`~rllm_envs.tasks.ProceduralTasks` whose task
``i`` is a pure function of ``(seed, i, difficulty, families)``.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable, Sequence
from functools import cache, lru_cache, partial
from math import comb, factorial, gcd, isqrt, perm

import numpy as np
import sympy

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.tasks import Mixture, ProceduralTasks, Task, check_difficulty

__all__ = [
    "FAMILIES",
    "DIFFICULTIES",
    "answer_in_problem",
    "family_task",
    "generate_task",
    "procedural_tasks",
]

DIFFICULTIES = (1, 2, 3, 4, 5)
_X, _Y, _Z = sympy.symbols("x y z")


def _int(rng: np.random.Generator, low: int, high: int, *, nonzero: bool = False) -> int:
    """A uniform int in ``[low, high]`` (inclusive), optionally never 0."""
    while True:
        value = int(rng.integers(low, high + 1))
        if value != 0 or not nonzero:
            return value


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _tex(value: sympy.Basic | int) -> str:
    if isinstance(value, int):
        return str(value)  # what sympy.latex writes for an int, without the printer's cost
    return _latex(sympy.nsimplify(value) if isinstance(value, float) else value)


# sympy's printer costs about a millisecond a call, and the evaluation universe draws about a
# hundred candidates for each task it keeps (an eighth of the draws are of its universe, and
# answers are balanced): the printed forms are kept by the small integers that make them, so
# each is printed once per process, exactly as sympy prints it.
@lru_cache(maxsize=1 << 16)
def _latex(value: sympy.Basic) -> str:
    return sympy.latex(value)


@lru_cache(maxsize=1 << 16)
def _linear_tex(coefficients: tuple[int, ...], variables: str = "x") -> str:
    """LaTeX of ``c1 v1 + c2 v2 + ... + c0`` (a coefficient per letter of ``variables``)."""
    terms = [*sympy.symbols(list(variables)), sympy.Integer(1)]
    return sympy.latex(sum(c * t for c, t in zip(coefficients, terms, strict=True)))


@lru_cache(maxsize=1 << 16)
def _quadratic_tex(c2: int, c1: int, c0: int) -> str:
    """LaTeX of ``c2 x^2 + c1 x + c0``."""
    return sympy.latex(c2 * _X**2 + c1 * _X + c0)


def _task(problem: str, answer: sympy.Basic | int | str, family: str, difficulty: int) -> Task:
    text = answer if isinstance(answer, str) else _tex(answer)
    return {"problem": problem, "answer": text, "family": family, "difficulty": difficulty}


# ---------------------------------------------------------------------------------- families


def arithmetic(rng: np.random.Generator, difficulty: int) -> Task:
    """Integer arithmetic with precedence (and parentheses from difficulty 3)."""
    terms = 1 + difficulty
    bound = 10 * difficulty**2
    numbers = [_int(rng, 1, bound) for _ in range(terms + 1)]
    ops = [str(rng.choice(["+", "-", "*"])) for _ in range(terms)]
    py, tex = str(numbers[0]), str(numbers[0])
    for op, n in zip(ops, numbers[1:], strict=True):
        py += f" {op} {n}"
        shown_op = "\\times" if op == "*" else op
        tex += f" {shown_op} {n}"
        if difficulty >= 3 and rng.random() < 0.3:
            py, tex = f"({py})", f"({tex})"
    return _task(
        f"Compute ${tex}$.", _evaluate(ast.parse(py, mode="eval").body), "arithmetic", difficulty
    )


def _evaluate(node: ast.expr) -> int:
    """The exact value of an expression of ints, ``+``, ``-``, ``*`` and parentheses."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError(f"Unexpected arithmetic expression: {ast.dump(node)}")


_OPS: dict[type, Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}


def fractions(rng: np.random.Generator, difficulty: int) -> Task:
    """Add, subtract, multiply or divide fractions; the answer in lowest terms."""
    bound = 3 + 3 * difficulty
    # Numerators to 9 from the start: with fewer, the pairs of fractions are too few for each
    # universe to keep 20 questions whose numbers are its own.
    top = max(9, bound)
    count = 2 if difficulty < 4 else 3
    values = [
        sympy.Rational(_int(rng, -top, top, nonzero=True), _int(rng, 2, bound))
        for _ in range(count)
    ]
    ops = [str(rng.choice(["+", "-", "\\times", "\\div"])) for _ in range(count - 1)]
    result = values[0]
    tex = sympy.latex(values[0])
    for i, (op, v) in enumerate(zip(ops, values[1:], strict=True)):
        if i > 0:  # evaluated left to right: make that order explicit
            tex = f"\\left({tex}\\right)"
        shown = sympy.latex(v)
        shown = f"\\left({shown}\\right)" if v < 0 else shown
        tex += f" {op} {shown}"
        if op == "+":
            result = result + v
        elif op == "-":
            result = result - v
        elif op == "\\times":
            result = result * v
        else:
            result = result / v
    problem = f"Compute ${tex}$. Give the answer as a fraction in lowest terms."
    return _task(problem, result, "fractions", difficulty)


def linear_equation(rng: np.random.Generator, difficulty: int) -> Task:
    """Solve ``a x + b = c x + d`` (integer solution up to difficulty 2, rational beyond)."""
    bound = 5 * difficulty
    a = _int(rng, -bound, bound, nonzero=True)
    c = _int(rng, -bound, bound)
    while c == a:
        c = _int(rng, -bound, bound)
    b = _int(rng, -4 * bound, 4 * bound)
    if difficulty <= 2:
        x0: sympy.Rational = sympy.Integer(_int(rng, -bound, bound))
        d = (a - c) * x0 + b
    else:
        d = sympy.Integer(_int(rng, -4 * bound, 4 * bound))
        x0 = sympy.Rational(d - b, a - c)
    # sympy.latex(Eq(a x + b, c x + d, evaluate=False)): each side, then " = ".
    problem = f"Solve for $x$: ${_linear_tex((a, b))} = {_linear_tex((c, int(d)))}$."
    return _task(problem, x0, "linear_equation", difficulty)


def quadratic_equation(rng: np.random.Generator, difficulty: int) -> Task:
    """Real roots of a quadratic: integer, rational (d3) or irrational (d4+) roots."""
    bound = 3 + 2 * difficulty
    # Roots are built exactly and the polynomial from them (faster than sympy.solve).
    right = "0"
    if difficulty <= 2:
        r1, r2 = _int(rng, -bound, bound), _int(rng, -bound, bound)
        # A linear term on both sides (collected in one step, as in linear_equation): the
        # integer root pairs are few, and questions that differ only in them would leave each
        # universe too few to hold out.
        k = _int(rng, -bound, bound, nonzero=True)
        m = _int(rng, -2 * bound, 2 * bound)
        right = _linear_tex((k, m))
        # (x - r1)(x - r2) + k x + m, expanded
        poly = _quadratic_tex(1, k - r1 - r2, r1 * r2 + m)
        answer = ", ".join(str(r) for r in sorted({r1, r2}))
    elif difficulty == 3:
        p, q = _int(rng, 2, 4), _int(rng, -bound, bound, nonzero=True)
        r = _int(rng, -bound, bound)
        poly = _quadratic_tex(p, -(p * r + q), q * r)  # (p x - q)(x - r), expanded
        roots = sorted({sympy.Rational(q, p), sympy.Integer(r)}, key=float)
        answer = ", ".join(_latex(root) for root in roots)
    else:
        while True:
            b, c = _int(rng, -bound, bound), _int(rng, -bound, bound)
            disc = b * b - 4 * c
            if disc > 0 and isqrt(disc) ** 2 != disc:  # an irrational square root
                break
        poly = _quadratic_tex(1, b, c)
        answer = _irrational_roots_tex(b, disc)
    problem = (
        f"Find all real solutions of ${poly} = {right}$. "
        "If there is more than one, list them separated by commas."
    )
    return _task(problem, answer, "quadratic_equation", difficulty)


@lru_cache(maxsize=1 << 12)
def _irrational_roots_tex(b: int, disc: int) -> str:
    """The roots ``(-b -+ sqrt(disc)) / 2``, ascending, in LaTeX, separated by commas."""
    roots = ((-b - sympy.sqrt(disc)) / 2, (-b + sympy.sqrt(disc)) / 2)
    return ", ".join(sympy.latex(r) for r in roots)


def _determinant(matrix: list[list[int]]) -> int:
    """The determinant of a small integer matrix (Laplace expansion along the first row)."""
    if len(matrix) == 1:
        return matrix[0][0]
    return sum(
        (-1) ** j * top * _determinant([row[:j] + row[j + 1 :] for row in matrix[1:]])
        for j, top in enumerate(matrix[0])
    )


def linear_system(rng: np.random.Generator, difficulty: int) -> Task:
    """A 2x2 (3x3 from difficulty 4) linear system with an integer solution."""
    size = 2 if difficulty <= 3 else 3
    names = "xyz"[:size]
    bound = 3 + difficulty
    solution = [_int(rng, -bound, bound) for _ in range(size)]
    while True:
        matrix = [[_int(rng, -bound, bound) for _ in range(size)] for _ in range(size)]
        if _determinant(matrix) != 0:
            break
    rhs = [sum(a * v for a, v in zip(row, solution, strict=True)) for row in matrix]
    # sympy.latex(Eq(row . names, rhs)): the left side, then " = " and the integer.
    lines = [
        f"{_linear_tex((*row, 0), names)} = {value}" for row, value in zip(matrix, rhs, strict=True)
    ]
    tuple_names = ", ".join(names)
    problem = (
        "Solve the system of equations\n"
        + "\n".join(f"${line}$" for line in lines)
        + f"\nGive the answer as an ordered tuple $({tuple_names})$."
    )
    answer = "(" + ", ".join(str(v) for v in solution) + ")"
    return _task(problem, answer, "linear_system", difficulty)


def number_theory(rng: np.random.Generator, difficulty: int) -> Task:
    """Modular powers, gcd/lcm, divisor counts and sums, modular inverses.

    Every kind spreads its answers over many values at every difficulty, so no small integer
    (which several kinds answer with) is a common answer of the family: a remainder of 0 or 1
    (read off without computing: the modulus divides the base, or Fermat) is drawn again, and a
    divisor count is drawn first, evenly among those of numbers in range, then a number with
    it (divisor counts of uniform numbers are mostly 2, 4 and 8).
    """
    kind = int(rng.integers(5))
    scale = 10**difficulty
    if kind == 0:
        while True:
            base, exp, mod = _int(rng, 2, 50), _int(rng, 10, 10 * scale), _int(rng, 11, 97)
            answer: int = pow(base, exp, mod)
            if answer > 1:
                break
        problem = f"What is the remainder when ${base}^{{{exp}}}$ is divided by ${mod}$?"
    elif kind == 1:
        g = _int(rng, 2, 10 * difficulty + 10)
        a, b = g * _int(rng, 2, 3 * scale // 10 + 5), g * _int(rng, 2, 3 * scale // 10 + 5)
        if rng.random() < 0.5:
            problem, answer = f"Find the greatest common divisor of ${a}$ and ${b}$.", gcd(a, b)
        else:
            problem = f"Find the least common multiple of ${a}$ and ${b}$."
            answer = a * b // gcd(a, b)
    elif kind == 2:
        n, answer = _with_divisor_count(rng, 12, 36 * 10 ** max(difficulty, 2))
        problem = f"How many positive divisors does ${n}$ have?"
    elif kind == 3:
        n = _int(rng, 12, 20 * scale)
        problem = f"What is the sum of all positive divisors of ${n}$?"
        answer = int(sympy.divisor_sigma(n))
    else:
        mod = int(sympy.prime(_int(rng, 5, 15 + 5 * difficulty)))
        a = _int(rng, 2, mod - 1)
        problem = (
            f"Find the integer $n$ with $0 \\le n < {mod}$ such that "
            f"${a} n \\equiv 1 \\pmod{{{mod}}}$."
        )
        answer = pow(a, -1, mod)
    return _task(problem, answer, "number_theory", difficulty)


#: Numbers with one divisor count that weigh fully when a count is drawn: a count of fewer
#: numbers weighs less, so no single question is a large share of the kind (one of a universe's
#: questions must stay a small share of that universe's tasks).
_NUMBERS_PER_COUNT = 16


@lru_cache(maxsize=8)
def _numbers_by_divisor_count(low: int, high: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The divisor counts of ``[low, high]``, their cumulative weights and numbers by count.

    Returns ``(counts, cumulative, numbers)``: ``numbers[count]`` holds the numbers with that
    many divisors (``numbers`` is a ``dict``, returned as an object array).
    """
    tau = np.zeros(high + 1, dtype=np.int32)
    for d in range(1, isqrt(high) + 1):  # each divisor d < sqrt(m) pairs with m / d
        tau[d * d] += 1
        tau[d * (d + 1) :: d] += 2
    order = np.argsort(tau[low:], kind="stable") + low
    counts, starts, sizes = np.unique(tau[order], return_index=True, return_counts=True)
    weights = np.minimum(sizes, _NUMBERS_PER_COUNT)
    numbers = np.empty(len(counts), dtype=object)
    for j, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        numbers[j] = order[start : start + size].astype(np.int64)
    return counts, np.cumsum(weights) / weights.sum(), numbers


def _with_divisor_count(rng: np.random.Generator, low: int, high: int) -> tuple[int, int]:
    """A number in ``[low, high]`` and its divisor count, the count drawn first.

    Each count weighs ``min(numbers with it, _NUMBERS_PER_COUNT)``: the counts spread evenly
    (uniform numbers have mostly 2, 4 or 8 divisors), and a count that few numbers have is
    drawn less, so each of its questions stays rare too.
    """
    counts, cumulative, numbers = _numbers_by_divisor_count(low, high)
    j = min(int(np.searchsorted(cumulative, rng.random(), side="right")), len(counts) - 1)
    choices = numbers[j]
    return int(choices[int(rng.integers(len(choices)))]), int(counts[j])


_LETTERS = "ABCDEFGHIJKLMNOPRSTUVWY"


def _partitions(n: int, largest: int) -> list[tuple[int, ...]]:
    """The partitions of ``n`` into parts of at most ``largest``, largest part first."""
    if n == 0:
        return [()]
    return [
        (part, *rest)
        for part in range(min(n, largest), 0, -1)
        for rest in _partitions(n - part, part)
    ]


@cache
def _arrangement_counts(difficulty: int) -> tuple[tuple[tuple[int, ...], ...], ...]:
    """Letter counts of the strings whose arrangements are asked, grouped by their answer.

    Four string lengths per difficulty and every count pattern of each length with a repeated
    letter: drawing an answer first, then one of its patterns, keeps every answer rare and
    leaves the length (or any feature short of counting the letters) far from fixing it.
    """
    by_answer: dict[int, list[tuple[int, ...]]] = {}
    for length in range(5 + difficulty, 9 + difficulty):
        for counts in _partitions(length, length - 1):
            if counts[0] >= 2:
                answer = factorial(length)
                for c in counts:
                    answer //= factorial(c)
                by_answer.setdefault(answer, []).append(counts)
    return tuple(tuple(patterns) for _, patterns in sorted(by_answer.items()))


@cache
def _choice_pairs(difficulty: int, ordered: bool) -> tuple[tuple[tuple[int, int], ...], ...]:
    """The ``(n, k)`` of the committees (or, ``ordered``, the prizes), grouped by answer.

    A wide range of ``n`` with ``k`` up to ``2 + difficulty``: drawing an answer first, then
    one of its pairs, keeps every answer rare.
    """
    by_answer: dict[int, list[tuple[int, int]]] = {}
    for n in range(4, 22 + 2 * difficulty):
        for k in range(2, min(n - 1, 2 + difficulty) + 1):
            by_answer.setdefault(perm(n, k) if ordered else comb(n, k), []).append((n, k))
    return tuple(tuple(pairs) for _, pairs in sorted(by_answer.items()))


def combinatorics(rng: np.random.Generator, difficulty: int) -> Task:
    """Choices, arrangements and arrangements of letters with repeats."""
    kind = int(rng.integers(3))
    if kind < 2:
        by_answer = _choice_pairs(difficulty, ordered=kind == 1)
        pairs = by_answer[int(rng.integers(len(by_answer)))]
        n, k = pairs[int(rng.integers(len(pairs)))]
        # The n people are sometimes two groups (n = a + b): more questions of their own for
        # each universe, which holds out questions by their text.
        a = _int(rng, 1, n - 1)
        people = f"{n} people" if rng.random() < 0.5 else f"{a} women and {n - a} men"
    if kind == 0:
        problem = f"In how many ways can a committee of {k} people be chosen from {people}?"
        answer = comb(n, k)
    elif kind == 1:
        contestants = f"{n} contestants" if "men" not in people else f"{people} contestants"
        problem = (
            f"In how many ways can {k} different prizes be awarded to {contestants} if no "
            "contestant may win more than one prize?"
        )
        answer = perm(n, k)
    else:
        # An answer, then one of its letter-count patterns, on letters drawn at random.
        by_count = _arrangement_counts(difficulty)
        patterns = by_count[int(rng.integers(len(by_count)))]
        counts = list(patterns[int(rng.integers(len(patterns)))])
        letters = rng.choice(list(_LETTERS), size=len(counts), replace=False)
        chars = [str(c) for c, m in zip(letters, counts, strict=True) for _ in range(m)]
        word = "".join(chars[int(i)] for i in rng.permutation(len(chars)))
        answer = factorial(len(word))
        for c in counts:
            answer //= factorial(c)
        problem = f"How many distinct arrangements of the letters of {word} are there?"
    return _task(problem, answer, "combinatorics", difficulty)


def sequences(rng: np.random.Generator, difficulty: int) -> Task:
    """Terms and partial sums of arithmetic and geometric sequences."""
    kind = int(rng.integers(4))
    n = _int(rng, 5, 5 + 5 * difficulty)
    if kind < 2:
        a, d = _int(rng, -10 * difficulty, 10 * difficulty), _int(rng, -5, 9, nonzero=True)
        shown = ", ".join(str(a + i * d) for i in range(4))
        if kind == 0:
            problem = (
                f"What is the {_ordinal(n)} term of the arithmetic sequence ${shown}, \\ldots$?"
            )
            answer: int | str = a + (n - 1) * d
        else:
            problem = (
                f"What is the sum of the first {n} terms of the arithmetic sequence "
                f"${shown}, \\ldots$?"
            )
            answer = n * (2 * a + (n - 1) * d) // 2
    else:
        a = _int(rng, 1, 5)
        ratio = (_int(rng, 2, 3), 1) if difficulty < 3 else (1, _int(rng, 2, 3))
        m = min(n, 6 + difficulty)
        shown, term, total = _geometric_tex(a, ratio, m)
        if kind == 2:
            problem = (
                f"What is the {_ordinal(m)} term of the geometric sequence ${shown}, \\ldots$?"
            )
            answer = term
        else:
            problem = (
                f"What is the sum of the first {m} terms of the geometric sequence "
                f"${shown}, \\ldots$?"
            )
            answer = total
    return _task(problem, answer, "sequences", difficulty)


@lru_cache(maxsize=1 << 10)
def _geometric_tex(a: int, ratio: tuple[int, int], m: int) -> tuple[str, str, str]:
    """LaTeX of a geometric sequence's first four terms, its ``m``-th term and partial sum."""
    r = sympy.Rational(*ratio)
    shown = ", ".join(sympy.latex(a * r**i) for i in range(4))
    total = sympy.nsimplify(sum(a * r**i for i in range(m)))
    return shown, sympy.latex(a * r ** (m - 1)), sympy.latex(total)


def geometry(rng: np.random.Generator, difficulty: int) -> Task:
    """Areas, perimeters, hypotenuses, distances and circle measures (exact, with pi/roots)."""
    kind = int(rng.integers(4))
    bound = 4 + 3 * difficulty
    if kind == 0:
        a, b = _int(rng, 1, bound), _int(rng, 1, bound)
        problem = (
            f"A right triangle has legs of length {a} and {b}. How long is its hypotenuse? "
            "Give an exact answer."
        )
        answer: sympy.Basic = sympy.sqrt(a * a + b * b)
    elif kind == 1:
        r = _int(rng, 1, bound)
        if rng.random() < 0.5:
            problem, answer = (
                f"What is the area of a circle of radius {r}? Express it in terms of $\\pi$.",
                r**2 * sympy.pi,
            )
        else:
            problem, answer = (
                f"What is the circumference of a circle of radius {r}? Express it in terms "
                "of $\\pi$.",
                2 * r * sympy.pi,
            )
    elif kind == 2:
        p = [(_int(rng, -bound, bound), _int(rng, -bound, bound)) for _ in range(2)]
        problem = (
            f"What is the distance between the points $({p[0][0]}, {p[0][1]})$ and "
            f"$({p[1][0]}, {p[1][1]})$? Give an exact answer."
        )
        answer = sympy.sqrt((p[0][0] - p[1][0]) ** 2 + (p[0][1] - p[1][1]) ** 2)
    else:
        while True:
            pts = [(_int(rng, -bound, bound), _int(rng, -bound, bound)) for _ in range(3)]
            (x1, y1), (x2, y2), (x3, y3) = pts
            twice = abs(x1 * (y2 - y3) + x2 * (y3 - y1) + x3 * (y1 - y2))
            if twice:
                break
        shown = ", ".join(f"$({x}, {y})$" for x, y in pts)
        problem = f"What is the area of the triangle with vertices {shown}?"
        answer = sympy.Rational(twice, 2)
    return _task(problem, answer, "geometry", difficulty)


_NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hiro", "Ines", "Jamal")


def word_problem(rng: np.random.Generator, difficulty: int) -> Task:
    """Templated word problems (shopping, rates, ages, work sharing)."""
    kind = int(rng.integers(4))
    name = _NAMES[int(rng.integers(len(_NAMES)))]
    scale = difficulty
    if kind == 0:
        price, count = _int(rng, 2, 5 * scale + 3), _int(rng, 2, 4 * scale + 2)
        paid = price * count + _int(rng, 0, 20 * scale)
        problem = (
            f"{name} buys {count} notebooks at {price} dollars each and pays with {paid} "
            f"dollars. How many dollars of change does {name} get?"
        )
        answer: sympy.Basic | int = paid - price * count
    elif kind == 1:
        speed, hours = _int(rng, 20, 20 + 15 * scale), _int(rng, 2, 2 + 2 * scale)
        problem = (
            f"A train travels at {speed} km per hour for {hours} hours and then at "
            f"{speed + 10} km per hour for 1 hour. How many km does it travel in total?"
        )
        answer = speed * hours + speed + 10
    elif kind == 2:
        child, gap, years = _int(rng, 3, 10 + scale), _int(rng, 20, 35), _int(rng, 2, 5 * scale)
        problem = (
            f"{name} is {gap} years older than her daughter, who is {child}. In {years} years, "
            "what will be the sum of their ages?"
        )
        answer = 2 * (child + years) + gap
    else:
        a, b = _int(rng, 2, 4 + 2 * scale), _int(rng, 2, 4 + 2 * scale)
        problem = (
            f"{name} can paint a fence in {a} hours and a friend can paint it in {b} hours. "
            "Working together, how many hours do they need?"
        )
        answer = sympy.Rational(a * b, a + b)
    return _task(problem, answer, "word_problem", difficulty)


#: Family name -> generator ``(rng, difficulty) -> task``.
FAMILIES: dict[str, Callable[[np.random.Generator, int], Task]] = {
    "arithmetic": arithmetic,
    "fractions": fractions,
    "linear_equation": linear_equation,
    "quadratic_equation": quadratic_equation,
    "linear_system": linear_system,
    "number_theory": number_theory,
    "combinatorics": combinatorics,
    "sequences": sequences,
    "geometry": geometry,
    "word_problem": word_problem,
}


_NUMBER = re.compile(r"\d+")
_REGION = re.compile(r"\$([^$]+)\$")
#: Draws of one family before its last problem is kept as it is (never reached in practice).
_MAX_DRAWS = 64


def answer_in_problem(task: Task) -> bool:
    """Whether the answer can be read off the problem without solving it.

    That is: it is one of the problem's numbers (a committee of 3 from 4 people is 4; the gcd
    of 40 and 80 is 40), their sum or their product (``3 + 4 + 5``), or one of its formulas.
    Such a task pays a policy that echoes the problem's numbers, so the generator draws
    another.
    """
    answer, problem = str(task["answer"]).strip(), str(task["problem"])
    if re.fullmatch(r"-?\d+", answer):
        numbers = [int(n) for n in _NUMBER.findall(problem)]
        if abs(int(answer)) in numbers:
            return True
        if len(numbers) >= 2 and int(answer) in (sum(numbers), _product(numbers)):
            return True
        return False
    return any(m.group(1).strip() == answer for m in _REGION.finditer(problem))


def _product(numbers: list[int]) -> int:
    total = 1
    for n in numbers:
        total *= n
        if total > 10**30:
            break  # bigger than any answer here: no need to go on
    return total


def generate_task(
    rng: np.random.Generator, *, difficulty: int = 1, families: Sequence[str] | None = None
) -> Task:
    """One task: a family drawn from ``rng``, then a problem of that family.

    Problems whose answer is written in them (:func:`answer_in_problem`) are drawn again.
    """
    names = tuple(families) if families else tuple(FAMILIES)
    family = names[int(rng.integers(len(names)))]
    return family_task(rng, family=family, difficulty=difficulty)


def family_task(rng: np.random.Generator, *, family: str, difficulty: int = 1) -> Task:
    """One problem of ``family``, drawn again while its answer is written in it."""
    for _ in range(_MAX_DRAWS):
        task = FAMILIES[family](rng, difficulty)
        if not answer_in_problem(task):
            break
    return task


def procedural_tasks(
    *, seed: int = 0, difficulty: int = 1, families: Sequence[str] | None = None
) -> ProceduralTasks:
    """The procedural task source: task ``i`` depends only on ``(seed, i, difficulty)``.

    Args:
        seed: Seed of the task universe.
        difficulty: 1 (easiest) to 5.
        families: Restrict to these family names (default: all of :data:`FAMILIES`).

    Returns:
        A random-access :class:`~rllm_envs.tasks.ProceduralTasks` of task dicts with ``id``,
        ``problem``, ``answer`` (LaTeX), ``family`` and ``difficulty``.

    Raises:
        InvalidEnvConfig: On an unknown difficulty or family.
    """
    difficulty = check_difficulty(difficulty, DIFFICULTIES)
    if families is not None:
        unknown = [f for f in families if f not in FAMILIES]
        if unknown or not families:
            raise InvalidEnvConfig(
                f"Expects `families` to be a non-empty subset of {sorted(FAMILIES)}, "
                f"actual: {list(families)!r}."
            )
    chosen = tuple(families) if families else tuple(FAMILIES)
    # Each family is split into universes and answer-balanced on its own (Mixture): a
    # family's small question space or skewed answers never leak into the others' weights.
    generate = Mixture(
        {f: partial(family_task, family=f, difficulty=difficulty) for f in chosen}, field="family"
    )
    return ProceduralTasks(generate, name=f"math-d{difficulty}", seed=seed, balance=True)
