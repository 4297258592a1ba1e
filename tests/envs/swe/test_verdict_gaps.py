"""Gaps in the host's verdict found by an attacker (issue #30): each scores 0 or is bounded.

Every task here is fixed by its reference patch, and the submission leaves the bug (or a
wrong fix) in place: a reward above 0 is a verdict the hidden test would not give. Big
values are compared exactly (by digest when too big to send), a call of the code under test
is never taken as the expected side, identity checks say ``host_partial`` with why,
``all(...)`` is observed element by element and the expected values of its table leave the
sandbox (``test_tables.py``), and ``apply_patch`` is linear and bounded.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from rllm_envs.swe import executor, judge, probe, repo
from rllm_envs.swe.probe import probe_module, probe_report, probe_source, same, same_observations
from rllm_envs.swe.repo import PatchTooLarge, apply_diff, make_diff
from rllm_envs.swe.swe_env import SWEEnv


def _nested(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _task(package: str, module: str, buggy: str, fixed: str, tests: str, hidden: str) -> dict:
    base = {
        f"{package}/__init__.py": "",
        f"{package}/{module}.py": buggy,
        f"tests/test_{module}.py": tests,
    }
    names = [
        line.split()[1].split("(")[0]
        for line in hidden.splitlines()
        if line.startswith("def test_")
    ]
    path = f"tests/test_{module}.py"
    return {
        "repo": package,
        "files": base,
        "problem_statement": f"{package}.{module} has a bug.",
        "patch": make_diff(base, {**base, f"{package}/{module}.py": fixed}),
        "test_patch": make_diff(base, {**base, path: tests + hidden}),
        "FAIL_TO_PASS": [f"{path}::{n}" for n in names],
        "PASS_TO_PASS": [
            f"{path}::{line.split()[1].split('(')[0]}"
            for line in tests.splitlines()
            if line.startswith("def test_")
        ],
    }


def _episode(task: dict, reply: str = "") -> tuple[float, dict[str, Any]]:
    # host_partial verdicts pay here: a cheat's 0 is the comparison's, not the withholding's.
    env = SWEEnv(partial_verdicts="pay")
    try:
        env.reset(seed=0, options={"task": task})
        _, reward, _, _, info = env.step(reply + _call("submit"))
        return reward, info
    finally:
        env.close()


def _oracle(task: dict) -> float:
    env = SWEEnv(partial_verdicts="pay")
    try:
        env.reset(seed=0, options={"task": task})
        return env.step(env.oracle_action())[1]
    finally:
        env.close()


# ------------------------------------------------------------------ F1/F2: exact observations

POWER = _task(
    "bigmath",
    "power",
    "def power(b, e):\n    if e > 100:\n        return b ** (e - 1)\n    return b ** e\n",
    "def power(b, e):\n    return b ** e\n",
    "from bigmath.power import power\n\ndef test_small():\n    assert power(2, 1) == 2\n",
    "\n\ndef test_big():\n    assert power(10, 5000) == 10 ** 5000\n",
)


def test_a_wrong_huge_int_scores_0_and_the_right_one_1():
    reward, info = _episode(POWER)
    assert reward == 0.0 and info["verdict_trust"] == "host"
    assert _oracle(POWER) == 1.0


@pytest.mark.parametrize(
    "reference, submission",
    [
        (10**4000 + 1, -(10**5000)),
        (10**5000, 10**4999),
        (list(range(30000)), list(range(20000)) + [-1] * 10000),
        ([i * i for i in range(25000)], [i * i for i in range(24999)] + [0]),
        ("a" * 100000 + "right", "a" * 100000 + "WRONG"),
        (b"a" * 200000 + b"x", b"a" * 200000 + b"y"),
        (_nested(1, 43), _nested(2, 43)),
        ({i: str(i) for i in range(15000)}, {i: str(i) for i in range(14999)} | {14999: "x"}),
        (1000000.0, 1000000.9),
        (0.3, 0.30000000000000004),
    ],
    ids=[
        "huge-int",
        "huge-int-2",
        "long-list",
        "squares",
        "long-str",
        "long-bytes",
        "deep",
        "big-dict",
        "float-1e-6",
        "float-ulp",
    ],
)
def test_different_values_never_observe_the_same(reference, submission):
    assert reference != submission
    assert not same(executor.observed(reference), executor.observed(submission))


@pytest.mark.parametrize(
    "value",
    [
        10**5000,
        list(range(30000)),
        "a" * 200001,
        _nested(1, 42),
        {i: [i] for i in range(12000)},
        {str(i) for i in range(25000)},
    ],
    ids=["huge-int", "long-list", "long-str", "deep", "big-dict", "big-set"],
)
def test_equal_values_too_big_to_send_compare_by_digest(value):
    import copy

    seen = executor.observed(value)
    assert "cut" not in json.dumps(seen)
    assert same(seen, executor.observed(copy.deepcopy(value)))
    assert len(json.dumps(seen)) < 200


def test_an_int_and_an_equal_float_still_match_inside_a_digest():
    assert same(executor.observed([1] * 30000), executor.observed([1.0] * 30000))


def test_unobservable_values_never_match():
    deep: list = []
    for _ in range(1000):
        deep = [deep]
    seen = executor.observed(deep)
    assert seen[0] == "unobservable"
    assert not same(seen, seen)
    assert not same(["cut"], ["cut"])


def test_floats_are_exact_unless_the_test_asked_for_a_tolerance():
    source = (
        "import math\nimport pytest\nfrom m import f\n\n"
        "def test_a():\n"
        "    assert f(1) == 0.3\n"
        "    assert f(2) == pytest.approx(0.3)\n"
        "    assert f(3) == pytest.approx(0.3, abs=0.01)\n"
        "    assert math.isclose(f(4), 0.3)\n"
    )
    text, complete = probe_source(source)
    assert complete and "0.3" not in text and "isclose" not in text
    test_a = probe_module(source).names["test_a"]  # the probe's name of the test
    namespace: dict[str, Any] = {}
    executor._OBSERVED_LIST.clear()
    exec(  # the probe's observations, as the sandbox makes them
        text.replace("from pytest import observe", "from rllm_envs.swe.executor import observe")
        .replace(", observing as", ", _Observing as")
        .replace("import pytest\n", "")
        .replace("from m import f\n", "f = lambda n: 0.3 + n * 1e-9\n"),
        namespace,
    )
    namespace[test_a]()
    near = list(executor._OBSERVED_LIST)
    executor._OBSERVED_LIST.clear()
    namespace["f"] = lambda n: 0.3
    namespace[test_a]()
    exact = list(executor._OBSERVED_LIST)
    executor._OBSERVED_LIST.clear()
    # The tolerance checks run on the host against the test's literal (s11 T1).
    predicates = probe_module(source).predicates
    assert [same(e, a, predicates=predicates) for e, a in zip(exact, near, strict=True)] == [
        False,
        True,
        True,
        False,
    ]
    # The tolerance is the reference's: a submission claiming a wide one gains nothing.
    forged = ["approx", [1.0, 1.0], ["float", "9.0"]]
    assert not same(exact[1], forged)


def test_a_forged_record_of_huge_numbers_is_not_parsed():
    assert not same(["int", "9" * 100000], ["int", "9" * 99999 + "8"])
    assert same_observations(
        {"observed": [["int", "#" + "ab" * 32]], "end": ["ended", "P"]},
        {"observed": [["int", "#" + "ab" * 32]], "end": ["ended", "P"]},
    )


# ------------------------------------------------------------------ F3: the literal-side drop

INTERVAL = _task(
    "ivl",
    "interval",
    "class Interval:\n    def __init__(self, lo, hi):\n        self.lo, self.hi = lo, hi\n\n"
    "    def __eq__(self, other):\n        return (self.lo, self.hi) == (other.lo, other.hi)\n",
    "class Interval:\n    def __init__(self, lo, hi):\n"
    "        self.lo, self.hi = min(lo, hi), max(lo, hi)\n\n"
    "    def __eq__(self, other):\n        return (self.lo, self.hi) == (other.lo, other.hi)\n",
    "from ivl.interval import Interval\n\ndef test_plain():\n    assert Interval(1, 2).hi == 2\n",
    "\n\ndef test_reversed():\n    expected = Interval(1, 3)\n"
    "    assert Interval(3, 1) == expected\n",
)


def test_a_call_of_the_code_under_test_is_never_the_expected_side():
    for check in (
        "Interval(3, 1) == expected",
        "expected == Interval(3, 1)",
        "Interval(3, 1) == Interval(1, 3)",
    ):
        source = f"from ivl import Interval\n\ndef test_a():\n    assert {check}\n"
        text, notes = probe_report(source)
        assert "__rllm_observe__(Interval(3, 1))" in text, text
        assert probe.NOTE_TWO_SIDES in notes


def test_the_unfixed_constructor_scores_0():
    reward, info = _episode(INTERVAL)
    assert reward == 0.0
    assert info["verdict_trust"] == "host_partial"
    assert probe.NOTE_TWO_SIDES in info["verdict_weakened"]
    raising = _call(
        "replace",
        path="ivl/interval.py",
        old="self.lo, self.hi = lo, hi",
        new="if lo > hi:\n            raise RuntimeError('no')\n        self.lo, self.hi = lo, hi",
    )
    assert _episode(INTERVAL, raising)[0] == 0.0
    assert _oracle(INTERVAL) == 1.0


# ------------------------------------------------------------------ F4: identity

BAG = _task(
    "bags",
    "bag",
    "class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n\n"
    "    def copy(self):\n        return self\n",
    "class Bag:\n    def __init__(self, items):\n        self.items = list(items)\n\n"
    "    def copy(self):\n        return Bag(self.items)\n",
    "from bags.bag import Bag\n\ndef test_items():\n    assert Bag([1, 2]).items == [1, 2]\n",
    "\n\ndef test_copy_is_new():\n    b = Bag([1, 2])\n    c = b.copy()\n"
    "    assert c is not b\n    assert c.items == [1, 2]\n",
)


def test_an_aliasing_bug_fails_an_identity_check_and_the_verdict_says_it_is_partial():
    reward, info = _episode(BAG)
    assert reward == 0.0
    assert info["verdict_trust"] == "host_partial"
    assert probe.NOTE_IDENTITY in info["verdict_weakened"]
    assert _oracle(BAG) == 1.0


def test_identity_checks_with_a_literal_are_exact_values():
    text, notes = probe_report("def test_a():\n    assert f() is None\n    assert g() is True\n")
    # ``is None`` is observed as the bool it asks for (``is`` cannot be faked; a value with
    # a clock or an id never repeats the reference's, s11 N1); ``is True`` as the value.
    assert not notes and "__rllm_observe__(f() is None)" in text
    assert "__rllm_observe__(g())" in text


# ------------------------------------------------------------------ F5: all(...) tables

SLUG = _task(
    "slug",
    "core",
    "def slugify(text):\n    return text.lower()\n",
    "import re\n\ndef slugify(text):\n"
    "    return re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')\n",
    "from slug.core import slugify\n\ndef test_lower():\n    assert slugify('abc') == 'abc'\n",
    "\n\nCASES = [('Hello World', 'hello-world'), ('  A -- B  ', 'a-b')]\n\n"
    "def test_table():\n    assert all(slugify(text) == want for text, want in CASES)\n",
)

CHEAT = """import ast, os

def _table():
    found = {}
    for name in os.listdir("/repo/tests"):
        if name.endswith(".py"):
            for node in ast.walk(ast.parse(open("/repo/tests/" + name).read())):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
                    try:
                        for k, v in ast.literal_eval(node.value):
                            found[k] = v
                    except Exception:
                        pass
    return found

def slugify(text):
    return _table().get(text, text.lower())
"""


def test_a_table_the_submission_could_read_is_not_in_the_sandbox():
    reward, info = _episode(SLUG)
    assert reward == 0.0
    base = SLUG["files"]
    patch = make_diff(base, {**base, "slug/core.py": CHEAT})
    reward, info = _episode(SLUG, _call("apply_patch", patch=patch))
    # The table's expected column is placeholders in the sandbox: the lookup finds nothing.
    assert reward == 0.0 and info["verdict_trust"] == "host"
    assert info["verdict_weakened"] == []
    assert _oracle(SLUG) == 1.0


@pytest.mark.parametrize(
    "check, observed",
    [
        ("assert all(f(x) == y for x, y in CASES)", ["f(x)"]),
        ("assert not any(f(x) for x in CASES)", ["f(x)"]),
        ("assert all([f(x) > 0 for x in CASES if x])", ["f(x)"]),
        ("self_check = 1\n    assert all(f(x) for x in range(3))", ["f(x)"]),
    ],
)
def test_aggregations_observe_each_element(check, observed):
    source = f"CASES = [(1, 2)]\n\ndef test_a():\n    {check}\n"
    text, notes = probe_report(source)
    assert "all(" not in text and "any(" not in text
    calls = [
        line.strip()[len("__rllm_observe__(") : -1].split(", op=")[0].split(", host=")[0]
        for line in text.splitlines()
        if line.strip().startswith("__rllm_observe__(")
    ]
    assert calls == observed
    # The expected column (y) is moved out of the probe; the inputs stay.
    assert notes == () and ("(1, 0)" in text) == ("== y" in check)


@pytest.mark.parametrize(
    "body",
    [
        "    if f(1) != 2:\n        raise ValueError('bad')\n",
        "    if f(1) != 2:\n        pytest.fail('bad')\n",
        "    if not f(1) == 2:\n        raise AssertionError\n",
    ],
)
def test_if_then_fail_is_an_observation(body):
    text, notes = probe_report("import pytest\nfrom m import f\n\ndef test_a():\n" + body)
    assert not notes, notes
    assert "raise" not in text and "fail" not in text and "2" not in text.split("def", 1)[1]
    assert "__rllm_observe__(f(1))" in text


def test_a_raise_left_in_a_test_makes_it_partial():
    bodies = (
        "    if f(1):\n        print(1)\n        raise ValueError\n",
        "    raise ValueError\n",
    )
    for body in bodies:
        notes = probe_report("from m import f\n\ndef test_a():\n" + body)[1]
        assert probe.NOTE_RAISE in notes


def test_a_raise_in_a_helper_or_a_raises_block_is_not_a_decision():
    source = (
        "import pytest\n\ndef boom():\n    raise ValueError('x')\n\n"
        "def test_a():\n    with pytest.raises(ValueError):\n        raise ValueError\n"
    )
    assert probe_report(source)[1] == ()


# ------------------------------------------------------------------ F6: apply_patch bounds


def test_the_hunk_search_is_linear():
    lines = ["a\n"] * 80000
    block = ["a\n"] * 9999 + ["b\n"]
    budget = repo._Budget(repo.MAX_PATCH_WORK)
    assert repo._find(lines, block, 0, budget) == -1
    spent = repo.MAX_PATCH_WORK - budget.left
    assert spent <= len(lines) + 3 * len(block)  # the old search compared ~8e8 lines


def test_the_hunk_search_still_finds_the_nearest_occurrence():
    lines = [f"{i % 7}\n" for i in range(1000)]
    block = ["3\n", "4\n", "5\n"]
    assert repo._find(lines, block, 500) == 500 - 500 % 7 + 3
    assert repo._find(lines, block, 0) == 3
    assert repo._find(lines, ["x\n"], 10) == -1


def test_oversized_hunks_and_many_hunks_are_refused():
    files = {"big.py": "a\n" * 80000}
    size = repo.MAX_HUNK_LINES + 1
    patch = f"--- a/big.py\n+++ b/big.py\n@@ -1,{size} +1,{size - 1} @@\n" + " a\n" * (size - 1)
    with pytest.raises(PatchTooLarge):
        apply_diff(files, patch + "-b\n")
    many = "--- a/big.py\n+++ b/big.py\n" + "".join(
        f"@@ -{n},1 +{n},1 @@\n-a\n+c\n" for n in range(1, 60001)
    )
    with pytest.raises(PatchTooLarge, match="line comparisons"):
        apply_diff(files, many)


def test_a_refused_patch_is_feedback_and_an_info_flag():
    env = SWEEnv()
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(_call("create_file", path="big.py", content="a\n" * 80000))
        assert info["patch_too_large"] is False
        size = 20000
        patch = f"--- a/big.py\n+++ b/big.py\n@@ -1,{size} +1,{size - 1} @@\n" + " a\n" * (size - 1)
        observation, _, _, _, info = env.step(_call("apply_patch", patch=patch + "-b\n"))
        assert info["patch_too_large"] is True
        assert info["tool_results"][0]["ok"] is False
        assert "smaller hunks" in observation
    finally:
        env.close()


def test_reference_notes_say_why_a_verdict_is_partial():
    files = {"tests/test_a.py": "def test_a():\n    assert f() is g()\n", "tests/data.json": "{}"}
    notes = judge.probe_notes(files)
    assert probe.NOTE_IDENTITY in notes and judge.NOTE_DATA_FILE in notes
    assert judge.probe_notes({"tests/test_a.py": "def test_a():\n    assert f() == 2\n"}) == ()


@pytest.mark.parametrize(
    "check, observed",
    [
        ("(f(x) == 3) is True", ["f(x)"]),
        ("bool(f(x) == 3)", ["f(x)"]),
        ("str(f(x)).startswith('abc')", ["str(f(x))"]),
        ("re.search('a+b', f(x))", ["f(x)"]),
        ("not (f(1) != 2)", ["f(1)"]),
    ],
)
def test_checks_nested_in_an_observed_value_drop_their_literal(check, observed):
    text, notes = probe_report(f"import re\n\ndef test_a():\n    assert {check}\n")
    assert not notes
    calls = [
        line.strip()[len("__rllm_observe__(") : -1].split(", op=")[0].split(", host=")[0]
        for line in text.splitlines()
        if line.strip().startswith("__rllm_observe__(")
    ]
    assert calls == observed
    assert "abc" not in text and "a+b" not in text and "3" not in text.split("def", 1)[1]


def test_a_literal_compared_inside_an_observed_value_is_noted():
    source = "def test_a():\n    assert len([y for y in f() if y == 3]) == 1\n"
    assert probe.NOTE_INNER in probe_report(source)[1]
