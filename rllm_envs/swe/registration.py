"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/SWE-v0",
        entry_point="rllm_envs.swe.swe_env:SWEEnv",
        description="Repository-level software engineering: fix an issue in a Python repository "
        "with tools (read, search, edit, run tests in a sandbox), judged by hidden fail-to-pass "
        "and pass-to-pass tests (embedded repos with seeded bugs, or SWE-bench JSONL over local "
        "git repositories).",
        family="SWE",
        spec="rllm_envs.swe.spec:SPEC",
        scorer="rllm_envs.swe.judge:score",
        # Verdicts run tests in a sandbox under time limits.
        nondeterministic=True,
    ),
)
