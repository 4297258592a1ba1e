"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/Code-v0",
        entry_point="rllm_envs.code.code_env:CodeEnv",
        description="Competitive programming: a Python program judged on hidden tests in a "
        "sandbox (LiveCodeBench rules; embedded problems, or LCB/TACO/CF/HumanEval/MBPP data).",
        family="Code",
        spec="rllm_envs.code.spec:SPEC",
        scorer="rllm_envs.code.judge:score",
        # Verdicts near a time limit depend on machine load (TLE vs AC).
        nondeterministic=True,
    ),
    EnvEntry(
        id="rllm/CodeMultiTurn-v1",
        previous={
            "rllm/CodeMultiTurn-v0": (
                "an attempt that passes the example tests is judged on the hidden tests and "
                "ends the episode (a program run on hidden inputs is never followed by feedback "
                "that shows program output); feedback gives one line for the hidden tests as a "
                "whole, never how many passed; reward_mode='fraction' pays only for hidden "
                "tests the prompt does not show"
            )
        },
        entry_point="rllm_envs.code.code_env:CodeEnv",
        description="Competitive programming with retries: feedback on the first failing example "
        "test, up to 4 attempts; passing the examples ends the episode on the hidden tests.",
        family="Code",
        spec="rllm_envs.code.spec:SPEC",
        scorer="rllm_envs.code.judge:score",
        kwargs={"multi_turn": True, "max_turns": 4},
        nondeterministic=True,
    ),
    EnvEntry(
        id="rllm/CodeCpp-v0",
        entry_point="rllm_envs.code.code_env:CodeEnv",
        description="Competitive programming in C++17: compiled with g++ and judged in the "
        "sandbox (stdin problems; needs `apt-get install g++`).",
        family="Code",
        spec="rllm_envs.code.spec:SPEC",
        scorer="rllm_envs.code.judge:score",
        kwargs={"language": "cpp"},
        nondeterministic=True,
    ),
)
