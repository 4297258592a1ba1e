"""Gateway, blind round of session 24 (issue #29): one client's slow scorings hold up nobody.

att29s24 F1: with the defaults (2 scoring threads, 2 scorings per client) one client's two slow
scorings took the whole pool, and another client's open of a session on a task (its task
lookup ran on the same pool) waited for a whole scoring: 0.01 -> 7.5 s. The test fails on the
code before the fix.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import gymnasium as gym
import pytest

from tests.adapters.gateway.test_gateway_record import ALICE, BOB, StandInEngine, _test_client

SLOW_S = 3.0
ENV = "rllm-test/SlowScorer-v0"


class SlowScorer(gym.Env):
    """A stand-in scorer env (not a real part): a step that waits, as a code env's step runs a
    looping program to its time limit."""

    def reset(self, *, seed=None, options=None):
        return "task", {"task_id": f"t{seed}"}

    def step(self, action):
        if "loop" in action:
            time.sleep(SLOW_S)
        right = "right" in action
        return "", float(right), True, False, {"is_correct": right}


@pytest.fixture(scope="module", autouse=True)
def _registered():
    gym.register(ENV, entry_point=SlowScorer, disable_env_checker=True)
    yield
    gym.registry.pop(ENV, None)


def test_a_clients_slow_scorings_hold_up_no_other_clients_open_or_reward(tmp_path):
    engine = StandInEngine(text="loop")
    app = _test_client(tmp_path, engine, scorers={ENV: {}})
    lock = threading.Lock()

    def session(headers, seed, text) -> str:
        with lock:  # the stand-in's reply is shared: one call at a time
            engine.text = text
            opened = app.post("/sessions", json={"env_id": ENV, "seed": seed}, headers=headers)
            sid = opened.json()["session_id"]
            call = {"model": "tiny", "prompt": "task", "max_tokens": 4}
            reply = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=headers)
            assert reply.status_code == 200, reply.text
        return sid

    try:
        slow = [session(ALICE, seed, "loop") for seed in range(2)]  # her cap: 2 scorings
        with ThreadPoolExecutor(2) as pool:
            rewards = [
                pool.submit(app.post, f"/sessions/{sid}/reward", json={"env": ENV}, headers=ALICE)
                for sid in slow
            ]
            time.sleep(0.5)  # both of hers are running
            started = time.perf_counter()
            sid = session(BOB, 1000, "right")  # opening on a task looks it up
            opened_s = time.perf_counter() - started
            started = time.perf_counter()
            reward = app.post(f"/sessions/{sid}/reward", json={"env": ENV}, headers=BOB)
            reward_s = time.perf_counter() - started
            assert [r.result().status_code for r in rewards] == [200, 200]
        assert reward.status_code == 200 and reward.json()["reward"] == 1.0
        assert opened_s < SLOW_S / 2 and reward_s < SLOW_S / 2, (opened_s, reward_s)
    finally:
        app.__exit__(None, None, None)
