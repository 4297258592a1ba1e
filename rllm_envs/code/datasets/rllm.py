"""rLLM-shaped records, whose tests may be in any of the other schemas.

DeepCoder, rLLM's and verl's processed forms, and rLLM's ``code_contests``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from rllm_envs.code.datasets._records import Record, Task, _json_field, _task, _tests
from rllm_envs.code.datasets.asserts import from_humaneval, from_kodcode, from_leetcode
from rllm_envs.code.datasets.contests import (
    _lcb_func_name,
    _prime_tests,
    from_codeforces,
    from_taco,
)


def from_code_contests(record: Record) -> Task:
    """Read a ``code_contests`` record: DeepMind's schema, or rLLM's TACO-shaped one.

    DeepMind CodeContests (``description``, ``public_tests``, ``private_tests``) goes to
    :func:`from_codeforces`; rLLM's ``code_contests`` records (``input_output``, or
    ``problem``/``question`` with ``tests = {"inputs", "outputs"}``) are TACO-shaped.
    """
    if "description" in record and not record.get("input_output"):
        return from_codeforces(record)
    if "input_output" in record:
        task = from_taco(record)
    else:
        task = from_deepcoder(record)
    task["source"] = "code_contests"
    return task


def _text_field(value: Any) -> str:
    """A statement: a string, or a chat (verl's ``prompt``): its last user message."""
    if isinstance(value, list):
        users = [m for m in value if isinstance(m, Mapping) and m.get("role") == "user"]
        chosen = users or [m for m in value if isinstance(m, Mapping)]
        return str(chosen[-1].get("content") or "") if chosen else ""
    return "" if value is None else str(value)


def from_deepcoder(record: Record, *, convert_asserts: bool = True) -> Task:
    """Read an rLLM/DeepCoder record; its tests may be in any schema rLLM uses.

    Forms: agentica-org/DeepCoder-Preview-Dataset (``problem``, ``tests`` as JSON,
    ``metadata``, ``starter_code``, ``solutions``); rLLM's processed records
    (``question``, ``ground_truth``, ``data_source``, ``starter_code``, ``metadata``); verl's
    (``prompt`` chat, ``reward_model.ground_truth``, ``data_source``). The tests decide:

    - ``{"inputs", "outputs"[, "fn_name"]}``: TACO/APPS/CodeContests (call-based inputs may
      be JSON lines);
    - a list of ``{"input", "output", "testtype", "metadata": {"func_name"}}``:
      LiveCodeBench/Codeforces (``func_name`` also from the record's ``metadata``);
    - a list of ``{"type": "stdin_stdout" | "function_call", ...}``: PrimeIntellect;
    - ``{"functional": check-code}``: LeetCode (:func:`from_leetcode`);
    - a pytest file: KodCode (:func:`from_kodcode`);
    - a ``check(candidate)`` program: HumanEval+ (:func:`from_humaneval` rules, no oracle).
    """
    reward = record.get("reward_model")
    raw = record.get("tests")
    if raw is None:
        raw = record.get("ground_truth")
    if raw is None and isinstance(reward, Mapping):
        raw = reward.get("ground_truth")
    try:
        tests = _json_field(raw, None)
    except ValueError:
        tests = raw  # test code, not JSON
    question = _text_field(record.get("problem") or record.get("question") or record.get("prompt"))
    metadata = _json_field(record.get("metadata"), {})
    metadata = metadata if isinstance(metadata, Mapping) else {}
    extra = record.get("extra_info") if isinstance(record.get("extra_info"), Mapping) else {}
    starter = str(record.get("starter_code") or (extra or {}).get("starter_code") or "")
    solutions = _json_field(record.get("solutions"), None)
    solution = record.get("solution") or (
        solutions[0] if isinstance(solutions, list) and solutions else None
    )
    source = str(record.get("data_source") or "deepcoder")
    ident = str(record.get("uid") or record.get("id") or record.get("problem_id") or "")
    common = {"question": question, "starter_code": starter}
    if isinstance(tests, Mapping) and "functional" in tests:
        task = from_leetcode(
            {**common, "problem": question, "tests": tests, "task_id": ident},
            convert_asserts=convert_asserts,
        )
    elif isinstance(tests, Mapping) and "inputs" in tests:
        io_spec = dict(tests)
        if not io_spec.get("fn_name") and metadata.get("func_name"):
            io_spec["fn_name"] = metadata["func_name"]
        task = from_taco(
            {
                **common,
                "input_output": io_spec,
                "solutions": [solution] if solution else [],
                "id": ident,
                "difficulty": metadata.get("difficulty") or record.get("difficulty") or "",
                "time_limit": metadata.get("time_limit"),
            }
        )
    elif isinstance(tests, list) and tests and all(isinstance(t, Mapping) for t in tests):
        if any("type" in t and "testtype" not in t for t in tests):
            parsed = _prime_tests(tests)
            found = parsed.pop("tests")
            task = _task(
                id=ident,
                public_tests=found[:1],
                hidden_tests=found[1:],
                solution=solution,
                **common,
                **parsed,
            )
        else:
            func_name = _lcb_func_name(metadata, tests)
            kinds = {str(t.get("testtype") or "") for t in tests}
            functional = "functional" in kinds or (func_name is not None and "stdin" not in kinds)
            pairs = [(t["input"], t["output"]) for t in tests]
            task = _task(
                id=ident,
                kind="functional" if functional else "stdin",
                func_name=func_name if functional else None,
                public_tests=_tests(pairs[:1]),
                hidden_tests=_tests(pairs[1:]),
                solution=solution,
                **common,
            )
    elif isinstance(tests, str) and "def test" in tests:
        task = from_kodcode(
            {"question": question, "test": tests, "solution": solution, "question_id": ident},
            convert_asserts=convert_asserts,
        )
    elif isinstance(tests, str) and "def check(" in tests:
        entry = metadata.get("entry_point") or record.get("entry_point")
        calls = re.findall(r"^check\((\w+)\)", tests, re.MULTILINE)
        entry = entry or (calls[-1] if calls else None)
        if not entry:
            raise ValueError("a check(candidate) test needs an entry_point")
        task = from_humaneval(
            {"prompt": question, "entry_point": entry, "test": tests, "task_id": ident},
            convert_asserts=convert_asserts,
        )
        task["question"] = question
    else:
        raise ValueError(
            "cannot tell the schema of the record's tests (expected TACO inputs/outputs, a "
            "list of input/output tests, {'functional': ...} or a pytest file)"
        )
    task["id"] = task["id"] or ident
    if source != "deepcoder" or task["source"] in ("", "taco"):
        task["source"] = source
    if metadata.get("difficulty") and not task["difficulty"]:
        task["difficulty"] = str(metadata["difficulty"])
    return task
