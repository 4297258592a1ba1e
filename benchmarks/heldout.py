r"""Held-out evaluation: pass@1 of a model on task indices no training run draws from.

Training runs draw procedural tasks from the training universe (the env default
``task_seed=0``, any seed below :data:`rllm_envs.tasks.EVAL_SEED_START`); evaluation here uses
the evaluation universe (``--task-seed``, default :data:`rllm_envs.tasks.EVAL_TASK_SEED`) and its
first ``--num-tasks`` indices. The two universes share no question (a question belongs to one
by a hash of the numbers it shows, or of its canonical text when it shows none) and Search's
worlds share no name, so nothing evaluated here can have been memorised in training;
``python -m benchmarks.heldout overlap`` measures it, and plays a policy that memorises
training answers against the evaluation universe::

    python -m benchmarks.heldout --model smollm2-135m-instruct --env rllm/Math-v1 \
        --env-kwargs '{"difficulty": 1, "families": ["arithmetic"]}' --num-tasks 200 \
        --out runs/heldout/base.json

Decoding is greedy (temperature 0), one sample per task; pass@1 comes with a 95% Wilson
interval. Format (the env's ``format`` reward component, where it has one) is reported next to
correctness.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rllm_envs.tasks import EVAL_TASK_SEED

__all__ = [
    "wilson_interval",
    "evaluate",
    "main",
    "measure_overlap",
    "measure_memorisation",
    "overlap_report",
    "ATTACK_KEYS",
    "HELDOUT_TASK_SEED",
    "held_out_reason",
    "merge_rows",
    "refuse_unheld",
]

#: The universe of evaluation tasks (training uses the env's default ``task_seed``, 0).
HELDOUT_TASK_SEED = EVAL_TASK_SEED


def wilson_interval(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def evaluate(
    model: str,
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    num_tasks: int = 200,
    task_seed: int = HELDOUT_TASK_SEED,
    max_tokens: int = 256,
    backend: str = "vllm",
    engine_kwargs: Mapping[str, Any] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Greedy pass@1 of ``model`` on the first ``num_tasks`` tasks of ``task_seed``."""
    from rllm_adapters.backends import make_policy
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.rollout import RolloutConfig, rollout
    from rllm_adapters.rollout.config import family_sampling

    kwargs = {**dict(env_kwargs or {}), "task_seed": task_seed}
    refuse_unheld(env_id, kwargs)
    policy = make_policy(backend, model, **dict(engine_kwargs or {}))
    config = RolloutConfig(
        num_envs=32,
        group_size=1,
        # The family's stop strings (e.g. FrozenLake's ``</action>``), as in training.
        sampling=family_sampling(
            env_id,
            SamplingParams(temperature=0.0),
            max_tokens=max_tokens,
            agent_kwargs=agent_kwargs,
        ),
        agent_kwargs=dict(agent_kwargs or {}),
        progress=False,
    )
    start = time.perf_counter()
    try:
        trajectories = rollout(
            env_id, policy, config, tasks=list(range(num_tasks)), env_kwargs=kwargs
        )
    finally:
        close = getattr(policy, "close", None)
        if close is not None:
            close()
    elapsed = time.perf_counter() - start
    correct = sum(t.is_correct for t in trajectories)
    formats = [
        float(t.steps[-1].info.get("reward_components", {}).get("format", math.nan))
        for t in trajectories
        if t.steps
    ]
    formats = [f for f in formats if not math.isnan(f)]
    low, high = wilson_interval(correct, len(trajectories))
    examples = [
        {
            "task_id": t.steps[0].info.get("task_id") if t.steps else None,
            "response": t.steps[-1].response if t.steps else "",
            "correct": t.is_correct,
        }
        for t in trajectories[:5]
    ]
    return {
        "model": str(model),
        "env": env_id,
        "env_kwargs": kwargs,
        "num_tasks": len(trajectories),
        "correct": correct,
        "pass_at_1": correct / max(len(trajectories), 1),
        "ci95": [low, high],
        "format_rate": sum(formats) / len(formats) if formats else None,
        "max_tokens": max_tokens,
        "seconds": round(elapsed, 1),
        "examples": examples,
    }


#: A word of three or more letters that is no LaTeX command: a name, not a value.
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_MATH_WORDS = {"sqrt", "frac", "dfrac", "pi", "infty", "cup", "cap", "text"}


def _is_entity(answer: str) -> bool:
    """Whether an answer names something (a word), rather than stating a value."""
    return any(w.lower() not in _MATH_WORDS for w in _WORD.findall(answer))


def _answers(task: Mapping[str, Any]) -> list[str]:
    for key in ("answer", "answers", "target"):
        value = task.get(key)
        if isinstance(value, (list, tuple)):
            return [str(v) for v in value]
        if value is not None:
            return [str(value)]
    return []


def _facts(task: Mapping[str, Any]) -> list[str]:
    """World facts in a task record (ToolUse's table rows; Search's are its passages)."""
    rows = [
        json.dumps(r, sort_keys=True) for t in task.get("tables") or [] for r in t.get("rows", [])
    ]
    return rows


def _sources(env_id: str, kwargs: Mapping[str, Any], seed: int) -> tuple[Any, Any]:
    """The env (closed by the caller) and its task source for ``task_seed=seed``."""
    import gymnasium as gym

    import rllm_envs

    kw = {**kwargs, "task_seed": seed}
    if env_id in rllm_envs.list_multiagent_envs():
        parallel = rllm_envs.make_parallel(env_id, **kw)
        return parallel, parallel.tasks
    env = gym.make(env_id, **kw)
    return env, getattr(env.unwrapped, "tasks")  # noqa: B009 (every rllm env has tasks)


def held_out_reason(tasks: Any) -> str | None:
    """Why a task source has no held-out evaluation universe (``None``: it has one).

    Read from the source's own ``held_out_reason()`` (reasoning-gym families with too few
    questions, whose numbers decide their answers but are too few to split by, or whose
    answers are predictable from the question's surface: see
    :meth:`rllm_envs.reasoning_gym.tasks.ReasoningGymTasks.held_out_reason`); a source without
    one is held out by its universe split.
    """
    reason = getattr(tasks, "held_out_reason", None)
    return reason() if callable(reason) else None


def refuse_unheld(env_id: str, env_kwargs: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` when ``env_id`` with ``env_kwargs`` has no held-out universe."""
    seed = int(env_kwargs.get("task_seed", HELDOUT_TASK_SEED))
    env, tasks = _sources(env_id, {k: v for k, v in env_kwargs.items() if k != "task_seed"}, seed)
    try:
        reason = held_out_reason(tasks)
    finally:
        env.close()
    if reason is not None:
        raise ValueError(
            f"{env_id} {dict(env_kwargs)} has no held-out evaluation universe, so a score on "
            f"it is no held-out score: {reason}"
        )


def _takes_task_seed(env_id: str) -> bool:
    import inspect

    import rllm_envs

    cls = rllm_envs.resolve(rllm_envs.env_entry(env_id).entry_point)
    return "task_seed" in inspect.signature(cls.__init__).parameters


#: Why a part of a source is not split into universes.
_TOO_FEW = "too few questions to split"
_NEVER_REPEAT = "questions never repeat"
_OWN_WORLD = "each task seed plays its own world"
#: A source that splits but whose numbers still recall its answers across the split (or that
#: does not split): held-out evaluation refuses it (:func:`refuse_unheld`).
_NOT_HELD_OUT = "not held out"


def _universe_key_name(tasks: Any) -> str:
    """How a source splits into universes: its key, per part for a mixture of families.

    A part that is not split reads ``none`` with the reason: its questions are too few for
    each universe to keep 20 distinct ones (:data:`rllm_envs.tasks.MIN_UNIVERSE_KEYS`: the
    universes share them, not held out), or its questions never repeat (each task a new
    question with names and tables of its own, whose masked text is one key: nothing to
    share, nothing to memorise). A source whose generator makes every question of its seed's
    universe already (Search: a world per task seed, named with words of the seed's universe)
    is not split either: it has nothing of the other universe to redraw.
    """
    if getattr(tasks, "split", True) is False:
        return f"none ({_OWN_WORLD})"
    parts = getattr(tasks, "splitting_keys", None)
    if parts is not None:
        keys = parts()
        names = {}
        for part, key in keys.items():
            if key is not None:
                names[part] = key.__name__
            else:
                never = not tasks.questions_repeat(part)
                names[part] = f"none ({_NEVER_REPEAT if never else _TOO_FEW})"
        if len(set(names.values())) == 1:
            return next(iter(names.values()))
        split = ", ".join(f"{p}={n}" for p, n in names.items() if not n.startswith("none"))
        text = f"per family: {split}"
        for reason in (_TOO_FEW, _NEVER_REPEAT):
            unsplit = sorted(p for p, n in names.items() if n == f"none ({reason})")
            if unsplit:
                text += f"; not split ({reason}): {', '.join(unsplit)}"
        return text
    split = getattr(tasks, "splitting_key", None)
    if split is not None:
        key = split()
        return f"none ({_TOO_FEW})" if key is None else key.__name__
    return "question_key"


def measure_overlap(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    num_tasks: int = 500,
    train_seed: int = 0,
    eval_seed: int = HELDOUT_TASK_SEED,
) -> dict[str, Any]:
    """What the first ``num_tasks`` tasks of the training and evaluation universes share.

    Returns:
        ``{"questions", "keys", "answers", "entity_answers", "facts"}``: each the number of
        distinct items found in both universes (``keys``: the universe keys of the questions,
        named by ``universe_key``: :func:`rllm_envs.tasks.question_key`, the numbers a question
        shows, :func:`rllm_envs.tasks.text_key` or the family's own, so a question with the
        same numbers in other words or another order counts; ``facts``: Search passages
        and ToolUse table rows, ``None`` for an env without world facts), next to the distinct
        counts of each side.
        ``entity_answers`` counts only answers that name something (a word of three or more
        letters, not a LaTeX command): a value recurs in any two arithmetic universes, a name
        must not.
    """
    from rllm_envs.tasks import question_text

    sides: list[dict[str, set[str]]] = []
    for seed in (train_seed, eval_seed):
        env, tasks = _sources(env_id, dict(env_kwargs or {}), seed)
        side: dict[str, set[str]] = {
            "questions": set(),
            "keys": set(),
            "answers": set(),
            "facts": set(),
        }
        for i in range(min(num_tasks, len(tasks))):
            task = tasks[i]
            side["questions"].add(question_text(task))
            side["keys"].add(tasks.universe_key(task))
            side["answers"].update(_answers(task))
            side["facts"].update(_facts(task))
        universe_key = _universe_key_name(tasks)
        unheld = held_out_reason(tasks)
        if unheld is not None:
            universe_key += f", {_NOT_HELD_OUT} (see not_held_out)"
        passages = getattr(getattr(env, "unwrapped", env), "retriever", None)
        if passages is not None and hasattr(passages, "passages"):
            side["facts"].update(str(p["text"]) for p in passages.passages)
        env.close()
        sides.append(side)
    train, heldout = sides
    entity = {a for a in train["answers"] & heldout["answers"] if _is_entity(a)}
    has_facts = bool(train["facts"] or heldout["facts"])
    return {
        "env": env_id,
        "env_kwargs": dict(env_kwargs or {}),
        "train_seed": train_seed,
        "eval_seed": eval_seed,
        "num_tasks": num_tasks,
        "universe_key": universe_key,
        "held_out": unheld is None,
        **({} if unheld is None else {"not_held_out": unheld}),
        "distinct": {
            k: [len(train[k]), len(heldout[k])] for k in ("questions", "keys", "answers", "facts")
        },
        "questions": len(train["questions"] & heldout["questions"]),
        "keys": len(train["keys"] & heldout["keys"]),
        "answers": len(train["answers"] & heldout["answers"]),
        "entity_answers": len(entity),
        "facts": len(train["facts"] & heldout["facts"]) if has_facts else None,
    }


#: A number as an attacker reads it off a question (signs aside).
_DIGITS = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def _numbers_or_text(text: str, ordered: bool) -> object:
    numbers = _DIGITS.findall(text)
    if not numbers:
        return " ".join(text.split())  # no numbers: the attacker keeps the whole question
    return tuple(numbers if ordered else sorted(numbers, key=lambda n: (float(n), n)))


#: Keys a policy that memorises training answers looks an evaluation question up by: the whole
#: question, the multiset or the ordered tuple of its numbers (the question itself when it has
#: none), and its template (numbers masked). The attacker's own reading, not the universe key.
ATTACK_KEYS: dict[str, Callable[[str], object]] = {
    "question": lambda text: " ".join(text.split()),
    "numbers": lambda text: _numbers_or_text(text, ordered=False),
    "ordered_numbers": lambda text: _numbers_or_text(text, ordered=True),
    "template": lambda text: _DIGITS.sub("#", " ".join(text.split())),
}

#: Ids whose tasks have no answer a policy could memorise and replay here.
_NOT_MEMORISED = {
    "rllm/TicTacToe-v0": "a game against another agent: no answer (replaying moves is "
    "check_reward_hacking's replay policy)",
    "rllm/SWE-v0": "graded by hidden tests in a sandbox, not run by this measurement",
}


def _play(env: Any, index: int, actions: Sequence[str] | None) -> tuple[str, list[str], bool]:
    """The first observation of task ``index``, the actions played, and whether it was solved.

    ``actions=None`` plays the env's oracle; otherwise the actions are replayed in order.
    """
    obs, info = env.reset(options={"index": index})
    first, played = str(obs), []
    for turn in range(64):
        if actions is None:
            try:
                action = env.unwrapped.oracle_action()
            except NotImplementedError:  # a task without a known answer: nothing to remember
                break
        elif turn < len(actions):
            action = actions[turn]
        else:
            break
        played.append(action)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    return first, played, bool(info.get("is_correct"))


def _rate(correct: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(correct, n)
    return {"correct": correct, "rate": round(correct / max(n, 1), 4), "ci95": [low, high]}


def measure_memorisation(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    num_tasks: int = 500,
    train_seed: int = 0,
    eval_seed: int = HELDOUT_TASK_SEED,
) -> dict[str, Any]:
    """A policy that memorises training answers, played on the evaluation universe.

    It plays the env's oracle on the first ``num_tasks`` training tasks and remembers what it
    did (every action, so a multi-turn env is replayed whole) under each of
    :data:`ATTACK_KEYS` of the first observation; on each of the first ``num_tasks``
    evaluation tasks it replays what it remembers under that task's key (the most common one
    on ties), or else the most common training reply. Graded by the env itself (its
    ``is_correct``; the multi-agent math envs by their solvers' grader). Next to it, the
    constant policy that always gives the most common training reply.

    Returns:
        ``{"constant": {...}, "lookup": {key: {...}}}``, each with ``correct``, ``rate`` and
        the 95% Wilson interval ``ci95`` (``lookup`` rows also ``hits``: evaluation tasks whose
        key was remembered), or ``{"skipped": reason}``.
    """
    import rllm_envs

    if env_id in _NOT_MEMORISED:
        return {"skipped": _NOT_MEMORISED[env_id]}
    kwargs = dict(env_kwargs or {})
    if env_id in rllm_envs.list_multiagent_envs():
        return _memorise_math_answers(env_id, kwargs, num_tasks, train_seed, eval_seed)
    import gymnasium as gym

    train_env = gym.make(env_id, **{**kwargs, "task_seed": train_seed})
    remembered = [_play(train_env, i, None) for i in range(num_tasks)]
    train_env.close()
    replies = Counter(tuple(actions) for _, actions, _ in remembered)
    constant = replies.most_common(1)[0][0]
    tables = {
        name: _table((key(first), tuple(actions)) for first, actions, _ in remembered)
        for name, key in ATTACK_KEYS.items()
    }
    eval_env = gym.make(env_id, **{**kwargs, "task_seed": eval_seed})
    counts = {name: [0, 0] for name in ATTACK_KEYS}
    constant_correct = 0
    for i in range(num_tasks):
        first = str(eval_env.reset(options={"index": i})[0])
        outcomes: dict[tuple[str, ...], bool] = {}
        constant_correct += _replayed(eval_env, i, constant, outcomes)
        for name, key in ATTACK_KEYS.items():
            hit = tables[name].get(key(first))
            counts[name][0] += hit is not None
            counts[name][1] += _replayed(eval_env, i, hit or constant, outcomes)
    eval_env.close()
    return _attack_row(num_tasks, constant_correct, counts)


def _replayed(
    env: Any, index: int, actions: tuple[str, ...], outcomes: dict[tuple[str, ...], bool]
) -> bool:
    """Whether replaying ``actions`` solves task ``index`` (each reply played once per task)."""
    if actions not in outcomes:
        outcomes[actions] = _play(env, index, actions)[2]
    return outcomes[actions]


def _table(pairs: Iterable[tuple[object, Any]]) -> dict[object, Any]:
    """``{key: the most common value under it}`` (the first seen on ties)."""
    seen: dict[object, Counter] = {}
    for key, value in pairs:
        seen.setdefault(key, Counter())[value] += 1
    return {key: values.most_common(1)[0][0] for key, values in seen.items()}


def _attack_row(n: int, constant_correct: int, counts: Mapping[str, list[int]]) -> dict[str, Any]:
    return {
        "num_tasks": n,
        "constant": _rate(constant_correct, n),
        "lookup": {name: {"hits": hits, **_rate(c, n)} for name, (hits, c) in counts.items()},
    }


def _memorise_math_answers(
    env_id: str, kwargs: Mapping[str, Any], num_tasks: int, train_seed: int, eval_seed: int
) -> dict[str, Any]:
    """:func:`measure_memorisation` for the multi-agent math envs: a solver's boxed answer."""
    from rllm_envs.multiagent.mathtasks import boxed, grade

    def tasks(seed: int) -> list[dict[str, Any]]:
        env, source = _sources(env_id, kwargs, seed)
        env.close()
        return [source[i] for i in range(min(num_tasks, len(source)))]

    train, held = tasks(train_seed), tasks(eval_seed)
    constant = Counter(str(t["answer"]) for t in train).most_common(1)[0][0]
    tables = {
        name: _table((key(str(t["problem"])), str(t["answer"])) for t in train)
        for name, key in ATTACK_KEYS.items()
    }
    counts = {name: [0, 0] for name in ATTACK_KEYS}
    constant_correct = 0
    for task in held:
        problem, gold = str(task["problem"]), str(task["answer"])
        constant_correct += grade(boxed(constant), gold, problem)[0] >= 1.0
        for name, key in ATTACK_KEYS.items():
            hit = tables[name].get(key(problem))
            counts[name][0] += hit is not None
            counts[name][1] += grade(boxed(hit or constant), gold, problem)[0] >= 1.0
    return _attack_row(len(held), constant_correct, counts)


def overlap_report(
    num_tasks: int = 500, only: Sequence[tuple[str, Mapping[str, Any]]] | None = None
) -> dict[str, Any]:
    """:func:`measure_overlap` and :func:`measure_memorisation` for every id with a task seed.

    ``only``: measure just these ``(id, kwargs)`` rows (each row then carries its own
    ``provenance``; :func:`merge_rows` puts them into a committed report).
    """
    import rllm_envs
    from benchmarks.provenance import LoadSampler, provenance

    rows, no_seed = [], []
    with LoadSampler() as load:
        for env_id in [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()]:
            if not _takes_task_seed(env_id):
                no_seed.append(env_id)
                continue
            for kwargs in OVERLAP_VARIANTS.get(env_id, ({},)):
                if only is not None and (env_id, dict(kwargs)) not in [
                    (e, dict(k)) for e, k in only
                ]:
                    continue
                row = measure_overlap(env_id, kwargs, num_tasks=num_tasks)
                row["memorisation"] = measure_memorisation(env_id, kwargs, num_tasks=num_tasks)
                if only is not None:
                    row["provenance"] = provenance("benchmarks.heldout")
                rows.append(row)
    return {
        **provenance("benchmarks.heldout", ["overlap", "--num-tasks", str(num_tasks)], load=load),
        "eval_seed_start": rllm_envs.tasks.EVAL_SEED_START,
        "note": "Counts of distinct questions, universe keys (the sorted numbers a question "
        "shows, or its canonical text -- names masked, case and whitespace folded -- when it "
        "shows none or the family's numbers do not split it; Countdown: sorted numbers and "
        "target; Search: the question, in a world of its seed's own), answers, entity answers "
        "(names, not values) and world facts found both in the first num_tasks tasks of "
        "task_seed 0 and in those of the evaluation seed. Values recur in any two arithmetic "
        "universes; questions, keys, entity answers and facts must not. memorisation: a policy "
        "that remembers the oracle's replies "
        "on the num_tasks training tasks under each attack key of the first observation "
        "(question: the whole text; numbers: the sorted digit strings; ordered_numbers: them in "
        "order; template: the text with numbers masked; the text itself for a question without "
        "numbers) replays them on the evaluation tasks, else the most common training reply "
        "(constant: always that reply); graded by the env, with 95% Wilson intervals.",
        "envs": rows,
        "without_task_seed": no_seed,
    }


def merge_rows(report: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``report`` with ``rows`` in place of its rows of the same id and kwargs.

    A new row goes where :data:`OVERLAP_VARIANTS` lists it (after its id's other rows). The
    top-level provenance stays the full run's; each merged row has its own ``provenance``.
    """

    def ident(row: Mapping[str, Any]) -> str:
        return json.dumps([row["env"], row["env_kwargs"]], sort_keys=True)

    fresh = {ident(r): dict(r) for r in rows}
    merged = [fresh.pop(ident(r), r) for r in report["envs"]]
    for key, row in fresh.items():
        order = [
            json.dumps([row["env"], dict(k)], sort_keys=True)
            for k in OVERLAP_VARIANTS.get(row["env"], ({},))
        ]
        position = order.index(key) if key in order else len(order)
        after = [
            i
            for i, r in enumerate(merged)
            if r["env"] == row["env"] and ident(r) in order and order.index(ident(r)) < position
        ]
        merged.insert(after[-1] + 1 if after else len(merged), row)
    return {**report, "envs": merged}


#: Math-v1's procedural families (one row each, at difficulty 1).
MATH_FAMILIES = (
    "arithmetic",
    "fractions",
    "linear_equation",
    "quadratic_equation",
    "linear_system",
    "number_theory",
    "combinatorics",
    "sequences",
    "geometry",
    "word_problem",
)
#: Settings measured besides each id's defaults (the hardest and the smallest task spaces).
OVERLAP_VARIANTS: dict[str, tuple[dict[str, Any], ...]] = {
    "rllm/Math-v1": (
        {},
        *({"families": [family]} for family in MATH_FAMILIES),
        {"difficulty": 5},
    ),
    "rllm/Countdown-v1": ({}, {"difficulty": 2}),
    "rllm/ReasoningGym-v0": (
        {},
        {"dataset": "aiw"},
        {"dataset": "aiw", "config": {"max_entities": 16}},
        {"dataset": "coin_flip"},
        {"dataset": "coin_flip", "config": {"max_trials": 40}},
        {"dataset": "string_insertion"},
        {"dataset": "lcm"},
        {"dataset": "products"},
        {"dataset": "gsm_symbolic"},
        # Answers predictable from the question's surface (issue #25): not held out.
        {"dataset": "circuit_logic"},
        {"dataset": "course_schedule"},
    ),
    "rllm/Search-v1": ({}, {"difficulty": 1}, {"difficulty": 5}),
    "rllm/FrozenLake-v1": ({}, {"difficulty": 3}),
}


def _overlap_main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.heldout overlap",
        description="Measure what the training and evaluation universes share, per env.",
    )
    parser.add_argument("--num-tasks", type=int, default=500)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/heldout_overlap.json"))
    parser.add_argument(
        "--only",
        action="append",
        metavar="ID=KWARGS",
        help="measure only this row (an id, '=', its kwargs as JSON: "
        '\'rllm/ReasoningGym-v0={"dataset": "aiw"}\'), repeatable, and merge it into --out',
    )
    args = parser.parse_args(argv)
    only = None
    if args.only:
        only = []
        for spec in args.only:
            env_id, _, kwargs = spec.partition("=")
            only.append((env_id, json.loads(kwargs or "{}")))
    report = overlap_report(args.num_tasks, only)
    if only is not None:
        if len(report["envs"]) != len(only):
            parser.error(f"--only names rows that OVERLAP_VARIANTS does not list: {args.only}")
        if args.out.exists():
            report = merge_rows(json.loads(args.out.read_text(encoding="utf-8")), report["envs"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for row in report["envs"]:
        print(
            f"{row['env']} {row['env_kwargs'] or ''}: questions {row['questions']}, keys "
            f"{row['keys']} ({row['universe_key']}), answers "
            f"{row['answers']} (entities {row['entity_answers']}), facts {row['facts']}"
        )
        attack = row["memorisation"]
        if "skipped" in attack:
            print(f"  memorisation: skipped ({attack['skipped']})")
            continue
        lookups = ", ".join(f"{k} {v['rate']:.3f}" for k, v in attack["lookup"].items())
        print(f"  memorisation: constant {attack['constant']['rate']:.3f}; lookup {lookups}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.heldout`` (``overlap`` measures the universes)."""
    from benchmarks.provenance import provenance

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["overlap"]:
        return _overlap_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks.heldout", description=__doc__)
    parser.add_argument("--model", required=True, help="model name, folder or checkpoint")
    parser.add_argument("--env", default="rllm/Math-v1")
    parser.add_argument("--env-kwargs", default="{}", help="JSON object of env kwargs")
    parser.add_argument("--num-tasks", type=int, default=200)
    parser.add_argument("--task-seed", type=int, default=HELDOUT_TASK_SEED)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--backend", default="vllm")
    parser.add_argument("--engine-kwargs", default="{}", help="JSON object for the engine")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    result = evaluate(
        args.model,
        args.env,
        json.loads(args.env_kwargs),
        num_tasks=args.num_tasks,
        task_seed=args.task_seed,
        max_tokens=args.max_tokens,
        backend=args.backend,
        engine_kwargs=json.loads(args.engine_kwargs),
    )
    result.update(provenance("benchmarks.heldout", argv))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    low, high = result["ci95"]
    print(
        f"{args.env} {result['num_tasks']} held-out tasks: pass@1 {result['pass_at_1']:.3f} "
        f"[{low:.3f}, {high:.3f}], format {result['format_rate']}, {result['seconds']} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
