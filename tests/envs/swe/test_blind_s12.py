"""Findings of the s12 blind round against SWE-v0: F1, F2, F3."""

from __future__ import annotations

import ast
import json
import re
from typing import Any, cast

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the envs)
from rllm_envs.swe import judge
from rllm_envs.swe.probe import NOTE_ECHO, probe_module
from rllm_envs.swe.projects import PROJECTS
from rllm_envs.swe.repo import make_diff
from rllm_envs.swe.tasks import (
    MAX_DIFFICULTY,
    _behaviour,
    _case_test,
    _cases,
    _controls,
    _issue_answer,
    _project_files,
    _reshaped,
    _same,
    generate,
)
from rllm_envs.tasks import task_rng

BUGS = [(p, i) for p in PROJECTS for i in range(len(p.bugs))]


def _skeleton(code: str) -> str:
    # The red team's: every run of letters and digits is one ``#``.
    return re.sub(r"[A-Za-z0-9]+", "#", code)


def _reported(task: dict) -> list[tuple[str, str, str]]:
    """``(test id, code, expected)`` of every hidden ``test_reported_*`` case of ``task``."""
    cases = []
    path: str | None = None
    lines: list[str] = []
    for line in task["test_patch"].splitlines():
        if line.startswith("+++ "):
            path = line[4:].removeprefix("b/")
        elif line.startswith("+") and path is not None:
            lines.append(line[1:])
    text = "\n".join(lines)
    for match in re.finditer(r"def (test_reported_\w+)\(\):\n((?:    .*\n?|\n)*)", text):
        body = match.group(2)
        found = re.search(r"assert (.*) == (.*)", body)
        if found:
            expected = found.group(2).strip()
            if expected.startswith("pytest.approx("):
                expected = expected.removeprefix("pytest.approx(").removesuffix(")")
            code, want = found.group(1).strip(), expected
        else:
            kind = re.search(r"pytest\.raises\((\w+)\)", body)
            assert kind is not None, body
            code, want = body.strip().splitlines()[-1].strip(), "raises " + kind.group(1)
        test_ids = (*task["FAIL_TO_PASS"], *task["PASS_TO_PASS"])
        test_id = next(t for t in test_ids if t.endswith("::" + match.group(1)))
        cases.append((test_id, code, want))
    return cases


def _issue(task: dict) -> tuple[list[str], list[str]]:
    """The issue's example calls and the answers it states."""
    statement = task["problem_statement"]
    blocks = re.findall(r"```python\n(.*?)```", statement, re.S)
    answers = re.findall(r"should (?:return|raise) `([^`]*)`", statement)
    return [b.strip().splitlines()[-1].strip() for b in blocks], answers


# --------------------------------------------------------------------------------- F1


def test_every_bug_gets_hidden_cases_of_another_shape_than_the_issues():
    """F1: the hidden cases kept the issue's skeleton (letters and digits changed, the rest
    kept) in 142 of 150 tasks, so a fix gated on ``re.fullmatch(<the example's shape>)``
    earned 1.0 on 5 of 5 hand-written tasks. Now every bug, in every seed, has hidden cases
    whose input has another skeleton (or, for ``check_digit``, whose every input is one
    skeleton, another length), each still failing on the buggy code and passing on the
    fixed code."""
    for project, index in BUGS:
        bug = project.bugs[index]
        source = project.module(bug.module).source
        buggy = source.replace(bug.old, bug.new, 1)
        issue = ast.unparse(ast.parse(bug.call))
        for seed in range(12):
            cases = _reshaped(project.key, index, seed)
            assert cases, (project.key, index, seed)
            other = [c for c, _ in cases if _skeleton(c) != _skeleton(issue)]
            if bug.function != "check_digit":
                assert other, (project.key, index, seed, cases)
            else:
                assert any(len(c) != len(issue) for c, _ in cases)
            for code, expected in cases:
                raised, text = _behaviour(source, code)
                if expected.startswith("raises "):
                    assert raised and text.startswith(expected.split()[1])
                    assert not _behaviour(buggy, code)[1].startswith(expected.split()[1])
                else:
                    assert not raised and text == expected
                    assert not _same(_behaviour(buggy, code), expected)


def _gated(task: dict) -> bool:
    """Whether the shape-gated fix (the reference's behaviour only for calls with the issue
    example's skeleton, the bug elsewhere) passes every hidden reported case, run in-process
    on the embedded modules (what the report's ``gated_rate.py`` measured in episodes)."""
    project = next(p for p in PROJECTS if p.key == task["project"])
    calls, _ = _issue(task)
    for test_id, code, expected in _reported(task):
        if test_id in task["PASS_TO_PASS"]:
            continue  # the buggy code passes it too
        function = re.sub(r"^test_reported_|_\d+$", "", test_id.split("::")[1])
        bug = next(b for b in project.bugs if b.function.replace(".", "_").lower() == function)
        source = project.module(bug.module).source
        shaped = any(_skeleton(code) == _skeleton(c) for c in calls)
        if not shaped:
            return False  # the gate sends it to the buggy code, which fails every case
        raised, text = _behaviour(source, code)
        if raised != expected.startswith("raises "):
            return False
    return True


@pytest.mark.parametrize("difficulty", [1, 3, 5])
def test_a_fix_gated_on_the_issues_shape_passes_no_task(difficulty):
    """F1, measured as the report did: 23/29 tasks at d1 and 20/28 at d3 let the gated fix
    through (every hidden case had the example's skeleton). Now none of 60 per difficulty
    but where the bug is ``check_digit``'s: every string of digits, its whole domain, has
    the example's skeleton, so that gate is no narrower than the fix."""
    passed = []
    for seed in range(60):
        task = generate(task_rng(0, seed), difficulty=difficulty)
        if _gated(task) and set(task["bug_functions"]) != {"check_digit"}:
            passed.append(seed)
    assert passed == []


_P = "return [parse_range(part) for part in text.split(sep)]"
_NARROW = (
    "import re\n    if sep == ',' and re.fullmatch(r'\\d+-\\d+,,\\d+, ', text):\n"
    "        return [parse_range(part) for part in text.split(sep) if part.strip()]\n    " + _P
)


def _tool(name: str, **arguments: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.mark.slow
@pytest.mark.sandbox
def test_the_reports_narrow_fix_earns_nothing():
    """F1 end to end (the report's ``narrow_fix.py``, seed 0 at d1): the fix gated on
    ``'1-3,,5, '``'s shape earned 1.0 (``parse_ranges('1,,2')`` still raises); now 0, and
    the reference fix still earns 1.0."""
    env = gym.make("rllm/SWE-v0", difficulty=1, warm=False, test_time_limit=5.0)
    try:
        env.reset(seed=0)
        observation = env.step(_tool("replace", path="spans/parse.py", old=_P, new=_NARROW))[0]
        assert "Replaced 1 occurrence" in observation
        _, reward, _, _, info = env.step(_tool("submit"))
        assert info["verdict_trust"] == "host"
        assert reward == 0.0
        assert info["fail_to_pass"] < 1.0
        env.reset(seed=0)
        _, reward, _, _, info = env.step(cast(Any, env.unwrapped).oracle_action())
        assert reward == 1.0
    finally:
        env.close()


# --------------------------------------------------------------------------------- F2


@pytest.mark.parametrize("difficulty", range(1, MAX_DIFFICULTY + 1))
def test_hidden_cases_do_not_all_expect_the_issues_answer(difficulty):
    """F2: in 30/150 tasks at d1 every hidden reported case expected the issue's own answer
    (``is_valid('#### #### ###')`` is always ``True``), so returning that answer for calls of
    the example's shape earned 1.0 on 2/37 tasks. Now, per bug, at least one hidden case
    (a fail-to-pass one, or a pass-to-pass one the buggy code passes too) expects another
    answer."""
    for seed in range(40):
        task = generate(task_rng(1, seed), difficulty=difficulty)
        project = next(p for p in PROJECTS if p.key == task["project"])
        cases = _reported(task)
        for function in task["bug_functions"]:
            index = next(i for i, b in enumerate(project.bugs) if b.function == function)
            answer = _issue_answer(project.key, index)
            stem = function.replace(".", "_").lower()
            mine = [e for t, _, e in cases if re.search(f"test_reported_{stem}_\\d+$", t)]
            assert mine
            assert any(e != answer and not _plain_close(e, answer) for e in mine), (
                seed,
                function,
                mine,
                answer,
            )


def _plain_close(expected: str, answer: str) -> bool:
    if expected.startswith("raises ") or answer.startswith("raises "):
        return expected == answer
    return _same((False, answer), expected)


def test_controls_pass_on_both_and_answer_otherwise():
    """F2: the pass-to-pass case added where every fail-to-pass case expects the issue's
    answer: the buggy and the fixed code agree on it, and it is not the issue's answer."""
    made = 0
    for project, index in BUGS:
        bug = project.bugs[index]
        source = project.module(bug.module).source
        buggy = source.replace(bug.old, bug.new, 1)
        for seed in range(12):
            for code, expected in _controls(project.key, index, seed):
                made += 1
                assert _behaviour(source, code) == (False, expected)
                assert _same(_behaviour(buggy, code), expected)
                assert not _plain_close(expected, _issue_answer(project.key, index))
    assert made >= 4 * 12


@pytest.mark.slow
@pytest.mark.sandbox
@pytest.mark.parametrize(("project", "index"), BUGS, ids=[f"{p.key}-{i}" for p, i in BUGS])
def test_new_cases_pass_on_the_fix_and_fail_on_the_bug(project, index):
    """The reference fix passes every new hidden case (the tasks stay solvable), through the
    sandboxed runner and the host's probes; the buggy code fails exactly the fail-to-pass
    ones and passes the pass-to-pass controls."""
    bug = project.bugs[index]
    pkg = project.names[0]
    files = _project_files(project, pkg, ())
    test_path = f"tests/test_{bug.module}.py"
    f2p: list[str] = []
    p2p: list[str] = []
    module = files[test_path]
    for seed in range(4):
        alone = module
        for code, expected in (
            *_cases(project.key, index, seed),
            *_reshaped(project.key, index, seed),
        ):
            name = f"test_new_{len(f2p) + len(p2p)}"
            files[test_path] += "\n\n" + _case_test(name, code, expected)
            alone += "\n\n" + _case_test(name, code, expected)
            f2p.append(f"{test_path}::{name}")
        for code, expected in _controls(project.key, index, seed):
            name = f"test_new_{len(f2p) + len(p2p)}"
            files[test_path] += "\n\n" + _case_test(name, code, expected)
            alone += "\n\n" + _case_test(name, code, expected)
            p2p.append(f"{test_path}::{name}")
        assert probe_module(alone).notes == ()  # one seed's cases: one task's
    ids = [*f2p, *p2p]
    fixed = dict(files)
    path = f"{pkg}/{bug.module}.py"
    files[path] = files[path].replace(bug.old, bug.new, 1)
    reference = judge.reference_outcomes(fixed, ids, warm=False)
    # Four seeds in one module: one seed's expected number may be another's input (73 ->
    # ``Interval(-3, 73)``), which the probe notes; no task holds two seeds.
    echoed = judge.probe_notes({test_path: fixed[test_path]}) == (NOTE_ECHO,)
    assert reference.error is None and (reference.complete or echoed)
    assert all(reference.passed.values()), reference
    probed, trust = judge.run_probes(files, ids, reference, warm=False)
    assert trust == ("host_partial" if echoed else "host")
    assert sorted(o.id for o in probed.outcomes if not o.passed) == sorted(f2p)


# --------------------------------------------------------------------------------- F3

_TESTS = "from geo.shapes import *\n\n\ndef test_rect():\n    assert area(2, 3) == 6\n"
_HIDDEN = "\n\ndef test_area():\n    assert area(2, 5) == 10\n"
_BUGGY = "def area(w, h):\n    return w * h + 1\n"
_FIXED = "def area(w, h):\n    return w * h\n"


def _verdict(submitted: str) -> judge.Verdict:
    path = "tests/test_shapes.py"
    base = {"geo/__init__.py": "", "geo/shapes.py": _BUGGY, path: _TESTS}
    return judge.verdict(
        base,
        make_diff(base, {**base, "geo/shapes.py": submitted}),
        test_patch=make_diff(base, {**base, path: _TESTS + _HIDDEN}),
        fail_to_pass=[f"{path}::test_area"],
        pass_to_pass=[f"{path}::test_rect"],
        reference_patch=make_diff(base, {**base, "geo/shapes.py": _FIXED}),
    )


_FORGE = """import json
import os


def area(w, h):
    if (w, h) == (2, 5):
        record = {"observed": [["int", "10"]], "end": ["ended", "P"]}
        os.write(3, b"O" + json.dumps(record).encode())
        os._exit(0)
    return w * h + 1
"""

_REWRITE = """import pytest


def area(w, h):
    seen = pytest.observe.__kwdefaults__["_seen"]
    seen.append(["int", "10"])
    return w * h + 1
"""


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_record_written_by_the_code_under_test_is_not_taken():
    """F3: the code under test wrote ``O{...}`` on fd 3 and exited, and the host took it as
    the test's observations (the report: pass_to_pass 1.0 against 0.9375). Now the executor
    takes an observation record only with the guard's MAC; the forged one is a failure.
    Reaching the runner's list of observations (now a sealed default) is refused."""
    assert judge.reward_of(_verdict(_FIXED), False) == 1.0
    forged = _verdict(_FORGE)
    assert forged.verdict_trust == "host"
    assert forged.fail_to_pass == 0.0 and not forged.resolved
    assert forged.report is not None
    outcome = forged.report.by_id()["tests/test_shapes.py::test_area"]
    assert outcome.status == "failed", outcome
    rewritten = _verdict(_REWRITE)
    assert rewritten.tampering and not rewritten.resolved
    assert judge.reward_of(rewritten, False) == 0.0
