r"""OpenEnv adapter: serve any rllm-envs id over OpenEnv's HTTP/WebSocket protocol, and a client.

Built on ``openenv-core``'s own server primitives (``pip install "rllm-envs[openenv]"``):
:class:`GymTextEnvironment` is an ``openenv`` ``Environment`` around one of our Gymnasium envs,
and :func:`create_app` hands it to ``openenv.core.env_server.HTTPEnvServer``, which gives
each WebSocket session (``/ws``) its own environment: one episode at a time per session, many
sessions at once, up to ``max_sessions``; idle sessions are reaped after ``session_timeout``.
Stateless ``POST /reset`` / ``POST /step`` are OpenEnv's simulation endpoints (a fresh env
per request); real episodes use the WebSocket session, as OpenEnv's clients do.

Serve from the command line (``python -m adapters.serve --help``)::

    python -m adapters.serve rllm/Math-v0 --port 8000 --max-sessions 64 \
        --env-kwargs '{"difficulty": 3}'

and talk to it with OpenEnv's client protocol::

    from adapters.openenv import RllmEnvClient, TextAction

    with RllmEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0)
        print(result.observation.text)
        result = client.step(TextAction(text="\\boxed{42}"))
        print(result.reward, result.done, result.observation.info["is_correct"])

:class:`RemoteTextEnv` wraps that client as a ``gymnasium.Env[str, str]``, so anything that
steps our envs (the rollout loop, vector envs, the conformance kit) can step a remote one.

Resource limits: ``max_sessions`` (an extra session is refused with OpenEnv's
``CAPACITY_REACHED`` error), ``session_timeout`` (idle sessions are closed), ``max_message_mb``
(larger WebSocket frames close the connection), the env's own action and observation length
limits and, for code envs, the sandbox's. On shutdown (SIGINT/SIGTERM) every live session's env
is closed, which stops any sandbox it holds.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
import weakref
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np

from rllm_envs.error import InvalidEnvConfig, require

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
    "serve",
    "main",
]

from pydantic import Field  # noqa: E402  (a dependency of openenv-core, checked above)


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
        env_id: A registered id, e.g. ``"rllm/FrozenLake-v0"``.
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
        if self._state.done:
            raise gym.error.ResetNeeded(
                "No episode is running in this session: send a reset before stepping."
            )
        text = action.text if isinstance(action, TextAction) else str(action)
        obs, reward, terminated, truncated, info = self.env.step(text)
        self._state.step_count += 1
        self._state.done = bool(terminated or truncated)
        return TextObservation(
            text=obs,
            terminated=bool(terminated),
            truncated=bool(truncated),
            done=bool(terminated or truncated),
            reward=float(reward),
            info=jsonable(info),
        )

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


def create_app(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 16,
    session_timeout: float | None = 600.0,
) -> Any:
    """The FastAPI app serving ``env_id`` with OpenEnv's routes (``/ws``, ``/reset``, ...).

    Args:
        env_id: A registered single-agent id.
        env_kwargs: Constructor kwargs of every session's env.
        max_sessions: Concurrent WebSocket sessions; one more is refused (``CAPACITY_REACHED``).
        session_timeout: Seconds of inactivity after which a session is closed (``None``: never).

    Returns:
        The ``fastapi.FastAPI`` app; it also answers ``GET /rllm/sessions`` with the number of
        live sessions and their limit.

    Raises:
        UnknownEnvironment: For an unknown id. InvalidEnvConfig: For bad kwargs or limits.
    """
    import rllm_envs

    if not isinstance(max_sessions, int) or max_sessions < 1:
        raise InvalidEnvConfig(f"Expects `max_sessions` to be an int >= 1, actual: {max_sessions}")
    if session_timeout is not None and session_timeout <= 0:
        raise InvalidEnvConfig(f"Expects `session_timeout` > 0 or None, actual: {session_timeout}")
    rllm_envs.make(env_id, **dict(env_kwargs or {})).close()  # bad ids and kwargs fail here
    http_server = require("openenv.core.env_server.http_server", "openenv")
    factory = partial(GymTextEnvironment, env_id, dict(env_kwargs or {}))
    config = _types.ConcurrencyConfig(
        max_concurrent_envs=max_sessions, session_timeout=session_timeout
    )
    from fastapi import FastAPI

    app = FastAPI(
        title=f"rllm-envs {env_id} (OpenEnv)",
        description=rllm_envs.list_envs().get(env_id, ""),
        version=rllm_envs.__version__,
    )
    server = http_server.HTTPEnvServer(
        factory, TextAction, TextObservation, concurrency_config=config
    )
    server.register_routes(app)

    @app.get("/rllm/sessions", tags=["Environment Info"])
    def sessions() -> dict[str, Any]:
        return {
            "env_id": env_id,
            "active": server.active_sessions,
            "max": max_sessions,
            "live_envs": len(_LIVE),
        }

    app.router.on_shutdown.append(_on_shutdown)
    app.add_middleware(_QuietClose)
    return app


class _QuietClose:
    """ASGI middleware: closing a WebSocket whose client already left is not an error.

    openenv-core's session handler closes the socket in ``finally`` and tolerates only
    ``RuntimeError``; uvicorn reports a vanished client otherwise, which would log a traceback
    for every dropped client.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Any) -> None:
            try:
                await send(message)
            except Exception:
                if message.get("type") != "websocket.close":
                    raise

        await self.app(scope, receive, guarded)


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
) -> Any:
    """One app serving several ids, each under its own path: ``/rllm/Math-v0/ws`` and so on.

    A client's ``base_url`` is then ``http://host:port/rllm/Math-v0``. ``GET /rllm/envs`` lists
    the served ids. Limits apply per id. Each mounted app's start-up and shutdown hooks (the
    idle-session reaper, closing the envs) run with the root app's.

    Args:
        env_ids: Registered single-agent ids.
        env_kwargs: ``{env_id: kwargs}`` for the ids that need them.
        max_sessions: Concurrent sessions per id.
        session_timeout: Idle seconds before a session is closed.
    """
    from fastapi import FastAPI

    import rllm_envs

    per_id = dict(env_kwargs or {})
    unknown = set(per_id) - set(env_ids)
    if unknown:
        raise InvalidEnvConfig(f"`env_kwargs` names ids that are not served: {sorted(unknown)}")
    apps = {
        env_id: create_app(
            env_id,
            env_kwargs=per_id.get(env_id),
            max_sessions=max_sessions,
            session_timeout=session_timeout,
        )
        for env_id in env_ids
    }
    root = FastAPI(title="rllm-envs (OpenEnv)", version=rllm_envs.__version__)

    @root.get("/rllm/envs", tags=["Environment Info"])
    def envs() -> dict[str, Any]:
        return {"envs": {env_id: f"/{env_id}" for env_id in apps}}

    # Starlette does not run a mounted app's lifespan: run its hooks with the root's.
    async def startup() -> None:
        for app in apps.values():
            for handler in app.router.on_startup:
                await handler()

    async def shutdown() -> None:
        for app in apps.values():
            for handler in app.router.on_shutdown:
                await handler()

    root.router.on_startup.append(startup)
    root.router.on_shutdown.append(shutdown)
    for env_id, app in apps.items():
        root.mount(f"/{env_id}", app)
    return root


def serve(
    env_id: str | Sequence[str],
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    env_kwargs: Mapping[str, Any] | None = None,
    max_sessions: int = 16,
    session_timeout: float | None = 600.0,
    max_message_mb: float = 16.0,
    log_level: str = "warning",
) -> None:
    """Run the server until SIGINT/SIGTERM (uvicorn), then close every session's env.

    One id is served at the root (``base_url = http://host:port``); several ids are served by
    :func:`create_multi_app` under their own paths (``env_kwargs`` is then ``{id: kwargs}``).
    """
    import uvicorn

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    if isinstance(env_id, str):
        app = create_app(
            env_id,
            env_kwargs=env_kwargs,
            max_sessions=max_sessions,
            session_timeout=session_timeout,
        )
    else:
        app = create_multi_app(
            env_id,
            env_kwargs=env_kwargs,
            max_sessions=max_sessions,
            session_timeout=session_timeout,
        )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        ws_max_size=int(max_message_mb * 1024 * 1024),
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
    """

    metadata = {"render_modes": []}

    def __init__(self, base_url: str, *, message_timeout: float = 60.0) -> None:
        from rllm_envs.spaces import action_space, observation_space

        self.base_url = base_url
        self.message_timeout = message_timeout
        self._client = RllmEnvClient(base_url=base_url, message_timeout_s=message_timeout).sync()
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
        return {"base_url": self.base_url, "timeout": self.message_timeout, "episode": episode}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["base_url"], message_timeout=state["timeout"])  # type: ignore[misc]
        if state["episode"] is not None:
            seed, options, actions = state["episode"]
            self.reset(seed=seed, options=options)
            for action in actions:
                self.step(action)


# ------------------------------------------------------------------------------------ CLI


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m adapters.serve ENV_ID [--host] [--port] [--max-sessions] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m adapters.serve",
        description="Serve an rllm-envs environment over OpenEnv's HTTP/WebSocket protocol.",
    )
    parser.add_argument(
        "env_ids",
        nargs="+",
        help="registered ids, e.g. rllm/Math-v0; several are served under /<id>, 'all' = every id",
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
    parser.add_argument("--max-message-mb", type=float, default=16.0)
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
    serve(
        ids[0] if len(ids) == 1 else ids,
        host=args.host,
        port=args.port,
        env_kwargs=env_kwargs,
        max_sessions=args.max_sessions,
        session_timeout=args.session_timeout,
        max_message_mb=args.max_message_mb,
        log_level=args.log_level,
    )
