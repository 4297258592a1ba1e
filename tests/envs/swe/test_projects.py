"""The embedded source: every seeded bug breaks exactly the tests it names; tasks are sound."""

from __future__ import annotations

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.projects import BUG_KINDS, DISTRACTORS, PROJECTS
from rllm_envs.swe.repo import apply_diff, is_test_path
from rllm_envs.swe.tasks import (
    MAX_DIFFICULTY,
    _case_test,
    _cases,
    _project_files,
    fixed_files,
    generate,
)
from rllm_envs.tasks import task_rng


def _ids(modules):
    return [f"tests/test_{m.name}.py::{n}" for m in modules for n in m.tests]


@pytest.mark.parametrize("project", PROJECTS, ids=[p.key for p in PROJECTS])
def test_fixed_project_passes_every_test(project):
    files = _project_files(project, project.names[-1], DISTRACTORS)
    report = judge.run_tests(files, _ids((*project.modules, *DISTRACTORS)), warm=False)
    assert [o.id for o in report.outcomes if not o.passed] == []


BUGS = [(p, i) for p in PROJECTS for i in range(len(p.bugs))]


@pytest.mark.parametrize(("project", "index"), BUGS, ids=[f"{p.key}-{i}" for p, i in BUGS])
def test_bug_breaks_exactly_its_tests(project, index):
    """The module's tests it names fail, and so do the cases made around the issue's call."""
    bug = project.bugs[index]
    assert bug.kind in BUG_KINDS
    pkg = project.names[0]
    files = _project_files(project, pkg, ())
    test_path = f"tests/test_{bug.module}.py"
    cases = [f"test_case_{n}" for n in range(4)]
    made = [c for seed in (1, 2) for c in _cases(project.key, index, seed)]
    for name, (code, expected) in zip(cases, made, strict=False):
        files[test_path] += "\n\n" + _case_test(name, code, expected)
    cases = cases[: len(made)]
    ids = [*_ids([project.module(bug.module)]), *(f"{test_path}::{c}" for c in cases)]
    fixed = judge.run_tests(files, ids, warm=False)
    assert [o.id for o in fixed.outcomes if not o.passed] == []
    fixed_files_of = dict(files)
    path = f"{pkg}/{bug.module}.py"
    assert files[path].count(bug.old) == 1
    files[path] = files[path].replace(bug.old, bug.new)
    report = judge.run_tests(files, ids, warm=False)
    failing = sorted(o.id.split("::")[1] for o in report.outcomes if not o.passed)
    assert failing == sorted([*bug.breaks, *cases])
    # The same on the host: the buggy code's observations differ from the fixed code's on
    # exactly those tests.
    reference = judge.reference_outcomes(fixed_files_of, ids, warm=False)
    assert reference.error is None and reference.complete
    probed, trust = judge.run_probes(files, ids, reference, warm=False)
    assert trust == "host"
    failing = sorted(o.id.split("::")[1] for o in probed.outcomes if not o.passed)
    assert failing == sorted([*bug.breaks, *cases]), probed.summary()


def test_almost_every_bug_gets_cases_beyond_the_issue():
    counts = [len(_cases(p.key, i, 7)) for p, i in BUGS]
    assert sum(c == 2 for c in counts) >= len(BUGS) - 2


def test_every_kind_is_seeded():
    assert {b.kind for p in PROJECTS for b in p.bugs} == set(BUG_KINDS)


@pytest.mark.parametrize("difficulty", range(1, MAX_DIFFICULTY + 1))
def test_generated_tasks_are_sound(difficulty):
    for index in range(12):
        task = generate(task_rng(0, index), difficulty=difficulty)
        assert task == generate(task_rng(0, index), difficulty=difficulty)  # pure in (seed, i)
        base = task["files"]
        f2p, p2p = task["FAIL_TO_PASS"], task["PASS_TO_PASS"]
        assert f2p and not set(f2p) & set(p2p)
        assert len(task["bug_kinds"]) == (2 if difficulty >= 4 else 1)
        # Hidden tests are not in the base repository; the test patch adds exactly them.
        for test_id in f2p:
            path, name = test_id.split("::")
            assert f"def {name}(" not in base[path]
        hidden = {**base, **apply_diff(base, task["test_patch"])}
        for test_id in f2p + p2p:
            path, name = test_id.split("::")
            assert f"def {name}(" in hidden[path]
        # The reference patch touches source only, and is the reverse of the seeded change.
        assert all(not is_test_path(p) for p in apply_diff(base, task["patch"]))
        assert fixed_files(task) != dict(base)
        statement = task["problem_statement"]
        assert task["repo"] in statement and "```python" in statement
        if difficulty == 1:
            module = task["bug_functions"][0]
            assert module.split(".")[0] in statement and ".py`" in statement
        if difficulty >= 3:
            assert ".py`" not in statement


def test_issue_is_written_from_behaviour():
    # Every issue quotes what the buggy code returned or raised.
    for index in range(20):
        statement = generate(task_rng(3, index), difficulty=2)["problem_statement"]
        assert ("It returns `" in statement) or ("It raises `" in statement)


def test_seeds_give_different_universes():
    a = [generate(task_rng(0, i))["problem_statement"] for i in range(8)]
    b = [generate(task_rng(1, i))["problem_statement"] for i in range(8)]
    assert a != b
