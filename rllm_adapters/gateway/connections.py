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
* a request head (request line, URL and headers) over ``max_head_bytes`` (64 KiB) is answered
  431 and the connection closed, whatever the parser (httptools sets no limit of its own; h11
  is given the same one by the server);
* a connection that pipelines requests without reading the replies stops being read while a
  request waits for the one before it, and one that queues more than ``max_pipelined`` (16)
  in what it sent at once is closed.

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
_HEAD_TOO_BIG = b"Request head too large."
_HEAD_TOO_BIG_RESPONSE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-type: text/plain\r\n"
    b"connection: close\r\ncontent-length: "
    + str(len(_HEAD_TOO_BIG)).encode()
    + b"\r\n\r\n"
    + _HEAD_TOO_BIG
)
#: Bytes a request head may take (the h11 parser is given the same limit by the server).
MAX_HEAD_BYTES = 64 * 1024
#: Requests a connection may have waiting behind the one being answered.
MAX_PIPELINED = 16
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
    base: type,
    header_timeout_s: float,
    max_connections: int,
    body_timeout_s: float = 30.0,
    *,
    max_head_bytes: int = MAX_HEAD_BYTES,
    max_pipelined: int = MAX_PIPELINED,
) -> type:
    """``base`` (uvicorn's httptools or h11 protocol) with the guards of this module.

    Head and body deadlines, a bound on a request head's bytes and on pipelined requests,
    and a connection cap.
    """

    class Guarded(base):
        _head_timer: asyncio.TimerHandle | None = None
        _body_timer: asyncio.TimerHandle | None = None
        # Bytes received since the last head ended, while a head is awaited (httptools).
        _head_bytes = 0
        _awaiting_head = True

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

        def _refuse_head(self) -> None:
            self._disarm_head()
            self._disarm_body()
            if not self.transport.is_closing():
                self.transport.write(_HEAD_TOO_BIG_RESPONSE)
                self.transport.close()

        # httptools: a request begins, then its head is complete.
        def on_message_begin(self) -> None:
            self._head_len = 0
            self._arm_head()
            super().on_message_begin()

        def _count_head(self, size: int) -> bool:
            # What the parser handed over of this head (a head read in one piece too).
            self._head_len = getattr(self, "_head_len", 0) + size
            if self._head_len > max_head_bytes:
                self._refuse_head()
            return not self.transport.is_closing()

        def on_url(self, url: bytes) -> None:
            if self._count_head(len(url)):
                super().on_url(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            if self._count_head(len(name) + len(value) + 4):
                super().on_header(name, value)

        def on_headers_complete(self) -> None:
            self._head_bytes, self._awaiting_head = 0, False
            if self.transport.is_closing():
                return  # closed for the requests before it: no new cycle
            self._disarm_head()
            self._arm_body()  # until the whole body is in (on_message_complete)
            super().on_headers_complete()
            pipeline = getattr(self, "pipeline", None)
            if pipeline is not None and len(pipeline) > max_pipelined:
                # Requests sent without reading the replies, more than any client needs.
                self._disarm_body()
                self.transport.close()

        def on_body(self, body: bytes) -> None:
            if not self.transport.is_closing():
                super().on_body(body)

        def on_message_complete(self) -> None:
            self._awaiting_head = True
            self._disarm_body()
            if not self.transport.is_closing():
                super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # uvicorn resumes reading after every reply; a connection with requests still
            # waiting is read again only once they are answered.
            if getattr(self, "pipeline", None) and not self.transport.is_closing():
                self.flow.pause_reading()

        def data_received(self, data: bytes) -> None:
            counting = hasattr(self, "parser") and self._awaiting_head
            if counting:
                self._head_bytes += len(data)
            super().data_received(data)
            if self.transport.is_closing():
                return
            # httptools keeps every header of a head (and the URL) with no limit of its own.
            if counting and self._awaiting_head and self._head_bytes > max_head_bytes:
                self._refuse_head()
                return
            # h11: after each read, a head is awaited while the peer's state is IDLE with
            # bytes buffered (the keep-alive timer covers an idle connection with nothing
            # buffered).
            conn = getattr(self, "conn", None)
            if conn is None:
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
