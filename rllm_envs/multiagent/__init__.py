"""Multi-agent text environments (PettingZoo ``ParallelEnv``, with the AEC form derived).

Make them with :func:`rllm_envs.make_parallel` / :func:`rllm_envs.make_aec` (or PettingZoo's
``pettingzoo.make("parallel", "rllm/TicTacToe-v0")`` after ``import rllm_envs``). This package
imports only the shared base; each env module is imported when an env is made.
"""

from rllm_envs.multiagent.base import (
    MA_INFO_KEYS,
    MA_STEP_INFO_KEYS,
    POLICY_KINDS,
    AgentOutcome,
    MultiAgentTextEnv,
    ScriptedPolicy,
)

__all__ = [
    "MultiAgentTextEnv",
    "AgentOutcome",
    "ScriptedPolicy",
    "POLICY_KINDS",
    "MA_INFO_KEYS",
    "MA_STEP_INFO_KEYS",
]
