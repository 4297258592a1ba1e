"""``transformers`` ``generate`` as a policy: the embedded CPU default for tests and demos.

Requests from concurrent episodes are collected by one worker thread into dynamic batches
(same sampling params, left-padded) so the event loop never blocks on the model. Logprobs are
those of the distribution sampled from: the log-softmax of the logits divided by the sampling
temperature (the raw log-softmax when decoding greedily), computed from ``generate``'s
``output_logits``. The vLLM backend returns the same quantity (its processed logprobs), and
the trainer scores with the same temperature.
"""

from __future__ import annotations

import asyncio
import os
import queue
import threading
from collections.abc import Sequence
from typing import Any

from rllm_adapters.backends.base import (
    Generation,
    Policy,
    SamplingParams,
    checkpoint_dtype,
    deliver,
)
from rllm_envs.error import require

__all__ = ["TransformersPolicy"]


def _first_stop(text: str, stops: Sequence[str]) -> int:
    positions = [text.find(s) for s in stops if s and s in text]
    return min(positions) if positions else -1


class TransformersPolicy(Policy):
    """A Hugging Face causal LM sampled with ``generate`` (CPU by default).

    Args:
        model: A local folder, a hub id, or a loaded ``PreTrainedModel``.
        tokenizer: The tokenizer (loaded from ``model`` when it is a path).
        device: Torch device.
        dtype: Torch dtype name for loading (default: the checkpoint's own, else float32).
        max_batch_size: Most requests generated together.
        batch_wait_s: How long the worker waits for another request before a batch starts
            (each arrival restarts the wait, up to ``max_batch_size`` requests).
        max_model_len: Context limit (default: the config's ``max_position_embeddings``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any = None,
        *,
        device: str = "cpu",
        dtype: str | None = None,
        max_batch_size: int = 64,
        batch_wait_s: float = 0.01,
        max_model_len: int | None = None,
    ) -> None:
        self._torch = torch = require("torch", "train", feature="the transformers backend")
        transformers = require("transformers", "train", feature="the transformers backend")
        if isinstance(model, (str, os.PathLike)):
            path = str(model)
            tokenizer = tokenizer or transformers.AutoTokenizer.from_pretrained(
                path, padding_side="left"
            )
            dtype = dtype or checkpoint_dtype(path) or "float32"
            model = transformers.AutoModelForCausalLM.from_pretrained(
                path, dtype=getattr(torch, dtype)
            )
            self.name = f"transformers:{path}"
        else:
            self.name = f"transformers:{type(model).__name__}"
        if tokenizer is None:
            from rllm_adapters.error import AdapterConfigError

            raise AdapterConfigError("Pass `tokenizer=` with a loaded model.")
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        eos: set[int] = set()
        for value in (gen_eos, tokenizer.eos_token_id):
            if isinstance(value, int):
                eos.add(value)
            elif value:
                eos.update(int(v) for v in value)
        self.eos_ids = frozenset(eos)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else min(eos))
        self.max_model_len = (
            max_model_len or int(getattr(model.config, "max_position_embeddings", 0) or 0) or None
        )
        self.max_batch_size = max_batch_size
        self.batch_wait_s = batch_wait_s
        self._queue: queue.Queue[Any] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ async API

    async def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        """Queue one request for the batching worker and await its completion."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Generation] = loop.create_future()
        self._ensure_worker()
        self._queue.put((list(prompt_ids), params, loop, future))
        return await future

    def _ensure_worker(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="rllm-transformers-policy", daemon=True
                )
                self._thread.start()

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            batch = [item]
            # Each arrival restarts the wait: a rollout's episodes reset one after another
            # (about a millisecond apart), and a batch started after a fixed pause split an
            # iteration's 64 requests into 2-3 generate calls, each as slow on a GPU as one.
            while len(batch) < self.max_batch_size:
                try:
                    more = self._queue.get(
                        timeout=self.batch_wait_s or None, block=bool(self.batch_wait_s)
                    )
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # stop after this batch
                    break
                batch.append(more)
            # Per-request seeds would split every batch; one batch uses its first seed.
            groups: dict[SamplingParams, list[Any]] = {}
            for request in batch:
                groups.setdefault(request[1].with_(seed=None), []).append(request)
            for key, requests in groups.items():
                params = key.with_(seed=requests[0][1].seed)
                try:
                    results: list[Any] = self.generate_batch([r[0] for r in requests], params)
                except Exception as e:  # delivered to every waiting episode
                    results = [e] * len(requests)
                for (_, _, loop, future), result in zip(requests, results, strict=True):
                    deliver(loop, future, result)

    # ------------------------------------------------------------------- sync API

    def generate_batch(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        """Generate for several prompts at once (synchronously)."""
        torch = self._torch
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            if prompt:
                input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt))
                attention[row, width - len(prompt) :] = 1
        stop_ids = sorted(self.eos_ids | set(params.stop_token_ids))
        kwargs: dict[str, Any] = {
            "max_new_tokens": params.max_tokens,
            "do_sample": params.temperature > 0,
            "eos_token_id": stop_ids,
            "pad_token_id": self.pad_id,
            "return_dict_in_generate": True,
            "output_logits": params.logprobs,
        }
        if params.temperature > 0:
            kwargs.update(
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k if params.top_k > 0 else None,
            )
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        if params.stop:
            kwargs.update(stop_strings=list(params.stop), tokenizer=self.tokenizer)
        with torch.inference_mode():
            if params.seed is not None:
                torch.manual_seed(params.seed)
            out = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention.to(self.device),
                **kwargs,
            )
            sequences = out.sequences[:, width:].cpu()
            logprobs = None
            if params.logprobs and out.logits:
                # The sampled distribution's logprobs: at temperature T, softmax(logits / T).
                scale = params.temperature if params.temperature > 0 else 1.0
                columns = [
                    torch.log_softmax(step.float() / scale, dim=-1)
                    .gather(-1, sequences[:, t : t + 1].to(step.device))
                    .cpu()
                    for t, step in enumerate(out.logits)
                ]
                logprobs = torch.cat(columns, dim=1)
        results = []
        stop_set = frozenset(stop_ids)
        for row in range(len(prompts)):
            ids = sequences[row].tolist()
            length, reason, stop_reason = self._cut(ids, stop_set, params)
            ids = ids[:length]
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            if params.stop:
                at = _first_stop(text, params.stop)
                if at >= 0:
                    text = text[:at]
            results.append(
                Generation(
                    text=text,
                    completion_ids=ids,
                    logprobs=None if logprobs is None else logprobs[row, :length].tolist(),
                    finish_reason=reason,
                    prompt_ids=list(prompts[row]),
                    stop_reason=stop_reason,
                )
            )
        return results

    def _cut(
        self, ids: list[int], stop_ids: frozenset[int], params: SamplingParams
    ) -> tuple[int, str, str | int | None]:
        """Length of the real completion in a padded row, the finish reason and stop reason."""
        eos_at = next((i for i, t in enumerate(ids) if t in stop_ids), None)
        limit = len(ids) if eos_at is None else eos_at + 1
        if params.stop:
            # generate pads rows that met a stop string; find the token that completed it.
            full = self.tokenizer.decode(ids[:limit], skip_special_tokens=False)
            if _first_stop(full, params.stop) >= 0:
                lo, hi = 1, limit
                while lo < hi:
                    mid = (lo + hi) // 2
                    text = self.tokenizer.decode(ids[:mid], skip_special_tokens=False)
                    if _first_stop(text, params.stop) >= 0:
                        hi = mid
                    else:
                        lo = mid + 1
                text = self.tokenizer.decode(ids[:lo], skip_special_tokens=False)
                which = min((s for s in params.stop if s in text), key=lambda s: text.find(s))
                return lo, "stop", which
        if eos_at is not None:
            return eos_at + 1, "stop", None
        return len(ids), "length", None

    def update_weights(self, weights: Any) -> None:
        """Load ``(name, tensor)`` pairs or a state dict into the model (strict names)."""
        state = dict(weights.items() if hasattr(weights, "items") else weights)
        missing = set(state) - set(self.model.state_dict())
        if missing:
            from rllm_adapters.error import AdapterConfigError

            raise AdapterConfigError(f"Unknown parameter names: {sorted(missing)[:5]}...")
        self.model.load_state_dict(state, strict=False)

    def close(self) -> None:
        """Stop the batching worker."""
        if self._thread is not None and self._thread.is_alive():
            self._queue.put(None)
            self._thread.join(timeout=30)
        self._thread = None
