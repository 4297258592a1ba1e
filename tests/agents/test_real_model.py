"""Agents for real models: per-family token limits and stop strings (the parser reads a reply
cut before its stop), the leaderboard's decoding from them, and SmolLM2-135M-Instruct through
the leaderboard on one env per family, greedy, showing that its replies are parsed."""

from __future__ import annotations

import os

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401
from rllm_agents import make_agent
from rllm_envs.error import DependencyNotInstalled

FAMILIES = {
    "rllm/Math-v0": {"max_tokens": 384},
    "rllm/FrozenLake-v0": {"max_tokens": 64, "stop": ("</action>",)},
    "rllm/Code-v0": {"max_tokens": 512},
    "rllm/ToolUse-v0": {"max_tokens": 192, "stop": ("</tool_call>",)},
    "rllm/Search-v0": {"max_tokens": 192, "stop": ("</tool_call>",)},
}


@pytest.mark.parametrize("env_id", list(FAMILIES))
def test_family_hints(env_id):
    assert make_agent(env_id).sampling_hints() == FAMILIES[env_id]


def test_hints_are_agent_kwargs():
    agent = make_agent("rllm/Math-v0", max_tokens=32, stop=["\n\n"])
    assert agent.sampling_hints() == {"max_tokens": 32, "stop": ("\n\n",)}
    assert make_agent("rllm/Math-v0", max_tokens=None).sampling_hints() == {}


@pytest.mark.parametrize(
    ("env_id", "kwargs"), [("rllm/FrozenLake-v0", {}), ("rllm/ToolUse-v0", {"python": False})]
)
def test_stops_keep_the_reply_parseable(env_id, kwargs):
    """A reply cut before the family's stop string is still a valid action."""
    env = gym.make(env_id, **kwargs).unwrapped
    env.reset(seed=0, options={"index": 0})
    full = env.oracle_action()
    if env_id == "rllm/FrozenLake-v0":
        full = f"<action>{full}</action>"
    (stop,) = make_agent(env_id).stop
    assert stop in full
    env.reset(seed=0, options={"index": 0})
    *_, info = env.step(full.split(stop)[0])
    assert not info["invalid_action"]


def test_leaderboard_decoding_uses_the_family_hints():
    from benchmarks.leaderboard.model_policy import ModelPolicy

    policy = ModelPolicy("hf:tiny", env_settings={"rllm/Math-v0": {"max_tokens": 7}})
    tool = policy.decoding("rllm/ToolUse-v0")
    assert (tool.max_tokens, tool.stop) == (192, ("</tool_call>",))
    assert policy.decoding("rllm/Math-v0").max_tokens == 7  # explicit wins
    assert ModelPolicy("hf:tiny", max_tokens=16).decoding("rllm/FrozenLake-v0").stop == (
        "</action>",
    )


# --------------------------------------------------------------------------- the real model

#: One env per family; two tasks each (greedy, the family's own token limit).
REAL = [
    "rllm/Math-v0",
    "rllm/Countdown-v0",
    "rllm/Code-v0",
    "rllm/FrozenLake-v0",
    "rllm/ToolUse-v0",
]


@pytest.mark.slow
@pytest.mark.skipif(
    not os.environ.get("RLLM_REAL_MODEL_TESTS"),
    reason="minutes of CPU generation (5 envs x 2 tasks at the family limits); set "
    "RLLM_REAL_MODEL_TESTS=1 to run it",
)
def test_smollm2_replies_are_parsed_in_every_family(tmp_path):
    pytest.importorskip("transformers")
    from adapters.models import resolve_model
    from benchmarks.leaderboard.runner import RunConfig, run

    try:
        resolve_model("smollm2-135m-instruct")
    except DependencyNotInstalled as e:
        pytest.skip(str(e))
    config = RunConfig(
        policy="hf:smollm2-135m-instruct",
        envs=REAL,
        n_tasks=2,
        env_kwargs={"rllm/ToolUse-v0": {"python": False}},
        policy_kwargs={"temperature": 0.0},
    )
    summary = run(config, tmp_path, progress=False)
    rates = {env_id: m["format_rate"] for env_id, m in summary["envs"].items()}
    assert set(rates) == set(REAL)
    # Each family's replies reach its parser: a boxed answer, an <answer>, a code block,
    # a move, a tool call.
    assert all(rate > 0 for rate in rates.values()), rates
