"""The gateway against the third blind attack (issue #29, session 11): every generation a
session asked for is in its record, session sampling is the policy's and not replayable,
a scored session is checked before its reply is run and scored once, bodies that never end
are cut, shutdown is not held by one client's stream, and a session's memory is bounded.

The engine here is ``StandInEngine``: a stand-in OpenAI server inside these unit tests of
the gateway (it answers with ids and logprobs, streams a reply chunk by chunk, can hold a
stream open, and keeps what it was sent). Some tests serve it on a real socket (a stream a
client closes half-way needs one).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time

import pytest

from rllm_adapters.gateway.config import GatewayConfig

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")

KEY_A = "alice-token-0123456789"
KEY_B = "bob-token-0123456789ab"
ALICE = {"Authorization": f"Bearer {KEY_A}"}
BOB = {"Authorization": f"Bearer {KEY_B}"}
KEYS = {"alice": KEY_A, "bob": KEY_B}
CALL = {"model": "tiny", "prompt": "1+1=", "max_tokens": 4}


class StandInEngine:
    """A stand-in OpenAI-compatible engine for these unit tests (not a real part).

    Replies ``text`` (one token per character, ids from 100). A stream sends ``hold_after``
    chunks and then holds the stream open until the client leaves (``None``: it finishes).
    ``ascii_json=False`` writes non-ASCII characters raw, as vLLM's (pydantic's) JSON does.
    The prompt's ids are the prompt itself when it is a list of ids, else ``[1, 2]``.
    """

    def __init__(
        self, text: str = "\\boxed{2}", hold_after: int | None = None, ascii_json: bool = True
    ) -> None:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse, StreamingResponse
        from starlette.routing import Route

        self.text = text
        self.hold_after = hold_after
        #: The finish reason of every reply (``"length"``: as if cut).
        self.finish = "stop"
        self.bodies: list[dict] = []

        def prompt_ids(body):
            prompt = body.get("prompt")
            return list(prompt) if isinstance(prompt, list) else [1, 2]

        async def completions(request):
            body = json.loads(await request.body())
            self.bodies.append(body)
            ids = [100 + i for i in range(len(self.text))]
            if not body.get("stream"):
                choice = {
                    "index": 0,
                    "text": self.text,
                    "token_ids": ids,
                    "prompt_token_ids": prompt_ids(body),
                    "logprobs": {"token_logprobs": [-0.5] * len(ids)},
                    "finish_reason": self.finish,
                }
                return JSONResponse({"id": "c", "choices": [choice]})

            async def events():
                for i, char in enumerate(self.text):
                    if self.hold_after is not None and i == self.hold_after:
                        await asyncio.sleep(3600)  # held until the client leaves
                    choice = {
                        "index": 0,
                        "text": char,
                        "token_ids": [ids[i]],
                        "logprobs": {"token_logprobs": [-0.5]},
                        "finish_reason": self.finish if i == len(self.text) - 1 else None,
                    }
                    if i == 0:
                        choice["prompt_token_ids"] = prompt_ids(body)
                    chunk = json.dumps({"id": "c", "choices": [choice]}, ensure_ascii=ascii_json)
                    yield f"data: {chunk}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        async def health(request):
            return JSONResponse({})

        async def models(request):
            # vLLM's model card says the context length (what a chat call without a limit
            # may use up).
            return JSONResponse({"data": [{"id": "tiny", "max_model_len": 2048}]})

        self.app = Starlette(
            routes=[
                Route("/v1/completions", completions, methods=["POST"]),
                Route("/v1/models", models, methods=["GET"]),
                Route("/health", health, methods=["GET"]),
            ]
        )


class _Served:
    """An ASGI app on a real socket, in a thread (for the stand-in engine)."""

    def __init__(self, app) -> None:
        import uvicorn

        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "engine did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)


def _test_client(tmp_path, engine, **settings):
    """A TestClient of a gateway (alice and bob) whose engine calls go to ``engine``."""
    from starlette.testclient import TestClient

    from rllm_adapters.gateway.app import Gateway

    settings.setdefault("store", str(tmp_path / "e.db"))
    settings.setdefault("api_keys", KEYS)
    settings.setdefault("engines", ["http://127.0.0.1:9/v1"])
    gateway = Gateway(GatewayConfig(**settings))
    client = TestClient(gateway.app)
    client.__enter__()
    client.portal.call(gateway.client.aclose)  # its engine connections, before the stand-in's
    gateway.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=engine.app))
    client.gateway = gateway
    return client


def _server(tmp_path, engine_url, **settings):
    """A gateway on a real socket in front of the engine at ``engine_url``."""
    from rllm_adapters.gateway.server import GatewayServer

    settings.setdefault("store", str(tmp_path / "e.db"))
    settings.setdefault("api_keys", KEYS)
    return GatewayServer(GatewayConfig(engines=[engine_url], port=0, **settings)).start()


def _episodes(path):
    from rllm_agents.store import EpisodeStore

    if not path.exists():
        return []
    with EpisodeStore(path, read_only=True) as store:
        return list(store.episodes())


def _task_prompt(env_id, seed):
    import gymnasium as gym

    import rllm_envs  # noqa: F401

    env = gym.make(env_id)
    try:
        observation, _ = env.reset(seed=seed)
    finally:
        env.close()
    return observation


def _wait(predicate, what, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


# ------------------------------------------------------- F1: aborted streams are recorded


def test_a_stream_closed_before_its_finish_is_recorded_and_never_scored(tmp_path):
    """s11 att29 F1: a streamed session call closed by the client before its finish chunk
    was not recorded, so a client dropped its wrong samples and scored a right one as a
    first try. Now what arrived is recorded, marked aborted, and the session is not scored."""
    engine = _Served(StandInEngine(text="\\boxed{455} done", hold_after=4).app)
    server = _server(tmp_path, engine.url, scorers={"rllm/Math-v1": {}})
    try:
        base = server.url
        r = httpx.post(
            f"{base}/sessions", json={"env_id": "rllm/Math-v1", "seed": 0}, headers=ALICE
        )
        sid = r.json()["session_id"]
        body = {**CALL, "prompt": _task_prompt("rllm/Math-v1", 0), "stream": True}
        url = f"{base}/sessions/{sid}/v1/completions"
        with httpx.stream("POST", url, json=body, headers=ALICE, timeout=30) as reply:
            seen = 0
            for line in reply.iter_lines():
                if line.startswith("data:"):
                    seen += 1
                if seen == 3:
                    break  # the client leaves half-way

        def calls():
            info = httpx.get(f"{base}/sessions/{sid}", headers=ALICE).json()
            return info["calls"]

        _wait(lambda: calls() == 1, "the aborted call's record")
        r = httpx.post(f"{base}/sessions/{sid}/reward", json={"env": "rllm/Math-v1"}, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "aborted_call", r.text
        # The session is still open: the client's own number stores it, aborted call and all.
        r = httpx.post(f"{base}/sessions/{sid}/reward", json={"reward": 1.0}, headers=ALICE)
        assert r.status_code == 200, r.text
        assert "episode" not in r.json() and len(r.json()["hash"]) == 64  # F6: no row count
    finally:
        server.stop()
        engine.stop()
    (episode,) = _episodes(tmp_path / "e.db")
    t = episode.trajectory
    (step,) = t.steps
    assert step.finish_reason == "abort" and step.info["aborted"] is True
    assert 1 <= len(step.completion_ids) <= 4 and len(step.logprobs) == len(step.completion_ids)
    assert t.metadata["aborted_calls"] == 1 and not episode.is_correct
    assert step.info["reward_source"] == "client"


def test_a_stream_whose_json_holds_unicode_line_separators_is_relayed_and_recorded_whole(
    tmp_path,
):
    """An engine's JSON holds non-ASCII characters raw (vLLM's does), and U+2028, U+2029 and
    U+0085 are line breaks to ``str.splitlines`` but not to server-sent events: a recorded
    stream read as ``splitlines`` lines cut such a chunk, so the client got broken events and
    the record lost the token (its ids no longer the completion's)."""
    text = "a\u2028b\u2029c\x85d"
    engine = _Served(StandInEngine(text=text, ascii_json=False).app)
    server = _server(tmp_path, engine.url)
    try:
        base = server.url
        r = httpx.post(f"{base}/sessions", json={}, headers=ALICE)
        sid = r.json()["session_id"]
        body = {**CALL, "stream": True}
        url = f"{base}/sessions/{sid}/v1/completions"
        with httpx.stream("POST", url, json=body, headers=ALICE, timeout=30) as reply:
            raw = reply.read().decode()
        events = [e[len("data: ") :] for e in raw.split("\n\n") if e.strip()]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        assert "".join(c["choices"][0]["text"] for c in chunks) == text
        r = httpx.post(f"{base}/sessions/{sid}/reward", json={"reward": 1.0}, headers=ALICE)
        assert r.status_code == 200, r.text
    finally:
        server.stop()
        engine.stop()
    (episode,) = _episodes(tmp_path / "e.db")
    (step,) = episode.trajectory.steps
    assert step.response == text
    assert step.completion_ids == [100 + i for i in range(len(text))]
    assert step.info.get("token_source", episode.trajectory.token_source) == "engine"


# ----------------------------------------- F4/F5: session sampling is the policy's own


@pytest.mark.parametrize(
    "field",
    [
        {"seed": 3},
        {"top_k": 1},
        {"temperature": 0.05},
        {"temperature": 1.5},
        {"min_p": 0.9},
        {"top_p": 0.5},
        {"top_k": 1.0},
        {"temperature": "1"},
    ],
)
def test_sampling_that_reshapes_or_replays_the_policy_is_refused_in_a_session(tmp_path, field):
    """s11 att29 F4/F5: `seed` made a session's sample replayable from off-record searches,
    and top_k/temperature/min_p made the recorded logprobs the processed distribution's
    (top_k 1: every logprob 0.0), all marked token-exact."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine)
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        r = app.post(f"/sessions/{sid}/v1/completions", json={**CALL, **field}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "field_not_recordable"
        assert next(iter(field)) in r.json()["error"]["message"]
        assert engine.bodies == []
    finally:
        app.__exit__(None, None, None)


def test_a_session_call_is_sent_at_the_policys_own_sampling(tmp_path):
    engine = StandInEngine()
    app = _test_client(tmp_path, engine)
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        url = f"/sessions/{sid}/v1/completions"
        assert app.post(url, json=CALL, headers=ALICE).is_success
        # An engine's defaults (a model's generation_config) cannot reshape it either.
        sent = engine.bodies[-1]
        assert (sent["temperature"], sent["top_p"], sent["top_k"], sent["min_p"]) == (1, 1, -1, 0)
        assert sent["repetition_penalty"] == 1.0 and "seed" not in sent
        neutral = {"temperature": 1, "top_p": 1.0, "top_k": 0, "min_p": 0, "seed": None}
        assert app.post(url, json={**CALL, **neutral}, headers=ALICE).is_success
        greedy = {**CALL, "temperature": 0.0}  # greedy: vLLM's logprobs stay the model's
        assert app.post(url, json=greedy, headers=ALICE).is_success
        assert engine.bodies[-1]["temperature"] == 0.0
        # Without a session the call is relayed as sent (nothing is recorded).
        assert app.post("/v1/completions", json={**CALL, "seed": 3}, headers=ALICE).is_success
        assert engine.bodies[-1]["seed"] == 3 and "top_k" not in engine.bodies[-1]
    finally:
        app.__exit__(None, None, None)


# ----------------------------------------------- F10: a body that never ends is cut


def test_a_request_body_that_never_ends_is_cut_even_before_authentication(tmp_path):
    """s11 att29 F10: a full head, a large Content-Length and one body byte held a connection
    forever (`/health` and 401 routes answer without reading the body), so 40 of them filled
    --max-connections without a token."""
    config = {"header_timeout_s": 0.5, "body_timeout_s": 0.5, "max_connections": 4}
    server = _server(tmp_path, "http://127.0.0.1:9/v1", store=None, **config)
    sockets = []
    try:
        heads = {
            "POST /sessions": b"HTTP/1.1 401",  # answered before its body: no token
            "GET /health": b"HTTP/1.1 ",  # answered before its body: no token needed
            f"POST /sessions\r\nAuthorization: Bearer {KEY_A}": b"HTTP/1.1 408",  # read: 408
            "GET /health\r\nX-Other: 1": b"HTTP/1.1 ",
        }
        for head in heads:
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            sockets.append(s)
            method, _, rest = head.partition("\r\n")
            extra = rest + "\r\n" if rest else ""
            s.sendall(
                f"{method} HTTP/1.1\r\nHost: x\r\n{extra}Content-Length: 1000000\r\n\r\n{{".encode()
            )
        for s, expected in zip(sockets, heads.values(), strict=True):
            received = b""
            while True:  # the answer, then the gateway closes the connection
                chunk = s.recv(65536)
                if not chunk:
                    break
                received += chunk
            assert received.startswith(expected), received[:200]
        # The slots are free again: an authenticated client is served, not 503 at the cap.
        r = httpx.get(server.url + "/metrics", headers=ALICE, timeout=10)
        assert r.status_code == 200, r.text
    finally:
        for s in sockets:
            s.close()
        server.stop()


# ------------------------------- F2/F9/F12: checked before run, scored once, logged once

STEPS: list[str] = []


def _register_probe_env():
    import gymnasium as gym

    class ProbeScorer(gym.Env):
        """A fake env inside this test: its prompt is fixed, its step is counted (a tool
        env's step would run the reply's program), and a reply "raise" makes it fail."""

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return "Task 7: say seven.", {"task_id": "probe-7"}

        def step(self, action):
            STEPS.append(action)
            if action == "raise":
                raise ValueError("secret inner state")
            return "", float(action == "seven"), True, False, {"is_correct": action == "seven"}

    if "gwtest/Probe-v0" not in gym.registry:
        gym.register("gwtest/Probe-v0", entry_point=ProbeScorer, disable_env_checker=True)


def test_a_scored_session_is_checked_before_its_reply_runs_and_is_scored_once(tmp_path, caplog):
    """s11 att29 F2, F9, F12: only the first prompt had to hold the task but the last reply was
    scored; the scorer stepped the reply (a ToolUse program) before the prompt check; and a
    failed scoring reopened the session, so one session ran a client's program again and
    again, each failure logging a traceback."""
    _register_probe_env()
    engine = StandInEngine(text="seven")
    app = _test_client(tmp_path, engine, scorers={"gwtest/Probe-v0": {}})
    task = {**CALL, "prompt": "Task 7: say seven."}
    other = {**CALL, "prompt": "no task here"}
    STEPS.clear()
    try:

        def session(*calls):
            sid = app.post(
                "/sessions", json={"env_id": "gwtest/Probe-v0", "seed": 0}, headers=ALICE
            ).json()["session_id"]
            for call in calls:
                r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE)
                assert r.is_success, r.text
            return sid

        def score(sid):
            return app.post(
                f"/sessions/{sid}/reward", json={"env": "gwtest/Probe-v0"}, headers=ALICE
            )

        # The last call's prompt is not the task: refused, and its reply was never stepped.
        for calls in ((task, other), (other, task), (other,)):
            sid = session(*calls)
            r = score(sid)
            assert r.status_code == 409 and r.json()["error"]["code"] == "prompt_not_task"
            # Scored once: the session ended (stored without a reward).
            again = score(sid)
            assert again.status_code == 409 and again.json()["error"]["code"] == "session_ended"
        assert STEPS == []
        # A scoring that fails ends its session too; one traceback per kind per interval.
        engine.text = "raise"
        caplog.set_level(logging.WARNING, logger="rllm_adapters.gateway.app")
        for _ in range(3):
            sid = session(task)
            r = score(sid)
            assert r.status_code == 400 and r.json()["error"]["code"] == "score_failed"
            assert "secret" not in r.text
            assert score(sid).json()["error"]["code"] == "session_ended"
        assert len(STEPS) == 3
        assert sum(1 for rec in caplog.records if "scoring" in rec.getMessage()) == 1
        engine.text = "seven"
        # Two calls of a one-turn episode (att29b G1): not scored; the probe names no
        # max_turns, so its first reply is stepped, its episode ends, and the second is not.
        r = score(session(task, {**task, "prompt": task["prompt"] + " seven. Again:"}))
        assert r.status_code == 409 and r.json()["error"]["code"] == "too_many_turns", r.text
        assert len(STEPS) == 4
        r = score(session(task))
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    finally:
        app.__exit__(None, None, None)
    episodes = _episodes(tmp_path / "e.db")
    assert len(episodes) == 8
    refused = [e for e in episodes if e.trajectory.steps[-1].info["reward_source"] == "none"]
    assert len(refused) == 7 and all(e.trajectory.total_reward == 0.0 for e in refused)
    assert {e.trajectory.steps[-1].info["score_error"] for e in refused} == {
        "prompt_not_task",
        "score_failed",
        "too_many_turns",
    }


# ------------------------------------------------------ F3: shutdown held by no stream


def test_shutdown_stores_sessions_first_and_cuts_a_slow_stream_after_its_grace(tmp_path):
    """s11 att29 F3: one client's slow stream held shutdown for --request-timeout (600 s),
    and the open sessions of every client were stored only after it, so a supervisor's
    kill lost them."""
    engine = _Served(StandInEngine(text="abcdefgh", hold_after=2).app)
    server = _server(tmp_path, engine.url, request_timeout_s=600, shutdown_grace_s=1)
    streamed = threading.Event()
    try:
        base = server.url
        bob = httpx.post(f"{base}/sessions", json={}, headers=BOB).json()["session_id"]
        r = httpx.post(f"{base}/sessions/{bob}/v1/completions", json=CALL, headers=BOB)
        assert r.status_code == 200, r.text
        alice = httpx.post(f"{base}/sessions", json={}, headers=ALICE).json()["session_id"]

        def hold():
            url = f"{base}/sessions/{alice}/v1/completions"
            body = {**CALL, "stream": True}
            try:
                with httpx.stream("POST", url, json=body, headers=ALICE, timeout=60) as reply:
                    for line in reply.iter_lines():
                        if line.startswith("data:"):
                            streamed.set()
            except httpx.HTTPError:
                pass

        reader = threading.Thread(target=hold, daemon=True)
        reader.start()
        assert streamed.wait(20)
        thread = server._thread
        server.stop(timeout=60)
        assert not thread.is_alive()  # within the grace, not the request timeout
        reader.join(30)
    finally:
        server.stop()
        engine.stop()
    stored = {
        e.trajectory.metadata["session_id"]: e.trajectory for e in _episodes(tmp_path / "e.db")
    }
    assert set(stored) == {bob, alice}
    assert stored[bob].steps[-1].info["ended_by"] == "shutdown"
    assert stored[alice].metadata["aborted_calls"] == 1  # what it generated is recorded


# --------------------------------------------- F7: a session's memory is bounded


def test_what_a_call_holds_in_memory_counts_against_its_sessions_bound(tmp_path):
    """s11 att29 F7: a 10 kB call of token ids held 162 kB (its ids as Python ints, kept
    twice), while only its request bytes counted against max_session_bytes."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, max_session_bytes=20_000)
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        url = f"/sessions/{sid}/v1/completions"
        ids = {**CALL, "prompt": list(range(1000, 1300))}  # about 2 kB of JSON
        assert app.post(url, json=ids, headers=ALICE).is_success
        assert app.post(url, json=ids, headers=ALICE).is_success
        r = app.post(url, json=ids, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "session_full"
        session = app.gateway.sessions.sessions["alice", sid]
        assert "prompt" not in session.calls[0].request  # the engine's ids are kept once
        assert session.calls[0].prompt_ids == list(range(1000, 1300))
    finally:
        app.__exit__(None, None, None)


def test_a_clients_open_sessions_hold_a_bounded_record_in_all(tmp_path):
    """s11 att29 F7: 1024 sessions of 64 MiB each were ~160 GB for one client key."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, max_bytes_per_client=20_000)
    try:
        ids = {**CALL, "prompt": list(range(1000, 1300))}  # about 13 kB held per call
        first, second, third = (
            app.post("/sessions", json={}, headers=ALICE).json()["session_id"] for _ in range(3)
        )
        assert app.post(f"/sessions/{first}/v1/completions", json=ids, headers=ALICE).is_success
        assert app.post(f"/sessions/{second}/v1/completions", json=ids, headers=ALICE).is_success
        r = app.post(f"/sessions/{third}/v1/completions", json=ids, headers=ALICE)
        assert r.status_code == 429 and r.json()["error"]["code"] == "client_full"
        # Bob's own budget is untouched; a reward frees Alice's.
        bob = app.post("/sessions", json={}, headers=BOB).json()["session_id"]
        assert app.post(f"/sessions/{bob}/v1/completions", json=ids, headers=BOB).is_success
        assert app.post(f"/sessions/{first}/reward", json={"reward": 0}, headers=ALICE).is_success
        assert app.post(f"/sessions/{third}/v1/completions", json=ids, headers=ALICE).is_success
    finally:
        app.__exit__(None, None, None)


# ---------------------------------------- F13: a waiting reward does not poll


def test_a_reward_waits_for_calls_in_flight_without_polling(monkeypatch):
    """s11 att29 F13: a reward waited for a call in flight by waking every 10 ms."""
    from rllm_adapters.gateway.sessions import Session, SessionRegistry

    registry = SessionRegistry(object(), run=None, max_sessions=10, model="m")
    session = Session(id="s", owner="local")
    session.in_flight = 1
    real_sleep = asyncio.sleep
    wakeups = []

    loops = []

    async def counted(delay, *args, **kwargs):
        # Only this test's loop: a server thread another test left (uvicorn's main loop
        # sleeps 0.1 s) shares the patched module.
        if asyncio.get_running_loop() in loops:
            wakeups.append(delay)
        return await real_sleep(delay, *args, **kwargs)

    async def run():
        loops.append(asyncio.get_running_loop())
        claim = asyncio.create_task(registry.claim(session))
        monkeypatch.setattr(asyncio, "sleep", counted)
        for _ in range(20):
            await real_sleep(0.005)
        assert not claim.done()
        session.leave()
        await asyncio.wait_for(claim, 5)

    asyncio.run(run())
    assert wakeups == [] and session.closed


# ---------------------------------------------------- F11: look-alike run names


def test_run_names_that_look_like_another_clients_are_refused(tmp_path):
    """s11 att29 F11: `exp-A `, `EXP-A`, `exp-A<zero-width space>`, `exp‐A` were runs of their
    own next to bob's `exp-A`."""
    app = _test_client(tmp_path, StandInEngine())
    try:
        assert app.post("/sessions", json={"run": "exp-A"}, headers=BOB).status_code == 201
        for name in ("exp-A ", "exp-A\u200b", "exp\u2010A", "exp A", ""):
            r = app.post("/sessions", json={"run": name}, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session"
        r = app.post("/sessions", json={"run": "EXP-A"}, headers=ALICE)
        # One answer for a look-alike and another's run (att29b G6: no oracle of which).
        assert r.status_code == 403 and r.json()["error"]["code"] == "run_forbidden"
        assert app.post("/sessions", json={"run": "EXP-A"}, headers=BOB).status_code == 201
        assert app.post("/sessions", json={"run": "exp-B"}, headers=ALICE).status_code == 201
    finally:
        app.__exit__(None, None, None)
