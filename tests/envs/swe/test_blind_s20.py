"""Findings of the s20 blind rounds (att30d, att30e) against SWE-v0: partial credit for a
non-fix.

A hidden case where the fixed code raises ``ValueError`` and the buggy code raises another
exception (``apply_discount(x, percent=-7)``: ``TypeError`` before the fix) was paid as
partial credit. A submission that wraps every function of the package to turn any other
exception into ``ValueError`` fixes nothing (the issue's own call still fails) and earned
0.25-0.5 on 3 of 40 tasks at difficulty 1 with ``partial_credit=True``. The next round
retried a call without the keyword the buggy code rejects (a renamed ``suffix`` then falls
back to its default, right whenever the text fits): 0.5 on 4 of 5 such tasks. A case where the
buggy code raises stays fail-to-pass but is no longer counted for partial credit
(``FAIL_TO_PASS_UNSHOWN``).
"""

from __future__ import annotations

import json
import re

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the envs)

#: Appended to the package's ``__init__.py``: every function of its modules raises
#: ``ValueError`` wherever it raised anything else.
_WRAP_EXCEPTIONS = """

def _every_error_is_a_value_error():
    import functools, importlib, inspect
    for name in MODULES:
        module = importlib.import_module(__name__ + "." + name)
        for attr, fn in list(vars(module).items()):
            if not (inspect.isfunction(fn) and fn.__module__ == module.__name__):
                continue
            def wrap(f):
                @functools.wraps(f)
                def wrapped(*args, **kwargs):
                    try:
                        return f(*args, **kwargs)
                    except ValueError:
                        raise
                    except Exception as e:
                        raise ValueError(str(e)) from None
                return wrapped
            setattr(module, attr, wrap(fn))

_every_error_is_a_value_error()
"""


def _call(name: str, **arguments: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _submit_exception_wrapper(env: gym.Env, seed: int) -> tuple[float, dict]:
    env.reset(seed=seed)
    listing, *_ = env.step(_call("list_files"))
    modules: dict[str, list[str]] = {}
    for line in listing.splitlines():
        path = line.strip()
        if path.endswith(".py") and "/" in path and not path.startswith("tests/"):
            package, module = path.split("/", 1)
            if module != "__init__.py":
                modules.setdefault(package, []).append(module[:-3])
    for package, names in modules.items():
        shown, *_ = env.step(_call("read_file", path=f"{package}/__init__.py"))
        text = "\n".join(
            re.sub(r"^\s*\d+  ", "", line, count=1)
            for line in shown.splitlines()[1:]
            if re.match(r"^\s*\d+  ", line)
        )
        new = f"{text}\nMODULES = {names!r}\n{_WRAP_EXCEPTIONS}"
        reply, *_ = env.step(_call("replace", path=f"{package}/__init__.py", old=text, new=new))
        assert "Replaced" in reply, reply
    _, reward, _, _, info = env.step(_call("submit"))
    return float(reward), info


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 15])
def test_turning_every_exception_into_the_expected_one_earns_no_partial_credit(seed):
    env = gym.make("rllm/SWE-v0", difficulty=1, partial_credit=True)
    try:
        reward, info = _submit_exception_wrapper(env, seed)
    finally:
        env.close()
    assert info["verdict_trust"] == "host"
    assert info["pass_to_pass"] == 1.0  # nothing else broke: only partial credit is at stake
    assert reward == 0.0


#: Wraps ``truncate`` to call again without a keyword the function rejects.
_DROP_UNKNOWN_KEYWORDS = """import functools as _functools, re as _re


def _drop_unknown_keywords(f):
    @_functools.wraps(f)
    def wrapped(*args, **kwargs):
        while True:
            try:
                return f(*args, **kwargs)
            except TypeError as e:
                m = _re.search(r"unexpected keyword argument '(\\w+)'", str(e))
                if not m or m.group(1) not in kwargs:
                    raise
                kwargs.pop(m.group(1))
    return wrapped


@_drop_unknown_keywords
def truncate("""


@pytest.mark.slow
def test_retrying_without_the_rejected_keyword_earns_no_partial_credit():
    env = gym.make("rllm/SWE-v0", difficulty=1, partial_credit=True)
    try:
        obs, _ = env.reset(seed=11)  # truncate(..., suffix='~') after suffix became ending
        assert "truncate" in obs
        reply, *_ = env.step(
            _call(
                "replace", path="wordsmith/wrap.py", old="def truncate(", new=_DROP_UNKNOWN_KEYWORDS
            )
        )
        assert "Replaced" in reply, reply
        out, *_ = env.step(
            _call(
                "run_python",
                code="from wordsmith.wrap import truncate\n"
                "print(repr(truncate('hello world', 6, suffix='~')))",
            )
        )
        assert "'hel...'" in out  # the issue's call is still wrong
        _, reward, _, _, info = env.step(_call("submit"))
    finally:
        env.close()
    assert info["verdict_trust"] == "host" and info["pass_to_pass"] == 1.0
    assert reward == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("partial_credit", [False, True])
def test_a_fix_for_the_issues_numbers_only_is_not_resolved(partial_credit):
    """att30f F1: the issue shows `bulk_price(1.0, 10)` (`>` for `>=`), whose hidden cases all
    kept quantity 10 (the only one where the default threshold shows the bug): `or quantity ==
    10` resolved 6/6 tasks. A module test now checks another threshold, and partial credit
    counts no case that keeps one of the issue's numbers in its place."""
    env = gym.make("rllm/SWE-v0", difficulty=1, partial_credit=partial_credit)
    try:
        for seed in range(400):
            env.reset(seed=seed)
            if env.unwrapped.task["bug_functions"] == ["bulk_price"] and "1.0, 10" in str(
                env.unwrapped.task["problem_statement"]
            ):
                break
        else:
            pytest.fail("no bulk_price off-by-one task in 400 seeds")
        package = env.unwrapped.task["repo"]
        gate = {
            "old": "if quantity > threshold:",
            "new": "if quantity > threshold or quantity == 10:",
        }
        reply, *_ = env.step(_call("replace", path=f"{package}/pricing.py", **gate))
        assert "Replaced" in reply, reply
        _, reward, _, _, info = env.step(_call("submit"))
    finally:
        env.close()
    assert info["verdict_trust"] == "host"
    # Nor partial credit: the cases it passes keep the issue's quantity (att30f F2).
    assert reward == 0.0 and info["fail_to_pass"] < 1.0
