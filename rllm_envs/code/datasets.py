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
==================  =========================================================================

Schemas (:data:`FORMATS`): LiveCodeBench ``code_generation_lite`` (including its compressed
``private_test_cases``), TACO and APPS (``input_output`` JSON), Codeforces (open-r1's
``official_tests`` and DeepMind CodeContests' ``public_tests``/``private_tests``), HumanEval
and MBPP. ``detect_format`` picks one from a record's fields.
"""

from __future__ import annotations

import base64
import io
import json
import pickle
import zlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "FORMATS",
    "detect_format",
    "normalize",
    "decode_lcb_tests",
    "from_livecodebench",
    "from_taco",
    "from_codeforces",
    "from_humaneval",
    "from_mbpp",
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
    }
    task.update(fields)
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
    kinds = {t.get("testtype", "stdin") for t in public + private}
    kind = "functional" if "functional" in kinds else "stdin"
    return _task(
        id=str(record.get("question_id") or record.get("id") or ""),
        title=str(record.get("question_title") or ""),
        question=str(record.get("question_content") or ""),
        starter_code=str(record.get("starter_code") or ""),
        kind=kind,
        func_name=metadata.get("func_name") if isinstance(metadata, dict) else None,
        public_tests=_tests([(t["input"], t["output"]) for t in public]),
        hidden_tests=_tests([(t["input"], t["output"]) for t in private]),
        solution=record.get("solution") or None,
        solution_cpp=record.get("solution_cpp") or None,
        time_limit=float(record["time_limit"]) if record.get("time_limit") else None,
        difficulty=str(record.get("difficulty") or ""),
        source="livecodebench",
    )


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
        pairs = [
            ("\n".join(json.dumps(arg) for arg in args), json.dumps(out))
            for args, out in zip(inputs, outputs, strict=True)
        ]
        tests = [{"input": i, "output": o} for i, o in pairs]
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


def from_humaneval(record: Record) -> Task:
    """Read a HumanEval record.

    Fields: ``prompt``, ``canonical_solution``, ``test`` (defines ``check``),
    ``entry_point``. The model completes the function; one hidden test calls ``check``.
    """
    prompt = str(record["prompt"])
    entry = str(record["entry_point"])
    question = (
        f"Complete the Python function `{entry}` below. Return the whole function (with any "
        "imports and helpers it needs).\n\n```python\n" + prompt.rstrip() + "\n```"
    )
    test = str(record["test"]) + f"\n\ncheck({entry})\n"
    return _task(
        id=str(record.get("task_id") or entry),
        title=entry,
        question=question,
        starter_code="",
        kind="assert",
        func_name=entry,
        public_tests=[],
        hidden_tests=[{"input": test, "output": ""}],
        solution=prompt + str(record.get("canonical_solution") or "")
        if record.get("canonical_solution")
        else None,
        source="humaneval",
    )


def from_mbpp(record: Record) -> Task:
    """Read an MBPP record (original or sanitized).

    Fields: ``text`` or ``prompt``, ``code``, ``test_list`` (asserts), ``test_setup_code``
    or ``test_imports``, ``challenge_test_list``. The first assert is public.
    """
    asserts = list(record.get("test_list") or []) + list(record.get("challenge_test_list") or [])
    setup = record.get("test_setup_code") or "\n".join(record.get("test_imports") or [])
    tests = [{"input": (setup + "\n" if setup else "") + a, "output": ""} for a in asserts]
    text = str(record.get("text") or record.get("prompt") or "")
    question = text
    if asserts:
        question += "\n\nYour code should pass this test:\n" + asserts[0]
    return _task(
        id=str(record.get("task_id") or ""),
        question=question,
        kind="assert",
        public_tests=tests[:1],
        hidden_tests=tests[1:],
        solution=record.get("code") or None,
        source="mbpp",
    )


#: Schema name -> loader of one record.
FORMATS: dict[str, Callable[[Record], Task]] = {
    "livecodebench": from_livecodebench,
    "taco": from_taco,
    "apps": from_taco,
    "codeforces": from_codeforces,
    "code_contests": from_codeforces,
    "humaneval": from_humaneval,
    "mbpp": from_mbpp,
}


def detect_format(record: Record) -> str:
    """Guess a record's schema from its fields; raise ``ValueError`` if none fits."""
    keys = set(record)
    if "question_content" in keys:
        return "livecodebench"
    if "input_output" in keys:
        return "taco"
    if "description" in keys and keys & {"official_tests", "examples", "public_tests"}:
        return "codeforces"
    if {"canonical_solution", "entry_point"} <= keys:
        return "humaneval"
    if "test_list" in keys:
        return "mbpp"
    raise ValueError(
        f"cannot tell the dataset schema from the fields {sorted(keys)}; pass "
        f"dataset_format= one of {sorted(FORMATS)}"
    )


def normalize(record: Record, *, format: str = "auto") -> Task:
    """Turn one raw record into a code task (``ValueError`` for a record that cannot be used)."""
    name = detect_format(record) if format == "auto" else format
    try:
        loader = FORMATS[name]
    except KeyError:
        raise ValueError(f"unknown dataset_format {name!r}; known: {sorted(FORMATS)}") from None
    try:
        return loader(record)
    except (KeyError, TypeError, json.JSONDecodeError) as e:
        raise ValueError(f"not a valid {name} record ({type(e).__name__}: {e})") from e
