"""Training-side agents: compact views of an env for small models and short contexts.

The rllm-envs observations are self-contained prose, which is what a pretrained model needs
but costs a tiny from-scratch model (a 787-token BPE) about 180 tokens per FrozenLake turn: a
16-turn episode is then a 3.8k-token sequence, and attention over it dominates a CPU training
step. :class:`FrozenLakeBoardAgent` shows a one-line rule and the bare board on the first turn
and the outcome plus the board on later turns (about 25 tokens each), built from the env's
documented ``info`` keys (``full_first=True`` keeps the env's whole first observation). The
env, its rewards and its action parser are unchanged.

Select it in a trainer config with ``rollout.agent: adapters.trainer.agents:FrozenLakeBoardAgent``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rllm_agents.agent import FrozenLakeAgent

__all__ = ["FrozenLakeBoardAgent"]


class FrozenLakeBoardAgent(FrozenLakeAgent):
    """FrozenLake with compact feedback: ``"You moved Right."`` and the board rows with ``P``.

    Args:
        full_first: Show the env's whole first observation instead of the one-line rule.
        **kwargs: As for every agent (``system_prompt``, ``think``).
    """

    name = "frozenlake-board"
    #: The first turn's rule line (the board follows).
    rule = "Reach G, avoid H. Reply Left, Down, Right or Up."

    def __init__(self, *, full_first: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.full_first = full_first

    def format_observation(self, observation: str, info: Mapping[str, Any], *, first: bool) -> str:
        """A rule line (first turn) or the outcome line, then the board rows with ``P``."""
        rows = info.get("map")
        position = info.get("position")
        if (first and self.full_first) or not rows or not position:
            return observation
        row, col = int(position[0]), int(position[1])
        board = [
            "".join("P" if (r, c) == (row, col) else ch for c, ch in enumerate(line))
            for r, line in enumerate(rows)
        ]
        if first:
            head = self.rule
        elif info.get("invalid_action"):
            head = "Invalid action."
        else:
            head = observation.split("\n", 1)[0]
        return "\n".join([head, *board])
