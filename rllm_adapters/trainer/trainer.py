"""PPO / GRPO / RLOO for language-model policies on DeepSpeed, with rollouts from vLLM.

One iteration:

1. **Rollout**: ``num_tasks x group_size`` episodes through :mod:`rllm_adapters.rollout` with the
   policy backend (vLLM by default), giving token-exact trajectories; the env workers are
   built once and kept for the whole run (:mod:`rllm_adapters.trainer.rollouts`, one pool per
   level with ``rollout.curriculum``, :mod:`rllm_adapters.curriculum`). GRPO/RLOO
   groups whose returns have no spread (every advantage exactly 0) are dropped here, before
   any forward pass; with none left the update is skipped. ``algorithm.dynamic_sampling``
   (DAPO) rolls out extra rounds of fresh tasks until ``num_tasks`` groups have a spread.
   A few episodes per iteration go to ``samples.jsonl`` with their reward components.
2. **Score**: the trainer recomputes the logprob of every generated token (reported against
   the sampler's as ``logprob_mismatch/*``), the frozen reference's logprobs (when
   ``kl_coef > 0``) and the critic's values (GAE).
3. **Advantages**: GAE over the generated tokens (the env's reward on each turn's last token,
   minus the KL penalty in ``kl_mode: reward``), or group-relative returns (GRPO, RLOO).
4. **Update**: ``ppo_epochs`` passes of shuffled mini-batches (whole task groups, whose
   shared prompt runs once per micro-batch, ``algorithm.share_prompt``); clipped policy loss
   (weighted for the sampler/trainer mismatch, ``algorithm.importance_sampling``), entropy
   bonus, optional KL loss, clipped value loss; only where the loss mask is 1, and every
   token of the batch weighs the same in every step and on every rank (DAPO's token-level
   mean).
5. **Sync**: the new actor weights go to the rollout engine (vLLM ``reload_weights`` in
   process), so the next rollout samples from them.

The process group, engines and cross-rank reductions are in
:mod:`rllm_adapters.trainer.distributed`, checkpoints and the Hugging Face export in
:mod:`rllm_adapters.trainer.checkpoint`, the run loop (shared with the SFT trainer) in
:mod:`rllm_adapters.trainer.loop`, episode metrics and ``samples.jsonl`` in
:mod:`rllm_adapters.trainer.metrics`: this module is the algorithm.

:meth:`PPOTrainer.train` stops cleanly on the first SIGINT/SIGTERM: the iteration finishes,
the checkpoint is written, and the same command resumes.

The actor and the critic are DeepSpeed engines (ZeRO 0-3, bf16 optional) with torch AdamW.
Without a launcher the trainer sets up a one-process group itself; under ``deepspeed`` or
``torchrun`` every process rolls out its own share of episodes with its own engine and
DeepSpeed averages the gradients.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rllm_adapters.trainer import algorithms as alg
from rllm_adapters.trainer.batch import Batch, episode_returns, trajectories_to_batch
from rllm_adapters.trainer.checkpoint import full_state_dict, save_hf_model
from rllm_adapters.trainer.config import TrainerConfig
from rllm_adapters.trainer.distributed import (
    GracefulStop,
    _merge,
    apply_lr_schedule,
    build_engine,
    deepspeed_config,
    setup_distributed,
)
from rllm_adapters.trainer.loop import TrainLoop
from rllm_adapters.trainer.metrics import (
    SAMPLES_FILE,
    MetricsLogger,
    WeightedMeans,
    rollout_metrics,
    write_samples,
)
from rllm_adapters.trainer.models import (
    ActionScorer,
    apply_lora,
    load_causal_lm,
    load_value_model,
    shared_prefix_length,
)
from rllm_adapters.trainer.rollouts import RolloutCollector
from rllm_agents.trajectory import Trajectory

__all__ = ["SAMPLES_FILE", "PPOTrainer", "RolloutFn", "config_summary", "setup_distributed"]

#: ``(policy, iteration) -> trajectories``: replaces the built-in rollout (tests, custom loops).
RolloutFn = Callable[[Any, int], list[Trajectory]]

_log = logging.getLogger(__name__)
#: Old private names, still imported by the SFT trainer.
_GracefulStop = GracefulStop
__all__ += ["_GracefulStop", "_merge"]


def _micro_chunks(rows: Sequence[int], size: int) -> list[list[int]]:
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


class PPOTrainer(TrainLoop):
    """Train a causal LM on an rllm-envs environment (see the module docstring).

    The env pools (one per curriculum level) live in :attr:`rollouts` for the whole run.

    Args:
        config: The run's configuration.
        rollout_fn: Replace the built-in rollout: ``rollout_fn(policy, iteration)`` returns
            the iteration's trajectories (``group`` set for GRPO/RLOO).
        policy: A ready policy backend (otherwise built from ``config.rollout``).
    """

    #: Where the episodes come from (``None`` in subclasses that never roll out).
    rollouts: RolloutCollector | None = None
    bar_desc = "ppo"
    bar_unit = "it"
    iteration_name = "iteration"

    def __init__(
        self,
        config: TrainerConfig,
        *,
        rollout_fn: RolloutFn | None = None,
        policy: Any = None,
    ) -> None:
        self.config = config
        self.rank, self.world_size = setup_distributed()
        self.is_main = self.rank == 0
        # First: a curriculum level the env rejects raises before any model is loaded.
        #: The env pools (one per curriculum level) kept across iterations.
        self.rollouts = RolloutCollector(
            config, rank=self.rank, world_size=self.world_size, show_progress=self.is_main
        )
        self._started = time.perf_counter()
        from deepspeed.accelerator import get_accelerator

        self.device = torch.device(get_accelerator().current_device_name())
        self._seed_everything(config.train.seed + self.rank)
        self.dtype = torch.bfloat16 if config.deepspeed.bf16 else torch.float32
        self._lr_factor = 1.0
        self.model_path = config.resolve_model()
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        algo = config.algorithm
        self.shared_critic = algo.uses_critic and algo.critic == "shared"
        lm = load_causal_lm(self.model_path)
        if config.lora.enabled:
            lm = apply_lora(lm, config.lora)
        self.actor = self._engine(
            ActionScorer(
                lm,
                config.rollout.temperature,
                value_head=self.shared_critic,
            ),
            config.optim.lr,
        )
        self.critic = None
        if algo.uses_critic and not self.shared_critic:
            critic_path = self.model_path
            if config.critic_model:
                critic_path = config.resolve_model(config.critic_model)
            critic = load_value_model(critic_path)
            self.critic = self._engine(critic, float(config.optim.critic_lr or config.optim.lr))
        self.reference: ActionScorer | None = None
        if algo.kl_coef > 0:
            ref = ActionScorer(
                load_causal_lm(self.model_path, self.dtype), config.rollout.temperature
            )
            self.reference = ref.to(self.device).eval().requires_grad_(False)
        self.kl_ctl: alg.FixedKLController | alg.AdaptiveKLController = (
            alg.AdaptiveKLController(algo.kl_coef, algo.kl_target, algo.kl_horizon)
            if algo.adaptive_kl
            else alg.FixedKLController(algo.kl_coef)
        )
        self.iteration = 0
        self.episodes = 0
        self.output_dir = Path(config.train.output_dir)
        self._rollout_fn = rollout_fn
        self._owns_policy = policy is None and rollout_fn is None
        self.policy = (
            policy if policy is not None else (self._make_policy() if rollout_fn is None else None)
        )
        self.logger: MetricsLogger | None = None
        self.history: list[dict[str, Any]] = []
        #: The signal that stopped the last :meth:`train` early (``None``: it was not).
        self.stopped_by: str | None = None
        if config.train.resume:
            self.resume()

    # ------------------------------------------------------------------ setup

    def _seed_everything(self, seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        self._rng = np.random.default_rng(seed)

    def _ds_config(self) -> dict[str, Any]:
        return deepspeed_config(self.config, self.world_size)

    def _engine(self, module: torch.nn.Module, lr: float) -> Any:
        return build_engine(
            module, lr, self.config.optim, self._ds_config(), lambda: self._lr_factor
        )

    def _make_policy(self) -> Any:
        from rllm_adapters.backends import make_policy

        settings = self.config.rollout
        kwargs = dict(settings.engine_kwargs)
        if settings.backend == "vllm":
            # In-process engine: fast start and the only mode that takes tensors directly.
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
            if self.device.type == "cpu":
                os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
                # vLLM-CPU takes per-request seeds only without chunked prefill: with them a
                # run repeats from its seed (rllm_adapters.backends.vllm).
                kwargs.setdefault("enable_chunked_prefill", False)
            kwargs.setdefault("seed", self.config.train.seed + self.rank)
        return make_policy(settings.backend, self.model_path, **kwargs)

    # ------------------------------------------------------------------ one iteration

    def step(self) -> dict[str, Any]:
        """Run one iteration (collect, score, advantages, update, sync); return its metrics."""
        self._set_lr_factor()
        metrics: dict[str, Any] = {}
        t0 = time.perf_counter()
        trajectories, signal = self._collect_iteration(metrics)
        t1 = time.perf_counter()
        metrics.update(rollout_metrics(trajectories))
        generated = sum(t.num_completion_tokens for t in trajectories)
        # Generation and the env steps (reward scoring included) overlap in the rollout.
        metrics["perf/rollout_s"] = t1 - t0
        metrics["perf/rollout_tokens_per_s"] = generated / max(t1 - t0, 1e-9)
        train_on = self._select_for_update(trajectories, metrics, signal)
        advantages: dict[int, float] = {}
        metrics["batch/update_skipped"] = float(not train_on)
        if train_on:
            advantages = self._learn(train_on, metrics)
        else:
            reason = (
                "no group has a reward spread"
                if _usable(trajectories)
                else "no episode has generated tokens"
            )
            _log.warning(
                "iteration %d: nothing to learn from in %d episodes (%s): update skipped",
                self.iteration + 1,
                len(trajectories),
                reason,
            )
        if self.is_main:
            self._write_samples(trajectories, advantages)
        self.iteration += 1
        self.episodes += len(trajectories) * self.world_size
        metrics = self._reduce(metrics)
        metrics["episodes"] = self.episodes
        metrics["time_s"] = self.elapsed
        # CPU seconds of this process (all threads) since it started: with a busy machine the
        # wall clock overstates the work, this does not.
        metrics["perf/process_cpu_s"] = time.process_time()
        # Peak resident memory of this process so far (the rollout engine included in process).
        metrics["perf/max_rss_gib"] = _max_rss_gib()
        metrics["perf/iteration_s"] = time.perf_counter() - t0
        return metrics

    def _learn(self, trajectories: list[Trajectory], metrics: dict[str, Any]) -> dict[int, float]:
        """Score, advantages, update and sync on ``trajectories``.

        Returns:
            Each episode's mean advantage per action token, keyed by ``id(trajectory)``.
        """
        algo = self.config.algorithm
        batch = trajectories_to_batch(trajectories, self.pad_id)
        t_score = time.perf_counter()
        single_step = (
            algo.ppo_epochs == 1
            and batch.size <= algo.mini_batch_size
            and not algo.uses_critic
            and (self.reference is None or algo.kl_mode == "loss")
            and not algo.use_rollout_logprobs
        )
        if single_step:
            # Only the reference needs scoring; the update's own forward is the old policy.
            scores = self._score(batch, metrics, actor=False)
            old_logp: torch.Tensor | None = None
        else:
            scores = self._score(batch, metrics)
            metrics.update(_mismatch_metrics(batch, scores["old_logp"]))
            old_logp = scores["old_logp"]
            if algo.use_rollout_logprobs and bool(batch.has_rollout_logprobs.all()):
                old_logp = batch.rollout_logprobs
        t_adv = time.perf_counter()
        metrics["perf/score_s"] = t_adv - t_score
        adv, returns = self._advantages(batch, scores, metrics)
        metrics["policy/advantage_abs"] = float(alg.masked_mean(adv.abs(), batch.action_mask))
        t2 = time.perf_counter()
        metrics["perf/advantages_s"] = t2 - t_adv
        update = self._update(
            batch, old_logp, adv, returns, scores.get("values"), scores.get("ref_logp")
        )
        t3 = time.perf_counter()
        metrics.update(update)
        metrics["perf/update_s"] = t3 - t2
        # Tokens through the update (forward + backward) per second of scoring + update.
        metrics["perf/train_tokens_per_s"] = update["perf/train_tokens"] / max(t3 - t_score, 1e-9)
        if "kl/ref" not in metrics and "loss/kl" in update:
            metrics["kl/ref"] = update["loss/kl"]
            metrics["kl/coef"] = self.kl_ctl.value
        if "kl/ref" in metrics:
            self.kl_ctl.update(metrics["kl/ref"], len(trajectories))
        metrics["perf/sync_s"] = self.push_weights()
        per_episode = alg.masked_mean(adv, batch.action_mask, dim=1).tolist()
        return {id(t): float(a) for t, a in zip(trajectories, per_episode, strict=True)}

    def _write_samples(self, trajectories: list[Trajectory], advantages: dict[int, float]) -> None:
        """Append a few of the iteration's episodes to ``samples.jsonl``."""
        n = self.config.logging.samples_per_iteration
        write_samples(self.output_dir, trajectories, n, self.iteration + 1, advantages)

    # ------------------------------------------------------------------ 1. collect

    def collect(self, iteration: int, extra_round: int = 0) -> list[Trajectory]:
        """Roll out one iteration's episodes with the current policy.

        Args:
            iteration: The iteration (decides the tasks and, with a curriculum, the levels).
            extra_round: Dynamic sampling's extra rounds (1, 2, ...) roll out fresh tasks; a
                custom ``rollout_fn`` is simply called again.
        """
        if self._rollout_fn is not None:
            return list(self._rollout_fn(self.policy, iteration))
        assert self.policy is not None and self.rollouts is not None
        return self.rollouts.collect(self.policy, iteration, extra_round)

    def _collect_iteration(
        self, metrics: dict[str, Any]
    ) -> tuple[list[Trajectory], list[int] | None]:
        """The iteration's episodes; with dynamic sampling, extra rounds until enough signal.

        Returns:
            The episodes and, when zero-signal groups are filtered, the ids of the groups
            with a reward spread (each round's groups are looked at once).
        """
        algo = self.config.algorithm
        trajectories = self.collect(self.iteration)
        filtering = algo.filters_zero_signal
        signal = _signal_groups(_usable(trajectories)) if filtering else None
        rounds = 0
        if algo.dynamic_sampling:
            assert signal is not None  # dynamic sampling needs the filter (config check)
            wanted = self.config.rollout.num_tasks
            while rounds < algo.dynamic_sampling_max_rounds and len(signal) < wanted:
                rounds += 1
                extra = self.collect(self.iteration, rounds)
                # Each round numbers its groups from 0: keep them apart from the earlier ones.
                offset = max((t.group for t in trajectories), default=-1) + 1
                for t in extra:
                    t.group += offset
                trajectories.extend(extra)
                signal.extend(_signal_groups(_usable(extra)))
        metrics["batch/sampling_rounds"] = float(rounds + 1)
        if self.rollouts is not None:
            metrics.update(self.rollouts.end_iteration())
        return trajectories, signal

    def _select_for_update(
        self,
        trajectories: list[Trajectory],
        metrics: dict[str, Any],
        signal: list[int] | None = None,
    ) -> list[Trajectory]:
        """The episodes to train on: with tokens, and (GRPO/RLOO) in a group with signal.

        A group whose returns have no spread gets exactly 0 advantage, so its samples are
        dropped here, before any forward pass. Under several processes every rank trains on
        the same number of episodes (DeepSpeed's gradient all-reduce needs the same number of
        steps): a rank with fewer refills with dropped episodes, whose advantage is 0.
        ``signal``: the groups with a spread, when already known.
        """
        algo = self.config.algorithm
        usable = _usable(trajectories)
        metrics["rollout/dropped"] = len(trajectories) - len(usable)
        if not algo.filters_zero_signal:
            return usable
        if signal is None:
            signal = _signal_groups(usable)
        chosen = set(signal[: self.config.rollout.num_tasks] if algo.dynamic_sampling else signal)
        kept = [t for t in usable if t.group in chosen]
        groups = {t.group for t in usable}
        metrics["batch/groups"] = float(len(groups))
        metrics["batch/groups_skipped"] = float(len(groups) - len(signal))
        metrics["batch/groups_with_signal"] = float(len(signal))
        if algo.dynamic_sampling:
            metrics["batch/groups_surplus"] = float(len(signal) - len(chosen))
        if self.world_size > 1:
            target = int(self._max_over_ranks(float(len(kept))))
            if len(kept) < target:
                rest = [t for t in usable if t.group not in chosen]
                # Groups without signal first: their advantages are exactly 0.
                with_signal = set(signal)
                rest.sort(key=lambda t: t.group in with_signal)
                kept = kept + rest[: target - len(kept)]
        metrics["batch/samples_skipped"] = float(len(usable) - len(kept))
        return kept

    # ------------------------------------------------------------------ 2. score

    def _score(
        self, batch: Batch, metrics: dict[str, Any] | None = None, actor: bool = True
    ) -> dict[str, torch.Tensor]:
        """Old logprobs, reference logprobs and values for the whole batch (no grad).

        The seconds of each pass go to ``metrics`` (``perf/old_logprob_s``,
        ``perf/reference_s``, ``perf/critic_values_s``).
        """
        micro = self.config.algorithm.micro_batch_size
        old, ref, values, ent = [], [], [], []
        rows = list(range(batch.size))
        seconds = {"old_logprob": 0.0, "reference": 0.0, "critic_values": 0.0}
        with torch.no_grad():
            for chunk in _micro_chunks(rows, micro):
                mb = batch.select(chunk).to(self.device)
                shared = self._shared_prefix(mb)
                A = batch.positions.shape[1]
                started = time.perf_counter()
                if actor:
                    logp, entropy, shared_values = self.actor(
                        mb.input_ids, mb.attention_mask, mb.positions, mb.targets, True, shared
                    )
                    old.append(_pad_to(logp, A))
                    ent.append(_pad_to(entropy, A))
                    if shared_values is not None:
                        values.append(_pad_to(shared_values, A))
                    seconds["old_logprob"] += time.perf_counter() - started
                    started = time.perf_counter()
                if self.reference is not None:
                    r, _, _ = self.reference(
                        mb.input_ids, mb.attention_mask, mb.positions, mb.targets, False, shared
                    )
                    ref.append(_pad_to(r, A))
                    seconds["reference"] += time.perf_counter() - started
                    started = time.perf_counter()
                if self.critic is not None:
                    values.append(
                        _pad_to(self.critic(mb.input_ids, mb.attention_mask, mb.positions), A)
                    )
                    seconds["critic_values"] += time.perf_counter() - started
        if metrics is not None:
            for name, value in seconds.items():
                metrics[f"perf/{name}_s"] = value
        out: dict[str, torch.Tensor] = {}
        if old:
            out["old_logp"] = torch.cat(old).cpu()
            out["entropy"] = torch.cat(ent).cpu()
        if ref:
            out["ref_logp"] = torch.cat(ref).cpu()
        if values:
            out["values"] = torch.cat(values).cpu()
        return out

    # ------------------------------------------------------------------ 3. advantages

    def _advantages(
        self, batch: Batch, scores: dict[str, torch.Tensor], metrics: dict[str, float]
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        algo = self.config.algorithm
        mask = batch.action_mask
        rewards = batch.rewards
        # The KL penalty per action token when it is part of the reward (0 otherwise).
        penalty = torch.zeros_like(rewards)
        kl_coef = self.kl_ctl.value
        if "ref_logp" in scores and "old_logp" in scores:
            kl = alg.kl_estimate(scores["old_logp"], scores["ref_logp"], algo.kl_estimator)
            metrics["kl/ref"] = float(alg.masked_mean(kl, mask))
            metrics["kl/coef"] = kl_coef
            if algo.kl_mode == "reward":
                penalty = kl_coef * kl * mask
                rewards = rewards - penalty
        returns: torch.Tensor | None = None
        if algo.advantage == "gae":
            adv, returns = alg.gae_advantages(
                rewards, scores["values"], mask, gamma=algo.gamma, lam=algo.lam
            )
            metrics["critic/explained_variance"] = alg.explained_variance(
                scores["values"], returns, mask
            )
            metrics["critic/value_mean"] = float(alg.masked_mean(scores["values"], mask))
            if algo.whiten_advantages:
                adv = alg.masked_whiten(adv, mask)
        else:
            # The episode's return (the one signal selection read) less its KL penalty.
            episode_return = batch.returns - (penalty.double() * mask.double()).sum(1)
            per_episode = alg.group_advantages(
                episode_return,
                batch.groups,
                estimator=algo.advantage,
                normalize_std=algo.grpo_normalize_std,
            )
            adv = per_episode.float()[:, None] * mask
        return adv, returns

    # ------------------------------------------------------------------ 4. update

    def _update(
        self,
        batch: Batch,
        old_logp: torch.Tensor | None,
        advantages: torch.Tensor,
        returns: torch.Tensor | None,
        old_values: torch.Tensor | None,
        ref_logp: torch.Tensor | None,
    ) -> dict[str, float]:
        """``ppo_epochs`` passes of shuffled mini-batches, one optimizer step each.

        ``old_logp=None`` means one optimizer step per batch: the update's own forward runs at
        the rollout weights and serves as the old policy (no separate scoring pass).

        Every token of the update weighs the same in every step and on every rank (DAPO's
        token-level loss, TRL's ``loss_type="dapo"``): each step's loss is summed over its
        tokens and divided by :meth:`_loss_normalizer`, the batch's tokens over all ranks per
        full mini-batch and rank. A mini-batch left short (groups without a reward spread
        dropped) counts for the share of a full one it is, as if the dropped episodes (all
        advantage 0) had filled it.
        """
        algo = self.config.algorithm
        data = _UpdateData(batch, old_logp, advantages, returns, old_values, ref_logp)
        data.normalizer = self._loss_normalizer(batch)
        means = WeightedMeans()
        grad_norms: list[float] = []
        tokens = 0
        stopped = undone = False
        step_kls: list[float] = []
        scales: list[float] = []
        # The learning rate of the update's first step (the schedule moves between steps).
        first_lr = float(self.actor.get_lr()[0])
        for _ in range(algo.ppo_epochs):
            order = self._update_order(batch)
            for start in range(0, batch.size, algo.mini_batch_size):
                rows = order[start : start + algo.mini_batch_size]
                saved = self._engine_states() if algo.max_step_kl is not None else None
                tokens += self._train_mini_batch(data, rows, means)
                norm = self.actor.get_global_grad_norm()
                if norm is not None:
                    grad_norms.append(float(norm))
                if saved is not None:
                    step_kls.append(self._mean_over_ranks(self._step_kl(data, rows)))
                    if step_kls[-1] > float(algo.max_step_kl or 0.0):
                        scale = self._shorten_step(data, rows, saved, float(algo.max_step_kl))
                        scales.append(scale)
                        stopped = True
                        undone = scale == 0.0
                        break
                if algo.target_kl is not None:
                    stopped = self._mean_over_ranks(means.mean("policy/approx_kl")) > algo.target_kl
                    if stopped:
                        break
            if stopped:
                break
        out = means.result()
        out["policy/early_stopped"] = float(stopped)
        if step_kls:
            out["policy/step_kl"] = max(step_kls)
            out["policy/step_undone"] = float(undone)
            out["policy/step_scale"] = min(scales, default=1.0)
        if data.fused_rows:
            recomputed = torch.zeros_like(batch.rollout_logprobs)
            recomputed[torch.as_tensor(data.fused_rows)] = torch.cat(data.fused_logp)
            out.update(_mismatch_metrics(batch, recomputed))
        if grad_norms:
            out["policy/grad_norm"] = float(np.mean(grad_norms))
        out["perf/train_tokens"] = float(tokens)
        out["perf/forward_backward_s"] = data.seconds["forward_backward"]
        out["perf/optimizer_s"] = data.seconds["optimizer"]
        out["optim/lr"] = first_lr
        return out

    def _engine_states(self) -> list[tuple[Any, dict[str, Any], dict[str, Any], Any]]:
        """Copies of each engine's weights, optimizer and scheduler state (``max_step_kl``)."""
        import copy

        states = []
        for engine in (self.actor, self.critic):
            if engine is not None:
                scheduler = getattr(engine, "lr_scheduler", None)
                states.append(
                    (
                        engine,
                        copy.deepcopy(engine.module.state_dict()),
                        copy.deepcopy(engine.optimizer.state_dict()),
                        None if scheduler is None else scheduler.state_dict(),
                    )
                )
        return states

    def _shorten_step(
        self,
        data: _UpdateData,
        rows: list[int],
        saved: list[tuple[Any, dict[str, Any], dict[str, Any], Any]],
        bound: float,
    ) -> float:
        """Move the weights back towards ``saved`` until the step's KL is within ``bound``.

        Halves the step (the weights between ``saved`` and the step's) up to 5 times, and
        undoes it when even a 32nd goes too far; returns the share of the step kept. Undoing
        every such step (the first version) froze a run for good once its first step went
        too far every iteration (two FrozenLake seeds collapsed to 0.2 and 0.55 success
        from 0.95+ and never moved again: every later step was undone).
        """
        stepped = [
            {k: v.detach().clone() for k, v in engine.module.state_dict().items()}
            for engine, *_ in saved
        ]
        scale = 1.0
        for _ in range(5):
            scale /= 2
            for (engine, before, _, _), after in zip(saved, stepped, strict=True):
                engine.module.load_state_dict(
                    {
                        k: before[k] + scale * (v - before[k]) if torch.is_floating_point(v) else v
                        for k, v in after.items()
                    }
                )
            if self._mean_over_ranks(self._step_kl(data, rows)) <= bound:
                return scale
        self._restore_engine_states(saved)
        return 0.0

    @staticmethod
    def _restore_engine_states(
        states: list[tuple[Any, dict[str, Any], dict[str, Any], Any]],
    ) -> None:
        """Put back what :meth:`_engine_states` copied: the step never happened."""
        for engine, weights, optimizer, scheduler in states:
            engine.module.load_state_dict(weights)
            engine.optimizer.load_state_dict(optimizer)
            if scheduler is not None:
                engine.lr_scheduler.load_state_dict(scheduler)

    @torch.no_grad()
    def _step_kl(self, data: _UpdateData, rows: list[int]) -> float:
        """The approximate KL to the rollout policy on ``rows`` at the current weights."""
        if data.old_logp is None:
            # One step per batch: the old logprobs are the step's own forward (fused).
            position = {row: i for i, row in enumerate(data.fused_rows)}
            fused = torch.cat(data.fused_logp)
        total = weight = 0.0
        for chunk in _micro_chunks(rows, self.config.algorithm.micro_batch_size):
            mb = data.batch.select(chunk).to(self.device)
            width = mb.positions.shape[1]
            logp, _, _ = self.actor(
                mb.input_ids,
                mb.attention_mask,
                mb.positions,
                mb.targets,
                False,
                self._shared_prefix(mb),
            )
            if data.old_logp is None:
                old = fused[torch.as_tensor([position[r] for r in chunk])]
            else:
                old = data.old_logp[chunk]
            kl = alg.kl_estimate(logp, old[:, :width].to(self.device), "k2")
            total += float((kl * mb.action_mask).sum())
            weight += float(mb.action_mask.sum())
        return total / max(weight, 1.0)

    def _update_order(self, batch: Batch) -> list[int]:
        """The rows of one epoch, shuffled (whole groups together with ``share_prompt``)."""
        if not self.config.algorithm.share_prompt:
            return [int(i) for i in self._rng.permutation(batch.size)]
        groups = batch.groups.tolist()
        members: dict[int, list[int]] = {}
        for row, group in enumerate(groups):
            members.setdefault(group, []).append(row)
        keys = list(members)
        order: list[int] = []
        for k in self._rng.permutation(len(keys)):
            rows = members[keys[int(k)]]
            order.extend(rows[int(i)] for i in self._rng.permutation(len(rows)))
        return order

    def _shared_prefix(self, mb: Batch) -> int:
        """The tokens every row of ``mb`` shares, to run once (0: off, or none worth it)."""
        if not self.config.algorithm.share_prompt:
            return 0
        return shared_prefix_length(mb.input_ids, mb.positions, mb.action_mask)

    def _loss_normalizer(self, batch: Batch) -> float:
        """The token count every step's summed loss is divided by (see :meth:`_update`).

        The action tokens of the batch over all ranks, per rank (DeepSpeed averages the
        ranks' gradients) and per full mini-batch: ``mean over ranks of the batch's tokens``
        times ``mini_batch_size / rows``. Every rank trains on the same number of rows.
        """
        tokens = self._mean_over_ranks(float(batch.action_mask.sum()))
        steps = batch.size / self.config.algorithm.mini_batch_size
        return max(tokens / steps, 1e-6)

    def _train_mini_batch(self, data: _UpdateData, rows: list[int], means: WeightedMeans) -> int:
        """Accumulate the mini-batch's micro-batches and step; return the tokens processed."""
        algo = self.config.algorithm
        # One normalizer for the whole update, however a mini-batch is split (see _update).
        n_tok = data.normalizer
        chunks = _micro_chunks(rows, algo.micro_batch_size)
        tokens = 0
        for k, chunk in enumerate(chunks):
            # The mini-batch, not DeepSpeed's micro-step counter, decides when the optimizer
            # steps: a short mini-batch (dropped episodes) stays aligned.
            last = k == len(chunks) - 1
            for engine in (self.actor, self.critic):
                if engine is not None:
                    engine.set_gradient_accumulation_boundary(last)
            tokens += self._micro_step(data, chunk, n_tok, last, means)
        return tokens

    def _micro_step(
        self,
        data: _UpdateData,
        chunk: list[int],
        n_tok: float,
        last: bool,
        means: WeightedMeans,
    ) -> int:
        """Forward and backward of one micro-batch (and the optimizer steps when ``last``)."""
        algo = self.config.algorithm
        started = time.perf_counter()
        mb = data.batch.select(chunk).to(self.device)
        width = mb.positions.shape[1]
        mask = mb.action_mask
        weight = float(mask.sum())
        # The micro-batch's own token mean, from a sum normalised by the mini-batch's tokens.
        share = n_tok / max(weight, 1.0)

        def rows(tensor: torch.Tensor) -> torch.Tensor:
            return tensor[chunk][:, :width].to(self.device)

        logp, entropy, shared_values = self.actor(
            mb.input_ids,
            mb.attention_mask,
            mb.positions,
            mb.targets,
            True,
            self._shared_prefix(mb),
        )
        assert entropy is not None
        if data.old_logp is None:
            old = logp.detach()
            data.fused_logp.append(_pad_to(old.cpu(), data.batch.positions.shape[1]))
            data.fused_rows.extend(chunk)
        else:
            old = rows(data.old_logp)
        is_weights = self._importance_weights(old, mb, means)
        pg_loss, stats = alg.policy_loss(
            logp,
            old,
            rows(data.advantages),
            mask,
            clip_low=algo.clip_ratio,
            clip_high=float(algo.clip_ratio_high or algo.clip_ratio),
            normalizer=n_tok,
            weights=is_weights,
        )
        loss = pg_loss - algo.entropy_coef * (entropy * mask).sum() / n_tok
        if data.ref_logp is not None and algo.kl_mode == "loss":
            kl = alg.kl_estimate(logp, rows(data.ref_logp), algo.kl_estimator)
            kl_term = (kl * mask).sum() / n_tok
            loss = loss + self.kl_ctl.value * kl_term
            means.add("loss/kl", kl_term.detach() * share, weight)
        if shared_values is not None:
            loss = loss + algo.vf_coef * self._value_loss(shared_values, data, chunk, n_tok, means)
        self.actor.backward(loss, scale_wrt_gas=False)
        stepped = time.perf_counter()
        data.seconds["forward_backward"] += stepped - started
        if last:
            self.actor.step()
            data.seconds["optimizer"] += time.perf_counter() - stepped
        means.add("loss/policy", pg_loss.detach() * share, weight)
        means.add("policy/entropy", alg.masked_mean(entropy.detach(), mask), weight)
        for key, value in stats.items():
            means.add(f"policy/{key}", value, weight)
        if self.critic is not None:
            # After the actor's backward: one graph in memory at a time.
            started = time.perf_counter()
            values = self.critic(mb.input_ids, mb.attention_mask, mb.positions)
            v_loss = self._value_loss(values, data, chunk, n_tok, means)
            self.critic.backward(algo.vf_coef * v_loss, scale_wrt_gas=False)
            stepped = time.perf_counter()
            data.seconds["forward_backward"] += stepped - started
            if last:
                self.critic.step()
                data.seconds["optimizer"] += time.perf_counter() - stepped
        return int(mb.attention_mask.sum())

    def _importance_weights(
        self, old: torch.Tensor, mb: Batch, means: WeightedMeans
    ) -> torch.Tensor | None:
        """Weights for the sampler/trainer mismatch (``algorithm.importance_sampling``).

        ``None`` when off, when the old policy is the sampler itself
        (``use_rollout_logprobs``) or when no row carries the sampler's logprobs.
        """
        algo = self.config.algorithm
        if algo.importance_sampling is None or algo.use_rollout_logprobs:
            return None
        has = mb.has_rollout_logprobs
        if not bool(has.any()):
            return None
        mask = mb.action_mask
        weights, outside = alg.importance_weights(
            old,
            mb.rollout_logprobs,
            mask,
            mode=algo.importance_sampling,
            max_ratio=algo.importance_sampling_max,
            min_ratio=algo.importance_sampling_min,
        )
        # Rows the sampler gave no logprobs for are taken as sampled by the trainer.
        weights = torch.where(has[:, None], weights, mask)
        outside = outside * has[:, None]
        weight = float(mask.sum())
        means.add("policy/is_ratio", alg.masked_mean(weights, mask), weight)
        means.add("policy/is_masked", alg.masked_mean(outside, mask), weight)
        return weights

    def _value_loss(
        self,
        values: torch.Tensor,
        data: _UpdateData,
        chunk: list[int],
        n_tok: float,
        means: WeightedMeans,
    ) -> torch.Tensor:
        """The clipped value loss of a micro-batch (shared head or separate critic)."""
        assert data.returns is not None and data.old_values is not None
        width = values.shape[1]
        mask = data.batch.action_mask[chunk][:, :width].to(self.device)
        loss, stats = alg.value_loss(
            values,
            data.old_values[chunk][:, :width].to(self.device),
            data.returns[chunk][:, :width].to(self.device),
            mask,
            clip=self.config.algorithm.value_clip,
            normalizer=n_tok,
        )
        weight = float(mask.sum())
        means.add("loss/value", loss.detach() * n_tok / max(weight, 1.0), weight)
        means.add("critic/value_clip_frac", stats["value_clip_frac"], weight)
        return loss

    # ------------------------------------------------------------------ 5. sync

    def actor_state_dict(self) -> dict[str, torch.Tensor]:
        """The actor's full weights under Hugging Face names (gathered under ZeRO-3)."""
        return full_state_dict(self.actor.module.lm, self.config.deepspeed.zero_stage)

    def push_weights(self) -> float:
        """Send the actor's weights to the rollout engine; return the seconds it took."""
        started = time.perf_counter()
        if self.policy is not None and hasattr(self.policy, "update_weights"):
            self.policy.update_weights(list(self.actor_state_dict().items()))
        return time.perf_counter() - started

    # ------------------------------------------------------------------ checkpoints

    def _engines(self) -> dict[str, Any]:
        return {"actor": self.actor, "critic": self.critic}

    def save_checkpoint(self) -> Path:
        """Save actor, critic, optimizer and trainer state; keep only the newest."""
        state = {
            **self._loop_state(),
            "kl_ctl": self.kl_ctl.state_dict(),
            "rng": self._rng.bit_generator.state,
        }
        curriculum = self.rollouts.state_dict() if self.rollouts is not None else None
        if curriculum is not None:
            state["curriculum"] = curriculum
        return self.checkpoints.save(self._engines(), f"iter_{self.iteration:06d}", state)

    def resume(self) -> bool:
        """Load the checkpoint in ``output_dir`` if there is one; return whether it did."""
        state = self.checkpoints.load(self._engines())
        if state is None:
            return False
        self._load_loop_state(state)
        self.kl_ctl.load_state_dict(state["kl_ctl"])
        self._rng.bit_generator.state = state["rng"]
        if self.rollouts is not None:
            self.rollouts.load_state_dict(state.get("curriculum"))
        if self.policy is not None:
            self.push_weights()
        return True

    def save_model(self, path: str | os.PathLike[str]) -> Path:
        """Write the actor as a Hugging Face folder (weights, config, tokenizer).

        A tied output projection is saved once (see
        :func:`rllm_adapters.trainer.checkpoint.save_hf_model`).
        """
        return save_hf_model(
            self.actor.module.lm,
            self.actor_state_dict(),
            self.tokenizer,
            path,
            is_main=self.is_main,
        )

    # ------------------------------------------------------------------ run

    def _progress_fraction(self) -> float:
        # Iterations, not wall-clock: a run slowed down by a busy machine gets the same
        # schedule per update.
        return min(self.iteration / self.config.train.iterations, 1.0)

    def _set_lr_factor(self) -> None:
        optim = self.config.optim
        if optim.lr_schedule == "linear":
            floor = optim.min_lr_ratio
            self._lr_factor = floor + (1.0 - floor) * (1.0 - self._progress_fraction())
            # The iteration's first step uses the new factor, not the previous iteration's.
            for engine in (self.actor, self.critic):
                if engine is not None:
                    apply_lr_schedule(engine)

    def _max_over_ranks(self, value: float) -> float:
        return self.ranks.max(value)

    def _mean_over_ranks(self, value: float) -> float:
        return self.ranks.mean(value)

    def _reduce(self, metrics: dict[str, Any]) -> dict[str, Any]:
        return self.ranks.mean_metrics(metrics)

    def train(self) -> list[dict[str, Any]]:
        """Run until ``train.iterations``, ``train.max_wall_s`` or ``train.stop_success``.

        The first SIGINT or SIGTERM lets the current iteration finish, then the trainer writes
        its checkpoint (and the final model) and returns; :attr:`stopped_by` names the signal.
        A second one acts as usual (``KeyboardInterrupt``, or termination).

        Returns:
            The metrics of every iteration run by this call.
        """
        return self.run_loop(self.config.train.iterations)

    def _postfix(self, metrics: dict[str, Any]) -> dict[str, str]:
        return {
            "success": f"{metrics.get('rollout/success', 0):.2f}",
            "reward": f"{metrics.get('rollout/reward', 0):.2f}",
        }

    def _done(self) -> bool:
        """Whether ``train.stop_success`` is reached over the last ``train.stop_window``."""
        cfg = self.config.train
        if cfg.stop_success is None or len(self.history) < cfg.stop_window:
            return False
        window = self.history[-cfg.stop_window :]
        return bool(np.mean([m.get("rollout/success", 0.0) for m in window]) >= cfg.stop_success)

    def close(self) -> None:
        """Release the env pools and the rollout engine (if the trainer built it)."""
        if self.rollouts is not None:
            self.rollouts.close()
        if self._owns_policy and self.policy is not None:
            self.policy.close()
            self.policy = None

    def __enter__(self) -> PPOTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------- helpers


def _max_rss_gib() -> float:
    import resource

    # Linux reports kibibytes.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _pad_to(x: torch.Tensor | None, width: int) -> torch.Tensor:
    assert x is not None
    if x.shape[1] == width:
        return x
    return torch.nn.functional.pad(x, (0, width - x.shape[1]))


def _mismatch_metrics(batch: Batch, trainer_logp: torch.Tensor) -> dict[str, float]:
    """``logprob_mismatch/*`` over the rows that carry the sampler's logprobs."""
    rows = batch.has_rollout_logprobs
    if not bool(rows.any()):
        return {}
    stats = alg.logprob_mismatch(
        trainer_logp[rows], batch.rollout_logprobs[rows], batch.action_mask[rows]
    )
    return {f"logprob_mismatch/{name}": value for name, value in stats.items()}


@dataclass
class _UpdateData:
    """What one update trains on (row-aligned with ``batch``)."""

    batch: Batch
    old_logp: torch.Tensor | None
    advantages: torch.Tensor
    returns: torch.Tensor | None
    old_values: torch.Tensor | None
    ref_logp: torch.Tensor | None
    #: Old logprobs from the update's own forward when ``old_logp`` is None.
    fused_logp: list[torch.Tensor] = field(default_factory=list)
    fused_rows: list[int] = field(default_factory=list)
    #: The token count every step's summed loss is divided by.
    normalizer: float = 1.0
    #: Seconds of the update's stages.
    seconds: dict[str, float] = field(
        default_factory=lambda: {"forward_backward": 0.0, "optimizer": 0.0}
    )


def _usable(trajectories: Sequence[Trajectory]) -> list[Trajectory]:
    """Episodes with generated tokens (the others have nothing to train on)."""
    return [t for t in trajectories if t.num_completion_tokens > 0]


def _signal_groups(trajectories: Sequence[Trajectory]) -> list[int]:
    """Group ids (in order of first appearance) whose returns have a spread."""
    if not trajectories:
        return []
    returns = episode_returns(trajectories)
    groups = torch.tensor([t.group for t in trajectories], dtype=torch.long)
    keep = alg.signal_groups(returns, groups)
    out: list[int] = []
    for t, k in zip(trajectories, keep.tolist(), strict=True):
        if k and t.group not in out:
            out.append(t.group)
    return out


def config_summary(config: TrainerConfig) -> str:
    """One line describing the run."""
    a, r = config.algorithm, config.rollout
    return (
        f"{a.advantage} on {config.env} with {config.model}: {r.num_tasks}x{r.group_size} "
        f"episodes/iter via {r.backend}, ZeRO-{config.deepspeed.zero_stage}"
        f"{' bf16' if config.deepspeed.bf16 else ''}"
    )
