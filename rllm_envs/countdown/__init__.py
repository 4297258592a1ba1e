"""Countdown: reach a target from given numbers with ``+ - * /`` (``rllm/Countdown-v1``).

The rules and scorer (:mod:`rllm_envs.countdown.rules`), the solver
(:mod:`rllm_envs.countdown.solver`) and the task sources (:mod:`rllm_envs.countdown.tasks`)
are plain modules; the environment is :class:`rllm_envs.countdown.countdown_env.CountdownEnv`.
"""

from rllm_envs.countdown.countdown_env import CountdownEnv
from rllm_envs.countdown.rules import (
    COMPONENTS,
    Grade,
    extract_answer,
    grade,
    parse_expression,
    score,
)
from rllm_envs.countdown.solver import solve
from rllm_envs.countdown.tasks import (
    DIFFICULTY_PRESETS,
    countdown_dataset_tasks,
    load_countdown_tasks,
    procedural_tasks,
)

__all__ = [
    "COMPONENTS",
    "DIFFICULTY_PRESETS",
    "CountdownEnv",
    "Grade",
    "countdown_dataset_tasks",
    "extract_answer",
    "grade",
    "load_countdown_tasks",
    "parse_expression",
    "procedural_tasks",
    "score",
    "solve",
]
