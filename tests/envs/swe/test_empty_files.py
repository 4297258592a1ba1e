"""Empty files in diffs (issue #30, att30 F7).

``make_diff`` wrote the creation of an empty file as ``new file mode 100644`` with no hunk and
no headers, and ``apply_diff`` dropped it (a diff of only such a change raised ``PatchError``).
git writes an empty ``__init__.py`` the same way (``index 0000000..e69de29``): a package
whose only file it was disappeared for the reference and the fix alike.
"""

from __future__ import annotations

import pytest

from rllm_envs.swe.repo import PatchError, apply_diff, make_diff

BASE = {"pkg/a.py": "x = 1\n"}


def test_an_empty_file_round_trips():
    new = {**BASE, "pkg/sub/__init__.py": "", "pkg/b.py": "y = 2\n"}
    assert apply_diff(BASE, make_diff(BASE, new)) == {
        "pkg/sub/__init__.py": "",
        "pkg/b.py": "y = 2\n",
    }
    only = {**BASE, "pkg/__init__.py": ""}
    assert apply_diff(BASE, make_diff(BASE, only)) == {"pkg/__init__.py": ""}
    back = make_diff(only, BASE)
    assert apply_diff(only, back) == {"pkg/__init__.py": None}


def test_gits_header_only_form_creates_and_deletes():
    git = (
        "diff --git a/pkg/sub/__init__.py b/pkg/sub/__init__.py\n"
        "new file mode 100644\nindex 0000000..e69de29\n"
        "diff --git a/pkg/a.py b/pkg/a.py\nindex 1..2 100644\n--- a/pkg/a.py\n+++ b/pkg/a.py\n"
        "@@ -1 +1 @@\n-x = 1\n+x = 3\n"
    )
    assert apply_diff(BASE, git) == {"pkg/sub/__init__.py": "", "pkg/a.py": "x = 3\n"}
    gone = "diff --git a/e.py b/e.py\ndeleted file mode 100644\nindex e69de29..0000000\n"
    assert apply_diff({**BASE, "e.py": ""}, gone) == {"e.py": None}
    with pytest.raises(PatchError):
        apply_diff(BASE, gone)  # not there
    with pytest.raises(PatchError):
        apply_diff(BASE, "diff --git a/../x b/../x\nnew file mode 100644\n")
