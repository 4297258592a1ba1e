"""The gateway against the blind round of session 23 (issue #29, att29c4): honest chat calls
in standard shapes that an engine without token ids answered were lost from the record.

``TextOnlyChat`` is a stand-in OpenAI chat engine inside these unit tests (not a real part):
it returns text and usage, no token ids, streamed or not, as many OpenAI-compatible servers do.
"""

from __future__ import annotations

import json

import pytest

from .test_gateway_record import ALICE, CALL, _task_prompt, _test_client
from .test_gateway_round7 import MATH
from .test_gateway_round9 import _engine_app

pytest.importorskip("starlette")
pytest.importorskip("httpx")


class TextOnlyChat:
    """A stand-in chat engine that replies ``text`` with usage and no token ids."""

    def __init__(self, text: str) -> None:
        from starlette.responses import JSONResponse, StreamingResponse

        usage = {"prompt_tokens": 5, "completion_tokens": 4}

        async def chat(request):
            body = json.loads(await request.body())
            if not body.get("stream"):
                message = {"role": "assistant", "content": text}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                return JSONResponse({"id": "c", "choices": [choice], "usage": usage})

            def event(payload):
                return f"data: {json.dumps({'id': 'c', **payload})}\n\n"

            async def events():
                delta = {"role": "assistant", "content": text}
                yield event({"choices": [{"index": 0, "delta": delta}]})
                yield event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                yield event({"choices": [], "usage": usage})
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        self.app = _engine_app("/v1/chat/completions", chat)


def _session(tmp_path, messages, stream):
    """A scored Math-v1 seed-0 session of one call with ``messages``, the engine replying the
    right box; returns (the call's response, the reward's)."""
    from rllm_adapters.tiny_model import tiny_model_path

    engine = TextOnlyChat("\\boxed{455}")  # seed 0's answer
    app = _test_client(
        tmp_path, engine, scorers={MATH: {}}, tokenizer=str(tiny_model_path()), template_chat=False
    )
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0, "stream": stream}
        url = f"/sessions/{sid}/v1/chat/completions"
        reply = app.post(url, json={**call, "messages": messages}, headers=ALICE)
        return reply, app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
    finally:
        app.__exit__(None, None, None)


@pytest.mark.parametrize("stream", [False, True])
def test_content_parts_are_templated_as_the_engine_reads_them(tmp_path, stream):
    """att29c4 F1: the gateway templated the client's messages as sent to fill a reply's ids:
    OpenAI content parts broke the template, a non-streamed right reply came back as a 502
    and a streamed one went unrecorded; the session was refused (0 of 2 paid). Parts are
    text joined by newlines, as vLLM's chat endpoint joins them."""
    task = _task_prompt(MATH, 0)
    messages = [{"role": "user", "content": [{"type": "text", "text": task}]}]
    reply, reward = _session(tmp_path, messages, stream)
    assert reply.status_code == 200, reply.text
    assert reward.status_code == 200, reward.text
    assert reward.json()["reward"] == 1.0
    assert reward.json()["token_source"] == "retokenized"


@pytest.mark.parametrize("stream", [False, True])
def test_a_message_the_template_cannot_read_is_recorded_without_ids(tmp_path, stream):
    """att29c4 F2: an assistant turn of tool calls without a `content` key (which OpenAI
    allows) made the template raise: a 500 (not streamed) or an unrecorded call (streamed),
    and a reward refused as if the session had made no call. Such a call is recorded; this
    one is then refused for what it is (a history with a turn off the record)."""
    task = _task_prompt(MATH, 0)
    tool_call = {"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        {"role": "user", "content": task},
        {"role": "assistant", "tool_calls": [tool_call]},
        {"role": "tool", "tool_call_id": "x", "content": "ok"},
    ]
    reply, reward = _session(tmp_path, messages, stream)
    assert reply.status_code == 200, reply.text
    assert reward.status_code == 409, reward.text
    assert reward.json()["error"]["code"] not in ("no_calls", "unrecorded_call")


def test_a_session_whose_calls_all_went_unrecorded_is_told_so():
    """att29c4: a session whose every call failed to record was told it "made no call"."""
    from rllm_adapters.gateway.app import _no_calls
    from rllm_adapters.gateway.sessions import Session

    session = Session(id="s", owner="alice")
    assert _no_calls(session).code == "no_calls"
    session.unrecorded = 2
    refusal = _no_calls(session)
    assert refusal.code == "unrecorded_call" and "none of its 2 call(s)" in str(refusal)
