"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/Countdown-v1",
        previous={
            "rllm/Countdown-v0": (
                "`format` and `valid_expression` need the given numbers, targets are never a one-"
                "operator fold of them, tasks are balanced by fixed shape (with four numbers "
                "or fewer) and come from held-out universes keyed by the question's numbers"
            )
        },
        entry_point="rllm_envs.countdown.countdown_env:CountdownEnv",
        description="Single-turn Countdown: combine the given numbers with + - * / into the "
        "target, exact arithmetic, each number once (procedural with a difficulty knob, or "
        "nums/target files such as Countdown-Tasks-3to4).",
        family="Countdown",
        spec="rllm_envs.countdown.spec:SPEC",
        scorer="rllm_envs.countdown.rules:score",
    ),
)
