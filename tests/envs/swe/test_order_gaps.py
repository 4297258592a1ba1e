"""Membership checks do not depend on a list's order (issue #30, session 10).

``assert "b" in tags(text)`` used to observe ``tags(text)`` in order. The order of a list
built from a set of strings comes from string hashing, which is seeded afresh in every
sandbox (its interpreter ignores ``PYTHONHASHSEED``), and a fix may order its result
differently from the reference: an honest fix failed. The container is now observed as a
multiset (``observe(..., unordered=True)``): every element must still equal the reference's.
"""

from __future__ import annotations

import pytest

from rllm_envs.swe import executor
from rllm_envs.swe.probe import probe_report, same

from .test_attacks_s8 import _run
from .test_verdict_gaps import _call, _task

TAGS = _task(
    "words",
    "tags",
    "def tags(text):\n    return text.split()[:1]\n",
    "def tags(text):\n    return sorted(set(text.split()))\n",
    "from words.tags import tags\n\ndef test_one():\n    assert tags('a') == ['a']\n",
    "\nimport unittest\n\ndef test_member():\n    assert 'b' in tags('a b c')\n"
    "    assert 'z' not in tags('a b c')\n\n"
    "class TestTags(unittest.TestCase):\n    def test_in(self):\n"
    "        self.assertIn('c', tags('c a b'))\n",
)
#: The fix ordered another way: ['c', 'b', 'a'] where the reference gives ['a', 'b', 'c'].
REVERSED = _call(
    "replace",
    path="words/tags.py",
    old="return text.split()[:1]",
    new="return sorted(set(text.split()), reverse=True)",
)


def test_a_fix_that_orders_differently_passes_a_membership_check():
    # Old code: the list was compared in order (0 with trust host).
    reward, info = _run(TAGS, REVERSED)
    assert reward == 1.0 and info["verdict_trust"] == "host", info
    assert _run(TAGS)[0] == 0.0


@pytest.mark.parametrize(
    "new",
    [
        "return ['b', 'c']",  # holds the member, not the same elements
        "return ['a', 'b', 'c', 'c']",  # one element too many
        "return ('a', 'b', 'c')",  # a tuple, not a list
        # (A list subclass defining none of the methods a check calls holds the same
        # elements as the fix and passes, as under pytest: s40, att40c.)
    ],
)
def test_other_elements_or_types_still_fail(new):
    cheat = _call("replace", path="words/tags.py", old="return text.split()[:1]", new=new)
    reward, info = _run(TAGS, cheat)
    assert reward == 0.0 and info["fail_to_pass"] < 1.0, info


def test_the_member_is_not_in_the_probe():
    source = "def test_a():\n    assert 'member-b' in tags('a b')\n"
    text, notes = probe_report(source)
    assert not notes and "member-b" not in text
    assert "__rllm_observe__(tags('a b'), op='operated', host=0, unordered=True)" in text


def test_unordered_observations_compare_as_multisets():
    executor._OBSERVED_LIST.clear()
    for value in (["a", "b", "c"], ["c", "a", "b"], ["a", "b"], ("a", "b", "c"), "abc"):
        executor.observe(value, unordered=True)
    abc, cab, ab, tup, text = executor._OBSERVED_LIST
    executor._OBSERVED_LIST.clear()
    assert same(abc, cab) and not same(abc, ab) and not same(abc, tup)
    assert text == executor.observed("abc")  # a text keeps its order
