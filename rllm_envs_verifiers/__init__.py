"""verifiers plugin module for rllm-envs (taskset id ``rllm-envs-verifiers``).

verifiers' loader imports a taskset by a top-level module name; this one re-exports the
taskset, env and harness of :mod:`rllm_adapters.verifiers`, where they are documented.
"""

from rllm_adapters.verifiers import (
    RllmChatHarness,
    RllmChatHarnessConfig,
    RllmEnv,
    RllmEnvConfig,
    RllmTask,
    RllmTaskData,
    RllmTaskset,
    RllmTasksetConfig,
)

__all__ = [
    "RllmChatHarness",
    "RllmChatHarnessConfig",
    "RllmEnv",
    "RllmEnvConfig",
    "RllmTask",
    "RllmTaskData",
    "RllmTaskset",
    "RllmTasksetConfig",
]
