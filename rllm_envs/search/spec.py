"""The agent-facing spec of ``rllm/Search`` (:class:`rllm_envs.spec.AgentSpec`)."""

from __future__ import annotations

from dataclasses import replace

from rllm_envs import demonstrations
from rllm_envs.tooluse.spec import SPEC as TOOL_SPEC

# The tool family's turn logic and prompt, with a search of an invented person as the example.
SPEC = replace(TOOL_SPEC, demonstration=demonstrations.SEARCH.messages)
