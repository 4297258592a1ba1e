r"""The agent-facing specs of the multi-agent envs (:class:`rllm_envs.spec.AgentSpec`).

Every env agent gets its own conversation; the prompt and the worked example follow its role
(``info["role"]``: ``"solver"``, ``"judge"``, ``"debater"``, ``"x"``/``"o"``).
"""

from __future__ import annotations

from rllm_envs import demonstrations
from rllm_envs.spec import AgentSpec

__all__ = ["SOLVER_JUDGE", "DEBATE", "TICTACTOE"]

_BOX = "\\boxed{}"
_SOLVER = (
    f"Solve the problem step by step and put the final answer, and nothing else, in a single "
    f"{_BOX} at the end."
)

SOLVER_JUDGE = AgentSpec(
    system_prompt=_SOLVER,
    demonstration=demonstrations.MATH.messages,
    select="role",
    system_prompts={
        "solver": _SOLVER,
        "judge": (
            "You judge solutions to a math problem. Check each solution's reasoning and final "
            f"answer, then reply with the number of the solution whose final answer is correct "
            f"in a single {_BOX}."
        ),
    },
    demonstrations={"judge": demonstrations.JUDGE.messages},
)

DEBATE = AgentSpec(
    system_prompt=(
        "You take part in a debate on a math problem. Reason step by step; when you see the "
        "other debaters' answers, check them against yours and point out mistakes. End every "
        f"reply with your final answer, and nothing else, in a single {_BOX}."
    ),
    demonstration=demonstrations.MATH.messages,
)

TICTACTOE = AgentSpec(
    system_prompt=(
        "You play tic-tac-toe. Cells are numbered 1-9, left to right and top to bottom. Each "
        "turn, think briefly if you need to, then reply with the number of one empty cell "
        "inside <move></move>. A move on a taken cell loses the game."
    ),
)
