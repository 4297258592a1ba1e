"""Steps per second over the OpenEnv server (WebSocket) vs ``env.step`` in process.

One server process (``python -m adapters.serve``) on 127.0.0.1 serves rllm/FrozenLake-v0 and
rllm/Math-v0. A "step" is the same unit in every case: one ``step`` of a fixed cycle of
replies, plus a ``reset`` whenever the episode ends (so a Math step is a reset and an answer).

* 1 session: one OpenEnv client steps; baseline: the same env stepped in process.
* 16 sessions: 16 OpenEnv clients step at once (one asyncio ``gather`` per round); baseline:
  16 in-process steps one after another.

``extra_info`` reports steps/s and the overhead per step in microseconds (served minus in
process, per step). Goal: overhead stays a bounded multiple of the step (WebSocket, JSON and
pydantic on both ends cost tens of microseconds to a millisecond).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("openenv.core.env_server", reason='needs `pip install "rllm-envs[openenv]"`')

import httpx  # noqa: E402

import rllm_envs  # noqa: E402

SESSIONS = 16
ENVS = {
    "frozenlake": ("rllm/FrozenLake-v0", ["Down", "Down", "Right", "Right", "Down", "Right"]),
    "math": ("rllm/Math-v0", ["\\boxed{42}", "The answer is \\boxed{7}.", "no idea"]),
}
_means: dict[str, float] = {}


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


def _report(benchmark, name, baseline, steps_per_call):
    if not benchmark.stats:  # --benchmark-disable (the smoke test): nothing was timed
        return
    mean = benchmark.stats.stats.mean
    base = _means.get(baseline)
    benchmark.extra_info["steps_per_s"] = round(steps_per_call / mean, 1)
    if base is not None:
        # Per step: the served round's cost minus the in-process steps' cost, over the steps.
        overhead = (mean - base) / steps_per_call
        benchmark.extra_info["overhead_us_per_step"] = round(overhead * 1e6, 1)
        benchmark.extra_info["inprocess_steps_per_s"] = round(steps_per_call / base, 1)


@pytest.mark.parametrize("env", list(ENVS))
def test_inprocess_step(benchmark, env):
    step = _local_stepper(*ENVS[env])
    benchmark.pedantic(step, rounds=400, iterations=1, warmup_rounds=20)
    if benchmark.stats:
        _means[f"test_inprocess_step[{env}]"] = benchmark.stats.stats.mean
        benchmark.extra_info["steps_per_s"] = round(1 / benchmark.stats.stats.mean, 1)


@pytest.mark.parametrize("env", list(ENVS))
def test_inprocess_16_steps(benchmark, env):
    step = _local_stepper(*ENVS[env])

    def sixteen():
        for _ in range(SESSIONS):
            step()

    benchmark.pedantic(sixteen, rounds=40, iterations=1, warmup_rounds=2)
    if benchmark.stats:
        _means[f"test_inprocess_16_steps[{env}]"] = benchmark.stats.stats.mean


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
    benchmark.extra_info.update(baseline=f"test_inprocess_step[{env}]", sessions=1)
    try:
        benchmark.pedantic(step, rounds=300, iterations=1, warmup_rounds=20)
    finally:
        stop()
    _report(benchmark, env, f"test_inprocess_step[{env}]", 1)


@pytest.mark.parametrize("env", list(ENVS))
def test_served_step_16_sessions(benchmark, server_url, env):
    env_id, replies = ENVS[env]
    step, stop = _async_stepper(server_url, env_id, replies, SESSIONS)
    benchmark.extra_info.update(baseline=f"test_inprocess_16_steps[{env}]", sessions=SESSIONS)
    try:
        benchmark.pedantic(step, rounds=40, iterations=1, warmup_rounds=3)
    finally:
        stop()
    _report(benchmark, env, f"test_inprocess_16_steps[{env}]", SESSIONS)
