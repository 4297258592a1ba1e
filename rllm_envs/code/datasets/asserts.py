"""Assert-style schemas: HumanEval, HumanEval+, MBPP, LeetCode, KodCode.

Their asserts become host-compared functional tests where possible
(:mod:`rllm_envs.code.convert`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from rllm_envs.code import convert as _convert
from rllm_envs.code.datasets._records import Record, Task, _json_field, _task

#: LeetCode's helpers, as the LeetCode datasets' prompts define them: the submission's type
#: hints name ``ListNode``/``TreeNode``, and the tests build and compare them with
#: ``list_node``/``tree_node``/``is_same_list``/``is_same_tree``. Used as the task's
#: ``prelude`` when a record does not carry its own.
LEETCODE_PRELUDE = """\
import random, functools, collections, string, math, datetime, heapq, bisect, itertools
from typing import *
from functools import *
from collections import *
from itertools import *
from heapq import *
from bisect import *
from string import *
from operator import *
from math import *

inf = float("inf")


class ListNode:
    def __init__(self, val=0, next=None):
        self.val = val
        self.next = next


def list_node(values):
    head = None
    for value in reversed(list(values)):
        head = ListNode(value, head)
    return head


def is_same_list(p1, p2):
    while p1 is not None and p2 is not None:
        if p1.val != p2.val:
            return False
        p1, p2 = p1.next, p2.next
    return p1 is None and p2 is None


class TreeNode:
    def __init__(self, val=0, left=None, right=None):
        self.val = val
        self.left = left
        self.right = right


def tree_node(values):
    values = list(values)
    if not values or values[0] is None:
        return None
    root = TreeNode(values[0])
    queue = deque([root])
    i = 1
    while queue and i < len(values):
        node = queue.popleft()
        if i < len(values) and values[i] is not None:
            node.left = TreeNode(values[i])
            queue.append(node.left)
        i += 1
        if i < len(values) and values[i] is not None:
            node.right = TreeNode(values[i])
            queue.append(node.right)
        i += 1
    return root


def is_same_tree(p, q):
    if p is None or q is None:
        return p is q
    return p.val == q.val and is_same_tree(p.left, q.left) and is_same_tree(p.right, q.right)
"""


def _judge_prelude() -> str:
    from rllm_envs.sandbox.harness import PRELUDE_FUNCTIONAL

    return PRELUDE_FUNCTIONAL


def _assert_fields(
    raw_tests: list[dict[str, str]],
    test_code: str,
    *,
    convert: bool,
    func_name: str | None,
    reference: str | None,
    setup: str = "",
    prelude: str | None = None,
    params: Sequence[str] | None = None,
    public_count: int = 0,
) -> dict[str, Any]:
    """Task fields for assert-style tests: converted to functional tests, or kept as asserts.

    ``raw_tests`` are the assert-kind tests to keep when the conversion is incomplete (or
    not asked for); ``test_code`` is what :func:`~rllm_envs.code.convert.convert_asserts`
    reads.
    """
    reasons: list[str] = []
    if convert:
        result = _convert.convert_asserts(
            test_code,
            func_name=func_name,
            reference=reference,
            setup=setup,
            prelude=_judge_prelude() + (prelude or ""),
            params=params,
        )
        if result.complete:
            tests = result.tests
            return {
                "kind": "functional",
                "func_name": result.func_name,
                "public_tests": tests[:public_count],
                "hidden_tests": tests[public_count:],
            }
        reasons = result.unconverted
        func_name = func_name or result.func_name
    else:
        reasons = ["kept as asserts (convert_asserts=False)"]
    return {
        "kind": "assert",
        "func_name": func_name,
        "public_tests": raw_tests[:public_count],
        "hidden_tests": raw_tests[public_count:],
        "unconverted": reasons,
    }


def _define_check_call(test: str, entry: str) -> str:
    """HumanEval's test defines ``check``; the call is ours (unless the test has it)."""
    if re.search(r"^check\(", test, re.MULTILINE):
        return test
    return test + f"\n\ncheck({entry})\n"


def from_humaneval(record: Record, *, convert_asserts: bool = True) -> Task:
    """Read a HumanEval record (also the Hugging Face copy of HumanEval+).

    Fields: ``prompt``, ``canonical_solution``, ``test`` (defines ``check``),
    ``entry_point``. The model completes the function. The ``check`` asserts become
    functional tests (with the canonical solution as the reference); what cannot be
    converted stays one assert-kind test that calls ``check``.
    """
    prompt = str(record["prompt"])
    entry = str(record["entry_point"])
    question = (
        f"Complete the Python function `{entry}` below. Return the whole function (with any "
        "imports and helpers it needs).\n\n```python\n" + prompt.rstrip() + "\n```"
    )
    test = _define_check_call(str(record["test"]), entry)
    solution = (
        prompt + str(record.get("canonical_solution") or "")
        if record.get("canonical_solution")
        else None
    )
    fields = _assert_fields(
        [{"input": test, "output": ""}],
        test,
        convert=convert_asserts,
        func_name=entry,
        reference=solution,
        params=_convert.signature_params(prompt + "\n    pass\n", entry),
    )
    return _task(
        id=str(record.get("task_id") or entry),
        title=entry,
        question=question,
        starter_code="",
        solution=solution,
        source="humaneval",
        **fields,
    )


def _json_list(value: Any) -> list[Any]:
    value = _json_field(value, [])
    if not isinstance(value, list):
        raise ValueError(f"Expects a list of inputs, actual type: {type(value).__name__}")
    return value


#: EvalPlus's comparison of float results (``np.allclose``-like with ``atol``, ``rtol=1e-7``).
_CLOSE_CHECK = """
import json as _json, math as _math


def _rllm_close(out, exp, atol):
    if isinstance(exp, float) or isinstance(out, float):
        if not isinstance(out, (int, float)) or isinstance(out, bool):
            return False
        return _math.isclose(out, exp, rel_tol=1e-7, abs_tol=atol)
    if isinstance(exp, (list, tuple)) and isinstance(out, (list, tuple)):
        return len(out) == len(exp) and all(_rllm_close(o, e, atol) for o, e in zip(out, exp))
    return out == exp


_rllm_cases = _json.loads({cases!r})
for _rllm_args, _rllm_exp in _rllm_cases:
    assert _rllm_close({entry}(*_rllm_args), _rllm_exp, {atol!r}), _rllm_args
"""


def from_humanevalplus(record: Record, *, convert_asserts: bool = True) -> Task:
    """Read a HumanEval+ record as EvalPlus releases it.

    Fields: ``prompt``, ``canonical_solution``, ``entry_point``, ``base_input`` and
    ``plus_input`` (argument lists), ``atol``. Expected values come from running the
    canonical solution on every input in the sandbox (EvalPlus's oracle). Exact results
    become functional tests; when a result is a float, EvalPlus compares with a tolerance
    (``atol``, else ``1e-6``), which the host comparison does not do, so the task is one
    assert-kind test holding the inputs and the reference's outputs
    (``verdict_trust="in_process"``). The Hugging Face copy (``test`` with ``inputs`` and
    ``results``) is read by :func:`from_humaneval`.
    """
    prompt = str(record["prompt"])
    entry = str(record["entry_point"])
    if not record.get("canonical_solution"):
        raise ValueError("a HumanEval+ record needs its canonical_solution (the oracle)")
    solution = prompt + str(record["canonical_solution"])
    inputs = _json_list(record.get("base_input")) + _json_list(record.get("plus_input"))
    if not inputs:
        raise ValueError("the record has no base_input or plus_input")
    atol = float(record.get("atol") or 0)
    outputs = _convert.reference_outputs(solution, entry, inputs, prelude=_judge_prelude())
    cases = [(args, out) for args, out in zip(inputs, outputs, strict=True) if out is not None]
    if not cases:
        raise ValueError("the canonical solution fails on every input")
    floats = any(_has_float(value) for _, (_, value) in cases)
    question = (
        f"Complete the Python function `{entry}` below. Return the whole function (with any "
        "imports and helpers it needs).\n\n```python\n" + prompt.rstrip() + "\n```"
    )
    fields: dict[str, Any]
    if convert_asserts and not floats and atol == 0:
        fields = {
            "kind": "functional",
            "func_name": entry,
            "public_tests": [],
            "hidden_tests": [
                {"input": text, "output": json.dumps(value)} for _, (text, value) in cases
            ],
        }
    else:
        program = _CLOSE_CHECK.format(
            cases=json.dumps([[args, value] for args, (_, value) in cases]),
            entry=entry,
            atol=atol or 1e-6,
        )
        fields = {
            "kind": "assert",
            "func_name": entry,
            "public_tests": [],
            "hidden_tests": [{"input": program, "output": ""}],
            "unconverted": ["results are compared with a tolerance (floats)"]
            if convert_asserts
            else ["kept as asserts (convert_asserts=False)"],
        }
    return _task(
        id=str(record.get("task_id") or entry),
        title=entry,
        question=question,
        solution=solution,
        source="humanevalplus",
        **fields,
    )


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    return False


def from_mbpp(record: Record, *, convert_asserts: bool = True) -> Task:
    """Read an MBPP record (original or sanitized).

    Fields: ``text`` or ``prompt``, ``code``, ``test_list`` (asserts), ``test_setup_code``
    or ``test_imports``, ``challenge_test_list``. The first assert is public (and shown).
    The asserts become functional tests (the reference ``code`` computes non-literal
    expected values); otherwise each assert is one assert-kind test.
    """
    asserts = list(record.get("test_list") or []) + list(record.get("challenge_test_list") or [])
    setup = record.get("test_setup_code") or "\n".join(record.get("test_imports") or [])
    tests = [{"input": (setup + "\n" if setup else "") + a, "output": ""} for a in asserts]
    text = str(record.get("text") or record.get("prompt") or "")
    question = text
    if asserts:
        question += "\n\nYour code should pass this test:\n" + asserts[0]
    fields: dict[str, Any] = {
        "kind": "assert",
        "public_tests": tests[:1],
        "hidden_tests": tests[1:],
    }
    if asserts:
        fields = _assert_fields(
            tests,
            "\n".join(asserts),
            convert=convert_asserts,
            func_name=None,
            reference=record.get("code") or None,
            setup=str(setup or ""),
            public_count=1,
        )
    return _task(
        id=str(record.get("task_id") or ""),
        question=question,
        solution=record.get("code") or None,
        source="mbpp",
        **fields,
    )


def _leetcode_method(test: str, entry: Any = None) -> str | None:
    """The method under test: ``Solution().name`` in ``entry_point`` or in ``check(...)``."""
    for text in (str(entry or ""), test):
        found = re.findall(r"Solution\(\)\.(\w+)", text)
        if found:
            return found[-1]
    if entry and re.fullmatch(r"\w+", str(entry).strip()):
        return str(entry).strip()
    return None


def from_leetcode(record: Record, *, convert_asserts: bool = True) -> Task:
    r"""Read a LeetCode record: newfacade/LeetCodeDataset, or rLLM's leetcode form.

    LeetCodeDataset fields: ``problem_description`` (or ``query``), ``starter_code``,
    ``entry_point`` (``Solution().name``), ``test`` (defines ``check(candidate)``),
    ``completion`` (a reference), ``prompt`` (imports and the ``ListNode``/``TreeNode``
    helpers: the task's ``prelude``), ``difficulty``, ``task_id``. rLLM's form: ``problem``
    and ``tests = {"functional": "<check code>\n\ncheck(Solution().name)"}`` (a dict or
    JSON), with :data:`LEETCODE_PRELUDE` as the helpers. Asserts on plain values become
    functional tests; tests that build lists or trees stay assert kind.
    """
    tests = _json_field(record.get("tests"), None)
    if isinstance(tests, Mapping) and "functional" in tests:
        test = str(tests["functional"])
    else:
        test = str(record.get("test") or "")
    if not test.strip():
        raise ValueError("a LeetCode record needs `test` or tests={'functional': ...}")
    method = _leetcode_method(test, record.get("entry_point"))
    if method is None:
        raise ValueError("cannot tell the method under test (no `check(Solution().name)`)")
    if not re.search(r"^check\(", test, re.MULTILINE):
        test += f"\n\ncheck(Solution().{method})\n"
    helpers = str(record.get("prompt") or "")
    prelude = helpers if "class ListNode" in helpers or "import" in helpers else LEETCODE_PRELUDE
    starter = str(record.get("starter_code") or "")
    reference = record.get("completion") or record.get("solution") or None
    if isinstance(reference, str) and "class Solution" not in reference:
        reference = None
    fields = _assert_fields(
        [{"input": test, "output": ""}],
        test,
        convert=convert_asserts,
        func_name=method,
        reference=reference,
        prelude=prelude,
        params=_convert.signature_params(starter, method) if starter else None,
    )
    question = str(
        record.get("problem_description")
        or record.get("problem")
        or record.get("question")
        or record.get("query")
        or ""
    )
    metadata = _json_field(record.get("metadata"), {})
    return _task(
        id=str(record.get("task_id") or record.get("question_id") or ""),
        title=str(record.get("task_id") or ""),
        question=question,
        starter_code=starter,
        solution=reference,
        difficulty=str(
            record.get("difficulty")
            or (metadata.get("difficulty") if isinstance(metadata, Mapping) else "")
            or ""
        ),
        source="leetcode",
        prelude=prelude,
        **fields,
    )


def from_kodcode(record: Record, *, convert_asserts: bool = True) -> Task:
    """Read a KodCode record (KodCode/KodCode-V1).

    Fields: ``question``, ``solution``, ``test`` (a pytest file importing from
    ``solution``), ``test_info`` (``function_name``, ``function_declaration``, ...),
    ``question_id``, ``gpt_difficulty``. The test functions' asserts become functional
    tests where possible (the solution computes expected values); otherwise the file runs
    as one assert-kind test with a small pytest stand-in
    (:func:`rllm_envs.code.convert.pytest_program`), flagged ``verdict_trust="in_process"``.
    """
    test = str(record.get("test") or record.get("tests") or "")
    if "def test" not in test:
        raise ValueError("a KodCode record needs a pytest `test` file with `def test...`")
    info = _json_field(record.get("test_info"), []) or []
    if isinstance(info, Mapping):
        info = [info]
    names = [str(i.get("function_name")) for i in info if isinstance(i, Mapping)]
    imported = re.findall(r"^from solution import ([\w, ]+)", test, re.MULTILINE)
    func_name = names[0] if len(names) == 1 else None
    if func_name is None and imported:
        found = [n.strip() for n in imported[0].split(",") if n.strip()]
        func_name = found[0] if len(found) == 1 else None
    reference = str(record.get("solution") or "") or None
    fields = _assert_fields(
        [{"input": _convert.pytest_program(test), "output": ""}],
        test,
        convert=convert_asserts,
        func_name=func_name,
        reference=reference,
    )
    question = str(record.get("question") or record.get("problem") or "")
    declarations = [
        str(i.get("function_declaration")).strip()
        for i in info
        if isinstance(i, Mapping) and i.get("function_declaration")
    ]
    if declarations:
        question += "\n\nThe function declaration: " + "; ".join(f"`{d}`" for d in declarations)
    return _task(
        id=str(record.get("question_id") or record.get("id") or ""),
        question=question,
        solution=reference,
        difficulty=str(record.get("gpt_difficulty") or record.get("difficulty") or ""),
        source="kodcode",
        **fields,
    )
