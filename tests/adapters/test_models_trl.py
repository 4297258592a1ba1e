"""TRL's ``GRPOTrainer(environment_factory=...)`` accepts the converted SmolLM2 folder as is
(its tool-capable template and response template) on ``rllm/ToolUse-v1``: one short step."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")

from rllm_adapters.models import resolve_model  # noqa: E402
from rllm_adapters.trl import env_dataset, environment_class  # noqa: E402
from rllm_envs.error import DependencyNotInstalled  # noqa: E402
from tests.adapters.helpers import grpo_args  # noqa: E402

TOOLS = "rllm/ToolUse-v1"
TOOL_KWARGS = {"python": False}


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore")
def test_grpo_environment_factory_with_the_real_model(tmp_path):
    from trl import GRPOTrainer

    try:
        model = resolve_model("smollm2-135m-instruct")
    except DependencyNotInstalled as e:
        pytest.skip(str(e))
    Env = environment_class(TOOLS, env_kwargs=TOOL_KWARGS, probe_tasks=16)
    args = grpo_args(
        tmp_path,
        max_steps=1,
        per_device_train_batch_size=2,
        num_generations=2,
        max_completion_length=24,
        max_tool_calling_iterations=1,
        learning_rate=1e-6,
    )
    trainer = GRPOTrainer(
        model=model,
        environment_factory=Env,
        args=args,
        train_dataset=env_dataset(
            TOOLS, num_tasks=4, env_kwargs=TOOL_KWARGS, include_observation=False
        ),
    )
    trainer.train()
    assert trainer.state.global_step == 1
    assert all(isinstance(e, Env) for e in trainer.environments)
    assert any(f"rewards/{Env.__name__}/mean" in h for h in trainer.state.log_history)
