"""The agent-facing spec of ``rllm/ToolUse`` (:class:`rllm_envs.spec.AgentSpec`)."""

from __future__ import annotations

from rllm_envs import demonstrations
from rllm_envs.spec import AgentSpec

#: The tool families' system prompt (ToolUse and Search share it).
TOOL_PROMPT = (
    'You can call tools. To call one, write <tool_call>{"name": ..., "arguments": '
    "{...}}</tool_call> and wait for its result. Give your final answer in the format the "
    "task asks for."
)

SPEC = AgentSpec(
    turns="tool",
    system_prompt=TOOL_PROMPT,
    # An invented task with an invented tool: a copied call earns nothing.
    demonstration=demonstrations.TOOL.messages,
    max_tokens=192,
    # One call per turn, so the model waits for the tool's result instead of inventing one.
    stop=("</tool_call>",),
)
