"""Connections before any request: a head deadline, a connection cap, bounded error logs.

Uvicorn reads a request head for as long as the client takes and accepts connections until
the process runs out of file descriptors, all before the gateway sees a request (so before
any token is checked). :func:`guarded_protocol` wraps uvicorn's HTTP protocol so that

* a connection that has not sent a whole request head ``header_timeout_s`` after it opened
  (or after the first byte of its next request) is closed;
* a connection whose request body is not all there ``body_timeout_s`` (and a second) after
  its head is closed -- also when the gateway answered without reading it (``/health``, a
  401), so no unauthenticated connection is held by a body that never ends;
* a connection above ``max_connections`` is answered 503 and closed at once;

:func:`raise_fd_limit` lifts the soft file-descriptor limit to the hard one at start, and
:class:`RateLimitedLog` (the loop's exception handler) logs one line per kind of error per
interval, with a count of those it left out, instead of one per failed ``accept``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

__all__ = ["RateLimitedLog", "default_max_connections", "guarded_protocol", "raise_fd_limit"]

_log = logging.getLogger(__name__)

_BUSY = json.dumps(
    {
        "error": {
            "message": "Too many connections to the gateway; retry later.",
            "type": "server_error",
            "code": "too_many_connections",
        }
    }
).encode()
_BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
    + str(len(_BUSY)).encode()
    + b"\r\n\r\n"
    + _BUSY
)


class RateLimitedLog:
    """A loop exception handler that logs each kind of error at most once per ``interval_s``.

    The kind is the handler context's message and its exception's type; the line logged
    after a quiet interval says how many of that kind were left out.
    """

    def __init__(self, interval_s: float = 10.0) -> None:
        self.interval_s = interval_s
        self._last: dict[tuple[str, str], float] = {}
        self._dropped: dict[tuple[str, str], int] = {}

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Log ``context`` unless one of its kind was logged within the interval."""
        exc = context.get("exception")
        kind = (str(context.get("message", "")), type(exc).__name__ if exc else "")
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_s:
            self._dropped[kind] = self._dropped.get(kind, 0) + 1
            return
        self._last[kind] = now
        dropped = self._dropped.pop(kind, 0)
        if dropped:
            context = {
                **context,
                "message": f"{kind[0]} (and {dropped} more like it in the last "
                f"{self.interval_s:g} s, not logged)",
            }
        loop.default_exception_handler(context)


def raise_fd_limit() -> int:
    """Raise the soft limit of open files to the hard limit; return the soft limit now."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return 1024
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        hard = max(soft, 1 << 20)
    if soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return int(soft)


def default_max_connections(fd_limit: int) -> int:
    """Client connections allowed with ``fd_limit`` open files.

    Half of them (the other half for engine connections, the store and logs), at most 16384,
    at least 32.
    """
    return max(32, min(16384, (fd_limit - 128) // 2))


def guarded_protocol(
    base: type, header_timeout_s: float, max_connections: int, body_timeout_s: float = 30.0
) -> type:
    """``base`` (uvicorn's httptools or h11 protocol) with head and body deadlines and a cap."""

    class Guarded(base):
        _head_timer: asyncio.TimerHandle | None = None
        _body_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            if len(self.connections) > max_connections:
                transport.write(_BUSY_RESPONSE)
                transport.close()
                return
            self._arm_head()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_head()
            self._disarm_body()
            super().connection_lost(exc)

        def _arm_body(self) -> None:
            # A second past the body timeout: a route that reads the body answers 408 first.
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(body_timeout_s + 1.0, self._head_expired)

        def _disarm_body(self) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None

        def _arm_head(self) -> None:
            if self._head_timer is None:
                self._head_timer = self.loop.call_later(header_timeout_s, self._head_expired)

        def _disarm_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_expired(self) -> None:
            self._head_timer = None
            self._body_timer = None
            if not self.transport.is_closing():
                self.transport.close()

        # httptools: a request begins, then its head is complete.
        def on_message_begin(self) -> None:
            self._arm_head()
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._disarm_head()
            self._arm_body()  # until the whole body is in (on_message_complete)
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._disarm_body()
            super().on_message_complete()

        # h11: after each read, a head is awaited while the peer's state is IDLE with bytes
        # buffered (the keep-alive timer covers an idle connection with nothing buffered).
        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            conn = getattr(self, "conn", None)
            if conn is None or self.transport.is_closing():
                return
            import h11

            if conn.their_state is h11.IDLE and conn.trailing_data[0]:
                self._arm_head()
            elif conn.their_state is not h11.IDLE:
                self._disarm_head()
            if conn.their_state is h11.SEND_BODY:
                self._arm_body()
            else:
                self._disarm_body()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
