"""Supervised fine-tuning on token-exact trajectories, on the RL trainer's DeepSpeed stack.

One run:

1. **Episodes** from an episode store (:mod:`rllm_agents.store`) and/or trajectory files, or
   handed in directly (``SFTTrainer(config, trajectories=...)``).
2. **Rejection sampling** (:func:`select_episodes`): keep the episodes that are correct, reach
   a reward threshold, fit a length budget, have tokens the model produced, are token-exact
   (or are rebuilt for the student's tokenizer with ``data.retokenize``), and are distinct.
3. **Rows**: each episode is one sequence (``Trajectory.token_ids()``, every turn of a
   multi-turn episode included). With packing, episodes are packed first-fit decreasing into
   rows of ``sft.max_length`` tokens; **position ids restart at 0 for every episode** and the
   model is called with them and no 2-D attention mask, from which transformers builds a
   block-diagonal causal mask (no token attends across an episode boundary; flash-attention
   uses its variable-length kernels). Padding at the end of a row is a segment of its own.
4. **Loss**: negative log-likelihood of the completion tokens only (the trajectory's loss
   mask: the ids the policy produced; prompts, observations and template glue are context),
   as a token mean over the whole optimizer step however it is split into micro-batches and
   ranks -- so packed and unpacked rows give the same loss. Logits are computed only where a
   completion token is predicted (the RL trainer's :class:`ActionScorer` approach).
5. **Checkpoints**: DeepSpeed checkpoints under ``<output_dir>/checkpoint`` (resumed by the
   same command, at the same row of the same epoch), and a Hugging Face folder
   ``<output_dir>/final_model`` that the RL trainer (``model: <folder>``) and the
   leaderboard (``--policy hf:<folder>`` or ``vllm:<folder>``) load directly.

:class:`SFTTrainer` runs on the RL trainer's own parts, imported: the process group
(:func:`~rllm_adapters.trainer.distributed.setup_distributed`, :class:`Ranks`), the run loop
(:class:`~rllm_adapters.trainer.loop.TrainLoop`, shared with the RL trainer), the DeepSpeed
engine's JSON config and the engine with torch AdamW, warm-up and the linear schedule
(:func:`~rllm_adapters.trainer.distributed.deepspeed_config`,
:func:`~rllm_adapters.trainer.distributed.build_engine`), the checkpoint folder
(:class:`~rllm_adapters.trainer.checkpoint.Checkpoints`, resumed by the same command), the Hugging
Face export (:func:`~rllm_adapters.trainer.checkpoint.save_hf_model`), SIGINT/SIGTERM handling,
the metrics sinks (:class:`~rllm_adapters.trainer.metrics.MetricsLogger`) and the model loading and
position-restricted scoring of :mod:`rllm_adapters.trainer.models`
(:func:`~rllm_adapters.trainer.models.scored_logits`: one implementation).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rllm_adapters.trainer.checkpoint import full_state_dict, save_hf_model
from rllm_adapters.trainer.distributed import (
    apply_lr_schedule,
    build_engine,
    deepspeed_config,
    setup_distributed,
)
from rllm_adapters.trainer.loop import TrainLoop
from rllm_adapters.trainer.metrics import MetricsLogger
from rllm_adapters.trainer.models import ActionScorer, apply_lora, load_causal_lm, scored_logits
from rllm_adapters.trainer.sft_config import SFTConfig, SFTDataConfig
from rllm_agents.trajectory import Trajectory

__all__ = [
    "Example",
    "SFTBatch",
    "SFTTrainer",
    "SelectionReport",
    "load_episodes",
    "make_batch",
    "pack_rows",
    "retokenize",
    "select_episodes",
    "sft_loss",
]

_log = logging.getLogger(__name__)

#: ``(trainer, metrics)`` after every optimizer step (``metrics["epoch_end"]`` marks epochs).
StepCallback = Callable[["SFTTrainer", dict[str, Any]], None]


# ---------------------------------------------------------------------- episodes


def retokenize(trajectory: Trajectory, chat: Any) -> Trajectory:
    """The episode rebuilt for another tokenizer from its messages (a teacher's episode).

    The first prompt is the chat template of the messages before the first assistant turn;
    each assistant turn's text, closed with the end-of-turn token, is that step's completion;
    later prompts are appended exactly as the rollout loop appends them
    (:meth:`rllm_agents.chat.ChatTokenizer.append`). Logprobs are dropped (the student never
    sampled these ids); rewards, flags and ``info`` are kept.

    Args:
        trajectory: An episode with ``messages`` (one assistant message per step).
        chat: A :class:`rllm_agents.chat.ChatTokenizer` of the student.

    Returns:
        A new trajectory whose ids satisfy the token-exact invariant for ``chat``.

    Raises:
        ValueError: The messages do not hold one assistant turn per step.
    """
    messages = list(trajectory.messages)
    turns = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if len(turns) != len(trajectory.steps) or not turns:
        raise ValueError(
            f"Expects one assistant message per step to retokenize episode "
            f"{trajectory.task_id!r}, actual: {len(turns)} for {len(trajectory.steps)} steps."
        )
    tools = trajectory.initial_info.get("tools") or None
    closer = list(chat.closer_ids)
    end = closer[:1] or [int(chat.tokenizer.eos_token_id)]
    prompt = chat.initial_prompt(messages[: turns[0]], tools)
    steps = []
    for k, (step, at) in enumerate(zip(trajectory.steps, turns, strict=True)):
        completion = chat.encode(str(messages[at].get("content") or "")) + end
        steps.append(replace(step, prompt_ids=list(prompt), completion_ids=completion, logprobs=[]))
        if k + 1 < len(turns):
            prompt = chat.append(prompt, completion, messages[at + 1 : turns[k + 1]], tools)
    out = replace(trajectory, steps=steps, token_exact=True, metadata=dict(trajectory.metadata))
    out.metadata["token_ids_from"] = "retokenized:" + str(
        getattr(chat.tokenizer, "name_or_path", "") or type(chat.tokenizer).__name__
    )
    out.check_token_exact()
    return out


def load_episodes(data: SFTDataConfig) -> list[Trajectory]:
    """The episodes a config's ``data`` section names (store query, then files), in order."""
    out: list[Trajectory] = []
    if data.store is not None:
        from rllm_agents.store import EpisodeStore

        filters = {k: v for k, v in data.store_filters.items() if k in ("run", "env", "model")}
        if data.task is not None:
            filters["task"] = data.task
        with EpisodeStore(data.store, read_only=True) as store:
            out.extend(store.trajectories(**filters))
    if data.files:
        from rllm_agents.writers import read_trajectories

        for path in data.files:
            out.extend(read_trajectories(path))
    return out


@dataclass
class SelectionReport:
    """What :func:`select_episodes` kept and why it dropped the rest (counts)."""

    seen: int = 0
    kept: int = 0
    rejected: dict[str, int] = field(default_factory=dict)

    def reject(self, reason: str) -> None:
        """Count one episode dropped for ``reason``."""
        self.rejected[reason] = self.rejected.get(reason, 0) + 1

    def metrics(self) -> dict[str, float]:
        """``data/*`` metrics."""
        out = {"data/episodes_seen": float(self.seen), "data/episodes_kept": float(self.kept)}
        out.update({f"data/rejected_{k}": float(v) for k, v in sorted(self.rejected.items())})
        return out


def select_episodes(
    trajectories: Sequence[Trajectory],
    data: SFTDataConfig,
    *,
    max_tokens: int | None = None,
    chat: Any = None,
) -> tuple[list[Trajectory], SelectionReport]:
    """Rejection sampling: the episodes that pass every filter of ``data``.

    Args:
        trajectories: Candidate episodes.
        data: The filters (``correct``, ``min_reward``, lengths, token exactness, dedup).
        max_tokens: Longest episode kept (default ``data.max_tokens``; none if both unset).
        chat: The student's :class:`~rllm_agents.chat.ChatTokenizer` (``data.retokenize``).

    Returns:
        The kept episodes (in order) and the counts of what each filter rejected.
    """
    limit = max_tokens if max_tokens is not None else data.max_tokens
    report = SelectionReport()
    kept: list[Trajectory] = []
    seen: set[str] = set()
    for t in trajectories:
        report.seen += 1
        if data.retokenize:
            if chat is None:
                raise ValueError("`data.retokenize` needs the student's chat tokenizer.")
            try:
                t = retokenize(t, chat)
            except ValueError:
                report.reject("unretokenizable")
                continue
        elif data.token_exact_only and not t.token_exact:
            report.reject("not_token_exact")
            continue
        if data.correct is not None and t.is_correct != data.correct:
            report.reject("correct")
            continue
        if data.min_reward is not None and t.total_reward < data.min_reward:
            report.reject("reward")
            continue
        generated = t.num_completion_tokens
        if generated < data.min_completion_tokens:
            report.reject("no_completion" if generated == 0 else "short")
            continue
        if data.max_completion_tokens is not None and generated > data.max_completion_tokens:
            report.reject("long_completion")
            continue
        ids = t.token_ids()
        if limit is not None and len(ids) > limit:
            report.reject("length")
            continue
        if data.dedup:
            digest = hashlib.sha256(
                np.asarray(ids + t.loss_mask(), dtype=np.int64).tobytes()
            ).hexdigest()
            if digest in seen:
                report.reject("duplicate")
                continue
            seen.add(digest)
        if data.max_episodes is not None and len(kept) >= data.max_episodes:
            report.reject("max_episodes")
            continue
        kept.append(t)
    report.kept = len(kept)
    return kept, report


# ---------------------------------------------------------------------- rows


@dataclass(frozen=True)
class Example:
    """One episode as a training sequence: ids and the loss mask (1 = produced by the model)."""

    ids: tuple[int, ...]
    mask: tuple[int, ...]

    @classmethod
    def of(cls, trajectory: Trajectory) -> Example:
        """The episode's whole token sequence and loss mask."""
        return cls(tuple(trajectory.token_ids()), tuple(trajectory.loss_mask()))

    @property
    def completion_tokens(self) -> int:
        """Tokens that carry loss."""
        return int(sum(self.mask))


def pack_rows(lengths: Sequence[int], max_length: int, packing: bool = True) -> list[list[int]]:
    """Group example indices into rows: first-fit decreasing up to ``max_length`` tokens.

    Without packing every example is a row of its own. Rows come out in a deterministic
    order (the longest first); the trainer shuffles them per epoch.
    """
    if not packing:
        return [[i] for i in range(len(lengths))]
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        n = lengths[i]
        for r, free in enumerate(room):
            if n <= free:
                rows[r].append(i)
                room[r] -= n
                break
        else:
            rows.append([i])
            room.append(max(max_length - n, 0))
    return rows


@dataclass
class SFTBatch:
    """Rows of packed episodes (``B`` rows, ``L`` tokens, ``A`` completion tokens).

    Attributes:
        input_ids: ``[B, L]`` ids, right-padded.
        position_ids: ``[B, L]`` restarting at 0 for each episode (and for the padding).
        positions: ``[B, A]`` index of the hidden state that predicts each completion token.
        targets: ``[B, A]`` the completion token ids.
        action_mask: ``[B, A]`` 1 for real completion tokens.
        episodes: ``[B]`` episodes per row.
    """

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    positions: torch.Tensor
    targets: torch.Tensor
    action_mask: torch.Tensor
    episodes: torch.Tensor

    @property
    def tokens(self) -> int:
        """Completion tokens in the batch."""
        return int(self.action_mask.sum().item())

    def to(self, device: torch.device | str) -> SFTBatch:
        """The batch on ``device``."""
        return SFTBatch(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})


def make_batch(examples: Sequence[Example], rows: Sequence[Sequence[int]], pad_id: int) -> SFTBatch:
    """Tensors for ``rows`` (each a list of example indices laid out one after the other)."""
    if not rows:
        raise ValueError("Expects at least one row.")
    laid: list[tuple[list[int], list[int], list[int]]] = []
    for row in rows:
        ids: list[int] = []
        pos: list[int] = []
        at: list[int] = []
        for i in row:
            ex = examples[i]
            start = len(ids)
            ids.extend(ex.ids)
            pos.extend(range(len(ex.ids)))
            # A prompt is never empty: every completion token's predecessor is in its episode.
            at.extend(start + t for t, m in enumerate(ex.mask) if m)
        laid.append((ids, pos, at))
    B = len(laid)
    L = max(len(r[0]) for r in laid)
    A = max(max(len(r[2]) for r in laid), 1)
    input_ids = torch.full((B, L), pad_id, dtype=torch.long)
    position_ids = torch.zeros((B, L), dtype=torch.long)
    positions = torch.zeros((B, A), dtype=torch.long)
    targets = torch.zeros((B, A), dtype=torch.long)
    action_mask = torch.zeros((B, A), dtype=torch.float32)
    for b, (ids, pos, at) in enumerate(laid):
        n, a = len(ids), len(at)
        input_ids[b, :n] = torch.tensor(ids, dtype=torch.long)
        position_ids[b, :n] = torch.tensor(pos, dtype=torch.long)
        # The padding is a segment of its own (its positions restart at 0).
        position_ids[b, n:] = torch.arange(L - n, dtype=torch.long)
        if a:
            index = torch.tensor(at, dtype=torch.long)
            positions[b, :a] = index - 1
            targets[b, :a] = input_ids[b, index]
            action_mask[b, :a] = 1.0
    return SFTBatch(
        input_ids=input_ids,
        position_ids=position_ids,
        positions=positions,
        targets=targets,
        action_mask=action_mask,
        episodes=torch.tensor([len(r) for r in rows], dtype=torch.long),
    )


class PackedScorer(ActionScorer):
    """:class:`ActionScorer` for packed rows: position ids per episode, no 2-D attention mask.

    ``forward`` returns the logprob of each target token and whether it is the argmax.
    """

    def forward(  # type: ignore[override]
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        positions: torch.Tensor,
        targets: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Logprobs ``[B, A]`` of ``targets`` predicted at ``positions``, and argmax hits."""
        logits, _ = scored_logits(
            self.lm, positions, input_ids=input_ids, position_ids=position_ids
        )
        logp_all = torch.log_softmax(logits, dim=-1)
        logp = logp_all.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
        hits = (logits.argmax(-1) == targets).float()
        return logp, hits


def sft_loss(
    scorer: Any, batch: SFTBatch, normalizer: float | None = None
) -> tuple[torch.Tensor, dict[str, float]]:
    """Summed completion-token NLL of ``batch`` divided by ``normalizer`` (default: its tokens).

    Returns:
        The loss and ``{"nll_sum", "tokens", "hits"}`` for the metrics.
    """
    mask = batch.action_mask
    logp, hits = scorer(batch.input_ids, batch.position_ids, batch.positions, batch.targets)
    nll = -(logp * mask).sum()
    n = float(mask.sum()) if normalizer is None else float(normalizer)
    stats = {
        "nll_sum": float(nll.detach()),
        "tokens": float(mask.sum()),
        "hits": float((hits * mask).sum()),
    }
    return nll / max(n, 1.0), stats


# ---------------------------------------------------------------------- the trainer


class SFTTrainer(TrainLoop):
    """Fine-tune a causal LM on episodes (see the module docstring).

    Args:
        config: The run's configuration.
        trajectories: Train on these instead of ``config.data``'s sources (the filters
            still apply).
    """

    bar_desc = "sft"
    bar_unit = "step"
    iteration_name = "step"

    def __init__(
        self, config: SFTConfig, *, trajectories: Sequence[Trajectory] | None = None
    ) -> None:
        self.config = config
        self.rank, self.world_size = setup_distributed()
        self.is_main = self.rank == 0
        self._started = time.perf_counter()
        self._elapsed_offset = 0.0
        from deepspeed.accelerator import get_accelerator

        self.device = torch.device(get_accelerator().current_device_name())
        torch.manual_seed(config.train.seed + self.rank)
        self._lr_factor = 1.0
        self.model_path = config.resolve_model()
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        self.iteration = 0  # optimizer steps
        self.episodes = 0  # episodes trained on, repeats counted
        self.output_dir = Path(config.train.output_dir)
        self.logger: MetricsLogger | None = None
        self.history: list[dict[str, Any]] = []
        #: The signal that stopped the last :meth:`train` early (``None``: it was not).
        self.stopped_by: str | None = None

        chat = None
        if config.data.retokenize:
            from rllm_agents.chat import ChatTokenizer

            chat = ChatTokenizer(self.tokenizer)
        source = load_episodes(config.data) if trajectories is None else list(trajectories)
        kept, self.selection = select_episodes(
            source, config.data, max_tokens=config.max_tokens, chat=chat
        )
        if not kept:
            raise ValueError(
                f"No episode left to train on: {self.selection.seen} seen, rejected "
                f"{self.selection.rejected}. Loosen `data` filters or add episodes."
            )
        self.examples = [Example.of(t) for t in kept]
        self.rows = pack_rows(
            [len(e.ids) for e in self.examples], config.sft.max_length, config.sft.packing
        )
        per_step = config.sft.rows_per_step * self.world_size
        self.steps_per_epoch = max(1, -(-len(self.rows) // per_step))
        total = self.steps_per_epoch * config.sft.epochs
        self.total_steps = min(total, config.sft.max_steps) if config.sft.max_steps else total
        lm = load_causal_lm(self.model_path)
        if config.lora.enabled:
            lm = apply_lora(lm, config.lora)
        self.actor = build_engine(
            PackedScorer(lm),
            config.optim.lr,
            config.optim,
            deepspeed_config(config, self.world_size),
            lambda: self._lr_factor,
        )
        if config.train.resume:
            self.resume()

    # ------------------------------------------------------------------ setup

    def _set_lr_factor(self) -> None:
        optim = self.config.optim
        if optim.lr_schedule == "linear":
            done = min(self.iteration / max(self.total_steps, 1), 1.0)
            self._lr_factor = optim.min_lr_ratio + (1.0 - optim.min_lr_ratio) * (1.0 - done)
            # This step uses the new factor, not the previous step's.
            apply_lr_schedule(self.actor)

    # ------------------------------------------------------------------ data order

    def step_rows(self, step: int) -> list[list[int]]:
        """The rows (of every rank) of optimizer step ``step``: a pure function of the seed.

        Epoch ``e`` visits the rows in the order of a generator seeded with
        ``(train.seed, e)``, so a resumed run sees exactly the rows it would have seen.
        """
        epoch, k = divmod(step, self.steps_per_epoch)
        order = np.arange(len(self.rows))
        if self.config.sft.shuffle:
            rng = np.random.default_rng([self.config.train.seed, epoch])
            order = rng.permutation(len(self.rows))
        per_step = self.config.sft.rows_per_step * self.world_size
        return [self.rows[i] for i in order[k * per_step : (k + 1) * per_step]]

    # ------------------------------------------------------------------ one step

    def step(self) -> dict[str, Any]:
        """One optimizer step over its rows; return its metrics."""
        t0 = time.perf_counter()
        self._set_lr_factor()
        settings = self.config.sft
        rows = self.step_rows(self.iteration)
        mine = rows[self.rank :: self.world_size]
        tokens = float(sum(self.examples[i].completion_tokens for row in rows for i in row))
        chunks = [
            mine[i : i + settings.micro_batch_size]
            for i in range(0, len(mine), settings.micro_batch_size)
        ]
        # Every rank takes the same number of micro-steps (the gradient all-reduce needs it):
        # a rank short of rows runs a zero-weight pass over the step's first row.
        n_chunks = int(self.ranks.max(float(len(chunks))))
        totals = {"nll_sum": 0.0, "tokens": 0.0, "hits": 0.0}
        # DeepSpeed averages gradients over ranks: scale so the result is the global mean.
        normalizer = tokens / self.world_size
        for k in range(n_chunks):
            chunk, weight = (chunks[k], 1.0) if k < len(chunks) else ([rows[0]], 0.0)
            batch = make_batch(self.examples, chunk, self.pad_id).to(self.device)
            last = k == n_chunks - 1
            self.actor.set_gradient_accumulation_boundary(last)
            loss, stats = sft_loss(self.actor, batch, normalizer)
            self.actor.backward(loss * weight, scale_wrt_gas=False)
            if last:
                self.actor.step()
            if weight:
                for key in totals:
                    totals[key] += stats[key]
        epoch_of = self.iteration // self.steps_per_epoch
        self.iteration += 1
        self.episodes += sum(len(r) for r in rows)
        sums = {
            "nll_sum": totals["nll_sum"] * self.world_size,
            "tokens": totals["tokens"] * self.world_size,
            "hits": totals["hits"] * self.world_size,
        }
        sums = self.ranks.mean_metrics(sums)
        metrics: dict[str, Any] = {
            "sft/loss": sums["nll_sum"] / max(sums["tokens"], 1.0),
            "sft/token_accuracy": sums["hits"] / max(sums["tokens"], 1.0),
            "sft/tokens": tokens,
            "sft/rows": float(len(rows)),
            "sft/epoch": epoch_of + 1,
            "epoch_end": self.iteration % self.steps_per_epoch == 0,
            "optim/lr": float(self.actor.get_lr()[0]),
            "episodes": self.episodes,
            "time_s": self.elapsed,
            "perf/step_s": time.perf_counter() - t0,
        }
        grad_norm = self.actor.get_global_grad_norm()
        if grad_norm is not None:
            metrics["sft/grad_norm"] = float(grad_norm)
        return metrics

    # ------------------------------------------------------------------ checkpoints

    def save_checkpoint(self) -> Path:
        """Save the model, optimizer and step counter; keep only the newest."""
        state = {"kind": "sft", **self._loop_state()}
        return self.checkpoints.save({"actor": self.actor}, f"iter_{self.iteration:06d}", state)

    def resume(self) -> bool:
        """Load the checkpoint in ``output_dir`` if there is one; return whether it did."""
        state = self.checkpoints.load({"actor": self.actor})
        if state is None:
            return False
        self._load_loop_state(state)
        return True

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The model's full weights under Hugging Face names (gathered under ZeRO-3)."""
        return full_state_dict(self.actor.module.lm, self.config.deepspeed.zero_stage)

    def save_model(self, path: str | os.PathLike[str]) -> Path:
        """Write the model as a Hugging Face folder (weights, config, tokenizer)."""
        return save_hf_model(
            self.actor.module.lm, self.state_dict(), self.tokenizer, path, is_main=self.is_main
        )

    # ------------------------------------------------------------------ the loop

    def train(self, callback: StepCallback | None = None) -> list[dict[str, Any]]:
        """Run until ``total_steps`` or ``train.max_wall_s``; checkpoint; export the model.

        The first SIGINT or SIGTERM finishes the current step, writes the checkpoint and
        returns (:attr:`stopped_by`); the same command resumes.

        Args:
            callback: Called with ``(trainer, metrics)`` after every step (e.g. evaluation
                at ``metrics["epoch_end"]``; :meth:`save_model` writes a loadable folder).

        Returns:
            The metrics of every step run by this call.
        """
        return self.run_loop(self.total_steps, callback)

    def _postfix(self, metrics: dict[str, Any]) -> dict[str, str]:
        return {"loss": f"{metrics['sft/loss']:.3f}"}

    def _first_metrics(self) -> dict[str, Any]:
        return self.selection.metrics()

    def _write_run_files(self) -> None:
        super()._write_run_files()
        data = {
            **self.selection.metrics(),
            "rows": len(self.rows),
            "steps_per_epoch": self.steps_per_epoch,
            "total_steps": self.total_steps,
            "completion_tokens": sum(e.completion_tokens for e in self.examples),
            "tokens": sum(len(e.ids) for e in self.examples),
        }
        (self.output_dir / "data.json").write_text(json.dumps(data, indent=2), encoding="utf-8")

    def close(self) -> None:
        """Nothing to release (no rollout engine); for symmetry with the RL trainer."""

    def __enter__(self) -> SFTTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def sft_summary(config: SFTConfig, trainer: SFTTrainer | None = None) -> str:
    """One line describing the run."""
    s = config.sft
    line = (
        f"sft of {config.model}: {s.epochs} epoch(s), {s.rows_per_step} rows/step, "
        f"{'packed' if s.packing else 'unpacked'} to {s.max_length} tokens, "
        f"ZeRO-{config.deepspeed.zero_stage}{' bf16' if config.deepspeed.bf16 else ''}"
    )
    if trainer is not None:
        sel = trainer.selection
        line += (
            f"; {sel.kept}/{sel.seen} episodes kept (rejected {sel.rejected or 'none'}), "
            f"{len(trainer.rows)} rows, {trainer.total_steps} steps"
        )
    return line
