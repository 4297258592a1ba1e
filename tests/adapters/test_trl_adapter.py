"""TRL adapter: env-backed reward functions, task datasets and tool environments, and
``GRPOTrainer`` running a few steps on CPU with each (tiny model)."""

from __future__ import annotations

import inspect
import pickle

import pytest

pytest.importorskip("datasets")

from rllm_adapters.trl import EnvReward, env_dataset, environment_class  # noqa: E402
from tests.adapters.helpers import grpo_args  # noqa: E402

MATH = "rllm/Math-v1"
TOOLS = "rllm/ToolUse-v1"
TOOL_KWARGS = {"python": False}


def _oracle(env_id, row, env_kwargs=None):
    import gymnasium as gym

    env = gym.make(env_id, **(env_kwargs or {})).unwrapped
    env.reset(seed=row["seed"], options={"index": row["task_index"]})
    return env.oracle_action()


def test_env_dataset_columns_and_prompts():
    ds = env_dataset(MATH, num_tasks=4, start=2, seed=10)
    assert ds.column_names == ["prompt", "env_id", "task_index", "seed", "task_id"]
    assert ds["task_index"] == [2, 3, 4, 5] and ds["seed"] == [10, 11, 12, 13]
    prompt = ds[0]["prompt"]
    assert prompt[-1]["role"] == "user" and "\\boxed" in prompt[-1]["content"]
    plain = env_dataset(MATH, num_tasks=1, conversational=False)
    assert isinstance(plain[0]["prompt"], str) and plain[0]["prompt"]
    bare = env_dataset(TOOLS, num_tasks=1, env_kwargs=TOOL_KWARGS, include_observation=False)
    assert bare[0]["prompt"][-1]["content"] == ""


def test_env_reward_scores_reference_one_and_garbage_zero():
    ds = env_dataset(MATH, num_tasks=3)
    reward = EnvReward(MATH)
    rows = {k: ds[k] for k in ("env_id", "task_index", "seed")}
    answers = [_oracle(MATH, ds[i]) for i in range(3)]
    assert reward(ds["prompt"], answers, **rows) == [1.0, 1.0, 1.0]
    garbage = ["", "no idea", "\\boxed{not a number}"]
    assert reward(ds["prompt"], garbage, **rows) == [0.0, 0.0, 0.0]
    # conversational completions (lists of assistant messages) work too
    as_messages = [[{"role": "assistant", "content": a}] for a in answers]
    assert reward(ds["prompt"], as_messages, **rows) == [1.0, 1.0, 1.0]
    # rows of another env or without a task are not applicable
    other = dict(rows, env_id=["x", MATH, MATH])
    assert reward(ds["prompt"], answers, **other)[0] is None
    assert reward(["p"], ["a"]) == [None]
    assert reward.__name__ == "math_v1_reward"
    # picklable (reward functions cross process boundaries)
    clone = pickle.loads(pickle.dumps(reward))
    assert clone(ds["prompt"], answers, **rows) == [1.0, 1.0, 1.0]


def test_environment_class_exposes_typed_tools_and_env_reward():
    from transformers.utils import get_json_schema

    Env = environment_class(TOOLS, env_kwargs=TOOL_KWARGS, probe_tasks=32)
    names = {s["function"]["name"] for s in Env.tool_schemas}
    assert "final_answer" in names and "python" not in names
    env = Env()
    for name in names:
        method = getattr(env, name)
        schema = get_json_schema(method)  # what TRL renders into the prompt
        assert schema["function"]["name"] == name
        assert schema["function"]["description"]
        assert inspect.signature(method).return_annotation is str
    ds = env_dataset(TOOLS, num_tasks=3, env_kwargs=TOOL_KWARGS, include_observation=False)
    for row in ds:
        text = env.reset(**row)
        assert "final_answer" in text
        # Play the env's oracle through the tool methods: the env gives the reward.
        import json

        import gymnasium as gym

        oracle_env = gym.make(TOOLS, **TOOL_KWARGS).unwrapped
        oracle_env.reset(seed=row["seed"], options={"index": row["task_index"]})
        while not env.done:
            action = oracle_env.oracle_action()
            call = json.loads(action.split("<tool_call>", 1)[1].split("</tool_call>", 1)[0])
            result = getattr(env, call["name"])(**call["arguments"])
            oracle_env.step(action)
            assert isinstance(result, str)
        assert env.get_reward() == 1.0
    env.reset(**ds[0])
    assert env.final_answer(answer="certainly wrong") is not None
    assert env.get_reward() == 0.0 and env.done
    assert "ended" in env.final_answer(answer="again")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
def test_grpo_trainer_with_env_reward(tiny_path, tmp_path):
    from trl import GRPOTrainer

    reward = EnvReward(MATH)
    calls = []

    def counting(prompts, completions, **columns):
        out = reward(prompts, completions, **columns)
        calls.append(out)
        return out

    counting.__name__ = reward.__name__
    trainer = GRPOTrainer(
        model=str(tiny_path),
        reward_funcs=counting,
        args=grpo_args(tmp_path),
        train_dataset=env_dataset(MATH, num_tasks=8),
    )
    trainer.train()
    assert trainer.state.global_step == 2
    assert calls and all(r in (0.0, 1.0) for batch in calls for r in batch)
    logged = [h for h in trainer.state.log_history if "rewards/math_v1_reward/mean" in h]
    assert logged


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
def test_grpo_trainer_with_environment_factory(tiny_path, tmp_path):
    from pathlib import Path

    import trl
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    # TRL parses tool calls for chat templates it knows: give the tiny tokenizer Qwen3's.
    template = Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
    tokenizer.chat_template = template.read_text()
    Env = environment_class(TOOLS, env_kwargs=TOOL_KWARGS, probe_tasks=16)
    trainer = GRPOTrainer(
        model=str(tiny_path),
        processing_class=tokenizer,
        environment_factory=Env,
        args=grpo_args(tmp_path, max_tool_calling_iterations=2),
        train_dataset=env_dataset(
            TOOLS, num_tasks=8, env_kwargs=TOOL_KWARGS, include_observation=False
        ),
    )
    trainer.train()
    assert trainer.state.global_step == 2
    assert all(isinstance(e, Env) for e in trainer.environments)
    assert any(f"rewards/{Env.__name__}/mean" in h for h in trainer.state.log_history)
