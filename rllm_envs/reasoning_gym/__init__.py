"""reasoning-gym's task families as one text env (``rllm/ReasoningGym-v0``).

``pip install "rllm-envs[reasoning-gym]"``. The spec (:mod:`rllm_envs.reasoning_gym.spec`),
task source (:mod:`rllm_envs.reasoning_gym.tasks`) and scorer
(:mod:`rllm_envs.reasoning_gym.scoring`) are plain modules; the environment is
:class:`rllm_envs.reasoning_gym.reasoning_gym_env.ReasoningGymEnv`. Nothing here imports
reasoning-gym until a task source is built.
"""

from rllm_envs.reasoning_gym.reasoning_gym_env import ReasoningGymEnv
from rllm_envs.reasoning_gym.scoring import COMPONENTS, Grade, extract_answer, grade, score
from rllm_envs.reasoning_gym.tasks import ReasoningGymTasks, family_names, oracle_answer

__all__ = [
    "COMPONENTS",
    "Grade",
    "ReasoningGymEnv",
    "ReasoningGymTasks",
    "extract_answer",
    "family_names",
    "grade",
    "oracle_answer",
    "score",
]
