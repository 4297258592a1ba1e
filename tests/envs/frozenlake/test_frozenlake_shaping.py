"""FrozenLake's shaping never makes dying early the best policy.

The committed configs' weights (read from their YAML) and any weights the env accepts: from
any history, falling into a hole returns less than playing on validly, and less than playing
on at the rate of unreadable replies the episode had (a fall does not escape the
invalid-action penalty), with and without the trainer's discount.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.frozenlake import FrozenLakeEnv

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[3]
#: Every committed config that trains on FrozenLake.
CONFIGS = sorted(
    path
    for path in (ROOT / "configs").glob("frozenlake*.yaml")
    if str((yaml.safe_load(path.read_text()) or {}).get("env", "")).startswith("rllm/FrozenLake-")
)


def test_the_committed_frozenlake_configs_are_found():
    # The PPO, GRPO, curriculum and distillation-RL configs: an id bump must not empty the list.
    assert len(CONFIGS) >= 4, CONFIGS


def _lake(size: int) -> list[str]:
    """A map where ``Left`` at the start bumps the edge and ``Down`` falls into a hole."""
    rows = ["S" + "F" * (size - 1), "H" + "F" * (size - 1)]
    rows += ["F" * size] * (size - 2)
    rows[-1] = rows[-1][:-1] + "G"
    return rows


def _play(env: FrozenLakeEnv, rows: list[str], policy: Any, gamma: float) -> dict[str, Any]:
    """Play ``policy(turn) -> reply`` on ``rows``; the undiscounted and discounted returns."""
    env.reset(seed=0, options={"task": {"map": rows}})
    rewards, outcomes, done = [], [], False
    while not done:
        _, reward, terminated, truncated, info = env.step(policy(env.turn + 1))
        rewards.append(float(reward))
        outcomes.append(info["outcome"])
        done = terminated or truncated
    discounted = sum(r * gamma**k for k, r in enumerate(rewards))
    return {"return": sum(rewards), "discounted": discounted, "outcomes": outcomes}


def _envs(config: dict[str, Any]) -> list[FrozenLakeEnv]:
    """The env of ``config`` at each map size it trains on (curriculum levels included)."""
    kwargs = dict(config.get("env_kwargs") or {})
    curriculum = (config.get("rollout") or {}).get("curriculum") or {}
    if curriculum.get("kwarg"):
        return [FrozenLakeEnv(**{**kwargs, curriculum["kwarg"]: v}) for v in curriculum["levels"]]
    return [FrozenLakeEnv(**kwargs)]


def _die_or_play_on(
    env: FrozenLakeEnv, t: int, unreadable: int, gamma: float
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A history of ``t - 1`` turns (``unreadable`` of them unreadable, the rest bumps), then
    at turn ``t``: fall; or bump and play on validly; or bump and play on at the history's
    unreadable rate (the skipped turns' unreadable replies first)."""
    rows = _lake(4)

    def history(k: int) -> str:
        return "??" if k <= unreadable else "Left"

    skipped = round(unreadable / t * (env.max_turns - t))
    die = _play(env, rows, lambda k: history(k) if k < t else "Down", gamma)
    valid = _play(env, rows, lambda k: history(k) if k < t else "Left", gamma)
    same_rate = _play(
        env,
        rows,
        lambda k: history(k) if k < t else ("??" if t < k <= t + skipped else "Left"),
        gamma,
    )
    return die, valid, same_rate


def _same_rate_is_whole(env: FrozenLakeEnv, t: int, unreadable: int) -> bool:
    return (unreadable * (env.max_turns - t)) % t == 0


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_falling_returns_less_than_playing_on(path):
    config = yaml.safe_load(path.read_text())
    gamma = float((config.get("algorithm") or {}).get("gamma", 1.0))
    for env in _envs(config):
        checked = 0
        for t in range(2, env.max_turns + 1):
            for unreadable in range(0, t):
                if not _same_rate_is_whole(env, t, unreadable):
                    continue
                die, valid, same_rate = _die_or_play_on(env, t, unreadable, gamma)
                assert die["outcomes"][-1] == "hole" and len(die["outcomes"]) == t
                assert "hole" not in valid["outcomes"] + same_rate["outcomes"]
                for key in ("return", "discounted"):
                    assert die[key] < valid[key], (path.name, t, unreadable, key, die, valid)
                    assert die[key] < same_rate[key], (path.name, t, unreadable, key)
                checked += 1
        assert checked >= env.max_turns


def test_each_component_pays_for_what_it_names():
    env = FrozenLakeEnv(desc=_lake(3), max_turns=6, reward_weights={"invalid_action": -0.1})
    env.reset(seed=0)
    _, reward, _, _, info = env.step("??")
    assert info["reward_components"] == {
        "success": 0.0,
        "hole": 0.0,
        "invalid_action": 1.0,
        "progress": 0.0,
    }
    assert reward == pytest.approx(-0.1)
    _, reward, terminated, _, info = env.step("Down")
    # Turn 2 of 6, one unreadable reply in two turns: the 4 skipped turns are charged 2. The
    # start is the farthest cell: its potential is a hole's (-1).
    assert terminated and info["reward_components"] == {
        "success": 0.0,
        "hole": 1.0,
        "invalid_action": 2.0,
        "progress": 0.0,
    }
    assert reward == pytest.approx(-0.05 + 2 * -0.1)
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("Down")  # a fall with no unreadable reply
    assert terminated and reward == pytest.approx(-0.05)
    env.reset(seed=0)
    for move in ["Right", "Right", "Down"]:
        env.step(move)
    _, reward, terminated, _, info = env.step("Down")
    assert terminated and info["is_correct"]
    # The last of four moves on a path of four: a quarter of the way.
    assert info["reward_components"] == {
        "success": 1.0,
        "hole": 0.0,
        "invalid_action": 0.0,
        "progress": 0.25,
    }
    assert reward == 1.0


@pytest.mark.parametrize(
    "weights",
    [{"hole": 0.0}, {"hole": 0.1}, {"invalid_action": 0.2}, {"hole": 0.0, "invalid_action": -1}],
)
def test_weights_under_which_falling_pays_are_refused(weights):
    with pytest.raises(InvalidEnvConfig, match="hole|must be <= 0"):
        FrozenLakeEnv(reward_weights=weights)


def _accepted(seed: int, count: int = 30, **kwargs: Any) -> Any:
    """``count`` envs on ``_lake(4)`` with random weights the env accepts, random turn limits,
    and a discount each: ``(env, gamma)``."""
    rng = np.random.default_rng(seed)
    made = 0
    while made < count:
        weights = {
            "success": float(rng.uniform(-1, 2)),
            "hole": float(rng.uniform(-2, 0.5)),
            "invalid_action": float(rng.uniform(-2, 0.5)),
            "progress": float(rng.uniform(-0.5, 2)),
        }
        max_turns = int(rng.integers(2, 12))
        try:
            env = FrozenLakeEnv(
                desc=_lake(4), max_turns=max_turns, reward_weights=weights, **kwargs
            )
        except InvalidEnvConfig:
            continue
        made += 1
        yield env, float(rng.choice([1.0, 0.99, 0.9]))


def test_any_accepted_weights_make_a_fall_worse_than_playing_on():
    """Random accepted weights, turn limits and discounts; every history and fall turn."""
    for env, gamma in _accepted(0):
        weights = env.reward_weights
        for t in range(2, env.max_turns + 1):
            for unreadable in range(0, t):
                if not _same_rate_is_whole(env, t, unreadable):
                    continue
                die, valid, same_rate = _die_or_play_on(env, t, unreadable, gamma)
                for key in ("return", "discounted"):
                    assert die[key] < valid[key], (weights, env.max_turns, t, unreadable, gamma)
                    assert die[key] < same_rate[key], (weights, env.max_turns, t, unreadable)


def test_the_episode_rate_does_not_bind_a_policy_that_chooses_when_to_fall():
    """Why ``invalid_ends`` exists: the skipped turns are charged at the rate the episode
    showed, so a policy that replies unreadably all the time but, when the start is next to
    a hole, steps into it first pays one fall, far less than its replies would have cost."""
    env = FrozenLakeEnv(desc=_lake(4), reward_weights={"invalid_action": -0.1})
    die = _play(env, _lake(4), lambda k: "Down", 1.0)
    unreadable = _play(env, _lake(4), lambda k: "??", 1.0)
    assert die["return"] == pytest.approx(-0.05)
    assert unreadable["return"] == pytest.approx(-0.1 * env.max_turns)


def test_invalid_ends_ends_the_episode_on_an_unreadable_reply():
    env = FrozenLakeEnv(
        desc=_lake(3), invalid_ends=True, reward_weights={"hole": -0.1, "invalid_action": -0.1}
    )
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step("no move here")
    assert terminated and not truncated
    assert info["outcome"] == "invalid" and info["invalid_action"]
    assert info["reward_components"] == {
        "success": 0.0,
        "hole": 0.0,
        "invalid_action": 1.0,
        "progress": 0.0,
    }
    assert reward == pytest.approx(-0.1)
    assert "Game over" in observation
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step("Down")  # a fall: no skipped turns charged
    assert terminated and info["reward_components"]["invalid_action"] == 0.0
    assert reward == pytest.approx(-0.1)


def test_invalid_ends_refuses_a_fall_cheaper_than_an_unreadable_reply():
    with pytest.raises(InvalidEnvConfig, match="invalid_ends"):
        FrozenLakeEnv(invalid_ends=True, reward_weights={"hole": -0.05, "invalid_action": -0.1})
    FrozenLakeEnv(invalid_ends=True)  # the default weights: a fall -0.05, unreadable 0


def test_with_invalid_ends_no_way_of_playing_on_costs_more_than_a_fall():
    """Random accepted weights, turn limits and discounts: at every turn, falling returns at
    most what every way of playing on without reaching the goal returns (bumping the edge,
    or an unreadable reply at any later turn), and less than playing on validly."""
    rows = _lake(4)
    for env, gamma in _accepted(1, invalid_ends=True):
        weights = env.reward_weights
        # Every history that has not ended is bumps (an unreadable reply would have ended it).
        for t in range(1, env.max_turns + 1):
            die = _play(env, rows, lambda k, t=t: "Left" if k < t else "Down", gamma)
            assert die["outcomes"][-1] == "hole" and len(die["outcomes"]) == t
            valid = _play(env, rows, lambda k: "Left", gamma)
            for key in ("return", "discounted"):
                assert die[key] < valid[key], (weights, env.max_turns, t, gamma)
            for quit_at in range(t, env.max_turns + 1):
                later = _play(env, rows, lambda k, q=quit_at: "??" if k == q else "Left", gamma)
                assert later["outcomes"][-1] == "invalid"
                for key in ("return", "discounted"):
                    assert die[key] <= later[key] + 1e-12, (weights, t, quit_at, gamma)


def test_progress_is_potential_based_shaping_that_never_pays_a_fall():
    """``progress`` sums to the last cell's potential minus the start's: the shortest path
    earns the whole way, standing still nothing, a detour what it nets, and every fall
    (from every cell a walk reaches) nets the least of any episode from the start."""
    rows = ["SHFF", "FFFH", "HFHF", "FFFG"]  # the start is next to a hole
    env = FrozenLakeEnv(desc=rows, reward_weights={"progress": 1.0, "hole": -0.05})

    def progress(moves: list[str]) -> tuple[float, str]:
        env.reset(seed=0)
        total, outcome = 0.0, ""
        for move in moves:
            _, _, terminated, _, info = env.step(move)
            total += info["reward_components"]["progress"]
            outcome = info["outcome"]
            if terminated:
                break
        return total, outcome

    shortest = ["Down", "Right", "Down", "Down", "Right", "Right"]
    assert progress(shortest) == (pytest.approx(6 / 7), "goal")
    assert progress(["Left", "Up"] * 4) == (0.0, "blocked")
    assert progress(["Down", "Right", "Left", "Up"])[0] == pytest.approx(0.0)  # there and back
    walks = [shortest[:k] for k in range(6)] + [["Down", "Right", "Right", "Up", "Right"]]
    stays = [progress(walk)[0] for walk in walks]
    for walk in walks:
        for move in ("Left", "Down", "Right", "Up"):
            total, outcome = progress([*walk, move])
            if outcome == "hole":
                assert total == pytest.approx(-1 / 7), (walk, move)  # -1 minus the start's
                assert total <= min(stays) + 1e-9


def test_an_episode_ended_without_the_goal_or_a_fall_nets_no_progress():
    """s36 att36c: walking to the goal's neighbour and waiting there until the turn limit
    kept the walk's progress (0.83 an episode on the committed map, never reaching the goal);
    att36f: so did ending it there with an unreadable reply under `invalid_ends` (+0.45 on
    200 of 200 random maps). Such an episode nets 0 whatever it did; the goal still pays the
    whole way."""
    rows = ["SFFF", "FHFH", "FFFH", "HFFG"]
    weights = {"invalid_action": -0.1, "progress": 1.0}
    shortest = ["Right", "Right", "Down", "Down", "Down", "Right"]
    for stall in (["Up", "Down"], ["Down"], ["no move"], ["Left", "Up"]):
        for max_turns in (6, 7, 10):
            env = FrozenLakeEnv(desc=rows, reward_weights=weights, max_turns=max_turns)
            env.reset(seed=0)
            moves = iter([*shortest[:5], *stall * max_turns])
            total, truncated = 0.0, False
            while not truncated:
                _, _, terminated, truncated, info = env.step(next(moves))
                assert not terminated
                total += info["reward_components"]["progress"]
            assert total == pytest.approx(0.0), (stall, max_turns)
    env = FrozenLakeEnv(desc=rows, reward_weights=weights, max_turns=6)
    env.reset(seed=0)
    total = sum(env.step(move)[4]["reward_components"]["progress"] for move in shortest)
    assert total == pytest.approx(1.0) and env.unwrapped.done
    # att36f: an unreadable reply that ends the episode (`invalid_ends`) gives it back too.
    weights = {"invalid_action": -0.1, "hole": -0.1, "progress": 1.0}
    env = FrozenLakeEnv(desc=rows, reward_weights=weights, invalid_ends=True)
    env.reset(seed=0)
    total = 0.0
    for move in [*shortest[:5], "I'd rather not say."]:
        _, reward, terminated, _, info = env.step(move)
        total += info["reward_components"]["progress"]
    assert terminated and info["outcome"] == "invalid"
    assert total == pytest.approx(0.0) and reward < 0


@pytest.mark.parametrize("how", ["make", "wrapper"])
def test_a_gymnasium_time_limit_is_the_episodes_turn_limit(how):
    """s37 att37b: ``gym.make(..., max_episode_steps=k)`` truncated the episode from outside,
    so the refund on its last turn never ran: waiting by the goal kept +0.55 progress a map,
    never reaching it. The env caps its turn limit at the wrapper's, so its own last turn is
    the wrapper's (and says how many moves are left)."""
    import gymnasium as gym

    rows = ["SFFF", "FHFH", "FFFH", "HFFG"]
    weights = {"invalid_action": -0.1, "progress": 1.0}
    shortest = ["Right", "Right", "Down", "Down", "Down", "Right"]
    for limit in (4, 6, 9):
        kwargs = {"desc": rows, "reward_weights": weights}
        if how == "make":
            env = gym.make("rllm/FrozenLake-v1", max_episode_steps=limit, **kwargs)
        else:
            env = gym.wrappers.TimeLimit(FrozenLakeEnv(**kwargs), limit)
        observation, info = env.reset(seed=0)
        assert info["max_turns"] == limit and f"You have {limit} moves" in observation
        moves = iter([*shortest[:5], *["Up", "Down"] * limit])
        total, truncated = 0.0, False
        while not truncated:
            _, _, terminated, truncated, info = env.step(next(moves))
            assert not terminated
            total += info["reward_components"]["progress"]
        assert total == pytest.approx(0.0), limit
    env = gym.make("rllm/FrozenLake-v1", desc=rows)  # no wrapper: the env's own limit
    assert env.reset(seed=0)[1]["max_turns"] == 16


def test_under_the_trainers_discount_waiting_by_the_goal_is_worth_little():
    """att36f (low): the refund comes on the last turn, so a discount of 0.99 leaves a
    waiting episode a little of its walk; far less than reaching the goal is worth."""
    weights = {"invalid_action": -0.1, "progress": 1.0}

    def discounted(moves: list[str]) -> float:
        env = FrozenLakeEnv(map_name="4x4", is_slippery=False, reward_weights=weights)
        env.reset(seed=0)
        total, done, t = 0.0, False, 0
        while not done:
            _, reward, terminated, truncated, _ = env.step(moves[min(t, len(moves) - 1)])
            total += 0.99**t * reward
            done, t = terminated or truncated, t + 1
        return total

    goal = discounted(["Down", "Down", "Right", "Right", "Down", "Right"])
    wait = discounted(["Down", "Down", "Right", "Right", "Down", "Left", "Right"] + ["Down"] * 16)
    assert goal > 1.9
    assert 0.0 < wait < goal / 15


def test_a_negative_progress_weight_is_refused():
    with pytest.raises(InvalidEnvConfig, match="progress"):
        FrozenLakeEnv(reward_weights={"progress": -0.1})


def test_a_reply_copying_a_demonstration_earns_nothing_and_still_pays_its_costs():
    """att35n: a move whose reply also held a demonstration's answer was paid 0 in every
    component, its costs included: stepping back with it was free (progress earned twice:
    4.0 against the goal's 2.0) and a fall cost nothing. Only what pays is zeroed now."""
    from rllm_envs.demonstrations import SEARCH

    copied = SEARCH.answers[0]
    env = FrozenLakeEnv(
        desc=["SFFG", "HFFF"], reward_weights={"invalid_action": -0.1, "progress": 1.0}
    )

    def total(replies: list[str]) -> tuple[float, dict[str, Any]]:
        env.reset(seed=0)
        got, info = 0.0, {}
        for reply in replies:
            _, reward, terminated, truncated, info = env.step(reply)
            got += float(reward)
            if terminated or truncated:
                break
        return got, info

    honest, _ = total(["Right"] * 3)
    back_and_forth, _ = total(["Right", f"Left {copied}"] * 6 + ["Right"] * 3)
    assert honest == pytest.approx(2.0) and back_and_forth == pytest.approx(honest)
    fall, info = total([f"Down {copied}"])
    assert info["copied_demonstration"] == "search" and info["outcome"] == "hole"
    assert fall == pytest.approx(-0.05)  # the hole's cost, and nothing paid
