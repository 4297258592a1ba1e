"""PPO / GRPO / RLOO on DeepSpeed: the public entry point (see :mod:`adapters.trainer`).

::

    from adapters.ppo import PPOTrainer, load_config

    config = load_config("configs/frozenlake_ppo.yaml")
    with PPOTrainer(config) as trainer:
        trainer.train()
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from adapters.trainer.config import TrainerConfig, config_from_dict, load_config

if TYPE_CHECKING:
    from adapters.trainer.trainer import PPOTrainer

__all__ = ["PPOTrainer", "TrainerConfig", "config_from_dict", "load_config"]


def __getattr__(name: str) -> Any:
    if name == "PPOTrainer":
        from rllm_envs.error import require

        # A missing extra names the install command instead of a bare ModuleNotFoundError.
        require("torch", "train", feature="the PPO trainer")
        require("deepspeed", "train", feature="the PPO trainer")
        from adapters.trainer.trainer import PPOTrainer

        return PPOTrainer
    raise AttributeError(name)
