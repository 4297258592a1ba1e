"""Contest schemas (stdin and call-based tests).

LiveCodeBench, TACO/APPS, Codeforces and DeepMind CodeContests, PrimeIntellect.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import re
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

from rllm_envs.code.datasets._records import (
    Record,
    Task,
    _call_tests,
    _json_field,
    _seconds,
    _task,
    _tests,
)


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
