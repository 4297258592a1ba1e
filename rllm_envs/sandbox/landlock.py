"""Landlock on this machine: whether judged tests are kept out of ``/proc``.

The judge's executor (:mod:`rllm_envs.sandbox.harness`) restricts each test process with
Landlock before the submission runs (:func:`~rllm_envs.sandbox.harness.landlock_ruleset`):
it may read and execute what the sandbox shows but opens nothing of ``/proc`` (a
process's memory reports tell how many processes map a page of a shared file, a count a
concurrent sandbox sets: session 11 attack F1). Where the kernel offers no Landlock
(before Linux 5.13, or disabled at boot), tests run as before and :func:`warn_unavailable`
says so, once per process.
"""

from __future__ import annotations

import warnings
from functools import lru_cache

__all__ = ["abi", "warn_unavailable"]


@lru_cache(maxsize=1)
def abi() -> int:
    """The Landlock ABI version this kernel offers (0: none)."""
    from rllm_envs.sandbox.harness import landlock_abi

    return landlock_abi()


_warned = False


def warn_unavailable() -> None:
    """Warn once where the kernel offers no Landlock (judged tests can then read ``/proc``)."""
    global _warned
    if _warned or abi() >= 1:
        return
    _warned = True
    warnings.warn(
        "rllm_envs.sandbox: this kernel offers no Landlock (Linux 5.13+, `lsm=...,landlock` "
        "at boot); judged tests can open /proc, whose memory reports (/proc/self/smaps) "
        "carry bits between concurrent sandboxes (see docs/sandbox.md, residual channels).",
        RuntimeWarning,
        stacklevel=3,
    )
