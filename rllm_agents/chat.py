r"""Token-exact multi-turn prompts from a Hugging Face chat template.

The first prompt is the chat template applied to the agent's opening messages (system prompt,
first observation, tool schemas). Every later prompt is **appended** to the token sequence the
model has already seen::

    next_prompt = prompt + completion + glue + observation

* ``completion`` -- the ids the policy produced, unchanged (loss mask 1).
* ``glue`` -- the rest of the template's end-of-assistant-turn text (ChatML: ``<|im_end|>\n``)
  that the model did not produce itself. If the completion ended with the end-of-turn token
  (``<|im_end|>``) only the remainder (``\n``) is added; if it was **cut at max tokens** or at
  a **stop string**, the whole closer is added, so the next observation always starts a
  well-formed turn. Glue ids are never trained on (loss mask 0).
* ``observation`` -- the template's rendering of the new message(s) plus the generation prompt
  (ChatML: ``<|im_start|>user\n...<|im_end|>\n<|im_start|>assistant\n``), tokenised on its
  own.

The glue and the observation text are found by rendering a conversation that ends with a
sentinel assistant message, with and without the new messages, and reading the text after the
sentinel. The history itself is never re-rendered, so:

* **Chat templates that rewrite history** (e.g. Qwen3 dropping earlier ``<think>`` sections, or
  templates that render the last assistant turn differently) cannot change what was sampled:
  the model's earlier turns stay in the prompt exactly as generated. This is deliberate -- the
  trainer must score the sequence the sampler saw -- and means prompts may differ from what
  ``apply_chat_template`` would produce for the whole chat. When the sentinel rendering shows
  such a rewrite, the glue is the common part of the two renderings of the turn's end.
* **``<think>`` sections** are kept in the ids (they were sampled); the agent decides what part
  of the text becomes the env action (see :class:`rllm_agents.agent.Agent`).
* **Stop strings**: the backend's ids keep every sampled token (the last one may run past the
  stop string); only the response *text* is cut at the stop string.

Tokenising the observation separately from the previous ids can give a different split than
tokenising the whole text at once would; that is fine, because the sampler and the trainer both
use these ids. With ChatML the boundaries are special tokens, so the split is the same anyway.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["ChatTokenizer", "Message"]

Message = dict[str, Any]

_SENTINEL = "RLLM-SENTINEL-4f7c"
_SENTINEL_USER = "RLLM-SENTINEL-USER-91d2"


class ChatTokenizer:
    """Build token-exact prompts with a tokenizer's chat template.

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template.
        chat_template_kwargs: Extra keyword arguments for ``apply_chat_template`` (for example
            ``{"enable_thinking": False}`` for Qwen3).
        end_of_turn_ids: Token ids that end an assistant turn when the model emits them
            (default: the tokenizer's EOS token and the template's closer's first token).
    """

    def __init__(
        self,
        tokenizer: Any,
        *,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        end_of_turn_ids: Sequence[int] | None = None,
    ) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            from rllm_agents.error import AgentConfigError

            raise AgentConfigError(
                f"Expects a tokenizer with a chat template, actual: "
                f"{type(tokenizer).__name__} without `chat_template`. Set "
                "`tokenizer.chat_template` (e.g. rllm_adapters.tiny_model.CHATML_TEMPLATE)."
            )
        self.tokenizer = tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._base_tails: dict[str, str] = {}
        closer, _ = self._closer_and_delta([{"role": "user", "content": _SENTINEL_USER}], None)
        self.closer_ids = closer
        eos = getattr(tokenizer, "eos_token_id", None)
        ids = set(end_of_turn_ids or [])
        if not end_of_turn_ids:
            if eos is not None:
                ids.add(int(eos))
            if closer:
                ids.add(closer[0])
        self.end_of_turn_ids = frozenset(ids)

    # ------------------------------------------------------------------ rendering

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """The chat template's text for ``messages``."""
        return str(
            self.tokenizer.apply_chat_template(
                list(messages),
                tools=list(tools) if tools else None,
                tokenize=False,
                add_generation_prompt=add_generation_prompt,
                **self.chat_template_kwargs,
            )
        )

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` with no BOS/EOS added (templates write their own)."""
        return list(self.tokenizer.encode(text, add_special_tokens=False))

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``ids``."""
        return str(self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens))

    def initial_prompt(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> list[int]:
        """Ids of the opening prompt: the whole template with the generation prompt."""
        return self.encode(self.render(messages, tools, add_generation_prompt=True))

    # ------------------------------------------------------------------ appending

    def _closer_and_delta(
        self,
        new_messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None,
    ) -> tuple[list[int], list[int]]:
        head: list[Message] = [
            {"role": "user", "content": _SENTINEL_USER},
            {"role": "assistant", "content": _SENTINEL},
        ]
        key = json.dumps(tools, sort_keys=True, default=str) if tools else ""
        tail_base = self._base_tails.get(key)
        if tail_base is None:
            base = self.render(head, tools, add_generation_prompt=False)
            tail_base = base[base.rindex(_SENTINEL) + len(_SENTINEL) :]
            if len(self._base_tails) < 64:  # tool sets per rollout are few
                self._base_tails[key] = tail_base
        full = self.render([*head, *new_messages], tools, add_generation_prompt=True)
        tail_full = full[full.index(_SENTINEL) + len(_SENTINEL) :]
        if tail_full.startswith(tail_base):
            closer_text = tail_base
        else:
            # The template renders a non-final assistant turn differently (history rewrite):
            # keep the end-of-turn text both renderings agree on.
            n = 0
            while n < min(len(tail_base), len(tail_full)) and tail_base[n] == tail_full[n]:
                n += 1
            closer_text = tail_base[:n]
        return self.encode(closer_text), self.encode(tail_full[len(closer_text) :])

    def observation_ids(
        self,
        new_messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[int]:
        """Ids of ``new_messages`` as a continuation after a closed assistant turn.

        Includes the generation prompt for the next assistant turn.
        """
        _, delta = self._closer_and_delta(new_messages, tools)
        return delta

    def glue_ids(self, completion_ids: Sequence[int]) -> list[int]:
        """The part of the end-of-turn closer the completion did not produce itself."""
        closer = self.closer_ids
        completion = list(completion_ids)
        # Longest suffix of the completion that is a prefix of the closer (usually the
        # end-of-turn token); the rest of the closer is glue.
        for k in range(min(len(closer), len(completion)), 0, -1):
            if completion[-k:] == closer[:k]:
                return closer[k:]
        return list(closer)

    def append(
        self,
        prompt_ids: Sequence[int],
        completion_ids: Sequence[int],
        new_messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[int]:
        """The next prompt: ``prompt + completion + glue + observation`` (never re-tokenised).

        Args:
            prompt_ids: The prompt of the turn that just ended.
            completion_ids: What the model produced in that turn.
            new_messages: The messages to add (usually one user or tool message).
            tools: Tool schemas of the conversation (they can change the rendering).

        Returns:
            The ids of the next prompt; its first ``len(prompt_ids) + len(completion_ids)``
            ids are exactly ``prompt_ids + completion_ids``.
        """
        return [
            *prompt_ids,
            *completion_ids,
            *self.glue_ids(completion_ids),
            *self.observation_ids(new_messages, tools),
        ]
