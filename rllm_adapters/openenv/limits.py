"""What a server lets a client use.

The limits, the ASGI middleware and the HTTP protocol that enforce them, and the server's log
(one line per refusal).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.gateway.config import is_loopback

#: JSON containers (``[`` or ``{`` outside strings) and strings one message may hold. An
#: OpenEnv message holds a few dozen; 16 MiB of ``[[],[],...]`` holds millions and takes
#: seconds of the event loop (and hundreds of MB) to parse, stalling every client.
MAX_JSON_CONTAINERS = 10_000
MAX_JSON_STRINGS = 10_000
#: Values (commas outside strings) one message may hold: 16 MiB of ``[0,0,...]`` is 8 million
#: numbers, 0.4 s of the loop and 380 MB to parse.
MAX_JSON_VALUES = 100_000
#: Messages shorter than this are parsed without the counts (they cannot hold many).
_COUNTED_FROM = 64 * 1024
#: Digits (and sign) of one JSON integer: Python converts an integer in time that grows with
#: the square of its length (3,900 integers of 4,299 digits, a 16 MB message: 0.57 s of the
#: event loop, s39 att39f F1); a seed, an index or a count needs at most 20.
MAX_JSON_INT_CHARS = 64


def _bounded_int(text: str) -> int:
    if len(text) > MAX_JSON_INT_CHARS:
        raise ValueError(f"a JSON integer of more than {MAX_JSON_INT_CHARS} digits")
    return int(text)


class JSONTooComplex(ValueError):
    """A message holding more JSON values than its bound, refused before parsing."""


def loads_bounded(
    raw: str | bytes,
    *,
    strings: int = MAX_JSON_STRINGS,
    containers: int = MAX_JSON_CONTAINERS,
    values: int = MAX_JSON_VALUES,
) -> Any:
    """``json.loads`` of a client's message (bytes must be UTF-8).

    The counts are a few linear passes in C (``str.replace``, ``count``, ``split``): no
    regular expression, whose backtracking over an unclosed string was exponential (a 70 kB
    message held the loop for seconds per extra character).

    Raises:
        JSONTooComplex: more than ``strings`` strings, ``containers`` arrays and objects or
            ``values`` values outside them (refused before parsing).
        ValueError: not JSON, or an integer longer than :data:`MAX_JSON_INT_CHARS` (refused
            before it is converted).
    """
    text = raw if isinstance(raw, str) else raw.decode("utf-8")
    if len(text) > _COUNTED_FROM:
        # Inside a JSON string every quote is escaped and outside one no backslash occurs:
        # without the escaped backslashes and quotes, the quotes left delimit the strings.
        bare = text.replace("\\\\", "").replace('\\"', "")
        if bare.count('"') > 2 * strings:
            raise JSONTooComplex(f"more than {strings} JSON strings")
        outside = "".join(bare.split('"')[::2])
        if outside.count("[") + outside.count("{") > containers:
            raise JSONTooComplex(f"more than {containers} JSON arrays and objects")
        if outside.count(",") > values:
            raise JSONTooComplex(f"more than {values} JSON values")
    return json.loads(text, parse_int=_bounded_int)


log = logging.getLogger("rllm_adapters.openenv")


class RateLimitFilter(logging.Filter):
    """Pass at most ``burst`` records of one message template per ``window_s`` seconds.

    A client that reconnects in a loop gets a refusal line per connection: without a bound,
    thousands of lines a second (686 kB in 10 s). The first record after a quiet window says
    how many of its kind were left out.
    """

    def __init__(self, burst: int = 20, window_s: float = 10.0) -> None:
        super().__init__()
        self.burst, self.window_s = burst, window_s
        self._seen: dict[str, tuple[float, int, int]] = {}  # template: (start, passed, dropped)

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` is within its kind's burst (a late one names the dropped)."""
        now = time.monotonic()
        key = str(record.msg)
        start, passed, dropped = self._seen.get(key, (now, 0, 0))
        if now - start >= self.window_s:
            if dropped:
                record.msg = f"{record.msg} (and {dropped} more like it in {self.window_s:g} s)"
            start, passed, dropped = now, 0, 0
        if passed >= self.burst:
            self._seen[key] = (start, passed, dropped + 1)
            return False
        if len(self._seen) > 1024:  # templates are few; a bound all the same
            self._seen.clear()
        self._seen[key] = (start, passed + 1, dropped)
        return True


log.addFilter(RateLimitFilter())


def limit_uvicorn_log() -> None:
    """Rate-limit uvicorn's own per-connection warnings (once per process).

    "Invalid HTTP request received.": 900 bad connections in 0.6 s wrote 600 lines, with no
    token needed.
    """
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, RateLimitFilter) for f in uvicorn_log.filters):
        uvicorn_log.addFilter(RateLimitFilter())


#: Close codes: RFC 6455's policy violation and try-again-later, and application codes.
CLOSE_UNAUTHORIZED = 1008
CLOSE_CAPACITY = 1013
CLOSE_SESSION_TIMEOUT = 4408


@dataclass(frozen=True)
class ServerLimits:
    """What one server lets a client use; every refusal says which limit and why.

    Attributes:
        max_sessions: Live WebSocket sessions (sockets) per served id; one more is refused
            with ``CAPACITY_REACHED`` (an error frame, then close code 1013 with the reason).
        session_timeout: Seconds a session may wait for its client's next message before
            it is closed (``SESSION_TIMEOUT``, close code 4408); ``None``: never.
        max_message_mb: Largest WebSocket message and HTTP request body, in MiB (413).
        header_timeout: Seconds a connection may take to send a request's headers.
        body_timeout: Seconds a request may take to send its body (408).
        max_connections_per_client: Open connections per client address (503), and live
            sessions per client (``CLIENT_LIMIT``): a client is the name of its token in
            ``client_tokens``, else its address. Every loopback address (127.0.0.0/8, ::1)
            counts as one: any local process may connect from any of them (att34c: four
            addresses held 16 sessions past a limit of 4), so on loopback this is a limit on
            all local clients together. Separate tenants need their own server or their own
            ``client_tokens``.
        max_connections: Open connections to the server in all (503), from any number of
            addresses; by default half the process's open-file limit, so that clients cannot
            take the descriptors the envs and the log need.
        token: When set, every route but ``/health`` needs ``Authorization: Bearer <token>``
            (401, or close code 1008 on the WebSocket).
        client_tokens: ``{client name: token}``: each client authenticates with its own token
            (as ``token``; either kind is then accepted) and is counted and logged by its name,
            whatever addresses it connects from: its sessions against
            ``max_connections_per_client``, its attempts at each task in the score log.
        allow_custom_tasks: False refuses a reset with ``options.task`` (a task record the
            client wrote) with ``VALIDATION_ERROR``: an evaluation server for untrusted clients
            need not rely on every consumer checking ``custom_task`` (issue #31, F7).
        score_log: Private grading: a path where every finished episode's reward is appended
            as a JSON line (:class:`ScoreLog`), while clients get reward 0 and no verdict (see
            ``GymTextEnvironment``'s ``scores``), no reply that ends an episode comes before
            ``score_reply_s``, and client-written tasks are refused. A client that sees its
            rewards can learn a private universe's answers from them: its questions repeat
            (``self_reference``: 173 distinct among 400 tasks, answered 0.45 against the best
            constant's 0.22 by a client that remembered what paid, s27 att27b F1), and the
            index of a reset is its choice. ``None``: rewards go to the client.
        score_reply_s: Private grading: seconds from a step's arrival to the reply that ends
            its episode, so that how long grading took does not show (a right answer is
            graded faster or slower than a wrong one). Grading that takes longer shows that
            it did (most often a timeout, which pays nothing).
        score_work_s: Private grading: seconds of work (the GIL held) each episode's last
            step is padded to, so that how much work grading took does not show in the
            other sessions' reply times either; work past it shows that it did.
        max_frames_per_s: Frames that do not pause reading (pings, pongs, fragments of a
            message before its last) a connection may send a second, after a burst of four
            times as many; past that it is closed (1008 ``FRAME_FLOOD``, see
            :func:`_ws_protocol`).
    """

    max_sessions: int = 16
    session_timeout: float | None = 600.0
    max_message_mb: float = 16.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections_per_client: int | None = None
    max_connections: int | None = None
    token: str | None = None
    client_tokens: Mapping[str, str] | None = None
    allow_custom_tasks: bool = True
    score_log: str | None = None
    score_reply_s: float = 1.0
    score_work_s: float = 0.002
    max_frames_per_s: float = 256.0

    def __post_init__(self) -> None:
        if not isinstance(self.max_sessions, int) or self.max_sessions < 1:
            raise AdapterConfigError(
                f"Expects `max_sessions` to be an int >= 1, actual: {self.max_sessions}"
            )
        if self.session_timeout is not None and self.session_timeout <= 0:
            raise AdapterConfigError(
                f"Expects `session_timeout` > 0 or None, actual: {self.session_timeout}"
            )
        for name in ("score_reply_s", "score_work_s"):
            if not getattr(self, name) >= 0:
                raise AdapterConfigError(f"Expects `{name}` >= 0, actual: {getattr(self, name)}")
        for name in ("max_message_mb", "header_timeout", "body_timeout", "max_frames_per_s"):
            if not getattr(self, name) > 0:
                raise AdapterConfigError(f"Expects `{name}` > 0, actual: {getattr(self, name)}")
        for name in ("max_connections_per_client", "max_connections"):
            value = getattr(self, name)
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 1
            ):
                raise AdapterConfigError(
                    f"Expects `{name}` to be an int >= 1 or None, actual: {value!r}"
                )
        tokens = [self.token] if self.token is not None else []
        if self.client_tokens is not None:
            if not isinstance(self.client_tokens, Mapping) or not self.client_tokens:
                raise AdapterConfigError(
                    "Expects `client_tokens` to be a non-empty {client name: token} mapping"
                )
            for name, token in self.client_tokens.items():
                if not (isinstance(name, str) and _CLIENT_NAME.fullmatch(name)):
                    raise AdapterConfigError(
                        "Expects each client name in `client_tokens` to be 1-64 letters, "
                        f"digits, '.', '_' or '-', actual: {name!r}"
                    )
                tokens.append(token)
        for token in tokens:
            if not (isinstance(token, str) and len(token) >= 16 and _TOKEN.fullmatch(token)):
                raise AdapterConfigError(
                    "Expects every token to be at least 16 printable characters, no spaces "
                    "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe())'`)"
                )
        if len(set(tokens)) != len(tokens):
            raise AdapterConfigError("Expects every token to be different: one names one client")

        if self.score_log is not None:
            ScoreLog(self.score_log).close()  # an unwritable path fails before serving

    @property
    def max_bytes(self) -> int:
        """The message and body limit in bytes."""
        return int(self.max_message_mb * 1024 * 1024)

    @property
    def connections_per_client(self) -> int:
        """``max_connections_per_client``, by default room for every session plus HTTP calls."""
        if self.max_connections_per_client is not None:
            return self.max_connections_per_client
        return 2 * self.max_sessions + 8

    @property
    def sessions_per_client(self) -> int:
        """Live sessions (and stateless resets) one client may hold at once.

        As ``connections_per_client``, except that with ``client_tokens`` and no
        ``max_connections_per_client`` each party (a named client, or the holders of the
        shared ``token``) gets ``max_sessions`` divided among them (at least 1), so that one
        tenant cannot take every session (s39 att39b F2: the default share of 40 let one of
        two named clients fill 16 sessions for as long as it kept them).
        """
        if self.max_connections_per_client is None and self.client_tokens is not None:
            parties = len(self.client_tokens) + (self.token is not None)
            return max(1, self.max_sessions // parties)
        return self.connections_per_client

    @property
    def connections_total(self) -> int:
        """``max_connections``, by default half the open-file limit (at least 64)."""
        if self.max_connections is not None:
            return self.max_connections
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        return 1 << 20 if soft == resource.RLIM_INFINITY else max(64, soft // 2)


_CLIENT_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
#: A bearer token: visible ASCII (HTTP strips spaces around a header's value).
_TOKEN = re.compile(r"[\x21-\x7e]+")


def _peer(scope: Mapping[str, Any]) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "?"


def address_key(host: str) -> str:
    """The address a connection is counted under: every loopback address is one."""
    return "loopback" if is_loopback(host) else host


def _shows_token(scope: Any, limits: ServerLimits) -> bool | None:
    """Whether a parsed request (its ASGI scope) carries a token the server takes.

    A client's or the shared one; ``None`` before a request was parsed.
    """
    if not isinstance(scope, dict) or not scope.get("headers"):
        return None
    return client_of(scope, limits) is not None


def client_of(scope: Mapping[str, Any], limits: ServerLimits) -> str | None:
    """Who a request is, as limits and the score log count it.

    ``"client:NAME"`` for a token of ``limits.client_tokens``, else its address
    (:func:`address_key`); ``None`` when the server needs a token it did not send.
    """
    client = scope.get("client")
    address = address_key(client[0]) if client else "?"
    if limits.token is None and limits.client_tokens is None:
        return address
    given = next((v for k, v in scope.get("headers", []) if k == b"authorization"), b"")
    found: str | None = None
    # Every token is compared (in constant time each): which one matched does not show.
    if limits.token is not None and hmac.compare_digest(given, b"Bearer " + limits.token.encode()):
        found = address
    for name, token in (limits.client_tokens or {}).items():
        if hmac.compare_digest(given, b"Bearer " + token.encode()):
            found = f"client:{name}"
    return found


async def _send_json(send: Any, status: int, body: Mapping[str, Any], close: bool) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(payload))]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


def _error(code: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}


class _Guard:
    """ASGI middleware: the token, the body limit and the body timeout.

    A refused request gets a JSON ``{"error": {"code", "message"}}`` with its status and the
    connection is closed when its body was not read, so nothing stale is left on it.
    """

    def __init__(self, app: Any, limits: ServerLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        if scope.get("path", "").rstrip("/").endswith("/health") and kind == "http":
            await self.app(scope, receive, send)
            return
        if client_of(scope, self.limits) is None:
            log.warning("refused %s %s: UNAUTHORIZED (no valid bearer token)", kind, _peer(scope))
            message = (
                "This server needs `Authorization: Bearer <token>` (its --token, or the "
                "client's own of --client-tokens)."
            )
            if kind == "http":
                body = {"error": {"code": "UNAUTHORIZED", "message": message}}
                await _send_json(send, 401, body, close=True)
            else:
                await receive()  # websocket.connect
                try:
                    await send({"type": "websocket.accept"})
                    await send(
                        {
                            "type": "websocket.send",
                            "text": json.dumps(_error("UNAUTHORIZED", message)),
                        }
                    )
                    await send(
                        {
                            "type": "websocket.close",
                            "code": CLOSE_UNAUTHORIZED,
                            "reason": "UNAUTHORIZED",
                        }
                    )
                except (RuntimeError, OSError):
                    # Closed meanwhile (evicted for a newcomer when the server is full):
                    # uvicorn drops the accept, and the refusal has no one to go to (att35k:
                    # each raised into a traceback in the log).
                    pass
            return
        if kind == "websocket":
            await self.app(scope, receive, send)
            return
        await self._http(scope, receive, send)

    async def _http(self, scope: Any, receive: Any, send: Any) -> None:
        limit = self.limits.max_bytes
        for name, value in scope.get("headers", []):
            if name == b"content-length" and (not value.isdigit() or int(value) > limit):
                await self._refuse(
                    send,
                    scope,
                    413,
                    "BODY_TOO_LARGE",
                    f"Request bodies are limited to {self.limits.max_message_mb:g} MiB.",
                )
                return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.body_timeout
        state = {"bytes": 0, "done": False, "started": False}

        async def guarded_receive() -> Any:
            if state["done"]:
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - loop.time(), 0.001))
            except asyncio.TimeoutError:
                raise _Refusal(
                    408,
                    "BODY_TIMEOUT",
                    f"The request body did not arrive within {self.limits.body_timeout:g} s.",
                ) from None
            if message["type"] == "http.request":
                state["bytes"] += len(message.get("body", b""))
                if state["bytes"] > limit:
                    raise _Refusal(
                        413,
                        "BODY_TOO_LARGE",
                        f"Request bodies are limited to {self.limits.max_message_mb:g} MiB.",
                    )
                state["done"] = not message.get("more_body", False)
            return message

        async def tracked_send(message: Any) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            await send(message)

        try:
            await self.app(scope, guarded_receive, tracked_send)
        except _Refusal as refusal:
            if not state["started"]:
                await self._refuse(send, scope, refusal.status, refusal.code, refusal.message)

    @staticmethod
    async def _refuse(send: Any, scope: Any, status: int, code: str, message: str) -> None:
        log.warning(
            "refused http %s %s: %s (%d)", _peer(scope), scope.get("path", ""), code, status
        )
        await _send_json(send, status, {"error": {"code": code, "message": message}}, close=True)


class _Refusal(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class ScoreLog:
    """The rewards of a privately graded server: one JSON line per finished episode.

    Lines are appended with one ``write`` each to a file opened ``O_APPEND``, so the ids of
    one server (and several servers) can share a file without interleaving lines.

    Raises:
        AdapterConfigError: If the file cannot be opened for appending.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._attempts: dict[tuple[str, Any, Any], int] = {}
        self._lock = threading.Lock()
        try:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as e:
            raise AdapterConfigError(
                f"Cannot append to the score log {self.path!r}: {e.strerror}"
            ) from None

    def write(self, record: Mapping[str, Any], *, peer: str = "", client: str = "") -> None:
        """Append ``record`` as one line, with the time, the client and its address.

        ``attempt`` counts the episodes of its task (``env_id``, ``task_id``) this log has
        recorded for this ``client`` (:func:`client_of`) so far: score each client's first,
        a later one may have learnt from the earlier. Per client: another client playing a
        task first does not use up its attempt (att34c: junk answers from one client made
        every honest answer of another attempt 2).
        """
        key = (client, record.get("env_id"), record.get("task_id"))
        with self._lock:
            attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
            line = {
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "client": client,
                "peer": peer,
                "attempt": attempt,
            }
            os.write(self._fd, (json.dumps({**line, **record}) + "\n").encode())

    def close(self) -> None:
        """Close the file (idempotent)."""
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)


#: Reads a request (head and body) may take before it must average TRICKLE_BYTES a read: a
#: client sends a head in one or a few segments, and a body in large reads.
TRICKLE_READS = 64
TRICKLE_BYTES = 512


def _h11_protocol(limits: ServerLimits) -> type:
    """Uvicorn's h11 protocol with header and late-body deadlines and a per-client limit.

    uvicorn times out idle keep-alive connections but not a request whose headers trickle
    in, nor the rest of a body the app did not read (``GET /health`` with a Content-Length:
    uvicorn answers, then discards the body as it trickles in, and each byte disarms its
    keep-alive timer), and has no per-client limit: all are enforced here, where connections
    start. A body the app reads is bounded by :class:`_Guard`.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    peers: dict[str, set[asyncio.BaseTransport]] = {}
    per_client = limits.connections_per_client
    total = limits.connections_total
    everyone: set[asyncio.BaseTransport] = set()
    #: On a server that needs a token, connections that have shown none, oldest first: those
    #: whose request had none (``shown``, a refused WebSocket upgrade too), then those that
    #: sent no request yet (``silent``); the first closed for a newcomer when the server or
    #: an address is full. A token (a client's or the shared one) takes a connection out,
    #: and so does its closing.
    shown: dict[asyncio.BaseTransport, None] = {}
    silent: dict[asyncio.BaseTransport, None] = {}
    tokens = limits.token is not None or limits.client_tokens is not None

    def forget(transport: asyncio.BaseTransport) -> None:
        shown.pop(transport, None)
        silent.pop(transport, None)

    def evict(oldest: asyncio.BaseTransport, host: str, cap: int, where: str) -> None:
        """Close ``oldest`` (listed as having shown no token) for a newcomer."""
        was_silent = oldest in silent
        forget(oldest)
        everyone.discard(oldest)
        if oldest.is_closing():
            return
        log.warning("closed connection %s: EVICTED (no token yet)", host)
        if was_silent:  # nothing was answered on it: it is told why
            refuse(
                oldest,  # type: ignore[arg-type]
                f"Closed for a newcomer: the server holds at most {cap} connections{where} "
                "and this one had shown no token yet; retry.",
            )
        else:
            oldest.close()

    def refuse(transport: asyncio.Transport, message: str) -> None:
        body = json.dumps({"error": {"code": "TOO_MANY_CONNECTIONS", "message": message}})
        transport.write(
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
            b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body.encode())
        )
        transport.close()

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        _late_body_timer: asyncio.TimerHandle | None = None
        _reads = 0  # reads of the request being received, and their bytes
        _read_bytes = 0

        def data_received(self, data: bytes) -> None:
            # Each read costs the event loop a wake-up and a parse: a request trickled a byte
            # at a time cost as much per byte as a whole request (s39 att39d F1: 300 such
            # connections took an honest client from 2,315 to 314 steps/s, for as long as
            # the header timeout let each live). A request gets TRICKLE_READS reads, and one
            # more for each TRICKLE_BYTES it sent; a client that sends less is cut.
            if self.conn.their_state in (h11.IDLE, h11.SEND_BODY):
                self._reads += 1
                self._read_bytes += len(data)
                allowed = TRICKLE_READS + self._read_bytes // TRICKLE_BYTES
                if self._reads > allowed and not self.transport.is_closing():
                    peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
                    log.warning(
                        "cut connection %s: TRICKLE (%d reads for %d bytes of a request)",
                        peer,
                        self._reads,
                        self._read_bytes,
                    )
                    self.transport.write(
                        b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\n"
                        b"content-length: 0\r\n\r\n"
                    )
                    self.transport.close()
                    return
            super().data_received(data)

        @staticmethod
        def unidentified() -> int:
            """Connections listed as having shown no token (what eviction chooses from)."""
            return len(shown) + len(silent)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else "?"
            key = address_key(host)
            # With client tokens, local clients are told apart by them once their requests
            # arrive (sessions per client name): counted by address here, one client holding
            # the loopback share would refuse every other one. A local connection that has
            # not shown a client's token yet is the first to go when the server is full
            # (att34i: tokenless `/health` keep-alives held every connection the server
            # allows, and token holders were refused 97% of the time).
            shared = key == "loopback" and limits.client_tokens is not None
            live = set() if shared else peers.setdefault(key, set())
            live.difference_update([t for t in live if t.is_closing()])
            if len(everyone) >= total or len(everyone) % 256 == 255:  # upgraded ones too
                everyone.difference_update([t for t in everyone if t.is_closing()])
                for closed in [t for t in (*shown, *silent) if t.is_closing()]:
                    forget(closed)
            # Oldest first: a connection's request is on its way (a client's token may be in
            # it) for as long as the fewest newcomers can take (att35d: keeping fresh ones
            # for a grace period refused 97% of honest connects under a connect flood, where
            # evicting the oldest failed 2-3% of their handshakes).
            while len(everyone) >= total and (shown or silent):
                evict(next(iter(shown or silent)), host, total, "")
            # An address at its share makes room the same way, from its own connections: a
            # server that needs a token is not held by connections that never showed one
            # (s39 att39b F1: 40 tokenless local connections trickling headers refused every
            # token holder on loopback, 39 of 40 connects, for as long as they were kept).
            while len(live) >= per_client and (shown.keys() | silent.keys()) & live:
                oldest = next(t for t in (*shown, *silent) if t in live)
                evict(oldest, host, per_client, " from this address")
                live.discard(oldest)
            if len(everyone) >= total:
                log.warning(
                    "refused connection %s: TOO_MANY_CONNECTIONS (%d open in all)",
                    host,
                    len(everyone),
                )
                refuse(transport, f"At most {total} connections to this server; retry later.")
                return
            if len(live) >= per_client:
                log.warning(
                    "refused connection %s: TOO_MANY_CONNECTIONS (%d open)", host, len(live)
                )
                refuse(transport, f"At most {per_client} connections per client.")
                return
            live.add(transport)
            everyone.add(transport)
            if tokens:
                silent[transport] = None
            self._arm_header_timer()

        def _arm_header_timer(self) -> None:
            self._header_timer = self.loop.call_later(limits.header_timeout, self._header_timed_out)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _header_timed_out(self) -> None:
            self._header_timer = None
            if not self.transport.is_closing():
                peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
                log.warning(
                    "cut connection %s: HEADER_TIMEOUT (no request in %g s)",
                    peer,
                    limits.header_timeout,
                )
                self.transport.write(
                    b"HTTP/1.1 408 Request Timeout\r\nconnection: close\r\n"
                    b"content-length: 0\r\n\r\n"
                )
                self.transport.close()

        def _late_body_timed_out(self) -> None:
            self._late_body_timer = None
            if not self.transport.is_closing():
                peer = f"{self.client[0]}:{self.client[1]}" if self.client else "?"
                log.warning(
                    "cut connection %s: BODY_TIMEOUT (body unfinished %g s after the response)",
                    peer,
                    limits.body_timeout,
                )
                self.transport.close()

        def _watch_late_body(self) -> None:
            # The response is sent and the client is still sending the request's body: it
            # gets body_timeout to finish, once (later bytes do not extend it).
            late = self.conn.our_state is h11.DONE and self.conn.their_state is h11.SEND_BODY
            if not late and self._late_body_timer is not None:
                self._late_body_timer.cancel()
                self._late_body_timer = None
            elif late and self._late_body_timer is None and not self.transport.is_closing():
                self._late_body_timer = self.loop.call_later(
                    limits.body_timeout, self._late_body_timed_out
                )

        def handle_events(self) -> None:
            super().handle_events()
            if self.transport in silent or self.transport in shown:
                token = _shows_token(getattr(self, "scope", None), limits)
                if token:
                    forget(self.transport)  # a client's own: counted by its name from here
                elif token is False and self.transport in silent:
                    del silent[self.transport]
                    shown[self.transport] = None
            if self.conn.their_state is not h11.IDLE:
                self._disarm_header_timer()
            elif self._header_timer is None and not self.transport.is_closing():
                # A body that finished after its response: the next request's headers are due.
                self._arm_header_timer()
            self._watch_late_body()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._reads = self._read_bytes = 0  # the next request's count starts
            if not self.transport.is_closing() and self._header_timer is None:
                self._arm_header_timer()
            self._watch_late_body()

        def handle_websocket_upgrade(self, event: Any) -> None:
            transport = self.transport
            if _shows_token(getattr(self, "scope", None), limits):
                forget(transport)
            elif transport in silent:
                # Refused by the app, but held until the client answers the close (uvicorn
                # waits up to 10 s): first to go when the server is full (att35h: tokenless
                # upgrades that never answered kept token holders out, 2 of 94 served).
                del silent[transport]
                shown[transport] = None
            super().handle_websocket_upgrade(event)
            # The WebSocket protocol owns the socket from here, and this one's
            # connection_lost is not called: the socket leaves the lists when it closes
            # (att35d: each tokenless upgrade stayed listed, 1.2 kB of server memory each).
            protocol = transport.get_protocol()
            lost = protocol.connection_lost

            def connection_lost(exc: Exception | None) -> None:
                forget(transport)
                lost(exc)

            protocol.connection_lost = connection_lost  # type: ignore[method-assign]

        def shutdown(self) -> None:
            # A request whose body has not all arrived is a client still sending: it is cut
            # now rather than waited for through the whole grace period (s42 att42d F2: 20
            # such requests held a SIGTERM for 10 s, then each logged its cancellation). The
            # app's read of the body then ends (ClientDisconnect, one line).
            if self.conn.their_state is h11.SEND_BODY and not self.transport.is_closing():
                self.transport.close()
                return
            super().shutdown()

        def connection_lost(self, exc: Exception | None) -> None:
            forget(self.transport)
            self._disarm_header_timer()
            if self._late_body_timer is not None:
                self._late_body_timer.cancel()
                self._late_body_timer = None
            super().connection_lost(exc)

    return GuardedH11Protocol


#: After a failure close (1009 message too big, 1007 invalid UTF-8), seconds the server keeps
#: reading (and dropping) what the client is still sending before it closes the socket.
_DRAIN_S = 5.0


#: Bytes a WebSocket's unsent output may hold before the pongs to a client's pings are
#: dropped (its replies are never dropped: a send waits for the client to read).
_PONG_BUFFER_MAX = 1024 * 1024
#: Seconds of ``ServerLimits.max_frames_per_s`` a connection may send at once. Frames that do
#: not pause reading (pings, pongs, and the fragments of a message before its last) are
#: rate-limited because uvicorn handles each at once: 1 MB/s of empty pings from one socket,
#: with or without a token, kept every other client from being served (s36 att36e: 0 of 3
#: handshakes), and so did 2 MB/s of 1-byte continuation frames of a message never finished
#: (att36g: 4.7 episodes a second against 757, +350 MB). Past the rate the connection is
#: closed (1008 ``FRAME_FLOOD``).
_FRAME_BURST_S = 4.0


def _ws_protocol(limits: ServerLimits) -> type:
    """Uvicorn's WebSocket protocol, closing with 1009 (or 1007) so the client sees the code.

    When a frame is over ``max_message_mb``, websockets sends the close frame (1009) and
    uvicorn closes the socket at once. The client is usually still sending the frame, and a
    socket closed with unread bytes makes the kernel answer with a reset (RST) instead of an
    orderly end: the client's kernel then drops the close frame it had received but not yet
    read, so the client sees "connection reset" instead of 1009. (With permessage-deflate the
    oversized frame is small on the wire and arrives whole, so this showed only without
    compression: on loopback, where it is off.) Here the server half-closes after the close
    frame (FIN, so the client reads the frame and then the end) and reads and drops the rest
    of the client's bytes until the client closes, for at most :data:`_DRAIN_S` seconds and
    ``max(4 x max_message_mb, 64 MiB)``; then the socket is closed.
    """
    from uvicorn.protocols.websockets.websockets_sansio_impl import WebSocketsSansIOProtocol

    most = max(4 * limits.max_bytes, 64 * 1024 * 1024)  # reading and dropping is cheap
    frame_rate = limits.max_frames_per_s
    frame_burst = _FRAME_BURST_S * frame_rate

    class DrainingWebSocketProtocol(WebSocketsSansIOProtocol):
        _draining = False
        _drained = 0
        _frame_tokens = frame_burst
        _frame_at = 0.0

        def handle_parser_exception(self) -> None:
            assert self.conn.close_sent is not None
            close = self.conn.close_sent
            self.queue.put_nowait(
                {"type": "websocket.disconnect", "code": close.code, "reason": close.reason}
            )
            self.transport.write(b"".join(self.conn.data_to_send()))
            self.close_sent = True
            self._draining = True
            if self.transport.can_write_eof():
                self.transport.write_eof()  # after the close frame: the client reads both
            if self.read_paused:
                self.read_paused = False
                self.transport.resume_reading()
            # uvicorn's close timer: while it runs, the end of the app does not close the
            # socket, and connection_lost cancels it.
            self.close_timer = self.loop.call_later(_DRAIN_S, self._end_drain)

        def data_received(self, data: bytes) -> None:
            if self._draining:
                self._drained += len(data)
                if self._drained > most:
                    self._end_drain()
                return
            super().data_received(data)

        def eof_received(self) -> None:
            if self._draining:
                self._end_drain()

        def handle_ping(self) -> None:
            # uvicorn writes every pong at once, whether the client reads or not: a client
            # sending pings and reading nothing grew the server by what it sent (+195 MB in
            # 40 s, s36 att36b). Past the cap its pongs are dropped (websockets queued them).
            pongs = b"".join(self.conn.data_to_send())
            if not self._frame_allowed():
                return
            if self.transport.get_write_buffer_size() + len(pongs) <= _PONG_BUFFER_MAX:
                self.transport.write(pongs)

        def handle_pong(self, event: Any) -> None:
            if self._frame_allowed():
                super().handle_pong(event)

        def handle_text(self, event: Any) -> None:
            if event.fin or self._frame_allowed():
                super().handle_text(event)

        def handle_bytes(self, event: Any) -> None:
            if event.fin or self._frame_allowed():
                super().handle_bytes(event)

        def handle_cont(self, event: Any) -> None:
            if self._frame_allowed():
                super().handle_cont(event)

        def _frame_allowed(self) -> bool:
            """Count a frame that does not pause reading; past the rate, close (1008)."""
            now = time.monotonic()
            if self._frame_at:
                refill = (now - self._frame_at) * frame_rate
                self._frame_tokens = min(frame_burst, self._frame_tokens + refill)
            self._frame_at = now
            self._frame_tokens -= 1.0
            if self._frame_tokens >= 0.0:
                return True
            if not self._draining and not self.transport.is_closing():
                peer = "{}:{}".format(*self.client) if self.client else "?"
                log.warning("closed ws %s: FRAME_FLOOD (close code 1008)", peer)
                self.conn.fail(1008, "FRAME_FLOOD: too many pings, pongs or fragments")
                if self.conn.close_sent is not None:
                    self.handle_parser_exception()  # the close frame, then drain and close
                else:
                    self.transport.close()
            return False

        def _end_drain(self) -> None:
            self._draining = False
            if self.close_timer is not None:
                self.close_timer.cancel()
                self.close_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        def shutdown(self) -> None:
            SERVER_STOPPING.set()
            super().shutdown()

    return DrainingWebSocketProtocol


#: Set when uvicorn starts closing the sockets at shutdown: a session's send then fails with
#: 1006 (Starlette's code for a socket gone under a send), which is the stop, not the client.
SERVER_STOPPING = threading.Event()
