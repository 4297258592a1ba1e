"""rllm/Countdown-v1: episodes, rewards, info keys, datasets, arguments, adversarial answers."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401
from rllm_envs.core import INFO_KEYS, STEP_INFO_KEYS
from rllm_envs.countdown import COMPONENTS, CountdownEnv
from rllm_envs.error import InvalidDataset, InvalidEnvConfig

DATA = Path(__file__).parent / "data"
ID = "rllm/Countdown-v1"


def make(**kwargs) -> CountdownEnv:
    env = gym.make(ID, **kwargs).unwrapped
    assert isinstance(env, CountdownEnv)
    return env


def test_observation_is_self_contained():
    env = make()
    obs, info = env.reset(seed=0)
    assert str(info["nums"]) in obs and str(info["target"]) in obs
    assert "<answer>" in obs and "exactly once" in obs
    assert info["use_all"] is True and info["difficulty"] == 1


def test_oracle_scores_one_and_reports_components():
    env = make(difficulty=4)
    for seed in range(10):
        env.reset(seed=seed)
        _, reward, terminated, truncated, info = env.step(env.oracle_action())
        assert reward == 1.0 and terminated and not truncated
        assert info["is_correct"] and info["verdict"] == "correct"
        assert info["reward_components"] == dict.fromkeys(COMPONENTS, 1.0)
        assert info["reference_solution"]


def test_step_info_has_the_documented_keys():
    env = make()
    env.reset(seed=0)
    *_, info = env.step("<answer>1 + 1</answer>")
    doc = CountdownEnv.__doc__ or ""
    section = doc.split("## Information", 1)[1].split("##", 1)[0]
    documented = set(re.findall(r"``([a-z_]+)``", section))
    extra = set(info) - set(INFO_KEYS) - set(STEP_INFO_KEYS)
    assert extra <= documented, extra - documented
    assert {
        "nums",
        "target",
        "use_all",
        "difficulty",
        "verdict",
        "expression",
        "value",
        "numbers_used",
        "reference_solution",
    } <= set(info)


@pytest.mark.parametrize(
    ("answer", "verdict", "invalid"),
    [
        ("<answer>{a} + {a} + {a}</answer>", "illegal_numbers", False),  # reuse
        ("<answer>{a} + 1000001</answer>", "illegal_numbers", False),  # not given
        ("<answer>{all} / 0</answer>", "illegal_numbers", False),  # 0 not given
        ("<answer>{a} / ({b} - {b})</answer>", "illegal_numbers", False),  # reuse + div 0
        ("<answer>" + "(" * 5000 + "</answer>", "parse_error", True),
        ("<answer>{a} ** 999999999</answer>", "parse_error", True),
        ("<answer>٣ + ٤ ☃ 😀 \x00</answer>", "parse_error", True),
        ("<answer>__import__('os').system('id')</answer>", "parse_error", True),
        ("<answer>" + "9" * 200_000 + "</answer>", "parse_error", True),
        ("the answer is 42", "no_answer", True),
    ],
)
def test_adversarial_answers_are_normal_transitions(answer, verdict, invalid):
    env = make(difficulty=2)
    _, info = env.reset(seed=1)
    a, b = info["nums"][0], info["nums"][1]
    text = answer.replace("{a}", str(a)).replace("{b}", str(b))
    text = text.replace("{all}", " + ".join(str(n) for n in info["nums"]))
    obs, reward, terminated, truncated, info = env.step(text)
    assert reward == 0.0 and terminated and not info["is_correct"]
    assert info["verdict"] == verdict
    assert info["invalid_action"] is invalid
    assert obs.startswith("Incorrect") and "A solution:" in obs


def test_division_by_zero_with_legal_numbers():
    env = make()
    env.reset(options={"task": {"nums": [3, 3, 5], "target": 1}})
    *_, info = env.step("<answer>5 / (3 - 3)</answer>")
    assert info["verdict"] == "division_by_zero" and info["value"] is None
    assert info["reward_components"]["uses_allowed_numbers"] == 1.0
    assert info["reward_components"]["valid_expression"] == 0.0


def test_multi_turn_feedback_then_success():
    env = make(max_turns=3)
    env.reset(options={"task": {"nums": [2, 3, 4], "target": 20}})
    obs, reward, terminated, truncated, info = env.step("<answer>2 * 3 * 4</answer>")
    assert not terminated and not truncated and reward == 0.0
    assert "equals 24, not 20" in obs and "2 attempts left" in obs
    assert "reference_solution" not in info
    obs, reward, terminated, _, info = env.step("<answer>(2 + 3) * 4</answer>")
    assert terminated and reward == 1.0 and info["turn"] == 2 and obs == "Correct."


def test_reward_weights_shape_partial_credit():
    env = make(reward_weights={"format": 0.1, "value": 0.9})
    env.reset(options={"task": {"nums": [2, 3, 4], "target": 20}})
    assert env.step("<answer>2 * 3 * 4</answer>")[1] == pytest.approx(0.1)
    env.reset(options={"task": {"nums": [2, 3, 4], "target": 20}})
    assert env.step("<answer>(2 + 3) * 4</answer>")[1] == pytest.approx(1.0)
    with pytest.raises(InvalidEnvConfig, match="Did you mean"):
        make(reward_weights={"formatt": 1.0})


def test_at_most_once_rule():
    env = make(use_all=False)
    obs, _ = env.reset(options={"task": {"nums": [2, 3, 4, 9], "target": 20}})
    assert "at most once" in obs
    assert env.step("<answer>(2 + 3) * 4</answer>")[1] == 1.0
    env = make(use_all=True)
    env.reset(options={"task": {"nums": [2, 3, 4, 9], "target": 20}})
    *_, info = env.step("<answer>(2 + 3) * 4</answer>")
    assert info["verdict"] == "illegal_numbers"


@pytest.mark.parametrize("use_all", [True, False])
def test_random_action_is_well_formed_and_legal(use_all):
    env = make(difficulty=3, use_all=use_all)
    env.action_space.seed(0)
    for seed in range(20):
        env.reset(seed=seed)
        *_, info = env.step(env.random_action())
        c = info["reward_components"]
        assert c["format"] == 1.0 and c["uses_allowed_numbers"] == 1.0


@pytest.mark.parametrize("name", ["countdown_3to4.jsonl", "countdown_3to4.parquet"])
def test_dataset_tasks_are_solved_by_the_oracle(name):
    env = make(dataset=str(DATA / name))
    assert len(env.tasks) == 8
    for index in range(8):
        _, info = env.reset(options={"index": index})
        assert info["difficulty"] is None
        assert env.step(env.oracle_action())[1] == 1.0


def test_task_records_without_or_with_a_wrong_solution_use_the_solver():
    env = make()
    env.reset(options={"task": {"nums": [1, 3, 4, 6], "target": 24, "solution": "1 + 3"}})
    assert env.step(env.oracle_action())[1] == 1.0
    env = make(dataset=[{"nums": [1, 1], "target": 5}])
    env.reset(seed=0)
    obs, reward, *_, info = env.step(env.oracle_action())
    assert reward == 0.0 and info["reference_solution"] is None
    assert "No solution was found" in obs


@pytest.mark.parametrize(
    "kwargs",
    [
        {"difficulty": 9},
        {"use_all": "yes"},
        {"num_count": 1},
        {"field_map": {"nums": "x"}},
        {"dataset": 42},
        {"dataset": str(DATA / "countdown_3to4.jsonl"), "difficulty": 3},
        {"dataset": str(DATA / "countdown_3to4.jsonl"), "max_number": 3},
        {"max_turns": 0},
    ],
)
def test_bad_arguments_raise_early(kwargs):
    with pytest.raises(InvalidEnvConfig):
        make(**kwargs)


def test_bad_task_records_raise_early():
    env = make()
    with pytest.raises(InvalidEnvConfig, match="Countdown task record"):
        env.reset(options={"task": {"nums": "1, 2", "target": 3}})
    with pytest.raises(InvalidDataset):
        make(dataset=[{"nums": [1, 2]}])


def test_reveal_reference_false_withholds_the_solution_and_skips_the_solver() -> None:
    """Issue #31 (F2): a wrong answer's feedback and info carried the reference solution, so a
    client could replay it on the same index (20/20 paid 1.0)."""

    for reveal in (True, False):
        env = rllm_envs.make("rllm/Countdown-v1", reveal_reference=reveal)
        env.reset(options={"index": 0})
        obs, reward, terminated, _, info = env.step("<answer>1 + 1</answer>")
        assert terminated and reward == 0.0
        assert ("A solution" in obs) is reveal
        assert ("reference_solution" in info) is reveal
        assert env.unwrapped._solution_ready is reveal  # the solver did not run
        env.close()


def test_a_client_written_task_is_solved_within_the_custom_budget() -> None:
    """Issue #31 (F3): a custom task of 12 large numbers ran the 200,000-state solver for 3-7 s
    of pure Python on the step that ended the episode. A client-written task gets
    CUSTOM_TASK_MAX_STATES; the source's own tasks keep the default budget."""
    from rllm_envs.countdown import countdown_env, solver
    from rllm_envs.countdown.countdown_env import CUSTOM_TASK_MAX_STATES, CountdownEnv

    budgets: list[int] = []
    real_solve = solver.solve

    def spy(*args, max_states=solver.DEFAULT_MAX_STATES, **kwargs):  # the real solver, recorded
        budgets.append(max_states)
        return real_solve(*args, max_states=max_states, **kwargs)

    nums = [999_999_937, 999_999_929, 999_999_893, 999_999_883, 999_999_797, 999_999_761] * 2
    env = CountdownEnv()
    original = countdown_env.solve
    countdown_env.solve = spy
    try:
        env.reset(options={"task": {"nums": nums, "target": 1}})
        _, _, terminated, _, info = env.step("<answer>1</answer>")
        source = CountdownEnv(dataset=[{"nums": [1, 2], "target": 3}])
        source.reset(options={"index": 0})
        source.step("<answer>1</answer>")
    finally:
        countdown_env.solve = original
    assert terminated and "reference_solution" in info
    assert budgets == [CUSTOM_TASK_MAX_STATES, solver.DEFAULT_MAX_STATES]
    assert CUSTOM_TASK_MAX_STATES <= solver.DEFAULT_MAX_STATES // 10
