"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/ToolUse-v1",
        previous={
            "rllm/ToolUse-v0": (
                "a math answer counts only as its value in final form, tasks come from held-out "
                "universes keyed by the question's numbers (a family split only where each "
                "universe keeps 20 distinct questions), no answer above max(1/labels, 5%) of a "
                "family's tasks"
            )
        },
        entry_point="rllm_envs.tooluse.tooluse_env:ToolUseEnv",
        description="Multi-turn function calling: catalogue look-ups, unit and date arithmetic, "
        "directory chains and exact math through tools (calculator, sandboxed Python).",
        family="ToolUse",
        spec="rllm_envs.tooluse.spec:SPEC",
        scorer="rllm_envs.tooluse.tasks:score",
        # The Python tool runs model code in the sandbox, whose output can vary run to run.
        nondeterministic=True,
    ),
)
