"""Where this package is installed: the sandbox hides it, since it holds hidden task data.

The bundled problems' hidden tests and solutions (``rllm_envs/code/data``), the SWE
projects' bug-free sources and full tests (``rllm_envs/swe``) and the rest of the package
are plain files wherever the package lies. From a checkout under a home or work directory
the sandbox hides them with every non-system directory, but a system-wide install (``pip
install .`` into ``/usr/local/lib/python3.X/site-packages``, as in a container image) puts
them under ``/usr``, which the sandbox shows read-only. So the backends hide, computed at run
time from where the package really is:

* the ``rllm_envs`` package directory (from ``rllm_envs.__file__``, symlinks resolved);
* every entry of the interpreter's ``sys.path`` and of the system interpreters' package
  directories named like one of this distribution's top-level packages or its metadata
  (``rllm_envs-*.dist-info``, ``__editable__.rllm_envs*``), so another copy is hidden too;
* the files the installed distribution lists at its top level (its packages and metadata).

Only paths inside the directories a sandbox shows (:func:`visible_in_sandbox`) matter: the
rest are hidden already.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "DISTRIBUTION",
    "TOP_LEVEL",
    "installed_paths",
    "package_paths",
    "visible_in_sandbox",
    "UNUSED_TREES",
    "unused_paths",
]

#: The distribution this package is installed as.
DISTRIBUTION = "rllm-envs"
#: The distribution's top-level packages (``pyproject.toml``'s ``packages.find``).
TOP_LEVEL = ("rllm_envs", "rllm_agents", "rllm_adapters", "rllm_envs_verifiers")
# Metadata entries of the distribution next to its packages on a path entry.
_METADATA_PREFIXES = ("rllm_envs-", "rllm_envs.", "__editable__.rllm_envs", "__editable___rllm")
# Where the system interpreters' package directories are (Debian's and a source build's).
_SYSTEM_LIBS = ("/usr/lib", "/usr/local/lib")
# Top-level directories a sandbox shows: the system (read-only) plus the kernel's own.
_SHOWN = frozenset({"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "run"})


def visible_in_sandbox(path: str) -> bool:
    """Whether ``path`` (absolute, resolved) lies in a directory a sandbox shows."""
    parts = Path(path).parts
    return len(parts) > 1 and parts[1] in _SHOWN


@functools.lru_cache(maxsize=1)
def _distribution_entries() -> frozenset[Path]:
    # Read once (the distribution's file list): another install is found by the path scan.
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return frozenset()
    found: set[Path] = set()
    for file in dist.files or []:
        top = file.parts[0] if file.parts else ""
        if top and top != "..":  # "../../bin/x": console scripts, which hold no data
            found.add(Path(str(dist.locate_file(top))))
    return frozenset(found)


def _ours(name: str) -> bool:
    return name in TOP_LEVEL or name.startswith(_METADATA_PREFIXES)


_FILTERS: dict[str, Callable[[str], bool]] = {
    "ours": _ours,
    "python": lambda name: name.startswith("python3"),
    "site": lambda name: name.endswith("-packages"),
}
# The filtered listings by directory and filter, with the directory's modification time:
# a launch re-lists only a directory that changed.
_listings: dict[tuple[str, str], tuple[int, tuple[str, ...]]] = {}


def _names(directory: str, kind: str) -> tuple[str, ...]:
    try:
        mtime = os.stat(directory).st_mtime_ns
        cached = _listings.get((directory, kind))
        if cached is not None and cached[0] == mtime:
            return cached[1]
        keep = _FILTERS[kind]
        names = tuple(name for name in os.listdir(directory) if keep(name))
    except OSError:
        return ()
    _listings[(directory, kind)] = (mtime, names)
    return names


def _path_entries(path: list[str]) -> set[Path]:
    return {
        Path(entry) / name
        for entry in path
        if entry and os.path.isabs(entry)
        for name in _names(entry, "ours")
    }


def _system_site_dirs() -> list[str]:
    # Another interpreter's copy (the sandbox's own /usr/bin/python3 included) is just as
    # readable as this one's: /usr/lib/python3*/*-packages, /usr/local/lib/python3*/...
    found: list[str] = []
    for base in _SYSTEM_LIBS:
        for name in _names(base, "python"):
            lib = os.path.join(base, name)
            found += [os.path.join(lib, site) for site in _names(lib, "site")]
    return found


def installed_paths() -> tuple[str, ...]:
    """The resolved paths of this package's installed files and data, wherever they lie.

    Computed on each call (a ``stat`` of each ``sys.path`` entry and system package
    directory, re-listed only when it changed): an install made while the process runs is
    hidden from then on.
    """
    import rllm_envs

    candidates = {Path(rllm_envs.__file__).parent}
    candidates |= _distribution_entries()
    candidates |= _path_entries([*sys.path, *_system_site_dirs()])
    return _resolved(frozenset(str(c) for c in candidates))


@functools.lru_cache(maxsize=16)
def _resolved(candidates: frozenset[str]) -> tuple[str, ...]:
    # Cached by the candidates: they change when an install appears or goes.
    resolved = set()
    for candidate in map(Path, candidates):
        try:
            resolved.add(str(candidate.resolve(strict=True)))
        except (OSError, RuntimeError):
            continue
    # A directory hides what it holds: drop entries inside another one.
    kept = [p for p in resolved if not any(p.startswith(q + os.sep) for q in resolved)]
    return tuple(sorted(kept))


def package_paths() -> tuple[str, ...]:
    """The :func:`installed_paths` a sandbox would show, so must hide."""
    return tuple(p for p in installed_paths() if visible_in_sandbox(p))


#: Large system trees no sandboxed program needs (Python's standard library, the Debian
#: Python packages and the C++ toolchain live elsewhere): hidden, so that their pages are
#: not there to mark in the host's page cache (a channel between concurrent sandboxes: a
#: page read by one is a minor fault for the next, a major one if nobody read it). Globs.
#: Since session 11 the sandbox shows only the minimal root of
#: :mod:`~rllm_envs.sandbox.resident` (these trees are outside it, and the backends no
#: longer name them); kept as the list the round-9 test checks against.
UNUSED_TREES = (
    # /usr/local/include is on g++'s search path, /usr/local/lib holds the precompiled header.
    "/usr/local/bin",
    "/usr/local/sbin",
    "/usr/local/cuda*",
    "/usr/local/share",
    "/usr/local/src",
    "/usr/local/games",
    "/usr/local/man",
    "/usr/share",
    "/usr/src",
    "/usr/games",
    "/usr/lib/jvm",
    "/usr/lib/chromium",
    "/usr/lib/chromium-browser",
    "/usr/lib/firefox*",
    "/usr/lib/google-cloud-sdk",
    "/usr/lib/llvm-*",
    "/usr/lib/node_modules",
    "/usr/lib/postgresql",
    "/usr/lib/debug",
    "/usr/lib/libreoffice",
    "/usr/lib/*-linux-gnu/libLLVM*",
    "/usr/lib/*-linux-gnu/libclang*",
    "/usr/lib/*-linux-gnu/libz3.*",
    "/usr/lib/*-linux-gnu/dri",
    "/opt",
)


@functools.lru_cache(maxsize=1)
def unused_paths() -> tuple[str, ...]:
    """The existing paths of :data:`UNUSED_TREES` (symlinks resolved, inside ``/usr``)."""
    import glob

    found: list[str] = []
    for pattern in UNUSED_TREES:
        for path in sorted(glob.glob(pattern)):
            real = os.path.realpath(path)
            if real == path and visible_in_sandbox(real) and "\n" not in real:
                found.append(real)
    return tuple(found)
