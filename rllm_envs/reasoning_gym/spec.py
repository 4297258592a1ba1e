"""The agent-facing spec of ``rllm/ReasoningGym-v0`` as data (no Gymnasium or reasoning-gym import).

The first observation is the reasoning-gym question followed by :data:`ANSWER_FORMAT`, so a
plain string-in/string-out model can answer it. The registry row names :data:`SPEC`.
"""

from __future__ import annotations

from rllm_envs.spec import AgentSpec

__all__ = [
    "ANSWER_FORMAT",
    "SYSTEM_PROMPT",
    "MAX_TOKENS",
    "SPEC",
    "DEFAULT_DATASET",
    "DEFAULT_SIZE",
]

#: Appended to every question: reasoning-gym's own answer convention (``<answer>`` tags).
ANSWER_FORMAT = (
    "Give your final answer, and nothing else, inside <answer></answer> tags at the end of "
    "your reply."
)

#: The family's system prompt (the agent's; the observation alone is enough to answer).
SYSTEM_PROMPT = (
    "Solve the task. Think briefly if you need to, then give only the final answer inside "
    "<answer></answer>, in the exact form the task asks for."
)

#: Most tokens one reply needs (short working plus the answer).
MAX_TOKENS = 512

#: The spec the registry row names.
SPEC = AgentSpec(system_prompt=SYSTEM_PROMPT, max_tokens=MAX_TOKENS)

#: The family the env plays when no ``dataset`` is given.
DEFAULT_DATASET = "basic_arithmetic"

#: Tasks in one universe unless ``size`` says otherwise (some families precompute them all).
DEFAULT_SIZE = 1000
