"""Session-8 attack findings on the host verdict (F1-F10, B1): each cheat earns nothing.

Each task is fixed by its reference patch; the cheat leaves the bug in place (or does
nothing). A verdict that is not decided wholly on the host pays 0 by default
(``partial_verdicts="withhold"``).
"""

from __future__ import annotations

import re

import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.swe import judge
from rllm_envs.swe.repo import make_diff
from rllm_envs.swe.swe_env import SWEEnv
from rllm_envs.swe.tasks import generate
from rllm_envs.tasks import task_rng

from .test_verdict_gaps import INTERVAL, _call, _task


def _run(task: dict, reply: str = "", *, oracle: bool = False, **kwargs: object) -> tuple:
    env = SWEEnv(**kwargs)  # type: ignore[arg-type]
    try:
        env.reset(seed=0, options={"task": task})
        action = env.oracle_action() if oracle else reply + _call("submit")
        _, reward, _, _, info = env.step(action)
        return reward, info
    finally:
        env.close()


# ------------------------------------------------------- item 1 (F5, F7): partial verdicts


def test_a_host_partial_verdict_is_withheld_unless_the_caller_opts_in():
    reward, info = _run(INTERVAL, oracle=True)
    assert info["verdict_trust"] == "host_partial" and info["fail_to_pass"] == 1.0
    assert reward == 0.0 and "host_partial" in info["verdict_withheld"]
    reward, info = _run(INTERVAL, oracle=True, partial_verdicts="pay")
    assert reward == 1.0 and info["verdict_withheld"] == ""


def test_an_in_process_verdict_is_withheld_by_score_unless_the_caller_opts_in():
    task = generate(task_rng(0, 0), difficulty=1)
    patch = task["patch"]
    assert judge.score(patch, task) == 1.0  # embedded tasks are judged on the host
    no_reference = {**task, "patch": ""}
    assert judge.score(patch, no_reference) == 0.0
    assert judge.score(patch, no_reference, partial_verdicts="pay") == 1.0


def test_partial_verdicts_must_be_withhold_or_pay():
    with pytest.raises(InvalidEnvConfig, match="partial_verdicts"):
        SWEEnv(partial_verdicts="yes")
    with pytest.raises(InvalidEnvConfig, match="partial_verdicts"):
        judge.score("", generate(task_rng(0, 0), difficulty=1), partial_verdicts="maybe")


# ------------------------------------------------------------ item 2 (F9): approx and inf


@pytest.mark.parametrize("tolerance", [[1e-6, 1e-12], [1e-9, 0.0], [0.0, 1e-7]])
def test_an_infinity_is_close_only_to_the_same_infinity(tolerance):
    from rllm_envs.swe.probe import same

    def obs(text: str) -> list:
        return ["approx", tolerance, ["float", text]]

    assert not same(obs("1.5"), obs("inf")) and not same(obs("inf"), obs("1.5"))
    assert not same(obs("1.5"), obs("-inf")) and not same(obs("inf"), obs("-inf"))
    assert not same(obs("nan"), obs("nan")) and not same(obs("1.5"), obs("nan"))
    assert same(obs("inf"), obs("inf")) and same(obs("1.5"), obs("1.5000000001"))


MEAN = _task(
    "stats",
    "mean",
    "def mean(xs):\n    return sum(xs) // len(xs)\n",
    "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "from stats.mean import mean\n\ndef test_one():\n    assert mean([2]) == 2\n",
    "\nimport math\nimport pytest\n\ndef test_half():\n"
    "    assert mean([1, 2]) == pytest.approx(1.5)\n"
    "    assert math.isclose(mean([1, 2, 2]), 5 / 3)\n",
)


def test_returning_infinity_does_not_pass_approx_checks():
    inf = _call("replace", path="stats/mean.py", old="sum(xs) // len(xs)", new="float('inf')")
    reward, info = _run(MEAN, inf)
    assert reward == 0.0 and info["verdict_trust"] == "host" and info["fail_to_pass"] == 0.0
    assert _run(MEAN, oracle=True)[0] == 1.0


# ---------------------------------------------------------- item 3 (F1): fail statements


@pytest.mark.parametrize(
    "statement, kept",
    [
        ("assert False, 'should raise hello-world'", "assert False"),
        ("assert 0", "assert 0"),
        ("assert None", "assert None"),
        ("assert 1 == 2", "assert 1 == 2"),
        ("self.assertTrue(False)", "assert False"),
        ("self.assertFalse(True)", "assert not True"),
        ("self.assertEqual(1, 2)", "assert 1 == 2"),
        ("self.fail('want hello-world')", "assert False"),
    ],
)
def test_a_fail_statement_stays_in_the_probe_without_its_message(statement, kept):
    from rllm_envs.swe.probe import NOTE_RAISE, probe_report

    source = (
        "import unittest\nfrom m import f\n\nclass T(unittest.TestCase):\n"
        "    def test_t(self):\n        self.assertEqual(f(1), 2)\n        try:\n"
        "            f(None)\n        except ValueError:\n            pass\n        else:\n"
        f"            {statement}\n"
    )
    text, notes = probe_report(source)
    assert f"        else:\n            {kept}\n" in text, text
    # The raise it checks is decided in the sandbox, the class in the probe (s37 att37c F2):
    # noted, so the verdict is `host_partial`.
    assert "hello-world" not in text and notes == (NOTE_RAISE,)


SLUG_RAISE = _task(
    "slug",
    "core",
    "def slugify(text):\n    return text.lower()\n",
    "def slugify(text):\n    if not text:\n        raise ValueError('empty')\n"
    "    return text.lower()\n",
    "from slug.core import slugify\n\ndef test_lower():\n    assert slugify('AB') == 'ab'\n",
    "\n\ndef test_empty():\n    assert slugify('abc') == 'abc'\n    try:\n"
    "        slugify('')\n    except ValueError:\n        pass\n    else:\n"
    "        assert False, 'should raise'\n",
)


def test_doing_nothing_does_not_pass_a_test_that_reaches_assert_false():
    # A try / except check of a raise is decided in the sandbox (s37 att37c F2): the verdict
    # is `host_partial`, paid only where partial verdicts are.
    reward, info = _run(SLUG_RAISE, partial_verdicts="pay")
    assert reward == 0.0 and info["fail_to_pass"] == 0.0
    assert info["verdict_trust"] == "host_partial"
    assert _run(SLUG_RAISE, oracle=True, partial_verdicts="pay")[0] == 1.0


# ------------------------------------------------- item 4 (F6): unittest keyword arguments


def test_unittest_assertions_with_keyword_arguments_are_rewritten():
    from rllm_envs.swe.probe import probe_report

    source = (
        "import unittest\nfrom m import f\n\nclass T(unittest.TestCase):\n"
        "    def test_t(self):\n"
        "        self.assertEqual(first=f(1), second='xyz')\n"
        "        self.assertIn(member=f(2), container=['abc'])\n"
        "        self.assertTrue(expr=f(3) == 'qq', msg='m')\n"
        "        self.assertEqual(f(4), second='pp', msg='m')\n"
    )
    text, notes = probe_report(source)
    plain = re.sub(r", op='\w+'", "", text)  # an operator on f(2) (`in`): see test_blind_s34
    for n in range(1, 5):
        assert f"__rllm_observe__(f({n}))" in plain, text
    assert not any(word in text for word in ("xyz", "abc", "qq", "pp")) and not notes
    text, notes = probe_report(source + "        self.assertEqual(f(5), **kw)\n")
    assert "self.assertEqual(f(5), **kw)" in text and notes


def _unittest_task(hidden: str) -> dict:
    """The slug task with a unittest class ``T``: ``test_lower`` and the hidden ``test_words``."""
    task = _task(
        "slug",
        "core",
        "def slugify(text):\n    return text.lower()\n",
        "def slugify(text):\n    return '-'.join(text.lower().split())\n",
        "import unittest\nfrom slug.core import slugify\n\nclass T(unittest.TestCase):\n"
        "    def test_lower(self):\n        self.assertEqual(slugify('AB'), 'ab')\n",
        "\n    def test_words(self):\n" + hidden,
    )
    path = "tests/test_core.py"
    return {
        **task,
        "FAIL_TO_PASS": [f"{path}::T::test_words"],
        "PASS_TO_PASS": [f"{path}::T::test_lower"],
    }


SLUG_UNITTEST = _unittest_task(
    "        self.assertEqual(first=slugify('Hello World'), second='hello-world')\n"
    "        self.assertIn(member=slugify('A B'), container=['a-b'])\n"
)


def test_doing_nothing_does_not_pass_keyword_unittest_assertions():
    reward, info = _run(SLUG_UNITTEST)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0 and info["verdict_trust"] == "host"
    assert _run(SLUG_UNITTEST, oracle=True)[0] == 1.0


# ------------------------------------------------------ item 5 (F8): raised types exactly


def test_a_raise_matches_only_the_same_class():
    from rllm_envs.swe.probe import same

    value_error = ["builtins.ValueError", "builtins.Exception", "builtins.BaseException"]
    omni = [
        "m.Omni",
        "builtins.ValueError",
        "builtins.KeyError",
        "builtins.LookupError",
        "builtins.TypeError",
        "builtins.Exception",
        "builtins.BaseException",
    ]
    assert same(["raised", value_error], ["raised", list(value_error)])
    assert not same(["raised", value_error], ["raised", omni])
    assert not same(["raised", value_error], ["raised", ["m.ValueError", *value_error[1:]]])
    assert not same(["raised", value_error], ["raised", [*value_error, 5]])


def test_a_raise_of_a_subclass_matches_only_with_one_base():
    """att31h: an honest fix raising ``class InvalidPercent(ValueError)`` where the reference
    raises ``ValueError`` passes ``pytest.raises(ValueError)`` and is paid now; a class of
    several bases (whatever their order, however deep) still matches nothing (F8)."""
    from rllm_envs.swe.executor import _mro_names
    from rllm_envs.swe.probe import same

    class Base(Exception):
        pass

    class NotFound(Base):
        pass

    class Invalid(Base):
        pass

    class InvalidPercent(ValueError):
        pass

    class Deeper(InvalidPercent):
        pass

    def raised(kind: type) -> list:
        return ["raised", _mro_names(kind)]

    assert same(raised(ValueError), raised(InvalidPercent))
    assert same(raised(NotFound), raised(type("Missing", (NotFound,), {})))
    assert not same(raised(InvalidPercent), raised(ValueError))  # a base is not the class
    assert not same(raised(ValueError), raised(Deeper))  # two classes in front
    omni = [
        type("Omni", bases, {})
        for bases in [
            (ValueError, KeyError),
            (KeyError, ValueError),
            (KeyError, TypeError, ValueError),
            (Invalid, NotFound),
            (NotFound, Invalid),
        ]
    ]
    for reference in (ValueError, KeyError, TypeError, NotFound, Invalid, Base, Exception):
        assert not any(same(raised(reference), raised(o)) for o in omni), reference


# ------------------------------------- item 6 (F2, F2b, F3): checks decided in the sandbox


@pytest.mark.parametrize(
    "body",
    [
        "def _same(a, b):\n    return a == b\n\ndef test_t():\n"
        "    assert _same(slugify('Hello World'), 'hello-world')\n",
        "def test_t():\n    assert fnmatch.fnmatch(slugify('Hello World'), 'hello-world')\n",
        "def test_t():\n    assert operator.eq(slugify('Hello World'), 'hello-world')\n",
        "def test_t():\n    assert slugify('Hello World').__eq__('hello-world')\n",
        "ok = lambda v: v == 'hello-world'\n\ndef test_t():\n"
        "    assert ok(slugify('Hello World'))\n",
        "def test_t():\n    assert slugify('Hello World').count('hello-world') == 1\n",
        "def test_t():\n    assert {'hello-world': True}.get(slugify('Hello World'))\n",
        "def test_t():\n    assert ('hello-world',).index(slugify('Hello World')) == 0\n",
        "def check():\n    return slugify('Hello World') == 'hello-world'\n\n"
        "def test_t():\n    assert check()\n",
        "def test_t():\n    want = slugify('y')\n    assert math.isclose(slugify('x'), want)\n",
        "from slug.checks import check_slug\n\ndef test_t():\n"
        "    assert slugify('a') == 'a'\n    check_slug(slugify('Hello World'), 'hello-world')\n",
        "def test_t():\n    assert slugify('a') == 'a'\n"
        "    if slugify('Hello World') == 'hello-world':\n        return\n    assert False\n",
        "def test_t():\n    assert slugify('a') == 'a'\n    match slugify('Hello World'):\n"
        "        case 'hello-world':\n            pass\n"
        "        case _:\n            assert False\n",
    ],
)
def test_a_check_the_probe_leaves_to_the_sandbox_makes_the_module_partial(body):
    from rllm_envs.swe.probe import probe_report

    text, notes = probe_report(
        "import fnmatch, math, operator\nfrom slug import slugify\n\n" + body
    )
    assert notes, text


def test_plain_checks_with_literal_inputs_stay_host_decided():
    from rllm_envs.swe.probe import probe_report

    source = (
        "from slug import slugify, Parser\n\ndef test_t():\n"
        "    assert slugify('Hello World') == 'hello-world'\n"
        "    assert Parser().parse('1+2') == 3\n    assert slugify('x')\n"
        "    assert len(slugify('a b')) == 3\n"
    )
    text, notes = probe_report(source)
    assert not notes and "hello-world" not in text, text


FNMATCH = _task(
    "slug",
    "core",
    "def slugify(text):\n    return text.lower()\n",
    "def slugify(text):\n    return '-'.join(text.lower().split())\n",
    "from slug.core import slugify\n\ndef test_lower():\n    assert slugify('AB') == 'ab'\n",
    "\nimport fnmatch\n\ndef test_words():\n"
    "    assert fnmatch.fnmatch(slugify('Hello World'), 'hello-world')\n",
)


def test_rebinding_a_library_predicate_earns_nothing():
    rebind = _call(
        "replace",
        path="slug/core.py",
        old="def slugify",
        new="import fnmatch\nfnmatch.fnmatch = lambda *a, **k: True\n\n\ndef slugify",
    )
    reward, info = _run(FNMATCH, rebind)
    assert reward == 0.0 and info["verdict_trust"] == "host_partial"


# --------------------------------------------------- item 8 (F10): hostile hunk headers


@pytest.mark.parametrize(
    "header",
    [
        "@@ -" + "9" * 5000 + " +1 @@",
        "@@ -1," + "9" * 5000 + " +1 @@",
        "@@ -1 +1," + "7" * 5000 + " @@",
    ],
)
def test_a_huge_hunk_number_is_a_patch_error_not_an_exception(header):
    from rllm_envs.swe.repo import PatchError, apply_diff

    task = generate(task_rng(0, 0), difficulty=1)
    path = next(p for p in task["files"] if not p.startswith("tests/"))
    diff = f"--- a/{path}\n+++ b/{path}\n{header}\n x\n"
    with pytest.raises(PatchError):
        apply_diff(task["files"], diff)
    assert judge.score(diff, task) == 0.0
    assert not judge.verdict(
        task["files"],
        diff,
        test_patch=task["test_patch"],
        fail_to_pass=task["FAIL_TO_PASS"],
        reference_patch=task["patch"],
    ).applied


# ------------------------------------------------------------ item 7 (F4): docstrings


def test_docstrings_and_string_statements_leave_the_probe():
    from rllm_envs.swe.probe import probe_report

    source = (
        '"""Module: hello-world."""\nfrom __future__ import annotations\n'
        "from slug import slugify\n\nclass T:\n    '''class hello-world'''\n\n"
        "    def test_a(self):\n        '''slugify gives hello-world'''\n"
        "        assert slugify('Hello World') == 'hello-world'\n\n"
        "def test_b():\n    b'hello-world'\n"
    )
    text, notes = probe_report(source)
    assert "hello-world" not in text and not notes, text
    assert text.startswith("from __future__ import annotations\n"), text
    compile(text, "probe", "exec")


# ------------------------------------------------ item 9 (B1): unittest assertRaises


@pytest.mark.parametrize(
    "check",
    [
        "        with self.assertRaises(ValueError):\n            slugify('')\n",
        "        with self.assertRaisesRegex(ValueError, 'empty'):\n            slugify('')\n",
        "        self.assertRaises(ValueError, slugify, '')\n",
        "        self.assertRaisesRegex(ValueError, 'empty', slugify, '')\n",
    ],
)
def test_an_honest_fix_passes_unittest_assert_raises_and_doing_nothing_does_not(check):
    task = _unittest_task("        self.assertEqual(slugify('abc'), 'abc')\n" + check)
    fixed = (
        "def slugify(text):\n    if not text:\n        raise ValueError('empty')\n"
        "    return '-'.join(text.lower().split())\n"
    )
    base = task["files"]
    task = {**task, "patch": make_diff(base, {**base, "slug/core.py": fixed})}
    reward, info = _run(task, oracle=True)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    assert not info["verdict_tampering"]
    assert _run(task)[0] == 0.0


# ------------------------------- item 5 (F8): the probe's observers cannot be rebound

FORGE = """import sys


def _wrap():
    for module in list(sys.modules.values()):
        names = getattr(module, "__dict__", None)
        real = names.get("__rllm_observing__") if type(names) is dict else None
        if real is None or getattr(real, "forged", False):
            continue

        class Forged:
            forged = True

            def __init__(self, *args, **kwargs):
                self.real = real(*args, **kwargs)

            def __enter__(self):
                return self.real.__enter__()

            def __exit__(self, kind, value, tb):
                if kind is None:
                    return self.real.__exit__(ValueError, ValueError("x"), None)
                return self.real.__exit__(kind, value, tb)

        names["__rllm_observing__"] = Forged


_wrap()


def slugify(text):
    _wrap()
    return text.lower()
"""
FORGED_RAISE = _task(
    "slug",
    "core",
    "def slugify(text):\n    return text.lower()\n",
    "def slugify(text):\n    if not text:\n        raise ValueError('empty')\n"
    "    return text.lower()\n",
    "from slug.core import slugify\n\ndef test_lower():\n    assert slugify('AB') == 'ab'\n",
    "\nimport pytest\n\ndef test_empty():\n    assert slugify('abc') == 'abc'\n"
    "    with pytest.raises(ValueError):\n        slugify('')\n",
)


def test_rebinding_the_probes_raise_observer_forges_nothing():
    base = FORGED_RAISE["files"]
    old = "def slugify(text):\n    return text.lower()\n"
    forge = _call("replace", path="slug/core.py", old=old, new=FORGE)
    reward, info = _run(FORGED_RAISE, forge)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0 and info["verdict_trust"] == "host"
    assert _run(FORGED_RAISE, oracle=True)[0] == 1.0
    assert base["slug/core.py"] == old


# ------------------------------- round 2 (F-B, F-C): a probe that stops early on the reference

NORM = _task(
    "norm",
    "core",
    "def first_num(s):\n    return None\n\ndef norm(s):\n    return s\n",
    "def first_num(s):\n    return None\n\ndef norm(s):\n    return '-'.join(s.lower().split())\n",
    "from norm.core import first_num, norm\n\ndef test_none():\n    assert first_num('') is None\n",
    # An eager rewrite of the short-circuit guard raises on the reference at its second
    # operand, so the check after it would be compared by no one.
    "\ndef test_guarded():\n    n = first_num('abc')\n    assert n is None or n.bit_length() < 8\n"
    "    assert norm('Hello  World') == 'hello-world'\n",
)


def test_a_probe_that_stops_early_on_the_reference_decides_nothing():
    reward, info = _run(NORM, "")
    assert reward == 0.0
    if info["verdict_trust"] != "host":
        # Withheld: the verdict says why, and doing nothing is not paid.
        # (Or it ran on with the rewrite's error caught in a block: s39's sound records.)
        said = ("did not run to its end", "an error of its own rewrite")
        assert any(w in text for w in said for text in info["verdict_weakened"])
        assert "host_partial" in info["verdict_withheld"] or info["fail_to_pass"] < 1.0
    else:
        # A rewrite that keeps the short circuit compares every check: doing nothing fails.
        assert info["fail_to_pass"] < 1.0
