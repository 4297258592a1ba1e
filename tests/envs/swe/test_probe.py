"""Probes: the hidden tests' checks observe computed values and leave the expected ones out."""

from __future__ import annotations

import ast

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.judge import final_files
from rllm_envs.swe.probe import probe_module, probe_source, same, same_observations
from rllm_envs.swe.repo import is_test_path
from rllm_envs.swe.tasks import generate
from rllm_envs.tasks import task_rng


def _calls(source: str) -> list[str]:
    """The source of each observed expression, in order."""
    tree = ast.parse(source)
    return [
        ast.unparse(n.args[0])
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Name)
        and n.func.id.endswith("observe__")
    ]


def test_assertions_observe_the_computed_side_only():
    source = (
        "import pytest\nfrom m import f, Box\n\n"
        "def test_a():\n"
        "    assert f(1) == [1, 2]\n"
        "    assert -7 == f(2)\n"
        "    assert f(3) == pytest.approx(5 / 3)\n"
        "    assert f(4) is None\n"
        "    assert not f(5)\n"
        "    assert f(6) and f(7) == {'k': (1, 2.5)}\n"
        "    assert isinstance(f(8), int)\n"
    )
    probe, complete = probe_source(source)
    assert complete
    assert _calls(probe) == [
        "f(1)",
        "f(2)",
        "f(3)",
        "f(4) is None",  # what ``is None`` asks (s11 N1), not the value
        "f(5)",
        "f(6)",
        "f(7)",
        "__rllm_isinstance__(f(8), int)",  # the runner decides it (s11 N1, att30c M3)
    ]
    assert "assert" not in probe
    for expected in ("[1, 2]", "-7", "5 / 3", "2.5"):
        assert expected not in probe


def test_raises_blocks_record_what_was_raised():
    source = (
        "import pytest\nfrom pytest import raises\nimport unittest\nfrom m import f\n\n"
        "def test_a():\n"
        "    with pytest.raises(ValueError):\n        f(0)\n"
        "    with raises(KeyError, match='gone'):\n        f(1)\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_b(self):\n"
        "        self.assertEqual(f(2), 3)\n"
        "        with self.assertRaises(TypeError):\n            f(None)\n"
    )
    probe, complete = probe_source(source)
    assert complete
    for name in ("ValueError", "KeyError", "TypeError", "gone", "f(2), 3"):
        assert name not in probe, name
    # The named classes and match= run on the host (the indices of its predicates), and a
    # raises block is the block of a value check (att36d): which calls must raise is not
    # in the probe.
    assert _calls(probe) == ["f(0)", "f(1)", "f(2)", "f(None)"]
    blocks = [ast.unparse(n) for n in ast.walk(ast.parse(probe)) if isinstance(n, ast.With)]
    assert blocks == [
        "with __rllm_observing__(0):\n    __rllm_observe__(f(0))",
        "with __rllm_observing__(1):\n    __rllm_observe__(f(1))",
        "with __rllm_observing__(2):\n    __rllm_observe__(f(2))",
        "with __rllm_observing__(3):\n    __rllm_observe__(f(None))",
    ]


@pytest.mark.parametrize(
    "body",
    [
        "    assert f(1) == want\n",  # the expected value is computed in the test itself
        "    raise AssertionError('no')\n",
        "    pytest.fail('no')\n",
        "    info = pytest.raises(ValueError, f, 0)\n",  # as a statement it is observed
        "    assert_close(f(1), 2)\n",
    ],
)
def test_checks_left_in_the_process_make_the_probe_incomplete(body):
    source = "import pytest\nfrom m import f\n\nwant = f(2)\n\ndef test_a():\n" + body
    assert probe_source(source)[1] is False


def test_parametrized_tables_lose_their_expected_column():
    source = (
        "import pytest\nfrom m import f\n\n"
        "@pytest.mark.parametrize('x, y', [(1, 2)])\ndef test_a(x, y):\n    assert f(x) == y\n"
    )
    probe, complete = probe_source(source)
    assert complete and "(1, 0)" in probe and "2" not in probe
    # Ids the host cannot compute: the table stays, and the probe says so.
    unlabelled = source.replace("[(1, 2)]", "[(1, 2)], ids=str")
    assert probe_source(unlabelled)[1] is False


def test_a_module_that_does_not_parse_is_kept_and_incomplete():
    assert probe_source("def test_a(:\n") == ("def test_a(:\n", False)


def test_observations_compare_exactly_but_for_numbers():
    assert same(["int", "2"], ["float", "2.0"])
    assert not same(["float", "0.30000000000000004"], ["float", "0.3"])
    assert not same(["int", "3"], ["int", "4"])
    assert not same(["int", "5"], ["float", "5.0000001"])
    assert not same(["int", "12345678901234567890"], ["int", "12345678901234567891"])
    assert not same(["float", "1.5"], ["float", "nan"])
    assert not same(["int", "1"], ["bool", True])
    assert not same(["list", [["int", "1"]]], ["tuple", [["int", "1"]]])
    assert not same(["list", [["int", "1"]]], ["sub", "m.Anything", ["list", [["int", "1"]]]])
    # A raised exception is of the reference's class, or of one class deriving from it
    # alone (what ``pytest.raises`` passes; att31h), never of a class of several bases (F8).
    assert same(["raised", ["builtins.ValueError"]], ["raised", ["m.Bad", "builtins.ValueError"]])
    assert not same(
        ["raised", ["m.Bad", "builtins.ValueError"]], ["raised", ["builtins.ValueError"]]
    )
    assert not same(
        ["raised", ["builtins.KeyError"], "gone"], ["raised", ["builtins.KeyError"], "x"]
    )
    reference = {"observed": [["int", "1"]], "end": ["ended", "P"]}
    assert same_observations(reference, {"observed": [["float", "1.0"]], "end": ["ended", "P"]})
    assert not same_observations(reference, {"observed": [], "end": ["ended", "P"]})
    assert not same_observations(
        reference, {"observed": [["int", "1"], ["int", "1"]], "end": ["ended", "P"]}
    )
    assert not same_observations(reference, {"observed": [["int", "1"]], "end": ["ended", "S"]})


@pytest.mark.parametrize("difficulty", [1, 3, 5])
def test_every_embedded_test_module_is_a_complete_probe(difficulty):
    for index in range(12):
        task = generate(task_rng(difficulty, index), difficulty=difficulty)
        files, _ = final_files(task["files"], task["patch"], task["test_patch"])
        for path, text in files.items():
            if is_test_path(path) and path.endswith(".py"):
                probe, complete = probe_source(text)
                assert complete, (path, text)
                assert "assert" not in probe and "raises" not in probe, probe


def _functions(source: str) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef)}


def _expected_sides(function: ast.FunctionDef) -> list[str]:
    """What a test expects: the literal sides of its comparisons, the types it expects raised."""
    found = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assert) and isinstance(node.test, ast.Compare):
            for side in (node.test.left, *node.test.comparators):
                if isinstance(side, ast.Call) and "approx" in ast.unparse(side.func):
                    side = side.args[0]
                computed = (ast.Call, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
                if not isinstance(side, computed):  # a comprehension computes its value
                    text = ast.unparse(side)
                    # Short numbers also appear as inputs; the rest is distinctive.
                    if len(text) >= 3 and any(c.isdigit() or c in "[('\"" for c in text):
                        found.append(text)
        if isinstance(node, ast.withitem) and "raises" in ast.unparse(node.context_expr):
            found += [ast.unparse(a) for a in node.context_expr.args]  # type: ignore[attr-defined]
    return found


def test_the_hidden_tests_expected_values_never_reach_the_probes():
    """What each fail-to-pass test expects is in none of the files the submission's run gets."""
    checked = 0
    for index in range(8):
        task = generate(task_rng(7, index), difficulty=1 + index % 5)
        files, _ = final_files(task["files"], task["patch"], task["test_patch"])
        probes, complete = judge.probe_files(files)
        assert complete
        for test in task["FAIL_TO_PASS"]:
            path, name = test.split("::")
            original = _functions(files[path])[name]
            renamed = probe_module(files[path]).names[name]  # the probe's name of the test
            probe = ast.unparse(_functions(probes[judge.probe_path(files, path)])[renamed])
            for expected in _expected_sides(original):
                checked += 1
                assert expected not in probe, (test, expected, probe)
    assert checked >= 8
