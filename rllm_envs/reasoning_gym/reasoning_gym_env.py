"""``rllm/ReasoningGym-v0``: every reasoning-gym task family as a single-turn text env."""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar

from rllm_envs.core import TextEnv, Transition
from rllm_envs.reasoning_gym.balance import BalancedTasks
from rllm_envs.reasoning_gym.scoring import COMPONENTS, grade
from rllm_envs.reasoning_gym.spec import ANSWER_FORMAT, DEFAULT_DATASET, DEFAULT_SIZE
from rllm_envs.reasoning_gym.tasks import composite_parts, oracle_answer
from rllm_envs.tasks import Task

__all__ = ["ReasoningGymEnv"]

#: Verdicts that tell how much of an answer the scorer matched (a piece of the reference, or a
#: piece of the question it paid for): said as ``"wrong"`` when the reference is hidden.
#: A client's propositional_logic record: its premises' variables (the scorer builds all
#: 2^N assignments), premises, and the difficulty config whose premise sets are drawn.
_LOGIC_BOUNDS = {"variables": 12, "premises": 16, "max_statements": 16, "max_complexity": 6}


def _check_logic_record(metadata: Mapping[str, Any]) -> None:
    """Refuse a client's propositional_logic record that would cost the scorer unbounded work.

    reasoning-gym's scorer lists every assignment of the premises' variables (24 variables:
    2.5 GB; 26: tens of GB) and the share check draws the record's difficulty config
    (statements 60, complexity 8: 170 s a step).
    """
    from rllm_envs.error import InvalidEnvConfig

    premises = metadata.get("premises")
    if not isinstance(premises, list) or not all(isinstance(p, str) for p in premises):
        raise InvalidEnvConfig("A propositional_logic record's premises must be a list of str.")
    names = set(re.findall(r"[A-Za-z_]\w*", " ".join(premises)))
    difficulty = metadata.get("difficulty")
    config = difficulty if isinstance(difficulty, Mapping) else {}
    sizes = {
        "variables": len(names),
        "premises": len(premises),
        "max_statements": _upper(config.get("statements")),
        "max_complexity": _upper(config.get("complexity")),
    }
    over = {k: v for k, v in sizes.items() if v is not None and v > _LOGIC_BOUNDS[k]}
    if over:
        raise InvalidEnvConfig(
            f"A propositional_logic record may hold at most {_LOGIC_BOUNDS} (what scoring it "
            f"costs grows exponentially with them); this one: {over}."
        )


def _upper(bounds: Any) -> int | None:
    """The upper end of a difficulty range (``(low, high)`` or a number); ``None``: none."""
    if isinstance(bounds, (list, tuple)) and bounds:
        bounds = bounds[-1]
    if isinstance(bounds, (int, float)) and not isinstance(bounds, bool):
        return int(bounds) if bounds == bounds and abs(bounds) < 2**31 else 2**31
    return None


#: Verdicts that depend on the reply alone (the others are decided against the reference).
_PLAIN_VERDICTS = frozenset({"correct", "no_answer", "several_answers", "placeholder", "echo"})

#: Families already warned of in this process (:func:`_warn_of_a_tell`).
_WARNED: set[str] = set()


def _warn_of_a_tell(
    dataset: str,
    task_seed: int,
    config: Mapping[str, Any] | None,
    difficulty: int | None,
    curriculum: Mapping[str, int] | None,
    *,
    mixed: bool = False,
) -> None:
    """Warn once per family when a family with a surface tell is used for training.

    A ``composite`` warns of each family it mixes (``mixed``) that has one.

    The tells are those measured at the default config (:data:`rllm_envs.reasoning_gym.
    surface.KNOWN_TELLS`); another config is measured by ``tasks.surface_tell()`` (and
    ``held_out_reason()``), which takes a few thousand generator draws.
    """
    from rllm_envs.reasoning_gym.surface import KNOWN_TELLS, PUBLIC_POOLS
    from rllm_envs.tasks import EVAL_SEED_START

    if dataset == "composite" and difficulty is None and not curriculum:
        # A mix warns of each family it mixes at that family's default config.
        for name, sub in composite_parts(config or {}):
            if name != "composite":
                _warn_of_a_tell(name, task_seed, sub, None, None, mixed=True)
        return
    default = not config and difficulty is None and not curriculum
    tell = KNOWN_TELLS.get(dataset) if default else None
    what = f"answers predictable from the question's surface: {tell}"
    if dataset in PUBLIC_POOLS:  # at any config
        tell = PUBLIC_POOLS[dataset]
        what = f"answers looked up in public data: {tell}"
    if tell is None or task_seed >= EVAL_SEED_START or dataset in _WARNED:
        return
    _WARNED.add(dataset)
    import gymnasium as gym

    where = "mixed into this composite" if mixed else "with this config"
    if default:
        where = f"{where} at its default config" if mixed else "(default config)"
    gym.logger.warn(
        f"reasoning-gym {dataset!r} {where} has {what}. Training on it rewards the "
        "tell as much as the reasoning, and held-out evaluation refuses it "
        "(tasks.held_out_reason())."
    )


#: What a ``propositional_logic`` conclusion must be to earn the reward (in its observation).
INFORMATIVE_CONCLUSION = (
    "A conclusion earns the reward when it follows from the premises, is no restatement of "
    "them (a premise, their conjunction, or a premise weakened) and is specific: a weak "
    "conclusion that follows from many premise sets of this kind (more than 5% of them, as "
    "(P ∨ Q) or (P ↔ Q) often do) earns nothing unless it is the expected conclusion."
)


def _is_logic(task: Mapping[str, Any]) -> bool:
    metadata = task.get("metadata") or {}
    return (metadata.get("source_dataset") or task.get("dataset")) == "propositional_logic"


_ALPHABET = string.ascii_lowercase + string.digits
#: Tasks whose reference answers :meth:`ReasoningGymEnv.random_action` draws from.
ANSWER_POOL = 64


class ReasoningGymEnv(TextEnv):
    """Any of reasoning-gym's procedural task families, scored by its own ``score_answer``.

    ## Description
    reasoning-gym (``pip install "rllm-envs[reasoning-gym]"``) generates about a hundred task
    families: arithmetic, algebra, logic puzzles, graphs, games, ciphers, ARC grids and more
    (:func:`rllm_envs.reasoning_gym.family_names`). ``dataset`` picks the family; its config
    fields (``config``), a curriculum level (``difficulty``, ``curriculum``), the universe
    (``task_seed``) and its size (``size``) pick the tasks
    (:mod:`rllm_envs.reasoning_gym.tasks`).

    Answers are balanced (:mod:`rllm_envs.reasoning_gym.balance`): a draw whose answer is
    over-represented in the family is redrawn with the probability that brings every answer
    down to ``max(1 / labels, 5%)`` of tasks (two labels: half each; ``shortest_path``'s
    ``infeasible``, a third of its draws, about 5%), so a constant answer earns no more than
    a guess from the answer distribution. ``env.unwrapped.tasks.answer_shares()`` reports the
    family's shares before balancing; the random baseline (:meth:`random_action`) guesses from
    the balanced distribution, so its success rate is the base rate to report.

    ## Observation
    The family's question followed by the answer format: the final answer inside
    ``<answer></answer>`` tags (:data:`rllm_envs.reasoning_gym.spec.ANSWER_FORMAT`). After the
    answer, the verdict and, when wrong, the reference answer (if the family has one and
    ``reveal_reference``).

    ## Action
    The model's full reply. The answer is the content of its ``<answer>...</answer>`` block
    (text up to the last ``</think>`` is reasoning); a reply with several different answer
    blocks is not graded.

    ## Reward
    Weighted sum (``reward_weights``) of two components
    (:mod:`rllm_envs.reasoning_gym.scoring`):

    - ``correct`` (weight 1.0): 1 when reasoning-gym's ``score_answer`` gives the answer 1.
    - ``score`` (weight 0.0, log only): reasoning-gym's score in [0, 1], partial credit
      included (``reward_weights={"score": 1.0, "correct": 0.0}`` trains on it). With
      ``reveal_reference=False`` and the score unpaid it reads 1 or 0 only (so does
      ``info["reasoning_gym_score"]``): a partial score is an oracle for the hidden reference.

    Both are 0 for a missing or template answer, an echo of the question, or a piece of the
    question that is not the reference answer (partial credit for copying is not paid).

    ``propositional_logic`` asks what follows from some premises, and reasoning-gym pays any
    valid consequence. Here a conclusion earns ``correct`` only when it is also informative
    (:mod:`rllm_envs.reasoning_gym.premises`): it restates no premise (their conjunction, a
    premise doubled or weakened), and it is equivalent to the task's reference conclusion or
    follows from at most 5% of the premise sets the generator draws for the same config
    (estimated on 2000 seeded draws per config). A weak conclusion (``(P ↔ Q)`` follows
    from a third of the default premise sets) is graded ``weak_conclusion``, and the tasks
    are balanced so that no formula is the reference of more than 5% of them: a constant or
    templated conclusion earns about 5%, the reference 1. The observation says so.

    Some families give their answer away on the question's surface (a board pattern, a gate
    name, a pair count: :mod:`rllm_envs.reasoning_gym.surface`); the env warns once when one
    is used for training, or mixed into a ``composite``, and held-out evaluation refuses it
    (a composite mixing one too). Every family is scanned, the slowest generators on a
    bounded probe (:data:`rllm_envs.reasoning_gym.surface.SLOW_SCANS`).

    ## Episode End
    Terminates after the answer (single turn). It never truncates.

    ## Information
    The common keys of :mod:`rllm_envs.core`, plus ``dataset`` (``str``, the family); on
    ``step`` also ``answer`` (``str | None``, the extracted answer), ``verdict`` (``str``, see
    :class:`rllm_envs.reasoning_gym.scoring.Grade`), ``reasoning_gym_score`` (``float``) and
    ``reference_answer`` (``str | None``; always ``None`` with ``reveal_reference=False``).
    ``invalid_action`` is set when the reply has no answer block, a template answer or
    several different answers.

    ## Scoring runs no model text
    Some families' reasoning-gym scorers run the answer (or the task's reference) as Python
    (``eval``, ``sympy.parse_expr``); those are scored by this suite's own scorers, which parse
    without running anything (:mod:`rllm_envs.reasoning_gym.safe_scoring`), and a family whose
    scorer runs text and has no such scorer is refused. A task passed with
    ``options={"task": ...}`` must name the env's family (a ``composite``'s: one it mixes).

    ## Arguments
    - ``dataset`` (str, default ``"basic_arithmetic"``): the reasoning-gym family.
    - ``size`` (int, default 1000): tasks in the universe.
    - ``task_seed`` (int, default 0): the task universe; task ``i`` is a pure function of
      ``(dataset, config, task_seed, i)``. Seeds from ``rllm_envs.tasks.EVAL_SEED_START`` up
      are the evaluation universe, whose questions training seeds never yield.
    - ``config`` (dict): fields of the family's config dataclass (not ``seed``/``size``).
    - ``difficulty`` (int, default ``None``): reasoning-gym curriculum level of every attribute
      (0 = easiest); ``config`` fields win over it.
    - ``curriculum`` (dict, default ``None``): ``{attribute: level}`` for single attributes.
    - ``reveal_reference`` (bool, default ``True``): show the reference answer after a wrong
      reply (in the observation and ``info["reference_answer"]``). ``False`` withholds it:
      whoever plays the env (a client of a server, see :mod:`rllm_adapters.openenv`, which
      defaults to ``False``) cannot read answers off wrong replies and replay them. Nor
      anything decided against the reference: a wrong reply's verdict reads ``wrong`` (only
      ``no_answer``, ``several_answers``, ``placeholder`` and ``echo``, which depend on the
      reply alone, are said as such).
    - ``reward_weights``, ``render_mode``: see :class:`rllm_envs.core.TextEnv`.

    ## Version History
    - v0: Initial version. ``reveal_reference`` was added later (the reference was always
      shown), and families whose scorer runs text as code got safe scorers (issue #31).
    """

    default_reward_weights: ClassVar[Mapping[str, float]] = {"correct": 1.0, "score": 0.0}

    def __init__(
        self,
        *,
        dataset: str = DEFAULT_DATASET,
        size: int = DEFAULT_SIZE,
        task_seed: int = 0,
        config: Mapping[str, Any] | None = None,
        difficulty: int | None = None,
        curriculum: Mapping[str, int] | None = None,
        reveal_reference: bool = True,
        reward_weights: Mapping[str, float] | None = None,
        render_mode: str | None = None,
    ) -> None:
        from rllm_envs.error import InvalidEnvConfig
        from rllm_envs.reasoning_gym.safe_scoring import check_family

        if not isinstance(reveal_reference, bool):
            raise InvalidEnvConfig(
                f"Expects `reveal_reference` to be a bool, actual: {reveal_reference!r}."
            )
        tasks = BalancedTasks(
            dataset,
            size=size,
            task_seed=task_seed,
            config=config,
            difficulty=difficulty,
            curriculum=curriculum,
        )
        self.dataset = dataset
        self.reveal_reference = reveal_reference
        #: The families a task may be scored as: the env's, or those a composite mixes.
        self.families = frozenset(name for name, _ in tasks.components()) or frozenset({dataset})
        for family in sorted(self.families):
            check_family(family)
        _warn_of_a_tell(dataset, task_seed, config, difficulty, curriculum)
        self._answer_pool: list[str] | None = None
        super().__init__(
            tasks=tasks, max_turns=1, reward_weights=reward_weights, render_mode=render_mode
        )

    def _check_task(self, task: Task) -> None:
        from rllm_envs.error import InvalidEnvConfig

        missing = [k for k in ("dataset", "question", "answer", "metadata") if k not in task]
        if missing:
            raise InvalidEnvConfig(f"Expects a reasoning-gym task record; missing {missing}.")
        wrong = [
            f"{key} must be {kind}, not {type(task[key]).__name__}"
            for key, kind, ok in (
                ("question", "a str", isinstance(task["question"], str)),
                (
                    "answer",
                    "a str or None",
                    task["answer"] is None or isinstance(task["answer"], str),
                ),
                ("metadata", "a mapping", isinstance(task["metadata"], Mapping)),
                ("dataset", "a str", isinstance(task["dataset"], str)),
            )
            if not ok
        ]
        if wrong:
            raise InvalidEnvConfig(
                "Expects a reasoning-gym task record (question: str, answer: str | None, "
                f"metadata: dict, dataset: str); {'; '.join(wrong)}."
            )
        metadata = task.get("metadata") or {}
        if _is_logic(task):
            _check_logic_record(metadata)
        family = metadata.get("source_dataset") if isinstance(metadata, Mapping) else None
        family = family or task.get("dataset")
        if task.get("dataset") != self.dataset or not (
            isinstance(family, str) and family in self.families
        ):
            raise InvalidEnvConfig(
                f"A task for this env must be of its family {self.dataset!r}"
                + (f" (one of {sorted(self.families)})" if self.dataset == "composite" else "")
                + f"; this one names {task.get('dataset')!r}"
                + (f" / {family!r}" if family != task.get("dataset") else "")
                + ". Make an env with dataset= that family to play it."
            )

    def _start(self, task: Task) -> tuple[str, dict[str, Any]]:
        rule = f"{INFORMATIVE_CONCLUSION}\n\n" if _is_logic(task) else ""
        text = f"{task['question'].rstrip()}\n\n{rule}{ANSWER_FORMAT}"
        return text, {"dataset": task["dataset"]}

    def _act(self, action: str) -> Transition:
        assert self.task is not None
        # A hidden reference: grading takes the same work for any wrong reply (its time
        # would otherwise tell a partly right one).
        result = grade(action, self.task, uniform=not self.reveal_reference)
        reference = self.task.get("answer")
        reference = reference if isinstance(reference, str) and self.reveal_reference else None
        if not self.reveal_reference and result.verdict not in _PLAIN_VERDICTS:
            # Every other verdict was decided against the reference ("only the start of the
            # right one", "partial", "not finite", "earns no more than nonsense"): replaying
            # one task, a client read a hidden answer off them (a mini_sudoku cell at a time;
            # lcm's number from candidate sets). Said as plainly wrong (the reward is the same).
            result = replace(result, verdict="wrong", reason="the answer is not correct")
        if result.correct:
            text = "Correct."
        else:
            text = f"Incorrect: {result.reason}."
            if reference is not None:
                text += f" The reference answer: {reference}"
        invalid = result.verdict in ("no_answer", "placeholder", "several_answers")
        components = {name: result.components[name] for name in COMPONENTS}
        score = result.score
        if not self.reveal_reference and not self.reward_weights.get("score"):
            # A partial score (the share of right sudoku cells, a length ratio) is an oracle
            # for a hidden reference: a client replaying one task reads the answer off it a
            # cell at a time. Unpaid and hidden, it reads only right or wrong.
            score = components["score"] = float(result.correct)
        return Transition(
            observation=text,
            reward_components=components,
            terminated=True,
            correct=result.correct,
            invalid_reason=result.reason if invalid else None,
            info={
                "dataset": self.task["dataset"],
                "answer": result.answer,
                "verdict": result.verdict,
                "reasoning_gym_score": score,
                "reference_answer": reference,
            },
        )

    def oracle_action(self) -> str:
        """The reference answer in tags (or a known solution from the task's metadata).

        Raises:
            NotImplementedError: For a task with neither (the family only verifies solutions).
        """
        assert self.task is not None, "Call reset() before oracle_action()."
        answer = oracle_answer(self.task)
        if answer is None:
            raise NotImplementedError(
                f"reasoning-gym task {self.task['id']} has no reference answer to play."
            )
        return f"<answer>{answer}</answer>"

    def random_action(self) -> str:
        """A random well-formed answer: the reference answer of a random task of the universe.

        The answers are drawn with their frequency among the first :data:`ANSWER_POOL` tasks,
        so for a family with a few labels (``True``/``False``, ``on``/``off``) this is the
        stratified random guess, and for open answers almost always a wrong value in the right
        form. It draws from ``action_space``'s generator, never from ``np_random``.
        """
        if self._answer_pool is None:
            pool = []
            for index in range(min(ANSWER_POOL, len(self.tasks))):
                answer = self.tasks[index].get("answer")
                if isinstance(answer, str) and answer.strip():
                    pool.append(answer)
            self._answer_pool = pool
        rng = self.action_space.np_random
        if self._answer_pool:
            return (
                f"<answer>{self._answer_pool[int(rng.integers(len(self._answer_pool)))]}</answer>"
            )
        length = int(rng.integers(1, 9))
        letters = "".join(_ALPHABET[int(rng.integers(len(_ALPHABET)))] for _ in range(length))
        return f"<answer>{letters}</answer>"
