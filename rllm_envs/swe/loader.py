"""SWE-bench / SWE-Gym JSONL over repositories on disk.

A record in the SWE-bench schema has ``instance_id``, ``repo`` (``"owner/name"``),
``base_commit``, ``problem_statement``, ``patch`` (the reference fix), ``test_patch`` (the
tests that check it) and ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` (lists of test ids, or JSON
strings holding them, as SWE-bench ships them). The repository itself is a git repository
the user already has: :func:`load_swebench` finds ``repos_dir/<owner>__<name>``,
``repos_dir/<name>`` or ``repos_dir/<owner>/<name>`` and reads the base commit's files with
``git archive`` (no worktree is written). Each commit is read once per process and shared by
every episode on it (:func:`checkout`).

What runs: the repository's text files, in memory, in the sandbox's system interpreter with
the executor's pytest subset (:mod:`rllm_envs.swe.executor`: test functions, classes,
parametrize, fixtures from the test file and its ``conftest.py`` files, data files read from
the repository). Repositories whose tests need third-party packages the system interpreter
lacks, compiled extensions, pytest plugins or writable files are outside what this sandbox
can run.
"""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from rllm_envs.error import InvalidDataset
from rllm_envs.swe.repo import FrozenFiles
from rllm_envs.tasks import load_records

__all__ = ["load_swebench", "checkout", "record_to_task", "MAX_FILE_BYTES", "MAX_REPO_BYTES"]

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


def _find_repo(repos_dir: Path, repo: str) -> Path:
    owner, _, name = repo.partition("/")
    candidates = [repos_dir / repo.replace("/", "__"), repos_dir / (name or owner)]
    if name:
        candidates.append(repos_dir / owner / name)
    for path in candidates:
        if (path / ".git").exists() or (path / "HEAD").exists():
            return path
    raise InvalidDataset(
        f"No git repository for `{repo}` under {repos_dir}: tried "
        + ", ".join(str(c) for c in candidates)
        + f". Clone it there (e.g. `git clone https://github.com/{repo} {candidates[0]}`)."
    )


def record_to_task(record: Mapping[str, Any], repos_dir: Path, index: int = 0) -> dict[str, Any]:
    """A SWE task (see :mod:`rllm_envs.swe.tasks`) from one SWE-bench-format record."""
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
    return {
        "id": str(record["instance_id"]),
        "instance_id": str(record["instance_id"]),
        "repo": str(record["repo"]),
        "repo_path": str(_find_repo(repos_dir, str(record["repo"]))),
        "base_commit": str(record["base_commit"]),
        "problem_statement": str(record["problem_statement"]),
        "patch": str(record.get("patch") or ""),
        "test_patch": str(record["test_patch"]),
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": _ids(record.get("PASS_TO_PASS"), "PASS_TO_PASS", index),
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


@lru_cache(maxsize=8)
def checkout(repo_path: str, commit: str) -> Mapping[str, str]:
    """The text files of ``repo_path`` at ``commit``, read with ``git archive`` (cached).

    Binary files and files over :data:`MAX_FILE_BYTES` are left out. The mapping is
    read-only: every episode on this commit shares it.

    Raises:
        InvalidDataset: If git cannot read the commit, or the checkout is too large.
    """
    try:
        done = subprocess.run(
            ["git", "-C", repo_path, "archive", "--format=tar", commit],
            capture_output=True,
            timeout=120,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise InvalidDataset(f"Cannot run git on {repo_path}: {e}") from e
    if done.returncode != 0:
        raise InvalidDataset(
            f"git cannot read commit {commit} of {repo_path}: "
            + done.stderr.decode("utf-8", "replace").strip()[-300:]
        )
    files: dict[str, str] = {}
    total = 0
    with tarfile.open(fileobj=io.BytesIO(done.stdout)) as archive:
        for member in archive:
            if not member.isfile() or member.size > MAX_FILE_BYTES:
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            data = handle.read()
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
            files[member.name] = text
    return FrozenFiles(files)
