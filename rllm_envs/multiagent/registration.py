"""This family's registry rows, read as plain data by :mod:`rllm_envs.registry`."""

from __future__ import annotations

from rllm_envs.registry import EnvEntry

MULTIAGENT_ENVS: tuple[EnvEntry, ...] = (
    EnvEntry(
        id="rllm/SolverJudge-v1",
        previous={
            "rllm/SolverJudge-v0": (
                "solutions are shown in a random order, copies of a worked example earn 0, "
                "answers are graded in final form, and every agent (the solvers too) ends and "
                "is graded at the judge's step, so no grade reaches any seat before it chooses"
            )
        },
        entry_point="rllm_envs.multiagent.solver_judge:SolverJudgeEnv",
        description="Solver agents answer a math problem, a judge agent selects one answer; "
        "solvers scored on correctness, the judge on picking a correct one.",
        family="SolverJudge",
        spec="rllm_envs.multiagent.spec:SOLVER_JUDGE",
        scorer="rllm_envs.math.math_env:score",
    ),
    EnvEntry(
        id="rllm/Debate-v1",
        previous={
            "rllm/Debate-v0": (
                "answers are graded in final form from held-out task universes, on Math-v1's "
                "answer-balanced tasks"
            )
        },
        entry_point="rllm_envs.multiagent.debate:DebateEnv",
        description="Debater agents answer a math problem, read each other's answers and "
        "revise over several rounds; scored on their final answers.",
        family="Debate",
        spec="rllm_envs.multiagent.spec:DEBATE",
        scorer="rllm_envs.math.math_env:score",
    ),
    EnvEntry(
        id="rllm/TicTacToe-v0",
        entry_point="rllm_envs.multiagent.tictactoe:TicTacToeEnv",
        description="Two agents play tic-tac-toe in text from seeded openings; win/draw/loss "
        "rewards, an illegal move ends the game with a penalty.",
        family="TicTacToe",
        spec="rllm_envs.multiagent.spec:TICTACTOE",
        # The evaluated policy plays player_0 against this scripted player.
        opponents={"player_1": "heuristic"},
    ),
)
