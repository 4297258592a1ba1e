"""Any OpenAI-compatible HTTP server as a policy (vLLM's server, SGLang, hosted providers).

Two APIs:

* ``api="completions"``: the prompt is sent as **token ids** (a list of ints as ``prompt``)
  and the reply's ids and the prompt ids the server saw come back with ``return_token_ids``,
  a vLLM-only request field. With vLLM's server and a local ``tokenizer`` the rollout is
  token-exact, as with the in-process backends. Other servers (SGLang, hosted providers)
  return text only: its ids are re-tokenised locally, marked in
  ``Generation.extra["ids_from_text"]``, and the rollout records those trajectories as
  ``token_source="retokenized"``, ``token_exact=False``.
* ``api="chat"``: messages (and ``tools``) go to ``/chat/completions`` and the server applies
  its chat template. Ids/logprobs are kept when the server returns them, but the history is
  re-templated by the server each turn, so these trajectories are not token-exact.
  Structured ``tool_calls`` in the reply are turned into ``<tool_call>{...}</tool_call>`` text,
  the format the tool envs parse.

Requests share one ``httpx.AsyncClient`` with a concurrency limit, a timeout, and retries with
exponential backoff on connection errors, 408/409/429 and 5xx responses.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

from rllm_adapters.backends.base import Generation, Policy, SamplingParams
from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import require

__all__ = ["OpenAIPolicy", "OpenAIServerError"]

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


class OpenAIServerError(RuntimeError):
    """The server refused a request (after retries where retrying made sense)."""


class OpenAIPolicy(Policy):
    """A policy served over the OpenAI HTTP API.

    Args:
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        model: The served model name.
        api: ``"completions"`` or ``"chat"``.
        tokenizer: A tokenizer (or a folder/hub id to load one) for token-exact completions.
        api_key: Bearer token (default ``$OPENAI_API_KEY``, or none).
        max_concurrency: Most requests in flight.
        timeout: Seconds per request.
        max_retries: Retries after the first attempt.
        backoff: First retry delay in seconds (doubles each retry, with jitter).
        max_model_len: Context limit, if known.
        extra_body: Extra JSON fields for every request (e.g. ``{"top_k": 20}``).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api: str = "completions",
        tokenizer: Any = None,
        api_key: str | None = None,
        max_concurrency: int = 64,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_model_len: int | None = None,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if api not in ("completions", "chat"):
            raise AdapterConfigError(f"Expects `api` in ('completions', 'chat'), actual: {api!r}.")
        self._httpx = require("httpx", "openai", feature="the OpenAI-compatible backend")
        if isinstance(tokenizer, (str, os.PathLike)):
            transformers = require("transformers", "train", feature="a local tokenizer")
            tokenizer = transformers.AutoTokenizer.from_pretrained(str(tokenizer))
        if api == "completions" and tokenizer is None:
            raise AdapterConfigError(
                "api='completions' needs `tokenizer=` (a tokenizer or its folder) to build "
                "token-exact prompts; use api='chat' to let the server template the chat."
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api = api
        self.tokenizer = tokenizer if api == "completions" else None
        self._chat_tokenizer = tokenizer
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_model_len = max_model_len
        self.extra_body = dict(extra_body or {})
        self.name = f"openai:{self.base_url}:{model}"
        # Clients and semaphores belong to one event loop; rollouts may use several loops.
        self._clients: dict[int, tuple[Any, Any, asyncio.Semaphore]] = {}

    def _client(self) -> tuple[Any, asyncio.Semaphore]:
        loop = asyncio.get_running_loop()
        entry = self._clients.get(id(loop))
        if entry is None or entry[0] is not loop or entry[1].is_closed:
            headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
            client = self._httpx.AsyncClient(
                base_url=self.base_url,
                headers=headers,
                timeout=self._httpx.Timeout(self.timeout),
                limits=self._httpx.Limits(max_connections=self.max_concurrency),
            )
            entry = (loop, client, asyncio.Semaphore(self.max_concurrency))
            self._clients[id(loop)] = entry
        return entry[1], entry[2]

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        client, semaphore = self._client()
        httpx = self._httpx
        delay = self.backoff
        last: BaseException | None = None
        for attempt in range(self.max_retries + 1):
            async with semaphore:
                try:
                    response = await client.post(path, json=body)
                except (httpx.TransportError, httpx.TimeoutException) as e:
                    last = e
                else:
                    if response.status_code < 400:
                        return dict(response.json())
                    last = OpenAIServerError(
                        f"{path} returned HTTP {response.status_code}: {response.text[:500]}"
                    )
                    if response.status_code not in _RETRY_STATUS:
                        raise last
            if attempt < self.max_retries:
                await asyncio.sleep(delay * (1 + random.random() * 0.25))
                delay *= 2
        raise OpenAIServerError(
            f"{path} failed after {self.max_retries + 1} attempts: {last}"
        ) from last

    def _body(self, params: SamplingParams) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "return_token_ids": True,
        }
        if params.top_k > 0:
            body["top_k"] = params.top_k
        if params.stop:
            body["stop"] = list(params.stop)
        if params.stop_token_ids:
            body["stop_token_ids"] = list(params.stop_token_ids)
        if params.seed is not None:
            body["seed"] = params.seed
        body.update(self.extra_body)
        return body

    async def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        """Complete token ids with ``/completions``."""
        body = self._body(params)
        body["prompt"] = list(prompt_ids)
        if params.logprobs:
            body["logprobs"] = 0
        data = await self._post("/completions", body)
        choice = data["choices"][0]
        text = str(choice.get("text") or "")
        ids = choice.get("token_ids")
        extra: dict[str, Any] = {}
        if ids is None and self.tokenizer is not None:
            ids = list(self.tokenizer.encode(text, add_special_tokens=False))
            extra["ids_from_text"] = True
        logprobs = None
        lp = choice.get("logprobs") or {}
        if lp.get("token_logprobs") is not None:
            logprobs = [float(x) if x is not None else 0.0 for x in lp["token_logprobs"]]
        # The prompt the server reports having seen (vLLM with return_token_ids), or None.
        seen = choice.get("prompt_token_ids")
        return Generation(
            text=text,
            completion_ids=None if ids is None else [int(i) for i in ids],
            logprobs=logprobs,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_ids=None if seen is None else [int(i) for i in seen],
            stop_reason=choice.get("stop_reason"),
            extra=extra,
        )

    async def chat(
        self,
        messages: Sequence[Mapping[str, Any]],
        params: SamplingParams,
        tools: Sequence[Mapping[str, Any]] | None = None,
    ) -> Generation:
        """Complete a chat with ``/chat/completions`` (the server templates it)."""
        body = self._body(params)
        body["messages"] = [dict(m) for m in messages]
        if tools:
            body["tools"] = [dict(t) for t in tools]
        if params.logprobs:
            body["logprobs"] = True
        data = await self._post("/chat/completions", body)
        choice = data["choices"][0]
        message = choice.get("message") or {}
        text = str(message.get("content") or "")
        calls = message.get("tool_calls") or []
        for call in calls:
            function = call.get("function") or {}
            try:
                arguments = json.loads(function.get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = function.get("arguments")
            payload = json.dumps({"name": function.get("name"), "arguments": arguments})
            text += f"\n<tool_call>{payload}</tool_call>"
        logprobs = None
        content = (choice.get("logprobs") or {}).get("content")
        if content:
            logprobs = [float(entry.get("logprob", 0.0)) for entry in content]
        ids = choice.get("token_ids")
        prompt_ids = data.get("prompt_token_ids") or choice.get("prompt_token_ids")
        return Generation(
            text=text,
            completion_ids=None if ids is None else [int(i) for i in ids],
            logprobs=logprobs,
            finish_reason=str(choice.get("finish_reason") or "stop"),
            prompt_ids=None if prompt_ids is None else [int(i) for i in prompt_ids],
            stop_reason=choice.get("stop_reason"),
            extra={"tool_calls": calls} if calls else {},
        )

    async def aclose(self) -> None:
        """Close the HTTP client of the running loop."""
        entry = self._clients.pop(id(asyncio.get_running_loop()), None)
        if entry is not None:
            await entry[1].aclose()

    def close(self) -> None:
        """Forget clients (their loops are closed with ``asyncio.run``)."""
        self._clients.clear()
