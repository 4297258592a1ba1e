"""Answer balancing for ``rllm/ReasoningGym-v0``: no single answer is a large share of tasks.

Some reasoning-gym families skew: about a third of ``shortest_path``'s tasks answer
``infeasible``, ``count_bits`` answers are binomial, ``letter_counting`` answers 1 a third of
the time, and families with a few labels rarely draw them evenly. A policy that always gives
the common answer then earns that share without solving anything. :class:`BalancedTasks`
measures the answer shares on the stream its tasks come from (its own universe's first tasks,
drawn unbalanced: the universe split and the read-off redraws shape that stream, so probes of
the raw generator would not show it): :data:`SAMPLE` tasks, :data:`LARGE_SAMPLE` where an
answer repeats three times among them, so that an answer's share is known well enough to
decide whether it needs a slot. It balances them with :class:`rllm_envs.tasks.AnswerBalance` slots
(:func:`rllm_envs.tasks.answer_balance`): each common answer holds ``1 / slots`` of the tasks (to
one task in a training universe, on average in an evaluation one), the rarer answers share the
other slots. So a family with two labels is balanced to one
half each, one with three to a third, a long-tailed one to ``1 / slots`` with a slot per answer of
reasonable mass, and an open-answer family keeps no common answer above :data:`MAX_SHARE`.
``propositional_logic``'s tasks are balanced by their reference conclusion up to equivalence
(:func:`rllm_envs.reasoning_gym.tasks.task_label`), measured on the training stream for every
universe. Task ``i``'s slot is keyed by the arguments (:meth:`ReasoningGymTasks.answer_slot`,
:meth:`rllm_envs.tasks.AnswerBalance.target`): task ``i`` stays a pure function of the
arguments, and which tasks share a slot is the key's secret.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks, task_label
from rllm_envs.tasks import (
    MAX_ANSWER_SHARE,
    AnswerBalance,
    answer_balance,
    answer_label,
    seed_universe,
)

__all__ = ["BalancedTasks", "LARGE_SAMPLE", "MAX_SHARE", "SAMPLE", "answer_key"]

#: The largest share a common answer keeps in an open-answer family.
MAX_SHARE = MAX_ANSWER_SHARE
#: Unbalanced tasks of the source's own universe that estimate its answer shares.
SAMPLE = 64
#: The sample where an answer repeats three times in the first :data:`SAMPLE` (a common
#: answer's share, and whether a rarer answer can fill a slot, known to a few percent).
LARGE_SAMPLE = 512
#: Plans already measured in this process, by family, task seed, size and config.
_PLANS: dict[tuple[str, int, int, str], tuple[AnswerBalance | None, dict[str, float]]] = {}

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
            ident = self._ident()
            if ident not in _PLANS:
                _PLANS[ident] = self._measure()
            plan, self._shares = _PLANS[ident]
            self._plan = (plan,)
        return self._plan[0]

    def _measure(self) -> tuple[AnswerBalance | None, dict[str, float]]:
        source: ReasoningGymTasks = self
        if self.dataset_name == "propositional_logic" and seed_universe(self.task_seed) == "eval":
            # Its universe split (by question text) is blind to the reference formula, whose
            # shares the training stream shows at a seventh of the evaluation stream's draws.
            source = ReasoningGymTasks(
                self.dataset_name, size=self.size, task_seed=0, config=self.config
            )
        labels = [task_label(source.task(i)) for i in range(min(SAMPLE, self.size))]
        counts = Counter(k for k in labels if k is not None)
        if counts and max(counts.values()) >= 3:  # some answer repeats: measure it well
            more = range(len(labels), min(LARGE_SAMPLE, self.size))
            labels += [task_label(source.task(i)) for i in more]
        counts = Counter(k for k in labels if k is not None)
        total = sum(counts.values())
        shares = {a: c / total for a, c in counts.most_common()} if total else {}
        return (answer_balance(labels) if self.size > 1 else None), shares

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_plan"] = None  # measured again (its sample reads the rebuilt datasets)
        return state
