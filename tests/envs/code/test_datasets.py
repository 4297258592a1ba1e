"""Loaders for the public dataset schemas, on small local files in those schemas."""

from __future__ import annotations

import base64
import json
import pickle
import zlib
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401
from rllm_envs.code.code_env import load_code_tasks
from rllm_envs.code.datasets import decode_lcb_tests, detect_format, normalize
from rllm_envs.code.judge import judge_task
from rllm_envs.error import InvalidDataset, InvalidEnvConfig

DATA = Path(__file__).parent / "data"

#: A correct program for each fixture task that has no reference solution.
SOLUTIONS = {
    "abc999_a": "print(2 * int(input()))",
    "9001": "class Solution:\n    def countEven(self, nums: List[int]) -> int:\n"
    "        return sum(x % 2 == 0 for x in nums)\n",
    "1999A": "a, b = map(int, input().split())\nprint(max(a, b))",
}


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("livecodebench", "livecodebench"),
        ("taco", "taco"),
        ("codeforces", "codeforces"),
        ("humaneval", "humaneval"),
        ("mbpp", "mbpp"),
    ],
)
def test_every_fixture_loads_and_its_solutions_pass(name, expected):
    path = DATA / f"{name}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert all(detect_format(r) == expected for r in records)
    tasks = load_code_tasks(path, in_process="allow")
    assert len(tasks) == len(records)
    for task in tasks:
        assert task["question"] and task["public_tests"] + task["hidden_tests"]
        code = task["solution"] or SOLUTIONS[task["id"]]
        result = judge_task(code, task)
        assert result.all_passed, (task["id"], result.verdicts, result.results)
        wrong = judge_task("print(0)\ndef f(*a): return None\n", task)
        assert not wrong.all_passed


def test_livecodebench_schema_details():
    stdin, functional = load_code_tasks(DATA / "livecodebench.jsonl", in_process="allow")
    assert stdin["kind"] == "stdin" and len(stdin["hidden_tests"]) == 3  # compressed ones
    assert stdin["hidden_tests"][1] == {"input": "-7\n", "output": "-14\n"}
    assert functional["kind"] == "functional" and functional["func_name"] == "countEven"
    assert functional["starter_code"].startswith("class Solution")
    assert stdin["solution"] is None


def test_compressed_tests_never_unpickle_objects():
    payload = pickle.dumps(Path("/etc/passwd"))  # needs a class: refused
    encoded = base64.b64encode(zlib.compress(payload)).decode()
    with pytest.raises(ValueError, match="refusing|cannot decode"):
        decode_lcb_tests(encoded)
    good = base64.b64encode(zlib.compress(pickle.dumps(json.dumps([{"input": "1"}])))).decode()
    assert decode_lcb_tests(good) == [{"input": "1"}]


def test_taco_call_based_and_limits():
    stdin, call = load_code_tasks(DATA / "taco.jsonl", dataset_format="taco", in_process="allow")
    assert stdin["time_limit"] == 1.0 and stdin["kind"] == "stdin"
    assert call["kind"] == "functional" and call["func_name"] == "add_pair" and call["lenient"]
    assert call["public_tests"][0] == {"input": "1\n2", "output": "[[3, -1]]"}


def test_codeforces_both_flavours():
    openr1, contests = load_code_tasks(DATA / "codeforces.jsonl", in_process="allow")
    assert openr1["id"] == "1999A" and "Example 1" in openr1["question"]
    assert openr1["time_limit"] == 1.0 and len(openr1["hidden_tests"]) == 3
    assert contests["time_limit"] == 2.0 and contests["solution"].startswith("print")
    assert contests["solution_cpp"].startswith("#include") and openr1["solution_cpp"] is None
    assert len(contests["hidden_tests"]) == 3


def test_humaneval_and_mbpp_become_host_compared_tests():
    (he,) = load_code_tasks(DATA / "humaneval.jsonl", in_process="allow")
    assert he["kind"] == "functional" and "def triple" in he["question"]
    assert he["func_name"] == "triple" and he["verdict_trust"] == "host"
    assert he["hidden_tests"] == [
        {"input": "2", "output": "6"},
        {"input": "0", "output": "0"},
        {"input": "-4", "output": "-12"},
    ]
    first, second = load_code_tasks(DATA / "mbpp.jsonl", in_process="allow")
    assert "assert smallest([3, 1, 2]) == 1" in first["question"]
    assert first["kind"] == "functional" and first["func_name"] == "smallest"
    assert first["public_tests"] == [{"input": "[3, 1, 2]", "output": "1"}]
    assert len(first["hidden_tests"]) == 2
    # `== math.isqrt(81)` is not a literal: the reference computed it in the sandbox.
    assert second["kind"] == "functional"
    assert second["hidden_tests"][-1] == {"input": "81", "output": "9"}


def test_humaneval_and_mbpp_raw_asserts_on_request():
    (he,) = load_code_tasks(DATA / "humaneval.jsonl", convert_asserts=False, in_process="allow")
    assert he["kind"] == "assert" and he["verdict_trust"] == "in_process"
    assert he["hidden_tests"][0]["input"].rstrip().endswith("check(triple)")
    first, second = load_code_tasks(DATA / "mbpp.jsonl", convert_asserts=False, in_process="allow")
    assert len(first["public_tests"]) == 1 and len(first["hidden_tests"]) == 2
    assert second["hidden_tests"][0]["input"].startswith("import math")
    assert judge_task(he["solution"], he).all_passed


def test_env_reads_a_dataset_file():
    env = gym.make("rllm/Code-v0", dataset=str(DATA / "codeforces.jsonl"))
    obs, info = env.reset(options={"index": 1})
    assert "digits" in obs and info["num_tests"] == 4
    _, reward, terminated, _, info = env.step(env.unwrapped.oracle_action())
    assert reward == 1.0 and terminated and info["is_correct"]
    env.reset(options={"index": 0})
    with pytest.raises(InvalidDataset, match="no reference solution"):
        env.unwrapped.oracle_action()
    env.close()


def test_bad_datasets_are_programmer_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"foo": 1}) + "\n")
    with pytest.raises(InvalidDataset, match="schema"):
        load_code_tasks(bad, in_process="allow")
    with pytest.raises(InvalidEnvConfig, match="dataset_format"):
        load_code_tasks(bad, dataset_format="leet_code", in_process="allow")
    empty = tmp_path / "notests.jsonl"
    empty.write_text(json.dumps({"question_content": "x", "public_test_cases": "[]"}) + "\n")
    with pytest.raises(InvalidDataset, match="no tests"):
        load_code_tasks(empty, in_process="allow")
    with pytest.raises(ValueError):
        normalize({"question": "q", "input_output": "{not json"})


def test_loader_drops_in_process_tasks_by_default_and_logs_their_share(caplog):
    # The loader itself defaults to the safe choice for RL, and says how many it dropped.
    with caplog.at_level("INFO", logger="rllm_envs.code"):
        assert load_code_tasks(DATA / "mbpp.jsonl", convert_asserts=False) == []
    assert "mbpp.jsonl: 2 of 2 tasks (100.0%)" in caplog.text and "'drop'" in caplog.text
    zeroed = load_code_tasks(DATA / "mbpp.jsonl", convert_asserts=False, in_process="zero")
    assert [t["in_process"] for t in zeroed] == ["zero", "zero"]
    # Converted to host-compared tests, nothing is in process and nothing is dropped.
    assert len(load_code_tasks(DATA / "mbpp.jsonl")) == 2
