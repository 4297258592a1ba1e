"""The embedded repositories: small Python projects with real test suites and seeded bugs.

Plain data. Each :class:`Project` is a package of self-contained modules (they import only
the standard library, so a module runs on its own) with one test file per module, written
as test blocks so that a task can hold some tests back as hidden ones. Each :class:`Bug` is
a realistic one-place defect of one function, stated as an exact source replacement, with
the tests it breaks and a call that shows it (the issue text is written from what that call
does; see :mod:`rllm_envs.swe.tasks`). ``PKG`` in a source is the package name.

``tests/swe/test_projects.py`` runs every bug through the sandboxed judge: the fixed code
passes every test, the buggy code fails exactly the tests the bug names.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

__all__ = ["Bug", "Module", "Project", "PROJECTS", "DISTRACTORS", "BUG_KINDS"]

#: The kinds of seeded bugs.
BUG_KINDS = ("off_by_one", "wrong_condition", "missing_case", "wrong_default", "mutated_api")


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


@dataclass(frozen=True)
class Bug:
    """One seeded defect.

    Attributes:
        module: The module it is in (``"chunks"`` for ``PKG/chunks.py``).
        function: The function (or ``Class.method``) it is in.
        kind: One of :data:`BUG_KINDS`.
        old: The correct source text (occurs exactly once in the module).
        new: The buggy text that replaces it.
        breaks: Names of the module's tests that fail with the bug (fail-to-pass).
        call: Code on the module's names whose last line is an expression that shows the
            bug (what it returns or raises).
        summary: What the function is for, in a user's words (for the issue text).
    """

    module: str
    function: str
    kind: str
    old: str
    new: str
    breaks: tuple[str, ...]
    call: str
    summary: str


@dataclass(frozen=True)
class Module:
    """A module and its tests.

    Attributes:
        name: Module name (file ``PKG/<name>.py``, tests ``tests/test_<name>.py``).
        source: The correct source.
        test_header: The test file's imports.
        tests: ``{test name: test function source}`` in file order.
    """

    name: str
    source: str
    test_header: str
    tests: dict[str, str]


@dataclass(frozen=True)
class Project:
    """A small package: modules, their tests and the bugs that can be seeded."""

    key: str
    names: tuple[str, ...]
    description: str
    modules: tuple[Module, ...]
    bugs: tuple[Bug, ...] = field(default_factory=tuple)

    def module(self, name: str) -> Module:
        """The module called ``name``."""
        return next(m for m in self.modules if m.name == name)


def _tests(text: str) -> dict[str, str]:
    """Split test source into ``{name: block}`` at each top-level ``def test_``."""
    blocks: dict[str, str] = {}
    current: list[str] = []
    name = None
    for line in _src(text).splitlines(keepends=True):
        if line.startswith("def test_"):
            if name is not None:
                blocks[name] = "".join(current).rstrip("\n") + "\n"
            name = line[4:].split("(")[0]
            current = [line]
        elif name is not None:
            current.append(line)
    if name is not None:
        blocks[name] = "".join(current).rstrip("\n") + "\n"
    return blocks


def _header(module: str, names: str, pytest: bool = False) -> str:
    head = "import pytest\n\n" if pytest else ""
    return f"{head}from PKG.{module} import {names}\n"


# ================================================================================ textkit
_CHUNKS = Module(
    "chunks",
    _src('''
        """Split sequences into pieces."""


        def chunk(items, size):
            """Split ``items`` into lists of ``size`` items; the last one may be shorter."""
            if size < 1:
                raise ValueError("size must be at least 1")
            return [list(items[i : i + size]) for i in range(0, len(items), size)]


        def window(items, width):
            """Every run of ``width`` consecutive items, as tuples, in order."""
            if width < 1:
                raise ValueError("width must be at least 1")
            return [tuple(items[i : i + width]) for i in range(len(items) - width + 1)]


        def flatten(groups):
            """One list of the items of every group, in order."""
            return [item for group in groups for item in group]
    '''),
    _header("chunks", "chunk, flatten, window", pytest=True),
    _tests("""
        def test_chunk_even():
            assert chunk([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]

        def test_chunk_remainder():
            assert chunk([1, 2, 3, 4, 5], 2) == [[1, 2], [3, 4], [5]]

        def test_chunk_rejects_zero():
            with pytest.raises(ValueError):
                chunk([1, 2], 0)

        def test_chunk_keyword():
            assert chunk("abcdef", size=4) == [["a", "b", "c", "d"], ["e", "f"]]

        def test_window_basic():
            assert window([1, 2, 3, 4], 2) == [(1, 2), (2, 3), (3, 4)]

        def test_window_too_wide():
            assert window([1, 2], 3) == []

        def test_window_rejects_zero():
            with pytest.raises(ValueError):
                window([1, 2], 0)

        def test_flatten():
            assert flatten([[1], [], [2, 3]]) == [1, 2, 3]
    """),
)
_CASE = Module(
    "case",
    _src('''
        """Change the case of words."""

        MINOR_WORDS = ("a", "an", "and", "of", "the", "to")


        def snake_case(text):
            """``"Hello World"`` and ``"helloWorld"`` become ``"hello_world"``."""
            words = []
            current = ""
            for char in text:
                if char.isupper() and current:
                    words.append(current)
                    current = char.lower()
                elif char in " -_":
                    if current:
                        words.append(current)
                    current = ""
                else:
                    current += char.lower()
            if current:
                words.append(current)
            return "_".join(words)


        def title_case(text, minor=MINOR_WORDS):
            """Capitalise each word but the minor ones; the first word is always capitalised."""
            out = []
            for i, word in enumerate(text.split()):
                if i > 0 and word.lower() in minor:
                    out.append(word.lower())
                else:
                    out.append(word[:1].upper() + word[1:].lower())
            return " ".join(out)
    '''),
    _header("case", "snake_case, title_case"),
    _tests("""
        def test_snake_case_words():
            assert snake_case("Good Morning") == "good_morning"

        def test_snake_case_camel():
            assert snake_case("parseHttpRequest") == "parse_http_request"

        def test_snake_case_extra_spaces():
            assert snake_case("  hello   big world ") == "hello_big_world"

        def test_title_case_simple():
            assert title_case("hello world") == "Hello World"

        def test_title_case_minor_words():
            assert title_case("the lord of the rings") == "The Lord of the Rings"

        def test_title_case_first_word():
            assert title_case("a tale of two cities") == "A Tale of Two Cities"

        def test_title_case_custom_minor():
            assert title_case("war and peace", minor=()) == "War And Peace"
    """),
)
_WRAP = Module(
    "wrap",
    _src('''
        """Fit text into a width."""


        def truncate(text, limit, suffix="..."):
            """``text`` cut to at most ``limit`` characters, ending with ``suffix`` when cut."""
            if len(text) <= limit:
                return text
            if limit <= len(suffix):
                return suffix[:limit]
            return text[: limit - len(suffix)] + suffix


        def wrap(text, width):
            """Greedy word wrap into lines of at most ``width`` characters.

            A word longer than ``width`` gets a line of its own.
            """
            lines = []
            line = ""
            for word in text.split():
                if not line:
                    line = word
                elif len(line) + 1 + len(word) <= width:
                    line += " " + word
                else:
                    lines.append(line)
                    line = word
            if line:
                lines.append(line)
            return lines
    '''),
    _header("wrap", "truncate, wrap"),
    _tests("""
        def test_truncate_short():
            assert truncate("hello", 10) == "hello"

        def test_truncate_cut():
            assert truncate("hello world", 8) == "hello..."

        def test_truncate_exact_length():
            assert truncate("abcdef", 6) == "abcdef"

        def test_truncate_custom_suffix():
            assert truncate("hello world", 6, suffix="~") == "hello~"

        def test_wrap_lines():
            assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]

        def test_wrap_exact_width():
            assert wrap("aaa bbb ccc", 7) == ["aaa bbb", "ccc"]

        def test_wrap_long_word():
            assert wrap("a extraordinarily b", 5) == ["a", "extraordinarily", "b"]
    """),
)
TEXTKIT = Project(
    "textkit",
    ("textkit", "strutil", "wordsmith", "textops"),
    "text utilities: chunking sequences, changing case and wrapping text",
    (_CHUNKS, _CASE, _WRAP),
    (
        Bug(
            "chunks",
            "chunk",
            "off_by_one",
            "range(0, len(items), size)",
            "range(0, len(items) - 1, size)",
            ("test_chunk_remainder",),
            "chunk([1, 2, 3, 4, 5], 2)",
            "split a list into fixed-size pieces",
        ),
        Bug(
            "chunks",
            "window",
            "off_by_one",
            "range(len(items) - width + 1)",
            "range(len(items) - width)",
            ("test_window_basic",),
            "window([1, 2, 3, 4], 2)",
            "list the sliding windows of a sequence",
        ),
        Bug(
            "chunks",
            "window",
            "wrong_condition",
            "if width < 1:",
            "if width < 0:",
            ("test_window_rejects_zero",),
            "window([1, 2], 0)",
            "list the sliding windows of a sequence",
        ),
        Bug(
            "case",
            "snake_case",
            "missing_case",
            "            if current:\n"
            "                words.append(current)\n"
            '            current = ""',
            '            words.append(current)\n            current = ""',
            ("test_snake_case_extra_spaces",),
            "snake_case('  hello   big world ')",
            "turn titles into snake_case identifiers",
        ),
        Bug(
            "case",
            "title_case",
            "wrong_default",
            "def title_case(text, minor=MINOR_WORDS):",
            "def title_case(text, minor=()):",
            ("test_title_case_minor_words", "test_title_case_first_word"),
            "title_case('the lord of the rings')",
            "capitalise book titles",
        ),
        Bug(
            "case",
            "title_case",
            "wrong_condition",
            "if i > 0 and word.lower() in minor:",
            "if i >= 0 and word.lower() in minor:",
            ("test_title_case_minor_words", "test_title_case_first_word"),
            "title_case('a tale of two cities')",
            "capitalise book titles",
        ),
        Bug(
            "wrap",
            "truncate",
            "off_by_one",
            "if len(text) <= limit:",
            "if len(text) < limit:",
            ("test_truncate_exact_length",),
            "truncate('abcdef', 6)",
            "shorten labels to a maximum length",
        ),
        Bug(
            "wrap",
            "wrap",
            "off_by_one",
            "len(line) + 1 + len(word) <= width",
            "len(line) + 1 + len(word) < width",
            ("test_wrap_exact_width",),
            "wrap('aaa bbb ccc', 7)",
            "word-wrap paragraphs to a fixed width",
        ),
        Bug(
            "wrap",
            "truncate",
            "mutated_api",
            'def truncate(text, limit, suffix="..."):\n'
            '    """``text`` cut to at most ``limit`` characters, ending with ``suffix`` when '
            'cut."""\n    if len(text) <= limit:\n        return text\n'
            "    if limit <= len(suffix):\n        return suffix[:limit]\n"
            "    return text[: limit - len(suffix)] + suffix",
            'def truncate(text, limit, ending="..."):\n'
            '    """``text`` cut to at most ``limit`` characters, ending with ``ending`` when '
            'cut."""\n    if len(text) <= limit:\n        return text\n'
            "    if limit <= len(ending):\n        return ending[:limit]\n"
            "    return text[: limit - len(ending)] + ending",
            ("test_truncate_custom_suffix",),
            "truncate('hello world', 6, suffix='~')",
            "shorten labels to a maximum length",
        ),
    ),
)

# ================================================================================ statkit
_CENTRAL = Module(
    "central",
    _src('''
        """Measures of the centre of a sample."""


        def mean(values):
            """The arithmetic mean; ``ValueError`` for no values."""
            if not values:
                raise ValueError("mean of no values")
            return sum(values) / len(values)


        def median(values):
            """The middle value (the mean of the two middle values for an even count)."""
            if not values:
                raise ValueError("median of no values")
            ordered = sorted(values)
            middle = len(ordered) // 2
            if len(ordered) % 2 == 1:
                return ordered[middle]
            return (ordered[middle - 1] + ordered[middle]) / 2


        def mode(values):
            """The most common value; the smallest of them on a tie."""
            if not values:
                raise ValueError("mode of no values")
            counts = {}
            for value in values:
                counts[value] = counts.get(value, 0) + 1
            best = max(counts.values())
            return min(value for value, count in counts.items() if count == best)
    '''),
    _header("central", "mean, median, mode", pytest=True),
    _tests("""
        def test_mean():
            assert mean([1, 2, 3, 6]) == 3

        def test_mean_empty():
            with pytest.raises(ValueError):
                mean([])

        def test_median_odd():
            assert median([1, 3, 5]) == 3

        def test_median_even():
            assert median([1, 2, 3, 4]) == 2.5

        def test_median_unsorted():
            assert median([9, 1, 8, 2]) == 5

        def test_mode_single():
            assert mode([1, 2, 2, 3]) == 2

        def test_mode_tie():
            assert mode([4, 4, 1, 1, 7]) == 1
    """),
)
_SPREAD = Module(
    "spread",
    _src('''
        """Measures of the spread of a sample."""

        from math import sqrt


        def variance(values, sample=True):
            """The sample variance (divides by n - 1) by default, else the population one."""
            n = len(values)
            needed = 2 if sample else 1
            if n < needed:
                raise ValueError("not enough values")
            average = sum(values) / n
            total = sum((v - average) ** 2 for v in values)
            return total / (n - 1 if sample else n)


        def stdev(values, sample=True):
            """The standard deviation (see ``variance``)."""
            return sqrt(variance(values, sample))


        def value_range(values):
            """``max - min`` of the values (0 for a single value)."""
            if not values:
                raise ValueError("range of no values")
            return max(values) - min(values)
    '''),
    _header("spread", "stdev, value_range, variance", pytest=True),
    _tests("""
        def test_variance_sample_default():
            assert variance([1, 2, 3, 4]) == pytest.approx(5 / 3)

        def test_variance_population():
            assert variance([1, 2, 3, 4], sample=False) == pytest.approx(1.25)

        def test_variance_needs_two():
            with pytest.raises(ValueError):
                variance([1])

        def test_stdev_sample():
            assert stdev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(2.138089935)

        def test_stdev_population():
            assert stdev([2, 4, 4, 4, 5, 5, 7, 9], sample=False) == pytest.approx(2.0)

        def test_value_range():
            assert value_range([3, -2, 8]) == 10
    """),
)
_SCALE = Module(
    "scale",
    _src('''
        """Rescale values."""


        def clamp(value, low, high):
            """``value`` limited to ``[low, high]``."""
            if low > high:
                raise ValueError("low must not exceed high")
            return max(low, min(value, high))


        def normalize(values):
            """Values mapped linearly onto ``[0, 1]`` (all ``0.0`` when they are all equal)."""
            low, high = min(values), max(values)
            if high == low:
                return [0.0 for _ in values]
            return [(v - low) / (high - low) for v in values]


        def percentile(values, p):
            """The ``p``-th percentile (0 to 100), interpolating between the closest ranks."""
            if not 0 <= p <= 100:
                raise ValueError("p must be in [0, 100]")
            ordered = sorted(values)
            position = (len(ordered) - 1) * p / 100
            lower = int(position)
            upper = min(lower + 1, len(ordered) - 1)
            return ordered[lower] + (ordered[upper] - ordered[lower]) * (position - lower)
    '''),
    _header("scale", "clamp, normalize, percentile", pytest=True),
    _tests("""
        def test_clamp_inside():
            assert clamp(5, 0, 10) == 5

        def test_clamp_outside():
            assert (clamp(-3, 0, 10), clamp(12, 0, 10)) == (0, 10)

        def test_clamp_equal_bounds():
            assert clamp(5, 3, 3) == 3

        def test_normalize():
            assert normalize([2, 4, 6]) == [0.0, 0.5, 1.0]

        def test_normalize_constant():
            assert normalize([7, 7]) == [0.0, 0.0]

        def test_percentile_median():
            assert percentile([1, 2, 3, 4, 5], 50) == 3

        def test_percentile_interpolates():
            assert percentile([10, 20], 25) == pytest.approx(12.5)

        def test_percentile_max():
            assert percentile([3, 1, 2], 100) == 3
    """),
)
STATKIT = Project(
    "statkit",
    ("statkit", "tinystats", "sampler", "numsum"),
    "descriptive statistics: centre, spread and rescaling of samples",
    (_CENTRAL, _SPREAD, _SCALE),
    (
        Bug(
            "central",
            "median",
            "off_by_one",
            "(ordered[middle - 1] + ordered[middle]) / 2",
            "(ordered[middle] + ordered[middle + 1]) / 2",
            ("test_median_even", "test_median_unsorted"),
            "median([1, 2, 3, 4])",
            "summarise measurements by their median",
        ),
        Bug(
            "central",
            "median",
            "missing_case",
            "ordered = sorted(values)",
            "ordered = list(values)",
            ("test_median_unsorted",),
            "median([9, 1, 8, 2])",
            "summarise measurements by their median",
        ),
        Bug(
            "central",
            "mode",
            "wrong_condition",
            "return min(value for value, count",
            "return max(value for value, count",
            ("test_mode_tie",),
            "mode([4, 4, 1, 1, 7])",
            "find the most common reading",
        ),
        Bug(
            "spread",
            "variance",
            "wrong_default",
            "def variance(values, sample=True):",
            "def variance(values, sample=False):",
            ("test_variance_sample_default", "test_variance_needs_two"),
            "variance([1, 2, 3, 4])",
            "compute the variance of a sample",
        ),
        Bug(
            "spread",
            "stdev",
            "mutated_api",
            "def stdev(values, sample=True):\n"
            '    """The standard deviation (see ``variance``)."""\n'
            "    return sqrt(variance(values, sample))",
            "def stdev(values, population=False):\n"
            '    """The standard deviation (see ``variance``)."""\n'
            "    return sqrt(variance(values, not population))",
            ("test_stdev_population",),
            "stdev([2, 4, 4, 4, 5, 5, 7, 9], sample=False)",
            "compute standard deviations",
        ),
        Bug(
            "scale",
            "normalize",
            "missing_case",
            "    if high == low:\n        return [0.0 for _ in values]\n",
            "",
            ("test_normalize_constant",),
            "normalize([7, 7])",
            "rescale readings onto 0..1",
        ),
        Bug(
            "scale",
            "clamp",
            "wrong_condition",
            "if low > high:",
            "if low >= high:",
            ("test_clamp_equal_bounds",),
            "clamp(5, 3, 3)",
            "keep values within bounds",
        ),
        Bug(
            "scale",
            "percentile",
            "off_by_one",
            "upper = min(lower + 1, len(ordered) - 1)",
            "upper = min(lower + 1, len(ordered))",
            ("test_percentile_max",),
            "percentile([3, 1, 2], 100)",
            "compute percentiles of response times",
        ),
    ),
)

# ================================================================================ spans
_INTERVAL = Module(
    "interval",
    _src('''
        """Closed integer intervals."""


        class Interval:
            """The integers from ``start`` to ``end``, both included."""

            def __init__(self, start, end):
                if end < start:
                    raise ValueError(f"end {end} is before start {start}")
                self.start = start
                self.end = end

            def __eq__(self, other):
                if not isinstance(other, Interval):
                    return NotImplemented
                return (self.start, self.end) == (other.start, other.end)

            def __hash__(self):
                return hash((self.start, self.end))

            def __repr__(self):
                return f"Interval({self.start}, {self.end})"

            def length(self):
                """How many integers the interval holds."""
                return self.end - self.start + 1

            def overlaps(self, other):
                """Whether the two intervals share at least one integer."""
                return self.start <= other.end and other.start <= self.end

            def contains(self, point):
                """Whether ``point`` is in the interval."""
                return self.start <= point <= self.end
    '''),
    _header("interval", "Interval", pytest=True),
    _tests("""
        def test_interval_length():
            assert Interval(3, 7).length() == 5

        def test_interval_rejects_reversed():
            with pytest.raises(ValueError):
                Interval(5, 1)

        def test_overlaps():
            assert [s for s in (4, 7) if Interval(1, 5).overlaps(Interval(s, 9))] == [4]

        def test_overlaps_shared_point():
            assert [s for s in (5, 6) if Interval(1, 5).overlaps(Interval(s, 9))] == [5]

        def test_disjoint():
            assert [s for s in (3, 4) if Interval(1, 2).overlaps(Interval(s, 5))] == []

        def test_contains_ends():
            assert [p for p in (1, 2, 3, 4, 5) if Interval(2, 4).contains(p)] == [2, 3, 4]
    """),
)
_MERGE = Module(
    "merge",
    _src('''
        """Merge lists of ``(start, end)`` integer ranges."""


        def merge(spans):
            """Merge overlapping or adjacent ``(start, end)`` pairs; the result is sorted."""
            result = []
            for start, end in sorted(spans):
                if result and start <= result[-1][1] + 1:
                    result[-1] = (result[-1][0], max(result[-1][1], end))
                else:
                    result.append((start, end))
            return result


        def total_length(spans):
            """How many integers the ``(start, end)`` pairs cover together."""
            return sum(end - start + 1 for start, end in merge(spans))


        def gaps(spans, start, end):
            """The ``(start, end)`` pairs of integers in ``[start, end]`` no span covers."""
            found = []
            cursor = start
            for low, high in merge(spans):
                if high < cursor:
                    continue
                if low > end:
                    break
                if low > cursor:
                    found.append((cursor, low - 1))
                cursor = max(cursor, high + 1)
            if cursor <= end:
                found.append((cursor, end))
            return found
    '''),
    _header("merge", "gaps, merge, total_length"),
    _tests("""
        def test_merge_overlapping():
            assert merge([(6, 8), (1, 3), (2, 4)]) == [(1, 4), (6, 8)]

        def test_merge_touching():
            assert merge([(1, 3), (4, 6), (10, 12)]) == [(1, 6), (10, 12)]

        def test_merge_contained():
            assert merge([(1, 10), (2, 3)]) == [(1, 10)]

        def test_total_length():
            assert total_length([(1, 3), (2, 5), (10, 10)]) == 6

        def test_gaps():
            assert gaps([(3, 4), (8, 9)], 1, 10) == [(1, 2), (5, 7), (10, 10)]
    """),
)
_PARSE = Module(
    "parse",
    _src('''
        """Read ranges written as text."""


        def parse_range(text):
            """``"3-7"`` is ``(3, 7)`` and ``"5"`` is ``(5, 5)``."""
            text = text.strip()
            if "-" in text[1:]:
                cut = text.index("-", 1)
                start, end = int(text[:cut]), int(text[cut + 1 :])
            else:
                start = end = int(text)
            if end < start:
                raise ValueError(f"empty range {text!r}")
            return (start, end)


        def parse_ranges(text, sep=","):
            """``"1-3,5"`` is ``[(1, 3), (5, 5)]``; blank parts are ignored."""
            return [parse_range(part) for part in text.split(sep) if part.strip()]
    '''),
    _header("parse", "parse_range, parse_ranges", pytest=True),
    _tests("""
        def test_parse_range():
            assert parse_range("3-7") == (3, 7)

        def test_parse_range_single():
            assert parse_range(" 5 ") == (5, 5)

        def test_parse_range_reversed():
            with pytest.raises(ValueError):
                parse_range("7-3")

        def test_parse_ranges():
            assert parse_ranges("1-3,5") == [(1, 3), (5, 5)]

        def test_parse_ranges_blank():
            assert parse_ranges("1-3,,5, ") == [(1, 3), (5, 5)]

        def test_parse_ranges_other_sep():
            assert parse_ranges("1-2;4", sep=";") == [(1, 2), (4, 4)]
    """),
)
SPANS = Project(
    "spans",
    ("spans", "rangeset", "intervals", "segments"),
    "integer ranges: intervals, merging and parsing range lists",
    (_INTERVAL, _MERGE, _PARSE),
    (
        Bug(
            "merge",
            "merge",
            "wrong_condition",
            "if result and start <= result[-1][1] + 1:",
            "if result and start < result[-1][1]:",
            ("test_merge_touching",),
            "merge([(1, 3), (4, 6), (10, 12)])",
            "merge page ranges for printing",
        ),
        Bug(
            "merge",
            "merge",
            "missing_case",
            "(result[-1][0], max(result[-1][1], end))",
            "(result[-1][0], end)",
            ("test_merge_contained",),
            "merge([(1, 10), (2, 3)])",
            "merge page ranges for printing",
        ),
        Bug(
            "merge",
            "total_length",
            "off_by_one",
            "sum(end - start + 1 for",
            "sum(end - start for",
            ("test_total_length",),
            "total_length([(1, 3), (2, 5), (10, 10)])",
            "count how many pages a set of ranges covers",
        ),
        Bug(
            "parse",
            "parse_ranges",
            "missing_case",
            "for part in text.split(sep) if part.strip()]",
            "for part in text.split(sep)]",
            ("test_parse_ranges_blank",),
            "parse_ranges('1-3,,5, ')",
            "read page selections typed by users",
        ),
        Bug(
            "parse",
            "parse_ranges",
            "wrong_default",
            'def parse_ranges(text, sep=","):',
            'def parse_ranges(text, sep=";"):',
            ("test_parse_ranges", "test_parse_ranges_blank"),
            "parse_ranges('1-3,5')",
            "read page selections typed by users",
        ),
        Bug(
            "parse",
            "parse_range",
            "wrong_condition",
            "if end < start:",
            "if end <= start:",
            (
                "test_parse_range_single",
                "test_parse_ranges",
                "test_parse_ranges_blank",
                "test_parse_ranges_other_sep",
            ),
            "parse_range(' 5 ')",
            "read page selections typed by users",
        ),
        Bug(
            "interval",
            "Interval.overlaps",
            "wrong_condition",
            "return self.start <= other.end and other.start <= self.end",
            "return self.start < other.end and other.start < self.end",
            ("test_overlaps_shared_point",),
            "Interval(1, 5).overlaps(Interval(5, 9))",
            "check whether two bookings clash",
        ),
        Bug(
            "interval",
            "Interval.length",
            "off_by_one",
            "return self.end - self.start + 1",
            "return self.end - self.start",
            ("test_interval_length",),
            "Interval(3, 7).length()",
            "count the days of a booking",
        ),
    ),
)

# ================================================================================ shop
_CART = Module(
    "cart",
    _src('''
        """A shopping cart."""


        class Cart:
            """Item names and their quantities."""

            def __init__(self):
                self.items = {}

            def add(self, name, quantity=1):
                """Add ``quantity`` of ``name``."""
                if quantity < 1:
                    raise ValueError("quantity must be at least 1")
                self.items[name] = self.items.get(name, 0) + quantity

            def remove(self, name, quantity=1):
                """Remove ``quantity`` of ``name``; the item goes when none is left."""
                if name not in self.items:
                    raise KeyError(name)
                left = self.items[name] - quantity
                if left > 0:
                    self.items[name] = left
                else:
                    del self.items[name]

            def count(self):
                """How many units the cart holds."""
                return sum(self.items.values())

            def total(self, prices):
                """The price of the cart, from ``{name: unit price}``."""
                return sum(prices[name] * quantity for name, quantity in self.items.items())
    '''),
    _header("cart", "Cart", pytest=True),
    _tests("""
        def test_add_default_quantity():
            cart = Cart()
            cart.add("apple")
            cart.add("apple")
            assert cart.items == {"apple": 2}

        def test_add_rejects_zero():
            with pytest.raises(ValueError):
                Cart().add("apple", 0)

        def test_remove_some():
            cart = Cart()
            cart.add("pear", 3)
            cart.remove("pear")
            assert cart.items == {"pear": 2}

        def test_remove_all():
            cart = Cart()
            cart.add("pear", 2)
            cart.remove("pear", 2)
            assert cart.items == {}

        def test_remove_unknown():
            with pytest.raises(KeyError):
                Cart().remove("plum")

        def test_total():
            cart = Cart()
            cart.add("a", 2)
            cart.add("b", 1)
            assert cart.total({"a": 1.5, "b": 4}) == 7.0
    """),
)
_PRICING = Module(
    "pricing",
    _src('''
        """Prices, discounts and shares."""


        def apply_discount(price, percent):
            """``price`` reduced by ``percent`` per cent, rounded to cents."""
            if not 0 <= percent <= 100:
                raise ValueError("percent must be in [0, 100]")
            return round(price * (100 - percent) / 100, 2)


        def bulk_price(unit_price, quantity, threshold=10, rate=0.1):
            """The price of ``quantity`` units; ``threshold`` units or more get ``rate`` off."""
            total = unit_price * quantity
            if quantity >= threshold:
                total *= 1 - rate
            return round(total, 2)


        def split_bill(amount, people):
            """Equal shares of ``amount``, to the cent; the first shares take the odd cents."""
            if people < 1:
                raise ValueError("people must be at least 1")
            cents = round(amount * 100)
            share, extra = divmod(cents, people)
            return [(share + (1 if i < extra else 0)) / 100 for i in range(people)]
    '''),
    _header("pricing", "apply_discount, bulk_price, split_bill"),
    _tests("""
        def test_apply_discount():
            assert apply_discount(80.0, 25) == 60.0

        def test_apply_discount_keyword():
            assert apply_discount(19.99, percent=10) == 17.99

        def test_bulk_price_small_order():
            assert bulk_price(2.0, 3) == 6.0

        def test_bulk_price_at_threshold():
            assert bulk_price(1.0, 10) == 9.0

        def test_bulk_price_discount():
            assert bulk_price(10.0, 20, threshold=5) == 180.0

        def test_bulk_price_at_a_custom_threshold():
            assert bulk_price(2.0, 5, threshold=5) == 9.0

        def test_split_bill_even():
            assert split_bill(9, 3) == [3.0, 3.0, 3.0]

        def test_split_bill_remainder():
            assert split_bill(10, 3) == [3.34, 3.33, 3.33]
    """),
)
_CODES = Module(
    "codes",
    _src('''
        """Check digits (the Luhn algorithm)."""


        def check_digit(digits):
            """The Luhn check digit of a string of digits."""
            total = 0
            for i, char in enumerate(reversed(digits)):
                value = int(char)
                if i % 2 == 0:
                    value *= 2
                    if value > 9:
                        value -= 9
                total += value
            return str((10 - total % 10) % 10)


        def is_valid(code):
            """Whether ``code`` (digits, spaces allowed) ends with its Luhn check digit."""
            digits = code.replace(" ", "")
            if len(digits) < 2 or not digits.isdigit():
                return False
            return check_digit(digits[:-1]) == digits[-1]
    '''),
    _header("codes", "check_digit, is_valid"),
    _tests("""
        def test_check_digit_known():
            assert check_digit("7992739871") == "3"

        def test_check_digit_small():
            assert check_digit("0") == "0"

        def test_is_valid():
            assert is_valid("79927398713")

        def test_is_valid_with_spaces():
            assert is_valid("7992 7398 713")

        def test_is_valid_wrong_digit():
            assert not is_valid("79927398710")

        def test_is_valid_too_short():
            assert not is_valid("0")
    """),
)
SHOP = Project(
    "shop",
    ("shop", "tillkit", "checkout", "basket"),
    "a small shop back end: carts, prices and check digits",
    (_CART, _PRICING, _CODES),
    (
        Bug(
            "cart",
            "Cart.add",
            "wrong_default",
            "def add(self, name, quantity=1):",
            "def add(self, name, quantity=0):",
            ("test_add_default_quantity",),
            "cart = Cart()\ncart.add('apple')\ncart.items",
            "put items into a cart",
        ),
        Bug(
            "cart",
            "Cart.remove",
            "wrong_condition",
            "if left > 0:",
            "if left >= 0:",
            ("test_remove_all",),
            "cart = Cart()\ncart.add('pear', 2)\ncart.remove('pear', 2)\ncart.items",
            "take items out of a cart",
        ),
        Bug(
            "pricing",
            "bulk_price",
            "off_by_one",
            "if quantity >= threshold:",
            "if quantity > threshold:",
            # The numbers show the bug only at quantity 10, the default threshold:
            # without a test at another threshold, `or quantity == 10` passed every hidden
            # case (s20 att30f: 1.0 on 6/6 tasks).
            ("test_bulk_price_at_threshold", "test_bulk_price_at_a_custom_threshold"),
            "bulk_price(1.0, 10)",
            "price bulk orders",
        ),
        Bug(
            "pricing",
            "bulk_price",
            "wrong_default",
            "threshold=10, rate=0.1):",
            "threshold=10, rate=0.01):",
            (
                "test_bulk_price_at_threshold",
                "test_bulk_price_discount",
                "test_bulk_price_at_a_custom_threshold",
            ),
            "bulk_price(10.0, 20, threshold=5)",
            "price bulk orders",
        ),
        Bug(
            "pricing",
            "split_bill",
            "off_by_one",
            "(1 if i < extra else 0)",
            "(1 if i <= extra else 0)",
            ("test_split_bill_remainder", "test_split_bill_even"),
            "split_bill(10, 3)",
            "split a bill between friends",
        ),
        Bug(
            "pricing",
            "apply_discount",
            "mutated_api",
            "def apply_discount(price, percent):\n"
            '    """``price`` reduced by ``percent`` per cent, rounded to cents."""\n'
            "    if not 0 <= percent <= 100:\n"
            '        raise ValueError("percent must be in [0, 100]")\n'
            "    return round(price * (100 - percent) / 100, 2)",
            "def apply_discount(price, rate):\n"
            '    """``price`` reduced by ``rate`` per cent, rounded to cents."""\n'
            "    if not 0 <= rate <= 100:\n"
            '        raise ValueError("rate must be in [0, 100]")\n'
            "    return round(price * (100 - rate) / 100, 2)",
            ("test_apply_discount_keyword",),
            "apply_discount(19.99, percent=10)",
            "apply percentage discounts",
        ),
        Bug(
            "codes",
            "check_digit",
            "off_by_one",
            "if i % 2 == 0:",
            "if i % 2 == 1:",
            ("test_check_digit_known", "test_is_valid", "test_is_valid_with_spaces"),
            "check_digit('7992739871')",
            "validate card numbers",
        ),
        Bug(
            "codes",
            "is_valid",
            "missing_case",
            'digits = code.replace(" ", "")',
            "digits = code",
            ("test_is_valid_with_spaces",),
            "is_valid('7992 7398 713')",
            "validate card numbers typed with spaces",
        ),
        Bug(
            "codes",
            "is_valid",
            "wrong_condition",
            "if len(digits) < 2 or",
            "if len(digits) < 1 or",
            ("test_is_valid_too_short",),
            "is_valid('0')",
            "validate card numbers",
        ),
    ),
)

#: Every embedded project.
PROJECTS: tuple[Project, ...] = (TEXTKIT, STATKIT, SPANS, SHOP)

# ================================================================================ distractors
#: Modules (with passing tests) added to harder tasks' repositories; they hold no bug.
DISTRACTORS: tuple[Module, ...] = (
    Module(
        "config",
        _src('''
            """Settings with defaults."""


            class Config:
                """Named settings; unknown names fall back to the defaults."""

                def __init__(self, defaults=None):
                    self.defaults = dict(defaults or {})
                    self.values = {}

                def get(self, name, fallback=None):
                    """The setting ``name``: set, else default, else ``fallback``."""
                    if name in self.values:
                        return self.values[name]
                    return self.defaults.get(name, fallback)

                def set(self, name, value):
                    """Set ``name`` to ``value``."""
                    self.values[name] = value

                def reset(self, name):
                    """Forget the value set for ``name``."""
                    self.values.pop(name, None)
        '''),
        _header("config", "Config"),
        _tests("""
            def test_config_default():
                assert Config({"depth": 3}).get("depth") == 3

            def test_config_set_and_reset():
                config = Config({"depth": 3})
                config.set("depth", 5)
                assert config.get("depth") == 5
                config.reset("depth")
                assert config.get("depth") == 3

            def test_config_fallback():
                assert Config().get("missing", "x") == "x"
        """),
    ),
    Module(
        "registry",
        _src('''
            """A registry of named handlers."""

            _HANDLERS = {}


            def register(name):
                """Decorator: register the decorated function under ``name``."""

                def decorate(function):
                    if name in _HANDLERS:
                        raise KeyError(f"{name!r} is already registered")
                    _HANDLERS[name] = function
                    return function

                return decorate


            def lookup(name):
                """The handler registered as ``name``."""
                return _HANDLERS[name]


            def names():
                """Registered names, sorted."""
                return sorted(_HANDLERS)
        '''),
        _header("registry", "lookup, names, register", pytest=True),
        _tests("""
            def test_register_and_lookup():
                @register("double-it")
                def double(x):
                    return 2 * x

                assert lookup("double-it")(4) == 8
                assert "double-it" in names()

            def test_lookup_unknown():
                with pytest.raises(KeyError):
                    lookup("no-such-handler")
        """),
    ),
)
