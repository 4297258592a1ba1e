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

import json
from collections.abc import Callable, Mapping

from rllm_envs.code.datasets._records import Record, Task
from rllm_envs.code.datasets.asserts import (
    LEETCODE_PRELUDE,
    from_humaneval,
    from_humanevalplus,
    from_kodcode,
    from_leetcode,
    from_mbpp,
)
from rllm_envs.code.datasets.contests import (
    decode_lcb_tests,
    from_codeforces,
    from_livecodebench,
    from_primeintellect,
    from_taco,
)
from rllm_envs.code.datasets.in_process import (
    IN_PROCESS_OPTIONS,
    apply_in_process,
    in_process_share,
)
from rllm_envs.code.datasets.rllm import from_code_contests, from_deepcoder

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
