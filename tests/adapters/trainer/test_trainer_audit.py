"""The RL maths audit: each finding has a test here that failed before its fix.

* sampler logprobs are those of the distribution sampled from (at the temperature);
* the trainer scores through the model's own logit post-processing (soft-capping, scaling);
* truncated/masked importance sampling corrects the sampler/trainer mismatch;
* the learning-rate schedule does not lag an iteration;
* every token weighs the same across mini-batches (a short leftover one included) and ranks.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rllm_adapters.backends.base import SamplingParams  # noqa: E402
from rllm_adapters.trainer import algorithms as alg  # noqa: E402
from rllm_adapters.trainer.models import ActionScorer  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# ---------------------------------------------------------------------- scoring


def _tiny_lm(kind: str):
    import transformers

    torch.manual_seed(0)
    common = dict(
        vocab_size=97,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    if kind == "gemma2":
        # A small cap so that soft-capping changes every logit noticeably.
        config = transformers.Gemma2Config(
            **common, head_dim=8, final_logit_softcapping=0.5, attn_logit_softcapping=None
        )
        lm = transformers.Gemma2ForCausalLM(config)
    else:
        config = transformers.GraniteConfig(**common, logits_scaling=0.25)
        lm = transformers.GraniteForCausalLM(config)
    with torch.no_grad():  # logits large enough for the post-processing to matter
        lm.get_output_embeddings().weight.mul_(20.0)
    return lm.eval()


@pytest.mark.parametrize("kind", ["gemma2", "granite"])
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_scorer_uses_the_models_own_logit_post_processing(kind, temperature):
    lm = _tiny_lm(kind)
    scorer = ActionScorer(lm, temperature, value_head=True)
    ids = torch.randint(0, 97, (2, 12))
    attention = torch.ones_like(ids)
    attention[1, 9:] = 0  # right padding
    positions = torch.tensor([[3, 4, 5, 6], [5, 6, 7, 7]])
    targets = torch.gather(ids, 1, positions + 1)
    with torch.no_grad():
        logp, entropy, values = scorer(ids, attention, positions, targets, True)
        logits = lm(input_ids=ids, attention_mask=attention).logits.float() / temperature
    expected_all = torch.log_softmax(logits, dim=-1)
    rows = torch.arange(2)[:, None]
    expected = expected_all[rows, positions, targets]
    assert torch.allclose(logp, expected, atol=1e-5)
    expected_entropy = -(expected_all.exp() * expected_all).sum(-1)[rows, positions]
    assert torch.allclose(entropy, expected_entropy, atol=1e-4)
    assert values is not None and values.shape == positions.shape


# ---------------------------------------------------------------------- sampler logprobs


def _forward_logprobs(model, prompt, completion, temperature):
    ids = torch.tensor([list(prompt) + list(completion)])
    with torch.inference_mode():
        logits = model(ids).logits[0].float()
    logp = torch.log_softmax(logits / temperature, dim=-1)
    return [logp[len(prompt) - 1 + i, t].item() for i, t in enumerate(completion)]


def test_transformers_backend_logprobs_are_at_the_sampling_temperature(hf_policy):
    tok = hf_policy.tokenizer
    prompt = tok.encode("Hello there, a prompt", add_special_tokens=False)
    params = SamplingParams(max_tokens=8, temperature=0.5, seed=1)
    (result,) = hf_policy.generate_batch([prompt], params)
    expected = _forward_logprobs(hf_policy.model, prompt, result.completion_ids, 0.5)
    assert result.logprobs == pytest.approx(expected, abs=1e-4)
    raw = _forward_logprobs(hf_policy.model, prompt, result.completion_ids, 1.0)
    assert max(abs(a - b) for a, b in zip(result.logprobs, raw, strict=True)) > 1e-3


@pytest.mark.slow
def test_vllm_logprobs_are_at_the_sampling_temperature(tiny_path, hf_policy):
    pytest.importorskip("vllm")
    import os

    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from rllm_adapters.backends import make_policy

    policy = make_policy("vllm", tiny_path, max_model_len=512, seed=0, enforce_eager=True)
    try:
        assert policy.engine.model_config.logprobs_mode == "processed_logprobs"
        tok = hf_policy.tokenizer
        prompt = tok.encode("Hello there, a prompt", add_special_tokens=False)
        (result,) = policy.generate_batch([prompt], SamplingParams(max_tokens=8, temperature=0.5))
    finally:
        policy.close()
    expected = _forward_logprobs(hf_policy.model, prompt, result.completion_ids, 0.5)
    assert result.logprobs == pytest.approx(expected, abs=2e-3)


# ---------------------------------------------------------------------- importance sampling


def test_importance_weights_follow_trl_modes():
    trainer = torch.tensor([[-1.0, -1.0, -1.0], [-1.0, -1.0, 0.0]])
    sampler = torch.tensor([[-1.0 - math.log(4), -1.0, -1.0], [-1.0, -1.0 + math.log(2), 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]])
    w, out = alg.importance_weights(trainer, sampler, mask, mode="token_truncate", max_ratio=3.0)
    assert torch.allclose(w, torch.tensor([[3.0, 1.0, 1.0], [1.0, 0.5, 0.0]]))
    assert out.tolist() == [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    w, _ = alg.importance_weights(trainer, sampler, mask, mode="token_mask", max_ratio=3.0)
    assert torch.allclose(w, torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.5, 0.0]]))
    # Sequence modes: one ratio per row, the product over its tokens (4 and 1/2).
    w, _ = alg.importance_weights(trainer, sampler, mask, mode="sequence_truncate", max_ratio=3.0)
    assert torch.allclose(w, torch.tensor([[3.0, 3.0, 3.0], [0.5, 0.5, 0.0]]))
    w, out = alg.importance_weights(trainer, sampler, mask, mode="sequence_mask", max_ratio=3.0)
    assert torch.allclose(w, torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0]]))
    assert out[0].tolist() == [1.0, 1.0, 1.0]
    w, _ = alg.importance_weights(
        trainer, sampler, mask, mode="token_truncate", max_ratio=3.0, min_ratio=0.8
    )
    assert w[1, 1] == pytest.approx(0.8)


def test_policy_loss_weights_scale_each_token():
    logp = torch.zeros(1, 2, requires_grad=True)
    adv = torch.tensor([[1.0, 1.0]])
    mask = torch.ones(1, 2)
    weights = torch.tensor([[2.0, 0.0]])
    loss, _ = alg.policy_loss(
        logp, logp.detach(), adv, mask, clip_low=0.2, clip_high=0.2, normalizer=2.0, weights=weights
    )
    loss.backward()
    assert logp.grad.tolist() == [[-1.0, 0.0]]
