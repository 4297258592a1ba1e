"""SWE-bench / SWE-Gym JSONL over repositories on disk.

A record in the SWE-bench schema has ``instance_id``, ``repo`` (``"owner/name"``),
``base_commit``, ``problem_statement``, ``patch`` (the reference fix), ``test_patch`` (the
tests that check it) and ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` (lists of test ids, or JSON
strings holding them, as SWE-bench ships them). The repository itself is a git repository
the user already has: :func:`load_swebench` finds ``repos_dir/<owner>__<name>``,
``repos_dir/<name>`` or ``repos_dir/<owner>/<name>`` (never outside ``repos_dir``) and reads
the base commit's files with ``git ls-tree`` and ``git cat-file`` (no worktree is written, no
``.gitattributes`` applied, a ``base_commit`` that could read as an option is refused). Each
commit is read once per process and shared by every episode on it (:func:`checkout`).

What runs: the repository's text files, in memory, in the sandbox's system interpreter with
the executor's pytest subset (:mod:`rllm_envs.swe.executor`: test functions, classes,
parametrize, fixtures from the test file and its ``conftest.py`` files, data files read from
the repository). Repositories whose tests need third-party packages the system interpreter
lacks, compiled extensions, pytest plugins or writable files are outside what this sandbox
can run.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from rllm_envs.error import InvalidDataset
from rllm_envs.swe.repo import FrozenFiles, is_test_path
from rllm_envs.tasks import load_records

__all__ = [
    "load_swebench",
    "checkout",
    "check_commit",
    "record_to_task",
    "MAX_FILE_BYTES",
    "MAX_REPO_BYTES",
]

#: Files larger than this are left out of a checkout (data, generated code).
MAX_FILE_BYTES = 1 << 20
#: A checkout larger than this is refused.
MAX_REPO_BYTES = 64 << 20


def _ids(value: Any, field: str, index: int) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InvalidDataset(f"Record {index}: `{field}` is not a JSON list.") from None
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise InvalidDataset(f"Record {index}: expects `{field}` to be a list of test ids.")
    return value


#: A ``repo`` field: ``name`` or ``owner/name`` (GitHub's characters; no ``..``, no root).
_REPO_NAME = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)?\Z")
#: A ``base_commit``: a hex sha, or a ref name that cannot be read as an option.
_COMMIT = re.compile(r"[0-9A-Za-z][0-9A-Za-z._/-]{0,254}\Z")


def _find_repo(repos_dir: Path, repo: str) -> Path:
    if not _REPO_NAME.match(repo) or any(p in (".", "..") for p in repo.split("/")):
        raise InvalidDataset(
            f"Expects a record's `repo` to be `owner/name` (letters, digits, `_.-`), actual: "
            f"{repo[:200]!r}."
        )
    owner, _, name = repo.partition("/")
    candidates = [repos_dir / repo.replace("/", "__"), repos_dir / (name or owner)]
    if name:
        candidates.append(repos_dir / owner / name)
    root = os.path.normpath(os.path.abspath(repos_dir))
    for path in candidates:
        # Lexically inside ``repos_dir`` (the checks above make this hold; kept as a guard).
        if os.path.commonpath([root, os.path.normpath(os.path.abspath(path))]) != root:
            continue
        if (path / ".git").exists() or (path / "HEAD").exists():
            return path
    raise InvalidDataset(
        f"No git repository for `{repo}` under {repos_dir}: tried "
        + ", ".join(str(c) for c in candidates)
        + f". Clone it there (e.g. `git clone https://github.com/{repo} {candidates[0]}`)."
    )


def check_commit(commit: object) -> str:
    """``commit`` if it is a hex sha or a ref name git cannot read as an option.

    Raises:
        InvalidDataset: For anything else (``--output=...`` would be an option of git).
    """
    if (
        not isinstance(commit, str)
        or not _COMMIT.match(commit)
        or ".." in commit
        or "//" in commit
        or commit.endswith((".", "/", ".lock"))
    ):
        raise InvalidDataset(
            "Expects a record's `base_commit` to be a commit sha or a ref name (letters, digits, "
            f"`._/-`, not starting with `-`), actual: {str(commit)[:200]!r}."
        )
    return commit


def record_to_task(record: Mapping[str, Any], repos_dir: Path, index: int = 0) -> dict[str, Any]:
    """A SWE task (see :mod:`rllm_envs.swe.tasks`) from one SWE-bench-format record."""
    if not isinstance(record, Mapping):
        raise InvalidDataset(f"Record {index} is not an object: {type(record).__name__}.")
    missing = [
        f
        for f in ("instance_id", "repo", "base_commit", "problem_statement", "test_patch")
        if f not in record
    ]
    if missing:
        raise InvalidDataset(
            f"Record {index} lacks SWE-bench field(s) {missing}; it has {sorted(record)}."
        )
    f2p = _ids(record.get("FAIL_TO_PASS"), "FAIL_TO_PASS", index)
    if not f2p:
        raise InvalidDataset(f"Record {index} ({record['instance_id']}) has no FAIL_TO_PASS test.")
    p2p = _ids(record.get("PASS_TO_PASS"), "PASS_TO_PASS", index)
    for test in (*f2p, *p2p):
        # The judge runs pytest node ids (`path/to/test_file.py::name`) and restores and
        # runs only the test suite's files: any other test would never run (every episode,
        # the reference's too, would score 0) or not be protected from the submission.
        module, sep, name = test.partition("::")
        if not sep or not name or not module.endswith(".py"):
            raise InvalidDataset(
                f"Record {index} ({record['instance_id']}): test {test[:200]!r} is not a "
                "pytest node id (`path/to/test_file.py::test_name`); Django's "
                "`test_name (module.Class)` and bare test names cannot be run by the judge."
            )
        if not is_test_path(module):
            raise InvalidDataset(
                f"Record {index} ({record['instance_id']}): test {test[:200]!r} is in "
                f"{module[:200]!r}, which is not a test module (test_*.py, *_test.py, "
                "tests.py, conftest.py, or under a tests/, test/ or testing/ folder): the "
                "judge could neither protect it from the submission's edits nor run it. Move "
                "the test into such a file."
            )
    return {
        "id": str(record["instance_id"]),
        "instance_id": str(record["instance_id"]),
        "repo": str(record["repo"]),
        "repo_path": str(_find_repo(repos_dir, str(record["repo"]))),
        "base_commit": check_commit(record["base_commit"]),
        "problem_statement": str(record["problem_statement"]),
        "patch": str(record.get("patch") or ""),
        "test_patch": str(record["test_patch"]),
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
    }


def load_swebench(dataset: str | Path, repos_dir: str | Path) -> list[dict[str, Any]]:
    """Read SWE-bench/SWE-Gym records (JSONL, JSON or Parquet) as SWE tasks.

    Args:
        dataset: The records file.
        repos_dir: The folder holding the repositories (see the module docstring).

    Raises:
        InvalidDataset: For a record that lacks a field or whose repository is not found.
    """
    folder = Path(repos_dir)
    if not folder.is_dir():
        raise InvalidDataset(f"Expects `repos_dir` to be a folder of git repositories: {folder}")
    return [record_to_task(r, folder, i) for i, r in enumerate(load_records(dataset))]


#: Blob bytes read per ``git cat-file --batch`` run (bounds the host memory of a checkout).
_BATCH_BYTES = 32 << 20


def _git(repo_path: str, args: list[str], *, stdin: Any = None) -> bytes:
    """``git -C repo_path args`` without attributes or hooks; stdout, or InvalidDataset."""
    argv = ["git", "-c", "core.attributesFile=/dev/null", "-C", repo_path, *args]
    try:
        done = subprocess.run(argv, stdin=stdin, capture_output=True, timeout=120, check=False)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        raise InvalidDataset(f"Cannot run git on {repo_path}: {e}") from e
    if done.returncode != 0:
        raise InvalidDataset(
            f"git cannot read {repo_path} ({args[0]}): "
            + done.stderr.decode("utf-8", "replace").strip()[-300:]
        )
    return done.stdout


def _tree(repo_path: str, commit: str) -> list[tuple[str, int, str]]:
    """``(blob sha, size, path)`` of each regular file of ``commit`` (no attributes applied)."""
    sha = _git(repo_path, ["rev-parse", "--verify", "--end-of-options", commit + "^{commit}"])
    sha_text = sha.decode("ascii", "replace").strip()
    if not re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", sha_text):
        raise InvalidDataset(f"git cannot read commit {commit} of {repo_path}: {sha_text[:100]}")
    listing = _git(repo_path, ["ls-tree", "-r", "-z", "--long", "--full-tree", sha_text])
    entries: list[tuple[str, int, str]] = []
    for entry in listing.split(b"\0"):
        if not entry:
            continue
        meta, _, raw_path = entry.partition(b"\t")
        fields = meta.split()
        # Regular files only: no symlinks (120000), no submodules (160000).
        if len(fields) != 4 or fields[1] != b"blob" or fields[0] not in (b"100644", b"100755"):
            continue
        try:
            path = raw_path.decode("utf-8")
            size = int(fields[3])
        except (UnicodeDecodeError, ValueError):
            continue
        entries.append((fields[2].decode("ascii"), size, path))
    return entries


def _blobs(repo_path: str, shas: list[str]) -> list[bytes]:
    """The contents of ``shas``, in order (one ``git cat-file --batch`` run)."""
    with tempfile.TemporaryFile() as request:
        request.write("".join(s + "\n" for s in shas).encode("ascii"))
        request.seek(0)
        out = _git(repo_path, ["cat-file", "--batch"], stdin=request)
    blobs: list[bytes] = []
    at = 0
    for sha in shas:
        end = out.find(b"\n", at)
        header = out[at:end].split() if end >= 0 else []
        if len(header) != 3 or header[0].decode("ascii", "replace") != sha or header[1] != b"blob":
            raise InvalidDataset(
                f"git cat-file gave an unexpected answer for {sha} in {repo_path}."
            )
        size = int(header[2])
        blobs.append(out[end + 1 : end + 1 + size])
        at = end + 1 + size + 1
    return blobs


@lru_cache(maxsize=8)
def checkout(repo_path: str, commit: str) -> Mapping[str, str]:
    """The text files of ``repo_path`` at ``commit``, as committed (cached).

    The tree is read with ``git ls-tree`` and ``git cat-file``, so the commit's
    ``.gitattributes`` (``export-ignore``, ``export-subst``) change nothing: the episode's
    repository is the commit's. Binary files, symlinks, submodules and files over
    :data:`MAX_FILE_BYTES` are left out. The mapping is read-only: every episode on this
    commit shares it.

    Raises:
        InvalidDataset: If ``commit`` is not a sha or a ref name, git cannot read it, or the
            checkout is too large.
    """
    check_commit(commit)
    entries = [e for e in _tree(repo_path, commit) if e[1] <= MAX_FILE_BYTES]
    files: dict[str, str] = {}
    total = 0
    batch: list[tuple[str, int, str]] = []
    batch_bytes = 0

    def flush() -> None:
        nonlocal total
        for (_, _, path), data in zip(batch, _blobs(repo_path, [e[0] for e in batch]), strict=True):
            if b"\0" in data:
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            total += len(data)
            if total > MAX_REPO_BYTES:
                raise InvalidDataset(
                    f"{repo_path} at {commit} has more than {MAX_REPO_BYTES >> 20} MiB of text."
                )
            files[path] = text

    for entry in entries:
        if batch and batch_bytes + entry[1] > _BATCH_BYTES:
            flush()
            batch, batch_bytes = [], 0
        batch.append(entry)
        batch_bytes += entry[1]
    if batch:
        flush()
    return FrozenFiles(files)
