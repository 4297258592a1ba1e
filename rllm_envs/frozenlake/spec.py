"""The agent-facing spec of ``rllm/FrozenLake`` (:class:`rllm_envs.spec.AgentSpec`)."""

from __future__ import annotations

from rllm_envs.spec import AgentSpec

SPEC = AgentSpec(
    system_prompt=(
        "You are an agent on a frozen lake. Each turn, think briefly if you need to, then reply "
        "with exactly one move inside <action></action>: Left, Down, Right or Up."
    ),
    max_tokens=64,
    # The parser reads `<action>Right` without its closing tag.
    stop=("</action>",),
)
