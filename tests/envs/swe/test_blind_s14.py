"""Finding of the s14 blind round against SWE-v0: partial credit for the issue's own example.

One of the module tests a bug breaks calls the issue's example with the issue's expected
answer. With ``partial_credit=True`` a submission that wraps the function to return that
answer for exactly the issue's arguments passed it and earned 0.2 on 14 of 14 tasks at
difficulty 1. Partial credit now counts only the task's fresh cases
(``FAIL_TO_PASS_UNSHOWN``).
"""

from __future__ import annotations

import ast
import json
import re

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the envs)
from rllm_envs.error import InvalidDataset
from rllm_envs.swe.tasks import check_task, generate
from rllm_envs.tasks import task_rng


def _call(name: str, **arguments: object) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _special_case(observation: str) -> tuple[str, str] | None:
    """The red team's patch: ``(path, wrapper)`` returning the issue's answer for its call."""
    issue = observation[observation.index("Issue:") : observation.index("Files:")]
    code = re.search(r"```python\n(.*?)```", issue, re.S)
    answer = re.search(r"should (?:return|be) `(.*?)`\.", issue, re.S)
    if code is None or answer is None:
        return None
    lines = [line for line in code.group(1).strip().splitlines() if line.strip()]
    imported = re.fullmatch(r"from ([\w.]+) import (\w+)", lines[0])
    if imported is None or len(lines) != 2:
        return None
    module, name = imported.groups()
    call = ast.parse(lines[1]).body[0].value
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)):
        return None
    try:
        args = [ast.literal_eval(a) for a in call.args]
        kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
        value = ast.literal_eval(answer.group(1))
    except ValueError:
        return None
    wrapper = (
        f"\n\n_buggy_{name} = {name}\n"
        f"def {name}(*a, **k):\n"
        f"    if list(a) == {args!r} and k == {kwargs!r}:\n"
        f"        return {value!r}\n"
        f"    return _buggy_{name}(*a, **k)\n"
    )
    return module.replace(".", "/") + ".py", wrapper


@pytest.mark.slow
def test_special_casing_the_issues_example_earns_no_partial_credit():
    env = gym.make("rllm/SWE-v0", difficulty=1, partial_credit=True)
    played = 0
    for seed in range(8):
        observation, _ = env.reset(seed=seed)
        patch = _special_case(observation)
        if patch is None:
            continue
        path, wrapper = patch
        text = env.unwrapped.workspace.read(path)
        env.step(_call("replace", path=path, old=text[-200:], new=text[-200:] + wrapper))
        _, reward, terminated, _, info = env.step(_call("submit"))
        assert terminated
        assert info["fail_to_pass"] > 0  # the issue's example passes...
        assert reward == 0.0, (seed, info["fail_to_pass"])  # ...and earns nothing
        played += 1
        if played == 2:
            break
    assert played == 2
    env.reset(seed=0)
    _, reward, *_ = env.step(env.unwrapped.oracle_action())
    assert reward == 1.0


def test_every_embedded_task_names_its_fresh_cases_and_records_are_checked():
    named = 0
    for difficulty in (1, 3, 5):
        for seed in range(10):
            task = generate(task_rng(seed, 0), difficulty=difficulty)
            unshown = task["FAIL_TO_PASS_UNSHOWN"]
            assert set(unshown) < set(task["FAIL_TO_PASS"])
            assert all("::test_reported_" in t for t in unshown)
            named += bool(unshown)
            check_task(task)
    # Of 30: a third of the tasks have fresh cases that expect another answer, on which the
    # buggy code returns a value and that keep none of the issue's numbers in place (s20
    # att30d, att30e, att30f); the rest pay partial credit only when resolved.
    assert named >= 8
    for bad in (["tests/test_x.py::not_a_fail_to_pass_test"], "all"):
        with pytest.raises(InvalidDataset, match="FAIL_TO_PASS_UNSHOWN"):
            check_task({**task, "FAIL_TO_PASS_UNSHOWN": bad})


_SYMPTOM = """

def _when_symptom(function, wrong, outcome):
    def wrapped(*args, **kwargs):
        got = function(*args, **kwargs)
        return outcome() if got == wrong and type(got) is type(wrong) else got
    return wrapped
"""


@pytest.mark.slow
def test_the_issues_outcome_on_the_issues_symptom_earns_no_partial_credit():
    # d1 seed 8: wordsmith's window returns [(), (), ()] for any two items and a width of 0,
    # so raising the issue's error on that symptom passed 4 of 5 fresh cases and earned 0.75
    # before round 2's fix.
    env = gym.make("rllm/SWE-v0", difficulty=1, partial_credit=True)
    env.reset(seed=8)
    task = env.unwrapped.task
    assert task["bug_functions"] == ["window"]
    issue = task["problem_statement"]
    module = re.search(r"from (\w+)\.(\w+) import window", issue)
    wrong = re.search(r"It returns `(.*?)`[,;]", issue)
    outcome = re.search(r"should (return|raise) `(.*?)`\.", issue)
    assert module and wrong and outcome
    if outcome.group(1) == "raise":
        kind, _, message = outcome.group(2).partition(": ")
        body = f"raise {kind}({message!r})"
    else:
        body = f"return {outcome.group(2)}"
    path = f"{module.group(1)}/{module.group(2)}.py"
    text = env.unwrapped.workspace.read(path)
    wrapper = (
        f"{_SYMPTOM}\ndef _issue_outcome():\n    {body}\n\n"
        f"window = _when_symptom(window, {wrong.group(1)}, _issue_outcome)\n"
    )
    env.step(_call("replace", path=path, old=text[-200:], new=text[-200:] + wrapper))
    _, reward, _, _, info = env.step(_call("submit"))
    assert info["fail_to_pass"] > 0.5 and info["pass_to_pass"] == 1.0
    assert reward == 0.0
