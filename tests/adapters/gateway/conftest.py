"""Fixtures of the gateway tests: one vLLM engine for the package's engine tests."""

from __future__ import annotations

import pytest

ENGINE_ARGS = ["--dtype=float32", "--max-model-len=2048"]
#: Tokens of tests' API keys (16+ characters, as the gateway requires).
KEYS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
ADMIN = "admin-token-0123456789"


@pytest.fixture(scope="package")
def launched(tiny_path, tmp_path_factory):  # noqa: D401
    """A gateway that launched one vLLM engine on the tiny model, shared by this package's
    engine tests (the training test launches its own)."""
    pytest.importorskip("vllm")
    pytest.importorskip("starlette")
    pytest.importorskip("uvicorn")
    from rllm_adapters.gateway import GatewayConfig
    from rllm_adapters.gateway.server import GatewayServer

    store = tmp_path_factory.mktemp("gateway") / "episodes.db"
    config = GatewayConfig(
        model=str(tiny_path),
        served_model_name="tiny",
        engine_args=ENGINE_ARGS,
        port=0,
        store=str(store),
        run="test",
        scorers={"rllm/Math-v1": {}},
    )
    server = GatewayServer(config).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="package")
def hf_model(tiny_path):
    """The tiny model in transformers (float32), for outside forward passes."""
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_path, torch_dtype=torch.float32).eval()
    return model


def completion_logprobs(model, prompt_ids, completion_ids):
    """Each completion id's logprob under ``model`` after ``prompt_ids`` (one forward pass)."""
    import torch

    ids = torch.tensor([list(prompt_ids) + list(completion_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0].float()
    logp = torch.log_softmax(logits, dim=-1)
    n = len(prompt_ids)
    return [float(logp[n - 1 + i, t]) for i, t in enumerate(completion_ids)], [
        int(logp[n - 1 + i].argmax()) for i in range(len(completion_ids))
    ]
