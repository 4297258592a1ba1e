"""Landlock on this machine: whether sandboxed programs are kept out of ``/proc``.

The judge's executor (:mod:`rllm_envs.sandbox.harness`) restricts each test process with
Landlock before the submission runs (:func:`~rllm_envs.sandbox.harness.landlock_ruleset`):
it may read and execute what the sandbox shows but opens nothing of ``/proc`` (a
process's memory reports tell how many processes map a page of a shared file, a count a
concurrent sandbox sets: session 11 attack F1). The program of a plain ``run()`` or pool
and each test process of the SWE executor apply the same rules, built once per sandbox by
the bootstrap (``rllm_envs.sandbox.runner._LANDLOCK_SOURCE``). Where the kernel offers no
Landlock (before Linux 5.13, or disabled at boot), programs and tests run as before and
:func:`warn_unavailable` says so, once per process.
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
    """Warn once where the kernel offers no Landlock (programs can then read ``/proc``)."""
    global _warned
    if _warned or abi() >= 1:
        return
    _warned = True
    warnings.warn(
        "rllm_envs.sandbox: this kernel offers no Landlock (Linux 5.13+, `lsm=...,landlock` "
        "at boot); sandboxed programs can open /proc, whose memory reports (/proc/self/smaps) "
        "carry bits between concurrent sandboxes (see docs/sandbox.md, residual channels).",
        RuntimeWarning,
        stacklevel=3,
    )
