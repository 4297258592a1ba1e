"""Gateway, blind round of session 44 (issue #29, att44b): the shared chat-template thread.

att44b F1 (medium): a session's chat call waited for the gateway's one templating thread
before any per-client bound counted it. A client sending 3.9 MB chat calls (under the rate
limit) got 5 of 6 answered with ``max_in_flight_per_client=2`` (they never overlapped at the
engine), held every waiting body uncounted, and queued another client's "Hi" behind all of
them: 0.05 s alone, 19.7 s during the flood, growing by 2 s a second under a steady one. A
call now counts (in flight, its bytes held) before it waits for the template, and each client
takes one templating turn at a time, so one client's calls queue behind each other.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part). The templater is the real one, wrapped by a
test double that holds each templating until the test lets it go and records the order.
"""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from .test_gateway_record import ALICE, BOB, StandInEngine, _episodes, _Served, _server


class _HeldTemplater:
    """The gateway's templater, with each ``prompt`` held until released (test double)."""

    def __init__(self, real) -> None:
        self.real = real
        self.order: list[str] = []
        self.release = threading.Event()

    def prompt(self, state, messages, tools, context=None):
        self.order.append(messages[-1]["content"])
        assert self.release.wait(60), "never released"
        return self.real.prompt(state, messages, tools, context)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _wait_for(what, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while not what():
        assert time.monotonic() < deadline, "condition never met"
        time.sleep(0.02)


def test_chat_calls_waiting_for_the_template_count_and_queue_behind_their_own_client(
    tmp_path, tiny_path
):
    served = _Served(StandInEngine("Hello").app)
    gateway = _server(tmp_path, served.url, tokenizer=str(tiny_path), max_in_flight_per_client=2)
    try:
        app = gateway.gateway
        held = _HeldTemplater(app.templater())
        app._templater = held

        def session(headers) -> str:
            response = httpx.post(gateway.url + "/sessions", json={}, headers=headers)
            response.raise_for_status()
            return response.json()["session_id"]

        def chat(headers, content: str) -> tuple[int, str]:
            body = {
                "model": "tiny",
                "max_tokens": 4,
                "messages": [{"role": "user", "content": content}],
            }
            url = f"{gateway.url}/sessions/{session(headers)}/v1/chat/completions"
            response = httpx.post(url, json=body, headers=headers, timeout=120)
            code = response.json().get("error", {}).get("code", "") if response.is_error else ""
            return response.status_code, code

        with ThreadPoolExecutor(8) as pool:
            alice = [pool.submit(chat, ALICE, f"alice {k}") for k in range(2)]
            # Both of alice's calls are in: one templating (held), one waiting for her turn.
            _wait_for(lambda: held.order == ["alice 0"] or held.order == ["alice 1"])
            _wait_for(lambda: app.client_metrics("alice")["in_flight"] == 2)
            # A third is over her cap at once, although neither call has reached the engine.
            assert chat(ALICE, "alice 2") == (429, "too_many_calls")
            bob = pool.submit(chat, BOB, "bob")
            # bob's call is templated on a thread of its own while alice's first is held, not
            # behind her second (s45 att45h: on one shared thread, behind her first).
            _wait_for(lambda: held.order[1:] == ["bob"])
            held.release.set()
            assert bob.result(60) == (200, "")
            assert sorted(f.result(60) for f in alice) == [(200, ""), (200, "")]
        # bob was templated before alice's second call, which waited for her first.
        assert held.order[1] == "bob", held.order
        assert len(held.order) == 3
        assert app._template_turns == {}
    finally:
        gateway.stop()
        served.stop()


def test_bodies_of_too_many_json_values_are_refused_before_parsing(tmp_path, tiny_path):
    """att44d F1 (medium): a 4 MB session chat call holding 1.35 million ``{}`` in a message
    field held the event loop 6 s (parsed, then walked by the checks) before being refused, so
    every client waited. Bodies past the value bounds are refused unparsed (413); large
    bodies within them are served (a prompt of 150,000 token ids) or reach the context check
    (3.9 MB of text)."""
    from rllm_adapters.gateway.app import MAX_BODY_CONTAINERS
    from rllm_adapters.gateway.config import GatewayConfig

    MAX_BODY_VALUES = GatewayConfig(engines=["http://x/v1"]).max_body_values

    served = _Served(StandInEngine("Hello").app)
    gateway = _server(tmp_path, served.url, tokenizer=str(tiny_path))
    try:
        url = f"{gateway.url}/sessions/{{}}/v1/{{}}"
        message = {"role": "user", "content": "x"}
        bombs = {
            "containers": [{**message, "name": [{}] * max(MAX_BODY_CONTAINERS + 1, 30_000)}],
            "values": [{**message, "name": [0] * (MAX_BODY_VALUES + 1)}],
            "strings": [message] * 20_000,
        }
        for k, (what, messages) in enumerate(bombs.items()):
            body = {"model": "tiny", "max_tokens": 4, "messages": messages}
            response = httpx.post(
                url.format(f"bomb{k}", "chat/completions"), json=body, headers=ALICE, timeout=60
            )
            assert response.status_code == 413, (what, response.text[:200])
            assert response.json()["error"]["code"] == "body_too_complex"
        honest = {
            "completions": {"model": "tiny", "max_tokens": 4, "prompt": [5] * 150_000},
            "chat/completions": {
                "model": "tiny",
                "max_tokens": 4,
                "messages": [{"role": "user", "content": "lorem ipsum " * 320_000}],
            },
        }
        # Within the value bounds: the token ids are served; the text passes them to the
        # context check (s45 att45b: more text than 2048 tokens could hold, refused before
        # the template thread).
        expected = {"completions": (200, ""), "chat/completions": (400, "context_length_exceeded")}
        for k, (api, body) in enumerate(honest.items()):
            response = httpx.post(url.format(f"ok{k}", api), json=body, headers=ALICE, timeout=120)
            code = response.json().get("error", {}).get("code", "") if response.is_error else ""
            assert (response.status_code, code) == expected[api], (api, response.text[:200])
    finally:
        gateway.stop()
        served.stop()


def _held_per_value(raw_size, value):
    """The walk ``held_bytes`` made before (a reference inside this test, visiting every value)."""
    count, stack = 0, [value]
    while stack:
        item = stack.pop()
        count += 1
        if isinstance(item, dict):
            stack.extend(item.values())
            count += len(item)
        elif isinstance(item, list):
            stack.extend(item)
    return raw_size + 64 * count


def test_held_bytes_and_the_depth_check_read_only_containers_one_by_one():
    import random

    from rllm_adapters.gateway.sessions import (
        MAX_JSON_DEPTH,
        SessionError,
        check_json_field,
        held_bytes,
    )

    rng = random.Random(0)

    def value(depth):
        kind = rng.randrange(5 if depth < 6 else 3)
        if kind == 0:
            return rng.randrange(100)
        if kind == 1:
            return "s" * rng.randrange(4)
        if kind == 2:
            return None
        if kind == 3:
            return [value(depth + 1) for _ in range(rng.randrange(6))]
        return {f"k{i}": value(depth + 1) for i in range(rng.randrange(6))}

    for _ in range(300):
        v = value(0)
        assert held_bytes(7, v) == _held_per_value(7, v)
    deep = nested = []
    for _ in range(MAX_JSON_DEPTH - 2):  # and the dict around it
        nested.append([])
        nested = nested[0]
    check_json_field({"a": deep}, "x", "c", max_bytes=None)  # MAX_JSON_DEPTH levels
    nested.append([])
    with pytest.raises(SessionError, match="deeper"):
        check_json_field({"a": deep}, "x", "c", max_bytes=None)


def test_a_framing_of_too_many_known_texts_is_refused_before_it_is_made(tmp_path, tiny_path):
    """att44f F1 (medium): a ToolUse session whose tool message carried an extra key (never
    rendered) of `call_0` x 680,000, the turn's tool-call id, made its reward's framings (one
    mark per occurrence, per turn) 10 s of the event loop for every client. Marks are counted
    before any is made: past the bound the session is not graded (413), stored as a failed
    sample of its task. F2 (low): the tokenizer is loaded at start, not by the first call."""
    import json

    import gymnasium as gym

    import rllm_envs  # noqa: F401
    from rllm_adapters.gateway.app import MAX_FRAMING_MARKS

    tool, seed = "rllm/ToolUse-v1", 21
    env = gym.make(tool, python=False)
    observation, info = env.reset(seed=seed)
    step = env.unwrapped.task["plan"][0][0]
    reply = "<tool_call>" + json.dumps({"name": step["name"], "arguments": step["arguments"]})
    reply += "</tool_call>"
    feedback = env.step(reply)[0]
    served = _Served(StandInEngine(reply).app)
    gateway = _server(
        tmp_path, served.url, tokenizer=str(tiny_path), scorers={tool: {"python": False}}
    )
    try:
        assert gateway.gateway._tokenizer is not None  # loaded before the first call
        client = httpx.Client(timeout=120)
        opened = client.post(
            gateway.url + "/sessions", json={"env_id": tool, "seed": seed}, headers=ALICE
        )
        sid = opened.json()["session_id"]
        history = [{"role": "user", "content": observation}]
        for _ in range(2):
            call = {
                "model": "tiny",
                "max_tokens": 64,
                "temperature": 0,
                "messages": history,
                "tools": info["tools"],
            }
            response = client.post(
                f"{gateway.url}/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE
            )
            assert response.status_code == 200, response.text[:300]
            message = response.json()["choices"][0]["message"]
            call_id = message["tool_calls"][0]["id"]
            pad = call_id * (MAX_FRAMING_MARKS + 1)
            history = [
                *history,
                message,
                {"role": "tool", "tool_call_id": call_id, "content": feedback, "pad": pad},
            ]
        response = client.post(
            f"{gateway.url}/sessions/{sid}/reward", json={"env": tool}, headers=ALICE
        )
        assert response.status_code == 413, response.text[:300]
        assert response.json()["error"]["code"] == "framing_too_large"
        gateway.stop()
        (episode,) = _episodes(tmp_path / "e.db")
        assert episode.total_reward == 0.0 and episode.task_id is not None
    finally:
        gateway.stop()
        served.stop()


def test_the_value_bound_is_the_operators():
    """att44f FP1 (low): a prompt of more than 200,000 token ids (a long-context model) is
    refused by default; `--max-body-values` raises the bound."""
    import asyncio
    import json

    from rllm_adapters.gateway.app import GatewayError, _parse

    raw = json.dumps({"model": "m", "prompt": [7] * 250_000}).encode()
    with pytest.raises(GatewayError) as refused:
        asyncio.run(_parse(raw, 200_000))
    assert refused.value.status == 413
    assert len(asyncio.run(_parse(raw, 300_000))[1]["prompt"]) == 250_000


def test_a_swap_cuts_only_the_streams_no_one_reads_past_its_drain(tmp_path, tiny_path):
    """att44h F2 (medium): a swap waited for its engine's calls with no bound, and new calls
    wait for a swapping engine: one client holding a stream it did not read held every other
    client's calls back until its request timed out (18.6 s of a 20 s timeout; 600 s by
    default). After `swap_drain_s`, a stream whose client is not reading (the gateway waits to
    send) is cut, as a timed-out reader's is; att44j F2: one read at full speed is served to
    its end (cutting every stream refused honest scored sessions 3/3). The engine is the
    stand-in, its completions a test double streaming 64,000 events at once (more than the
    buffers hold) or 30 a tenth of a second apart, with the two routes a launched vLLM's swap
    posts to, marked launched."""
    import asyncio
    import socket
    import threading

    from starlette.responses import JSONResponse, StreamingResponse
    from starlette.routing import Route

    admin = "admin-token-0123456789"
    engine = StandInEngine()
    event = 'data: {"id": "c", "choices": [{"index": 0, "text": "a", "finish_reason": null}]}'

    async def completions(request):
        bulk = json.loads(await request.body())["prompt"] == "bulk"

        async def events():
            for _ in range(64_000 if bulk else 30):
                if not bulk:
                    await asyncio.sleep(0.1)
                yield event + "\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    async def ok(request):
        return JSONResponse({})

    engine.app.router.routes[:0] = [Route("/v1/completions", completions, methods=["POST"])]
    engine.app.router.routes += [
        Route("/collective_rpc", ok, methods=["POST"]),
        Route("/reset_prefix_cache", ok, methods=["POST"]),
    ]
    served = _Served(engine.app)
    gateway = _server(
        tmp_path, served.url, admin_key=admin, request_timeout_s=600, swap_drain_s=0.5
    )
    gateway.gateway.pool.engines[0].server = object()  # as if launched (stand-in)
    host, port = gateway.url.removeprefix("http://").split(":")
    body = json.dumps({"model": "tiny", "prompt": "bulk", "max_tokens": 64000, "stream": True})
    # A slow reader: a small receive buffer, the head and a few bytes read, then nothing.
    slow = socket.socket()
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    slow.connect((host, int(port)))
    slow.sendall(
        (
            f"POST /v1/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json"
            f"\r\nAuthorization: {ALICE['Authorization']}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n{body}"
        ).encode()
    )
    assert slow.recv(64).startswith(b"HTTP/1.1 200")
    # A fast reader of the same long stream, still reading when the drain ends.
    read: list[str] = []

    def fast() -> None:
        paced = {"model": "tiny", "prompt": "paced", "max_tokens": 30, "stream": True}
        with httpx.Client(timeout=120) as client:
            with client.stream(
                "POST", gateway.url + "/v1/completions", json=paced, headers=BOB
            ) as response:
                read.extend(response.iter_lines())

    try:
        _wait_for(lambda: gateway.gateway.in_flight == 1)
        reader = threading.Thread(target=fast, daemon=True)
        reader.start()
        _wait_for(lambda: gateway.gateway.in_flight == 2)
        swap = httpx.post(
            gateway.url + "/admin/weights",
            json={"path": str(tiny_path)},
            headers={"Authorization": f"Bearer {admin}"},
            timeout=60,  # without the drain's bound it waits for the slow reader (600 s)
        )
        assert swap.status_code == 200, swap.text
        reader.join(60)
        assert [line for line in read if line][-1] == "data: [DONE]"  # the fast one: whole
        assert gateway.gateway.metrics()["slow_readers_cut"] >= 1
    finally:
        slow.close()
        gateway.stop()
        served.stop()


def test_bodies_still_arriving_are_bounded_per_client(tmp_path):
    """att44n F1 (medium): a client sent 600 bodies of 4 MiB all but their last byte and held
    them open under the body timeout: the gateway held 2.5 GB (the in-flight cap counts a call
    only once its body is read). Each client's bodies still arriving hold at most
    `RECEIVING_BODIES` bodies' worth (429 `too_many_bodies` above); another client is served."""
    import socket

    from rllm_adapters.gateway.app import RECEIVING_BODIES

    served = _Served(StandInEngine().app)
    limit = 64 * 1024
    gateway = _server(tmp_path, served.url, max_body_bytes=limit, body_timeout_s=60)
    host, port = gateway.url.removeprefix("http://").split(":")
    held = []
    try:
        body = b'{"model": "tiny", "prompt": "' + b"x" * (limit - 64) + b'"}'
        for _ in range(RECEIVING_BODIES + 4):
            sock = socket.create_connection((host, int(port)))
            sock.sendall(
                b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                + f"Authorization: {ALICE['Authorization']}\r\n".encode()
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body[:-1]
            )
            held.append(sock)
        app = gateway.gateway
        _wait_for(lambda: app._receiving["alice"] > (RECEIVING_BODIES - 1) * limit)
        refused = []
        for sock in held:
            sock.settimeout(0.5)
            try:
                refused.append(b"too_many_bodies" in sock.recv(4096))
            except TimeoutError:
                refused.append(False)
        assert sum(refused) >= 4  # the bodies past the bound, refused before they finished
        assert app._receiving["alice"] <= RECEIVING_BODIES * limit
        call = {"model": "tiny", "prompt": "1+1=", "max_tokens": 4}
        response = httpx.post(gateway.url + "/v1/completions", json=call, headers=BOB, timeout=60)
        assert response.status_code == 200
    finally:
        for sock in held:
            sock.close()
        gateway.stop()
        served.stop()
    assert "alice" not in gateway.gateway._receiving
