"""Gateway, blind round of session 45 (issue #29, att45b).

F1 (medium): the one templating thread every client shares still ran one client's 4 MB chat
calls, each 4-7 s of templating (digits are the slowest text), so another client's "Hi" took
4-8 s on every call. A chat call holding more text than the model's context could is now
refused (400 ``context_length_exceeded``) before it is templated, counting the tools' text
(att45d: 3.9 MB in a description took 18 s) and numbers (58,000 of 64 digits in a part) too;
and a text the template writes is tokenised only if its bytes, normalised as the tokenizer
does, could fit (att45f: a part's list written as its repr took 4-6 s).

F2 (medium, an honest client refused): a run's framing pin was keyed by the run and the
number of calls alone, so a client scoring two envs in its default run had every session of
the second env refused (409 ``framing_changed``). It is per env now, as a client's own pin is.

The engines are the stand-ins of ``test_gateway_record`` and ``test_gateway_round9`` (OpenAI
servers inside these unit tests of the gateway, not real parts).
"""

from __future__ import annotations

import contextlib

import gymnasium as gym
import httpx
import pytest

import rllm_envs  # noqa: F401
from rllm_adapters.gateway.chat import NORMALIZED_CHARS
from rllm_adapters.gateway.config import GatewayConfig

from .test_gateway_record import ALICE, StandInEngine, _Served, _server, _test_client
from .test_gateway_round9 import ChatStandIn


class _CountingTemplater:
    """The gateway's templater, counting the messages it is asked to template (test double)."""

    def __init__(self, real) -> None:
        self.real = real
        self.templated: list[int] = []

    def prompt(self, state, messages, tools, context=None):
        self.templated.append(sum(len(m["content"]) for m in messages))
        return self.real.prompt(state, messages, tools, context)

    def __getattr__(self, name):
        return getattr(self.real, name)


def _encoded_lengths(monkeypatch, kind) -> list[int]:
    """The lengths of the texts tokenizers of class ``kind`` encode from now on (a spy)."""
    encoded: list[int] = []
    encode = kind.encode

    def spy(self, text, *args, **kwargs):
        encoded.append(len(text))
        return encode(self, text, *args, **kwargs)

    monkeypatch.setattr(kind, "encode", spy)
    return encoded


def test_a_chat_call_no_context_could_hold_is_refused_before_its_template(
    tmp_path, tiny_path, monkeypatch
):
    served = _Served(StandInEngine("Hello").app)
    gateway = _server(tmp_path, served.url, tokenizer=str(tiny_path))
    try:
        app = gateway.gateway
        counting = _CountingTemplater(app.templater())
        app._templater = counting
        # The stand-in says a context of 2048 tokens; the tiny tokenizer's longest entry.
        limit = 2048 * counting.real.token_chars * NORMALIZED_CHARS

        def chat(content, tools=None) -> tuple[int, str]:
            opened = httpx.post(gateway.url + "/sessions", json={}, headers=ALICE)
            url = f"{gateway.url}/sessions/{opened.json()['session_id']}/v1/chat/completions"
            messages = [{"role": "user", "content": content}]
            body = {"model": "tiny", "max_tokens": 4, "messages": messages}
            if tools is not None:
                body["tools"] = tools
            response = httpx.post(url, json=body, headers=ALICE, timeout=120)
            code = response.json().get("error", {}).get("code", "") if response.is_error else ""
            return response.status_code, code

        refused = (400, "context_length_exceeded")
        assert chat("7" * (limit + 1)) == refused
        # att45d: the text a template writes of a tool's description, and of numbers.
        tool = {"type": "function", "function": {"name": "f", "description": "7" * limit}}
        assert chat("Hi", tools=[tool]) == refused
        numbers = [int("7" * 64)] * (limit // 64)
        assert chat([{"type": "text", "text": numbers}]) == refused
        assert counting.templated == []  # each refused before the template thread
        assert chat("Hi") == (200, "")
        assert counting.templated == [2]
        # att45f: what the template writes longer than what was sent -- a part's list as its
        # repr (`\U000e0001` for each character), characters NFC splits in three, control
        # characters a tool's JSON escapes -- is refused before it is tokenised.
        # Each templating thread encodes with a copy of the tokenizer: its class is spied on.
        encoded = _encoded_lengths(monkeypatch, type(counting.real.tokenizer))
        bound = 2048 * counting.real.token_bytes
        n = limit - 200
        escaped = [{"type": "text", "text": ["\U000e0001" * n]}]
        control = {"type": "function", "function": {"name": "f", "description": "\x01" * n}}
        assert chat(escaped) == refused
        assert chat("\U0001d160" * (n // 2)) == refused
        assert chat("Hi", tools=[control]) == refused
        assert len(counting.templated) == 4  # each passed the count, and was templated...
        assert all(n <= bound for n in encoded)  # ...but never tokenised
        assert chat("Hi") == (200, "")
        assert encoded  # (the spy sees what is tokenised)
    finally:
        gateway.stop()
        served.stop()


def test_a_run_scores_several_envs_each_framed_its_own_way(tmp_path):
    """att45b F2: alice's default run scores Math and Countdown, each with its own system
    prompt; every Countdown session was refused (`framing_changed`) after the Math ones."""
    engine = ChatStandIn()
    app = _test_client(tmp_path, engine, scorers={"rllm/Math-v1": {}, "rllm/Countdown-v1": {}})
    instructions = {
        "rllm/Math-v1": ("You are a careful mathematician. Answer in \\boxed{}.", "\\boxed{1}"),
        "rllm/Countdown-v1": ("You are playing Countdown.", "<answer>1+1</answer>"),
    }
    try:
        codes = []
        for env_id, (system, reply) in instructions.items():
            for seed in range(2):
                opened = app.post("/sessions", json={"env_id": env_id, "seed": seed}, headers=ALICE)
                task = opened.json()
                observation = gym.make(env_id).reset(
                    seed=task["seed"], options={"index": task["index"]}
                )[0]
                engine.text = reply
                messages = [
                    {"role": "system", "content": system},
                    {"role": "user", "content": observation},
                ]
                body = {"model": "tiny", "max_tokens": 8, "temperature": 0, "messages": messages}
                url = f"/sessions/{task['session_id']}/v1/chat/completions"
                assert app.post(url, json=body, headers=ALICE).status_code == 200
                scored = app.post(
                    f"/sessions/{task['session_id']}/reward", json={"env": env_id}, headers=ALICE
                )
                codes.append(scored.status_code)
        assert codes == [200] * 4
        # Within an env the pin holds: Math in Countdown's framing is refused.
        opened = app.post("/sessions", json={"env_id": "rllm/Math-v1", "seed": 5}, headers=ALICE)
        task = opened.json()
        observation = gym.make("rllm/Math-v1").reset(
            seed=task["seed"], options={"index": task["index"]}
        )[0]
        messages = [
            {"role": "system", "content": instructions["rllm/Countdown-v1"][0]},
            {"role": "user", "content": observation},
        ]
        body = {"model": "tiny", "max_tokens": 8, "temperature": 0, "messages": messages}
        app.post(f"/sessions/{task['session_id']}/v1/chat/completions", json=body, headers=ALICE)
        scored = app.post(
            f"/sessions/{task['session_id']}/reward", json={"env": "rllm/Math-v1"}, headers=ALICE
        )
        assert (scored.status_code, scored.json()["error"]["code"]) == (409, "framing_changed")
    finally:
        app.__exit__(None, None, None)


def test_the_byte_bound_is_of_the_text_a_token_decodes_to(monkeypatch):
    """att45h F1: SmolLM2's tokenizer has no normalizer and vocabulary entries of 81 symbols
    (162 bytes as written): the bound fell back to 162 x 4 bytes a token, so 2.6 MB of digits
    (2.6 million tokens, 3 s) was tokenised for a context of 8192. A token's bytes are now
    those of the text it decodes to, and with no normalizer nothing merges."""
    from transformers import AutoTokenizer

    from rllm_adapters.gateway.chat import ChatTemplater, PromptTooLong
    from rllm_adapters.models import resolve_model

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))
    templater = ChatTemplater(tokenizer)
    backend = tokenizer.backend_tokenizer
    assert backend.normalizer is None
    longest = max(len(backend.decode([i]).encode()) for i in range(backend.get_vocab_size()))
    assert templater.token_bytes == longest < max(len(t.encode()) for t in tokenizer.get_vocab())
    encoded = _encoded_lengths(monkeypatch, type(tokenizer))
    context = 512
    digits = [{"role": "user", "content": "7" * (context * templater.token_bytes + 1)}]
    with pytest.raises(PromptTooLong):
        templater.prompt(None, digits, None, context)
    assert max(encoded, default=0) < context  # refused before the tokenizer ran on it
    fits = [{"role": "user", "content": "7" * (context - 64)}]
    assert len(templater.prompt(None, fits, None, context)) > context - 64


def test_a_text_that_fits_a_metaspace_tokenizer_is_not_refused():
    """att45j F1: a Llama-2-style tokenizer writes a space as `▁` (3 bytes) in the normalised
    text while its tokens decode it to 1 byte, so indented code that tokenised to 72% of the
    context was refused. Its entries' own bytes bound it now. (A tokenizer of that structure
    trained here on a small corpus, as the helper's repro did: no Llama tokenizer is offline.)"""
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers
    from transformers import PreTrainedTokenizerFast

    from rllm_adapters.gateway.chat import ChatTemplater, PromptTooLong
    from rllm_adapters.tiny_model import CHATML_TEMPLATE

    code = [
        f"{'    ' * depth}{line}"
        for depth in range(1, 9)
        for line in (f"if value_{depth} is not None:", f"    return compute(value_{depth})")
    ]
    backend = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    backend.normalizer = normalizers.Sequence(
        [normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")]
    )
    backend.decoder = decoders.Sequence(
        [
            decoders.Replace("▁", " "),
            decoders.ByteFallback(),
            decoders.Fuse(),
            decoders.Strip(" ", 1, 0),
        ]
    )
    special = ["<unk>", "<|im_start|>", "<|im_end|>", *(f"<0x{i:02X}>" for i in range(256))]
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=special, max_token_length=16)
    backend.train_from_iterator(["\n".join(code)] * 50, trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>")
    tokenizer.chat_template = CHATML_TEMPLATE
    templater = ChatTemplater(tokenizer)
    context = 2048

    def prompt(copies: int) -> list[dict]:
        return [{"role": "user", "content": "Fix this:\n" + "\n".join(code * copies)}]

    fits = prompt(24)
    tokens = len(tokenizer.apply_chat_template(fits, add_generation_prompt=True, return_dict=False))
    assert context * 0.6 < tokens < context
    assert len(templater.prompt(None, fits, None, context)) == tokens
    with pytest.raises(PromptTooLong):
        templater.prompt(None, prompt(100), None, context)


def _slowed_scorer(monkeypatch, seconds: float):
    """Each scoring waits ``seconds`` first (the real scorer, slowed by a wrapper); the
    returned event is set once a scoring's wait is over."""
    import threading
    import time

    from rllm_adapters.gateway import app as gateway_app

    scoring = gateway_app.Gateway._score_replies
    waited = threading.Event()

    def slow(self, *args, **kwargs):
        time.sleep(seconds)
        waited.set()
        return scoring(self, *args, **kwargs)

    monkeypatch.setattr(gateway_app.Gateway, "_score_replies", slow)
    return waited


def _scored_sessions_at_shutdown(tmp_path, monkeypatch, delay: float, grace: float):
    """Two of alice's Math sessions scored (each scoring ``delay`` s) and one of bob's with a
    streamed call the engine holds open, then the gateway stopped: the stored episodes, the
    scored sessions' ids, and whether bob's session was stored while the scorings ran."""
    import threading
    import time

    from .test_gateway_record import BOB, _episodes, _task_prompt

    waited = _slowed_scorer(monkeypatch, delay)
    math = "rllm/Math-v1"
    served = _Served(StandInEngine("\\boxed{455}", hold_after=1).app)  # streams held open
    gateway = _server(tmp_path, served.url, scorers={math: {}}, shutdown_grace_s=grace)
    try:
        sessions = {}
        body = {"model": "tiny", "prompt": _task_prompt(math, 0), "max_tokens": 16}
        for who in (ALICE, ALICE, BOB):
            opened = httpx.post(
                gateway.url + "/sessions", json={"env_id": math, "seed": 0}, headers=who
            )
            sessions[opened.json()["session_id"]] = who
        scored = [sid for sid, who in sessions.items() if who is ALICE]
        bob = next(sid for sid, who in sessions.items() if who is BOB)
        for sid in scored:
            url = f"{gateway.url}/sessions/{sid}/v1/completions"
            assert httpx.post(url, json={**body, "temperature": 0}, headers=ALICE).is_success

        def stream():  # held by the engine until shutdown cuts it
            with contextlib.suppress(httpx.HTTPError):
                url = f"{gateway.url}/sessions/{bob}/v1/completions"
                httpx.post(url, json={**body, "stream": True}, headers=BOB, timeout=60)

        streaming = threading.Thread(target=stream)
        streaming.start()

        def reward(sid):
            with contextlib.suppress(httpx.HTTPError):  # its connection ends with the gateway
                url = f"{gateway.url}/sessions/{sid}/reward"
                httpx.post(url, json={"env": math}, headers=ALICE, timeout=60)

        threads = [threading.Thread(target=reward, args=(sid,)) for sid in scored]
        for thread in threads:
            thread.start()
        time.sleep(0.5)  # both scorings under way
        stopping = threading.Thread(target=gateway.stop)
        stopping.start()
        early = None
        while early is None and stopping.is_alive():
            stored = {e.trajectory.metadata["session_id"] for e in _episodes(tmp_path / "e.db")}
            if bob in stored:
                early = not waited.is_set()
            time.sleep(0.05)
        stopping.join(120)
        for thread in [*threads, streaming]:
            thread.join(60)
    finally:
        served.stop()
    return _episodes(tmp_path / "e.db"), scored, early


def test_a_scoring_under_way_at_shutdown_is_stored_with_its_reward(tmp_path, monkeypatch):
    """att45l F1: a scoring that outlasted the shutdown grace (a tool or SWE scorer runs a
    program) was cut and its session stored as a failed sample, the scorer's verdict thrown
    away: a correct answer scored in 2.5 s with a grace of 2 s, 0 of 4 paid. Shutdown now
    gives scorings under way another grace."""
    episodes, scored, _ = _scored_sessions_at_shutdown(tmp_path, monkeypatch, delay=2.5, grace=2.0)
    assert len(episodes) == 3  # each session once
    rewards = {
        e.trajectory.metadata["session_id"]: (e.total_reward, e.is_correct) for e in episodes
    }
    assert [rewards[sid] for sid in scored] == [(1.0, True)] * 2


def test_sessions_are_stored_before_scorings_are_waited_for(tmp_path, monkeypatch):
    """att45n F1: shutdown waited for scorings under way before storing the sessions whose
    calls it had cut or seen finish, so one client's slow scorings (a ToolUse reply of
    sleeping programs) held every other session a minute and a supervisor's kill lost them.
    Every other session is stored first; a scoring past its second grace stops before its
    next step and its session is stored as an open one is (not counted as scored)."""
    episodes, scored, early = _scored_sessions_at_shutdown(
        tmp_path, monkeypatch, delay=6.0, grace=0.5
    )
    assert early  # bob's session was stored while alice's scorings still ran
    by_session = {e.trajectory.metadata["session_id"]: e for e in episodes}
    assert len(episodes) == 3  # bob's, and alice's two cut scorings, each once
    others = [e for sid, e in by_session.items() if sid not in scored]
    assert [e.trajectory.steps[-1].info.get("ended_by") for e in others] == ["shutdown"]
    for sid in scored:
        assert by_session[sid].trajectory.steps[-1].info.get("reward_source") == "none"


def test_a_gateway_started_again_after_a_stop_scores_again(tmp_path):
    """att45p F1: the stop flag set at shutdown was never cleared, so a gateway started again
    in-process (its server's `start()` after `stop()`, a second lifespan) failed every
    scoring (400 `score_failed`: 0 of 3 paid)."""
    from rllm_adapters.gateway.server import GatewayServer

    from .test_gateway_record import KEYS, _task_prompt

    math = "rllm/Math-v1"
    served = _Served(StandInEngine("\\boxed{455}").app)
    config = GatewayConfig(
        engines=[served.url],
        port=0,
        store=str(tmp_path / "e.db"),
        api_keys=KEYS,
        scorers={math: {}},
        shutdown_grace_s=1,
    )
    server = GatewayServer(config)

    def score() -> tuple[int, object]:
        opened = httpx.post(
            server.url + "/sessions", json={"env_id": math, "seed": 0}, headers=ALICE
        )
        sid = opened.json()["session_id"]
        body = {
            "model": "tiny",
            "prompt": _task_prompt(math, 0),
            "max_tokens": 16,
            "temperature": 0,
        }
        sent = httpx.post(f"{server.url}/sessions/{sid}/v1/completions", json=body, headers=ALICE)
        assert sent.is_success
        rewarded = httpx.post(
            f"{server.url}/sessions/{sid}/reward", json={"env": math}, headers=ALICE
        )
        return rewarded.status_code, rewarded.json().get("reward")

    try:
        server.start()
        assert score() == (200, 1.0)
        stopped = server.gateway._stopping
        server.stop()
        server.start()
        assert score() == (200, 1.0)
        # att45r F1: a new flag, not the old one cleared, which a scoring the stop cut (its
        # thread still in a step) reads before its next step.
        assert stopped.is_set() and not server.gateway._stopping.is_set()
        server.stop()
    finally:
        served.stop()
