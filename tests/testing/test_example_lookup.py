"""The checker's lookup-examples policies: the examples they read, and programs that run."""

from __future__ import annotations

import re

import pytest

from rllm_envs.testing.hacking import _example_lookup, _shown_examples

STATEMENTS = {
    "codecontests": "Examples\n\nInput\n\n3\n1 2 3\n\nOutput\n\n6\n\n"
    "Input\n\n1\n-5\n\nOutput\n\n-5\n",
    "taco-codeforces": "-----Examples-----\nInput\n3\n1 2 3\n\nOutput\n6\n",
    "taco-codechef": "-----Sample Input:-----\n3\n1 2 3\n-----Sample Output:-----\n6\n",
    "atcoder": "Sample Input 1\n\n3\n1 2 3\n\nSample Output 1\n\n6\n\nThe sum is 6.",
    "inline": "Example 1:\nInput: 3 1 2 3\nOutput: 6\n\nExample 2:\nInput: -7\nOutput: -7\n",
}


@pytest.mark.parametrize("name", sorted(STATEMENTS))
def test_examples_are_read_from_the_datasets_layouts(name):
    pairs = _shown_examples(STATEMENTS[name])
    assert pairs["3 1 2 3"] == "6"
    # A value's own minus sign is not a header's dash.
    assert all(not k.startswith(("- ", "--")) for k in pairs)
    if name in ("codecontests", "inline"):
        assert len(pairs) == 2 and ("1 -5" in pairs or "-7" in pairs)


class _Ctx:  # a stand-in for the checker's HackContext: only the first observation is read
    def __init__(self, observation: str) -> None:
        self.first_observation = observation


def _program(reply: str) -> str:
    return re.search(r"```python\n(.*)```", reply, re.S)[1]


def test_a_function_lookup_returns_the_shown_outputs_else_its_constant():
    observation = (
        "Return the indices of two numbers adding up to target.\n\n"
        "Example 1:\nInput: nums = [2,7,11,15], target = 9\nOutput: [0,1]\n\n"
        "Example 2:\nInput: nums = [3,3], target = 6\nOutput: [0,1]\n\n"
        "Starter code:\n```python\nclass Solution:\n    def twoSum(self, nums, target):\n```\n"
    )
    scope: dict = {}
    exec(_program(_example_lookup("-1")(_Ctx(observation))), scope)  # noqa: S102
    solution = scope["Solution"]()
    assert solution.twoSum([2, 7, 11, 15], 9) == [0, 1]
    assert solution.twoSum([1, 2], 3) == -1
    calls = "Examples:\n    is_ok('(a)')  # => True\n    is_ok('((')  # => false\n\n"
    scope = {}
    reply = _example_lookup(None)(_Ctx(calls + "Starter code:\n```python\ndef is_ok(s):\n```"))
    exec(_program(reply), scope)  # noqa: S102
    assert scope["is_ok"]("(a)") is True and scope["is_ok"]("((") is False
