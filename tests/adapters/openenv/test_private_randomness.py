"""Private grading: a client's reset seed never picks an episode's own randomness.

s38 att38e F1: on a server with `--score-log`, a client that chose its reset seed knew every
slip of a slippery FrozenLake and reached the goal on 60/60 tasks at difficulty 5, where an
optimal policy reaches it on 8/60; the score log showed first attempts only.
"""

from __future__ import annotations

import pytest

pytest.importorskip("openenv.core.env_server", reason='needs `pip install "rllm-envs[openenv]"`')

from rllm_adapters.openenv.environment import GymTextEnvironment  # noqa: E402

MOVES = ["Down", "Right", "Down", "Right", "Up", "Left", "Down", "Right"] * 3


def _walk(env: GymTextEnvironment, seed: int) -> list[str]:
    env.reset(seed=seed, options={"index": 0})
    cells = []
    for move in MOVES:
        payload = env.step_payload(move)
        cells.append(payload["observation"]["text"][:60])
        if payload["done"]:
            break
    return cells


def test_a_seed_replays_an_episode_except_under_private_grading():
    kwargs = {"difficulty": 5}  # slippery
    plain = GymTextEnvironment("rllm/FrozenLake-v1", kwargs)
    assert _walk(plain, 7) == _walk(plain, 7)  # a seed replays its slips
    graded = GymTextEnvironment("rllm/FrozenLake-v1", kwargs, scores=lambda record: None)
    walks = {tuple(_walk(graded, 7)) for _ in range(6)}
    assert len(walks) > 1  # the same seed, other slips


def _opponent_state(env: GymTextEnvironment, seed: int) -> str:
    """The state of the scripted opponent's generator after a reset."""
    env.reset(seed=seed)
    return repr(env.env._rng.bit_generator.state)


def test_a_game_s_opponent_is_not_the_client_seed_s_under_private_grading():
    """att38f F1: TicTacToe's scripted opponent drew from `SeatEnv._rng`, seeded from the
    client's reset seed, which the reseed missed: 33/60 wins foreseen offline."""
    plain = GymTextEnvironment("rllm/TicTacToe-v0", {})
    assert _opponent_state(plain, 3) == _opponent_state(plain, 3)
    graded = GymTextEnvironment("rllm/TicTacToe-v0", {}, scores=lambda record: None)
    states = {_opponent_state(graded, 3) for _ in range(4)}
    assert len(states) == 4 and _opponent_state(plain, 3) not in states
