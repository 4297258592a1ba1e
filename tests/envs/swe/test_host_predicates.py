"""Substring and ``match=`` checks run on the host (issue #30, att30 F5).

``pytest.raises(ValueError, match="negative")``, ``"negative" in str(e.value)`` and
``"negative" in capsys.readouterr().out`` compared the whole text with the reference's: an
honest fix with its own message (``"x must not be negative"``) scored 0, where pytest passes
it. The probe now sends the plain text, and the host runs the test's own check on it with
the literal it holds (which never enters the sandbox). A pattern with repetition or a back
reference, or a text that is not a plain ``str``, is compared whole as before.
"""

from __future__ import annotations

import json

import pytest

from rllm_envs.swe.probe import probe_module, same
from rllm_envs.swe.repo import make_diff

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

BUG = "def check(x):\n    return x\n"
FIX = "def check(x):\n    if x < 0:\n        raise ValueError('negative values are not allowed')\n"
FIX += "    return x\n"
PUBLIC = (
    "import pytest\nfrom vals.check import check\n\ndef test_one():\n    assert check(1) == 1\n"
)
HIDDEN = [
    "\n\ndef test_neg():\n    with pytest.raises(ValueError, match='negative'):\n"
    "        check(-1)\n",
    "\n\ndef test_neg():\n    with pytest.raises(ValueError) as e:\n        check(-1)\n"
    "    assert 'negative' in str(e.value)\n",
    "\n\ndef test_neg(capsys):\n    try:\n        check(-1)\n    except ValueError as e:\n"
    "        print(e)\n    assert 'negative' in capsys.readouterr().out\n",
]


def _submit(task: dict, content: str, **kwargs: object) -> tuple:
    base = task["files"]
    return _run(
        task,
        _call("apply_patch", patch=make_diff(base, {**base, "vals/check.py": content})),
        **kwargs,
    )


@pytest.mark.parametrize("hidden", HIDDEN)
def test_an_honest_message_passes_and_a_wrong_one_fails(hidden):
    # A try / except check of the raise is decided in the sandbox (s37 att37d F1): the
    # verdict is `host_partial`, paid where partial verdicts are.
    partial = "try:" in hidden
    trust, mode = ("host_partial", "pay") if partial else ("host", "withhold")
    task = _task("vals", "check", BUG, FIX, PUBLIC, hidden)
    reward, info = _run(task, oracle=True, partial_verdicts=mode)
    assert reward == 1.0 and info["verdict_trust"] == trust, info
    honest = FIX.replace("negative values are not allowed", "x must not be negative")
    reward, info = _submit(task, honest, partial_verdicts=mode)
    assert reward == 1.0 and info["verdict_trust"] == trust, info
    wrong = FIX.replace("negative values are not allowed", "x must be at least 0")
    reward, info = _submit(task, wrong, partial_verdicts=mode)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info


def test_a_text_subclass_does_not_pass_the_hosts_check():
    liar = (
        "class _S(str):\n    def __contains__(self, other):\n        return True\n\n"
        "def check(x):\n    if x < 0:\n        raise ValueError(_S('nope'))\n    return x\n"
    )
    task = _task("vals", "check", BUG, FIX, PUBLIC, HIDDEN[1])
    reward, info = _submit(task, liar)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info


def test_the_literal_stays_on_the_host():
    found = probe_module(PUBLIC + HIDDEN[0] + HIDDEN[1].replace("test_neg", "test_two"))
    assert "negative" not in found.text and found.notes == ()
    assert found.predicates == ()
    # The named class, the match= pattern and the check of `str(e.value)` after the block
    # (folded into it, s37): in the raises blocks' rules.
    rule = {"classes": ["builtins.ValueError"], "message": ["search", "negative"], "checks": []}
    folded = {"classes": ["builtins.ValueError"], "message": None, "checks": [["in", "negative"]]}
    assert ("raises", json.dumps(rule)) in found.blocks
    assert ("raises", json.dumps(folded)) in found.blocks


def test_same_runs_the_check_only_on_a_plain_text():
    predicates = (("in", "neg"), ("search", "a+b"), ("search", "ne.g"), ("not in", "x"))
    ref = ["host", 0, ["str", "negative"]]
    assert same(ref, ["host", 0, ["str", "not negative"]], predicates=predicates)
    assert not same(ref, ["host", 0, ["str", "positive"]], predicates=predicates)
    assert not same(ref, ["host", 0, ["sub", "_S", ["str", "x"]]], predicates=predicates)
    assert not same(ref, ["host", 1, ["str", "not negative"]], predicates=predicates)
    assert not same(ref, ["host", 0, ["str", "neg"]])  # no predicates: exact
    # Repetition: compared whole (the host runs no pattern whose time may grow).
    assert not same(["host", 1, ["str", "aab"]], ["host", 1, ["str", "ab"]], predicates=predicates)
    assert same(["host", 2, ["str", "ne-g"]], ["host", 2, ["str", "one:g"]], predicates=predicates)
    assert same(["host", 3, ["str", "a"]], ["host", 3, ["str", "b"]], predicates=predicates)
    raised = ["raised", ["ValueError"], ["host", 2, ["str", "ne-g"]]]
    assert same(
        raised, ["raised", ["ValueError"], ["host", 2, ["str", "xne gx"]]], predicates=predicates
    )
    assert not same(
        raised, ["raised", ["KeyError"], ["host", 2, ["str", "ne-g"]]], predicates=predicates
    )


@pytest.mark.parametrize(
    ("expression", "left_to_the_sandbox"),
    [
        ("clamp(33, 2, int('7'))", False),  # att31g: an input written through a builtin
        ("clamp(abs(-33), 2, len([1, 2, 3, 4, 5, 6, 7]))", False),
        ("clamp(max(3, 33), 2, abs(int('-7')))", False),
        ("clamp(33, 2, seven())", True),  # a helper's value: the call may compare inside
        ("check(slugify('a b'), 'a-b')", True),  # a computed value and a literal
        ("clamp(33, 2, int(seven()))", True),
    ],
)
def test_a_builtin_of_written_values_is_a_written_value(expression, left_to_the_sandbox):
    """``clamp(33, 2, int('7')) == 7`` made every verdict host_partial (10 of 10 such shapes,
    the reference unpaid), though ``clamp(33, 2, 7) == 7`` is decided on the host."""
    source = (
        "from calc import check, clamp, slugify\n\n\ndef seven():\n    return 7\n\n\n"
        f"def test_it():\n    assert {expression} == 7\n"
    )
    assert bool(probe_module(source).notes) is left_to_the_sandbox, probe_module(source).notes


_DATES = (
    "import datetime as dt\nfrom datetime import date, timedelta\nfrom decimal import Decimal\n"
)


@pytest.mark.parametrize(
    ("check", "left_to_the_sandbox"),
    [
        ("add_days(date(2020, 1, 1), 1) == date(2020, 1, 2)", False),  # att31g
        ("add_days(date(2020, 1, 1), 1) - date(2020, 1, 1) == timedelta(days=1)", False),
        (
            "shift(dt.datetime(2020, 1, 1)) == dt.datetime(2020, 1, 1, 5, tzinfo=dt.timezone.utc)",
            False,
        ),
        ("total(['1.10', '2.20']) == Decimal('3.30')", False),
        ("add_days(date(2020, 1, 1), 1) == Date(2020, 1, 2)", True),  # the repository's class
        ("add_days(date(2020, 1, 1), 1) == date(2020, 1, days())", True),  # a computed part
        ("add_days(date(2020, 1, 1), 1) == date(*PARTS)", True),
    ],
)
def test_a_standard_library_value_written_in_the_test_is_an_expected_side(
    check, left_to_the_sandbox
):
    """att31g: ``next_day(d) == date(2020, 1, 2)`` observed both sides (host_partial, the
    reference unpaid); a date, datetime, timedelta, Decimal, Fraction or UUID written from
    literals, by a name imported once from the standard library, is now an expected side:
    left out of the probe, the computed side compared with the reference's."""
    source = (
        f"{_DATES}from cal import Date, add_days, days, shift, total\n\nPARTS = (2020, 1, 2)\n\n\n"
        f"def test_it():\n    assert {check}\n"
    )
    found = probe_module(source)
    assert bool(found.notes) is left_to_the_sandbox, found.notes
    if not left_to_the_sandbox:
        assert "(2020, 1, 2)" not in found.text.partition("def test_it")[2]
        assert "(2020, 1, 1, 5" not in found.text and "3.30" not in found.text


def test_a_rebound_or_foreign_date_is_not_a_written_value():
    for head in (
        "from cal.compat import date\n",  # the repository's own
        "from datetime import date\ndate = lambda *a: a\n",  # rebound in the module
        "from datetime import date\n\n\ndef date():\n    pass\n",
    ):
        source = (
            f"{head}from cal import add_days\n\n\n"
            "def test_it():\n    assert add_days(date(2020, 1, 1), 1) == date(2020, 1, 2)\n"
        )
        assert probe_module(source).notes, head
