"""Answer balancing for ``rllm/ReasoningGym-v0``: no single answer is a large share of tasks.

Some reasoning-gym families skew: about a third of ``shortest_path``'s tasks answer
``infeasible``, and families with a few labels rarely draw them evenly. A policy that always
gives the common answer then earns that share without solving anything, more than a random
guess from the answer distribution earns. :class:`BalancedTasks` redraws such tasks: it
estimates the answer shares on the family's first :data:`PROBES` draws and keeps a draw whose
answer is over-represented only with the probability that brings every answer down to the
target share ``max(1 / labels, MAX_SHARE)`` (``labels``: distinct answers among the probes).
So a family with two labels is balanced to one half each, one with three to a third, and an
open-answer family keeps no answer above :data:`MAX_SHARE`. The coin of each draw is a hash of
``(task_seed, index, attempt)``: task ``i`` stays a pure function of the arguments.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from collections import Counter
from collections.abc import Mapping
from typing import Any

from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks

__all__ = ["BalancedTasks", "MAX_SHARE", "PROBES"]

#: The largest share an answer keeps in an open-answer family.
MAX_SHARE = 0.05
#: Draws that estimate a family's answer shares.
PROBES = 64
#: Redraws of one draw before a family that cannot be balanced keeps it.
REDRAWS = 16
#: Attempt numbers of the redraws start here (far above the universe loop's own attempts).
_REDRAW_ATTEMPT = 1 << 20


def answer_key(task: Mapping[str, Any]) -> str | None:
    """The answer of ``task`` as compared across tasks (``None``: no reference answer)."""
    answer = task.get("answer")
    if answer is None:
        return None
    if not isinstance(answer, str):
        answer = json.dumps(answer, sort_keys=True, default=str)
    return " ".join(unicodedata.normalize("NFKC", answer).lower().split())


def keep_probabilities(shares: Mapping[str, float], labels: int) -> dict[str, float]:
    """Per over-represented answer, the probability of keeping a draw of it.

    Water-filling: each answer's weight is capped at ``c``, with ``c`` chosen so the largest
    capped weight is the target share ``max(1 / labels, MAX_SHARE)`` of the capped total.
    """
    target = max(1.0 / max(labels, 1), MAX_SHARE)
    if not shares or max(shares.values()) <= target:
        return {}
    low, high = 0.0, max(shares.values())
    for _ in range(60):  # bisect the largest c: share(c) = c / sum(min(s, c)) grows with c
        c = (low + high) / 2
        if c / sum(min(s, c) for s in shares.values()) > target * (1 + 1e-9):
            high = c
        else:
            low = c
    return {a: low / s for a, s in shares.items() if s > low * (1 + 1e-9)}


class BalancedTasks(ReasoningGymTasks):
    """:class:`~rllm_envs.reasoning_gym.tasks.ReasoningGymTasks` with balanced answers.

    See the module docstring. ``answer_shares()`` reports the shares the probes showed and
    ``keep`` the probabilities the balancing applies.
    """

    def __init__(self, dataset: str, **kwargs: Any) -> None:
        super().__init__(dataset, **kwargs)
        self._keep: dict[str, float] | None = None
        self._shares: dict[str, float] = {}

    def answer_shares(self) -> dict[str, float]:
        """Answer shares among the family's probe draws (before balancing), largest first."""
        self._balance()
        return dict(self._shares)

    def _balance(self) -> dict[str, float]:
        if self._keep is None:
            n = min(PROBES, self.size)
            keys = [answer_key(super(BalancedTasks, self)._draw(i, 0)) for i in range(n)]
            counts = Counter(k for k in keys if k is not None)
            total = sum(counts.values())
            self._shares = {a: c / total for a, c in counts.most_common()} if total else {}
            self._keep = keep_probabilities(self._shares, len(counts)) if total >= 8 else {}
        return self._keep

    def _draw(self, index: int, attempt: int) -> dict[str, Any]:
        draw = super()._draw(index, attempt)
        keep = self._balance()
        if not keep or self.size == 1:
            return draw
        for extra in range(REDRAWS):
            chance = keep.get(answer_key(draw) or "", 1.0)
            if chance >= 1.0 or _coin(self.task_seed, index, attempt, extra) < chance:
                return draw
            draw = super()._draw(index, _REDRAW_ATTEMPT + attempt * REDRAWS + extra)
        return draw

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_keep"] = None  # recomputed (its probes read the rebuilt datasets)
        return state


def _coin(task_seed: int, index: int, attempt: int, extra: int) -> float:
    """A uniform number in [0, 1) that is a pure function of the draw."""
    digest = hashlib.blake2b(f"{task_seed}:{index}:{attempt}:{extra}".encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") / 2**64
