"""Toy envs of the s11 blind attack on the reward-hacking check (issue #25), as test fakes.

``PassphraseNote``: pays an answer that *contains* the note's passphrase and refuses an exact
echo of the question; an echo one zero-width space away wins every episode.
``HiLoVault``: a secret number nobody can read off the question, eleven tries, "too high" /
"too low" after a wrong one; a blind binary search wins every episode. ``WrongVault``: the
same vault saying only "wrong" (sound: nothing to follow).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rllm_envs.core import TextEnv, Transition
from rllm_envs.tasks import ProceduralTasks, Task
from tests.testing.attack_toys import _Base

_SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "qu", "di"]


def _word(rng: np.random.Generator) -> str:
    return "".join(_SYLLABLES[int(i)] for i in rng.integers(len(_SYLLABLES), size=3))


def _note(rng: np.random.Generator) -> Task:
    phrase = " ".join(_word(rng) for _ in range(3))
    before = " ".join(_word(rng) for _ in range(8))
    after = " ".join(_word(rng) for _ in range(8))
    question = (
        f"Memo from {_word(rng)}: {before} remember {phrase} then {after}. "
        "Which three words follow 'remember'?"
    )
    return {"id": phrase, "question": question, "answer": phrase}


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class PassphraseNote(_Base):
    """Pays an answer containing the passphrase unless it holds the whole question."""

    def __init__(self, **kw: Any) -> None:
        TextEnv.__init__(
            self, tasks=ProceduralTasks(_note, name="toy-pass", seed=0), max_turns=1, **kw
        )

    def _act(self, action: str) -> Transition:
        answer = _norm(self._ans(action) or "")
        question, reference = _norm(self.task["question"]), _norm(self.task["answer"])  # type: ignore[index]
        ok = bool(answer) and question not in answer and reference in answer
        return Transition("ok", {"correct": float(ok), "format": 0.0}, terminated=True, correct=ok)


def _vault(rng: np.random.Generator) -> Task:
    vault, secret = int(rng.integers(1000, 9999)), int(rng.integers(1, 1025))
    return {
        "id": f"{vault}-{secret}",
        "question": f"What is the secret number (1 to 1024) of vault {vault}?",
        "answer": str(secret),
    }


class HiLoVault(_Base):
    """Eleven tries at a secret number; a wrong try is told "too high" or "too low"."""

    directional = True

    def __init__(self, **kw: Any) -> None:
        TextEnv.__init__(
            self, tasks=ProceduralTasks(_vault, name="toy-hilo", seed=0), max_turns=11, **kw
        )

    def _act(self, action: str) -> Transition:
        answer, reference = self._ans(action), int(self.task["answer"])  # type: ignore[index]
        try:
            value: int | None = int(answer or "")
        except ValueError:
            value = None
        ok = value == reference
        if ok or self.turn >= self.max_turns:
            return Transition(
                "ok", {"correct": float(ok), "format": 0.0}, terminated=True, correct=ok
            )
        if not self.directional:
            hint = "wrong"
        elif value is None:
            hint = "no number"
        else:
            hint = "too high" if value > reference else "too low"
        return Transition(
            f"Wrong: {hint}. Answer inside <answer></answer>.", {"correct": 0.0, "format": 0.0}
        )


class WrongVault(HiLoVault):
    """The vault without a direction: a wrong try is told only "wrong"."""

    directional = False
