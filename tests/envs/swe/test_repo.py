"""Working copies, paths and unified diffs (pure functions, no sandbox)."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rllm_envs.swe.repo import (
    PatchError,
    Workspace,
    WorkspaceLimits,
    apply_diff,
    diff_paths,
    is_test_path,
    make_diff,
    normalize_path,
)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("a/b.py", "a/b.py"), ("./a//b.py", "a/b.py"), ("a/x/../b.py", "a/b.py"), (" a.py ", "a.py")],
)
def test_normalize_path(raw, expected):
    assert normalize_path(raw) == expected


@pytest.mark.parametrize(
    "raw", ["", "/etc/passwd", "../x", "a/../../x", ".", "a\\b", "a\0b", 3, ".git/config"]
)
def test_normalize_path_refuses_outside(raw):
    with pytest.raises(PatchError):
        normalize_path(raw)


def test_is_test_path():
    assert is_test_path("tests/test_a.py") and is_test_path("pkg/test_x.py")
    assert (
        is_test_path("conftest.py") and is_test_path("a/b_test.py") and is_test_path("test/x.txt")
    )
    assert not is_test_path("pkg/core.py") and not is_test_path("pkg/contest.py")


def test_workspace_is_copy_on_write():
    base = {"a.py": "x = 1\n", "b.py": "y = 2\n"}
    ws = Workspace(base)
    ws.write("a.py", "x = 3\n")
    ws.write("c.py", "z = 1\n")
    ws.write("b.py", None)
    assert base == {"a.py": "x = 1\n", "b.py": "y = 2\n"}  # the shared base is untouched
    assert ws.paths() == ["a.py", "c.py"] and ws.read("b.py") is None
    assert sorted(ws.changed) == ["a.py", "b.py", "c.py"]
    ws.write("a.py", "x = 1\n")  # back to the base: no longer a change
    assert "a.py" not in ws.changed
    assert apply_diff(base, ws.diff()) == {"b.py": None, "c.py": "z = 1\n"}
    ws.reset()
    assert ws.snapshot() == base and ws.diff() == ""


def test_workspace_limits():
    ws = Workspace(
        {"a.py": "x"}, WorkspaceLimits(max_files=2, max_file_chars=10, max_total_chars=15)
    )
    ws.write("b.py", "0123456789")
    with pytest.raises(PatchError):
        ws.write("c.py", "1")  # a third file
    with pytest.raises(PatchError):
        ws.write("b.py", "x" * 11)  # one file too long
    ws.write("a.py", "abcd")
    with pytest.raises(PatchError):
        ws.write("a.py", "abcdefghi")  # the total


def _git_diff(tmp_path, old, new):
    """What `git diff --no-index` makes of two folders (the format models have seen)."""
    for side, files in (("a", old), ("b", new)):
        for path, text in files.items():
            target = tmp_path / side / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        (tmp_path / side).mkdir(exist_ok=True)
    done = subprocess.run(
        ["git", "diff", "--no-index", "--no-prefix", "a", "b"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    return done.stdout


def test_apply_git_diff(tmp_path):
    old = {"pkg/m.py": "".join(f"line {i}\n" for i in range(40)), "gone.py": "bye\n"}
    new = {
        "pkg/m.py": old["pkg/m.py"].replace("line 5\n", "five\n").replace("line 30\n", ""),
        "new.py": "hello\n",
    }
    diff = _git_diff(tmp_path, old, new)
    diff = diff.replace("--- a/", "--- a/a/").replace("+++ b/", "+++ b/b/")  # a/<side>/path
    diff = diff.replace("a/a/", "a/").replace("b/b/", "b/")
    changes = apply_diff(old, diff)
    assert changes == {"pkg/m.py": new["pkg/m.py"], "gone.py": None, "new.py": "hello\n"}


def test_apply_diff_finds_moved_hunks_and_no_newline():
    old = {"m.py": "a\nb\nc\nd"}
    new = {"m.py": "a\nB\nc\nd"}
    diff = make_diff(old, new)
    assert "\\ No newline at end of file" in diff
    shifted = {"m.py": "x\ny\n" + old["m.py"]}  # the hunk's line numbers are now off by 2
    assert apply_diff(shifted, diff) == {"m.py": "x\ny\na\nB\nc\nd"}


@pytest.mark.parametrize(
    "diff",
    [
        "",
        "just text",
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n-nope\n+x\n",  # context not in file
        "--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n a\n",  # cut hunk
        "--- a/../etc/passwd\n+++ b/../etc/passwd\n@@ -1 +1 @@\n-a\n+b\n",
        "--- /dev/null\n+++ b/m.py\n@@ -0,0 +1 @@\n+x\n",  # creates an existing file
        "--- a/missing.py\n+++ b/missing.py\n@@ -1 +1 @@\n-a\n+b\n",
        "--- a/m.py\n+++ b/m.py\n@@ -x +1 @@\n",
    ],
)
def test_bad_diffs_raise_patch_error(diff):
    with pytest.raises(PatchError):
        apply_diff({"m.py": "a\nb\nc\n"}, diff)


def test_diff_paths():
    diff = make_diff({"a.py": "1\n"}, {"a.py": "2\n", "b.py": "3\n"})
    assert diff_paths(diff) == ["a.py", "b.py"]


_LINES = st.lists(st.sampled_from(["a", "b", "c", "", "d e", "    x = 1"]), max_size=30)


@settings(max_examples=200, deadline=None)
@given(_LINES, _LINES, st.booleans(), st.booleans())
def test_make_then_apply_round_trips(a, b, end_a, end_b):
    old = {"f.py": "\n".join(a) + ("\n" if end_a and a else "")}
    new = {"f.py": "\n".join(b) + ("\n" if end_b and b else "")}
    diff = make_diff(old, new)
    if old == new:
        assert diff == ""
    else:
        assert apply_diff(old, diff)["f.py"] == new["f.py"]
