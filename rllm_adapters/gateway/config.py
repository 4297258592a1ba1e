"""The gateway's settings: one validated dataclass, built by the CLI or by code."""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rllm_adapters.error import AdapterConfigError

__all__ = ["GatewayConfig", "is_loopback"]

#: What a session id may be made of (it is part of a URL path and a database row).
SESSION_ID_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")  # whole id: fullmatch
#: Sandbox backends that run code without isolation (refused for a gateway's scorers).
_UNISOLATED_BACKENDS = frozenset({"plain", "none", "subprocess"})


def is_loopback(host: str) -> bool:
    """Whether ``host`` is a loopback address or ``localhost``."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass
class GatewayConfig:
    """How the gateway listens, which engines it uses, how it records and what it refuses.

    Attributes:
        host: Address to bind. Anything but loopback needs ``api_keys`` and ``admin_key``.
        port: Port to bind (0 picks a free one).
        engines: Base URLs (``http://host:port/v1``) of running OpenAI-compatible engines.
        engine_weights: A label of the weights ``engines`` serve (a checkpoint's step, say):
            greedy scored sessions are held to one set of weights, and the gateway cannot see
            what an engine it did not launch serves. The same label after a restart is the
            same weights; without one, each start of the gateway is new weights.
        model: A checkpoint to serve: a Hugging Face folder, a trainer ``output_dir`` (its
            ``final_model`` or its newest checkpoint), or a model name (``"tiny"``, ...).
            The gateway launches ``num_engines`` vLLM servers on it.
        served_model_name: The model name clients send (default: the folder's name or the
            model name).
        num_engines: vLLM servers to launch for ``model``.
        engine_args: Extra command-line arguments for each launched vLLM server.
        engine_env: Extra environment variables for each launched vLLM server.
        tokenizer: Tokenizer folder used when an engine returns no token ids, to template
            chat, and to grade a reply whose tool calls the engine parsed out as the model
            wrote it (the served checkpoint's own tokenizer by default).
        store: Episode store file (:class:`rllm_agents.store.EpisodeStore`) that recorded
            sessions go to; ``None`` refuses session calls.
        run: Run name given to stored episodes (a session may set its own).
        api_keys: ``{principal: token}``; when set, every API call needs
            ``Authorization: Bearer <token>``; session ids are per principal, a run belongs
            to the principal that opened it, and a session naming no run goes to its
            principal's own run ``"<run>:<principal>"`` (see
            :class:`~rllm_adapters.gateway.sessions.SessionRegistry`).
        admin_key: Token for ``/admin/*`` (weight swaps); loopback without keys needs none.
        max_body_bytes: Largest request body accepted (413 above).
        max_body_values: Most JSON values (outside strings) a body over 64 kB may hold (413
            above, before it is parsed: parsing runs on the event loop); raise it for
            token-id prompts longer than 200,000 ids.
        body_timeout_s: Seconds a client may take to send its whole request body (408 after).
        request_timeout_s: Longest a call may take, engine time and slow readers included.
        max_queue: Calls waiting for an engine at once before new ones get 503.
        max_in_flight_per_engine: Calls sent to one engine at once (the rest wait in a queue).
        retries: Attempts on another engine after a connection error or a 5xx, before any
            byte of the reply reached the client.
        rate_limit_rps: Requests per second each principal may make (``None``: no limit).
        rate_limit_burst: Requests a principal may make at once above the rate.
        session_idle_s: A session with no call for this long is stored without a reward
            (``None``: sessions wait for their reward until shutdown).
        max_sessions: Open sessions at once (new ones get 503 above).
        max_in_flight_per_client: Calls one client (principal) may have in flight at once
            (429 above; ``None``: no such limit), so that one client's unread streams cannot
            hold every engine slot until ``request_timeout_s``.
        max_sessions_per_client: Open sessions one client (principal) may hold at once (429
            above; ``None``: only ``max_sessions``). Well below ``max_sessions`` by default,
            so that no one client can take every session.
        max_calls_per_session: Calls one session may record (409 above): a session's record
            stays bounded in memory until its reward.
        max_session_bytes: Bytes one session may record over all its calls: its requests
            and its recorded ids and logprobs (``sessions.ID_BYTES`` each) (409 above).
        max_bytes_per_client: Bytes one client's open sessions may hold in all, counted as
            for ``max_session_bytes`` (429 ``client_full`` above; ``None``: no such bound).
            Applies to clients with keys (``api_keys``); a gateway without keys has one
            local client, bounded by ``max_session_bytes`` per session.
        scorers: ``{env id: gym.make kwargs}`` of the envs a reward may be scored by
            (``{"env": id}``). Fixed by the operator at start: a client names one of these and a
            task of its source (``seed`` or ``index``), never kwargs, options, task records or
            an answer. Empty (the default): env-scored rewards are refused.
        scoring_threads: Threads that run scorers (their own pool: slow scorings never hold up
            storing or other routes). Keep it above ``max_scoring_per_client``: one client's
            slow scorings then leave threads for the others'.
        max_scoring_per_client: Scorings (and task lookups) one client may have running or
            queued at once (429 above).
        header_timeout_s: Seconds a connection may take to send a request's head (from
            connecting, or from the first byte of the next request); it is closed after.
        shutdown_grace_s: Seconds calls in flight get to finish at shutdown (after every
            session with no call in flight is stored); then they are cut, what they generated
            is recorded (marked aborted) and their sessions are stored. Bounded apart from
            ``request_timeout_s``, so no client's slow stream holds a shutdown for long.
        swap_drain_s: Seconds a weight swap waits for an engine's calls in flight to finish;
            then a stream whose client is not reading it (the gateway waits to send) is cut
            as a timed-out reader's is. Calls still generating finish: a client holding a
            stream it did not read held every new call back until its request timed out
            (s44 att44h), and cutting every stream cut honest ones (att44j).
        max_connections: Open connections at once; a new one above it is answered 503 and
            closed before its request is read (``None``: what the file-descriptor limit
            allows, less a reserve).
        template_chat: In sessions, template chat calls with the served tokenizer and append
            each turn to the session's token sequence (:mod:`rllm_adapters.gateway.chat`), so a
            multi-turn chat session is one token-exact sequence; off, or with no tokenizer,
            chat calls go to the engine's chat endpoint.
    """

    host: str = "127.0.0.1"
    port: int = 8400
    engines: list[str] = field(default_factory=list)
    engine_weights: str | None = None
    model: str | None = None
    served_model_name: str | None = None
    num_engines: int = 1
    engine_args: list[str] = field(default_factory=list)
    engine_env: dict[str, str] = field(default_factory=dict)
    tokenizer: str | None = None
    store: str | None = None
    run: str | None = None
    api_keys: dict[str, str] = field(default_factory=dict)
    admin_key: str | None = None
    max_body_bytes: int = 4 * 2**20
    max_body_values: int = 200_000
    body_timeout_s: float = 30.0
    request_timeout_s: float = 600.0
    max_queue: int = 4096
    max_in_flight_per_engine: int = 256
    retries: int = 2
    rate_limit_rps: float | None = None
    rate_limit_burst: int = 64
    session_idle_s: float | None = None
    max_sessions: int = 100_000
    max_sessions_per_client: int | None = 1024
    max_in_flight_per_client: int | None = None
    max_calls_per_session: int = 1024
    max_session_bytes: int = 64 * 2**20
    max_bytes_per_client: int | None = 2**30
    scorers: dict[str, dict[str, Any]] = field(default_factory=dict)
    scoring_threads: int = 4
    max_scoring_per_client: int = 2
    header_timeout_s: float = 10.0
    shutdown_grace_s: float = 10.0
    swap_drain_s: float = 60.0
    max_connections: int | None = None
    template_chat: bool = True

    def __post_init__(self) -> None:
        if not self.engines and self.model is None:
            raise AdapterConfigError(
                "The gateway needs engines: pass `model=` (a checkpoint folder, trainer run or "
                "model name to serve) or `engines=[...]` (base URLs of running servers)."
            )
        for url in self.engines:
            if not isinstance(url, str) or not url.startswith(("http://", "https://")):
                raise AdapterConfigError(
                    f"Expects each engine to be an http(s) base URL such as "
                    f"'http://127.0.0.1:8000/v1', actual: {url!r}."
                )
        if self.num_engines < 0 or (self.model is not None and self.num_engines < 1):
            raise AdapterConfigError(
                f"Expects `num_engines` >= 1 with `model`, actual: {self.num_engines!r}."
            )
        if self.engine_weights is not None and not (
            isinstance(self.engine_weights, str) and 0 < len(self.engine_weights) <= 256
        ):
            raise AdapterConfigError(
                f"Expects `engine_weights` a label of 1-256 characters, actual: "
                f"{self.engine_weights!r}."
            )
        if self.scorers and self.model is not None and self.engines:
            raise AdapterConfigError(
                "A gateway with scorers serves either the engines it launches (`model`) or "
                "running ones (`engines`), not both: greedy scores are held to one set of "
                "weights, and it cannot tell that a running engine serves the weights it "
                "launched (an honest client's sessions on the other engine were refused)."
            )
        if not 0 <= self.port < 65536:
            raise AdapterConfigError(f"Expects `port` in [0, 65535], actual: {self.port!r}.")
        for name, token in self.api_keys.items():
            if not name or not isinstance(token, str) or len(token) < 16:
                raise AdapterConfigError(
                    f"API key of principal {name!r} is too short: use 16+ characters "
                    "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(24))'`)."
                )
        if len(set(self.api_keys.values())) != len(self.api_keys):
            raise AdapterConfigError("Two principals share one API key; give each its own.")
        if self.admin_key is not None and len(self.admin_key) < 16:
            raise AdapterConfigError("`admin_key` is too short: use 16+ characters.")
        if not is_loopback(self.host) and (not self.api_keys or self.admin_key is None):
            raise AdapterConfigError(
                f"Binding {self.host!r} exposes the gateway beyond this machine: set "
                "`api_keys` (--api-key NAME=TOKEN) and `admin_key` (--admin-key TOKEN), or "
                "bind 127.0.0.1."
            )
        positive = {
            "max_body_bytes": self.max_body_bytes,
            "max_body_values": self.max_body_values,
            "body_timeout_s": self.body_timeout_s,
            "request_timeout_s": self.request_timeout_s,
            "max_queue": self.max_queue,
            "max_in_flight_per_engine": self.max_in_flight_per_engine,
            "rate_limit_burst": self.rate_limit_burst,
            "max_sessions": self.max_sessions,
            "max_calls_per_session": self.max_calls_per_session,
            "max_session_bytes": self.max_session_bytes,
            "scoring_threads": self.scoring_threads,
            "max_scoring_per_client": self.max_scoring_per_client,
            "header_timeout_s": self.header_timeout_s,
            "shutdown_grace_s": self.shutdown_grace_s,
            "swap_drain_s": self.swap_drain_s,
        }
        for name, value in positive.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise AdapterConfigError(f"Expects `{name}` > 0, actual: {value!r}.")
        if self.retries < 0:
            raise AdapterConfigError(f"Expects `retries` >= 0, actual: {self.retries!r}.")
        optional: dict[str, float | None] = {
            "rate_limit_rps": self.rate_limit_rps,
            "session_idle_s": self.session_idle_s,
            "max_sessions_per_client": self.max_sessions_per_client,
            "max_in_flight_per_client": self.max_in_flight_per_client,
            "max_connections": self.max_connections,
            "max_bytes_per_client": self.max_bytes_per_client,
        }
        for name, bound in optional.items():
            if bound is not None and bound <= 0:
                raise AdapterConfigError(f"Expects `{name}` > 0 or None, actual: {bound!r}.")
        self._check_scorers()

    def _check_scorers(self) -> None:
        if not isinstance(self.scorers, Mapping):
            raise AdapterConfigError(
                f"Expects `scorers` as {{env id: kwargs}}, actual: {self.scorers!r}."
            )
        for env_id, kwargs in self.scorers.items():
            if not isinstance(env_id, str) or not isinstance(kwargs, Mapping):
                raise AdapterConfigError(
                    f"Expects each scorer as an env id and a kwargs object, actual: "
                    f"{env_id!r}: {kwargs!r}."
                )
            try:
                json.dumps(kwargs)
            except (TypeError, ValueError) as e:
                raise AdapterConfigError(
                    f"The kwargs of scorer {env_id!r} must be JSON values: {e}"
                ) from e
            import gymnasium as gym

            import rllm_envs  # noqa: F401  (registers the ids)

            if env_id not in gym.registry:
                # A multi-agent id (rllm/TicTacToe-v0) is no gymnasium env: accepted, every
                # open on it was a 400 (s24 att29v F2).
                raise AdapterConfigError(
                    f"Scorer {env_id!r} is not a registered gymnasium env id: a scorer plays a "
                    "session as a single-agent episode (see rllm_envs.list_envs())."
                )
            backend = kwargs.get("sandbox_backend")
            if isinstance(backend, str) and backend in _UNISOLATED_BACKENDS:
                raise AdapterConfigError(
                    f"Scorer {env_id!r} would run client-chosen model output with "
                    f"sandbox_backend={backend!r}, which does not isolate it: use an isolating "
                    "backend (firejail, bubblewrap) or leave the env's default."
                )

    @property
    def auth_required(self) -> bool:
        """Whether API calls need a token."""
        return bool(self.api_keys)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GatewayConfig:
        """Build from a plain mapping (unknown keys raise with the valid ones listed)."""
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise AdapterConfigError(
                f"Unknown gateway setting(s) {unknown}; valid ones: {sorted(known)}."
            )
        return cls(**dict(data))
