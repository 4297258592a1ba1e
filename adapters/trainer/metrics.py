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


def plot_learning_curve(
    metrics_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    *,
    title: str = "",
    random_success: float | None = None,
) -> Path:
    """Plot success and reward per iteration against wall-clock time (needs ``matplotlib``).

    Args:
        metrics_path: A ``metrics.jsonl`` written by the trainer.
        out_path: The PNG to write.
        title: Figure title.
        random_success: Draw the random policy's success rate as a reference line.

    Returns:
        ``out_path``.
    """
    from rllm_envs.error import require

    require("matplotlib", "plot", feature="plotting learning curves")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = read_metrics(metrics_path)
    minutes = [r["time_s"] / 60 for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4))
    ax1.plot(minutes, [r.get("rollout/success", 0.0) for r in rows], label="success (sampled)")
    ax1.plot(
        minutes,
        [r.get("rollout/invalid_action_rate", 0.0) for r in rows],
        label="invalid-action rate",
        alpha=0.7,
    )
    if random_success is not None:
        ax1.axhline(random_success, color="grey", ls="--", label=f"random ({random_success:.1%})")
    ax1.axhline(0.9, color="green", ls=":", label="90%")
    ax1.set_xlabel("wall-clock minutes (setup included)")
    ax1.set_ylim(-0.02, 1.02)
    ax1.legend(loc="best", fontsize=8)
    ax1.grid(alpha=0.3)
    ax2.plot([r["iteration"] for r in rows], [r.get("rollout/reward", 0.0) for r in rows])
    ax2.set_xlabel("iteration (64 episodes each)")
    ax2.set_ylabel("mean episode reward")
    ax2.grid(alpha=0.3)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
