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

    def __init__(self, text: str, logprobs: list[float] | None = None) -> None:
        from starlette.responses import JSONResponse, StreamingResponse

        usage = {"prompt_tokens": 5, "completion_tokens": 4}

        async def chat(request):
            body = json.loads(await request.body())
            if not body.get("stream"):
                message = {"role": "assistant", "content": text}
                choice = {"index": 0, "message": message, "finish_reason": "stop"}
                if logprobs is not None:  # one entry a token, no ids (a text-only server)
                    content = [{"token": "?", "logprob": x} for x in logprobs]
                    choice["logprobs"] = {"content": content}
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


class CompletionsStandIn:
    """A stand-in completions engine for the gateway's own chat templating (not a real part):
    it replies each text of ``replies`` in turn as the tiny tokenizer's ids, streamed token by
    token or not, with its ids or (``send_ids=False``) without."""

    def __init__(self, tokenizer, replies, send_ids=True) -> None:
        from starlette.responses import JSONResponse, StreamingResponse

        self.replies = list(replies)
        self.prompts: list[list[int]] = []

        async def completions(request):
            body = json.loads(await request.body())
            self.prompts.append(body["prompt"])
            ids = tokenizer.encode(self.replies.pop(0), add_special_tokens=False)
            usage = {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(ids)}

            def choice(ids, last):
                out = {"index": 0, "text": tokenizer.decode(ids), "finish_reason": None}
                out["logprobs"] = {"token_logprobs": [-0.5] * len(ids)}
                if last:
                    out["finish_reason"] = "stop"
                if send_ids:
                    out["token_ids"] = ids
                return out

            if not body.get("stream"):
                top = {"choices": [choice(ids, True)], "usage": usage}
                if send_ids:
                    top["choices"][0]["prompt_token_ids"] = body["prompt"]
                return JSONResponse({"id": "c", **top})

            async def events():
                for k, token in enumerate(ids):
                    one = choice([token], k == len(ids) - 1)
                    if send_ids and k == 0:
                        one["prompt_token_ids"] = body["prompt"]
                    yield f"data: {json.dumps({'id': 'c', 'choices': [one]})}\n\n"
                if (body.get("stream_options") or {}).get("include_usage"):
                    yield f"data: {json.dumps({'id': 'c', 'choices': [], 'usage': usage})}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        self.app = _engine_app("/v1/completions", completions)


def _merged(stream_text):
    """A streamed chat reply's message, merged as the openai SDK merges its deltas."""
    message = {"role": "assistant", "content": ""}
    calls: list[dict] = []
    for line in stream_text.splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:]).get("choices") or []:
            delta = choice["delta"]
            message["content"] += delta.get("content") or ""
            for piece in delta.get("tool_calls") or []:
                calls.append({k: piece[k] for k in ("id", "type", "function")})
    if calls:
        message["tool_calls"] = calls
    return message


TOOLS = [{"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}]
CALL_BLOCK = '<tool_call>{"name": "calc", "arguments": {"x": "1"}}</tool_call>'


def _templated_session(tmp_path, stream, *, send_ids=True, sent_back=None):
    """A two-turn scored Math-v1 session (seed 0) on the gateway's own chat templating, the
    first reply a tool call, the second the right box; ``sent_back`` rewrites the first reply
    as the client sends it back. Returns (the engine's prompts, the reward response)."""
    import gymnasium as gym
    from transformers import AutoTokenizer

    from rllm_adapters.tiny_model import tiny_model_path

    # The tiny model's template, rendering an assistant turn's `tool_calls` after its
    # content as Qwen's does (the tiny one renders the content alone).
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_model_path()))
    plain = "'<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n'"
    assert plain in tokenizer.chat_template
    tokenizer.chat_template = tokenizer.chat_template.replace(
        plain,
        "'<|im_start|>' + message.role + '\\n' + (message.content or '') }}"
        "{%- for tc in message.tool_calls or [] %}{{- '\\n<tool_call>\\n' + "
        "tc.function.name + ' ' + tc.function.arguments + '\\n</tool_call>' }}{%- endfor %}"
        "{{- '<|im_end|>\\n'",
    )
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    first = "Let me compute. " + CALL_BLOCK
    engine = CompletionsStandIn(tokenizer, [first, "\\boxed{455}"], send_ids)
    scorers = {MATH: {"max_turns": 2}}
    app = _test_client(tmp_path, engine, scorers=scorers, tokenizer=str(tmp_path / "tokenizer"))
    env = gym.make(MATH, max_turns=2)
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        history = [{"role": "user", "content": env.reset(seed=0)[0]}]
        for turn in range(2):
            call = {"model": CALL["model"], "max_tokens": 64, "temperature": 0, "stream": stream}
            call.update(messages=history, tools=TOOLS)
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
            assert r.status_code == 200, r.text
            reply = _merged(r.text) if stream else r.json()["choices"][0]["message"]
            if turn == 0 and sent_back is not None:
                reply = sent_back(reply)
            feedback = env.step(first)[0]
            history = [*history, reply, {"role": "user", "content": feedback}]
        return engine.prompts, app.post(
            f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE
        )
    finally:
        app.__exit__(None, None, None)


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_reply_sent_back_as_relayed_continues_the_recorded_ids(tmp_path, stream):
    """att29c5 F1: a streamed reply's content deltas hold its tool-call blocks, which the
    non-streamed reply's content does not; both forms were accepted back, but the raw one was
    templated again (its calls rendered twice): a second wording of the next turn, and honest
    streamed clients trained on another context than non-streamed ones. Either form now
    continues the recorded ids."""
    forms = {
        "parsed": lambda reply: {**reply, "content": "Let me compute."},
        "raw": lambda reply: {**reply, "content": "Let me compute. " + CALL_BLOCK},
    }
    second = {}
    for name, form in forms.items():
        prompts, reward = _templated_session(tmp_path / name, stream, sent_back=form)
        assert reward.status_code == 200 and reward.json()["reward"] == 1.0, reward.text
        second[name] = prompts[1]
    assert second["parsed"] == second["raw"]


@pytest.mark.parametrize("stream", [False, True])
def test_an_engine_without_ids_keeps_the_task_in_the_next_templated_prompt(tmp_path, stream):
    """att29c5 F2: with an engine that returns no token ids, the gateway's templating recorded
    a turn with no prompt ids (and, streamed, no completion ids): the next turn's prompt was
    built on neither the task nor the reply, yet graded (2 of 2 paid). The prompt ids are
    the ones the gateway sent; the reply's are re-tokenised."""
    prompts, reward = _templated_session(tmp_path, stream, send_ids=False)
    assert reward.status_code == 200, reward.text
    assert reward.json()["token_source"] == "retokenized"
    assert prompts[1][: len(prompts[0])] == prompts[0]  # the task's prompt leads the next


def _sdk_message(message, how="create"):
    """A reply as an openai-SDK harness sends it back (its model dumped: other key order);
    as the SDK's stream merge dumps it (``how="stream"``: each call keeps its stream
    ``index`` and a ``parsed_arguments: null``) or its ``.parse()`` (``"parse"``: the
    arguments parsed in ``parsed_arguments``)."""
    from openai.types.chat import ChatCompletionMessage

    dumped = ChatCompletionMessage.model_validate(message).model_dump()
    for k, call in enumerate(dumped.get("tool_calls") or []):
        if how == "stream":
            call["function"]["parsed_arguments"] = None
            call["index"] = k
        elif how == "parse":
            call["function"]["parsed_arguments"] = json.loads(call["function"]["arguments"])
    return dumped


@pytest.mark.parametrize(
    "sent_back", ["as returned", "openai SDK", "openai SDK stream", "openai SDK parse"]
)
def test_a_harness_passing_each_tasks_tools_frames_its_tasks_alike(tmp_path, sent_back):
    """att29c6 F1: ToolUse gives each task family its own tool schemas; a harness passing
    them as the chat call's `tools` (as the env's reset gives them) wrapped each family
    otherwise, so one run's sessions after the first were refused (`framing_changed`: 1 of 12
    honest right sessions paid). A task's own tools are marked like its prompt. att29d0: a
    reply sent back as the openai SDK dumps it (a tool call's keys in another order) was
    refused once key order counted (0 of 4): a tool call's keys are put in one order.
    att29d1: as the SDK's stream merge dumps it (a call's `index`, `parsed_arguments: null`),
    refused too (0 of 2), and as its `.parse()` dumps it (a `parsed_arguments` object:
    att29d3): a tool call reaches the engine as its id, type, name and arguments alone."""
    import gymnasium as gym

    from .test_gateway_round9 import ChatStandIn

    tool_env = "rllm/ToolUse-v1"
    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={tool_env: {"python": False}})
    families, rewards = set(), []
    try:
        for seed in range(20, 26):
            env = gym.make(tool_env, python=False)
            observation, info = env.reset(seed=seed)
            families.add(env.unwrapped.task["family"])
            history = [{"role": "user", "content": observation}]
            sid = app.post("/sessions", json={"env_id": tool_env, "seed": seed}, headers=ALICE)
            sid = sid.json()["session_id"]
            for step in env.unwrapped.task["plan"]:  # the oracle's calls, turn by turn
                calls = [
                    {
                        "id": f"c{k}",
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for k, c in enumerate(step)
                ]
                engine.text, engine.tool_calls = "", calls
                call = {"model": CALL["model"], "max_tokens": 64, "temperature": 0}
                call.update(messages=history, tools=info["tools"])
                r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
                assert r.status_code == 200, r.text
                reply = r.json()["choices"][0]["message"]
                if sent_back != "as returned":
                    reply = _sdk_message(reply, sent_back.split()[-1])
                history.append(reply)
                blocks = "".join(
                    f"<tool_call>{json.dumps(c)}</tool_call>"
                    for c in ({"name": s["name"], "arguments": s["arguments"]} for s in step)
                )
                feedback = env.step(blocks)[0]
                history += [
                    {"role": "tool", "tool_call_id": c["id"], "content": feedback} for c in calls
                ]
            r = app.post(f"/sessions/{sid}/reward", json={"env": tool_env}, headers=ALICE)
            rewards.append(r.json().get("reward", r.json().get("error", {}).get("code")))
    finally:
        app.__exit__(None, None, None)
    assert len(families) > 1  # tasks of several families, each with its own tools
    assert rewards == [1.0] * len(rewards), rewards


def test_a_reordered_tool_schema_is_another_wording(tmp_path):
    """att29c7 F1: the framing digest sorted every object's keys, so tool schemas sent in
    another key order (which a template renders as sent) framed a task alike: 16 key orders
    of a task's tools previewed off the record took a run's pass@1 from 0.58 to 1.0. Tools
    count in their key order, the task's own ones too."""
    from .test_gateway_round9 import ChatStandIn

    engine = ChatStandIn()
    engine.text = "\\boxed{0}"
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    properties = {"a": {"type": "string"}, "b": {"type": "string"}}
    schema = {"name": "calc", "description": "d", "parameters": {"type": "object"}}
    schema["parameters"]["properties"] = properties
    reordered = {**schema, "parameters": {"properties": dict(reversed(properties.items()))}}
    reordered["parameters"]["type"] = "object"
    codes = []
    try:
        for seed, function in ((1, schema), (2, schema), (3, reordered)):
            sid = app.post("/sessions", json={"env_id": MATH, "seed": seed}, headers=ALICE)
            sid = sid.json()["session_id"]
            call = {"model": CALL["model"], "max_tokens": 32, "temperature": 0}
            call["messages"] = [{"role": "user", "content": _task_prompt(MATH, seed)}]
            call["tools"] = [{"type": "function", "function": function}]
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
            assert r.status_code == 200, r.text
            reward = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
            codes.append(reward.json().get("error", {}).get("code", reward.status_code))
    finally:
        app.__exit__(None, None, None)
    assert codes == [200, 200, "framing_changed"]


def test_a_sessions_group_and_sample_are_not_negative(tmp_path):
    """att29c7: `sample: -5` was accepted where seed and index are range-checked."""
    app = _test_client(tmp_path, TextOnlyChat(""))
    try:
        for field in ("group", "sample"):
            r = app.post("/sessions", json={field: -5}, headers=ALICE)
            assert r.status_code == 400 and "negative" in r.text, r.text
    finally:
        app.__exit__(None, None, None)


def test_a_replys_text_in_the_harnesss_own_words_frames_nothing(tmp_path):
    """att29c8 F1: a later turn's reply was marked wherever its text stood in that turn, so a
    one-word FrozenLake move also marked the same word in the harness's fixed reminder
    ("Left, Right, Up or Down?"): honest sessions whose moves differed were framed otherwise
    and refused (4 of 6). The reply is marked where it is, in chat and completions."""
    import gymnasium as gym

    from .test_gateway_round9 import ChatStandIn

    lake = "rllm/FrozenLake-v1"
    reminder = "\nYour next move (Left, Right, Up or Down)?"
    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={lake: {}})
    codes = []
    try:
        # Moves that keep each episode going for both turns.
        for seed, moves in ((1, ["Left", "Left"]), (2, ["Right", "Up"]), (3, ["Up", "Right"])):
            env = gym.make(lake)
            history = [{"role": "user", "content": env.reset(seed=seed)[0]}]
            sid = app.post("/sessions", json={"env_id": lake, "seed": seed}, headers=ALICE)
            sid = sid.json()["session_id"]
            for move in moves:
                engine.text, engine.tool_calls = move, []
                call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0}
                call["messages"] = history
                r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
                assert r.status_code == 200, r.text
                feedback, _, terminated, truncated, _ = env.step(move)
                assert not (terminated or truncated)
                reply = r.json()["choices"][0]["message"]
                history += [reply, {"role": "user", "content": feedback + reminder}]
            reward = app.post(f"/sessions/{sid}/reward", json={"env": lake}, headers=ALICE)
            codes.append(reward.json().get("error", {}).get("code", reward.status_code))
    finally:
        app.__exit__(None, None, None)
    assert codes == [200, 200, 200], codes


def _two_turn_math(tmp_path, rewrite_reply=lambda m: m, tools_of=lambda turn: None):
    """A scored two-turn Math-v1 chat session (seed 0), straight to the stand-in engine:
    returns (the engine's request bodies, the reward response)."""
    import gymnasium as gym

    from .test_gateway_round9 import ChatStandIn

    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}})
    env = gym.make(MATH, max_turns=2)
    try:
        history = [{"role": "user", "content": env.reset(seed=0)[0]}]
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        for turn, text in enumerate(["\\boxed{1}", "\\boxed{455}"]):
            engine.text = text
            call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0}
            call["messages"] = history
            if tools_of(turn) is not None:
                call["tools"] = tools_of(turn)
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
            assert r.status_code == 200, r.text
            reply = rewrite_reply(r.json()["choices"][0]["message"])
            history = [*history, reply, {"role": "user", "content": env.step(text)[0]}]
        reward = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        return engine.bodies, reward
    finally:
        app.__exit__(None, None, None)


def test_empty_fields_on_a_returned_reply_are_one_wording(tmp_path):
    """att29c9 F1: a returned reply sent back with any subset of empty fields (`name: ""`,
    `refusal: null`, `tool_calls: []`, a null content) passed as the reply, and each reached
    the engine as sent: 64 wordings of the next turn, previewed off the record (8 -> 12 of
    12 paid). The engine gets every form as one."""
    forms = [
        lambda m: m,
        lambda m: {**m, "name": "", "refusal": None, "tool_calls": [], "audio": None},
        lambda m: {**m, "function_call": None, "annotations": []},
    ]
    sent = []
    for k, form in enumerate(forms):
        bodies, reward = _two_turn_math(tmp_path / str(k), rewrite_reply=form)
        assert reward.status_code == 200 and reward.json()["reward"] == 1.0, reward.text
        sent.append(json.dumps(bodies[-1]["messages"]))
    assert len(set(sent)) == 1, sent


def test_a_middle_calls_tools_keep_their_key_order(tmp_path):
    """att29c9 F2: a middle call's tools were compared with the previous call's as objects,
    key order ignored, and middle calls are not digested: 12 key orders of a task's tools
    in the middle turns were accepted. A reordered middle call is a history not recorded."""
    function = {"name": "calc", "description": "d", "parameters": {"type": "object"}}
    reordered = dict(reversed(function.items()))

    def tools_of(turn):
        return [{"type": "function", "function": reordered if turn == 1 else function}]

    _, honest = _two_turn_math(tmp_path / "honest", tools_of=lambda turn: tools_of(0))
    assert honest.status_code == 200, honest.text
    _, reward = _two_turn_math(tmp_path / "reordered", tools_of=tools_of)
    assert reward.status_code == 409, reward.text
    assert reward.json()["error"]["code"] == "history_not_recorded"


def test_a_clients_task_lookups_are_its_own(tmp_path, monkeypatch):
    """att29d2 (low): the task-id cache was shared, so the time a session open took told a
    client whether another client had opened that task. Each client looks its tasks up."""
    from rllm_adapters.gateway import app as gateway_app

    from .test_gateway_record import BOB

    lookups = []
    real = gateway_app.task_of

    def counted(*args, **kwargs):
        lookups.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(gateway_app, "task_of", counted)
    app = _test_client(tmp_path, TextOnlyChat(""), scorers={MATH: {}})
    try:
        for headers in (ALICE, ALICE, BOB):
            r = app.post("/sessions", json={"env_id": MATH, "seed": 3}, headers=headers)
            assert r.status_code == 201, r.text
    finally:
        app.__exit__(None, None, None)
    assert len(lookups) == 2  # alice's first open and bob's, not alice's second


def test_a_session_call_nested_past_the_bound_is_refused_and_a_failed_scoring_is_stored(
    tmp_path, monkeypatch
):
    """att29d3: a field nested 700 deep in a session call passed the parser, then broke the
    scoring with a RecursionError: a 500, and the session, claimed, was never stored (0
    episodes, even at shutdown). Such a call is refused (400); and a scoring that fails on a
    bug of the gateway's stores the session unscored."""
    from rllm_adapters.gateway.app import Gateway

    from .test_gateway_record import _episodes

    engine = TextOnlyChat("\\boxed{455}")
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0}
    message = {"role": "user", "content": _task_prompt(MATH, 0)}
    try:
        deep: list = []
        for _ in range(40):
            deep = [deep]
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        r = app.post(
            f"/sessions/{sid}/v1/chat/completions",
            json={**call, "messages": [{**message, "x": deep}]},
            headers=ALICE,
        )
        assert r.status_code == 400 and "nested deeper" in r.text, r.text

        def broken(self, session, scored):
            raise RuntimeError("a bug")

        monkeypatch.setattr(Gateway, "_pin_framing", broken)
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        url = f"/sessions/{sid}/v1/chat/completions"
        assert app.post(url, json={**call, "messages": [message]}, headers=ALICE).is_success
        reward = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert reward.status_code == 500 and "stored without a reward" in reward.text
    finally:
        app.__exit__(None, None, None)
    (episode,) = _episodes(tmp_path / "e.db")
    assert episode.trajectory.steps[-1].info["reward_source"] == "none"


@pytest.mark.parametrize("item", ["x", 5, None, [1, 2], {"role": ["user"], "content": "x"}])
def test_a_session_message_that_is_no_message_is_refused(tmp_path, item):
    """att29d4: a bare item in a session call's messages (`"x"`, `5`, `null`, a list; or a
    role that is no string) was sent on and recorded, then every reward was a 500 and the
    session was never stored, its scorer run again on each retry. Refused before the engine
    (400); `metadata: []` too."""
    engine = TextOnlyChat("\\boxed{455}")
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        message = {"role": "user", "content": _task_prompt(MATH, 0)}
        call = {"model": CALL["model"], "max_tokens": 8, "messages": [message, item]}
        r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_messages", r.text
        r = app.post("/sessions", json={"metadata": []}, headers=ALICE)
        assert r.status_code == 400, r.text
    finally:
        app.__exit__(None, None, None)


def test_a_messages_key_order_reaches_the_engine_in_one_form(tmp_path):
    """att29d8: the engine got a session call's messages in the client's key order, while
    the framing digest reads keys sorted: 8 key orders of three messages, previewed off the
    record, took a run's pass@1 from 0.67 to 1.00. Messages and their content parts reach the
    engine with their keys in one order; a returned reply sent back reordered is the reply."""

    from .test_gateway_round9 import ChatStandIn

    def reverse(message):
        return dict(reversed(list(message.items())))

    seen = []
    for k, form in enumerate([lambda m: m, reverse]):
        engine = ChatStandIn()
        engine.text = "\\boxed{455}"
        app = _test_client(tmp_path / str(k), engine, scorers={MATH: {}})
        try:
            sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
            sid = sid.json()["session_id"]
            part = form({"type": "text", "text": _task_prompt(MATH, 0)})
            call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0}
            call["messages"] = [form({"role": "user", "content": [part]})]
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
            assert r.status_code == 200, r.text
            reward = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
            assert reward.json()["reward"] == 1.0, reward.text
        finally:
            app.__exit__(None, None, None)
        seen.append(json.dumps(engine.bodies[-1]["messages"]))
    assert seen[0] == seen[1], seen
    # A two-turn session whose returned reply comes back with its keys reversed.
    bodies, reward = _two_turn_math(tmp_path / "reply", rewrite_reply=reverse)
    assert reward.status_code == 200, reward.text
    assert list(bodies[-1]["messages"][1]) == ["role", "content"]


def test_a_re_tokenised_reply_keeps_no_logprobs_of_the_engine(tmp_path):
    """s41 att41e (read in the code): a reply the engine returned as text with logprobs was
    re-tokenised, and its logprobs kept where their count matched the new ids: the engine's
    tokens ("a" + "bc") need not be the text's ("ab" + "c"), so they paired with ids it never
    sampled. A re-tokenised reply keeps none."""
    from transformers import AutoTokenizer

    from rllm_adapters.tiny_model import tiny_model_path
    from rllm_agents.store import EpisodeStore

    text = "\\boxed{455}"
    count = len(AutoTokenizer.from_pretrained(str(tiny_model_path())).encode(text))
    engine = TextOnlyChat(text, logprobs=[-0.5] * count)
    app = _test_client(
        tmp_path, engine, scorers={MATH: {}}, tokenizer=str(tiny_model_path()), template_chat=False
    )
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        messages = [{"role": "user", "content": _task_prompt(MATH, 0)}]
        call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0, "messages": messages}
        reply = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
        assert reply.status_code == 200, reply.text
        reward = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert reward.json()["token_source"] == "retokenized", reward.text
    finally:
        app.__exit__(None, None, None)
    with EpisodeStore(tmp_path / "e.db") as store:
        (step,) = store.get(1).trajectory.steps
    assert step.completion_ids and step.logprobs == []
