"""rllm_agents: turn environment observations into chat messages and model replies into actions.

* :mod:`rllm_agents.agent` -- agents (one per env family plus a generic one, picked from the env
  id by :func:`make_agent`) that keep the conversation and read actions from replies.
* :mod:`rllm_agents.chat` -- :class:`ChatTokenizer`, which builds token-exact multi-turn prompts
  by appending to the sampled sequence instead of re-tokenising the chat.
* :mod:`rllm_agents.trajectory` -- :class:`Trajectory` / :class:`Step`, per turn: prompt ids,
  completion ids, logprobs, reward, info; the loss mask and the invariant check.
* :mod:`rllm_agents.writers` -- JSONL and Parquet writers and readers.

Nothing here imports torch or transformers; the tokenizer is passed in.
"""

from __future__ import annotations

from rllm_agents.agent import (
    AGENTS,
    Agent,
    CodeAgent,
    FrozenLakeAgent,
    GenericAgent,
    MathAgent,
    ToolAgent,
    agent_class_for,
    env_family,
    make_agent,
    strip_think,
)
from rllm_agents.chat import ChatTokenizer, Message
from rllm_agents.trajectory import Step, TokenExactnessError, Trajectory, to_jsonable
from rllm_agents.writers import TrajectoryWriter, read_trajectories, write_trajectories

__all__ = [
    "AGENTS",
    "Agent",
    "ChatTokenizer",
    "CodeAgent",
    "FrozenLakeAgent",
    "GenericAgent",
    "MathAgent",
    "Message",
    "Step",
    "TokenExactnessError",
    "ToolAgent",
    "Trajectory",
    "TrajectoryWriter",
    "agent_class_for",
    "env_family",
    "make_agent",
    "read_trajectories",
    "strip_think",
    "to_jsonable",
    "write_trajectories",
]
