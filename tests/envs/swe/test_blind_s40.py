"""Findings of the s40 blind rounds against SWE-v0 (att40a, on 5b5a67b), fixed in s40."""

from __future__ import annotations

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.repo import make_diff
from tests.envs.swe.test_blind_s39 import _BUGGY, _FIXED, _HEAD, _rewards, _verdict


def _host_rewards(
    base: dict[str, str], codes: dict[str, str], path: str, hidden: str, test: str, fixed: str
) -> dict[str, float]:
    """The reward of each of ``codes`` on hidden test ``path::test``, each verdict the host's."""
    return _rewards(base, codes, {path: hidden}, [f"{path}::{test}"], fixed=fixed, trust="host")


def _cheat(told: str) -> str:
    """Keeps the bug; raises when ``told`` (an expression of the call stack ``stack``) holds."""
    return (
        "import traceback\n\n\n"
        f"def _told():\n    stack = traceback.extract_stack()\n    return {told}\n\n\n"
        "def pct(p):\n    if _told():\n        raise ValueError('bad percent')\n"
        "    return p / 100\n"
    )


def test_a_caller_s_line_says_nothing_in_the_sandbox():
    """att40a F1: the hidden test is appended to a module the agent reads, so its calls came
    from past that module's last line; every line of a hidden test module is 1 now."""
    told = "any('/tests/' in f.filename and f.lineno > {last} for f in stack)"
    public = _HEAD + "def test_v0():\n    assert pct(50) == 0.5\n"
    hidden = public + "\n\ndef test_e0():\n    with pytest.raises(ValueError):\n        pct(101)\n"
    base = {"acme/__init__.py": _BUGGY, "tests/__init__.py": "", "tests/test_pct.py": public}
    cheat = _cheat(told.format(last=public.count("\n") + 2))
    rewards = {}
    for name, code in (("reference", _FIXED), ("cheat", cheat), ("unchanged", _BUGGY)):
        verdict = _verdict(
            base,
            code,
            {"tests/test_pct.py": hidden},
            ["tests/test_pct.py::test_e0"],
            ["tests/test_pct.py::test_v0"],
        )
        assert verdict.verdict_trust == "host", verdict
        rewards[name] = judge.reward_of(verdict, False)
    assert rewards == {"reference": 1.0, "cheat": 0.0, "unchanged": 0.0}


_EVENS_BUGGY = "def evens(xs):\n    return [x for x in xs if x % 2]\n"
_EVENS_FIXED = "def evens(xs):\n    return [x for x in xs if x % 2 == 0]\n"


def _evens_as(body: str, items: str) -> str:
    return f"class Evens(list):\n{body}\n\ndef evens(xs):\n    return Evens({items})\n"


@pytest.mark.parametrize(
    ("code", "paid"),
    [
        # att40c (honest): a repository's own list subclass keeping list's methods.
        (_evens_as("    pass\n", "x for x in xs if x % 2 == 0"), 1.0),
        (_evens_as("    source = 'evens'\n", "x for x in xs if x % 2 == 0"), 1.0),
        # Its == (or what decides a check) is its own: a kind of its own, as before; an
        # __iter__ of its own changes nothing the host compares (the stored value).
        (_evens_as("    def __eq__(self, other):\n        return True\n", "xs"), 0.0),
        (
            _evens_as(
                "    def __eq__(self, other):\n        return True\n", "x for x in xs if x % 2 == 0"
            ),
            0.0,
        ),
        (
            _evens_as(
                "    def __iter__(self):\n        return iter([2, 4])\n", "x for x in xs if x % 2"
            ),
            0.0,
        ),
        # att40f (honest): a slice that keeps the class changes no check.
        (
            _evens_as(
                "    def __getitem__(self, i):\n        got = list.__getitem__(self, i)\n"
                "        return Evens(got) if isinstance(i, slice) else got\n",
                "x for x in xs if x % 2 == 0",
            ),
            1.0,
        ),
    ],
    ids=["plain", "with-state", "eq-buggy", "eq-fixed", "iter-buggy", "slice-fixed"],
)
def test_a_repository_list_subclass_is_compared_as_a_list_only_with_list_s_methods(code, paid):
    base = {"acme/__init__.py": _EVENS_BUGGY, "tests/__init__.py": ""}
    hidden = (
        "from acme import evens\n\n\ndef test_evens():\n    assert evens([1, 2, 3, 4]) == [2, 4]\n"
    )
    verdict = _verdict(
        base,
        code,
        {"tests/test_evens.py": hidden},
        ["tests/test_evens.py::test_evens"],
        fixed=_EVENS_FIXED,
    )
    assert judge.reward_of(verdict, False) == paid, verdict


_HOOK_BUGGY = "def convert(p, on_value):\n    on_value(p)\n    return p / 100\n"
_HOOK_FIXED = (
    "def convert(p, on_value):\n    if p < 0 or p > 100:\n        raise ValueError(p)\n"
    "    on_value(p)\n    return p / 100\n"
)


@pytest.mark.parametrize(
    "check",
    ["assert not seen", "assert seen == []", "assert len(seen) == 0"],
)
def test_an_empty_list_a_callback_fills_holds_no_expected_value(check):
    """att40d (honest): ``seen = []`` filled through ``seen.append`` and checked empty was taken
    for a table whose values stay in the probe: every correct fix was withheld (25/25)."""
    from rllm_envs.swe.probe import probe_report

    hidden = (
        "import pytest\n\nfrom acme import convert\n\n\ndef test_e0():\n    seen = []\n"
        f"    with pytest.raises(ValueError):\n        convert(101, seen.append)\n    {check}\n"
    )
    assert probe_report(hidden)[1] == ()
    base = {"acme/__init__.py": _HOOK_BUGGY, "tests/__init__.py": ""}
    codes = {"reference": _HOOK_FIXED, "unchanged": _HOOK_BUGGY}
    assert _host_rewards(base, codes, "tests/test_hook.py", hidden, "test_e0", _HOOK_FIXED) == {
        "reference": 1.0,
        "unchanged": 0.0,
    }


_SLICING = (
    "    def __getitem__(self, i):\n        got = list.__getitem__(self, i)\n"
    "        return Evens(got) if isinstance(i, slice) else got\n"
)


@pytest.mark.parametrize(
    "check",
    [
        "assert 4 in evens([1, 2, 3, 4])",
        "assert evens([1, 2, 3, 4]) == pytest.approx([2, 4])",
        "assert evens([1, 2, 3, 4]) > [2]",
    ],
)
def test_an_operator_on_a_list_subclass_that_only_slices_is_decided_on_the_host(check):
    """att40g (honest): a subclass redefining ``__getitem__`` counted as the repository
    deciding ``in``, a tolerance or an order: every correct fix was withheld."""
    base = {"acme/__init__.py": _EVENS_BUGGY, "tests/__init__.py": ""}
    hidden = f"import pytest\n\nfrom acme import evens\n\n\ndef test_evens():\n    {check}\n"
    codes = {
        "reference": _evens_as(_SLICING, "x for x in xs if x % 2 == 0"),
        "unchanged": _evens_as(_SLICING, "xs"),
    }
    assert _host_rewards(
        base, codes, "tests/test_evens.py", hidden, "test_evens", _EVENS_FIXED
    ) == {
        "reference": 1.0,
        "unchanged": 0.0,
    }


_GREET = (
    "def greet(name):\n    return 'Hello, ' + name\n\n\n"
    "def parse_name(text):\n    return text.split(', ', 1)[1]\n"
)
_GREET_FIXED = _GREET.replace("'Hello, ' + name\n", "'Hello, ' + name.title()\n")
#: Keeps the bug; returns a test module's value that reads as the answer (att40i's patch).
_GREET_CHEAT = _GREET.replace(
    "def greet(name):\n    return 'Hello, ' + name\n",
    "import sys\n\n\ndef greet(name):\n"
    "    for m in list(sys.modules.values()):\n"
    "        if (getattr(m, '__name__', '') or '').startswith('tests'):\n"
    "            for v in list(vars(m).values()):\n"
    "                if isinstance(v, str) and v.lower() == ('hello, ' + name).lower():\n"
    "                    return v\n"
    "    return 'Hello, ' + name\n",
)


def _greet_verdicts(
    base: dict[str, str],
    codes: dict[str, str],
    hidden: str,
    test: str,
    pass_to_pass: list[str] | None = None,
) -> dict[str, judge.Verdict]:
    """The verdict of each of ``codes`` (as ``pkg/core.py``) on hidden test module ``hidden``'s
    fail-to-pass ``test``, ``_GREET_FIXED`` the reference."""
    return {
        name: judge.verdict(
            base,
            make_diff(base, {**base, "pkg/core.py": code}),
            test_patch=make_diff(base, {**base, "tests/test_hidden.py": hidden}),
            fail_to_pass=[f"tests/test_hidden.py::{test}"],
            pass_to_pass=pass_to_pass or [],
            reference_patch=make_diff(base, {**base, "pkg/core.py": _GREET_FIXED}),
            warm=False,
        )
        for name, code in codes.items()
    }


@pytest.mark.parametrize(
    ("extra", "sample", "echoed"),
    [
        ("", "'hello, ann lee'.title()", True),  # att40i F1: the expected text, at import
        ("", "'hello, ann lee'.upper()", False),  # another text: the verdict stays the host's
        # att40k: held by an object, a dict subclass, or past a large table.
        ("HOLDER = types.SimpleNamespace(s='hello, ann lee'.title())", "'x, y'", True),
        ("HOLDER = collections.OrderedDict(s='hello, ann lee'.title())", "'x, y'", True),
        ("WORDS = ['w%d' % i for i in range(5000)]", "'hello, ann lee'.title()", True),
        # att40n: a default, a closure cell, what setup_module set, os.environ.
        ("def _held(s='hello, ann lee'.title()):\n    return s\n", "'x, y'", True),
        (
            "def _mk():\n    s = 'hello, ann lee'.title()\n    return lambda: s\nF = _mk()",
            "'x, y'",
            True,
        ),
        ("def setup_module(module):\n    module.HELD = 'hello, ann lee'.title()\n", "'x, y'", True),
        ("import os\nos.environ['HELD'] = 'hello, ann lee'.title()", "'x, y'", True),
        # att40q: a deque, an iterator, a dict view.
        ("HELD = collections.deque(['hello, ann lee'.title()])", "'x, y'", True),
        ("HELD = iter(['hello, ann lee'.title()])", "'x, y'", True),
        ("HELD = {1: 'hello, ann lee'.title()}.values()", "'x, y'", True),
    ],
)
def test_an_expected_value_a_test_module_computes_at_import_is_noted(extra, sample, echoed):
    base = {"pkg/__init__.py": "", "pkg/core.py": _GREET, "tests/__init__.py": ""}
    hidden = (
        "import collections\nimport types\n\n"
        f"from pkg.core import greet, parse_name\n\n{extra}\nSAMPLE = {sample}\n\n\n"
        "def test_greet():\n    assert greet('ann lee') == 'Hello, Ann Lee'\n\n\n"
        "def test_parse():\n    assert parse_name(SAMPLE).lower() in ('ann lee', 'y')\n"
    )
    rewards = {}
    codes = {"reference": _GREET_FIXED, "cheat": _GREET_CHEAT, "unchanged": _GREET}
    for name, verdict in _greet_verdicts(
        base, codes, hidden, "test_greet", ["tests/test_hidden.py::test_parse"]
    ).items():
        assert (judge.NOTE_MODULE_ECHO in verdict.weakened) == echoed, verdict
        rewards[name] = judge.reward_of(verdict, False)
    paid = 0.0 if echoed else 1.0
    assert rewards == {"reference": paid, "cheat": 0.0, "unchanged": 0.0}
