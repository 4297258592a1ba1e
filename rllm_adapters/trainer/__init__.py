"""PPO / GRPO / RLOO trainer for language-model policies on DeepSpeed, with vLLM weight sync.

* :mod:`rllm_adapters.trainer.config` -- :class:`TrainerConfig` (validated dataclasses, YAML).
* :mod:`rllm_adapters.trainer.algorithms` -- GAE, group advantages, clipped losses, KL control.
* :mod:`rllm_adapters.trainer.batch` -- token-exact trajectories to padded tensors.
* :mod:`rllm_adapters.trainer.models` -- the actor's token scorer and the critic's value head.
* :mod:`rllm_adapters.trainer.trainer` -- :class:`PPOTrainer`, the loop.

Command line: ``python -m rllm_adapters.train --config configs/frozenlake_ppo.yaml``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rllm_adapters.trainer.config import (
    AlgorithmConfig,
    DeepSpeedConfig,
    LoggingConfig,
    OptimConfig,
    RolloutSettings,
    TrainConfig,
    TrainerConfig,
    config_from_dict,
    load_config,
)

if TYPE_CHECKING:
    from rllm_adapters.trainer.trainer import PPOTrainer

__all__ = [
    "AlgorithmConfig",
    "DeepSpeedConfig",
    "LoggingConfig",
    "OptimConfig",
    "PPOTrainer",
    "RolloutSettings",
    "TrainConfig",
    "TrainerConfig",
    "config_from_dict",
    "load_config",
]


def __getattr__(name: str) -> Any:
    # torch/deepspeed load only when the trainer itself is used.
    if name == "PPOTrainer":
        from rllm_envs.error import require

        # A missing extra names the install command instead of a bare ModuleNotFoundError.
        require("torch", "train", feature="the PPO trainer")
        require("deepspeed", "train", feature="the PPO trainer")
        from rllm_adapters.trainer.trainer import PPOTrainer

        return PPOTrainer
    raise AttributeError(name)
