"""The gateway against the second blind attack after the fixes (issue #29, session 11,
att29b G1-G7): a scored session is the env's episode (each call one turn), request heads and
pipelined requests are bounded before authentication, a call naming no model is pinned to the
engine's served model, one client's stores do not hold up another's, and odd fields answer 400.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import pytest

from .test_gateway_record import (
    ALICE,
    CALL,
    StandInEngine,
    _episodes,
    _task_prompt,
    _test_client,
)

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

MATH = "rllm/Math-v1"


# ------------------------------------------- G1: a scored session is the env's episode


def test_a_scored_session_is_played_as_the_envs_episode_not_graded_on_its_last_reply(tmp_path):
    """att29b G1: a session of a single-turn env could hold any number of complete calls and
    the scorer graded the last reply: retry until right, then score 1.0 and ``is_correct``
    (pass@1 1.0 against 0.1 for honest single calls). Now each call is one turn of the env's
    episode: more calls than it takes -> 409 ``too_many_turns``, stored without a reward."""
    from rllm_agents.store import EpisodeStore

    engine = StandInEngine(text="\\boxed{450}")
    scorers = {MATH: {}, "rllm/Math-v0": {"max_turns": 2}}
    app = _test_client(tmp_path, engine, scorers=scorers)
    call = {**CALL, "prompt": _task_prompt(MATH, 0)}  # seed 0's answer is 455

    def session(env_id, replies):
        sid = app.post("/sessions", json={"env_id": env_id, "seed": 0}, headers=ALICE).json()[
            "session_id"
        ]
        for text in replies:
            engine.text = text
            r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE)
            assert r.is_success, r.text
        return app.post(f"/sessions/{sid}/reward", json={"env": env_id}, headers=ALICE)

    try:
        # Retry until right, in one session of a single-turn env: not scored.
        r = session(MATH, ["\\boxed{450}", "\\boxed{451}", "\\boxed{455}"])
        assert r.status_code == 409 and r.json()["error"]["code"] == "too_many_turns", r.text
        # One call, one turn: scored on that reply.
        r = session(MATH, ["\\boxed{455}"])
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
        r = session(MATH, ["\\boxed{451}"])
        assert r.status_code == 200 and r.json()["reward"] == 0.0, r.text
        # An env of two turns plays two calls (each reply stepped in order; the episode's
        # reward), and refuses a third before stepping any.
        r = session("rllm/Math-v0", ["\\boxed{450}", "\\boxed{455}"])
        assert r.status_code == 200, r.text
        two = r.json()
        r = session("rllm/Math-v0", ["\\boxed{450}", "\\boxed{451}", "\\boxed{455}"])
        assert r.status_code == 409 and r.json()["error"]["code"] == "too_many_turns", r.text
        # A right first answer ends the episode: a second call after it is not scored.
        r = session("rllm/Math-v0", ["\\boxed{455}", "\\boxed{450}"])
        assert r.status_code == 409 and r.json()["error"]["code"] == "too_many_turns", r.text
    finally:
        app.__exit__(None, None, None)
    episodes = _episodes(tmp_path / "e.db")
    assert len(episodes) == 6
    refused = [e for e in episodes if e.trajectory.steps[-1].info["reward_source"] == "none"]
    assert len(refused) == 3
    assert all(not e.is_correct and e.trajectory.total_reward == 0.0 for e in refused)
    assert {e.trajectory.steps[-1].info["score_error"] for e in refused} == {"too_many_turns"}
    scored = [e for e in episodes if e.trajectory.steps[-1].info["reward_source"] == "scorer"]
    (played,) = [e for e in scored if e.trajectory.env_id == "rllm/Math-v0"]
    info = played.trajectory.steps[-1].info
    assert info["turns"] == 2 and len(info["step_rewards"]) == 2
    assert two["reward"] == pytest.approx(sum(info["step_rewards"]))
    # pass@1 of the single-turn env: the retried session counts as no solve.
    with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
        (row,) = store.pass_at_k(env=MATH).values()
    assert row["pass@1"] == pytest.approx(1 / 3), row
