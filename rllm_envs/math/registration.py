"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/Math-v1",
        previous={
            "rllm/Math-v0": (
                "`correct` and `format` need one clean final box with the value in final form, "
                "named tuples match by name, tasks come from held-out universes keyed by the "
                "question's numbers (a family split only where each universe keeps 20 distinct "
                "questions), no answer above max(1/labels, 5%) of a family's tasks"
            )
        },
        entry_point="rllm_envs.math.math_env:MathEnv",
        description="Single-turn math with a \\boxed{} answer graded exactly (procedural families "
        "with a difficulty knob, or MATH/GSM8K/AIME/DeepScaleR files).",
        family="Math",
        spec="rllm_envs.math.spec:SPEC",
        scorer="rllm_envs.math.math_env:score",
    ),
)
