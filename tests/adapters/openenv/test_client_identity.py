"""Who a client is (issue #31, blind round att34c).

F1: the per-client limit counted by source address, and any local process may connect from any
loopback address: four of them held 16 sessions past ``max_connections_per_client=4``, and an
honest client was refused 20 of 20. Every loopback address is now one client, and a client with
its own token (``client_tokens``) is counted by its name, whatever address it uses.
F2: the score log counted attempts per task over all clients: junk answers from one client made
every honest answer of another attempt 2 (scored 0 of 6 by the documented rule). Attempts are
now counted per client.
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest

pytest.importorskip("openenv.core.env_server", reason='needs `pip install "rllm-envs[openenv]"`')

from starlette.testclient import TestClient  # noqa: E402

from rllm_adapters.error import AdapterConfigError  # noqa: E402
from rllm_adapters.openenv import RllmEnvClient, ServerLimits, create_app  # noqa: E402
from rllm_adapters.openenv.limits import address_key, client_of  # noqa: E402

ENV = "rllm/FrozenLake-v1"
ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef00"


def _scope(host: str, token: str | None = None) -> dict:
    headers = [] if token is None else [(b"authorization", f"Bearer {token}".encode())]
    return {"client": (host, 1234), "headers": headers}


def test_every_loopback_address_is_one_client():
    assert {address_key(h) for h in ("127.0.0.1", "127.0.0.2", "127.9.8.7", "::1")} == {"loopback"}
    assert address_key("10.0.0.2") == "10.0.0.2"
    limits = ServerLimits()
    assert client_of(_scope("127.0.0.5"), limits) == client_of(_scope("127.0.0.1"), limits)


def test_a_client_token_names_its_client_whatever_its_address():
    limits = ServerLimits(client_tokens={"alice": ALICE, "bob": BOB})
    assert client_of(_scope("127.0.0.2", ALICE), limits) == "client:alice"
    assert client_of(_scope("10.1.2.3", ALICE), limits) == "client:alice"
    assert client_of(_scope("127.0.0.1", BOB), limits) == "client:bob"
    assert client_of(_scope("127.0.0.1"), limits) is None  # no token: refused
    assert client_of(_scope("127.0.0.1", "x" * 20), limits) is None
    shared = ServerLimits(token="shared-token-0123456789", client_tokens={"alice": ALICE})
    assert client_of(_scope("127.0.0.3", "shared-token-0123456789"), shared) == "loopback"


@pytest.mark.parametrize(
    "tokens",
    [
        *({}, {"al ice": ALICE}, {"alice": "short"}, {"alice": ALICE, "bob": ALICE}),
        *({"a": 12345678}, {"a": " " * 20}, {"a": "token with spaces in it"}),
    ],
)
def test_bad_client_tokens_fail_before_serving(tokens):
    with pytest.raises(AdapterConfigError):
        ServerLimits(client_tokens=tokens)
    with pytest.raises(AdapterConfigError, match="different"):
        ServerLimits(token=ALICE, client_tokens={"alice": ALICE})


def _session(http: TestClient, token: str | None):
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    return http.websocket_connect("/ws", headers=headers)


def test_other_loopback_addresses_do_not_get_past_the_client_limit():
    """F1: sessions from 127.0.0.2..5 were four clients of four sessions each."""
    limits = ServerLimits(max_sessions=16, max_connections_per_client=4)
    app = create_app(ENV, limits=limits)
    with TestClient(app, client=("127.0.0.2", 1)) as first:
        with _session(first, None) as a, _session(first, None), _session(first, None):
            with _session(first, None):
                a.send_json({"type": "reset", "data": {"seed": 0}})
                assert a.receive_json()["type"] == "observation"
                with TestClient(app, client=("127.0.0.3", 1)) as other:
                    with _session(other, None) as refused:
                        assert refused.receive_json()["data"]["code"] == "CLIENT_LIMIT"


def test_client_tokens_give_each_client_its_own_share():
    limits = ServerLimits(
        max_sessions=16, max_connections_per_client=2, client_tokens={"alice": ALICE, "bob": BOB}
    )
    app = create_app(ENV, limits=limits)
    with (
        TestClient(app, client=("127.0.0.2", 1)) as a1,
        TestClient(app, client=("127.0.0.3", 1)) as a2,
    ):
        with _session(a1, ALICE), _session(a2, ALICE):
            with _session(a2, ALICE) as refused:  # alice's third, from any address
                assert refused.receive_json()["data"]["code"] == "CLIENT_LIMIT"
            with _session(a1, BOB) as bob:  # bob's share is his own
                bob.send_json({"type": "reset", "data": {"seed": 0}})
                assert bob.receive_json()["type"] == "observation"
            with _session(a1, None) as anonymous:
                assert anonymous.receive_json()["data"]["code"] == "UNAUTHORIZED"


def test_score_log_attempts_are_counted_per_client(tmp_path):
    """F2: another client playing a task first made the honest client's answer attempt 2."""
    records = [{"problem": "What is 6 times 7?", "answer": "42"}]
    log = tmp_path / "scores.jsonl"
    limits = ServerLimits(
        score_log=str(log), score_reply_s=0, client_tokens={"alice": ALICE, "bob": BOB}
    )
    app = create_app("rllm/Math-v1", env_kwargs={"dataset": records}, limits=limits)
    with TestClient(app) as http:
        for token, text in ((BOB, "\\boxed{1}"), (BOB, "\\boxed{2}"), (ALICE, "\\boxed{42}")):
            with _session(http, token) as ws:
                ws.send_json({"type": "reset", "data": {"options": {"index": 0}}})
                ws.receive_json()
                ws.send_json({"type": "step", "data": {"text": text}})
                assert ws.receive_json()["data"]["done"] is True
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["client"], r["attempt"], r["is_correct"]) for r in lines] == [
        ("client:bob", 1, False),
        ("client:bob", 2, False),
        ("client:alice", 1, True),
    ]


@pytest.mark.slow
def test_with_client_tokens_tokenless_connections_cannot_keep_token_holders_out(tmp_path):
    """Connections are counted by address before their requests arrive: with every loopback
    address one client, idle connections of one local client would refuse all the others.
    With client tokens they are told apart by name instead, and a connection that has shown
    no token is the first closed when the server is full (att34i: tokenless `/health`
    keep-alives held all of `--max-connections`; a token holder was served 3 of 121 times)."""
    import socket

    from tests.adapters.test_openenv_faults import _free_port, _start, _stop

    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice": ALICE, "bob": BOB}))
    tokens.chmod(0o600)
    log, port = tmp_path / "server.log", _free_port()
    proc = _start(
        port,
        log,
        *("--max-connections-per-client", "2", "--max-connections", "6"),
        *("--client-tokens", str(tokens)),
    )
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(6)]
    try:
        for sock in held[:3]:  # idle, or asking only for /health: no client's token
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        with RllmEnvClient(base_url=f"http://127.0.0.1:{port}", headers=_bearer(ALICE)).sync() as c:
            assert c.reset(seed=0).observation.text
    finally:
        for sock in held:
            sock.close()
        _stop(proc)
    text = log.read_text()
    assert "EVICTED" in text and "Traceback" not in text


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("text", "mode", "said"),
    [
        ('["not", "an", "object"]', 0o600, "JSON object"),
        (json.dumps({"alice": ALICE}), 0o644, "chmod 600"),  # others could pass as any client
    ],
)
def test_a_client_tokens_file_is_read_and_checked(tmp_path, text, mode, said):
    import subprocess
    import sys

    bad = tmp_path / "bad.json"
    bad.write_text(text)
    bad.chmod(mode)
    out = subprocess.run(
        [sys.executable, "-m", "rllm_adapters.serve", ENV, "--client-tokens", str(bad)],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert out.returncode == 2 and said in out.stderr


def test_stateless_resets_are_shared_per_client():
    """att34i F2: one client's flood of `POST /reset` took the stateless places, and another
    client's resets failed 41% of the time. Each client holds at most its share."""
    limits = ServerLimits(max_connections_per_client=2, client_tokens={"alice": ALICE, "bob": BOB})
    app = create_app(ENV, limits=limits)
    with TestClient(app) as http:
        app.state.env_server.stateless_by["client:bob"] = 2  # bob's two resets still running
        refused = http.post("/reset", json={}, headers=_bearer(BOB))
        assert refused.status_code == 503 and refused.json()["error"]["code"] == "CLIENT_LIMIT"
        assert http.post("/reset", json={}, headers=_bearer(ALICE)).status_code == 200
        assert app.state.env_server.stateless_by == {"client:bob": 2}  # alice's is done


def _connect_silently(port: int, count: int) -> list:
    """``count`` plain TCP connections that send nothing (no request, no token)."""
    import socket

    held = []
    for _ in range(count):
        try:
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        except OSError:
            pass
    return held


@pytest.mark.slow
def test_sessions_on_the_shared_token_are_not_evicted(tmp_path):
    """att35d F1: with `--token` and `--client-tokens`, a connection on the shared token stayed
    listed as tokenless, so a flood of silent connects closed its live session (4 of 4)."""
    from contextlib import ExitStack

    from websockets.sync.client import connect

    from tests.adapters.test_openenv_faults import _free_port, _start, _stop

    stack = ExitStack()
    shared = "shared-token-0123456789abcd"
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice": ALICE}))
    tokens.chmod(0o600)
    log, port = tmp_path / "server.log", _free_port()
    proc = _start(
        port, log, "--max-connections", "8", "--token", shared, "--client-tokens", str(tokens)
    )
    sessions, held = [], []
    try:
        for seed in range(2):
            ws = stack.enter_context(
                connect(f"ws://127.0.0.1:{port}/ws", additional_headers=_bearer(shared))
            )
            ws.send(json.dumps({"type": "reset", "data": {"seed": seed}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
            sessions.append(ws)
        for _ in range(3):  # past the grace of the silent ones between floods
            held += _connect_silently(port, 12)
            time.sleep(0.6)
        for ws in sessions:
            ws.send(json.dumps({"type": "step", "data": {"text": "Right"}}))
            assert json.loads(ws.recv(timeout=30))["type"] == "observation"
    finally:
        stack.close()
        for sock in held:
            sock.close()
        _stop(proc)
    text = log.read_text()
    assert "EVICTED" in text and "Traceback" not in text


@pytest.mark.slow
def test_a_connection_closed_for_a_newcomer_is_told_why(tmp_path):
    """att35d F3: tokenless connects arriving between an honest client's connect and its
    request (more of them than the server holds) close the honest connection, the oldest
    listed, and it was closed with no answer. It now gets a 503 `TOO_MANY_CONNECTIONS`
    saying why, which a client can retry on; with fewer newcomers than the server holds it
    is served."""
    from tests.adapters.test_openenv_faults import _free_port, _start, _stop

    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"alice": ALICE}))
    tokens.chmod(0o600)
    log, port = tmp_path / "server.log", _free_port()
    proc = _start(port, log, "--max-connections", "6", "--client-tokens", str(tokens))
    request = f"GET /health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALICE}\r\n\r\n"
    held = []
    try:
        for burst, served in ((12, False), (3, True)):
            (honest,) = _connect_silently(port, 1)
            held += _connect_silently(port, burst)  # before the honest request
            time.sleep(0.1)  # the server takes the burst in before the honest request comes
            try:
                honest.sendall(request.encode())
            except OSError:
                pass  # closed already: its answer is read below
            answer = honest.recv(4096)
            if served:
                assert answer.startswith(b"HTTP/1.1 200"), answer
            else:
                assert answer.startswith(b"HTTP/1.1 503"), answer
                assert b"TOO_MANY_CONNECTIONS" in answer and b"no token yet" in answer
            honest.close()
            for sock in held:
                sock.close()
            held = []
            time.sleep(0.3)
    finally:
        for sock in held:
            sock.close()
        _stop(proc)
    assert "Traceback" not in log.read_text()


@contextmanager
def _served_in_thread(limits: ServerLimits):
    """The server of ``limits`` in a thread on a free port: ``(port, http protocol class)``."""
    import threading

    import uvicorn

    from rllm_adapters.openenv.limits import _h11_protocol, _ws_protocol
    from tests.adapters.test_openenv_faults import _free_port

    protocol = _h11_protocol(limits)
    port = _free_port()
    config = uvicorn.Config(
        create_app(ENV, limits=limits),
        host="127.0.0.1",
        port=port,
        http=protocol,
        ws=_ws_protocol(limits),
        log_level="warning",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        yield port, protocol
    finally:
        server.should_exit = True
        thread.join(timeout=30)


_UPGRADE = (
    b"GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
)


def _reset(port: int, token: str) -> None:
    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/ws", additional_headers=_bearer(token)) as ws:
        ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(ws.recv(timeout=30))["type"] == "observation"


def test_tokenless_websocket_upgrades_are_not_kept_listed():
    """att35d F2: a tokenless WebSocket upgrade (refused, 1008) stayed listed as a connection
    waiting for a token: about 1.2 kB of server memory each, never freed."""
    from websockets.exceptions import ConnectionClosed
    from websockets.sync.client import connect

    with _served_in_thread(ServerLimits(client_tokens={"alice": ALICE})) as (port, protocol):
        for _ in range(30):
            try:
                with connect(f"ws://127.0.0.1:{port}/ws") as ws:
                    ws.recv(timeout=10)
                    ws.recv(timeout=10)
            except ConnectionClosed:
                pass
        _reset(port, ALICE)
        assert protocol.unidentified() == 0


def test_tokenless_upgrades_that_never_answer_the_close_are_evicted():
    """att35h: a tokenless upgrade is refused and closed, but holds its connection until the
    client answers the close (10 s); taken off the eviction list at the upgrade, such
    connections filled `--max-connections` and refused token holders (2 of 94 served)."""
    import socket

    limits = ServerLimits(client_tokens={"alice": ALICE}, max_connections=6)
    with _served_in_thread(limits) as (port, _):
        held = []
        try:
            for _ in range(6):
                sock = socket.create_connection(("127.0.0.1", port), timeout=10)
                sock.sendall(_UPGRADE)  # and never answers the close
                held.append(sock)
            time.sleep(0.5)
            for _ in range(3):
                _reset(port, ALICE)
        finally:
            for sock in held:
                sock.close()


def test_a_tokenless_upgrade_closed_before_its_refusal_raises_nothing():
    """att35k: a tokenless upgrade evicted (closed) between its upgrade and the refusal's
    accept made uvicorn refuse the sends, and each raised into a traceback in the log."""
    import asyncio

    from rllm_adapters.openenv.limits import _Guard

    async def app(scope, receive, send):  # never reached: the guard refuses first
        raise AssertionError("the app was called")

    async def receive():
        return {"type": "websocket.connect"}

    async def closed(message):
        raise RuntimeError("Expected ASGI message 'websocket.accept', but got 'websocket.send'")

    scope = {"type": "websocket", "path": "/ws", "headers": [], "client": ("127.0.0.1", 9)}
    guard = _Guard(app, ServerLimits(client_tokens={"alice": ALICE}))
    asyncio.run(guard(scope, receive, closed))


def test_client_tokens_divide_the_sessions_among_their_clients_by_default():
    """s39 att39b F2: the default share (2 x max_sessions + 8) let one of two named clients
    take all 16 sessions; the other got CAPACITY_REACHED for as long as they were kept. With
    client tokens each party (each name, and the shared token's holders) gets its part."""
    limits = ServerLimits(max_sessions=4, client_tokens={"alice": ALICE, "bob": BOB})
    assert limits.sessions_per_client == 2
    shared = ServerLimits(
        max_sessions=9, token="shared-token-0123456789", client_tokens={"a": ALICE}
    )
    assert shared.sessions_per_client == 4
    assert ServerLimits(max_sessions=4).sessions_per_client == 16  # one local trainer: all
    chosen = ServerLimits(max_sessions=4, max_connections_per_client=3, client_tokens={"a": ALICE})
    assert chosen.sessions_per_client == 3
    app = create_app(ENV, limits=limits)
    with TestClient(app) as http:
        with _session(http, BOB), _session(http, BOB):
            with _session(http, BOB) as refused:
                assert refused.receive_json()["data"]["code"] == "CLIENT_LIMIT"
            with _session(http, ALICE) as alice:
                alice.send_json({"type": "reset", "data": {"seed": 0}})
                assert alice.receive_json()["type"] == "observation"


@pytest.mark.parametrize("client_tokens", [None, {"alice": ALICE}])
def test_tokenless_connections_cannot_hold_an_address_s_share(client_tokens):
    """s39 att39b F1: on a `--token` server, 40 tokenless local connections trickling headers
    held loopback's whole share (counted before any token is seen), and token holders were
    refused 39 of 40 connects. The oldest connection that has shown no token is now closed
    for a newcomer, told why, as when the whole server is full."""
    shared = "shared-token-0123456789abcd"
    limits = ServerLimits(max_connections_per_client=4, token=shared, client_tokens=client_tokens)
    with _served_in_thread(limits) as (port, _):
        held = _connect_silently(port, 4)
        try:
            held[0].sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # trickling headers
            time.sleep(0.2)
            for _ in range(3):
                _reset(port, shared)  # served each time
                held += _connect_silently(port, 4)
                time.sleep(0.2)
            if client_tokens is None:  # (with client tokens, loopback has no address share)
                answer = held[0].recv(4096)
                assert answer.startswith(b"HTTP/1.1 503") and b"no token yet" in answer
        finally:
            for sock in held:
                sock.close()


def test_a_request_trickled_a_byte_at_a_time_is_cut():
    """s39 att39d F1: each read of a request costs the event loop a wake-up and a parse, and
    300 connections trickling header bytes took an honest client from 2,315 to 314 steps/s
    (each reconnecting when the header timeout cut it). A request gets 64 reads, and one
    more per 512 bytes it sent: a trickler is cut after 64 bytes, whole requests are not."""
    import socket

    with _served_in_thread(ServerLimits()) as (port, _):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sent = 0
            try:
                for byte in b"GET /health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 400:
                    sock.sendall(bytes([byte]))
                    sent += 1
                    time.sleep(0.002)  # a read each
            except OSError:
                pass  # cut
            answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 408"), (sent, answer)
        assert sent < 400
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            for _ in range(100):  # keep-alive requests, each whole: never cut
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 200")
