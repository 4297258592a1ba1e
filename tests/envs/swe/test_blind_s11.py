"""Findings of the s11 blind round against SWE-v0 (issue #30): G1, L1, H1, P1, T1, N1, M1, B1."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from rllm_envs.error import InvalidDataset
from rllm_envs.swe.loader import checkout, load_swebench
from rllm_envs.swe.swe_env import SWEEnv

_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@t",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@t",
    "PATH": "/usr/bin:/bin",
}


def _repo(path: Path, files: dict[str, str]) -> str:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    env = {**_ENV, "HOME": str(path)}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, env=env)
    done = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


_LIB = {
    "lib.py": "def f():\n    return 1\n",
    "tests/test_lib.py": "from lib import f\n\n\ndef test_f():\n    assert f() == 1\n",
}


def _record(commit: str, repo: str = "acme/lib") -> dict[str, object]:
    return {
        "instance_id": "acme__lib-1",
        "repo": repo,
        "base_commit": commit,
        "problem_statement": "f is wrong",
        "patch": "",
        "test_patch": "",
        "FAIL_TO_PASS": ["tests/test_lib.py::test_f"],
        "PASS_TO_PASS": [],
    }


# --------------------------------------------------------------------------- G1, L1, H1


def test_a_base_commit_read_as_a_git_option_is_refused_and_touches_no_file(tmp_path):
    """G1: `--output=PATH` truncated a host file; `--list` let tarfile.ReadError escape."""
    repos = tmp_path / "repos"
    _repo(repos / "acme__lib", _LIB)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n" * 100)
    data = tmp_path / "data.jsonl"
    for commit in (f"--output={victim}", "--list", "-h", "HEAD..x", "a b"):
        data.write_text(json.dumps(_record(commit)) + "\n")
        with pytest.raises(InvalidDataset, match="base_commit"):
            SWEEnv(dataset=data, repos_dir=repos, warm=False).reset(seed=0)
        assert victim.stat().st_size == 900
        # The same through checkout() directly (a custom task's repo_path/base_commit).
        with pytest.raises(InvalidDataset, match="base_commit"):
            checkout(str(repos / "acme__lib"), commit)
    assert victim.stat().st_size == 900
    data.write_text(json.dumps(_record("HEAD")) + "\n")
    SWEEnv(dataset=data, repos_dir=repos, warm=False).reset(seed=0)
    # A ref that does not exist, or a tree instead of a commit: InvalidDataset with git's words.
    with pytest.raises(InvalidDataset, match="git cannot read"):
        checkout(str(repos / "acme__lib"), "nosuchbranch")
    tree = subprocess.run(
        ["git", "-C", str(repos / "acme__lib"), "rev-parse", "HEAD^{tree}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    with pytest.raises(InvalidDataset, match="git cannot read"):
        checkout(str(repos / "acme__lib"), tree)


def test_a_repo_field_cannot_name_a_repository_outside_repos_dir(tmp_path):
    """G1: `x//abs/path` (pathlib drops repos_dir) and `..` reached any git repository."""
    repos = tmp_path / "repos"
    repos.mkdir()
    outside = tmp_path / "secret"
    _repo(outside, {"secret.py": "KEY = 1\n"})
    data = tmp_path / "data.jsonl"
    for repo in (f"x/{outside}", f"x//{outside}", "../secret", "x/../../secret", str(outside)):
        data.write_text(json.dumps(_record("HEAD", repo=repo)) + "\n")
        with pytest.raises(InvalidDataset, match="repo"):
            load_swebench(data, repos)


def test_checkout_reads_the_commit_without_gitattributes(tmp_path):
    """L1: `git archive` dropped export-ignore files and rewrote export-subst placeholders."""
    files = {
        ".gitattributes": "tests/** export-ignore\npkg/_version.py export-subst\n",
        "pkg/__init__.py": "",
        "pkg/_version.py": 'git_refnames = "$Format:%d$"\ngit_full = "$Format:%H$"\n',
        "tests/test_a.py": "def test_a():\n    assert True\n",
    }
    sha = _repo(tmp_path / "r", files)
    (tmp_path / "r" / "link").symlink_to("pkg/_version.py")
    got = checkout(str(tmp_path / "r"), sha)
    assert dict(got) == files


def test_a_broken_custom_record_fails_at_reset_with_a_message():
    """H1: a test_patch or patch that does not apply raised at submit; a non-str file bare."""
    base = {
        "pkg/__init__.py": "",
        "pkg/m.py": "def f():\n    return 1\n",
        "tests/test_m.py": "from pkg.m import f\n\n\ndef test_f():\n    assert f() == 1\n",
    }
    good = {
        "repo": "pkg",
        "files": base,
        "problem_statement": "x",
        "patch": "",
        "test_patch": "",
        "FAIL_TO_PASS": ["tests/test_m.py::test_f"],
        "PASS_TO_PASS": [],
    }
    hunk = "@@ -1,1 +1,1 @@\n-nope\n+yes\n"
    cases = {
        "test_patch": {"test_patch": f"--- a/tests/test_m.py\n+++ b/tests/test_m.py\n{hunk}"},
        "`patch`": {"patch": f"--- a/pkg/m.py\n+++ b/pkg/m.py\n{hunk}"},
        "str texts": {"files": {**base, "pkg/n.py": 5}},
        "patch`": {"patch": ["x"]},
        # s16: a passed record may not name a host folder at all (the loader's records may).
        "repo_path": {"files": None, "repo_path": ".", "base_commit": "--output=/dev/null"},
    }
    env = SWEEnv(warm=False)
    for match, change in cases.items():
        task = {**good, **change}
        if task.get("files") is None:
            task.pop("files")
        with pytest.raises(InvalidDataset, match=match):
            env.reset(seed=0, options={"task": task})
    env.reset(seed=0, options={"task": good})


# --------------------------------------------------------------------------------- P1

#: A literal inside the callee or container of a check: the sandbox compares (in C code the
#: probe does not rewrite) and an always-equal object, or one hashed like the literal read
#: from the probe's code constants, earned 1.0 with trust ``host``.
LITERAL_CALLEES = [
    "same = functools.partial(operator.eq, 12)\n    assert same(area(3, 4))",
    "assert functools.partial(operator.eq, 12)(area(3, 4))",
    "same = functools.partial(lambda a, b: a == b, 12)\n    assert same(area(3, 4))",
    "assert operator.methodcaller('__eq__', 12)(area(3, 4))",
    "assert any(map(functools.partial(operator.eq, 12), [area(3, 4)]))",
    "assert list(filter(functools.partial(operator.eq, 12), [area(3, 4)])) != []",
    "assert make(12)(area(3, 4))",
    "assert checker(12)(area(3, 4))",
    "check = checker(12)\n    assert check(area(3, 4))",
    "allowed = {12}.__contains__\n    assert allowed(area(3, 4))",
    "ok = [12].__contains__\n    assert ok(area(3, 4))",
    "same = (12).__eq__\n    assert same(area(3, 4))",
    "assert {12: 1}[area(3, 4)] == 1",
    "assert Counter([12])[area(3, 4)] == 1",
    "d = {12: True}\n    assert d.get(area(3, 4))",
    "assert set([12]).issuperset({area(3, 4)})",
    "assert dict.fromkeys([12], True).get(area(3, 4))",
    "assert MappingProxyType({12: True}).get(area(3, 4))",
    "assert OrderedDict([(12, 1)]).get(area(3, 4))",
    "assert defaultdict(bool, {12: True})[area(3, 4)]",
    "assert functools.partial(operator.contains, [12])(area(3, 4))",
    "ok = lambda v, w=12: operator.eq(v, w)\n    assert ok(area(3, 4))",
    "assert operator.itemgetter(12)({12: True, area(3, 4): True})",
    "assert CHECKS[0](area(3, 4))",
    "assert TABLE[area(3, 4)] == 'ok'",
    "assert OK(area(3, 4))",
    "check = functools.partial(operator.eq, 12)\n    result = check(area(3, 4))\n"
    "    assert result is True",
]
#: Inputs and lookups decided on the host: they stay complete.
HOST_DECIDED = [
    "assert area(3, 4) == 12",
    "assert area(3, 4) in {12, 13}",
    "r = area(3, 4)\n    assert r == 12",
    "assert sorted([area(3, 4), 1], key=operator.itemgetter(0) if False else None) == [1, 12]",
    "shape = Shape(3, 4)\n    assert shape.scaled(area(1, 2)).width == 6",
    "assert {area(3, 4)} == {12}",
]
_HEADER = (
    "import functools\nimport operator\nfrom collections import Counter, OrderedDict, "
    "defaultdict\nfrom types import MappingProxyType\n\nfrom geo.shapes import Shape, area, "
    "checker\n\nCHECKS = [functools.partial(operator.eq, 12)]\nTABLE = {12: 'ok'}\n"
    "OK = {12}.__contains__\n\n\ndef make(w):\n    return functools.partial(operator.eq, w)\n"
)


@pytest.mark.parametrize("check", LITERAL_CALLEES)
def test_a_literal_in_the_callee_or_container_of_a_check_is_noted(check):
    from rllm_envs.swe.probe import probe_report

    _, notes = probe_report(f"{_HEADER}\n\ndef test_area():\n    {check}\n")
    assert notes, check


def test_a_class_attribute_predicate_built_from_a_literal_is_noted():
    from rllm_envs.swe.probe import probe_report

    module = (
        "from geo.shapes import area\n\n\nclass TestA:\n    ok = {12}.__contains__\n\n"
        "    def test_a(self):\n        assert self.ok(area(3, 4))\n"
    )
    assert probe_report(module)[1]


@pytest.mark.parametrize("check", HOST_DECIDED)
def test_checks_of_the_code_under_test_stay_complete(check):
    from rllm_envs.swe.probe import probe_report

    assert probe_report(f"{_HEADER}\n\ndef test_area():\n    {check}\n")[1] == (), check


_ALWAYS_EQUAL = (
    "class _Yes:\n    def __eq__(self, other):\n        return True\n\n"
    "    def __ne__(self, other):\n        return False\n\n    def __hash__(self):\n"
    "        return 12\n\n\ndef area(w, h):\n    return _Yes()\n"
)


@pytest.mark.parametrize(
    "hidden",
    [
        "same = functools.partial(operator.eq, 12)\n    assert same(area(3, 4))",
        "assert {12: 1}[area(3, 4)] == 1",
    ],
)
def test_an_always_equal_object_earns_nothing_through_a_literal_callee(hidden):
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _call, _task

    tests = "from geo.shapes import area\n\n\ndef test_callable():\n    assert callable(area)\n"
    body = f"\n\nimport functools\nimport operator\n\n\ndef test_area():\n    {hidden}\n"
    task = _task(
        "geo",
        "shapes",
        "def area(w, h):\n    return w + h\n",
        "def area(w, h):\n    return w * h\n",
        tests,
        body,
    )
    cheat = _call(
        "replace",
        path="geo/shapes.py",
        old="def area(w, h):\n    return w + h\n",
        new=_ALWAYS_EQUAL,
    )
    reward, info = _run(task, cheat, warm=False)
    assert info["patch_applied"] and info["fail_to_pass"] == 1.0, info  # it passes in the sandbox
    assert reward == 0.0 and info["verdict_trust"] != "host", info
    # Opted in to partial verdicts, the oracle is paid; the cheat is still not host-trusted.
    reward, info = _run(task, oracle=True, warm=False, partial_verdicts="pay")
    assert reward == 1.0, info


# --------------------------------------------------------------------------------- T1


@pytest.mark.parametrize(
    "check",
    [
        "assert estimate(100) == pytest.approx(12, abs=5)",
        "assert abs(estimate(100) - 12) <= 5",
        "assert 5 >= abs(12 - estimate(100))",
    ],
)
def test_a_tolerance_is_judged_around_the_tests_literal_not_the_references_value(check):
    """T1: the host accepted |x - 16| <= 5 (the reference's 16), not |x - 12| <= 5."""
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _call, _task

    tests = (
        "from sim.est import estimate\n\n\ndef test_callable():\n    assert callable(estimate)\n"
    )
    hidden = f"\n\nimport pytest\n\n\ndef test_estimate():\n    {check}\n"
    bug = "def estimate(n):\n    return 20.5\n"
    task = _task("sim", "est", bug, "def estimate(n):\n    return 16.0\n", tests, hidden)
    reward, info = _run(task, warm=False)  # the unchanged code: pytest fails it (8.5 > 5)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info
    honest = _call("replace", path="sim/est.py", old=bug, new="def estimate(n):\n    return 8.0\n")
    reward, info = _run(task, honest, warm=False)  # pytest passes it (4 <= 5)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    reward, info = _run(task, oracle=True, warm=False)
    assert reward == 1.0 and info["verdict_trust"] == "host", info


def test_a_negated_tolerance_check_is_not_turned_into_a_host_band():
    from rllm_envs.swe.probe import probe_module

    found = probe_module(
        "import pytest\nfrom sim.est import estimate\n\n\ndef test_e():\n"
        "    assert not estimate(1) == pytest.approx(3, abs=1)\n"
        "    assert estimate(2) == pytest.approx(3, abs=1)\n"
    )
    assert [p[0] for p in found.predicates] == ["near"]
    assert "3" not in found.text.split(f"def {found.names['test_e']}")[1]


# --------------------------------------------------------------------------------- B1


def test_a_pass_to_pass_test_the_reference_fails_is_reported_and_not_judged():
    """B1: such a test zeroed every episode of the task, the oracle's too, with no word."""
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _task

    tests = (
        "from geo.shapes import area\n\n\ndef test_callable():\n    assert callable(area)\n\n\n"
        "def test_needs_dep():\n    import not_installed_in_the_sandbox\n"
    )
    hidden = "\n\ndef test_area():\n    assert area(3, 4) == 12\n"
    task = _task(
        "geo",
        "shapes",
        "def area(w, h):\n    return w + h\n",
        "def area(w, h):\n    return w * h\n",
        tests,
        hidden,
    )
    with pytest.warns(UserWarning, match="reference repository fails 1 of its tests"):
        reward, info = _run(task, oracle=True, warm=False)
    assert reward == 1.0 and info["pass_to_pass"] == 1.0 and info["verdict_trust"] == "host"
    assert info["reference_failing_tests"] == ["tests/test_shapes.py::test_needs_dep"]
    reward, info = _run(task, warm=False)  # the unchanged code still earns nothing
    assert reward == 0.0 and info["reference_failing_tests"] == [
        "tests/test_shapes.py::test_needs_dep"
    ]


# --------------------------------------------------------------------------------- D1


def test_a_diff_of_a_large_interleaved_rewrite_is_bounded_and_round_trips():
    """D1: difflib is quadratic on interleaved lines (6000 lines: 4 s of host CPU per submit).

    Past ``MAX_DIFF_WORK`` line comparisons the changed region is written as a few hunks that
    remove its old lines and add its new ones; the diff still gives back the working copy.
    """
    from rllm_envs.swe.repo import apply_diff, make_diff

    old = "".join(f"line {i} = {i * 7}\n" for i in range(6000))
    new = "".join(f"line {i} = {i * 7}\nextra {i}\n" for i in range(6000))
    a, b = {"m.py": "head\n" + old + "tail"}, {"m.py": "head\n" + new + "tail"}
    diff = make_diff(a, b)
    assert diff.count("\n@@ ") == 3  # 6000 removed lines in hunks of 2000 (difflib: 6000 hunks)
    assert apply_diff(a, diff)["m.py"] == b["m.py"]


@pytest.mark.parametrize("seed", range(12))
def test_the_bounded_diff_round_trips_any_edit(seed, monkeypatch):
    import random

    from rllm_envs.swe import repo

    monkeypatch.setattr(repo, "MAX_DIFF_WORK", 0)
    monkeypatch.setattr(repo, "_DIFF_CHUNK", 3)
    rng = random.Random(seed)
    base = [f"l{rng.randrange(6)}\n" for _ in range(rng.randrange(0, 30))]
    edited = list(base)
    for _ in range(rng.randrange(1, 6)):
        at = rng.randrange(len(edited) + 1)
        if rng.random() < 0.5 and at < len(edited):
            del edited[at : at + rng.randrange(1, 4)]
        else:
            edited[at:at] = [f"n{rng.randrange(9)}\n" for _ in range(rng.randrange(1, 5))]
    a_text, b_text = "".join(base), "".join(edited)
    if rng.random() < 0.5:
        a_text, b_text = a_text.rstrip("\n"), b_text.rstrip("\n")
    a, b = {"m.py": a_text}, {"m.py": b_text}
    if a_text == b_text:
        return
    diff = repo.make_diff(a, b)
    assert repo.apply_diff(a, diff).get("m.py") == b_text, diff


# --------------------------------------------------------------------------------- M1


def test_every_seeded_bug_gets_hidden_cases_beyond_the_issues_example():
    """M1: shop bug 8 (``is_valid('0')``) got no fresh case in 30 seeds of 30, so its hidden
    set was the issue's example and module tests public in other tasks: special-casing
    ``code == "0"`` earned 1.0. Now every bug gets at least one case in every seed (2 in all
    but a few), none equal to the issue's call."""
    from rllm_envs.swe.projects import PROJECTS
    from rllm_envs.swe.tasks import CASES_PER_BUG, _cases, _mutate_normal

    short = 0
    for project in PROJECTS:
        for index, bug in enumerate(project.bugs):
            for seed in range(30):
                cases = _cases(project.key, index, seed)
                assert cases, (project.key, index, seed)
                assert all(code != _mutate_normal(bug.call) for code, _ in cases)
                short += len(cases) < CASES_PER_BUG
    assert short <= 2
    assert len({code for s in range(30) for code, _ in _cases("shop", 8, s)}) >= 3


# --------------------------------------------------------------------------------- N1

_NONDET_BUG = (
    "def stamp():\n    return 0.0\n\n\ndef new_id():\n    return None\n\n\n"
    "def jitter():\n    return 0\n\n\ndef make_event(name):\n    return None\n"
)
_NONDET_FIX = (
    "import random\nimport time\nimport uuid\n\n\ndef stamp():\n    return time.time()\n\n\n"
    "def new_id():\n    return uuid.uuid4().hex\n\n\ndef jitter():\n"
    "    return random.random() + 1\n\n\nclass Event:\n    def __init__(self, name):\n"
    "        self.name = name\n        self.created = time.time()\n\n\n"
    "def make_event(name):\n    return Event(name)\n"
)


@pytest.mark.parametrize(
    "check",
    [
        "assert stamp() > 0",
        "assert 0 < stamp()",
        "assert isinstance(new_id(), str)",
        "assert new_id() is not None",
        "assert jitter()",
        "assert make_event('a') is not None",
    ],
)
def test_a_weak_check_of_a_value_that_changes_run_to_run_is_decided_by_what_it_asks(check):
    """N1: the probe observed the raw value (a clock, a uuid, a random draw), which never
    repeats the reference's: the oracle scored 0 with trust ``host``."""
    from .test_attacks_s8 import _run
    from .test_verdict_gaps import _task

    tests = "from ev.core import stamp\n\n\ndef test_callable():\n    assert callable(stamp)\n"
    hidden = (
        f"\n\nfrom ev.core import jitter, make_event, new_id\n\n\ndef test_weak():\n    {check}\n"
    )
    task = _task("ev", "core", _NONDET_BUG, _NONDET_FIX, tests, hidden)
    reward, info = _run(task, oracle=True, warm=False)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    reward, info = _run(task, warm=False)
    assert reward == 0.0 and info["fail_to_pass"] == 0.0, info


def test_host_checks_of_order_and_truth_follow_the_tests_semantics():
    from rllm_envs.swe.probe import probe_module, same

    found = probe_module(
        "from m import f\n\n\ndef test_a():\n    assert f(1) >= 2\n    assert not f(2)\n"
        "    if f(3) > 5:\n        raise AssertionError\n"
    )
    predicates = found.predicates
    assert [p[0] for p in predicates] == ["order", "falsy"]
    body = found.text.split(f"def {found.names['test_a']}")[1]
    assert "5" not in body or "observe(f(3))" in found.text
    reference = ["host", 0, ["int", "7"]]
    assert same(reference, ["host", 0, ["int", "2"]], predicates=predicates)
    assert not same(reference, ["host", 0, ["int", "1"]], predicates=predicates)
    assert not same(reference, ["host", 0, ["bool", True]], predicates=predicates)
    falsy = ["host", 1, ["list", []]]
    assert same(falsy, ["host", 1, ["str", ""]], predicates=predicates)
    assert not same(falsy, ["host", 1, ["int", "3"]], predicates=predicates)
    # An object the host cannot judge is compared with the reference's, as before.
    assert not same(falsy, ["host", 1, ["object", "m.Thing"]], predicates=predicates)
