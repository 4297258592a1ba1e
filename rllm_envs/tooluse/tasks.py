"""Procedural tool-use tasks, their scripted tool plans and their scorer (no Gymnasium import).

Each family builds, from a ``numpy`` generator and a difficulty (1-5), a task that needs tools:
its question, the task-specific tools (plain data, so records round-trip through JSON), the
reference answer, and a **plan** -- the tool calls an expert makes, turn by turn, ending with
``final_answer``. The plan goes through the real tools: tests run it and check that the tools'
outputs lead to the reference answer.

Families:

* ``lookup`` -- a product catalogue behind a ``get_product`` tool; the total price of an order
  (``difficulty`` products, then the calculator).
* ``units`` -- exact unit conversion with ``convert_units``; at higher difficulty a sum of
  quantities in mixed units (then the calculator).
* ``dates`` -- date arithmetic with ``date_add``, ``weekday`` and ``days_between``.
* ``chain`` -- a company directory behind ``get_employee`` and ``get_department``; follow
  ``difficulty + 1`` links (manager of the manager of ..., then the department's city).
* ``arith`` -- exact arithmetic that is tedious by hand (modular powers, binomials, harmonic
  sums, lcm, big products), solved with the calculator or Python; graded by the math grader.
* ``program`` -- counting and iteration (inclusion-exclusion counts, digit sums of powers,
  prime counts, Fibonacci residues, Collatz lengths) sized beyond a calculator: the plan
  runs a short program with the sandboxed ``python`` tool. Not in :data:`DEFAULT_FAMILIES`.

Task fields: ``family``, ``difficulty``, ``question``, ``answer`` (str), ``answer_type``
(``"math"``, ``"date"`` or ``"text"``), ``tools`` (built-in tool names), ``tables`` (specs for
:func:`rllm_envs.tools.builtin.table_tool`) and ``plan`` (list of turns, each a list of
``{"name", "arguments"}`` calls).
"""

from __future__ import annotations

import datetime as dt
import math
import re
import unicodedata
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from rllm_envs.tools.builtin import UNITS

__all__ = [
    "FAMILIES",
    "DEFAULT_FAMILIES",
    "generate",
    "family_task",
    "score",
    "score_answer",
    "answers_match",
    "MAX_DIFFICULTY",
]

MAX_DIFFICULTY = 5
Task = dict[str, Any]
Call = dict[str, Any]

_ONSETS = ["b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "kr", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou"]
_CODAS = ["", "", "n", "r", "l", "s", "x", "th"]


def _word(rng: np.random.Generator, syllables: int) -> str:
    parts = []
    for _ in range(syllables):
        parts.append(
            _ONSETS[rng.integers(len(_ONSETS))]
            + _VOWELS[rng.integers(len(_VOWELS))]
            + _CODAS[rng.integers(len(_CODAS))]
        )
    return "".join(parts).capitalize()


def _unique_names(rng: np.random.Generator, n: int, make: Callable[[], str]) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        name = make()
        if name.lower() not in seen:
            seen.add(name.lower())
            names.append(name)
    return names


def _call(tool: str, **arguments: Any) -> Call:
    return {"name": tool, "arguments": arguments}


def _decimal(value: Fraction) -> str:
    """Exact decimal text of a terminating fraction (every value here terminates)."""
    if value.denominator == 1:
        return str(value.numerator)
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
    scaled = abs(value.numerator * 10**places // value.denominator)
    digits = str(scaled).rjust(places + 1, "0")
    text = f"{digits[:-places]}.{digits[-places:]}".rstrip("0").rstrip(".")
    return ("-" if value < 0 else "") + text


# ------------------------------------------------------------------------------ lookup

_PRODUCT_NOUNS = ["Lamp", "Kettle", "Drone", "Backpack", "Clock", "Speaker", "Blender", "Tent"]


def _lookup(rng: np.random.Generator, difficulty: int) -> Task:
    n_products = 6 + 2 * difficulty
    names = _unique_names(
        rng, n_products, lambda: f"{_word(rng, 2)} {_PRODUCT_NOUNS[rng.integers(8)]}"
    )
    rows: list[dict[str, Any]] = []
    for name in names:
        cents = int(rng.integers(199, 25000))
        rows.append(
            {
                "name": name,
                "price_usd": f"{cents // 100}.{cents % 100:02d}",
                "in_stock": int(rng.integers(0, 60)),
                "sku": f"SKU-{int(rng.integers(10000, 99999))}",
            }
        )
    order_size = min(difficulty, n_products)
    picked = [int(i) for i in rng.choice(n_products, size=order_size, replace=False)]
    quantities = [int(rng.integers(1, 10)) for _ in picked]
    items = [(rows[i], q) for i, q in zip(picked, quantities, strict=True)]
    total = sum((Fraction(r["price_usd"]) * q for r, q in items), Fraction(0))
    order = ", ".join(f"{q} x {r['name']}" for r, q in items)
    expression = " + ".join(f"{q} * {r['price_usd']}" for r, q in items)
    return {
        "question": (
            f"A customer orders {order}. Using the product catalogue (tool `get_product`), what "
            "is the total price of the order in US dollars? Answer with the number only (no "
            "currency sign)."
        ),
        "answer": _decimal(total),  # graded as a number: 12.5 and 12.50 both count
        "answer_type": "math",
        "tools": ["calculator"],
        "tables": [
            {
                "name": "get_product",
                "description": "Look up a product of the catalogue by its exact name; returns "
                "its price in US dollars, stock and SKU as JSON.",
                "key": "name",
                "key_description": "The product's exact name, as the task writes it.",
                "rows": rows,
            }
        ],
        "plan": [
            [_call("get_product", name=r["name"]) for r, _ in items],
            [_call("calculator", expression=expression)],
        ],
    }


# ------------------------------------------------------------------------------- units

_UNIT_CHOICES = {
    "length": (["inch", "foot", "yard", "mile", "cm", "mm"], ["m", "km", "cm"]),
    "mass": (["pound", "ounce", "g", "mg"], ["kg", "g"]),
    "volume": (["us_gallon", "ml", "cubic_meter"], ["liter", "ml"]),
    "time": (["minute", "hour", "day", "week"], ["second", "minute"]),
}
_THINGS = {
    "length": "cables laid end to end",
    "mass": "parcels on a scale",
    "volume": "containers of water",
    "time": "work sessions",
}


def _units(rng: np.random.Generator, difficulty: int) -> Task:
    dims = list(_UNIT_CHOICES)
    dim = dims[rng.integers(len(dims))]
    sources, targets = _UNIT_CHOICES[dim]
    target = targets[rng.integers(len(targets))]
    n = 1 if difficulty == 1 else min(difficulty, 4)
    quantities = []
    for _ in range(n):
        unit = sources[rng.integers(len(sources))]
        if n == 1 and unit == target:
            # `Convert 6 minute to minute` would be answered by echoing its number.
            unit = next(u for u in sources if u != target)
        halves = int(rng.integers(2, 40 * difficulty))
        quantities.append((Fraction(halves, 2), unit))
    converted = [q * UNITS[u][1] / UNITS[target][1] for q, u in quantities]
    total = sum(converted, Fraction(0))
    listed = ", ".join(f"{_decimal(q)} {u}" for q, u in quantities)
    if n == 1:
        question = f"Convert {listed} to {target}."
    else:
        question = f"Some {_THINGS[dim]} measure {listed}. What is their total in {target}?"
    plan: list[list[Call]] = [
        [
            _call("convert_units", value=_decimal(q), from_unit=u, to_unit=target)
            for q, u in quantities
        ]
    ]
    if n > 1:
        plan.append([_call("calculator", expression=" + ".join(_decimal(c) for c in converted))])
    return {
        "question": question + " Give the exact decimal value (no rounding), number only.",
        "answer": _decimal(total),
        "answer_type": "math",
        "tools": ["convert_units", "calculator"],
        "tables": [],
        "plan": plan,
    }


# ------------------------------------------------------------------------------- dates


def _dates(rng: np.random.Generator, difficulty: int) -> Task:
    start = dt.date(2000, 1, 1) + dt.timedelta(days=int(rng.integers(0, 365 * 60)))
    days = int(rng.integers(10, 100 * difficulty + 100))
    end = start + dt.timedelta(days=days)
    add = _call("date_add", date=start.isoformat(), days=days)
    event = ["a shipment", "a festival", "a contract", "a voyage", "a trial"][rng.integers(5)]
    if difficulty == 1:
        return {
            "question": f"{event.capitalize()} starts on {start.isoformat()} and lasts {days} "
            "days. On what date does it end (the start date plus the number of days)? Answer "
            "as YYYY-MM-DD.",
            "answer": end.isoformat(),
            "answer_type": "date",
            "tools": ["date_add", "days_between", "weekday"],
            "tables": [],
            "plan": [[add]],
        }
    if difficulty == 2:
        return {
            "question": f"{event.capitalize()} starts on {start.isoformat()} and lasts {days} "
            "days. On which day of the week does it end (the start date plus the number of "
            "days)? Answer with the English name of the weekday.",
            "answer": end.strftime("%A"),
            "answer_type": "text",
            "tools": ["date_add", "days_between", "weekday"],
            "tables": [],
            "plan": [[add], [_call("weekday", date=end.isoformat())]],
        }
    # Harder: several phases back to back, then the distance to a deadline.
    phases = [int(rng.integers(5, 30 * difficulty)) for _ in range(difficulty - 1)]
    deadline = start + dt.timedelta(days=int(rng.integers(sum(phases) + 1, sum(phases) + 400)))
    plan = []
    current = start
    for length in phases:
        plan.append([_call("date_add", date=current.isoformat(), days=length)])
        current += dt.timedelta(days=length)
    plan.append([_call("days_between", start=current.isoformat(), end=deadline.isoformat())])
    listed = ", ".join(f"{p} days" for p in phases)
    return {
        "question": f"{event.capitalize()} begins on {start.isoformat()} with phases of "
        f"{listed}, each starting the day the previous one ends (add each phase's days to its "
        f"start date). How many days are there from the end of the last phase until the "
        f"deadline on {deadline.isoformat()}? Answer with the number only.",
        "answer": str((deadline - current).days),
        "answer_type": "math",
        "tools": ["date_add", "days_between", "weekday"],
        "tables": [],
        "plan": plan,
    }


# ------------------------------------------------------------------------------- chain

_ROLES = ["Engineer", "Analyst", "Designer", "Manager", "Director", "Technician", "Counsel"]
_DEPT_WORDS = ["Research", "Logistics", "Finance", "Outreach", "Foundry", "Archives", "Design"]


def _chain(rng: np.random.Generator, difficulty: int) -> Task:
    hops = difficulty + 1
    n_people = 8 + 4 * difficulty
    people = _unique_names(rng, n_people, lambda: f"{_word(rng, 2)} {_word(rng, 2)}")
    n_depts = 4 + difficulty
    dept_names = _unique_names(
        rng, n_depts, lambda: f"{_DEPT_WORDS[rng.integers(len(_DEPT_WORDS))]} {_word(rng, 1)}"
    )
    cities = _unique_names(rng, n_depts, lambda: _word(rng, 3))
    # A management chain long enough for the question, the rest report into it at random.
    order = [int(i) for i in rng.permutation(n_people)]
    manager: dict[int, int | None] = {order[0]: None}
    for pos, person in enumerate(order[1:], start=1):
        manager[person] = order[pos - 1] if pos <= hops else order[int(rng.integers(pos))]
    employees = [
        {
            "name": people[i],
            "role": _ROLES[rng.integers(len(_ROLES))],
            "department": dept_names[rng.integers(n_depts)],
            "manager": people[m] if (m := manager[i]) is not None else None,
        }
        for i in range(n_people)
    ]
    departments = [
        {"department": d, "city": c, "floor": int(rng.integers(1, 40))}
        for d, c in zip(dept_names, cities, strict=True)
    ]
    start = order[hops]
    plan: list[list[Call]] = []
    current = start
    for _ in range(hops - 1):
        plan.append([_call("get_employee", name=people[current])])
        parent = manager[current]
        assert parent is not None
        current = parent
    plan.append([_call("get_employee", name=people[current])])
    dept = employees[current]["department"]
    plan.append([_call("get_department", department=dept)])
    city = next(d["city"] for d in departments if d["department"] == dept)
    relation = "the manager of " * (hops - 1)
    return {
        "question": f"In which city is the department of {relation}{people[start]} located? "
        "Use the company directory tools. Answer with the city name only.",
        "answer": city,
        "answer_type": "text",
        "tools": [],
        "tables": [
            {
                "name": "get_employee",
                "description": "Look up an employee of the company directory by full name; "
                "returns their role, department and manager as JSON.",
                "key": "name",
                "key_description": "The employee's full name.",
                "rows": employees,
            },
            {
                "name": "get_department",
                "description": "Look up a department by its exact name; returns its city and "
                "floor as JSON.",
                "key": "department",
                "key_description": "The department name.",
                "rows": departments,
            },
        ],
        "plan": plan,
    }


# ------------------------------------------------------------------------------- arith


def _arith(rng: np.random.Generator, difficulty: int) -> Task:
    kind = int(rng.integers(5))
    scale = 10 ** (2 + difficulty)
    if kind == 0:
        a, b = int(rng.integers(2, scale)), int(rng.integers(10 * scale, 100 * scale))
        m = int(rng.integers(1000, 10 * scale))
        question = f"What is the remainder when {a}^{b} is divided by {m}?"
        answer, expression = str(pow(a, b, m)), f"pow({a}, {b}, {m})"
    elif kind == 1:
        n = int(rng.integers(20, 30 + 15 * difficulty))
        k = int(rng.integers(3, n // 2))
        question = f"In how many ways can a committee of {k} be chosen from {n} people?"
        answer, expression = str(math.comb(n, k)), f"binomial({n}, {k})"
    elif kind == 2:
        n = int(rng.integers(4, 6 + 2 * difficulty))
        total = sum((Fraction(1, i) for i in range(1, n + 1)), Fraction(0))
        question = f"What is 1/1 + 1/2 + ... + 1/{n} as a fraction in lowest terms? Answer as p/q."
        answer = f"{total.numerator}/{total.denominator}"
        expression = " + ".join(f"1/{i}" for i in range(1, n + 1))
    elif kind == 3:
        values = [int(rng.integers(6, 20 * difficulty + 30)) for _ in range(2 + difficulty)]
        question = f"What is the least common multiple of {', '.join(map(str, values))}?"
        answer, expression = str(math.lcm(*values)), f"lcm({', '.join(map(str, values))})"
    else:
        a, b = int(rng.integers(scale, 10 * scale)), int(rng.integers(scale, 10 * scale))
        c = int(rng.integers(scale, 100 * scale))
        question = f"Compute {a} * {b} - {c} ** 2."
        answer, expression = str(a * b - c**2), f"{a} * {b} - {c} ** 2"
    return {
        "question": question + " Give the exact value.",
        "answer": answer,
        "answer_type": "math",
        "tools": ["calculator"],
        "tables": [],
        "plan": [[_call("calculator", expression=expression)]],
    }


# ----------------------------------------------------------------------------- program


def _primes_upto(n: int) -> int:
    sieve = bytearray([1]) * (n + 1)
    sieve[:2] = b"\x00\x00"
    for p in range(2, int(n**0.5) + 1):
        if sieve[p]:
            sieve[p * p :: p] = bytearray(len(range(p * p, n + 1, p)))
    return sum(sieve)


def _fib_mod(n: int, m: int) -> int:
    """F(n) mod m by fast doubling (task generation must stay fast)."""

    def pair(k: int) -> tuple[int, int]:
        if k == 0:
            return 0, 1
        f, g = pair(k // 2)
        c, d = f * (2 * g - f) % m, (f * f + g * g) % m
        return (d, (c + d) % m) if k % 2 else (c, d)

    return pair(n)[0]


def _program(rng: np.random.Generator, difficulty: int) -> Task:
    """Counting and iteration problems: too long for a calculator, a few lines of Python."""
    kind = int(rng.integers(5))
    # At most ~10^6 loop iterations: well under a second in the sandbox.
    size = int(rng.integers(2, 10)) * 10 ** min(1 + difficulty, 5)
    if kind == 0:
        a, b, c = (int(x) for x in rng.choice(np.arange(2, 14), size=3, replace=False))
        question = (
            f"How many integers n with 1 <= n <= {size} are divisible by {a} or by {b}, but "
            f"not by {c}?"
        )

        def multiples(*ds: int) -> int:
            return size // math.lcm(*ds)

        # Inclusion-exclusion: (a or b) minus the part of it divisible by c.
        answer = (
            multiples(a) + multiples(b) - multiples(a, b)
            - multiples(a, c) - multiples(b, c) + multiples(a, b, c)
        )  # fmt: skip
        code = (
            f"print(sum(1 for n in range(1, {size} + 1) "
            f"if (n % {a} == 0 or n % {b} == 0) and n % {c} != 0))"
        )
    elif kind == 1:
        k = int(rng.integers(50, 300 * difficulty))
        question = f"What is the sum of the decimal digits of 2^{k}?"
        answer = sum(map(int, str(2**k)))
        code = f"print(sum(map(int, str(2 ** {k}))))"
    elif kind == 2:
        question = f"How many prime numbers are there that are at most {size}?"
        answer = _primes_upto(size)
        code = (
            f"n = {size}\nsieve = bytearray([1]) * (n + 1)\nsieve[:2] = b'\\x00\\x00'\n"
            "for p in range(2, int(n ** 0.5) + 1):\n    if sieve[p]:\n"
            "        sieve[p * p :: p] = bytearray(len(range(p * p, n + 1, p)))\n"
            "print(sum(sieve))"
        )
    elif kind == 3:
        n, m = int(rng.integers(100, size)), int(rng.integers(1000, 10**6))
        question = f"Let F(0) = 0, F(1) = 1, F(k) = F(k-1) + F(k-2). What is F({n}) mod {m}?"
        answer = _fib_mod(n, m)
        code = f"x, y = 0, 1\nfor _ in range({n}):\n    x, y = y, (x + y) % {m}\nprint(x)"
    else:
        start = int(rng.integers(10, 10 * size))
        question = (
            f"Starting from {start}, repeatedly replace n by n/2 if n is even and by 3n+1 if n "
            "is odd. How many replacements does it take to reach 1?"
        )
        steps, n = 0, start
        while n != 1:
            n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
        answer = steps
        code = (
            f"n, steps = {start}, 0\nwhile n != 1:\n"
            "    n = n // 2 if n % 2 == 0 else 3 * n + 1\n    steps += 1\nprint(steps)"
        )
    return {
        "question": question + " Give the exact integer.",
        "answer": str(answer),
        "answer_type": "math",
        "tools": ["calculator"],
        "tables": [],
        "needs_python": True,
        "plan": [[_call("python", code=code)]],
    }


#: family name -> generator ``(rng, difficulty) -> task``.
FAMILIES: dict[str, Callable[[np.random.Generator, int], Task]] = {
    "lookup": _lookup,
    "units": _units,
    "dates": _dates,
    "chain": _chain,
    "arith": _arith,
    "program": _program,
}
#: The families drawn by default: all but ``program``, whose oracle runs Python in the sandbox
#: (opt in with ``families=[..., "program"]`` where firejail or bubblewrap is installed).
DEFAULT_FAMILIES: tuple[str, ...] = ("lookup", "units", "dates", "chain", "arith")


#: Draws of one family before its last task is kept as it is (never reached in practice).
_MAX_DRAWS = 64
_QUESTION_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def _answer_in_question(task: Task) -> bool:
    """Whether the answer is one of the question's numbers or their sum (an echo would score)."""
    if task["answer_type"] != "math":
        return False
    numbers = _QUESTION_NUMBER.findall(task["question"])
    if str(task["answer"]) in numbers:
        return True
    try:
        answer = Fraction(str(task["answer"]))
    except (ValueError, ZeroDivisionError):
        return False
    return len(numbers) >= 2 and answer == sum((Fraction(n) for n in numbers), Fraction(0))


def generate(rng: np.random.Generator, *, families: Sequence[str], difficulty: int) -> Task:
    """Build one task: a family drawn from ``families``, then that family's generator.

    A task whose answer is one of its question's numbers, or their sum, is drawn again, so
    echoing the question's numbers never answers it.
    """
    family = families[int(rng.integers(len(families)))]
    return family_task(rng, family=family, difficulty=difficulty)


def family_task(rng: np.random.Generator, *, family: str, difficulty: int) -> Task:
    """One task of ``family`` (drawn again while its answer is in its question), plan closed."""
    for _ in range(_MAX_DRAWS):
        task = FAMILIES[family](rng, difficulty)
        if not _answer_in_question(task):
            break
    task["family"] = family
    task["difficulty"] = difficulty
    # The plan ends with the answer, submitted through the final-answer tool.
    task["plan"].append([_call("final_answer", answer=task["answer"])])
    return task


# ------------------------------------------------------------------------------ scoring


def _text_key(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[^\w\s-]", " ", text)
    return " ".join(text.split())


#: A short lead-in before the answer: "The answer is", "The total price of the order is",
#: "Final answer:", "So, the city is" (at most 8 words, then "is", "equals", "=" or ":").
_LEAD_IN = re.compile(
    r"(?:(?:so|thus|therefore|hence)\s*,?\s+)?(?:[A-Za-z$'-]+\s+){0,8}?"
    r"(?:(?:is|equals)\s+|[A-Za-z$'-]*\s*[:=]\s*)",
    re.IGNORECASE,
)
_MONTH_NAMES = (
    "January February March April May June July August September October November December"
).split()
#: Month names and their three-letter abbreviations (``Sept`` too), casefolded, to numbers.
_MONTHS = {
    **{name.casefold(): number for number, name in enumerate(_MONTH_NAMES, 1)},
    **{name[:3].casefold(): number for number, name in enumerate(_MONTH_NAMES, 1)},
    "sept": 9,
}
_MONTH = r"(?P<{}>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<{}>\d{{1,2}})(?:st|nd|rd|th)?"
#: The date forms read in a date answer: ISO (also with ``/`` or ``.``), a month's name with
#: the day and year in either order, and day, month and year in digits (``/``, ``.`` or
#: ``-``) where only one reading is a date (``11/21/2053``, ``21.11.2053``; ``03/05/2053`` is
#: refused: March 5 or May 3).
_DATE_FORMS = re.compile(
    r"(?<!\d)(?P<iy>\d{4})(?P<s>[-/.])(?P<im>\d{1,2})(?P=s)(?P<id>\d{1,2})(?!\d)"
    "|\\b" + _MONTH.format("m1") + r"\s+" + _DAY.format("d1") + r",?\s+(?P<y1>\d{4})\b"
    "|\\b" + _DAY.format("d2") + r"\s+(?:of\s+)?" + _MONTH.format("m2") + r",?\s+(?P<y2>\d{4})\b"
    r"|(?<![\d/.-])(?P<na>\d{1,2})(?P<ns>[-/.])(?P<nb>\d{1,2})(?P=ns)(?P<ny>\d{4})(?![\d/.-]\d)",
    re.IGNORECASE,
)
_WEEKDAY_NAMES = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
#: Weekday names and abbreviations (``Fri``, ``Tues``, ``Thurs``) to ``date.weekday()``.
_WEEKDAYS = {
    **{name: number for number, name in enumerate(_WEEKDAY_NAMES)},
    **{name[:3]: number for number, name in enumerate(_WEEKDAY_NAMES)},
    "tues": 1,
    "thur": 3,
    "thurs": 3,
}
_WEEKDAY = re.compile(
    r"\b(?:" + "|".join(sorted(_WEEKDAYS, key=len, reverse=True)) + r")\b", re.IGNORECASE
)


def _date_of(match: re.Match[str]) -> dt.date | None:
    """The date one :data:`_DATE_FORMS` match names, or ``None`` (no such day, or ambiguous)."""
    g = match.groupdict()
    try:
        if g["iy"]:
            return dt.date(int(g["iy"]), int(g["im"]), int(g["id"]))
        for m, d, y in (("m1", "d1", "y1"), ("m2", "d2", "y2")):
            if g[m]:
                return dt.date(int(g[y]), _MONTHS[g[m].casefold()], int(g[d]))
        a, b, year = int(g["na"]), int(g["nb"]), int(g["ny"])
    except ValueError:
        return None
    readings = set()
    for month, day in ((a, b), (b, a)):
        try:
            readings.add(dt.date(year, month, day))
        except ValueError:
            pass
    return readings.pop() if len(readings) == 1 else None


def _answer_date(text: str) -> dt.date | None:
    """The one date ``text`` names, or ``None``.

    ``None`` when it names no date, two different dates, an impossible or ambiguous one, or a
    weekday that is not the date's (``Friday, 2053-11-22`` when the 22nd is a Saturday).
    """
    text = text[:200]
    dates = set()
    for match in _DATE_FORMS.finditer(text):
        date = _date_of(match)
        if date is None:
            return None
        dates.add(date)
    if len(dates) != 1:
        return None
    date = dates.pop()
    if any(_WEEKDAYS[w.casefold()] != date.weekday() for w in _WEEKDAY.findall(text)):
        return None
    return date


def answers_match(
    prediction: str, gold: str, answer_type: str, question: str | None = None
) -> bool:
    """Whether ``prediction`` is the ``gold`` answer (the value, same date, same text).

    A math answer must be the value in final form (:func:`rllm_envs.math.grade_answer`): the
    question's own expression (``a * b - c ** 2``, the harmonic sum written out) or any
    arithmetic left unevaluated is not the answer, even though it equals it.

    Args:
        prediction: The submitted answer.
        gold: The reference answer.
        answer_type: ``"math"``, ``"date"`` or ``"text"``.
        question: The task's question (copies of its expressions are checked).
    """
    prediction = prediction.strip()
    # One Markdown wrapper: bold (att33f: `**123.45**` paid 0) or code (att36c: `9044` and
    # `2053-11-21` in backquotes paid 0, a backquoted name 1).
    for mark in ("**", "`"):
        if (
            len(prediction) > 2 * len(mark)
            and prediction.startswith(mark)
            and prediction.endswith(mark)
        ):
            prediction = prediction[len(mark) : -len(mark)].strip()
            break
    if not prediction:
        return False
    if answer_type == "date":
        # The one date the answer names, in any unambiguous form, in a sentence or not.
        return _answer_date(prediction) == dt.date.fromisoformat(gold)
    if _matches(prediction, gold, answer_type, question):
        return True
    # A sentence around the answer ("The answer is 266.4.", "The city is Nixkrisnus"): what
    # follows the lead-in must still be the answer, graded as strictly as a bare one.
    lead_in = _LEAD_IN.match(prediction[:1000])
    return (
        lead_in is not None
        and _plain_lead_in(lead_in.group(), question or "")
        and _matches(prediction[lead_in.end() : 1000].rstrip(" ."), gold, answer_type, question)
    )


#: Words of a lead-in besides the question's own ("The total price of the order is").
#: Words a sentence around a name may hold besides the question's own.
_SENTENCE_WORDS = frozenset("a an the is it its it's answer final so".split())
_LEAD_WORDS = _SENTENCE_WORDS | frozenset(
    "result total value date day thus therefore hence equals of in on for to price order "
    "cost amount number city weekday".split()
)


def _plain_lead_in(lead_in: str, question: str) -> bool:
    """Whether a lead-in only leads in: the question's words or a few of its own, no digit.

    ``Sunday<300 spaces>is Monday`` read as Sunday by the weekday rule and as Monday after
    its lead-in: one reply paid for two answers (att38f F2: 0.414 against the best
    constant's 0.257); a lead-in holding a name, a weekday or a number is none.
    """
    allowed = _LEAD_WORDS | {w.casefold() for w in _TOKEN.findall(question)}
    words = [w.casefold() for w in _TOKEN.findall(lead_in)]
    return not re.search(r"\d|\s{4}", lead_in) and all(
        w in allowed and w not in _WEEKDAYS for w in words
    )


def _matches(prediction: str, gold: str, answer_type: str, question: str | None) -> bool:
    if not prediction:
        return False
    if answer_type == "math":
        from rllm_envs.math import grade_answer

        return grade_answer(prediction[:1000], gold, problem=question).equal
    if _text_key(prediction[:1000]) == _text_key(gold):
        return True
    if gold.casefold() in _WEEKDAY_NAMES:
        # "It ends on a Friday.", "Fri": the one weekday it names (att38c: 0/31 each).
        named = {_WEEKDAYS[w.casefold()] for w in _WEEKDAY.findall(prediction[:1000])}
        return named == {_WEEKDAYS[gold.casefold()]}
    return _in_a_sentence(prediction[:1000], gold, question or "")


_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)?")


def _in_a_sentence(prediction: str, gold: str, question: str) -> bool:
    """Whether ``prediction`` is ``gold`` in a sentence of the question's words.

    "The department is located in Nixkrisnus.", "Nixkrisnus is the city." (att38c: 0/18
    each): the name once, and every other word the question's or an article, so a second
    candidate (``Nixkrisnus or Paris``) is not read as the answer.
    """
    words = [w.casefold() for w in _TOKEN.findall(prediction)]
    name = [w.casefold() for w in _TOKEN.findall(gold)]
    if not name or len(words) > 30:
        return False
    places = [i for i in range(len(words)) if words[i : i + len(name)] == name]
    if len(places) != 1:
        return False
    rest = words[: places[0]] + words[places[0] + len(name) :]
    allowed = _SENTENCE_WORDS | {w.casefold() for w in _TOKEN.findall(question)}
    return all(w in allowed for w in rest)


def score_answer(answer: str | None, task: Task) -> float:
    """The task score of a final answer: 1.0 if correct, else 0.0 (``None`` scores 0)."""
    if answer is None:
        return 0.0
    question = task.get("question")
    match = answers_match(
        str(answer),
        str(task["answer"]),
        task["answer_type"],
        question if isinstance(question, str) else None,
    )
    return 1.0 if match else 0.0


#: The family's scorer under the name every family uses: ``score(answer, task)``.
score = score_answer
