"""Software engineering on repositories (``rllm/SWE-v0``): fix an issue, hidden tests judge.

The family's folder holds everything about it:

* :mod:`rllm_envs.swe.swe_env` -- the environment (:class:`SWEEnv`);
* :mod:`rllm_envs.swe.tasks` and :mod:`rllm_envs.swe.projects` -- the embedded procedural
  task source (small repositories with seeded bugs) and the task schema;
* :mod:`rllm_envs.swe.loader` -- SWE-bench/SWE-Gym JSONL over git repositories on disk;
* :mod:`rllm_envs.swe.judge` and :mod:`rllm_envs.swe.executor` -- the scorer: hidden tests in
  a fresh sandbox, verdicts on the host;
* :mod:`rllm_envs.swe.repo` -- copy-on-write working copies and unified diffs;
* :mod:`rllm_envs.swe.spec` -- the agent-facing spec as data (prompt, call format,
  demonstration, stop strings, token limit).
"""

from __future__ import annotations

from rllm_envs.swe.judge import Verdict, close_pools, score, verdict
from rllm_envs.swe.swe_env import SWEEnv
from rllm_envs.swe.tasks import MAX_DIFFICULTY, base_files, fixed_files, generate

__all__ = [
    "SWEEnv",
    "Verdict",
    "verdict",
    "score",
    "close_pools",
    "generate",
    "base_files",
    "fixed_files",
    "MAX_DIFFICULTY",
]
