r"""The agent-facing spec of ``rllm/Math`` (:class:`rllm_envs.spec.AgentSpec`)."""

from __future__ import annotations

from rllm_envs import demonstrations
from rllm_envs.spec import AgentSpec

SPEC = AgentSpec(
    system_prompt=(
        "Solve the problem step by step. Keep the working short. At the end, put the final "
        "answer, and nothing else, in a single \\boxed{}."
    ),
    # Shown, not described: a small instruct model copies a format it has seen far more
    # reliably than one described in words; the example's task lies outside every source.
    demonstration=demonstrations.MATH.messages,
    max_tokens=384,
)
