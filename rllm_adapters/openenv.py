r"""OpenEnv adapter: serve any rllm-envs id over OpenEnv's HTTP/WebSocket protocol, and a client.

Built on ``openenv`` 0.10's types and client (``pip install "rllm-envs[openenv]"``):
:class:`GymTextEnvironment` is an ``openenv`` ``Environment`` around one of our Gymnasium envs,
and :func:`create_app` serves it over OpenEnv's wire protocol with a session handler of our
own, so that a session belongs to its WebSocket (``/ws``): one env and one episode at a time
per socket, no HTTP route that creates, attaches to or closes sessions, and the limits of
:class:`ServerLimits` on every path. Stateless ``POST /reset`` gives a fresh env's first
observation; ``POST /step`` and ``GET /state`` answer 409 (no episode outlives a request).

Serve from the command line (``python -m rllm_adapters.serve --help``)::

    python -m rllm_adapters.serve rllm/Math-v1 --port 8000 --max-sessions 64 \
        --env-kwargs '{"difficulty": 3}'

and talk to it with OpenEnv's client protocol::

    from rllm_adapters.openenv import RllmEnvClient, TextAction

    with RllmEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0)
        print(result.observation.text)
        result = client.step(TextAction(text="\\boxed{42}"))
        print(result.reward, result.done, result.observation.info["is_correct"])

:class:`RemoteTextEnv` wraps that client as a ``gymnasium.Env[str, str]``, so anything that
steps our envs (the rollout loop, vector envs, the conformance kit) can step a remote one.

Limits (:class:`ServerLimits`, the CLI's options): live sessions (``CAPACITY_REACHED``, close
code 1013), idle sessions (``SESSION_TIMEOUT``, close code 4408), one size limit for WebSocket
messages and HTTP bodies, header and body timeouts, connections per client address, and a
bearer token (required off loopback). Every refusal has a code and a reason, and is one log
line. On shutdown (SIGINT/SIGTERM) every live session's env is closed, which stops any sandbox
it holds. :func:`openenv_package` writes the manifest, app and Dockerfile ``openenv validate``
and ``openenv push`` read.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hmac
import ipaddress
import json
import logging
import math
import os
import signal
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import require

_types = require("openenv.core.env_server.types", "openenv", feature="The OpenEnv adapter")
_interfaces = require("openenv.core.env_server.interfaces", "openenv")
_client = require("openenv.core.env_client", "openenv")
_client_types = require("openenv.core.client_types", "openenv")

__all__ = [
    "TextAction",
    "TextObservation",
    "TextState",
    "GymTextEnvironment",
    "RllmEnvClient",
    "RemoteTextEnv",
    "create_app",
    "create_multi_app",
    "ServerLimits",
    "openenv_package",
    "write_openenv_packages",
    "serve",
    "main",
]

from fastapi import Request, WebSocket  # noqa: E402  (dependencies of openenv, checked above)
from pydantic import Field  # noqa: E402


class TextAction(_types.Action):  # type: ignore[name-defined]
    """A model's reply: any text (the env cuts what is over its action limit and says so)."""

    text: str = Field(description="The model output, passed to the env's step() unchanged")


class TextObservation(_types.Observation):  # type: ignore[name-defined]
    """What the env returned: the text, Gymnasium's two end flags and the env's ``info``.

    ``done`` (OpenEnv's field) is ``terminated or truncated``; ``reward`` is the step reward
    (``None`` after reset). ``info`` is the env's documented info dict made JSON-safe.
    """

    text: str = Field(description="The observation string")
    terminated: bool = Field(default=False, description="The episode reached a terminal state")
    truncated: bool = Field(default=False, description="The episode hit its turn limit")
    info: dict[str, Any] = Field(default_factory=dict, description="The env's info dict")


class TextState(_types.State):  # type: ignore[name-defined]
    """The session's state: the env id and the current episode (``step_count`` = turns)."""

    env_id: str = ""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    task_id: str | None = None
    seed: int | None = None
    done: bool = True


def jsonable(value: Any) -> Any:
    """``value`` as JSON-safe data: NumPy scalars and arrays become Python, the rest ``str``."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    return str(value)


# Every live environment of this process, so a shutdown can close them all.
_LIVE: weakref.WeakSet[GymTextEnvironment] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


class GymTextEnvironment(_interfaces.Environment):  # type: ignore[name-defined]
    """An OpenEnv ``Environment`` that plays one rllm-envs (Gymnasium) env.

    One instance per session: OpenEnv's server calls the factory for each WebSocket session.

    Args:
        env_id: A registered id, e.g. ``"rllm/FrozenLake-v1"``.
        env_kwargs: Constructor kwargs (variants), checked like :func:`rllm_envs.make`.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        import rllm_envs

        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.env: gym.Env = rllm_envs.make(env_id, **self.env_kwargs)
        self._state = TextState(env_id=env_id, env_kwargs=jsonable(self.env_kwargs))
        with _LIVE_LOCK:
            _LIVE.add(self)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TextObservation:
        """Start an episode; ``options`` are the env's reset options (``index``, ``task``)."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._state = TextState(
            episode_id=episode_id,
            step_count=0,
            env_id=self.env_id,
            env_kwargs=jsonable(self.env_kwargs),
            task_id=info.get("task_id"),
            seed=seed,
            done=False,
        )
        return TextObservation(text=obs, info=jsonable(info))

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        """Apply the model's text; raises ``ResetNeeded`` outside an episode (a clear error)."""
        text = action.text if isinstance(action, TextAction) else str(action)
        payload = self.step_payload(text)
        return TextObservation(
            **payload["observation"], reward=payload["reward"], done=payload["done"]
        )

    def step_payload(self, text: str) -> dict[str, Any]:
        """:meth:`step` as OpenEnv's wire payload (``observation``, ``reward``, ``done``).

        The server's hot path: the same fields as the serialized :class:`TextObservation`,
        without building and dumping the model for every step.
        """
        if self._state.done:
            raise gym.error.ResetNeeded(
                "No episode is running in this session: send a reset before stepping."
            )
        obs, reward, terminated, truncated, info = self.env.step(text)
        self._state.step_count += 1
        done = bool(terminated or truncated)
        self._state.done = done
        observation = {
            "text": obs,
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": jsonable(info),
            "metadata": {},
        }
        return {"observation": observation, "reward": float(reward), "done": done}

    @property
    def state(self) -> TextState:
        """The session's :class:`TextState`."""
        return self._state

    def get_metadata(self) -> Any:
        """OpenEnv metadata: the id, its one-line description and the class docstring."""
        import rllm_envs

        return _types.EnvironmentMetadata(
            name=self.env_id,
            description=rllm_envs.list_envs().get(self.env_id, self.env_id),
            readme_content=type(self.env.unwrapped).__doc__,
            version=self.env_id.rsplit("-", 1)[-1],
        )

    def close(self) -> None:
        """Close the env (stops any sandbox it holds). Idempotent."""
        env, self.env = self.env, None  # type: ignore[assignment]
        if env is not None:
            env.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)


def close_all_environments() -> int:
    """Close every live :class:`GymTextEnvironment` of this process; returns how many."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for env in live:
        env.close()
    return len(live)


# --------------------------------------------------------------------------------- server

log = logging.getLogger("rllm_adapters.openenv")

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
        max_connections_per_client: Open connections per client address (503).
        token: When set, every route but ``/health`` needs ``Authorization: Bearer <token>``
            (401, or close code 1008 on the WebSocket).
    """

    max_sessions: int = 16
    session_timeout: float | None = 600.0
    max_message_mb: float = 16.0
    header_timeout: float = 10.0
    body_timeout: float = 30.0
    max_connections_per_client: int | None = None
    token: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max_sessions, int) or self.max_sessions < 1:
            raise AdapterConfigError(
                f"Expects `max_sessions` to be an int >= 1, actual: {self.max_sessions}"
            )
        if self.session_timeout is not None and self.session_timeout <= 0:
            raise AdapterConfigError(
                f"Expects `session_timeout` > 0 or None, actual: {self.session_timeout}"
            )
        for name in ("max_message_mb", "header_timeout", "body_timeout"):
            if not getattr(self, name) > 0:
                raise AdapterConfigError(f"Expects `{name}` > 0, actual: {getattr(self, name)}")
        per_client = self.max_connections_per_client
        if per_client is not None and (not isinstance(per_client, int) or per_client < 1):
            raise AdapterConfigError(
                f"Expects `max_connections_per_client` to be an int >= 1 or None, actual: "
                f"{per_client}"
            )
        if self.token is not None and len(self.token) < 16:
            raise AdapterConfigError(
                "Expects `token` to be at least 16 characters (e.g. `python -c 'import "
                "secrets; print(secrets.token_urlsafe())'`)"
            )

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


def _peer(scope: Mapping[str, Any]) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "?"


def _authorized(scope: Mapping[str, Any], token: str | None) -> bool:
    if token is None:
        return True
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            given = value.decode("latin-1")
            return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())
    return False


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
        if not _authorized(scope, self.limits.token):
            log.warning("refused %s %s: UNAUTHORIZED (no valid bearer token)", kind, _peer(scope))
            message = "This server needs `Authorization: Bearer <token>` (its --token)."
            if kind == "http":
                body = {"error": {"code": "UNAUTHORIZED", "message": message}}
                await _send_json(send, 401, body, close=True)
            else:
                await receive()  # websocket.connect
                await send({"type": "websocket.accept"})
                await send(
                    {"type": "websocket.send", "text": json.dumps(_error("UNAUTHORIZED", message))}
                )
                await send(
                    {
                        "type": "websocket.close",
                        "code": CLOSE_UNAUTHORIZED,
                        "reason": "UNAUTHORIZED",
                    }
                )
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


def _log_disconnect(peer: str, code: int | None) -> None:
    # Normal closes (by the client, or ours at shutdown: 1012) are not news; the rest are.
    if code in (1000, 1001, 1012, None):
        return
    if code == 1009:
        log.warning("refused ws %s: MESSAGE_TOO_BIG (close code 1009)", peer)
    else:
        log.warning("dropped ws %s: client left (code %s)", peer, code)


class _Session:
    """One WebSocket session: its own env, alive exactly as long as its socket."""

    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.env: GymTextEnvironment | None = None


def _serialize(observation: TextObservation) -> dict[str, Any]:
    return {
        "observation": observation.model_dump(exclude={"reward", "done"}),
        "reward": observation.reward,
        "done": observation.done,
    }


class _EnvServer:
    """The OpenEnv wire protocol for one id: ``/ws`` sessions and the HTTP routes."""

    def __init__(self, env_id: str, env_kwargs: dict[str, Any], limits: ServerLimits) -> None:
        self.env_id = env_id
        self.env_kwargs = env_kwargs
        self.limits = limits
        self.sessions: set[_Session] = set()
        self.stateless = asyncio.Semaphore(limits.max_sessions)

    def make_env(self) -> GymTextEnvironment:
        return GymTextEnvironment(self.env_id, self.env_kwargs)

    # ------------------------------------------------------------------- websocket

    async def websocket(self, websocket: Any) -> None:
        from starlette.websockets import WebSocketDisconnect

        peer = _peer(websocket.scope)
        await websocket.accept()
        if len(self.sessions) >= self.limits.max_sessions:
            active, cap = len(self.sessions), self.limits.max_sessions
            log.warning("refused ws %s: CAPACITY_REACHED (%d/%d sessions)", peer, active, cap)
            refusal = f"Server at capacity: {active}/{cap} sessions. Retry later."
            with contextlib.suppress(Exception):
                await websocket.send_text(
                    json.dumps(
                        _error(
                            "CAPACITY_REACHED", refusal, active_sessions=active, max_sessions=cap
                        )
                    )
                )
                await websocket.close(CLOSE_CAPACITY, f"CAPACITY_REACHED: {active}/{cap} sessions")
            return
        session = _Session(peer)
        self.sessions.add(session)  # no await since the check: the cap holds
        loop = asyncio.get_running_loop()
        try:
            try:
                session.env = await loop.run_in_executor(None, self.make_env)
            except Exception as e:
                log.error("refused ws %s: FACTORY_ERROR (%s: %s)", peer, type(e).__name__, e)
                text = f"The env could not be made: {type(e).__name__}: {e}"
                await websocket.send_text(json.dumps(_error("FACTORY_ERROR", text)))
                await websocket.close(1011, "FACTORY_ERROR")
                return
            while True:
                try:
                    message = await asyncio.wait_for(
                        websocket.receive(), self.limits.session_timeout
                    )
                except asyncio.TimeoutError:
                    text = f"Session closed: no message for {self.limits.session_timeout:g} s."
                    await websocket.send_text(json.dumps(_error("SESSION_TIMEOUT", text)))
                    await websocket.close(CLOSE_SESSION_TIMEOUT, "SESSION_TIMEOUT")
                    idle = self.limits.session_timeout
                    log.warning("closed ws %s: SESSION_TIMEOUT (%g s idle)", peer, idle)
                    return
                if message["type"] == "websocket.disconnect":
                    _log_disconnect(peer, message.get("code"))
                    return
                raw = message.get("text")
                if raw is None:
                    raw = (message.get("bytes") or b"").decode("utf-8", "replace")
                reply, close = await self._handle(session, raw)
                if close:
                    await websocket.close(1000)
                    return
                await websocket.send_text(json.dumps(reply))
        except WebSocketDisconnect as e:
            _log_disconnect(peer, e.code)
        except (OSError, RuntimeError) as e:  # the socket went away under a send
            log.warning("dropped ws %s: %s", peer, type(e).__name__)
        except Exception as e:  # a bug of ours: one line, and the session ends cleanly
            log.error("closed ws %s: internal error (%s: %s)", peer, type(e).__name__, e)
            with contextlib.suppress(Exception):
                await websocket.close(1011, "INTERNAL_ERROR")
        finally:
            self.sessions.discard(session)
            env, session.env = session.env, None
            if env is not None:
                await loop.run_in_executor(None, env.close)

    async def _handle(self, session: _Session, raw: str) -> tuple[dict[str, Any], bool]:
        from pydantic import ValidationError

        try:
            message = json.loads(raw)
        except json.JSONDecodeError as e:
            return _error("INVALID_JSON", f"Invalid JSON: {e}"), False
        if not isinstance(message, dict):
            return _error(
                "INVALID_MESSAGE",
                'Expects a JSON object like {"type": "step", "data": {"text": "..."}}, '
                f"actual: {type(message).__name__}",
            ), False
        kind = message.get("type")
        data = message.get("data", {})
        if kind == "close":
            return {}, True
        if kind not in ("reset", "step", "state"):
            return _error("UNKNOWN_TYPE", f"Unknown message type: {kind!r}"), False
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return _error(
                "VALIDATION_ERROR", f"Expects `data` to be an object, actual: {type(data).__name__}"
            ), False
        env = session.env
        assert env is not None
        loop = asyncio.get_running_loop()
        try:
            if kind == "state":
                return {"type": "state", "data": env.state.model_dump()}, False
            if kind == "reset":
                seed, options = data.get("seed"), data.get("options")
                if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool)):
                    return _error(
                        "VALIDATION_ERROR", f"Expects `seed` to be an int or null, actual: {seed!r}"
                    ), False
                if options is not None and not isinstance(options, dict):
                    return _error(
                        "VALIDATION_ERROR",
                        f"Expects `options` to be an object or null, actual: {options!r}",
                    ), False
                obs = await loop.run_in_executor(
                    None,
                    partial(
                        env.reset, seed=seed, episode_id=data.get("episode_id"), options=options
                    ),
                )
            else:
                try:
                    action = TextAction.model_validate(data)
                except ValidationError as e:
                    errors = json.loads(e.json(include_url=False, include_input=False))
                    return _error("VALIDATION_ERROR", "Invalid message", errors=errors), False
                payload = await loop.run_in_executor(None, env.step_payload, action.text)
                return {"type": "observation", "data": payload}, False
        except Exception as e:  # the env's own error (no episode, bad option): the session stays
            return _error("EXECUTION_ERROR", f"{type(e).__name__}: {e}"), False
        return {"type": "observation", "data": _serialize(obs)}, False

    # ------------------------------------------------------------------------ HTTP

    async def reset(self, request: Any) -> Any:
        """OpenEnv's stateless ``POST /reset``: a fresh env's first observation."""
        from fastapi.responses import JSONResponse

        try:
            body = await request.json() if await request.body() else {}
        except ValueError:
            return JSONResponse(
                {"error": {"code": "INVALID_JSON", "message": "The body is not JSON."}}, 400
            )
        if not isinstance(body, dict):
            return JSONResponse(
                {"error": {"code": "INVALID_MESSAGE", "message": "Expects a JSON object."}}, 400
            )
        session = _Session(_peer(request.scope))
        if self.stateless.locked():
            log.warning("refused http %s /reset: CAPACITY_REACHED", session.peer)
            return JSONResponse(
                {
                    "error": {
                        "code": "CAPACITY_REACHED",
                        "message": "Too many stateless resets at once.",
                    }
                },
                503,
            )
        async with self.stateless:
            session.env = await asyncio.get_running_loop().run_in_executor(None, self.make_env)
            try:
                reply, _ = await self._handle(session, json.dumps({"type": "reset", "data": body}))
            finally:
                await asyncio.get_running_loop().run_in_executor(None, session.env.close)
        if reply["type"] == "error":
            return JSONResponse({"error": reply["data"]}, 422)
        return JSONResponse(reply["data"])

    async def no_episode(self, request: Any) -> Any:
        """``POST /step`` and ``GET /state`` over HTTP: no episode lives between requests."""
        from fastapi.responses import JSONResponse

        await request.body()  # read it all: the connection stays usable
        route = f"{request.method} {request.url.path.rsplit('/', 1)[-1]}"
        message = (
            f"{route} is OpenEnv's stateless simulation route: every request gets a fresh env, "
            "which has no episode to step or report. Episodes run over the WebSocket session "
            "(/ws), as OpenEnv's clients (EnvClient, RllmEnvClient) use it."
        )
        return JSONResponse({"error": {"code": "NO_EPISODE", "message": message}}, 409)

    async def mcp(self, request: Any) -> Any:
        """``POST /mcp``: JSON-RPC, with no methods (these envs have no MCP tools)."""
        from fastapi.responses import JSONResponse

        try:
            body = json.loads(await request.body() or b"{}")
        except ValueError:
            body = {}
        rid = body.get("id") if isinstance(body, dict) else None
        method = body.get("method") if isinstance(body, dict) else None
        message = (
            f"Method not found: {method!r}. This server has no MCP tools or HTTP sessions; "
            "episodes run over /ws."
        )
        return JSONResponse(
            {"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": message}}
        )


def create_app(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 16,
    session_timeout: float | None = 600.0,
    limits: ServerLimits | None = None,
) -> Any:
    """The FastAPI app serving ``env_id`` over OpenEnv's protocol (``/ws``, ``/reset``, ...).

    Routes: ``/ws`` (a session per socket), ``GET /health``, ``/metadata``, ``/schema``,
    ``/rllm/sessions``; stateless ``POST /reset``; ``POST /step`` and ``GET /state`` answer
    409 ``NO_EPISODE`` (no episode outlives an HTTP request); ``POST /mcp`` answers JSON-RPC
    "method not found" (no tools, no HTTP sessions to create or close).

    Args:
        env_id: A registered single-agent id.
        env_kwargs: Constructor kwargs of every session's env.
        max_sessions: Live sessions; ignored when ``limits`` is given.
        session_timeout: Idle seconds before a session is closed; ignored with ``limits``.
        limits: All limits (:class:`ServerLimits`).

    Raises:
        UnknownEnvironment: For an unknown id. AdapterConfigError: For bad kwargs or limits.
    """
    import rllm_envs

    if limits is None:
        limits = ServerLimits(max_sessions=max_sessions, session_timeout=session_timeout)
    kwargs = dict(env_kwargs or {})
    probe = GymTextEnvironment(env_id, kwargs)  # bad ids and kwargs fail here
    metadata = probe.get_metadata()
    probe.close()
    from fastapi import FastAPI

    app = FastAPI(
        title=f"rllm-envs {env_id} (OpenEnv)",
        description=rllm_envs.list_envs().get(env_id, ""),
        version=rllm_envs.__version__,
    )
    server = _EnvServer(env_id, kwargs, limits)
    app.state.env_server = server

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await server.websocket(websocket)

    @app.post("/reset", tags=["Simulation"])
    async def reset(request: Request) -> Any:
        return await server.reset(request)

    @app.post("/step", tags=["Simulation"])
    async def step(request: Request) -> Any:
        return await server.no_episode(request)

    @app.get("/state", tags=["Simulation"])
    async def state(request: Request) -> Any:
        return await server.no_episode(request)

    @app.post("/mcp", tags=["MCP"])
    async def mcp(request: Request) -> Any:
        return await server.mcp(request)

    @app.get("/health", tags=["Environment Info"])
    def health() -> dict[str, Any]:
        return {"status": "healthy"}

    @app.get("/metadata", tags=["Environment Info"])
    def get_metadata() -> dict[str, Any]:
        return dict(metadata.model_dump())

    @app.get("/schema", tags=["Environment Info"])
    def schema() -> dict[str, Any]:
        return {
            "action": TextAction.model_json_schema(),
            "observation": TextObservation.model_json_schema(),
            "state": TextState.model_json_schema(),
        }

    @app.get("/rllm/sessions", tags=["Environment Info"])
    def sessions(request: Request) -> dict[str, Any]:
        return {
            "env_id": env_id,
            "active": len(server.sessions),
            "max": limits.max_sessions,
            "live_envs": len(_LIVE),
        }

    app.router.on_shutdown.append(_on_shutdown)
    app.add_middleware(_Guard, limits=limits)
    return app


async def _on_shutdown() -> None:
    close_all_environments()
    judge = sys.modules.get("rllm_envs.code.judge")
    if judge is not None:  # the code envs' shared pool of waiting sandboxes
        judge.close_pools()


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    # uvicorn shuts down gracefully on SIGTERM, then re-raises the signal to the previous
    # handler; exiting here (not dying of the signal) lets atexit clean-ups run.
    raise SystemExit(0)


def create_multi_app(
    env_ids: Sequence[str],
    *,
    env_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
    max_sessions: int = 16,
    session_timeout: float | None = 600.0,
    limits: ServerLimits | None = None,
) -> Any:
    """One app serving several ids, each under its own path: ``/rllm/Math-v1/ws`` and so on.

    A client's ``base_url`` is then ``http://host:port/rllm/Math-v1``. ``GET /rllm/envs`` lists
    the served ids. Limits apply per id. Each mounted app's shutdown hook (closing the envs)
    runs with the root app's.

    Args:
        env_ids: Registered single-agent ids.
        env_kwargs: ``{env_id: kwargs}`` for the ids that need them.
        max_sessions: Concurrent sessions per id (ignored when ``limits`` is given).
        session_timeout: Idle seconds before a session is closed (ignored with ``limits``).
        limits: All limits (:class:`ServerLimits`), per id.
    """
    from fastapi import FastAPI

    import rllm_envs

    if limits is None:
        limits = ServerLimits(max_sessions=max_sessions, session_timeout=session_timeout)
    per_id = dict(env_kwargs or {})
    unknown = set(per_id) - set(env_ids)
    if unknown:
        raise AdapterConfigError(f"`env_kwargs` names ids that are not served: {sorted(unknown)}")
    apps = {
        env_id: create_app(env_id, env_kwargs=per_id.get(env_id), limits=limits)
        for env_id in env_ids
    }
    root = FastAPI(title="rllm-envs (OpenEnv)", version=rllm_envs.__version__)

    @root.get("/rllm/envs", tags=["Environment Info"])
    def envs() -> dict[str, Any]:
        return {"envs": {env_id: f"/{env_id}" for env_id in apps}}

    @root.get("/health", tags=["Environment Info"])
    def health() -> dict[str, Any]:
        return {"status": "healthy"}

    # Starlette does not run a mounted app's lifespan: run its hooks with the root's.
    async def shutdown() -> None:
        for app in apps.values():
            for handler in app.router.on_shutdown:
                await handler()

    root.router.on_shutdown.append(shutdown)
    for env_id, app in apps.items():
        root.mount(f"/{env_id}", app)
    root.add_middleware(_Guard, limits=limits)
    return root


def _h11_protocol(limits: ServerLimits) -> type:
    """Uvicorn's h11 protocol with a header deadline and a per-client connection limit.

    uvicorn times out idle keep-alive connections but not a request whose headers trickle
    in, and has no per-client limit: both are enforced here, where connections start.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    peers: dict[str, set[asyncio.BaseTransport]] = {}
    per_client = limits.connections_per_client

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else "?"
            live = peers.setdefault(host, set())
            live.difference_update([t for t in live if t.is_closing()])
            if len(live) >= per_client:
                log.warning(
                    "refused connection %s: TOO_MANY_CONNECTIONS (%d open)", host, len(live)
                )
                body = json.dumps(
                    {
                        "error": {
                            "code": "TOO_MANY_CONNECTIONS",
                            "message": f"At most {per_client} connections per client.",
                        }
                    }
                ).encode()
                transport.write(
                    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                transport.close()
                return
            live.add(transport)
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

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:
                self._disarm_header_timer()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self._header_timer is None:
                self._arm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            super().connection_lost(exc)

    return GuardedH11Protocol


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(
    env_id: str | Sequence[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 16,
    session_timeout: float | None = 600.0,
    max_message_mb: float = 16.0,
    limits: ServerLimits | None = None,
    log_level: str = "warning",
) -> None:
    """Run the server until SIGINT/SIGTERM (uvicorn), then close every session's env.

    One id is served at the root (``base_url = http://host:port``); several ids are served by
    :func:`create_multi_app` under their own paths (``env_kwargs`` is then ``{id: kwargs}``).
    A host other than loopback needs ``limits.token``: anyone who reaches the port could
    otherwise run episodes (and, for code envs, sandboxed programs).

    Raises:
        AdapterConfigError: For bad limits, or a non-loopback host without a token.
    """
    import uvicorn

    if limits is None:
        limits = ServerLimits(
            max_sessions=max_sessions,
            session_timeout=session_timeout,
            max_message_mb=max_message_mb,
        )
    if not _is_loopback(host) and limits.token is None:
        raise AdapterConfigError(
            f"Serving on {host} (not loopback) needs a token: pass --token (or set "
            "RLLM_SERVE_TOKEN); clients then send `Authorization: Bearer <token>`."
        )
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if not log.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
    if isinstance(env_id, str):
        app = create_app(env_id, env_kwargs=env_kwargs, limits=limits)
    else:
        app = create_multi_app(env_id, env_kwargs=env_kwargs, limits=limits)
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=_h11_protocol(limits),
        ws_max_size=limits.max_bytes,
        h11_max_incomplete_event_size=64 * 1024,
        timeout_graceful_shutdown=10,
    )


# --------------------------------------------------------------------------------- client


class RllmEnvClient(_client.EnvClient):  # type: ignore[name-defined]
    """OpenEnv's WebSocket client for an rllm-envs server (async; ``.sync()`` for sync use).

    ``reset(seed=, options=)`` and ``step(TextAction(text=...))`` return OpenEnv
    ``StepResult`` objects whose ``observation`` is a :class:`TextObservation`.
    """

    def _step_payload(self, action: TextAction) -> dict[str, Any]:
        return {"text": action.text}

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        obs = TextObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return _client_types.StepResult(
            observation=obs, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> TextState:
        return TextState(**payload)


class RemoteTextEnv(gym.Env[str, str]):
    """A ``gymnasium.Env[str, str]`` whose episodes run on an rllm-envs OpenEnv server.

    Steps go over one WebSocket session; the spaces are the served env's. Close it to end
    the session. A pickled copy opens its own session and replays the current episode (same
    seed, options and actions), so for deterministic envs it continues where the original is.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``.
        message_timeout: Seconds to wait for each reply.
        token: The server's bearer token, when it has one.
    """

    metadata = {"render_modes": []}

    def __init__(
        self, base_url: str, *, message_timeout: float = 60.0, token: str | None = None
    ) -> None:
        from rllm_envs.spaces import action_space, observation_space

        self.base_url = base_url
        self.message_timeout = message_timeout
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._client = RllmEnvClient(
            base_url=base_url, message_timeout_s=message_timeout, headers=headers
        ).sync()
        self._client.connect()
        self.observation_space = observation_space()
        self.action_space = action_space()
        self._episode: tuple[int | None, dict[str, Any] | None, list[str]] | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a remote episode."""
        super().reset(seed=seed)
        result = self._client.reset(seed=seed, options=options)
        self._episode = (seed, options, [])
        return result.observation.text, dict(result.observation.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send the model's text; returns the Gymnasium 5-tuple."""
        text = action if isinstance(action, str) else str(action)
        result = self._client.step(TextAction(text=text))
        if self._episode is not None:
            self._episode[2].append(text)
        obs = result.observation
        return obs.text, float(result.reward or 0.0), obs.terminated, obs.truncated, obs.info

    def state(self) -> TextState:
        """The remote session's :class:`TextState`."""
        return self._client.state()

    def close(self) -> None:
        """End the session."""
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()

    def __getstate__(self) -> dict[str, Any]:
        # A session is a live socket: a copy opens its own session and replays the episode.
        episode = self._episode
        if episode is not None:
            episode = (episode[0], episode[1], list(episode[2]))
        return {
            "base_url": self.base_url,
            "timeout": self.message_timeout,
            "token": self.token,
            "episode": episode,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["base_url"], message_timeout=state["timeout"], token=state.get("token")
        )
        if state["episode"] is not None:
            seed, options, actions = state["episode"]
            self.reset(seed=seed, options=options)
            for action in actions:
                self.step(action)


# ------------------------------------------------------------------------ OpenEnv packages


def _slug(env_id: str) -> str:
    return env_id.split("/", 1)[-1].lower()


def openenv_package(env_id: str) -> dict[str, str]:
    """The files of ``env_id``'s OpenEnv package: ``{relative path: text}``.

    ``openenv.yaml`` (the manifest ``openenv validate`` and ``openenv push`` read),
    ``server/app.py`` (the ``app`` it names, and a ``main()``) and a ``Dockerfile`` built from
    the repository root. The packages live in ``deploy/openenv/<id>/``; a test checks that
    they equal what this function writes.
    """
    import rllm_envs

    if env_id not in rllm_envs.list_envs():
        raise AdapterConfigError(f"Expects a registered id, actual: {env_id!r}")
    slug = _slug(env_id)
    family = slug.rsplit("-", 1)[0]
    manifest = f"""\
# OpenEnv manifest of {env_id} (written by rllm_adapters.openenv.openenv_package).
spec_version: 1
name: rllm-{slug}
version: {rllm_envs.__version__}
description: {json.dumps(rllm_envs.list_envs()[env_id])}
type: space
runtime: fastapi
app: server.app:app
port: 8000
validation:
  reward:
    range: [0.0, 1.0]
    oracle_tolerance: 0.0
    floor_margin: 0.1
  resources:
    cpu: 1.0
    memory_mb: 2048
    disk_mb: 2048
    episode_timeout_s: 300.0
  network:
    mode: no-network
  capabilities:
    verifier:
      kind: reward_channel
  types:
    tags: [rllm-envs, {family}]
"""
    app = f'''\
"""OpenEnv entry point of {env_id}: ``app`` for uvicorn, ``main()`` to serve it."""

import sys

from rllm_adapters.openenv import create_app
from rllm_adapters.openenv import main as serve_main

app = create_app("{env_id}")


def main() -> None:
    """Serve {env_id} (``python -m rllm_adapters.serve`` with its options)."""
    serve_main(["{env_id}", *sys.argv[1:]])


if __name__ == "__main__":
    main()
'''
    dockerfile = f"""\
# {env_id} over OpenEnv. Build from the repository root:
#   docker build -f deploy/openenv/{slug}/Dockerfile -t rllm-{slug} .
#   docker run -p 8000:8000 -e RLLM_SERVE_TOKEN=<a long secret> rllm-{slug}
# Off loopback the server needs the token; clients send `Authorization: Bearer <token>`.
# Ids that run programs (Code, SWE) sandbox them with firejail or bubblewrap, which need
# namespaces inside the container (e.g. `docker run --privileged`; see docs/sandbox.md).
FROM python:3.11-slim
# python3: the sandbox's interpreter is /usr/bin/python3 (this image's own is in /usr/local);
# rllm-sandbox: the unprivileged user sandboxed programs run as (the server runs as root).
# The installed package (hidden tests) is under /usr, which the sandbox hides from programs.
RUN apt-get update && apt-get install -y --no-install-recommends firejail bubblewrap g++ \\
    python3 && rm -rf /var/lib/apt/lists/* \\
    && useradd --system --user-group --no-create-home --shell /usr/sbin/nologin rllm-sandbox
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir ".[openenv]"
EXPOSE 8000
CMD ["python", "-m", "rllm_adapters.serve", "{env_id}", "--host", "0.0.0.0", "--port", "8000"]
"""
    return {
        "openenv.yaml": manifest,
        "server/__init__.py": f'"""OpenEnv server of {env_id}."""\n',
        "server/app.py": app,
        "Dockerfile": dockerfile,
    }


def write_openenv_packages(folder: str | os.PathLike[str]) -> list[str]:
    """Write every registered id's OpenEnv package under ``folder/<id>/``; return the folders."""
    import rllm_envs

    root = Path(folder)
    written = []
    for env_id in rllm_envs.list_envs():
        target = root / _slug(env_id)
        for name, text in openenv_package(env_id).items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_text(text, encoding="utf-8")
        written.append(str(target))
    return written


# ------------------------------------------------------------------------------------ CLI


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rllm_adapters.serve ENV_ID [--host] [--port] [--max-sessions] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m rllm_adapters.serve",
        description="Serve an rllm-envs environment over OpenEnv's HTTP/WebSocket protocol.",
    )
    parser.add_argument(
        "env_ids",
        nargs="+",
        help="registered ids, e.g. rllm/Math-v1; several are served under /<id>, 'all' = every id",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--env-kwargs",
        default="{}",
        help="constructor kwargs as JSON (with several ids: {id: kwargs})",
    )
    parser.add_argument("--max-sessions", type=int, default=16)
    parser.add_argument("--session-timeout", type=float, default=600.0, help="idle seconds")
    parser.add_argument(
        "--max-message-mb", type=float, default=16.0, help="WebSocket message and HTTP body limit"
    )
    parser.add_argument("--header-timeout", type=float, default=10.0, help="seconds")
    parser.add_argument("--body-timeout", type=float, default=30.0, help="seconds")
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        default=None,
        help="open connections per client address (default: 2 x max-sessions + 8)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("RLLM_SERVE_TOKEN"),
        help="bearer token clients must send (default: $RLLM_SERVE_TOKEN); needed off loopback",
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as e:
        parser.error(f"--env-kwargs is not JSON: {e}")
    if not isinstance(env_kwargs, dict):
        parser.error("--env-kwargs must be a JSON object")
    import rllm_envs

    ids = list(rllm_envs.list_envs()) if args.env_ids == ["all"] else args.env_ids
    try:
        limits = ServerLimits(
            max_sessions=args.max_sessions,
            session_timeout=args.session_timeout,
            max_message_mb=args.max_message_mb,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            max_connections_per_client=args.max_connections_per_client,
            token=args.token or None,
        )
        if not _is_loopback(args.host) and limits.token is None:
            raise AdapterConfigError(
                f"Serving on {args.host} (not loopback) needs --token (or RLLM_SERVE_TOKEN)."
            )
    except AdapterConfigError as e:
        parser.error(str(e))
    serve(
        ids[0] if len(ids) == 1 else ids,
        host=args.host,
        port=args.port,
        env_kwargs=env_kwargs,
        limits=limits,
        log_level=args.log_level,
    )
