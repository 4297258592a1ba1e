"""The agent-facing spec of ``rllm/Countdown`` (:class:`rllm_envs.spec.AgentSpec`)."""

from __future__ import annotations

from rllm_envs.spec import AgentSpec

# No stop string: the parser needs the closing `</answer>`.
SPEC = AgentSpec(
    system_prompt=(
        "Combine the given numbers with + - * / and parentheses to reach the target. Reason "
        "briefly, then give one arithmetic expression inside <answer></answer>."
    ),
)
