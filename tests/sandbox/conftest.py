"""Backend fixtures: every test that takes ``backend`` runs once per backend, skipped with the
reason when that backend cannot run here."""

from __future__ import annotations

import os
import socket
import threading
import warnings
from dataclasses import dataclass

import pytest

from rllm_envs.code.judge import close_pools
from rllm_envs.sandbox import (
    RunResult,
    SandboxUnavailable,
    Status,
    cgroup,
    run,
    runner,
    select_backend,
)
from rllm_envs.sandbox.backends import _probe, sandbox_identity
from rllm_envs.sandbox.runner import SHARED_PROCESS_FACTOR

ISOLATING = ["firejail", "bubblewrap"]
ALL = [*ISOLATING, "plain"]


def _usable(name: str) -> str:
    try:
        sandbox_identity()
    except SandboxUnavailable as e:
        pytest.skip(str(e))
    if name != "plain":
        reason = _probe(select_backend.__globals__["BACKENDS"][name]())
        if reason is not None:
            pytest.skip(f"backend {name} unusable here: {reason}")
    return name


@pytest.fixture(params=ISOLATING)
def backend(request) -> str:
    """An isolating backend (firejail, bubblewrap)."""
    return _usable(request.param)


@pytest.fixture(params=ALL)
def any_backend(request) -> str:
    """Every backend, the plain one included (its warning silenced)."""
    name = _usable(request.param)
    if name == "plain":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield name
    else:
        yield name


# The control groups of the sandboxes this test started (see ``own_sandboxes``): with them,
# leak checks look only at this test's processes, not at whatever else judges code here.
_OWN_GROUPS: list[cgroup.SandboxCgroup] = []
# The wrapper (firejail, bwrap) process ids of the sandboxes this test started.
_OWN_WRAPPERS: set[int] = set()


class _RecordingSandbox(runner.Sandbox):
    def __post_init__(self) -> None:
        _OWN_WRAPPERS.add(self.proc.pid)


@pytest.fixture(autouse=True)
def own_sandboxes(monkeypatch):
    """Record the control group and wrapper pid of every sandbox the test starts."""
    _OWN_GROUPS.clear()
    _OWN_WRAPPERS.clear()
    create = cgroup.create

    def recording(*args, **kwargs):
        group = create(*args, **kwargs)
        if group is not None:
            _OWN_GROUPS.append(group)
        return group

    monkeypatch.setattr(cgroup, "create", recording)
    monkeypatch.setattr(runner, "Sandbox", _RecordingSandbox)
    yield
    _OWN_GROUPS.clear()
    _OWN_WRAPPERS.clear()


def own_wrapper_pids() -> set[int]:
    """Process ids of the wrappers of the sandboxes this test started (alive or not)."""
    return set(_OWN_WRAPPERS)


def _describe(pid: int, zombies: bool) -> str | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        if not zombies and fields.get("State", "").strip().startswith("Z"):
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"{pid}: {f.read()[:80]!r}"
    except OSError:
        return None


def sandbox_processes(*, zombies: bool = False) -> list[str]:
    """Processes of the sandboxes this test started that are still there.

    With control groups: the processes in the groups of this test's sandboxes (a leaked
    process keeps its group). Without them: every host process of the sandbox user (when
    running as root), which counts other work on the machine too. Zombies (dead, waiting to
    be reaped) are left out unless ``zombies``: when a killed sandbox's init dies, its dead
    children are reparented to the machine's init, which in some containers reaps them only
    every second or so.
    """
    if cgroup.available():
        pids = sorted({pid for group in _OWN_GROUPS for pid in group.pids()})
        return [d for d in (_describe(pid, zombies) for pid in pids) if d is not None]
    identity = sandbox_identity()
    if identity is None:
        return []
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/status") as f:
                status = f.read()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if fields.get("Uid", "").split()[:1] == [str(identity[0])]:
            described = _describe(int(pid), zombies)
            if described is not None:
                found.append(described)
    return found


@pytest.fixture(autouse=True)
def no_judging_pool():
    """Sandboxes kept started by earlier judge calls would count as left behind here."""
    close_pools()


@dataclass
class HostListener:
    """A TCP listener on the host's 127.0.0.1; ``accepted`` lists the connections it got."""

    port: int
    accepted: list[object]


@pytest.fixture
def host_listener():
    """A host TCP listener accepting in a thread while the test runs (the network escapes)."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    server.settimeout(0.5)
    listener = HostListener(port=server.getsockname()[1], accepted=[])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                listener.accepted.append(server.accept())
            except OSError:
                pass

    thread = threading.Thread(target=accept)
    thread.start()
    yield listener
    stop.set()
    thread.join()
    server.close()


def assert_fork_bomb_contained(result: RunResult, elapsed: float, max_processes: int) -> None:
    """A fork bomb's run: stopped by the process limit, then by the clock; the host still forks.

    The program prints ``stopped after N`` when fork fails. (The plain backend multiplies the
    limit: its process count is per user, see the runner.)
    """
    assert elapsed < 20
    assert result.status is Status.TIMEOUT
    assert "stopped after" in result.stdout
    assert int(result.stdout.split()[2]) < max_processes * SHARED_PROCESS_FACTOR
    assert run("print('alive')", backend=result.backend).stdout == "alive\n"
