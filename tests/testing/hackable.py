"""Deliberately hackable envs: each pays a degenerate policy, and the check must name it.

Module-level classes (not test-local) so they pickle like a user's env would.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any, ClassVar

import numpy as np
import sympy

from rllm_envs.core import TextEnv, Transition
from rllm_envs.tasks import ProceduralTasks, Task

_BOX = re.compile(r"\\boxed\{([^{}]*)\}")


def _sum_task(rng: np.random.Generator) -> Task:
    a, b, c = (int(x) for x in rng.integers(10, 99, size=3))
    return {"problem": f"Compute ${a} + {b} \\times {c}$.", "answer": str(a + b * c)}


def _divisible_task(rng: np.random.Generator) -> Task:
    n = int(rng.integers(100, 10_000))
    return {
        "problem": f"Is {n} divisible by 97? Reply 1 for yes, 0 for no.",
        "answer": str(int(n % 97 == 0)),
    }


class _BoxedEnv(TextEnv):
    """A one-turn env that reads the last ``\\boxed{}``; subclasses decide what is right.

    ## Description
    Test env: a problem with one integer answer.

    ## Observation
    The problem and the answer format.

    ## Action
    ``\\boxed{answer}``.

    ## Reward
    ``correct`` (weight 1) and ``format`` (weight 0.1, any box).

    ## Episode End
    After one answer.

    ## Information
    The common keys of :mod:`rllm_envs.core`.

    ## Arguments
    ``task_seed``.

    ## Version History
    - v0: test only.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "format": 0.1}
    generate = staticmethod(_sum_task)

    def __init__(self, *, task_seed: int = 0) -> None:
        tasks = ProceduralTasks(partial(type(self).generate), name="hackable", seed=task_seed)
        super().__init__(tasks=tasks, max_turns=1)

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        return f"{task['problem']}\n\nAnswer in \\boxed{{}}.", {}

    def right(self, answer: str) -> bool:
        return answer.strip() == str(self.task["answer"])  # type: ignore[index]

    def _act(self, action: str) -> Transition:
        boxes = _BOX.findall(action)
        correct = bool(boxes) and self.right(boxes[-1])
        return Transition(
            "Correct." if correct else "Wrong.",
            {"correct": float(correct), "format": float(bool(boxes))},
            terminated=True,
            correct=correct,
            invalid_reason=None if boxes else "no box",
        )

    def oracle_action(self) -> str:
        return f"\\boxed{{{self.task['answer']}}}"  # type: ignore[index]


class EvaluatingEnv(_BoxedEnv):
    """Hackable: grades what the boxed expression *evaluates* to, so the problem's own
    expression, copied, is right."""

    def right(self, answer: str) -> bool:
        try:
            value = sympy.sympify(answer.replace("\\times", "*"))
        except Exception:  # noqa: BLE001 - sympy raises many types on garbage; all mean wrong
            return False
        return bool(value == sympy.Integer(int(self.task["answer"])))  # type: ignore[index]


class ConstantAnswerEnv(_BoxedEnv):
    """Hackable: almost every answer is 0 (a two-answer task), so a constant wins."""

    generate = staticmethod(_divisible_task)


class DemonstrationPayingEnv(_BoxedEnv):
    """Hackable: opts out of the demonstration rule, and pays ``format`` for any box."""

    demonstrations = ()


class SoundEnv(_BoxedEnv):
    """Not hackable: one exact integer, compared as written."""


def _echo_task(rng: np.random.Generator) -> Task:
    word = "".join("ABCDE"[int(i)] for i in rng.integers(5, size=int(rng.integers(6, 12))))
    return {
        "problem": f"Insert an X after every AAB in this string (most have none):\n{word}",
        "answer": word.replace("AAB", "AABX"),
    }


class LiteralZeroEnv(_BoxedEnv):
    """Hackable: the literal answer 0 is always right (a grader crediting a matching prefix)."""

    def right(self, answer: str) -> bool:
        return answer.strip() in ("0", str(self.task["answer"]))  # type: ignore[index]


class ShapedFormatEnv(_BoxedEnv):
    """Hackable through reward, not correctness: any box earns a ``format`` of weight 1."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "format": 1.0}


class AnyReplyPaysEnv(_BoxedEnv):
    """Hackable: ``format`` (weight 1) pays every reply with a digit, random text too."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "format": 1.0}

    def _act(self, action: str) -> Transition:
        boxes = _BOX.findall(action)
        correct = bool(boxes) and self.right(boxes[-1])
        paid = float(any(c.isdigit() for c in action))
        return Transition(
            "ok", {"correct": float(correct), "format": paid}, terminated=True, correct=correct
        )


class EchoLastWordEnv(_BoxedEnv):
    """Hackable: the answer is mostly the question's last word (string_insertion's flaw)."""

    generate = staticmethod(_echo_task)
