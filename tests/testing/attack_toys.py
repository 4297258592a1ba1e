"""The toy envs of an outside reward-hacking attack, as it wrote them (public API only).

``AlwaysPays``: every reply is correct. ``ShapedPays``: only the truth is correct, but a
weight-1 ``format`` component pays any reply with a digit. ``ZeroWins``: the literal
``<answer>0</answer>`` is always correct (as a grader crediting a matching prefix does).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from rllm_envs.core import TextEnv, Transition
from rllm_envs.tasks import ProceduralTasks, Task

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


def _gen(rng: np.random.Generator) -> Task:
    a, b = int(rng.integers(10, 99)), int(rng.integers(10, 99))
    return {"id": f"{a}*{b}", "question": f"What is {a} times {b}?", "answer": str(a * b)}


class _Base(TextEnv):
    """Test env: a product of two numbers, answered in ``<answer>`` tags.

    ## Description
    Test only.

    ## Observation
    The question.

    ## Action
    ``<answer>n</answer>``.

    ## Reward
    ``correct``, ``format``.

    ## Episode End
    After one answer.

    ## Information
    The common keys.

    ## Arguments
    None.

    ## Version History
    - v0: test only.
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "format": 0.0}

    def __init__(self, **kw: Any) -> None:
        super().__init__(tasks=ProceduralTasks(_gen, name="toy", seed=0), max_turns=1, **kw)

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        return task["question"] + "\nAnswer inside <answer></answer>.", {}

    def oracle_action(self) -> str:
        return f"<answer>{self.task['answer']}</answer>"  # type: ignore[index]

    def _ans(self, action: str) -> str | None:
        found = _ANSWER.findall(action)
        return found[-1].strip() if found else None


class AlwaysPays(_Base):
    def _act(self, action: str) -> Transition:
        return Transition("ok", {"correct": 1.0, "format": 1.0}, terminated=True, correct=True)


class ShapedPays(_Base):
    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "format": 1.0}

    def _act(self, action: str) -> Transition:
        ok = self._ans(action) == self.task["answer"]  # type: ignore[index]
        fmt = float(any(c.isdigit() for c in action))
        return Transition("ok", {"correct": float(ok), "format": fmt}, terminated=True, correct=ok)


class ZeroWins(_Base):
    def _act(self, action: str) -> Transition:
        x = self._ans(action)
        ok = x == self.task["answer"] or x == "0"  # type: ignore[index]
        return Transition("ok", {"correct": float(ok), "format": 1.0}, terminated=True, correct=ok)


class InvalidNamedPays(_Base):
    """A paying component whose name reads like a penalty (``invalid_*``, positive weight)."""

    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "correct": 1.0,
        "invalid_format_ok": 1.0,
    }

    def _act(self, action: str) -> Transition:
        ok = self._ans(action) == self.task["answer"]  # type: ignore[index]
        return Transition(
            "ok", {"correct": float(ok), "invalid_format_ok": 1.0}, terminated=True, correct=ok
        )
