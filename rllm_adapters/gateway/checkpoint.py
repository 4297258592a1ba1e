"""What to serve: a model name, a Hugging Face folder, or a run our trainer wrote.

:func:`resolve_served_model` accepts

* a model name (``"tiny"``, ``"smollm2-135m-instruct"``;
  :func:`rllm_adapters.models.resolve_model`),
* a Hugging Face folder (``config.json`` and weights),
* a trainer's ``output_dir``: its ``final_model`` when the run wrote one, otherwise its newest
  checkpoint,
* a checkpoint folder (``<output_dir>/checkpoint``, written by
  :class:`rllm_adapters.trainer.checkpoint.Checkpoints`).

A checkpoint holds DeepSpeed engine states, which no server loads: the actor's weights are
exported once to ``<output_dir>/served/<tag>`` as a Hugging Face folder (the base model and
tokenizer from the run's ``config.json``, the weights from the checkpoint, a LoRA run's adapters
merged in), and that is served.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from rllm_adapters.error import AdapterConfigError

__all__ = ["export_checkpoint", "resolve_served_model"]

_WEIGHT_FILES = ("*.safetensors", "pytorch_model*.bin")


def _is_hf_folder(folder: Path) -> bool:
    return (folder / "config.json").is_file() and any(
        any(folder.glob(pattern)) for pattern in _WEIGHT_FILES
    )


def resolve_served_model(model: str | os.PathLike[str]) -> tuple[str, str]:
    """``(folder, default served name)`` for a model name, folder, trainer run or checkpoint.

    Raises:
        AdapterConfigError: When ``model`` is none of those.
    """
    from rllm_adapters.models import model_names, resolve_model

    name = str(model)
    if name in model_names():
        return resolve_model(name), name
    path = Path(name).expanduser()
    if _is_hf_folder(path):
        return str(path), path.name
    if (path / "final_model").is_dir() and _is_hf_folder(path / "final_model"):
        return str(path / "final_model"), path.name
    from rllm_adapters.trainer.checkpoint import STATE_FILE

    if (path / "checkpoint" / STATE_FILE).is_file():
        return str(export_checkpoint(path / "checkpoint")), path.name
    if (path / STATE_FILE).is_file():
        return str(export_checkpoint(path)), path.parent.name
    raise AdapterConfigError(
        f"Cannot serve {name!r}: expects a model name ({model_names()}), a Hugging Face folder "
        "(config.json + weights), a trainer output_dir (with final_model/ or checkpoint/) or "
        "a checkpoint folder (with trainer_state.json)."
    )


def _base_model(run_config: dict[str, Any]) -> str:
    model = str(run_config.get("model", ""))
    if model == "tiny":
        from rllm_adapters.tiny_model import TinyModelSpec, tiny_model_path

        return str(tiny_model_path(TinyModelSpec(**(run_config.get("tiny_model") or {}))))
    from rllm_adapters.models import resolve_model

    return resolve_model(model)


def export_checkpoint(checkpoint: str | os.PathLike[str]) -> Path:
    """Write the actor of a trainer checkpoint as a Hugging Face folder (once); return it.

    The run's ``config.json`` (next to the checkpoint folder) names the base model; the
    weights are the actor's (module states under ZeRO 0-2, gathered fp32 partitions under
    ZeRO-3).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rllm_adapters.trainer.checkpoint import STATE_FILE

    folder = Path(checkpoint)
    state = json.loads((folder / STATE_FILE).read_text(encoding="utf-8"))
    tag = str(state["tag"])
    run_dir = folder.parent
    out = run_dir / "served" / tag
    if _is_hf_folder(out):
        return out
    config_file = run_dir / "config.json"
    if not config_file.is_file():
        raise AdapterConfigError(
            f"{config_file} is missing: the run's config names the base model of {folder}."
        )
    run_config = json.loads(config_file.read_text(encoding="utf-8"))
    base = _base_model(run_config)
    actor = folder / "actor" / tag
    files = sorted(actor.glob("mp_rank_*_model_states.pt"))
    if not files:
        raise AdapterConfigError(f"No actor model states in {actor}: not a trainer checkpoint.")
    module = torch.load(files[0], map_location="cpu", weights_only=False).get("module") or {}
    weights = {k[len("lm.") :]: v for k, v in module.items() if k.startswith("lm.")}
    lm = AutoModelForCausalLM.from_pretrained(base, torch_dtype=torch.float32)
    expected = set(lm.state_dict())
    if not weights or any(v.numel() == 0 for v in weights.values()):
        # ZeRO-3 keeps only partitions in the module states: gather the fp32 ones.
        from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

        full = get_fp32_state_dict_from_zero_checkpoint(str(folder / "actor"), tag=tag)
        weights = {k[len("lm.") :]: v for k, v in full.items() if k.startswith("lm.")}
    if any(".lora_" in k for k in weights):
        weights = _merged_lora(base, run_config, weights)
    missing = expected - set(weights)
    tied = {n for n in missing if n.endswith("lm_head.weight")}
    if missing - tied:
        raise AdapterConfigError(
            f"Checkpoint {actor} lacks weights of the base model {base}: "
            f"{sorted(missing - tied)[:5]}..."
        )
    lm.load_state_dict(weights, strict=False)
    tmp = out.with_name(out.name + ".tmp")
    lm.save_pretrained(tmp)
    AutoTokenizer.from_pretrained(base).save_pretrained(tmp)
    os.replace(tmp, out)
    return out


def _merged_lora(base: str, run_config: dict[str, Any], weights: dict[str, Any]) -> dict[str, Any]:
    """A LoRA run's actor states (PEFT names) as the base model's weights, adapters merged.

    The model is rebuilt as the trainer built it (the base, then the run's ``lora`` settings),
    the states loaded, and merged as the trainer merges what it pushes to engines.
    """
    from rllm_adapters.trainer.config import LoraSettings
    from rllm_adapters.trainer.models import apply_lora, load_causal_lm, merged_state_dict

    settings = LoraSettings(**(run_config.get("lora") or {}))
    if not settings.enabled:
        raise AdapterConfigError(
            "The checkpoint holds LoRA adapters but the run's config.json has no `lora` "
            "settings (lora.r > 0) to rebuild them with."
        )
    lm = apply_lora(load_causal_lm(base), settings)
    lm.load_state_dict(weights, strict=True)
    return merged_state_dict(lm)
