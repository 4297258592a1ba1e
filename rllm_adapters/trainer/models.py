"""The networks the trainer optimises: the actor's token scorer and the critic's value head.

Both score only the positions that matter: for a batch of padded sequences and ``positions``
``[B, A]`` (the index of the hidden state that predicts each generated token), the actor
returns the logprob and entropy of each generated token and the critic a value per generated
token. Logits for prompt and observation tokens are never computed, which saves most of the
vocabulary projection in multi-turn episodes. The logits come out of the model's own forward
(:func:`scored_logits`), so a model that post-processes them (soft-capping, scaling) is scored
as it samples.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = [
    "ActionScorer",
    "ValueModel",
    "apply_lora",
    "base_lm",
    "is_lora",
    "load_causal_lm",
    "load_value_model",
    "merged_state_dict",
    "scored_logits",
    "shared_prefix_length",
]


def _gather(hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    index = positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1])
    return hidden.gather(1, index)


def scored_logits(
    lm: nn.Module, positions: torch.Tensor, **inputs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's own logits ``[B, A, V]`` at ``positions`` and the hidden states they come from.

    The model runs its full forward, so its own post-processing of the output projection
    (Gemma2's soft-capping, Granite's and Cohere's scaling) applies, as in sampling. A hook on
    the output projection gathers its input at ``positions`` first, so the vocabulary
    projection runs on the scored positions only.

    Args:
        lm: A Hugging Face ``*ForCausalLM`` model (or a PEFT model around one).
        positions: ``[B, A]`` index of the hidden state that predicts each scored token.
        **inputs: The model's inputs (``input_ids``, ``attention_mask`` or ``position_ids``).

    Returns:
        ``(logits, hidden)``: float32 logits and the ``[B, A, H]`` final hidden states.
    """
    head: Any = lm.get_output_embeddings()  # type: ignore[operator]
    captured: list[torch.Tensor] = []

    def gather_input(module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...]:
        hidden = _gather(args[0], positions)
        captured.append(hidden)
        return (hidden, *args[1:])

    handle = head.register_forward_pre_hook(gather_input)
    try:
        out = lm(**inputs, use_cache=False)
    finally:
        handle.remove()
    if len(captured) != 1:
        raise RuntimeError(
            f"Expects {type(lm).__name__}'s forward to call its output projection once, "
            f"actual: {len(captured)} calls; score it another way."
        )
    return out.logits.float(), captured[0]


class ActionScorer(nn.Module):
    """A causal LM that returns logprobs (and entropies) of given tokens at given positions.

    With ``value_head=True`` it is an actor-critic with a shared backbone: a linear head on
    the same hidden states gives the value of the state before each token (half the compute
    of a separate critic; the head is not part of the language model's weights).

    Args:
        lm: A Hugging Face ``*ForCausalLM`` model.
        temperature: Logits are divided by it, matching the sampler.
        value_head: Add a scalar value head (shared-backbone critic).
    """

    def __init__(self, lm: nn.Module, temperature: float = 1.0, value_head: bool = False) -> None:
        super().__init__()
        self.lm = lm
        self.temperature = float(temperature)
        self.value_head: nn.Linear | None = None
        if value_head:
            hidden = int(lm.get_input_embeddings().weight.shape[1])  # type: ignore[operator]
            self.value_head = nn.Linear(hidden, 1)
            nn.init.zeros_(self.value_head.weight)
            nn.init.zeros_(self.value_head.bias)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        positions: torch.Tensor,
        targets: torch.Tensor,
        with_entropy: bool = True,
        shared_prefix: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Logprobs ``[B, A]`` of ``targets`` predicted at ``positions``, entropies, values.

        ``shared_prefix``: the rows' first ``shared_prefix`` tokens are the same (a group's
        prompt; see :func:`shared_prefix_length`): they run once, and every row continues
        from their keys and values. The result and its gradient are those of the full rows;
        the prefix's forward and backward cost one row instead of ``B``.
        """
        inputs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
        if shared_prefix > 0 and input_ids.shape[0] > 1:
            prefix = self.lm(
                input_ids=input_ids[:1, :shared_prefix],
                attention_mask=attention_mask[:1, :shared_prefix],
                use_cache=True,
                **_keep_one_logit(self.lm),
            )
            cache = prefix.past_key_values
            cache.batch_repeat_interleave(input_ids.shape[0])
            inputs = {
                "input_ids": input_ids[:, shared_prefix:],
                "attention_mask": attention_mask,
                "past_key_values": cache,
            }
            # Padded action slots point before the prefix: any valid index does for them.
            positions = (positions - shared_prefix).clamp(min=0)
        logits, hidden = scored_logits(self.lm, positions, **inputs)
        if self.temperature != 1.0:
            logits = logits / self.temperature
        logp_all = torch.log_softmax(logits, dim=-1)
        logp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        entropy = None
        if with_entropy:
            entropy = -(logp_all.exp() * logp_all).sum(-1)
        values = None
        if self.value_head is not None:
            values = self.value_head(hidden).squeeze(-1).float()
        return logp, entropy, values


def _keep_one_logit(lm: Any) -> dict[str, Any]:
    """``logits_to_keep=1`` when the model takes it (the prefix's logits are not needed)."""
    import inspect

    takes = "logits_to_keep" in inspect.signature(base_lm(lm).forward).parameters
    return {"logits_to_keep": 1} if takes else {}


def shared_prefix_length(
    input_ids: torch.Tensor, positions: torch.Tensor, action_mask: torch.Tensor, minimum: int = 8
) -> int:
    """How many leading tokens every row shares, before the first scored position (or 0).

    Rows of one task group share their prompt; the longest common prefix that ends before
    any row's first scored position can run once (:meth:`ActionScorer.forward`). Below
    ``minimum`` tokens, or for a single row, sharing does not pay: 0.
    """
    if input_ids.shape[0] < 2:
        return 0
    differs = (input_ids != input_ids[:1]).any(0).nonzero()
    common = int(differs[0]) if len(differs) else int(input_ids.shape[1])
    length = int(input_ids.shape[1])
    first_scored = int(positions.masked_fill(action_mask == 0, length).min())
    shared = min(common, first_scored)
    return shared if shared >= minimum else 0


class ValueModel(nn.Module):
    """A transformer backbone with a scalar head: the value of the state before each token.

    Args:
        backbone: A Hugging Face base model (``AutoModel``), e.g. ``Qwen2Model``.
        hidden_size: Its hidden size.
    """

    def __init__(self, backbone: nn.Module, hidden_size: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.value_head = nn.Linear(hidden_size, 1)
        # Start at V = 0 everywhere: the first advantages are the plain returns.
        nn.init.zeros_(self.value_head.weight)
        nn.init.zeros_(self.value_head.bias)

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, positions: torch.Tensor
    ) -> torch.Tensor:
        """Values ``[B, A]`` at ``positions``."""
        out = self.backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        hidden = _gather(out.last_hidden_state, positions)
        return self.value_head(hidden).squeeze(-1).float()


def load_causal_lm(path: str, dtype: torch.dtype = torch.float32) -> Any:
    """``AutoModelForCausalLM.from_pretrained(path)`` in ``dtype``."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype)


def load_value_model(path: str, dtype: torch.dtype = torch.float32) -> ValueModel:
    """A :class:`ValueModel` whose backbone is the base model of ``path``."""
    from transformers import AutoConfig, AutoModel

    config = AutoConfig.from_pretrained(path)
    backbone = AutoModel.from_pretrained(path, dtype=dtype)
    hidden = getattr(config, "hidden_size", None) or config.get_text_config().hidden_size
    model = ValueModel(backbone, int(hidden))
    return model.to(dtype)


def apply_lora(lm: Any, settings: Any) -> Any:
    """``lm`` with LoRA adapters (PEFT) from :class:`~rllm_adapters.trainer.config.LoraSettings`.

    Only the adapters' weights require gradients afterwards.
    """
    from rllm_envs.error import require

    peft = require("peft", "train", feature="LoRA (`lora.r` > 0)")
    target = settings.target_modules
    config = peft.LoraConfig(
        r=settings.r,
        lora_alpha=settings.alpha,
        lora_dropout=settings.dropout,
        target_modules=target if isinstance(target, str) else list(target),
        task_type="CAUSAL_LM",
    )
    return peft.get_peft_model(lm, config)


def is_lora(lm: Any) -> bool:
    """Whether ``lm`` is a PEFT model (see :func:`apply_lora`)."""
    return hasattr(lm, "peft_config") and hasattr(lm, "get_base_model")


def base_lm(lm: Any) -> Any:
    """The Hugging Face model inside a PEFT model (``lm`` itself otherwise)."""
    return lm.get_base_model() if is_lora(lm) else lm


def merged_state_dict(lm: Any) -> dict[str, torch.Tensor]:
    """``lm``'s weights under the base model's names, LoRA updates merged in (CPU copies).

    For a PEFT model each adapted layer's weight is ``W + scale * B @ A`` (PEFT's own
    ``get_delta_weight``), and the adapters' own tensors are left out: the result loads into
    the plain base model (``from_pretrained``, vLLM ``reload_weights``). The model itself is
    not changed (merging in place and unmerging would drift the base weights).
    """
    if not is_lora(lm):
        return {k: v.detach().cpu().clone() for k, v in lm.state_dict().items()}
    from peft.tuners.lora import LoraLayer

    model = lm.get_base_model()
    adapter = lm.active_adapter
    deltas: dict[str, torch.Tensor] = {}
    for name, module in model.named_modules():
        if isinstance(module, LoraLayer) and adapter in module.lora_A:
            layer: Any = module  # every LoRA layer type defines get_delta_weight
            deltas[f"{name}.weight"] = layer.get_delta_weight(adapter).detach()
    out: dict[str, torch.Tensor] = {}
    for key, value in model.state_dict().items():
        if ".lora_" in key:
            continue
        out[key.replace(".base_layer.", ".")] = value.detach()
    for key, delta in deltas.items():
        out[key] = out[key] + delta.to(out[key].dtype)
    return {k: v.cpu().clone() for k, v in out.items()}
