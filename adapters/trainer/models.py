"""The networks the trainer optimises: the actor's token scorer and the critic's value head.

Both score only the positions that matter: for a batch of padded sequences and ``positions``
``[B, A]`` (the index of the hidden state that predicts each generated token), the actor
returns the logprob and entropy of each generated token and the critic a value per generated
token. Logits for prompt and observation tokens are never computed, which saves most of the
vocabulary projection in multi-turn episodes.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["ActionScorer", "ValueModel", "load_causal_lm", "load_value_model"]


def _backbone(lm: nn.Module) -> nn.Module:
    prefix = getattr(lm, "base_model_prefix", "model")
    backbone: nn.Module = getattr(lm, prefix)
    return backbone


def _gather(hidden: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    index = positions.unsqueeze(-1).expand(-1, -1, hidden.shape[-1])
    return hidden.gather(1, index)


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
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Logprobs ``[B, A]`` of ``targets`` predicted at ``positions``, entropies, values."""
        out = _backbone(self.lm)(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False
        )
        hidden = _gather(out.last_hidden_state, positions)
        head: Any = self.lm.get_output_embeddings()  # type: ignore[operator]
        logits = head(hidden).float()
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
