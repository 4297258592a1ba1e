"""PPO / GRPO / RLOO for language-model policies on DeepSpeed, with rollouts from vLLM.

One iteration:

1. **Rollout**: ``num_tasks x group_size`` episodes through :func:`adapters.rollout.rollout`
   with the policy backend (vLLM by default), giving token-exact trajectories.
2. **Score**: the trainer recomputes the logprob of every generated token (reported against
   the sampler's as ``logprob_mismatch/*``), the frozen reference's logprobs (when
   ``kl_coef > 0``) and the critic's values (GAE).
3. **Advantages**: GAE over the generated tokens (the env's reward on each turn's last token,
   minus the KL penalty in ``kl_mode: reward``), or group-relative returns (GRPO, RLOO).
4. **Update**: ``ppo_epochs`` passes of shuffled mini-batches; clipped policy loss, entropy
   bonus, optional KL loss, clipped value loss; losses are token means over the mini-batch
   and only where the loss mask is 1.
5. **Sync**: the new actor weights go to the rollout engine (vLLM ``reload_weights`` in
   process), so the next rollout samples from them.

The actor and the critic are DeepSpeed engines (ZeRO 0-3, bf16 optional) with torch AdamW.
Without a launcher the trainer sets up a one-process group itself; under ``deepspeed`` or
``torchrun`` every process rolls out its own share of episodes with its own engine and
DeepSpeed averages the gradients.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import socket
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from adapters.trainer import algorithms as alg
from adapters.trainer.batch import Batch, trajectories_to_batch
from adapters.trainer.config import TrainerConfig
from adapters.trainer.metrics import MetricsLogger
from adapters.trainer.models import ActionScorer, load_causal_lm, load_value_model
from rllm_agents.trajectory import Trajectory
from rllm_envs.error import require

__all__ = ["PPOTrainer", "RolloutFn", "setup_distributed"]

#: ``(policy, iteration) -> trajectories``: replaces the built-in rollout (tests, custom loops).
RolloutFn = Callable[[Any, int], list[Trajectory]]

_STATE_FILE = "trainer_state.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def setup_distributed() -> tuple[int, int]:
    """Start (or join) the process group DeepSpeed needs; return ``(rank, world_size)``.

    Under ``deepspeed``/``torchrun`` the launcher's variables are used; a plain ``python``
    process becomes a group of one (DeepSpeed otherwise looks for MPI).
    """
    deepspeed = require("deepspeed", "train", feature="the PPO trainer")
    if "RANK" not in os.environ:
        os.environ.update(
            {
                "RANK": "0",
                "WORLD_SIZE": "1",
                "LOCAL_RANK": "0",
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": os.environ.get("MASTER_PORT", str(_free_port())),
            }
        )
    import torch.distributed as dist

    if not dist.is_initialized():
        from deepspeed.accelerator import get_accelerator

        accelerator = get_accelerator()
        if accelerator.device_name() != "cpu":
            # One device per rank, before anything allocates on the default one.
            accelerator.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        deepspeed.init_distributed(dist_backend=accelerator.communication_backend_name())
    return dist.get_rank(), dist.get_world_size()


def _micro_chunks(rows: Sequence[int], size: int) -> list[list[int]]:
    return [list(rows[i : i + size]) for i in range(0, len(rows), size)]


class PPOTrainer:
    """Train a causal LM on an rllm-envs environment (see the module docstring).

    Args:
        config: The run's configuration.
        rollout_fn: Replace the built-in rollout: ``rollout_fn(policy, iteration)`` returns
            the iteration's trajectories (``group`` set for GRPO/RLOO).
        policy: A ready policy backend (otherwise built from ``config.rollout``).
    """

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
        self._started = time.perf_counter()
        from deepspeed.accelerator import get_accelerator

        self.device = torch.device(get_accelerator().current_device_name())
        self._seed_everything(config.train.seed + self.rank)
        self.dtype = torch.bfloat16 if config.deepspeed.bf16 else torch.float32
        self._lr_factor = 1.0
        self.model_path = self._resolve_model(config.model)
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path)
        self.pad_id = int(self.tokenizer.pad_token_id or 0)
        algo = config.algorithm
        self.shared_critic = algo.uses_critic and algo.critic == "shared"
        self.actor = self._engine(
            ActionScorer(
                load_causal_lm(self.model_path),
                config.rollout.temperature,
                value_head=self.shared_critic,
            ),
            config.optim.lr,
        )
        self.critic = None
        if algo.uses_critic and not self.shared_critic:
            critic = load_value_model(config.critic_model or self.model_path)
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
        if config.train.resume:
            self.resume()

    # ------------------------------------------------------------------ setup

    def _resolve_model(self, model: str) -> str:
        if model == "tiny":
            from adapters.tiny_model import TinyModelSpec, tiny_model_path

            return str(tiny_model_path(TinyModelSpec(**self.config.tiny_model)))
        return model

    def _seed_everything(self, seed: int) -> None:
        random.seed(seed)
        np.random.seed(seed % 2**32)
        torch.manual_seed(seed)
        self._rng = np.random.default_rng(seed)

    def _ds_config(self) -> dict[str, Any]:
        algo, ds = self.config.algorithm, self.config.deepspeed
        gas = algo.mini_batch_size // algo.micro_batch_size
        zero: dict[str, Any] = {"stage": ds.zero_stage}
        if ds.offload_optimizer:
            zero["offload_optimizer"] = {"device": "cpu"}
        config: dict[str, Any] = {
            "train_micro_batch_size_per_gpu": algo.micro_batch_size,
            "gradient_accumulation_steps": gas,
            "train_batch_size": algo.micro_batch_size * gas * self.world_size,
            "gradient_clipping": self.config.optim.max_grad_norm,
            "zero_optimization": zero,
            "bf16": {"enabled": ds.bf16},
            "steps_per_print": 10**9,
            "wall_clock_breakdown": False,
            "zero_allow_untested_optimizer": True,
        }
        _merge(config, ds.extra)
        return config

    def _engine(self, module: torch.nn.Module, lr: float) -> Any:
        import deepspeed

        optim = self.config.optim
        params = [p for p in module.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            params, lr=lr, betas=optim.betas, eps=optim.eps, weight_decay=optim.weight_decay
        )
        warmup = optim.warmup_steps

        def factor(step: int) -> float:
            ramp = min(1.0, (step + 1) / warmup) if warmup else 1.0
            return ramp * self._lr_factor

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
        engine, _, _, _ = deepspeed.initialize(
            model=module, optimizer=optimizer, lr_scheduler=scheduler, config=self._ds_config()
        )
        return engine

    def _make_policy(self) -> Any:
        from adapters.backends import make_policy

        settings = self.config.rollout
        kwargs = dict(settings.engine_kwargs)
        if settings.backend == "vllm":
            # In-process engine: fast start and the only mode that takes tensors directly.
            os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
            if self.device.type == "cpu":
                os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")
            kwargs.setdefault("seed", self.config.train.seed + self.rank)
        return make_policy(settings.backend, self.model_path, **kwargs)

    # ------------------------------------------------------------------ rollout

    def collect(self, iteration: int) -> list[Trajectory]:
        """Roll out one iteration's episodes with the current policy."""
        if self._rollout_fn is not None:
            return list(self._rollout_fn(self.policy, iteration))
        from adapters.backends.base import SamplingParams
        from adapters.rollout import RolloutConfig, rollout

        settings = self.config.rollout
        per_iter = settings.num_tasks * self.world_size
        base = (
            self.config.train.seed * 1_000_003
            + iteration * per_iter
            + self.rank * settings.num_tasks
        )
        rollout_config = RolloutConfig(
            num_envs=settings.num_envs or settings.batch_size,
            group_size=settings.group_size,
            sampling=SamplingParams(
                max_tokens=settings.max_tokens,
                temperature=settings.temperature,
                top_p=settings.top_p,
                # No per-request seeds: vLLM-CPU 0.32 fails on seeded requests whose prompt
                # is prefilled in chunks ("CPU Generator does not use offset"); the engine's
                # own seed keeps runs reproducible.
                seed=None,
                logprobs=True,
            ),
            env_backend=settings.env_backend,
            seed=base % 2**31,
            max_turns=settings.max_turns,
            agent_kwargs=dict(settings.agent_kwargs),
            progress=settings.progress and self.is_main,
        )
        assert self.policy is not None
        return rollout(
            self.config.env,
            self.policy,
            rollout_config,
            num_tasks=settings.num_tasks,
            agent=settings.agent,
            env_kwargs=self.config.env_kwargs,
        )

    # ------------------------------------------------------------------ scoring

    def _score(self, batch: Batch, actor: bool = True) -> dict[str, torch.Tensor]:
        """Old logprobs, reference logprobs and values for the whole batch (no grad)."""
        micro = self.config.algorithm.micro_batch_size
        old, ref, values, ent = [], [], [], []
        rows = list(range(batch.size))
        with torch.no_grad():
            for chunk in _micro_chunks(rows, micro):
                mb = batch.select(chunk).to(self.device)
                A = batch.positions.shape[1]
                if actor:
                    logp, entropy, shared_values = self.actor(
                        mb.input_ids, mb.attention_mask, mb.positions, mb.targets, True
                    )
                    old.append(_pad_to(logp, A))
                    ent.append(_pad_to(entropy, A))
                    if shared_values is not None:
                        values.append(_pad_to(shared_values, A))
                if self.reference is not None:
                    r, _, _ = self.reference(
                        mb.input_ids, mb.attention_mask, mb.positions, mb.targets, False
                    )
                    ref.append(_pad_to(r, A))
                if self.critic is not None:
                    values.append(
                        _pad_to(self.critic(mb.input_ids, mb.attention_mask, mb.positions), A)
                    )
        out: dict[str, torch.Tensor] = {}
        if old:
            out["old_logp"] = torch.cat(old).cpu()
            out["entropy"] = torch.cat(ent).cpu()
        if ref:
            out["ref_logp"] = torch.cat(ref).cpu()
        if values:
            out["values"] = torch.cat(values).cpu()
        return out

    def _advantages(
        self, batch: Batch, scores: dict[str, torch.Tensor], metrics: dict[str, float]
    ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        algo = self.config.algorithm
        mask = batch.action_mask
        rewards = batch.rewards.clone()
        kl_coef = self.kl_ctl.value
        if "ref_logp" in scores and "old_logp" in scores:
            kl = alg.kl_estimate(scores["old_logp"], scores["ref_logp"], algo.kl_estimator)
            metrics["kl/ref"] = float(alg.masked_mean(kl, mask))
            metrics["kl/coef"] = kl_coef
            if algo.kl_mode == "reward":
                rewards = rewards - kl_coef * kl * mask
        returns: torch.Tensor | None = None
        if algo.advantage == "gae":
            adv, returns = alg.gae_advantages(
                rewards, scores["values"], mask, gamma=algo.gamma, lam=algo.lam
            )
            metrics["critic/explained_variance"] = _explained_variance(
                scores["values"], returns, mask
            )
            metrics["critic/value_mean"] = float(alg.masked_mean(scores["values"], mask))
            if algo.whiten_advantages:
                adv = alg.masked_whiten(adv, mask)
        else:
            episode_return = (rewards * mask).sum(1)
            per_episode = alg.group_advantages(
                episode_return,
                batch.groups,
                estimator=algo.advantage,
                normalize_std=algo.grpo_normalize_std,
            )
            adv = per_episode[:, None] * mask
        return adv, returns, rewards

    # ------------------------------------------------------------------ update

    def _update(
        self,
        batch: Batch,
        old_logp: torch.Tensor | None,
        advantages: torch.Tensor,
        returns: torch.Tensor | None,
        old_values: torch.Tensor | None,
        ref_logp: torch.Tensor | None,
    ) -> dict[str, float]:
        algo = self.config.algorithm
        sums: dict[str, float] = {}
        weights: dict[str, float] = {}
        grad_norms: list[float] = []

        def add(name: str, value: torch.Tensor | float, weight: float) -> None:
            sums[name] = sums.get(name, 0.0) + float(value) * weight
            weights[name] = weights.get(name, 0.0) + weight

        tokens = 0
        stopped = False
        fused_logp: list[torch.Tensor] = []
        fused_rows: list[int] = []
        for _ in range(algo.ppo_epochs):
            if stopped:
                break
            order = self._rng.permutation(batch.size).tolist()
            for start in range(0, batch.size, algo.mini_batch_size):
                if stopped:
                    break
                mini = order[start : start + algo.mini_batch_size]
                n_tok = float(batch.action_mask[mini].sum().clamp(min=1))
                chunks = _micro_chunks(mini, algo.micro_batch_size)
                for k, chunk in enumerate(chunks):
                    # The mini-batch, not DeepSpeed's micro-step counter, decides when the
                    # optimizer steps: a short mini-batch (dropped episodes) stays aligned.
                    last = k == len(chunks) - 1
                    self.actor.set_gradient_accumulation_boundary(last)
                    if self.critic is not None:
                        self.critic.set_gradient_accumulation_boundary(last)
                    mb = batch.select(chunk).to(self.device)
                    A = mb.positions.shape[1]
                    mask = mb.action_mask
                    adv = advantages[chunk][:, :A].to(self.device)
                    logp, entropy, shared_values = self.actor(
                        mb.input_ids, mb.attention_mask, mb.positions, mb.targets, True
                    )
                    if old_logp is None:
                        # One optimizer step per batch: this forward runs at the rollout
                        # weights, so it is the old policy (no separate scoring pass).
                        old = logp.detach()
                        fused_logp.append(_pad_to(old.cpu(), batch.positions.shape[1]))
                        fused_rows.extend(chunk)
                    else:
                        old = old_logp[chunk][:, :A].to(self.device)
                    assert entropy is not None
                    pg_loss, stats = alg.policy_loss(
                        logp,
                        old,
                        adv,
                        mask,
                        clip_low=algo.clip_ratio,
                        clip_high=float(algo.clip_ratio_high or algo.clip_ratio),
                        normalizer=n_tok,
                    )
                    ent_sum = (entropy * mask).sum() / n_tok
                    loss = pg_loss - algo.entropy_coef * ent_sum
                    if ref_logp is not None and algo.kl_mode == "loss":
                        ref = ref_logp[chunk][:, :A].to(self.device)
                        kl = alg.kl_estimate(logp, ref, algo.kl_estimator)
                        kl_term = (kl * mask).sum() / n_tok
                        loss = loss + self.kl_ctl.value * kl_term
                        add(
                            "loss/kl",
                            kl_term.detach() * n_tok / max(mask.sum().item(), 1),
                            float(mask.sum()),
                        )
                    if shared_values is not None:
                        assert returns is not None and old_values is not None
                        v_loss, v_stats = alg.value_loss(
                            shared_values,
                            old_values[chunk][:, :A].to(self.device),
                            returns[chunk][:, :A].to(self.device),
                            mask,
                            clip=algo.value_clip,
                            normalizer=n_tok,
                        )
                        loss = loss + algo.vf_coef * v_loss
                        share_v = n_tok / max(float(mask.sum()), 1.0)
                        add("loss/value", v_loss.detach() * share_v, float(mask.sum()))
                        add("critic/value_clip_frac", v_stats["value_clip_frac"], float(mask.sum()))
                    # Losses are already token means over the mini-batch.
                    self.actor.backward(loss, scale_wrt_gas=False)
                    if last:
                        self.actor.step()
                    w = float(mask.sum())
                    tokens += int(mb.attention_mask.sum())
                    share = n_tok / max(w, 1.0)
                    add("loss/policy", pg_loss.detach() * share, w)
                    add("policy/entropy", alg.masked_mean(entropy.detach(), mask), w)
                    for key, value in stats.items():
                        add(f"policy/{key}", value, w)
                    if self.critic is not None:
                        assert returns is not None and old_values is not None
                        ret = returns[chunk][:, :A].to(self.device)
                        ov = old_values[chunk][:, :A].to(self.device)
                        values = self.critic(mb.input_ids, mb.attention_mask, mb.positions)
                        v_loss, v_stats = alg.value_loss(
                            values, ov, ret, mask, clip=algo.value_clip, normalizer=n_tok
                        )
                        self.critic.backward(algo.vf_coef * v_loss, scale_wrt_gas=False)
                        if last:
                            self.critic.step()
                        add("loss/value", v_loss.detach() * share, w)
                        add("critic/value_clip_frac", v_stats["value_clip_frac"], w)
                norm = self.actor.get_global_grad_norm()
                if norm is not None:
                    grad_norms.append(float(norm))
                if algo.target_kl is not None:
                    kl_now = self._mean_over_ranks(
                        sums["policy/approx_kl"] / max(weights["policy/approx_kl"], 1e-9)
                    )
                    stopped = kl_now > algo.target_kl
        out = {k: sums[k] / max(weights[k], 1e-9) for k in sums}
        out["policy/early_stopped"] = float(stopped)
        if fused_logp:
            order = torch.as_tensor(fused_rows)
            recomputed = torch.zeros_like(batch.rollout_logprobs)
            recomputed[order] = torch.cat(fused_logp)
            out.update(_mismatch_metrics(batch, recomputed))
        if grad_norms:
            out["policy/grad_norm"] = float(np.mean(grad_norms))
        out["perf/train_tokens"] = float(tokens)
        out["optim/lr"] = float(self.actor.get_lr()[0])
        return out

    # ------------------------------------------------------------------ weights

    def actor_state_dict(self) -> dict[str, torch.Tensor]:
        """The actor's full weights under Hugging Face names (gathered under ZeRO-3)."""
        lm = self.actor.module.lm
        if self.config.deepspeed.zero_stage == 3:
            import deepspeed

            with deepspeed.zero.GatheredParameters(list(lm.parameters()), modifier_rank=None):
                return {k: v.detach().cpu().clone() for k, v in lm.state_dict().items()}
        return {k: v.detach().cpu().clone() for k, v in lm.state_dict().items()}

    def push_weights(self) -> float:
        """Send the actor's weights to the rollout engine; return the seconds it took."""
        started = time.perf_counter()
        if self.policy is not None and hasattr(self.policy, "update_weights"):
            self.policy.update_weights(list(self.actor_state_dict().items()))
        return time.perf_counter() - started

    # ------------------------------------------------------------------ checkpoints

    @property
    def checkpoint_dir(self) -> Path:
        """Where checkpoints live (``<output_dir>/checkpoint``)."""
        return self.output_dir / "checkpoint"

    def save_checkpoint(self) -> Path:
        """Save actor, critic, optimizer and trainer state; keep only the newest."""
        tag = f"iter_{self.iteration:06d}"
        ckpt = self.checkpoint_dir
        self.actor.save_checkpoint(str(ckpt / "actor"), tag=tag)
        if self.critic is not None:
            self.critic.save_checkpoint(str(ckpt / "critic"), tag=tag)
        if self.is_main:
            state = {
                "tag": tag,
                "iteration": self.iteration,
                "episodes": self.episodes,
                "kl_ctl": self.kl_ctl.state_dict(),
                "rng": self._rng.bit_generator.state,
                "torch_rng": torch.get_rng_state().tolist(),
                "elapsed_s": self.elapsed,
            }
            tmp = ckpt / (_STATE_FILE + ".tmp")
            tmp.write_text(json.dumps(state), encoding="utf-8")
            os.replace(tmp, ckpt / _STATE_FILE)
            for sub in ("actor", "critic"):
                for old in (ckpt / sub).glob("iter_*"):
                    if old.name != tag:
                        shutil.rmtree(old, ignore_errors=True)
        return ckpt

    def resume(self) -> bool:
        """Load the checkpoint in ``output_dir`` if there is one; return whether it did."""
        state_path = self.checkpoint_dir / _STATE_FILE
        if not state_path.is_file():
            return False
        state = json.loads(state_path.read_text(encoding="utf-8"))
        tag = state["tag"]
        self.actor.load_checkpoint(str(self.checkpoint_dir / "actor"), tag=tag)
        if self.critic is not None:
            self.critic.load_checkpoint(str(self.checkpoint_dir / "critic"), tag=tag)
        self.iteration = int(state["iteration"])
        self.episodes = int(state["episodes"])
        self.kl_ctl.load_state_dict(state["kl_ctl"])
        self._rng.bit_generator.state = state["rng"]
        torch.set_rng_state(torch.tensor(state["torch_rng"], dtype=torch.uint8))
        self._elapsed_offset = float(state.get("elapsed_s", 0.0))
        self._started = time.perf_counter()
        if self.policy is not None:
            self.push_weights()
        return True

    def save_model(self, path: str | os.PathLike[str]) -> Path:
        """Write the actor as a Hugging Face folder (weights, config, tokenizer)."""
        state = self.actor_state_dict()
        out = Path(path)
        if self.is_main:
            out.mkdir(parents=True, exist_ok=True)
            self.actor.module.lm.save_pretrained(out, state_dict=state)
            self.tokenizer.save_pretrained(out)
        return out

    # ------------------------------------------------------------------ the loop

    @property
    def elapsed(self) -> float:
        """Training seconds so far (across resumes)."""
        return getattr(self, "_elapsed_offset", 0.0) + time.perf_counter() - self._started

    def _progress_fraction(self) -> float:
        # Iterations, not wall-clock: a run slowed down by a busy machine gets the same
        # schedule per update.
        return min(self.iteration / self.config.train.iterations, 1.0)

    def _set_lr_factor(self) -> None:
        optim = self.config.optim
        if optim.lr_schedule == "linear":
            floor = optim.min_lr_ratio
            self._lr_factor = floor + (1.0 - floor) * (1.0 - self._progress_fraction())

    def step(self) -> dict[str, Any]:
        """Run one iteration (rollout, score, update, sync) and return its metrics."""
        algo = self.config.algorithm
        self._set_lr_factor()
        metrics: dict[str, Any] = {}
        t0 = time.perf_counter()
        trajectories = self.collect(self.iteration)
        t1 = time.perf_counter()
        metrics.update(_rollout_metrics(trajectories))
        usable = [t for t in trajectories if t.num_completion_tokens > 0]
        metrics["rollout/dropped"] = len(trajectories) - len(usable)
        generated = sum(t.num_completion_tokens for t in trajectories)
        metrics["perf/rollout_s"] = t1 - t0
        metrics["perf/rollout_tokens_per_s"] = generated / max(t1 - t0, 1e-9)
        if usable:
            batch = trajectories_to_batch(usable, self.pad_id)
            t_score = time.perf_counter()
            single_step = (
                algo.ppo_epochs == 1
                and len(usable) <= algo.mini_batch_size
                and not algo.uses_critic
                and (self.reference is None or algo.kl_mode == "loss")
                and not algo.use_rollout_logprobs
            )
            if single_step:
                # Only the reference needs scoring; the update's own forward is the old policy.
                scores = self._score(batch, actor=False)
                old_logp: torch.Tensor | None = None
            else:
                scores = self._score(batch)
                metrics.update(_mismatch_metrics(batch, scores["old_logp"]))
                old_logp = scores["old_logp"]
                if algo.use_rollout_logprobs and bool(batch.has_rollout_logprobs.all()):
                    old_logp = batch.rollout_logprobs
            metrics["perf/score_s"] = time.perf_counter() - t_score
            adv, returns, _ = self._advantages(batch, scores, metrics)
            metrics["policy/advantage_abs"] = float(alg.masked_mean(adv.abs(), batch.action_mask))
            t2 = time.perf_counter()
            update = self._update(
                batch, old_logp, adv, returns, scores.get("values"), scores.get("ref_logp")
            )
            t3 = time.perf_counter()
            metrics.update(update)
            metrics["perf/update_s"] = t3 - t2
            # Tokens through the update (forward + backward) per second of scoring + update.
            metrics["perf/train_tokens_per_s"] = update["perf/train_tokens"] / max(
                t3 - t_score, 1e-9
            )
            if "kl/ref" not in metrics and "loss/kl" in update:
                metrics["kl/ref"] = update["loss/kl"]
                metrics["kl/coef"] = self.kl_ctl.value
            if "kl/ref" in metrics:
                self.kl_ctl.update(metrics["kl/ref"], len(usable))
            metrics["perf/sync_s"] = self.push_weights()
        self.iteration += 1
        self.episodes += len(trajectories) * self.world_size
        metrics = self._reduce(metrics)
        metrics["episodes"] = self.episodes
        metrics["time_s"] = self.elapsed
        # CPU seconds of this process (all threads) since it started: with a busy machine the
        # wall clock overstates the work, this does not.
        metrics["perf/process_cpu_s"] = time.process_time()
        metrics["perf/iteration_s"] = time.perf_counter() - t0
        return metrics

    def _mean_over_ranks(self, value: float) -> float:
        if self.world_size == 1:
            return value
        import torch.distributed as dist

        tensor = torch.tensor([value], dtype=torch.float64)
        dist.all_reduce(tensor)
        return float(tensor.item()) / self.world_size

    def _reduce(self, metrics: dict[str, Any]) -> dict[str, Any]:
        if self.world_size == 1:
            return metrics
        import torch.distributed as dist

        keys = sorted(k for k, v in metrics.items() if isinstance(v, (int, float)))
        values = torch.tensor([float(metrics[k]) for k in keys], dtype=torch.float64)
        dist.all_reduce(values)
        return {k: float(v) / self.world_size for k, v in zip(keys, values.tolist(), strict=True)}

    def train(self) -> list[dict[str, Any]]:
        """Run until ``train.iterations``, ``train.max_wall_s`` or ``train.stop_success``.

        Returns:
            The metrics of every iteration run by this call.
        """
        cfg = self.config.train
        if self.is_main:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            (self.output_dir / "config.json").write_text(
                json.dumps(self.config.to_dict(), indent=2), encoding="utf-8"
            )
            self.logger = MetricsLogger(
                self.output_dir,
                tensorboard=self.config.logging.tensorboard,
                wandb=self.config.logging.wandb,
                wandb_project=self.config.logging.wandb_project,
                run_name=self.config.logging.run_name,
                config=self.config.to_dict(),
            )
        bar = self._progress()
        history: list[dict[str, Any]] = []
        try:
            while self.iteration < cfg.iterations:
                if cfg.max_wall_s is not None and self.elapsed >= cfg.max_wall_s:
                    break
                metrics = self.step()
                history.append(metrics)
                self.history.append(metrics)
                if self.logger is not None:
                    self.logger.log(metrics, self.iteration)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(
                        success=f"{metrics.get('rollout/success', 0):.2f}",
                        reward=f"{metrics.get('rollout/reward', 0):.2f}",
                        refresh=False,
                    )
                if cfg.save_every and self.iteration % cfg.save_every == 0:
                    self.save_checkpoint()
                if cfg.stop_success is not None and len(self.history) >= cfg.stop_window:
                    window = self.history[-cfg.stop_window :]
                    if np.mean([m.get("rollout/success", 0.0) for m in window]) >= cfg.stop_success:
                        break
            self.save_checkpoint()
            if cfg.save_final_model:
                self.save_model(self.output_dir / "final_model")
        finally:
            if bar is not None:
                bar.close()
            if self.logger is not None:
                self.logger.close()
        return history

    def _progress(self) -> Any:
        if not (self.config.logging.progress and self.is_main):
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        return tqdm(
            total=self.config.train.iterations, initial=self.iteration, desc="ppo", unit="it"
        )

    def close(self) -> None:
        """Release the rollout engine (if the trainer built it)."""
        if self._owns_policy and self.policy is not None:
            self.policy.close()
            self.policy = None

    def __enter__(self) -> PPOTrainer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------- helpers


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def _pad_to(x: torch.Tensor | None, width: int) -> torch.Tensor:
    assert x is not None
    if x.shape[1] == width:
        return x
    return torch.nn.functional.pad(x, (0, width - x.shape[1]))


def _explained_variance(values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor) -> float:
    var_ret = alg.masked_mean((returns - alg.masked_mean(returns, mask)) ** 2, mask)
    if float(var_ret) < 1e-12:
        return float("nan")
    diff = returns - values
    var_diff = alg.masked_mean((diff - alg.masked_mean(diff, mask)) ** 2, mask)
    return float(1.0 - var_diff / var_ret)


def _mismatch_metrics(batch: Batch, trainer_logp: torch.Tensor) -> dict[str, float]:
    rows = batch.has_rollout_logprobs
    if not bool(rows.any()):
        return {}
    mask = batch.action_mask[rows]
    diff = (trainer_logp[rows] - batch.rollout_logprobs[rows]) * mask
    n = float(mask.sum().clamp(min=1))
    return {
        "logprob_mismatch/mean_abs": float(diff.abs().sum() / n),
        "logprob_mismatch/max_abs": float(diff.abs().max()),
        # KL(sampler || trainer) estimated on the sampled tokens.
        "logprob_mismatch/kl": float(
            (alg.kl_estimate(batch.rollout_logprobs[rows], trainer_logp[rows], "k3") * mask).sum()
            / n
        ),
    }


def _rollout_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
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
            totals: dict[str, float] = {}
            for s in t.steps:
                for name, value in (s.info.get("reward_components") or {}).items():
                    if isinstance(value, (int, float)):
                        totals[name] = totals.get(name, 0.0) + float(value)
            for name, value in totals.items():
                components.setdefault(name, []).append(value)
        for name, values in components.items():
            out[f"reward_components/{name}"] = float(np.mean(values))
    finishes: dict[str, int] = {}
    for t in trajectories:
        finishes[t.finish] = finishes.get(t.finish, 0) + 1
    for name, count in finishes.items():
        out[f"rollout/finish_{name}"] = count / n
    return out


def config_summary(config: TrainerConfig) -> str:
    """One line describing the run."""
    a, r = config.algorithm, config.rollout
    return (
        f"{a.advantage} on {config.env} with {config.model}: {r.num_tasks}x{r.group_size} "
        f"episodes/iter via {r.backend}, ZeRO-{config.deepspeed.zero_stage}"
        f"{' bf16' if config.deepspeed.bf16 else ''}"
    )
