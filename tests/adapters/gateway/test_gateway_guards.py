"""The gateway against the second blind attack (issue #29): scorers fixed by the operator,
scoring that holds up nobody, session calls that cannot reshape the sampled distribution,
connections that cannot exhaust the process, bounded session records, client JSON that
cannot lose a session, and runs and metrics that stay each client's own.

The engine here is ``FakeEngine``: a stand-in OpenAI server inside these unit tests of the
gateway (it answers a fixed completion with ids and logprobs, and keeps what it was sent).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

import pytest

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.gateway.config import GatewayConfig

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

KEY_A = "alice-token-0123456789"
KEY_B = "bob-token-0123456789ab"
ADMIN = "admin-token-0123456789"
ALICE = {"Authorization": f"Bearer {KEY_A}"}
BOB = {"Authorization": f"Bearer {KEY_B}"}
NOWHERE = "http://127.0.0.1:9/v1"
CALL = {"model": "tiny", "prompt": "1+1=", "max_tokens": 4}


class FakeEngine:
    """A stand-in OpenAI-compatible engine for these unit tests (not a real part)."""

    def __init__(self, text: str = "\\boxed{2}") -> None:
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route

        self.text = text
        self.bodies: list[dict] = []

        async def completions(request):
            body = json.loads(await request.body())
            self.bodies.append(body)
            choice = {
                "index": 0,
                "text": self.text,
                "token_ids": [5, 6],
                "prompt_token_ids": [1, 2],
                "logprobs": {"token_logprobs": [-0.1, -0.2]},
                "finish_reason": "stop",
            }
            usage = {"prompt_tokens": 2, "completion_tokens": 2}
            return JSONResponse({"id": "c", "choices": [choice], "usage": usage})

        async def health(request):
            return JSONResponse({})

        self.app = Starlette(
            routes=[
                Route("/v1/completions", completions, methods=["POST"]),
                Route("/health", health, methods=["GET"]),
            ]
        )


def _gateway(tmp_path, engine: FakeEngine | None = None, **settings):
    """A TestClient of a gateway (alice and bob) whose engine calls go to ``engine``."""
    from starlette.testclient import TestClient

    from rllm_adapters.gateway.app import Gateway

    settings.setdefault("store", str(tmp_path / "e.db"))
    settings.setdefault("api_keys", {"alice": KEY_A, "bob": KEY_B})
    gateway = Gateway(GatewayConfig(engines=[NOWHERE], **settings))
    client = TestClient(gateway.app)
    client.__enter__()
    if engine is not None:
        client.portal.call(gateway.client.aclose)  # its engine connections, before the stand-in's
        gateway.client = httpx.AsyncClient(transport=httpx.ASGITransport(app=engine.app))
    client.gateway = gateway
    return client


def _session(app, headers=ALICE, **fields):
    r = app.post("/sessions", json=fields, headers=headers)
    assert r.status_code == 201, r.text
    return r.json()["session_id"]


def _task_prompt(env_id, seed):
    """The prompt ``env_id`` gives for ``seed`` (what a scored session's first call holds)."""
    import gymnasium as gym

    import rllm_envs  # noqa: F401

    env = gym.make(env_id)
    try:
        observation, _ = env.reset(seed=seed)
    finally:
        env.close()
    return observation


def _task_call(env_id, seed):
    return {**CALL, "prompt": "Task: " + _task_prompt(env_id, seed)}


def _episodes(path):
    from rllm_agents.store import EpisodeStore

    if not path.exists():
        return []
    with EpisodeStore(path, read_only=True) as store:
        return list(store.episodes())


# ---------------------------------------------------------------- 1. scorers are the operator's


def test_a_client_names_a_scorer_and_a_task_nothing_else(tmp_path):
    engine = FakeEngine(text="garbage")
    app = _gateway(tmp_path, engine, scorers={"rllm/Math-v1": {}})
    try:
        sid = _session(app, env_id="rllm/Math-v1", seed=3)
        task = _task_call("rllm/Math-v1", 3)
        assert app.post(f"/sessions/{sid}/v1/completions", json=task, headers=ALICE).is_success
        reward = f"/sessions/{sid}/reward"
        # The attacks of round 2: sandbox off, a host file as dataset, own task and answer.
        for extra in (
            {"env_kwargs": {"sandbox_backend": "none"}},
            {"env_kwargs": {"dataset": "/etc/passwd", "field_map": {"problem": "x"}}},
            {"options": {"task": {"problem": "1+1", "answer": "2"}}},
            {"answer": "\\boxed{2}"},
        ):
            r = app.post(reward, json={"env": "rllm/Math-v1", **extra}, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_reward", r.text
        # Only the operator's scorers.
        r = app.post(reward, json={"env": "rllm/Code-v0"}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "scorer_not_allowed"
        assert "rllm/Math-v1" in r.json()["error"]["message"]
        for bad in ({"seed": -1}, {"index": "0"}, {"seed": True}):
            r = app.post(reward, json={"env": "rllm/Math-v1", **bad}, headers=ALICE)
            assert r.status_code == 400
        assert _episodes(tmp_path / "e.db") == []  # nothing stored by any refusal
        # The session's last reply, on the session's task: garbage scores 0.
        r = app.post(reward, json={"env": "rllm/Math-v1"}, headers=ALICE)
        assert r.status_code == 200 and r.json()["reward"] == 0.0
        (episode,) = _episodes(tmp_path / "e.db")
        t = episode.trajectory
        step = t.steps[-1]
        # Seed 3's task, played as the task's episode: its index, and seed = index (s24 att29u).
        index = step.info["task_index"]
        assert (t.env_id, t.seed) == ("rllm/Math-v1", index)
        assert step.info["custom_task"] is False and step.response == "garbage"
        assert step.info["scored"] == {"env": "rllm/Math-v1", "seed": index, "index": index}
        # A session with no call has nothing to score: 409 and nothing stored.
        empty = _session(app, env_id="rllm/Math-v1", seed=3)
        r = app.post(f"/sessions/{empty}/reward", json={"env": "rllm/Math-v1"}, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_calls"
        assert len(_episodes(tmp_path / "e.db")) == 1
    finally:
        app.__exit__(None, None, None)


def test_a_scored_reward_passes_the_direct_routes_checks_and_errors_quote_nothing(tmp_path):
    import gymnasium as gym

    class LeakyScorer(gym.Env):
        """A fake env inside this test: its reset fails quoting what it read."""

        def reset(self, *, seed=None, options=None):
            raise ValueError("Available fields: ['creds'] sk-SECRET-0123")

    class LeakyStep(gym.Env):
        """A fake env inside this test: its task is CALL's prompt; its step fails quoting."""

        def reset(self, *, seed=None, options=None):
            return CALL["prompt"], {"task_id": "leaky-0"}

        def step(self, action):
            raise ValueError("Available fields: ['creds'] sk-SECRET-0123")

    gym.register("gwtest/LeakyScorer-v0", entry_point=LeakyScorer, disable_env_checker=True)
    gym.register("gwtest/LeakyStep-v0", entry_point=LeakyStep, disable_env_checker=True)
    # A wrong whole number: clean final form, so `format` pays and the weighted sum overflows.
    engine = FakeEngine(text="\\boxed{-987654321}")
    heavy = {"reward_weights": {"correct": 1.0, "format": 1e300}}
    scorers = {"rllm/Math-v1": heavy, "gwtest/LeakyScorer-v0": {}, "gwtest/LeakyStep-v0": {}}
    app = _gateway(tmp_path, engine, scorers=scorers)
    try:
        sid = _session(app, env_id="rllm/Math-v1", seed=3)
        task = _task_call("rllm/Math-v1", 3)
        assert app.post(f"/sessions/{sid}/v1/completions", json=task, headers=ALICE).is_success
        r = app.post(f"/sessions/{sid}/reward", json={"env": "rllm/Math-v1"}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_reward", r.text
        # The task is found when the session opens (s16 att29c F1): a scorer whose reset
        # fails refuses the session there, quoting nothing of what it read.
        r = app.post(
            "/sessions", json={"env_id": "gwtest/LeakyScorer-v0", "seed": 0}, headers=ALICE
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session"
        message = r.json()["error"]["message"]
        assert "SECRET" not in message and "creds" not in message
        leaky = _session(app, env_id="gwtest/LeakyStep-v0", seed=0)
        assert app.post(f"/sessions/{leaky}/v1/completions", json=CALL, headers=ALICE).is_success
        r = app.post(
            f"/sessions/{leaky}/reward", json={"env": "gwtest/LeakyStep-v0"}, headers=ALICE
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "score_failed"
        message = r.json()["error"]["message"]
        assert "SECRET" not in message and "creds" not in message
        # A session is scored once: both ended, stored without a reward (s11 att29 F12).
        stored = {e.trajectory.metadata["session_id"]: e for e in _episodes(tmp_path / "e.db")}
        assert set(stored) == {sid, leaky}
        for episode in stored.values():
            assert episode.trajectory.total_reward == 0.0
            assert episode.trajectory.steps[-1].info["reward_source"] == "none"
        assert stored[leaky].trajectory.steps[-1].info["score_error"] == "score_failed"
        assert stored[leaky].trajectory.task_id == "leaky-0"
        r = app.post(f"/sessions/{sid}/reward", json={"reward": 1.0}, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "session_ended"
    finally:
        app.__exit__(None, None, None)
    # An operator cannot give a scorer a sandbox that does not isolate.
    with pytest.raises(AdapterConfigError, match="isolat"):
        GatewayConfig(engines=[NOWHERE], scorers={"rllm/Code-v0": {"sandbox_backend": "none"}})
    from rllm_adapters.gateway.server import parse_args

    config = parse_args(
        ["--engine", NOWHERE, "--scorer", "rllm/Math-v1", "--scorer", 'rllm/Countdown-v1={"x": 1}']
    )
    assert config.scorers == {"rllm/Math-v1": {}, "rllm/Countdown-v1": {"x": 1}}


# ---------------------------------------------------------------- 2. scoring holds up nobody


def test_slow_scorings_are_capped_per_client_and_hold_up_no_other_reward(tmp_path):
    import gymnasium as gym

    entered = threading.Semaphore(0)
    release = threading.Event()

    class SlowScorer(gym.Env):
        """A fake env inside this test: its step waits until the test releases it."""

        def reset(self, *, seed=None, options=None):
            return "", {"task_id": "t"}

        def step(self, action):
            entered.release()
            release.wait(60)
            return "", 1.0, True, False, {}

    gym.register("gwtest/SlowScorer-v0", entry_point=SlowScorer, disable_env_checker=True)
    app = _gateway(
        tmp_path,
        FakeEngine(),
        scorers={"gwtest/SlowScorer-v0": {}},
        max_scoring_per_client=2,
    )
    scored = {"env": "gwtest/SlowScorer-v0"}
    try:
        sids = [_session(app, env_id="gwtest/SlowScorer-v0", seed=0) for _ in range(3)]
        for sid in sids:
            assert app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE).is_success
        bobs = _session(app, headers=BOB)
        assert app.post(f"/sessions/{bobs}/v1/completions", json=CALL, headers=BOB).is_success
        with ThreadPoolExecutor(2) as pool:
            slow = [
                pool.submit(app.post, f"/sessions/{sid}/reward", json=scored, headers=ALICE)
                for sid in sids[:2]
            ]
            assert entered.acquire(timeout=60) and entered.acquire(timeout=60)
            # Alice's third scoring is refused at once, and so is a second reward on a
            # session being scored (before any scoring, not after).
            r = app.post(f"/sessions/{sids[2]}/reward", json=scored, headers=ALICE)
            assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_scorings"
            r = app.post(f"/sessions/{sids[0]}/reward", json={"reward": 1.0}, headers=ALICE)
            assert r.status_code == 409
            # Bob's reward is stored while both of Alice's scorings still run.
            r = app.post(f"/sessions/{bobs}/reward", json={"reward": 1.0}, headers=BOB)
            assert r.status_code == 200 and not any(f.done() for f in slow)
            release.set()
            assert [f.result().status_code for f in slow] == [200, 200]
        r = app.post(f"/sessions/{sids[2]}/reward", json=scored, headers=ALICE)
        assert r.status_code == 200
        assert len(_episodes(tmp_path / "e.db")) == 4
    finally:
        release.set()
        app.__exit__(None, None, None)


def test_every_route_of_a_client_is_rate_limited(tmp_path):
    app = _gateway(tmp_path, FakeEngine(), rate_limit_rps=0.001, rate_limit_burst=1)
    try:
        sid = _session(app)  # the one request of the burst
        for method, route in (
            ("post", f"/sessions/{sid}/reward"),
            ("get", f"/sessions/{sid}"),
            ("get", "/metrics"),
            ("get", "/v1/models"),
        ):
            kwargs = {"json": {"reward": 1.0}} if method == "post" else {}
            r = getattr(app, method)(route, headers=ALICE, **kwargs)
            assert r.status_code == 429, (route, r.text)
        assert _session(app, headers=BOB)  # another client's own bucket
    finally:
        app.__exit__(None, None, None)


# -------------------------------------------- 3. a session cannot reshape what it records


@pytest.mark.parametrize(
    "field",
    [
        {"logit_bias": {"21": 100}},
        {"allowed_token_ids": [21, 223]},
        {"bad_words": ["x"]},
        {"min_tokens": 4},
        {"presence_penalty": 1.0},
        {"frequency_penalty": 1.0},
        {"repetition_penalty": 1.3},
        {"response_format": {"type": "json_object"}},
        {"structured_outputs": {"choice": ["a"]}},
        {"guided_json": {"type": "object"}},
        {"logits_processors": ["x"]},
        {"vllm_xargs": {"a": 1}},
        {"use_beam_search": True},
    ],
)
def test_fields_that_reshape_the_sampled_distribution_are_refused_in_a_session(tmp_path, field):
    engine = FakeEngine()
    app = _gateway(tmp_path, engine)
    try:
        sid = _session(app)
        r = app.post(f"/sessions/{sid}/v1/completions", json={**CALL, **field}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "field_not_recordable"
        assert next(iter(field)) in r.json()["error"]["message"]
        chat = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}], **field}
        r = app.post(f"/sessions/{sid}/v1/chat/completions", json=chat, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "field_not_recordable"
        assert engine.bodies == []
        # Without a session the call is relayed as sent (nothing is recorded).
        assert app.post("/v1/completions", json={**CALL, **field}, headers=ALICE).is_success
        assert engine.bodies[-1].items() >= field.items()
    finally:
        app.__exit__(None, None, None)


def test_sampling_settings_a_session_takes_are_recorded_with_each_step(tmp_path):
    engine = FakeEngine()
    app = _gateway(tmp_path, engine)
    try:
        sid = _session(app)
        chat = {"model": "tiny", "messages": [{"role": "user", "content": "hi"}]}
        r = app.post(
            f"/sessions/{sid}/v1/chat/completions",
            json={**chat, "tool_choice": "required", "tools": []},
            headers=ALICE,
        )
        assert r.status_code == 400 and "tool_choice" in r.json()["error"]["message"]
        # Settings at the policy's own values are taken (s11 att29 F5: others are refused).
        sampling = {"temperature": 1.0, "top_p": 1, "top_k": -1, "min_p": 0.0, "max_tokens": 4}
        body = {"prompt": "x", "model": "tiny", "stop": ["\n"], **sampling}
        assert app.post(f"/sessions/{sid}/v1/completions", json=body, headers=ALICE).is_success
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 1.0}, headers=ALICE).is_success
        (episode,) = _episodes(tmp_path / "e.db")
        step = episode.trajectory.steps[0]
        assert step.info["sampling"] == {**sampling, "stop": ["\n"]}
        assert episode.trajectory.token_exact
    finally:
        app.__exit__(None, None, None)


# ---------------------------------------------------- 4. connections before any request


def test_half_sent_heads_are_cut_and_connections_are_capped(tmp_path):
    pytest.importorskip("uvicorn")
    from rllm_adapters.gateway.server import GatewayServer

    config = GatewayConfig(
        engines=[NOWHERE],
        port=0,
        api_keys={"alice": KEY_A},
        header_timeout_s=0.5,
        max_connections=4,
    )
    server = GatewayServer(config).start()
    sockets = []
    try:

        def connect():
            s = socket.create_connection(("127.0.0.1", server.port), timeout=30)
            sockets.append(s)
            return s

        half = connect()
        half.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        silent = connect()  # sends nothing at all
        # Both are closed by the gateway, before any token was checked.
        assert half.recv(1024) == b"" and silent.recv(1024) == b""
        held = [connect() for _ in range(4)]
        over = connect()  # the fifth open connection: 503 and closed
        answer = over.recv(4096)
        assert answer.startswith(b"HTTP/1.1 503") and b"too_many_connections" in answer
        for s in held:
            s.close()
        deadline = time.monotonic() + 30
        while True:  # once they are gone, a client is served again
            r = httpx.get(server.url + "/health", timeout=30)
            if r.status_code == 200 or time.monotonic() > deadline:
                break
        assert r.status_code in (200, 503) and "engines" in r.json()
    finally:
        for s in sockets:
            s.close()
        server.stop()


def test_one_kind_of_loop_error_is_logged_once_per_interval():
    from rllm_adapters.gateway.connections import RateLimitedLog, default_max_connections

    logged = []

    class Loop:
        """A stand-in event loop inside this test: records what would be logged."""

        def default_exception_handler(self, context):
            logged.append(context["message"])

    handler = RateLimitedLog(interval_s=3600)
    error = OSError(24, "Too many open files")
    for _ in range(10_000):
        handler(Loop(), {"message": "socket.accept() out of system resource", "exception": error})
    handler(Loop(), {"message": "another kind"})
    assert logged == ["socket.accept() out of system resource", "another kind"]
    handler.interval_s = 0.0
    handler(Loop(), {"message": "socket.accept() out of system resource", "exception": error})
    assert "9999 more like it" in logged[-1]
    assert default_max_connections(1024) < 1024 - 64


# ---------------------------------------------------------- 5. a session's record is bounded


def test_a_session_records_only_its_apis_fields_within_bounds(tmp_path):
    engine = FakeEngine()
    app = _gateway(tmp_path, engine, max_calls_per_session=2, max_session_bytes=10_000)
    try:
        sid = _session(app)
        url = f"/sessions/{sid}/v1/completions"
        # vLLM ignores `messages` on /completions: refused rather than kept with the call.
        r = app.post(url, json={**CALL, "messages": [{}] * 1000}, headers=ALICE)
        assert r.status_code == 400 and "messages" in r.json()["error"]["message"]
        # A batch of prompts, or `n: true`, would record one reply of several.
        for batch in ({"prompt": [[1], [2]]}, {"prompt": ["a", "b"]}, {"n": True}):
            r = app.post(url, json={**CALL, **batch}, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
        assert app.post(url, json=CALL, headers=ALICE).is_success
        assert app.post(url, json=CALL, headers=ALICE).is_success
        r = app.post(url, json=CALL, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "session_full"
        session = app.gateway.sessions.sessions["alice", sid]
        assert set(session.calls[0].request) == {"prompt", "model", "max_tokens"}
        other = _session(app)
        r = app.post(
            f"/sessions/{other}/v1/completions",
            json={**CALL, "prompt": "x" * 12_000},
            headers=ALICE,
        )
        assert r.status_code == 409 and r.json()["error"]["code"] == "session_full"
    finally:
        app.__exit__(None, None, None)


def test_a_middle_chat_call_keeps_its_ids_not_its_conversation():
    from rllm_adapters.gateway.sessions import Call, SessionRegistry

    class Store:
        """A stand-in episode store inside this test (never written to)."""

    registry = SessionRegistry(Store(), run=None, max_sessions=4, model=None)
    session = registry.get("s", "alice")
    for turn in range(3):
        messages = [{"role": "user", "content": "x" * 100}] * (turn + 1)
        request = {"messages": messages, "tools": [], "temperature": 1.0}
        registry.record(session, Call("chat", [1], [2], [-0.1], "x", "stop", request=request))
    first, middle, last = (c.request for c in session.calls)
    assert "messages" in first and "messages" in last
    assert middle == {"temperature": 1.0}


# ------------------------------------------------- 6. client JSON cannot lose a session


def test_deep_info_or_metadata_is_refused_and_the_session_kept(tmp_path):
    app = _gateway(tmp_path, FakeEngine())
    try:
        deep: dict = {}
        node = deep
        for _ in range(900):
            node["a"] = {}
            node = node["a"]
        r = app.post("/sessions", json={"metadata": deep}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session"
        r = app.post("/sessions", json={"metadata": {"x": "y" * 70_000}}, headers=ALICE)
        assert r.status_code == 400
        sid = _session(app)
        assert app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE).is_success
        r = app.post(f"/sessions/{sid}/reward", json={"reward": 1.0, "info": deep}, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_reward"
        r = app.post(
            f"/sessions/{sid}/reward", json={"reward": 1.0, "info": {"ok": 1}}, headers=ALICE
        )
        assert r.status_code == 200
        (episode,) = _episodes(tmp_path / "e.db")
        assert episode.trajectory.steps[-1].info["ok"] == 1
    finally:
        app.__exit__(None, None, None)


def test_a_trajectory_that_cannot_be_built_leaves_the_session_open():
    import asyncio

    from rllm_adapters.gateway.sessions import Call, SessionRegistry

    class Store:
        """A stand-in episode store inside this test."""

        def __init__(self):
            self.put_calls = []

        def put(self, trajectory, run=None, model=None, pending=None):
            self.put_calls.append(trajectory)
            return type("Put", (), {"id": 1, "hash": "h"})()

    registry = SessionRegistry(Store(), run=None, max_sessions=4, model=None)
    session = registry.get("s", "alice")
    registry.record(session, Call("completions", [1], [2], [-0.1], "x", "stop"))

    class Unbuildable(Mapping):
        """A mapping that cannot be read (as a value nested past the walk once was)."""

        def __len__(self):
            return 1

        def __getitem__(self, key):
            raise TypeError("unreadable")

        def __iter__(self):
            raise TypeError("unreadable")

    with pytest.raises(TypeError):
        asyncio.run(registry.finish(session, 1.0, Unbuildable()))
    assert not session.closed  # still open: shutdown (or a retry) stores it
    assert asyncio.run(registry.finish_all()) == 1 and len(registry.store.put_calls) == 1


# ----------------------------------------------- 7. runs and metrics stay each client's own


def test_default_runs_are_reserved_and_claims_survive_a_restart(tmp_path):
    path = tmp_path / "e.db"
    app = _gateway(tmp_path)
    try:
        # Carol is not configured yet: her default run is still hers alone.
        r = app.post("/sessions", json={"run": "gateway:carol"}, headers=BOB)
        assert r.status_code == 403 and r.json()["error"]["code"] == "run_forbidden"
        assert _session(app, headers=BOB, run="gateway:bob")  # his own is fine
        _session(app, run="exp-B")  # claimed by Alice, nothing stored
    finally:
        app.__exit__(None, None, None)
    app = _gateway(tmp_path)
    try:
        r = app.post("/sessions", json={"run": "exp-B"}, headers=BOB)
        assert r.status_code == 403 and r.json()["error"]["code"] == "run_forbidden"
        assert _session(app, run="exp-B")
    finally:
        app.__exit__(None, None, None)
    # A store whose run `gateway:carol` holds another client's episode (written before the
    # reservation): a gateway with carol refuses to start rather than mix them.
    from rllm_agents.store import EpisodeStore
    from rllm_agents.trajectory import Trajectory

    with EpisodeStore(path) as store:
        squat = Trajectory(env_id="e", metadata={"client": "bob", "source": "gateway"})
        store.put(squat, run="gateway:carol")
    with pytest.raises(AdapterConfigError, match="gateway:carol"):
        _gateway(tmp_path, api_keys={"carol": "carol-token-0123456789"})


def test_per_client_limits_are_on_by_default_and_metrics_are_per_client(tmp_path):
    config = GatewayConfig(engines=[NOWHERE])
    assert config.max_sessions_per_client is not None
    assert config.max_sessions_per_client * 10 <= config.max_sessions
    app = _gateway(tmp_path, FakeEngine(), admin_key=ADMIN)
    try:
        sid = _session(app)
        assert app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE).is_success
        mine = app.get("/metrics", headers=BOB).json()
        assert mine["client"] == "bob" and mine["sessions"]["recorded_calls"] == 0
        assert "engines" not in mine and "uptime_s" not in mine
        everything = app.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        assert everything["sessions"]["recorded_calls"] == 1 and everything["engines"]
    finally:
        app.__exit__(None, None, None)


def test_the_head_deadline_also_holds_on_uvicorns_h11_protocol():
    """Without httptools uvicorn speaks h11: the same deadline closes a half-sent head there,
    and a whole request on the same kind of connection is still answered."""
    uvicorn = pytest.importorskip("uvicorn")
    pytest.importorskip("h11")
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from rllm_adapters.gateway.connections import guarded_protocol

    async def ok(request):
        return PlainTextResponse("ok")

    app = Starlette(routes=[Route("/", ok)])
    server = uvicorn.Server(
        uvicorn.Config(app, port=0, http=guarded_protocol(H11Protocol, 0.5, 8), log_level="warning")
    )
    server.install_signal_handlers = lambda: None
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        half = socket.create_connection(("127.0.0.1", port), timeout=30)
        half.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        assert half.recv(1024) == b""
        half.close()
        assert httpx.get(f"http://127.0.0.1:{port}/", timeout=30).text == "ok"
    finally:
        server.should_exit = True
        thread.join(30)


def test_engines_launched_for_a_gateway_that_fails_to_start_are_stopped(tmp_path, monkeypatch):
    """A gateway that launched its engines and then failed (its store unusable, its start
    refused) stops them: none is left running after the error."""
    pytest.importorskip("uvicorn")
    from rllm_adapters.gateway import server as server_module
    from rllm_adapters.gateway.engines import Engine
    from rllm_agents.store import EpisodeStore
    from rllm_agents.trajectory import Trajectory

    stopped = []

    class LaunchedServer:
        """A stand-in for a launched vLLM server inside this test: records its stop."""

        def stop(self):
            stopped.append(self)

    def launch(config):
        engine = Engine(url=NOWHERE, name="engine-0", server=LaunchedServer())
        return [engine], str(tmp_path), "tiny"

    monkeypatch.setattr(server_module, "launch_engines", launch)
    # Failing in the constructor: the store path is a folder.
    with pytest.raises(Exception):  # noqa: B017 (whatever the store raises)
        server_module.GatewayServer(GatewayConfig(model="tiny", store=str(tmp_path), port=0))
    assert len(stopped) == 1
    # Failing at start: a default run that holds another client's episodes.
    path = tmp_path / "e.db"
    with EpisodeStore(path) as store:
        squat = Trajectory(env_id="e", metadata={"client": "bob", "source": "gateway"})
        store.put(squat, run="gateway:carol")
    config = GatewayConfig(
        model="tiny", store=str(path), port=0, api_keys={"carol": "carol-token-0123456789"}
    )
    with pytest.raises(RuntimeError, match="did not start"):
        server_module.GatewayServer(config).start(timeout=60)
    assert len(stopped) == 2


# ------------------------------------------ 8. the third blind attack (att29b): a session's task


def _problem(seed):
    import gymnasium as gym

    import rllm_envs  # noqa: F401

    env = gym.make("rllm/Math-v1")
    try:
        env.reset(seed=seed)
        return env.unwrapped.task["problem"]
    finally:
        env.close()


def _math_answer(seed):
    import gymnasium as gym

    import rllm_envs  # noqa: F401

    env = gym.make("rllm/Math-v1")
    try:
        env.reset(seed=seed)
        return env.unwrapped.task["answer"]
    finally:
        env.close()


def test_a_scored_reward_is_for_the_task_the_session_opened_with(tmp_path):
    """att29b A1: the reply to seed 1's prompt is seed 0's answer; naming seed 0 at reward
    time paid 1.0 and rewrote the record to seed 0. The task is fixed at open: any other is
    refused, and the record keeps the session's task."""
    engine = FakeEngine(text=f"\\boxed{{{_math_answer(0)}}}")
    app = _gateway(tmp_path, engine, scorers={"rllm/Math-v1": {}})
    path = tmp_path / "e.db"
    try:
        sid = _session(app, env_id="rllm/Math-v1", seed=1)
        call = _task_call("rllm/Math-v1", 1)
        assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
        reward = f"/sessions/{sid}/reward"
        for other in ({"seed": 0}, {"index": 0}, {"seed": 1, "index": 3}):
            r = app.post(reward, json={"env": "rllm/Math-v1", **other}, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "task_mismatch", r.text
        assert _episodes(path) == []
        r = app.post(reward, json={"env": "rllm/Math-v1", "seed": 1}, headers=ALICE)
        assert r.status_code == 200 and r.json()["reward"] == 0.0, r.text
        (episode,) = _episodes(path)
        t = episode.trajectory
        index = t.steps[-1].info["task_index"]  # seed 1's task, played as its own episode
        assert (t.env_id, t.seed, episode.is_correct) == ("rllm/Math-v1", index, False)
        assert t.steps[-1].info["reward_source"] == "scorer"
        # A session opened with no task (or for another env) is never scored.
        for fields in ({}, {"env_id": "rllm/Math-v1"}, {"env_id": "other/Env-v0", "seed": 0}):
            sid = _session(app, **fields)
            assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
            r = app.post(
                f"/sessions/{sid}/reward", json={"env": "rllm/Math-v1", "seed": 0}, headers=ALICE
            )
            assert r.status_code == 409 and r.json()["error"]["code"] == "task_mismatch", r.text
        # A first prompt that is not the session's task (seed 0's prompt in a seed-1 session,
        # or token ids) is not scored; the session ends, stored without a reward (scored once).
        for prompt in (_task_prompt("rllm/Math-v1", 0), [1, 2, 3]):
            sid = _session(app, env_id="rllm/Math-v1", seed=1)
            wrong = {**CALL, "prompt": prompt}
            assert app.post(f"/sessions/{sid}/v1/completions", json=wrong, headers=ALICE).is_success
            r = app.post(f"/sessions/{sid}/reward", json={"env": "rllm/Math-v1"}, headers=ALICE)
            assert r.status_code == 409 and r.json()["error"]["code"] == "prompt_not_task"
            r = app.post(f"/sessions/{sid}/reward", json={"reward": 0}, headers=ALICE)
            assert r.status_code == 409 and r.json()["error"]["code"] == "session_ended"
        # The task's statement alone (without the env's instructions) is the task too (for
        # another client: a client's scored sessions of an env frame their tasks alike).
        sid = _session(app, BOB, env_id="rllm/Math-v1", seed=1, run="statements")
        statement = {**CALL, "prompt": f"Q: {_problem(1)}\nA:"}
        r = app.post(f"/sessions/{sid}/v1/completions", json=statement, headers=BOB)
        assert r.status_code == 200, r.text
        r = app.post(f"/sessions/{sid}/reward", json={"env": "rllm/Math-v1"}, headers=BOB)
        assert r.status_code == 200 and r.json()["reward"] == 0.0, r.text
        # A task id named at open must be the scorer's id of that task (refused at open).
        fields = {"env_id": "rllm/Math-v1", "seed": 1, "task_id": "math-made-up"}
        r = app.post("/sessions", json=fields, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "task_mismatch"
        stored = [e.trajectory for e in _episodes(path)]
        assert {t.seed for t in stored} == {index}  # every one seed 1's task
        assert all(not e.is_correct for e in _episodes(path))
    finally:
        app.__exit__(None, None, None)


def test_a_number_reward_is_the_clients_and_sets_no_grade(tmp_path):
    """att29b A2 and A12: a number reward's `is_correct` made the row read as a verified
    grade; a number reward to a session with no call stored an empty token-exact episode."""
    app = _gateway(tmp_path, FakeEngine())
    path = tmp_path / "e.db"
    try:
        sid = _session(app, env_id="rllm/Math-v1", task_id="math-d1-s0-1016164991", seed=1)
        assert app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE).is_success
        info = {"is_correct": True, "grade": "correct", "reference_answer": "42", "note": "n"}
        r = app.post(f"/sessions/{sid}/reward", json={"reward": 1.0, "info": info}, headers=ALICE)
        assert r.status_code == 200, r.text
        (episode,) = _episodes(path)
        step = episode.trajectory.steps[-1]
        assert episode.is_correct is False and episode.trajectory.is_correct is False
        assert step.info["reward_source"] == "client" and step.info["note"] == "n"
        assert step.info["client_grade"] == {
            "is_correct": True,
            "grade": "correct",
            "reference_answer": "42",
        }
        assert "is_correct" not in step.info
        assert episode.trajectory.metadata["reward_source"] == "client"
        for key in ("reward_source", "client_grade", "model"):
            sid = _session(app)
            r = app.post(
                f"/sessions/{sid}/reward", json={"reward": 1, "info": {key: 1}}, headers=ALICE
            )
            assert r.status_code == 400 and key in r.json()["error"]["message"]
        # No call: 409, nothing stored, and the id has ended.
        r = app.post(f"/sessions/{sid}/reward", json={"reward": 1.0}, headers=ALICE)
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_calls"
        late = app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE)
        assert late.status_code == 409 and late.json()["error"]["code"] == "session_ended"
        assert len(_episodes(path)) == 1
    finally:
        app.__exit__(None, None, None)


def test_a_session_records_the_model_its_calls_asked_for(tmp_path):
    """att29b A3: a call for another model the engine serves was stored token-exact under
    the served model's name. The session records the model asked for, and only one."""
    app = _gateway(tmp_path, FakeEngine(), served_model_name="tiny")
    try:
        sid = _session(app)
        other = {**CALL, "model": "other"}
        assert app.post(f"/sessions/{sid}/v1/completions", json=other, headers=ALICE).is_success
        r = app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "model_changed"
        long = {**CALL, "model": "m" * 300}
        r = app.post(f"/sessions/{sid}/v1/completions", json=long, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 0}, headers=ALICE).is_success
        sid = _session(app)
        plain = {k: v for k, v in CALL.items() if k != "model"}
        assert app.post(f"/sessions/{sid}/v1/completions", json=plain, headers=ALICE).is_success
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 0}, headers=ALICE).is_success
        first, second = sorted(_episodes(tmp_path / "e.db"), key=lambda e: e.created)
        assert first.model == "other" and first.trajectory.metadata["model"] == "other"
        assert first.trajectory.steps[0].info["model"] == "other"
        assert second.model == "tiny" and second.trajectory.steps[0].info["model"] == "tiny"
    finally:
        app.__exit__(None, None, None)


def test_client_strings_are_bounded_and_must_be_text(tmp_path):
    """att29b A4, A8 and A9: megabyte ids, lone surrogates (valid JSON, never storable) and
    4,300-digit integers are refused at the door with a 400; nothing is kept."""
    app = _gateway(tmp_path, FakeEngine(), admin_key=ADMIN)
    try:
        for fields in (
            {"env_id": "e" * 257},
            {"task_id": "t" * 257},
            {"run": "r" * 257},
            {"task_id": {"a": 1}},
            {"env_id": ["x"]},
            {"metadata": {"m": "x" * (70 * 1024)}},
        ):
            r = app.post("/sessions", json=fields, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_session", fields
        assert _session(app, env_id="e" * 256, task_id=7)
        for raw in (
            b'{"task_id": "\\udc00"}',
            b'{"metadata": {"k": ["\\uDFFF"]}}',
            b'{"env_id": "\xed\xb0\x80"}',
            b'{"seed": ' + b"1" * 5000 + b"}",
        ):
            r = app.post("/sessions", content=raw, headers=ALICE)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json", raw[:20]
        # A surrogate pair is text: kept.
        sid = _session(app, task_id="\U0001f600")
        assert app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=ALICE).is_success
        r = app.post(
            f"/sessions/{sid}/reward",
            content=b'{"reward": 1, "info": {"x": "\\udc00"}}',
            headers=ALICE,
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
        r = app.post(
            f"/sessions/{sid}/v1/completions",
            content=b'{"model": "tiny", "prompt": "\\ud800", "max_tokens": 1}',
            headers=ALICE,
        )
        assert r.status_code == 400
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 1}, headers=ALICE).is_success
        (episode,) = _episodes(tmp_path / "e.db")
        assert episode.task_id == "\U0001f600"
        metrics = app.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        assert metrics["requests"]["rejected_400"] >= 12 and "rejected_500" not in metrics
    finally:
        app.__exit__(None, None, None)


def test_one_unstorable_session_stops_no_idle_sweep(tmp_path, caplog):
    """att29b A9: the first session the store refused stopped every idle sweep, so no later
    session of any client was stored. Now it is logged once and the others are stored."""
    import asyncio
    import logging

    from rllm_adapters.gateway.sessions import SessionRegistry
    from rllm_agents.store import EpisodeStore

    from .test_gateway_units import call

    store = EpisodeStore(tmp_path / "e.db")
    registry = SessionRegistry(store, run="r", max_sessions=10, model="m", clients=["a", "b"])
    poisoned = registry.create("a", "p")
    registry.record(poisoned, call([1], [2]))
    poisoned.task_id = "\udc00"  # as a session of the old gateway could hold
    sessions = [registry.create("b", f"s{i}") for i in range(3)]
    for s in sessions:
        registry.record(s, call([1], [2]))
    empty = registry.create("b", "empty")  # no call: it ends without being stored
    for s in (poisoned, *sessions, empty):
        s.last_used -= 100
    with caplog.at_level(logging.ERROR, logger="rllm_adapters.gateway.sessions"):
        assert asyncio.run(registry.finish_idle(1.0)) == 3
        assert asyncio.run(registry.finish_idle(1.0)) == 0
    assert len([r for r in caplog.records if "idle session 'p'" in r.getMessage()]) == 1
    assert store.count() == 3 and registry.store_errors == 2
    assert list(registry.sessions) == [("a", "p")]
    store.close()


def test_run_claims_are_capped_per_client_and_appended(tmp_path, monkeypatch):
    """att29b A5: claims were unbounded and each rewrote the whole claims file; now a client
    claims at most MAX_RUNS_PER_CLIENT runs and each claim appends one line."""
    from rllm_adapters.gateway import sessions as sessions_module

    monkeypatch.setattr(sessions_module, "MAX_RUNS_PER_CLIENT", 3)
    claims = tmp_path / "e.db.runs.json"
    claims.write_text(json.dumps({"legacy": "bob"}))  # an older gateway's file
    app = _gateway(tmp_path)
    try:
        before = claims.read_text()
        for i in range(3):
            assert _session(app, run=f"exp-{i}")
            text = claims.read_text()
            assert text.startswith(before) and text.count("\n") == before.count("\n") + 1
            before = text
        r = app.post("/sessions", json={"run": "exp-3"}, headers=ALICE)
        assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_runs"
        assert _session(app, run="exp-0")  # her own runs still take sessions
        assert _session(app, headers=BOB, run="bob-1")  # and bob has his own budget
        r = app.post("/sessions", json={"run": "legacy"}, headers=ALICE)
        assert r.status_code == 403
    finally:
        app.__exit__(None, None, None)
    assert [json.loads(line) for line in claims.read_text().splitlines()] == [
        ["legacy", "bob"],
        ["exp-0", "alice"],
        ["exp-1", "alice"],
        ["exp-2", "alice"],
        ["bob-1", "bob"],
    ]
    app = _gateway(tmp_path)
    try:
        r = app.post("/sessions", json={"run": "exp-1"}, headers=BOB)
        assert r.status_code == 403 and r.json()["error"]["code"] == "run_forbidden"
        r = app.post("/sessions", json={"run": "exp-9"}, headers=ALICE)
        assert r.status_code == 429  # the cap counts the claims of before the restart
    finally:
        app.__exit__(None, None, None)


def test_no_client_can_evict_anothers_ended_marks(tmp_path):
    """att29b A10: ended marks were one FIFO for all clients: alice's churn evicted bob's,
    and his late call opened a second session with the same id (a duplicate episode)."""
    app = _gateway(tmp_path, FakeEngine(), max_sessions=5)
    try:
        sid = _session(app, headers=BOB, session_id="b1")
        assert app.post(f"/sessions/{sid}/v1/completions", json=CALL, headers=BOB).is_success
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 1}, headers=BOB).is_success
        for _ in range(12):
            churn = _session(app)
            r = app.post(f"/sessions/{churn}/reward", json={"reward": 0}, headers=ALICE)
            assert r.status_code == 409  # no call: ended, nothing stored
        late = app.post("/sessions/b1/v1/completions", json=CALL, headers=BOB)
        assert late.status_code == 409 and late.json()["error"]["code"] == "session_ended"
        assert len(_episodes(tmp_path / "e.db")) == 1
    finally:
        app.__exit__(None, None, None)


def test_the_task_check_reads_chat_contents_and_refuses_token_ids():
    from rllm_adapters.gateway.app import _prompt_holds
    from rllm_adapters.gateway.sessions import Call

    def chat(messages):
        return Call("chat", [1], [2], [-0.1], "x", "stop", request={"messages": messages})

    task = "Solve:  1 + 1\n\nAnswer in \\boxed{}."
    parts = [{"type": "text", "text": "Solve: 1 + 1 Answer in \\boxed{}."}]
    assert _prompt_holds(chat([{"role": "user", "content": parts}]), task)
    assert _prompt_holds(chat([{"role": "user", "content": "1 + 1"}]), task, "1 + 1")
    assert not _prompt_holds(chat([{"role": "user", "content": "2 + 2"}]), task, "1 + 1")
    ids = Call("completions", [1], [2], [-0.1], "x", "stop", request={"prompt": [1, 2]})
    assert not _prompt_holds(ids, task) and _prompt_holds(ids, None)


def test_an_unexpected_error_is_a_counted_json_500(tmp_path, caplog):
    """att29b A8: an exception that escaped a handler was uvicorn's bare 500, uncounted."""
    app = _gateway(tmp_path, admin_key=ADMIN)
    try:

        def broken(*args, **kwargs):
            raise RuntimeError("a bug")

        app.gateway.sessions.get = broken
        with caplog.at_level("ERROR", logger="rllm_adapters.gateway.app"):
            r = app.get("/sessions/s1", headers=ALICE)
        assert r.status_code == 500 and r.json()["error"]["code"] == "internal_error"
        assert "a bug" not in r.text and any("internal error" in m for m in caplog.messages)
        metrics = app.get("/metrics", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        assert metrics["requests"]["rejected_500"] == 1
    finally:
        app.__exit__(None, None, None)


def test_a_damaged_store_is_a_clear_503(tmp_path):
    """att36b F2: a pin planted in the store (now MAC'd) raises DamagedStore; the client is
    told the store is damaged (503), not an internal error."""
    from rllm_agents.store import DamagedStore

    app = _gateway(tmp_path, admin_key=ADMIN)
    try:

        def damaged(*args, **kwargs):
            raise DamagedStore("the pin 'run_owner:x' does not carry the store's MAC")

        app.gateway.sessions.get = damaged
        r = app.get("/sessions/s1", headers=ALICE)
        assert r.status_code == 503 and r.json()["error"]["code"] == "store_damaged"
        assert "run_owner:x" in r.json()["error"]["message"]
    finally:
        app.__exit__(None, None, None)
