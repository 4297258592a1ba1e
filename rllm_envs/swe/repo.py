"""Repositories as text: path rules, copy-on-write workspaces and unified diffs.

A repository is a mapping ``{relative posix path: text}``. The pristine base of a task is
built once and shared (never mutated); an episode's :class:`Workspace` is a copy-on-write
overlay on it, so starting an episode copies nothing and ending it frees only the files the
agent changed. Nothing here touches the disk or imports Gymnasium.

Diffs are the unified format of ``git diff`` / ``diff -u``: :func:`make_diff` writes one
from two repositories, :func:`apply_diff` applies one (exact context, hunks may have moved;
file creation and deletion through ``/dev/null``). Both are pure functions; a diff that does
not apply raises :class:`PatchError` with a sentence for the model.
"""

from __future__ import annotations

import difflib
import posixpath
import re
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

__all__ = [
    "Files",
    "FrozenFiles",
    "PatchError",
    "PatchTooLarge",
    "Workspace",
    "WorkspaceLimits",
    "normalize_path",
    "make_diff",
    "apply_diff",
    "diff_paths",
    "is_test_path",
]

Files = Mapping[str, str]

#: Most characters of one path.
MAX_PATH_CHARS = 256


class PatchError(ValueError):
    """A diff, path or edit that cannot be used; the message is feedback for the model."""


class PatchTooLarge(PatchError):
    """A diff whose application would pass the work bounds (:data:`MAX_PATCH_WORK`, ...)."""


class FrozenFiles(Mapping[str, str]):
    """A read-only ``{path: text}`` mapping (a base repository shared by many episodes).

    Unlike ``types.MappingProxyType`` it pickles, so an env holding one does too.
    """

    def __init__(self, files: Mapping[str, str]) -> None:
        self._files = dict(files)

    def __getitem__(self, path: str) -> str:
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __reduce__(self) -> tuple[type[FrozenFiles], tuple[dict[str, str]]]:
        return (FrozenFiles, (self._files,))


@dataclass(frozen=True)
class WorkspaceLimits:
    """Bounds on one episode's working copy (the per-episode disk limit).

    Attributes:
        max_files: Most files in the working copy.
        max_file_chars: Most characters of one file.
        max_total_chars: Most characters of all files together.
    """

    max_files: int = 2000
    max_file_chars: int = 1 << 20
    max_total_chars: int = 32 << 20


def normalize_path(path: object) -> str:
    """A repository-relative posix path, or :class:`PatchError` if it leaves the repository.

    ``./a/b.py``, ``a//b.py`` and ``a/x/../b.py`` are ``a/b.py``; absolute paths, ``..`` past
    the root, empty names, NUL and control characters are refused.
    """
    if not isinstance(path, str):
        raise PatchError(f"a path must be a string, got {type(path).__name__}")
    raw = path.strip()
    if not raw or len(raw) > MAX_PATH_CHARS:
        raise PatchError(f"a path must have 1 to {MAX_PATH_CHARS} characters")
    if any(ord(c) < 32 for c in raw) or "\\" in raw:
        raise PatchError(f"the path {raw[:80]!r} has control characters or backslashes")
    if raw.startswith("/"):
        raise PatchError(f"the path {raw[:80]!r} is absolute; use a path relative to the repo")
    norm = posixpath.normpath(raw)
    if norm == "." or norm.startswith("../") or norm == "..":
        raise PatchError(f"the path {raw[:80]!r} is outside the repository")
    if any(part in ("", ".git") for part in norm.split("/")):
        raise PatchError(f"the path {raw[:80]!r} is not a file of the repository")
    return norm


_TEST_FILE = re.compile(r"(^|/)(test_[^/]*\.py|[^/]*_test\.py|tests\.py|conftest\.py)$")
_TEST_DIR = re.compile(r"(^|/)(tests?|testing)/")


def is_test_path(path: str) -> bool:
    """Whether ``path`` belongs to the test suite.

    Test files (``test_*.py``, ``*_test.py``, Django's ``tests.py``, ``conftest.py``) and
    everything in a ``tests``/``test``/``testing`` folder. The verdict restores every such
    file to its pristine state before the hidden tests run.
    """
    return bool(_TEST_FILE.search(path) or _TEST_DIR.search(path))


@dataclass
class Workspace:
    """A copy-on-write working copy of a pristine repository.

    Args:
        base: The pristine files (shared, never modified).
        limits: Size bounds; an edit past them raises :class:`PatchError`.
    """

    base: Files
    limits: WorkspaceLimits = field(default_factory=WorkspaceLimits)
    #: Files written in this episode (``None``: deleted).
    changed: dict[str, str | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._total = sum(len(t) for t in self.base.values())
        self._count = len(self.base)

    def read(self, path: str) -> str | None:
        """The text of ``path`` in the working copy, or ``None`` if there is no such file."""
        if path in self.changed:
            return self.changed[path]
        return self.base.get(path)

    def exists(self, path: str) -> bool:
        """Whether ``path`` is a file of the working copy."""
        return self.read(path) is not None

    def paths(self) -> list[str]:
        """Every file of the working copy, sorted."""
        found = {p for p in self.base if self.changed.get(p, "") is not None}
        found |= {p for p, t in self.changed.items() if t is not None}
        return sorted(found)

    def __iter__(self) -> Iterator[str]:
        return iter(self.paths())

    def write(self, path: str, text: str | None) -> None:
        """Set (or, with ``None``, delete) ``path``; raise :class:`PatchError` past the limits."""
        old = self.read(path)
        if text is not None and len(text) > self.limits.max_file_chars:
            raise PatchError(
                f"{path} would have {len(text)} characters; the limit is "
                f"{self.limits.max_file_chars}"
            )
        total = self._total - len(old or "") + len(text or "")
        count = (
            self._count
            + int(old is None and text is not None)
            - int(old is not None and text is None)
        )
        if total > self.limits.max_total_chars:
            raise PatchError(f"the repository would exceed {self.limits.max_total_chars} chars")
        if count > self.limits.max_files:
            raise PatchError(f"the repository would exceed {self.limits.max_files} files")
        self._total, self._count = total, count
        if self.base.get(path) == text:
            self.changed.pop(path, None)
        else:
            self.changed[path] = text

    def snapshot(self) -> dict[str, str]:
        """The working copy as a plain dict (shares the text objects)."""
        return {p: t for p in self.paths() if (t := self.read(p)) is not None}

    def diff(self) -> str:
        """The unified diff from the pristine base to the working copy."""
        return make_diff(self.base, self.snapshot(), only=sorted(self.changed))

    def reset(self) -> None:
        """Drop every change (the workspace is the pristine base again)."""
        self.changed.clear()
        self.__post_init__()


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def make_diff(old: Files, new: Files, *, only: list[str] | None = None) -> str:
    """The unified diff (``a/``/``b/`` prefixes, 3 lines of context) from ``old`` to ``new``.

    Args:
        old: Files before.
        new: Files after.
        only: Restrict to these paths (default: every path of either side).
    """
    paths = sorted(set(old) | set(new)) if only is None else only
    out: list[str] = []
    budget = [MAX_DIFF_WORK]  # for the whole diff, not per file (many files add up)
    for path in paths:
        a, b = old.get(path), new.get(path)
        if a == b:
            continue
        a_lines, b_lines = _lines(a or ""), _lines(b or "")
        for lines in (a_lines, b_lines):
            if lines and not lines[-1].endswith("\n"):
                lines[-1] += "\n\\ No newline at end of file\n"
        head_a = "/dev/null" if a is None else f"a/{path}"
        head_b = "/dev/null" if b is None else f"b/{path}"
        out.append(f"diff --git a/{path} b/{path}\n")
        if a is None:
            out.append("new file mode 100644\n")
        elif b is None:
            out.append("deleted file mode 100644\n")
        body = _unified(a_lines, b_lines, head_a, head_b, budget)
        if body:
            body[0], body[1] = f"--- {head_a}\n", f"+++ {head_b}\n"
        else:  # an empty file created or deleted: the headers alone say so
            body = [f"--- {head_a}\n", f"+++ {head_b}\n"]
        out.extend(body)
    return "".join(out)


#: Line comparisons :func:`make_diff` lets difflib spend on the changed regions of all its
#: files together; past it (difflib is quadratic there: 6000 interleaved lines took 4 s)
#: a region is written as hunks that remove its old lines and add its new ones (correct,
#: less readable).
MAX_DIFF_WORK = 4_000_000
_DIFF_CHUNK = 2000


def _range(start: int, length: int) -> str:
    """A hunk side's range as ``diff -u`` writes it (``start`` 0-based)."""
    if length == 1:
        return f"{start + 1}"
    return f"{start + 1 if length else start},{length}"


def _unified(
    a: list[str], b: list[str], head_a: str, head_b: str, budget: list[int] | None = None
) -> list[str]:
    """``difflib.unified_diff(a, b, n=3)``, bounded: see :data:`MAX_DIFF_WORK`.

    ``budget``: the comparisons left to the whole diff (spent here when difflib runs).
    """
    if budget is None:
        budget = [MAX_DIFF_WORK]
    prefix = 0
    while prefix < min(len(a), len(b)) and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < min(len(a), len(b)) - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]
    ):
        suffix += 1
    work = (len(a) - prefix - suffix) * (len(b) - prefix - suffix)
    if work <= budget[0]:
        budget[0] -= work
        return list(difflib.unified_diff(a, b, head_a, head_b, n=3))
    start = max(prefix - 3, 0)
    end_a = min(len(a) - suffix + 3, len(a))
    old_mid, new_mid = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    # Hunks of at most _DIFF_CHUNK removed lines each (apply_diff refuses huge hunks).
    count = -(-len(old_mid) // _DIFF_CHUNK)
    per = -(-len(new_mid) // count)
    lines = [f"--- {head_a}\n", f"+++ {head_b}\n"]
    at_a = at_b = prefix
    for k in range(count):
        removed = old_mid[k * _DIFF_CHUNK : (k + 1) * _DIFF_CHUNK]
        added = new_mid[k * per : (k + 1) * per]
        lead = a[start:prefix] if k == 0 else []
        trail = a[len(a) - suffix : end_a] if k == count - 1 else []
        size_a = len(lead) + len(removed) + len(trail)
        size_b = len(lead) + len(added) + len(trail)
        lines.append(
            f"@@ -{_range(at_a - len(lead), size_a)} +{_range(at_b - len(lead), size_b)} @@\n"
        )
        lines += [" " + line for line in lead]
        lines += ["-" + line for line in removed]
        lines += ["+" + line for line in added]
        lines += [" " + line for line in trail]
        at_a += len(removed)
        at_b += len(added)
    return lines


@dataclass
class _Hunk:
    old_start: int
    old: list[str]
    new: list[str]


@dataclass
class _FilePatch:
    old_path: str | None
    new_path: str | None
    hunks: list[_Hunk]


#: A hunk header; its numbers have at most 12 digits (a longer one is malformed: Python
#: refuses to convert ints past 4300 digits, and no file has that many lines).
_HUNK = re.compile(r"^@@ -(\d{1,12})(?:,(\d{1,12}))? \+(\d{1,12})(?:,(\d{1,12}))? @@")
#: Most files one diff may touch and most lines it may have.
MAX_DIFF_FILES = 200
MAX_DIFF_LINES = 200_000


def _header_path(line: str) -> str | None:
    name = line[4:].split("\t")[0].rstrip("\n").rstrip("\r").strip()
    if name == "/dev/null":
        return None
    if name.startswith(("a/", "b/")):
        name = name[2:]
    return normalize_path(name)


def _git_path(line: str) -> str | None:
    """The path of a ``diff --git a/<path> b/<path>`` line (the same path on both sides)."""
    rest = line[len("diff --git ") :].rstrip("\r\n")
    half = (len(rest) - 1) // 2
    old, new = rest[:half], rest[half + 1 :]
    if rest[half : half + 1] != " " or not old.startswith("a/") or old[2:] != new[2:]:
        return None
    try:
        return normalize_path(old[2:])
    except PatchError:
        return None


def _strip_newline(hunk: _Hunk, tag: str) -> None:
    """Apply a "No newline at end of file" marker to the line just read (its side only)."""
    sides = {" ": (hunk.old, hunk.new), "-": (hunk.old,), "+": (hunk.new,)}.get(tag, ())
    for side in sides:
        if side and side[-1].endswith("\n"):
            side[-1] = side[-1][:-1]


def _parse(diff: str) -> list[_FilePatch]:
    lines = diff.splitlines(keepends=True)
    if len(lines) > MAX_DIFF_LINES:
        raise PatchError(f"the diff has more than {MAX_DIFF_LINES} lines")
    patches: list[_FilePatch] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("diff --git "):
            # git writes an empty file's creation or deletion without ``---`` / ``+++``
            # headers (``new file mode 100644``, ``index 0000000..e69de29``).
            j, mode = i + 1, ""
            while j < len(lines) and not lines[j].startswith(("diff --git ", "--- ", "@@")):
                if lines[j].startswith(("new file mode", "deleted file mode")):
                    mode = lines[j].split()[0]
                j += 1
            path = _git_path(line)
            if mode and path is not None and not (j < len(lines) and lines[j].startswith("--- ")):
                patches.append(
                    _FilePatch(None, path, []) if mode == "new" else _FilePatch(path, None, [])
                )
                i = j
                continue
        if not (line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")):
            i += 1
            continue
        old_path, new_path = _header_path(line), _header_path(lines[i + 1])
        if old_path is None and new_path is None:
            raise PatchError("a file header has /dev/null on both sides")
        patch = _FilePatch(old_path, new_path, [])
        i += 2
        while i < len(lines) and lines[i].startswith("@@"):
            match = _HUNK.match(lines[i])
            if match is None:
                raise PatchError(f"malformed hunk header: {lines[i].strip()[:80]!r}")
            old_count = int(match.group(2)) if match.group(2) is not None else 1
            new_count = int(match.group(4)) if match.group(4) is not None else 1
            hunk = _Hunk(max(int(match.group(1)), 1), [], [])
            i += 1
            seen_old = seen_new = 0
            last = " "
            while i < len(lines) and (seen_old < old_count or seen_new < new_count):
                body = lines[i]
                tag, text = body[:1], body[1:]
                if body.startswith("\\"):  # "\ No newline at end of file"
                    _strip_newline(hunk, last)
                    i += 1
                    continue
                if body in ("\n", "\r\n"):  # an empty context line whose space was lost
                    tag, text = " ", body
                if tag == " ":
                    hunk.old.append(text)
                    hunk.new.append(text)
                    seen_old += 1
                    seen_new += 1
                elif tag == "-":
                    hunk.old.append(text)
                    seen_old += 1
                elif tag == "+":
                    hunk.new.append(text)
                    seen_new += 1
                else:
                    tag = ""
                if tag:
                    last = tag
                else:
                    raise PatchError(
                        f"hunk of {new_path or old_path} ends early: expected {old_count} old "
                        f"and {new_count} new lines (check the @@ counts)"
                    )
                i += 1
            if seen_old != old_count or seen_new != new_count:
                raise PatchError(
                    f"hunk of {new_path or old_path} is cut: expected {old_count} old and "
                    f"{new_count} new lines, found {seen_old} and {seen_new}"
                )
            while i < len(lines) and lines[i].startswith("\\"):
                _strip_newline(hunk, last)
                i += 1
            patch.hunks.append(hunk)
        patches.append(patch)
        if len(patches) > MAX_DIFF_FILES:
            raise PatchError(f"the diff touches more than {MAX_DIFF_FILES} files")
    if not patches:
        raise PatchError(
            "no file in the diff: expected unified-diff headers '--- a/<path>' and "
            "'+++ b/<path>' followed by '@@ -l,n +l,n @@' hunks"
        )
    return patches


#: Most context and removed lines of one hunk, and most lines of a file a diff changes.
MAX_HUNK_LINES = 10_000
MAX_PATCH_FILE_LINES = 200_000
#: Most line comparisons (and line moves / 64) one :func:`apply_diff` call may spend.
MAX_PATCH_WORK = 4_000_000
_MODULUS = (1 << 61) - 1
# Per process, so that no diff can be written to collide with the window hashes.
_BASE = 2 + secrets.randbelow(_MODULUS - 3)


class _Budget:
    """The line operations left to one :func:`apply_diff` call."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def spend(self, work: int) -> None:
        self.left -= work
        if self.left < 0:
            raise PatchTooLarge(
                f"applying this diff takes more than {MAX_PATCH_WORK} line comparisons; "
                "send smaller hunks with the right line numbers, or edit with replace"
            )


def _find(lines: list[str], block: list[str], hint: int, budget: _Budget | None = None) -> int:
    """Where ``block`` occurs in ``lines``, the occurrence nearest ``hint``; -1 if nowhere.

    Linear: the hint first, then a rolling hash of every window of ``len(block)`` lines
    (equal hashes are compared line by line, nearest the hint first).
    """
    budget = budget or _Budget(MAX_PATCH_WORK)
    size, count = len(block), len(lines)
    if not block:
        return min(max(hint, 0), count)
    if size > count:
        return -1
    at = min(max(hint, 0), count - size)
    budget.spend(size)
    if lines[at : at + size] == block:
        return at
    budget.spend(count + size)
    mod, base = _MODULUS, _BASE
    hashes = [hash(line) % mod for line in lines]
    target = window = 0
    for line in block:
        target = (target * base + hash(line) % mod) % mod
    for value in hashes[:size]:
        window = (window * base + value) % mod
    top = pow(base, size - 1, mod)
    found = [0] if window == target else []
    for start in range(1, count - size + 1):
        window = ((window - hashes[start - 1] * top) * base + hashes[start + size - 1]) % mod
        if window == target:
            found.append(start)
    for start in sorted(found, key=lambda s: (abs(s - hint), s)):
        budget.spend(size)
        if lines[start : start + size] == block:
            return start
    return -1


def _apply_hunks(path: str, text: str, hunks: list[_Hunk], budget: _Budget | None = None) -> str:
    budget = budget or _Budget(MAX_PATCH_WORK)
    lines = _lines(text)
    if len(lines) > MAX_PATCH_FILE_LINES:
        raise PatchTooLarge(
            f"{path} has more than {MAX_PATCH_FILE_LINES} lines; a diff cannot change it"
        )
    offset = 0
    for n, hunk in enumerate(hunks, 1):
        if len(hunk.old) > MAX_HUNK_LINES:
            raise PatchTooLarge(
                f"hunk {n} of {path} has more than {MAX_HUNK_LINES} context and removed "
                "lines; send smaller hunks"
            )
        at = _find(lines, hunk.old, hunk.old_start - 1 + offset, budget)
        if at < 0:
            first = next((s.strip() for s in hunk.old if s.strip()), "")
            raise PatchError(
                f"hunk {n} of {path} does not apply: its context and removed lines are not in "
                f"the file (first line {first[:60]!r}); read the file again and diff against "
                "its current text"
            )
        budget.spend((len(lines) - at) // 64 + len(hunk.new) // 64 + 1)
        lines[at : at + len(hunk.old)] = hunk.new
        offset = at + len(hunk.new) - (hunk.old_start - 1) - len(hunk.old)
    return "".join(lines)


def diff_paths(diff: str) -> list[str]:
    """The paths a diff touches (either side), or :class:`PatchError` if it is malformed."""
    found: list[str] = []
    for patch in _parse(diff):
        for p in (patch.old_path, patch.new_path):
            if p is not None and p not in found:
                found.append(p)
    return found


def modules_outside_tests(diff: str) -> list[str]:
    """The Python modules outside the test suite a (test) diff touches (none for a malformed one).

    The judge reads the test suite for code a patch could call for an answer; a module the
    hidden tests add elsewhere is not read (s44 att44i F6: 5/5 paid ``host``).
    """
    try:
        paths = diff_paths(diff)
    except PatchError:
        return []
    return [p for p in paths if p.endswith(".py") and not is_test_path(p)]


def apply_diff(files: Files, diff: str) -> dict[str, str | None]:
    """The files a unified diff changes, after applying it to ``files``.

    Returns:
        ``{path: new text}`` for every touched path (``None``: the file is deleted). The
        input is not modified.

    Raises:
        PatchError: If the diff is malformed or a hunk does not match (nothing is applied).
        PatchTooLarge: If applying it would pass :data:`MAX_HUNK_LINES`,
            :data:`MAX_PATCH_FILE_LINES` or :data:`MAX_PATCH_WORK` (nothing is applied).
    """
    result: dict[str, str | None] = {}
    budget = _Budget(MAX_PATCH_WORK)

    def current(path: str) -> str | None:
        return result[path] if path in result else files.get(path)

    for patch in _parse(diff):
        source = patch.old_path
        if source is None:
            assert patch.new_path is not None
            if current(patch.new_path) is not None:
                raise PatchError(f"the diff creates {patch.new_path}, which already exists")
            text = _apply_hunks(patch.new_path, "", patch.hunks, budget)
            result[patch.new_path] = text
            continue
        old = current(source)
        if old is None:
            raise PatchError(f"the diff changes {source}, which does not exist")
        text = _apply_hunks(source, old, patch.hunks, budget)
        if patch.new_path is None:
            if text.strip():
                raise PatchError(f"the diff deletes {source} but leaves lines in it")
            result[source] = None
        elif patch.new_path != source:
            result[source] = None
            result[patch.new_path] = text
        else:
            result[source] = text
    return result
