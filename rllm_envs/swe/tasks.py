"""SWE tasks: the embedded procedural source and the task record schema.

A task is a SWE-bench-shaped record: ``instance_id``, ``problem_statement``, ``patch`` (the
reference fix, a unified diff against the base), ``test_patch`` (the hidden tests, a diff
against the base), ``FAIL_TO_PASS`` and ``PASS_TO_PASS`` (pytest node ids), and the base
repository: ``files`` (``{path: text}``, the embedded source) or ``repo_path`` and
``base_commit`` (a git repository on disk, see :mod:`rllm_envs.swe.loader`).

:func:`generate` makes task ``i`` of the embedded source from ``rng = task_rng(seed, i)``: one
of the projects of :mod:`rllm_envs.swe.projects` under one of its package names, with one
seeded bug (two from difficulty 4), the tests that expose it held back as hidden
fail-to-pass tests, and an issue written from what the buggy code does (the code is run
in-process: it is this package's own, never model-written). The reference fix is the
reverse of the seeded change. No Gymnasium import.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np

from rllm_envs.error import InvalidDataset
from rllm_envs.swe.projects import DISTRACTORS, PROJECTS, Bug, Module, Project
from rllm_envs.swe.repo import Files, make_diff

__all__ = ["generate", "base_files", "fixed_files", "check_task", "MAX_DIFFICULTY", "REQUIRED"]

#: Difficulty levels: 1 names the file, 2 the function, 3 only the behaviour (and adds a
#: module with no bug), 4 two bugs, 5 two bugs and two modules with no bug.
MAX_DIFFICULTY = 5
#: Fields every task record has.
REQUIRED = ("problem_statement", "test_patch", "FAIL_TO_PASS")
_VERSION = "0.4.2"


def _test_file(module: Module, pkg: str, names: list[str]) -> str:
    header = module.test_header.replace("PKG", pkg)
    return header + "".join("\n\n" + module.tests[n] for n in names)


def _project_files(project: Project, pkg: str, extra: tuple[Module, ...]) -> dict[str, str]:
    files = {
        "README.md": f"# {pkg}\n\n{project.description.capitalize()}.\n\n"
        f"Run the tests with `python -m pytest tests`.\n",
        "pyproject.toml": f'[project]\nname = "{pkg}"\nversion = "{_VERSION}"\n'
        'requires-python = ">=3.9"\n',
        f"{pkg}/__init__.py": f'"""{pkg}: {project.description}."""\n\n'
        f'__version__ = "{_VERSION}"\n',
    }
    for module in (*project.modules, *extra):
        files[f"{pkg}/{module.name}.py"] = module.source.replace("PKG", pkg)
        files[f"tests/test_{module.name}.py"] = _test_file(module, pkg, list(module.tests))
    return files


def _behaviour(source: str, call: str) -> tuple[bool, str]:
    """What ``call`` does with the module ``source``: ``(raised, text)``."""
    namespace: dict[str, Any] = {"__name__": "repro"}
    exec(compile(source, "<module>", "exec"), namespace)
    *setup, last = call.strip().split("\n")
    try:
        if setup:
            exec("\n".join(setup), namespace)
        return False, repr(eval(last, namespace))
    except Exception as e:
        return True, f"{type(e).__name__}: {e}"


@lru_cache(maxsize=256)
def _repro(project_key: str, bug_index: int) -> tuple[tuple[bool, str], tuple[bool, str]]:
    project = next(p for p in PROJECTS if p.key == project_key)
    bug = project.bugs[bug_index]
    source = project.module(bug.module).source
    return _behaviour(source.replace(bug.old, bug.new, 1), bug.call), _behaviour(source, bug.call)


def _does(outcome: tuple[bool, str], *, past: bool) -> str:
    raised, text = outcome
    if raised:
        return f"raises `{text}`" if past else f"raise `{text}`"
    return f"returns `{text}`" if past else f"return `{text}`"


def _issue_part(project: Project, index: int, pkg: str, difficulty: int) -> tuple[str, str]:
    bug = project.bugs[index]
    actual, expected = _repro(project.key, index)
    name = bug.function.split(".")[0]
    code = f"from {pkg}.{bug.module} import {name}\n\n{bug.call.strip()}"
    if difficulty == 1:
        title = f"`{bug.function}` in `{pkg}/{bug.module}.py` is wrong"
    elif difficulty == 2:
        title = f"`{bug.function}` gives a wrong result"
    else:
        title = f"Wrong result when I {bug.summary}"
    if expected[0] and not actual[0]:
        tail = f"It {_does(actual, past=True)}, but it should {_does(expected, past=False)}."
    elif actual[0] and not expected[0]:
        tail = f"It {_does(actual, past=True)}; it should {_does(expected, past=False)}."
    else:
        tail = f"It {_does(actual, past=True)}, but it should {_does(expected, past=False)}."
    body = f"I use {pkg} to {bug.summary}. This code:\n\n```python\n{code}\n```\n\n{tail}"
    return title, body


def _pick_bugs(project: Project, rng: np.random.Generator, count: int) -> list[int]:
    chosen: list[int] = []
    for i in (int(j) for j in rng.permutation(len(project.bugs))):
        bug = project.bugs[i]
        if all(project.bugs[j].function != bug.function for j in chosen):
            chosen.append(i)
        if len(chosen) == count:
            break
    return sorted(chosen)


def generate(rng: np.random.Generator, *, difficulty: int = 1) -> dict[str, Any]:
    """One embedded SWE task (see the module docstring)."""
    project = PROJECTS[int(rng.integers(len(PROJECTS)))]
    pkg = project.names[int(rng.integers(len(project.names)))]
    count = 2 if difficulty >= 4 else 1
    extra = DISTRACTORS[: 0 if difficulty < 3 else 1 if difficulty < 5 else 2]
    bugs = _pick_bugs(project, rng, count)
    fixed = _project_files(project, pkg, extra)
    buggy = dict(fixed)
    f2p: list[str] = []
    for i in bugs:
        bug: Bug = project.bugs[i]
        path = f"{pkg}/{bug.module}.py"
        buggy[path] = buggy[path].replace(bug.old, bug.new, 1)
        f2p += [f"tests/test_{bug.module}.py::{t}" for t in bug.breaks if t not in f2p]
    f2p = list(dict.fromkeys(f2p))
    base = dict(buggy)
    p2p: list[str] = []
    for module in (*project.modules, *extra):
        path = f"tests/test_{module.name}.py"
        kept = [n for n in module.tests if f"{path}::{n}" not in f2p]
        base[path] = _test_file(module, pkg, kept)
        p2p += [f"{path}::{n}" for n in kept]
    parts = [_issue_part(project, i, pkg, difficulty) for i in bugs]
    if len(parts) == 1:
        statement = f"{parts[0][0]}\n\n{parts[0][1]}\n"
    else:
        statement = f"Two problems in {pkg}\n\n" + "\n\n".join(
            f"{n}. {title}\n\n{body}" for n, (title, body) in enumerate(parts, 1)
        )
        statement += "\n"
    sources = sorted({f"{pkg}/{project.bugs[i].module}.py" for i in bugs})
    tests = sorted({t.split("::")[0] for t in f2p})
    return {
        "repo": pkg,
        "project": project.key,
        "difficulty": difficulty,
        "bug_kinds": [project.bugs[i].kind for i in bugs],
        "bug_functions": [project.bugs[i].function for i in bugs],
        "files": base,
        "problem_statement": statement,
        "patch": make_diff(base, fixed, only=sources),
        "test_patch": make_diff(base, fixed, only=tests),
        "FAIL_TO_PASS": f2p,
        "PASS_TO_PASS": p2p,
    }


def check_task(task: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidDataset` unless ``task`` is a usable SWE task record."""
    missing = [f for f in REQUIRED if f not in task]
    if "files" not in task and not ("repo_path" in task and "base_commit" in task):
        missing.append("files (or repo_path and base_commit)")
    if missing:
        raise InvalidDataset(
            f"A SWE task record needs fields {missing}; see rllm_envs.swe.tasks for the schema."
        )
    for key in ("FAIL_TO_PASS", "PASS_TO_PASS"):
        value = task.get(key, [])
        if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
            raise InvalidDataset(f"Expects `{key}` to be a list of test ids, actual: {value!r}.")
    if not task["FAIL_TO_PASS"]:
        raise InvalidDataset("Expects at least one FAIL_TO_PASS test in a SWE task.")


def base_files(task: Mapping[str, Any]) -> Files:
    """The pristine base repository of a task (cached for tasks read from git)."""
    if "files" in task:
        files = task["files"]
        if not isinstance(files, Mapping):
            raise InvalidDataset("Expects a task's `files` to be a mapping of path to text.")
        return files
    from rllm_envs.swe.loader import checkout

    return checkout(str(task["repo_path"]), str(task["base_commit"]))


def fixed_files(task: Mapping[str, Any]) -> dict[str, str]:
    """The base with the reference ``patch`` applied (the oracle's repository)."""
    from rllm_envs.swe.repo import apply_diff

    files = dict(base_files(task))
    patch = str(task.get("patch") or "")
    if not patch.strip():
        return files
    for path, text in apply_diff(files, patch).items():
        if text is None:
            files.pop(path, None)
        else:
            files[path] = text
    return files
