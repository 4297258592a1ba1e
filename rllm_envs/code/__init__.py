"""Competitive-programming environments (``rllm/Code-v0``, ``rllm/CodeMultiTurn-v1``).

* :mod:`rllm_envs.code.judge` -- run a submission on tests in one sandbox and give
  per-test verdicts with LiveCodeBench's comparison rules; ``score(answer, task)``.
* :mod:`rllm_envs.code.datasets` -- loaders for LiveCodeBench, TACO/APPS, Codeforces,
  HumanEval and MBPP records.
* :mod:`rllm_envs.code.code_env` -- the Gymnasium environment.
"""

from __future__ import annotations

__all__ = ["CodeEnv"]


def __getattr__(name: str) -> object:
    # Lazy, so that importing the judge or the loaders does not import Gymnasium env code.
    if name == "CodeEnv":
        from rllm_envs.code.code_env import CodeEnv

        return CodeEnv
    raise AttributeError(name)
