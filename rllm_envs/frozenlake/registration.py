"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/FrozenLake-v1",
        previous={
            "rllm/FrozenLake-v0": (
                "random maps draw the start and goal cells, and a `hole` component charges a fall"
            )
        },
        entry_point="rllm_envs.frozenlake.frozenlake_env:FrozenLakeEnv",
        description="Walk a frozen-lake grid to the goal, avoiding holes (multi-turn, "
        "Gymnasium's dynamics, random or fixed maps).",
        family="FrozenLake",
        spec="rllm_envs.frozenlake.spec:SPEC",
    ),
)
