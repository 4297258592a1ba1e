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
        "base_commit": {"files": None, "repo_path": ".", "base_commit": "--output=/dev/null"},
    }
    env = SWEEnv(warm=False)
    for match, change in cases.items():
        task = {**good, **change}
        if task.get("files") is None:
            task.pop("files")
        with pytest.raises(InvalidDataset, match=match):
            env.reset(seed=0, options={"task": task})
    env.reset(seed=0, options={"task": good})
