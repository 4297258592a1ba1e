"""Findings of the s36 blind round against SWE-v0 (att36a).

F1 (high): every ``assert x`` / ``assertTrue(x)`` of a module named the same host check
(``host=k``), and every ``assert not x`` another; the sandbox can read the probe's code, so a
patch learnt from the unchanged code's passing checks which index meant "true", answered each
hidden truth check's input with it and kept the bug: paid 1.0 with trust ``host`` in every
mode. F1b (medium): a raises block's class index (``kinds=k``) was shared the same way. Each
check now has an index of its own.
"""

from __future__ import annotations

import re

import pytest

from rllm_envs.swe.probe import probe_module

from .test_blind_s33 import _verdict

_TESTS = (
    "import unittest\n\nimport pytest\n\nfrom acme import is_valid\n\n\n"
    "class T(unittest.TestCase):\n"
    "    def test_basic(self):\n"
    "        assert is_valid('abc')\n        self.assertTrue(is_valid('hello'))\n"
    "        assert not is_valid('')\n        self.assertFalse(is_valid(' '))\n\n"
    "    def test_a(self):\n"
    "        self.assertTrue(is_valid('a1'))\n        assert is_valid('x9y')\n"
    "        self.assertFalse(is_valid('1x'))\n        assert not is_valid('9')\n\n"
    "    def test_raises(self):\n"
    "        with pytest.raises(ValueError):\n            is_valid(None)\n"
    "        with pytest.raises(ValueError, match='bad'):\n            is_valid(1)\n"
)
_BASE = "def is_valid(s):\n    return bool(s.strip())\n"
_FIXED = "def is_valid(s):\n    return bool(s.strip()) and s[0].isalpha()\n"
# The attacker's patch: reads each probed truth check's input and index from the loaded test
# module's bytecode and answers by the index's polarity, learnt from the unchanged code.
_LEARN = (
    "\n"
    "_MOD = [None]\n"
    "\n"
    "def _codes(obj, seen):\n"
    "    import types\n"
    "    if id(obj) in seen:\n"
    "        return\n"
    "    seen.add(id(obj))\n"
    '    if getattr(obj, "__module__", None) != _MOD[0]:\n'
    "        return\n"
    "    if isinstance(obj, types.FunctionType):\n"
    "        yield obj.__code__\n"
    "    elif isinstance(obj, type):\n"
    "        for v in list(vars(obj).values()):\n"
    "            yield from _codes(v, seen)\n"
    "\n"
    "def _walk(code):\n"
    "    yield code\n"
    "    for c in code.co_consts:\n"
    '        if hasattr(c, "co_code"):\n'
    "            yield from _walk(c)\n"
    "\n"
    "def _learn(fname, buggy):\n"
    '    """Each probed truth check of `fname(<literal>)`: its input and its host index."""\n'
    "    import sys, dis\n"
    "    found = []\n"
    "    for m in list(sys.modules.values()):\n"
    '        path = getattr(m, "__file__", None)\n'
    '        if not (isinstance(path, str) and path.startswith("/repo/") and "/test" in path):\n'
    "            continue\n"
    "        seen = set()\n"
    "        _MOD[0] = m.__name__\n"
    "        for v in list(vars(m).values()):\n"
    "            for top in _codes(v, seen):\n"
    "                for code in _walk(top):\n"
    "                    ins = [i for i in dis.get_instructions(code)\n"
    '                           if i.opname not in ("PRECALL", "PUSH_NULL", "CACHE", "KW_NAMES")]\n'
    "                    for a, b, c, d, e in zip(ins, ins[1:], ins[2:], ins[3:], ins[4:]):\n"
    '                        if (a.opname == "LOAD_GLOBAL" and a.argval == fname\n'
    '                                and b.opname == "LOAD_CONST" and c.opname == "CALL"\n'
    '                                and d.opname == "LOAD_CONST" and d.argval == "truth"\n'
    '                                and e.opname == "LOAD_CONST" and type(e.argval) is int):\n'
    "                            found.append((b.argval, e.argval))\n"
    "    indices = sorted({k for _, k in found})\n"
    "    if len(indices) != 2:\n"
    "        return {}\n"
    "    a, b = indices\n"
    '    # which index stands for "truthy": the one the unchanged code agrees with most\n'
    "    agree = sum((bool(buggy(s)) == (k == a)) for s, k in found)\n"
    "    truthy = a if agree * 2 >= len(found) else b\n"
    "    return {s: (k == truthy) for s, k in found}\n"
    "\n"
    "def _buggy(s):\n"
    "    return bool(s.strip())\n"
    "\n"
    "_TABLE = None\n"
    "\n"
    "def is_valid(s):\n"
    "    global _TABLE\n"
    "    if _TABLE is None:\n"
    '        _TABLE = _learn("is_valid", _buggy)\n'
    "    if s in _TABLE:\n"
    "        return _TABLE[s]\n"
    "    return _buggy(s)\n"
)


def test_no_two_checks_of_a_module_share_a_host_index():
    probe = probe_module(_TESTS)
    indices = [int(k) for k in re.findall(r"host=(\d+)", probe.text)]
    assert len(indices) >= 8
    assert len(indices) == len(set(indices)) == len(probe.predicates)
    blocks = [int(k) for k in re.findall(r"__rllm_observing__\((\d+)\)", probe.text)]
    assert len(blocks) == len(set(blocks)) == len(probe.blocks)
    assert sum(kind == "raises" for kind, _ in probe.blocks) >= 2


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_patch_reading_the_truth_checks_indices_keeps_the_bug_and_earns_nothing():
    assert _verdict(_BASE, _FIXED, _BASE, _TESTS) == 0.0
    assert _verdict(_BASE, _FIXED, _FIXED, _TESTS) == 1.0
    assert _verdict(_BASE, _FIXED, _LEARN, _TESTS) == 0.0
    assert _verdict(_BASE, _FIXED, _LEARN, _TESTS, pay=True) == 0.0


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_test_cannot_tell_its_place_in_the_run():
    """att36d F1: the sandbox ran the fail-to-pass tests first, in the record's order, one
    fork each, so a test's pid (or the runner's list in memory) told a patch which tests were
    fail-to-pass. A patch answering right only at the place a test had: 8 of 8 before, the
    host's random order leaves that 1 in 40,320."""
    from rllm_envs.swe import judge
    from rllm_envs.swe.repo import make_diff

    path = "tests/test_m.py"
    names = [f"test_{k}" for k in range(8)]
    tests = "import unittest\n\nfrom acme import f\n\n\nclass T(unittest.TestCase):\n" + "".join(
        f"    def {name}(self):\n        assert f({k})\n" for k, name in enumerate(names)
    )
    files = {"acme/__init__.py": "def f(k):\n    return False\n"}
    fixed = {"acme/__init__.py": "def f(k):\n    return True\n"}
    by_place = {"acme/__init__.py": "import os\n\n\ndef f(k):\n    return os.getpid() - 2 == k\n"}
    verdict = judge.verdict(
        files,
        make_diff(files, by_place),
        test_patch=make_diff(files, {**files, path: tests}),
        fail_to_pass=[f"{path}::T::{name}" for name in names],
        pass_to_pass=[],
        reference_patch=make_diff(files, fixed),
        warm=False,
    )
    assert verdict.verdict_trust == "host" and [o.id for o in verdict.report.outcomes] == [
        f"{path}::T::{name}" for name in names
    ]
    assert verdict.fail_to_pass < 1.0


_CODEC = (
    "import base64\n\n\ndef encode(text):\n    return base64.b64encode(text.encode()).decode()\n"
)
_FOLDED_TESTS = (
    "from acme import decode, encode\n\n\n"
    "def test_encode():\n    assert encode('hello' + ' world') == 'aGVsbG8gd29ybGQ='\n\n\n"
    "def test_decode():\n    assert decode('aGVsbG8gd29ybGQ=') == 'hello world'\n"
)


@pytest.mark.parametrize(
    "written", ["'hello' + ' world'", "'hello' * 1 + ' world'", "'hello world'"]
)
def test_an_input_the_compiler_folds_into_an_expected_value_is_an_echo(written):
    """att36h: the echo check read literal nodes, and `'hello' + ' world'` is none, but the
    compiler folds it into the constant `'hello world'` the sandbox reads in `co_consts`."""
    from rllm_envs.swe.judge import probe_notes
    from rllm_envs.swe.probe import NOTE_ECHO

    source = _FOLDED_TESTS.replace("'hello' + ' world'", written)
    path = "tests/test_m.py"
    assert NOTE_ECHO in probe_notes({path: source}, [f"{path}::test_decode"])


@pytest.mark.slow
@pytest.mark.sandbox
def test_a_patch_reading_a_folded_constant_earns_nothing():
    from rllm_envs.swe import judge
    from rllm_envs.swe.repo import make_diff

    path = "tests/test_m.py"
    base = {"acme/__init__.py": _CODEC + "\n\ndef decode(data):\n    return data\n"}
    fixed = {
        "acme/__init__.py": _CODEC
        + "\n\ndef decode(data):\n    return base64.b64decode(data.encode()).decode()\n"
    }
    reads = {  # the attacker's patch: the test module's constant whose encoding it was given
        "acme/__init__.py": _CODEC
        + "import sys\n\n\ndef _consts(code, out):\n    for c in code.co_consts:\n"
        "        if isinstance(c, str):\n            out.append(c)\n"
        "        elif hasattr(c, 'co_consts'):\n            _consts(c, out)\n    return out\n\n\n"
        "def decode(data):\n    for name, mod in list(sys.modules.items()):\n"
        "        if name.rpartition('.')[2].startswith('test_'):\n"
        "            for obj in list(vars(mod).values()):\n"
        "                if not getattr(obj, '__name__', '').startswith('test_'):\n"
        "                    continue\n"
        "                code = getattr(obj, '__code__', None)\n"
        "                if code is not None and getattr(obj, '__module__', None) == name:\n"
        "                    for c in _consts(code, []):\n"
        "                        if encode(c) == data:\n                            return c\n"
        "    return data\n"
    }
    verdicts = {
        name: judge.verdict(
            base,
            make_diff(base, submitted),
            test_patch=make_diff(base, {**base, path: _FOLDED_TESTS}),
            fail_to_pass=[f"{path}::test_decode"],
            pass_to_pass=[f"{path}::test_encode"],
            reference_patch=make_diff(base, fixed),
            warm=False,
        )
        for name, submitted in (("fix", fixed), ("reads", reads))
    }
    assert judge.reward_of(verdicts["fix"], False) == 1.0
    assert judge.reward_of(verdicts["reads"], False) == 0.0
    assert judge.reward_of(verdicts["reads"], False, "pay") == 0.0
