"""What a task's statement shows is searched at a cost linear in the statement.

A client's task (``reset(options={"task": ...})``, a loaded dataset) must not buy host CPU
at reset: att31a's statement of repeated tokens with a hidden test whose input is two
tokens and 200,000 blank lines made the search quadratic (blank lines widened the window,
and every place in it recounted the window), 17 s of CPU for one test at 10,000 tokens.
Work is counted in tokens read, not timed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from rllm_envs.code import judge


class _Counted(list):
    """A statement that counts the tokens read from it (slices by their length)."""

    reads = 0

    def __getitem__(self, key):  # type: ignore[override]
        got = super().__getitem__(key)
        type(self).reads += len(got) if isinstance(key, slice) else 1
        return got

    def __iter__(self):
        for token in super().__iter__():
            type(self).reads += 1
            yield token


def _hostile(n: int) -> tuple[Sequence[str], dict[str, str]]:
    statement = judge._statement_tokens("z " + "w " * 100 + "x " * n)
    return statement, {"input": "x" + "\n" * 200_000 + "x", "output": "z"}


@pytest.mark.parametrize("n", [2_000, 8_000])
def test_a_window_widened_by_blank_lines_is_searched_in_linear_work(n):
    statement, test = _hostile(n)
    counted = _Counted(statement)
    _Counted.reads = 0
    judge._shown_in(counted, test, judge._Budget())
    assert _Counted.reads <= 20 * len(statement), (n, _Counted.reads)


def _shortest_runs(haystack, needle, width):
    """By definition: at each place whose last ``width`` tokens hold the needle, the
    shortest run ending there that holds it."""
    from collections import Counter

    need = Counter(needle)
    for at in range(len(haystack)):
        for first in range(at, max(0, at - width + 1) - 1, -1):
            held = Counter(haystack[first : at + 1])
            if all(held[t] >= k for t, k in need.items()):
                yield first, at + 1
                break


def test_the_unordered_match_finds_the_shortest_run_ending_at_each_place():
    import random

    rng = random.Random(0)
    for _ in range(300):
        haystack = [rng.choice("abcde") for _ in range(rng.randint(1, 40))]
        needle = [rng.choice("abcd") for _ in range(rng.randint(1, 4))]
        slack = rng.randint(0, 6)
        got = list(judge._spans(haystack, needle, slack, ordered=False))
        assert got == list(_shortest_runs(haystack, needle, len(needle) + slack))


def test_a_search_past_its_budget_leaves_the_task_without_unseen_tests():
    statement = "x " * 5_000 + "z"
    hidden = [{"input": f"x y{k}", "output": "z"} for k in range(400)]
    task = {"question": statement, "kind": "stdin", "hidden_tests": hidden}
    task["public_tests"] = [{"input": "q", "output": "q"}]
    assert len(judge._statement_tokens(statement)) * len(hidden) <= judge.MAX_SEARCH_WORK
    budget = judge._Budget(10_000)
    with pytest.raises(judge._TooCostly):
        for test in hidden:
            judge._shown_in(judge._statement_tokens(statement), test, budget)


def test_lines_that_cannot_be_json_are_not_decoded(monkeypatch):
    calls = []
    loads = json.loads
    monkeypatch.setattr(judge.json, "loads", lambda text: calls.append(text) or loads(text))
    flat = judge._flat("5 3\n\n" * 1000 + '[1, "a"]\nnull\n-2.50\nabc')
    assert calls == ['[1, "a"]', "null", "-2.50"]
    assert flat.endswith("1 a\nNone\n-2.5\nabc")


def test_hidden_tests_made_of_the_examples_are_looked_up_not_compared_pairwise(monkeypatch):
    """att31c: 250 examples and 250 hidden tests sharing all but one token and an answer cost
    11 s of host CPU at reset: each hidden test was sorted against every example."""
    base = " ".join(str(10 + i % 89) for i in range(200))
    public = [{"input": f"{base} {1000 + i}\n", "output": f"{7 + i % 2}\n"} for i in range(60)]
    hidden = [{"input": f"{base} {5000 + i}\n", "output": f"{7 + i % 2}\n"} for i in range(60)]
    task = {"question": "Print the answer.", "kind": "stdin"}
    task |= {"public_tests": public, "hidden_tests": hidden}
    sorts: list[int] = []
    monkeypatch.setattr(
        judge, "sorted", lambda *a, **k: sorts.append(1) or sorted(*a, **k), raising=False
    )
    assert judge._unseen(task) == list(range(60))
    assert len(sorts) <= 2 * (len(public) + len(hidden)), len(sorts)


def test_a_tasks_unseen_tests_are_found_once(monkeypatch):
    """A dataset's task is searched at load and a client's at reset; its first step reuses it."""
    calls: list[int] = []
    search = judge._unseen
    monkeypatch.setattr(judge, "_unseen", lambda task: calls.append(1) or search(task))
    monkeypatch.setattr(judge, "_UNSEEN_FOUND", {})
    task = {"question": "Print a + b.", "kind": "stdin"}
    task |= {"public_tests": [{"input": "1 1\n", "output": "2\n"}]}
    task |= {
        "hidden_tests": [
            {"input": "20 22\n", "output": "42\n"},
            {"input": "3 4\n", "output": "7\n"},
        ]
    }
    assert judge.has_unseen_hidden_test(task)
    assert judge.unseen_hidden_tests(task) == [0, 1]
    assert judge.unseen_hidden_tests(dict(task)) == [0, 1]
    assert calls == [1]
    changed = {**task, "hidden_tests": task["hidden_tests"][:1]}
    assert judge.unseen_hidden_tests(changed) == [0] and calls == [1, 1]


def test_only_short_tokens_are_remembered():
    """Tokens are cached for speed; a client's long unique words must not fill host memory."""
    before = judge._canonical_short.cache_info().currsize
    assert judge._canonical("W" * 100 + "unique") == "w" * 100 + "unique"
    assert judge._canonical_short.cache_info().currsize == before
    assert judge._canonical("0.500") == "0.5" and judge._canonical("007") == "7"
