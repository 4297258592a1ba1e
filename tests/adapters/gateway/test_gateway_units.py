"""The gateway's parts without an engine: settings, token-exactness judgement of a session,
reply trimming, session ownership, refusals that happen before any engine is called, and
what a path or name serves."""

from __future__ import annotations

import pytest

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.gateway.config import GatewayConfig, is_loopback
from rllm_adapters.gateway.sessions import Call, Session, SessionError, SessionRegistry

pytest.importorskip("starlette")
httpx = pytest.importorskip("httpx")

KEY = "k" * 20
# Nothing listens here: every test below is refused before an engine would be called.
NOWHERE = "http://127.0.0.1:9/v1"


def test_settings_are_checked():
    with pytest.raises(AdapterConfigError, match="needs engines"):
        GatewayConfig()
    with pytest.raises(AdapterConfigError, match="api_keys"):
        GatewayConfig(engines=[NOWHERE], host="0.0.0.0")
    GatewayConfig(engines=[NOWHERE], host="0.0.0.0", api_keys={"a": KEY}, admin_key=KEY + "x")
    with pytest.raises(AdapterConfigError, match="too short"):
        GatewayConfig(engines=[NOWHERE], api_keys={"a": "short"})
    with pytest.raises(AdapterConfigError, match="share one"):
        GatewayConfig(engines=[NOWHERE], api_keys={"a": KEY, "b": KEY})
    with pytest.raises(AdapterConfigError, match="base URL"):
        GatewayConfig(engines=["127.0.0.1:8000"])
    with pytest.raises(AdapterConfigError, match="max_body_bytes"):
        GatewayConfig(engines=[NOWHERE], max_body_bytes=0)
    with pytest.raises(AdapterConfigError, match="Unknown gateway setting"):
        GatewayConfig.from_dict({"engines": [NOWHERE], "bogus": 1})
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")


def call(prompt, completion, api="completions", source="engine", version=0):
    return Call(
        api=api,
        prompt_ids=list(prompt),
        completion_ids=list(completion),
        logprobs=[-0.5] * len(completion),
        text="x",
        finish_reason="stop",
        ids_source=source,
        weights_version=version,
    )


def test_a_session_that_appends_is_one_token_exact_sequence():
    s = Session(id="s", owner="o", env_id="e", group=2, sample=1)
    s.calls = [call([1, 2], [3, 4]), call([1, 2, 3, 4, 9], [5], version=1)]
    t = s.trajectory(1.5, {"is_correct": True})
    t.check_token_exact()
    assert t.token_exact and t.token_source == "engine"
    assert t.token_ids() == [1, 2, 3, 4, 9, 5]
    assert t.loss_mask() == [0, 0, 1, 1, 0, 1]
    assert t.total_reward == 1.5 and t.is_correct and t.steps[-1].terminated
    assert t.metadata["weights_versions"] == [0, 1] and (t.group, t.sample) == (2, 1)


@pytest.mark.parametrize(
    ("api", "source"), [("chat", "server_template"), ("completions", "prompt_mismatch")]
)
def test_a_rewritten_history_is_recorded_as_not_token_exact(api, source):
    s = Session(id="s", owner="o")
    s.calls = [call([1, 2], [3, 4], api), call([1, 2, 7, 4, 9], [5], api)]
    t = s.trajectory()
    assert not t.token_exact and t.token_source == source
    assert t.metadata["token_exact_lost_at_turn"] == 1
    # Each call's ids are still the engine's own.
    assert t.steps[1].prompt_ids == [1, 2, 7, 4, 9]


def test_ids_that_are_not_the_engines_are_marked():
    s = Session(id="s", owner="o")
    s.calls = [call([1], [2], source="retokenized")]
    assert s.trajectory().token_source == "retokenized"
    s.calls = [call([], [], source="text_only")]
    t = s.trajectory()
    assert t.token_source == "text_only" and not t.token_exact


class _Store:
    """A stand-in episode store for the registry's unit test (records what it is given)."""

    def __init__(self):
        self.put_calls = []

    def runs(self):
        return {}

    def put(self, trajectory, run=None, model=None, pending=None):
        from rllm_agents.store import Put

        self.put_calls.append((trajectory, run, model))
        return Put(len(self.put_calls), f"h{len(self.put_calls)}", True)


def test_sessions_belong_to_their_owner_and_end_once():
    import asyncio

    store = _Store()
    registry = SessionRegistry(store, run="r", max_sessions=2, model="m", clients=["alice", "bob"])
    mine = registry.get("abc", "alice")  # opened on first use
    assert registry.get("abc", "alice") is mine
    # Session ids are per client: Bob's "abc" is his own session, not Alice's.
    with pytest.raises(SessionError) as e:
        registry.get("abc", "bob", create=False)
    assert e.value.status == 404
    bobs = registry.get("abc", "bob")
    assert bobs is not mine and (bobs.run, mine.run) == ("r:bob", "r:alice")
    registry.record(mine, call([1], [2]))
    result = asyncio.run(registry.finish(mine, 1.0))
    assert result["calls"] == 1 and store.put_calls[0][1:] == ("r:alice", "m")
    assert store.put_calls[0][0].metadata["client"] == "alice"
    with pytest.raises(SessionError) as e:
        registry.get("abc", "alice")
    assert e.value.status == 409
    assert registry.get("abc", "bob") is bobs  # Alice's ended id does not end Bob's
    asyncio.run(registry.finish(bobs, 0.0))
    for bad in ({"bogus": 1}, {"metadata": [1]}, {"seed": "7"}):
        with pytest.raises(SessionError) as e:
            registry.create("alice", "x", fields=bad)
        assert e.value.status == 400
    registry.create("alice")
    registry.create("alice")
    with pytest.raises(SessionError) as e:
        registry.create("alice")
    assert e.value.status == 503
    # Without a store nothing is recorded and sessions are refused.
    with pytest.raises(SessionError) as e:
        SessionRegistry(None, run=None, max_sessions=1, model=None).get("s", "a")
    assert e.value.status == 503


def test_a_session_is_stored_once_and_shutdown_stores_the_rest():
    import asyncio

    store = _Store()
    registry = SessionRegistry(store, run=None, max_sessions=8, model=None)
    session = registry.get("s", "alice")
    registry.record(session, call([1], [2]))

    async def two_rewards():  # the second arrives while the first is being stored
        return await asyncio.gather(
            registry.finish(session, 1.0), registry.finish(session, 2.0), return_exceptions=True
        )

    first, second = asyncio.run(two_rewards())
    assert first["reward"] == 1.0 and len(store.put_calls) == 1
    assert isinstance(second, SessionError) and second.status == 409

    class Failing(_Store):
        def put(self, trajectory, run=None, model=None, pending=None):
            if trajectory.metadata["session_id"] == "bad":
                raise OSError("disk full")
            return super().put(trajectory, run, model)

    registry = SessionRegistry(Failing(), run=None, max_sessions=8, model=None)
    for sid in ("bad", "good"):
        registry.record(registry.get(sid, "alice"), call([1], [2]))
    # One session that cannot be stored does not cost the others theirs.
    assert asyncio.run(registry.finish_all()) == 1
    assert [t.metadata["session_id"] for t, _, _ in registry.store.put_calls] == ["good"]
    assert registry.store_errors == 1 and set(registry.sessions) == {("alice", "bad")}


def test_one_client_cannot_take_every_session():
    import asyncio

    registry = SessionRegistry(_Store(), run=None, max_sessions=100, model=None, max_per_owner=2)
    mine = [registry.create("mallory") for _ in range(2)]
    with pytest.raises(SessionError) as e:
        registry.get("one-more", "mallory")  # opening on first use counts too
    assert e.value.status == 429 and e.value.code == "too_many_sessions"
    registry.create("alice")  # others still get theirs
    asyncio.run(registry.finish(mine[0], 0.0))
    registry.create("mallory")  # an ended session frees its place


def test_replies_lose_only_what_the_gateway_added():
    from rllm_adapters.gateway.app import _StreamParts, _strip
    from rllm_adapters.gateway.engines import ServedWeights

    reply = {
        "prompt_token_ids": [1],
        "choices": [{"token_ids": [2], "logprobs": {"content": []}, "text": "a"}],
    }
    _strip(reply, keep_ids=False, keep_logprobs=False)
    assert reply == {"choices": [{"logprobs": None, "text": "a"}]}
    kept = {"prompt_token_ids": [1], "choices": [{"token_ids": [2], "logprobs": {"x": 1}}]}
    _strip(kept, keep_ids=True, keep_logprobs=True)
    assert kept["prompt_token_ids"] == [1] and kept["choices"][0]["logprobs"] == {"x": 1}

    parts = _StreamParts("chat")
    parts.add({"prompt_token_ids": [5, 6], "choices": [{"index": 0, "delta": {"role": "a"}}]})
    for token, lp in ((7, -0.1), (8, -0.2)):
        parts.add(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": str(token)},
                        "token_ids": [token],
                        "logprobs": {"content": [{"logprob": lp}]},
                    }
                ]
            }
        )
    parts.add({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]})
    # s41 att41h F1/F3: a chat stream without the engine's count of tokens may have lost one
    # (a reasoning parser's silent `<think>`): its ids are not the engine's.
    assert parts.call({"messages": []}, "e", ServedWeights(3, "x")).ids_source == "text_only"
    parts.add({"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 2}})
    c = parts.call({"messages": []}, "e", ServedWeights(3, "ckpt#1"))
    assert (c.prompt_ids, c.completion_ids, c.logprobs) == ([5, 6], [7, 8], [-0.1, -0.2])
    assert (c.weights_version, c.weights_id) == (3, "ckpt#1")
    assert c.text == "78" and c.finish_reason == "length" and c.ids_source == "engine"


@pytest.fixture
def app(tmp_path):
    from starlette.testclient import TestClient

    from rllm_adapters.gateway.app import Gateway

    config = GatewayConfig(
        engines=[NOWHERE],
        store=str(tmp_path / "e.db"),
        api_keys={"alice": KEY, "bob": "b" * 20},
        max_body_bytes=1000,
    )
    with TestClient(Gateway(config).app) as client:
        yield client


def test_refusals_before_the_engine(app):
    alice = {"Authorization": f"Bearer {KEY}"}
    assert app.post("/v1/completions", json={"prompt": "x"}).status_code == 401
    r = app.post("/v1/completions", content=b"{oops", headers=alice)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
    r = app.post("/v1/completions", content=b"x" * 5000, headers=alice)
    assert r.status_code == 413 and r.json()["error"]["type"] == "invalid_request_error"
    r = app.post("/sessions", json={"env_id": "e"}, headers=alice)
    sid = r.json()["session_id"]
    assert r.json()["base_url"].endswith(f"/sessions/{sid}/v1")
    bob = {"Authorization": "Bearer " + "b" * 20}
    for one_completion in ({"n": 2}, {"best_of": 2}, {"echo": True}):
        r = app.post(
            f"/sessions/{sid}/v1/completions", json={"prompt": "x", **one_completion}, headers=alice
        )
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_request"
    r = app.post(f"/sessions/{sid}/reward", json={"env": "rllm/Nope-v0"}, headers=alice)
    assert r.status_code == 400 and r.json()["error"]["code"] == "scorer_not_allowed"
    assert app.get("/health").status_code == 200
    # Bob's call on Alice's session URL opens his own session of that id (ids are per client):
    # it reaches the engine (nothing listens: 502) and Alice's session is untouched.
    r = app.post(f"/sessions/{sid}/v1/completions", json={"prompt": "x"}, headers=bob)
    # A call naming no model needs the engines' served model first (att29b G2): none answers.
    assert r.status_code == 503 and r.json()["error"]["code"] == "model_unknown"
    r = app.post(f"/sessions/{sid}/v1/completions", json={"prompt": "x", "model": "m"}, headers=bob)
    assert r.status_code == 502
    assert app.get(f"/sessions/{sid}", headers=bob).json()["calls"] == 0
    assert app.get(f"/sessions/{sid}", headers=alice).json()["env_id"] == "e"
    # No engine answers: a clear 502, and the gateway still serves its own routes.
    r = app.post("/v1/completions", json={"prompt": "x"}, headers=alice)
    assert r.status_code == 502 and r.json()["error"]["code"] == "engine_error"
    for who in (alice, bob):  # each client's own count
        assert app.get("/metrics", headers=who).json()["requests"]["rejected_502"] == 1


def test_deep_json_and_non_finite_rewards_are_refused(tmp_path):
    from starlette.testclient import TestClient

    from rllm_adapters.gateway.app import Gateway

    config = GatewayConfig(engines=[NOWHERE], store=str(tmp_path / "e.db"))
    with TestClient(Gateway(config).app, raise_server_exceptions=False) as client:
        for route in ("/v1/completions", "/sessions"):
            r = client.post(route, content=b"[" * 60_000)  # under 64 kB: parsed, too deep
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
            r = client.post(route, content=b"[" * 100_000)  # over: refused before parsing
            assert r.status_code == 413 and r.json()["error"]["code"] == "body_too_complex"
        sid = client.post("/sessions", json={}).json()["session_id"]
        for bad in (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"1e300", b"-1e7", b"1" * 60):
            r = client.post(f"/sessions/{sid}/reward", content=b'{"reward": %s}' % bad)
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_reward"
        # An integer of more than 64 digits is refused before it is converted.
        r = client.post(f"/sessions/{sid}/reward", content=b'{"reward": %s}' % (b"1" * 400))
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_json"
        # Session numbers the store cannot keep (64-bit integers) are refused at creation.
        for field in ("seed", "group", "sample"):
            for value in (2**70, -(2**63) - 1):
                r = client.post("/sessions", json={field: value})
                assert r.status_code == 400, (field, value, r.text)
        # Nothing was stored: the session was still open and took a finite reward -- which,
        # with no call to reward, ends it without storing an empty episode (409 no_calls).
        r = client.post(f"/sessions/{sid}/reward", json={"reward": 1.0})
        assert r.status_code == 409 and r.json()["error"]["code"] == "no_calls"


def test_what_a_path_or_name_serves(tmp_path):
    from rllm_adapters.gateway.checkpoint import resolve_served_model

    with pytest.raises(AdapterConfigError, match="Cannot serve"):
        resolve_served_model(tmp_path)
    model = tmp_path / "my-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "model.safetensors").write_bytes(b"")
    assert resolve_served_model(model) == (str(model), "my-model")
    run = tmp_path / "run"
    (run / "final_model").mkdir(parents=True)
    for f in ("config.json", "model.safetensors"):
        (run / "final_model" / f).write_bytes(b"{}")
    assert resolve_served_model(run) == (str(run / "final_model"), "run")


def test_cli_arguments():
    from rllm_adapters.gateway.server import parse_args

    config = parse_args(
        ["--engine", NOWHERE, "--api-key", f"a={KEY}", "--port", "0", "--rate-limit", "5",
         "--max-sessions-per-client", "8", "--max-in-flight-per-client", "3"]
    )  # fmt: skip
    assert config.engines == [NOWHERE] and config.api_keys == {"a": KEY}
    assert config.rate_limit_rps == 5.0 and config.max_sessions_per_client == 8
    assert config.max_in_flight_per_client == 3


def test_chat_turns_append_to_the_session_ids(tiny_path):
    from transformers import AutoTokenizer

    from rllm_adapters.gateway.chat import ChatState, ChatTemplater, parse_tool_calls, tools_key

    tokenizer = AutoTokenizer.from_pretrained(tiny_path)
    templater = ChatTemplater(tokenizer)
    first = [{"role": "user", "content": "Hi"}]
    prompt = templater.prompt(None, first, None)
    assert prompt == list(tokenizer.encode(templater.chat.render(first), add_special_tokens=False))
    completion = [*tokenizer.encode("Hello there", add_special_tokens=False), 2]
    reply = {"role": "assistant", "content": "Hello there"}
    state = ChatState([*first, reply], tools_key(None), prompt, completion)
    nxt = templater.prompt(state, [*first, reply, {"role": "user", "content": "More"}], None)
    assert nxt[: len(prompt) + len(completion)] == prompt + completion
    assert "More" in tokenizer.decode(nxt[len(prompt) + len(completion) :])
    # A rewritten history (or other tools) starts over.
    parts = [
        {"role": "user", "content": [{"type": "text", "text": "H"}, {"type": "text", "text": "i"}]}
    ]
    # Content parts are text joined by newlines, as vLLM's chat endpoint joins them.
    joined = templater.prompt(None, [{"role": "user", "content": "H\ni"}], None)
    assert templater.prompt(None, parts, None) == joined
    rewritten = [{"role": "user", "content": "Yo"}, reply, first[0]]
    assert templater.prompt(state, rewritten, None) == templater.chat.initial_prompt(rewritten)
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    fresh = templater.prompt(state, [*first, reply, {"role": "user", "content": "x"}], tools)
    assert fresh[: len(prompt) + len(completion)] != prompt + completion
    up = templater.upstream({"model": "m", "messages": [], "max_completion_tokens": 5}, nxt)
    assert up["prompt"] == nxt and up["max_tokens"] == 5 and up["return_token_ids"]
    assert set(templater.chat.end_of_turn_ids) <= set(up["stop_token_ids"])
    text, calls = parse_tool_calls('ok <tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>')
    assert text == "ok" and calls[0]["function"] == {"name": "f", "arguments": '{"a": 1}'}
    assert parse_tool_calls("<tool_call>not json</tool_call>")[1] == []


def _gateway_client(store_path, **settings):
    from starlette.testclient import TestClient

    from rllm_adapters.gateway.app import Gateway

    config = GatewayConfig(
        engines=[NOWHERE],
        store=str(store_path),
        api_keys={"alice": KEY, "bob": "b" * 20},
        **settings,
    )
    gateway = Gateway(config)
    client = TestClient(gateway.app)
    client.gateway = gateway
    return client


def _record_a_call(app, owner, sid):
    """Put one call into an open session (these gateways have no engine to call)."""
    registry = app.gateway.sessions
    registry.record(registry.sessions[owner, sid], call([1], [2]))


ALICE = {"Authorization": f"Bearer {KEY}"}
BOB = {"Authorization": "Bearer " + "b" * 20}


def test_a_run_and_its_groups_belong_to_the_client_that_opened_it(tmp_path):
    """Bob cannot put episodes into Alice's run (and so into her GRPO groups), before or after
    a restart on the same store; each stored episode names its client."""
    from rllm_agents.store import EpisodeStore
    from rllm_agents.trajectory import Trajectory

    path = tmp_path / "e.db"
    group = {"env_id": "rllm/Math-v1", "task_id": "t1", "group": 0, "run": "grpo-1"}
    with _gateway_client(path, run="base") as app:
        r = app.post("/sessions", json={**group, "sample": 0}, headers=ALICE)
        assert r.status_code == 201 and r.json()["run"] == "grpo-1"
        sid = r.json()["session_id"]
        r = app.post("/sessions", json={**group, "sample": 1}, headers=BOB)
        assert r.status_code == 403 and r.json()["error"]["code"] == "run_forbidden"
        # Nor Alice's own default run; Bob's sessions without a run go to his own.
        r = app.post("/sessions", json={"run": "base:alice"}, headers=BOB)
        assert r.status_code == 403
        r = app.post("/sessions", json={}, headers=BOB)
        assert r.status_code == 201 and r.json()["run"] == "base:bob"
        _record_a_call(app, "alice", sid)
        assert app.post(f"/sessions/{sid}/reward", json={"reward": 1.0}, headers=ALICE).is_success
        # Each client sees its own counts in /metrics, not the other's.
        metrics = app.get("/metrics", headers=ALICE).json()
        assert metrics["sessions"]["stored"] == 1 and metrics["sessions"]["open"] == 0
        assert "rejected_403" not in metrics["requests"]
        metrics = app.get("/metrics", headers=BOB).json()
        assert metrics["sessions"] == {"open": 1, "stored": 0, "recorded_calls": 0}
        assert metrics["requests"]["rejected_403"] == 2
    # Bob's open session was empty: not stored at shutdown. Alice's run holds only hers.
    with EpisodeStore(path, read_only=True) as store:
        (episode,) = store.episodes(run="grpo-1")
        assert episode.trajectory.metadata["client"] == "alice"
        assert store.runs() == {"grpo-1": 1}
    with EpisodeStore(path) as store:  # a run that no gateway client recorded
        store.put(Trajectory(env_id="e", task_id="t1"), run="offline")
    # After a restart the store says whose each run is.
    with _gateway_client(path, run="base") as app:
        r = app.post("/sessions", json={**group, "sample": 1}, headers=BOB)
        assert r.status_code == 403 and r.json()["error"]["code"] == "run_forbidden"
        assert app.post("/sessions", json={**group, "sample": 1}, headers=ALICE).status_code == 201
        for who in (ALICE, BOB):
            r = app.post("/sessions", json={"run": "offline"}, headers=who)
            assert r.status_code == 409 and r.json()["error"]["code"] == "run_not_owned"
        # A client's `metadata` cannot claim another client, nor rewrite the provenance.
        for key in ("client", "source", "model", "session_id", "token_exact_lost_at_turn"):
            r = app.post("/sessions", json={"metadata": {key: "alice"}}, headers=BOB)
            assert r.status_code == 400 and key in r.json()["error"]["message"]
        r = app.post("/sessions", json={"metadata": {"note": "mine"}}, headers=BOB)
        sid = r.json()["session_id"]
        _record_a_call(app, "bob", sid)
        done = app.post(f"/sessions/{sid}/reward", json={"reward": 0.5}, headers=BOB).json()
    with EpisodeStore(path, read_only=True) as store:
        assert store.get(done["hash"]).trajectory.metadata["client"] == "bob"
        assert store.get(done["hash"]).run == "base:bob"
        assert store.count(run="grpo-1") == 1


def test_session_ids_are_per_client(tmp_path):
    """A client cannot squat or end an id another client uses."""
    with _gateway_client(tmp_path / "e.db") as app:
        # Bob takes "s1" first: Alice still gets her "s1".
        assert app.post("/sessions", json={"session_id": "s1"}, headers=BOB).status_code == 201
        r = app.post("/sessions", json={"session_id": "s1"}, headers=ALICE)
        assert r.status_code == 201 and r.json()["session_id"] == "s1"
        r = app.post("/sessions", json={"session_id": "s1"}, headers=ALICE)
        assert r.status_code == 409  # her own id, twice
        # Bob ends his "s1" (no call: ended, nothing stored); Alice's is still open and hers.
        assert app.post("/sessions/s1/reward", json={"reward": 0}, headers=BOB).status_code == 409
        assert app.get("/sessions/s1", headers=BOB).status_code == 409
        assert app.get("/sessions/s1", headers=ALICE).json()["calls"] == 0
        r = app.get("/sessions/s2", headers=BOB)
        assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found"
        _record_a_call(app, "alice", "s1")
        assert app.post("/sessions/s1/reward", json={"reward": 0}, headers=ALICE).is_success
        assert app.get("/sessions/s1", headers=ALICE).status_code == 409


def test_reward_info_cannot_rewrite_the_gateways_step_fields(tmp_path):
    s = Session(id="s", owner="o")
    s.calls = [call([1], [2], source="retokenized", version=3)]
    info = {"ids_source": "engine", "weights_version": 0, "engine": "x", "is_correct": True}
    t = s.trajectory(1.0, info)
    step = t.steps[-1].info
    assert (step["ids_source"], step["weights_version"], step["engine"]) == ("retokenized", 3, "")
    assert step["is_correct"] is True and t.token_source == "retokenized"
    with _gateway_client(tmp_path / "e.db") as app:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        for key in ("ids_source", "weights_version", "call", "api", "engine"):
            r = app.post(
                f"/sessions/{sid}/reward", json={"reward": 1, "info": {key: 1}}, headers=ALICE
            )
            assert r.status_code == 400 and key in r.json()["error"]["message"]
        _record_a_call(app, "alice", sid)
        r = app.post(f"/sessions/{sid}/reward", json={"reward": 1, "info": {"a": 1}}, headers=ALICE)
        assert r.status_code == 200


def test_a_full_queue_refuses_new_calls_until_a_slot_frees():
    import asyncio

    from rllm_adapters.gateway.engines import Engine, EnginePool, QueueFull

    async def scenario():
        pool = EnginePool([Engine(url="http://e/v1", name="e")], max_in_flight=1, max_queue=1)
        order = []

        async def second():
            async with pool.acquire() as engine:
                order.append(engine.name)

        async with pool.acquire():
            waiter = asyncio.create_task(second())
            while pool.waiting == 0:
                await asyncio.sleep(0)
            with pytest.raises(QueueFull):
                async with pool.acquire():
                    pass
            assert order == [] and pool.waiting == 1
        await waiter
        assert order == ["e"] and pool.waiting == 0 and pool.engines[0].requests == 2

    asyncio.run(scenario())


def test_tool_call_parsing_is_linear_in_a_hostile_reply():
    """A reply of many unclosed <tool_call> tags made the regex quadratic (64K: 3.6 s holding
    the GIL); the same blocks are parsed and removed as before."""
    from rllm_adapters.gateway.chat import parse_tool_calls

    reply = "<tool_call>" * 200_000  # quadratic: minutes; linear: milliseconds
    assert parse_tool_calls(reply) == (reply, [])
    text, calls = parse_tool_calls(
        'a <tool_call> {"name": "f", "arguments": {}} </tool_call> b <tool_call>x</tool_call>'
    )
    assert text == "a  b" and [c["function"]["name"] for c in calls] == ["f"]


def test_a_scored_sessions_last_call_must_hold_exactly_its_recorded_replies():
    """att29e F4: a client played ToolUse's tool turns off the record and recorded only the
    final call, whose reply was graded on a history the record did not hold (pass@1 0.47
    against 0.21). The last call's conversation must hold the earlier replies, no more."""
    from rllm_adapters.gateway.app import _history_recorded

    task = {"role": "user", "content": "Task: what is 6 * 7?"}

    def chat(messages, text, tool_calls=None):
        message = {"role": "assistant", "content": text, "tool_calls": tool_calls}
        return Call(
            "chat", [1], [2], [0.0], text, "stop", request={"messages": messages}, message=message
        )

    def session(*calls):
        return Session(id="s", owner="o", calls=list(calls))

    lookup = [{"function": {"name": "calculator", "arguments": '{"expression": "6*7"}'}}]
    first = chat([task], "", tool_calls=lookup)
    tool = {"role": "tool", "content": "42"}
    sent_back = {"role": "assistant", "content": None, "tool_calls": lookup}
    # Played through the gateway, turn by turn: held.
    assert _history_recorded(session(chat([task], "<answer>42</answer>")))
    assert _history_recorded(session(first, chat([task, sent_back, tool], "<answer>42</answer>")))
    # The tool turn played off the record, the final call alone recorded: refused.
    assert not _history_recorded(session(chat([task, sent_back, tool], "<answer>42</answer>")))
    # A recorded turn replaced by another (arguments, or text) in the final conversation.
    other = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"function": {"name": "calculator", "arguments": '{"expression": "7*6"}'}}],
    }
    assert not _history_recorded(session(first, chat([task, other, tool], "42")))
    said = chat([task], "<think>hmm</think> It is 41.")
    assert _history_recorded(
        session(said, chat([task, {"role": "assistant", "content": "It is 41."}], "42"))
    )  # a chat template drops earlier reasoning
    assert not _history_recorded(
        session(said, chat([task, {"role": "assistant", "content": "It is 42."}], "42"))
    )

    # Completions: each earlier reply in the last prompt, in order.
    def text(prompt, reply):
        return Call("completions", [1], [2], [0.0], reply, "stop", request={"prompt": prompt})

    assert _history_recorded(session(text("Q:", "A1"), text("Q: A1 more", "A2")))
    assert not _history_recorded(session(text("Q:", "A1"), text("Q: A9 more", "A2")))


def test_a_relabelled_turn_does_not_pass_for_another_role():
    """att29f F2: an off-record turn sent back under the role ``Assistant`` (or ``model``)
    renders as the policy's own turn in a chat template but was not counted."""
    from rllm_adapters.gateway.app import _history_recorded

    task = {"role": "user", "content": "Task: what is 6 * 7?"}
    for role in ("Assistant", "model", "ASSISTANT", " assistant"):
        messages = [task, {"role": role, "content": "42"}, {"role": "user", "content": "again"}]
        call = Call("chat", [1], [2], [0.0], "42", "stop", request={"messages": messages})
        assert not _history_recorded(Session(id="s", owner="o", calls=[call])), role


def test_the_server_runs_on_uvicorns_event_loop_without_the_openenv_extra(tmp_path):
    """The gateway serves on the event loop uvicorn picks (uvloop where installed, cheaper per
    streamed token than asyncio's own), and starting it needs none of the ``openenv`` extra
    (its log limits live in a module of ours that imports none of it)."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["openenv"] = None  # as where the openenv extra is not installed
        from rllm_adapters.gateway.config import GatewayConfig
        from rllm_adapters.gateway.server import GatewayServer

        server = GatewayServer(GatewayConfig(engines=[{NOWHERE!r}], port=0,
                                             store={str(tmp_path / "e.db")!r})).start()
        try:
            print(type(server._server.servers[0].get_loop()).__module__)
        finally:
            server.stop()
        assert "gradio" not in sys.modules
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    loop_module = out.stdout.strip().splitlines()[-1]
    pytest.importorskip("uvloop")
    assert loop_module.startswith("uvloop"), loop_module


@pytest.mark.parametrize("seed", range(3))
def test_event_lines_break_only_where_the_event_stream_format_does(seed):
    """Lines end at CRLF, CR or LF, however the text is cut into reads; U+2028, U+2029 and
    U+0085 (line breaks to ``str.splitlines``) are characters of a line."""
    import random

    from rllm_adapters.gateway.app import _EventLines

    rng = random.Random(seed)
    for _ in range(500):
        lines = ["".join(rng.choices("ab{}\u2028\u2029\x85", k=rng.randint(1, 6))) for _ in "xyz"]
        breaks = [rng.choice(["\n", "\r\n", "\r"]) for _ in lines]
        text = "".join(line + end for line, end in zip(lines, breaks, strict=True)) + "tail"
        cuts = sorted(rng.sample(range(1, len(text)), 3))
        reads = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        splitter = _EventLines()
        got = [line for read in reads for line in splitter.feed(read)] + splitter.close()
        assert got == [*lines, "tail"], (reads, got)
    splitter = _EventLines()
    assert splitter.feed("a\r") == [] and splitter.feed("\nb\r") == ["a"]
    assert splitter.close() == ["b"] and splitter.close() == []


def test_engine_connections_are_dropped_before_the_engine_drops_them():
    # A pooled connection kept past vLLM's keep-alive was reused as vLLM closed it: the call
    # failed with 502 ("Can not write request body") under load.
    from rllm_adapters.gateway.app import ENGINE_KEEPALIVE_S

    vllm_envs = pytest.importorskip("vllm.envs")
    assert 0 < ENGINE_KEEPALIVE_S < vllm_envs.VLLM_HTTP_TIMEOUT_KEEP_ALIVE


def test_a_chat_stream_short_of_its_count_keeps_no_ids_or_logprobs_without_a_tokenizer():
    """s41 att41h F2: a chat stream whose ids fall short of the engine's count (a reasoning
    parser's silent `<think>`) was recorded, without a tokenizer to re-tokenise it, with the
    engine's gapped ids and their logprobs one place off, and trained. F1: a stream cut before
    the count came was recorded as the engine's, token-exact."""
    from rllm_adapters.gateway.app import Gateway, _StreamParts
    from rllm_adapters.gateway.engines import ServedWeights

    class NoTokenizer:  # a stand-in for a gateway with no tokenizer (only what _fill_ids reads)
        def tokenizer(self):
            return None

    def stream(count):
        parts = _StreamParts("chat")
        parts.add({"prompt_token_ids": [1, 2], "choices": [{"index": 0, "delta": {"role": "a"}}]})
        for token in (1001, 1002):
            choice = {"index": 0, "delta": {"content": "x"}, "token_ids": [token]}
            parts.add({"choices": [{**choice, "logprobs": {"content": [{"logprob": -0.5}]}}]})
        if count is not None:
            parts.add({"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": count}})
        return parts.call({"messages": []}, "e", ServedWeights(0, "x"))

    for count in (3, None):  # one id missing; cut before the count
        call = stream(count)
        assert call.ids_source == "text_only"
        Gateway._fill_ids(NoTokenizer(), call)  # type: ignore[arg-type]
        assert (call.completion_ids, call.logprobs) == ([], [])
    assert stream(2).ids_source == "engine"
