"""The run loop, checkpoint folder and clock that the RL and SFT trainers share.

:class:`TrainLoop` is the base of :class:`~rllm_adapters.trainer.trainer.PPOTrainer` and
:class:`~rllm_adapters.trainer.sft.SFTTrainer`. Its :meth:`~TrainLoop.run_loop` writes the run
files, opens the metrics sinks and the progress bar, calls the trainer's ``step()`` until
the end, a wall-clock limit or a signal, checkpoints every ``train.save_every`` iterations,
and ends with :func:`~rllm_adapters.trainer.checkpoint.finish_run`. What differs between the two
trainers comes in through a few hooks and class attributes.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import torch

from rllm_adapters.trainer.checkpoint import Checkpoints, finish_run
from rllm_adapters.trainer.distributed import GracefulStop, Ranks
from rllm_adapters.trainer.metrics import MetricsLogger

__all__ = ["TrainLoop"]


class TrainLoop:
    """Base of the trainers: :meth:`run_loop`, the checkpoint folder and :attr:`elapsed`.

    A subclass sets the annotated attributes in ``__init__``, implements :meth:`step`,
    :meth:`save_checkpoint` and :meth:`save_model`, and overrides the hooks it needs.
    """

    #: The progress bar's ``desc`` and ``unit``, and an iteration's name in messages.
    bar_desc: ClassVar[str]
    bar_unit: ClassVar[str]
    iteration_name: ClassVar[str]

    config: Any
    is_main: bool
    world_size: int
    iteration: int
    episodes: int
    output_dir: Path
    logger: MetricsLogger | None
    history: list[dict[str, Any]]
    stopped_by: str | None
    _started: float
    _elapsed_offset: float = 0.0

    def step(self) -> dict[str, Any]:
        """One iteration; return its metrics."""
        raise NotImplementedError

    def save_checkpoint(self) -> Path:
        """Write the checkpoint of the current iteration."""
        raise NotImplementedError

    def save_model(self, path: str | os.PathLike[str]) -> Path:
        """Write the model as a Hugging Face folder at ``path``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ hooks

    def _postfix(self, metrics: dict[str, Any]) -> dict[str, str]:
        """The progress bar's postfix after an iteration with ``metrics``."""
        return {}

    def _first_metrics(self) -> dict[str, Any]:
        """Metrics logged once, with the run's first iteration (not again after a resume)."""
        return {}

    def _done(self) -> bool:
        """Whether to stop early after this iteration (checked after the signals)."""
        return False

    def _write_run_files(self) -> None:
        """Write ``config.json`` (rank 0, before the metrics sinks open)."""
        self.output_dir.mkdir(parents=True, exist_ok=True)
        (self.output_dir / "config.json").write_text(
            json.dumps(self.config.to_dict(), indent=2), encoding="utf-8"
        )

    # ------------------------------------------------------------------ shared parts

    @property
    def ranks(self) -> Ranks:
        """Reductions over this run's processes."""
        return Ranks(self.world_size)

    @property
    def elapsed(self) -> float:
        """Training seconds so far (across resumes)."""
        return self._elapsed_offset + time.perf_counter() - self._started

    @property
    def checkpoint_dir(self) -> Path:
        """Where checkpoints live (``<output_dir>/checkpoint``)."""
        return self.output_dir / "checkpoint"

    @property
    def checkpoints(self) -> Checkpoints:
        """The checkpoint folder's reader and writer."""
        return Checkpoints(self.checkpoint_dir, is_main=self.is_main)

    def _loop_state(self) -> dict[str, Any]:
        """The checkpointed fields every trainer has (see :meth:`_load_loop_state`)."""
        return {
            "iteration": self.iteration,
            "episodes": self.episodes,
            "torch_rng": torch.get_rng_state().tolist(),
            "elapsed_s": self.elapsed,
        }

    def _load_loop_state(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`_loop_state` saved; the clock goes on from ``elapsed_s``."""
        self.iteration = int(state["iteration"])
        self.episodes = int(state["episodes"])
        torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
        self._elapsed_offset = float(state.get("elapsed_s", 0.0))
        self._started = time.perf_counter()

    def _progress(self, total: int) -> Any:
        if not (self.config.logging.progress and self.is_main):
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        return tqdm(total=total, initial=self.iteration, desc=self.bar_desc, unit=self.bar_unit)

    # ------------------------------------------------------------------ the loop

    def run_loop(
        self,
        total: int,
        callback: Callable[[Any, dict[str, Any]], None] | None = None,
    ) -> list[dict[str, Any]]:
        """Run ``step()`` until ``total`` iterations, ``train.max_wall_s`` or :meth:`_done`.

        The first SIGINT or SIGTERM (on any rank) lets the current iteration finish; every
        rank then stops, and :func:`~rllm_adapters.trainer.checkpoint.finish_run` writes the
        checkpoint (and the final model) and says how to resume; :attr:`stopped_by` names
        the signal.

        Args:
            total: The iteration to stop at (counted across resumes).
            callback: Called with ``(trainer, metrics)`` after every iteration.

        Returns:
            The metrics of every iteration run by this call.
        """
        cfg = self.config.train
        self.stopped_by = None
        if self.is_main:
            self._write_run_files()
            logging_cfg = self.config.logging
            self.logger = MetricsLogger(
                self.output_dir,
                tensorboard=logging_cfg.tensorboard,
                wandb=logging_cfg.wandb,
                wandb_project=logging_cfg.wandb_project,
                run_name=logging_cfg.run_name,
                config=self.config.to_dict(),
            )
        bar = self._progress(total)
        history: list[dict[str, Any]] = []
        try:
            with GracefulStop() as stop:
                while self.iteration < total:
                    if cfg.max_wall_s is not None and self.elapsed >= cfg.max_wall_s:
                        break
                    metrics = self.step()
                    if self.iteration == 1:
                        metrics.update(self._first_metrics())
                    history.append(metrics)
                    self.history.append(metrics)
                    if self.logger is not None:
                        self.logger.log(metrics, self.iteration)
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(refresh=False, **self._postfix(metrics))
                    if cfg.save_every and self.iteration % cfg.save_every == 0:
                        self.save_checkpoint()
                    if callback is not None:
                        callback(self, metrics)
                    # Every rank stops together (a launcher may signal only some of them).
                    if self.ranks.max(float(stop.signum is not None)) > 0:
                        self.stopped_by = stop.name or "a signal on another rank"
                        break
                    if self._done():
                        break
                finish_run(self, self.iteration_name, cfg.save_final_model)
        finally:
            if bar is not None:
                bar.close()
            if self.logger is not None:
                self.logger.close()
        return history
