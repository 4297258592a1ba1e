"""Recording by session: every call of a session becomes one step of one trajectory.

A session is named in the URL (``/sessions/{id}/v1/...``) or by the ``X-Session-Id`` header.
Each call through it is recorded as the engine reported it -- the prompt ids it saw, the ids it
generated and their logprobs -- never re-tokenised (:class:`Call`). The session ends when a
reward arrives (``POST /sessions/{id}/reward``, a number or one of our envs' scorers), when
it has been idle too long, or at shutdown; it is then written to the episode store as one
:class:`~rllm_agents.trajectory.Trajectory` that the GRPO/PPO trainer and SFT read as they
read rollouts.

**Token exactness.** A trajectory is one token sequence when every call's prompt extends the
previous call's prompt and completion (what an agent that appends to its conversation gets
from a template that does not rewrite history). That is checked, not assumed: when it holds
the trajectory is ``token_source="engine"``, ``token_exact=True``; when a prompt does not
extend the sequence the engine's ids of each call are still stored as they were, and the
trajectory says ``token_source="server_template"`` (chat) or ``"prompt_mismatch"``
(completions), ``token_exact=False``, with the first such call in
``metadata["token_exact_lost_at_turn"]``. An engine that returns no ids gives
``"retokenized"`` (the gateway tokenised the text with the served tokenizer) or, without a
tokenizer, empty ids and ``token_source="text_only"``.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import json
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rllm_adapters.error import AdapterConfigError
from rllm_agents.trajectory import Step, Trajectory, to_jsonable

__all__ = [
    "GRADE_INFO",
    "MAX_ID_CHARS",
    "POLICY_SAMPLING",
    "MAX_RUNS_PER_CLIENT",
    "RESERVED_METADATA",
    "RESERVED_STEP_INFO",
    "Call",
    "Session",
    "SessionError",
    "SessionRegistry",
    "check_json_field",
    "score_with_env",
]

_log = logging.getLogger(__name__)

#: The fields the gateway writes into each recorded step's ``info``: a reward's ``info`` may
#: not name them (the gateway's values win).
RESERVED_STEP_INFO = frozenset(
    {
        "call",
        "api",
        "engine",
        "model",
        "weights_version",
        "weights_id",
        "ids_source",
        "sampling",
        "scored",
        "reward_source",
        "client_grade",
        "aborted",
    }
)
#: The ``info`` fields that read as a verified grade (``Trajectory.is_correct`` reads
#: ``is_correct``; pass@k reads the store's ``is_correct`` column). Only an operator's scorer
#: sets them: a number reward's ``info`` keeps the client's values under ``"client_grade"``.
GRADE_INFO = frozenset(
    {
        "is_correct",
        "grade",
        "reward_components",
        "reference_answer",
        "extracted_answer",
        "answer_source",
        "correct",
        "score",
        "verified",
    }
)
#: The longest id (``env_id``, ``task_id``, ``run``) a session takes, in characters.
MAX_ID_CHARS = 256
#: What one recorded id or logprob holds in memory, in bytes (a list slot and an int or
#: float object), counted against a session's ``max_bytes``.
ID_BYTES = 36
#: A run a client names: letters, digits and ``_.:-`` (no look-alikes by space or invisible
#: characters; one differing from another client's only by case is refused too).
RUN_RE = re.compile(r"[A-Za-z0-9_.:-]{1,256}")
#: Runs one client may claim (each claim is kept on disk for good).
MAX_RUNS_PER_CLIENT = 1024
#: The sampling settings of a call kept in its step's ``info["sampling"]`` (a session refuses
#: every other field that changes the sampling distribution; see ``gateway.app``).
SAMPLING_RECORD = (
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "seed",
    "stop",
    "stop_token_ids",
    "ignore_eos",
)
#: The sampling settings a session call is sampled with: the policy's own distribution (what
#: the recorded logprobs describe). A session call may name them only with these values (any
#: value of ``top_k`` that turns it off; ``temperature`` 0 too: greedy, whose logprobs vLLM
#: leaves the model's own, recorded in the step's ``info["sampling"]``). The gateway sends
#: them to the engine with every session call, so an engine's defaults (vLLM applies a
#: model's ``generation_config``) do not reshape it either. ``seed`` is refused: it makes a
#: sample replayable, so a client could search seeds off the record and replay the one it
#: liked in a session.
POLICY_SAMPLING: dict[str, Any] = {
    "temperature": 1.0,
    "top_p": 1.0,
    "top_k": -1,
    "min_p": 0.0,
    "repetition_penalty": 1.0,
}
#: How deep and how large (as JSON) a reward's ``info`` or a session's ``metadata`` may be.
MAX_JSON_DEPTH = 32
MAX_JSON_BYTES = 64 * 1024
#: The ``metadata`` keys the gateway writes into each stored episode: a session's own
#: ``metadata`` may not name them (who recorded it, with which model, weights and timing).
RESERVED_METADATA = frozenset(
    {
        "session_id",
        "client",
        "source",
        "model",
        "weights_versions",
        "weights_ids",
        "engines",
        "latency_s",
        "timings",
        "token_exact_lost_at_turn",
        "task_index",
        "reward_source",
        "aborted_calls",
    }
)


class SessionError(Exception):
    """A session call that must be refused; ``status`` is the HTTP status to answer."""

    def __init__(self, status: int, message: str, code: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class Call:
    """One call through a session, as the engine reported it.

    Attributes:
        api: ``"chat"`` or ``"completions"``.
        prompt_ids: The prompt ids the engine saw.
        completion_ids: The ids it generated.
        logprobs: Their logprobs under the engine's weights.
        text: The completion text.
        finish_reason: The engine's finish reason.
        ids_source: ``"engine"``, ``"retokenized"`` or ``"text_only"``.
        request: The request body the client sent (messages or prompt, sampling settings).
        message: The assistant message returned (chat), for the conversation record.
        engine: The engine's name.
        weights_version: The version of the weights that served it.
        weights_id: Their identity (:attr:`~rllm_adapters.gateway.engines.Engine.weights_id`).
        latency_s: Seconds from the call's start to its last byte.
        generated: How many tokens the engine says it generated (its usage), where it said so
            (a stream's ids may miss some: s22 att29x2).
        aborted: The stream ended before its finish (the client left, the deadline cut it,
            or the engine stopped): what arrived is recorded, marked, and the session can no
            longer be scored.
    """

    api: str
    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str
    ids_source: str = "engine"
    request: dict[str, Any] = field(default_factory=dict)
    message: dict[str, Any] | None = None
    engine: str = ""
    weights_version: int = 0
    weights_id: str = ""
    latency_s: float = 0.0
    aborted: bool = False
    generated: int | None = None


@dataclass
class Session:
    """An open session: its owner, metadata and the calls recorded so far."""

    id: str
    owner: str
    env_id: str = "gateway"
    task_id: str | None = None
    seed: int | None = None
    #: The task's index in its env's source (a scorer's ``options={"index": i}``).
    index: int | None = None
    #: The ``seed`` and ``index`` the client opened the session with, where the gateway plays
    #: its task's episode with others (a scorer's task: its own seed and index).
    opened_as: tuple[int | None, int | None] | None = None
    group: int = 0
    sample: int = 0
    run: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    created: float = field(default_factory=time.time)
    last_used: float = field(default_factory=time.monotonic)
    in_flight: int = 0
    closed: bool = False
    #: Request bytes recorded so far (bounded by the registry's ``max_session_bytes``).
    record_bytes: int = 0
    #: Request bytes of the calls in flight, held against the same bound until they end.
    reserved_bytes: int = 0
    #: The last chat exchange, when the gateway templates chat calls (see ``gateway.chat``).
    chat_state: Any = None
    #: The model the session's calls asked for (the first call's; others are refused).
    model: str | None = None
    #: A failed store of this session was logged (an idle sweep logs it once).
    store_failed: bool = False
    #: Calls whose reply reached the client but could not be recorded: such a session is
    #: not scored (its record misses a generation).
    unrecorded: int = 0
    #: The store's key of this session's sample while it is open (a session on a scorer's
    #: task): pass@k counts it as failed until the session's episode is stored.
    pending: str | None = None
    #: An engine began a reply (status < 400) to one of its calls: the policy has sampled
    #: for this session, so its pending sample stays a failure however the session ends.
    replied: bool = False
    #: A call did not continue the one before it (its prompt is not the earlier prompt, the
    #: reply and more): the session is not scored.
    diverged: bool = False
    #: Where each call's prompt ended (its length, or its messages' count): the turns'
    #: pieces of the last call's prompt, whose framing is the run's.
    sizes: list[int] = field(default_factory=list)
    #: Set when the last call in flight ends (what a reward waiting for the calls awaits).
    _idle: asyncio.Event | None = field(default=None, repr=False, compare=False)

    def leave(self) -> None:
        """One call in flight of this session has ended (recorded or refused)."""
        self.in_flight -= 1
        if self.in_flight <= 0 and self._idle is not None:
            self._idle.set()

    async def calls_done(self) -> None:
        """Wait (without polling) until this session has no call in flight."""
        while self.in_flight > 0:
            if self._idle is None:
                self._idle = asyncio.Event()
            self._idle.clear()
            await self._idle.wait()

    def trajectory(
        self,
        reward: float = 0.0,
        info: Mapping[str, Any] | None = None,
        *,
        finish: str = "terminated",
    ) -> Trajectory:
        """The session as one trajectory (the reward on its last call)."""
        steps = []
        for index, call in enumerate(self.calls):
            steps.append(
                Step(
                    prompt_ids=list(call.prompt_ids),
                    completion_ids=list(call.completion_ids),
                    logprobs=list(call.logprobs),
                    response=call.text,
                    action=call.text,
                    info={
                        "call": index,
                        "api": call.api,
                        "engine": call.engine,
                        "model": call.request.get("model") or self.metadata.get("model"),
                        "weights_version": call.weights_version,
                        "weights_id": call.weights_id,
                        "ids_source": call.ids_source,
                        "sampling": {
                            k: call.request[k] for k in SAMPLING_RECORD if k in call.request
                        },
                        **({"aborted": True} if call.aborted else {}),
                    },
                    finish_reason="abort" if call.aborted else _finish(call.finish_reason),
                )
            )
        if steps:
            last = steps[-1]
            last.reward = float(reward)
            # The gateway's own fields win: a reward's info cannot rewrite where a step's
            # tokens came from or which weights made them.
            last.info = {**to_jsonable(dict(info or {})), **last.info}
            last.terminated = finish == "terminated"
            last.truncated = finish != "terminated"
        sources = {c.ids_source for c in self.calls}
        token_source = "engine"
        lost_at: int | None = None
        if "text_only" in sources:
            token_source = "text_only"
        elif "retokenized" in sources:
            token_source = "retokenized"
        previous: list[int] = []
        for index, call in enumerate(self.calls):
            if call.prompt_ids[: len(previous)] != previous:
                lost_at = index
                break
            previous = call.prompt_ids + call.completion_ids
        if lost_at is not None and token_source == "engine":
            chat = any(c.api == "chat" for c in self.calls)
            token_source = "server_template" if chat else "prompt_mismatch"
        metadata: dict[str, Any] = {
            **self.metadata,
            "session_id": self.id,
            "client": self.owner,
            "source": "gateway",
            # The model the calls asked the engine for (a session takes one), else the served
            # model's name.
            "model": self.model
            or next((c.request.get("model") for c in self.calls if c.request.get("model")), None)
            or self.metadata.get("model"),
            "weights_versions": sorted({c.weights_version for c in self.calls}),
            "weights_ids": sorted({c.weights_id for c in self.calls}),
            "engines": sorted({c.engine for c in self.calls}),
            "latency_s": sum(c.latency_s for c in self.calls),
        }
        if lost_at is not None:
            metadata["token_exact_lost_at_turn"] = lost_at
        aborted = sum(c.aborted for c in self.calls)
        if aborted:
            metadata["aborted_calls"] = aborted
        if self.unrecorded:
            metadata["unrecorded_calls"] = self.unrecorded
        if self.index is not None:
            metadata["task_index"] = self.index
        if steps:
            metadata["reward_source"] = steps[-1].info.get("reward_source", "none")
        messages: list[dict[str, Any]] = []
        last_chat = next((c for c in reversed(self.calls) if c.api == "chat"), None)
        if last_chat is not None:
            messages = [dict(m) for m in last_chat.request.get("messages", [])]
            if last_chat.message is not None:
                messages.append(dict(last_chat.message))
        first = self.calls[0] if self.calls else None
        initial = ""
        if first is not None:
            if first.api == "completions":
                prompt = first.request.get("prompt")
                initial = prompt if isinstance(prompt, str) else ""
            else:
                initial = next(
                    (
                        str(m.get("content") or "")
                        for m in first.request.get("messages", [])
                        if isinstance(m, Mapping) and m.get("role") == "user"
                    ),
                    "",
                )
        return Trajectory(
            env_id=self.env_id,
            task_id=self.task_id,
            seed=self.seed,
            group=self.group,
            sample=self.sample,
            initial_observation=initial,
            messages=to_jsonable(messages),
            steps=steps,
            token_exact=lost_at is None and token_source == "engine",
            token_source=token_source,
            finish=finish,
            metadata=to_jsonable(metadata),
        )


def _finish(reason: str | None) -> str:
    return "length" if reason == "length" else ("abort" if reason == "abort" else "stop")


class SessionRegistry:
    """Open sessions, their owners and runs, and writing finished ones to the episode store.

    **Session ids are per client.** A session is ``(client, id)``: two clients may both use
    the id ``"s1"`` and each gets its own session, so no client can take (or block) an id
    another client will use. Another client's session is simply not found.

    **Runs belong to one client.** The first client to open a session in a run owns it; a
    session of another client naming that run is refused (403 ``run_forbidden``) and nothing
    is recorded, so one client's episodes never join another's GRPO groups. Each stored
    episode names its client (``metadata["client"]``); after a restart on the same store, a
    run already there belongs to the client its first episode names, and a run whose
    episodes name no client (written by something other than a gateway session) is refused
    to every client (409 ``run_not_owned``). With several clients (``clients``), a session
    that names no run goes to its client's own run ``"<run>:<client>"`` (``run`` defaults
    to ``"gateway"``): every run named ``"<anything>:<name>"`` is reserved for the client
    ``name`` (configured now or later), so no client can record into another's default run,
    under this ``run`` or a later one, before that client exists. A claim of a run is kept
    in the store (``EpisodeStore.pin``, first writer wins: two gateways on one store cannot
    give one run to two clients) and in ``claims_path`` (a JSON file next to the store, which
    also counts each client's claims), so a run claimed but not yet stored still belongs to
    its client after a restart. A default run that the store shows holding another client's
    episodes stops the gateway at start (:meth:`load_runs`).

    **A session's record is bounded**: at most ``max_calls`` calls and ``max_bytes`` request
    bytes (409 ``session_full`` above; end the session with its reward and open another).

    Args:
        store: An :class:`~rllm_agents.store.EpisodeStore` (``None``: sessions are refused).
        run: Default run name of stored episodes.
        max_sessions: Open sessions at once.
        model: The served model's name, stored with each episode.
        max_per_owner: Open sessions one owner may hold at once (``None``: no such limit).
        clients: The client names of a gateway with keys (each gets its own default run);
            ``None``: one local client, whose default run is ``run``.
        max_calls: Calls one session may record.
        max_bytes: Request bytes one session may record.
        claims_path: A JSON file that keeps run claims across restarts (``None``: in memory).
    """

    def __init__(
        self,
        store: Any,
        *,
        run: str | None,
        max_sessions: int,
        model: str | None,
        max_per_owner: int | None = None,
        clients: Iterable[str] | None = None,
        max_calls: int = 1024,
        max_bytes: int = 64 * 2**20,
        claims_path: str | Path | None = None,
        max_bytes_per_client: int | None = None,
    ) -> None:
        self.store = store
        self.run = run
        self.max_sessions = max_sessions
        self.max_per_owner = max_per_owner
        self._open_by_owner: collections.Counter[str] = collections.Counter()
        self.model = model
        #: Open sessions by ``(client, session id)``.
        self.sessions: dict[tuple[str, str], Session] = {}
        #: Ended sessions of each client (its oldest forgotten past ``max_sessions``), so a
        #: late call to an ended session is refused rather than opening a new one. Kept per
        #: client: no client's churn can evict another's marks.
        self.ended: dict[str, collections.OrderedDict[str, None]] = collections.defaultdict(
            collections.OrderedDict
        )
        self.per_client_runs = clients is not None
        #: The client each run belongs to (claimed here, or read from the store); ``""``: a
        #: run in the store whose episodes name no client.
        self.clients = list(clients or ())
        self.run_owners: dict[str, str] = {self.default_run(c) or "": c for c in self.clients}
        self.max_calls = max_calls
        self.max_bytes = max_bytes
        self.max_bytes_per_client = max_bytes_per_client
        #: Bytes recorded in each client's open sessions (what ``max_bytes_per_client`` bounds).
        self._bytes_by_owner: collections.Counter[str] = collections.Counter()
        #: Request bytes of calls in flight per client (see :meth:`reserve`).
        self._reserved_by_owner: collections.Counter[str] = collections.Counter()
        self.claims_path = None if claims_path is None else Path(claims_path)
        #: How each run's scored sessions sample and are framed, fixed by the first scored call
        #: (session) and kept in the store (``EpisodeStore.pin``), by pin key; read through to
        #: the store on a miss.
        self._pins: dict[str, str] = {}
        # An older gateway kept them next to the claims: they move into the store.
        old_pins = None if self.claims_path is None else self.claims_path.with_suffix(".sampling")
        if store is not None and old_pins is not None and old_pins.is_file():
            self._pins = {
                f"sampling:{k}": store.pin(f"sampling:{k}", m)
                for k, m in _read_claims(old_pins).items()
            }
        self._claims: dict[str, str] = {}
        if self.claims_path is not None and self.claims_path.is_file():
            self._claims = _read_claims(self.claims_path)
        for run, owner in self._claims.items():
            self.run_owners.setdefault(run, owner)
        self._claims_by_owner: collections.Counter[str] = collections.Counter(self._claims.values())
        self._stored_runs: set[str | None] | None = None
        self.stored = 0
        self.store_errors = 0
        self.recorded_calls = 0
        #: Counts per client (what ``/metrics`` shows a client of its own).
        self.client_counts: dict[str, collections.Counter[str]] = collections.defaultdict(
            collections.Counter
        )
        self._lock = threading.Lock()
        # Stores run on their own thread: scoring or other work in the default executor
        # never holds up ending a session. Each client has its own queue of stores and the
        # thread serves the clients in turn (one store each), so one client's big episodes
        # wait behind its own, not another client's reward (att29b G7).
        self._store_pool = concurrent.futures.ThreadPoolExecutor(1, "rllm-gateway-store")
        self._store_lock = threading.Lock()
        self._store_queues: dict[str, collections.deque[Any]] = {}
        self._store_served: collections.Counter[str] = collections.Counter()

    def default_run(self, owner: str) -> str | None:
        """The run of ``owner``'s sessions that name none."""
        if self.per_client_runs:
            return f"{self.run or 'gateway'}:{owner}"
        return self.run

    def load_runs(self) -> None:
        """Read the store's run names (once; the gateway does it at start, off its loop).

        Raises:
            AdapterConfigError: a configured client's default run holds another client's episodes
                (recorded before that client was configured): the gateway must not add to
                it. Move those episodes or start with another ``run``.
        """
        if self._stored_runs is None and self.store is not None:
            runs = getattr(self.store, "runs", None)
            self._stored_runs = set(runs()) if runs is not None else set()
            for client in self.clients:
                run = self.default_run(client) or ""
                # Pinned in the store, so a gateway on it started with another --run does not
                # take this client's default run for a run of its own clients.
                if self._pin_owner(run, client) != client:
                    raise AdapterConfigError(
                        f"Run {run!r}, the default run of client {client!r}, belongs to "
                        "another client in this store: start the gateway with another --run."
                    )
                if run not in self._stored_runs:
                    continue
                for episode in self.store.episodes(run=run):
                    metadata = episode.trajectory.metadata
                    if metadata.get("client") != client:
                        raise AdapterConfigError(
                            f"Run {run!r}, the default run of client {client!r}, holds "
                            f"episodes of another client ({metadata.get('client')!r}): "
                            "start the gateway with another --run, or move them."
                        )

    def _run_owner(self, run: str) -> str | None:
        """Who owns ``run`` (``None``: nobody yet, ``""``: episodes that name no client)."""
        owner = self.run_owners.get(run)
        if owner is not None:
            return owner
        self.load_runs()
        assert self._stored_runs is not None
        if run not in self._stored_runs:
            return None
        first = next(iter(self.store.episodes(run=run, limit=1)), None)
        metadata = first.trajectory.metadata if first is not None else {}
        client = metadata.get("client") if metadata.get("source") == "gateway" else None
        self.run_owners[run] = owner = client if isinstance(client, str) else ""
        return owner

    def _reserved_for(self, run: str) -> str | None:
        """The client whose default-run namespace ``run`` is in (``None``: not reserved).

        ``"<anything>:<name>"`` is ``name``'s, whatever the prefix: a later start with another
        ``--run`` makes ``"<that run>:<name>"`` the client's default run, and a run another
        client claimed first stopped that start for every client (s29 att29a F2). A
        configured name may hold ``:`` itself (the longest that ends the run wins); otherwise
        the name is what follows the last ``:``, so a client configured later is covered too.
        """
        if not self.per_client_runs or ":" not in run:
            return None
        for client in sorted(self.clients, key=len, reverse=True):
            if len(run) > len(client) + 1 and run.endswith(":" + client):
                return client
        return run.rsplit(":", 1)[1]

    def _claim_run(self, run: str | None, owner: str) -> None:
        """Make ``run`` ``owner``'s (held under the lock), or refuse it."""
        key = run or ""
        if run is None and key not in self.run_owners:
            return  # the single local client's unnamed run
        reserved = self._reserved_for(key)
        if reserved is not None and reserved != owner:
            raise _run_forbidden(run)
        found = self._run_owner(key)
        if found is None:
            self._refuse_lookalike(key, owner)
            if self._claims_by_owner[owner] >= MAX_RUNS_PER_CLIENT:
                raise SessionError(
                    429,
                    f"This client has claimed {MAX_RUNS_PER_CLIENT} runs, its limit: record "
                    "into a run it already owns.",
                    "too_many_runs",
                )
            # The store decides between gateways that share it (first writer wins), as for
            # the sampling pin: a claim kept only here and in this gateway's side file let
            # another gateway on the same store give the run to its own client.
            pinned = self._pin_owner(key, owner)
            self.run_owners[key] = pinned
            if pinned != owner:
                raise _run_forbidden(run)
            self._save_claim(key, owner)
        elif found == "":
            raise SessionError(
                409,
                f"Run {run!r} holds episodes that no gateway client recorded: name another "
                "`run` for this session.",
                "run_not_owned",
            )
        elif found != owner:
            raise _run_forbidden(run)

    def _pin_owner(self, run: str, owner: str) -> str:
        """The owner the store keeps for ``run``: ``owner`` unless another was pinned first.

        Keyed by the name's case fold, so a look-alike by case that another gateway on the
        store claimed is refused as the run itself is.
        """
        if self.store is None:
            return owner
        return str(self.store.pin(f"run_owner:{run.casefold()}", owner))

    def _refuse_lookalike(self, run: str, owner: str) -> None:
        """Refuse a new run that differs only by case from a run another client owns."""
        folded = run.casefold()
        known = set(self.run_owners) | {r for r in self._stored_runs or () if r is not None}
        for other in known:
            if other != run and other.casefold() == folded:
                if self._run_owner(other) != owner:
                    raise _run_forbidden(run)

    def _save_claim(self, run: str, owner: str) -> None:
        """Keep a new claim on disk (so a restart knows it before anything is stored).

        One JSON line appended per claim: a claim costs the same however many there are.
        """
        self._claims[run] = owner
        self._claims_by_owner[owner] += 1
        if self.claims_path is None:
            return
        line = json.dumps([run, owner]) + "\n"
        fd = os.open(self.claims_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(line)

    def pin_sampling(self, run: str | None, mode: str) -> str:
        """The sampling mode of ``run``'s scored sessions: ``mode`` if it has none yet.

        Kept in the store (``EpisodeStore.pin``, first writer wins): two gateways on one
        store, or a store restored without its side files, let a run mix greedy and sampled
        calls when the pin lived in a file next to it (session 18 att29i: 0.44-0.53 for 0.30).
        """
        return self._pin(f"sampling:{run or ''}", mode)

    def pin_framing(self, run: str | None, env_id: str, turns: int, framing: str) -> str:
        """The framing of ``run``'s scored sessions of ``env_id`` of ``turns`` calls.

        ``framing`` if none yet. What a harness wraps each task in (its prompt with the task's
        text, the replies and the env's feedback taken out;
        :func:`rllm_adapters.gateway.app._framing`), kept in the store like the sampling. Per
        env, as a client's own pin is: each env has its own instructions, and a run (a
        client's default one) may hold several envs' sessions (s45 att45b F2: every session
        of the second env was refused).
        """
        return self._pin(json.dumps(["framing", run or "", env_id, turns]), framing)

    def pin_weights(self, run: str | None, weights_id: str) -> str:
        """The weights of ``run``'s greedy scored sessions: ``weights_id`` if none yet."""
        return self._pin(f"weights:greedy:{run or ''}", weights_id)

    def pin_client(self, owner: str, env_id: str, what: str, value: str) -> str:
        """``what`` of ``owner``'s scored sessions of ``env_id`` in all its runs (else ``value``).

        A run's pins alone hold only inside the run, and a client names its runs: one that
        opened each task in a run of its own framed it (and could cut and sample it) the way
        its reply, previewed off the record, was right (s28 att28a: 12 of 12 tasks paid,
        3 of 12 honest). Kept in the store like a run's.
        """
        return self._pin(json.dumps(["client", owner, env_id, what]), value)

    def _pin(self, key: str, value: str) -> str:
        with self._lock:
            pinned = self._pins.get(key)
            if pinned is not None:
                return pinned
            pinned = self._pins[key] = self.store.pin(key, value)
            return pinned

    def open_of(self, owner: str) -> int:
        """How many sessions ``owner`` holds open."""
        return self._open_by_owner.get(owner, 0)

    def _require_store(self) -> None:
        if self.store is None:
            raise SessionError(
                503,
                "This gateway records no sessions: start it with --store PATH.",
                "recording_disabled",
            )

    def create(
        self,
        owner: str,
        session_id: str | None = None,
        *,
        fields: Mapping[str, Any] | None = None,
    ) -> Session:
        """Open a session of ``owner`` (a random id unless one is given).

        Raises:
            SessionError: 400 bad fields, 403/409 a run this client may not write to, 409 an
                id this client already used, 429/503 too many open sessions.
        """
        self._require_store()
        values = dict(fields or {})
        metadata_field = values.get("metadata")
        if metadata_field is not None and not isinstance(metadata_field, Mapping):
            raise SessionError(400, "`metadata` must be an object.", "invalid_session")
        check_json_field(values.get("metadata") or {}, "metadata", "invalid_session")
        # Keys the store reads as its own columns (the env's kwargs, timings: every `*_s`)
        # are the gateway's too.
        reserved = sorted(
            k
            for k in values.get("metadata") or {}
            if k in RESERVED_METADATA or k == "env_kwargs" or str(k).endswith("_s")
        )
        if reserved:
            raise SessionError(
                400,
                f"`metadata` may not set {reserved}: the gateway records them.",
                "invalid_session",
            )
        env_id = _opt_id(values.pop("env_id", None), "env_id") or "gateway"
        task_id = _opt_id(values.pop("task_id", None), "task_id")
        seed = _opt_int(values.pop("seed", None), "seed")
        index = _opt_int(values.pop("index", None), "index")
        group = _opt_int(values.pop("group", 0), "group") or 0
        sample = _opt_int(values.pop("sample", 0), "sample") or 0
        for name, value in (("seed", seed), ("index", index), ("group", group), ("sample", sample)):
            if value is not None and value < 0:
                raise SessionError(
                    400, f"Session field `{name}` must not be negative.", "invalid_session"
                )
        named = _opt_id(values.pop("run", None), "run")
        if named is not None and not RUN_RE.fullmatch(named):
            raise SessionError(
                400,
                "A run name is 1-256 letters, digits and `_.:-` (no spaces or other "
                "characters, which make look-alike names).",
                "invalid_session",
            )
        run = named or self.default_run(owner)
        metadata = {"model": self.model, **dict(values.pop("metadata", None) or {})}
        if values:
            raise SessionError(
                400,
                f"Unknown session field(s) {sorted(values)}; valid: env_id, task_id, seed, "
                "index, group, sample, run, metadata.",
                "invalid_session",
            )
        # The metadata is held until the session ends: it counts against the bounds.
        held = held_bytes(len(json.dumps(metadata)), metadata)
        with self._lock:
            if len(self.sessions) >= self.max_sessions:
                raise SessionError(503, "Too many open sessions; try later.", "too_many_sessions")
            if self.max_per_owner is not None and self._open_by_owner[owner] >= self.max_per_owner:
                raise SessionError(
                    429,
                    f"This client already has {self.max_per_owner} open sessions: end one "
                    "(send its reward) first.",
                    "too_many_sessions",
                )
            sid = session_id or secrets.token_urlsafe(16)
            if (owner, sid) in self.sessions or sid in self.ended.get(owner, ()):
                raise SessionError(409, f"Session {sid!r} already exists.", "session_exists")
            cap = self.max_bytes_per_client
            if cap is not None and self._bytes_by_owner[owner] + held > cap:
                raise SessionError(
                    429,
                    f"This client's open sessions hold {cap} recorded bytes, its limit: send "
                    "their rewards first.",
                    "client_full",
                )
            self._claim_run(run, owner)
            session = Session(
                id=sid,
                owner=owner,
                env_id=env_id,
                task_id=task_id,
                seed=seed,
                index=index,
                group=group,
                sample=sample,
                run=run,
                metadata=metadata,
            )
            session.record_bytes = held
            self._bytes_by_owner[owner] += held
            self.sessions[owner, sid] = session
            self._open_by_owner[owner] += 1
            return session

    def get(self, session_id: str, principal: str, *, create: bool = True) -> Session:
        """The open session ``session_id`` of ``principal`` (opened on first use).

        Raises:
            SessionError: 404 if ``principal`` has no such session (and ``create`` is off),
                409 if it has ended.
        """
        self._require_store()
        key = (principal, session_id)
        with self._lock:
            session = self.sessions.get(key)
            ended = session_id in self.ended.get(principal, ())
        if session is None:
            if ended:
                raise SessionError(409, f"Session {session_id!r} has ended.", "session_ended")
            if not create:
                raise SessionError(404, f"No open session {session_id!r}.", "session_not_found")
            try:
                return self.create(principal, session_id)
            except SessionError as e:
                if e.code != "session_exists":
                    raise
                with self._lock:
                    session = self.sessions.get(key)
                if session is None:  # it ended meanwhile
                    raise SessionError(
                        409, f"Session {session_id!r} has ended.", "session_ended"
                    ) from e
        if session.closed:
            raise SessionError(409, f"Session {session_id!r} has ended.", "session_ended")
        return session

    def check_room(self, session: Session, size: int) -> None:
        """Refuse a call (409 ``session_full``) that would take ``session`` past its bounds."""
        if len(session.calls) + session.in_flight >= self.max_calls:
            raise SessionError(
                409,
                f"Session {session.id!r} holds its limit of {self.max_calls} calls: send its "
                "reward and open another session.",
                "session_full",
            )
        if session.record_bytes + session.reserved_bytes + size > self.max_bytes:
            raise SessionError(
                409,
                f"Session {session.id!r} would record over {self.max_bytes} bytes: "
                "send its reward and open another session.",
                "session_full",
            )
        cap = self.max_bytes_per_client
        held = self._bytes_by_owner[session.owner] + self._reserved_by_owner[session.owner]
        if cap is not None and held + size > cap:
            raise SessionError(
                429,
                f"This client's open sessions hold {cap} recorded bytes, its limit: send "
                "their rewards first.",
                "client_full",
            )

    def reserve(self, session: Session, size: int) -> None:
        """Hold a call's ``size`` request bytes against the session's and client's bounds.

        Refused as :meth:`check_room` refuses, and (409 ``session_ended``) once a reward has
        claimed the session: a call that was templated or waited for the model's name while
        the reward came would reach the engine after the reward stopped waiting for calls,
        and its sample would go unrecorded (att29u F3); held until :meth:`release`.
        """
        with self._lock:
            if session.closed:
                raise SessionError(409, f"Session {session.id!r} has ended.", "session_ended")
            self.check_room(session, size)
            session.reserved_bytes += size
            self._reserved_by_owner[session.owner] += size

    def release(self, session: Session, size: int) -> None:
        """Give back what :meth:`reserve` held for a call that has ended."""
        with self._lock:
            session.reserved_bytes -= size
            self._reserved_by_owner[session.owner] -= size
            if self._reserved_by_owner[session.owner] <= 0:
                del self._reserved_by_owner[session.owner]

    def record(self, session: Session, call: Call, size: int = 0) -> None:
        """Append a finished call to its session (``size``: its request's bytes).

        What the call holds in memory counts against the session's ``max_bytes``: its
        request's bytes and its ids and logprobs as Python lists (``ID_BYTES`` each), so a
        session of many token-id prompts holds at most a small multiple of its bound.
        """
        # Only the first and the last call's conversation are read (the episode's first
        # observation and its messages): a middle call keeps its ids, not its messages.
        if len(session.calls) >= 2:
            middle = session.calls[-1]
            middle.request = {
                k: v for k, v in middle.request.items() if k not in ("messages", "tools")
            }
        # A prompt of token ids is read by nothing (the engine's prompt ids are kept): not
        # kept twice.
        if not isinstance(call.request.get("prompt", ""), str):
            call.request = {k: v for k, v in call.request.items() if k != "prompt"}
        held = len(call.prompt_ids) + len(call.completion_ids) + len(call.logprobs)
        session.calls.append(call)
        session.record_bytes += size + ID_BYTES * held
        if self.sessions.get((session.owner, session.id)) is session:  # still open
            self._bytes_by_owner[session.owner] += size + ID_BYTES * held
        session.last_used = time.monotonic()
        self.recorded_calls += 1
        self.client_counts[session.owner]["recorded_calls"] += 1

    async def finish(
        self,
        session: Session,
        reward: float = 0.0,
        info: Mapping[str, Any] | None = None,
        *,
        finish: str = "terminated",
        task_id: str | None = None,
        claimed: bool = False,
    ) -> dict[str, Any]:
        """End ``session`` (after its calls in flight) and store its trajectory.

        ``claimed``: the caller already ended it with :meth:`claim` (a scored reward claims
        the session before scoring, so a second reward is refused at once). ``task_id``: the
        scorer's id of the session's own task, kept when the session named none (the task
        itself -- env, seed, index -- is the one the session opened with, never changed).

        Raises:
            SessionError: 409 if the session is already ending (a second reward, sent while
                the first was scored, would store the session twice).
        """
        if not claimed:
            await self.claim(session)
        before = session.task_id
        future: concurrent.futures.Future[Any] | None = None
        try:
            if task_id is not None and session.task_id is None:
                session.task_id = task_id
            trajectory = session.trajectory(reward, info, finish=finish)
            future = self._submit_store(
                session.owner, self._put, trajectory, session.run, session.pending
            )
            put = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            if future is not None and not future.cancelled():
                # Cut (shutdown) with the store already running: it completes on the store
                # thread; the session stays claimed, so shutdown does not store it again.
                future.add_done_callback(lambda f: self._stored_late(session, f, before))
                raise
            session.task_id = before
            session.closed = False
            raise
        except BaseException:
            self.store_errors += 1
            # Still open: the reward can be sent again, and shutdown stores it if not.
            session.task_id = before
            session.closed = False
            raise
        self.client_counts[session.owner]["stored"] += 1
        self.end(session)
        with self._lock:
            self.stored += 1
        return {
            "session_id": session.id,
            # The episode's content hash (``EpisodeStore.get`` takes it), not its row id: a
            # row id is the store's count, which would tell a client how many episodes the
            # other clients stored meanwhile.
            "hash": put.hash,
            "reward": trajectory.total_reward,
            "calls": len(session.calls),
            "token_exact": trajectory.token_exact,
            "token_source": trajectory.token_source,
        }

    def _stored_late(
        self, session: Session, future: concurrent.futures.Future[Any], task_id: str | None
    ) -> None:
        """The store of a cut :meth:`finish` ended: count it, or reopen the session."""
        if future.exception() is None:
            self.client_counts[session.owner]["stored"] += 1
            self.end(session)
            with self._lock:
                self.stored += 1
        else:
            self.store_errors += 1
            session.task_id = task_id
            session.closed = False

    def end(self, session: Session) -> None:
        """Forget ``session`` as open and mark its id ended (its client's late calls: 409)."""
        session.closed = True
        with self._lock:
            if self.sessions.pop((session.owner, session.id), None) is not None:
                self._open_by_owner[session.owner] -= 1
                if not self._open_by_owner[session.owner]:
                    del self._open_by_owner[session.owner]
                self._bytes_by_owner[session.owner] -= session.record_bytes
                if self._bytes_by_owner[session.owner] <= 0:
                    del self._bytes_by_owner[session.owner]
            ended = self.ended[session.owner]
            ended[session.id] = None
            while len(ended) > self.max_sessions:
                ended.popitem(last=False)

    async def claim(self, session: Session) -> None:
        """Mark ``session`` as ending (409 if it already is), then wait for its calls."""
        if session.closed:
            raise SessionError(409, f"Session {session.id!r} has ended.", "session_ended")
        session.closed = True
        try:
            await session.calls_done()
        except BaseException:
            # Cut while waiting (shutdown's grace ended with a stream still open): open
            # again, so shutdown stores the session rather than skip it as ended.
            session.closed = False
            raise

    def reopen(self, session: Session) -> None:
        """Undo :meth:`claim` (a scoring that failed: the session takes a reward again)."""
        session.closed = False

    def _submit_store(
        self, owner: str, fn: Callable[..., Any], *args: Any
    ) -> concurrent.futures.Future[Any]:
        """Queue ``fn(*args)`` as a store of ``owner``'s; the store thread runs clients in turn."""
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._store_lock:
            self._store_queues.setdefault(owner, collections.deque()).append((fn, args, future))
        # One turn of the thread per store queued; each turn takes the next client's first.
        self._store_pool.submit(self._store_turn)
        return future

    def _store_turn(self) -> None:
        with self._store_lock:
            # The client with stores waiting that had the fewest run since the thread was
            # last idle (the first queued of those): a client arriving while another's
            # stores run goes next, not behind that client's next one.
            served = self._store_served
            owner = min(self._store_queues, key=lambda o: served[o])
            queue = self._store_queues[owner]
            fn, args, future = queue.popleft()
            if not queue:
                del self._store_queues[owner]
            served[owner] += 1
        try:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as e:
                    future.set_exception(e)
        finally:
            with self._store_lock:
                if not self._store_queues:
                    served.clear()

    def _put(self, trajectory: Trajectory, run: str | None, pending: str | None = None) -> Any:
        # The model the session's calls asked for (the served model's name by default).
        model = trajectory.metadata.get("model") or self.model
        return self.store.put(trajectory, run=run, model=model, pending=pending)

    async def open_pending(self, session: Session) -> None:
        """Have the store count ``session``'s sample as failed until the session is stored.

        For a session on a scorer's task, at its opening: a client that scores its right
        replies and leaves its wrong sessions open (or the gateway dies first) must not see
        pass@k over the right ones alone (att29h: 1.0 for a skill of 0.30).
        """
        assert session.task_id is not None
        session.pending = f"{session.owner}/{session.id}/{secrets.token_hex(8)}"
        fn = functools.partial(
            self.store.open_pending,
            session.pending,
            run=session.run,
            env_id=session.env_id,
            task_id=session.task_id,
        )
        await asyncio.wrap_future(self._submit_store(session.owner, fn))

    async def end_unsampled(self, session: Session) -> None:
        """End a session that recorded no call; drop its pending sample if nothing was sampled.

        A scored session whose calls never reached an engine (refused by the gateway, its
        queue full) holds no sample of the policy: kept pending, it would count as a failed
        sample for good, and one extra sample of one task counts a missing sample as a
        failure for every other task of the run (att29j F2: pass@1 1.0 -> 0.5 for one
        retried session). A session an engine replied to (``replied``) keeps its failure:
        its client saw the policy's reply.
        """
        self.end(session)
        key = session.pending
        if key is None or session.calls or session.replied or session.unrecorded:
            return
        session.pending = None
        try:
            await asyncio.wrap_future(
                self._submit_store(session.owner, self.store.drop_pending, key)
            )
        except Exception:  # kept pending: a failed sample, never a lost one
            _log.exception("dropping the pending sample of session %r failed", session.id)

    async def finish_idle(self, idle_s: float) -> int:
        """Store (without a reward) the sessions idle for ``idle_s`` seconds; return how many."""
        now = time.monotonic()
        with self._lock:
            idle = [
                s
                for s in self.sessions.values()
                if not s.closed and not s.in_flight and now - s.last_used > idle_s
            ]
        count = 0
        for session in idle:
            if session.closed:  # a reward may have ended it meanwhile
                continue
            if not session.calls:  # nothing to store: it just ends
                await self.end_unsampled(session)
                continue
            try:
                await self.finish(
                    session, 0.0, {"ended_by": "idle", "reward_source": "none"}, finish="truncated"
                )
            except Exception:
                # Counted in store_errors and left open (shutdown tries again); one session
                # that cannot be stored never stops the sweep for the others.
                if not session.store_failed:
                    session.store_failed = True
                    _log.exception("storing idle session %r failed", session.id)
                continue
            count += 1
        return count

    async def finish_all(self, *, idle_only: bool = False) -> int:
        """Store every open session that has calls (shutdown); return how many.

        ``idle_only``: only those with no call in flight (the first thing shutdown does, so
        no client's slow stream holds the others' sessions until the grace period ends).
        """
        with self._lock:
            # Smallest first: one client's large records cannot push every session opened
            # after them past a supervisor's kill.
            open_sessions = sorted(
                (s for s in self.sessions.values() if not s.closed), key=lambda s: s.record_bytes
            )
        count = 0
        for session in open_sessions:
            if idle_only and session.in_flight:
                continue
            if not session.calls and not session.closed and not session.in_flight:
                await self.end_unsampled(session)
            elif session.calls and not session.closed:  # a reward may have ended it meanwhile
                try:
                    await self.finish(
                        session,
                        0.0,
                        {"ended_by": "shutdown", "reward_source": "none"},
                        finish="truncated",
                    )
                except Exception:  # counted in store_errors; the other sessions are still stored
                    _log.exception("storing session %r at shutdown failed", session.id)
                    continue
                count += 1
        return count


#: What one JSON value (a dict, list, string or number) holds in memory once parsed, beyond
#: its characters, in bytes: ``[{}, {}, ...]`` takes about 16 times its JSON size in Python.
VALUE_BYTES = 64


def held_bytes(raw_size: int, value: Any) -> int:
    """What a parsed JSON body of ``raw_size`` bytes holds in memory, about (for the bounds)."""
    count = 1
    for item in _containers(value):
        # Its items (a dict's keys too); only containers are visited one by one.
        count += 2 * len(item) if isinstance(item, dict) else len(item)
    return raw_size + VALUE_BYTES * count


def _containers(value: Any, max_depth: int | None = None) -> Iterator[dict | list]:
    """Every dict and list in ``value``, level by level (``ValueError`` past ``max_depth``).

    Scalars are filtered in C, never visited in Python: 200,000 numbers in a body cost
    milliseconds, not the 0.1 s a per-value walk took on the event loop (s44 att44d).
    """
    level = [value] if isinstance(value, dict | list) else []
    depth = 1
    while level:
        if max_depth is not None and depth > max_depth:
            raise ValueError(f"deeper than {max_depth} levels")
        following: list[Any] = []
        for item in level:
            yield item
            children = item.values() if isinstance(item, dict) else item
            following.extend(filter(_is_container, children))
        level = following
        depth += 1


def _is_container(value: Any) -> bool:
    return isinstance(value, dict | list)


def check_json_field(
    value: Any, name: str, code: str, max_bytes: int | None = MAX_JSON_BYTES
) -> None:
    """Refuse (400) a client's JSON value too deep or too large to keep.

    Deeper than ``MAX_JSON_DEPTH`` or larger than ``max_bytes`` as JSON (a reward's
    ``info``, a session's ``metadata``; a session call's fields, depth only).
    """
    try:
        for _ in _containers(value, MAX_JSON_DEPTH):
            pass
    except ValueError:
        raise SessionError(
            400, f"`{name}` is nested deeper than {MAX_JSON_DEPTH} levels.", code
        ) from None
    if max_bytes is None:
        return
    try:
        size = len(json.dumps(value))
    except (TypeError, ValueError, RecursionError) as e:
        raise SessionError(400, f"`{name}` must be plain JSON.", code) from e
    if size > max_bytes:
        raise SessionError(
            400, f"`{name}` is {size} bytes as JSON, over the limit of {max_bytes}.", code
        )


def _opt_id(value: Any, name: str) -> str | None:
    """A session's id field: a string (or an integer) of at most ``MAX_ID_CHARS``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise SessionError(
            400, f"Session field `{name}` must be a string (or an integer).", "invalid_session"
        )
    text = str(value)
    if len(text) > MAX_ID_CHARS:
        raise SessionError(
            400, f"Session field `{name}` is at most {MAX_ID_CHARS} characters.", "invalid_session"
        )
    return text


def _read_claims(path: Path) -> dict[str, str]:
    """The run claims kept in ``path``: one ``[run, client]`` JSON line each.

    An older gateway wrote one JSON object ``{run: client}``: it is rewritten as lines.
    """
    text = path.read_text()
    if text.lstrip().startswith("{"):
        legacy = {str(k): str(v) for k, v in dict(json.loads(text)).items()}
        tmp = path.with_name(path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(json.dumps([run, owner]) + "\n" for run, owner in legacy.items())
        os.replace(tmp, path)
        return legacy
    claims: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            run, owner = json.loads(line)
        except ValueError:  # a line cut by a crash mid-write: that claim was never answered
            _log.warning("skipping an unreadable line of %s", path)
            continue
        claims.setdefault(str(run), str(owner))
    return claims


def _run_forbidden(run: str | None) -> SessionError:
    """The one refusal of a run another client has, reserves or has a look-alike of.

    One answer for the three (att29b G6), so a refusal does not tell which (nor whose).
    """
    return SessionError(
        403,
        f"Run {run!r} is not available to this client (another client's run, reserved for "
        "another client, or differing only by case from one): name another `run` for this "
        "session.",
        "run_forbidden",
    )


def _opt_int(value: Any, name: str) -> int | None:
    if value is None:
        return None
    # The store keeps them as SQLite integers (64-bit): a larger one made the reward fail.
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value < 2**63:
        raise SessionError(
            400, f"Session field `{name}` must be a 64-bit integer.", "invalid_session"
        )
    return value


def task_of(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int | None = None,
    index: int | None = None,
) -> tuple[str | None, int | None]:
    """The id and index of the task an env's reset gives for ``seed`` / ``index``.

    ``(None, None)`` for an env whose reset names no task; the index is ``None`` for an env
    whose reset names none.
    """
    import gymnasium as gym

    import rllm_envs  # noqa: F401  (registers the ids)

    env = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        _, info = env.reset(seed=seed, options=None if index is None else {"index": index})
    finally:
        env.close()
    task_id, task_index = info.get("task_id"), info.get("task_index")
    plain = isinstance(task_index, int) and not isinstance(task_index, bool) and task_index >= 0
    return (None if task_id is None else str(task_id)), (task_index if plain else None)


def score_with_env(
    env_id: str,
    answer: str | Sequence[str],
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    check: Callable[[Any, Any], bool] | None = None,
    stop: threading.Event | None = None,
) -> dict[str, Any]:
    """Play ``answer`` (one reply, or each turn's reply in order) as an episode of an env.

    ``stop``: once set, no further reply is stepped (``RuntimeError``): a gateway shutting
    down does not wait for a cut scoring's remaining programs (s45 att45n: 8 minutes).

    The env is reset (seed, options) and stepped once per reply, in order, as the env plays
    it: the reward is the episode's (the sum of its steps' rewards), never the last reply's
    alone. An episode the env ends (terminated, truncated, or ``max_turns``) before the
    replies run out is not scored: the result is ``{"too_many_turns": True, ...}`` with no
    reward (a single-turn env takes exactly one reply, so no session scores its best try).
    More replies than the env's ``max_turns`` are refused before any is stepped.

    ``check(observation, statement)``, when given, runs after the reset: if it is false no
    reply is stepped (a tool env's step may run the reply's program) and the result is
    ``{"prompt_ok": False, ...}`` with no reward.

    The env's own scorer decides; its reward, the last step's ``info`` (``is_correct``,
    components) with ``turns`` and ``step_rewards``, task id, the task's prompt
    (``observation``, when it is text), its statement (``statement``: the task record's
    ``problem``/``question``/``prompt``, else ``None``), the task's tool schemas (``tools``:
    the reset's ``info["tools"]``, else ``None``) and the env's text after each reply
    (``feedback``) come back.
    """
    answers = [answer] if isinstance(answer, str) else list(answer)
    if not answers:
        raise ValueError("score_with_env needs at least one reply to step.")
    import gymnasium as gym

    import rllm_envs  # noqa: F401  (registers the ids)

    env = gym.make(env_id, **dict(env_kwargs or {}))
    try:
        observation, reset_info = env.reset(seed=seed, options=dict(options) if options else None)
        # The task's own statement (a task record's problem/question/prompt), which an agent
        # may send without the env's instructions around it.
        task = getattr(env.unwrapped, "task", None)
        statement = None
        if isinstance(task, Mapping):
            statement = next(
                (
                    task[k]
                    for k in ("problem", "question", "prompt")
                    if isinstance(task.get(k), str) and task[k].strip()
                ),
                None,
            )
        unscored: dict[str, Any] = {
            "reward": 0.0,
            "info": {},
            "task_id": reset_info.get("task_id"),
            "observation": observation if isinstance(observation, str) else None,
            "statement": statement,
            "tools": reset_info.get("tools"),
        }
        if check is not None and not check(observation, statement):
            return {**unscored, "prompt_ok": False}
        max_turns = getattr(env.unwrapped, "max_turns", None)
        if isinstance(max_turns, int) and not isinstance(max_turns, bool):
            if len(answers) > max_turns:
                return {**unscored, "too_many_turns": True, "max_turns": max_turns}
        rewards: list[float] = []
        feedback: list[str] = []
        terminated = truncated = False
        info: dict[str, Any] = {}
        for reply in answers:
            if terminated or truncated:
                # The env's episode ended with replies left: not the episode the env plays.
                return {**unscored, "too_many_turns": True, "max_turns": len(rewards)}
            if stop is not None and stop.is_set():
                raise RuntimeError("the gateway is shutting down: scoring stopped")
            after, reward, terminated, truncated, info = env.step(reply)
            rewards.append(float(reward))
            feedback.append(after if isinstance(after, str) else "")
    finally:
        env.close()
    return {
        "reward": float(sum(rewards)),
        "info": to_jsonable(
            {
                **info,
                "terminated": terminated,
                "truncated": truncated,
                "turns": len(rewards),
                "step_rewards": rewards,
            }
        ),
        "task_id": reset_info.get("task_id"),
        "observation": observation if isinstance(observation, str) else None,
        "statement": statement,
        "tools": reset_info.get("tools"),
        "feedback": feedback,
    }
