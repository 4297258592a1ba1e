"""The gateway against the second blind attack after the fixes (issue #29, session 11,
att29b G1-G7): a scored session is the env's episode (each call one turn), request heads and
pipelined requests are bounded before authentication, a call naming no model is pinned to the
engine's served model, one client's stores do not hold up another's, and odd fields answer 400.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import socket

import pytest

from .test_gateway_record import (
    ALICE,
    CALL,
    StandInEngine,
    _episodes,
    _server,
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
        prompt = call["prompt"]
        for text in replies:  # each turn's prompt carries the earlier replies, as a client's
            engine.text = text
            r = app.post(
                f"/sessions/{sid}/v1/completions", json={**call, "prompt": prompt}, headers=ALICE
            )
            assert r.is_success, r.text
            prompt += f"\n{text}\nTry again.\n"
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


# ------------------------------------- G3/G4: heads and pipelined requests are bounded


def _read_to_close(sock):
    received = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            break
        if not chunk:
            break
        received += chunk
    return received


def test_a_request_head_is_bounded_before_authentication(tmp_path):
    """att29b G3/G3b: with httptools a request head had no size limit: 1 GB of headers (or a
    URL that never ends) in one head was kept by the gateway, before any token. Now a head
    over 64 KiB is answered 431 and the connection closed."""
    server = _server(tmp_path, "http://127.0.0.1:9/v1", store=None)
    try:
        for head in (
            b"GET /health HTTP/1.1\r\nHost: x\r\n" + b"X-Pad: " + b"a" * 2000 + b"\r\n",
            b"GET /health?" + b"a" * 2000,
        ):
            with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
                s.sendall(head)
                sent, refused = len(head), False
                try:
                    while sent < 4 * 1024 * 1024:  # more is never read
                        pad = b"X-Pad: " + b"a" * 2000 + b"\r\n" if b"Host" in head else b"a" * 2000
                        s.sendall(pad * 16)
                        sent += len(pad) * 16
                except (BrokenPipeError, ConnectionResetError):
                    refused = True
                received = _read_to_close(s)
                assert refused or received, "the gateway read 4 MB of one head"
                if received:
                    assert received.startswith(b"HTTP/1.1 431"), received[:200]
        # A head of ordinary size is served.
        r = httpx.get(server.url + "/health", headers={"X-Pad": "a" * 8000}, timeout=10)
        assert r.status_code == 200, r.text
    finally:
        server.stop()


def test_pipelined_requests_are_not_read_past_a_small_queue(tmp_path):
    """att29b G4: pipelined `/health` requests that were never read were all queued (uvicorn
    reads on after each reply): 10 connections x 2 MB stalled other clients for over 10 s and
    kept 300 MB. Now a connection is not read while a request waits for the one before it,
    and one that queued more than 16 in one write is closed."""
    server = _server(tmp_path, "http://127.0.0.1:9/v1", store=None)
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 1000)
            received = _read_to_close(s)
        answered = received.count(b"HTTP/1.1 200")
        assert answered <= 17, answered
        # A few pipelined requests (a client that does pipeline) are all answered.
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n" * 3)
            s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            assert _read_to_close(s).count(b"HTTP/1.1 200") == 4
        r = httpx.get(server.url + "/health", timeout=10)
        assert r.status_code == 200, r.text
    finally:
        server.stop()


# ------------------------------- G2: a call naming no model is pinned to the served one


def test_a_call_naming_no_model_is_pinned_to_the_engines_served_model(tmp_path):
    """att29b G2: with `--engine` and no `--served-model-name`, a call naming no model was
    never pinned: a session mixed the engine's default (base) model and an adapter and was
    stored as the adapter's. Now the engines' served model is looked up (`/v1/models`, first
    id), a call naming none is pinned and sent to it, and another model is `model_changed`."""
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    engine = StandInEngine(text="\\boxed{455}")

    async def models(request):
        return JSONResponse({"data": [{"id": "tiny"}, {"id": "other"}]})

    engine.app.router.routes.append(Route("/v1/models", models, methods=["GET"]))
    app = _test_client(tmp_path, engine)
    plain = {k: v for k, v in CALL.items() if k != "model"}
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        r = app.post(f"/sessions/{sid}/v1/completions", json=plain, headers=ALICE)
        assert r.is_success, r.text
        assert engine.bodies[-1]["model"] == "tiny"  # the engine is told which
        other = {**CALL, "model": "other"}
        r = app.post(f"/sessions/{sid}/v1/completions", json=other, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "model_changed", r.text
        r = app.post(f"/sessions/{sid}/v1/completions", json=plain, headers=ALICE)
        assert r.is_success, r.text
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 0}, headers=ALICE).is_success
    finally:
        app.__exit__(None, None, None)
    (episode,) = _episodes(tmp_path / "e.db")
    assert episode.model == "tiny" and episode.trajectory.metadata["model"] == "tiny"
    assert [s.info["model"] for s in episode.trajectory.steps] == ["tiny", "tiny"]


# ------------------------------------- G7: one client's stores do not delay another's


def test_the_store_thread_serves_clients_in_turn():
    """att29b G7: one store thread served every client first come, first served: alice's
    full sessions (seconds each to store) delayed bob's reward behind all of them. Now each
    client has its own queue and the thread takes one store of each client in turn."""
    import asyncio
    import threading

    from rllm_adapters.gateway.sessions import Call, SessionRegistry

    class Store:
        """A stand-in episode store inside this test: alice's first store waits until
        every reward is queued, and the order of stores is kept."""

        def __init__(self):
            self.order = []
            self.release = threading.Event()

        def put(self, trajectory, run=None, model=None, pending=None):
            owner = trajectory.metadata["client"]
            if not self.order:
                self.release.wait(30)
            self.order.append(owner)
            return type("Put", (), {"id": len(self.order), "hash": "h"})()

    store = Store()
    registry = SessionRegistry(store, run=None, max_sessions=16, model=None)

    async def main():
        sessions = []
        for owner, sid in [("alice", f"a{i}") for i in range(4)] + [("bob", "b0")]:
            session = registry.get(sid, owner, create=True)
            session.metadata = {**(session.metadata or {}), "client": owner}
            registry.record(session, Call("completions", [1], [2], [-0.1], "x", "stop"))
            sessions.append(session)
        tasks = [asyncio.create_task(registry.finish(s, 1.0)) for s in sessions]
        await asyncio.sleep(0.2)  # every store queued behind alice's first
        store.release.set()
        return await asyncio.gather(*tasks)

    results = asyncio.run(main())
    assert len(results) == 5
    # Bob's store waits only for the one running, not for all four of alice's.
    assert store.order == ["alice", "bob", "alice", "alice", "alice"], store.order


# ------------------------------- G5 and notes: odd session fields answer 400, not 500


def test_session_fields_stream_options_repetition_penalty_and_ignore_eos(tmp_path):
    """att29b G5: `stream_options` that is not an object raised (500 internal_error); the
    gateway's own `repetition_penalty: 1.0` was refused; `ignore_eos` let a recorded, scored
    reply run past the policy's own end. Now: 400, accepted, refused for clients with keys
    (a keyless local gateway may send it, and such a session is never scored)."""
    engine = StandInEngine(text="\\boxed{455}")
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    call = {**CALL, "prompt": _task_prompt(MATH, 0)}
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE).json()[
            "session_id"
        ]
        url = f"/sessions/{sid}/v1/completions"
        for options in ("x", 5, [1]):
            body = {**call, "stream": True, "stream_options": options}
            r = app.post(url, json=body, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", r.text
            chat = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
            chat = {**chat, "stream": True, "stream_options": options}
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=chat, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request", r.text
        r = app.post(url, json={**call, "ignore_eos": True}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "field_not_recordable"
        assert "ignore_eos" in r.json()["error"]["message"]
        r = app.post(url, json={**call, "repetition_penalty": 1.05}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "field_not_recordable"
        body = {**call, "repetition_penalty": 1.0, "ignore_eos": False}
        r = app.post(url, json=body, headers=ALICE)
        assert r.status_code == 200, r.text
        r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    finally:
        app.__exit__(None, None, None)
    # A keyless (local) gateway takes `ignore_eos` for fixed lengths, but does not score it.
    store = str(tmp_path / "local.db")
    local = _test_client(tmp_path, engine, api_keys={}, scorers={MATH: {}}, store=store)
    try:
        sid = local.post("/sessions", json={"env_id": MATH, "seed": 0}).json()["session_id"]
        r = local.post(f"/sessions/{sid}/v1/completions", json={**call, "ignore_eos": True})
        assert r.status_code == 200, r.text
        r = local.post(f"/sessions/{sid}/reward", json={"env": MATH})
        assert r.status_code == 409 and r.json()["error"]["code"] == "ignore_eos", r.text
    finally:
        local.__exit__(None, None, None)


# ----------------------------------- G6: run refusals do not say which kind (or whose)


def test_another_clients_run_and_its_look_alike_get_one_answer(tmp_path):
    """att29b G6: alice learned from 403 `run_forbidden` vs 409 `run_lookalike` (and a
    message naming the reserving client) which of her guesses were bob's runs and how.
    Now a run that is another client's, reserved for one, or a look-alike of one gets the
    same answer (a free name is still claimed: first come, first served, documented)."""
    from .test_gateway_record import BOB

    app = _test_client(tmp_path, StandInEngine())
    try:
        assert app.post("/sessions", json={"run": "exp-7f3a"}, headers=BOB).status_code == 201
        answers = []
        for name in ("exp-7f3a", "EXP-7F3A", "gateway:bob", "Gateway:bob"):
            r = app.post("/sessions", json={"run": name}, headers=ALICE)
            error = r.json()["error"]
            answers.append((r.status_code, error["code"], error["message"].replace(name, "N")))
        assert len(set(answers)) == 1 and answers[0][:2] == (403, "run_forbidden"), answers
        assert "bob" not in answers[0][2]
    finally:
        app.__exit__(None, None, None)
