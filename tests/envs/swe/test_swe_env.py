"""``rllm/SWE-v0`` episodes: the tools, submit, budgets, the oracle and the registry row."""

from __future__ import annotations

import os
import pickle

import gymnasium as gym
import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.swe import close_pools
from rllm_envs.swe.swe_env import SWEEnv
from rllm_envs.tools import ToolCall


def call(name, **arguments):
    return ToolCall(name, arguments).to_text()


@pytest.fixture
def env():
    env = SWEEnv(difficulty=1, warm=False, test_time_limit=5.0)
    yield env
    env.close()


def _diff(path, old, new):
    from rllm_envs.swe.repo import make_diff

    return make_diff({path: old}, {path: new})


def test_first_observation_is_self_contained(env):
    obs, info = env.reset(seed=3)
    task = env.task
    assert task["problem_statement"].strip() in obs
    for path in task["files"]:
        assert path in obs
    assert "<tool_call>" in obs and "submit" in obs and "30 replies" in obs
    assert [t["function"]["name"] for t in info["tools"]] == [
        "list_files",
        "read_file",
        "search",
        "replace",
        "apply_patch",
        "create_file",
        "run_tests",
        "run_python",
        "submit",
    ]
    assert info["changed_files"] == [] and info["repo"] == task["repo"]


def test_read_search_and_list(env):
    env.reset(seed=0)
    pkg = env.task["repo"]
    module = next(p for p in env.task["files"] if p.startswith(pkg + "/") and "__init__" not in p)
    obs, reward, terminated, truncated, info = env.step(
        call("read_file", path=module, start_line=2, end_line=4)
        + call("search", query="def ")
        + call("list_files", path="tests")
    )
    assert f"{module} (lines 2-4 of" in obs and "   2  " in obs and "   5  " not in obs
    assert f"{module}:" in obs  # a search hit
    assert "tests/test_" in obs and reward == 0.0 and not terminated
    assert info["tool_results"] == [
        {"name": n, "ok": True, "error": None} for n in ("read_file", "search", "list_files")
    ]
    assert info["invalid_action"] is False


def test_errors_are_feedback_not_exceptions(env):
    env.reset(seed=0)
    replies = [
        call("read_file", path="../../etc/passwd"),
        call("read_file", path="/etc/passwd"),
        call("read_file", path="nope.py"),
        call("replace", path="README.md", old="no such text", new="x"),
        call("apply_patch", patch="garbage"),
        call("create_file", path="README.md", content="x"),
        call("no_such_tool"),
        call("read_file", wrong=1),
        "<tool_call>{not json</tool_call>",
        "just prose",
    ]
    for reply in replies:
        obs, reward, terminated, truncated, info = env.step(reply)
        assert reward == 0.0 and not terminated
        assert "result (error)" in obs or "[error]" in obs or "No tool call" in obs
    assert env.workspace.changed == {}  # nothing was written


def test_invalid_calls_are_counted(env):
    env.reset(seed=0)
    *_, info = env.step(call("no_such_tool") + call("read_file"))
    assert info["invalid_action"] and info["reward_components"]["invalid_call"] == 2.0
    assert "unknown tool" in info["invalid_reason"] and "read_file" in info["invalid_reason"]
    *_, info = env.step(call("read_file", path="nope.py"))  # a tool's own error is not invalid
    assert not info["invalid_action"] and info["tool_results"][0]["error"] == "tool_error"


def test_edit_tools_change_the_working_copy(env):
    env.reset(seed=0)
    obs, *_, info = env.step(call("create_file", path="notes/todo.txt", content="a\nb\n"))
    assert "Created notes/todo.txt" in obs and info["changed_files"] == ["notes/todo.txt"]
    env.step(call("replace", path="notes/todo.txt", old="a\n", new="A\n"))
    assert env.workspace.read("notes/todo.txt") == "A\nb\n"
    patch = _diff("notes/todo.txt", "A\nb\n", "A\nB\nc\n")
    obs, *_ = env.step(call("apply_patch", patch=patch))
    assert "Applied" in obs and env.workspace.read("notes/todo.txt") == "A\nB\nc\n"
    assert env.task["files"].get("notes/todo.txt") is None  # the base is untouched


def test_run_tests_and_python_use_the_working_copy(env):
    env.reset(seed=0)
    obs, *_ = env.step(call("run_tests"))
    passed, total = (int(x) for x in obs.split(" tests passed")[0].split("]\n")[-1].split(" of "))
    assert passed == total == len(env.task["PASS_TO_PASS"])  # the public tests all pass
    pkg = env.task["repo"]
    obs, *_ = env.step(call("run_python", code=f"import {pkg}\nprint({pkg}.__version__)"))
    assert "Exit code 0." in obs and "0.4.2" in obs
    # A public test id can be run alone, and breaking the code shows up.
    test_id = env.task["PASS_TO_PASS"][0]
    obs, *_ = env.step(call("run_tests", target=test_id))
    assert "1 of 1 tests passed" in obs
    init = f"{pkg}/__init__.py"
    env.step(call("replace", path=init, old="__version__", new="raise ImportError('x')\n__v"))
    obs, *_ = env.step(call("run_tests", target=test_id))
    assert "0 of 1 tests passed" in obs and "ImportError" in obs


def test_oracle_scores_one(env):
    env.reset(seed=5)
    obs, reward, terminated, truncated, info = env.step(env.oracle_action())
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["is_correct"] and info["submitted"] and info["fail_to_pass"] == 1.0
    assert "resolved" in obs


def test_oracle_after_edits(env):
    env.reset(seed=2)
    pkg = env.task["repo"]
    env.step(call("replace", path=f"{pkg}/__init__.py", old='"""', new='"""Edited. '))
    env.step(call("create_file", path=f"{pkg}/extra.py", content="X = 1\n"))
    *_, reward, terminated, _, info = env.step(env.oracle_action())
    assert reward == 1.0 and terminated


def test_noop_submit_and_test_edit_score_zero(env):
    env.reset(seed=5)
    obs, reward, terminated, _, info = env.step(call("submit"))
    assert reward == 0.0 and terminated and not info["is_correct"]
    env.reset(seed=5)
    path = env.task["FAIL_TO_PASS"][0].split("::")[0]
    env.step(
        call(
            "apply_patch", patch=_diff(path, env.workspace.read(path), "def test_x():\n    pass\n")
        )
    )
    obs, reward, terminated, _, info = env.step(call("submit"))
    assert reward == 0.0 and info["dropped_test_changes"] == [path]
    assert "discarded" in obs


def test_calls_after_submit_do_not_run(env):
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step(
        call("submit") + call("create_file", path="late.py", content="x")
    )
    assert terminated and "after submit was not run" in obs
    assert env.workspace.read("late.py") is None


def test_turn_and_character_budgets():
    env = SWEEnv(max_turns=2, warm=False)
    env.reset(seed=0)
    assert env.step(call("list_files"))[3] is False
    *_, terminated, truncated, info = env.step(call("list_files"))
    assert truncated and not terminated and "fail_to_pass" not in info
    env = SWEEnv(max_episode_chars=100, warm=False)
    env.reset(seed=0)
    *_, terminated, truncated, _ = env.step("x" * 150)
    assert truncated and not terminated
    with pytest.raises(gym.error.ResetNeeded):
        env.step("x")
    # Judged at the end when asked.
    env = SWEEnv(max_turns=1, submit_at_end=True, warm=False)
    env.reset(seed=5)
    action = env.oracle_action().split("<tool_call>")[1]  # the patch, without the submit
    *_, reward, terminated, truncated, info = env.step("<tool_call>" + action)
    assert truncated and not terminated and reward == 1.0 and info["is_correct"]


def test_pickles_mid_episode(env):
    env.reset(seed=4)
    env.step(call("create_file", path="a.txt", content="hello"))
    copy = pickle.loads(pickle.dumps(env))
    assert copy.workspace.read("a.txt") == "hello"
    obs, *_ = copy.step(call("read_file", path="a.txt"))
    assert "hello" in obs
    assert env.workspace.read("a.txt") == "hello"  # the copy has its own working copy
    copy.step(call("replace", path="a.txt", old="hello", new="bye"))
    assert env.workspace.read("a.txt") == "hello"


def _children():
    found = []
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/children") as f:
                found += f.read().split()
        except FileNotFoundError:  # a thread that ended since the listing
            continue
    return set(found)


def test_nothing_is_left_running(env):
    close_pools()  # sandboxes other tests started ahead of time are not this episode's
    before = _children()
    env.reset(seed=0)
    env.step(
        call(
            "run_python", code="import os\nif os.fork() == 0:\n    import time\n    time.sleep(60)"
        )
    )
    env.step(env.oracle_action())
    assert _children() - before == set()


def test_arguments_are_checked():
    for kwargs in (
        {"difficulty": 0},
        {"difficulty": 6},
        {"max_calls_per_turn": 0},
        {"test_time_limit": 0},
        {"repos_dir": "/tmp"},
        {"dataset": "x.jsonl"},
        {"reward_weights": {"nope": 1.0}},
        {"sandbox_backend": "nope"},
    ):
        with pytest.raises(InvalidEnvConfig):
            SWEEnv(**kwargs)


def test_partial_credit_variant():
    # Fixing one of a task's two bugs earns a share, never more than the fail-to-pass tests'
    # share (a task whose fixed bug has no counted case earns nothing: try the next one).
    env = SWEEnv(difficulty=4, partial_credit=True, warm=False)
    for seed in range(60):
        env.reset(seed=seed)
        if len({t.split("::")[0] for t in env.task["FAIL_TO_PASS"]}) < 2:
            continue
        first = env.task["patch"].split("diff --git")[1]
        env.step(call("apply_patch", patch="diff --git" + first))
        *_, reward, terminated, _, info = env.step(call("submit"))
        assert terminated and reward < 1.0 and reward <= info["fail_to_pass"] < 1.0
        if reward > 0.0:
            break
    else:
        pytest.fail("no one-bug fix earned partial credit in 60 tasks")


@pytest.mark.parametrize("difficulty", [1, 3, 4, 5])
def test_the_probe_draws_what_generate_shows_the_policy(difficulty):
    # The task source chooses its universe key and answer balance on probe draws: they must be
    # the statements generate() draws from the same rng (both read it in the same order).
    from rllm_envs.swe.tasks import generate, probe
    from rllm_envs.tasks import probe_rng

    for i in range(12):
        drawn, probed = (
            generate(probe_rng(i), difficulty=difficulty),
            probe(probe_rng(i), difficulty=difficulty),
        )
        assert {k: drawn[k] for k in probed} == probed


@pytest.mark.slow
def test_the_probe_chooses_the_plan_generate_would_choose():
    from functools import partial

    from rllm_envs.swe.tasks import generate, probe
    from rllm_envs.tasks import _cached_plan, question_key, text_key

    candidates = (question_key, text_key)
    full = _cached_plan(partial(generate, difficulty=2), candidates, False)
    quick = _cached_plan(partial(probe, difficulty=2), candidates, False)
    assert (full.key, full.repeats, full.balance) == (quick.key, quick.repeats, quick.balance)
