"""SWE-bench-format JSONL over a git repository on disk (made here, in the real schema)."""

from __future__ import annotations

import json
import pickle
import subprocess

import pytest

from rllm_envs.error import InvalidDataset
from rllm_envs.swe.loader import checkout, load_swebench
from rllm_envs.swe.swe_env import SWEEnv
from rllm_envs.tools import ToolCall

SOURCE = '''"""Tiny money helpers."""


def cents(amount):
    """``amount`` in cents, rounded half up."""
    return int(amount * 100)
'''
FIXED = SOURCE.replace("return int(amount * 100)", "return int(round(amount * 100))")
TESTS = """import pytest

from moneyx.core import cents


def test_whole():
    assert cents(2) == 200
"""
HIDDEN = (
    TESTS
    + """

@pytest.mark.parametrize("amount, expected", [(0.29, 29), (1.15, 115)])
def test_rounding(amount, expected):
    assert cents(amount) == expected
"""
)


def _git(repo, *args):
    subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        env={
            "GIT_AUTHOR_NAME": "t",
            "GIT_AUTHOR_EMAIL": "t@t",
            "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@t",
            "PATH": "/usr/bin:/bin",
            "HOME": str(repo),
        },
    )


def _diff(repo, path, new):
    (repo / path).write_text(new)
    done = subprocess.run(["git", "-C", str(repo), "diff"], capture_output=True, text=True)
    _git(repo, "checkout", "--", path)
    return done.stdout


def _make_dataset(tmp_path, tests="tests/test_core.py"):
    """A repository whose tests are in ``tests``, and one record over it."""
    repos = tmp_path / "repos"
    repo = repos / "acme__moneyx"
    (repo / "moneyx").mkdir(parents=True)
    (repo / tests).parent.mkdir(parents=True, exist_ok=True)
    _git(repo, "init", "-q")
    (repo / "moneyx" / "__init__.py").write_text("")
    (repo / "moneyx" / "core.py").write_text(SOURCE)
    (repo / tests).write_text(TESTS)
    (repo / "logo.png").write_bytes(b"\x89PNG\0\0binary")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    record = {
        "instance_id": "acme__moneyx-1",
        "repo": "acme/moneyx",
        "base_commit": base,
        "problem_statement": "cents(0.29) returns 28; it should round to 29.",
        "patch": _diff(repo, "moneyx/core.py", FIXED),
        "test_patch": _diff(repo, tests, HIDDEN),
        # SWE-bench ships the test lists as JSON strings; SWE-Gym as lists.
        "FAIL_TO_PASS": json.dumps(
            [f"{tests}::test_rounding[0.29-29]", f"{tests}::test_rounding[1.15-115]"]
        ),
        "PASS_TO_PASS": [f"{tests}::test_whole"],
        "created_at": "2024-01-01T00:00:00Z",
        "version": "1.0",
    }
    # A later commit must not leak into the base.
    (repo / "moneyx" / "core.py").write_text(FIXED)
    _git(repo, "commit", "-q", "-am", "later")
    path = tmp_path / "swe.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path, repos, record


@pytest.fixture
def dataset(tmp_path):
    return _make_dataset(tmp_path)


def test_load_and_checkout(dataset):
    path, repos, record = dataset
    [task] = load_swebench(path, repos)
    assert task["id"] == "acme__moneyx-1" and len(task["FAIL_TO_PASS"]) == 2
    files = checkout(task["repo_path"], task["base_commit"])
    assert files["moneyx/core.py"] == SOURCE  # the base commit, not the later one
    assert "logo.png" not in files  # binary files are left out
    with pytest.raises(TypeError):
        files["x"] = "y"  # shared by every episode: read-only


def test_oracle_and_noop_through_the_env(dataset):
    path, repos, _ = dataset
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False)
    obs, info = env.reset(seed=0)
    assert "cents(0.29)" in obs and "moneyx/core.py" in obs
    copy = pickle.loads(pickle.dumps(env))  # the shared base pickles too
    *_, reward, terminated, _, info = copy.step(copy.oracle_action())
    assert reward == 1.0 and terminated and info["fail_to_pass"] == 1.0
    # Decided on the host against the reference patch: the parametrize table's expected
    # column is not in the sandbox, and the record's node ids ([0.29-29]) map to the probe's.
    assert info["verdict_trust"] == "host"
    env.reset(seed=0)
    *_, reward, terminated, _, info = env.step(ToolCall("submit", {}).to_text())
    # The run stops at the first failing test; the host's order is random (att36d), so the
    # pass-to-pass test ran (and passed) or did not.
    assert reward == 0.0 and info["fail_to_pass"] == 0.0 and info["pass_to_pass"] in (0.0, 1.0)


def test_an_instance_without_a_reference_patch_is_judged_in_process(dataset, tmp_path):
    _, repos, record = dataset
    path = tmp_path / "nopatch.jsonl"
    path.write_text(json.dumps({**record, "patch": ""}) + "\n")
    calls = [ToolCall("apply_patch", {"patch": record["patch"]}), ToolCall("submit", {})]
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False, partial_verdicts="pay")
    env.reset(seed=0)
    *_, reward, _, _, info = env.step("\n".join(c.to_text() for c in calls))
    assert reward == 1.0 and info["verdict_trust"] == "in_process"
    assert info["verdict_withheld"] == ""
    # By default an in-process verdict (forgeable in the sandbox) pays nothing, and says why.
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False)
    with pytest.warns(UserWarning, match="no reference patch"):
        _, info = env.reset(seed=0)
    assert "in_process" in info["verdict_withheld"]
    *_, reward, _, _, info = env.step("\n".join(c.to_text() for c in calls))
    assert reward == 0.0 and info["verdict_trust"] == "in_process"
    assert "in_process" in info["verdict_withheld"] and info["fail_to_pass"] == 1.0


def test_a_django_style_tests_module_is_judged_and_protected(tmp_path):
    """``app/tests.py`` (Django's layout) is a test module: the hidden tests in it run and
    pay the reference fix, and a submission's edit of it is dropped."""
    path, repos, record = _make_dataset(tmp_path, "moneyx/tests.py")
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False)
    env.reset(seed=0)
    *_, reward, _, _, info = env.step(env.oracle_action())
    assert reward == 1.0 and info["verdict_trust"] == "host"
    env.reset(seed=0)
    rig = {"path": "moneyx/tests.py", "old": "assert cents(2) == 200", "new": "assert True"}
    calls = [ToolCall("replace", rig)]
    *_, reward, _, _, info = env.step(
        "\n".join(c.to_text() for c in [*calls, ToolCall("submit", {})])
    )
    assert reward == 0.0 and info["dropped_test_changes"] == ["moneyx/tests.py"]


def test_a_record_whose_tests_are_outside_the_test_suite_is_refused(tmp_path):
    """A test in ``moneyx/check_core.py`` could be neither protected nor run by the judge:
    the load says so instead of an env whose every episode, the reference's too, pays 0."""
    path, repos, _ = _make_dataset(tmp_path, "moneyx/check_core.py")
    with pytest.raises(InvalidDataset, match="check_core.py.*not a test module"):
        load_swebench(path, repos)


@pytest.mark.parametrize(
    "test_id",
    [
        "tests/test_core::test_whole",  # no .py
        "calc/selfcheck::test_whole",  # a package module, without .py
        "test_whole (tests.test_core)",  # Django's format
        "test_whole",  # sympy's bare name
        "tests/test_core.py::",
    ],
)
def test_a_test_id_the_judge_cannot_run_is_refused(dataset, tmp_path, test_id):
    """att31c: such records loaded, and every episode, the reference fix's too, scored 0."""
    _, repos, record = dataset
    path = tmp_path / "ids.jsonl"
    path.write_text(json.dumps({**record, "PASS_TO_PASS": [test_id]}) + "\n")
    with pytest.raises(InvalidDataset, match="pytest node id"):
        load_swebench(path, repos)


def test_loader_errors(dataset, tmp_path):
    path, repos, record = dataset
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(InvalidDataset, match="No git repository"):
        load_swebench(path, tmp_path / "elsewhere")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({k: v for k, v in record.items() if k != "test_patch"}) + "\n")
    with pytest.raises(InvalidDataset, match="test_patch"):
        load_swebench(bad, repos)
    bad.write_text(json.dumps({**record, "FAIL_TO_PASS": "[]"}) + "\n")
    with pytest.raises(InvalidDataset, match="FAIL_TO_PASS"):
        load_swebench(bad, repos)
    bad.write_text(json.dumps({**record, "base_commit": "0" * 40}) + "\n")
    [task] = load_swebench(bad, repos)
    with pytest.raises(InvalidDataset, match="git cannot read"):
        checkout(task["repo_path"], task["base_commit"])


def test_a_src_layout_repository_with_conftest_fixtures_and_data(tmp_path):
    """A second shape of repository: src/ layout, a tests package, conftest, data, classes."""
    repos = tmp_path / "repos"
    repo = repos / "acme__wordy"
    for folder in ("src/wordy", "tests/data"):
        (repo / folder).mkdir(parents=True)
    _git(repo, "init", "-q")
    (repo / "src/wordy/__init__.py").write_text("from wordy.count import count_words\n")
    source = "def count_words(text):\n    return len(text.split(' '))\n"
    (repo / "src/wordy/count.py").write_text(source)
    (repo / "tests/__init__.py").write_text("")
    (repo / "tests/conftest.py").write_text(
        "import os\nimport pytest\n\n\n@pytest.fixture\ndef sample():\n"
        "    with open(os.path.join(os.path.dirname(__file__), 'data', 'sample.txt')) as f:\n"
        "        return f.read()\n"
    )
    (repo / "tests/data/sample.txt").write_text("one  two three")
    tests = "from wordy import count_words\n\n\nclass TestCount:\n    def test_simple(self):\n"
    tests += "        assert count_words('a b') == 2\n"
    (repo / "tests/test_count.py").write_text(tests)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    hidden = tests + "\n    def test_any_whitespace(self, sample):\n"
    hidden += "        assert count_words(sample) == 3\n"
    record = {
        "instance_id": "acme__wordy-7",
        "repo": "acme/wordy",
        "base_commit": base,
        "problem_statement": "count_words counts empty words between two spaces.",
        "patch": _diff(repo, "src/wordy/count.py", source.replace("split(' ')", "split()")),
        "test_patch": _diff(repo, "tests/test_count.py", hidden),
        "FAIL_TO_PASS": ["tests/test_count.py::TestCount::test_any_whitespace"],
        "PASS_TO_PASS": ["tests/test_count.py::TestCount::test_simple"],
    }
    path = tmp_path / "wordy.jsonl"
    path.write_text(json.dumps(record) + "\n")
    # The data file in the test folder makes the verdict host_partial: opt in to pay it.
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False, partial_verdicts="pay")
    env.reset(seed=0)
    *_, reward, terminated, _, info = env.step(env.oracle_action())
    assert reward == 1.0 and terminated, info
    env.reset(seed=0)
    *_, reward, _, _, info = env.step(ToolCall("submit", {}).to_text())
    assert reward == 0.0 and info["fail_to_pass"] == 0.0


def test_a_record_no_verdict_can_pay_is_flagged_at_reset(dataset, tmp_path):
    """Hidden tests whose checks the sandbox decides (an expected value computed in the test)
    make every verdict host_partial, withheld by default: reset says so, and warns, before an
    episode is spent on it; the reference fix is then withheld as the flag said."""
    _, repos, record = dataset
    repo = repos / "acme__moneyx"
    computed = HIDDEN.replace(
        "def test_whole():\n    assert cents(2) == 200",
        "def test_whole():\n    want = sum([100, 100])\n    assert cents(2) == want",
    )
    assert computed != HIDDEN
    path = tmp_path / "computed.jsonl"
    path.write_text(
        json.dumps({**record, "test_patch": _diff(repo, "tests/test_core.py", computed)}) + "\n"
    )
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False)
    with pytest.warns(UserWarning, match="No submission can earn reward"):
        _, info = env.reset(seed=0)
    assert "host_partial" in info["verdict_withheld"]
    *_, reward, _, _, info = env.step(env.oracle_action())
    assert reward == 0.0 and info["verdict_trust"] == "host_partial"
    assert "host_partial" in info["verdict_withheld"]
    # With partial_verdicts="pay" the same record pays, and nothing is flagged.
    env = SWEEnv(dataset=path, repos_dir=repos, warm=False, partial_verdicts="pay")
    _, info = env.reset(seed=0)
    assert info["verdict_withheld"] == ""
    *_, reward, _, _, info = env.step(env.oracle_action())
    assert reward == 1.0
    # A record the host decides is not flagged.
    path, repos, _ = dataset
    _, info = SWEEnv(dataset=path, repos_dir=repos, warm=False).reset(seed=0)
    assert info["verdict_withheld"] == ""
