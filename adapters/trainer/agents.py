"""Training-side agents (moved): :class:`FrozenLakeBoardAgent` lives in :mod:`rllm_agents.agent`.

Kept so configs and checkpoints that name ``adapters.trainer.agents:FrozenLakeBoardAgent``
still load; new configs name ``rllm_agents.agent:FrozenLakeBoardAgent``.
"""

from __future__ import annotations

from rllm_agents.agent import FrozenLakeBoardAgent

__all__ = ["FrozenLakeBoardAgent"]
