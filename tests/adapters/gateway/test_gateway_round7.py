"""The gateway against the blind round of session 19 (issue #29, att29j): a run's token
limit is the one the engine cuts at, and a scored session that never reached an engine
leaves no failed sample behind.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import asyncio

import pytest

from .test_gateway_record import ALICE, CALL, StandInEngine, _task_prompt, _test_client

pytest.importorskip("starlette")
pytest.importorskip("httpx")

MATH = "rllm/Math-v1"


def _scored_call(app, seed=0, **fields):
    sid = app.post("/sessions", json={"env_id": MATH, "seed": seed}, headers=ALICE).json()
    call = {**CALL, "prompt": _task_prompt(MATH, seed), "temperature": 0, **fields}
    return app.post(f"/sessions/{sid['session_id']}/v1/completions", json=call, headers=ALICE)


def test_the_runs_token_limit_is_the_one_the_engine_cuts_at(tmp_path):
    """att29j F1: the pin read `max_tokens` while vLLM's chat endpoint cuts at
    `max_completion_tokens` (and a null `max_tokens` read as no limit): a greedy reply
    previewed off the record was cut after its right box again (pass@1 0.27 -> 0.57)."""
    app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}})
    try:
        limit = CALL["max_tokens"]
        assert _scored_call(app).is_success
        for fields in (
            {"max_completion_tokens": limit - 1},  # next to the pinned max_tokens
            {"max_tokens": None, "max_completion_tokens": limit - 1},
            {"max_tokens": "5"},
            {"max_tokens": 0},
        ):
            r = _scored_call(app, **fields)
            assert r.status_code == 400, (fields, r.text)
        # The same limit under either name is the same call.
        assert _scored_call(app, max_tokens=None, max_completion_tokens=limit).is_success
        assert _scored_call(app, max_completion_tokens=limit).is_success
    finally:
        app.__exit__(None, None, None)


def test_a_scored_session_that_sampled_nothing_leaves_no_failed_sample(tmp_path):
    """att29j F2: a scored session ended with no call (its call refused before any engine,
    a client retrying) stayed pending for good, and one extra sample of one task halved the
    run's pass@1 (1.0 -> 0.5)."""
    from rllm_agents.store import EpisodeStore

    engine = StandInEngine("\\boxed{455}")  # seed 0's answer
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        # An empty session ended by a reward, and one left open until shutdown.
        for _ in range(2):
            sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
            empty = sid.json()["session_id"]
        r = app.post(f"/sessions/{empty}/reward", json={"reward": 1.0}, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_calls", r.text
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE).json()
        call = {**CALL, "prompt": _task_prompt(MATH, 0)}
        url = f"/sessions/{sid['session_id']}"
        assert app.post(f"{url}/v1/completions", json=call, headers=ALICE).is_success
        assert app.post(f"{url}/reward", json={"env": MATH}, headers=ALICE).json()["reward"] == 1
    finally:
        app.__exit__(None, None, None)
    with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
        (row,) = store.pass_at_k(ks=(1,)).values()
        assert store.pending() == {}
    assert (row["samples"], row["pending"], row["pass@1"]) == (1, 0, 1.0), row


@pytest.mark.parametrize("sampled", ["replied", "unrecorded"])
def test_a_session_the_policy_answered_stays_a_failed_sample(tmp_path, sampled):
    """The other side: a session whose call an engine answered (or whose reply reached the
    client unrecorded) keeps its failed sample, however it ends."""
    from rllm_adapters.gateway.sessions import SessionRegistry
    from rllm_agents.store import EpisodeStore

    with EpisodeStore(tmp_path / "e.db") as store:
        registry = SessionRegistry(store, run="r", max_sessions=4, model="m")
        kept, dropped = (registry.create("alice") for _ in range(2))
        for session in (kept, dropped):
            session.env_id, session.task_id = MATH, "t0"
            asyncio.run(registry.open_pending(session))
        if sampled == "replied":
            kept.replied = True
        else:
            kept.unrecorded = 1
        for session in (kept, dropped):
            asyncio.run(registry.end_unsampled(session))
        assert list(store.pending()) == [kept.pending]
