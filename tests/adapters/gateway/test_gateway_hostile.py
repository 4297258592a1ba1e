"""Hostile clients get a clear error and harm nobody else: huge bodies, slow senders, slow
readers, malformed JSON, missing tokens, another client's session or run, floods, a full
queue. A second gateway,
with tokens and tight limits, in front of the package's real vLLM engine."""

from __future__ import annotations

import asyncio
import socket
import time

import pytest

from tests.adapters.gateway.conftest import ADMIN, KEYS

httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.slow

ALICE = {"Authorization": f"Bearer {KEYS['alice']}"}
BOB = {"Authorization": f"Bearer {KEYS['bob']}"}
CALL = {"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4, "temperature": 0.0}


@pytest.fixture(scope="module")
def guarded(launched, tmp_path_factory):
    from rllm_adapters.gateway import GatewayConfig
    from rllm_adapters.gateway.server import GatewayServer

    config = GatewayConfig(
        engines=[launched.gateway.pool.engines[0].url],
        port=0,
        store=str(tmp_path_factory.mktemp("hostile") / "episodes.db"),
        api_keys=dict(KEYS),
        admin_key=ADMIN,
        max_body_bytes=64 * 1024,
        body_timeout_s=1.0,
        request_timeout_s=10.0,
        rate_limit_rps=20.0,
        rate_limit_burst=40,
        max_in_flight_per_client=2,
    )
    # The engine's first calls with logprobs warm it up (seconds on a loaded machine): not
    # under this gateway's short request timeout.
    warm = {**CALL, "logprobs": 0, "return_token_ids": True}
    httpx.post(config.engines[0] + "/completions", json=warm, timeout=600)
    server = GatewayServer(config).start()
    try:
        yield server
    finally:
        server.stop()


def error(response, status, code=None):
    assert response.status_code == status, response.text
    body = response.json()["error"]
    assert body["message"] and body["type"]
    if code is not None:
        assert body["code"] == code
    return body


def served(url, headers=ALICE):
    """A normal client still gets its answer."""
    r = httpx.post(url + "/v1/completions", json=CALL, headers=headers, timeout=60)
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["text"] is not None


def test_tokens_are_required_and_checked(guarded):
    url = guarded.url
    error(httpx.post(url + "/v1/completions", json=CALL), 401, "invalid_api_key")
    error(
        httpx.post(url + "/v1/completions", json=CALL, headers={"Authorization": "Bearer nope"}),
        401,
    )
    error(httpx.get(url + "/metrics"), 401)
    assert httpx.get(url + "/health").status_code == 200  # probes need no token
    # Client tokens cannot swap weights.
    error(httpx.post(url + "/admin/weights", json={"path": "/x"}, headers=ALICE), 401)
    served(url)


def test_bad_bodies(guarded):
    url = guarded.url + "/v1/completions"
    error(httpx.post(url, content=b"{not json", headers=ALICE), 400, "invalid_json")
    error(httpx.post(url, content=b"\xff\xfe", headers=ALICE), 400, "invalid_json")
    error(httpx.post(url, json=[1, 2], headers=ALICE), 400, "invalid_request")
    error(httpx.post(url, json={"model": "tiny"}, headers=ALICE), 400, "invalid_request")
    chat = guarded.url + "/v1/chat/completions"
    error(httpx.post(chat, json={"model": "tiny", "messages": "hi"}, headers=ALICE), 400)
    huge = {**CALL, "prompt": "x" * 200_000}
    error(httpx.post(url, json=huge, headers=ALICE), 413, "too_large")

    def chunked():  # no Content-Length: the limit is enforced while reading
        for _ in range(100):
            yield b" " * 4096

    error(httpx.post(url, content=chunked(), headers=ALICE), 413, "too_large")
    # An engine-side refusal (unknown model) comes back as the engine said it.
    r = httpx.post(url, json={**CALL, "model": "nope"}, headers=ALICE, timeout=60)
    assert r.status_code == 404
    served(guarded.url)


def test_another_clients_session_and_run_are_out_of_reach(guarded):
    """Session ids are per client: Bob using Alice's session id (URL or header) gets his own
    session, never hers, and cannot end, read or block hers; nor can he name her run."""
    url = guarded.url
    r = httpx.post(url + "/sessions", json={"env_id": "x", "run": "alice-run"}, headers=ALICE)
    sid = r.json()["session_id"]
    base = r.json()["base_url"]
    assert (
        httpx.post(base + "/completions", json=CALL, headers=ALICE, timeout=60).status_code == 200
    )
    # Bob's calls under her id go to his own session of that id.
    assert httpx.post(base + "/completions", json=CALL, headers=BOB, timeout=60).status_code == 200
    r = httpx.post(
        url + "/v1/completions", json=CALL, headers={**BOB, "X-Session-Id": sid}, timeout=60
    )
    assert r.status_code == 200
    assert httpx.get(f"{url}/sessions/{sid}", headers=BOB).json()["calls"] == 2
    assert httpx.get(f"{url}/sessions/{sid}", headers=ALICE).json()["calls"] == 1
    bobs = httpx.post(f"{url}/sessions/{sid}/reward", json={"reward": 1}, headers=BOB).json()
    assert bobs["calls"] == 2
    error(
        httpx.post(url + "/sessions", json={"run": "alice-run"}, headers=BOB), 403, "run_forbidden"
    )
    error(httpx.post(f"{url}/sessions/a%20b/v1/completions", json=CALL, headers=ALICE), 400)
    error(httpx.post(f"{url}/sessions/{sid}/reward", json={"reward": "1"}, headers=ALICE), 400)
    done = httpx.post(f"{url}/sessions/{sid}/reward", json={"reward": 1}, headers=ALICE).json()
    assert done["calls"] == 1  # Bob's calls recorded nothing in hers
    error(httpx.post(base + "/completions", json=CALL, headers=ALICE), 409, "session_ended")
    store = guarded.gateway.store
    assert store.get(done["hash"]).run == "alice-run"
    assert store.get(bobs["hash"]).run == "gateway:bob"
    clients = {e.trajectory.metadata["client"] for e in store.episodes(run="alice-run")}
    assert clients == {"alice"}


def _raw_connection(port):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(30)
    return sock


def _read_reply(sock):
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace")


def test_slow_sender_times_out_and_others_are_served(guarded):
    sock = _raw_connection(guarded.port)
    try:
        head = (
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {KEYS['alice']}\r\nContent-Length: 1000\r\n\r\n"
        )
        sock.sendall(head.encode() + b'{"model": ')
        served(guarded.url, BOB)  # while Alice dribbles, Bob is served
        reply = _read_reply(sock)
        assert reply.startswith("HTTP/1.1 408") and "body_timeout" in reply
    finally:
        sock.close()


def _unread_stream(port, token=KEYS["alice"], n=1):
    """Alice (``token``; ``None``: no token) opens a long stream and reads none of it.

    ``n`` choices: with 16 the reply (about 8 MB) is more than the loopback buffers (4 MB at
    most) take, so the call holds its engine slot until it is cut, however fast the engine."""
    body = (
        b'{"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 1900, "stream": true, '
        b'"ignore_eos": true, "temperature": 1.0, "n": %d}' % n
    )
    sock = _raw_connection(port)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
    sock.sendall(
        (
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + (f"Authorization: Bearer {token}\r\n" if token else "")
            + f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
    )
    return sock


def _all_released(guarded):
    deadline = time.monotonic() + 60
    while guarded.gateway.in_flight and time.monotonic() < deadline:
        time.sleep(0.2)
    return guarded.gateway.in_flight == 0


def test_slow_reader_is_cut_off_and_others_are_served(guarded):
    """A client that opens a long stream and never reads is cut at the request timeout; its
    engine slot is freed and everyone else is served meanwhile."""
    sock = _unread_stream(guarded.port)
    try:
        time.sleep(0.5)
        for _ in range(3):
            served(guarded.url, BOB)
        engine = guarded.gateway.pool.engines[0]
        assert _all_released(guarded)
        # The slot is freed whether the reader was cut or the kernel's loopback buffers (which
        # grow to megabytes) took the whole reply; the cut count depends on those sizes, so it
        # is reported, not asserted.
        assert guarded.gateway.in_flight == 0 and engine.in_flight == 0
        # Gateway-wide numbers are the admin's (a client's /metrics shows its own counts).
        admin = {"Authorization": f"Bearer {ADMIN}"}
        metrics = httpx.get(guarded.url + "/metrics", headers=admin).json()
        assert metrics["slow_readers_cut"] >= 0
    finally:
        sock.close()
    served(guarded.url, BOB)


def test_one_client_cannot_hold_every_engine_slot(guarded):
    """Over its cap of calls in flight a client gets 429; others are served meanwhile, and the
    client is served again once its calls are released."""
    # 16 choices: a reply larger than the loopback buffers, so each call holds its slot until
    # cut however fast the engine (with one choice a fast engine finished both before the third).
    socks = [_unread_stream(guarded.port, n=16) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while guarded.gateway.in_flight < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert guarded.gateway.in_flight == 2, "the two unread streams never held their slots"
        over = httpx.post(guarded.url + "/v1/completions", json=CALL, headers=ALICE, timeout=60)
        error(over, 429, "too_many_calls")
        assert int(over.headers["retry-after"]) >= 1
        served(guarded.url, BOB)
    finally:
        for sock in socks:
            sock.close()
    assert _all_released(guarded)
    served(guarded.url, ALICE)


def test_a_flood_is_rate_limited_per_client(guarded):
    async def flood():
        async with httpx.AsyncClient(base_url=guarded.url, timeout=60) as http:
            replies = await asyncio.gather(
                *(http.post("/v1/completions", json={}, headers=ALICE) for _ in range(150))
            )
            return replies

    replies = asyncio.run(flood())
    statuses = [r.status_code for r in replies]
    assert 400 in statuses  # the burst went through (and was refused for its empty body)
    limited = [r for r in replies if r.status_code == 429]
    assert limited and all(int(r.headers["retry-after"]) >= 1 for r in limited)
    assert limited[0].json()["error"]["code"] == "rate_limited"
    served(guarded.url, BOB)  # Bob has his own budget


def test_a_full_queue_gets_503_and_metrics_count_what_was_served(launched, tmp_path):
    """With one engine slot and a queue of one, a call while the slot is held and the queue
    full gets 503 queue_full (Retry-After); once freed, calls are served, and /metrics and
    /health report the real counts: requests, responses, tokens, the engine's load, sessions
    stored."""
    from rllm_adapters.gateway import GatewayConfig
    from rllm_adapters.gateway.server import GatewayServer

    config = GatewayConfig(
        engines=[launched.gateway.pool.engines[0].url],
        port=0,
        store=str(tmp_path / "episodes.db"),
        max_in_flight_per_engine=1,
        max_queue=1,
        request_timeout_s=30.0,
    )
    server = GatewayServer(config).start()
    try:
        url = server.url
        health = httpx.get(url + "/health").json()
        assert health["status"] == "ok" and [e["healthy"] for e in health["engines"]] == [True]
        socks = [_unread_stream(server.port, token=None, n=16)]
        try:
            deadline = time.monotonic() + 30
            while server.gateway.pool.engines[0].in_flight < 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            socks.append(_unread_stream(server.port, token=None, n=16))  # waits in the queue
            while server.gateway.pool.waiting < 1 and time.monotonic() < deadline:
                time.sleep(0.1)
            full = httpx.post(url + "/v1/completions", json=CALL, timeout=60)
            error(full, 503, "queue_full")
            assert int(full.headers["retry-after"]) >= 1
            busy = httpx.get(url + "/metrics").json()
            assert busy["in_flight"] == 2 and busy["queue"] == 1
            assert busy["engines"][0]["in_flight"] == 1
        finally:
            for sock in socks:
                sock.close()
        assert _all_released(server)
        before = httpx.get(url + "/metrics").json()
        fixed = {**CALL, "max_tokens": 5, "ignore_eos": True}
        for _ in range(3):
            r = httpx.post(url + "/v1/completions", json=fixed, timeout=60)
            assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 5
        sid = httpx.post(url + "/sessions", json={}).json()["session_id"]
        r = httpx.post(f"{url}/sessions/{sid}/v1/completions", json=fixed, timeout=60)
        assert r.status_code == 200
        httpx.post(f"{url}/sessions/{sid}/reward", json={"reward": 1.0}).raise_for_status()
        after = httpx.get(url + "/metrics").json()
        engine_before, engine_after = before["engines"][0], after["engines"][0]
        assert after["requests"]["rejected_503"] == 1
        assert after["requests"]["responses"] - before["requests"]["responses"] == 7
        assert engine_after["requests"] - engine_before["requests"] == 4
        assert engine_after["completion_tokens"] - engine_before["completion_tokens"] == 20
        assert after["completion_tokens"] - before["completion_tokens"] == 20
        assert after["prompt_tokens"] - before["prompt_tokens"] == 4 * len(CALL["prompt"])
        assert after["tokens_per_s"] > 0 and after["in_flight"] == 0 and after["queue"] == 0
        assert after["sessions"] == {
            "open": 0,
            "stored": 1,
            "store_errors": 0,
            "recorded_calls": 1,
        }
    finally:
        server.stop()
