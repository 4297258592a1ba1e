"""Metrics sinks: JSONL (always), TensorBoard and Weights & Biases when installed."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["MetricsLogger", "read_metrics"]


class MetricsLogger:
    """Write one JSON object per iteration to ``<output_dir>/metrics.jsonl`` (appending).

    Args:
        output_dir: Run folder.
        tensorboard: ``True``, ``False`` or ``"auto"`` (on when ``tensorboard`` is importable).
        wandb: Log to W&B too (``wandb`` must be installed).
        wandb_project: W&B project.
        run_name: Run name.
        config: The run's config (stored by W&B).
    """

    def __init__(
        self,
        output_dir: str | os.PathLike[str],
        *,
        tensorboard: bool | str = "auto",
        wandb: bool = False,
        wandb_project: str = "rllm-envs",
        run_name: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.dir = Path(output_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "metrics.jsonl"
        self._file = self.path.open("a", encoding="utf-8")
        self._tb: Any = None
        self._wandb: Any = None
        name = run_name or self.dir.name
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                if tensorboard is True:
                    from rllm_envs.error import DependencyNotInstalled

                    raise DependencyNotInstalled(
                        "logging.tensorboard=true needs tensorboard: run `pip install tensorboard`."
                    ) from None
            else:
                self._tb = SummaryWriter(log_dir=str(self.dir / "tensorboard"))
        if wandb:
            from rllm_envs.error import require

            wandb_mod = require("wandb", "wandb", feature="W&B logging")
            self._wandb = wandb_mod.init(project=wandb_project, name=name, config=config or {})

    def log(self, metrics: dict[str, Any], step: int) -> None:
        """Record the metrics of iteration ``step``."""
        clean = {k: _clean(v) for k, v in metrics.items()}
        self._file.write(json.dumps({"iteration": step, **clean}) + "\n")
        self._file.flush()
        numeric = {k: v for k, v in clean.items() if isinstance(v, (int, float))}
        if self._tb is not None:
            for key, value in numeric.items():
                self._tb.add_scalar(key, value, step)
            self._tb.flush()
        if self._wandb is not None:
            self._wandb.log(numeric, step=step)

    def close(self) -> None:
        """Flush and close every sink."""
        self._file.close()
        if self._tb is not None:
            self._tb.close()
        if self._wandb is not None:
            self._wandb.finish()


def _clean(value: Any) -> Any:
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a ``metrics.jsonl``."""
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]
