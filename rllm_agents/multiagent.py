r"""Agents for the multi-agent envs: one conversation per env agent, the prompt by its role.

A multi-agent episode gives every agent it plays its own :class:`~rllm_agents.agent.Agent`
(see :mod:`adapters.multiagent_play`); the agent opens its conversation on the env agent's
first observation and picks its system prompt from ``info["role"]`` (``"solver"``,
``"judge"``, ``"debater"``, ``"x"``/``"o"``). The registry row of each multi-agent env names
its class here. Replies are read by the same rule as everywhere (:mod:`rllm_envs.text`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rllm_agents.agent import MATH_DEMONSTRATION, Agent, Message
from rllm_envs import demonstrations

__all__ = [
    "JUDGE_DEMONSTRATION",
    "RoleAgent",
    "SolverJudgeAgent",
    "DebateAgent",
    "TicTacToeAgent",
]

_BOX = "\\boxed{}"


class RoleAgent(Agent):
    """An agent whose system prompt depends on the env agent's role (``info["role"]``).

    ``role_prompts`` maps a role to its prompt; a role it does not list gets
    ``default_system_prompt``. A ``system_prompt`` passed to the constructor is used for
    every role.
    """

    name = "role"
    role_prompts: ClassVar[Mapping[str, str]] = {}
    #: ``{role: demonstration}``; a role it does not list gets ``default_demonstration``.
    role_demonstrations: ClassVar[Mapping[str, tuple[Message, ...]]] = {}

    def system_prompt_for(self, info: Mapping[str, Any]) -> str | None:
        """The prompt of ``info["role"]``."""
        return self.role_prompts.get(str(info.get("role")), self.system_prompt)

    def demonstration_for(self, info: Mapping[str, Any]) -> tuple[Message, ...]:
        """The worked example of ``info["role"]``."""
        return self.role_demonstrations.get(str(info.get("role")), self.demonstration)


#: The judge's worked example: an invented problem, one wrong and one right solution (the
#: envs know it, :mod:`rllm_envs.demonstrations`, and pay nothing for a copy).
JUDGE_DEMONSTRATION: tuple[Message, ...] = demonstrations.JUDGE.messages


class SolverJudgeAgent(RoleAgent):
    """``rllm/SolverJudge``: solvers solve a math problem, the judge picks a correct solution."""

    name = "solver-judge"
    default_system_prompt = (
        f"Solve the problem step by step and put the final answer, and nothing else, in a "
        f"single {_BOX} at the end."
    )
    role_prompts = {
        "solver": default_system_prompt,
        "judge": (
            "You judge solutions to a math problem. Check each solution's reasoning and final "
            f"answer, then reply with the number of the solution whose final answer is correct "
            f"in a single {_BOX}."
        ),
    }
    default_demonstration = MATH_DEMONSTRATION
    role_demonstrations = {"judge": JUDGE_DEMONSTRATION}


class DebateAgent(RoleAgent):
    """``rllm/Debate``: debaters answer, read each other's answers and revise."""

    name = "debate"
    default_system_prompt = (
        "You take part in a debate on a math problem. Reason step by step; when you see the "
        "other debaters' answers, check them against yours and point out mistakes. End every "
        f"reply with your final answer, and nothing else, in a single {_BOX}."
    )
    default_demonstration = MATH_DEMONSTRATION


class TicTacToeAgent(RoleAgent):
    """``rllm/TicTacToe``: one legal move per turn, as the cell number in ``<move></move>``."""

    name = "tictactoe"
    default_system_prompt = (
        "You play tic-tac-toe. Cells are numbered 1-9, left to right and top to bottom. Each "
        "turn, think briefly if you need to, then reply with the number of one empty cell "
        "inside <move></move>. A move on a taken cell loses the game."
    )
