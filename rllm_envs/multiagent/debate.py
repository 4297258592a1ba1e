"""``rllm/Debate-v1``: agents answer a math problem, read each other's answers, and revise."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from rllm_envs.demonstrations import copied_demonstration
from rllm_envs.multiagent.base import AgentOutcome, MultiAgentTextEnv
from rllm_envs.multiagent.mathtasks import (
    ANSWER_FORMAT,
    Decoys,
    boxed,
    check_count,
    check_math_task,
    clip_middle,
    grade,
    majority_answer,
    math_tasks,
)
from rllm_envs.tasks import Task

__all__ = ["DebateEnv", "HEURISTIC_ACCURACY", "env", "parallel_env"]

#: How often the simulated fallible first answer of the heuristic policy is right.
HEURISTIC_ACCURACY = 0.5


class DebateEnv(MultiAgentTextEnv):
    r"""Debaters answer a math problem, see each other's answers for some rounds, and revise.

    ## Description
    Multi-agent debate as a PettingZoo ``ParallelEnv`` (the AEC form comes from
    ``rllm_envs.make_aec``). One role, ``debater`` (agents ``debater_0`` ...
    ``debater_{n-1}``): in round 1 every debater answers the problem alone; in each later round
    every debater sees all answers of the previous round (its own marked as such) and gives a
    revised answer. All debaters act at every step (one step = one round). The answers of the
    final round are scored. Problems and grading are :mod:`rllm_envs.math`'s, so the task is a
    pure function of ``(task_seed, index, difficulty)``.

    ## Observation
    Round 1: the problem and the answer format. Later rounds: the problem, every debater's
    reply of the previous round (each cut to ``max_response_chars``, keeping its start and
    end), how many rounds are left and the answer format. After the last round: the reference
    answer and the agent's result.

    ## Action
    A solution ending with the final answer in ``\boxed{...}`` (what
    ``rllm_envs.math.extract_answer`` reads), every round.

    ## Reward
    Per agent, the weighted sum of components (``reward_weights``): ``correct`` (weight 1.0) is
    the grade in [0, 1] of the debater's final-round answer (``rllm_envs.math.score_response``
    with the problem: only the value in final form counts, so a copy of the problem's
    expression or an answer with arithmetic left in it scores 0; 0 in earlier rounds);
    ``round_correct`` (weight 0.0) is the mean grade of the debater's answers over all
    rounds, paid at the final round (0 before: a per-round grade would tell a debater
    whether its current answer is right while it can still change it); ``invalid_action``
    (weight 0.0, log only) is 1 for a reply with no final answer
    (it pays nothing: it only logs).

    A debater that adopts another's answer is paid for it: revising toward a better-argued
    answer is what debate is for, and a rule paying only answers a debater stated in round 1
    would pay against every persuaded revision. What a copier cannot do is earn for nothing:
    it is right only where another debater gave the right answer in the round it copied
    from, and earns 0 where no debater solves the problem (self-play, every debater the same
    copying policy). The heuristic debaters follow only a strict majority, so a lone guess
    sways none of them (when they broke ties by position, a copier that never read the
    problem out-earned them: session 17, att29f). Another episode's answer earns nothing, as
    everywhere, and so does a copy of the worked example an agent shows
    (:mod:`rllm_envs.demonstrations`), right or not: 0 in every component, flagged in
    ``info["copied_demonstration"]``.

    ## Episode End
    Terminates for every debater after ``n_rounds`` rounds. No truncation.

    ## Information
    The common keys of :mod:`rllm_envs.multiagent.base` (``is_correct``: the debater's latest
    answer is correct, from the final round on; ``False`` before) plus ``round`` (rounds
    played), ``n_rounds`` and, on ``step``, ``answer`` (this debater's extracted answer or
    ``None``) and ``answers`` (every debater's extracted answer of this round, in agent
    order); at the final round also ``score`` (the grade of its final answer) and
    ``round_scores`` (its grade in each round, in order). No grade reaches a debater before
    the debate ends.

    ## Arguments
    - ``n_debaters`` (int 2-8, default 3): number of debater agents.
    - ``n_rounds`` (int 1-10, default 3): answering rounds (1 = independent answers only).
    - ``difficulty`` (int 1-5, default 1): difficulty of procedural problems (``rllm_envs.math``).
    - ``task_seed`` (int, default 0): seed of the procedural task universe.
    - ``families`` (list of str, optional): restrict procedural problems to these
      ``rllm_envs.math.FAMILIES`` (arithmetic, fractions, linear_equation, ...).
    - ``dataset``, ``split``, ``field_map``: a problem dataset instead of procedural problems,
      as in ``rllm/SolverJudge-v1``.
    - ``max_response_chars`` (int >= 200, default 2000): each reply shown to the others is cut
      to this many characters.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.multiagent.base.MultiAgentTextEnv`.

    ## Version History
    - v0: Initial version.
    - v1: answers are graded as Math-v1 grades them (the value in final form), on tasks of
      the held-out universes.
      Since then, grades (``is_correct``, ``score``, ``round_correct``) reach a debater only
      at the final round: after each earlier round they told it whether its answer was
      right, so it could keep a right one and switch a wrong one.
      A reply that copies the worked example earns 0 even where its answer is right (it
      was paid on a task whose answer was the example's).
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": "rllm_debate_v1"}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "correct": 1.0,
        "round_correct": 0.0,
        "invalid_action": 0.0,
    }
    grading_info_keys: ClassVar[tuple[str, ...]] = ("score", "round_scores")

    def __init__(
        self,
        *,
        n_debaters: int = 3,
        n_rounds: int = 3,
        difficulty: int = 1,
        task_seed: int = 0,
        families: Sequence[str] | None = None,
        dataset: str | None = None,
        split: str | None = None,
        field_map: Mapping[str, str] | None = None,
        max_response_chars: int = 2000,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.n_debaters = check_count("n_debaters", n_debaters, 2, 8)
        self.n_rounds = check_count("n_rounds", n_rounds, 1, 10)
        self.max_response_chars = check_count("max_response_chars", max_response_chars, 200, 10**6)
        super().__init__(
            tasks=math_tasks(
                difficulty=difficulty,
                task_seed=task_seed,
                families=families,
                dataset=dataset,
                split=split,
                field_map=field_map,
            ),
            possible_agents=[f"debater_{i}" for i in range(self.n_debaters)],
            reward_weights=reward_weights,
            render_mode=render_mode,
        )
        self.round = 0
        self.responses: list[str] = []
        self.answers: list[str | None] = []
        self.scores: list[float] = []
        self.round_scores: dict[str, list[float]] = {}

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        check_math_task(task)

    def _start(self, task: Task) -> None:
        self.decoys = Decoys(self.tasks, task, from_source=self.task_index is not None)
        self.round = 0
        self.responses, self.answers, self.scores = [], [], []
        self.round_scores = {a: [] for a in self.possible_agents}

    def _role(self, agent: str) -> str:
        return "debater"

    def _acting_agents(self) -> list[str]:
        return list(self.agents) if self.round < self.n_rounds else []

    def _act(self, actions: dict[str, str]) -> tuple[dict[str, AgentOutcome], set[str]]:
        assert self.task is not None
        gold = str(self.task["answer"])
        self.round += 1
        final = self.round >= self.n_rounds
        problem = str(self.task["problem"])
        graded = {agent: grade(actions[agent], gold, problem) for agent in self.possible_agents}
        copied: dict[str, str] = {}
        for agent, (score, answer, _reason) in graded.items():
            # A copy of the worked example earns nothing, right answer or not (its answer alone
            # is a constant, paid where it is right).
            name = copied_demonstration(actions[agent], correct=score >= 1.0)
            if name is not None:
                copied[agent] = name
                graded[agent] = (0.0, answer, f"the reply copies the worked example ({name})")
        self.responses = [actions[a] for a in self.possible_agents]
        self.answers = [graded[a][1] for a in self.possible_agents]
        self.scores = [graded[a][0] for a in self.possible_agents]
        outcomes = {}
        for agent, (score, answer, reason) in graded.items():
            history = self.round_scores[agent]
            history.append(score)
            # Grades are paid and told at the final round only (see "Reward").
            outcomes[agent] = AgentOutcome(
                {
                    "correct": score if final else 0.0,
                    "round_correct": sum(history) / len(history) if final else 0.0,
                    "invalid_action": float(reason is not None and agent not in copied),
                },
                correct=score >= 1.0,
                invalid_reason=reason,
                info={
                    "answer": answer,
                    "answers": list(self.answers),
                    **({"copied_demonstration": copied[agent]} if agent in copied else {}),
                    **({"score": score, "round_scores": list(history)} if final else {}),
                },
            )
        return outcomes, set(self.possible_agents) if final else set()

    def _observe(self, agent: str) -> str:
        assert self.task is not None
        me = self.possible_agents.index(agent)
        header = (
            f"You are debater {me + 1} of {self.n_debaters}. Together you answer a math problem "
            f"over {self.n_rounds} round(s); after each round everyone sees everyone's answers "
            "and may revise. Only the answers of the last round are scored."
        )
        lines = [header, "", f"Problem: {self.task['problem']}", ""]
        if self.round > 0:
            lines.append(f"Answers of round {self.round}:")
            for k, response in enumerate(self.responses):
                who = "You" if k == me else f"Debater {k + 1}"
                shown = clip_middle(response, self.max_response_chars).strip() or "(empty reply)"
                lines += [f"=== {who} ===", shown, ""]
        if self.round >= self.n_rounds:
            verdict = "correct" if self.scores[me] >= 1.0 else "not correct"
            lines.append(
                f"The debate is over. Your final answer {self.answers[me]!s} is {verdict}; the "
                f"reference answer is {self.task['answer']}."
            )
            return "\n".join(lines)
        left = self.n_rounds - self.round
        if self.round == 0:
            lines.append("Round 1: solve the problem on your own. Reason step by step.")
        else:
            lines.append(
                f"Round {self.round + 1} ({left} left): weigh the other answers against yours, "
                "point out mistakes, and give your revised answer."
            )
        if left == 1:
            lines.append("This is the last round: your answer now is the one that is scored.")
        lines.append(ANSWER_FORMAT)
        return "\n".join(lines)

    def _info(self, agent: str, acting: set[str]) -> dict[str, Any]:
        return {**super()._info(agent, acting), "round": self.round, "n_rounds": self.n_rounds}

    def _render_text(self) -> str:
        assert self.task is not None
        parts = [f"Problem: {self.task['problem']} (reference: {self.task['answer']})"]
        parts.append(f"Round {self.round}/{self.n_rounds}")
        for agent, answer, score in zip(
            self.possible_agents, self.answers, self.scores, strict=False
        ):
            parts.append(f"{agent}: answer {answer!s}, score {score:g}")
        return "\n".join(parts)

    # ---------------------------------------------------------------- scripted policies

    def oracle_action(self, agent: str) -> str:
        """The reference answer, every round."""
        assert self.task is not None
        return boxed(str(self.task["answer"]))

    def heuristic_action(self, agent: str, rng: np.random.Generator) -> str:
        """Round 1: a simulated fallible answer. Later: the previous round's majority answer.

        The first answer is right with probability :data:`HEURISTIC_ACCURACY` (it reads the
        reference to simulate a fallible model); revisions follow a strict majority of the
        previous round (two or more, more than any other answer), which does not peek, and
        keep their own answer without one.
        """
        assert self.task is not None
        if self.round > 0:
            pick = majority_answer(self.answers, strict=True)
            own = self.answers[self.possible_agents.index(agent)]
            if pick is not None or own is not None:
                return boxed(str(self.answers[pick] if pick is not None else own))
        gold = str(self.task["answer"])
        return boxed(gold if rng.random() < HEURISTIC_ACCURACY else self.decoys.draw(rng))

    def random_action(self, agent: str, rng: np.random.Generator) -> str:
        """A random integer answer."""
        return boxed(str(int(rng.integers(-100, 1000))))


def parallel_env(**kwargs: Any) -> DebateEnv:
    """The parallel (PettingZoo ``ParallelEnv``) form; kwargs as :class:`DebateEnv`."""
    return DebateEnv(**kwargs)


def env(**kwargs: Any) -> Any:
    """The AEC form (PettingZoo ``parallel_to_aec``); kwargs as :class:`DebateEnv`."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(DebateEnv(**kwargs))
