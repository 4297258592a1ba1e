"""rllm_agents: turn environment observations into chat messages and model replies into actions.

* :mod:`rllm_agents.agent` -- agents that keep the conversation and read actions from replies
  (by the one rule of :mod:`rllm_envs.text`); :func:`make_agent` builds one from the env
  family's spec (:class:`rllm_envs.spec.AgentSpec`).
* :mod:`rllm_agents.chat` -- :class:`ChatTokenizer`, which builds token-exact multi-turn prompts
  by appending to the sampled sequence instead of re-tokenising the chat.
* :mod:`rllm_agents.trajectory` -- :class:`Trajectory` / :class:`Step`, per turn: prompt ids,
  completion ids, logprobs, reward, info; the loss mask and the invariant check.
* :mod:`rllm_agents.writers` -- JSONL and Parquet writers and readers.

Nothing here imports torch or transformers; the tokenizer is passed in.
"""

from __future__ import annotations

from rllm_agents.agent import (
    Agent,
    FrozenLakeBoardAgent,
    GenericAgent,
    ToolAgent,
    agent_class_for,
    agent_names,
    make_agent,
    strip_think,
)
from rllm_agents.chat import ChatTokenizer, Message
from rllm_agents.error import AgentConfigError, AgentError
from rllm_agents.trajectory import Step, TokenExactnessError, Trajectory, to_jsonable
from rllm_agents.writers import TrajectoryWriter, read_trajectories, write_trajectories

__all__ = [
    "Agent",
    "AgentConfigError",
    "AgentError",
    "ChatTokenizer",
    "FrozenLakeBoardAgent",
    "GenericAgent",
    "Message",
    "Step",
    "TokenExactnessError",
    "ToolAgent",
    "Trajectory",
    "TrajectoryWriter",
    "agent_class_for",
    "agent_names",
    "make_agent",
    "read_trajectories",
    "strip_think",
    "to_jsonable",
    "write_trajectories",
]
