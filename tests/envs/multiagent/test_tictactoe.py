from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

import rllm_envs
from rllm_envs.multiagent import ScriptedPolicy
from rllm_envs.multiagent.tictactoe_rules import (
    EMPTY_BOARD,
    best_moves,
    game_value,
    heuristic_move,
    is_full,
    legal_moves,
    oracle_move,
    parse_move,
    play,
    random_opening,
    render_board,
    to_move,
    validate_board,
    winner,
)
from tests.envs.multiagent.conformance import final_infos, returns, run_parallel, scripted

# ------------------------------------------------------------------------------- rules


def test_winner_lines_and_draw():
    assert winner("XXX" + "OO." + "...") == "X"
    assert winner("XO." + "XO." + ".O.") == "O"
    assert winner("X.O" + ".XO" + "..X") == "X"
    assert winner("..O" + ".O." + "O..") == "O"
    draw = "XOX" + "XOO" + "OXX"
    assert winner(draw) is None and is_full(draw) and legal_moves(draw) == []


def test_turns_and_legal_moves():
    assert to_move(EMPTY_BOARD) == "X" and legal_moves(EMPTY_BOARD) == list(range(1, 10))
    board = play(EMPTY_BOARD, 5)
    assert board == "....X...." and to_move(board) == "O" and 5 not in legal_moves(board)
    with pytest.raises(ValueError):
        play(board, 5)
    assert legal_moves("XXX" + "OO." + "...") == []  # nothing is legal once the game is won


def test_validate_board_rejects_impossible_positions():
    assert validate_board("X...O....") == "X...O...."
    for bad in ["", "X" * 10, "XXXXOOO??", "OO.......", "XX.......", "XXXOOO...", None, 7]:
        with pytest.raises(ValueError):
            validate_board(bad)


def test_perfect_play_values():
    assert game_value(EMPTY_BOARD) == 0  # tic-tac-toe is a draw
    assert best_moves("X........") == [5]  # the only reply to a corner that draws is the centre
    # X to move can win at once (cells 1-2-3) and the solver prefers the fastest win.
    assert best_moves("XX." + "OO." + "...") == [3]
    assert game_value("XX." + "OO." + "...") == 1
    # O to move with X threatening two lines loses.
    assert game_value("X.X" + ".O." + "X.O") == -1


def _reachable_positions():
    seen, frontier = {EMPTY_BOARD}, [EMPTY_BOARD]
    while frontier:
        board = frontier.pop()
        for cell in legal_moves(board):
            child = play(board, cell)
            if child not in seen:
                seen.add(child)
                frontier.append(child)
    return seen


def test_oracle_move_is_always_a_best_move():
    for board in _reachable_positions():
        move = oracle_move(board)
        assert move == (None if not legal_moves(board) or is_full(board) else move)
        if move is not None:
            assert move in best_moves(board)


def test_oracle_never_loses_to_any_opponent_sequence():
    """Exhaustive: from the empty board, the oracle as X or O never loses to any replies."""

    def worst(board: str, oracle_mark: str) -> int:
        won = winner(board)
        if won is not None:
            return 1 if won == oracle_mark else -1
        if is_full(board):
            return 0
        if to_move(board) == oracle_mark:
            return worst(play(board, oracle_move(board)), oracle_mark)
        return min(worst(play(board, c), oracle_mark) for c in legal_moves(board))

    assert worst(EMPTY_BOARD, "X") >= 0
    assert worst(EMPTY_BOARD, "O") >= 0


def test_heuristic_wins_then_blocks():
    rng = np.random.default_rng(0)
    assert heuristic_move("XX." + "OO." + "...", rng) == 3  # win
    assert heuristic_move("XX." + "O.." + "...", rng) == 3  # block
    assert heuristic_move("X........", rng) == 5  # centre
    assert heuristic_move("XXXOO....", rng) is None


def test_random_opening_is_seeded_and_live():
    for plies, seed in itertools.product(range(5), range(20)):
        board = random_opening(np.random.default_rng(seed), plies)
        assert board == random_opening(np.random.default_rng(seed), plies)
        assert 9 - board.count(".") == plies and winner(board) is None
        validate_board(board)


@pytest.mark.parametrize(
    "reply, cell",
    [
        ("5", 5),
        (" 9 ", 9),
        ("<move>7</move>", 7),
        ("<move> 7 </move> and later 3", 7),
        ("\\boxed{2}", 2),
        ("Move: 4", 4),
        ("**Final answer**: 6", 6),
        ("b2", 5),
        ("C1", 3),
        ("row 3, column 1", 7),
        ("Row 2 col 2", 5),
        ("(1, 3)", 3),
        ("I considered 1 and 9 but I play 4.", 4),
        ("<think>maybe 1? or 2</think>I take 8", 8),
        ("on this 3x3 board, 5th move: 6", 6),
        ("⑤ ... fine, 2", 2),
    ],
)
def test_parse_move_accepts_many_formats(reply, cell):
    assert parse_move(reply) == (cell, None)


@pytest.mark.parametrize(
    "reply",
    [
        *("", "pass", "cell 10", "0", "3x3", "<move>centre</move> 5", "\\boxed{}", "1.5"),
        *("😀" * 50, "32", "<move>32</move>", "<move>row 2, column 31</move>", "3.5"),
    ],
)
def test_parse_move_rejects_non_moves(reply):
    cell, reason = parse_move(reply)
    assert cell is None and reason


def test_render_board_shows_numbers_in_empty_cells():
    text = render_board("X...O....")
    assert text.splitlines()[0] == " X | 2 | 3"
    assert " O " in text.splitlines()[2] and "\x1b" not in text


# --------------------------------------------------------------------------------- env


def _env(**kwargs):
    return rllm_envs.make_parallel("rllm/TicTacToe-v0", **kwargs)


def _task(board: str, x_agent: str = "player_0") -> dict:
    return {"task": {"board": board, "x_agent": x_agent}}


def test_only_the_player_to_move_acts_and_the_other_is_ignored():
    env = _env()
    obs, infos = env.reset(options=_task(EMPTY_BOARD, "player_1"))
    assert infos["player_1"]["acting"] and not infos["player_0"]["acting"]
    assert infos["player_1"]["mark"] == "X" and infos["player_1"]["role"] == "x"
    assert "It is your turn" in obs["player_1"] and "Wait" in obs["player_0"]
    obs, rewards, terms, truncs, infos = env.step({"player_1": "5", "player_0": "garbage ☃"})
    assert env.board == "....X...."
    assert infos["player_0"]["acted"] is False and infos["player_0"]["invalid_action"] is False
    assert infos["player_0"]["acting"] and not infos["player_1"]["acting"]
    assert "Last move: your opponent (X) played 5." in obs["player_0"]
    assert rewards == {"player_0": 0.0, "player_1": 0.0}


@pytest.mark.parametrize(
    "reply, reason",
    [("<move>1</move>", "already taken"), ("I resign", "No move found"), (None, "No move found")],
)
def test_illegal_move_ends_the_game_with_a_penalty(reply, reason):
    env = _env()
    env.reset(options=_task("X...O....", "player_0"))
    obs, rewards, terms, truncs, infos = env.step({"player_0": reply})
    assert rewards == {"player_0": -1.0, "player_1": 0.0}
    assert terms == {"player_0": True, "player_1": True} and not any(truncs.values())
    assert env.agents == []
    assert infos["player_0"]["invalid_action"] and reason in infos["player_0"]["invalid_reason"]
    assert infos["player_0"]["outcome"] == "illegal_move"
    assert infos["player_1"]["outcome"] == "opponent_illegal_move"
    assert infos["player_0"]["reward_components"]["illegal_move"] == 1.0
    assert "not a legal move" in obs["player_0"] and "No winner" in obs["player_1"]


@pytest.mark.parametrize(
    "weights",
    [{"illegal_move": -0.5}, {"illegal_move": 0.0}, {"draw": -1.0, "illegal_move": -0.9}],
)
def test_weights_under_which_resigning_beats_losing_are_refused(weights):
    # att25g F2: with illegal_move -0.5 a seat facing two threats replied "I resign" and
    # earned 0.12 against the honest 0.055, taking the win from the other seat.
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="illegal_move"):
        _env(reward_weights=weights)
    _env(reward_weights={"illegal_move": -2.0, "loss": -1.0, "draw": 0.5})  # stricter is fine


@pytest.mark.parametrize("weights", [{"win": 0.0, "loss": 0.5}, {"draw": 1.0}, {"loss": 0.5}])
def test_weights_under_which_losing_pays_as_winning_are_refused(weights):
    # s36 att36i: win 0, loss 0.5 was accepted (only illegal_move's bound was checked).
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="win"):
        _env(reward_weights=weights)


@pytest.mark.parametrize("weights", [{"illegal_move": float("nan")}, {"loss": float("inf")}])
def test_non_finite_weights_are_refused(weights):
    # s19 att25i: NaN passed `illegal_move <= min(loss, draw)` (every comparison with NaN is
    # false) and made every reward NaN.
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="finite"):
        _env(reward_weights=weights)
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="finite"):
        gym.make("rllm/Math-v1", reward_weights={"correct": "lots"})


def test_missing_action_of_the_player_to_move_is_an_empty_reply():
    env = _env()
    env.reset(options=_task(EMPTY_BOARD))
    _, rewards, terms, _, infos = env.step({})
    assert rewards["player_0"] == -1.0 and all(terms.values())


def test_win_and_loss_rewards():
    env = _env()
    env.reset(options=_task("XX.OO....", "player_1"))  # player_1 is X and wins at 3
    obs, rewards, terms, _, infos = env.step({"player_1": "3"})
    assert rewards == {"player_1": 1.0, "player_0": -1.0} and all(terms.values())
    assert infos["player_1"]["is_correct"] and not infos["player_0"]["is_correct"]
    assert infos["player_1"]["outcome"] == "win" and infos["player_0"]["outcome"] == "loss"
    assert "you win" in obs["player_1"] and "you lose" in obs["player_0"]


def test_draw_reward_is_configurable():
    board = "XOX" + "XOO" + "O.X"  # X (player_0) to move; only cell 8 left: a draw
    for weights, expected in [(None, 0.0), ({"draw": 0.5}, 0.5)]:
        env = _env(reward_weights=weights)
        env.reset(options=_task(board))
        _, rewards, terms, _, infos = env.step({"player_0": "8"})
        assert rewards == {"player_0": expected, "player_1": expected} and all(terms.values())
        assert infos["player_0"]["outcome"] == "draw"


def test_oracle_self_play_realises_the_game_value():
    env = _env()
    for seed in range(12):
        steps = run_parallel(env, scripted("oracle"), seed=seed)
        start = steps[0][4]
        x_agent = next(a for a, i in start.items() if i["mark"] == "X")
        board = start[x_agent]["board"]
        value = game_value(board) if to_move(board) == "X" else -game_value(board)
        assert returns(steps)[x_agent] == value, (seed, board)


@pytest.mark.parametrize("opponent", ["heuristic", "random"])
def test_oracle_never_loses_from_a_drawn_or_won_position(opponent):
    env = _env()
    oracle, other = ScriptedPolicy("oracle"), ScriptedPolicy(opponent, seed=1)
    wins = 0
    for seed in range(30):
        obs, infos = env.reset(seed=seed)
        me = env.possible_agents[seed % 2]
        expected = env.game_value(me)
        while env.agents:
            actions = {
                a: (oracle if a == me else other)(env, a) for a in env.agents if infos[a]["acting"]
            }
            obs, rewards, terms, truncs, infos = env.step(actions)
        assert rewards[me] >= expected, seed
        wins += rewards[me] > 0
    assert wins > 0


def test_opening_plies_and_task_records():
    env = _env(opening_plies=0)
    boards = {env.reset(seed=s)[1]["player_0"]["board"] for s in range(6)}
    assert boards == {EMPTY_BOARD}
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="opening_plies"):
        _env(opening_plies=5)
    for record in [{"board": "XXXOO....", "x_agent": "player_0"}, {"board": "X........"}]:
        with pytest.raises(rllm_envs.InvalidEnvConfig):
            env.reset(options={"task": record})


def test_final_infos_report_the_board():
    env = _env()
    steps = run_parallel(env, scripted("random", 3), seed=3)
    last = final_infos(steps)
    assert last["player_0"]["board"] == last["player_1"]["board"]
    assert last["player_0"]["legal_moves"] == []
