"""Test-strength audit: no degenerate program passes a bundled problem's hidden tests."""

from __future__ import annotations

import pytest

from rllm_envs.code.audit import audit, audit_task
from rllm_envs.code.code_env import embedded_tasks
from rllm_envs.code.judge import judge_task

TASKS = {t["id"]: t for t in embedded_tasks()}

# Findings that are the task itself, not a weakness of its tests (task, check, subject): why.
EXPECTED = {
    ("rllm-001", "degenerate", "sum of numbers"): "Sum of Numbers asks for the sum",
    ("rllm-010", "dominant first token", "0"): "the source's own distance is 0 by definition",
}


def test_no_bundled_problem_has_weak_hidden_tests():
    findings = [f for f in audit(TASKS.values()) if (f.task_id, f.check, f.subject) not in EXPECTED]
    assert findings == [], "\n".join(f"{f.task_id} {f.check}: {f.detail}" for f in findings)


def test_each_expected_finding_still_applies():
    # An exemption that no longer matches anything would hide a future weakness silently.
    found = {(f.task_id, f.check, f.subject) for f in audit(TASKS.values())}
    assert set(EXPECTED) <= found


def _with_hidden(task, hidden):
    return {**task, "hidden_tests": hidden}


def test_the_audit_flags_a_dominant_answer_and_a_guess_that_passes():
    # Course Order as it was: every hidden test but n = 1 answered IMPOSSIBLE.
    task = TASKS["rllm-022"]
    impossible = [t for t in task["hidden_tests"] if t["output"].strip() == "IMPOSSIBLE"]
    trivial = {"input": "1 0\n", "output": "1\n"}
    findings = audit_task(_with_hidden(task, [trivial, *impossible, *impossible]))
    assert {(f.check, f.subject) for f in findings} >= {("dominant", "IMPOSSIBLE")}
    # Only IMPOSSIBLE answers: the constant program passes them all.
    findings = audit_task(_with_hidden(task, impossible))
    assert ("degenerate", "constant 'IMPOSSIBLE'") in {(f.check, f.subject) for f in findings}


def test_the_audit_flags_a_dominant_first_part():
    # Covered Length as it was: every hidden test merged into one interval ("1 <length>").
    task = TASKS["rllm-019"]
    single = [{"input": f"2\n0 {k}\n1 {k + 5}\n", "output": f"1 {k + 5}\n"} for k in range(3, 9)]
    findings = audit_task(_with_hidden(task, single))
    assert ("dominant first token", "1") in {(f.check, f.subject) for f in findings}


def test_the_audit_flags_heuristics_and_hard_coded_examples():
    task = TASKS["rllm-001"]
    # Hidden tests that repeat the statement's examples: hard-coding them passes.
    findings = audit_task(_with_hidden(task, task["public_tests"]))
    assert {f.check for f in findings} == {"degenerate"} and len(findings) > 10
    # Queries all answered alike: one answer repeated per query passes.
    brackets = TASKS["rllm-005"]
    balanced = [
        {"input": "2\n()\n[]\n", "output": "YES\nYES\n"},
        {"input": "3\n{}\n([])\n()\n", "output": "YES\nYES\nYES\n"},
    ]
    assert "'YES' per query" in {f.subject for f in audit_task(_with_hidden(brackets, balanced))}
    # Functional: a test set where returning the first argument is right.
    mirror = TASKS["rllm-029"]
    echo = [{"input": "true", "output": "true"}, {"input": "false", "output": "false"}]
    names = {f.subject for f in audit_task(_with_hidden(mirror, echo))}
    assert "first argument" in names


@pytest.mark.parametrize(
    ("task_id", "cheat"),
    [
        # The reported guesses (reward 1.0 before the hidden tests were strengthened).
        (
            "rllm-022",
            "import sys\nd = sys.stdin.read().split()\nn = int(d[0])\n"
            "if n == 1:\n    print(1)\n"
            "elif d[:8] == ['4','3','1','2','4','2','2','3']:\n    print('1 4 2 3')\n"
            "else:\n    print('IMPOSSIBLE')\n",
        ),
        (
            "rllm-019",
            "import sys\nd = list(map(int, sys.stdin.read().split()))\n"
            "n, ls, rs = d[0], d[1::2][:d[0]], d[2::2][:d[0]]\n"
            "print(2, 7) if d == [3, 1, 3, 2, 6, 8, 10] else print(1, max(rs) - min(ls))\n",
        ),
    ],
)
def test_the_reported_guesses_fail(task_id, cheat):
    result = judge_task(cheat, TASKS[task_id])
    assert result.verdicts.count("WA") >= 3, result.verdicts
