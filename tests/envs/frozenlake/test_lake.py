"""Unit tests of the FrozenLake text rules (no Gymnasium env involved)."""

from __future__ import annotations

import pytest

from rllm_envs.frozenlake.lake import (
    ACTION_NAMES,
    optimal_policy,
    parse_action,
    render_board,
    validate_map,
)

LEFT, DOWN, RIGHT, UP = range(4)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Right", RIGHT),
        ("right", RIGHT),
        ("RIGHT", RIGHT),
        ("R", RIGHT),
        ("r", RIGHT),
        ("2", RIGHT),
        ("→", RIGHT),
        ("  **Down**. ", DOWN),
        ('"Up"', UP),
        ("<action>Left</action>", LEFT),
        ("<ACTION> down </ACTION>", DOWN),
        ("I go <action>Up</action> then <action>Right</action>", RIGHT),
        ("\\boxed{Left}", LEFT),
        ("Action: Down", DOWN),
        ("Answer: Right, because the hole is below.", RIGHT),
        ("3.", UP),  # a sentence's full stop, not a decimal point
        ("(1)", DOWN),
        ("\\boxed{2, to the right}", RIGHT),
        ("The hole is below me, so going down is bad. I will move right.", RIGHT),
        ("<think>maybe left? or up</think>Down", DOWN),
        ("<think>I could go <action>Up</action></think> <action>Left</action>", LEFT),
        # s37 (honest replies read wrong or not at all before): a verb in a label, emoji
        # arrows, compass names, a direction the reply rules out.
        ("Answer: move right", RIGHT),
        ("Action: go up.", UP),
        ("\u2b05\ufe0f", LEFT),
        ("\u27a1", RIGHT),
        ("south", DOWN),
        ("I head west.", LEFT),
        ("Right, not Left", RIGHT),
        ("I'll go down. Don't go left!", DOWN),
        ("Left looks unsafe, avoid up; going right", RIGHT),
        # s37 att37g: a label's words, adverbs, a direction put aside after the choice.
        ("Answer: I will move right", RIGHT),
        ("Action: The best move is Down.", DOWN),
        ("<action>Go to the right</action>", RIGHT),
        ("Answer: Rightward", RIGHT),
        ("Right, because Down leads to a hole.", RIGHT),
        ("I go right instead of down.", RIGHT),
        ("Right rather than Down.", RIGHT),
        ("I'll go left, since up is blocked by the edge.", LEFT),
        ("Let me move right; down would be a hole.", RIGHT),
        ("Right. Then next turn I'll go Down.", RIGHT),
        ("Go right first, then down twice.", RIGHT),
    ],
)
def test_parse_action_accepts_documented_forms(text, expected):
    action, reason = parse_action(text)
    assert reason is None
    assert action == expected, ACTION_NAMES[action] if action is not None else None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "jump",
        "<action>jump</action>",
        "\\boxed{42}",
        "upward mobility",  # 'up' must be a whole word
        "<think>go right</think>",  # only the text after </think> counts
        "5",
        # An action id is a bare digit, never a digit of a number: a move counter echoed back
        # ("32", "31 moves left") is no move (it walked Gymnasium's fixed 8x8 map as Up,
        # Right, Down through the counter's leading digits).
        "32",
        "3.5",
        "-3",
        ".3",
        "3,5",
        "31 steps",
        "3rd",
        "\\boxed{32}",
        "\\boxed{31 moves left. Your next action?}",
        "<action>22</action>",
        "Answer: 3.5",
        "Move: 21 to the right",
        "R2",
        "<action>Right3</action>",
        "not left",  # ruled out, and nothing else said
        "Don't go up.",
        "upper",
    ],
)
def test_parse_action_rejects_with_a_reason(text):
    action, reason = parse_action(text)
    assert action is None
    assert reason and ("Left" in reason and "Up" in reason)


def test_tagged_action_wins_over_words():
    assert parse_action("Not left. <action>Up</action> (left is a hole)") == (UP, None)


def test_render_board_marks_player_with_coordinates():
    text = render_board(["SFFF", "FHFH", "FFFH", "HFFG"], position=5 - 4)
    lines = text.splitlines()
    assert lines[0].split() == ["1", "2", "3", "4"]
    assert lines[1].split() == ["1", "S", "P", "F", "F"]
    assert lines[4].split() == ["4", "H", "F", "F", "G"]
    assert "\x1b" not in text


@pytest.mark.parametrize(
    "rows",
    [[], [""], ["SFF", "FG"], ["SXFG"], ["FFFG"], ["SSFG"], ["SFFF"]],
)
def test_validate_map_rejects_bad_maps(rows):
    with pytest.raises(ValueError):
        validate_map(rows)


def _deterministic_table(rows):
    """A Gymnasium-style transition table for a non-slippery map (test fake of the env's P)."""
    nrow, ncol = len(rows), len(rows[0])
    table = {}
    for s in range(nrow * ncol):
        r, c = divmod(s, ncol)
        table[s] = {}
        for a, (dr, dc) in enumerate([(0, -1), (1, 0), (0, 1), (-1, 0)]):
            if rows[r][c] in "HG":
                table[s][a] = [(1.0, s, 0.0, True)]
                continue
            r2, c2 = min(max(r + dr, 0), nrow - 1), min(max(c + dc, 0), ncol - 1)
            s2 = r2 * ncol + c2
            cell = rows[r2][c2]
            table[s][a] = [(1.0, s2, float(cell == "G"), cell in "HG")]
    return table


def test_optimal_policy_follows_a_shortest_safe_path():
    rows = ["SFH", "FHF", "FFG"]
    policy = optimal_policy(_deterministic_table(rows), 9)
    s, path = 0, []
    for _ in range(10):
        a = int(policy[s])
        path.append(ACTION_NAMES[a])
        dr, dc = [(0, -1), (1, 0), (0, 1), (-1, 0)][a]
        r, c = divmod(s, 3)
        s = (r + dr) * 3 + (c + dc)
        assert rows[s // 3][s % 3] != "H"
        if rows[s // 3][s % 3] == "G":
            break
    assert path == ["Down", "Down", "Right", "Right"]


def test_the_words_read_for_a_choice_are_bounded(monkeypatch):
    """s38 att38e F2: every direction word of a reply was checked for being put aside, so a
    256K-character reply of them cost 0.4 s of CPU a step; at most 256 are read now, from
    the end for a bare reply (the last one chosen) and from the start in a tag."""
    from rllm_envs.frozenlake import lake

    calls = []
    real = lake._aside
    monkeypatch.setattr(lake, "_aside", lambda text, m: calls.append(1) or real(text, m))
    assert lake.parse_action("Left " * 50_000 + "Right") == (2, None)
    assert len(calls) == 1
    calls.clear()
    assert lake.parse_action("not left " * 1_000)[0] is None
    assert len(calls) == lake._MAX_CANDIDATES
