"""The transformers backend: logprobs are the model's, finish reasons, stop ids, batching."""

from __future__ import annotations

import asyncio

import pytest

torch = pytest.importorskip("torch")

from rllm_adapters.backends import make_policy, resolve_model  # noqa: E402
from rllm_adapters.backends.base import SamplingParams  # noqa: E402
from rllm_adapters.error import AdapterConfigError  # noqa: E402


def encode(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def test_logprobs_equal_a_forward_pass(hf_policy):
    tok = hf_policy.tokenizer
    prompts = [encode(tok, "Hello there"), encode(tok, "A longer prompt, with more tokens in it.")]
    results = hf_policy.generate_batch(prompts, SamplingParams(max_tokens=6, seed=3))
    for prompt, result in zip(prompts, results, strict=True):
        ids = torch.tensor([prompt + result.completion_ids])
        with torch.inference_mode():
            logits = hf_policy.model(ids).logits[0].float()
        logp = torch.log_softmax(logits, dim=-1)
        expected = [
            logp[len(prompt) - 1 + i, token].item() for i, token in enumerate(result.completion_ids)
        ]
        # Left padding in the batch must not change what the model computed.
        assert result.logprobs == pytest.approx(expected, abs=1e-4)
        assert result.prompt_ids == prompt


def test_length_and_stop_token_finish_reasons(hf_policy):
    tok = hf_policy.tokenizer
    prompt = encode(tok, "Count: 1 2 3")
    greedy = SamplingParams(max_tokens=8, temperature=0.0)
    (full,) = hf_policy.generate_batch([prompt], greedy)
    assert full.finish_reason == "length" and len(full.completion_ids) == 8
    stop_id = full.completion_ids[3]
    first = full.completion_ids.index(stop_id)
    (stopped,) = hf_policy.generate_batch([prompt], greedy.with_(stop_token_ids=(stop_id,)))
    assert stopped.finish_reason == "stop"
    assert stopped.completion_ids == full.completion_ids[: first + 1]
    assert len(stopped.logprobs) == len(stopped.completion_ids)


def test_concurrent_requests_are_batched_and_resolved(hf_policy):
    tok = hf_policy.tokenizer
    prompts = [encode(tok, f"prompt number {i}") for i in range(5)]
    greedy = SamplingParams(max_tokens=4, temperature=0.0)

    async def run():
        return await asyncio.gather(*(hf_policy.generate(p, greedy) for p in prompts))

    together = asyncio.run(run())
    alone = [hf_policy.generate_batch([p], greedy)[0] for p in prompts]
    assert [g.completion_ids for g in together] == [g.completion_ids for g in alone]


def test_requests_arriving_one_after_another_form_one_batch(hf_policy):
    # A rollout's episodes reset one after another, a few milliseconds apart: the worker waits
    # while requests keep coming, so an iteration is one generate call (a fixed 2 ms pause
    # split 64 requests into 2-3 calls, each as slow on a GPU as one).
    from rllm_adapters.backends.transformers import TransformersPolicy

    # 20 ms between requests, a 50 ms wait: margin for a loaded machine, and all 12 requests
    # (240 ms) arrive well after any single fixed pause.
    policy = TransformersPolicy(hf_policy.model, hf_policy.tokenizer, batch_wait_s=0.05)
    sizes = []
    real = policy.generate_batch

    def counted(prompts, params):  # the real generate, counted
        sizes.append(len(prompts))
        return real(prompts, params)

    policy.generate_batch = counted
    tok = hf_policy.tokenizer
    greedy = SamplingParams(max_tokens=2, temperature=0.0)

    async def episode(i):
        await asyncio.sleep(0.02 * i)  # an env reset before each request
        return await policy.generate(encode(tok, f"prompt number {i}"), greedy)

    async def run():
        return await asyncio.gather(*(episode(i) for i in range(12)))

    try:
        assert len(asyncio.run(run())) == 12
    finally:
        policy.close()
    assert sizes == [12]


def test_seeded_sampling_is_reproducible(hf_policy):
    prompt = encode(hf_policy.tokenizer, "Seeded")
    params = SamplingParams(max_tokens=6, temperature=1.0, seed=11)
    a = hf_policy.generate_batch([prompt], params)[0].completion_ids
    b = hf_policy.generate_batch([prompt], params)[0].completion_ids
    assert a == b


def test_make_policy_errors_and_tiny_alias(tiny_path):
    assert resolve_model("tiny") == str(tiny_path)
    assert resolve_model("/some/folder") == "/some/folder"
    with pytest.raises(AdapterConfigError, match="Did you mean"):
        make_policy("vllms")
    with pytest.raises(AdapterConfigError, match="base_url"):
        make_policy("openai", "tiny")


def test_checkpoint_dtype_is_the_default(tmp_path, tiny_path):
    import json
    import shutil

    from rllm_adapters.backends.base import checkpoint_dtype

    assert checkpoint_dtype(tiny_path) == "float32"
    assert checkpoint_dtype(tmp_path) is None  # no config.json
    folder = tmp_path / "bf16"
    shutil.copytree(tiny_path, folder)
    config = json.loads((folder / "config.json").read_text())
    config.pop("torch_dtype", None)
    config["dtype"] = "bfloat16"
    (folder / "config.json").write_text(json.dumps(config))
    policy = make_policy("transformers", folder)
    try:
        assert policy.model.dtype == torch.bfloat16  # loaded as saved, not cast
    finally:
        policy.close()
    policy = make_policy("transformers", folder, dtype="float32")
    try:
        assert policy.model.dtype == torch.float32  # an explicit dtype wins
    finally:
        policy.close()


def test_openai_backend_refuses_a_dtype():
    pytest.importorskip("httpx")
    with pytest.raises(AdapterConfigError, match="server's setting"):
        make_policy("openai", "tiny", base_url="http://127.0.0.1:1/v1", dtype="float32")
