"""Token-exact chat sessions: the gateway templates the conversation and appends turns.

A chat server re-templates the whole history on every call, and re-tokenising a reply the
model sampled does not always give back the sampled ids, so a multi-turn session through a
chat endpoint is not one token sequence. When the gateway knows the served checkpoint's
tokenizer, a session's chat call is instead turned into a ``/completions`` call on token ids,
built as our rollout builds them (:class:`rllm_agents.chat.ChatTokenizer`): the first prompt
is the chat template applied to the messages; a later call whose messages are the previous
call's messages, the reply as returned, and new messages gets
``previous prompt + previous completion + glue + new messages``. The reply goes back to the
client as a chat completion (hermes ``<tool_call>`` blocks become ``tool_calls`` when the
call had ``tools``). A client that rewrites its history gets a fresh prompt, recorded as such.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rllm_envs.text import tag_matches

__all__ = [
    "ChatState",
    "PromptTooLong",
    "ChatTemplater",
    "chat_chunk",
    "chat_logprobs",
    "chat_reply",
    "parse_tool_calls",
    "tools_key",
]

#: Sampling fields a chat request shares with ``/completions`` (a session refuses the fields
#: that reshape the sampling distribution beyond these: ``gateway.app._SESSION_FIELDS``).
_SAMPLING = (
    "model",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "stop",
    "seed",
    "ignore_eos",
    "stream",
)


@dataclass
class ChatState:
    """A session's last chat exchange: what the next call must start with to append."""

    messages: list[dict[str, Any]]
    tools_key: str
    prompt_ids: list[int]
    completion_ids: list[int]


def tools_key(tools: Any) -> str:
    """A stable key of a call's tool schemas (a change of tools starts a new sequence)."""
    return json.dumps(tools, sort_keys=True) if tools else ""


def message_text(message: Mapping[str, Any]) -> str:
    """A message's content as text, as vLLM's chat endpoint gives it to a template.

    OpenAI content parts (``[{"type": "text", ...}]``) are joined by newlines; no content (an
    assistant turn of tool calls only) is ``""``.
    """
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text") or "") for part in content if isinstance(part, Mapping)
        )
    return content if isinstance(content, str) else ""


def tool_call_key(message: Any) -> tuple[tuple[Any, str], ...]:
    """A message's tool calls as ``(name, arguments as sorted JSON)``, arguments parsed if JSON."""
    calls = message.get("tool_calls") if isinstance(message, Mapping) else None
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except (ValueError, RecursionError):  # a reply's JSON: any text, any depth
                pass
        out.append((function.get("name"), json.dumps(arguments, sort_keys=True)))
    return tuple(out)


def plain_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """The message with its content as text (:func:`message_text`), as a template reads it."""
    return {**message, "content": message_text(message)}


def _norm(message: Mapping[str, Any]) -> tuple[Any, ...]:
    text, calls = message_text(message), tool_call_key(message)
    if calls and "<tool_call>" in text:
        # A streamed reply sent back as it was relayed: its text still holds the blocks its
        # `tool_calls` were parsed from, which the recorded message's content does not. The
        # same reply either way (s23 att29c5 F1: it was templated again, its calls twice).
        content, parsed = parse_tool_calls(text)
        if tool_call_key({"tool_calls": parsed}) == calls:
            text = content or ""
    return (message.get("role"), text, calls)


#: The most characters Unicode's canonical composition (NFC) merges into one (a letter and
#: up to three combining marks; a Hangul syllable's jamo).
NORMALIZED_CHARS = 4


def _text_chars(value: Any) -> int:
    """The characters of every text and number in ``value`` (keys and values), as written.

    Numbers count too: a template writes a content part's ``[7...7, ...]`` as text (s45
    att45d: 58,000 numbers of 64 digits counted as 27 characters).
    """
    total = 0
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, Mapping):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            total += len(item)  # a separator each
            todo.extend(item)
        elif isinstance(item, int | float):  # ints are at most 64 digits (the body's bound)
            total += len(repr(item))
    return total


class PromptTooLong(ValueError):
    """A text to tokenise holds more than the model's context could (raised before it is)."""


class ChatTemplater:
    """Build a session call's prompt ids (see the module docstring).

    Args:
        tokenizer: The served checkpoint's Hugging Face tokenizer (with a chat template).
    """

    def __init__(self, tokenizer: Any) -> None:
        from rllm_agents.chat import ChatTokenizer

        #: For what the event loop reads (end-of-turn ids); templating uses each thread's own.
        self.chat = ChatTokenizer(tokenizer)
        self.tokenizer = tokenizer
        #: The most text one token stands for: its vocabulary entry's length (byte-level and
        #: sentencepiece entries hold a symbol per byte or character at most).
        self.token_chars = max(map(len, tokenizer.get_vocab()), default=0)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        #: ... and in UTF-8 bytes of the normalised text it stands for: a text of more bytes
        #: than the context times this, as the tokenizer normalises it, cannot fit (0: not
        #: known). A byte-level entry's symbols stand for a byte each: the bytes it decodes
        #: to (SmolLM2's longest: 81, written as 162: s45 att45h). Otherwise an entry is
        #: normalised text itself (`▁` for a space, 3 bytes, which decodes to 1: s45 att45j,
        #: indented code that fits was refused), or decodes to more (byte fallback).
        self.token_bytes = 0
        if backend is not None:
            self.token_bytes = max(
                len(backend.decode([i], skip_special_tokens=False).encode("utf-8", "surrogatepass"))
                for i in range(backend.get_vocab_size())
            )
            if "ByteLevel" not in repr(backend.decoder):
                written = (len(t.encode("utf-8", "surrogatepass")) for t in tokenizer.get_vocab())
                self.token_bytes = max(self.token_bytes, *written)
        self._normalizer = getattr(backend, "normalizer", None)
        self._threads = threading.local()

    def _thread_chat(self) -> Any:
        """This thread's own tokenizer, whose encoding checks :meth:`_fits` first.

        A tokenizer is not safe to share between threads (a call changes its settings), and
        the gateway templates on several (s45 att45h).
        """
        chat = getattr(self._threads, "chat", None)
        if chat is None:
            from rllm_agents.chat import ChatTokenizer

            chat = self._threads.chat = ChatTokenizer(copy.deepcopy(self.tokenizer))
            encode = chat.encode

            def bounded_encode(text: str) -> list[int]:
                context = getattr(self._threads, "context", None)
                if context is not None and self.token_bytes and not self._fits(text, context):
                    raise PromptTooLong(
                        f"the prompt's text holds more than a context of {context} tokens could"
                    )
                return encode(text)

            chat.encode = bounded_encode  # type: ignore[method-assign]
        return chat

    def _fits(self, text: str, context: int) -> bool:
        """Whether ``text``, as the tokenizer normalises it, may fit ``context`` tokens.

        Each token stands for at most :attr:`token_bytes` bytes of the normalised text, and
        holds at least one: a text within the bound tokenises into at most that many tokens
        (s45 att45f: a content part's list written as its ``repr``, control characters a
        tool's JSON escapes and characters NFC splits apart, counted before templating, took
        2.8-6.4 s of the shared thread; refused here before the tokenizer runs).
        """
        if self._normalizer is not None:
            text = self._normalizer.normalize_str(text)
        return len(text.encode("utf-8", "surrogatepass")) <= context * self.token_bytes

    def may_fit(self, messages: Sequence[Mapping[str, Any]], tools: Any, context: int) -> bool:
        """Whether ``messages`` and ``tools`` hold little enough text for ``context`` tokens.

        A cheap upper bound, checked before the template and the tokenizer run (s45 att45b: a
        4 MB chat call took 7 s of the one template thread shared by every client; 3.9 MB
        of a tool's description 18 s, att45d): each
        token stands for at most :attr:`token_chars` characters, and a tokenizer's Unicode
        normalisation (NFC) merges at most :data:`NORMALIZED_CHARS` characters into one.
        """
        if not self.token_chars:
            return True
        limit = context * self.token_chars * NORMALIZED_CHARS
        return _text_chars(messages) + _text_chars(tools) <= limit

    def prompt(
        self,
        state: ChatState | None,
        messages: Sequence[Mapping[str, Any]],
        tools: Any,
        context: int | None = None,
    ) -> list[int]:
        """The prompt ids of a call: appended to ``state`` when the history matches it.

        Raises:
            PromptTooLong: A text to tokenise could not fit ``context`` tokens (checked
                before it is tokenised).
        """
        self._threads.context = context
        try:
            return self._prompt(self._thread_chat(), state, messages, tools)
        finally:
            self._threads.context = None

    def _prompt(
        self,
        chat: Any,
        state: ChatState | None,
        messages: Sequence[Mapping[str, Any]],
        tools: Any,
    ) -> list[int]:
        key = tools_key(tools)
        plain = [plain_message(m) for m in messages]
        if state is not None and state.tools_key == key and len(plain) > len(state.messages):
            head = plain[: len(state.messages)]
            if [_norm(m) for m in head] == [_norm(m) for m in state.messages]:
                new = plain[len(state.messages) :]
                return chat.append(state.prompt_ids, state.completion_ids, new, tools)
        return chat.initial_prompt(plain, tools)

    def upstream(self, body: Mapping[str, Any], prompt_ids: list[int]) -> dict[str, Any]:
        """The ``/completions`` request for a chat request with these prompt ids."""
        out = {k: body[k] for k in _SAMPLING if k in body and body[k] is not None}
        if "max_tokens" not in out and body.get("max_completion_tokens") is not None:
            out["max_tokens"] = body["max_completion_tokens"]
        out["prompt"] = prompt_ids
        stops = set(body.get("stop_token_ids") or [])
        # The template's end of turn ends the reply, as the chat endpoint's EOS would.
        out["stop_token_ids"] = sorted(stops | set(self.chat.end_of_turn_ids))
        out["return_token_ids"] = True
        out["logprobs"] = 0
        out["skip_special_tokens"] = True
        return out

    def token_text(self, token_id: int) -> str:
        """The text of one token (for chat-format logprobs)."""
        return str(self.tokenizer.decode([token_id]))


def parse_tool_calls(text: str) -> tuple[str | None, list[dict[str, Any]]]:
    """Split hermes ``<tool_call>{json}</tool_call>`` blocks out of a reply."""
    calls = []
    # Linear in the reply (a reply of many unclosed tags made the regex quadratic).
    found = tag_matches(text, "tool_call")
    for k, (_, block) in enumerate(found):
        try:
            payload = json.loads(block.strip())
        except (ValueError, RecursionError):  # a reply's JSON: any text, any depth
            continue
        if not isinstance(payload, dict) or "name" not in payload:
            continue
        calls.append(
            {
                "id": f"call_{k}",
                "type": "function",
                "function": {
                    "name": str(payload["name"]),
                    "arguments": json.dumps(payload.get("arguments", {})),
                },
            }
        )
    if not calls:
        return text, []
    pieces, pos = [], 0
    for start, block in found:
        pieces.append(text[pos:start])
        pos = start + len("<tool_call></tool_call>") + len(block)
    rest = "".join([*pieces, text[pos:]]).strip()
    return rest or None, calls


def chat_logprobs(templater: ChatTemplater, ids: Sequence[int], logprobs: Sequence[float]) -> Any:
    """Chat-format ``logprobs`` of the sampled tokens."""
    return {
        "content": [
            {"token": templater.token_text(t), "logprob": lp, "bytes": None, "top_logprobs": []}
            for t, lp in zip(ids, logprobs, strict=False)
        ]
    }


def chat_reply(
    data: Mapping[str, Any],
    message: dict[str, Any],
    finish_reason: str,
    logprobs: Any,
    ids: tuple[list[int], list[int]] | None,
) -> dict[str, Any]:
    """A ``chat.completion`` object from a ``/completions`` reply."""
    choice: dict[str, Any] = {
        "index": 0,
        "message": message,
        "logprobs": logprobs,
        "finish_reason": finish_reason,
    }
    out: dict[str, Any] = {
        "id": "chat" + str(data.get("id", "cmpl")),
        "object": "chat.completion",
        "created": data.get("created", int(time.time())),
        "model": data.get("model"),
        "choices": [choice],
        "usage": data.get("usage"),
    }
    if ids is not None:
        out["prompt_token_ids"], choice["token_ids"] = ids
    return out


def chat_chunk(
    data: Mapping[str, Any], delta: dict[str, Any], finish_reason: str | None, logprobs: Any
) -> dict[str, Any]:
    """A ``chat.completion.chunk`` object from a streamed ``/completions`` chunk."""
    return {
        "id": "chat" + str(data.get("id", "cmpl")),
        "object": "chat.completion.chunk",
        "created": data.get("created", int(time.time())),
        "model": data.get("model"),
        "choices": [
            {"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}
        ],
    }
