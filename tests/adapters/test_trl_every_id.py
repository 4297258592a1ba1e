"""Every id trains through TRL's ``GRPOTrainer`` on CPU (the tiny model, one step): the ids the
other TRL tests do not train go through the path their kind takes here, single-turn ids with
``EnvReward`` and tool ids with ``environment_factory``, so that together the TRL tests train
every id with one model seat."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")

import rllm_envs  # noqa: E402
from rllm_adapters.trl import (  # noqa: E402
    EnvReward,
    env_dataset,
    environment_class,
    one_seat_ids,
)
from tests.adapters.helpers import grpo_args  # noqa: E402

#: Ids the other TRL tests train: EnvReward (test_trl_adapter, the docs' snippet),
#: environment_factory (test_trl_adapter, test_models_trl) and rollout_func (test_trl_rollout).
TRAINED_ELSEWHERE = {
    "rllm/Math-v1",
    "rllm/ToolUse-v1",
    "rllm/FrozenLake-v1",
    "rllm/Search-v1",
    "rllm/CodeMultiTurn-v1",
    "rllm/TicTacToe-v0",
}
#: The others, each with the path its kind takes.
PATHS = {
    "rllm/Code-v0": "reward",
    "rllm/CodeCpp-v0": "reward",
    "rllm/Countdown-v1": "reward",
    "rllm/ReasoningGym-v0": "reward",
    "rllm/SWE-v0": "tools",
}


def test_the_trl_tests_train_every_id_with_one_model_seat():
    assert set(PATHS) | TRAINED_ELSEWHERE == set(one_seat_ids())
    assert not set(PATHS) & TRAINED_ELSEWHERE


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "path"), sorted(PATHS.items()))
def test_grpo_trainer_trains_the_id(tiny_path, tmp_path, env_id, path):
    from trl import GRPOTrainer

    try:
        rllm_envs.make(env_id).close()
    except rllm_envs.DependencyNotInstalled as e:
        pytest.skip(str(e))
    if path == "reward":
        reward = EnvReward(env_id)
        trainer = GRPOTrainer(
            model=str(tiny_path),
            reward_funcs=reward,
            args=grpo_args(tmp_path, max_steps=1),
            train_dataset=env_dataset(env_id, num_tasks=4),
        )
        name = reward.__name__
    else:
        from pathlib import Path

        import trl
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(tiny_path)
        # TRL parses tool calls for chat templates it knows: give the tiny tokenizer Qwen3's.
        template = Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja"
        tokenizer.chat_template = template.read_text()
        Env = environment_class(env_id, probe_tasks=2)
        trainer = GRPOTrainer(
            model=str(tiny_path),
            processing_class=tokenizer,
            environment_factory=Env,
            args=grpo_args(tmp_path, max_steps=1, max_tool_calling_iterations=2),
            train_dataset=env_dataset(env_id, num_tasks=4, include_observation=False),
        )
        name = Env.__name__
    trainer.train()
    assert trainer.state.global_step == 1
    assert any(f"rewards/{name}/mean" in h for h in trainer.state.log_history)
