"""rllm/Math-v1: episodes, rewards, info keys, dataset loading and arguments."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.core import INFO_KEYS, STEP_INFO_KEYS
from rllm_envs.error import InvalidDataset, InvalidEnvConfig
from rllm_envs.math.math_env import ANSWER_FORMAT, MathEnv, score

DATA = Path(__file__).parent / "data"
STEP_KEYS = {"extracted_answer", "answer_source", "format_issue", "grade", "family", "difficulty"}


def test_observation_is_problem_plus_answer_format():
    env = gym.make("rllm/Math-v1")
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    assert obs.startswith(task["problem"].strip())
    assert obs.endswith(ANSWER_FORMAT) and "\\boxed{}" in obs
    assert set(INFO_KEYS) <= set(info) and info["family"] == task["family"]
    assert task["answer"] not in obs.split("\n\n")[-1]
    # The example is a template, not a number a model could copy into its answer.
    assert "\\boxed{<answer>}" in ANSWER_FORMAT and not any(c.isdigit() for c in ANSWER_FORMAT)


def test_oracle_scores_one_and_terminates_after_one_step():
    env = gym.make("rllm/Math-v1", difficulty=3)
    for seed in range(10):
        env.reset(seed=seed)
        obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
        assert (reward, terminated, truncated) == (1.0, True, False)
        assert info["is_correct"] and info["grade"] == "correct"
        assert info["reward_components"] == {"correct": 1.0, "format": 1.0}
        assert info["reference_answer"] == env.unwrapped.task["answer"]
        assert STEP_KEYS | set(STEP_INFO_KEYS) <= set(info)


def test_wrong_answer_and_missing_answer():
    env = gym.make("rllm/Math-v1")
    env.reset(seed=1)
    gold = env.unwrapped.task["answer"]
    wrong = "\\boxed{12345678987654321}" if gold != "12345678987654321" else "\\boxed{0}"
    _, reward, terminated, _, info = env.step(wrong)
    assert reward == 0.0 and terminated and not info["invalid_action"]
    assert info["grade"] == "incorrect" and info["reward_components"]["format"] == 1.0
    env.reset(seed=1)
    obs, reward, terminated, _, info = env.step("I have no idea.")
    assert reward == 0.0 and terminated and info["invalid_action"]
    assert info["grade"] == "no_answer" and info["extracted_answer"] is None
    assert "\\boxed{}" in obs


def test_phrase_fallback_is_graded_without_format_credit():
    env = gym.make("rllm/Math-v1")
    env.reset(seed=2)
    gold = env.unwrapped.task["answer"]
    _, reward, _, _, info = env.step(f"Some work.\nThe final answer is ${gold}$")
    assert reward == 1.0 and info["answer_source"] == "phrase"
    assert info["reward_components"] == {"correct": 1.0, "format": 0.0}


def test_format_weight_shapes_reward():
    env = gym.make("rllm/Math-v1", reward_weights={"format": 0.1})
    env.reset(seed=0)
    _, reward, *_ = env.step("\\boxed{definitely not it}")
    assert reward == pytest.approx(0.1)


def test_thinking_is_ignored():
    env = gym.make("rllm/Math-v1")
    env.reset(seed=3)
    gold = env.unwrapped.task["answer"]
    _, reward, *_ = env.step(f"<think>maybe \\boxed{{{gold}}}? no.</think> \\boxed{{-99999}}")
    assert reward == 0.0
    env.reset(seed=3)
    _, reward, *_ = env.step(f"<think>hmm \\boxed{{-99999}}</think> So \\boxed{{{gold}}}.")
    assert reward == 1.0


def test_multi_turn_retries():
    env = gym.make("rllm/Math-v1", max_turns=2)
    env.reset(seed=4)
    obs, reward, terminated, truncated, info = env.step("\\boxed{-99999}")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert "Try again" in obs and "reference_answer" not in info
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())
    assert (reward, terminated, truncated) == (1.0, True, False)


@pytest.mark.parametrize("difficulty", [1, 2, 3, 4, 5])
def test_difficulty_levels_work(difficulty):
    env = gym.make("rllm/Math-v1", difficulty=difficulty)
    _, info = env.reset(seed=0)
    assert info["difficulty"] == difficulty
    assert env.step(env.unwrapped.oracle_action())[1] == 1.0


def test_families_restrict_tasks():
    env = gym.make("rllm/Math-v1", families=["geometry"])
    assert {env.reset(seed=s)[1]["family"] for s in range(6)} == {"geometry"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"difficulty": 0},
        {"difficulty": 6},
        {"families": ["calculus"]},
        {"timeout": 0},
        {"answer_format": "lenient"},
        {"dataset_format": "csv", "dataset": str(DATA / "math500.jsonl")},
        {"field_map": {"problem": "q"}},
        {"dataset": 42},
        {"dataset": str(DATA / "math500.jsonl"), "difficulty": 3},
        {"dataset": str(DATA / "math500.jsonl"), "families": ["geometry"]},
    ],
)
def test_bad_arguments_raise_early(kwargs):
    with pytest.raises(InvalidEnvConfig):
        MathEnv(**kwargs)


def test_unknown_kwarg_suggests_the_right_one():
    with pytest.raises(InvalidEnvConfig, match="difficulty"):
        rllm_envs.make("rllm/Math-v1", dificulty=2)


# ----------------------------------------------------------------------------------- datasets

DATASETS = [
    ("math500.jsonl", 4, "11"),
    ("hendrycks_math.jsonl", 3, "35"),
    ("gsm8k.jsonl", 2, "31"),
    ("deepscaler.json", 2, "25"),
    ("aime.jsonl", 2, "1"),
    ("amc.parquet", 2, "13"),
]


@pytest.mark.parametrize(("name", "size", "first_answer"), DATASETS)
def test_dataset_files_in_real_schemas(name, size, first_answer):
    env = gym.make("rllm/Math-v1", dataset=str(DATA / name))
    assert len(env.unwrapped.tasks) == size
    obs, _ = env.reset(options={"index": 0})
    assert env.unwrapped.task["answer"] == first_answer
    assert ANSWER_FORMAT in obs
    for i in range(size):
        env.reset(options={"index": i})
        assert env.step(env.unwrapped.oracle_action())[1] == 1.0
        env.reset(options={"index": i})
        assert env.step("\\boxed{-424242}")[1] == 0.0


def test_gsm8k_answer_and_solution_are_split():
    env = MathEnv(dataset=str(DATA / "gsm8k.jsonl"))
    env.reset(options={"index": 1})
    assert env.task is not None
    assert env.task["answer"] == "3750" and "#### " not in env.task["solution"]
    assert env.step("So they sell \\boxed{3,750} rolls.")[1] == 1.0


def test_ids_come_from_the_dataset():
    env = MathEnv(dataset=str(DATA / "math500.jsonl"))
    assert env.reset(options={"index": 0})[1]["task_id"] == "test/prealgebra/1001.json"
    env = MathEnv(dataset=str(DATA / "aime.jsonl"))
    assert env.reset(options={"index": 1})[1]["task_id"] == "2024-II-98"


def test_field_map_for_other_schemas(tmp_path):
    path = tmp_path / "custom.jsonl"
    rows = [{"q": "What is 6 times 7?", "final": 42}, {"q": "What is 2 + 2?", "final": "4"}]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    env = MathEnv(dataset=str(path), field_map={"problem": "q", "answer": "final"})
    env.reset(options={"index": 0})
    assert env.step("\\boxed{42}")[1] == 1.0


def test_records_can_be_passed_directly():
    env = MathEnv(dataset=[{"problem": "What is 1/2 + 1/4?", "answer": "\\frac{3}{4}"}])
    env.reset(seed=0)
    assert env.step("\\boxed{0.75}")[1] == 1.0


def test_bad_datasets_raise_with_a_fix(tmp_path):
    with pytest.raises(InvalidDataset, match="no such file"):
        MathEnv(dataset=str(tmp_path / "missing.jsonl"))
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"question": "What?", "response": "1"}))
    with pytest.raises(InvalidDataset, match="field_map"):
        MathEnv(dataset=str(path))
    path.write_text(json.dumps({"problem": "What?", "solution": "no box here"}))
    with pytest.raises(InvalidDataset, match="boxed"):
        MathEnv(dataset=str(path))


def test_reset_with_a_task_record():
    env = MathEnv()
    obs, info = env.reset(options={"task": {"problem": "What is 3 squared?", "answer": "9"}})
    assert obs.startswith("What is 3 squared?") and info["task_id"].startswith("custom-")
    assert env.step("\\boxed{9}")[1] == 1.0
    with pytest.raises(InvalidEnvConfig):
        env.reset(options={"task": {"problem": "No answer"}})


def test_score_function():
    task = {"answer": "\\frac{1}{2}"}
    assert score("so \\boxed{0.5}", task) == 1.0
    assert score("so \\boxed{0.6}", task) == 0.0
    assert score(None, task) == 0.0 and score("garbage", task) == 0.0


# ------------------------------------------------- reward components cannot be gamed


def _step(action: str, seed: int = 0, **kwargs):
    env = gym.make("rllm/Math-v1", reward_weights={"format": 0.1}, **kwargs)
    env.reset(seed=seed)
    gold = env.unwrapped.task["answer"]
    _, reward, _, _, info = env.step(action.replace("GOLD", gold))
    return reward, info


def test_clean_correct_answer_gets_every_component():
    reward, info = _step("Working... so \\boxed{GOLD}.")
    assert info["reward_components"] == {"correct": 1.0, "format": 1.0}
    assert reward == pytest.approx(1.1) and info["format_issue"] is None


@pytest.mark.parametrize(
    ("action", "issue"),
    [
        ("\\boxed{42} \\times \\boxed{5} \\boxed{GOLD}", "multiple_boxes"),
        ("\\boxed{GOLD} or \\boxed{-99999}", "multiple_boxes"),
        ("\\boxed{<answer>}", "placeholder"),
        (
            "Solve the problem... \\boxed{<answer>} with <answer> replaced by your result.",
            "placeholder",
        ),
        ("\\boxed{}", "empty_box"),
        ("The final answer is GOLD", "no_box"),
        ("<think>\\boxed{GOLD}", "unfinished_thinking"),
    ],
)
def test_format_is_zero_without_one_clean_final_box(action, issue):
    reward, info = _step(action)
    assert info["reward_components"]["format"] == 0.0 and info["format_issue"] == issue
    assert reward < 1.1


def test_format_only_reply_gets_no_correctness():
    # A clean box with a wrong value: format is earned, correctness is not.
    reward, info = _step("\\boxed{-424242}")
    assert info["reward_components"] == {"correct": 0.0, "format": 1.0}
    assert reward == pytest.approx(0.1)


def test_parroted_template_scores_nothing():
    env = gym.make("rllm/Math-v1", reward_weights={"format": 0.1})
    obs, _ = env.reset(seed=5)
    # A model that copies the instruction, box and all.
    _, reward, _, _, info = env.step(obs.split("\n\n")[-1])
    assert reward == 0.0 and info["reward_components"] == {"correct": 0.0, "format": 0.0}


def test_answer_format_any_reads_unboxed_answers():
    env = gym.make("rllm/Math-v1", answer_format="any")
    env.reset(seed=2)
    gold = env.unwrapped.task["answer"]
    _, reward, _, _, info = env.step(f"I worked it out. It is ${gold}$")
    assert reward == 1.0 and info["answer_source"] == "latex"
    assert info["reward_components"]["format"] == 0.0  # format always means one box
    strict = gym.make("rllm/Math-v1")
    strict.reset(seed=2)
    assert strict.step(f"I worked it out. It is ${gold}$")[1] == 0.0


def test_score_function_modes():
    task = {"answer": "1000.99"}
    assert score("so it costs 1 000,99 €", task) == 0.0
    assert score("so it costs 1000,99 €", task, answer_format="any") == 1.0


def test_the_reference_answer_can_be_withheld():
    """Issue #31 (R1): a wrong last answer showed the reference, so whoever plays the env (a
    server's client) could read a dataset's answers off and replay them on the same index.
    ``reveal_reference=False`` withholds it from the observation and ``info``."""
    records = [{"problem": "What is 6 times 7?", "answer": "42"}]
    shown = gym.make("rllm/Math-v1", dataset=records)
    shown.reset(seed=0)
    obs, _, _, _, info = shown.step("\\boxed{41}")
    assert "\\boxed{42}" in obs and info["reference_answer"] == "42"
    hidden = gym.make("rllm/Math-v1", dataset=records, reveal_reference=False)
    hidden.reset(seed=0)
    obs, reward, terminated, _, info = hidden.step("\\boxed{41}")
    assert (reward, terminated) == (0.0, True)
    assert "42" not in obs and "reference_answer" not in info and info["grade"] == "incorrect"
    hidden.reset(seed=0)
    obs, reward, *_ = hidden.step("\\boxed{42}")
    assert reward == 1.0 and obs == "Correct."
    with pytest.raises(InvalidEnvConfig, match="reveal_reference"):
        gym.make("rllm/Math-v1", reveal_reference="no")
