"""Countdown task sources (procedural, files) and the solver."""

from __future__ import annotations

import collections
import itertools
import json
from fractions import Fraction
from pathlib import Path

import pytest

from rllm_envs.countdown import DIFFICULTY_PRESETS, load_countdown_tasks, procedural_tasks, solve
from rllm_envs.countdown.rules import grade
from rllm_envs.countdown.tasks import countdown_dataset_tasks
from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.tasks import EVAL_TASK_SEED

DATA = Path(__file__).parent / "data"


def _correct(expr, task, use_all=True):
    return grade(f"<answer>{expr}</answer>", task, use_all=use_all).correct


# ---------------------------------------------------------------------- procedural


@pytest.mark.parametrize("difficulty", sorted(DIFFICULTY_PRESETS))
def test_procedural_tasks_follow_the_preset_and_are_solvable(difficulty):
    preset = DIFFICULTY_PRESETS[difficulty]
    source = procedural_tasks(seed=0, difficulty=difficulty)
    for i in range(100):
        task = source[i]
        assert len(task["nums"]) == preset.num_count
        assert all(1 <= n <= preset.max_number for n in task["nums"])
        assert 1 <= task["target"] <= preset.max_target
        assert task["target"] not in task["nums"]
        assert task["difficulty"] == difficulty
        assert _correct(task["solution"], task, use_all=True)
        assert _correct(task["solution"], task, use_all=False)


def test_task_i_is_a_pure_function_of_seed_index_and_difficulty():
    a, b = procedural_tasks(seed=5, difficulty=2), procedural_tasks(seed=5, difficulty=2)
    assert [a[i] for i in (0, 7, 10**9)] == [b[i] for i in (0, 7, 10**9)]
    assert a[3] != procedural_tasks(seed=6, difficulty=2)[3]
    assert a[3] != procedural_tasks(seed=5, difficulty=3)[3]
    assert a[3]["id"] != procedural_tasks(seed=5, difficulty=3)[3]["id"]
    assert len({json.dumps(a[i]["nums"]) for i in range(50)}) > 40


def test_count_and_size_overrides():
    source = procedural_tasks(seed=1, difficulty=1, num_count=5, max_number=7)
    for i in range(30):
        task = source[i]
        assert len(task["nums"]) == 5 and max(task["nums"]) <= 7
        assert _correct(task["solution"], task)
    assert "n5-m7" in task["id"]


@pytest.mark.parametrize(
    "kwargs",
    [
        {"difficulty": 0},
        {"difficulty": 6},
        {"difficulty": True},
        {"num_count": 1},
        {"num_count": 13},
        {"max_number": 1},
        {"num_count": 2.5},
        {"seed": -1},
    ],
)
def test_bad_procedural_arguments_raise_early(kwargs):
    with pytest.raises(InvalidEnvConfig):
        procedural_tasks(**kwargs)


# ---------------------------------------------------------------------- datasets


@pytest.mark.parametrize("name", ["countdown_3to4.jsonl", "countdown_3to4.parquet"])
def test_loader_reads_the_common_schema(name):
    tasks = load_countdown_tasks(DATA / name)
    assert len(tasks) == 8
    first = tasks[0]
    assert first["nums"] == [44, 19, 35] and first["target"] == 98
    assert first["id"] == "countdown_3to4-0"
    assert all(isinstance(n, int) for n in first["nums"])
    for i in range(len(tasks)):
        task = tasks[i]
        assert _correct(solve(task["nums"], task["target"]), task)


def test_loader_field_map_and_normalisation(tmp_path):
    path = tmp_path / "other.jsonl"
    rows = [{"numbers": [1, 2, "3"], "answer": 6.0}, {"numbers": [4, 5], "answer": "9"}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    tasks = load_countdown_tasks(path, field_map={"nums": "numbers", "target": "answer"})
    assert tasks[0]["nums"] == [1, 2, 3] and tasks[0]["target"] == 6
    assert tasks[1]["target"] == 9


@pytest.mark.parametrize(
    "record",
    [
        {"nums": [1, 2]},
        {"target": 3},
        {"nums": "1 2", "target": 3},
        {"nums": [], "target": 3},
        {"nums": [1.5, 2], "target": 3},
        {"nums": [True, 2], "target": 3},
        {"nums": [1, 2], "target": -3},
        {"nums": [1, 2], "target": 10**12},
        {"nums": list(range(13)), "target": 3},
    ],
)
def test_bad_records_raise_invalid_dataset(record):
    with pytest.raises(InvalidDataset):
        countdown_dataset_tasks([record])


def test_missing_field_says_how_to_map_it():
    with pytest.raises(InvalidDataset, match="field_map"):
        countdown_dataset_tasks([{"numbers": [1, 2], "target": 3}])
    with pytest.raises(InvalidDataset, match="no such file"):
        load_countdown_tasks(DATA / "missing.jsonl")


# ---------------------------------------------------------------------- solver


@pytest.mark.parametrize("use_all", [True, False])
def test_solver_solves_procedural_tasks(use_all):
    for difficulty in (1, 2, 3):
        source = procedural_tasks(seed=9, difficulty=difficulty)
        for i in range(25):
            task = source[i]
            expr = solve(task["nums"], task["target"], use_all=use_all)
            assert expr is not None and _correct(expr, task, use_all=use_all), task


def test_solver_uses_fractions_and_reports_no_solution():
    expr = solve([1, 3, 4, 6], 24)  # the classic needs 6 / (1 - 3/4)
    assert expr is not None and _correct(expr, {"nums": [1, 3, 4, 6], "target": 24})
    assert solve([1, 1], 5) is None
    assert solve([2, 2], 7) is None
    assert solve([], 1) is None
    assert solve([5, 9], 9, use_all=False) == "9"
    assert solve([5, 9], 9, use_all=True) is None


def test_solver_budget_bounds_the_search():
    assert solve([3, 7, 11, 13, 17, 19], 99_991, max_states=50) is None


def _fold(values: list[int], ops: str) -> Fraction | None:
    total = Fraction(values[0])
    for op, v in zip(ops, values[1:], strict=True):
        if op == "/" and v == 0:
            return None
        total = {"+": total + v, "-": total - v, "*": total * v, "/": total / v}[op]
    return total


def _shapes_solving(task: dict) -> set[tuple[tuple[int, ...], str]]:
    """The fixed shapes (a left fold with fixed operators over the sorted numbers, in a fixed
    order of their positions) that reach the task's target."""
    ordered = sorted(task["nums"])
    n = len(ordered)
    return {
        (perm, "".join(ops))
        for perm in itertools.permutations(range(n))
        for ops in itertools.product("+-*/", repeat=n - 1)
        if _fold([ordered[i] for i in perm], "".join(ops)) == task["target"]
    }


# att25 F3: the best fixed shape of the training universe (chosen on seed 0) solved 12-13% of
# evaluation tasks at difficulties 1-3 before the generator balanced draws by shape (a shape
# drawn at random solves about 4% at difficulty 1, where every task is one of 192 templates).
@pytest.mark.parametrize(
    "difficulty, bound",
    # Difficulties 2 and 3 (10-15 s each): the full suite runs them.
    [(1, 0.09), *(pytest.param(d, 0.06, marks=pytest.mark.slow) for d in (2, 3))],
)
def test_no_fixed_shape_chosen_on_training_tasks_solves_many_evaluation_tasks(difficulty, bound):
    n = 120
    train = procedural_tasks(seed=0, difficulty=difficulty)
    counts: collections.Counter = collections.Counter()
    for i in range(n):
        counts.update(_shapes_solving(train[i]))
    best, _ = counts.most_common(1)[0]
    held = procedural_tasks(seed=EVAL_TASK_SEED, difficulty=difficulty)
    solved = sum(best in _shapes_solving(held[i]) for i in range(n))
    assert solved / n <= bound, (difficulty, best, solved)
