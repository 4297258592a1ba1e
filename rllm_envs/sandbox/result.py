"""Result and limit types of a sandboxed run (no dependencies beyond the standard library)."""

from __future__ import annotations

import math
import signal as _signal
from dataclasses import dataclass
from enum import Enum

from rllm_envs.error import InvalidEnvConfig

__all__ = ["Status", "Limits", "RunResult"]


class Status(str, Enum):
    """Why a sandboxed run ended."""

    #: The program exited with status 0.
    OK = "ok"
    #: Non-zero exit status, an uncaught exception, or a crash by a signal.
    RUNTIME_ERROR = "runtime_error"
    #: The wall-clock or CPU-time limit was reached; the process group was killed.
    TIMEOUT = "timeout"
    #: The program ran out of its address-space limit (``MemoryError``, ``std::bad_alloc``).
    MEMORY = "memory"
    #: Standard output went past ``Limits.max_output_bytes`` (the run was killed), or a
    #: file went past ``Limits.max_file_size_mb``.
    OUTPUT_LIMIT = "output_limit"
    #: The sandbox itself could not start the program (the message is in ``stderr``).
    SANDBOX_ERROR = "sandbox_error"


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed run.

    Attributes:
        time_limit: Wall-clock seconds, enforced from the parent by killing the whole
            process group (sandbox start-up included).
        cpu_time: CPU seconds (``RLIMIT_CPU``); default ``ceil(time_limit) + 1``.
        memory_mb: Address-space limit in MiB (``RLIMIT_AS``).
        max_processes: Processes and threads of the sandboxed program (``RLIMIT_NPROC``,
            counted inside the sandbox's own user namespace).
        max_open_files: Open file descriptors (``RLIMIT_NOFILE``).
        max_file_size_mb: Largest file the program may write (``RLIMIT_FSIZE``); nothing
            on the host is writable, this bounds in-memory files (``memfd``).
        max_output_bytes: Captured standard output; more kills the run
            (:attr:`Status.OUTPUT_LIMIT`).
        max_stderr_bytes: Captured standard error; the rest is dropped and
            ``RunResult.stderr_truncated`` is set (the run goes on).
    """

    time_limit: float = 10.0
    cpu_time: int | None = None
    memory_mb: int = 1024
    max_processes: int = 64
    max_open_files: int = 128
    max_file_size_mb: int = 16
    max_output_bytes: int = 1 << 20
    max_stderr_bytes: int = 64 << 10

    def __post_init__(self) -> None:
        if not (isinstance(self.time_limit, (int, float)) and 0 < self.time_limit < 86_400):
            raise InvalidEnvConfig(
                f"Expects `time_limit` to be seconds in (0, 86400), actual: {self.time_limit!r}."
            )
        for name in (
            "memory_mb",
            "max_processes",
            "max_open_files",
            "max_file_size_mb",
            "max_output_bytes",
            "max_stderr_bytes",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidEnvConfig(f"Expects `{name}` to be an int >= 1, actual: {value!r}.")
        if self.memory_mb < 64:
            raise InvalidEnvConfig(
                f"Expects `memory_mb` >= 64 (an interpreter needs ~30 MiB of address space), "
                f"actual: {self.memory_mb}."
            )
        if self.max_open_files < 16:
            raise InvalidEnvConfig(
                f"Expects `max_open_files` >= 16, actual: {self.max_open_files}."
            )
        if self.cpu_time is not None and (not isinstance(self.cpu_time, int) or self.cpu_time < 1):
            raise InvalidEnvConfig(
                f"Expects `cpu_time` to be an int >= 1 or None, actual: {self.cpu_time!r}."
            )

    @property
    def cpu_seconds(self) -> int:
        """The CPU-time limit in whole seconds."""
        return self.cpu_time if self.cpu_time is not None else math.ceil(self.time_limit) + 1


@dataclass(frozen=True)
class RunResult:
    """What happened to one sandboxed program.

    Attributes:
        status: Why the run ended (:class:`Status`).
        stdout: Captured standard output (UTF-8, undecodable bytes replaced), at most
            ``Limits.max_output_bytes`` bytes of it.
        stderr: Captured standard error, at most ``Limits.max_stderr_bytes`` bytes.
        exit_code: The program's exit status, or ``None`` if it was killed by a signal.
        signal: The number of the signal that ended the program, or ``None``.
        wall_time: Seconds from start to end, sandbox start-up included.
        stdout_truncated: Standard output was cut at the limit.
        stderr_truncated: Standard error was cut at the limit.
        backend: Name of the backend that ran it (``"firejail"``, ``"bubblewrap"``,
            ``"plain"``).
        killed_from_outside: The kernel's OOM killer killed a process of the sandbox while
            its group was under its own memory limit (memory was short elsewhere): what
            happened is not the program's doing (a plain run is then
            :attr:`Status.SANDBOX_ERROR`; a judge runs it again).
    """

    status: Status
    stdout: str
    stderr: str
    exit_code: int | None
    signal: int | None
    wall_time: float
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    backend: str = ""
    killed_from_outside: bool = False

    @property
    def ok(self) -> bool:
        """The program exited normally with status 0."""
        return self.status is Status.OK

    @property
    def signal_name(self) -> str | None:
        """The name of :attr:`signal` (e.g. ``"SIGKILL"``), or ``None``."""
        if self.signal is None:
            return None
        try:
            return _signal.Signals(self.signal).name
        except ValueError:
            return f"signal {self.signal}"

    def describe(self, max_chars: int = 4000) -> str:
        """A short human/model-readable report: status, then stdout and stderr (cut).

        Used as tool feedback; each stream keeps at most ``max_chars // 2`` characters
        (the end of stderr, where a traceback's message is).
        """
        half = max(max_chars // 2, 1)
        head = {
            Status.OK: "Exit code 0.",
            Status.RUNTIME_ERROR: (
                f"Runtime error (killed by {self.signal_name})."
                if self.signal is not None
                else f"Runtime error (exit code {self.exit_code})."
            ),
            Status.TIMEOUT: "Time limit exceeded; the program was killed.",
            Status.MEMORY: "Memory limit exceeded.",
            Status.OUTPUT_LIMIT: "Output limit exceeded; the program was killed.",
            Status.SANDBOX_ERROR: "The sandbox could not run the program.",
        }[self.status]
        parts = [head]
        if self.stdout:
            out = self.stdout if len(self.stdout) <= half else self.stdout[:half] + "\n[...]"
            parts.append("stdout:\n" + out)
        if self.stderr:
            err = self.stderr if len(self.stderr) <= half else "[...]\n" + self.stderr[-half:]
            parts.append("stderr:\n" + err)
        return "\n".join(parts)
