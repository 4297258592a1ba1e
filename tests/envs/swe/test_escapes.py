"""Escapes from the test process: a submission that forges the outcome instead of fixing the bug.

Each attack leaves the bug in place and adds code to the buggy module (it runs when the
hidden tests call the buggy function), so any reward above 0 is a forged verdict. With a
reference patch the verdict is the host's comparison of observed values with the
reference's (:mod:`rllm_envs.swe.probe`), so nothing the process does to itself counts:
rewriting the runner's comparison through raw memory (``_ctypes``), reaching the runner's
module globals, exiting early, objects equal to anything, or printing a forged report.
"""

from __future__ import annotations

import re

import pytest

from rllm_envs.swe import judge
from rllm_envs.swe.repo import Workspace
from rllm_envs.swe.swe_env import SWEEnv
from rllm_envs.swe.tasks import generate
from rllm_envs.tasks import task_rng
from rllm_envs.tools import ToolCall

# Rewrites the code of the runner's comparison (found in the test functions' constants)
# through raw memory writes, which no audit event sees; every `==` of a test is then True.
CTYPES = r"""
import sys as _sys
import _ctypes as _C


class _Ptr(_C._SimpleCData):
    _type_ = "P"


class _Word(_C.Union):
    _fields_ = [("address", _Ptr), ("pointer", _C.POINTER(_Ptr))]


def _always(left, op, right, _check=None, _event=None):
    return True


def _poke(address, value):
    word = _Word()
    word.address = address
    word.pointer[0] = value


def _forge():
    seen = set()
    for module in list(_sys.modules.values()):
        if not str(getattr(module, "__file__", "")).startswith("/repo/tests/"):
            continue
        for value in list(getattr(module, "__dict__", {}).values()):
            code = getattr(value, "__code__", None)
            for const in getattr(code, "co_consts", ()):
                names = ("strict_compare", "observe", "observed", "same")
                if callable(const) and getattr(const, "__name__", "") in names:
                    if id(const) not in seen:
                        seen.add(id(const))
                        _poke(id(const) + 48, id(_always.__code__))  # PyFunctionObject.func_code
"""

# Reaches the runner's module globals from the pytest module's functions (``__globals__``
# read through raw memory, which no audit event sees; ``gc`` is refused in the test process)
# and rewrites what the runner records and how it compares.
GLOBALS = r"""
import sys as _sys
import _ctypes as _C


class _Obj(_C._SimpleCData):
    _type_ = "O"


class _Size(_C._SimpleCData):
    _type_ = "P"


class _Raw(_C.Union):
    _fields_ = [("p", _C.POINTER(_Obj)), ("n", _Size)]


def _forge():
    shim = _sys.modules.get("pytest")
    for name in ("observe", "raises", "approx"):
        function = getattr(shim, name, None)
        if function is None:
            continue
        raw = _Raw()
        raw.n = id(function) + 16  # PyFunctionObject.func_globals
        runner = raw.p[0]
        if not isinstance(runner, dict):
            continue
        runner["observed"] = lambda value: ["float", "3.33"]
        recorded = runner.get("_OBSERVED")
        if isinstance(recorded, list):
            recorded.clear()
        for key in ("strict_compare", "strict_equal"):
            if key in runner:
                runner[key] = lambda *a, **k: True
"""

EXIT = r"""
import os as _os


def _forge():
    _os.write(3, b"O{\"observed\": [], \"end\": [\"ended\", \"P\"]}")
    _os._exit(0)
"""

# Returns, from the buggy function, an object equal to anything (and looking like a list).
EQUAL = r"""
class _Anything(list):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = None


def _forge():
    raise _Return(_Anything())


class _Return(Exception):
    pass
"""

PRINT = r"""
import json as _json
import sys as _sys


def _forge():
    report = {"observed": [["list", []]], "end": ["ended", "P"]}
    print("O" + _json.dumps(report))
    _sys.stdout.flush()
    print("P" + "0" * 32)
"""

ATTACKS = {"ctypes": CTYPES, "globals": GLOBALS, "os-exit": EXIT, "eq": EQUAL, "print": PRINT}


@pytest.fixture(scope="module")
def task():
    return generate(task_rng(0, 0), difficulty=1)


def _attacked(task, attack: str) -> str:
    """The base with the attack in the buggy module, called first in the buggy function."""
    (function,) = task["bug_functions"]
    path = next(
        p
        for p, text in task["files"].items()
        if p.startswith(task["repo"] + "/") and f"def {function}(" in text
    )
    text = task["files"][path]
    match = re.search(rf"^(\s*)def {function}\(.*\):\n", text, re.M)
    assert match is not None
    indent = match.group(1) + "    "
    if attack == "eq":
        call = (
            f"{indent}try:\n{indent}    _forge()\n{indent}except _Return as _r:\n"
            f"{indent}    return _r.args[0]\n"
        )
    else:
        call = f"{indent}_forge()\n"
    # Past the docstring, if any, so the function still documents itself.
    end = match.end()
    docstring = re.match(r'\s*""".*?"""\n', text[end:], re.S)
    if docstring:
        end += docstring.end()
    ws = Workspace(task["files"])
    ws.write(path, ATTACKS[attack] + "\n\n" + text[:end] + call + text[end:])
    return ws.diff()


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_forging_the_outcome_earns_nothing(task, attack):
    diff = _attacked(task, attack)
    result = judge.verdict(
        task["files"],
        diff,
        test_patch=task["test_patch"],
        fail_to_pass=task["FAIL_TO_PASS"],
        pass_to_pass=task["PASS_TO_PASS"],
        reference_patch=task["patch"],
        warm=False,
    )
    assert result.applied and result.verdict_trust == "host", attack
    assert not result.resolved and result.fail_to_pass == 0.0, (attack, result.report)
    # Reaching the runner's state (its frames' globals, or through ctypes) is refused by the
    # guard since the observation records are sealed (s12 F3); the others are denied by the
    # comparison with the reference.
    assert result.tampering == (attack in ("ctypes", "globals")), (attack, result.report)
    assert judge.score(diff, task) == 0.0


def test_the_ctypes_escape_forges_a_verdict_decided_in_process(task):
    """The attack above is live: where the test process decides the pass, it resolves.

    This keeps the escape tests honest (an attack that fails everywhere proves nothing). If the
    in-process verdict ever resists it, replace the attack by one that beats that verdict.
    """
    result = judge.verdict(
        task["files"],
        _attacked(task, "ctypes"),
        test_patch=task["test_patch"],
        fail_to_pass=task["FAIL_TO_PASS"],
        pass_to_pass=task["PASS_TO_PASS"],
        warm=False,
    )
    assert result.verdict_trust == "in_process"
    assert result.resolved, result.report


def test_the_oracle_is_judged_on_the_host(task):
    result = judge.verdict(
        task["files"],
        task["patch"],
        test_patch=task["test_patch"],
        fail_to_pass=task["FAIL_TO_PASS"],
        pass_to_pass=task["PASS_TO_PASS"],
        reference_patch=task["patch"],
        warm=False,
    )
    assert result.resolved and result.verdict_trust == "host"


def test_the_env_judges_an_attack_through_submit(task):
    env = SWEEnv(difficulty=1, warm=False, test_time_limit=5.0)
    try:
        env.reset(seed=0)
        assert env.task is not None
        diff = _attacked(env.task, "ctypes")
        calls = [ToolCall("apply_patch", {"patch": diff}), ToolCall("submit", {})]
        out = env.step("\n".join(c.to_text() for c in calls))
        info = out[4]
        assert info["verdict_trust"] == "host"
        assert out[1] == 0.0 and info["fail_to_pass"] == 0.0
    finally:
        env.close()
