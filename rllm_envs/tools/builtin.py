"""Built-in tools: calculator, Python (sandboxed), final answer, dates, units, table look-ups.

Every tool here is a :class:`~rllm_envs.tools.base.Tool` whose function is a module-level
function or a picklable callable object. Task-specific tools (a table of records) are built
from plain data with :func:`table_tool`, so a task record that carries its data still
round-trips through JSON.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol

from rllm_envs.error import InvalidEnvConfig, did_you_mean
from rllm_envs.tools.base import Tool
from rllm_envs.tools.calculator import calculate

__all__ = [
    "CALCULATOR",
    "FINAL_ANSWER",
    "DATE_ADD",
    "DAYS_BETWEEN",
    "WEEKDAY",
    "CONVERT_UNITS",
    "UNITS",
    "PythonTool",
    "python_tool",
    "table_tool",
    "TableLookup",
    "ToolFailure",
    "Retriever",
    "SearchFunction",
    "search_tool",
]


class ToolFailure(ValueError):
    """Raised inside a tool for a bad request; the message is shown to the model."""


CALCULATOR = Tool(
    name="calculator",
    description=(
        "Evaluate an arithmetic expression exactly. Supports + - * / // % ** (or ^), "
        "parentheses, pi, e and sqrt, cbrt, abs, exp, log, ln, log10, log2, sin, cos, tan, "
        "asin, acos, atan, floor, ceil, round(x, digits), factorial, binomial, gcd, lcm, "
        "pow(b, e, m), min, max. Fractions stay exact: 1/3 + 1/6 = 1/2."
    ),
    parameters={
        "type": "object",
        "properties": {
            "expression": {
                "type": "string",
                "description": "The expression, e.g. '(17 * 23) ^ 2 / 7'.",
                "maxLength": 1000,
            }
        },
        "required": ["expression"],
        "additionalProperties": False,
    },
    function=calculate,
)

FINAL_ANSWER = Tool(
    name="final_answer",
    description="Submit your final answer. This ends the episode; call it exactly once.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": ["string", "number"], "description": "The answer."}},
        "required": ["answer"],
        "additionalProperties": False,
    },
    is_final=True,
)


# ----------------------------------------------------------------------------- dates

_DATE_HELP = "a date in ISO format YYYY-MM-DD"


def _parse_date(text: str, name: str) -> dt.date:
    try:
        return dt.date.fromisoformat(text.strip())
    except ValueError:
        raise ToolFailure(f"`{name}` must be {_DATE_HELP}, got {text[:40]!r}") from None


def date_add(date: str, days: int) -> str:
    """The date ``days`` days after ``date`` (before, if negative)."""
    start = _parse_date(date, "date")
    try:
        result = start + dt.timedelta(days=int(days))
    except OverflowError:
        raise ToolFailure("the resulting date is out of range (years 1-9999)") from None
    return result.isoformat()


def days_between(start: str, end: str) -> str:
    """Number of days from ``start`` to ``end`` (negative if ``end`` is earlier)."""
    return str((_parse_date(end, "end") - _parse_date(start, "start")).days)


def weekday(date: str) -> str:
    """The English weekday name of ``date``."""
    return _parse_date(date, "date").strftime("%A")


DATE_ADD = Tool(
    name="date_add",
    description="Add a number of days to a date (negative days go back). Returns YYYY-MM-DD.",
    parameters={
        "type": "object",
        "properties": {
            "date": {"type": "string", "description": _DATE_HELP},
            "days": {"type": "integer", "minimum": -1_000_000, "maximum": 1_000_000},
        },
        "required": ["date", "days"],
        "additionalProperties": False,
    },
    function=date_add,
)
DAYS_BETWEEN = Tool(
    name="days_between",
    description="Number of days from `start` to `end` (negative if `end` is earlier).",
    parameters={
        "type": "object",
        "properties": {
            "start": {"type": "string", "description": _DATE_HELP},
            "end": {"type": "string", "description": _DATE_HELP},
        },
        "required": ["start", "end"],
        "additionalProperties": False,
    },
    function=days_between,
)
WEEKDAY = Tool(
    name="weekday",
    description="The day of the week (Monday ... Sunday) of a date.",
    parameters={
        "type": "object",
        "properties": {"date": {"type": "string", "description": _DATE_HELP}},
        "required": ["date"],
        "additionalProperties": False,
    },
    function=weekday,
)


# ----------------------------------------------------------------------------- units

#: unit -> (dimension, exact factor to the dimension's base unit). Exact by definition
#: (the international yard and pound of 1959, the US gallon of 231 cubic inches).
UNITS: dict[str, tuple[str, Fraction]] = {
    "mm": ("length", Fraction(1, 1000)),
    "cm": ("length", Fraction(1, 100)),
    "m": ("length", Fraction(1)),
    "km": ("length", Fraction(1000)),
    "inch": ("length", Fraction(254, 10000)),
    "foot": ("length", Fraction(3048, 10000)),
    "yard": ("length", Fraction(9144, 10000)),
    "mile": ("length", Fraction(1609344, 1000)),
    "mg": ("mass", Fraction(1, 1_000_000)),
    "g": ("mass", Fraction(1, 1000)),
    "kg": ("mass", Fraction(1)),
    "tonne": ("mass", Fraction(1000)),
    "ounce": ("mass", Fraction(28349523125, 1_000_000_000_000)),
    "pound": ("mass", Fraction(45359237, 100_000_000)),
    "ml": ("volume", Fraction(1, 1000)),
    "liter": ("volume", Fraction(1)),
    "cubic_meter": ("volume", Fraction(1000)),
    "us_gallon": ("volume", Fraction(3785411784, 1_000_000_000)),
    "second": ("time", Fraction(1)),
    "minute": ("time", Fraction(60)),
    "hour": ("time", Fraction(3600)),
    "day": ("time", Fraction(86400)),
    "week": ("time", Fraction(604800)),
}


def _fraction_text(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    # Most conversions end in a terminating decimal; show it exactly when it does.
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    if d == 1:
        text = f"{value.numerator / value.denominator:.12f}".rstrip("0").rstrip(".")
        if Fraction(text) == value:
            return text
        return f"{value.numerator}/{value.denominator}"
    return f"{value.numerator}/{value.denominator} (≈ {float(value):.10g})"


def convert_units(value: float | int | str, from_unit: str, to_unit: str) -> str:
    """Convert ``value`` between two units of the same dimension, exactly."""
    try:
        amount = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ToolFailure(f"`value` must be a number, got {str(value)[:40]!r}") from None
    units = {}
    for arg, unit in (("from_unit", from_unit), ("to_unit", to_unit)):
        key = unit.strip().lower()
        if key not in UNITS:
            raise ToolFailure(
                f"unknown unit {unit[:40]!r} for `{arg}`.{did_you_mean(key, UNITS)} "
                f"Known units: {', '.join(UNITS)}."
            )
        units[arg] = UNITS[key]
    (dim_a, fa), (dim_b, fb) = units["from_unit"], units["to_unit"]
    if dim_a != dim_b:
        raise ToolFailure(f"cannot convert {dim_a} ({from_unit}) to {dim_b} ({to_unit})")
    return f"{_fraction_text(amount * fa / fb)} {to_unit.strip().lower()}"


CONVERT_UNITS = Tool(
    name="convert_units",
    description=(
        "Convert a quantity between units of the same dimension, exactly. Units: "
        + ", ".join(UNITS)
        + "."
    ),
    parameters={
        "type": "object",
        "properties": {
            "value": {"type": ["number", "string"], "description": "The amount, e.g. 12.5."},
            "from_unit": {"type": "string", "enum": list(UNITS)},
            "to_unit": {"type": "string", "enum": list(UNITS)},
        },
        "required": ["value", "from_unit", "to_unit"],
        "additionalProperties": False,
    },
    function=convert_units,
)


# ----------------------------------------------------------------------------- tables


def _key(text: Any) -> str:
    return " ".join(str(text).lower().split())


class TableLookup:
    """Callable that finds a record of a table by its key field (case and spacing ignored).

    Args:
        rows: The records (JSON objects).
        key: The field the look-up matches.
    """

    def __init__(self, rows: Sequence[Mapping[str, Any]], key: str) -> None:
        self.rows = [dict(r) for r in rows]
        self.key = key
        self._index = {_key(r[key]): i for i, r in enumerate(self.rows)}

    def __call__(self, **arguments: Any) -> str:
        """Return the record whose key field equals ``arguments[key]`` as JSON."""
        wanted = arguments.get(self.key, "")
        i = self._index.get(_key(wanted))
        if i is None:
            names = [str(r[self.key]) for r in self.rows]
            hint = did_you_mean(str(wanted), names)
            raise ToolFailure(f"no record with {self.key} = {str(wanted)[:60]!r}.{hint}")
        return json.dumps(self.rows[i], ensure_ascii=False)


def table_tool(spec: Mapping[str, Any]) -> Tool:
    """Build a look-up tool from a task's plain-data spec.

    Args:
        spec: ``{"name", "description", "key", "key_description", "rows"}``: the tool takes one
            string argument named ``key`` and returns the matching row as JSON.

    Raises:
        InvalidEnvConfig: If the spec is incomplete.
    """
    missing = [f for f in ("name", "description", "key", "rows") if f not in spec]
    if missing:
        raise InvalidEnvConfig(f"A table tool spec lacks field(s) {missing}: {dict(spec)!r:.200}")
    key = str(spec["key"])
    return Tool(
        name=str(spec["name"]),
        description=str(spec["description"]),
        parameters={
            "type": "object",
            "properties": {
                key: {"type": "string", "description": str(spec.get("key_description", key))}
            },
            "required": [key],
            "additionalProperties": False,
        },
        function=TableLookup(spec["rows"], key),
    )


# ----------------------------------------------------------------------------- python


class PythonTool:
    """Runs model-written Python through :func:`rllm_envs.sandbox.run`; never unsandboxed.

    Args:
        time_limit: Wall-clock seconds per run.
        backend: Sandbox backend name (``None`` = the sandbox's automatic choice).
        max_output_chars: The report (status, stdout, stderr) is cut to about this many
            characters.
    """

    def __init__(
        self, *, time_limit: float = 5.0, backend: str | None = None, max_output_chars: int = 4000
    ) -> None:
        if not time_limit > 0:
            raise InvalidEnvConfig(f"Expects `time_limit` > 0 seconds, actual: {time_limit!r}.")
        self.time_limit = float(time_limit)
        self.backend = backend
        self.max_output_chars = int(max_output_chars)

    def __call__(self, code: str) -> str:
        """Run ``code`` and report stdout, stderr and how it ended."""
        from rllm_envs import sandbox  # lazy: the sandbox module is only needed when called

        result = sandbox.run(
            code, language="python", time_limit=self.time_limit, backend=self.backend
        )
        # Status first, then stdout and the end of stderr (where a traceback's message is).
        return result.describe(self.max_output_chars)


def python_tool(*, time_limit: float = 5.0, backend: str | None = None) -> Tool:
    """The ``python`` tool: run a Python program in the sandbox and return what it printed."""
    return Tool(
        name="python",
        description=(
            "Run a Python 3 program in an isolated sandbox (no network, no files kept, "
            f"{time_limit:g} s limit) and return its stdout and stderr. Print what you need."
        ),
        parameters={
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "The program.", "maxLength": 20_000}
            },
            "required": ["code"],
            "additionalProperties": False,
        },
        function=PythonTool(time_limit=time_limit, backend=backend),
    )


# ----------------------------------------------------------------------------- search


class Retriever(Protocol):
    """Anything that ranks passages for a query (e.g. :class:`rllm_envs.search.BM25Retriever`)."""

    def search(self, query: str, k: int = 3) -> list[tuple[dict[str, Any], float]]:
        """The top ``k`` ``({"id", "title", "text"}, score)`` pairs, best first."""
        ...


class SearchFunction:
    """Callable behind the ``search`` tool: retrieve and format the top passages.

    Args:
        retriever: The ranking backend.
        top_k: Passages returned per query.
        max_passage_chars: Each passage's text is cut to this many characters.
    """

    def __init__(
        self, retriever: Retriever, *, top_k: int = 3, max_passage_chars: int = 500
    ) -> None:
        self.retriever = retriever
        self.top_k = int(top_k)
        self.max_passage_chars = int(max_passage_chars)
        #: Ids of the passages returned, appended by every call (a caller may clear it).
        self.retrieved: list[str] = []

    def __call__(self, query: str) -> str:
        """Search for ``query``; return the passages in Search-R1's ``<information>`` form."""
        hits = self.retriever.search(query[:1000], self.top_k)
        self.retrieved += [str(p.get("id", "")) for p, _ in hits]
        if not hits:
            return "<information>No passage matches this query; try other words.</information>"
        docs = []
        for i, (passage, _) in enumerate(hits, start=1):
            text = str(passage.get("text", ""))
            if len(text) > self.max_passage_chars:
                text = text[: self.max_passage_chars] + " ..."
            docs.append(f"Doc {i} (Title: {passage.get('title', '')}) {text}")
        return "<information>" + "\n".join(docs) + "</information>"


def search_tool(retriever: Retriever, *, top_k: int = 3, max_passage_chars: int = 500) -> Tool:
    """The ``search`` tool over ``retriever``: returns the top ``top_k`` passages for a query."""
    return Tool(
        name="search",
        description=f"Search the knowledge base; returns the top {top_k} passages for a query.",
        parameters={
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Keywords, e.g. a name and what you want to know about it.",
                    "minLength": 1,
                    "maxLength": 1000,
                }
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        function=SearchFunction(retriever, top_k=top_k, max_passage_chars=max_passage_chars),
    )
