"""Steps per second over the OpenEnv server (WebSocket) vs ``env.step`` in process.

One server process (``python -m adapters.serve``) on 127.0.0.1 serves rllm/FrozenLake-v0 and
rllm/Math-v0. A "step" is the same unit in every case: one ``step`` of a fixed cycle of
replies, plus a ``reset`` whenever the episode ends (so a Math step is a reset and an answer).

* 1 session: one OpenEnv client steps; baseline: the same env stepped in process.
* 16 sessions: 16 OpenEnv clients step at once (one asyncio ``gather`` per round); baseline:
  16 in-process steps one after another.

The ratio is ``time_ratio`` = served median / in-process median for the same steps
(:mod:`benchmarks.perf._ratios`); ``extra_info`` also has steps/s of both and the overhead per
step in microseconds (served minus in process, per step). No goal: the overhead is the
WebSocket, JSON and pydantic work on both ends (tens of microseconds to a millisecond a step),
so the ratio says how much of a step's cost that is, and depends on how heavy the env step is.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

pytest.importorskip("openenv.core.env_server", reason='needs `pip install "rllm-envs[openenv]"`')

import httpx  # noqa: E402

import rllm_envs  # noqa: E402
from benchmarks.perf._ratios import median_ratio, record  # noqa: E402

SESSIONS = 16
VERSIONS = {"openenv": metadata.version("openenv")}
ENVS = {
    "frozenlake": ("rllm/FrozenLake-v0", ["Down", "Down", "Right", "Right", "Down", "Right"]),
    "math": ("rllm/Math-v0", ["\\boxed{42}", "The answer is \\boxed{7}.", "no idea"]),
}


@pytest.fixture(scope="module")
def server_url():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ids = [env_id for env_id, _ in ENVS.values()]
    proc = subprocess.Popen(
        [sys.executable, "-m", "adapters.serve", *ids, "--port", str(port)]
        + ["--max-sessions", str(SESSIONS + 1)],
        cwd=Path(__file__).resolve().parents[2],
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while True:
        try:
            httpx.get(f"{url}/rllm/envs", timeout=2)
            break
        except httpx.HTTPError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("the server did not start")
            time.sleep(0.5)
    yield url
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)


def _local_stepper(env_id, replies):
    env = rllm_envs.make(env_id)
    env.reset(seed=0)
    state = {"i": 0}

    def step():
        state["i"] = (state["i"] + 1) % len(replies)
        _, _, terminated, truncated, _ = env.step(replies[state["i"]])
        if terminated or truncated:
            env.reset()

    return step


def _report(benchmark, steps_per_call):
    median_ratio(benchmark)
    info = benchmark.extra_info
    if "baseline_median_s" in info:
        # Per step: the served round's cost minus the in-process steps' cost, over the steps.
        overhead = (info["median_s"] - info["baseline_median_s"]) / steps_per_call
        info["overhead_us_per_step"] = round(overhead * 1e6, 1)


@pytest.mark.parametrize("env", list(ENVS))
def test_inprocess_step(benchmark, env):
    step = _local_stepper(*ENVS[env])
    benchmark.extra_info.update(label=f"`{ENVS[env][0]}` step in process", work=[1, "steps"])
    benchmark.pedantic(step, rounds=400, iterations=1, warmup_rounds=20)
    record(benchmark)


@pytest.mark.parametrize("env", list(ENVS))
def test_inprocess_16_steps(benchmark, env):
    step = _local_stepper(*ENVS[env])

    def sixteen():
        for _ in range(SESSIONS):
            step()

    benchmark.extra_info.update(
        label=f"`{ENVS[env][0]}`: {SESSIONS} steps in process", work=[SESSIONS, "steps"]
    )
    benchmark.pedantic(sixteen, rounds=40, iterations=1, warmup_rounds=2)
    record(benchmark)


def _async_stepper(url, env_id, replies, n):
    from adapters.openenv import RllmEnvClient, TextAction

    loop = asyncio.new_event_loop()
    clients = [RllmEnvClient(base_url=f"{url}/{env_id}") for _ in range(n)]
    counters = [0] * n

    async def start():
        for seed, client in enumerate(clients):
            await client.connect()
            await client.reset(seed=seed)

    async def one(k):
        counters[k] = (counters[k] + 1) % len(replies)
        result = await clients[k].step(TextAction(text=replies[counters[k]]))
        if result.done:
            await clients[k].reset()

    async def round_():
        await asyncio.gather(*(one(k) for k in range(n)))

    async def stop():
        for client in clients:
            await client.close()

    loop.run_until_complete(start())
    return (lambda: loop.run_until_complete(round_())), (
        lambda: (loop.run_until_complete(stop()), loop.close())
    )


@pytest.mark.parametrize("env", list(ENVS))
def test_served_step_1_session(benchmark, server_url, env):
    env_id, replies = ENVS[env]
    step, stop = _async_stepper(server_url, env_id, replies, 1)
    benchmark.extra_info.update(
        label=f"`{env_id}` step over the OpenEnv server (WebSocket), 1 session",
        baseline=f"test_inprocess_step[{env}]",
        baseline_label="the same env stepped in process",
        sessions=1,
        work=[1, "steps"],
        versions=VERSIONS,
    )
    try:
        benchmark.pedantic(step, rounds=300, iterations=1, warmup_rounds=20)
    finally:
        stop()
    _report(benchmark, 1)


@pytest.mark.parametrize("env", list(ENVS))
def test_served_step_16_sessions(benchmark, server_url, env):
    env_id, replies = ENVS[env]
    step, stop = _async_stepper(server_url, env_id, replies, SESSIONS)
    benchmark.extra_info.update(
        label=f"`{env_id}`: {SESSIONS} sessions over the OpenEnv server, one step each at once",
        baseline=f"test_inprocess_16_steps[{env}]",
        baseline_label=f"{SESSIONS} steps of the env in process, one after another",
        sessions=SESSIONS,
        work=[SESSIONS, "steps"],
        versions=VERSIONS,
    )
    try:
        benchmark.pedantic(step, rounds=40, iterations=1, warmup_rounds=3)
    finally:
        stop()
    _report(benchmark, SESSIONS)
