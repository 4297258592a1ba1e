"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/ReasoningGym-v0",
        entry_point="rllm_envs.reasoning_gym.reasoning_gym_env:ReasoningGymEnv",
        description="Any of reasoning-gym's ~100 procedural task families (dataset=<name>, "
        "size, task_seed, config, curriculum level), scored by reasoning-gym's score_answer.",
        family="ReasoningGym",
        spec="rllm_envs.reasoning_gym.spec:SPEC",
        scorer="rllm_envs.reasoning_gym.scoring:score",
        extra="reasoning-gym",
    ),
)
