"""Read coding problems from the public dataset schemas into one task format.

Every loader turns one raw record into a *code task*, a plain dict:

==================  =========================================================================
``id``              ``str``: the problem id.
``title``           ``str``: a short name ("" if none).
``question``        ``str``: the statement as shown to the model (with examples).
``starter_code``    ``str``: code the answer must complete ("" if none).
``kind``            ``"stdin"``, ``"functional"`` or ``"assert"`` (see :mod:`.judge`).
``func_name``       ``str | None``: the function called by functional tests.
``public_tests``    ``list[{"input", "output"}]``: tests the model may see (feedback).
``hidden_tests``    ``list[{"input", "output"}]``: tests that are never shown.
``solution``        ``str | None``: a reference solution (the oracle), if the data has one.
``solution_cpp``    ``str | None``: a reference solution in C++, if the data has one.
``time_limit``      ``float | None``: seconds per test.
``difficulty``      ``str``: as given by the source ("" if none).
``source``          ``str``: the schema it came from.
``lenient``         ``bool``: also accept ``x`` for an expected ``[x]`` (APPS call-based).
``prelude``         ``str | None``: helper code run before the submission (LeetCode's
                    ``ListNode``/``TreeNode``/``list_node``/``is_same_list``... and imports).
``verdict_trust``   ``"host"`` (the host compares outputs) or ``"in_process"`` (assert kind:
                    the verdict is decided inside the submission's process, so a submission
                    could forge it; see :mod:`rllm_envs.code.convert`).
``unconverted``     ``list[str]``: why assert-style tests stayed assert kind (empty if not).
==================  =========================================================================

Schemas (:data:`FORMATS`): LiveCodeBench ``code_generation_lite`` (including its compressed
``private_test_cases``), TACO and APPS (``input_output`` JSON), Codeforces (open-r1's
``official_tests`` and DeepMind CodeContests' ``public_tests``/``private_tests``),
``code_contests`` in either DeepMind's or rLLM's TACO-shaped form, HumanEval, HumanEval+
(EvalPlus's ``base_input``/``plus_input`` release, or the ``inputs``/``results`` test of its
Hugging Face copy), MBPP, LeetCode (newfacade/LeetCodeDataset records or rLLM's
``{"functional": check-code}`` tests), KodCode (pytest test files), PrimeIntellect
verifiable-coding-problems (``verification_info``), and rLLM/DeepCoder records
(``problem``/``tests``/``metadata``, or rLLM's processed ``question``/``ground_truth``/
``data_source``, or verl's ``prompt``/``reward_model``), whose tests are any of the above.
``detect_format`` picks one from a record's fields.

Assert-style tests (HumanEval, HumanEval+, MBPP, LeetCode, KodCode) are converted into
host-compared functional tests where possible (:func:`rllm_envs.code.convert.
convert_asserts`; a reference solution, when the record has one, is run once in the sandbox
to compute expected values); ``convert_asserts=False`` keeps the raw asserts. What is not
converted stays ``kind="assert"`` with ``verdict_trust="in_process"``;
:func:`apply_in_process` drops, zeroes or allows those (the loaders' ``in_process``
option) and reports their share.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import logging
import pickle
import re
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rllm_envs.code import convert as _convert

__all__ = [
    "FORMATS",
    "detect_format",
    "normalize",
    "decode_lcb_tests",
    "from_livecodebench",
    "from_taco",
    "from_codeforces",
    "from_humaneval",
    "from_humanevalplus",
    "from_mbpp",
    "from_leetcode",
    "from_kodcode",
    "from_primeintellect",
    "from_code_contests",
    "from_deepcoder",
    "LEETCODE_PRELUDE",
    "IN_PROCESS_OPTIONS",
    "in_process_share",
    "apply_in_process",
]

Record = Mapping[str, Any]
Task = dict[str, Any]


class _StringsOnly(pickle.Unpickler):
    """Unpickler for LiveCodeBench's tests that loads no class at all.

    A pickled ``str`` needs none, and a dataset file must not run code through ``pickle``.
    """

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from a dataset")


def decode_lcb_tests(value: Any) -> list[dict[str, Any]]:
    """Decode LiveCodeBench test cases.

    Accepts a list, a JSON string, or the compressed form
    ``base64(zlib(pickle(json string)))`` used for ``private_test_cases``.
    """
    if value is None or value == "":
        return []
    if isinstance(value, list):
        return [dict(t) for t in value]
    if not isinstance(value, str):
        raise ValueError(f"test cases must be a list or a string, not {type(value).__name__}")
    try:
        decoded = json.loads(value)
    except ValueError:
        try:
            raw = zlib.decompress(base64.b64decode(value.encode("ascii")))
            text = _StringsOnly(io.BytesIO(raw)).load()
        except Exception as e:
            raise ValueError(f"cannot decode test cases ({type(e).__name__}: {e})") from e
        decoded = json.loads(text) if isinstance(text, (str, bytes)) else text
    if not isinstance(decoded, list):
        raise ValueError("test cases must decode to a list")
    return [dict(t) for t in decoded]


def _json_field(value: Any, default: Any) -> Any:
    if value is None or value == "":
        return default
    if isinstance(value, str):
        return json.loads(value)
    return value


def _tests(pairs: list[tuple[Any, Any]]) -> list[dict[str, str]]:
    return [{"input": _text(i), "output": _text(o)} for i, o in pairs]


def _text(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(str(v) for v in value)
    return "" if value is None else str(value)


def _task(**fields: Any) -> Task:
    task: Task = {
        "id": "",
        "title": "",
        "question": "",
        "starter_code": "",
        "kind": "stdin",
        "func_name": None,
        "public_tests": [],
        "hidden_tests": [],
        "solution": None,
        "solution_cpp": None,
        "time_limit": None,
        "difficulty": "",
        "source": "",
        "lenient": False,
        "prelude": None,
        "unconverted": [],
    }
    task.update(fields)
    task["verdict_trust"] = "in_process" if task["kind"] == "assert" else "host"
    if not task["question"]:
        raise ValueError("the problem has no statement")
    if not task["public_tests"] and not task["hidden_tests"]:
        raise ValueError("the problem has no tests")
    if task["kind"] == "functional" and not task["func_name"]:
        raise ValueError("functional tests need a function name")
    return task


def from_livecodebench(record: Record) -> Task:
    """Read a LiveCodeBench ``code_generation_lite`` record.

    Fields: ``question_content``, ``public_test_cases``, ``private_test_cases`` (JSON or
    compressed), ``starter_code``, ``metadata`` with ``func_name``.
    """
    public = decode_lcb_tests(record.get("public_test_cases"))
    private = decode_lcb_tests(record.get("private_test_cases"))
    metadata = _json_field(record.get("metadata"), {})
    func_name = _lcb_func_name(metadata, public + private)
    kinds = {t.get("testtype", "stdin") for t in public + private}
    kind = "functional" if "functional" in kinds else "stdin"
    return _task(
        id=str(record.get("question_id") or record.get("id") or ""),
        title=str(record.get("question_title") or ""),
        question=str(record.get("question_content") or ""),
        starter_code=str(record.get("starter_code") or ""),
        kind=kind,
        func_name=func_name,
        public_tests=_tests([(t["input"], t["output"]) for t in public]),
        hidden_tests=_tests([(t["input"], t["output"]) for t in private]),
        solution=record.get("solution") or None,
        solution_cpp=record.get("solution_cpp") or None,
        time_limit=float(record["time_limit"]) if record.get("time_limit") else None,
        difficulty=str(record.get("difficulty") or ""),
        source="livecodebench",
    )


def _lcb_func_name(metadata: Any, tests: Sequence[Mapping[str, Any]]) -> str | None:
    """The function name: the record's ``metadata``, else any test's (rLLM stores it there)."""
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata)
        except ValueError:
            metadata = {}
    if isinstance(metadata, Mapping) and metadata.get("func_name"):
        return str(metadata["func_name"])
    for test in tests:
        meta = test.get("metadata")
        if isinstance(meta, str):
            try:
                meta = json.loads(meta)
            except ValueError:
                continue
        if isinstance(meta, Mapping) and meta.get("func_name"):
            return str(meta["func_name"])
    return None


def _call_args(value: Any, n: int) -> list[Any]:
    """The arguments of call-based test ``n``: a list, or one JSON value per line.

    rLLM's and verl's preprocessing store each APPS/TACO call's arguments as a string of
    JSON lines; a raw record stores the list itself.
    """
    if isinstance(value, list):
        return value
    if isinstance(value, str):
        return [_json_value(line, f"input {n}") for line in value.split("\n") if line.strip()]
    raise ValueError(
        f"Expects the arguments of call-based test {n} to be a list or JSON lines, actual "
        f"type: {type(value).__name__}."
    )


def _json_value(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise ValueError(
            f"cannot read {what} {text[:80]!r} as a JSON (or Python literal) value; call-based "
            "tests give each argument as one JSON value per line"
        ) from None


def _call_tests(
    inputs: Sequence[Any], outputs: Sequence[Any], *, serialized: bool | None = None
) -> list[dict[str, str]]:
    """Functional tests from call arguments and return values (TACO, PrimeIntellect)."""
    if len(inputs) != len(outputs):
        raise ValueError("the tests have different numbers of inputs and outputs")
    tests = []
    for n, (args_value, out) in enumerate(zip(inputs, outputs, strict=True)):
        args = _call_args(args_value, n)
        is_text = isinstance(args_value, str) if serialized is None else serialized
        if is_text and isinstance(out, str):
            out = _json_value(out, f"output {n}")
        try:
            tests.append(
                {
                    "input": "\n".join(json.dumps(a, allow_nan=False) for a in args),
                    "output": json.dumps(out, allow_nan=False),
                }
            )
        except (TypeError, ValueError) as e:
            raise ValueError(f"call-based test {n} is not JSON: {e}") from None
    return tests


def from_taco(record: Record, *, public_count: int = 1) -> Task:
    """Read a TACO or APPS record.

    Fields: ``question``, ``input_output`` (JSON with ``inputs``/``outputs`` and, for
    call-based problems, ``fn_name``), ``solutions`` (JSON list). The first
    ``public_count`` tests are public.
    """
    io_spec = _json_field(record.get("input_output"), {})
    inputs, outputs = io_spec.get("inputs", []), io_spec.get("outputs", [])
    if len(inputs) != len(outputs):
        raise ValueError("input_output has different numbers of inputs and outputs")
    fn_name = io_spec.get("fn_name")
    if fn_name:
        tests = _call_tests(inputs, outputs)
    else:
        tests = _tests(list(zip(inputs, outputs, strict=True)))
    solutions = _json_field(record.get("solutions"), [])
    return _task(
        id=str(record.get("problem_id", record.get("id", record.get("name", "")))),
        title=str(record.get("name") or ""),
        question=str(record.get("question") or ""),
        starter_code=str(record.get("starter_code") or ""),
        kind="functional" if fn_name else "stdin",
        func_name=fn_name or None,
        public_tests=tests[:public_count],
        hidden_tests=tests[public_count:],
        solution=solutions[0] if solutions else None,
        time_limit=_seconds(record.get("time_limit")),
        difficulty=str(record.get("difficulty") or ""),
        source="taco",
        lenient=bool(fn_name),
    )


def _seconds(value: Any) -> float | None:
    """``2``, ``"2.0"``, ``"2 seconds"`` or CodeContests' ``{"seconds", "nanos"}``."""
    if value is None or value == "":
        return None
    if isinstance(value, Mapping):
        return float(value.get("seconds") or 0) + float(value.get("nanos") or 0) / 1e9 or None
    if isinstance(value, (int, float)):
        return float(value) or None
    try:
        return float(str(value).split()[0]) or None
    except ValueError:
        return None


def _pairs_from_columns(block: Any) -> list[tuple[Any, Any]]:
    if not block:
        return []
    if isinstance(block, Mapping):  # CodeContests: {"input": [...], "output": [...]}
        return list(zip(block.get("input", []), block.get("output", []), strict=False))
    return [(t["input"], t["output"]) for t in block]  # open-r1: [{"input", "output"}]


def from_codeforces(record: Record) -> Task:
    """Read a Codeforces-style record.

    Either open-r1/codeforces (``description``, ``input_format``, ``output_format``,
    ``examples``, ``official_tests``, ``time_limit``) or DeepMind CodeContests
    (``description``, ``public_tests``, ``private_tests``, ``generated_tests``,
    ``solutions``).
    """
    public = _pairs_from_columns(record.get("examples") or record.get("public_tests"))
    hidden = _pairs_from_columns(record.get("official_tests")) + _pairs_from_columns(
        record.get("private_tests")
    )
    hidden += _pairs_from_columns(record.get("generated_tests"))
    parts = [str(record.get("description") or "")]
    for title, key in (("Input", "input_format"), ("Output", "output_format")):
        if record.get(key):
            parts.append(f"{title}\n{record[key]}")
    if record.get("examples"):
        for n, (i, o) in enumerate(public, 1):
            parts.append(f"Example {n}\nInput:\n{i}\nOutput:\n{o}")
    if record.get("note"):
        parts.append(f"Note\n{record['note']}")
    solution = solution_cpp = None
    solutions = record.get("solutions")
    if isinstance(solutions, Mapping):  # CodeContests: language 3 is Python 3, 2 is C++
        for lang, text in zip(
            solutions.get("language", []), solutions.get("solution", []), strict=False
        ):
            if lang == 3 and solution is None:
                solution = text
            elif lang == 2 and solution_cpp is None:
                solution_cpp = text
    ident = record.get("id") or (
        f"{record.get('contest_id', record.get('cf_contest_id', ''))}{record.get('index', '')}"
    )
    return _task(
        id=str(ident or record.get("name") or ""),
        title=str(record.get("title") or record.get("name") or ""),
        question="\n\n".join(p for p in parts if p),
        kind="stdin",
        public_tests=_tests(public),
        hidden_tests=_tests([p for p in hidden if p not in public] or hidden),
        solution=solution,
        solution_cpp=solution_cpp,
        time_limit=_seconds(record.get("time_limit")),
        difficulty=str(record.get("rating") or record.get("difficulty") or ""),
        source="codeforces",
    )


# ------------------------------------------------------------------ assert-style tests

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


# ------------------------------------------------------------- PrimeIntellect, rLLM


def _strip_fence(text: str) -> str:
    """The code of a solution given as Markdown (PrimeIntellect's gold solutions are)."""
    blocks = re.findall(r"```[\w+-]*\n(.*?)```", text, re.DOTALL)
    return blocks[-1] if blocks else text


def _prime_tests(cases: Sequence[Any]) -> dict[str, Any]:
    """Task fields from PrimeIntellect test cases (``type``: stdin_stdout | function_call)."""
    if not cases:
        return {"kind": "stdin", "tests": []}
    types = {str(c.get("type") or "stdin_stdout") for c in cases}
    if types == {"stdin_stdout"}:
        return {"kind": "stdin", "tests": _tests([(c["input"], c["output"]) for c in cases])}
    if types == {"function_call"}:
        names = {c.get("fn_name") for c in cases}
        if len(names) != 1 or not next(iter(names)):
            raise ValueError("function_call tests need one fn_name")
        return {
            "kind": "functional",
            "func_name": str(next(iter(names))),
            "tests": _call_tests([c["input"] for c in cases], [c["output"] for c in cases]),
            "lenient": True,
        }
    raise ValueError(f"mixed test types {sorted(types)}")


def from_primeintellect(record: Record, *, public_count: int = 1) -> Task:
    """Read a PrimeIntellect verifiable-coding-problems record.

    Fields: ``prompt``, ``gold_standard_solution`` (Markdown), ``verification_info`` (JSON
    with ``test_cases``: ``{"type": "stdin_stdout", "input", "output"}`` or
    ``{"type": "function_call", "fn_name", "input": [args], "output": value}``),
    ``metadata`` (``difficulty``, ``time_limit``), ``problem_id``. The first
    ``public_count`` tests are public. Function-call outputs wrapped in a list (from APPS)
    are read leniently.
    """
    info = _json_field(record.get("verification_info"), {})
    cases = info.get("test_cases", []) if isinstance(info, Mapping) else info
    parsed = _prime_tests(list(cases or []))
    tests = parsed.pop("tests")
    metadata = _json_field(record.get("metadata"), {})
    metadata = metadata if isinstance(metadata, Mapping) else {}
    gold = record.get("gold_standard_solution")
    return _task(
        id=str(record.get("problem_id") or record.get("in_source_id") or ""),
        question=str(record.get("prompt") or record.get("problem") or ""),
        public_tests=tests[:public_count],
        hidden_tests=tests[public_count:],
        solution=_strip_fence(str(gold)) if gold else None,
        time_limit=_seconds(metadata.get("time_limit")),
        difficulty=str(metadata.get("difficulty") or ""),
        source="primeintellect",
        **parsed,
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


#: Schema name -> loader of one record.
FORMATS: dict[str, Callable[..., Task]] = {
    "livecodebench": from_livecodebench,
    "taco": from_taco,
    "apps": from_taco,
    "codeforces": from_codeforces,
    "code_contests": from_code_contests,
    "humaneval": from_humaneval,
    "humanevalplus": from_humanevalplus,
    "mbpp": from_mbpp,
    "leetcode": from_leetcode,
    "kodcode": from_kodcode,
    "primeintellect": from_primeintellect,
    "deepcoder": from_deepcoder,
    "rllm": from_deepcoder,
}

#: The loaders of assert-style tests: they take ``convert_asserts``.
_CONVERTING = frozenset(
    {"humaneval", "humanevalplus", "mbpp", "leetcode", "kodcode", "deepcoder", "rllm"}
)


def detect_format(record: Record) -> str:
    """Guess a record's schema from its fields; raise ``ValueError`` if none fits."""
    keys = set(record)
    if "question_content" in keys:
        return "livecodebench"
    if {"entry_point", "test"} <= keys and "canonical_solution" not in keys:
        return "leetcode"  # LeetCodeDataset also has an `input_output` list
    if "input_output" in keys:
        return "taco"
    if "verification_info" in keys:
        return "primeintellect"
    if "description" in keys and keys & {"official_tests", "examples", "public_tests"}:
        return "codeforces"
    if keys & {"base_input", "plus_input"} and "entry_point" in keys:
        return "humanevalplus"
    if {"canonical_solution", "entry_point"} <= keys:
        return "humaneval"
    if "test_list" in keys:
        return "mbpp"
    if "test_info" in keys or (
        {"question", "solution", "test"} <= keys and "gpt_difficulty" in keys
    ):
        return "kodcode"
    if {"entry_point", "test"} <= keys:
        return "leetcode"
    tests = record.get("tests")
    if (isinstance(tests, Mapping) and "functional" in tests) or (
        isinstance(tests, str) and tests.lstrip().startswith('{"functional"')
    ):
        return "leetcode"  # rLLM's leetcode form
    if ("tests" in keys and keys & {"problem", "question", "prompt"}) or (
        "data_source" in keys and keys & {"ground_truth", "reward_model"}
    ):
        return "deepcoder"
    raise ValueError(
        f"cannot tell the dataset schema from the fields {sorted(keys)}; pass "
        f"dataset_format= one of {sorted(FORMATS)}"
    )


def normalize(record: Record, *, format: str = "auto", convert_asserts: bool = True) -> Task:
    """Turn one raw record into a code task (``ValueError`` for a record that cannot be used).

    ``convert_asserts=False`` keeps assert-style tests (HumanEval, MBPP, LeetCode, KodCode)
    as they are instead of converting them to host-compared functional tests.
    """
    name = detect_format(record) if format == "auto" else format
    try:
        loader = FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown dataset_format {name!r}; known: {sorted(FORMATS)}") from None
    try:
        if name in _CONVERTING:
            return loader(record, convert_asserts=convert_asserts)
        return loader(record)
    except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a valid {name} record ({type(e).__name__}: {e})") from e


# ------------------------------------------------------------------ in-process verdicts

#: What to do with tasks whose verdict is decided inside the submission's process
#: (``verdict_trust == "in_process"``: assert kind, which a submission can disarm).
IN_PROCESS_OPTIONS = ("drop", "zero", "allow")

_log = logging.getLogger("rllm_envs.code")


def in_process_share(tasks: Sequence[Mapping[str, Any]]) -> float:
    """The share of ``tasks`` whose verdict is decided in the submission's process."""
    if not tasks:
        return 0.0
    return sum(t.get("verdict_trust") == "in_process" for t in tasks) / len(tasks)


def apply_in_process(tasks: list[Task], in_process: str, *, name: str = "dataset") -> list[Task]:
    """Apply an ``in_process`` choice to loaded tasks and report their share.

    ``"drop"`` removes in-process tasks (the safe choice for RL: a submission that disarms
    the asserts would be rewarded), ``"zero"`` keeps them with ``in_process="zero"`` set on
    each (the code env then gives them reward 0) and ``"allow"`` keeps them as they are.
    The share is logged (logger ``rllm_envs.code``, level INFO, WARNING when allowed).

    Raises:
        InvalidEnvConfig: For an unknown choice.
    """
    from rllm_envs.error import InvalidEnvConfig

    if in_process not in IN_PROCESS_OPTIONS:
        raise InvalidEnvConfig(
            f"Expects `in_process` in {IN_PROCESS_OPTIONS}, actual: {in_process!r}."
        )
    share = in_process_share(tasks)
    if share:
        count = round(share * len(tasks))
        level = logging.WARNING if in_process == "allow" else logging.INFO
        _log.log(
            level,
            "%s: %d of %d tasks (%.1f%%) are assert kind, judged inside the submission's "
            "process (forgeable): in_process=%r",
            name,
            count,
            len(tasks),
            100 * share,
            in_process,
        )
    if in_process == "drop":
        return [t for t in tasks if t.get("verdict_trust") != "in_process"]
    if in_process == "zero":
        return [
            {**t, "in_process": "zero"} if t.get("verdict_trust") == "in_process" else t
            for t in tasks
        ]
    return tasks
