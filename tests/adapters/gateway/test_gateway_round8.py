"""The gateway against the blind round of session 20 (issue #29, att29k): a completions
call's token limit is the ``max_tokens`` the engine reads, and chat templating runs off the
event loop.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import pytest

from .test_gateway_record import ALICE, BOB, CALL, StandInEngine, _task_prompt, _test_client
from .test_gateway_round7 import MATH, _scored_call

pytest.importorskip("starlette")
pytest.importorskip("httpx")

#: A call that sends no token limit (the shared call's `max_tokens` sent as null).
NO_LIMIT = {"max_tokens": None}


def test_a_completions_calls_limit_reaches_the_engine_as_max_tokens(tmp_path):
    """att29k F1: vLLM's completions endpoint ignores `max_completion_tokens` (it cuts at its
    default, 16), while the run's pin read the number sent: a client that previewed the greedy
    reply chose the field per task and cut after a right box (pass@1 0.33 -> 0.53)."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        assert _scored_call(app, max_tokens=64).is_success
        assert _scored_call(app, **NO_LIMIT, max_completion_tokens=64).is_success  # the same
        sent = engine.bodies[-2:]
        assert [b.get("max_tokens") for b in sent] == [64, 64]
        assert all("max_completion_tokens" not in b for b in sent)
        # No limit is the engine's default of 16 tokens: not the pinned 64.
        r = _scored_call(app, **NO_LIMIT)
        assert r.status_code == 400 and r.json()["error"]["code"] == "sampling_changed", r.text
        r = _scored_call(app, max_tokens=None, max_completion_tokens=None)
        assert r.status_code == 400, r.text
    finally:
        app.__exit__(None, None, None)
    # A run whose first call sent no limit is pinned to 16, which the engine is sent.
    engine = StandInEngine()
    app = _test_client(tmp_path / "other", engine, scorers={MATH: {}})
    try:
        assert _scored_call(app, **NO_LIMIT).is_success
        assert engine.bodies[-1]["max_tokens"] == 16
        assert _scored_call(app, **NO_LIMIT, max_completion_tokens=16).is_success
        assert _scored_call(app, max_tokens=64).status_code == 400
    finally:
        app.__exit__(None, None, None)


def test_chat_templating_runs_off_the_event_loop(tmp_path, tiny_path):
    """att29k F2: a session's chat call was templated (the chat template and the tokenizer
    over up to 4 MB) on the event loop: every other client's requests and streams waited
    3-9 s behind it. It runs on the gateway's templating thread."""
    import threading

    engine = StandInEngine("Hello")
    app = _test_client(tmp_path, engine, tokenizer=str(tiny_path))
    templater = app.gateway.templater()
    assert templater is not None
    threads = []
    prompt = templater.prompt

    def recording(*args):
        threads.append(threading.current_thread().name)
        return prompt(*args)

    templater.prompt = recording
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        call = {
            "model": CALL["model"],
            "max_tokens": 4,
            "messages": [{"role": "user", "content": "Hi"}],
        }
        r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
        assert r.is_success, r.text
        assert engine.bodies[-1]["prompt"] == prompt(None, call["messages"], None)
    finally:
        app.__exit__(None, None, None)
    assert threads and all(name.startswith("rllm-gateway-template") for name in threads), threads


def test_a_templated_chat_call_without_a_limit_runs_to_the_end_of_the_context(tmp_path, tiny_path):
    """att29l F1/F2: a chat call with no limit, templated by the gateway and sent to the
    engine's completions endpoint, was cut at that endpoint's default of 16 tokens while its
    pin and record said no limit (and another gateway's chat endpoint ran on to the end of the
    context under the same pin). It is sent the context left after its prompt."""
    engine = StandInEngine("Hello")
    app = _test_client(tmp_path, engine, tokenizer=str(tiny_path))
    try:
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        messages = [{"role": "user", "content": "Write a long essay."}]
        call = {"model": CALL["model"], "messages": messages}
        assert app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE).is_success
        sent = engine.bodies[-1]
        assert sent["max_tokens"] == 2048 - len(sent["prompt"])  # the stand-in's max_model_len
        limited = {**call, "max_tokens": 7, "messages": messages}
        sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
        assert app.post(
            f"/sessions/{sid}/v1/chat/completions", json=limited, headers=ALICE
        ).is_success
        assert engine.bodies[-1]["max_tokens"] == 7
    finally:
        app.__exit__(None, None, None)


def test_a_reply_the_context_ended_is_not_scored(tmp_path):
    """att29m F1: the engine cuts a reply at the end of the model's context, which the
    prompt's length sets: a client padded each prompt so that a previewed greedy reply ended
    right after its right box (pass@1 0.33 -> 0.67, every pin kept)."""
    engine = StandInEngine("\\boxed{455}")  # seed 0's answer
    engine.finish = "length"
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        # A client per limit: a client's limit is the same in each of its runs.
        for limit, status, who in ((64, 409, ALICE), (len(engine.text), 200, BOB)):
            fields = {"env_id": MATH, "seed": 0, "run": f"limit-{limit}"}
            sid = app.post("/sessions", json=fields, headers=who).json()
            url = f"/sessions/{sid['session_id']}"
            call = {**CALL, "prompt": _task_prompt(MATH, 0), "max_tokens": limit}
            assert app.post(f"{url}/v1/completions", json=call, headers=who).is_success
            r = app.post(f"{url}/reward", json={"env": MATH}, headers=who)
            assert r.status_code == status, r.text
            if status == 409:  # cut before its limit: the context ended it
                assert r.json()["error"]["code"] == "context_cut"
                r = app.post(f"{url}/reward", json={"reward": 0.0}, headers=who)
                assert r.is_success, r.text  # still the client's to store
            else:  # its own limit cut it: scored
                assert r.json()["reward"] == 1.0
    finally:
        app.__exit__(None, None, None)
