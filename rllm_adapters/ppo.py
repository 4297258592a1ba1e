"""PPO / GRPO / RLOO on DeepSpeed: the public entry point (see :mod:`rllm_adapters.trainer`).

::

    from rllm_adapters.ppo import PPOTrainer, load_config

    config = load_config("configs/frozenlake_ppo.yaml")
    with PPOTrainer(config) as trainer:
        trainer.train()
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# The trainer package's lazy `PPOTrainer` (torch and DeepSpeed load on first use, a missing
# extra names its install command): one implementation, re-exported.
from rllm_adapters.trainer import __getattr__ as __getattr__
from rllm_adapters.trainer.config import TrainerConfig, config_from_dict, load_config

if TYPE_CHECKING:
    from rllm_adapters.trainer.trainer import PPOTrainer

__all__ = ["PPOTrainer", "TrainerConfig", "config_from_dict", "load_config"]
