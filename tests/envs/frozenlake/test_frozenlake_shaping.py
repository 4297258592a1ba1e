"""FrozenLake's shaping never makes dying early the best policy.

The committed configs' weights (read from their YAML) and any weights the env accepts:
falling into a hole returns less than every way of playing on -- valid moves until the turn
limit, unreadable replies, or a mix -- with and without the trainer's discount.
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


#: Ways to play on from the start without ever falling (reply for a given turn).
ALIVE_VALID = {
    "bump the left edge until the limit": lambda t: "Left",
    "bump the top edge until the limit": lambda t: "Up",
    "walk right, then bump": lambda t: "Right",
    "alternate left and up": lambda t: "Left" if t % 2 else "Up",
}
ALIVE_WITH_INVALID = {
    "every reply unreadable": lambda t: "I am not sure.",
    "unreadable every other turn": lambda t: "hmm" if t % 2 else "Left",
    "unreadable after turn 1": lambda t: "Left" if t == 1 else "??",
    "one unreadable reply": lambda t: "??" if t == 2 else "Up",
}
DIE_AT_TURN_2 = {
    "bump, then fall at turn 2": lambda t: "Left" if t == 1 else "Down",
    "unreadable, then fall at turn 2": lambda t: "??" if t == 1 else "Down",
}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_falling_at_turn_2_returns_less_than_any_way_of_staying_alive(path):
    config = yaml.safe_load(path.read_text())
    gamma = float((config.get("algorithm") or {}).get("gamma", 1.0))
    for env in _envs(config):
        rows = _lake(len(env.unwrapped._rows) or _size(env))
        played = {
            name: _play(env, rows, policy, gamma)
            for name, policy in {**ALIVE_VALID, **ALIVE_WITH_INVALID, **DIE_AT_TURN_2}.items()
        }
        for name in DIE_AT_TURN_2:
            assert played[name]["outcomes"][1] == "hole", played[name]
        for name in {**ALIVE_VALID, **ALIVE_WITH_INVALID}:
            # Alive to the turn limit: no hole, no goal.
            assert "hole" not in played[name]["outcomes"], (name, played[name])
            assert len(played[name]["outcomes"]) == env.max_turns
        for dead in DIE_AT_TURN_2:
            for alive in {**ALIVE_VALID, **ALIVE_WITH_INVALID}:
                for key in ("return", "discounted"):
                    assert played[dead][key] < played[alive][key], (
                        f"{path.name} (max_turns {env.max_turns}, weights {env.reward_weights}): "
                        f"{dead} {key} {played[dead][key]:.3f} >= {alive} {played[alive][key]:.3f}"
                    )
        # Valid moves until the limit cost nothing; unreadable replies cost what they say.
        assert all(played[n]["return"] == 0.0 for n in ALIVE_VALID)


def _size(env: FrozenLakeEnv) -> int:
    _, info = env.reset(seed=0)
    return len(info["map"])


def test_each_component_pays_for_what_it_names():
    env = FrozenLakeEnv(desc=_lake(3), max_turns=6, reward_weights={"invalid_action": -0.1})
    env.reset(seed=0)
    _, reward, _, _, info = env.step("??")
    assert info["reward_components"] == {"success": 0.0, "hole": 0.0, "invalid_action": 1.0}
    assert reward == pytest.approx(-0.1)
    _, reward, terminated, _, info = env.step("Down")
    # Turn 2 of 6: the fall throws away turns 2 to 6.
    assert terminated and info["reward_components"]["hole"] == 5.0
    assert reward == pytest.approx(5 * -0.15)
    env.reset(seed=0)
    for move in ["Right", "Right", "Down"]:
        env.step(move)
    _, reward, terminated, _, info = env.step("Down")
    assert terminated and info["is_correct"]
    assert info["reward_components"] == {"success": 1.0, "hole": 0.0, "invalid_action": 0.0}
    assert reward == 1.0


@pytest.mark.parametrize(
    "weights",
    [
        {"hole": 0.0},
        {"invalid_action": -0.15},  # ties the default hole weight
        {"invalid_action": -0.5},
        {"hole": -1.0, "invalid_action": -1.0},
        {"success": -0.2},
    ],
)
def test_weights_under_which_falling_pays_are_refused(weights):
    with pytest.raises(InvalidEnvConfig, match="hole"):
        FrozenLakeEnv(reward_weights=weights)


def test_any_accepted_weights_make_every_fall_the_worst_way_to_play_on():
    """Dying at turn t vs every reply unreadable from t on, for random accepted weights."""
    rng = np.random.default_rng(0)
    checked = 0
    while checked < 40:
        weights = {
            "success": float(rng.uniform(-1, 2)),
            "hole": float(-rng.uniform(0, 2)),
            "invalid_action": float(rng.uniform(-2, 0.5)),
        }
        try:
            env = FrozenLakeEnv(
                desc=_lake(4), max_turns=int(rng.integers(2, 12)), reward_weights=weights
            )
        except InvalidEnvConfig:
            continue
        checked += 1
        gamma = float(rng.choice([1.0, 0.99, 0.9]))
        for t in range(2, env.max_turns + 1):
            # Bump until turn t, then fall; or bump until turn t, then reply nothing readable.
            die = _play(
                env,
                env.unwrapped._rows or _lake(4),
                lambda k, t=t: "Left" if k < t else "Down",
                gamma,
            )
            stall = _play(env, _lake(4), lambda k, t=t: "Left" if k < t else "??", gamma)
            assert die["outcomes"][-1] == "hole" and len(die["outcomes"]) == t
            assert die["discounted"] < stall["discounted"], (weights, env.max_turns, t, gamma)
            assert die["return"] < stall["return"], (weights, env.max_turns, t)
