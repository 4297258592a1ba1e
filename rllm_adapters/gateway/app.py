"""The gateway's HTTP server: OpenAI-compatible routes, sessions, health, metrics and admin.

Routes (``{sid}`` is a session id; the same calls take an ``X-Session-Id`` header instead):

* ``POST /v1/chat/completions``, ``POST /v1/completions`` (``stream`` included), ``GET
  /v1/models`` -- and the same under ``/sessions/{sid}/v1/`` to record the call.
* ``POST /sessions`` -- open a session (optional ``session_id``, ``env_id``, ``task_id``,
  ``seed``, ``index``, ``group``, ``sample``, ``run``, ``metadata``); answers its id,
  ``base_url`` and ``run``. Session ids are per client and a run belongs to the client that
  opened it (:class:`~rllm_adapters.gateway.sessions.SessionRegistry`).
* ``GET /sessions/{sid}`` -- its calls so far; ``POST /sessions/{sid}/reward`` -- end it with
  ``{"reward": x, "info": {...}}`` (the client's number: ``info["reward_source"] = "client"``,
  grade fields kept under ``info["client_grade"]``) or with one of the operator's scorers
  ``{"env": "rllm/Math-v1"}`` on the task the session opened with (its ``env_id`` and
  ``seed``/``index``; the last reply is the answer, the kwargs are
  ``GatewayConfig.scorers``') and store it.
* ``GET /health`` (no token needed), ``GET /metrics`` (requests, tokens/s, queue, per engine
  for the admin token; a client's own counts for a client token).
* ``POST /admin/weights`` ``{"path": folder}`` -- hot-swap the launched engines' weights;
  ``{"reloaded": label}`` -- the external engines reloaded theirs.

Calls without a session are relayed byte for byte (the reply is parsed only to count tokens).
Calls in a session ask the engine for what recording needs (``return_token_ids``, logprobs)
and the reply is given back without what the client did not ask for.
A session call may not send fields that reshape the sampled distribution (``logit_bias``,
penalties, guided decoding, sampling settings other than the policy's own, ``seed``): its
logprobs must be the policy's (``_SESSION_FIELDS``, ``POLICY_SAMPLING``). Every generation a
session asks for is recorded, a stream the client closes half-way included (marked aborted).

Every refusal is an OpenAI-style JSON error (``{"error": {"message", "type", "code"}}``) with
its status: 400 malformed JSON or fields, 401 missing or wrong token, 403 another client's
run, 404 no such session of this client, 408 a body sent too slowly, 409 an ended session or
a run no gateway client recorded, 413 a body over the limit,
429 over the rate limit, 503 queue full or no engine. A client that reads its stream too
slowly is cut off at ``request_timeout_s``; each connection is its own task, so none of these
holds up other clients.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import copy
import dataclasses
import functools
import hashlib
import hmac
import json
import logging
import math
import re
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any

from rllm_adapters.gateway.chat import (
    message_text,
    parse_tool_calls,
    plain_message,
    tool_call_key,
)
from rllm_adapters.gateway.config import SESSION_ID_RE, GatewayConfig
from rllm_adapters.gateway.engines import Engine, EnginePool, QueueFull, ServedWeights
from rllm_adapters.gateway.sessions import (
    GRADE_INFO,
    MAX_ID_CHARS,
    POLICY_SAMPLING,
    RESERVED_STEP_INFO,
    SAMPLING_RECORD,
    Call,
    Session,
    SessionError,
    SessionRegistry,
    check_json_field,
    held_bytes,
    score_with_env,
    task_of,
)
from rllm_adapters.openenv.limits import JSONTooComplex, loads_bounded
from rllm_adapters.private_seeds import SeedMask
from rllm_agents.store import DamagedStore
from rllm_envs.error import require
from rllm_envs.text import THINK_CLOSE, THINK_OPEN, split_reply

__all__ = ["Gateway", "GatewayError"]

_log = logging.getLogger(__name__)

_RETRY_STATUS = frozenset({500, 502, 503, 504})
#: The largest reward a session takes (in size): any task's reward fits, and one huge reward
#: cannot silence or swamp the advantages of the group it joins.
MAX_ABS_REWARD = 1e6
#: Response headers that must not be copied from the engine's reply.
_HOP_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "keep-alive", "content-encoding"}
)


#: When streams were cut because their client read too slowly (read by ``/metrics``).
_SLOW_READERS: collections.deque[float] = collections.deque(maxlen=1024)


class GatewayError(Exception):
    """A refusal with an HTTP status and an OpenAI-style error body."""

    def __init__(self, status: int, message: str, code: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.headers = headers or {}


class _Unscored(GatewayError):
    """A scoring refusal that knows the session's task (its episode is stored under it)."""

    def __init__(self, task_id: Any, status: int, message: str, code: str) -> None:
        super().__init__(status, message, code)
        self.task_id = task_id


class _ThrottledLog:
    """Log each kind of event once per ``interval_s`` (its traceback too); count the rest.

    A line logged after a quiet interval says how many of its kind were left out, so a client
    that makes the same error fail in a loop costs one log line per interval, not one each.
    """

    def __init__(self, interval_s: float = 60.0, level: int = logging.WARNING) -> None:
        self.interval_s = interval_s
        self.level = level
        self._last: dict[Any, float] = {}
        self._dropped: collections.Counter[Any] = collections.Counter()

    def log(self, kind: Any, message: str, *args: Any, exc_info: bool = False) -> bool:
        """Log ``message % args`` unless ``kind`` was logged within the interval."""
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_s:
            self._dropped[kind] += 1
            return False
        if len(self._last) > 4096:  # kinds are few; a bound all the same
            self._last.clear()
        self._last[kind] = now
        dropped = self._dropped.pop(kind, 0)
        if dropped:
            message += f" (and {dropped} more like it in the last {self.interval_s:g} s)"
        _log.log(self.level, message, *args, exc_info=exc_info)
        return True


class _TokenBucket:
    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = float(burst)
        self.tokens = float(burst)
        self.at = time.monotonic()

    def take(self) -> float:
        """0 when a request may go now, else the seconds until it may."""
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / self.rate


class _Rate:
    """Tokens generated over a sliding window, for ``tokens_per_s``."""

    def __init__(self, window_s: float = 10.0) -> None:
        self.window_s = window_s
        self.events: collections.deque[tuple[float, int]] = collections.deque()

    def add(self, n: int) -> None:
        self.events.append((time.monotonic(), n))

    def per_second(self) -> float:
        now = time.monotonic()
        while self.events and now - self.events[0][0] > self.window_s:
            self.events.popleft()
        return sum(n for _, n in self.events) / self.window_s


class Gateway:
    """The gateway: engines, sessions and the Starlette app that serves them.

    Args:
        config: Its settings.
        engines: The engines (built from ``config.engines`` when not given; engines launched
            for ``config.model`` are passed in by :func:`rllm_adapters.gateway.server.serve`).
        store: An episode store (opened from ``config.store`` when not given).
        tokenizer: A tokenizer for engines that return no token ids (loaded from
            ``config.tokenizer`` on first need when not given).
        served_model_name: The model name reported for stored episodes.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        engines: list[Engine] | None = None,
        store: Any = None,
        tokenizer: Any = None,
        served_model_name: str | None = None,
    ) -> None:
        self.config = config
        if engines is None:
            engines = [
                Engine(url=u.rstrip("/"), name=f"engine-{i}") for i, u in enumerate(config.engines)
            ]
        self.pool = EnginePool(
            engines,
            max_in_flight=config.max_in_flight_per_engine,
            max_queue=config.max_queue,
            external_weights=config.engine_weights,
        )
        if store is None and config.store is not None:
            from rllm_agents.store import EpisodeStore

            store = EpisodeStore(config.store)
        self.store = store
        self.model = served_model_name or config.served_model_name
        self.sessions = SessionRegistry(
            store,
            run=config.run,
            max_sessions=config.max_sessions,
            model=self.model,
            max_per_owner=config.max_sessions_per_client,
            clients=list(config.api_keys) if config.auth_required else None,
            max_calls=config.max_calls_per_session,
            max_bytes=config.max_session_bytes,
            # Clients with keys only: a local trainer's own sessions are bounded one by one.
            max_bytes_per_client=config.max_bytes_per_client if config.auth_required else None,
            claims_path=None if config.store is None else config.store + ".runs.json",
        )
        # Scorers run on their own bounded pool (a slow scoring holds up no store, no other
        # route), at most ``max_scoring_per_client`` per client.
        self._score_pool = concurrent.futures.ThreadPoolExecutor(
            config.scoring_threads, "rllm-gateway-score"
        )
        # A task lookup (an env reset, at a session's open) has a thread of its own: behind a
        # client's slow scorings on the scoring pool, another client's open waited for a whole
        # scoring (s24 att29s24 F1: 0.01 -> 7.5 s).
        self._lookup_pool = concurrent.futures.ThreadPoolExecutor(1, "rllm-gateway-lookup")
        self._scoring: collections.Counter[str] = collections.Counter()
        # How each scorer's task ids are shown and stored: keyed by its seed kwargs, if any
        # (an evaluation's private universe; the key's scrypt is paid here, once).
        self._masks = {env_id: SeedMask(kwargs) for env_id, kwargs in config.scorers.items()}
        # Chat templating (a chat template and the tokenizer over a body of up to the request
        # limit: seconds for 4 MB) runs off the event loop, where one client's big call held
        # every other client's requests and streams (s20 att29k F2: 3-9 s), on several threads
        # (each with its own tokenizer, which releases the interpreter while it tokenises) and
        # one call per client at a time (`_template_turn`): one client's calls, however
        # slow to template, hold one thread (s45 att45h: SmolLM2's 2.6 MB of digits, 3 s each,
        # held one shared thread and every other client's "Hi" behind it).
        self._template_pool = concurrent.futures.ThreadPoolExecutor(
            TEMPLATE_THREADS, "rllm-gateway-template"
        )
        #: Failed scorings: one traceback per env and error type per minute.
        self._scoring_log = _ThrottledLog()
        #: Task ids of scorer tasks sessions opened on, by (client, env, seed, index).
        self._task_ids: dict[
            tuple[str, str, int | None, int | None], tuple[str | None, int | None]
        ] = {}
        #: Internal errors (bugs): one traceback per handler and error type per minute.
        self._internal_log = _ThrottledLog(level=logging.ERROR)
        self._tokenizer = tokenizer
        #: Decodes a reply's completion ids for grading (:meth:`_decode`), with a tokenizer of
        #: its own: the templater's is used by its one thread.
        self._grading_tokenizer: Any = None
        self._grading_ends: set[int] = set()
        #: The chat template's generation prompt (``None``: it has none it can tell).
        self._grading_generation: str | None = None
        self._grading_think_special = False
        self._grading_lock = threading.Lock()
        #: The engines' context length (``max_model_len`` of ``/v1/models``), once read.
        self._max_model_len: int | None = None
        self._templater: Any = None
        self._tokens = {token: name for name, token in config.api_keys.items()}
        self._buckets: dict[str, _TokenBucket] = {}
        #: Calls in flight per client, and the client of each engine slot held.
        self._client_calls: collections.Counter[str] = collections.Counter()
        self._template_turns: dict[str, _Turn] = {}
        #: Bytes of each client's request bodies still arriving.
        self._receiving: collections.Counter[str] = collections.Counter()
        #: Per engine, how to cut each stream open on it (a swap that waited long enough).
        self._stream_cuts: dict[str, set[Callable[[], None]]] = collections.defaultdict(set)
        self._slot_clients: dict[Any, str | None] = {}
        self.started = time.time()
        self.counters: collections.Counter[str] = collections.Counter()
        self._client_counters: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter
        )
        self.in_flight = 0
        self.completion_tokens = 0
        self.prompt_tokens = 0
        self.rate = _Rate()
        self.client: Any = None
        self._background: list[asyncio.Task[Any]] = []
        #: Scorings under way (each scores and stores its session), which shutdown waits for.
        self._rewarding: set[asyncio.Future[Any]] = set()
        #: Set at shutdown: a scoring still running steps no further reply.
        self._stopping = threading.Event()
        self.app = self._build_app()

    # ------------------------------------------------------------------ app

    def _build_app(self) -> Any:
        starlette = require("starlette", "gateway", feature="the gateway")
        del starlette
        from starlette.applications import Starlette
        from starlette.routing import Route

        api = self._api
        routes = [
            Route("/health", self._health, methods=["GET"]),
            Route("/metrics", api(self._metrics), methods=["GET"]),
            Route("/v1/models", api(self._models), methods=["GET"]),
            Route("/v1/chat/completions", api(self._chat), methods=["POST"]),
            Route("/v1/completions", api(self._completions), methods=["POST"]),
            Route("/sessions", api(self._create_session), methods=["POST"]),
            Route("/sessions/{sid}", api(self._session_info), methods=["GET"]),
            Route("/sessions/{sid}/reward", api(self._reward), methods=["POST"]),
            Route("/sessions/{sid}/v1/models", api(self._models), methods=["GET"]),
            Route("/sessions/{sid}/v1/chat/completions", api(self._chat), methods=["POST"]),
            Route("/sessions/{sid}/v1/completions", api(self._completions), methods=["POST"]),
            Route("/admin/weights", api(self._weights), methods=["POST"]),
        ]
        return Starlette(routes=routes, lifespan=self._lifespan)

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Any) -> AsyncIterator[None]:
        await self.start()
        try:
            yield
        finally:
            await self.stop()

    async def start(self) -> None:
        """Open the engine client and start the health and idle-session checks."""
        import httpx

        # A gateway started again after a stop scores again (s45 att45p: 0 of 3 paid), with a
        # flag of its own: one cleared would let a scoring the stop cut step on (att45r).
        self._stopping = threading.Event()

        aiohttp = require("aiohttp", "gateway", feature="the gateway's engine client")
        transport = require("httpx_aiohttp", "gateway", feature="the gateway's engine client")

        def session() -> Any:
            # No cap on connections (aiohttp's default is 100): calls in flight are bounded
            # by the gateway's own queue and per-client limits.
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=ENGINE_KEEPALIVE_S)
            return aiohttp.ClientSession(connector=connector)

        # One pooled client for every engine call: httpx's interface on aiohttp's transport,
        # whose HTTP parser is C: httpx's own (h11 under anyio) made the relay's CPU per
        # streamed token the gateway's largest cost (benchmarks/results/gateway.json).
        self.client = httpx.AsyncClient(
            timeout=httpx.Timeout(self.config.request_timeout_s, connect=10.0),
            transport=transport.AiohttpTransport(client=session),
        )
        from rllm_adapters.gateway.connections import RateLimitedLog

        # A flood of one kind of error (failed accepts when file descriptors run out) logs a
        # line per interval, not one per event.
        asyncio.get_running_loop().set_exception_handler(RateLimitedLog())
        # Which runs the store holds already (and so belong to the client recorded there).
        await asyncio.to_thread(self.sessions.load_runs)
        # The tokenizer (and chat templater) now, off the event loop: loaded by the first call
        # that needed it, it held every client 8 s (s44 att44f F2).
        await asyncio.to_thread(self.templater if self.config.template_chat else self.tokenizer)
        # `--engine` without `--served-model-name`: the engine's served model (what it
        # serves a call that names none), so such calls are pinned to it (att29b G2).
        with contextlib.suppress(Exception):
            await self.served_model()
        self._background.append(asyncio.create_task(self._watch()))

    async def served_model(self) -> str | None:
        """The model a call that names none is served: the served name, else the engines'.

        Without a served name (``--engine`` alone) it is the first id of an engine's
        ``/v1/models`` (vLLM serves a call naming no model with its first model, the base),
        looked up at start, by the health watch, and at a session call that names no model
        until found; ``None`` while no engine has answered.
        """
        if self.model is not None:
            return self.model
        model = await self._from_model_card(
            "id", lambda v: isinstance(v, str) and 0 < len(v) <= MAX_ID_CHARS
        )
        if model is not None:
            self.model = self.sessions.model = model
            _log.info("calls that name no model are recorded as the engines' %r", model)
        return self.model

    async def _from_model_card(self, key: str, valid: Callable[[Any], bool]) -> Any:
        """The first valid ``key`` of an engine's first model card (``/v1/models``), or ``None``."""
        if self.client is None:
            return None
        for engine in list(self.pool.engines):
            try:
                response = await self.client.get(f"{engine.url}/models", timeout=5.0)
                value = response.json()["data"][0][key]
            except Exception:
                continue
            if valid(value):
                return value
        return None

    async def _model_len(self) -> int | None:
        """The engines' context length (``max_model_len`` of ``/v1/models``), read once."""
        if self._max_model_len is None:
            self._max_model_len = await self._from_model_card(
                "max_model_len", lambda v: type(v) is int and v > 0
            )
        return self._max_model_len

    async def _context_left(self, prompt_tokens: int) -> int:
        """The tokens left after a prompt in the engines' context (``max_model_len``).

        Read once from an engine's ``/v1/models`` (vLLM's model card says it).

        Raises:
            GatewayError: 400 when no engine says its context length (the call must send
                ``max_tokens``) or the prompt fills it.
        """
        context = await self._model_len()
        if context is None:
            raise GatewayError(
                400,
                "The engine does not say its context length, so a chat call without a limit "
                "has none the gateway can send: set `max_tokens`.",
                "invalid_request",
            )
        left = context - prompt_tokens
        if left < 1:
            raise GatewayError(
                400,
                f"The prompt ({prompt_tokens} tokens) fills the model's context ({context}).",
                "context_length_exceeded",
            )
        return left

    async def stop(self) -> None:
        """Store every open session that has calls, then close the engine client."""
        for task in self._background:
            task.cancel()
        for task in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._background.clear()
        # Calls cut at the end of the shutdown grace record what they generated as their
        # tasks unwind: their sessions are stored with it, before any scoring is waited for
        # (s45 att45n: one client's slow scorings held every other session 60 s, and a
        # supervisor's kill at 30 s lost them).
        busy = [s for s in list(self.sessions.sessions.values()) if s.in_flight]
        if busy:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.gather(*(s.calls_done() for s in busy)), 5.0)
        stored = await self.sessions.finish_all()  # not the sessions being scored
        # Scorings under way finish and store their sessions with their reward, for another
        # grace (s45 att45l); the rest stop before their next step and are stored as open
        # sessions are, so no cut scoring runs a client's programs on past the exit.
        late: set[asyncio.Future[Any]] = set()
        if self._rewarding:
            grace = self.config.shutdown_grace_s
            _, late = await asyncio.wait(set(self._rewarding), timeout=grace)
        self._stopping.set()
        for scoring in late:
            scoring.cancel()
        for scoring in late:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await scoring
        # Cut scorings' sessions, and one a failed store reopened meanwhile (att45r F2).
        stored += await self.sessions.finish_all()
        if stored:
            _log.info("stored %d open sessions at shutdown", stored)
        if self.client is not None:
            await self.client.aclose()
            self.client = None

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(5.0)
            with contextlib.suppress(Exception):
                await self.pool.check_health(self.client)
            if self.model is None:
                with contextlib.suppress(Exception):
                    await self.served_model()
            if self.config.session_idle_s is not None:
                with contextlib.suppress(Exception):
                    await self.sessions.finish_idle(self.config.session_idle_s)

    # ------------------------------------------------------------------ plumbing

    def _api(self, handler: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        """Wrap a handler: refusals become OpenAI-style JSON errors, and are counted."""

        async def wrapped(request: Any) -> Any:
            def count(key: str) -> None:
                self.counters[key] += 1
                who = getattr(request.state, "principal", None)
                if who is not None:
                    self._client_counters[who][key] += 1

            try:
                response = await handler(request)
            except GatewayError as e:
                count(f"rejected_{e.status}")
                return _error(e.status, str(e), e.code, e.headers)
            except SessionError as e:
                count(f"rejected_{e.status}")
                return _error(e.status, str(e), e.code)
            except QueueFull as e:
                count("rejected_503")
                return _error(503, f"Gateway busy: {e}.", "queue_full", {"Retry-After": "1"})
            except DamagedStore as e:
                # The store was changed without its key (a planted pin, a deleted pending
                # sample): nothing is recorded or scored until its operator repairs it.
                count("rejected_503")
                self._internal_log.log(("store", type(e).__name__), "damaged store: %s", e)
                return _error(503, f"The episode store is damaged: {e}", "store_damaged")
            except Exception as e:
                # A bug, not a refusal: counted, logged under a reference the client gets
                # (a traceback per handler and error type per minute, so a client repeating
                # one cannot flood the log), and answered as JSON like every other error.
                count("rejected_500")
                ref = secrets.token_hex(4)
                self._internal_log.log(
                    (handler.__name__, type(e).__name__),
                    "internal error [%s] on %s",
                    ref,
                    request.url.path,
                    exc_info=True,
                )
                return _error(
                    500, f"Internal error {ref} (in the gateway's log).", "internal_error"
                )
            count("responses")
            return response

        return wrapped

    def principal(self, request: Any, *, admin: bool = False) -> str:
        """Who is calling (``"local"`` without keys); raise 401 for a bad or missing token."""
        token = _bearer(request)
        if admin:
            if self.config.admin_key is None:
                if self.config.auth_required:
                    raise GatewayError(
                        403,
                        "Admin routes are off: start the gateway with --admin-key.",
                        "admin_off",
                    )
                return "admin"
            if token and hmac.compare_digest(token, self.config.admin_key):
                return "admin"
            raise GatewayError(401, "Admin routes need the admin token.", "invalid_api_key")
        if not self.config.auth_required:
            return "local"
        found = None
        for known, name in self._tokens.items():
            if hmac.compare_digest(token.encode(), known.encode()):
                found = name
        if found is None:
            raise GatewayError(
                401,
                "Missing or invalid API key: send `Authorization: Bearer <token>`.",
                "invalid_api_key",
            )
        request.state.principal = found
        return found

    def _limit_rate(self, principal: str) -> None:
        if self.config.rate_limit_rps is None:
            return
        bucket = self._buckets.get(principal)
        if bucket is None:
            bucket = self._buckets[principal] = _TokenBucket(
                self.config.rate_limit_rps, self.config.rate_limit_burst
            )
        wait = bucket.take()
        if wait > 0:
            raise GatewayError(
                429,
                f"Rate limit of {self.config.rate_limit_rps:g} requests/s reached; retry later.",
                "rate_limited",
                {"Retry-After": str(max(1, round(wait)))},
            )

    async def read_body(self, request: Any, principal: str | None = None) -> bytes:
        """The request body, refused above ``max_body_bytes`` or after ``body_timeout_s``.

        The bytes a ``principal``'s bodies hold while they arrive are bounded
        (:data:`RECEIVING_BODIES` bodies' worth, 429 above): bodies sent all but their last
        byte, held open under the body timeout, took 2.5 GB for 600 (s44 att44n), and the
        in-flight cap counts a call only once its body is read.
        """
        limit = self.config.max_body_bytes
        budget = RECEIVING_BODIES * limit
        declared = request.headers.get("content-length")
        if declared is not None:
            try:
                size = int(declared)
            except ValueError as e:
                raise GatewayError(400, "Bad Content-Length header.", "invalid_request") from e
            if size > limit:
                raise GatewayError(
                    413, f"Request body of {size} bytes is over the limit of {limit}.", "too_large"
                )

        counted = 0  # of this body's bytes, in `_receiving`

        async def read() -> bytes:
            nonlocal counted
            chunks = []
            total = 0
            async for chunk in request.stream():
                total += len(chunk)
                if total > limit:
                    raise GatewayError(
                        413, f"Request body is over the limit of {limit} bytes.", "too_large"
                    )
                if principal is not None:
                    self._receiving[principal] += len(chunk)
                    counted += len(chunk)
                    if self._receiving[principal] > budget:
                        raise GatewayError(
                            429,
                            f"This client's request bodies being received hold over {budget} "
                            "bytes; send them one after another.",
                            "too_many_bodies",
                            {"Retry-After": "1"},
                        )
                chunks.append(chunk)
            return b"".join(chunks)

        try:
            return await asyncio.wait_for(read(), self.config.body_timeout_s)
        except asyncio.TimeoutError as e:
            raise GatewayError(
                408,
                f"Request body not received within {self.config.body_timeout_s:g} s.",
                "body_timeout",
            ) from e
        finally:
            if principal is not None and counted:
                self._receiving[principal] -= counted
                if self._receiving[principal] <= 0:
                    del self._receiving[principal]

    async def read_json(
        self, request: Any, principal: str | None = None
    ) -> tuple[bytes, dict[str, Any]]:
        """The body and its JSON object; 400 unless it is one."""
        body = await self.read_body(request, principal)
        return await _parse(body, self.config.max_body_values)

    def _session_id(self, request: Any) -> str | None:
        sid = request.path_params.get("sid") or request.headers.get("x-session-id")
        if sid is None:
            return None
        if not SESSION_ID_RE.fullmatch(sid):
            raise GatewayError(
                400,
                "A session id is 1-128 characters of letters, digits and `_.:-`.",
                "invalid_session_id",
            )
        return str(sid)

    # ------------------------------------------------------------------ small routes

    async def _health(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        engines = [
            {"name": e.name, "healthy": e.healthy, "swapping": e.swapping}
            for e in self.pool.engines
        ]
        ok = any(e.healthy for e in self.pool.engines)
        return JSONResponse(
            {"status": "ok" if ok else "unavailable", "engines": engines},
            status_code=200 if ok else 503,
        )

    def metrics(self) -> dict[str, Any]:
        """Requests, tokens, tokens/s, queue and per-engine load."""
        return {
            "uptime_s": time.time() - self.started,
            "requests": dict(self.counters),
            "in_flight": self.in_flight,
            "queue": self.pool.waiting,
            "completion_tokens": self.completion_tokens,
            "prompt_tokens": self.prompt_tokens,
            "tokens_per_s": self.rate.per_second(),
            "slow_readers_cut": len(_SLOW_READERS),
            "sessions": {
                "open": len(self.sessions.sessions),
                "stored": self.sessions.stored,
                "store_errors": self.sessions.store_errors,
                "recorded_calls": self.sessions.recorded_calls,
            },
            "engines": [e.snapshot() for e in self.pool.engines],
        }

    def client_metrics(self, principal: str) -> dict[str, Any]:
        """What ``/metrics`` shows a client: its own counts, nothing of other clients'."""
        counts: Mapping[str, int] = self.sessions.client_counts.get(principal) or {}
        return {
            "client": principal,
            "requests": dict(self._client_counters.get(principal) or {}),
            "in_flight": self._client_calls.get(principal, 0),
            "sessions": {
                "open": self.sessions.open_of(principal),
                "stored": counts.get("stored", 0),
                "recorded_calls": counts.get("recorded_calls", 0),
            },
        }

    async def _metrics(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        # The admin token (or a gateway without keys) sees everything; a client its own.
        admin = self.config.admin_key
        if admin is not None and hmac.compare_digest(_bearer(request).encode(), admin.encode()):
            return JSONResponse(self.metrics())
        principal = self.principal(request)
        self._limit_rate(principal)
        if not self.config.auth_required:
            return JSONResponse(self.metrics())
        return JSONResponse(self.client_metrics(principal))

    async def _models(self, request: Any) -> Any:
        from starlette.responses import Response

        principal = self.principal(request)
        self._limit_rate(principal)
        self._limit_calls(principal)  # it holds an engine slot: counted as a call
        self._client_calls[principal] += 1
        try:
            async with self.pool.acquire() as engine:
                try:
                    response = await self.client.get(f"{engine.url}/models")
                except Exception as e:
                    raise GatewayError(
                        502, f"Engine {engine.name} unreachable: {e}", "engine_error"
                    ) from e
        finally:
            self._release_client(principal)
        return Response(
            response.content, status_code=response.status_code, media_type="application/json"
        )

    async def _create_session(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        principal = self.principal(request)
        self._limit_rate(principal)
        raw = await self.read_body(request, principal)
        fields: dict[str, Any] = {}
        if raw.strip():
            _, fields = await _parse(raw, self.config.max_body_values)
        sid = fields.pop("session_id", None)
        if sid is not None and (not isinstance(sid, str) or not SESSION_ID_RE.fullmatch(sid)):
            raise GatewayError(400, "`session_id` must match [A-Za-z0-9_.:-]{1,128}.", "invalid")
        asked = (fields.get("seed"), fields.get("index"))
        bound = await self._bind_task(fields, principal)
        session = self.sessions.create(principal, sid, fields=fields)
        if bound:
            session.opened_as = asked
            try:
                await self.sessions.open_pending(session)
            except Exception as e:
                self.sessions.end(session)
                raise GatewayError(
                    503,
                    f"The store could not mark the session's sample ({type(e).__name__}); retry.",
                    "store_unavailable",
                    {"Retry-After": "1"},
                ) from e
        base = str(request.base_url).rstrip("/")
        opened: dict[str, Any] = {
            "session_id": session.id,
            "base_url": f"{base}/sessions/{session.id}/v1",
            "run": session.run,
        }
        if bound:  # the episode to play: reset(seed=seed, options={"index": index})
            opened.update(task_id=session.task_id, seed=session.seed, index=session.index)
        return JSONResponse(opened, status_code=201)

    async def _bind_task(self, fields: dict[str, Any], owner: str) -> bool:
        """Fix the task id of a session opened on a scorer's task, before any call.

        Such a session names one of this gateway's scorers as ``env_id``, with ``seed``
        and/or ``index``. Every way it ends (scored, a number reward, idle, shutdown, a
        refused scoring) then stores it under its task, so pass@k counts each of its samples: a
        client cannot have its right replies scored and file its wrong ones elsewhere; while
        it is open the store counts its sample as failed (``EpisodeStore.open_pending``).
        A ``task_id`` the client names must be that task's (400 ``task_mismatch``).

        Returns:
            Whether the session is on a scorer's task (its ``task_id`` set in ``fields``).
        """
        env_id = fields.get("env_id")
        if not isinstance(env_id, str) or env_id not in self.config.scorers:
            return False
        seed, index = fields.get("seed"), fields.get("index")

        def plain(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63

        if (seed is None and index is None) or not all(
            v is None or plain(v) for v in (seed, index)
        ):
            return False  # no task (or fields the session's own checks refuse)
        # Per client: a shared cache told a client by the time of its open which tasks
        # other clients had opened (s23 att29d2, a task key, not an answer).
        key = (owner, env_id, seed, index)
        task_id, task_index = self._task_ids.get(key, (None, None))
        if task_id is None:
            # A lookup resets the scorer's env: it counts against the client's scorings, so no
            # client's opens hold up another's.
            self._take_scoring(owner)
            try:
                task_id, task_index = await asyncio.get_running_loop().run_in_executor(
                    self._lookup_pool,
                    functools.partial(
                        task_of,
                        env_id,
                        env_kwargs=self.config.scorers[env_id],
                        seed=seed,
                        index=index,
                    ),
                )
            except Exception as e:
                raise GatewayError(
                    400,
                    f"{env_id!r} has no task at seed {seed!r}, index {index!r} "
                    f"({type(e).__name__}).",
                    "invalid_session",
                ) from e
            finally:
                self._give_scoring(owner)
            if task_id is not None:
                # An evaluation scorer's seed (``task_seed``) stays the operator's: the env's
                # ids spell it out, and with it a client rebuilt every task and its answer
                # (s24 att29v F1: 20 of 20 paid). Shown and stored keyed by it instead.
                task_id = self._masks[env_id].task_id(task_id)
            if len(self._task_ids) >= 65536:  # a bound; ids are cheap to find again
                self._task_ids.clear()
            self._task_ids[key] = (task_id, task_index)
        named = fields.get("task_id")
        if named is not None and task_id is not None and named != task_id:
            raise GatewayError(
                400,
                f"`task_id` {named!r} is not the task of {env_id!r} at seed {seed!r}, index "
                f"{index!r} ({task_id!r}).",
                "task_mismatch",
            )
        if task_id is None:
            return False
        fields["task_id"] = task_id
        if task_index is not None:
            # The episode is the task's: its index, and the seed of its in-episode randomness
            # (a slippery lake's slips) taken from it, never the client's. With the client's
            # seed beside an index, a client opened each task with a seed its policy won
            # under, played locally (s24 att29u F1: pass@1 0.13 -> 0.92, every task of a
            # range opened); with an index alone, the scorer's replay drew other slips than
            # the client's harness had shown the model (F1b: 7 of 12 honest sessions refused).
            fields["seed"] = fields["index"] = task_index
        return True

    async def _session_info(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        principal = self.principal(request)
        self._limit_rate(principal)
        sid = self._session_id(request)
        assert sid is not None
        session = self.sessions.get(sid, principal, create=False)
        return JSONResponse(
            {
                "session_id": session.id,
                "calls": len(session.calls),
                "env_id": session.env_id,
                "task_id": session.task_id,
                "seed": session.seed,
                "index": session.index,
                "model": session.model,
                "run": session.run,
                "group": session.group,
                "sample": session.sample,
                "last_reply": session.calls[-1].text if session.calls else None,
                "completion_tokens": sum(len(c.completion_ids) for c in session.calls),
            }
        )

    async def _reward(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        principal = self.principal(request)
        self._limit_rate(principal)
        sid = self._session_id(request)
        assert sid is not None
        _, body = await self.read_json(request, principal)
        session = self.sessions.get(sid, principal, create=False)
        if "env" in body:
            return JSONResponse(await self._scored_reward(session, body))
        reward = body.get("reward")
        if isinstance(reward, bool) or not isinstance(reward, (int, float)):
            raise GatewayError(
                400,
                'Send {"reward": <number>} or {"env": "<env id>", "seed": <int>}.',
                "invalid_reward",
            )
        _check_reward(reward)
        info = body.get("info") or {}
        if not isinstance(info, dict):
            raise GatewayError(400, "`info` must be an object.", "invalid_reward")
        check_json_field(info, "info", "invalid_reward")
        reserved = sorted(RESERVED_STEP_INFO & set(info))
        if reserved:
            raise GatewayError(
                400,
                f"`info` may not set {reserved}: the gateway records them with each call.",
                "invalid_reward",
            )
        # Ended first (a second reward is refused), after the calls in flight are recorded.
        await self.sessions.claim(session)
        if not session.calls:
            # Nothing to train on: the session ends (its slot is free) and nothing is stored.
            await self.sessions.end_unsampled(session)
            raise _no_calls(session)
        # A client's number is the client's: whatever reads as a verified grade
        # (`is_correct`, ...) is kept under `client_grade`, and only a scorer sets it.
        grade = {k: info.pop(k) for k in sorted(GRADE_INFO & set(info))}
        if grade:
            info["client_grade"] = grade
        info["reward_source"] = "client"
        result = await self.sessions.finish(session, float(reward), info, claimed=True)
        return JSONResponse(result)

    async def _scored_reward(self, session: Session, body: dict[str, Any]) -> dict[str, Any]:
        """End ``session`` with the reward one of the operator's scorers gives its episode.

        The task is the one the session opened with (``env_id`` and ``seed`` and/or
        ``index``), fixed before any reply: a reward that names another env, seed or index is
        refused (400 ``task_mismatch``), so no client picks the task whose answer its reply
        happens to be. The scorer's kwargs are the operator's (``GatewayConfig.scorers``),
        each call is one turn of the env's episode (its reply stepped in order; more calls
        than the episode takes: 409 ``too_many_turns``), and the first and the last call's prompts
        must hold the task's prompt as the env gives it (409 ``prompt_not_task`` otherwise; a
        prompt of token ids cannot be checked and is refused too), checked before the reply is
        stepped. A session is scored once: a scoring refused or failed once the session is
        claimed ends it, stored without a reward. A session holding an aborted call is not
        scored (409 ``aborted_call``; it stays open for a number reward).
        """
        unknown = sorted(set(body) - {"env", "seed", "index"})
        if unknown:
            raise GatewayError(
                400,
                f"A scored reward names a scorer and a task of its source only "
                f'({{"env": id, "seed": s}} or {{"env": id, "index": i}}); refused field(s) '
                f"{unknown}: the answers are the session's replies, and the scorer's settings "
                "are the gateway's.",
                "invalid_reward",
            )
        env_id = body["env"]
        scorers = self.config.scorers
        if not isinstance(env_id, str) or env_id not in scorers:
            allowed = sorted(scorers)
            raise GatewayError(
                400,
                f"`env` must name one of this gateway's scorers: {allowed}"
                if allowed
                else 'This gateway scores no rewards: send {"reward": <number>} (the '
                "operator enables scorers with --scorer ENV_ID).",
                "scorer_not_allowed",
            )
        for name in ("seed", "index"):
            value = body.get(name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**63
            ):
                raise GatewayError(
                    400, f"`{name}` must be a non-negative 64-bit integer.", "invalid_reward"
                )
        if session.env_id != env_id or (session.seed is None and session.index is None):
            raise GatewayError(
                409,
                f"Session {session.id!r} was opened for env {session.env_id!r}"
                + ("" if session.seed is not None or session.index is not None else " with no task")
                + f": a reward scored by {env_id!r} needs a session opened with "
                f'{{"env_id": "{env_id}", "seed": s}} (or "index"), before its calls.',
                "task_mismatch",
            )
        seed, index = session.seed, session.index
        asked_seed, asked_index = session.opened_as or (seed, index)
        for name, value, asked in (("seed", seed, asked_seed), ("index", index, asked_index)):
            if name in body and body[name] not in (value, asked):
                raise GatewayError(
                    400,
                    f"`{name}` {body[name]!r} is not this session's task ({name} {value!r}): "
                    "the task is fixed when the session opens.",
                    "task_mismatch",
                )
        owner = session.owner
        self._take_scoring(owner)
        counted = True  # given back here, or by the scoring's task once handed to it
        try:
            # Ended before scoring: a second reward is refused at once, not after scoring.
            await self.sessions.claim(session)
            if not session.calls:
                await self.sessions.end_unsampled(session)
                raise _no_calls(session)
            aborted = sum(c.aborted for c in session.calls)
            if aborted:
                # Still open: its record (aborted calls included) can end with a number.
                self.sessions.reopen(session)
                raise GatewayError(
                    409,
                    f"Session {session.id!r} holds {aborted} call(s) whose stream ended before "
                    "its finish: a scorer grades only a session whose every generation was "
                    "read to its end (send a number reward to store it as the client's).",
                    "aborted_call",
                )
            if session.unrecorded:
                self.sessions.reopen(session)
                raise GatewayError(
                    409,
                    f"Session {session.id!r} had {session.unrecorded} call(s) whose reply could "
                    "not be recorded: a scorer grades only a session whose every generation is "
                    "in its record (send a number reward to store it as the client's).",
                    "unrecorded_call",
                )
            past_eos = sum(c.request.get("ignore_eos") is True for c in session.calls)
            if past_eos:
                self.sessions.reopen(session)
                raise GatewayError(
                    409,
                    f"Session {session.id!r} holds {past_eos} call(s) sent with `ignore_eos`: "
                    "a reply sampled past the policy's own end is not its sample, so a scorer "
                    "does not grade it (send a number reward to store it as the client's).",
                    "ignore_eos",
                )
            cut = sum(_cut_by_context(c) for c in session.calls)
            if cut:
                self.sessions.reopen(session)
                raise GatewayError(
                    409,
                    f"Session {session.id!r} holds {cut} call(s) whose reply the model's context "
                    "ended before their token limit: where that falls is set by the prompt's "
                    "length, which the client chooses, so a scorer does not grade it (send a "
                    "number reward to store it as the client's).",
                    "context_cut",
                )

            async def score_and_store() -> Any:
                try:
                    try:
                        scored = await self._score(session, env_id, seed, index)
                    except asyncio.CancelledError:
                        # Cut at shutdown past its wait: not scored, stored as open ones are.
                        self.sessions.reopen(session)
                        raise
                    except GatewayError as e:
                        # Scored once: whatever failed, the session ends and its calls are
                        # stored without a reward, so no session is a scorer run again and again.
                        await self._store_unscored(session, e.code, getattr(e, "task_id", None))
                        raise GatewayError(
                            e.status,
                            f"{e} The session has ended; its calls were stored without a reward.",
                            e.code,
                        ) from e
                    except Exception as e:
                        # A bug: the session is stored unscored all the same, never left
                        # claimed and lost (s23 att29d3: 0 episodes stored, even at shutdown).
                        ref = secrets.token_hex(4)
                        self._internal_log.log(
                            ("score", type(e).__name__),
                            "scoring session %r failed [%s]",
                            session.id,
                            ref,
                            exc_info=True,
                        )
                        await self._store_unscored(session, "score_failed")
                        raise GatewayError(
                            500,
                            f"Internal error {ref} while scoring (in the gateway's log). The "
                            "session has ended; its calls were stored without a reward.",
                            "internal_error",
                        ) from e
                    return await self.sessions.finish(
                        session,
                        scored["reward"],
                        scored["info"],
                        task_id=scored["task_id"],
                        claimed=True,
                    )
                finally:
                    self._give_scoring(owner)

            # Scored and stored on a task of its own, which shutdown waits for: a scoring that
            # outlasted the grace was stored as a failed sample, the scorer's verdict thrown
            # away (s45 att45l: a correct answer scored in 2.5 s, 0 of 4 paid).
            task = asyncio.ensure_future(score_and_store())
            counted = False  # the task gives the scoring back
            self._rewarding.add(task)
            task.add_done_callback(self._rewarding.discard)
            return await asyncio.shield(task)
        finally:
            if counted:
                self._give_scoring(owner)

    def _take_scoring(self, owner: str) -> None:
        """Count a scoring (or a task lookup) of ``owner``'s, or refuse (429) past its cap."""
        cap = self.config.max_scoring_per_client
        if self._scoring[owner] >= cap:
            raise GatewayError(
                429,
                f"This client already has {cap} scorings running; wait for one to finish.",
                "too_many_scorings",
                {"Retry-After": "1"},
            )
        self._scoring[owner] += 1

    def _give_scoring(self, owner: str) -> None:
        self._scoring[owner] -= 1
        if self._scoring[owner] <= 0:
            del self._scoring[owner]

    async def _score(
        self, session: Session, env_id: str, seed: int | None, index: int | None
    ) -> dict[str, Any]:
        """Score claimed ``session`` as the env's episode (reward, info, task id), or refuse.

        The cheap checks come first, inside the scoring thread: the env is reset for the
        task's prompt, and only if the first and the last call's prompts hold it, the last
        call's conversation holds exactly the earlier replies (:func:`_history_recorded`: 409
        ``history_not_recorded``), and the session has no more calls than the env's
        ``max_turns``, are the replies stepped, one
        per call in order (a tool env's step may run the reply's program). A session whose
        episode the env ends before its last call is refused (409 ``too_many_turns``).
        """
        first, last = session.calls[0], session.calls[-1]
        refused: list[str] = []

        def holds(observation: Any, statement: Any) -> bool:
            text = observation if isinstance(observation, str) else None
            if not (_prompt_holds(first, text, statement) and _prompt_holds(last, text, statement)):
                refused.append("prompt_not_task")
            elif session.diverged or not _history_recorded(session):
                refused.append("history_not_recorded")
            elif self._loses_markers(session.calls):
                refused.append("reply_ids_needed")
            return not refused

        options = {"index": index} if index is not None else None
        loop = asyncio.get_running_loop()
        try:
            scored = await loop.run_in_executor(
                self._score_pool,
                functools.partial(
                    self._score_replies,
                    env_id,
                    session.calls,
                    env_kwargs=self.config.scorers[env_id],
                    seed=seed,
                    options=options,
                    check=holds,
                    stop=self._stopping,
                ),
            )
        except Exception as e:
            # The env's text may quote its task source or files: logged, not answered; one
            # traceback per kind of failure per interval, a line for the others.
            ref = secrets.token_hex(4)
            self._scoring_log.log(
                (env_id, type(e).__name__),
                "scoring %s with %r failed [%s]",
                session.id,
                env_id,
                ref,
                exc_info=True,
            )
            raise GatewayError(
                400,
                f"Scoring with {env_id!r} failed (check `seed`/`index`; error {ref} in the "
                "gateway's log).",
                "score_failed",
            ) from e
        if scored.get("task_id") is not None:  # as the open showed it
            scored["task_id"] = self._masks[env_id].task_id(scored["task_id"])
        if refused == ["history_not_recorded"]:
            raise GatewayError(
                409,
                f"Session {session.id!r}'s last call does not hold exactly its earlier "
                f"replies ({len(session.calls) - 1} recorded): a scored session is the env's "
                "episode, every turn a call through it, sent back as the gateway returned it; "
                "in chat, as many assistant messages as earlier calls (a few-shot example goes "
                "in a system or user message's text). A number reward keeps such a session as "
                "the client's.",
                "history_not_recorded",
            )
        if refused == ["reply_ids_needed"]:
            raise GatewayError(
                409,
                f"Session {session.id!r} holds a reply whose engine returned no token ids, and "
                "the model's think markers are special tokens, which the engine's text skips, "
                "or a reasoning parser left it no content: where its reasoning ends cannot be "
                "read, so it is not scored (serve with an "
                "engine that returns token ids, vLLM's `return_token_ids`; a number reward "
                "keeps the session as the client's).",
                "reply_ids_needed",
            )
        if not scored.get("prompt_ok", True):
            raise GatewayError(
                409,
                f"Session {session.id!r}'s first and last prompts must each hold the prompt of "
                f"its task ({env_id!r}, seed {seed!r}, index {index!r}): only a reply to the "
                "task is scored (send it as text; a number reward is kept as the client's).",
                "prompt_not_task",
            )
        if scored.get("too_many_turns"):
            # Stored under its task (not correct), so pass@k counts it as a failed sample.
            raise _Unscored(
                scored["task_id"],
                409,
                f"Session {session.id!r} holds {len(session.calls)} calls, but an episode of "
                f"{env_id!r} ends after {scored.get('max_turns')} turn(s): a scored session is "
                "played as the env plays it (each call one turn, every reply stepped in "
                "order), so a session that tried again past the env's turns is not scored "
                "(send a number reward to keep such a session as the client's).",
                "too_many_turns",
            )
        if session.task_id is not None and scored["task_id"] is not None:
            if str(scored["task_id"]) != session.task_id:
                raise GatewayError(
                    400,
                    f"The session names task {session.task_id!r}, but {env_id!r} with seed "
                    f"{seed!r}, index {index!r} is task {str(scored['task_id'])!r}.",
                    "task_mismatch",
                )
        await self._pin_framing(session, scored)
        self._pin_weights(session, scored["task_id"])
        reward = scored["reward"]
        try:
            _check_reward(reward)
        except GatewayError as e:
            raise GatewayError(
                400, f"The scorer's reward {reward!r} was refused: {e}", e.code
            ) from e
        task_id = scored["task_id"]
        return {
            "reward": reward,
            "info": {
                **scored["info"],
                "scored": {"env": env_id, "seed": seed, "index": index},
                "reward_source": "scorer",
            },
            "task_id": None if task_id is None else str(task_id),
        }

    def _record(self, session: Session, call: Call, size: int) -> None:
        """Record ``call`` in ``session``; mark the session if the call does not continue.

        A call that does not continue its session's previous one (:func:`_continues`) leaves
        the session unscored.
        """
        if session.calls and not _continues(session.calls[-1], call):
            session.diverged = True
        session.sizes.append(_prompt_size(call))
        self.sessions.record(session, call, size)

    async def _pin_framing(self, session: Session, scored: Mapping[str, Any]) -> None:
        """Fix what a run's scored sessions wrap their tasks in at its first scored session.

        A greedy reply changes with the prompt's wording: a client that previews it off the
        record under a few wordings per task (a reference number, a blank line) could send each
        task in the wording whose reply is right (session 21 att29n: pass@1 0.17 -> 1.0, every
        task of a fixed range opened). So the first call's prompt with the task's text taken
        out, and for a session of several calls its last call's with the replies and the env's
        feedback taken out too, are the run's, per number of calls; a session framed otherwise
        is not graded and counts as a failed sample of its task (409 ``framing_changed``).
        """
        try:
            # On a thread: a session of many turns over a long first prompt took seconds
            # (s44 att44h: 49,000 strings in an unrendered field, 13 framings, 4.3 s).
            framings = await asyncio.to_thread(self._framings, session, scored)
        except _FramingTooLarge:
            raise _Unscored(
                scored["task_id"],
                413,
                f"Session {session.id!r}'s prompts hold the task's texts (its statement, the "
                f"replies, the env's feedback, tool-call ids) more than {MAX_FRAMING_MARKS} "
                "times: it is not graded.",
                "framing_too_large",
            ) from None
        for turns, framing in framings:
            pinned = self._pin_client(session, f"framing:{turns}", framing)
            if pinned != framing:
                raise _Unscored(
                    scored["task_id"],
                    409,
                    f"Session {session.id!r} wraps its task in other text than this client's "
                    f"first scored session of {session.env_id!r} with {turns} call(s): a "
                    "client's scored sessions of an env are framed alike in every run, so no "
                    "run of its own per task words each task the way that makes a reply right. "
                    "Another harness needs another client key.",
                    "framing_changed",
                )
            pinned = self.sessions.pin_framing(session.run, session.env_id, turns, framing)
            if pinned != framing:
                raise _Unscored(
                    scored["task_id"],
                    409,
                    f"Session {session.id!r} wraps its task in other text than run "
                    f"{session.run!r}'s scored sessions of {session.env_id!r} with {turns} "
                    "call(s): a run's prompts "
                    "are its first scored session's with only the task's text (its replies and "
                    "the env's feedback) changed, so no client words each task the way that "
                    "makes a reply right. Other wording belongs in another run.",
                    "framing_changed",
                )

    def _framings(self, session: Session, scored: Mapping[str, Any]) -> list[tuple[int, str]]:
        """Each call's framing (:func:`_framing`), by the number of calls it closes."""
        task = {"task": scored.get("observation"), "statement": scored.get("statement")}
        tools = scored.get("tools")
        framings = [(1, _framing(session.calls[0], [task], tools=tools))]
        # Each turn's pieces are the same in every longer framing: framed once, and the marks
        # of all of them counted against one bound.
        cache: dict[Any, Any] = {}
        # Each call continues the one before it (:func:`_continues`), so each call's prompt
        # holds every earlier call's, and what each turn added is its own piece: the reply
        # and the env's feedback are taken out of their turn's piece only (a short reply is
        # also a word of the harness's own text). Every call's framing is pinned, not only
        # the last one's: pinned per session length alone, each length of a multi-turn
        # episode was a wording chosen after previewing (s29 att29f: FrozenLake 0.14 -> 0.21).
        feedback = list(scored.get("feedback", []))
        added = [
            {"reply": call.text, "call id": _call_ids(call), "feedback": text}
            for call, text in zip(session.calls, feedback, strict=False)
        ]
        last = session.calls[-1]
        main = _PROMPT_FIELDS[last.api][0]
        for turns in range(2, len(session.calls) + 1):
            # The turns-th call's prompt is the last one's cut where it ended (a middle call's
            # own request is not kept).
            cut = {**last.request, main: last.request.get(main)}
            if turns < len(session.calls) and isinstance(cut[main], (str, list)):
                cut[main] = cut[main][: session.sizes[turns - 1]]
            call = dataclasses.replace(last, request=cut)
            known = [task, *added[:turns]]
            framed = _framing(call, known, session.sizes[:turns], tools=tools, cache=cache)
            framings.append((turns, framed))
        return framings

    def _pin_weights(self, session: Session, task_id: Any) -> None:
        """Hold greedy scored sessions to one set of weights: the run's and the client's first.

        A greedy reply is deterministic, so a client previews it off the record; the model pin
        holds a name, and a hot swap changes the weights behind it. Opening (or holding open)
        each task until weights it answers right serve it, a run's pass@k counted the best of
        every version per task (s29 att29a F1). A sampled run is not held to it: training
        swaps weights under its sessions by design, and a sample cannot be previewed.
        """
        # Read from the recorded calls, not from the session's last request: a refused call
        # is never recorded, and one sent at temperature 1 after a greedy call (400
        # `sampling_changed`) passed a greedy session off as sampled (s29 att29e: 0.50 -> 1.00).
        if not any(call.request.get("temperature") == 0 for call in session.calls):
            return
        served = {call.weights_id for call in session.calls}
        if len(served) > 1:
            raise _Unscored(
                task_id,
                409,
                f"Session {session.id!r}'s greedy calls were served by {len(served)} sets of "
                "weights (a swap came between them): a scored session is one policy's.",
                "weights_changed",
            )
        (weights,) = served
        if self._pin_client(session, "weights:greedy", weights) != weights:
            raise _Unscored(
                task_id,
                409,
                f"Session {session.id!r} was served by other weights than this client's first "
                f"greedy scored session of {session.env_id!r}: a client's greedy scores of an "
                "env are one checkpoint's in every run, so no task waits for the weights that "
                "answer it. Evaluate other weights with another client key.",
                "weights_changed",
            )
        if self.sessions.pin_weights(session.run, weights) != weights:
            raise _Unscored(
                task_id,
                409,
                f"Session {session.id!r} was served by other weights than run "
                f"{session.run!r}'s first greedy scored session: a greedy run evaluates one "
                "checkpoint. Other weights belong in another run.",
                "weights_changed",
            )

    async def _store_unscored(self, session: Session, code: str, task_id: Any = None) -> None:
        """Store claimed ``session`` with no reward after its scoring was refused."""
        try:
            await self.sessions.finish(
                session,
                0.0,
                {"ended_by": "score_refused", "score_error": code, "reward_source": "none"},
                finish="truncated",
                task_id=None if task_id is None else str(task_id),
                claimed=True,
            )
        except Exception:  # counted in store_errors; left open (shutdown stores it)
            _log.exception("storing session %r after a refused scoring failed", session.id)

    async def _weights(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        self.principal(request, admin=True)
        _, body = await self.read_json(request)
        reloaded = body.get("reloaded")
        if reloaded is not None:
            if not isinstance(reloaded, str) or not reloaded or len(reloaded) > MAX_ID_CHARS:
                raise GatewayError(
                    400, "`reloaded` labels the weights the external engines now serve.", "invalid"
                )
            try:
                return JSONResponse({"engines": self.pool.mark_reloaded(reloaded)})
            except LookupError as e:
                raise GatewayError(409, str(e), "no_external_engine") from e
        path = body.get("path")
        if not isinstance(path, str) or not path:
            raise GatewayError(400, '`path` must be a model folder: {"path": "..."}.', "invalid")
        lora = body.get("lora_name")
        if lora is not None and (not isinstance(lora, str) or not lora):
            raise GatewayError(400, "`lora_name` must be the adapter's name.", "invalid")
        try:
            engines = await self.pool.swap_weights(
                self.client,
                path,
                lora_name=lora,
                drain_s=self.config.swap_drain_s,
                cut=self._cut_streams,
            )
        except LookupError as e:
            raise GatewayError(409, str(e), "no_launched_engine") from e
        except Exception as e:
            raise GatewayError(500, f"Weight swap failed: {e}", "swap_failed") from e
        return JSONResponse({"engines": engines})

    # ------------------------------------------------------------------ completions

    async def _chat(self, request: Any) -> Any:
        return await self._call(request, "chat")

    async def _completions(self, request: Any) -> Any:
        return await self._call(request, "completions")

    async def _call(self, request: Any, api: str) -> Any:
        principal = self.principal(request)
        self._limit_rate(principal)
        sid = self._session_id(request)
        raw, body = await self.read_json(request, principal)
        if api == "chat" and not isinstance(body.get("messages"), list):
            raise GatewayError(400, "`messages` must be a list of messages.", "invalid_request")
        if api == "completions" and "prompt" not in body:
            raise GatewayError(400, "`prompt` is required.", "invalid_request")
        stream = bool(body.get("stream"))
        path = "/chat/completions" if api == "chat" else "/completions"
        session = self.sessions.get(sid, principal) if sid is not None else None
        if session is None:
            # The relay forwards the bytes: the parsed body (a 4 MiB body of `[[], ...]` holds
            # ~100 MB as Python objects) is not kept while the engine answers.
            del body
            return await self._relay(path, raw, stream, principal)
        if api == "chat" and not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) for m in body["messages"]
        ):
            # A session's record and scoring read every message as one (s23 att29d4: a bare
            # item made every reward a 500, and the session was never stored).
            raise GatewayError(
                400, "Each message must be an object with a string `role`.", "invalid_messages"
            )
        if any(
            body.get(k) is not None and (type(body[k]) is not int or body[k] != 1)
            for k in ("n", "best_of")
        ):
            raise GatewayError(
                400, "A session records one completion per call: send n=1.", "invalid_request"
            )
        prompt = body.get("prompt")
        if api == "completions" and not (
            isinstance(prompt, str)
            or (isinstance(prompt, list) and all(type(i) is int for i in prompt))
        ):
            # A list of prompts is a batch: the session would record only its first reply.
            raise GatewayError(
                400,
                "A session records one prompt per call: `prompt` is a string or a list of "
                "token ids.",
                "invalid_request",
            )
        if body.get("echo"):
            # The engine would put the prompt's text and logprobs before the completion's,
            # so the record would pair more logprobs than generated ids.
            raise GatewayError(
                400, "A session records the completion alone: `echo` is off.", "invalid_request"
            )
        _check_session_fields(api, body, self.config.auth_required)
        # A session's calls are read again (their framing, their history): a field nested
        # 700 deep passed the parser and broke the scoring, the session lost (s23 att29d3).
        check_json_field(body, "the call", "invalid_request", max_bytes=None)
        _one_token_limit(api, body)
        if api == "chat":
            body["messages"] = [_message_form(m) for m in body["messages"]]
        if body.get("model") is None:
            # The engine serves a call naming no model with its own default: the session is
            # pinned to that model by name, and the engine is sent the name (att29b G2).
            served = await self.served_model()
            if served is None:
                raise GatewayError(
                    503,
                    "The gateway does not know the engines' served model yet (none answered "
                    "/v1/models): name `model` in the call, or retry.",
                    "model_unknown",
                    {"Retry-After": "1"},
                )
            body["model"] = served
        self._pin_model(session, body.get("model"))
        self._pin_sampling(session, body)
        # What the call's request holds once parsed (a body of many small JSON values holds
        # far more than its length) counts against the session's and client's bounds.
        # A prompt of token ids is not kept (the engine's prompt ids are, counted on record).
        kept = {k: v for k, v in body.items() if not (k == "prompt" and isinstance(v, list))}
        size = held_bytes(len(raw), kept)
        self.sessions.check_room(session, size)
        if api == "chat" and self.templater() is not None:
            return await self._templated_chat(session, body, stream, size)
        return await self._recorded(session, api, path, body, stream, size)

    def _pin_sampling(self, session: Session, body: dict[str, Any]) -> None:
        """Fix a run's scored sessions' sampling, cuts (stop, max_tokens) and model at first call.

        A client could otherwise preview the greedy reply off the record and record greedy
        calls only where it is right (sampling elsewhere): a run's pass@k would then count
        chosen samples, and the trainer would take greedy replies for the policy's samples.
        Only sessions on a scorer's task are graded (``is_correct``), so only they are held
        to it; a session the client rewards itself may mix.
        """
        if session.env_id not in self.config.scorers or (
            session.seed is None and session.index is None
        ):
            return
        mode = "greedy" if body.get("temperature") == 0 else "sampled"
        # Stop strings cut the reply: chosen per task by a client that knows its answer (a
        # procedural task's is public), they cut every wrong box out of a reply and keep the
        # right one (session 17 att29g: pass@1 0.33 -> 0.49). So they are the run's, fixed
        # with its sampling at its first scored call.
        cuts = _cuts(body)
        mode = f"{mode} stop={cuts}" if cuts else mode
        # And the model: a run mixing a weak and a strong model reports a blend, and with
        # greedy previews a client picks the model per task (att29h: 0.6 for 0.3 and 0.9).
        mode = f"{mode} model={body.get('model')}"
        # Greedy and sampled runs may differ (evaluation and training); within each, the cuts
        # and the model are the client's in every run, not only the run's (s28 att28a).
        kind = "sampling:greedy" if body.get("temperature") == 0 else "sampling:sampled"
        pinned = self._pin_client(session, kind, mode)
        if pinned != mode:
            raise GatewayError(
                400,
                f"This client's scored calls to {session.env_id!r} are sampled as {pinned!r} "
                "in every run (stop strings, stop token ids, max_tokens and the model as its "
                f"first such call sent them): a call sampled as {mode!r} needs another client "
                "key.",
                "sampling_changed",
            )
        pinned = self.sessions.pin_sampling(session.run, mode)
        if pinned != mode:
            raise GatewayError(
                400,
                f"Run {session.run!r} records scored calls sampled as {pinned!r} (temperature "
                "0 is greedy, 1 sampled; stop strings, stop token ids, max_tokens and the model "
                f"as the run's first scored call sent them): a call sampled as {mode!r} belongs in "
                "another run.",
                "sampling_changed",
            )

    def _pin_client(self, session: Session, what: str, value: str) -> str:
        """The client's pin of ``what`` for ``session``'s env (``value`` if none yet).

        Only where clients have keys: a keyless gateway serves one local client, the operator,
        whose runs may each try another harness.
        """
        if not self.config.auth_required:
            return value
        return self.sessions.pin_client(session.owner, session.env_id, what, value)

    def _pin_model(self, session: Session, model: Any) -> None:
        """Fix the model of ``session`` at its first call; refuse (400) a call for another.

        An engine may serve several models (the base and a LoRA adapter): the episode is
        recorded under the model its calls asked for, and one episode is one model's.
        """
        if model is not None and (not isinstance(model, str) or len(model) > MAX_ID_CHARS):
            raise GatewayError(
                400, f"`model` is a name of at most {MAX_ID_CHARS} characters.", "invalid_request"
            )
        asked = model or self.model
        if asked is None:
            return
        if session.model is None:
            session.model = asked
        elif asked != session.model:
            raise GatewayError(
                400,
                f"Session {session.id!r} records model {session.model!r}: a call for "
                f"{asked!r} belongs in another session.",
                "model_changed",
            )

    async def _send(self, path: str, content: bytes, stream: bool) -> tuple[Any, Engine, Any]:
        """Send to an engine (retrying on others); return (response, engine, slot)."""
        tried: set[str] = set()
        last = ""
        for _ in range(self.config.retries + 1):
            try:
                slot = self.pool.acquire(tried)
                engine = await slot.__aenter__()
            except LookupError:
                break
            request = self.client.build_request(
                "POST",
                engine.url + path,
                content=content,
                headers={"content-type": "application/json"},
            )
            try:
                response = await self.client.send(request, stream=stream)
            except Exception as e:
                engine.errors += 1
                engine.healthy = False
                tried.add(engine.name)
                last = f"{engine.name}: {type(e).__name__}: {e}"
                await slot.__aexit__(None, None, None)
                continue
            if response.status_code in _RETRY_STATUS:
                engine.errors += 1
                tried.add(engine.name)
                last = f"{engine.name}: HTTP {response.status_code}"
                await response.aclose()
                await slot.__aexit__(None, None, None)
                continue
            return response, engine, slot
        raise GatewayError(502, f"No engine could serve the call ({last}).", "engine_error")

    async def _send_counted(
        self,
        path: str,
        content: bytes | Callable[[], Awaitable[bytes]],
        stream: bool,
        session: Session | None = None,
        principal: str | None = None,
        size: int = 0,
    ) -> tuple[Any, Engine, Any, float]:
        """:meth:`_send`, counted in flight from here until its reply is released.

        A session's call counts for the session too, so a reward that arrives meanwhile waits
        for this call's record; and for its client (the session's owner or ``principal``),
        against ``max_in_flight_per_client``. ``content`` may be a coroutine function that
        builds the body (a chat call's templating): the call counts while it waits for that
        too. Returns (response, engine, slot, start time).
        """
        client = session.owner if session is not None else principal
        if client is not None:
            self._limit_calls(client)  # checked and counted with no await between
        if session is not None:
            # The request's bytes count against the session's and client's bounds from here
            # (checked and held with no await between), so calls sent at once cannot each
            # pass the check on what was recorded before any of them.
            self.sessions.reserve(session, size)
        self.in_flight += 1
        if session is not None:
            session.in_flight += 1
        if client is not None:
            self._client_calls[client] += 1
        started = time.monotonic()
        try:
            if callable(content):
                content = await content()
            response, engine, slot = await self._send(path, content, stream)
        except BaseException:
            self.in_flight -= 1
            if session is not None:
                self._leave(session, size)
            self._release_client(client)
            raise
        self._slot_clients[slot] = client
        if session is not None and response.status_code < 400:
            session.replied = True  # the policy sampled for it (see end_unsampled)
        return response, engine, slot, started

    @contextlib.asynccontextmanager
    async def _template_turn(self, owner: str) -> AsyncIterator[None]:
        """One chat templating at a time per client (the thread is shared by all)."""
        turn = self._template_turns.get(owner)
        if turn is None:
            turn = self._template_turns[owner] = _Turn()
        turn.users += 1
        try:
            async with turn.lock:
                yield
        finally:
            turn.users -= 1
            if not turn.users:
                del self._template_turns[owner]

    def _cut_streams(self, engine: Engine) -> None:
        """Cut every stream open on ``engine`` as a timed-out reader's (a swap's drain ended)."""
        for cut in list(self._stream_cuts.get(engine.name, ())):
            cut()

    def _leave(self, session: Session, size: int) -> None:
        """A session's call counted by :meth:`_send_counted` has ended (recorded or not)."""
        self.sessions.release(session, size)
        session.leave()

    def _release_client(self, client: str | None) -> None:
        if client is None:
            return
        self._client_calls[client] -= 1
        if self._client_calls[client] <= 0:
            del self._client_calls[client]

    def _limit_calls(self, principal: str) -> None:
        cap = self.config.max_in_flight_per_client
        if cap is not None and self._client_calls[principal] >= cap:
            raise GatewayError(
                429,
                f"This client already has {cap} calls in flight; wait for one to finish.",
                "too_many_calls",
                {"Retry-After": "1"},
            )

    async def _free(self, response: Any, slot: Any) -> None:
        """Close an engine's reply and free its slot: the call is no longer in flight."""
        await response.aclose()
        await slot.__aexit__(None, None, None)
        self.in_flight -= 1
        self._release_client(self._slot_clients.pop(slot, None))

    async def _relay(self, path: str, raw: bytes, stream: bool, principal: str) -> Any:
        """Forward a call without a session: bytes in, bytes out."""
        from starlette.responses import Response

        response, engine, slot, started = await self._send_counted(
            path, raw, stream, principal=principal
        )
        headers = _copy_headers(response)
        if not stream or response.status_code >= 400:
            try:
                content = await response.aread()
            finally:
                await self._free(response, slot)
            if response.status_code < 400:
                self._count_usage(engine, content)
            return Response(content, status_code=response.status_code, headers=headers)

        events = 0

        async def release() -> None:
            tokens = max(0, events - 1)
            engine.completion_tokens += tokens
            self.completion_tokens += tokens
            self.rate.add(tokens)
            await self._free(response, slot)

        cleanup = _Once(release)

        async def body() -> AsyncIterator[bytes]:
            nonlocal events
            try:
                async for chunk in response.aiter_raw():
                    # One SSE event per generated token (vLLM); the last one is `[DONE]`.
                    events += chunk.count(b"data:")
                    yield chunk
            finally:
                await cleanup()

        return _DeadlineStream(
            body(),
            started + self.config.request_timeout_s,
            response.status_code,
            headers,
            cleanup,
            self._stream_cuts[engine.name],
        )

    def _count_usage(self, engine: Engine, content: bytes) -> None:
        try:
            usage = json.loads(content).get("usage") or {}
        except (ValueError, AttributeError):
            return
        completion = int(usage.get("completion_tokens") or 0)
        self.completion_tokens += completion
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        engine.completion_tokens += completion
        self.rate.add(completion)

    async def _read_reply(
        self,
        response: Any,
        slot: Any,
        session: Session,
        headers: dict[str, str],
        api: str,
        body: dict[str, Any],
        engine: Engine,
        weights: ServedWeights,
        size: int,
    ) -> Any:
        """Read a whole engine reply (not streamed, or an error) and free its slot.

        Returns the engine's error as a response, or ``(data, call)`` of a readable reply.
        """
        from starlette.responses import Response

        try:
            raw = await response.aread()
        finally:
            await self._free(response, slot)
            self._leave(session, size)
        if response.status_code >= 400:
            return Response(raw, status_code=response.status_code, headers=headers)
        try:
            data = json.loads(raw)
            return data, self._call_from_reply(api, body, data, engine, weights)
        except (ValueError, TypeError, AttributeError, IndexError) as e:
            raise GatewayError(
                502, f"Engine {engine.name} sent an unreadable reply: {e}", "engine_error"
            ) from e

    async def _recorded(
        self, session: Session, api: str, path: str, body: dict[str, Any], stream: bool, size: int
    ) -> Any:
        """Forward a session call asking for token ids and logprobs, record it, answer."""
        from starlette.responses import Response

        wants_ids = bool(body.get("return_token_ids"))
        wants_lp = body.get("logprobs") not in (None, False)
        upstream = {**POLICY_SAMPLING, **{k: v for k, v in body.items() if v is not None}}
        upstream["return_token_ids"] = True
        if not wants_lp:
            upstream["logprobs"] = True if api == "chat" else 0
        wants_usage = False
        if stream:
            # The engine's count of generated tokens: a stream's ids miss the tokens of chunks
            # an engine's parser sends nothing for (vLLM's reasoning parsers, on a lone
            # `<think>`: s22 att29x2), and they are checked against it.
            options = dict(upstream.get("stream_options") or {})
            wants_usage = bool(options.get("include_usage"))
            options["include_usage"] = True
            upstream["stream_options"] = options
        content = json.dumps(upstream).encode()
        response, engine, slot, started = await self._send_counted(
            path, content, stream, session, size=size
        )
        weights = engine.served_for(body.get("model"))
        headers = _copy_headers(response)
        if not stream or response.status_code >= 400:
            read = await self._read_reply(
                response, slot, session, headers, api, body, engine, weights, size
            )
            if not isinstance(read, tuple):
                return read
            data, call = read
            call.latency_s = time.monotonic() - started
            self._account(engine, call)
            self._record(session, call, size)
            _strip(data, wants_ids, wants_lp)
            headers.pop("content-type", None)
            return Response(
                json.dumps(data).encode(),
                status_code=response.status_code,
                headers=headers,
                media_type="application/json",
            )

        parts = _StreamParts(api)

        def record() -> None:
            call = parts.call(body, engine.name, weights)
            if call.ids_source != "engine":
                self._fill_ids(call)
            call.latency_s = time.monotonic() - started
            self._account(engine, call)
            self._record(session, call, size)

        def relay(line: str, chunk: dict[str, Any] | None) -> Iterator[bytes]:
            if chunk is None:
                yield (line + "\n\n").encode()
                return
            _strip(chunk, wants_ids, wants_lp)
            if not wants_usage:
                chunk.pop("usage", None)
            if chunk.get("choices") or chunk.get("usage") or chunk.get("error"):
                yield b"data: " + json.dumps(chunk).encode() + b"\n\n"

        return self._session_stream(
            response, slot, session, headers, started, parts, record, relay, size, engine
        )

    def _session_stream(
        self,
        response: Any,
        slot: Any,
        session: Session,
        headers: dict[str, str],
        started: float,
        parts: _StreamParts,
        record: Callable[[], None],
        relay: Callable[[str, dict[str, Any] | None], Iterator[bytes]],
        size: int,
        engine: Engine,
    ) -> Any:
        """A session call's event stream, each event as ``relay`` rewrites it.

        ``relay`` gets the line and its JSON (``None`` when it is not JSON); every JSON event
        is added to ``parts`` first. When the stream is released, ``record`` writes the call --
        also one that did not finish (no ``[DONE]``, no finish reason: the client closed it,
        the deadline cut it, the engine stopped), with what arrived, marked ``aborted``: every
        generation a session asked for is in its record, so no client can drop the samples
        it did not like and keep one as a first try. Then the call stops counting in flight.
        """
        complete = False

        async def release() -> None:
            await self._free(response, slot)
            try:
                parts.aborted = not (complete or parts.finish_reason is not None)
                record()
            except Exception:
                # The client has the reply: the session's record misses a generation, so it
                # is never scored (att29f F1: a reply that broke the tool-call parser went
                # unrecorded, and the client called again until a reply was right).
                session.unrecorded += 1
                _log.exception("recording a call of session %r failed", session.id)
            finally:
                self._leave(session, size)

        cleanup = _Once(release)

        def rewrite(lines: list[str]) -> bytes:
            nonlocal complete
            out: list[bytes] = []
            for line in lines:
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    complete = True
                    out.append(b"data: [DONE]\n\n")
                    continue
                try:
                    chunk = json.loads(payload)
                except json.JSONDecodeError:
                    chunk = None
                else:
                    parts.add(chunk)
                out.extend(relay(line, chunk))
            return b"".join(out)

        async def events() -> AsyncIterator[bytes]:
            # The events of one read go out in one write, as a relayed stream's bytes do.
            lines = _EventLines()
            try:
                async for text in response.aiter_text():
                    if out := rewrite(lines.feed(text)):
                        yield out
                if out := rewrite(lines.close()):
                    yield out
            finally:
                await cleanup()

        return _DeadlineStream(
            events(),
            started + self.config.request_timeout_s,
            response.status_code,
            headers,
            cleanup,
            self._stream_cuts[engine.name],
        )

    async def _templated_chat(
        self, session: Session, body: dict[str, Any], stream: bool, size: int
    ) -> Any:
        """A session's chat call as token ids appended to the session (``gateway.chat``)."""
        from starlette.responses import JSONResponse

        from rllm_adapters.gateway.chat import (
            ChatState,
            PromptTooLong,
            chat_chunk,
            chat_logprobs,
            chat_reply,
            tools_key,
        )

        templater = self.templater()
        assert templater is not None
        if not all(isinstance(m, dict) for m in body["messages"]):
            raise GatewayError(400, "Each message must be an object.", "invalid_messages")
        messages = [dict(m) for m in body["messages"]]
        tools = body.get("tools")
        prompt: list[int] = []

        async def upstream() -> bytes:
            nonlocal prompt
            # The template thread is shared: each client takes one turn at a time, so one
            # client's calls queue behind each other, not in front of another client's (att44b:
            # 3.9 MB chat calls delayed another client's "Hi" by a minute).
            context = await self._model_len()
            if context is not None and not templater.may_fit(messages, tools, context):
                # Refused before the template thread, which every client shares.
                raise GatewayError(
                    400,
                    f"The messages and tools hold more text than the model's context "
                    f"({context} tokens) "
                    "could: the call is refused before it is templated.",
                    "context_length_exceeded",
                )
            async with self._template_turn(session.owner):
                try:
                    prompt = await asyncio.get_running_loop().run_in_executor(
                        self._template_pool,
                        templater.prompt,
                        session.chat_state,
                        messages,
                        tools,
                        context,
                    )
                except PromptTooLong as e:
                    raise GatewayError(400, f"{e}.", "context_length_exceeded") from e
                except Exception as e:  # the template rejects these messages (roles, fields)
                    raise GatewayError(
                        400, f"The chat template failed: {e}", "invalid_messages"
                    ) from e
            sent = {**POLICY_SAMPLING, **templater.upstream(body, prompt)}
            if sent.get("max_tokens") is None:
                # A chat call with no limit runs to the end of the context, as on the chat
                # endpoint; the completions endpoint it is sent to would cut it at 16 tokens
                # while its pin and record said no limit (s20 att29l).
                sent["max_tokens"] = await self._context_left(len(prompt))
            return json.dumps(sent).encode()

        wants_ids = bool(body.get("return_token_ids"))
        wants_lp = body.get("logprobs") not in (None, False)
        # Counted (in flight, its bytes held) before it waits for the template thread, so the
        # per-client bounds hold calls waiting there too (att44b: 5 of 6 calls past a cap of 2).
        response, engine, slot, started = await self._send_counted(
            "/completions", upstream, stream, session, size=size
        )
        weights = engine.served_for(body.get("model"))
        headers = _copy_headers(response)

        def finish(call: Call) -> tuple[dict[str, Any], str]:
            call.api = "chat"
            call.request = _request_record(body, "chat")
            if call.ids_source != "engine":
                # The engine was sent these prompt ids; without its completion ids the text
                # is re-tokenised. Left empty, the next turn's prompt was built on none of
                # this one: the task and the reply were missing from it (s23 att29c5 F2).
                call.prompt_ids = []
                self._fill_ids(call, prompt)
            content, calls = parse_tool_calls(call.text) if tools else (call.text, [])
            message: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                message["tool_calls"] = calls
            call.message = message
            call.latency_s = time.monotonic() - started
            self._account(engine, call)
            self._record(session, call, size)
            session.chat_state = ChatState(
                [*messages, message], tools_key(tools), call.prompt_ids, call.completion_ids
            )
            reason = "tool_calls" if calls and call.finish_reason == "stop" else call.finish_reason
            return message, reason

        if not stream or response.status_code >= 400:
            read = await self._read_reply(
                response, slot, session, headers, "completions", body, engine, weights, size
            )
            if not isinstance(read, tuple):
                return read
            data, call = read
            message, reason = finish(call)
            logprobs = (
                chat_logprobs(templater, call.completion_ids, call.logprobs) if wants_lp else None
            )
            ids = (call.prompt_ids, call.completion_ids) if wants_ids else None
            return JSONResponse(chat_reply(data, message, reason, logprobs, ids))

        parts = _StreamParts("completions")
        first = True

        def record() -> None:
            finish(parts.call(body, engine.name, weights))

        def relay(line: str, chunk: dict[str, Any] | None) -> Iterator[bytes]:
            nonlocal first
            if chunk is None:
                return
            for choice in chunk.get("choices") or []:
                delta: dict[str, Any] = {"content": choice.get("text") or ""}
                if first:
                    delta["role"] = "assistant"
                    first = False
                ids = choice.get("token_ids") or []
                lps = (choice.get("logprobs") or {}).get("token_logprobs") or []
                logprobs = chat_logprobs(templater, ids, lps) if wants_lp else None
                reason = choice.get("finish_reason")
                # The tool calls of the whole reply, parsed as the recorded message's are, in
                # a last delta (an engine's tool parser streams them so): a streamed tool
                # loop saw none (att29u F2: 0 of 30).
                _, calls = parse_tool_calls("".join(parts.text)) if tools and reason else ("", [])
                out = chat_chunk(chunk, delta, None if calls else reason, logprobs)
                if wants_ids:
                    out["choices"][0]["token_ids"] = ids
                    if choice.get("prompt_token_ids") is not None:
                        out["prompt_token_ids"] = choice["prompt_token_ids"]
                yield b"data: " + json.dumps(out).encode() + b"\n\n"
                if calls:
                    pieces = [{"index": k, **tool_call} for k, tool_call in enumerate(calls)]
                    reason = "tool_calls" if reason == "stop" else reason
                    out = chat_chunk(chunk, {"tool_calls": pieces}, reason, None)
                    yield b"data: " + json.dumps(out).encode() + b"\n\n"

        return self._session_stream(
            response, slot, session, headers, started, parts, record, relay, size, engine
        )

    def templater(self) -> Any:
        """The chat templater of sessions (``None``: chat calls go to the chat endpoint)."""
        if not self.config.template_chat:
            return None
        if self._templater is None:
            tokenizer = self.tokenizer()
            if tokenizer is None or getattr(tokenizer, "chat_template", None) is None:
                return None
            from rllm_adapters.gateway.chat import ChatTemplater

            self._templater = ChatTemplater(tokenizer)
        return self._templater

    def _account(self, engine: Engine, call: Call) -> None:
        n = len(call.completion_ids)
        self.completion_tokens += n
        self.prompt_tokens += len(call.prompt_ids)
        engine.completion_tokens += n
        self.rate.add(n)

    def _call_from_reply(
        self,
        api: str,
        body: dict[str, Any],
        data: dict[str, Any],
        engine: Engine,
        weights: ServedWeights,
    ) -> Call:
        choice = (data.get("choices") or [{}])[0]
        prompt_ids = data.get("prompt_token_ids") or choice.get("prompt_token_ids")
        ids = choice.get("token_ids")
        if api == "chat":
            reply = choice.get("message") or {}
            text = str(reply.get("content") or "")
            # The reply as the client gets it: its other fields too (tool calls, an engine's
            # reasoning), which a chat template may render when the client sends them back.
            message = {
                **{k: v for k, v in reply.items() if v not in (None, "", [], {})},
                "role": "assistant",
                "content": text,
            }
            logprobs = [
                float(entry.get("logprob", 0.0))
                for entry in ((choice.get("logprobs") or {}).get("content") or [])
            ]
        else:
            message = None
            text = str(choice.get("text") or "")
            logprobs = [
                0.0 if x is None else float(x)
                for x in ((choice.get("logprobs") or {}).get("token_logprobs") or [])
            ]
        usage = data.get("usage")
        generated = usage.get("completion_tokens") if isinstance(usage, Mapping) else None
        call = Call(
            api=api,
            prompt_ids=[int(i) for i in prompt_ids or []],
            completion_ids=[int(i) for i in ids or []],
            # The engine's own count: without its ids the reply's length is unknown (s22
            # att29y2: a reply cut at its own limit read as cut by the context, 2 of 2).
            generated=generated if type(generated) is int else None,
            logprobs=logprobs,
            text=text,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            ids_source="engine" if ids is not None and prompt_ids is not None else "text_only",
            request=_request_record(body, api),
            message=message,
            engine=engine.name,
            weights_version=weights.version,
            weights_id=weights.id,
        )
        if call.ids_source != "engine":
            self._fill_ids(call)
        return call

    def _fill_ids(self, call: Call, sent: Sequence[int] | None = None) -> None:
        """Tokenise a call's text when the engine gave no ids (marked ``retokenized``).

        The prompt's ids are ``sent`` (the ids the gateway sent the engine) where given. A
        chat prompt is otherwise templated from its messages as the engine reads them
        (content parts as text, :func:`~rllm_adapters.gateway.chat.plain_message`); messages
        the template refuses (its own ``raise_exception``, a field it needs) leave the call as
        without a tokenizer: the engine answered it, so its reply is recorded, with no ids.
        """
        # The engine's completion ids here are not the whole completion (or not its own), and
        # its logprobs belong to the tokens it sampled: neither is kept, re-tokenised or not
        # (s41 att41h F2: a stream's ids short of the engine's count, and their logprobs one
        # place off, were trained without a tokenizer to re-tokenise them).
        call.completion_ids, call.logprobs = [], []
        tokenizer = self.tokenizer()
        if tokenizer is None:
            return
        prompt_ids = list(sent) if sent is not None else call.prompt_ids
        if not prompt_ids:
            if call.api == "chat":
                messages = call.request.get("messages", [])
                try:
                    prompt_ids = list(
                        tokenizer.apply_chat_template(
                            [plain_message(m) for m in messages if isinstance(m, Mapping)],
                            tokenize=True,
                            add_generation_prompt=True,
                            return_dict=False,  # transformers 5: else a BatchEncoding (att29u)
                        )
                    )
                except Exception as e:  # the template's own refusal: any error type (att29c4)
                    _log.info("the chat template refused a call's messages: %s", e)
                    return
            else:
                prompt = call.request.get("prompt")
                if isinstance(prompt, str):
                    prompt_ids = list(tokenizer.encode(prompt, add_special_tokens=False))
                elif isinstance(prompt, list) and all(isinstance(i, int) for i in prompt):
                    prompt_ids = list(prompt)
        call.prompt_ids = prompt_ids
        # The engine's logprobs (dropped above) are of the tokens it sampled, which the text's
        # tokenisation need not be even where their counts agree ("a"+"bc" against "ab"+"c").
        call.completion_ids = list(tokenizer.encode(call.text, add_special_tokens=False))
        call.ids_source = "retokenized"

    def _score_replies(self, env_id: str, calls: Sequence[Call], **kwargs: Any) -> dict[str, Any]:
        """:func:`score_with_env` of the replies of ``calls`` as graded (:func:`_graded`)."""
        replies = [_graded(call, self._decode, self._generation_prompt) for call in calls]
        return score_with_env(env_id, replies, **kwargs)

    def _grading(self) -> Any:
        """The tokenizer grading uses (``None`` without one); call with the lock held.

        A copy of its own: the templater's is used by its one thread.
        """
        if self._grading_tokenizer is None:
            if self.config.tokenizer:
                transformers = require("transformers", "train", feature="grading replies")
                self._grading_tokenizer = transformers.AutoTokenizer.from_pretrained(
                    self.config.tokenizer
                )
            elif self._tokenizer is not None:
                self._grading_tokenizer = copy.deepcopy(self._tokenizer)
            tokenizer = self._grading_tokenizer
            if tokenizer is not None:
                # A model's think markers may be special tokens; they do not end a reply
                # (s22 att29t), which the other special tokens do.
                special = set(tokenizer.all_special_ids)
                think = {
                    i
                    for i in special
                    if _THINK_TAG.fullmatch(str(tokenizer.convert_ids_to_tokens(i)))
                }
                self._grading_ends = special - think
                self._grading_think_special = bool(think)
                self._grading_generation = _generation_suffix(tokenizer)
        return self._grading_tokenizer

    def _loses_markers(self, calls: Sequence[Call]) -> bool:
        """Whether a reply of ``calls`` lost its think markers: only the engine's text.

        The text skips special tokens, the model's think markers among them where its
        tokenizer makes them special (s22 att29u: a reply cut while thinking lost its
        ``<think>`` and was graded whole, 10 of 10 paid).
        """
        texts_only = [call for call in calls if call.ids_source != "engine"]
        if not texts_only:
            return False
        # A reasoning parser that left no content: whether the reply is all reasoning or
        # had its markers taken out cannot be read from the text (s22 att29b3: right replies
        # scored 0, 4 of 4).
        for call in texts_only:
            message = call.message or {}
            if not call.text.strip() and any(message.get(n) for n in REASONING_FIELDS):
                return True
        with self._grading_lock:
            return self._grading() is not None and self._grading_think_special

    def _decode(self, ids: Sequence[int]) -> str | None:
        """The text of a reply's ``ids`` (``None`` without a tokenizer).

        As an engine's tool parser reads a reply: special tokens kept (vLLM's parsers turn
        skipping off, and a model's think markers may be special tokens: s22 att29x E3,
        att29s A1), but the end-of-turn token(s) (not a think marker: att29t), and spaces as
        generated.
        """
        with self._grading_lock:
            tokenizer = self._grading()
            if tokenizer is None:
                return None
            ids = list(ids)
            while ids and ids[-1] in self._grading_ends:
                ids.pop()
            return str(
                tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            )

    def _generation_prompt(self, call: Call) -> str:
        """The prompt text a reply continues, as far as it decides whether ``<think>`` is open.

        A completions prompt whole: the client wrote all of it, and the envs read a reply
        after an open ``<think>`` as reasoning whatever tokens follow the tag (s22 att29v: a
        tool-call or end-of-text token after it hid it, 10 of 10 paid). A chat prompt that
        ends in the chat template's generation prompt: that generation prompt (a template
        that opens the model's reasoning ends it in ``<think>``), not earlier turns or
        messages (att29s A2: an earlier reply cut while thinking left every later turn's
        ``<think>`` open; att29w2: a search for the last message's text landed in the wrong
        place). Any other chat prompt whole. Chat prompt ids are read with the tokenizer;
        without one a chat prompt reads as empty.
        """
        prompt = call.request.get("prompt") if call.api == "completions" else None
        if isinstance(prompt, str):
            return prompt
        ids = prompt if isinstance(prompt, list) else call.prompt_ids
        ids = [i for i in ids or [] if type(i) is int]
        with self._grading_lock:
            tokenizer = self._grading()
            if tokenizer is None or not ids:
                return ""
            text = str(
                tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)
            )
            suffix = self._grading_generation
        if call.api == "chat" and suffix and text.endswith(suffix):
            return suffix
        return text

    def tokenizer(self) -> Any:
        """The tokenizer for engines without token ids (``None`` if none is configured)."""
        if self._tokenizer is None and self.config.tokenizer:
            transformers = require("transformers", "train", feature="re-tokenising replies")
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.config.tokenizer)
        return self._tokenizer


#: Seconds an idle engine connection is kept for reuse: less than the engines' own keep-alive
#: (vLLM's server closes an idle connection after 5 s, ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE``). Kept
#: longer (aiohttp's default is 15 s), a connection could be reused as the engine closed it:
#: the request's write failed ("Can not write request body") and the call failed with 502
#: under load, the engine marked unhealthy.
ENGINE_KEEPALIVE_S = 3.0


class _EventLines:
    r"""The lines of a server-sent event stream, from its text as it arrives.

    Lines end at ``\r\n``, ``\r`` or ``\n`` only, as the event-stream format says:
    ``str.splitlines`` (and so httpx's ``aiter_lines``) also breaks at U+2028, U+2029 and
    U+0085, which an engine's JSON holds raw inside a string (vLLM's does), and a chunk cut
    there was neither relayed whole nor recorded.
    """

    _BREAK = re.compile(r"\r\n|\r|\n")

    def __init__(self) -> None:
        self._pieces: list[str] = []  # the line so far (joined once, however long it grows)
        self._cr = False  # the text so far ended in "\r": a "\n" may follow

    def feed(self, text: str) -> list[str]:
        """The lines that ``text`` completes."""
        if self._cr:
            text, self._cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._cr = text[:-1], True
        lines = self._BREAK.split(text)
        if len(lines) == 1:
            self._pieces.append(text)
            return []
        lines[0] = "".join(self._pieces) + lines[0]
        self._pieces = [lines.pop()]
        return lines

    def close(self) -> list[str]:
        """The last line, if the stream ended without a line break."""
        rest, ended = "".join(self._pieces), self._cr
        self._pieces, self._cr = [], False
        return [rest] if rest or ended else []


class _StreamParts:
    """The pieces of one streamed reply, joined into a :class:`Call`."""

    def __init__(self, api: str) -> None:
        self.api = api
        self.prompt_ids: list[int] | None = None
        self.ids: list[int] = []
        self.has_ids = False
        self.logprobs: list[float] = []
        self.text: list[str] = []
        self.finish_reason: str | None = None
        self.tool_calls: list[Any] = []
        #: An engine's reasoning (a reasoning parser's field), as the non-streamed message has it.
        self.reasoning: dict[str, str] = {}
        #: The stream ended before its finish (set when it is released).
        self.aborted = False
        #: The engine's count of generated tokens (its usage chunk), when it sent one.
        self.generated: int | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        usage = chunk.get("usage")
        if isinstance(usage, Mapping) and type(usage.get("completion_tokens")) is int:
            self.generated = int(usage["completion_tokens"])
        if chunk.get("prompt_token_ids") is not None:
            self.prompt_ids = [int(i) for i in chunk["prompt_token_ids"]]
        for choice in chunk.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            if choice.get("prompt_token_ids") is not None:
                self.prompt_ids = [int(i) for i in choice["prompt_token_ids"]]
            if choice.get("token_ids") is not None:
                self.has_ids = True
                self.ids.extend(int(i) for i in choice["token_ids"])
            logprobs = choice.get("logprobs") or {}
            if self.api == "chat":
                delta = choice.get("delta") or {}
                if delta.get("content"):
                    self.text.append(str(delta["content"]))
                for name in REASONING_FIELDS:
                    if delta.get(name):
                        self.reasoning[name] = self.reasoning.get(name, "") + str(delta[name])
                for piece in delta.get("tool_calls") or []:
                    self._add_tool_call(piece)
                for entry in logprobs.get("content") or []:
                    self.logprobs.append(float(entry.get("logprob", 0.0)))
            else:
                if choice.get("text"):
                    self.text.append(str(choice["text"]))
                for x in logprobs.get("token_logprobs") or []:
                    self.logprobs.append(0.0 if x is None else float(x))
            if choice.get("finish_reason") is not None:
                self.finish_reason = str(choice["finish_reason"])

    def _add_tool_call(self, piece: Any) -> None:
        """Merge a streamed tool-call delta into the call it continues (by ``index``).

        An engine streams a tool call in pieces: its id, type and name first, then its
        arguments' text over later chunks; the reply holds the whole calls, as a client that
        merges them (the openai SDK) sends them back.
        """
        if not isinstance(piece, Mapping):
            return
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            index = len(self.tool_calls)
        while len(self.tool_calls) <= index:
            self.tool_calls.append({"function": {"arguments": ""}})
        call = self.tool_calls[index]
        for key in ("id", "type"):
            if piece.get(key) is not None:
                call[key] = piece[key]
        function = piece.get("function")
        if isinstance(function, Mapping):
            if function.get("name") is not None:
                call["function"]["name"] = function["name"]
            if isinstance(function.get("arguments"), str):
                call["function"]["arguments"] += function["arguments"]

    def call(self, body: dict[str, Any], engine: str, weights: ServedWeights) -> Call:
        text = "".join(self.text)
        message: dict[str, Any] | None = (
            {"role": "assistant", "content": text} if self.api == "chat" else None
        )
        if message is not None and self.tool_calls:
            message["tool_calls"] = self.tool_calls
        if message is not None:
            message.update(self.reasoning)
        # Ids that miss tokens the engine generated are not the completion's (s22 att29x2: a
        # chat reasoning parser sends no chunk for a lone `<think>`); nor are those of a chat
        # stream that ended before the engine's count (always asked for), which shows no such
        # loss (s41 att41h F1/F3). A completion's chunks carry each of its tokens.
        counted = self.generated is not None or self.api != "chat"
        whole = counted and self.generated in (None, len(self.ids))
        exact = self.has_ids and self.prompt_ids is not None and whole
        return Call(
            api=self.api,
            prompt_ids=list(self.prompt_ids or []),
            completion_ids=self.ids,
            logprobs=self.logprobs,
            text=text,
            finish_reason=self.finish_reason or "abort",
            ids_source="engine" if exact else "text_only",
            request=_request_record(body, self.api),
            message=message,
            generated=self.generated,
            engine=engine,
            weights_version=weights.version,
            weights_id=weights.id,
            aborted=self.aborted,
        )


def _generation_suffix(tokenizer: Any) -> str | None:
    """The text a tokenizer's chat template adds for ``add_generation_prompt``.

    ``None`` where it has no template, or the text is not a suffix of the conversation's.
    """
    turn = [{"role": "user", "content": "x"}]
    try:
        without = tokenizer.apply_chat_template(turn, tokenize=False, add_generation_prompt=False)
        with_prompt = tokenizer.apply_chat_template(
            turn, tokenize=False, add_generation_prompt=True
        )
    except Exception:  # noqa: BLE001 - no template, or one that needs other messages
        return None
    if not (isinstance(without, str) and isinstance(with_prompt, str)):
        return None
    if not with_prompt.startswith(without) or len(with_prompt) == len(without):
        return None
    return with_prompt[len(without) :]


def _graded(
    call: Call,
    decode: Callable[[Sequence[int]], str | None] | None = None,
    prompt: Callable[[Call], str] | None = None,
) -> str:
    """The reply as the env reads it (:func:`_reply_text`), in the ``<think>`` its prompt opened.

    A prompt whose last turn leaves a ``<think>`` open (``prompt``: a template that opens the
    model's reasoning, DeepSeek-R1's and Qwen3's thinking ones; a completions prompt written
    so, words after the tag or not) makes the reply start inside it: a reply that never closes
    it has no answer, as the envs read a reply cut while thinking (s22 att29z, att29q: such
    replies, cut at the token limit, were paid for a box in their reasoning, 10 of 10). Where
    an engine's reasoning parser gave the reasoning its own field, the content is the answer
    part, unless the parser called the whole reply, as written, reasoning, and neither its
    prompt nor itself opened one (R1's parser on a reply without think tags: 10 of 10 right
    replies scored 0, att29q A2).
    """
    written = None  # what the model wrote, where the engine's ids and a tokenizer tell
    if decode is not None and call.ids_source == "engine" and call.completion_ids:
        written = decode(call.completion_ids)
    text = _reply_text(call, written)
    opened = prompt is not None and _opens_think(prompt(call))
    message = call.message or {}
    reasoning = next((message[n] for n in REASONING_FIELDS if message.get(n)), None)
    if reasoning is not None:
        if written is not None:
            whole = THINK_OPEN + written if opened else written
            if not split_reply(whole).finished:
                # As written, the reply ends inside a `<think>` (one it reopened after the
                # parser's reasoning, with markers the engine's text skipped: s22 att29z2,
                # 2 of 2 paid): no answer, whatever the content shows.
                return whole
            # The parser called the whole reply reasoning, as written (R1's parser on a reply
            # without think tags): only then is it the answer. A reasoning field that is part
            # of the reply, or the reply without its markers (`<seed:think>`, `[THINK]`,
            # harmony channels), is reasoning (s22 att29r: graded whole, 10 of 10 paid).
            whole_reply = written.strip() == str(reasoning).strip()
            if not opened and not text and whole_reply and not _THINK_TAG.search(written):
                return written
        return text
    return THINK_OPEN + text if opened else text


#: A ``<think>`` or ``</think>`` tag, as the envs' reasoning rule reads them.
_THINK_TAG = re.compile(r"</?think>", re.IGNORECASE)


def _opens_think(prompt: str) -> bool:
    """Whether ``prompt`` leaves a ``<think>`` open: its last tag is an opening one."""
    tags = _THINK_TAG.findall(prompt)
    return bool(tags) and not tags[-1].startswith("</")


def _reply_text(call: Call, written: str | None) -> str:
    """The reply as the env reads it: its text, with the tool calls an engine parsed out.

    An engine with a tool parser returns a tool call in ``tool_calls``, out of the content:
    graded on the content alone, every honest tool call read as none (att29u F1: 30 right
    ``final_answer`` calls scored 0). Such a reply is graded as its content followed by each
    call as a Hermes ``<tool_call>`` block, which the envs' tool-call parser reads whatever
    format the model wrote its calls in; the content stays as written (as JSON text its
    backslashes doubled and its ``</think>`` cut the JSON: att29v). Where the parser cut the
    reply before its reasoning closed (a ``</think>`` follows the content in what the model
    wrote: a call drafted while thinking), the reply is graded as the model wrote it, its
    completion ids decoded (``written``), as the templated path grades: graded as content and
    calls, a draft inside a ``<think>`` the content opened read as no call (att29w, 30 of 30
    right answers lost), and one inside a ``<think>`` the prompt opened was graded as the
    answer (s22 att29y: a wrong draft before a right final call 0/10, a right draft before a
    wrong one 10/10). Only there: decoded, a call in another format than Hermes' reads as
    none (s22 att29x E1).
    """
    message = call.message or {}
    calls = message.get("tool_calls")
    if not calls or call.text != (message.get("content") or ""):
        # No tool calls, or the raw text they were parsed from: as written (the engine's text
        # skips special tokens, a model's think markers among them: s22 att29s A1, a reply
        # cut while thinking was paid 10 of 10), unless a reasoning parser split it (its
        # content is then the answer part).
        reasoned = any(message.get(n) for n in REASONING_FIELDS)
        return written if written is not None and not reasoned else call.text
    content = call.text.rstrip()
    if written is not None and written.startswith(content):
        # The parser cut the reply before its reasoning closed: a call drafted there.
        if THINK_CLOSE in written[len(content) :].lower():
            return written
        # Calls written as Hermes blocks, the ones the parser took out: as written, so what
        # follows the last call is read too (vLLM's parser drops it: s22 att29a3, a right
        # answer after a call scored 0, a wrong one after a right box was paid, 2 of 2).
        if tool_call_key({"tool_calls": parse_tool_calls(written)[1]}) == tool_call_key(message):
            return written
    blocks = []
    for tool_call in calls:
        function = tool_call.get("function") if isinstance(tool_call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        arguments = function.get("arguments")
        with contextlib.suppress(TypeError, ValueError):
            arguments = json.loads(arguments) if isinstance(arguments, str) else arguments
        payload = json.dumps({"name": function.get("name"), "arguments": arguments})
        blocks.append(f"<tool_call>{payload}</tool_call>")
    return call.text + "".join(blocks)


def _prompt_holds(call: Call, task_prompt: Any, statement: Any = None) -> bool:
    """Whether ``call``'s prompt (text) holds ``task_prompt`` or the task's ``statement``.

    Whitespace runs read as one space. A chat call's text is its messages' contents; a prompt
    of token ids cannot be checked. An env that gives no text prompt (``None``) and no
    statement is not checked.
    """
    needles = [t for t in (task_prompt, statement) if isinstance(t, str)]
    if not needles:
        return task_prompt is None
    if call.api == "completions":
        prompt = call.request.get("prompt")
        texts = [prompt] if isinstance(prompt, str) else []
    else:
        messages = call.request.get("messages") or []
        texts = [message_text(m) for m in messages if isinstance(m, Mapping)]
    flat = [" ".join(text.split()) for text in texts]
    return any(" ".join(n.split()) in text for n in needles for text in flat)


#: The fields of a session call that make the prompt the engine sees (the others are pinned
#: with the run's sampling, or only say how the reply comes back).
_PROMPT_FIELDS = {
    "completions": ("prompt",),
    "chat": ("messages", "tools", "tool_choice", "parallel_tool_calls"),
}


def _prompt_size(call: Call) -> int:
    """Where ``call``'s prompt ends: its length (completions) or its messages' count (chat)."""
    value = call.request.get(_PROMPT_FIELDS[call.api][0])
    return len(value) if isinstance(value, (str, list)) else 0


def _call_ids(call: Call) -> list[str]:
    """The ids of ``call``'s tool calls (a tool message names the one it answers)."""
    calls = (call.message or {}).get("tool_calls")
    return [c["id"] for c in calls or [] if isinstance(c, Mapping) and isinstance(c.get("id"), str)]


#: Known texts one framing may mark: an honest prompt holds each a few times.
MAX_FRAMING_MARKS = 10_000
#: Threads templating chat calls, one call per client at a time: clients past this many
#: templating at once queue for a thread.
TEMPLATE_THREADS = 4


class _FramingTooLarge(Exception):
    """A prompt holding more known texts than :data:`MAX_FRAMING_MARKS`."""


def _framing(
    call: Call,
    known: Sequence[Mapping[str, Any]],
    ends: Sequence[int] = (),
    tools: Any = None,
    cache: dict[Any, Any] | None = None,
) -> str:
    """``call``'s prompt fields with the known texts marked by their names, as a digest.

    A chat call's ``tools`` that are the task's own (``tools``: the env's schemas for it,
    which differ between a tool env's task families) are marked too: a harness passing each
    task's tools frames its tasks alike (s23 att29c6: 11 of 12 honest ToolUse sessions were
    refused). Other tools count as sent.

    The prompt is cut where the session's earlier prompts ended (``ends``): the ``k``-th piece
    is what the ``k``-th call added (the first call's prompt, then the previous reply and the
    env's feedback), and only ``known[k]``'s texts are taken out of it, each as given (a task's
    text also stripped), longest first, everywhere in its piece, marked with its own name:
    which text fills which place is part of the framing (one mark for the env's prompt and the
    task's statement was a second wording per place: att29p F1). Exact otherwise: a greedy
    reply changes with a space or a line break, and an engine renders message fields and
    content parts the gateway's own reading skips (session 21 att29o: 0.20 -> 1.00 with
    whitespace, 0.48 -> 0.98 with a `refusal` part), so every string of every prompt field
    counts as sent.

    ``cache`` (shared by the framings of one session's turns): each piece, by its turn and
    bounds, is framed once, and the marks of all of them count against one bound.
    """
    cache = {} if cache is None else cache
    left = cache.setdefault("marks left", [MAX_FRAMING_MARKS])

    def marker(piece: Mapping[str, Any]) -> Callable[[Any], Any]:
        marks: dict[str, str] = {}
        for name, value in piece.items():
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str):
                    stripped = text.strip() if name in ("task", "statement") else text
                    for variant in (text, stripped):
                        if variant:
                            marks.setdefault(variant, name)
        ordered = sorted(marks, key=len, reverse=True)

        def framed(value: Any) -> Any:
            if isinstance(value, str):
                # Literal pieces and marks apart (a mark is an object, which no string of the
                # client's is): a literal mark in the prompt was another place for the task
                # with the same framing (att29s F1: 0.20 -> 0.87).
                # Counted before any is made (in C): a client padding a field the template
                # never renders with a short known text (a tool-call id, `call_0` x 680,000)
                # made one reward's framings 10 s of the event loop (s44 att44f F1).
                left[0] -= sum(value.count(text) for text in ordered)
                if left[0] < 0:
                    raise _FramingTooLarge
                parts: list[Any] = [value]
                for text in ordered:
                    split: list[Any] = []
                    for part in parts:
                        if not isinstance(part, str):
                            split.append(part)
                            continue
                        for i, piece in enumerate(part.split(text)):
                            split.extend([{"mark": marks[text]}, piece] if i else [piece])
                    parts = split
                return parts
            if isinstance(value, list):
                return [framed(item) for item in value]
            if isinstance(value, Mapping):
                return {str(key): framed(item) for key, item in value.items()}
            return value

        return framed

    def pieces(value: Any) -> Any:
        if not isinstance(value, (str, list)):
            return marker({})(value)
        bounds = [0, *ends[: len(known) - 1]]
        spans = list(zip(bounds, [*bounds[1:], len(value)], strict=True))
        cut = [value[a:b] for a, b in spans]
        out = []
        for k, (piece, part) in enumerate(zip(known, cut, strict=False)):
            key = ("piece", k, *spans[k])
            if key in cache:
                out.append(cache[key])
                continue
            # A later turn's reply is taken out where it is, and only there: the same text
            # elsewhere in the turn is the harness's own (a one-word FrozenLake move in a fixed
            # "Left, Right, Up or Down?" reminder marked it by the reply: honest sessions
            # whose replies differed were refused, 4 of 6: s23 att29c8).
            reply = piece.get("reply") if k else None
            rest = marker({n: v for n, v in piece.items() if n != "reply"})
            if (
                reply is not None
                and isinstance(part, list)
                and part
                and isinstance(part[0], Mapping)
            ):
                # A turn's first message is the reply as the gateway returned it (checked by
                # :func:`_continues` when its call came): all of it is the policy's.
                framed = [{"role": "assistant", "content": {"mark": "reply"}}, *rest(part[1:])]
            elif isinstance(reply, str) and reply and isinstance(part, str) and reply in part:
                # A completions turn: the reply where it first follows the previous prompt.
                at = part.index(reply)
                tail = part[at + len(reply) :]
                framed = [*rest(part[:at]), {"mark": "reply"}, *rest(tail)]
            else:
                framed = marker(piece)(part)
            cache[key] = framed
            out.append(framed)
        return out

    api = call.api
    main = _PROMPT_FIELDS[api][0]  # the prompt or the messages
    fields = {
        name: pieces(call.request.get(name)) if name == main else marker({})(call.request.get(name))
        for name in _PROMPT_FIELDS[api]
    }
    if "tools" in fields:
        # Tool schemas as sent, key order kept: a template renders them whole (``tojson``
        # keeps the order), so a reordered schema is another wording (s23 att29c7: 16 key
        # orders of one task's tools, previewed off the record, pass@1 0.58 -> 1.0), which
        # the digest's sorted keys did not see.
        sent = _as_json(call.request.get("tools"))
        fields["tools"] = {"mark": "task tools"} if tools and sent == _as_json(tools) else sent
    blob = json.dumps([api, fields], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _as_json(value: Any) -> str:
    """``value`` as JSON in its own key order (a template renders a tool schema so)."""
    return json.dumps(value, default=str)


_THINK = re.compile(r"^\s*<think>.*?</think>", re.S)
#: The chat roles a scored session's messages may have (OpenAI's names).
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _flat(text: str) -> str:
    return " ".join(text.split())


def _same_reply(sent: Mapping[str, Any], call: Call) -> bool:
    """Whether an assistant message a client sent back is ``call``'s recorded reply.

    Tool calls compare by name and arguments; text with whitespace runs read as one space,
    and a leading ``<think>`` block may be left out (chat templates drop earlier turns'
    reasoning). A message with no text matches a reply that had none, or was tool calls.
    """
    if tool_call_key(sent) != tool_call_key(call.message):
        return False
    text = message_text(sent)
    if not text.strip():
        return bool(tool_call_key(sent)) or not call.text.strip()
    recorded = [call.text, message_text(call.message or {})]
    wanted = {_flat(f(t)) for t in recorded if t for f in (str, lambda t: _THINK.sub("", t))}
    return _flat(text) in wanted


def _history_recorded(session: Session) -> bool:
    """Whether the last call's conversation holds exactly the session's earlier replies.

    A scored session is the env's episode, one call a turn: every reply the policy gave in it
    must be one the gateway recorded. A client that played turns off the record (tool turns
    through another endpoint, or another model) and recorded only the final call would have
    the final reply graded on a history the record does not hold (session 16, att29e F4:
    pass@1 0.47 against 0.21). Chat: the last call's assistant messages are the earlier
    calls' replies, as many and in order. Completions: each earlier reply appears in the last
    prompt, in order (a text prompt's turns cannot be counted). A single call must carry no
    assistant message.
    """
    *earlier, last = session.calls
    if last.api == "completions":
        prompt = last.request.get("prompt")
        if not isinstance(prompt, str):
            return not earlier
        flat, at = _flat(prompt), 0
        for call in earlier:
            found = flat.find(_flat(_THINK.sub("", call.text)), at)
            if found < 0:
                return False
            at = found
        return True
    messages = [m for m in last.request.get("messages") or [] if isinstance(m, Mapping)]
    # A role spelled otherwise ("Assistant", "model") may still render as the policy's own
    # turn in a chat template (att29f F2): only the standard names are taken.
    if any(m.get("role") not in _ROLES for m in messages):
        return False
    sent = [m for m in messages if m.get("role") == "assistant"]
    return len(sent) == len(earlier) and all(
        _same_reply(m, call) for m, call in zip(sent, earlier, strict=True)
    )


def _continues(previous: Call, call: Call) -> bool:
    """Whether ``call``'s prompt is ``previous``'s with its reply and more after it.

    Completions: the prompt starts with the previous prompt, and the reply follows, as the
    gateway returned it. Chat: the same tools and tool settings, and the messages start with
    the previous call's, exactly, then an assistant message that is its reply as returned.
    One form of each reply: a stripped one or one without its ``<think>`` block was another
    wording of the next turn's prompt, chosen per task after a preview (att29q F1: 0.63 ->
    0.82 over three turns). A scored session's middle calls are not kept, so only this ties
    them to the last call's prompt, whose framing is the run's: a middle turn worded per task
    after a previewed reply, then dropped, lifted pass@1 0.60 -> 1.00 (att29p F2).
    """
    if call.api != previous.api:
        return False
    if call.api == "completions":
        before, now = previous.request.get("prompt"), call.request.get("prompt")
        if not (isinstance(before, str) and isinstance(now, str) and now.startswith(before)):
            return False
        return previous.text in now[len(before) :]
    before_messages = previous.request.get("messages")
    messages = call.request.get("messages")
    if not (isinstance(before_messages, list) and isinstance(messages, list)):
        return False
    # The other prompt fields too: an engine renders the tools into the prompt, and a middle
    # call's were never compared (att29t F1: tools worded per task, 0.475 -> 0.925).
    # Compared as JSON in their key order (a template renders a tool schema as sent, and
    # `1 == True`): a middle call's tools reordered were other wordings (att29c9 F2).
    if any(
        _as_json(previous.request.get(k)) != _as_json(call.request.get(k))
        for k in _PROMPT_FIELDS["chat"][1:]
    ):
        return False
    n = len(before_messages)
    return (
        len(messages) > n
        and _as_json(messages[:n]) == _as_json(before_messages)
        and isinstance(messages[n], Mapping)
        and _as_returned(messages[n], previous)
    )


def _as_returned(sent: Mapping[str, Any], call: Call) -> bool:
    """Whether an assistant message a client sent back is ``call``'s reply as returned.

    The content as the same string, and every other field as returned (the tool calls with
    their ids and arguments' text), both in the form the engine gets (:func:`_message_form`):
    an engine renders content parts and fields the gateway's own reading skips (a
    ``refusal`` part, two text parts joined with a line break), so any other form was another
    wording of the next turn (att29r F1: 0.43 -> 1.00).
    """
    returned = _message_form(call.message or {"role": "assistant", "content": call.text})
    sent = _message_form(sent)
    if sent.get("role") != "assistant" or not isinstance(sent.get("content"), str):
        return False
    if sent["content"] not in {returned["content"], call.text}:
        return False
    rest = {*sent, *returned} - {"role", "content"}
    return all(_as_json(sent.get(key)) == _as_json(returned.get(key)) for key in rest)


#: The fields in which an engine's reasoning parser returns a reply's reasoning (vLLM's names).
REASONING_FIELDS = ("reasoning_content", "reasoning")


#: A session message's keys in the order an engine gets them (the rest sorted after).
_MESSAGE_KEYS = ("role", "name", "content", "tool_calls", "tool_call_id")


def _message_form(message: Any) -> Any:
    """A session call's message as the engine gets it: one form whatever the client sent.

    Each difference below reached the engine and was another wording of the next turn,
    previewed off the record, or made an honest reply sent back read as another:

    * an assistant's reasoning: the openai SDK sends it back, most harnesses do not;
    * an assistant's empty fields (``name: ""``, ``refusal: null``, ``tool_calls: []``, a
      null content, which a template tests or prints; s23 att29c9: 8 -> 12 of 12): dropped,
      the content text (``""`` where empty);
    * a tool call's other keys and key order (the SDK dumps id, function, type; its stream
      merge keeps ``index`` and ``parsed_arguments``, its ``.parse()`` fills them; att29d0,
      d1, d3): id, type, function (name, arguments) alone;
    * every message's and content part's key order (the framing digest reads keys sorted;
      att29d8: 0.67 -> 1.00): one order.
    """
    if not isinstance(message, dict):
        return message
    if message.get("role") == "assistant":
        kept = {k: v for k, v in message.items() if k not in REASONING_FIELDS and not _empty(v)}
        message = {**kept, "content": message.get("content") or ""}
        if isinstance(message.get("tool_calls"), list):
            message["tool_calls"] = [_tool_call_form(c) for c in message["tool_calls"]]
    out = _ordered(message, _MESSAGE_KEYS)
    if isinstance(out.get("content"), list):
        out["content"] = [
            _ordered(part, ("type", "text")) if isinstance(part, dict) else part
            for part in out["content"]
        ]
    return out


def _ordered(mapping: Mapping[str, Any], first: Sequence[str]) -> dict[str, Any]:
    """``mapping`` with its ``first`` keys in that order, then the rest sorted."""
    out = {k: mapping[k] for k in first if k in mapping}
    out.update((k, mapping[k]) for k in sorted(mapping) if k not in first)
    return out


def _tool_call_form(call: Any) -> Any:
    """A tool call as its id, type and function (name, arguments) alone, none empty."""
    if not isinstance(call, dict):
        return call
    out = {k: call[k] for k in ("id", "type", "function") if k in call and not _empty(call[k])}
    function = out.get("function")
    if isinstance(function, dict):
        out["function"] = {
            k: function[k]
            for k in ("name", "arguments")
            if k in function and not _empty(function[k])
        }
    return out


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def _no_calls(session: Session) -> GatewayError:
    """The refusal of a reward for a session with no recorded call (it has ended unstored)."""
    if session.unrecorded:
        return GatewayError(
            409,
            f"Session {session.id!r} recorded none of its {session.unrecorded} call(s): their "
            "replies could not be recorded (the gateway's log says why). It has ended and "
            "nothing was stored (a task it was opened for counts as a failed sample).",
            "unrecorded_call",
        )
    return GatewayError(
        409,
        f"Session {session.id!r} made no call: it has ended and nothing was stored (a "
        "trajectory of no step is no training data).",
        "no_calls",
    )


def _check_reward(reward: Any) -> None:
    """Refuse (400) a reward that is not finite or is over ``MAX_ABS_REWARD`` in size."""
    # JSON parsing takes NaN, Infinity and 1e400: one such reward in a GRPO group makes every
    # advantage of the group NaN, and a huge finite one (1e300, or an integer of 400 digits,
    # which math.isfinite cannot even convert) flattens or blows up the group's advantages:
    # refused before anything is stored.
    if abs(reward) > MAX_ABS_REWARD or not math.isfinite(float(reward)):
        raise GatewayError(
            400,
            f"`reward` must be a finite number of at most {MAX_ABS_REWARD:g} in size.",
            "invalid_reward",
        )


#: The request fields a recorded session call may carry. Each either does not change the
#: distribution the completion is sampled from (ids, logprobs, streaming, stops and lengths
#: that only cut the reply) or is a sampling setting at the policy's own value
#: (``POLICY_SAMPLING``: temperature 1, top-p 1, no top-k or min-p). Everything else vLLM
#: takes that reshapes the distribution -- ``temperature``/``top_p``/``top_k``/``min_p`` at
#: other values, ``seed``, ``logit_bias``, ``allowed_token_ids``, ``bad_words``, penalties,
#: ``min_tokens``, guided decoding, ``response_format``, ``structured_outputs``,
#: ``logits_processors``, ``vllm_xargs``, beam search -- is refused: the episode would claim
#: token-exact on-policy logprobs that are not the policy's (or a replayable sample).
_SESSION_COMMON = frozenset(
    {
        "model",
        *(k for k in SAMPLING_RECORD if k != "seed"),
        "repetition_penalty",  # at its neutral value (POLICY_SAMPLING) only
        "stream",
        "stream_options",
        "logprobs",
        "return_token_ids",
        "n",
        "best_of",
        "echo",
        "user",
    }
)
_SESSION_FIELDS = {
    "completions": _SESSION_COMMON | {"prompt"},
    "chat": _SESSION_COMMON
    | {"messages", "tools", "tool_choice", "top_logprobs", "parallel_tool_calls"},
}


#: The most stop strings (or stop token ids) a session call takes, and a stop string's length.
MAX_STOPS = 16
MAX_STOP_CHARS = 64


def _cuts(body: Mapping[str, Any]) -> str:
    """A call's stop strings, stop token ids and token limit, as one comparable text.

    ``""`` when it sets none of them. The token limit cuts a reply as a stop string does: a
    client that previewed the greedy reply off the record could end it right after a right box
    that a wrong one follows (session 18 att29i: greedy pass@1 0.31 -> 0.59).
    """
    stop = body.get("stop")
    strings = sorted({stop} if isinstance(stop, str) else set(stop or []))
    ids = sorted(set(body.get("stop_token_ids") or []))
    limit = _token_limit(body)
    if not (strings or ids or limit is not None):
        return ""
    return json.dumps([strings, ids] if limit is None else [strings, ids, limit])


def _token_limit(body: Mapping[str, Any]) -> Any:
    """A call's token limit as the engine reads it (``None``: no limit).

    ``max_completion_tokens`` before ``max_tokens`` (vLLM's chat endpoint), a null as not sent.

    A session call may not send two different ones (:func:`_check_session_fields`), so the
    gateway's templated path (which forwards one as ``max_tokens``) cuts where this says.
    """
    for name in ("max_completion_tokens", "max_tokens"):
        if body.get(name) is not None:
            return body[name]
    return None


def _cut_by_context(call: Call) -> bool:
    """Whether a reply ended for length before its own token limit (or had none).

    The engine then stopped at the end of the model's context, which the prompt's length
    sets: a client that previewed the greedy reply padded its prompt so that the context
    ended right after a right box (s20 att29m: greedy pass@1 0.33 -> 0.67, every pin kept).
    """
    if call.finish_reason != "length":
        return False
    limit = call.request.get("max_tokens")
    generated = len(call.completion_ids) if call.generated is None else call.generated
    return type(limit) is not int or generated < limit


#: The token limit of a completions call that sends none (OpenAI's documented default, and
#: vLLM's).
COMPLETIONS_DEFAULT_MAX_TOKENS = 16


def _one_token_limit(api: str, body: dict[str, Any]) -> None:
    """Make a session call's token limit one explicit ``max_tokens``: the limit the engine cuts at.

    Both vLLM endpoints read ``max_tokens``, but only the chat one reads
    ``max_completion_tokens``: the completions endpoint ignored it and cut at its default of
    16 tokens, while the run's pin said the number sent (s20 att29k: a client chose the field
    per task after a greedy preview, pass@1 0.33 -> 0.53). A completions call that sends none
    gets the default written out, so its pin says where it is cut.
    """
    limit = _token_limit(body)
    body.pop("max_completion_tokens", None)
    if limit is None and api == "completions":
        limit = COMPLETIONS_DEFAULT_MAX_TOKENS
    if limit is None:
        body.pop("max_tokens", None)
    else:
        body["max_tokens"] = limit


def _check_session_fields(api: str, body: dict[str, Any], clients: bool = True) -> None:
    """Refuse (400) a session call's fields that would reshape the sampled distribution.

    ``clients``: the gateway has client keys; their sessions may not send ``ignore_eos``
    (a keyless local trainer may, for fixed lengths; such a session is never scored).
    """
    options = body.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise GatewayError(400, "`stream_options` must be an object.", "invalid_request")
    stops = body.get("stop_token_ids")
    if stops is not None and not (
        isinstance(stops, list)
        and len(stops) <= MAX_STOPS
        and all(type(i) is int and i >= 0 for i in stops)
    ):
        raise GatewayError(
            400,
            f"`stop_token_ids` must be a list of at most {MAX_STOPS} token ids.",
            "invalid_request",
        )
    stop = body.get("stop")
    if stop is not None and not (
        (isinstance(stop, str) and len(stop) <= MAX_STOP_CHARS)
        or (
            isinstance(stop, list)
            and len(stop) <= MAX_STOPS
            and all(isinstance(x, str) and len(x) <= MAX_STOP_CHARS for x in stop)
        )
    ):
        raise GatewayError(
            400,
            f"`stop` must be a string or a list of at most {MAX_STOPS} strings of at most "
            f"{MAX_STOP_CHARS} characters.",
            "invalid_request",
        )
    limits = {body.get("max_tokens"), body.get("max_completion_tokens")} - {None}
    if len(limits) > 1 or any(type(v) is not int or v < 1 for v in limits):
        # Two limits are read differently by the engine's chat endpoint and the templated
        # path: a client pinned one and was cut at the other (att29j F1: 0.27 -> 0.57).
        raise GatewayError(
            400,
            "`max_tokens` and `max_completion_tokens` must be positive integers, and equal "
            "when both are sent.",
            "invalid_request",
        )
    # `seed: null` asks for no seed (what a session samples with anyway).
    refused = sorted(k for k in set(body) - _SESSION_FIELDS[api] if (k, body[k]) != ("seed", None))
    # A reply sampled past the policy's own end (EOS) is not the policy's sample.
    eos = body.get("ignore_eos")
    if clients and not (eos is None or eos is False):
        refused.append("ignore_eos")
    for name, value in body.items():
        if name not in POLICY_SAMPLING or value is None:
            continue
        top_k = name == "top_k"
        # Greedy (temperature 0) keeps the logprobs the model's own: vLLM applies no
        # temperature to a greedy request (its logprobs match the model's forward pass).
        neutral = (
            (-1, 0) if top_k else (0.0, 1.0) if name == "temperature" else (POLICY_SAMPLING[name],)
        )
        kinds = (int,) if top_k else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds) or value not in neutral:
            refused.append(name)
    # "required" or a named tool makes vLLM constrain the reply (guided decoding).
    if body.get("tool_choice") not in (None, "auto", "none"):
        refused.append("tool_choice")
    if refused:
        raise GatewayError(
            400,
            f"A recorded session refuses {refused}: they change the distribution the reply is "
            "sampled from (or make it replayable: `seed`), so its logprobs would not be the "
            "policy's (`ignore_eos`: sampled past the policy's own end). A session samples "
            "at temperature 1 (or 0, greedy), top_p 1, no top_k/min_p, repetition_penalty 1 "
            "(those values may be sent); it takes max_tokens, stop and stop_token_ids "
            "(recorded with each step); send the others without a session.",
            "field_not_recordable",
        )


def _request_record(body: dict[str, Any], api: str) -> dict[str, Any]:
    """What of a request is kept with its call: what makes its prompt, and sampling settings.

    The prompt (completions) or the messages, tools and tool settings (chat); nothing else
    the client sent.
    """
    keep = (*_PROMPT_FIELDS[api], "model", *SAMPLING_RECORD)
    return {k: body[k] for k in keep if k in body}


def _strip(data: dict[str, Any], keep_ids: bool, keep_logprobs: bool) -> None:
    """Remove from a reply what the gateway asked for and the client did not."""
    if not keep_ids:
        data.pop("prompt_token_ids", None)
    for choice in data.get("choices") or []:
        if not keep_ids:
            choice.pop("token_ids", None)
            choice.pop("prompt_token_ids", None)
        if not keep_logprobs and "logprobs" in choice:
            choice["logprobs"] = None


def _bearer(request: Any) -> str:
    header = str(request.headers.get("authorization", ""))
    return header[7:].strip() if header[:7].lower() == "bearer " else ""


def _copy_headers(response: Any) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.lower() not in _HOP_HEADERS}


def _error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> Any:
    from starlette.responses import JSONResponse

    kind = "invalid_request_error" if status < 500 else "server_error"
    return JSONResponse(
        {"error": {"message": message, "type": kind, "code": code}},
        status_code=status,
        headers=headers,
    )


#: A ``\\uD800``-``\\uDFFF`` escape (lone unless half of a pair), or such a code point
#: encoded as bytes (``json.loads`` decodes bytes with ``surrogatepass``).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


#: JSON strings and containers one request body may hold, counted before it is parsed (and
#: its values, ``GatewayConfig.max_body_values``): parsing and reading a body run on the
#: event loop, some microseconds a value, and 1.35 million ``{}`` in one 4 MB chat call held
#: every client 6 s (s44 att44d). An honest body holds far fewer: a chat of thousands of
#: messages with tools.
MAX_BODY_STRINGS = 50_000
MAX_BODY_CONTAINERS = 20_000


async def _parse(raw: bytes, max_values: int) -> tuple[bytes, dict[str, Any]]:
    try:
        # UTF-8 only (RFC 8259): json.loads would also take UTF-16/32 bytes, whose lone
        # surrogates no escape check below would see.
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise GatewayError(400, f"The body is not UTF-8 JSON: {e}.", "invalid_json") from e
    try:
        data = loads_bounded(
            text,
            strings=MAX_BODY_STRINGS,
            containers=MAX_BODY_CONTAINERS,
            values=max_values,
        )
    except JSONTooComplex as e:
        raise GatewayError(
            413, f"The JSON body holds {e}: send fewer, larger values.", "body_too_complex"
        ) from e
    except RecursionError as e:  # a few kB of `[[[[...` nest past the parser's stack
        raise GatewayError(400, "The JSON body is nested too deeply.", "invalid_json") from e
    except ValueError as e:  # malformed, or an integer of more than 64 digits
        raise GatewayError(400, f"Malformed JSON body: {e}.", "invalid_json") from e
    if not isinstance(data, dict):
        raise GatewayError(400, "The JSON body must be an object.", "invalid_request")
    if _SURROGATE_ESCAPE.search(text):
        # JSON takes a lone surrogate ("\\udc00"); no UTF-8 text holds one, so a session that
        # kept it could never be stored. Checked only when the body escapes a surrogate.
        try:
            json.dumps(data, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as e:
            raise GatewayError(
                400,
                "The JSON body holds a lone surrogate escape (\\ud800-\\udfff), which is "
                "not text: send valid Unicode.",
                "invalid_json",
            ) from e
    return raw, data


def _deadline_stream_class() -> type:
    from starlette.responses import StreamingResponse

    class DeadlineStream(StreamingResponse):
        """A streamed reply that gives up on a client still reading at ``deadline``."""

        def __init__(
            self,
            content: Any,
            deadline: float,
            status_code: int,
            headers: dict[str, str],
            cleanup: Callable[[], Awaitable[None]],
            cuts: set[Callable[[], None]] | None = None,
        ) -> None:
            headers = {k: v for k, v in headers.items() if k.lower() != "content-type"}
            super().__init__(
                content, status_code=status_code, headers=headers, media_type="text/event-stream"
            )
            self.deadline = deadline
            self.cleanup = cleanup
            self.cuts = set() if cuts is None else cuts  # where a swap finds how to cut it

        async def stream_response(self, send: Any) -> None:
            # One timer for the whole reply (not a timeout around every chunk, which costs a
            # task per chunk): at the deadline the reply is cancelled wherever it waits.
            loop = asyncio.get_running_loop()
            task = asyncio.current_task()
            expired = False

            def expire() -> None:
                nonlocal expired
                if expired:  # the deadline and a swap's cut: one cancellation
                    return
                expired = True
                if task is not None:
                    task.cancel()

            # A reader is slow while this task waits in `send` (its connection's buffers are
            # full); a swap cuts only such streams: one read at full speed is served to its
            # end, however long it generates (s44 att44j F2: honest streams were cut 3/3).
            # Judged over the time since the swap's first cut, not at one instant: a reader
            # draining its buffers only around each check escaped (att44l: 20% of the time).
            blocked = 0.0  # seconds waited in `send`
            since: float | None = None  # when the wait in `send` now began
            first: tuple[float, float] | None = None  # (when, blocked) at the first cut

            async def send_tracked(message: Any) -> None:
                nonlocal blocked, since
                since = loop.time()
                try:
                    await send(message)
                finally:
                    blocked += loop.time() - since
                    since = None

            def cut() -> None:
                nonlocal first
                now = loop.time()
                waited = blocked + (now - since if since is not None else 0.0)
                if first is None:
                    first = (now, waited)
                    if since is not None:
                        expire()
                elif waited - first[1] > SLOW_READER_SHARE * (now - first[0]):
                    expire()

            left = max(0.0, self.deadline - time.monotonic())
            handle = loop.call_at(loop.time() + left, expire)
            self.cuts.add(cut)
            try:
                await super().stream_response(send_tracked)
            except asyncio.CancelledError:
                if not expired:
                    raise
                uncancel = getattr(task, "uncancel", None)
                if uncancel is not None:
                    uncancel()
                _SLOW_READERS.append(time.monotonic())
                raise TimeoutError("the reply was not read within the request timeout") from None
            finally:
                handle.cancel()
                self.cuts.discard(cut)
                close = getattr(self.body_iterator, "aclose", None)
                if close is not None:
                    await close()
                # A body never iterated (the client left at once) still frees its engine slot.
                await self.cleanup()

    return DeadlineStream


#: Request bodies (at the size limit) one client may have arriving at once.
RECEIVING_BODIES = 8

#: A stream whose client kept the gateway waiting to send for more than this share of the
#: time since a swap's drain ended is a slow reader's, and cut.
SLOW_READER_SHARE = 0.5


class _Turn:
    """A client's turn at the template thread, and how many of its calls want it."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class _Once:
    """An async cleanup that runs once however many paths call it."""

    def __init__(self, fn: Callable[[], Awaitable[None]]) -> None:
        self.fn = fn
        self.done = False

    async def __call__(self) -> None:
        if not self.done:
            self.done = True
            await self.fn()


class _DeadlineStreamFactory:
    _cls: type | None = None

    def __call__(self, *args: Any) -> Any:
        if self._cls is None:
            type(self)._cls = _deadline_stream_class()
        assert self._cls is not None
        return self._cls(*args)


_DeadlineStream = _DeadlineStreamFactory()
