"""rllm/Code-v0 and rllm/CodeMultiTurn-v1 beyond the conformance matrix."""

from __future__ import annotations

import os
import time
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.code.code_env import CodeEnv, embedded_tasks
from rllm_envs.code.judge import trivial_pass_share, unseen_hidden_tests
from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.sandbox import SandboxUnavailable
from rllm_envs.sandbox import backends as backends_module
from rllm_envs.sandbox.harness import CXX, LINKER, wall_cap

TASKS = embedded_tasks()
INDEX = {t["title"]: i for i, t in enumerate(TASKS)}
SUM = INDEX["Sum of Numbers"]
FUNC = INDEX["Pair With Target"]
DATA = Path(__file__).parent / "data"


def fenced(code: str) -> str:
    return f"Here is my solution.\n```python\n{code}\n```\n"


def test_first_observation_is_self_contained():
    env = gym.make("rllm/Code-v0")
    obs, info = env.reset(options={"index": SUM})
    assert "print their sum" in obs and "Example 1" in obs
    assert "standard input" in obs and "```python" in obs
    assert info["kind"] == "stdin" and info["num_public_tests"] == 2
    obs, info = env.reset(options={"index": FUNC})
    assert "class Solution" in obs and "Solution.pairWithTarget" in obs
    assert info["kind"] == "functional"


def test_single_turn_rewards():
    env = gym.make("rllm/Code-v0")
    env.reset(options={"index": SUM})
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["is_correct"] and info["public_verdicts"] == ["AC", "AC"]
    assert info["hidden_passed"] is True and "Accepted" in obs

    env.reset(options={"index": SUM})
    obs, reward, terminated, _, info = env.step(fenced("print(6)"))
    assert reward == 0.0 and terminated and not info["is_correct"]
    assert info["public_verdicts"] == ["AC", "WA"] and not info["invalid_action"]
    assert info["hidden_passed"] is None and "Hidden tests: not run" in obs
    assert "tests_passed" not in info

    env.reset(options={"index": SUM})
    obs, reward, terminated, _, info = env.step("I think the answer is the sum.")
    assert reward == 0.0 and terminated and info["invalid_action"] and not info["has_code"]
    assert "No code found" in obs


def test_fraction_reward_mode():
    """pass_fraction counts the hidden tests: example 1 passed earns nothing (see
    test_fraction_reward.py)."""
    env = gym.make("rllm/Code-v0", reward_mode="fraction")
    env.reset(options={"index": SUM})
    _, reward, _, _, info = env.step(fenced("print(6)"))
    assert info["public_verdicts"] == ["AC", "WA"] and reward == 0.0
    assert info["reward_components"]["all_passed"] == 0.0


def test_infinite_loop_ends_as_tle_within_the_limit():
    env = gym.make("rllm/Code-v0", time_limit=1.0)
    env.reset(options={"index": SUM})
    start = time.monotonic()
    _, reward, terminated, _, info = env.step(fenced("while True:\n    pass"))
    # Time waiting for a CPU (other work on the machine) extends a test up to its cap.
    assert time.monotonic() - start < wall_cap(1.0) + 8
    assert reward == 0.0 and terminated and info["public_verdicts"] == ["TLE", "SKIP"]


def test_multi_turn_feedback_and_retry():
    env = gym.make("rllm/CodeMultiTurn-v1")
    obs, info = env.reset(options={"index": SUM})
    assert info["max_turns"] == 4 and "4 attempts" in obs
    task = env.unwrapped.task
    obs, reward, terminated, truncated, info = env.step(fenced("print(6)"))
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "Example test 2 failed: wrong answer" in obs
    assert task["public_tests"][1]["input"].strip() in obs and "Expected:\n-5" in obs
    assert "3 attempt(s) left" in obs
    for hidden in task["hidden_tests"]:
        assert hidden["input"].strip()[:40] not in obs  # hidden tests are never shown
    obs, reward, terminated, truncated, info = env.step("no code")
    assert reward == 0.0 and info["invalid_action"] and not terminated
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["turn"] == 3


def test_a_resubmitted_attempt_gets_its_verdict_again_until_the_last_turn(monkeypatch):
    from rllm_envs.code import code_env

    runs = []
    real = code_env.judge_task

    def counted(code, task, **kwargs):
        runs.append((code, kwargs["hidden_needs_public_pass"]))
        return real(code, task, **kwargs)

    monkeypatch.setattr(code_env, "judge_task", counted)
    env = gym.make("rllm/CodeMultiTurn-v1", max_turns=4)
    env.reset(options={"index": SUM})
    wrong, other = fenced("print(6)"), fenced("print(7)")
    first = env.step(wrong)[0]
    second = env.step(wrong)[0]
    assert second == first.replace("3 attempt(s) left", "2 attempt(s) left")
    env.step(other)
    _, reward, terminated, truncated, _ = env.step(wrong)  # the last turn: run again
    assert reward == 0.0 and (terminated or truncated)
    assert runs == [("print(6)", True), ("print(7)", True), ("print(6)", False)]
    # A new episode judges again.
    env.reset(options={"index": SUM})
    env.step(wrong)
    assert len(runs) == 4
    # A run-time error may be the machine's (a fork refused under load): it runs again.
    crash = fenced("raise SystemExit(3)")
    env.step(crash)
    env.step(crash)
    assert [code for code, _ in runs[4:]] == ["raise SystemExit(3)"] * 2


def test_multi_turn_hidden_failures_are_not_shown():
    env = gym.make("rllm/CodeMultiTurn-v1", max_turns=2)
    env.reset(options={"index": SUM})
    cheat = "n = int(input())\nprint({'3': 6, '1': -5}.get(str(n), 0))"
    obs, reward, terminated, truncated, info = env.step(fenced(cheat))
    assert "Hidden tests: not all passed." in obs and "Example tests: 1 accepted, 2 accepted" in obs
    assert info["public_verdicts"] == ["AC", "AC"] and info["hidden_passed"] is False
    # A program that ran on hidden inputs ends the episode: no later feedback shows output.
    assert terminated and not truncated and reward == 0.0 and "attempt(s) left" not in obs


def test_multi_turn_return_is_at_most_one_in_fraction_mode():
    env = gym.make("rllm/CodeMultiTurn-v1", reward_mode="fraction", max_turns=3)
    env.reset(options={"index": SUM})
    # Sums an even count of numbers only: both examples (3 and 1 numbers) fail, 5 of the 6
    # hidden tests pass; the last turn runs them.
    even = (
        "input()\nnums = list(map(int, input().split()))\n"
        "print(sum(nums) if len(nums) % 2 == 0 else 0)"
    )
    rewards = [env.step(fenced(even))[1] for _ in range(3)]
    # Paid above what a program without the task's logic passes (one of the six).
    task = env.unwrapped.task
    floor = trivial_pass_share([task["hidden_tests"][i] for i in unseen_hidden_tests(task)])
    assert rewards[:2] == [0.0, 0.0] and rewards[2] == pytest.approx((5 / 6 - floor) / (1 - floor))


def test_compile_error_feedback():
    env = gym.make("rllm/CodeMultiTurn-v1")
    env.reset(options={"index": SUM})
    obs, *_, info = env.step(fenced("def broken(:\n    pass"))
    assert "Compilation error" in obs and "SyntaxError" in obs
    assert set(info["public_verdicts"]) == {"CE"}


def test_functional_task_feedback_shows_the_returned_value():
    env = gym.make("rllm/CodeMultiTurn-v1")
    env.reset(options={"index": FUNC})
    code = "class Solution:\n    def pairWithTarget(self, nums, target):\n        return [0, 0]"
    obs, *_ = env.step(fenced(code))
    assert "Your result:\n[0,0]" in obs and "Expected:\n[0, 1]" in obs


def test_oracle_steps_are_deterministic():
    env = gym.make("rllm/Code-v0")
    for index in range(0, len(TASKS), 7):
        runs = []
        for _ in range(2):
            env.reset(seed=index, options={"index": index})
            runs.append(env.step(env.unwrapped.oracle_action()))
        assert runs[0] == runs[1] and runs[0][1] == 1.0


def test_difficulty_filter_and_bad_arguments():
    env = gym.make("rllm/Code-v0", difficulty="hard")
    assert {t["difficulty"] for t in env.unwrapped.tasks._tasks} == {"hard"}
    with pytest.raises(InvalidEnvConfig, match="difficulty"):
        CodeEnv(difficulty="impossible")
    with pytest.raises(InvalidEnvConfig):
        CodeEnv(reward_mode="best")
    with pytest.raises(InvalidEnvConfig):
        CodeEnv(max_turns=3)
    with pytest.raises(InvalidEnvConfig):
        CodeEnv(time_limit=0)
    with pytest.raises(InvalidEnvConfig, match="Did you mean"):
        rllm_envs.make("rllm/Code-v0", reward_mod="all")


def test_missing_sandbox_fails_at_construction(monkeypatch):
    monkeypatch.delenv("RLLM_SANDBOX_BACKEND", raising=False)
    monkeypatch.setattr(backends_module.Firejail, "missing", lambda self: "not installed")
    monkeypatch.setattr(backends_module.Bubblewrap, "missing", lambda self: "not installed")
    with pytest.raises(SandboxUnavailable, match="apt-get install firejail bubblewrap"):
        gym.make("rllm/Code-v0")


def test_explicit_backends(monkeypatch):
    for name in ("bubblewrap", "firejail"):
        try:
            env = gym.make("rllm/Code-v0", sandbox_backend=name)
        except SandboxUnavailable:
            continue
        env.reset(options={"index": SUM})
        assert env.step(env.unwrapped.oracle_action())[1] == 1.0


# ------------------------------------------------------------------------------- C++

needs_gxx = pytest.mark.skipif(
    not (os.path.exists(CXX) and os.path.exists(LINKER)),
    reason=f"{CXX} or {LINKER} missing: install them with `apt-get install g++`",
)


@needs_gxx
def test_cpp_language_asks_for_and_judges_cpp():
    env = gym.make("rllm/Code-v0", language="cpp")
    obs, info = env.reset(options={"index": 0})
    assert "C++17" in obs and "```cpp" in obs and info["kind"] == "stdin"
    obs, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    assert reward == 1.0 and terminated and info["hidden_passed"] is True
    env.reset(options={"index": 0})
    _, reward, _, _, info = env.step("```cpp\nint main() { return 0; }\n```")
    assert reward == 0.0 and info["public_verdicts"][0] == "WA"
    env.reset(options={"index": 0})
    obs, reward, _, _, info = env.step("```cpp\nint main( {\n```")
    assert reward == 0.0 and info["public_verdicts"][0] == "CE" and "Compilation error" in obs
    env.reset(options={"index": 0})
    obs, reward, _, _, info = env.step("no code")
    assert reward == 0.0 and info["invalid_action"] and "```cpp" in obs


@needs_gxx
def test_cpp_keeps_only_stdin_tasks():
    env = CodeEnv(language="cpp")
    kinds = {env.reset(options={"index": i})[1]["kind"] for i in range(len(env.tasks))}
    assert kinds == {"stdin"} and len(env.tasks) == sum(t["kind"] == "stdin" for t in TASKS)
    with pytest.raises(InvalidEnvConfig, match="stdin"):
        CodeEnv(language="cpp", dataset=DATA / "humaneval.jsonl")
    with pytest.raises(InvalidEnvConfig, match="language"):
        CodeEnv(language="java")


@needs_gxx
def test_cpp_oracle_from_a_codecontests_record():
    env = CodeEnv(language="cpp", dataset=DATA / "codeforces.jsonl")
    env.reset(options={"index": 1})
    assert env.oracle_action().startswith("```cpp\n#include")
    assert env.step(env.oracle_action())[1] == 1.0
    env.reset(options={"index": 0})  # open-r1 Codeforces records carry no solution
    with pytest.raises(InvalidDataset, match="C\\+\\+"):
        env.oracle_action()


# ---------------------------------------------------------------- in-process verdicts

# Passes any `assert f(x) == y`: the verdict of assert-kind tests is decided in this process.
DISARM = (
    "class Anything:\n    def __eq__(self, other):\n        return True\n"
    "def triple(x):\n    return Anything()\n"
)


def test_in_process_tasks_are_dropped_by_default(caplog):
    with caplog.at_level("INFO", logger="rllm_envs.code"):
        with pytest.raises(InvalidEnvConfig, match="in_process"):
            gym.make("rllm/Code-v0", dataset=str(DATA / "humaneval.jsonl"), convert_asserts=False)
    assert "1 of 1 tasks (100.0%)" in caplog.text
    env = gym.make("rllm/Code-v0", dataset=str(DATA / "kodcode.jsonl"))
    assert env.unwrapped.in_process_share == 0.5
    tasks = env.unwrapped.tasks
    assert [tasks.task(i)["verdict_trust"] for i in range(len(tasks))] == ["host"]
    env.close()


@pytest.mark.parametrize(("in_process", "reward"), [("zero", 0.0), ("allow", 1.0)])
def test_in_process_zero_or_allow(in_process, reward):
    env = gym.make(
        "rllm/Code-v0",
        dataset=str(DATA / "humaneval.jsonl"),
        convert_asserts=False,
        in_process=in_process,
    )
    assert env.unwrapped.in_process_share == 1.0
    env.reset(seed=0)
    _, got, _, _, info = env.step(fenced(DISARM))
    # The disarming submission "passes" (the forgeable verdict); only "allow" pays it.
    assert info["hidden_passed"] is True and info["verdict_trust"] == "in_process"
    assert got == reward and info["reward_zeroed"] == (in_process == "zero")
    env.close()


def test_in_process_option_is_checked():
    with pytest.raises(InvalidEnvConfig, match="in_process"):
        gym.make("rllm/Code-v0", in_process="maybe")


def test_a_client_written_task_cannot_buy_unbounded_judging_time():
    """A passed record's per-test limit and test count are bounded like any per-step cost.

    Before, ``time_limit`` came from the record unchecked (1e9 s: an infinite loop held a
    sandbox for its wall cap, days) and any number of tests was judged.
    """
    env = gym.make("rllm/Code-v0")
    base = dict(TASKS[SUM])
    for bad in (
        {"time_limit": 1e9},
        {"time_limit": -1},
        {"time_limit": "6"},
        {"time_limit": True},
        {"hidden_tests": [{"input": "1 2\n", "output": "3\n"}] * 5000},
        # 152 tests x 6 s > 600 s
        {"time_limit": 6, "hidden_tests": [{"input": "1 2\n", "output": "3\n"}] * 150},
        # 1,000 tests x 0.6 s is 600 s of CPU limits but ~2,200 s of wall clock a program that
        # sleeps could hold its sandbox (2 x 0.6 + 1 s each)
        {"time_limit": 0.6, "hidden_tests": [{"input": "1 2\n", "output": "3\n"}] * 998},
        {"hidden_tests": "1 2"},
        {"public_tests": [["1 2", "3"]]},
    ):
        with pytest.raises(InvalidEnvConfig):
            env.reset(options={"task": {**base, **bad}})
    # Refused first resets leave the env usable; a bounded record is played.
    env.reset(options={"task": {**base, "time_limit": 1.0}})
    _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    assert terminated and reward == 1.0 and info["custom_task"] is True
    env.close()
