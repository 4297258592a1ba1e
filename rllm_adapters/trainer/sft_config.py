"""Configuration of the SFT trainer: dataclasses validated in ``__post_init__``, loadable from YAML.

A variant of the RL config (:class:`rllm_adapters.trainer.config.RunConfig`, ``kind: sft``): the
``model``, ``optim``, ``deepspeed`` and ``logging`` sections, the ``train`` section's common
keys, the validation and the YAML loader are the RL trainer's own. A config file::

    kind: sft                         # or just have an `sft:` section
    model: tiny                       # a local HF folder, a hub id or a model name (as in RL)
    data:
      store: runs/distill/episodes.db # an rllm_agents.store EpisodeStore ...
      run: teacher                    # ... queried by run/env/model/task
      files: []                       # and/or trajectory .jsonl/.parquet files
      correct: true                   # rejection sampling: keep solved episodes only
      min_reward: 1.0                 # ... with at least this total reward
      max_tokens: 1024                # ... and at most this many tokens (else dropped)
    sft: {epochs: 3, packing: true, max_length: 2048, micro_batch_size: 4}
    optim: {lr: 1.0e-3}
    deepspeed: {zero_stage: 0}
    train: {output_dir: runs/sft, save_every: 50}

``python -m rllm_adapters.train --config that.yaml`` runs it (:func:`is_sft_config` decides).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.trainer.config import (
    OutputConfig,
    RunConfig,
    _check,
    read_config_mapping,
    run_config_from_dict,
)

__all__ = [
    "SFTConfig",
    "SFTDataConfig",
    "SFTSettings",
    "SFTTrainConfig",
    "is_sft_config",
    "load_sft_config",
    "read_config_mapping",
    "sft_config_from_dict",
]


@dataclass
class SFTDataConfig:
    """Where the episodes come from and which are kept (rejection sampling).

    Every filter is applied to each episode; the count each one rejected is logged
    (``data/rejected_*``).

    Attributes:
        store: An :class:`rllm_agents.store.EpisodeStore` file (``None``: none).
        run: Store filter: exact run name.
        env: Store filter: exact env id.
        model: Store filter: exact model name.
        task: Store filter: exact task id.
        files: Trajectory files, ``.jsonl`` (``Trajectory.to_json()`` per line) or
            ``.parquet``, as the rollout CLI and :mod:`rllm_agents.writers` write them.
        correct: Keep only episodes whose ``is_correct`` equals this (``None``: any).
        min_reward: Keep only episodes with at least this total reward (``None``: any).
        max_tokens: Drop episodes longer than this many tokens (``None``: ``sft.max_length``;
            an episode longer than a packed row can never be trained on whole).
        min_completion_tokens: Drop episodes with fewer generated tokens (at least 1).
        max_completion_tokens: Drop episodes with more generated tokens (``None``: any).
        max_episodes: Use at most this many episodes (after filtering; ``None``: all).
        token_exact_only: Drop episodes whose ids are not what a model saw and sampled
            (``token_exact`` false) unless ``retokenize`` rebuilds them.
        retokenize: Rebuild each episode's ids from its messages with the student's
            tokenizer and chat template (a teacher with another tokenizer, or a chat API):
            the assistant turns, each closed with the end-of-turn token, are the completions.
        dedup: Train on each distinct token sequence once.
    """

    store: str | None = None
    run: str | None = None
    env: str | None = None
    model: str | None = None
    task: str | None = None
    files: list[str] = field(default_factory=list)
    correct: bool | None = None
    min_reward: float | None = None
    max_tokens: int | None = None
    min_completion_tokens: int = 1
    max_completion_tokens: int | None = None
    max_episodes: int | None = None
    token_exact_only: bool = True
    retokenize: bool = False
    dedup: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.files, str):
            self.files = [self.files]
        _check(
            isinstance(self.files, list) and all(isinstance(p, str) for p in self.files),
            f"Expects `data.files` to be a list of file paths, actual: {self.files!r}.",
        )
        _check(
            self.correct is None or isinstance(self.correct, bool),
            f"Expects `data.correct` to be true, false or null, actual: {self.correct!r}.",
        )
        for name in ("max_tokens", "max_completion_tokens", "max_episodes"):
            value = getattr(self, name)
            _check(
                value is None or (isinstance(value, int) and value >= 1),
                f"Expects `data.{name}` to be an int >= 1 or null, actual: {value!r}.",
            )
        _check(
            isinstance(self.min_completion_tokens, int) and self.min_completion_tokens >= 1,
            "Expects `data.min_completion_tokens` to be an int >= 1 (an episode with no "
            f"generated token has nothing to learn), actual: {self.min_completion_tokens!r}.",
        )

    @property
    def store_filters(self) -> dict[str, Any]:
        """The filters the store applies itself (``EpisodeStore.episodes(**filters)``)."""
        out: dict[str, Any] = {}
        for name in ("run", "env", "model", "task", "correct", "min_reward"):
            value = getattr(self, name)
            if value is not None:
                out[name] = float(value) if name == "min_reward" else value
        return out


@dataclass
class SFTSettings:
    """How the episodes become training rows and steps.

    Attributes:
        epochs: Passes over the kept episodes.
        max_steps: Stop after this many optimizer steps (``None``: ``epochs`` decide).
        micro_batch_size: Rows per forward/backward.
        gradient_accumulation_steps: Micro-batches per optimizer step.
        packing: Pack several episodes per row up to ``max_length`` tokens (first-fit
            decreasing). Position ids restart at 0 for every episode; transformers builds the
            attention mask from them (block-diagonal causal: no token attends across an
            episode boundary; on GPU flash-attention uses its variable-length kernels). Off:
            one episode per row, right-padded.
        max_length: Tokens per packed row (and the default ``data.max_tokens``).
        shuffle: Shuffle the rows every epoch (seeded by ``train.seed`` and the epoch).
    """

    epochs: int = 1
    max_steps: int | None = None
    micro_batch_size: int = 4
    gradient_accumulation_steps: int = 1
    packing: bool = True
    max_length: int = 2048
    shuffle: bool = True

    def __post_init__(self) -> None:
        for name in ("epochs", "micro_batch_size", "gradient_accumulation_steps", "max_length"):
            value = getattr(self, name)
            _check(
                isinstance(value, int) and value >= 1,
                f"Expects `sft.{name}` to be an int >= 1, actual: {value!r}.",
            )
        _check(
            self.max_steps is None or (isinstance(self.max_steps, int) and self.max_steps >= 1),
            f"Expects `sft.max_steps` to be an int >= 1 or null, actual: {self.max_steps!r}.",
        )

    @property
    def rows_per_step(self) -> int:
        """Rows per optimizer step (per process)."""
        return self.micro_batch_size * self.gradient_accumulation_steps


@dataclass
class SFTTrainConfig(OutputConfig):
    """Run output and checkpoints: the RL trainer's ``train`` keys without the RL ones.

    See :class:`~rllm_adapters.trainer.config.OutputConfig` (``save_every`` counts optimizer
    steps).
    """

    output_dir: str = "runs/sft"


@dataclass
class SFTConfig(RunConfig):
    """Everything an SFT run needs (see the module docstring for the YAML form).

    Attributes:
        kind: Always ``"sft"`` (lets ``python -m rllm_adapters.train`` tell the configs apart).
        data: Episodes and filters.
        sft: Rows, packing and steps.
        train: Output and checkpoints.

    ``model``, ``tiny_model``, ``optim``, ``deepspeed`` and ``logging`` are the RL trainer's
    (:class:`~rllm_adapters.trainer.config.RunConfig`; ``logging.samples_per_iteration`` is unused).
    """

    KIND: ClassVar[str] = "sft"
    LABEL: ClassVar[str] = "an SFT"

    kind: str = "sft"
    data: SFTDataConfig = field(default_factory=SFTDataConfig)
    sft: SFTSettings = field(default_factory=SFTSettings)
    train: SFTTrainConfig = field(default_factory=SFTTrainConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        _check(
            self.data.store is not None or bool(self.data.files),
            "Expects episodes to train on: set `data.store` (an episode store file) and/or "
            "`data.files` (trajectory .jsonl/.parquet files).",
        )

    @property
    def max_tokens(self) -> int:
        """The longest episode kept (``data.max_tokens`` or ``sft.max_length``)."""
        return self.data.max_tokens or self.sft.max_length

    def deepspeed_batch(self) -> tuple[int, int]:
        """Micro-batches of ``sft.micro_batch_size`` rows, ``gradient_accumulation_steps``."""
        return self.sft.micro_batch_size, self.sft.gradient_accumulation_steps


def is_sft_config(data: Mapping[str, Any]) -> bool:
    """Whether a config mapping describes an SFT run (``kind: sft`` or an ``sft:`` section)."""
    kind = data.get("kind")
    if kind is not None and kind not in ("sft", "rl"):
        raise AdapterConfigError(f"Expects `kind` to be 'sft' or 'rl', actual: {kind!r}.")
    return kind == "sft" or (kind is None and "sft" in data)


def sft_config_from_dict(data: Mapping[str, Any]) -> SFTConfig:
    """Build a validated :class:`SFTConfig` from nested dicts (unknown keys raise)."""
    return run_config_from_dict(SFTConfig, data)


def load_sft_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> SFTConfig:
    """Read an SFT YAML config and apply dotted overrides (as :func:`load_config` does)."""
    return sft_config_from_dict(read_config_mapping(path, overrides))
