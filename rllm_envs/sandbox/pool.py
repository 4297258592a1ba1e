"""Sandboxes started ahead of time, so that a run does not wait for the sandbox to start.

Starting firejail costs about four bare interpreter starts, bubblewrap about two (see
``benchmarks/perf/bench_sandbox.py``). A :class:`SandboxPool` keeps a few sandboxes started
and waiting -- limits set, interpreter up and, with ``program``, that program already
loaded -- and starts a replacement in the background each time one is used: once that run
ends, or at once when no started sandbox is left (a start costs a few interpreter starts of
CPU, which on a small machine would slow the run down). Each sandbox still runs exactly
**one** program and is then killed, so runs are exactly as isolated from each other as with
:func:`rllm_envs.sandbox.run`; only the start-up moves off the critical path (it still costs
the same CPU).

Idle sandboxes are killed by :meth:`SandboxPool.close`, at interpreter exit, and exit by
themselves when this process dies (their standard input closes). A process forked from
this one does not inherit them.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import replace

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.sandbox import cgroup
from rllm_envs.sandbox.backends import Backend, select_backend
from rllm_envs.sandbox.result import Limits, RunResult
from rllm_envs.sandbox.runner import (
    Sandbox,
    attach_group,
    communicate,
    program_header,
    spawn,
    spawn_failure,
    wait_readable,
)

__all__ = ["SandboxPool"]

_LIVE: weakref.WeakSet[SandboxPool] = weakref.WeakSet()


class SandboxPool:
    r"""A few sandboxes started ahead of time; :meth:`run` uses one and starts a replacement.

    Example:
        >>> from rllm_envs.sandbox import SandboxPool
        >>> with SandboxPool(size=2) as pool:
        ...     pool.run("print(input()[::-1])", stdin="abc").stdout
        'cba\n'

    Args:
        size: How many sandboxes to keep started (at least 1).
        backend: As for :func:`rllm_envs.sandbox.run`.
        limits: Limits of every run. The wall clock and output caps may be changed per run;
            the CPU limit may be lowered per run; the rest is set when a sandbox starts.
        program: Trusted code every sandbox loads at start and runs in its bootstrap, with
            the report channel (then each run only sends its input; see
            :func:`~rllm_envs.sandbox.runner.program_header`); ``None`` to send untrusted
            code with each run.

    Raises:
        SandboxUnavailable: If no sandbox can run here.
        InvalidEnvConfig: For an invalid size, backend or limits.
    """

    def __init__(
        self,
        size: int = 2,
        *,
        backend: str | Backend | None = None,
        limits: Limits | None = None,
        program: str | None = None,
    ) -> None:
        if not isinstance(size, int) or isinstance(size, bool) or size < 1:
            raise InvalidEnvConfig(f"Expects `size` to be an int >= 1, actual: {size!r}.")
        self.size = size
        self.backend = select_backend(backend)
        self.limits = limits if limits is not None else Limits()
        self.program = program
        self._preload = program_header(program, trusted=True) if program is not None else b""
        self._idle: deque[Sandbox] = deque()
        self._running = 0  # runs in progress (see _fill)
        self._closed = False
        self._pid = os.getpid()
        self._cond = threading.Condition()
        self._filler = threading.Thread(target=self._fill, name="sandbox-pool", daemon=True)
        self._filler.start()
        _LIVE.add(self)
        ref = weakref.ref(self)
        cgroup.add_reclaimer(lambda: bool((pool := ref()) is not None and pool._drop_idle()))

    # ------------------------------------------------------------------ public API

    def run(
        self,
        code: str | None = None,
        *,
        stdin: str | bytes = "",
        time_limit: float | None = None,
        max_output_bytes: int | None = None,
    ) -> RunResult:
        """Run one program in a started sandbox (or a new one if none is ready).

        Args:
            code: The program; must be ``None`` when the pool was made with ``program``.
            stdin: The program's standard input.
            time_limit: Wall-clock seconds, from this call (default ``limits.time_limit``).
            max_output_bytes: Captured standard output (default ``limits.max_output_bytes``).

        Returns:
            A :class:`RunResult`, as :func:`rllm_envs.sandbox.run` returns (see
            :meth:`run_with_channel` for what the report channel carried).
        """
        return self.run_with_channel(
            code, stdin=stdin, time_limit=time_limit, max_output_bytes=max_output_bytes
        )[0]

    def run_with_channel(
        self,
        code: str | None = None,
        *,
        stdin: str | bytes = "",
        time_limit: float | None = None,
        max_output_bytes: int | None = None,
        channel_bytes: int = 1 << 12,
        on_channel: Callable[[bytes], bool] | None = None,
        more_input: Callable[[], bytes | None] | None = None,
        stall_limit: Callable[[], float | None] | None = None,
    ) -> tuple[RunResult, bytes]:
        """:meth:`run`, also returning what the report channel carried.

        ``channel_bytes``, ``on_channel``, ``more_input`` and ``stall_limit`` are as for
        :func:`~rllm_envs.sandbox.runner.communicate`.
        """
        if (code is None) != (self.program is not None):
            raise InvalidEnvConfig(
                "Pass `code` to SandboxPool.run unless the pool was made with `program` "
                "(then pass only `stdin`)."
            )
        limits = self.limits
        if time_limit is not None:
            limits = replace(limits, time_limit=time_limit)
        if max_output_bytes is not None:
            limits = replace(limits, max_output_bytes=max_output_bytes)
        data = stdin.encode("utf-8", "surrogatepass") if isinstance(stdin, str) else bytes(stdin)
        if code is not None:
            data = program_header(code, limits.cpu_seconds) + data
        start = time.monotonic()
        sandbox = self._take()
        try:
            if sandbox is None:
                try:
                    sandbox = self._start()
                except OSError as e:
                    return spawn_failure(self.backend, e, start), b""
            return communicate(
                sandbox,
                data,
                limits,
                start,
                forked=self.program is None,
                channel_bytes=channel_bytes,
                on_channel=on_channel,
                more_input=more_input,
                stall_limit=stall_limit,
            )
        finally:
            with self._cond:
                self._running -= 1
                self._cond.notify_all()  # the filler may start the replacement now

    @property
    def closed(self) -> bool:
        """Closed (by :meth:`close`, or because this process was forked from its owner)."""
        return self._closed

    @property
    def ready(self) -> int:
        """How many started sandboxes are waiting."""
        with self._cond:
            return len(self._idle)

    def wait_ready(self, timeout: float = 30.0) -> bool:
        """Wait until ``size`` sandboxes are started (or ``timeout``); whether they are."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._idle) < self.size and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            idle = list(self._idle)
        for sandbox in idle:
            if not _started(sandbox, max(deadline - time.monotonic(), 0.0)):
                return False
        return len(idle) >= self.size

    def close(self) -> None:
        """Kill the waiting sandboxes and stop starting new ones (idempotent)."""
        with self._cond:
            self._closed = True
            idle, self._idle = list(self._idle), deque()
            self._cond.notify_all()
        if os.getpid() == self._pid:
            _stop(idle)
        self._filler.join(timeout=10)
        _LIVE.discard(self)

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SandboxPool(size={self.size}, backend={self.backend.name!r}, ready={self.ready})"

    # ------------------------------------------------------------------ internals

    def _start(self) -> Sandbox:
        sandbox = spawn(self.backend, self.limits)
        if self._preload:
            proc = sandbox.proc
            assert proc.stdin is not None
            if sandbox.group is not None:  # into its group before the program arrives
                attach_group(sandbox, time.monotonic() + 30.0)
            try:
                proc.stdin.write(self._preload)  # the bootstrap reads it at once
                proc.stdin.flush()
            except OSError:
                pass  # it died: communicate() reports SANDBOX_ERROR
        return sandbox

    def _take(self) -> Sandbox | None:
        with self._cond:
            if self._closed:
                raise InvalidEnvConfig("This SandboxPool is closed.")
            for candidate in list(self._idle):
                if candidate.proc.poll() is not None:  # died while waiting (killed outside)
                    self._idle.remove(candidate)
                    _stop([candidate])
            # A started one if there is one, else the oldest (the closest to started).
            sandbox = next((p for p in self._idle if _started(p, 0.0)), None)
            if sandbox is None and self._idle:
                sandbox = self._idle[0]
            if sandbox is not None:
                self._idle.remove(sandbox)
            self._running += 1
            self._cond.notify_all()  # the filler starts a replacement (see _fill)
            return sandbox

    def _needs_start(self) -> bool:
        """Whether to start a sandbox now (called with the lock held).

        Up to ``size``; while a run is in progress only if none is left started, since a
        start (several interpreter starts' CPU) would slow the run down on a small
        machine; else once the run ends.
        """
        idle = len(self._idle)
        return idle < self.size and (idle == 0 or self._running == 0)

    def _fill(self) -> None:
        cgroup.ahead.active = True  # a sandbox started ahead ends no idle one for its room
        while True:
            with self._cond:
                while not self._closed and not self._needs_start():
                    self._cond.wait()
                if self._closed:
                    return
            try:
                sandbox = self._start()
            except OSError:
                time.sleep(1.0)  # cannot start one now; runs start their own meanwhile
                continue
            with self._cond:
                if self._closed:
                    _stop([sandbox])
                    return
                self._idle.append(sandbox)
                self._cond.notify_all()

    def _drop_idle(self) -> bool:
        """End the idle sandboxes; whether there were any.

        Called when a sandbox waits for room under the common memory limit, which they hold.
        """
        if os.getpid() != self._pid:
            return False
        with self._cond:
            idle, self._idle = list(self._idle), deque()
        _stop(idle)
        return bool(idle)

    def _forget(self) -> None:
        """In a forked child: drop the parent's sandboxes (close only this copy of the pipes)."""
        for sandbox in self._idle:
            proc = sandbox.proc
            for stream in (proc.stdin, proc.stdout, proc.stderr):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            os.close(sandbox.channel)
        self._idle = deque()
        self._closed = True
        self._cond = threading.Condition()  # its lock may have been held at the fork


def _started(sandbox: Sandbox, timeout: float) -> bool:
    """Whether the bootstrap has set its limits and said so on stderr (within ``timeout``).

    The marker is left in the pipe, for :func:`~rllm_envs.sandbox.runner.communicate` (or
    was read when the sandbox was moved into its control group).
    """
    if sandbox.attached:
        return True
    assert sandbox.proc.stderr is not None
    return wait_readable(sandbox.proc.stderr.fileno(), timeout)


#: How long an idle sandbox may take to exit by itself once its input is closed.
_EXIT_GRACE = 2.0


def _stop(sandboxes: list[Sandbox]) -> None:
    """End idle sandboxes; kill the process group of any that does not exit by itself.

    Closing its input lets the program exit (and firejail clean up after itself).
    """
    for sandbox in sandboxes:
        try:
            if sandbox.proc.stdin is not None:
                sandbox.proc.stdin.close()
        except OSError:
            pass
    deadline = time.monotonic() + _EXIT_GRACE
    for sandbox in sandboxes:
        proc = sandbox.proc
        try:
            proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        sandbox.close()


def _close_all() -> None:
    for pool in list(_LIVE):
        pool.close()


def _after_fork_in_child() -> None:
    for pool in list(_LIVE):
        pool._forget()
    _LIVE.clear()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_after_fork_in_child)
