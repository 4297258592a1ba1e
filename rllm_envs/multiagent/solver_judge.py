"""``rllm/SolverJudge-v1``: solver agents answer a math problem, a judge agent picks one."""

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
    parse_choice,
)
from rllm_envs.tasks import Task

__all__ = ["SolverJudgeEnv", "HEURISTIC_ACCURACY", "env", "parallel_env"]

JUDGE = "judge_0"
#: How often the simulated fallible solver of the heuristic policy is right.
HEURISTIC_ACCURACY = 0.5


class SolverJudgeEnv(MultiAgentTextEnv):
    r"""Several solvers answer a math problem; a judge reads their solutions and selects one.

    ## Description
    rLLM's solver-judge pattern as a PettingZoo ``ParallelEnv`` (the AEC form comes from
    ``rllm_envs.make_aec``). Roles:

    - ``solver`` (agents ``solver_0`` ... ``solver_{n-1}``): each solves the problem on its own
      (they act together at the first step and do not see each other) and is scored on its
      final answer; then it waits for the judge (its reply is ignored) and its episode ends
      with the judge's, where its score is paid.
    - ``judge`` (agent ``judge_0``): waits during the first step, then sees the problem and
      every solution, numbered 1..n in an order drawn at random each episode, and selects
      one; it is scored on whether the selected solution is correct. Because the order is
      random, a judge that always picks the same number (or copies its worked example)
      earns the base rate, the share of correct solutions (``info["base_rate"]``), which
      the leaderboard reports next to the judge's score.

    Problems and grading are :mod:`rllm_envs.math`'s (procedural problems by default, or a
    dataset), so the task is a pure function of ``(task_seed, index, difficulty)``.

    ## Observation
    Solvers: the problem and the answer format. Judge: at the first step, the problem and a
    note to wait; at the second, the problem and every solution (each cut to
    ``max_solution_chars``, keeping its start and end) and the reply format. Finished agents
    see the reference answer and their result, only when the episode ends: while the judge
    chooses, a solver is told to wait and nothing about its grade.

    ## Action
    Solvers: a solution ending with the final answer in ``\boxed{...}`` (what
    ``rllm_envs.math.extract_answer`` reads). Judge: the number of the chosen solution, e.g.
    ``\boxed{2}``, ``<answer>2</answer>``, ``Answer: Solution 2`` or a text whose last
    ``Solution k`` mention (else last number) is the choice (see
    :func:`~rllm_envs.multiagent.mathtasks.parse_choice`).

    ## Reward
    Per agent, the weighted sum of components (``reward_weights``): ``correct`` (weight 1.0) is
    a solver's grade in [0, 1] (``rllm_envs.math.score_response`` with the problem: only the
    value in final form counts, so a copied problem expression scores 0) and for the judge
    the grade of the selected solution, both paid at the second (final) step; ``invalid_action``
    (weight 0.0, log only) is 1 for a solver reply with no final answer or a judge reply with
    no valid choice (which selects nothing and scores 0). A reply that copies a worked
    example the agents are shown (:mod:`rllm_envs.demonstrations`) earns 0 in every
    component and is flagged ``info["invalid_action"]``.

    ## Episode End
    Every agent terminates after the second step (the judge's). No truncation. A solver's
    grade is known after the first, but the usual policy plays every seat and reads every
    seat's view (in AEC form ``observe`` of any agent): a solver that ended then would hand
    the judge its verdict, the reference answer and its reward before the judge chooses.

    ## Information
    The common keys of :mod:`rllm_envs.multiagent.base` (``is_correct``: the solver's answer,
    or the judge's selection, is correct) plus ``n_solvers`` and, on ``step``: for solvers
    ``answer`` (the extracted final answer or ``None``) and ``score``; for the judge
    ``answers`` (every solver's extracted answer, in solver order), ``scores`` (their grades),
    ``order`` (``order[k - 1]`` is the index of the solver shown as solution ``k``),
    ``base_rate`` (the mean of ``scores``: what a constant or random choice earns on
    average) and ``choice`` (the solution number, 1-based, or ``None``). Every agent gets
    these, its ``is_correct``, and a solver its ``invalid_action``/``invalid_reason`` (no
    final answer, or a copied worked example), only with the final step: before the judge
    acts no agent's ``info``, observation or reward says anything about which solution is
    correct.

    ## Arguments
    - ``n_solvers`` (int 1-8, default 2): number of solver agents.
    - ``difficulty`` (int 1-5, default 1): difficulty of procedural problems (``rllm_envs.math``).
    - ``task_seed`` (int, default 0): seed of the procedural task universe.
    - ``families`` (list of str, optional): restrict procedural problems to these
      ``rllm_envs.math.FAMILIES`` (arithmetic, fractions, linear_equation, ...).
    - ``dataset`` (str, optional): a ``.jsonl``/``.json``/``.parquet`` file or ``"hf:<name>"``
      with ``problem`` and ``answer`` fields, instead of procedural problems; ``split`` and
      ``field_map`` (``{"problem": "question", ...}``) as in ``rllm_envs.tasks``.
    - ``max_solution_chars`` (int >= 200, default 4000): each solution shown to the judge is
      cut to this many characters.
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.multiagent.base.MultiAgentTextEnv`.

    ## Version History
    - v0: Initial version.
    - v1: solutions are shown in a random order (in solver
      order, a judge that always answered ``2`` earned solver 2's accuracy without reading
      a solution); ``order`` and ``base_rate`` were added; copies of a worked example earn 0.
      Since then, the judge's ``answers``/``scores``/``order``/``base_rate`` arrive only
      with its final step (they used to come with the solvers' step, before the judge acted,
      telling it which solution was correct). Then the solvers stay in the episode until the
      judge's step and get their reward, ``is_correct``, ``answer``, ``score``, invalid flags
      and the reference answer only then: they used to end at the first step, and that
      step's return (their final observation "The reference answer is ...", ``is_correct``,
      reward), read by a policy that plays every seat, let a judge pick the right solution
      (0.65-0.68 against a base rate of 0.39). Each agent's return is unchanged.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi", "human"], "name": "rllm_solver_judge_v1"}
    default_reward_weights: ClassVar[Mapping[str, float]] = {
        "correct": 1.0,
        "invalid_action": 0.0,
    }
    grading_info_keys: ClassVar[tuple[str, ...]] = (
        "score",
        "scores",
        "answers",
        "order",
        "base_rate",
        "choice",
    )

    def __init__(
        self,
        *,
        n_solvers: int = 2,
        difficulty: int = 1,
        task_seed: int = 0,
        families: Sequence[str] | None = None,
        dataset: str | None = None,
        split: str | None = None,
        field_map: Mapping[str, str] | None = None,
        max_solution_chars: int = 4000,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        self.n_solvers = check_count("n_solvers", n_solvers, 1, 8)
        self.max_solution_chars = check_count("max_solution_chars", max_solution_chars, 200, 10**6)
        self.solvers = [f"solver_{i}" for i in range(self.n_solvers)]
        super().__init__(
            tasks=math_tasks(
                difficulty=difficulty,
                task_seed=task_seed,
                families=families,
                dataset=dataset,
                split=split,
                field_map=field_map,
            ),
            possible_agents=[*self.solvers, JUDGE],
            reward_weights=reward_weights,
            render_mode=render_mode,
        )
        self.phase = "solve"  # "solve", "judge", "done"
        self.solutions: list[str] = []
        self.answers: list[str | None] = []
        self.scores: list[float] = []
        self.order: list[int] = []
        self.choice: int | None = None
        #: Per solver: (invalid reason, copied demonstration), reported with the final step.
        self.solver_results: list[tuple[str | None, str | None]] = []

    # ------------------------------------------------------------------------- hooks

    def _check_task(self, task: Task) -> None:
        check_math_task(task)

    def _start(self, task: Task) -> None:
        self.decoys = Decoys(self.tasks, task, from_source=self.task_index is not None)
        self.phase = "solve"
        self.solutions, self.answers, self.scores, self.choice = [], [], [], None
        self.order, self.solver_results = [], []

    def _role(self, agent: str) -> str:
        return "judge" if agent == JUDGE else "solver"

    def _acting_agents(self) -> list[str]:
        if self.phase == "solve":
            return list(self.solvers)
        return [JUDGE] if self.phase == "judge" else []

    def _act(self, actions: dict[str, str]) -> tuple[dict[str, AgentOutcome], set[str]]:
        assert self.task is not None
        gold = str(self.task["answer"])
        if self.phase == "solve":
            for agent in self.solvers:
                score, answer, reason = grade(actions[agent], gold, str(self.task["problem"]))
                copied = copied_demonstration(actions[agent], correct=score >= 1.0)
                if copied is not None:
                    score, reason = 0.0, f"the reply copies the worked example ({copied})"
                self.solutions.append(actions[agent])
                self.answers.append(answer)
                self.scores.append(score)
                self.solver_results.append((reason, copied))
            assert self.np_random is not None
            # Shown in a random order, so a constant choice earns the base rate.
            self.order = [int(i) for i in self.np_random.permutation(self.n_solvers)]
            # The judge still has to act, and a policy that plays every seat reads every
            # seat's view: nothing graded reaches any agent (the solvers' rewards, verdicts
            # and flags included) before the judge's step ends the episode for all.
            self.phase = "judge"
            return {}, set()
        choice, reason = parse_choice(actions[JUDGE], self.n_solvers)
        self.choice = choice
        score = self.scores[self.order[choice - 1]] if choice is not None else 0.0
        copied = copied_demonstration(actions[JUDGE], correct=score >= 1.0)
        if copied is not None:
            score, reason = 0.0, f"the reply copies the worked example ({copied})"
        self.phase = "done"
        outcomes = {
            JUDGE: AgentOutcome(
                _components(score, reason, copied),
                correct=score >= 1.0,
                invalid_reason=reason,
                info=self._judge_info(),
            )
        }
        for i, agent in enumerate(self.solvers):
            solver_reason, solver_copied = self.solver_results[i]
            outcomes[agent] = AgentOutcome(
                _components(self.scores[i], solver_reason, solver_copied),
                correct=self.scores[i] >= 1.0,
                invalid_reason=solver_reason,
                info={"answer": self.answers[i], "score": self.scores[i]},
            )
        return outcomes, set(self.possible_agents)

    def _observe(self, agent: str) -> str:
        assert self.task is not None
        problem = str(self.task["problem"])
        if agent != JUDGE:
            if self.phase == "solve":
                return "\n".join(
                    [
                        f"You are solver {self.solvers.index(agent) + 1} of {self.n_solvers}. "
                        "Solve the problem below; a judge will compare your solution with "
                        "other solvers' and pick one.",
                        "",
                        f"Problem: {problem}",
                        "",
                        "Reason step by step. " + ANSWER_FORMAT,
                    ]
                )
            if self.phase == "judge":
                return (
                    "Your solution was handed to the judge, who is choosing now; your result "
                    "comes when the episode ends. Your reply now is ignored."
                )
            i = self.solvers.index(agent)
            verdict = "correct" if self.scores[i] >= 1.0 else "not correct"
            return (
                f"Your answer {self.answers[i]!s} is {verdict}. The reference answer is "
                f"{self.task['answer']}. The episode is over."
            )
        if self.phase == "solve":
            return "\n".join(
                [
                    f"You are the judge. {self.n_solvers} solver(s) are solving this problem:",
                    "",
                    f"Problem: {problem}",
                    "",
                    "Wait for their solutions: your reply now is ignored.",
                ]
            )
        lines = [
            f"You are the judge. {self.n_solvers} solver(s) answered this problem:",
            "",
            f"Problem: {problem}",
            "",
        ]
        for k, solver in enumerate(self.order, start=1):
            solution = self.solutions[solver]
            shown = clip_middle(solution, self.max_solution_chars).strip() or "(empty reply)"
            lines += [f"=== Solution {k} ===", shown, ""]
        if self.phase == "judge":
            lines.append(
                f"Check the solutions and select the one whose final answer is correct. Reply "
                f"with its number (1-{self.n_solvers}) in \\boxed{{...}}, e.g. \\boxed{{1}}."
            )
        else:
            picked = f"Solution {self.choice}" if self.choice is not None else "no valid choice"
            lines.append(f"You selected {picked}. The reference answer is {self.task['answer']}.")
        return "\n".join(lines)

    def _info(self, agent: str, acting: set[str]) -> dict[str, Any]:
        return {**super()._info(agent, acting), "n_solvers": self.n_solvers}

    def _render_text(self) -> str:
        assert self.task is not None
        parts = [f"Problem: {self.task['problem']} (reference: {self.task['answer']})"]
        for k, solver in enumerate(self.order, start=1):
            answer, score = self.answers[solver], self.scores[solver]
            parts.append(f"Solution {k} (solver {solver + 1}): answer {answer!s}, score {score:g}")
        if self.phase == "done":
            parts.append(f"Judge selected: {self.choice}")
        return "\n".join(parts)

    # ---------------------------------------------------------------- scripted policies

    def oracle_action(self, agent: str) -> str:
        """Solvers: the reference answer. Judge: the first correct solution (else 1)."""
        assert self.task is not None
        if agent != JUDGE:
            return boxed(str(self.task["answer"]))
        correct = [k for k, i in enumerate(self.order, start=1) if self.scores[i] >= 1.0]
        return f"\\boxed{{{correct[0] if correct else 1}}}"

    def heuristic_action(self, agent: str, rng: np.random.Generator) -> str:
        """Solvers: a simulated fallible solver. Judge: majority vote (does not peek).

        The solver is right with probability :data:`HEURISTIC_ACCURACY`, else it gives a
        plausible wrong answer (it reads the reference to simulate a fallible model). The
        judge picks the first solution of the largest group of equivalent answers.
        """
        assert self.task is not None
        if agent != JUDGE:
            gold = str(self.task["answer"])
            return boxed(gold if rng.random() < HEURISTIC_ACCURACY else self.decoys.draw(rng))
        pick = majority_answer([self.answers[i] for i in self.order])
        return f"\\boxed{{{1 if pick is None else pick + 1}}}"

    def random_action(self, agent: str, rng: np.random.Generator) -> str:
        """Solvers: a random integer answer. Judge: a random solution number."""
        if agent != JUDGE:
            return boxed(str(int(rng.integers(-100, 1000))))
        return f"\\boxed{{{int(rng.integers(1, self.n_solvers + 1))}}}"

    def _judge_info(self) -> dict[str, Any]:
        base_rate = sum(self.scores) / len(self.scores) if self.scores else None
        return {
            "answers": list(self.answers),
            "scores": list(self.scores),
            "order": list(self.order),
            "base_rate": base_rate,
            "choice": self.choice,
        }

    @staticmethod
    def episode_metrics(correct: Mapping[str, bool]) -> dict[str, float]:
        """The judge's score next to its base rate, from each agent's final ``is_correct``.

        The leaderboard reports both: with the solutions in random order, a judge that
        never reads them scores the base rate (the share of correct solutions).
        """
        solvers = [bool(v) for a, v in correct.items() if a != JUDGE]
        if JUDGE not in correct or not solvers:
            return {}
        return {
            "judge_accuracy": float(correct[JUDGE]),
            "judge_base_rate": sum(solvers) / len(solvers),
        }


def _components(score: float, reason: str | None, copied: str | None) -> dict[str, float]:
    """The reward components; a copied worked example earns 0 in every one (flagged in info)."""
    if copied is not None:
        return {"correct": 0.0, "invalid_action": 0.0}
    return {"correct": score, "invalid_action": float(reason is not None)}


def parallel_env(**kwargs: Any) -> SolverJudgeEnv:
    """The parallel (PettingZoo ``ParallelEnv``) form; kwargs as :class:`SolverJudgeEnv`."""
    return SolverJudgeEnv(**kwargs)


def env(**kwargs: Any) -> Any:
    """The AEC form (PettingZoo ``parallel_to_aec``); kwargs as :class:`SolverJudgeEnv`."""
    from pettingzoo.utils.conversions import parallel_to_aec

    return parallel_to_aec(SolverJudgeEnv(**kwargs))
