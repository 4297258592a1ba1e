"""Models by name (rllm_adapters.models): resolution, the cache (atomic, locked, built once), the
error naming the extra, and the real SmolLM2 conversion (tool-capable template, dense weights)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from rllm_adapters import models
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.models import GGUFModel, model_names, model_path, resolve_model
from rllm_envs.error import DependencyNotInstalled

SMOL = "smollm2-135m-instruct"


def test_names_and_passthrough(tmp_path):
    assert model_names()[:2] == ["tiny", SMOL]
    assert resolve_model("org/some-model") == "org/some-model"
    assert resolve_model(tmp_path) == str(tmp_path)
    with pytest.raises(AdapterConfigError, match="Did you mean"):
        model_path("smollm2-135m-instuct", cache_dir=tmp_path)


def test_missing_wheel_names_the_extra(tmp_path, monkeypatch):
    missing = GGUFModel(
        name="ghost", distribution="ghost-wheel", package="no_such_pkg_4c1", filename="x.gguf"
    )
    monkeypatch.setitem(models.MODELS, "ghost", missing)
    with pytest.raises(DependencyNotInstalled, match=r'pip install "rllm-envs\[models\]"'):
        model_path("ghost", cache_dir=tmp_path)
    assert not list(tmp_path.iterdir())


def test_missing_gguf_names_the_extra(tmp_path, monkeypatch):
    source = _fake_source(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, "gguf", None)  # `import gguf` raises ImportError
    with pytest.raises(DependencyNotInstalled, match=r'`gguf`.*pip install "rllm-envs\[models\]"'):
        model_path(source.name, cache_dir=tmp_path / "cache")


def _fake_source(tmp_path: Path, monkeypatch) -> GGUFModel:
    pkg = tmp_path / "pkgs" / "fake_gguf_pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise RuntimeError('the wheel module is never imported')\n")
    (pkg / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.syspath_prepend(str(tmp_path / "pkgs"))
    source = GGUFModel(
        name="fake", distribution="fake-dist", package="fake_gguf_pkg", filename="m.gguf"
    )
    monkeypatch.setitem(models.MODELS, "fake", source)
    return source


def test_cache_builds_once_atomically_under_concurrency(tmp_path, monkeypatch):
    _fake_source(tmp_path, monkeypatch)
    monkeypatch.setattr(models, "_require_gguf", lambda source: None)
    calls = []
    entered = threading.Event()

    def fake_build(source, path, *, gguf_file):
        calls.append(Path(path))
        entered.set()
        assert Path(gguf_file).read_bytes() == b"GGUF"
        (Path(path) / "config.json").write_text(json.dumps({"model_type": "llama"}))
        return Path(path)

    monkeypatch.setattr(models, "build_gguf_model", fake_build)
    cache = tmp_path / "cache"
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(model_path("fake", cache_dir=cache)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(set(results)) == 1
    final = results[0]
    assert final.parent == cache and (final / "config.json").is_file()
    assert calls[0] != final  # built elsewhere, renamed into place
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".fake.lock")) == [
        final.name
    ]
    monkeypatch.setenv("RLLM_MODEL_CACHE", str(cache))
    assert resolve_model("fake") == str(final)  # cached: no second build
    assert len(calls) == 1


def test_failed_build_leaves_nothing_behind(tmp_path, monkeypatch):
    _fake_source(tmp_path, monkeypatch)
    monkeypatch.setattr(models, "_require_gguf", lambda source: None)

    def broken(source, path, *, gguf_file):
        (Path(path) / "config.json").write_text("{}")
        raise RuntimeError("disk full")

    monkeypatch.setattr(models, "build_gguf_model", broken)
    cache = tmp_path / "cache"
    with pytest.raises(RuntimeError, match="disk full"):
        model_path("fake", cache_dir=cache)
    assert [p.name for p in cache.iterdir()] == [".fake.lock"]


def test_make_policy_and_trainer_config_accept_the_name(monkeypatch, tmp_path):
    from rllm_adapters import backends

    monkeypatch.setattr(models, "model_path", lambda name, cache_dir=None: tmp_path / name)
    assert backends.resolve_model(SMOL) == str(tmp_path / SMOL)
    from rllm_adapters.trainer.config import TrainerConfig

    assert TrainerConfig(model=SMOL).model == SMOL


# --------------------------------------------------------------------------- the real model


@pytest.fixture(scope="module")
def smol():
    pytest.importorskip("transformers")
    try:
        return Path(resolve_model(SMOL))
    except DependencyNotInstalled as e:
        pytest.skip(str(e))


def test_converted_folder_is_dense_tied_and_float32(smol):
    config = json.loads((smol / "config.json").read_text())
    assert "quantization_config" not in config
    assert config["model_type"] == "llama" and config["tie_word_embeddings"] is True
    assert config["dtype"] == "float32"
    generation = json.loads((smol / "generation_config.json").read_text())
    assert set(generation["eos_token_id"]) == {0, 2}  # <|endoftext|>, <|im_end|>
    assert (smol / ".complete").is_file()


def test_template_renders_and_parses_tool_calls(smol):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smol)
    assert tok.padding_side == "left" and tok.pad_token == "<|endoftext|>"
    assert tok("hi").input_ids == tok.encode("hi", add_special_tokens=False)  # no BOS added
    tools = [{"type": "function", "function": {"name": "add", "parameters": {"type": "object"}}}]
    call = {"type": "function", "function": {"name": "add", "arguments": {"a": 1}}}
    text = tok.apply_chat_template(
        [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": "2"},
        ],
        tools=tools,
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert '<tools>\n{"type": "function", "function": {"name": "add"' in text
    assert '<|im_start|>assistant\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n' in text
    assert "<|im_start|>user\n<tool_response>\n2\n</tool_response><|im_end|>\n" in text
    assert text.endswith("<|im_start|>assistant\n")
    parsed = tok.parse_response(
        'Let me add.\n<tool_call>\n{"name": "add", "arguments": {"a": 1}}\n</tool_call><|im_end|>',
        prefix="<|im_start|>assistant\n",
    )
    assert parsed["content"] == "Let me add."
    assert parsed["tool_calls"] == [call]
    trl_utils = pytest.importorskip("trl.chat_template_utils")
    assert trl_utils.supports_tool_calling(tok)
    assert trl_utils.is_chat_template_prefix_preserving(tok)
