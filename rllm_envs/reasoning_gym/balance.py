"""Answer balancing for ``rllm/ReasoningGym-v0``: no single answer is a large share of tasks.

Some reasoning-gym families skew: about a third of ``shortest_path``'s tasks answer
``infeasible``, ``count_bits`` answers are binomial, and families with a few labels rarely
draw them evenly. A policy that always gives the common answer then earns that share without
solving anything. :class:`BalancedTasks` measures the answer shares on the stream its tasks
come from (the first :data:`SAMPLE` tasks of its own universe, drawn unbalanced: the universe
split and the read-off redraws shape that stream, so probes of the raw generator would not
show it) and balances it with :class:`rllm_envs.tasks.AnswerBalance` slots: each common answer
holds at most ``1 / slots`` of the tasks, ``slots = min(20, labels)``. So a family with two
labels is balanced to one half each, one with three to a third, and an open-answer family
keeps no common answer above :data:`MAX_SHARE`, whatever the sample's estimate. Task ``i``'s
slot is a hash of ``(task_seed, i)``: task ``i`` stays a pure function of the arguments.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks
from rllm_envs.tasks import MAX_ANSWER_SHARE, AnswerBalance, answer_balance, answer_label

__all__ = ["BalancedTasks", "MAX_SHARE", "SAMPLE", "answer_key"]

#: The largest share a common answer keeps in an open-answer family.
MAX_SHARE = MAX_ANSWER_SHARE
#: Unbalanced tasks of the source's own universe that estimate its answer shares.
SAMPLE = 64

#: The answer of a task as compared across tasks (kept under its old name).
answer_key = answer_label


class BalancedTasks(ReasoningGymTasks):
    """:class:`~rllm_envs.reasoning_gym.tasks.ReasoningGymTasks` with balanced answers.

    See the module docstring. ``answer_shares()`` reports the shares the sample showed and
    ``answer_balance()`` the slots applied (``None``: no answer is common).
    """

    def __init__(self, dataset: str, **kwargs: Any) -> None:
        super().__init__(dataset, **kwargs)
        self._plan: tuple[AnswerBalance | None] | None = None
        self._shares: dict[str, float] = {}

    def answer_shares(self) -> dict[str, float]:
        """Answer shares among the sample of the source's stream (before balancing)."""
        self.answer_balance()
        return dict(self._shares)

    def answer_balance(self) -> AnswerBalance | None:
        """The slots that balance this source's answers (measured once, on its own stream)."""
        if self._plan is None:
            self._plan = (None,)  # the sample itself is drawn unbalanced
            labels = [answer_label(self.task(i)) for i in range(min(SAMPLE, self.size))]
            counts = Counter(k for k in labels if k is not None)
            total = sum(counts.values())
            self._shares = {a: c / total for a, c in counts.most_common()} if total else {}
            self._plan = (answer_balance(labels) if self.size > 1 else None,)
        return self._plan[0]

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_plan"] = None  # measured again (its sample reads the rebuilt datasets)
        return state
