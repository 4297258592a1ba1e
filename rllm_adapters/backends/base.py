"""The policy interface every rollout backend implements.

A :class:`Policy` generates one completion at a time, asynchronously; the rollout loop calls it
from many episodes at once and the backend batches however it can (continuous batching in
vLLM, dynamic batches for transformers, concurrent HTTP requests for OpenAI-compatible
servers).

Two ways in:

* :meth:`Policy.generate` takes **prompt token ids** and returns completion ids, their logprobs
  and the text. Trajectories built this way are token-exact. Every backend with a local
  tokenizer supports it (``policy.tokenizer`` is not ``None``).
* :meth:`Policy.chat` takes chat messages (and tool schemas) for servers that template the chat
  themselves. Ids and logprobs are returned when the server provides them, but since the server
  re-renders the history every turn, such trajectories are marked ``token_exact=False``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from rllm_adapters.error import AdapterConfigError

__all__ = ["Generation", "Policy", "SamplingParams", "checkpoint_dtype", "deliver"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion (a subset every backend understands).

    Attributes:
        max_tokens: Most tokens to generate in one turn.
        temperature: Softmax temperature; 0 is greedy.
        top_p: Nucleus sampling mass (1.0 = off).
        top_k: Top-k cut (0 = off).
        stop: Stop strings: generation ends once the text contains one; the response text is
            cut before it (ids keep every sampled token).
        stop_token_ids: Extra ids that end generation (end-of-turn tokens).
        seed: Per-request seed (backends that batch may use one seed per batch).
        logprobs: Return the logprob of each sampled token.
    """

    max_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop: tuple[str, ...] = ()
    stop_token_ids: tuple[int, ...] = ()
    seed: int | None = None
    logprobs: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.max_tokens, int) or self.max_tokens < 1:
            raise AdapterConfigError(
                f"Expects `max_tokens` to be an int >= 1, actual: {self.max_tokens!r}."
            )
        if not (self.temperature >= 0 and math.isfinite(self.temperature)):
            raise AdapterConfigError(f"Expects `temperature` >= 0, actual: {self.temperature!r}.")
        if not 0 < self.top_p <= 1:
            raise AdapterConfigError(f"Expects `top_p` in (0, 1], actual: {self.top_p!r}.")
        if self.top_k < 0:
            raise AdapterConfigError(f"Expects `top_k` >= 0 (0 = off), actual: {self.top_k!r}.")
        # Lists are accepted for convenience; tuples keep the params hashable (batch keys).
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "stop_token_ids", tuple(int(i) for i in self.stop_token_ids))

    def with_(self, **changes: Any) -> SamplingParams:
        """A copy with some fields changed."""
        return replace(self, **changes)


@dataclass
class Generation:
    """One completion.

    Attributes:
        text: The completion text (special tokens removed, cut before a stop string).
        completion_ids: The sampled ids (``None`` if the backend cannot tell).
        logprobs: Logprob of each sampled id under the model (``None`` if not returned).
        finish_reason: ``"stop"`` (end-of-turn/EOS token or stop string), ``"length"``
            (``max_tokens``) or ``"abort"``.
        prompt_ids: The prompt ids the backend used (chat APIs report them when they can).
        stop_reason: The stop string or id that ended it, when known.
        extra: Backend-specific facts (e.g. structured tool calls of a chat API).
    """

    text: str
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    finish_reason: str = "stop"
    prompt_ids: list[int] | None = None
    stop_reason: str | int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class Policy(ABC):
    """A model that completes prompts asynchronously (see the module docstring).

    Attributes:
        tokenizer: The Hugging Face tokenizer used for local chat templating, or ``None`` for
            chat-only backends.
        max_model_len: The longest prompt + completion the model accepts (``None``: unknown).
        name: A short description for trajectory metadata.
    """

    tokenizer: Any = None
    max_model_len: int | None = None
    name: str = "policy"

    @property
    def supports_token_ids(self) -> bool:
        """Whether :meth:`generate` (token-exact) is available."""
        return self.tokenizer is not None

    @abstractmethod
    async def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        """Complete a prompt given as token ids."""

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        params: SamplingParams,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Generation:
        """Complete a chat; by default templated locally and sent to :meth:`generate`."""
        if self.tokenizer is None:
            raise NotImplementedError(f"{type(self).__name__} implements neither chat nor ids.")
        text = self.tokenizer.apply_chat_template(
            list(messages),
            tools=list(tools) if tools else None,
            tokenize=False,
            add_generation_prompt=True,
        )
        ids = list(self.tokenizer.encode(text, add_special_tokens=False))
        generation = await self.generate(ids, params)
        generation.prompt_ids = ids
        return generation

    def update_weights(self, weights: Any) -> None:
        """Load new weights from a trainer (``(name, tensor)`` pairs or an HF folder)."""
        raise NotImplementedError(f"{type(self).__name__} cannot load new weights.")

    def close(self) -> None:  # noqa: B027  (optional hook, nothing to release by default)
        """Release the backend's resources (threads, engines, connections)."""

    def __enter__(self) -> Policy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def deliver(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any) -> None:
    """Resolve ``future`` on its own loop from a backend's worker thread.

    ``result`` is the value, or an exception to raise in the waiting episode. A loop that
    already closed has nobody waiting; a cancelled future is left alone.
    """
    try:
        loop.call_soon_threadsafe(_resolve, future, result)
    except RuntimeError:
        pass


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if future.cancelled():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)


def checkpoint_dtype(model: str | os.PathLike[str]) -> str | None:
    """The dtype a local checkpoint was saved in (its ``config.json``), or ``None``.

    Backends load a checkpoint in its own dtype unless told otherwise, so a float32 policy
    is evaluated as the trainer sampled it (vLLM alone would pick bfloat16 for it).
    """
    path = os.path.join(os.fspath(model), "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError):
        return None
    dtype = config.get("dtype") or config.get("torch_dtype")
    return dtype if isinstance(dtype, str) and dtype != "auto" else None
