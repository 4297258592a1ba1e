r"""Sandboxed execution of model-written code.

One entry point, :func:`run`::

    from rllm_envs.sandbox import run

    result = run("print(input()[::-1])", stdin="abc\n", time_limit=2)
    result.status      # Status.OK / RUNTIME_ERROR / TIMEOUT / MEMORY / OUTPUT_LIMIT / SANDBOX_ERROR
    result.stdout      # "cba\n"

Every run starts a fresh sandbox (firejail by default, bubblewrap otherwise; the plain
backend only when asked for by name) with no network, a read-only view of the system, no
project or home directories, a clean environment, and limits on wall clock, CPU time,
address space, processes, open files, file size and captured output. The run never hangs
the caller, leaves no process, descriptor or file behind and is safe to call from many
threads at once. :class:`SandboxPool` keeps sandboxes started ahead of time (one program
each), and :func:`rllm_envs.code.judge.judge` runs a whole test suite in one sandbox (see
:mod:`rllm_envs.sandbox.harness`).

Security model, in short: the program runs as an unprivileged user (the dedicated
``rllm-sandbox`` user when the caller is root), in new network/PID/IPC (and, with
bubblewrap, user) namespaces, with no capabilities, ``no_new_privs``, the same seccomp
filter on both backends (installed by the bootstrap: :mod:`rllm_envs.sandbox.seccomp`), no
writable path at all, only the system directories visible read-only (``/usr``, ``/etc``,
...; no project, home, ``/tmp`` or ``/run``), an empty environment, and a control group of
its own for memory, processes and a CPU share where the machine offers one
(:mod:`rllm_envs.sandbox.cgroup`). The judge decides verdicts on the host
(:mod:`rllm_envs.code.judge`). See :mod:`rllm_envs.sandbox.backends` for each backend and
the README's "Security model" for what is and is not guaranteed.
"""

from __future__ import annotations

from rllm_envs.sandbox.backends import (
    BACKENDS,
    Backend,
    Bubblewrap,
    Firejail,
    Plain,
    PlainBackendWarning,
    SandboxUnavailable,
    available_backends,
    sandbox_identity,
    select_backend,
)
from rllm_envs.sandbox.pool import SandboxPool
from rllm_envs.sandbox.result import Limits, RunResult, Status
from rllm_envs.sandbox.runner import LANGUAGES, run

__all__ = [
    "run",
    "SandboxPool",
    "RunResult",
    "Status",
    "Limits",
    "LANGUAGES",
    "Backend",
    "Firejail",
    "Bubblewrap",
    "Plain",
    "BACKENDS",
    "PlainBackendWarning",
    "SandboxUnavailable",
    "available_backends",
    "select_backend",
    "sandbox_identity",
]
