"""The OpenEnv server.

One WebSocket session per socket, the HTTP routes, the app for one id or several, and
:func:`serve`.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import math
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.gateway.config import is_loopback
from rllm_adapters.openenv.environment import _LIVE, GymTextEnvironment, close_all_environments
from rllm_adapters.openenv.limits import (
    CLOSE_CAPACITY,
    CLOSE_SESSION_TIMEOUT,
    SERVER_STOPPING,
    ScoreLog,
    ServerLimits,
    _error,
    _Guard,
    _h11_protocol,
    _peer,
    _ws_protocol,
    address_key,
    client_of,
    limit_uvicorn_log,
    loads_bounded,
    log,
)
from rllm_adapters.openenv.protocol import (
    TextAction,
    TextObservation,
    TextState,
    check_reset_args,
)

# isort: split
# fastapi is a dependency of openenv: imported once the protocol module checked openenv is
# installed, so a missing extra says which one.
from fastapi import Request, WebSocket

#: A step that takes longer than this (wall time) is not run on the event loop
#: (:class:`_StepPlace`); 0 keeps every step in the worker thread.
_INLINE_STEP_MAX_S = 0.001

#: The ids whose steps may run on the event loop: every step is bounded-cheap whatever the
#: client sends (pure Python on capped input; the costliest measured step of each is
#: 0.01-0.1 s: a 256K action). Every other id steps in a worker thread always: a step that
#: waits on a shared pool, a sandbox or a solver (Math's sympy comparison takes up to its
#: ``timeout``, 5 s) held the loop, and so every client, for that long (issue #31, M2).
#: Countdown is not inline: a step that ends an episode may run its solver (seconds of pure
#: Python on a large task, issue #31, F3). Running a step in a thread does not keep the loop
#: free of work that holds the GIL in C (a regex match, big-integer arithmetic): such work is
#: bounded where it is done (linear tag parsing, the calculator's operand caps; F4, F8).
INLINE_STEP_IDS = frozenset({"rllm/FrozenLake-v1", "rllm/TicTacToe-v0"})

#: The ids whose resets may run on the event loop (:class:`_StepPlace`, as steps, while
#: under :data:`_INLINE_RESET_MAX_S`): a reset that draws a task or takes one by index makes
#: it in bounded pure Python (Math's generators, warm: 64 us median, 1.0 ms p99, 3.8 ms the
#: most in 20,000; the first of a process, hundreds of ms, run in the thread before any
#: move). A reset with a client's own task (``options.task``: parsed and checked, up to
#: ``MAX_TASK_CHARS``) and every reset of a privately graded server run in the thread. A Math
#: step is a reset and an answer, and each hand-off to a thread costs the server about 0.1 ms
#: of CPU (issue #31's overhead goal: 0.5 ms a step).
INLINE_RESET_IDS = INLINE_STEP_IDS | {"rllm/Math-v1"}
#: Pure Python in a worker thread holds the GIL, and so the event loop, up to the switch
#: interval (5 ms) at a time anyway: a reset under it waits no other session longer on the
#: loop than in the thread.
_INLINE_RESET_MAX_S = 0.005
#: Clients whose step places a server keeps per id (the oldest is forgotten past it).
_MAX_PLACES = 4096

#: Constructor kwargs a served id gets unless the operator passes them: a server does not show
#: its clients reference answers (a wrong reply's feedback named it, so a client could read a
#: private dataset's answers off and replay them on the same index; issue #31, R1). Pass
#: ``--env-kwargs '{"reveal_reference": true}'`` to show them.
SERVED_DEFAULTS: Mapping[str, Mapping[str, Any]] = {
    "rllm/Math-v1": {"reveal_reference": False},
    "rllm/Countdown-v1": {"reveal_reference": False},  # issue #31, F2
    "rllm/ReasoningGym-v0": {"reveal_reference": False},  # issue #31 (att31), F1
    "rllm/Search-v1": {"reveal_reference": False},  # issue #31 (att31d): its token F1
}


def _ws_deflate(host: str) -> bool:
    """permessage-deflate for WebSocket replies: off on loopback, where it only costs CPU.

    The replies are a few hundred bytes of JSON; compressing and decompressing them on both
    ends costs more than the bytes it saves unless the link is slow.
    """
    return not is_loopback(host)


def _log_disconnect(peer: str, code: int | None) -> None:
    # Normal closes (by the client, or ours at shutdown: 1012, or a send cut by it) are not
    # news; the rest are.
    if code in (1000, 1001, 1012, None) or SERVER_STOPPING.is_set():
        return
    if code == 1009:
        log.warning("refused ws %s: MESSAGE_TOO_BIG (close code 1009)", peer)
    else:
        log.warning("dropped ws %s: client left (code %s)", peer, code)


def _gone() -> Any:
    """The reply to a client that left mid-body (nobody reads it)."""
    from starlette.responses import Response

    return Response(status_code=400)


async def _body(request: Request) -> bytes | None:
    """The request's whole body, or ``None`` (one log line) when its client left mid-body.

    Starlette raises ``ClientDisconnect`` there, which uvicorn logged as a traceback of
    about 4 KB a request (s42 att42d F1: a partial body and a reset, 200 a second).
    """
    from starlette.requests import ClientDisconnect

    try:
        return await request.body()
    except ClientDisconnect:
        log.warning(
            "dropped http %s %s: client left mid-body", _peer(request.scope), request.url.path
        )
        return None


class _StepPlace:
    """Where one client's steps of an id run: on the event loop while cheap, else a thread.

    A step on the loop saves the thread hand-off (and the GIL ping-pong with the loop), which
    is a large part of a cheap step's cost; a slow step there would stall every other
    session. So steps start in the worker thread, and every step's CPU time is measured:
    after ``warm`` steps in a row under ``max_s`` they move to the loop; one step over
    ``max_s`` there sends them back, and the next move needs twice as many fast steps for
    each move back in the last ``window_s``. After ``max_demotions`` moves back in that
    window they stay in the thread until the oldest of them is ``window_s`` old: an env whose
    steps are sometimes slow (a sandbox, a solver with a timeout) holds the loop at most that
    many times, one step each, per client, id, server and window. A client that sent slow
    steps on purpose keeps its own off the loop, only while it goes on (s39 att39b F3:
    counted for the server's life and every client, six 250K-character FrozenLake steps
    slowed every client's steps 17-20% until a restart). Resets of :data:`INLINE_RESET_IDS`
    are placed the same way (a place of their own); other resets always run in the thread.
    """

    def __init__(
        self, max_s: float, warm: int = 32, max_demotions: int = 6, window_s: float = 600.0
    ) -> None:
        self.max_s = max_s
        self.warm = warm
        self.max_demotions = max_demotions
        self.window_s = window_s
        self.fast = 0  # fast steps in a row
        self.moved_back: list[float] = []  # when steps moved back to the thread, in window
        self.inline = False

    @property
    def demotions(self) -> int:
        """Moves back to the thread in the last ``window_s``."""
        cutoff = time.monotonic() - self.window_s
        while self.moved_back and self.moved_back[0] <= cutoff:
            del self.moved_back[0]
        return len(self.moved_back)

    def record(self, seconds: float) -> None:
        if seconds > self.max_s:
            if self.inline:
                self.moved_back.append(time.monotonic())
                self.inline = False
            self.fast = 0
            return
        self.fast += 1
        if self.max_s > 0 and not self.inline and self.fast >= self.warm:
            demotions = self.demotions
            if demotions < self.max_demotions and self.fast >= self.warm << demotions:
                self.inline = True


if sys.version_info >= (3, 11):

    async def _within(awaitable: Awaitable[Any], seconds: float | None) -> Any:
        """``await awaitable``, or ``asyncio.TimeoutError`` after ``seconds`` (``None``: never).

        ``asyncio.timeout`` only arms a timer; ``wait_for`` (before Python 3.12) wraps the
        awaitable in a new task every call, a measurable part of a served step's CPU.
        """
        async with asyncio.timeout(seconds):
            return await awaitable

else:

    async def _within(awaitable: Awaitable[Any], seconds: float | None) -> Any:
        """``await awaitable``, or ``asyncio.TimeoutError`` after ``seconds`` (``None``: never)."""
        return await asyncio.wait_for(awaitable, seconds)


#: What the framework's work for an arrival costs the loop, in messages: a WebSocket
#: handshake (an HTTP upgrade parsed, a key hashed, a session's env made and closed) costs
#: about eight messages' frames and replies on this machine (py-spy, s40), an HTTP request two.
ARRIVAL_WEIGHTS = {"message": 1, "request": 2, "connection": 8}


class _HeavyLane:
    """Env calls of sessions whose calls hold the GIL long run one at a time, with rests.

    A call in a thread that runs Python for milliseconds (a client-written 32x32 FrozenLake
    map rebuilds Gymnasium's transition table, ~7 ms) takes the GIL from the event loop for
    most of that time, and every hand-off back waits for it: four sessions of such resets took
    an honest client from 2,945 to 18 steps/s (s37 att37e), one session to 154. So a session
    with ``heavy_calls`` calls over ``heavy_cpu_s`` of CPU each in the last ``memory_s`` is
    heavy (light calls between them change nothing: att38c F1 alternated them and every heavy
    one ran outside). A new session of a client of which ``reconnects`` sessions made heavy
    calls outside the lane in that time (a client reconnecting for each call) is in the lane
    for its first ``memory_s`` (att38e F2: released at its first light call, a reset, every
    session's big steps ran outside; the cost: while a client reconnects so, new sessions of
    honest clients sharing its address wait in the lane too, att38c F4). A heavy session's calls
    go through this lane, one at a time for the whole server, each followed, while another
    session is open, by a rest as long as its CPU time (at most ``max_rest_s``). Heavy work
    then holds the GIL at most half the time, and only one heavy thread competes with the
    loop for it. Other sessions' calls never wait here. Every id of a server shares one lane
    (:func:`create_multi_app`): they share the GIL (s39 att39b: a heavy session alone on
    its id rested never, beside honest clients of another id).
    """

    def __init__(
        self,
        heavy_cpu_s: float = 0.002,
        memory_s: float = 5.0,
        heavy_calls: int = 2,
        reconnects: int = 8,
        max_rest_s: float = 0.25,
        max_clients: int = 4096,
        share_s: float = 0.01,
    ) -> None:
        self.heavy_cpu_s = heavy_cpu_s
        self.memory_s = memory_s
        self.heavy_calls = heavy_calls
        self.reconnects = reconnects
        self.max_rest_s = max_rest_s
        self.max_clients = max_clients
        self.lock = asyncio.Lock()
        #: Per client, its sessions' heavy calls outside the lane: (when, session).
        self.outside: dict[str, list[tuple[float, int]]] = {}
        #: The open sessions of each id sharing the lane.
        self.members: list[set[_Session]] = []
        self.last_on_loop: str | None = None  # the client of the last call on the loop
        self.switched_at = -1.0  # when a call on the loop was another client's than the last
        #: Per client charged in the last ``2 * share_s``: its GIL time (decayed with time
        #: constant ``share_s``) and when it was charged, oldest charge first (:meth:`share`).
        self.used: dict[str, tuple[float, float]] = {}
        self.share_s = share_s
        #: Since the last settling (:meth:`arrived`): each client's arrivals, the loop
        #: thread's CPU time then, and what was charged for the loop's work since.
        self.arrivals: dict[str, int] = {}
        self.settled_at = -1.0
        self.loop_cpu = 0.0
        self.loop_charged = 0.0

    async def take_turn(self, client: str) -> None:
        """Before a call on the event loop: a client whose call ran there last waits a round.

        The loop serves its ready handlers in order, and a client with many sessions, each
        with a message waiting, had that many calls ready before another client's one: eight
        sessions of steps tuned just under the loop's 1 ms bound (never heavy) took an honest
        client from 1,771-2,372 to 269 steps/s (s39 att39h F1). Waiting one round puts its
        next call behind the others' ready ones (on a quiet machine the other client's rate
        beside such steps went from 87 to 171 steps/s: better, not fair; :meth:`share`
        shares the time). A client alone on the loop (no other's call there in the last
        50 ms) does not wait: nothing is behind it.
        """
        now = time.monotonic()
        if self.last_on_loop != client:
            self.switched_at = now
        elif now - self.switched_at < 0.05:
            await asyncio.sleep(0)
        self.last_on_loop = client

    def _used(self, client: str, now: float) -> float:
        used, at = self.used.get(client, (0.0, now))
        return used * math.exp((at - now) / self.share_s)

    def arrived(self, client: str, weight: int = 1) -> None:
        """A message (``weight`` 1), request or connection of ``client`` arrived (on the loop).

        The framework's work for it (frames, handshakes, routing, replies' writes, the
        collector) runs outside any coroutine of ours: every ``share_s`` the loop thread's CPU
        that no charge accounted for is charged to the clients in proportion to their arrivals
        in that time, each weighted by its kind's usual cost (:data:`ARRIVAL_WEIGHTS`; s40
        att40b F1: uncharged, eight sessions of light steps or a reconnect per message took
        55-86% of another client's steps).
        """
        self.arrivals[client] = self.arrivals.get(client, 0) + weight
        now = time.monotonic()
        if now - self.settled_at < self.share_s:
            return
        loop_cpu = time.thread_time()
        unaccounted = loop_cpu - self.loop_cpu - self.loop_charged
        arrivals, self.arrivals = self.arrivals, {}
        first, self.settled_at = self.settled_at < 0, now
        self.loop_cpu, self.loop_charged = loop_cpu, 0.0
        if unaccounted > 0 and not first:  # the first: the thread's CPU before serving
            each = unaccounted / sum(arrivals.values())
            for who, count in arrivals.items():
                self.charge(who, count * each)

    def charge(self, client: str, cpu_s: float, on_loop: bool = False) -> None:
        """``client``'s work held the GIL for ``cpu_s`` (``on_loop``: on the loop's thread)."""
        if on_loop:
            self.loop_charged += cpu_s
        now = time.monotonic()
        used = self._used(client, now) + cpu_s
        self.used.pop(client, None)  # re-inserted last: the dict stays oldest charge first
        self.used[client] = (used, now)
        forget = now - 2 * self.share_s  # decayed to 14%: no longer counted as sharing
        while (oldest := next(iter(self.used))) != client and self.used[oldest][1] < forget:
            del self.used[oldest]

    async def share(self, client: str) -> None:
        """Before a call of ``client``: wait while it used more than its share of the GIL.

        The loop and the threads share one GIL, and a client's calls hold it for their CPU
        time wherever they run. Turns alone did not share it: eight sessions of one client
        with steps just under the loop's bound still took the loop from another client's
        steps most of the time (s39 att39h F1: 171 steps/s beside them, 4,770 alone). Each
        client's GIL time is counted decayed over ``share_s``; while ``k`` clients were
        charged in the last ``2 * share_s``, one over ``share_s / k`` (its share of the
        time) waits until it decays to that. A client alone never waits, and a client
        under its share (an honest one beside a flood) never waits either.
        """
        while True:
            sharing = len(self.used) + (client not in self.used)
            if sharing < 2:
                return
            fair = self.share_s / sharing
            used = self._used(client, time.monotonic())
            if used <= fair:
                return
            await asyncio.sleep(self.share_s * math.log(used / fair))

    def others_open(self) -> bool:
        """Whether more than one session is open on the ids of this lane."""
        return sum(len(sessions) for sessions in self.members) > 1

    @staticmethod
    def _recent(times: list[float], since: float) -> list[float]:
        return [t for t in times if t > since]

    def open(self, session: _Session) -> None:
        """A new session: on probation if its client keeps making heavy calls from new ones."""
        since = time.monotonic() - self.memory_s
        calls = self.outside.get(session.client, [])
        if len({s for t, s in calls if t > since}) >= self.reconnects:
            session.probation_until = time.monotonic() + self.memory_s

    def heavy(self, session: _Session) -> bool:
        now = time.monotonic()
        if now < session.probation_until:
            return True
        session.heavy_times = self._recent(session.heavy_times, now - self.memory_s)
        return len(session.heavy_times) >= self.heavy_calls

    def note(self, session: _Session, cpu_s: float, in_lane: bool) -> None:
        if cpu_s <= self.heavy_cpu_s:
            return
        now = time.monotonic()
        session.heavy_times = [*self._recent(session.heavy_times, now - self.memory_s), now]
        if in_lane:
            return
        since = now - self.memory_s
        if len(self.outside) >= self.max_clients:  # forget the old ones
            self.outside = {
                c: kept
                for c, calls in self.outside.items()
                if (kept := [x for x in calls if x[0] > since])
            }
        calls = [x for x in self.outside.get(session.client, []) if x[0] > since]
        self.outside[session.client] = [*calls[-4 * self.reconnects :], (now, id(session))]

    def rest_s(self, cpu_s: float) -> float:
        return min(cpu_s, self.max_rest_s)


#: A step's wall time past this is a wait of its own (a sandbox, a solver), not the GIL.
_WAIT_S = 0.05


def _measured(fn: Any, *args: Any) -> tuple[Any, float, float]:
    """``fn(*args)``, the CPU time this thread spent in it and its wall time."""
    cpu, wall = time.thread_time(), time.perf_counter()
    result = fn(*args)
    return result, time.thread_time() - cpu, time.perf_counter() - wall


def _timed(fn: Any, *args: Any) -> tuple[Any, float]:
    """``fn(*args)`` and its cost: its CPU time, or its wall time past :data:`_WAIT_S`.

    CPU time, not wall time: a step waiting for the GIL while another session's call holds
    it is not a slow step (s37 att37e: measured by wall time, FrozenLake's 0.06 ms steps
    looked slow beside a client's 32x32 maps, left the loop for good, and every step then
    waited on GIL hand-offs: 5 steps/s). A step that waits on something of its own (a
    process, a socket, a sleep) for longer than any GIL hand-off counts its wall time.
    """
    result, cpu_s, wall_s = _measured(fn, *args)
    return result, _cost(cpu_s, wall_s)


def _cost(cpu_s: float, wall_s: float) -> float:
    """A call's cost as placement counts it: its CPU time, or its wall time past _WAIT_S."""
    return wall_s if wall_s > _WAIT_S else cpu_s


def _held(step: Any, text: str, work_s: float, deadline: float) -> tuple[Any, float]:
    """``_timed(step, text)`` for private grading; a payload that ends the episode is padded.

    The thread keeps working (holding the GIL) until ``work_s`` after the step started and
    then waits for ``deadline`` (``time.monotonic()``). A right answer is graded with less
    work than a wrong one (``self_reference``: 0.04-0.07 ms against 0.07-0.2 ms), and while a
    thread grades, the other sessions' replies wait for the GIL: a second session that timed
    its own replies told right from wrong 0.78 of the time (s27 att27d).
    """
    started = time.monotonic()
    payload, seconds = _timed(step, text)
    if payload["done"]:
        busy = started + work_s
        while time.monotonic() < busy:
            pass
        time.sleep(max(0.0, deadline - time.monotonic()))
    return payload, seconds


class _Charged:
    """Await ``coroutine``, charging the CPU time of each of its steps to ``client``.

    A coroutine's steps run on the event loop between its awaits, so this is the loop's
    time its work took (parsing, validating, serialising, an env call on the loop), not the
    time other tasks ran while it waited; calls it hands to threads charge their own.
    """

    def __init__(self, coroutine: Any, lane: _HeavyLane, client: str) -> None:
        self.coroutine, self.lane, self.client = coroutine, lane, client

    def __await__(self) -> Any:
        coroutine, value, error = self.coroutine, None, None
        while True:
            started = time.thread_time()
            try:
                if error is None:
                    waiting = coroutine.send(value)
                else:
                    waiting = coroutine.throw(error)
            except StopIteration as done:
                return done.value
            finally:
                self.lane.charge(self.client, time.thread_time() - started, on_loop=True)
            try:
                value, error = (yield waiting), None
            except BaseException as e:  # noqa: BLE001 (a cancellation goes on into it)
                value, error = None, e


class _Shared:
    """ASGI middleware: every request and connection is its client's work on the GIL.

    Before the app runs, the client (its token's, else its address's) waits while over its
    share (:meth:`_HeavyLane.share`); the app's coroutine steps on the loop are charged to it
    (:class:`_Charged`: a WebSocket session's messages, a route's handling, a 404, a
    refusal), and its arrival spreads the loop's remaining work (s40 att40e F1: 404s,
    ``/schema`` and ``/health``, charged to no one, took 55-93% of another client's steps).
    A request a server passes to a mounted one is counted once.
    """

    def __init__(self, app: Any, lane: Any, limits: ServerLimits) -> None:
        self.app, self.lane, self.limits = app, lane, limits

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket") or scope.get("rllm.shared"):
            await self.app(scope, receive, send)
            return
        scope["rllm.shared"] = True
        lane: _HeavyLane = self.lane()
        peer = scope.get("client")
        client = client_of(scope, self.limits) or f"? {address_key(peer[0]) if peer else '?'}"
        lane.arrived(client, ARRIVAL_WEIGHTS["connection" if kind == "websocket" else "request"])
        await lane.share(client)
        await _Charged(self.app(scope, receive, send), lane, client)


class _Session:
    """One WebSocket session: its own env, alive as long as its socket and its last call.

    A client that leaves during a step does not stop the step (an env has no way to cancel
    one): the session stays counted (toward ``max_sessions`` and its client's share) until the
    step returns, so leaving and coming back cannot hold more threads than sessions.
    """

    def __init__(self, peer: str, client: str) -> None:
        self.peer = peer
        self.client = client  # who it is counted and logged as (limits.client_of)
        self.env: GymTextEnvironment | None = None
        self.running: Future[Any] | None = None  # the last call in a thread
        self.heavy_times: list[float] = []  # when its calls held the GIL long (_HeavyLane)
        self.probation_until = 0.0  # in the lane until then (_HeavyLane.open)


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
        #: Stateless resets running, by client: each holds at most its share of the places
        #: (att34i: one client's flood of resets refused another's 41% of the time).
        self.stateless_by: dict[str, int] = {}
        #: Where each client's steps and resets run (:class:`_StepPlace`), by kind and client:
        #: one client's slow steps keep only its own off the loop (s39 att39d F2: six
        #: 256K-character steps every 10 minutes kept every client's in the thread, 23-28%
        #: slower). Every local client is one (``limits.client_of``) unless it has a token.
        self.places: dict[tuple[str, str], _StepPlace] = {}
        self.max_s = {
            "step": _INLINE_STEP_MAX_S if env_id in INLINE_STEP_IDS else 0.0,
            "reset": _INLINE_RESET_MAX_S if env_id in INLINE_RESET_IDS else 0.0,
        }
        # This id's own threads, one per session and per stateless reset: a session runs one
        # call at a time, so no session (making its env, resetting, closing) ever waits for a
        # thread behind other sessions' slow steps. asyncio's default executor has
        # cpu_count + 4 threads: six hostile Code steps made a new client's reset wait 32 s.
        # Threads start on demand.
        self.pool = ThreadPoolExecutor(
            max_workers=2 * limits.max_sessions, thread_name_prefix="rllm-serve"
        )
        self.lane = _HeavyLane()
        self.lane.members.append(self.sessions)
        self.scores = None if limits.score_log is None else ScoreLog(limits.score_log)
        # A privately graded server plays the operator's tasks only: a client's own record
        # (options.task) would put a reward it wrote into the log.
        self.custom_tasks = limits.allow_custom_tasks and self.scores is None

    def place(self, kind: str, client: str) -> _StepPlace:
        """Where ``client``'s calls of ``kind`` (``"step"``, ``"reset"``) run now."""
        key = (kind, client)
        place = self.places.get(key)
        if place is None:
            if len(self.places) >= _MAX_PLACES:  # the oldest client's goes first
                del self.places[next(iter(self.places))]
            place = self.places[key] = _StepPlace(self.max_s[kind])
        return place

    async def on_loop(self, place: _StepPlace, session: _Session, fn: Any, *args: Any) -> Any:
        """``fn(*args)`` on the event loop in ``session``'s client's turn and share.

        Its cost (as :func:`_timed`) is recorded in ``place`` (its CPU is charged to the
        client with the message's, :class:`_Charged`), also when it raises (s39 att39f F2:
        resets that did their work on the loop and then failed on a bad seed were never
        counted, so any number of them held the loop 34-123 ms each).
        """
        await self.lane.take_turn(session.client)
        await self.lane.share(session.client)  # last: nothing may run between it and the call
        cpu, wall = time.thread_time(), time.perf_counter()
        try:
            return fn(*args)
        finally:
            place.record(_cost(time.thread_time() - cpu, time.perf_counter() - wall))

    async def run(
        self,
        fn: Any,
        *args: Any,
        session: _Session | None = None,
        lane: bool = True,
        client: str | None = None,
    ) -> Any:
        """``fn(*args)`` in this id's threads (as ``session.running`` while it runs).

        A session's calls wait for its client's share of the GIL (:meth:`_HeavyLane.share`)
        and take the heavy lane while they hold the GIL long; ``lane=False`` for a call whose
        work is fixed by design (private grading's padded last step, timed to its deadline).
        ``client``: whom such a call (or one without a session: making a session's env) is
        charged to.
        """
        if session is None or not lane:
            result, cpu_s = await self._submit(fn, args, session)
            if client is not None:
                self.lane.charge(client, cpu_s)
            return result
        await self.lane.share(session.client)
        if not self.lane.heavy(session):
            result, cpu_s = await self._submit(fn, args, session)
            self.lane.note(session, cpu_s, in_lane=False)
        else:
            async with self.lane.lock:
                result, cpu_s = await self._submit(fn, args, session)
                self.lane.note(session, cpu_s, in_lane=True)
                if self.lane.others_open():
                    await asyncio.sleep(self.lane.rest_s(cpu_s))
        self.lane.charge(session.client, cpu_s)
        return result

    async def _submit(
        self, fn: Any, args: tuple[Any, ...], session: _Session | None
    ) -> tuple[Any, float]:
        future = self.pool.submit(_measured, fn, *args)
        if session is not None:
            session.running = future
        result, cpu_s, _ = await asyncio.wrap_future(future)
        return result, cpu_s

    def _release(self, session: _Session) -> None:
        """Leave ``session`` counted until its running call returns, then close its env.

        The client left (or the server stops) while a reset or step ran: it runs on (an env
        cannot cancel one), and holds its thread until then.
        """
        env, session.env = session.env, None
        running = session.running
        if running is None or running.done():
            self.sessions.discard(session)
            if env is not None:
                self.pool.submit(env.close)
            return
        loop = asyncio.get_running_loop()

        def finished(_: Any) -> None:
            if env is not None:
                with contextlib.suppress(Exception):
                    env.close()
            with contextlib.suppress(RuntimeError):  # the loop is gone: nothing to count
                loop.call_soon_threadsafe(self.sessions.discard, session)

        running.add_done_callback(finished)

    def make_env(self, peer: str = "", client: str = "") -> GymTextEnvironment:
        scores = (
            None if self.scores is None else partial(self.scores.write, peer=peer, client=client)
        )
        return GymTextEnvironment(self.env_id, self.env_kwargs, scores=scores)

    # ------------------------------------------------------------------- websocket

    async def websocket(self, websocket: Any) -> None:
        from starlette.websockets import WebSocketDisconnect

        peer = _peer(websocket.scope)
        session = _Session(peer, client_of(websocket.scope, self.limits) or "?")
        await websocket.accept()  # after the client's share (_Shared)
        mine = sum(other.client == session.client for other in self.sessions)
        if mine >= self.limits.sessions_per_client:
            # Sessions still counted after their client left (their step runs on) count too:
            # leaving mid-step and reconnecting cannot take every session and thread.
            cap = self.limits.sessions_per_client
            log.warning("refused ws %s: CLIENT_LIMIT (%d/%d sessions)", peer, mine, cap)
            refusal = f"At most {cap} sessions per client, including steps still running."
            with contextlib.suppress(Exception):
                await websocket.send_text(json.dumps(_error("CLIENT_LIMIT", refusal)))
                await websocket.close(CLOSE_CAPACITY, f"CLIENT_LIMIT: {mine}/{cap} sessions")
            return
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
        self.sessions.add(session)  # no await since the check: the cap holds
        self.lane.open(session)
        try:
            try:
                session.env = await self.run(
                    self.make_env, peer, session.client, client=session.client
                )
            except Exception as e:
                log.error("refused ws %s: FACTORY_ERROR (%s: %s)", peer, type(e).__name__, e)
                text = f"The env could not be made: {type(e).__name__}: {e}"
                await websocket.send_text(json.dumps(_error("FACTORY_ERROR", text)))
                await websocket.close(1011, "FACTORY_ERROR")
                return
            while True:
                try:
                    message = await _within(websocket.receive(), self.limits.session_timeout)
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
                if await self._message(websocket, session, message):
                    return
        except WebSocketDisconnect as e:
            _log_disconnect(peer, e.code)
        except (OSError, RuntimeError) as e:  # the socket went away under a send
            if not SERVER_STOPPING.is_set():
                log.warning("dropped ws %s: %s", peer, type(e).__name__)
        except Exception as e:  # a bug of ours: one line, and the session ends cleanly
            log.error("closed ws %s: internal error (%s: %s)", peer, type(e).__name__, e)
            with contextlib.suppress(Exception):
                await websocket.close(1011, "INTERNAL_ERROR")
        finally:
            self._release(session)

    async def _message(self, websocket: Any, session: _Session, message: Mapping[str, Any]) -> bool:
        """One WebSocket message of ``session``, answered; whether the session closes.

        Its client waits while over its share of the GIL (:meth:`_HeavyLane.share`).
        """
        self.lane.arrived(session.client)
        await self.lane.share(session.client)
        raw = message.get("text")
        if raw is None:
            raw = (message.get("bytes") or b"").decode("utf-8", "replace")
        reply, close = await self._handle(session, raw)
        if close:
            await websocket.close(1000)
            return True
        await websocket.send_text(json.dumps(reply))
        # Let other sessions run: uvicorn queues every frame of one read at once, and a reply
        # that neither waits on the env nor on the socket never suspends, so one socket of
        # pipelined messages held the loop for 1.5 s a read (att37a).
        await asyncio.sleep(0)
        return False

    async def _handle(
        self, session: _Session, raw: str | dict[str, Any]
    ) -> tuple[dict[str, Any], bool]:
        """One message of ``session``: the reply, and whether to close.

        ``raw``: the message's text, or a stateless route's parsed body.
        """
        from pydantic import ValidationError

        try:
            message = raw if isinstance(raw, dict) else loads_bounded(raw)
        # ValueError: also an integer past MAX_JSON_INT_CHARS; RecursionError: deep nesting.
        except (ValueError, RecursionError) as e:
            return _error("INVALID_JSON", f"Invalid JSON: {type(e).__name__}"), False
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
        if kind not in ("reset", "step", "state", "settle"):
            return _error("UNKNOWN_TYPE", f"Unknown message type: {kind!r}"), False
        if data is None:
            data = {}
        if not isinstance(data, dict):
            return _error(
                "VALIDATION_ERROR", f"Expects `data` to be an object, actual: {type(data).__name__}"
            ), False
        env = session.env
        assert env is not None
        try:
            if kind == "state":
                return {"type": "state", "data": env.state.model_dump()}, False
            if kind == "settle":  # an rllm extension: the episode stopped without a step
                settled = await self.run(env.settle, session=session)
                return {"type": "settled", "data": settled}, False
            if kind == "reset":
                seed, options = data.get("seed"), data.get("options")
                episode_id = data.get("episode_id")
                try:  # every argument before the env changes (it keeps its episode)
                    check_reset_args(seed, episode_id, options)
                    if not self.custom_tasks and "task" in (options or {}):
                        raise ValueError(
                            "This server does not play client-written tasks "
                            "(options.task); reset with an index or a seed."
                        )
                except ValueError as e:
                    return _error("VALIDATION_ERROR", str(e)), False
                reset = partial(env.reset, seed=seed, episode_id=episode_id, options=options)
                if "task" in (options or {}) or self.scores is not None:
                    obs = await self.run(reset, session=session)
                else:
                    place = self.place("reset", session.client)
                    if place.inline:
                        obs = await self.on_loop(place, session, reset)
                    else:
                        obs, seconds = await self.run(_timed, reset, session=session)
                        place.record(seconds)
            else:
                arrived = time.monotonic()
                try:
                    action = TextAction.model_validate(data)
                except ValidationError as e:
                    errors = json.loads(e.json(include_url=False, include_input=False))
                    return _error("VALIDATION_ERROR", "Invalid message", errors=errors), False
                place = self.place("step", session.client)
                if self.scores is not None:
                    # Private grading: the verdict's grading time must not show either (a
                    # self_reference client picked the right answer 0.70 of the time by
                    # timing replies that all said reward 0, s27 att27c F1). The step's
                    # thread holds an episode's last reply until a deadline from the step's
                    # arrival: a thread's sleep ends at that time, where a loop timer (whole
                    # milliseconds, woken from where the loop went idle) may keep the phase
                    # of when grading ended.
                    deadline = arrived + self.limits.score_reply_s
                    payload, seconds = await self.run(
                        _held,
                        env.step_payload,
                        action.text,
                        self.limits.score_work_s,
                        deadline,
                        session=session,
                        lane=False,
                    )
                elif place.inline:
                    payload = await self.on_loop(place, session, env.step_payload, action.text)
                else:
                    payload, seconds = await self.run(
                        _timed, env.step_payload, action.text, session=session
                    )
                    place.record(seconds)
                return {"type": "observation", "data": payload}, False
        except Exception as e:  # the env's own error (no episode, bad option): the session stays
            return _error("EXECUTION_ERROR", env.scrubbed(f"{type(e).__name__}: {e}")), False
        return {"type": "observation", "data": _serialize(obs)}, False

    # ------------------------------------------------------------------------ HTTP

    async def reset(self, request: Any) -> Any:
        """OpenEnv's stateless ``POST /reset``: a fresh env's first observation."""
        from fastapi.responses import JSONResponse

        raw = await _body(request)
        if raw is None:
            return _gone()
        try:
            body = loads_bounded(raw) if raw else {}
        except (ValueError, RecursionError):  # RecursionError: deeply nested JSON
            return JSONResponse(
                {"error": {"code": "INVALID_JSON", "message": "The body is not JSON."}}, 400
            )
        if not isinstance(body, dict):
            return JSONResponse(
                {"error": {"code": "INVALID_MESSAGE", "message": "Expects a JSON object."}}, 400
            )
        session = _Session(_peer(request.scope), client_of(request.scope, self.limits) or "?")
        share = self.limits.sessions_per_client
        if self.stateless_by.get(session.client, 0) >= share:
            log.warning("refused http %s /reset: CLIENT_LIMIT", session.peer)
            message = f"At most {share} stateless resets at once per client."
            return JSONResponse({"error": {"code": "CLIENT_LIMIT", "message": message}}, 503)
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
        self.stateless_by[session.client] = self.stateless_by.get(session.client, 0) + 1
        try:
            async with self.stateless:
                session.env = await self.run(self.make_env, client=session.client)
                try:
                    # The parsed body as it is: made JSON again and parsed twice more, a body of
                    # big integers cost the loop three times its parse (s39 att39f F1).
                    reply, _ = await self._handle(session, {"type": "reset", "data": body})
                finally:
                    await self.run(session.env.close, client=session.client)
        finally:
            left = self.stateless_by.pop(session.client) - 1
            if left:
                self.stateless_by[session.client] = left
        if reply["type"] == "error":
            return JSONResponse({"error": reply["data"]}, 422)
        return JSONResponse(reply["data"])

    async def no_episode(self, request: Any) -> Any:
        """``POST /step`` and ``GET /state`` over HTTP: no episode lives between requests."""
        from fastapi.responses import JSONResponse

        if await _body(request) is None:  # read it all: the connection stays usable
            return _gone()
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

        raw = await _body(request)
        if raw is None:
            return _gone()
        try:
            body = loads_bounded(raw or b"{}")
        except (ValueError, RecursionError):  # RecursionError: deeply nested JSON
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
        env_kwargs: Constructor kwargs of every session's env, over :data:`SERVED_DEFAULTS`
            (Math withholds its reference answers unless given ``reveal_reference=True``).
        max_sessions: Live sessions; ignored when ``limits`` is given.
        session_timeout: Idle seconds before a session is closed; ignored with ``limits``.
        limits: All limits (:class:`ServerLimits`).

    Raises:
        UnknownEnvironment: For an unknown id. AdapterConfigError: For bad kwargs or limits.
    """
    import rllm_envs
    from rllm_envs.tasks import TaskSource, search_every_slot

    if limits is None:
        limits = ServerLimits(max_sessions=max_sessions, session_timeout=session_timeout)
    kwargs = {**SERVED_DEFAULTS.get(env_id, {}), **dict(env_kwargs or {})}
    if "task_seed" in kwargs:
        # A private seed's tasks are a secret, and a client times resets: a new balanced task
        # takes as many draws whatever its answer slot (the same tasks, found with about
        # three times the draws; s26 att26 F1). The default seeds' tasks anyone can make.
        search_every_slot()
    probe = GymTextEnvironment(env_id, kwargs)  # bad ids and kwargs fail here
    # What the first tasks would do once per process, before serving: a client's first reset
    # of each part did it on the event loop (34-123 ms, s39 att39f F2).
    source = getattr(getattr(probe.env, "unwrapped", None), "tasks", None)
    if isinstance(source, TaskSource):
        source.prepare()
    metadata = probe.get_metadata()
    probe.close()
    from fastapi import FastAPI

    app = FastAPI(
        title=f"rllm-envs {env_id} (OpenEnv)",
        description=metadata.description,
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
    async def health() -> dict[str, Any]:
        return {"status": "healthy"}

    @app.get("/metadata", tags=["Environment Info"])
    async def get_metadata() -> dict[str, Any]:
        return dict(metadata.model_dump())

    schemas = {  # made once: 2-3 ms of the loop a request (s40 att40e F1)
        "action": TextAction.model_json_schema(),
        "observation": TextObservation.model_json_schema(),
        "state": TextState.model_json_schema(),
    }

    @app.get("/schema", tags=["Environment Info"])
    async def schema() -> dict[str, Any]:
        return schemas

    @app.get("/rllm/sessions", tags=["Environment Info"])
    async def sessions(request: Request) -> dict[str, Any]:
        return {
            "env_id": env_id,
            "active": len(server.sessions),
            "max": limits.max_sessions,
            "live_envs": len(_LIVE),
        }

    app.router.on_shutdown.append(_on_shutdown)
    app.add_middleware(_Guard, limits=limits)
    # Outermost: a refused request is its client's work too. Read when called: a server of
    # several ids gives each the same lane after this (create_multi_app).
    app.add_middleware(_Shared, lane=lambda: server.lane, limits=limits)
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
    async def envs() -> dict[str, Any]:
        return {"envs": {env_id: f"/{env_id}" for env_id in apps}}

    @root.get("/health", tags=["Environment Info"])
    async def health() -> dict[str, Any]:
        return {"status": "healthy"}

    # Starlette does not run a mounted app's lifespan: run its hooks with the root's.
    async def shutdown() -> None:
        for app in apps.values():
            for handler in app.router.on_shutdown:
                await handler()

    root.router.on_shutdown.append(shutdown)
    lane = _HeavyLane()  # the ids share the GIL: one lane for all
    for env_id, app in apps.items():
        app.state.env_server.lane = lane
        lane.members.append(app.state.env_server.sessions)
        root.mount(f"/{env_id}", app)
    root.add_middleware(_Guard, limits=limits)
    root.add_middleware(_Shared, lane=lambda: lane, limits=limits)
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
    limits: ServerLimits | None = None,
    log_level: str = "warning",
) -> None:
    """Run the server until SIGINT/SIGTERM (uvicorn), then close every session's env.

    One id is served at the root (``base_url = http://host:port``); several ids are served by
    :func:`create_multi_app` under their own paths (``env_kwargs`` is then ``{id: kwargs}``).
    A host other than loopback needs ``limits.token`` (or ``limits.client_tokens``): anyone
    who reaches the port could otherwise run episodes (and, for code envs, sandboxed
    programs).

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
    if not is_loopback(host) and limits.token is None and limits.client_tokens is None:
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
    limit_uvicorn_log()
    # What the imports and the prepared task sources made lives as long as the server: out of
    # the collector's scans, a full collection that a flood of new sessions triggers walks the
    # sessions' garbage only (s40 att40b F1b: 170-450 ms each, on the event loop, before).
    gc.freeze()
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=_h11_protocol(limits),
        ws=_ws_protocol(limits),
        ws_max_size=limits.max_bytes,
        h11_max_incomplete_event_size=64 * 1024,
        timeout_graceful_shutdown=10,
        ws_per_message_deflate=_ws_deflate(host),
        # The peer is the socket's: a client on loopback (or behind a local TLS proxy) must
        # not pick the address its sessions and connections are counted and logged under.
        proxy_headers=False,
    )
