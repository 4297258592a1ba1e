"""Run the gateway: launch engines for a checkpoint, serve HTTP, shut down without losing data.

``python -m rllm_adapters.gateway --model runs/grpo-1 --store runs/episodes.db`` serves a trainer's
run (or a model folder or name) through vLLM's OpenAI server and records sessions;
``--engine http://host:port/v1`` (repeatable) puts the gateway in front of running servers
instead. On SIGINT/SIGTERM the gateway first stores every open session with calls and none
in flight (``finish="truncated"``, no reward), stops accepting connections, gives calls in
flight ``--shutdown-grace`` seconds (10 by default) to finish, cuts the rest (what they
generated is recorded, marked aborted), stores their sessions, and only then stops the
engines it launched.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from rllm_adapters.gateway.app import Gateway
from rllm_adapters.gateway.config import GatewayConfig
from rllm_adapters.gateway.engines import Engine, VLLMServer, folder_weights_id
from rllm_envs.error import require

__all__ = ["GatewayServer", "launch_engines", "main", "parse_args"]

_log = logging.getLogger(__name__)


def launch_engines(config: GatewayConfig) -> tuple[list[Engine], str, str]:
    """Start ``config.num_engines`` vLLM servers on ``config.model``; wait until they answer.

    Returns:
        The engines (with their servers), the served folder and the served model name.
    """
    from rllm_adapters.gateway.checkpoint import resolve_served_model

    assert config.model is not None
    folder, default_name = resolve_served_model(config.model)
    name = config.served_model_name or default_name
    servers = [
        VLLMServer(folder, name, args=config.engine_args, env=config.engine_env)
        for _ in range(config.num_engines)
    ]
    try:
        for server in servers:
            server.start()
        for server in servers:
            server.wait_ready()
    except BaseException:
        for server in servers:
            server.stop()
        raise
    weights_id = folder_weights_id(folder)  # one read of the folder for every engine
    engines = [
        Engine(url=s.base_url, name=f"engine-{i}", server=s, weights=folder, weights_id=weights_id)
        for i, s in enumerate(servers)
    ]
    return engines, folder, name


class GatewayServer:
    """The gateway on uvicorn, in this thread (:meth:`run`) or a background one (:meth:`start`).

    Args:
        config: The settings.
        engines: Engines to use (otherwise launched for ``config.model`` and/or built from
            ``config.engines``).
        store: An episode store to write to (otherwise opened from ``config.store``).
    """

    def __init__(
        self, config: GatewayConfig, *, engines: list[Engine] | None = None, store: Any = None
    ) -> None:
        self.config = config
        self.launched: list[Engine] = []
        served = config.served_model_name
        tokenizer_folder = config.tokenizer
        if engines is None:
            engines = []
            if config.model is not None:
                self.launched, folder, served = launch_engines(config)
                engines.extend(self.launched)
                tokenizer_folder = tokenizer_folder or folder
            offset = len(engines)
            engines.extend(
                Engine(url=u.rstrip("/"), name=f"engine-{offset + i}")
                for i, u in enumerate(config.engines)
            )
        if tokenizer_folder != config.tokenizer:
            config.tokenizer = tokenizer_folder
        try:
            self.gateway = Gateway(config, engines=engines, store=store, served_model_name=served)
        except BaseException:
            self.close_engines()  # the engines launched above must not outlive a failed start
            raise
        self._server: Any = None
        self._thread: threading.Thread | None = None

    @property
    def app(self) -> Any:
        """The ASGI app."""
        return self.gateway.app

    @property
    def port(self) -> int:
        """The port it listens on (known once started)."""
        server = self._server
        if server is not None and server.servers:
            return int(server.servers[0].sockets[0].getsockname()[1])
        return self.config.port

    @property
    def url(self) -> str:
        """``http://host:port``."""
        return f"http://{self.config.host}:{self.port}"

    def _uvicorn(self) -> Any:
        uvicorn = require("uvicorn", "gateway", feature="the gateway")
        from rllm_adapters.gateway.connections import (
            default_max_connections,
            guarded_protocol,
            raise_fd_limit,
        )

        base: type
        try:
            from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

            base = HttpToolsProtocol
        except ImportError:  # uvicorn's "auto" choice without httptools
            from uvicorn.protocols.http.h11_impl import H11Protocol

            base = H11Protocol
        fd_limit = raise_fd_limit()
        cap = self.config.max_connections or default_max_connections(fd_limit)
        config = uvicorn.Config(
            self.app,
            host=self.config.host,
            port=self.config.port,
            http=guarded_protocol(
                base, self.config.header_timeout_s, cap, self.config.body_timeout_s
            ),
            log_level="warning",
            # Calls in flight get this long to finish at shutdown before being cut (their
            # partial generations are recorded); sessions with none were stored before.
            timeout_graceful_shutdown=max(
                1, math.ceil(min(self.config.shutdown_grace_s, self.config.request_timeout_s))
            ),
            timeout_keep_alive=30,
            h11_max_incomplete_event_size=64 * 1024,
        )
        # uvicorn's own line per bad connection, rate-limited like the env server's.
        from rllm_adapters.openenv.limits import limit_uvicorn_log

        limit_uvicorn_log()
        server = uvicorn.Server(config)
        shutdown = server.shutdown
        gateway = self.gateway

        async def store_then_shutdown(sockets: Any = None) -> None:
            # First every open session with no call in flight is stored, so one client's slow
            # stream (held up to the grace period) puts no other client's sessions at risk
            # of a supervisor's kill.
            try:
                stored = await gateway.sessions.finish_all(idle_only=True)
            except Exception:
                _log.exception("storing open sessions at shutdown failed")
            else:
                if stored:
                    _log.info("stored %d open sessions at shutdown", stored)
            await shutdown(sockets=sockets)

        server.shutdown = store_then_shutdown
        return server

    def run(self) -> None:
        """Serve until SIGINT/SIGTERM, then shut down cleanly (see the module docstring)."""
        server = self._server = self._uvicorn()
        # uvicorn re-raises a caught SIGTERM once it has shut down, which would kill this
        # process before the engines it launched are stopped: take the signals here instead.
        server.capture_signals = contextlib.nullcontext
        previous = {
            sig: signal.signal(sig, server.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            # uvicorn's own runner: its event loop choice (uvloop where installed) rather than
            # asyncio's default, which costs the relay more CPU per streamed token.
            server.run()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            self.close_engines()

    def start(self, timeout: float = 60.0) -> GatewayServer:
        """Serve from a background thread; return once it accepts connections."""
        self._server = self._uvicorn()
        # Signals belong to the main thread: a background server is stopped with stop().
        self._server.install_signal_handlers = lambda: None
        self._thread = threading.Thread(target=self._server.run, name="rllm-gateway", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._server.should_exit = True
                self.close_engines()  # launched for this gateway: not left running
                raise RuntimeError("The gateway did not start.")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 120.0) -> None:
        """Shut down as on SIGTERM (calls in flight finish, open sessions are stored)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        self.close_engines()

    def close_engines(self) -> None:
        """Stop the engines this server launched."""
        for engine in self.launched:
            if engine.server is not None:
                engine.server.stop()

    def __enter__(self) -> GatewayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _keys(values: Sequence[str]) -> dict[str, str]:
    keys: dict[str, str] = {}
    for value in values:
        for item in value.split(","):
            if not item.strip():
                continue
            name, sep, token = item.partition("=")
            if not sep:
                raise SystemExit(f"--api-key expects NAME=TOKEN, got {item!r}")
            keys[name.strip()] = token.strip()
    return keys


def parse_args(argv: Sequence[str] | None = None) -> GatewayConfig:
    """The CLI's arguments as a :class:`GatewayConfig`."""
    parser = argparse.ArgumentParser(
        prog="python -m rllm_adapters.gateway",
        description="OpenAI-compatible gateway that serves checkpoints and records sessions.",
    )
    parser.add_argument(
        "--model",
        help="checkpoint to serve: HF folder, trainer output_dir or checkpoint, or model name",
    )
    parser.add_argument(
        "--engine", action="append", default=[], help="base URL of a running engine (repeat)"
    )
    parser.add_argument(
        "--engine-weights",
        help="label of the weights the --engine servers serve (e.g. a checkpoint's step; "
        "without one each start counts as new weights for greedy scoring)",
    )
    parser.add_argument("--num-engines", type=int, default=1)
    parser.add_argument("--served-model-name")
    parser.add_argument(
        "--engine-arg",
        action="append",
        default=[],
        help="extra vLLM server argument, e.g. --engine-arg=--max-model-len=4096 (repeat)",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8400)
    parser.add_argument("--store", help="episode store (SQLite) that sessions are recorded in")
    parser.add_argument(
        "--run", help="run name of recorded episodes (with --api-key: RUN:CLIENT per client)"
    )
    parser.add_argument(
        "--api-key",
        action="append",
        default=[],
        help="NAME=TOKEN a client authenticates with (repeat; or $RLLM_GATEWAY_API_KEYS)",
    )
    parser.add_argument("--admin-key", help="token for /admin (or $RLLM_GATEWAY_ADMIN_KEY)")
    parser.add_argument("--tokenizer", help="tokenizer for engines that return no token ids")
    parser.add_argument("--max-body-bytes", type=int, default=4 * 2**20)
    parser.add_argument(
        "--max-body-values",
        type=int,
        default=200_000,
        help="JSON values a body may hold (raise for token-id prompts over 200,000 ids)",
    )
    parser.add_argument("--request-timeout", type=float, default=600.0)
    parser.add_argument("--rate-limit", type=float, help="requests/s per client")
    parser.add_argument("--session-idle", type=float, help="store sessions idle this long (s)")
    parser.add_argument(
        "--max-client-bytes",
        type=int,
        default=2**30,
        help="bytes one client's open sessions may record in all (0: no bound)",
    )
    parser.add_argument(
        "--max-sessions-per-client",
        type=int,
        default=1024,
        help="open sessions one client may hold at once (default 1024)",
    )
    parser.add_argument(
        "--max-in-flight-per-client", type=int, help="calls one client may have in flight at once"
    )
    parser.add_argument(
        "--max-sessions", type=int, default=100_000, help="open sessions at once (all clients)"
    )
    parser.add_argument(
        "--scorer",
        action="append",
        default=[],
        help="env a reward may be scored by: ENV_ID or ENV_ID=JSON_KWARGS, e.g. "
        "--scorer rllm/Math-v1 (repeat; none: env-scored rewards are refused)",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=float,
        default=10.0,
        help="seconds calls in flight get to finish at shutdown (then cut and recorded)",
    )
    parser.add_argument(
        "--swap-drain",
        type=float,
        default=60.0,
        help="seconds a weight swap waits for an engine's calls (then its open streams are cut)",
    )
    parser.add_argument(
        "--header-timeout", type=float, default=10.0, help="seconds to send a request head"
    )
    parser.add_argument(
        "--max-connections", type=int, help="open connections at once (default: from the fd limit)"
    )
    args = parser.parse_args(argv)
    keys = _keys([*args.api_key, os.environ.get("RLLM_GATEWAY_API_KEYS", "")])
    return GatewayConfig(
        host=args.host,
        port=args.port,
        engines=list(args.engine),
        engine_weights=args.engine_weights,
        model=args.model,
        served_model_name=args.served_model_name,
        num_engines=args.num_engines,
        engine_args=list(args.engine_arg),
        tokenizer=args.tokenizer,
        store=args.store,
        run=args.run,
        api_keys=keys,
        admin_key=args.admin_key or os.environ.get("RLLM_GATEWAY_ADMIN_KEY") or None,
        max_body_bytes=args.max_body_bytes,
        max_body_values=args.max_body_values,
        request_timeout_s=args.request_timeout,
        rate_limit_rps=args.rate_limit,
        session_idle_s=args.session_idle,
        max_sessions_per_client=args.max_sessions_per_client,
        max_bytes_per_client=args.max_client_bytes or None,
        max_in_flight_per_client=args.max_in_flight_per_client,
        max_sessions=args.max_sessions,
        scorers=_scorers(args.scorer),
        header_timeout_s=args.header_timeout,
        shutdown_grace_s=args.shutdown_grace,
        swap_drain_s=args.swap_drain,
        max_connections=args.max_connections,
    )


def _scorers(values: Sequence[str]) -> dict[str, dict[str, Any]]:
    scorers: dict[str, dict[str, Any]] = {}
    for value in values:
        env_id, sep, kwargs = value.partition("=")
        try:
            parsed = json.loads(kwargs) if sep else {}
        except json.JSONDecodeError as e:
            raise SystemExit(
                f"--scorer expects ENV_ID or ENV_ID=JSON_OBJECT, got {value!r}: {e}"
            ) from None
        if not isinstance(parsed, dict):
            raise SystemExit(f"--scorer expects ENV_ID=JSON_OBJECT, got {value!r}")
        scorers[env_id.strip()] = parsed
    return scorers


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m rllm_adapters.gateway``."""
    config = parse_args(argv)
    server = GatewayServer(config)
    print(
        f"rllm gateway on http://{config.host}:{config.port}/v1 "
        f"({len(server.gateway.pool.engines)} engine(s))",
        file=sys.stderr,
        flush=True,
    )
    server.run()
    return 0
