"""Findings of the s34 blind round against SWE-v0 (att34a).

F1 (high where a test has one): a whole-number literal past 2**53 was read as a float by the
host's order and tolerance checks (``9223372036854775807`` as ``2.0**63``): the unchanged code
passed ``clamp(2**63) <= 9223372036854775807``, ``next_id(N) != N`` and ``abs(bump(x) - N) < 1``
on the host (1.0 ``host``) where pytest fails all three; F2 (honest): the reference of
``assertTrue(bump(maxsize) > maxsize)`` scored 0 (``> 2.0**63`` is false for ``2**63``).
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.probe import probe_module, same

from .test_blind_s33 import _verdict

_HEAD = "import unittest\n\nimport pytest\n\nfrom acme import bump\n\n\n"
_MAX = 9223372036854775807  # sys.maxsize: 2**63 - 1, not a float
_ODD = 9007199254740993  # 2**53 + 1


def _check(assertion: str, reference: int, got: int) -> bool:
    """Whether the host's check of ``assertion`` holds for ``got`` (reference: ``reference``)."""
    probe = probe_module(_HEAD + f"def test_a():\n    assert {assertion}\n")
    assert probe.predicates and probe.notes == ()
    observed = [["host", 0, ["int", str(v)]] for v in (reference, got)]
    return same(observed[0], observed[1], 0, None, probe.predicates)


@pytest.mark.parametrize(
    ("assertion", "reference", "unchanged"),
    [
        (f"bump(2 ** 63) <= {_MAX}", _MAX, 2**63),
        (f"bump({_ODD}) != {_ODD}", _ODD + 1, _ODD),
        (f"abs(bump({_ODD - 1}) - {_ODD}) < 1", _ODD, _ODD - 1),
        (f"bump({_ODD - 1}) == pytest.approx({_ODD}, rel=0, abs=0.5)", _ODD, _ODD - 1),
        (f"bump({_MAX}) > {_MAX}", _MAX + 1, _MAX),
    ],
)
def test_a_large_whole_number_literal_is_compared_exactly(assertion, reference, unchanged):
    """As Python compares ints: the reference passes, the unchanged value fails."""
    assert _check(assertion, reference, reference)
    assert not _check(assertion, reference, unchanged)


def test_isclose_converts_to_float_as_math_does():
    """``math.isclose`` itself converts ints to floats: 2**53 + 1 is close to 2**53 there."""
    probe = probe_module(
        "import math\n"
        + _HEAD
        + f"def test_a():\n    assert math.isclose(bump(1), {_ODD}, rel_tol=0.0)\n"
    )
    assert [kind for kind, _ in probe.predicates] == ["near"]
    observed = [["host", 0, ["int", str(v)]] for v in (_ODD, _ODD - 1)]
    assert same(observed[0], observed[1], 0, None, probe.predicates)


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_unchanged_code_is_not_paid_past_a_float():
    """F1/F2 end to end: the no-op was paid 1.0 ``host``, the reference of ``>`` 0."""
    base = "def bump(x):\n    return x\n"
    fixed = "def bump(x):\n    return x + 1\n"
    honest = "def bump(x):\n    y = x\n    y += 1\n    return y\n"
    tests = _HEAD.replace("import pytest\n\n", "") + (
        "class T(unittest.TestCase):\n    def test_a(self):\n"
        f"        self.assertTrue(bump({_MAX}) > {_MAX})\n"
        f"        assert bump({_ODD}) != {_ODD}\n"
    )
    assert _verdict(base, fixed, base, tests) == 0.0
    assert _verdict(base, fixed, honest, tests) == 1.0


# -- att34d: operators of a repository object ---------------------------------------------

_CLASSES = "import unittest\n\nfrom acme import Stack, Version, Duration, Range, render\n\n\n"


@pytest.mark.parametrize(
    ("body", "op"),
    [
        ("assert not Stack()", "truth"),
        ("assert Stack([1])", "truth"),
        ("assert Version('1.9') < '1.10'", "operated"),
        ("assert 3 in Range(1, 4)", "operated"),
        ("assert Duration(90) - 30 == 60", "operated"),
        ("assert render(3) > 0", "operated"),
        ("assert render(3) == pytest.approx(2.5)", "operated"),
        ("assert render(3) == 5", None),
        ("assert render(3)[0] == 5", None),
        ("assert len(Stack()) == 0", None),
    ],
)
def test_a_check_an_operator_decides_is_marked(body, op):
    """att34d: the probe observed the object alone (its state), so a bug in ``__len__``,
    ``__contains__``, ``__lt__`` or ``__sub__`` never showed; such checks now say so."""
    text = probe_module(_CLASSES + "import pytest\n\n\ndef test_a():\n    " + body + "\n").text
    ops = {kind for kind in ("truth", "operated") if f"op='{kind}'" in text}
    assert ops == ({op} if op else set()), text


def test_unittest_arithmetic_with_a_literal_is_marked():
    body = "class T(unittest.TestCase):\n    def test_a(self):\n"
    text = probe_module(_CLASSES + body + "        self.assertEqual(10 + Duration(5), 15)\n").text
    assert "op='operated'" in text
    text = probe_module(_CLASSES + body + "        self.assertEqual(render(5), 15)\n").text
    assert "op=" not in text


def test_the_sandbox_records_what_a_repository_operator_decides():
    from rllm_envs.swe.executor import observe

    class Stack:  # a class of "the repository" (not builtin, not the standard library)
        def __init__(self, n):
            self.items = [0] * n

        def __len__(self):
            return len(self.items)

    seen: list = []
    observe(Stack(0), host=0, op="truth", _seen=seen)
    observe(Stack(2), op="operated", _seen=seen)
    observe([1, "a", {2: (3.0, None)}], op="operated", _seen=seen)
    observe([Stack(1)], unordered=True, op="operated", _seen=seen)
    import collections

    observe(collections.Counter("aab"), op="operated", _seen=seen)
    assert seen[0] == ["host", 0, ["bool", False]]  # its own __len__, as `assert` takes it
    assert seen[1][0] == "operated"
    assert seen[2][0] == "list"  # plain values: as before
    assert seen[3][0] == "operated"
    assert seen[4][0] != "operated"  # the standard library's operators are not the repository's

    class Meters(float):  # a builtin subclass that redefines nothing: float's operators
        pass

    class Loose(str):
        def __contains__(self, item):
            return True

    observe(Meters(2.0), op="operated", _seen=seen)
    observe(Loose("abc"), op="operated", _seen=seen)
    assert seen[5][0] == "sub" and seen[6][0] == "operated"
    assert same(seen[1], seen[1]) and not same(seen[1], seen[1][1])
    assert not same(seen[1][1], seen[1])


@pytest.mark.slow
@pytest.mark.sandbox
def test_operators_of_the_repository_do_not_pay_the_unchanged_code():
    """att34d end to end: the no-op was paid 1.0 ``host`` on each of these."""
    base = (
        "class Stack:\n    def __init__(self, items=()):\n        self.items = list(items)\n"
        "    def __len__(self):\n        return len(self.items) + 1\n\n\n"
        "class Version:\n    def __init__(self, text):\n        self.text = text\n"
        "    def __lt__(self, other):\n        return self.text < other\n"
    )
    fixed = base.replace("len(self.items) + 1", "len(self.items)").replace(
        "self.text < other",
        "[int(p) for p in self.text.split('.')] < [int(p) for p in other.split('.')]",
    )
    honest = fixed.replace(
        "self.items = list(items)", "self.items = list(items)\n        self.n = 0"
    )
    head = "import unittest\nfrom acme import Stack, Version\n\n\n"
    truth = (
        head + "class T(unittest.TestCase):\n    def test_a(self):\n        assert not Stack()\n"
    )
    assert _verdict(base, fixed, base, truth) == 0.0
    assert _verdict(base, fixed, honest, truth) == 1.0  # its own state, the same truth
    order = head + "class T(unittest.TestCase):\n    def test_a(self):\n"
    order += "        assert Version('1.9') < '1.10'\n"
    assert _verdict(base, fixed, base, order, pay=False) == 0.0  # withheld (host_partial)


def test_equality_python_hashes_repository_objects_for_is_marked():
    """att34f: ``tags() == {"python", "rust"}`` is decided by ``Tag.__eq__`` / ``__hash__``
    (the sandbox's strict equality leaves sets, dict keys and views to Python), which the
    elements' states do not show: the no-op was paid 1.0 ``host`` on 8 shapes."""
    import collections
    import enum

    from rllm_envs.swe.executor import observe

    class Tag:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            return str(other).lower() == self.name.lower()

        def __hash__(self):
            return hash(self.name.lower())

    class Color(enum.Enum):  # compared as the standard library's Enum does
        RED = 1

    seen: list = []
    for value in (
        {Tag("python")},
        {Tag("python"): 0},
        {Tag("python"): 0}.keys(),
        [frozenset({Tag("a")})],
        {"a": {Tag("a")}},
        [Tag("python")],  # compared element by element, by Tag.__eq__ against a non-plain value
        {"python": Tag("x")},
    ):
        observe(value, _seen=seen)
    assert all(s[0] == "operated" for s in seen), seen
    plain: list = []
    for value in ({Color.RED}, {"a", "b"}, (1, 2), {"a": 1}.keys(), {"a": 1}.items()):
        observe(value, _seen=plain)  # no __eq__ of the repository's (a view's class is unnamed)
    assert all(s[0] != "operated" for s in plain), plain
    deque: list = []
    observe(collections.deque([Tag("python")]), op="operated", _seen=deque)
    assert deque[0][0] == "operated"  # `in` on a deque runs the elements' __eq__


def test_a_counter_equals_the_plain_dict_it_holds():
    """att34f F2: an honest ``Counter`` where the reference returns a dict scored 0."""
    import collections

    from rllm_envs.swe.executor import observed

    reference = observed({"a": 2, "b": 1})
    assert same(reference, observed(collections.Counter("aab")))
    assert not same(reference, observed(collections.Counter("abb")))


def test_a_repository_object_compared_with_a_written_standard_value_is_marked():
    """att34g: ``Money("1.50") == Decimal("1.5")`` (two values that are not plain) is decided
    by ``Money.__eq__`` in the sandbox's strict equality, its state compared on the host: with
    the bug in ``__eq__`` the unchanged code was paid 1.0 ``host`` on 6 shapes."""
    import decimal

    from rllm_envs.swe.executor import observe

    class Money:
        def __init__(self, text):
            self.cents = int(decimal.Decimal(text) * 100)

        def __eq__(self, other):
            return self.cents == int(decimal.Decimal(other) * 100)

    class Plain:  # no __eq__ of its own: identity, which its state is no worse a proxy for
        def __init__(self):
            self.x = 1

    seen: list = []
    for value in (Money("1.5"), {"a": Money("2")}, [Money("3")], Plain(), decimal.Decimal("1")):
        observe(value, _seen=seen)
    assert [s[0] == "operated" for s in seen] == [True, True, True, False, False]


def test_a_chained_order_of_a_computed_number_is_checked_on_the_host():
    """att34g F2 (honest): ``0 <= jitter() <= 1`` was compared with the reference's value,
    which a random draw never repeats: the reference scored 0 against itself."""
    probe = probe_module(_CLASSES + "def test_a():\n    assert 0 <= render(1) < 2.5\n")
    assert probe.predicates == (("order", '[">=", 0]'), ("order", '["<", 2.5]'))
    assert probe.text.count("render(1)") == 1 and "2.5" not in probe.text
    reference = [["host", k, ["float", "0.25"]] for k in (0, 1)]
    for got, holds in (("0.9", True), ("2.5", False), ("-0.1", False)):
        values = [["host", k, ["float", got]] for k in (0, 1)]
        assert (
            all(
                same(r, v, 0, None, probe.predicates)
                for r, v in zip(reference, values, strict=True)
            )
            is holds
        )


def test_a_repository_subclass_of_a_standard_value_is_marked():
    """att34j: ``class Money(Decimal)`` with an attribute was observed by its ``__dict__``
    alone (or a ``__repr__`` of its own), not the number its base holds and compares: the
    unchanged code paid 1.0 ``host`` on 3 shapes (Decimal, date, timedelta)."""
    import datetime
    import decimal
    import enum

    from rllm_envs.swe.executor import observe

    class Money(decimal.Decimal):
        def __init__(self, value):
            self.currency = "USD"

    class Stamp(datetime.date):
        pass

    class Level(enum.IntEnum):  # its value is in the member's __dict__
        HIGH = 3

    class Meters(float):
        pass

    seen: list = []
    for value in (Money("3.75"), Stamp(2024, 1, 8), Level.HIGH, Meters(2.0), decimal.Decimal(1)):
        observe(value, _seen=seen)
    assert [s[0] == "operated" for s in seen] == [True, True, False, False, False]


def test_containers_are_looked_into_by_their_stored_elements():
    """att34l: a builtin subclass (``class TagList(list): pass``), a namedtuple and the
    standard library's ``UserList`` were excused without a look at their elements, whose own
    ``__eq__`` the container's ``in`` and ``==`` run: the unchanged code paid 1.0 ``host`` on
    6 shapes."""
    import collections

    from rllm_envs.swe.executor import observe

    class Tag:
        def __init__(self, name):
            self.name = name

        def __eq__(self, other):
            return str(other).lower() == self.name.lower()

        __hash__ = None  # type: ignore[assignment]

    class TagList(list):
        pass

    Pair = collections.namedtuple("Pair", "first second")
    tags = [Tag("python"), Tag("go")]
    operated: list = []
    for value in (
        TagList(tags),
        Pair(*tags),
        collections.UserList(tags),
        collections.ChainMap({"a": Tag("a")}),
    ):
        observe(value, _seen=operated)
        observe(value, op="operated", _seen=operated)
    assert all(s[0] == "operated" for s in operated), operated
    plain: list = []
    for value in (TagList(["a"]), Pair(1, 2), collections.UserList([1])):
        observe(value, op="operated", _seen=plain)
    assert all(s[0] != "operated" for s in plain), plain


def test_standard_objects_are_looked_into_for_repository_classes():
    """att34o: an aware datetime with a repository ``tzinfo`` compares through its
    ``utcoffset``, a ``KeysView``'s ``in`` through its mapping's ``__getitem__``; neither was
    looked into (the unchanged code paid 1.0 ``host`` on 6 shapes)."""
    import collections.abc
    import datetime

    from rllm_envs.swe.executor import observe

    class FixedOffset(datetime.tzinfo):
        def utcoffset(self, dt):
            return datetime.timedelta(minutes=120)

    class Registry(collections.abc.Mapping):
        def __init__(self):
            self.items = {"a": 1}

        def __getitem__(self, key):
            return self.items[key]

        def __iter__(self):
            return iter(self.items)

        def __len__(self):
            return len(self.items)

    aware = datetime.datetime(2020, 1, 1, 12, tzinfo=FixedOffset())
    seen: list = []
    observe(aware, _seen=seen)
    observe(Registry().keys(), op="operated", _seen=seen)
    utc = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    observe(utc, _seen=seen)
    observe(datetime.date(2020, 1, 1), _seen=seen)
    assert [s[0] == "operated" for s in seen] == [True, True, False, False]


def test_a_large_plain_value_is_not_taken_for_a_repository_object():
    """Review of att34d-o's marking: a walk capped at 10,000 nodes took any larger value for
    one, so a test comparing a 20,000-element output was withheld for everyone."""
    from rllm_envs.swe.executor import observe

    seen: list = []
    observe(list(range(20_000)), _seen=seen)
    observe([(i, str(i)) for i in range(20_000)], op="operated", _seen=seen)
    assert all(s[0] != "operated" for s in seen)
