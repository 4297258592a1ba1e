"""Round 31 of the attacks on the code sandbox (att31a), through the public API.

F2: a program that filled in-memory files (``memfd``, outside ``RLIMIT_AS``) to its group's
limit was OOM-killed at the limit, but cgroup v1 counted no refused charge (``failcnt`` 0),
so the kill read as an OOM from outside the sandbox: "not the program's fault; run it
again". The judge ran it twice, and in ``CodeMultiTurn`` the episode went on: a program
that filled memory only when a hidden input matched a guess learnt one bit per turn. A
group whose peak usage reached its limit now counts as having reached it.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the ids)
from rllm_envs.sandbox import Limits, Status, cgroup, run

needs_cgroups = pytest.mark.skipif(not cgroup.available(), reason="no control groups here")


def _fill(condition: str) -> str:
    """A program that doubles its input, after filling 450 MiB of memfds if ``condition``."""
    return (
        "import os, sys\n"
        "n = int(sys.stdin.readline())\n"
        f"if {condition}:\n"
        "    fds = []\n"
        "    for _ in range(30):\n"
        "        fd = os.memfd_create('m')\n"
        "        for _ in range(15):\n"
        "            os.write(fd, b'x' * (1 << 20))\n"
        "        fds.append(fd)\n"
        "print(n * 2)\n"
    )


class _Fake(cgroup._V1):
    """A v1 group's files in a folder (a fake of the kernel's, for the rule alone)."""

    def __init__(self, folder, **files: int) -> None:  # noqa: D107
        self.memory = str(folder)
        for name, value in files.items():
            (folder / f"memory.{name}").write_text(f"{value}\n")


@pytest.mark.parametrize(
    "files, reached",
    [
        ({"failcnt": 3, "max_usage_in_bytes": 10 << 20, "limit_in_bytes": 64 << 20}, True),
        ({"failcnt": 0, "max_usage_in_bytes": 64 << 20, "limit_in_bytes": 64 << 20}, True),
        ({"failcnt": 0, "max_usage_in_bytes": 10 << 20, "limit_in_bytes": 64 << 20}, False),
    ],
)
def test_a_peak_at_the_limit_counts_as_reaching_it(tmp_path, files, reached):
    assert _Fake(tmp_path, **files).limit_reached() is reached


@needs_cgroups
def test_filling_memfds_to_the_limit_is_the_programs_own_memory(backend):
    code = _fill("True")  # 450 MiB against 256
    result = run(code, stdin="2\n", backend=backend, limits=Limits(memory_mb=256, time_limit=10))
    # Killed at its own limit: a failure of the program (it was "from outside" before).
    assert result.status is not Status.OK and result.stdout == "", result
    assert not result.killed_from_outside, result


@needs_cgroups
def test_a_memory_fill_on_a_hidden_input_ends_the_multi_turn_episode(backend, tmp_path):
    """The program passes the shown test and fills memory only on hidden inputs: the run is
    its own failure (reward 0), and the episode ends as after any run on hidden tests."""
    record = {
        "question_title": "Double",
        "question_content": "Print twice the number.",
        "question_id": "double",
        "starter_code": "",
        "difficulty": "easy",
        "public_test_cases": json.dumps([{"input": "1\n", "output": "2\n", "testtype": "stdin"}]),
        "private_test_cases": json.dumps(
            [{"input": f"{n}\n", "output": f"{2 * n}\n", "testtype": "stdin"} for n in (7, 40)]
        ),
        "metadata": "{}",
    }
    path = tmp_path / "double.jsonl"
    path.write_text(json.dumps(record) + "\n")
    env = gym.make(
        "rllm/CodeMultiTurn-v1", dataset=str(path), sandbox_backend=backend, memory_mb=256
    )
    env.reset(seed=0)
    hog = _fill("n > 1")  # the shown test is 1; the hidden ones 7 and 40
    _, reward, terminated, _, info = env.step(f"```python\n{hog}\n```")
    assert reward == 0.0 and terminated, info
    assert info["public_verdicts"] == ["AC"], info
    env.close()
