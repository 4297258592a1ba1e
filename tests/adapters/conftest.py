"""Shared fixtures: the tiny model (built once) and a transformers policy on it."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_path():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from rllm_adapters.tiny_model import tiny_model_path

    return tiny_model_path()


@pytest.fixture(scope="session")
def hf_policy(tiny_path):
    from rllm_adapters.backends.transformers import TransformersPolicy

    policy = TransformersPolicy(tiny_path)
    yield policy
    policy.close()
