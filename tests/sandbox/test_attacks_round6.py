"""Round 6 of the attacks on the code sandbox (issue #24, session 9), through the public API.

Each test replays one attack that got through, on both isolating backends:

* a pass/fail oracle on hidden tests (reward 1.0 without solving): the feedback's "X of N
  tests passed" with judging stopped at the first failure named the failing hidden test,
  whose index the program could read (executor frames, its pid). The feedback now has one
  line for the hidden tests as a whole and they run in a fresh random order;
* in ``rllm/CodeMultiTurn`` a program run on hidden inputs left them in the host's page
  cache for the next turn's public run to read and print: passing the public tests now ends
  the episode, and earlier turns never run hidden tests;
* the machine-wide pseudo-terminal count (``/proc/sys/kernel/pty/nr``, moved by opening
  ``/dev/ptmx``): neither is in the sandbox;
* the executor's spec told the program the size of the biggest (hidden) input;
* legacy async I/O contexts (one machine-wide pool) held by one sandbox refused them to
  every other: the io_* calls are refused;
* every bubblewrap sandbox ran as one host user, whose per-user pipe-buffer and in-flight
  descriptor accounts were a channel: each sandbox takes a user of the pool.
"""

from __future__ import annotations

import json
import threading
import warnings
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.code.judge import TestCase, judge, judge_task
from rllm_envs.error import VersionMovedWarning
from rllm_envs.sandbox import run
from rllm_envs.sandbox.backends import sandbox_identity
from rllm_envs.sandbox.uids import pool_users

HIDDEN = 8

# Reverse the input, except for one given input (a wrong answer there).
_ECHO_BUT = "s = input()\nprint('wrong' if s == {bad!r} else s[::-1])\n"

# The test's position in the run, read from the executor's frames.
_POSITION = """
import sys
f, position = sys._getframe(), None
while f is not None:
    if 'index' in f.f_locals and 'self' in f.f_locals:
        position = f.f_locals['index']
        break
    f = f.f_back
"""


def _echo_task(tmp_path: Path, hidden: list[str], public: str = "p0") -> Path:
    """A LiveCodeBench record: print the input reversed (an echo would pass a task of echoed
    answers, which is left out); one public test and the given hidden ones."""
    record = {
        "question_title": "Echo",
        "question_content": "Print the input line reversed.",
        "question_id": "echo",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps(
            [{"input": public + "\n", "output": public[::-1] + "\n", "testtype": "stdin"}]
        ),
        "private_test_cases": json.dumps(
            [{"input": h + "\n", "output": h[::-1] + "\n", "testtype": "stdin"} for h in hidden]
        ),
        "metadata": "{}",
    }
    path = tmp_path / "echo.jsonl"
    path.write_text(json.dumps(record) + "\n")
    return path


def _fenced(code: str) -> str:
    return f"```python\n{code}\n```"


# --------------------------------------------------------------- the hidden-test oracle


@pytest.mark.slow
def test_feedback_does_not_say_which_hidden_test_failed(backend, tmp_path):
    """Failing only the first hidden test or only the last one reads the same: the old
    feedback said "2 of 9" vs "8 of 9" (stop at the first failure), an oracle on each
    hidden answer."""
    hidden = [f"h{i}" for i in range(1, HIDDEN + 1)]
    env = gym.make(
        "rllm/Code-v0", dataset=str(_echo_task(tmp_path, hidden)), sandbox_backend=backend
    )
    seen = []
    for bad in (hidden[0], hidden[-1], hidden[3]):
        env.reset(seed=0)
        obs, reward, terminated, _, info = env.step(_fenced(_ECHO_BUT.format(bad=bad)))
        assert reward == 0.0 and terminated and info["public_verdicts"] == ["AC"]
        assert info["hidden_passed"] is False and "tests_passed" not in info
        seen.append(obs)
    assert seen[0] == seen[1] == seen[2], seen
    assert "Hidden tests: not all passed." in seen[0]
    assert not any(str(n) in seen[0] for n in range(2, HIDDEN + 2)), seen[0]
    env.close()


@pytest.mark.slow
def test_hidden_tests_run_in_a_fresh_random_order(backend):
    """A program that answers by its position in the run is right on every hidden test only
    if the order is the task's: it never is twice. Its position was readable from the
    executor's frames; since the tests are forked by the zygote it is not (session 17), so
    the order is read here from the pids the tests got (they grow with each test started)."""
    task = {
        "kind": "stdin",
        "public_tests": [{"input": "0\n", "output": "0\n"}],
        "hidden_tests": [{"input": f"{i}\n", "output": f"{i}\n"} for i in range(1, HIDDEN + 1)],
    }
    code = _POSITION + "import os\ns = input()\nprint(s, position, os.getpid())\n"
    orders = []
    for _ in range(2):
        result = judge_task(code, task, backend=backend, time_limit=5.0)
        assert result.sandbox_error is None and len(result.results) == HIDDEN + 1
        rows = [r.output.split() for r in result.results]
        assert all(row[1] == "None" for row in rows), rows  # no position to read
        started = sorted(range(HIDDEN + 1), key=lambda i: int(rows[i][2]))
        assert started[0] == 0  # the public test first
        orders.append(tuple(started[1:]))
    assert all(o != tuple(range(1, HIDDEN + 1)) for o in orders) or orders[0] != orders[1], orders


@pytest.mark.slow
def test_fraction_with_stop_on_failure_counts_hidden_all_or_nothing(backend, tmp_path):
    """How many hidden tests ran before the first failure is not in the reward components
    (info): the hidden tests count as a whole."""
    hidden = [f"h{i}" for i in range(1, HIDDEN + 1)]
    env = gym.make(
        "rllm/Code-v0",
        dataset=str(_echo_task(tmp_path, hidden)),
        sandbox_backend=backend,
        reward_mode="fraction",
        stop_on_failure=True,
    )
    env.reset(seed=0)
    _, reward, *_, info = env.step(_fenced(_ECHO_BUT.format(bad=hidden[-1])))
    # Hidden tests only, as a whole (the passed public test, shown in the prompt, is not
    # paid: before, 1 / (HIDDEN + 1)).
    assert reward == 0.0 and info["public_verdicts"] == ["AC"]
    env.reset(seed=0)
    assert env.step(_fenced("print(input()[::-1])"))[1] == 1.0
    env.close()


# ------------------------------------------------------- multi-turn: hidden runs end it


@pytest.mark.slow
def test_multi_turn_ends_once_a_program_ran_on_hidden_inputs(backend, tmp_path):
    """The page-cache attack needed a public turn after a hidden run: passing the public
    tests now ends the episode (the hidden tests decide the reward)."""
    hidden = [f"h{i}" for i in range(1, 4)]
    path = _echo_task(tmp_path, hidden)
    env = gym.make("rllm/CodeMultiTurn-v1", dataset=str(path), sandbox_backend=backend)
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(_fenced(_ECHO_BUT.format(bad="h2")))
    assert (reward, terminated, truncated) == (0.0, True, False), obs
    assert info["hidden_passed"] is False and "attempt(s) left" not in obs
    assert "h2" not in obs and "wrong" not in obs
    # Solved at once: reward 1, ended.
    env.reset(seed=0)
    _, reward, terminated, *_ = env.step(_fenced("print(input()[::-1])"))
    assert reward == 1.0 and terminated
    env.close()


@pytest.mark.slow
@pytest.mark.parametrize("reward_mode", ["all", "fraction"])
def test_multi_turn_runs_no_hidden_test_before_the_public_ones_pass(backend, tmp_path, reward_mode):
    """A turn that fails a public test continues with public feedback; its program never
    ran on a hidden input (in fraction mode the old env ran them all on every turn)."""
    hidden = [f"h{i}" for i in range(1, 4)]
    path = _echo_task(tmp_path, hidden)
    env = gym.make(
        "rllm/CodeMultiTurn-v1",
        dataset=str(path),
        sandbox_backend=backend,
        reward_mode=reward_mode,
        max_turns=2,
    )
    env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(_fenced(_ECHO_BUT.format(bad="p0")))
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["public_verdicts"] == ["WA"] and info["hidden_passed"] is None
    assert "Hidden tests: not run" in obs and "1 attempt(s) left" in obs
    # The last turn is scored whatever the public tests say (fraction: the hidden ones, all
    # three passed, are what it pays for); the feedback and info say nothing of them.
    obs, reward, terminated, truncated, info = env.step(_fenced(_ECHO_BUT.format(bad="p0")))
    assert truncated and not terminated
    assert info["hidden_passed"] is None and "passed." not in obs
    assert reward == (1.0 if reward_mode == "fraction" else 0.0)
    env.close()


def test_the_old_multi_turn_id_makes_the_new_env_with_a_warning():
    with pytest.warns(VersionMovedWarning, match="ends the episode"):
        env = gym.make("rllm/CodeMultiTurn-v0", sandbox_backend="bubblewrap")
    assert env.unwrapped.multi_turn and "rllm/CodeMultiTurn-v0" not in rllm_envs.list_envs()
    with pytest.warns(VersionMovedWarning):
        assert rllm_envs.env_entry("rllm/CodeMultiTurn-v0").id == "rllm/CodeMultiTurn-v1"
    env.close()


# --------------------------------------------------------------------- pseudo-terminals

_PTY_PROBE = r"""
import os
opened = []
for path in ("/dev/ptmx", "/dev/pts/ptmx"):
    try:
        os.close(os.open(path, os.O_RDWR | os.O_NOCTTY))
        opened.append(path)
    except OSError:
        pass
for path in ("/proc/sys/kernel/pty/nr", "/proc/sys/kernel/pty/max"):
    try:
        with open(path) as f:
            opened.append(path + "=" + f.read().strip())
    except OSError:
        pass
print(opened)
"""


@pytest.mark.parametrize("warm", [True, False])
def test_no_pseudo_terminal_and_no_pty_count(backend, warm):
    """Opening /dev/ptmx moved the machine-wide count in /proc/sys/kernel/pty/nr, which a
    concurrent sandbox read: a channel (4/4 runs exact)."""
    result = judge(_PTY_PROBE, [TestCase("", "[]\n")], backend=backend, warm=warm)
    assert result.verdicts == ["AC"], result.results[0]


# Legacy async I/O contexts come from one machine-wide pool (fs.aio-max-nr): a sandbox that
# held them all made io_setup fail everywhere else, a channel between concurrent sandboxes
# (and starved the host). Every call of that family is refused, like firejail's own list.
_AIO_PROBE = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ctx = ctypes.c_ulong(0)
refused = []
for nr, args in ((206, (65536, ctypes.byref(ctx))), (207, (0,)), (208, (0, 0, 0, 0, 0)),
                 (209, (0, 0, 0)), (210, (0, 0, 0)), (333, (0, 0, 0, 0, 0, 0))):
    refused.append(libc.syscall(nr, *args) == -1 and ctypes.get_errno() == 1)  # EPERM
print(all(refused), ctx.value)
"""


@pytest.mark.parametrize("warm", [True, False])
def test_no_legacy_async_io(backend, warm):
    result = judge(_AIO_PROBE, [TestCase("", "True 0\n")], backend=backend, warm=warm)
    assert result.verdicts == ["AC"], result.results[0]


# ------------------------------------------------------------------ the executor's spec

_SPEC_PROBE = r"""
import sys
f, spec = sys._getframe(), None
while f is not None:
    if isinstance(f.f_locals.get('spec'), dict):
        spec = f.f_locals['spec']
    if hasattr(f.f_locals.get('self'), 'spec'):
        spec = f.f_locals['self'].spec
    f = f.f_back
print(sorted(spec or {}), [v for v in (spec or {}).values() if isinstance(v, int)])
"""


@pytest.mark.slow
def test_the_spec_holds_no_hidden_input_size(backend, tmp_path):
    """The executor's spec (reachable through its frames) had ``biggest_input``, the size
    of the biggest input, a hidden one included; the public turn's feedback showed it."""
    hidden = ["x" * 4320 + "y"]
    env = gym.make(
        "rllm/CodeMultiTurn-v1", dataset=str(_echo_task(tmp_path, hidden)), sandbox_backend=backend
    )
    env.reset(seed=0)
    obs, reward, terminated, *_ = env.step(_fenced(_SPEC_PROBE))
    assert not terminated and "Your output" in obs and "time_limits" in obs, obs
    assert "4322" not in obs and "4321" not in obs and "biggest" not in obs, obs
    env.close()


# ------------------------------------------------------------------- per-user accounts


@pytest.mark.slow
@pytest.mark.parametrize("warm", [True, False])
def test_concurrent_sandboxes_run_as_distinct_host_users(backend, warm):
    """Pipe-buffer pages and in-flight SCM_RIGHTS descriptors are counted per host user:
    bubblewrap sandboxes all ran as one (a sender over the soft limit gave the receiver's
    new pipes 8 KiB instead of 64 KiB). Each sandbox now takes a user of the pool."""
    if sandbox_identity() is None:
        pytest.skip("not root: every sandbox runs as the caller")
    users = {uid for uid, _ in pool_users("rllm-sandbox")}
    if len(users) < 4:
        pytest.skip("no sandbox user pool (scripts/setup_sandbox_user.sh)")
    code = "import os, time\ntime.sleep(1.5)\nprint(os.getuid())\n"
    outputs: list[str] = []

    def one() -> None:
        result = judge(code, [TestCase("", "0\n")], backend=backend, warm=warm, time_limit=5)
        outputs.append(result.results[0].output.strip())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [threading.Thread(target=one) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    uids = {int(o) for o in outputs}
    assert len(uids) == 2 and uids <= users, outputs


_INFLIGHT_SENDER = r"""
import array, os, socket, time
a, b = socket.socketpair()
fds = [os.open("/dev/null", os.O_RDONLY) for _ in range(100)]
held = 0
for _ in range(3):  # past RLIMIT_NOFILE in flight, the user's next send fails
    try:
        a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
        held += len(fds)
    except OSError:
        break
time.sleep(8)
print(held)
"""

_INFLIGHT_RECEIVER = r"""
import array, os, socket, time
time.sleep(2.5)
a, b = socket.socketpair()
fd = os.open("/dev/null", os.O_RDONLY)
try:
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    print("ok")
except OSError as e:
    print("refused", e.errno)
"""


@pytest.mark.slow
def test_descriptors_in_flight_in_one_sandbox_do_not_refuse_another_s(backend):
    """A sandbox holding 200 descriptors in flight over SCM_RIGHTS made every concurrent
    bubblewrap sandbox's send fail with ETOOMANYREFS (one host user): a 1-bit channel."""
    if sandbox_identity() is None:
        pytest.skip("not root: every sandbox runs as the caller")
    results: dict[str, str] = {}

    def one(name: str, code: str) -> None:
        results[name] = run(code, backend=backend, time_limit=20).stdout.strip()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        threads = [
            threading.Thread(target=one, args=("sender", _INFLIGHT_SENDER)),
            threading.Thread(target=one, args=("receiver", _INFLIGHT_RECEIVER)),
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert int(results["sender"]) >= 200, results
    assert results["receiver"] == "ok", results


def test_a_source_that_exhausts_the_compiler_is_a_compile_error(backend):
    """200,000 unary minus signs made ``compile()`` in the executor raise MemoryError, which
    crashed it (every test RE, and the feedback spoke of hidden tests that never ran)."""
    code = "x = " + "-" * 200_000 + "1\nprint(x)\n"
    result = judge(code, [TestCase("", "1\n"), TestCase("", "1\n")], backend=backend)
    assert result.verdicts == ["CE", "CE"], result.results[0]
