"""Agents for real models: per-family token limits and stop strings (the parser reads a reply
cut before its stop), the leaderboard's decoding from them, and SmolLM2-135M-Instruct through
the leaderboard on one env per family, greedy, showing that its replies are parsed."""

from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401
from rllm_agents import make_agent
from rllm_envs.error import DependencyNotInstalled

FAMILIES = {
    "rllm/Math-v1": {"max_tokens": 384},
    "rllm/FrozenLake-v1": {"max_tokens": 64, "stop": ("</action>",)},
    "rllm/Code-v0": {"max_tokens": 512},
    "rllm/ToolUse-v1": {"max_tokens": 192, "stop": ("</tool_call>",)},
    "rllm/Search-v1": {"max_tokens": 192, "stop": ("</tool_call>",)},
}


@pytest.mark.parametrize("env_id", list(FAMILIES))
def test_family_hints(env_id):
    assert make_agent(env_id).sampling_hints() == FAMILIES[env_id]


def test_hints_are_agent_kwargs():
    agent = make_agent("rllm/Math-v1", max_tokens=32, stop=["\n\n"])
    assert agent.sampling_hints() == {"max_tokens": 32, "stop": ("\n\n",)}
    assert make_agent("rllm/Math-v1", max_tokens=None).sampling_hints() == {}


@pytest.mark.parametrize(
    ("env_id", "kwargs"), [("rllm/FrozenLake-v1", {}), ("rllm/ToolUse-v1", {"python": False})]
)
def test_stops_keep_the_reply_parseable(env_id, kwargs):
    """A reply cut before the family's stop string is still a valid action."""
    env = gym.make(env_id, **kwargs).unwrapped
    env.reset(seed=0, options={"index": 0})
    full = env.oracle_action()
    if env_id == "rllm/FrozenLake-v1":
        full = f"<action>{full}</action>"
    (stop,) = make_agent(env_id).stop
    assert stop in full
    env.reset(seed=0, options={"index": 0})
    *_, info = env.step(full.split(stop)[0])
    assert not info["invalid_action"]


def test_leaderboard_decoding_uses_the_family_hints():
    from benchmarks.leaderboard.model_player import ModelPlayer

    policy = ModelPlayer("hf:tiny", env_settings={"rllm/Math-v1": {"max_tokens": 7}})
    tool = policy.decoding("rllm/ToolUse-v1")
    assert (tool.max_tokens, tool.stop) == (192, ("</tool_call>",))
    assert policy.decoding("rllm/Math-v1").max_tokens == 7  # explicit wins
    assert ModelPlayer("hf:tiny", max_tokens=16).decoding("rllm/FrozenLake-v1").stop == (
        "</action>",
    )


# --------------------------------------------------------------------------- the real model

#: One env per family (and one multi-agent env), with the kwargs that keep it cheap: two
#: tasks each, greedy, the family's own prompt, token limit and stop strings. Multi-turn envs
#: get a few turns only: a format test needs replies, not whole episodes, and the turns of
#: one episode are sequential (12 tool turns of 192 tokens are minutes of CPU on their own).
REAL = {
    "rllm/Math-v1": {},
    "rllm/Countdown-v1": {},
    "rllm/Code-v0": {},
    "rllm/FrozenLake-v1": {"max_turns": 4},
    "rllm/ToolUse-v1": {"python": False, "max_turns": 3},  # no python tool: no sandbox
    "rllm/Search-v1": {"max_turns": 3},
    "rllm/SolverJudge-v1": {},
}


@pytest.fixture(scope="module")
def smollm2_run(tmp_path_factory):
    """One leaderboard run of the real model over :data:`REAL` (one engine for every test)."""
    pytest.importorskip("vllm")
    from benchmarks.leaderboard.runner import LeaderboardConfig, run
    from rllm_adapters.models import resolve_model

    try:
        resolve_model("smollm2-135m-instruct")
    except DependencyNotInstalled as e:
        pytest.skip(str(e))
    out = tmp_path_factory.mktemp("smollm2")
    config = LeaderboardConfig(
        policy="vllm:smollm2-135m-instruct",
        envs=list(REAL),
        n_tasks=4,
        env_kwargs={k: v for k, v in REAL.items() if v},
        policy_kwargs={"temperature": 0.0},
        transcripts=True,
    )
    summary = run(config, out, progress=False)
    print("format rates:", {e: m["format_rate"] for e, m in summary["envs"].items()})
    return summary, out / config.name


#: Families where four greedy tasks cannot hold a format rate above 0. Countdown: SmolLM2
#: wrote an ``<answer>`` tag on 1 of 4 default tasks before the difficulty 1-3 draws were
#: balanced by shape (issue #25) and on 0 of 4 of the new ones (and 0 of 4 at difficulty 4 on
#: either code): the sample, not the parser, decides it.
SMALL_SAMPLE = {"rllm/Countdown-v1"}


# `model`: it runs a vLLM engine, in the run that has the machine to itself (scripts/test.sh).
@pytest.mark.model
@pytest.mark.slow
@pytest.mark.parametrize(
    "env_id",
    [
        pytest.param(
            e,
            marks=pytest.mark.xfail(e in SMALL_SAMPLE, reason="4 greedy tasks", strict=False),
        )
        for e in REAL
    ],
)
def test_smollm2_replies_are_parsed_in_every_family(smollm2_run, env_id):
    """SmolLM2-135M-Instruct on vLLM through the leaderboard: the family parses its replies.

    One engine plays every env at once; the format rate is the leaderboard's (share of turns
    without ``invalid_action``): a boxed answer, an ``<answer>``, a code block, a move, a tool
    call or answer, a solver's and a judge's reply. Measured (4 tasks each): Math 0.25,
    Countdown 0.5 (0 on today's tasks: :data:`SMALL_SAMPLE`), Code 1, FrozenLake 1, ToolUse
    0.17, Search 0.25, SolverJudge 0.75. The tool and judge families parse only since their
    agents show one worked exchange (:attr:`~rllm_agents.agent.Agent.default_demonstration`);
    before, 0 under three prompts.
    """
    summary, run_dir = smollm2_run
    if env_id == "rllm/ToolUse-v1":
        # On the evaluation universe's four tasks the model writes tool calls but copies the
        # prompt's placeholder argument, which the env refuses (an invalid turn, by design):
        # what this test can hold is that its replies are calls the env reads.
        import json

        replies = [
            m["content"]
            for line in (run_dir / "transcripts.jsonl").read_text(encoding="utf-8").splitlines()
            for record in [json.loads(line)]
            if record.get("column") == env_id
            for m in record["messages"][3:]
            if m["role"] == "assistant"
        ]
        assert any("<tool_call>" in reply for reply in replies), replies
        return
    assert summary["envs"][env_id]["format_rate"] > 0, summary["envs"][env_id]


@pytest.mark.model
@pytest.mark.slow
def test_smollm2_run_reports_every_env_with_transcripts(smollm2_run):
    from benchmarks.leaderboard.report import load_run

    summary, run_dir = smollm2_run
    assert set(summary["envs"]) == set(REAL)
    assert all(0.0 <= m["format_rate"] <= 1.0 for m in summary["envs"].values())
    # Every env has transcripts of what the model replied.
    shown = load_run(run_dir, examples=2).transcripts
    assert set(shown) == set(REAL)
    single = [t for ts in shown.values() for t in ts if "messages" in t]
    assert single and all(any(m["role"] == "assistant" for m in t["messages"]) for t in single)
