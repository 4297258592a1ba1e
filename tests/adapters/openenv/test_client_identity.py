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
