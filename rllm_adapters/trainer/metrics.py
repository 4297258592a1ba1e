"""Metrics: sinks, what the trainer measures on its episodes, and ``samples.jsonl``.

Sinks: JSONL (always), TensorBoard and Weights & Biases when installed.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rllm_agents.trajectory import Trajectory

__all__ = [
    "SAMPLES_FILE",
    "MetricsLogger",
    "WeightedMeans",
    "episode_components",
    "read_metrics",
    "read_samples",
    "render_samples_markdown",
    "rollout_metrics",
    "write_samples",
]

#: The file (in the run folder) that a few episodes per iteration are appended to.
SAMPLES_FILE = "samples.jsonl"
#: Longest text kept per field of a ``samples.jsonl`` record.
_SAMPLE_CHARS = 4000


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


class WeightedMeans:
    """Running weighted means of an update's statistics (weights: action tokens)."""

    def __init__(self) -> None:
        self._sums: dict[str, float] = {}
        self._weights: dict[str, float] = {}

    def add(self, name: str, value: Any, weight: float) -> None:
        """Add ``value`` (a float or a one-element tensor) with ``weight``."""
        self._sums[name] = self._sums.get(name, 0.0) + float(value) * weight
        self._weights[name] = self._weights.get(name, 0.0) + weight

    def mean(self, name: str) -> float:
        """The weighted mean of ``name`` so far (0 when nothing was added)."""
        return self._sums.get(name, 0.0) / max(self._weights.get(name, 0.0), 1e-9)

    def result(self) -> dict[str, float]:
        """Every mean by name."""
        return {name: self.mean(name) for name in self._sums}


def episode_components(trajectory: Trajectory) -> dict[str, float]:
    """Reward components summed over the episode's steps."""
    totals: dict[str, float] = {}
    for step in trajectory.steps:
        for name, value in (step.info.get("reward_components") or {}).items():
            if isinstance(value, (int, float)):
                totals[name] = totals.get(name, 0.0) + float(value)
    return totals


def rollout_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """``rollout/*`` (success, reward, turns, tokens, finishes) and ``reward_components/*``."""
    if not trajectories:
        return {}
    n = len(trajectories)
    out: dict[str, float] = {
        "rollout/episodes": float(n),
        "rollout/reward": sum(t.total_reward for t in trajectories) / n,
        "rollout/success": sum(t.is_correct for t in trajectories) / n,
        "rollout/turns": sum(t.num_turns for t in trajectories) / n,
        "rollout/completion_tokens": sum(t.num_completion_tokens for t in trajectories) / n,
        "rollout/sequence_tokens": sum(len(t.token_ids()) for t in trajectories) / n,
    }
    steps = [s for t in trajectories for s in t.steps]
    if steps:
        out["rollout/invalid_action_rate"] = sum(
            bool(s.info.get("invalid_action")) for s in steps
        ) / len(steps)
        out["rollout/length_cut_rate"] = sum(s.finish_reason == "length" for s in steps) / len(
            steps
        )
        components: dict[str, list[float]] = {}
        for t in trajectories:
            for name, value in episode_components(t).items():
                components.setdefault(name, []).append(value)
        for name, values in components.items():
            out[f"reward_components/{name}"] = float(np.mean(values))
    finishes: dict[str, int] = {}
    for t in trajectories:
        finishes[t.finish] = finishes.get(t.finish, 0) + 1
    for name, count in finishes.items():
        out[f"rollout/finish_{name}"] = count / n
    return out


def _pick_samples(trajectories: Sequence[Trajectory], n: int) -> list[Trajectory]:
    """``n`` episodes spread over the groups: the first of each group, then the second..."""
    by_group: dict[int, list[Trajectory]] = {}
    for t in trajectories:
        by_group.setdefault(t.group, []).append(t)
    columns = list(by_group.values())
    picked: list[Trajectory] = []
    depth = 0
    while len(picked) < n and any(depth < len(c) for c in columns):
        picked.extend(c[depth] for c in columns if depth < len(c))
        depth += 1
    return picked[:n]


def _clip_text(text: str) -> str:
    if len(text) <= _SAMPLE_CHARS:
        return text
    return text[:_SAMPLE_CHARS] + f"... [{len(text) - _SAMPLE_CHARS} more characters]"


def _sample_record(t: Trajectory, iteration: int, advantage: float | None) -> dict[str, Any]:
    """One line of ``samples.jsonl``."""
    return {
        "iteration": iteration,
        "env_id": t.env_id,
        "task_id": t.task_id,
        "group": t.group,
        "sample": t.sample,
        "reward": t.total_reward,
        "reward_components": episode_components(t),
        "correct": t.is_correct,
        # None: not trained on (no reward spread in its group, or no tokens).
        "advantage": advantage,
        "finish": t.finish,
        "turns": t.num_turns,
        "completion_tokens": t.num_completion_tokens,
        "prompt": _clip_text(t.initial_observation),
        "steps": [
            {
                "response": _clip_text(s.response),
                "reward": s.reward,
                "observation": _clip_text(s.observation),
            }
            for s in t.steps
        ],
    }


def write_samples(
    output_dir: Path,
    trajectories: Sequence[Trajectory],
    n: int,
    iteration: int,
    advantages: dict[int, float],
) -> None:
    """Append ``n`` of the iteration's episodes to ``<output_dir>/samples.jsonl``.

    Args:
        output_dir: The run folder.
        trajectories: The iteration's episodes.
        n: How many to write (spread over the groups; 0 = none).
        iteration: The iteration's number (1-based).
        advantages: Mean advantage per action token by ``id(trajectory)`` (missing: not
            trained on).
    """
    if n <= 0 or not trajectories:
        return
    output_dir.mkdir(parents=True, exist_ok=True)
    with (output_dir / SAMPLES_FILE).open("a", encoding="utf-8") as f:
        for t in _pick_samples(trajectories, n):
            record = _sample_record(t, iteration, advantages.get(id(t)))
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


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


def read_samples(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a ``samples.jsonl`` (a few episodes per iteration, see the trainer)."""
    return read_metrics(path)


def render_samples_markdown(
    path: str | os.PathLike[str],
    *,
    iterations: int | None = None,
    max_chars: int = 800,
) -> str:
    """A readable Markdown view of a run's ``samples.jsonl``.

    Per iteration: a table with each sample's reward, its reward components side by side
    (e.g. format next to correctness) and its advantage, then the completions.

    Args:
        path: The ``samples.jsonl`` file.
        iterations: Only the last this many iterations (``None``: all).
        max_chars: Longest completion shown per step.

    Returns:
        The Markdown text.
    """
    records = read_samples(path)
    by_iteration: dict[int, list[dict[str, Any]]] = {}
    for record in records:
        by_iteration.setdefault(int(record["iteration"]), []).append(record)
    selected = sorted(by_iteration)
    if iterations is not None:
        selected = selected[-iterations:] if iterations > 0 else []
    lines = [f"# Samples: {Path(path).parent.name or Path(path).name}", ""]
    for it in selected:
        rows = by_iteration[it]
        names = sorted({name for r in rows for name in (r.get("reward_components") or {})})
        lines += [f"## Iteration {it}", ""]
        header = ["#", "task", "reward", *names, "is_correct", "advantage", "finish"]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        for i, r in enumerate(rows):
            components = r.get("reward_components") or {}
            advantage = r.get("advantage")
            cells = [
                str(i + 1),
                _cell(str(r.get("task_id"))),
                f"{float(r.get('reward', 0.0)):.3f}",
                *(f"{components[n]:.3f}" if n in components else "" for n in names),
                "yes" if r.get("correct") else "no",
                "skipped" if advantage is None else f"{advantage:+.3f}",
                _cell(str(r.get("finish", ""))),
            ]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        for i, r in enumerate(rows):
            lines.append(f"**{i + 1}.** `{r.get('task_id')}` (group {r.get('group')}):")
            lines.append("")
            for step in r.get("steps") or []:
                text = str(step.get("response", ""))
                if len(text) > max_chars:
                    text = text[:max_chars] + " [...]"
                lines += [_fence(text), ""]
    return "\n".join(lines).rstrip() + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    # A fence longer than any backtick run inside the text.
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{text}\n{fence}"


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
