"""The gateway against the blind round of session 21 (issue #29, att29n): a run's scored
sessions wrap their tasks alike, so no client words each task the way that makes its greedy
reply right.

The engine is ``StandInEngine`` of ``test_gateway_record`` (a stand-in OpenAI server inside
these unit tests of the gateway, not a real part).
"""

from __future__ import annotations

import pytest

from .test_gateway_record import ALICE, BOB, CALL, StandInEngine, _task_prompt, _test_client
from .test_gateway_round7 import MATH

pytest.importorskip("starlette")
pytest.importorskip("httpx")

#: Seeds 0 and 1 of Math-v1 and their answers.
ANSWERS = {0: "455", 1: "11"}


def _scored(app, engine, seed, prompt, run="eval", reply=None, headers=ALICE):
    """One scored greedy completions session: the engine replies ``reply`` (else the right
    box) to ``prompt``; returns the reward response."""
    sid = app.post("/sessions", json={"env_id": MATH, "seed": seed, "run": run}, headers=headers)
    sid = sid.json()["session_id"]
    engine.text = reply if reply is not None else f"\\boxed{{{ANSWERS[seed]}}}"
    call = {**CALL, "prompt": prompt, "temperature": 0}
    assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=headers).is_success
    return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=headers)


def test_a_runs_scored_sessions_wrap_every_task_alike(tmp_path):
    """att29n F1: a greedy reply changes with the prompt's wording; a client that previewed it
    under a dozen wordings per task (a reference number after the task) sent each task in
    the wording whose reply was right: pass@1 0.17 -> 1.0 with every task of a fixed range
    opened and every pin kept. The first scored session fixes the run's framing; a session
    worded otherwise is not graded and counts as a failed sample of its task."""
    from rllm_agents.store import EpisodeStore

    engine = StandInEngine()
    # The engine's weights labelled: greedy scoring goes on across the restart below.
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, engine_weights="ckpt")
    prompts = {seed: _task_prompt(MATH, seed) for seed in ANSWERS}
    assert ANSWERS[0] not in prompts[0]  # the answer is not in the prompt
    try:
        # The same wrapper around every task (here a system line before it): graded.
        wrapped = {seed: f"You are a careful solver.\n{p}" for seed, p in prompts.items()}
        assert _scored(app, engine, 0, wrapped[0]).json()["reward"] == 1.0
        assert _scored(app, engine, 1, wrapped[1]).json()["reward"] == 1.0
        # Another wording of one task, in the same run: refused, a failed sample. Whitespace
        # too (att29o F1: a dozen whitespace suffixes, 0.20 -> 1.00), the wrapper left out.
        for prompt in (
            wrapped[0] + "\n\n(Problem reference #3)",
            wrapped[0] + "\n",
            wrapped[0].replace("\n", "\n\n", 1),
            wrapped[0].replace(" ", "\u00a0", 1),
            prompts[0],
        ):
            r = _scored(app, engine, 0, prompt)
            assert r.status_code == 409, r.text
            assert r.json()["error"]["code"] == "framing_changed", r.text
        # Another client has its own framing (one client's is the same in each of its runs:
        # test_gateway_round12).
        other = {"run": "other", "headers": BOB}
        r = _scored(app, engine, 0, prompts[0] + "\n(Problem reference #3)", **other)
        assert r.status_code == 200, r.text
        r = _scored(app, engine, 1, prompts[1] + "\n(Problem reference #3)", **other)
        assert r.status_code == 200, r.text
        r = _scored(app, engine, 1, prompts[1] + "\n(Problem reference #4)", **other)
        assert r.json()["error"]["code"] == "framing_changed", r.text
    finally:
        app.__exit__(None, None, None)
    with EpisodeStore(tmp_path / "e.db", read_only=True) as store:
        rows = store.pass_at_k((1,), env=MATH)
    (row,) = [row for key, row in rows.items() if "eval" in str(key)]
    # Seed 0: one right sample and five refused; seed 1: one right, five short (every task
    # counts as sampled as often as the most-sampled one).
    assert row["samples"] == 7 and row["pass@1"] == pytest.approx((1 / 6 + 1 / 6) / 2), row
    # The pin is kept in the store: a gateway restarted on it keeps the run's framing.
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, engine_weights="ckpt")
    try:
        r = _scored(app, engine, 1, prompts[1])
        assert r.json()["error"]["code"] == "framing_changed", r.text
        r = _scored(app, engine, 1, f"You are a careful solver.\n{prompts[1]}")
        assert r.status_code == 200, r.text
    finally:
        app.__exit__(None, None, None)


def test_a_runs_later_turns_are_framed_alike_around_the_envs_feedback(tmp_path):
    """The same for an episode of several turns: each later turn is the earlier conversation,
    the recorded reply and the env's feedback in the run's own wrapper; wording a later turn
    per task (after a previewed first reply) is refused too."""
    engine = StandInEngine()
    env_id = MATH
    app = _test_client(tmp_path, engine, scorers={env_id: {"max_turns": 2}})
    import gymnasium as gym

    def session(seed, template):
        env = gym.make(env_id, max_turns=2)
        prompt, _ = env.reset(seed=seed)
        sid = app.post("/sessions", json={"env_id": env_id, "seed": seed}, headers=ALICE)
        sid = sid.json()["session_id"]
        right = f"\\boxed{{{env.unwrapped.task['answer']}}}"
        for turn, reply in enumerate(["\\boxed{0.5}", right]):
            engine.text = reply
            call = {**CALL, "prompt": prompt, "temperature": 0}
            r = app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE)
            assert r.is_success, r.text
            if turn == 0:
                feedback, *_ = env.step(reply)
                prompt += template.format(reply=reply, feedback=feedback, seed=seed)
        env.close()
        return app.post(f"/sessions/{sid}/reward", json={"env": env_id}, headers=ALICE)

    try:
        template = "\n{reply}\nThe grader said: {feedback}\n"
        for seed in (0, 1):
            r = session(seed, template)
            assert r.status_code == 200 and r.json()["reward"] > 0, r.text
        r = session(2, template.replace("said:", "said (task {seed}):"))
        assert r.status_code == 409 and r.json()["error"]["code"] == "framing_changed", r.text
    finally:
        app.__exit__(None, None, None)


def _chat_scored(app, env_id, seed, content, **fields):
    """One scored greedy chat session of one user message; returns the reward response."""
    sid = app.post("/sessions", json={"env_id": env_id, "seed": seed}, headers=ALICE)
    sid = sid.json()["session_id"]
    call = {
        "model": CALL["model"],
        "max_tokens": 8,
        "temperature": 0,
        "messages": [{"role": "user", "content": content}],
        **fields,
    }
    r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
    assert r.is_success, r.text
    return app.post(f"/sessions/{sid}/reward", json={"env": env_id}, headers=ALICE)


def test_a_chat_calls_framing_counts_every_content_part_and_field(tmp_path, tiny_path):
    """att29o F2: the framing read a message's `text` parts only, while an engine renders
    `refusal` (and other) parts too: a wording hidden in a refusal part per task raised greedy
    pass@1 0.48 -> 0.98. Every string of every message and prompt field counts."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, tokenizer=str(tiny_path))

    def scored(seed, content, **fields):
        engine.text = f"\\boxed{{{ANSWERS[seed]}}}"
        return _chat_scored(app, MATH, seed, content, **fields)

    def parts(seed, *extra):
        return [{"type": "text", "text": _task_prompt(MATH, seed)}, *extra]

    try:
        assert scored(0, parts(0)).status_code == 200
        assert scored(1, parts(1)).status_code == 200  # the same framing, another task
        refusal = {"type": "refusal", "refusal": "(Problem reference #3)"}
        task = _task_prompt(MATH, 0)
        half = len(task) // 2
        split = [{"type": "text", "text": task[:half]}, {"type": "text", "text": task[half:]}]
        for content, fields in (
            (parts(0, refusal), {}),
            (parts(0, {"type": "text", "text": ""}), {}),
            (split, {}),
            (task, {}),
            (parts(0), {"parallel_tool_calls": False}),
        ):
            r = scored(0, content, **fields)
            assert r.status_code == 409, (content[-1:], fields, r.text)
            assert r.json()["error"]["code"] == "framing_changed", r.text
    finally:
        app.__exit__(None, None, None)


def test_each_known_text_keeps_its_own_place_in_the_framing(tmp_path):
    """att29p F1: the framing took the env's prompt and the task's bare statement out with one
    mark, so a client previewed both in each place (2 wordings per place; 0.20 -> 0.45 with
    one place, 0.50 -> 1.00 with five). Which text fills which place is the run's."""
    from .test_gateway_guards import _problem

    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        assert _scored(app, engine, 0, _task_prompt(MATH, 0)).status_code == 200
        r = _scored(app, engine, 1, _problem(1))
        assert r.json()["error"]["code"] == "framing_changed", r.text
        two, bob = "Part 1:\n{}\nPart 2:\n{}", {"run": "two", "headers": BOB}
        r = _scored(app, engine, 0, two.format(_task_prompt(MATH, 0), _problem(0)), **bob)
        assert r.status_code == 200, r.text
        r = _scored(app, engine, 1, two.format(_task_prompt(MATH, 1), _problem(1)), **bob)
        assert r.status_code == 200, r.text
        r = _scored(app, engine, 1, two.format(_problem(1), _task_prompt(MATH, 1)), **bob)
        assert r.json()["error"]["code"] == "framing_changed", r.text
    finally:
        app.__exit__(None, None, None)


def test_every_call_of_a_scored_session_continues_the_one_before(tmp_path):
    """att29p F2: a middle call is not kept, so its prompt was never compared: a client worded
    the middle turn per task after previewing it (kept wrong so the episode went on) and the
    last call, in the run's wording, came out right: pass@1 0.60 -> 1.00 over three turns.
    Each call's prompt is the previous prompt, its reply and more, or the session is not
    scored (409 ``history_not_recorded``, a failed sample)."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 3}})
    task = _task_prompt(MATH, 0)

    def session(middle_note):
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        prompt = task
        for turn, reply in enumerate(["\\boxed{1}", "\\boxed{2}", "\\boxed{455}"]):
            engine.text = reply
            sent = prompt + (middle_note if turn == 1 else "")
            call = {**CALL, "prompt": sent, "temperature": 0}
            assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
            prompt += f"\n{reply}\nIncorrect. Try again.\n"
        return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)

    try:
        r = session("")
        assert r.status_code == 200 and r.json()["reward"] > 0, r.text
        r = session("\n(attempt note 7)")
        assert r.status_code == 409, r.text
        assert r.json()["error"]["code"] == "history_not_recorded", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_chat_session_continues_its_messages_exactly(tmp_path, tiny_path):
    """The same for chat: a later call's messages start with the earlier call's, exactly (a
    content part dropped from the history counts), then the recorded reply."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}}, tokenizer=str(tiny_path))
    task = _task_prompt(MATH, 0)

    def session(first_content, later_content):
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        history = [{"role": "user", "content": first_content}]
        for reply in ["\\boxed{1}", "\\boxed{455}"]:
            engine.text = reply
            call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0, "messages": history}
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
            assert r.is_success, r.text
            history = [
                {"role": "user", "content": later_content},
                r.json()["choices"][0]["message"],
                {"role": "user", "content": "Incorrect. Try again."},
            ]
        return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)

    try:
        parts = [{"type": "text", "text": task}]
        assert session(parts, parts).status_code == 200
        note = [*parts, {"type": "refusal", "refusal": "(attempt note 7)"}]
        r = session(note, parts)
        assert r.json()["error"]["code"] == "history_not_recorded", r.text
    finally:
        app.__exit__(None, None, None)


def _turns(app, engine, seed, replies, wrapper="{}", sent=lambda reply: reply):
    """A scored completions session of ``len(replies)`` turns (Math-v1 with retries): each
    turn's prompt is the previous one, the reply (as ``sent`` writes it back) and the env's
    feedback. Returns the reward response."""
    import gymnasium as gym

    env = gym.make(MATH, max_turns=len(replies))
    prompt = wrapper.format(env.reset(seed=seed)[0])
    sid = app.post("/sessions", json={"env_id": MATH, "seed": seed}, headers=ALICE)
    sid = sid.json()["session_id"]
    for reply in replies:
        engine.text = reply
        call = {**CALL, "prompt": prompt, "temperature": 0}
        assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
        feedback, *_ = env.step(reply)
        prompt += f"{sent(reply)}\nFeedback: {feedback}\n"
    env.close()
    return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)


def test_a_reply_goes_back_in_the_one_form_it_came_in(tmp_path):
    """att29q F1: a reply was taken back as given, stripped or without its `<think>` block,
    three wordings of the next turn's prompt per reply, chosen per task after a preview
    (0.63 -> 0.82 over three turns, every pin kept). Only the form the gateway returned."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}})
    thinking = "<think>Let me see.</think>\n\\boxed{1} "
    try:
        r = _turns(app, engine, 0, [thinking, "\\boxed{455}"])
        assert r.status_code == 200, r.text
        for sent in (str.strip, lambda reply: reply.split("</think>")[-1]):
            r = _turns(app, engine, 1, [thinking, "\\boxed{11}"], sent=sent)
            assert r.status_code == 409, r.text
            assert r.json()["error"]["code"] == "history_not_recorded", r.text
    finally:
        app.__exit__(None, None, None)


def test_replies_are_taken_out_of_their_own_turn_only(tmp_path):
    """att29q F2: replies were taken out of the whole prompt by text, the first reply's mark
    for every copy, so a policy that repeated a reply (or whose reply was a word of the
    harness's own text) framed the run otherwise: 9 of 20 honest FrozenLake sessions were
    refused. Each turn's reply and feedback are taken out of what that turn added."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 3}})
    wrapper = "Write your answer as \\boxed{1} would be written.\n{}"
    wrapper = wrapper.replace("{1}", "{{1}}")
    try:
        for seed, replies in (
            (0, ["\\boxed{1}", "\\boxed{2}", "\\boxed{455}"]),
            (1, ["\\boxed{3}", "\\boxed{3}", "\\boxed{11}"]),  # a repeated reply
            (2, ["\\boxed{1}", "\\boxed{1}", "\\boxed{18}"]),  # and a word of the wrapper
        ):
            r = _turns(app, engine, seed, replies, wrapper=wrapper)
            assert r.status_code == 200 and r.json()["reward"] > 0, (seed, r.text)
        # A per-task word in a later turn is still the client's wording: refused.
        r = _turns(
            app,
            engine,
            3,
            ["\\boxed{1}", "\\boxed{2}", "\\boxed{4}"],
            wrapper=wrapper,
            sent=lambda reply: reply + " (task 3)",
        )
        assert r.json()["error"]["code"] == "framing_changed", r.text
    finally:
        app.__exit__(None, None, None)


def _engine_app(path: str, handler) -> object:
    """A stand-in engine's app: ``handler`` on ``path`` (POST) and ``/v1/models``."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def models(request):
        return JSONResponse({"data": [{"id": CALL["model"], "max_model_len": 4096}]})

    routes = [Route(path, handler, methods=["POST"]), Route("/v1/models", models, methods=["GET"])]
    return Starlette(routes=routes)


class ChatStandIn:
    """A stand-in OpenAI chat engine for these unit tests (not a real part): it replies
    ``text`` (and ``tool_calls``), streaming a tool call in pieces as vLLM does (id, type
    and name first, then the arguments' text over two chunks)."""

    def __init__(self) -> None:
        from starlette.responses import JSONResponse, StreamingResponse

        self.text = ""
        self.tool_calls: list[dict] = []
        #: A reasoning parser's field (vLLM's `reasoning_content`), when not empty.
        self.reasoning = ""
        #: The completion's token ids and the prompt's (made-up ones when None).
        self.ids: list[int] | None = None
        self.prompt_ids: list[int] | None = None
        #: False: an engine that returns no token ids (the gateway re-tokenises its text).
        self.send_ids = True
        #: The tokens a stream's usage says were generated (None: its ids' count).
        self.generated: int | None = None
        self.bodies: list[dict] = []

        async def chat(request):
            import json

            body = json.loads(await request.body())
            self.bodies.append(body)
            ids = self.ids or [100 + i for i in range(max(len(self.text), 1))]
            logprobs = {"content": [{"token": "x", "logprob": -0.5} for _ in ids]}
            if not body.get("stream"):
                message = {"role": "assistant", "content": self.text, "refusal": None}
                if self.reasoning:
                    message["reasoning_content"] = self.reasoning
                if self.tool_calls:
                    message["tool_calls"] = self.tool_calls
                choice = {"index": 0, "message": message, "logprobs": logprobs}
                choice["finish_reason"] = "stop"
                if not self.send_ids:
                    return JSONResponse({"id": "c", "choices": [choice]})
                choice["token_ids"] = ids
                prompt_ids = self.prompt_ids or [1, 2]
                return JSONResponse(
                    {"id": "c", "choices": [choice], "prompt_token_ids": prompt_ids}
                )

            def chunk(delta, top=None, **extra):
                choice = {"index": 0, "delta": delta, **extra}
                return f"data: {json.dumps({'id': 'c', 'choices': [choice], **(top or {})})}\n\n"

            async def events():
                # vLLM sends the prompt's ids with the first chunk (`return_token_ids`).
                first = {"prompt_token_ids": self.prompt_ids or [1, 2]}
                if self.reasoning:
                    yield chunk({"role": "assistant", "reasoning_content": self.reasoning}, first)
                    first = None
                yield chunk({"role": "assistant", "content": self.text}, first, token_ids=ids)
                for k, call in enumerate(self.tool_calls):
                    head = {**call, "index": k, "function": {**call["function"], "arguments": ""}}
                    yield chunk({"tool_calls": [head]})
                    args = call["function"]["arguments"]
                    for part in (args[: len(args) // 2], args[len(args) // 2 :]):
                        yield chunk({"tool_calls": [{"index": k, "function": {"arguments": part}}]})
                yield chunk({}, finish_reason="tool_calls" if self.tool_calls else "stop")
                if (body.get("stream_options") or {}).get("include_usage"):  # as vLLM does
                    count = len(ids) if self.generated is None else self.generated
                    usage = {"prompt_tokens": 2, "completion_tokens": count}
                    yield f"data: {json.dumps({'id': 'c', 'choices': [], 'usage': usage})}\n\n"
                yield "data: [DONE]\n\n"

            return StreamingResponse(events(), media_type="text/event-stream")

        self.app = _engine_app("/v1/chat/completions", chat)


def _chat_session(app, engine, seed, replies, back=lambda message: message, stream=False, tools=()):
    """A scored two-turn chat session sent straight to the engine; ``back`` writes each reply
    message back into the history. Returns the reward response."""
    import json

    import gymnasium as gym

    env = gym.make(MATH, max_turns=2)
    history = [{"role": "user", "content": env.reset(seed=seed)[0]}]
    sid = app.post("/sessions", json={"env_id": MATH, "seed": seed}, headers=ALICE)
    sid = sid.json()["session_id"]
    for turn, (text, tool_calls) in enumerate(replies):
        engine.text, engine.tool_calls = text, tool_calls
        call = {"model": CALL["model"], "max_tokens": 8, "temperature": 0, "messages": history}
        if tools:  # each call's tools (a call sends none where its entry is None)
            call.update({} if tools[turn] is None else {"tools": tools[turn]})
        r = app.post(
            f"/sessions/{sid}/v1/chat/completions", json={**call, "stream": stream}, headers=ALICE
        )
        assert r.is_success, r.text
        if stream:  # merged as the openai SDK merges a stream
            message = {"role": "assistant", "content": "", "tool_calls": []}
            for line in r.text.splitlines():
                if not line.startswith("data: {"):
                    continue
                delta = json.loads(line[6:])["choices"][0]["delta"]
                message["content"] += delta.get("content") or ""
                if delta.get("reasoning_content"):
                    message["reasoning_content"] = delta["reasoning_content"]
                for piece in delta.get("tool_calls") or []:
                    while len(message["tool_calls"]) <= piece["index"]:
                        message["tool_calls"].append({"function": {"arguments": ""}})
                    merged = message["tool_calls"][piece["index"]]
                    merged.update({k: piece[k] for k in ("id", "type") if k in piece})
                    if "name" in piece.get("function", {}):
                        merged["function"]["name"] = piece["function"]["name"]
                    merged["function"]["arguments"] += piece["function"].get("arguments", "")
        else:
            message = r.json()["choices"][0]["message"]
        feedback, *_ = env.step(text)
        history = [*history, back(message), {"role": "user", "content": feedback}]
    env.close()
    return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)


def test_a_chat_reply_goes_back_as_the_engine_returned_it(tmp_path):
    """att29r F1: with the engine templating chat, a reply sent back as content parts (with a
    `refusal` part, or cut in two text parts that the engine joins with a line break) passed
    the checks and the framing, another wording of the next turn per preview: 0.43 -> 1.00.
    The content goes back as the same string, every other field as returned."""
    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}})
    replies = [("\\boxed{1}", []), (f"\\boxed{{{ANSWERS[0]}}}", [])]
    try:
        r = _chat_session(app, engine, 0, replies)
        assert r.status_code == 200 and r.json()["reward"] > 0, r.text
        for back in (
            lambda m: {**m, "content": [{"type": "text", "text": m["content"]}]},
            lambda m: {
                **m,
                "content": [
                    {"type": "text", "text": m["content"]},
                    {"type": "refusal", "refusal": "#3"},
                ],
            },
            lambda m: {**m, "content": m["content"] + " "},
            lambda m: {**m, "name": "#3"},  # a field a template may render
        ):
            r = _chat_session(app, engine, 0, replies, back=back)
            assert r.status_code == 409, r.text
            assert r.json()["error"]["code"] == "history_not_recorded", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_streamed_tool_call_is_recorded_whole(tmp_path):
    """att29r F2: a tool call streamed in pieces was recorded as the pieces, so the client's
    merged call (as the openai SDK merges it) never matched its reply: 30 of 30 honest
    streamed sessions refused, and the stored message held fragments."""
    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}})
    tool = {"id": "call_7", "type": "function"}
    tool["function"] = {"name": "calc", "arguments": '{"expr": "2*3"}'}
    replies = [("", [tool]), (f"\\boxed{{{ANSWERS[0]}}}", [])]
    try:
        for stream in (False, True):
            r = _chat_session(app, engine, 0, replies, stream=stream, back=dict)
            assert r.status_code == 200, (stream, r.text)
    finally:
        app.__exit__(None, None, None)


def test_a_literal_mark_in_a_prompt_is_the_clients_text(tmp_path):
    """att29s F1: the framing wrote each known text's mark as a string, which a client could
    write too: the task in one of K places and the mark's text in the others framed alike, K
    wordings per task (0.20 -> 0.87 with K=5). A mark is no string now."""
    engine = StandInEngine()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        for seed, template in ((0, "{}\n\x00task\x00"), (1, "\x00task\x00\n{}")):
            r = _scored(app, engine, seed, template.format(_task_prompt(MATH, seed)))
            assert r.status_code == (200 if seed == 0 else 409), r.text
        assert r.json()["error"]["code"] == "framing_changed", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_replys_reasoning_is_never_another_wording(tmp_path):
    """att29s F2: with a reasoning parser, the reply's `reasoning_content` had to come back
    when not streamed and must not when streamed (the stream's record dropped it), so each
    usual round trip was refused in the other mode (30 of 30). An engine never sees the
    reasoning of a session's earlier replies (a template may render it, another wording), so
    either way is the same prompt; the record keeps it in both modes."""
    engine = ChatStandIn()
    engine.reasoning = "Let me think."
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}})
    replies = [("\\boxed{1}", []), (f"\\boxed{{{ANSWERS[0]}}}", [])]
    content_only = lambda m: {"role": "assistant", "content": m["content"]}  # noqa: E731
    try:
        for stream in (False, True):
            for back in (dict, content_only):
                r = _chat_session(app, engine, 0, replies, back=back, stream=stream)
                assert r.status_code == 200, (stream, r.text)
                sent = engine.bodies[-1]["messages"]
                assert all("reasoning_content" not in m for m in sent), sent
    finally:
        app.__exit__(None, None, None)


def test_a_sessions_calls_keep_their_tools(tmp_path):
    """att29t F1: a call's tools were compared with its session's other calls nowhere but in
    the first and the last call's framing: a middle call's tools worded per task after a
    preview (an engine renders them into the prompt) lifted pass@1 0.475 -> 0.925. Each call
    sends the tools and tool settings of the one before."""

    def tool(description):
        parameters = {"type": "object", "properties": {}}
        function = {"name": "note", "description": description, "parameters": parameters}
        return [{"type": "function", "function": function}]

    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={MATH: {"max_turns": 2}})
    replies = [("\\boxed{1}", []), (f"\\boxed{{{ANSWERS[0]}}}", [])]
    try:
        same = (tool("scratchpad"), tool("scratchpad"))
        assert _chat_session(app, engine, 0, replies, tools=same).status_code == 200
        for tools in ((tool("scratchpad 3"), tool("scratchpad")), (None, tool("scratchpad"))):
            r = _chat_session(app, engine, 0, replies, tools=tools, back=dict)
            assert r.status_code == 409, r.text
            assert r.json()["error"]["code"] == "history_not_recorded", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_tool_call_the_engine_parsed_out_is_graded(tmp_path):
    """att29u F1: an engine with a tool parser returns a tool call in `tool_calls`, out of the
    content, and the scorer graded the content alone: 30 right `final_answer` calls scored 0
    (1.0 through the gateway-templated path). The call is graded with its tool calls."""
    import json

    import gymnasium as gym

    tool_env = "rllm/ToolUse-v1"
    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={tool_env: {"python": False}})
    try:
        for seed in (0, 1):
            env = gym.make(tool_env, python=False)
            prompt, _ = env.reset(seed=seed)
            answer = str(env.unwrapped.task["answer"])
            env.close()
            arguments = json.dumps({"answer": answer})
            function = {"name": "final_answer", "arguments": arguments}
            engine.text, engine.tool_calls = (
                "",
                [{"id": "c1", "type": "function", "function": function}],
            )
            r = _chat_scored(app, tool_env, seed, prompt, max_tokens=64)
            assert r.status_code == 200 and r.json()["reward"] > 0, r.text
    finally:
        app.__exit__(None, None, None)


def test_a_tool_call_drafted_inside_think_is_graded_as_the_model_wrote_it(tmp_path, tiny_path):
    """att29w: a thinking model served without a reasoning parser drafts its call inside
    `<think>`; the engine's Hermes parser ends the content at the draft, so the content plus
    the parsed calls read as an unclosed `<think>` and no call (30 of 30 right answers lost).
    The reply is graded as the model wrote it: its completion ids decoded."""
    import json

    import gymnasium as gym
    import transformers

    tool_env = "rllm/ToolUse-v1"
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    engine = ChatStandIn()
    app = _test_client(
        tmp_path,
        engine,
        scorers={tool_env: {"python": False}},
        tokenizer=str(tiny_path),
        template_chat=False,
    )
    try:
        for seed in (0, 1):
            env = gym.make(tool_env, python=False)
            prompt, _ = env.reset(seed=seed)
            answer = str(env.unwrapped.task["answer"])
            env.close()
            call = json.dumps({"name": "final_answer", "arguments": {"answer": answer}})
            head = "<think>I will answer with "
            block = f"<tool_call>{call}</tool_call>"
            written = f"{head}{block}, checked.</think>\n{block}"
            function = {"name": "final_answer", "arguments": json.dumps({"answer": answer})}
            parsed = {"type": "function", "function": function}
            # As vLLM's Hermes parser returns it: the content up to the first <tool_call>.
            engine.text = head
            engine.tool_calls = [{"id": "c1", **parsed}, {"id": "c2", **parsed}]
            engine.ids = tokenizer.encode(written, add_special_tokens=False)
            r = _chat_scored(app, tool_env, seed, prompt, max_tokens=256)
            assert r.status_code == 200 and r.json()["reward"] > 0, r.text
            # s22 att29y A1: a template that opens `<think>` in the prompt: the cut content
            # holds no `<think>`, and graded as content and calls, the draft was the answer.
            engine.text = "Draft: "
            wrong = {**function, "arguments": json.dumps({"answer": "-1"})}
            drafted = {"name": "final_answer", "arguments": {"answer": "-1"}}
            draft = f"<tool_call>{json.dumps(drafted)}</tool_call>"
            written = f"Draft: {draft}, no.</think>\n{block}"
            engine.tool_calls = [{"id": "c1", "type": "function", "function": wrong}]
            engine.tool_calls.append({"id": "c2", **parsed})
            engine.ids = tokenizer.encode(written, add_special_tokens=False)
            for stream in (False, True):
                r = _chat_scored(app, tool_env, seed, prompt, max_tokens=256, stream=stream)
                assert r.status_code == 200 and r.json()["reward"] > 0, (stream, r.text)
            # s22 att29x E1: a call written in another format than Hermes' (here vLLM's
            # pythonic one), which the engine's parser read: the content is not cut, so the
            # reply is graded with the parsed call, not as written (0 of 10 before).
            engine.text, engine.tool_calls = "", [{"id": "c1", **parsed}]
            written = f"[final_answer(answer={json.dumps(answer)})]"
            engine.ids = tokenizer.encode(written, add_special_tokens=False)
            r = _chat_scored(app, tool_env, seed, prompt, max_tokens=256)
            assert r.status_code == 200 and r.json()["reward"] > 0, r.text
    finally:
        app.__exit__(None, None, None)


def test_a_call_that_comes_after_its_sessions_reward_claimed_it_is_refused(tmp_path):
    """att29u F3: a call templated (or waiting for the model's name) while the reward came
    reached the engine after the reward had stopped waiting for calls: its sample was never
    recorded (1 of 30 tries). The bytes of a call are held only while its session is open."""
    from rllm_adapters.gateway.sessions import SessionError

    app = _test_client(tmp_path, StandInEngine(), scorers={MATH: {}})
    try:
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        registry = app.gateway.sessions
        session = registry.get(sid.json()["session_id"], "alice")
        session.closed = True  # what a reward's claim does before it waits for the calls
        with pytest.raises(SessionError) as caught:
            registry.reserve(session, 10)
        assert caught.value.code == "session_ended"
    finally:
        app.__exit__(None, None, None)


def test_a_parsed_tool_call_is_graded_next_to_its_content_as_written():
    """att29v: graded as the message's JSON, a reply's content had its backslashes doubled
    (a Math answer in LaTeX, 5 of 30 lost) and its `</think>` cut the JSON (a thinking reply
    with LaTeX prose and a right `final_answer`, 30 of 30 lost). The content is graded as
    written, each parsed call after it as a `<tool_call>` block."""
    import json

    import gymnasium as gym

    from rllm_adapters.gateway.app import _graded
    from rllm_adapters.gateway.sessions import Call, score_with_env

    def reply(content, name, arguments):
        function = {"name": name, "arguments": json.dumps(arguments)}
        message = {"role": "assistant", "content": content}
        message["tool_calls"] = [{"id": "c1", "type": "function", "function": function}]
        return Call("chat", [], [], [], content, "tool_calls", message=message)

    env = gym.make("rllm/ToolUse-v1", python=False)
    env.reset(seed=0)
    answer = str(env.unwrapped.task["answer"])
    env.close()
    prose = "<think>" + " ".join(f"\\frac{{{k}}}{{2}}" for k in range(20)) + "</think> So:"
    graded = _graded(reply(prose, "final_answer", {"answer": answer}))
    scored = score_with_env("rllm/ToolUse-v1", graded, env_kwargs={"python": False}, seed=0)
    assert scored["reward"] > 0, graded
    graded = _graded(reply("So $\\boxed{\\frac{5}{2}}$.", "note", {}))
    assert "\\boxed{\\frac{5}{2}}" in graded and "<tool_call>" in graded


def test_the_templated_stream_ends_with_the_replys_tool_calls(tmp_path, tiny_path):
    """att29u F2: the gateway-templated path streamed a tool call as raw text only, no
    `tool_calls` delta (0 of 30), so a streamed tool loop never saw a call; not streamed, the
    same reply came back with `tool_calls`. The stream now ends with them, the same calls."""
    import json

    engine = StandInEngine(
        '<tool_call>{"name": "final_answer", "arguments": {"answer": "7"}}</tool_call>'
    )
    app = _test_client(tmp_path, engine, tokenizer=str(tiny_path))
    parameters = {"type": "object", "properties": {"answer": {"type": "string"}}}
    tools = [{"type": "function", "function": {"name": "final_answer", "parameters": parameters}}]
    call = {
        "model": CALL["model"],
        "max_tokens": 200,
        "messages": [{"role": "user", "content": "Answer with the tool."}],
        "tools": tools,
    }
    try:
        replies = []
        for stream in (False, True):
            sid = app.post("/sessions", json={}, headers=ALICE).json()["session_id"]
            r = app.post(
                f"/sessions/{sid}/v1/chat/completions",
                json={**call, "stream": stream},
                headers=ALICE,
            )
            assert r.is_success, r.text
            if not stream:
                choice = r.json()["choices"][0]
                replies.append((choice["message"]["tool_calls"], choice["finish_reason"]))
                continue
            merged, reason = [], None
            for line in r.text.splitlines():
                if line.startswith("data: {"):
                    choice = json.loads(line[6:])["choices"][0]
                    for piece in choice["delta"].get("tool_calls") or []:
                        merged.append({k: v for k, v in piece.items() if k != "index"})
                    reason = choice["finish_reason"] or reason
            replies.append((merged, reason))
        assert replies[0] == replies[1], replies
        assert (
            replies[1][1] == "tool_calls" and replies[1][0][0]["function"]["name"] == "final_answer"
        )
    finally:
        app.__exit__(None, None, None)


def test_a_reply_inside_the_think_its_prompt_opened_is_graded_there(tmp_path, tiny_path):
    """s22 att29z: a prompt (a completions prompt, or a chat template's generation prompt)
    that ends in `<think>` starts the reply inside it; a reply that never closed it, cut at the
    token limit, was graded on the box in its reasoning (10 of 10 paid; the same text with its
    `<think>` visible 0 of 10). It is graded inside that `<think>`: no answer."""
    import gymnasium as gym
    import transformers

    env = gym.make(MATH)
    prompt, _ = env.reset(seed=0)
    env.close()
    thinking = f"maybe \\boxed{{{ANSWERS[0]}}}, but let me check"
    engine = StandInEngine()
    # Keyless: its one local client may frame each run its own way (a run per case here).
    app = _test_client(tmp_path, engine, scorers={MATH: {}}, api_keys={})
    try:
        # att29q A1: words after the prompt's `<think>` leave it open too.
        for k, (opened, reply, paid) in enumerate(
            [
                ("<think>\n", thinking, 0.0),
                ("<think>\nOkay,", thinking, 0.0),
                ("<think>\u200b", thinking, 0.0),
                ("<think>\n", f"{thinking}</think> \\boxed{{{ANSWERS[0]}}}", 1.0),
                ("", f"\\boxed{{{ANSWERS[0]}}}", 1.0),
            ]
        ):
            run = f"completions-{k}"
            r = _scored(app, engine, 0, f"{prompt}\n{opened}", run=run, reply=reply)
            assert r.status_code == 200 and r.json()["reward"] == paid, (opened, reply, r.text)
    finally:
        app.__exit__(None, None, None)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    chat = ChatStandIn()
    app = _test_client(
        tmp_path / "chat", chat, scorers={MATH: {}}, tokenizer=str(tiny_path), template_chat=False
    )
    try:
        # The engine templated the chat and opened `<think>` (R1's and Qwen3's thinking
        # templates do), no reasoning parser: the reply starts inside it.
        chat.prompt_ids = tokenizer.encode(
            f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n<think>\n"
        )
        for reply, reasoning, paid in [
            (thinking, "", 0.0),
            (f"{thinking}</think> \\boxed{{{ANSWERS[0]}}}", "", 1.0),
            # A reasoning parser gave the reasoning its own field: the content is the answer.
            (f"\\boxed{{{ANSWERS[0]}}}", thinking, 1.0),
        ]:
            chat.text, chat.reasoning = reply, reasoning
            # What the model generated: a parser's reasoning, its end, then the content.
            generated = f"{reasoning}</think>{reply}" if reasoning else reply
            chat.ids = tokenizer.encode(generated, add_special_tokens=False)
            r = _chat_scored(app, MATH, 0, prompt, max_tokens=64)
            assert r.status_code == 200 and r.json()["reward"] == paid, (reply, r.text)
        # att29q A2: R1's reasoning parser calls a whole reply without think tags reasoning;
        # where neither the prompt nor the reply opened one, the reply is the answer.
        chat.prompt_ids = tokenizer.encode(
            f"<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
        )
        written = f"The answer is \\boxed{{{ANSWERS[0]}}}."
        chat.text, chat.reasoning = "", written
        chat.ids = tokenizer.encode(written, add_special_tokens=False)
        r = _chat_scored(app, MATH, 0, prompt, max_tokens=64)
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
        # att29r F1: a parser that took its own markers out (Seed-OSS `<seed:think>`) called a
        # reply cut while thinking reasoning; it is not the whole reply as written, so it stays
        # reasoning (graded whole, its box was paid: 10 of 10).
        chat.text, chat.reasoning = "", thinking
        chat.ids = tokenizer.encode(f"<seed:think>{thinking}", add_special_tokens=False)
        r = _chat_scored(app, MATH, 0, prompt, max_tokens=64)
        assert r.status_code == 200 and r.json()["reward"] == 0.0, r.text
    finally:
        app.__exit__(None, None, None)


class TokenStandIn:
    """A stand-in vLLM completions server for these unit tests (not a real part): it
    "generates" ``gen``, returns its token ids under the tokenizer, cut at ``max_tokens``
    (finish ``length``), and its text as vLLM does (special tokens skipped by default)."""

    def __init__(self, tokenizer) -> None:
        import json

        from starlette.responses import JSONResponse

        self.gen = ""

        async def completions(request):
            body = json.loads(await request.body())
            ids = tokenizer.encode(self.gen, add_special_tokens=False)
            cut = len(ids) > body["max_tokens"]
            ids = ids[: body["max_tokens"]]
            prompt = body["prompt"]
            choice = {
                "index": 0,
                "text": tokenizer.decode(ids, skip_special_tokens=True),
                "token_ids": ids,
                "prompt_token_ids": prompt
                if isinstance(prompt, list)
                else tokenizer.encode(prompt),
                "finish_reason": "length" if cut else "stop",
            }
            return JSONResponse({"id": "c", "choices": [choice]})

        self.app = _engine_app("/v1/completions", completions)


def test_think_markers_and_earlier_turns_do_not_move_the_answer(tmp_path, tiny_path):
    """s22 att29s: A1, a tokenizer whose `<think>`/`</think>` are special tokens: the engine's
    text skips them, so a reply cut while thinking was graded whole and paid for the box in its
    reasoning (10 of 10); the reply is graded from its ids, markers kept. A2, an earlier turn
    cut while thinking left its `<think>` the last tag of every later prompt, so a right later
    reply read as thinking (10 of 10 scored 0); only the prompt's last turn is read."""
    import gymnasium as gym
    import transformers

    env = gym.make(MATH, max_turns=2)
    prompt, _ = env.reset(seed=0)
    env.close()
    right = f"\\boxed{{{ANSWERS[0]}}}"
    thinking = "<think>maybe " + right + " but let me check" + " again" * 60

    def session(app, engine, replies):
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        history = [{"role": "user", "content": prompt}]
        for reply in replies:
            engine.gen = reply
            call = {"model": CALL["model"], "max_tokens": 48, "temperature": 0}
            r = app.post(
                f"/sessions/{sid}/v1/chat/completions",
                json={**call, "messages": history},
                headers=ALICE,
            )
            assert r.is_success, r.text
            content = r.json()["choices"][0]["message"]["content"]
            history += [{"role": "assistant", "content": content}, {"role": "user", "content": "?"}]
        return app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE).json()

    special = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    special.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    special.save_pretrained(tmp_path / "special")
    for folder, replies, paid in [
        (tmp_path / "special", [thinking], 0.0),  # A1: cut while thinking
        (tiny_path, [thinking, right], 1.0),  # A2: a right second turn
    ]:
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
        engine = TokenStandIn(tokenizer)
        scorers = {MATH: {"max_turns": len(replies)}}
        app = _test_client(tmp_path / f"gw{paid}", engine, scorers=scorers, tokenizer=str(folder))
        try:
            reward = session(app, engine, replies)
            assert reward["reward"] == paid, (folder, reward)
        finally:
            app.__exit__(None, None, None)
    # s22 att29t: special think markers are not where a turn starts or a reply ends: a prompt
    # opening `<think>` then words, and a reply that ends on a new `<think>` (no answer by the
    # envs' rule), were paid 10 of 10.
    folder = str(tmp_path / "special")
    engine = TokenStandIn(transformers.AutoTokenizer.from_pretrained(folder))
    # Keyless: a run per case, each framed its own way.
    app = _test_client(tmp_path / "gw-t", engine, scorers={MATH: {}}, tokenizer=folder, api_keys={})
    try:
        # att29v: tokens after the `<think>` of a completions prompt (a tool-call tag, an
        # end-of-text token) hid it from a reading of the prompt's last turn: 10 of 10 paid.
        cases = [
            (f"{prompt}\n<think>\nOkay,", thinking[7:], 48),
            (prompt, f"{right} <think>", 9),
            (f"{prompt}<|im_start|>assistant\n<think>\n<tool_call>\n", thinking[7:], 48),
            (f"{prompt}\n<think>\n<|endoftext|>", thinking[7:], 48),
        ]
        for k, (text, gen, limit) in enumerate(cases):
            engine.gen = gen
            sid = app.post(
                "/sessions", json={"env_id": MATH, "seed": 0, "run": f"t{k}"}, headers=ALICE
            )
            sid = sid.json()["session_id"]
            call = {"model": CALL["model"], "prompt": text, "max_tokens": limit, "temperature": 0}
            assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
            r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
            assert r.json()["reward"] == 0.0, (text, gen, r.text)
    finally:
        app.__exit__(None, None, None)


def test_a_reply_without_engine_ids_is_graded_or_refused_clearly(tmp_path, tiny_path):
    """s22 att29u: an engine that returns no token ids. A3: the gateway re-tokenised the
    prompt into a BatchEncoding's keys (transformers 5), and every honest chat reply failed
    to score (10 of 10); it is graded. A4: where the model's think markers are special tokens,
    the engine's text has lost them (a reply cut while thinking was paid 10 of 10): such a
    session is refused, 409 `reply_ids_needed`."""
    import transformers

    special = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    special.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    special.save_pretrained(tmp_path / "special")
    for folder, status in [(str(tiny_path), 200), (str(tmp_path / "special"), 409)]:
        engine = ChatStandIn()
        engine.send_ids = False
        app = _test_client(
            tmp_path / f"gw{status}",
            engine,
            scorers={MATH: {}},
            tokenizer=folder,
            template_chat=False,
        )
        try:
            engine.text = f"So \\boxed{{{ANSWERS[0]}}}."
            r = _chat_scored(app, MATH, 0, _task_prompt(MATH, 0), max_tokens=64)
            assert r.status_code == status, r.text
            if status == 200:
                assert r.json()["reward"] == 1.0, r.text
                # att29b3: a reasoning parser left no content (R1's on a reply without think
                # tags): without ids, all reasoning or markers taken out cannot be told apart
                # (right replies scored 0, 4 of 4): refused, not graded on the empty content.
                engine.text, engine.reasoning = "", f"So \\boxed{{{ANSWERS[0]}}}."
                r = _chat_scored(app, MATH, 0, _task_prompt(MATH, 0), max_tokens=64)
                assert r.status_code == 409, r.text
            assert r.json()["error"]["code"] == "reply_ids_needed", r.text
        finally:
            app.__exit__(None, None, None)


def test_a_thinking_templates_generation_prompt_decides_whatever_the_last_message(
    tmp_path, tiny_path
):
    """s22 att29w2: the template's generation prompt opened `<think>`, and a search for the
    last message's text (`>` or `<think>`) landed inside it: a reply cut while thinking was
    paid (10 of 10). A chat prompt ending in the template's generation prompt is read there."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    opens = "{{- '<|im_start|>assistant\\n<think>\\n' }}"
    tokenizer.chat_template = tokenizer.chat_template.replace(
        "{{- '<|im_start|>assistant\\n' }}", opens
    )
    assert opens in tokenizer.chat_template
    tokenizer.save_pretrained(tmp_path / "thinking")
    engine = TokenStandIn(tokenizer)
    app = _test_client(  # keyless: a run per case, each framed its own way
        tmp_path / "gw",
        engine,
        scorers={MATH: {}},
        tokenizer=str(tmp_path / "thinking"),
        api_keys={},
    )
    prompt = _task_prompt(MATH, 0)
    engine.gen = f"maybe \\boxed{{{ANSWERS[0]}}}, let me check" + " again" * 60
    try:
        for k, last in enumerate(["", ">", "<think>"]):
            messages = [{"role": "user", "content": prompt}]
            messages += [{"role": "user", "content": last}] if last else []
            sid = app.post(
                "/sessions", json={"env_id": MATH, "seed": 0, "run": f"r{k}"}, headers=ALICE
            )
            sid = sid.json()["session_id"]
            call = {
                "model": CALL["model"],
                "max_tokens": 48,
                "temperature": 0,
                "messages": messages,
            }
            r = app.post(f"/sessions/{sid}/v1/chat/completions", json=call, headers=ALICE)
            assert r.is_success, r.text
            r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
            assert r.json()["reward"] == 0.0, (last, r.text)
    finally:
        app.__exit__(None, None, None)


def test_a_streams_ids_that_miss_generated_tokens_are_not_the_completions(tmp_path, tiny_path):
    """s22 att29x2: vLLM's reasoning parsers send no chunk for a lone `<think>`, so a stream's
    ids missed it; graded from them, a reply that never closed its reasoning read as a
    whole-reply reasoning field and was paid (10 of 10). The ids are checked against the
    engine's usage count; short ones are not the engine's."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    engine = ChatStandIn()
    app = _test_client(
        tmp_path, engine, scorers={MATH: {}}, tokenizer=str(tiny_path), template_chat=False
    )
    prompt = _task_prompt(MATH, 0)
    thinking = f"maybe \\boxed{{{ANSWERS[0]}}}? not sure"
    try:
        engine.text, engine.reasoning = "", thinking
        engine.ids = tokenizer.encode(thinking, add_special_tokens=False)  # `<think>` dropped
        engine.generated = len(engine.ids) + 1
        r = _chat_scored(app, MATH, 0, prompt, max_tokens=64, stream=True)
        # Not the engine's ids, and the parser left no content: refused (att29b3), not paid.
        assert r.status_code == 409, r.text
        assert r.json()["error"]["code"] == "reply_ids_needed", r.text
    finally:
        app.__exit__(None, None, None)


def test_a_reply_at_its_own_limit_without_engine_ids_is_scored(tmp_path):
    """s22 att29y2: from an engine that returns no token ids, a reply cut at its own
    `max_tokens` counted 0 tokens and read as cut by the context (2 of 2 right replies
    refused, 409 `context_cut`); the engine's usage count is its length."""
    import json

    from starlette.responses import JSONResponse

    class TextOnly:  # a stand-in for this unit test: text and usage, no ids
        text = ""

        def __init__(self) -> None:
            async def completions(request):
                body = json.loads(await request.body())
                count = len(self.text)  # one token a character, for the stand-in
                cut = count >= body["max_tokens"]
                choice = {
                    "index": 0,
                    "text": self.text,
                    "finish_reason": "length" if cut else "stop",
                }
                usage = {"prompt_tokens": 2, "completion_tokens": count}
                return JSONResponse({"id": "c", "choices": [choice], "usage": usage})

            self.app = _engine_app("/v1/completions", completions)

    engine = TextOnly()
    app = _test_client(tmp_path, engine, scorers={MATH: {}})
    try:
        engine.text = f"\\boxed{{{ANSWERS[0]}}}".ljust(11, ".")
        sid = app.post("/sessions", json={"env_id": MATH, "seed": 0}, headers=ALICE)
        sid = sid.json()["session_id"]
        call = {"model": CALL["model"], "prompt": _task_prompt(MATH, 0), "max_tokens": 11}
        assert app.post(f"/sessions/{sid}/v1/completions", json=call, headers=ALICE).is_success
        r = app.post(f"/sessions/{sid}/reward", json={"env": MATH}, headers=ALICE)
        assert r.status_code == 200 and r.json()["reward"] == 1.0, r.text
    finally:
        app.__exit__(None, None, None)


def test_a_reply_that_reopens_its_reasoning_has_no_answer(tmp_path, tiny_path):
    """s22 att29z2: with special think markers and a reasoning parser, a reply that closed its
    reasoning, then reopened it and was cut, showed its later box in the content (the
    engine's text skipped the second `<think>`): paid 2 of 2. As written it ends inside a
    `<think>`: no answer."""
    import transformers

    special = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    special.add_special_tokens({"additional_special_tokens": ["<think>", "</think>"]})
    special.save_pretrained(tmp_path / "special")
    engine = ChatStandIn()
    app = _test_client(
        tmp_path / "gw",
        engine,
        scorers={MATH: {}},
        tokenizer=str(tmp_path / "special"),
        template_chat=False,
    )
    prompt = _task_prompt(MATH, 0)
    right = f"\\\\boxed{{{ANSWERS[0]}}}"
    try:
        engine.prompt_ids = special.encode(
            f"<|im_start|>user\\n{prompt}<|im_end|>\\n<|im_start|>assistant\\n<think>\\n"
        )
        engine.reasoning, engine.text = "r", f"\\\\boxed{{1}}  hmm {right}"
        written = f"r</think>\\\\boxed{{1}} <think> hmm {right}"
        engine.ids = special.encode(written, add_special_tokens=False)
        r = _chat_scored(app, MATH, 0, prompt, max_tokens=64)
        assert r.status_code == 200 and r.json()["reward"] == 0.0, r.text
    finally:
        app.__exit__(None, None, None)


def test_what_a_reply_writes_after_its_tool_calls_is_read(tmp_path, tiny_path):
    """s22 att29a3: vLLM's Hermes parser drops the text after a reply's last tool call, and
    the reply was graded as its content and calls: a right box after a call scored 0, a wrong
    one after a right box was paid (2 of 2). Calls written as Hermes blocks are read as
    written."""
    import json

    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny_path))
    engine = ChatStandIn()
    app = _test_client(
        tmp_path, engine, scorers={MATH: {}}, tokenizer=str(tiny_path), template_chat=False
    )
    call = {"name": "calculator", "arguments": {"expression": "1+1"}}
    block = f"<tool_call>{json.dumps(call)}</tool_call>"
    parsed = {"name": "calculator", "arguments": json.dumps(call["arguments"])}
    tools = [{"type": "function", "function": {"name": "calculator", "parameters": {}}}]
    right = f"\\\\boxed{{{ANSWERS[0]}}}"
    try:
        for head, tail, paid in [
            ("Let me check. ", f" So {right}", 1.0),
            (f"maybe {right} ", " No: \\\\boxed{7}", 0.0),
        ]:
            engine.text = head  # the content vLLM's parser keeps: before the first call
            engine.tool_calls = [{"id": "c1", "type": "function", "function": parsed}]
            engine.ids = tokenizer.encode(head + block + tail, add_special_tokens=False)
            r = _chat_scored(app, MATH, 0, _task_prompt(MATH, 0), max_tokens=128, tools=tools)
            assert r.status_code == 200 and r.json()["reward"] == paid, (tail, r.text)
    finally:
        app.__exit__(None, None, None)
