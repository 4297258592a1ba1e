"""The trainer's process plumbing: process group, engines, reductions, a stop taken together.

The process group DeepSpeed needs, the DeepSpeed engines, reductions over the ranks and a
signal-triggered stop that every rank takes after the same iteration. None of it knows the
RL algorithm; :class:`~rllm_adapters.trainer.trainer.PPOTrainer` and
:class:`~rllm_adapters.trainer.sft.SFTTrainer` both build their engines with it, so that their own
code is the algorithm.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Mapping
from typing import Any

import torch

from rllm_adapters.trainer.config import RunConfig
from rllm_envs.error import require

__all__ = [
    "GracefulStop",
    "Ranks",
    "apply_lr_schedule",
    "build_engine",
    "child_env",
    "deepspeed_config",
    "setup_distributed",
]

_log = logging.getLogger("rllm_adapters.trainer.trainer")


#: The launcher variables of a process group.
_GROUP_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
#: ``"<pid>:<port>"`` of the process that gave itself a one-process group (and set ``_GROUP_VARS``).
_OWN_GROUP = "RLLM_ADAPTERS_OWN_GROUP"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _inherited_own_group(environ: Mapping[str, str]) -> bool:
    """Whether ``environ``'s group variables are another process's own group, not a launcher's.

    The marker is ``"<pid>:<port>"``; a launcher (torchrun, deepspeed) that started this process
    from such a parent sets a port of its own, so its variables are kept.
    """
    pid, _, port = environ.get(_OWN_GROUP, "").partition(":")
    return bool(pid) and pid != str(os.getpid()) and environ.get("MASTER_PORT") == port


def child_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``os.environ`` (or ``environ``) for a child process, without this process's own group.

    A plain ``python`` trainer gives itself a one-process group by setting the launcher's
    variables; a child that inherited them (a TRL script, a second trainer) would start its
    store on the port this process's store holds (``EADDRINUSE``). A launcher's variables
    (``torchrun``, ``deepspeed``) are kept.
    """
    env = dict(os.environ if environ is None else environ)
    pid, _, port = env.pop(_OWN_GROUP, "").partition(":")
    if pid and env.get("MASTER_PORT") == port:
        for name in _GROUP_VARS:
            env.pop(name, None)
    return env


def setup_distributed() -> tuple[int, int]:
    """Start (or join) the process group DeepSpeed needs; return ``(rank, world_size)``.

    Under ``deepspeed``/``torchrun`` the launcher's variables are used; a plain ``python``
    process becomes a group of one (DeepSpeed otherwise looks for MPI).
    """
    deepspeed = require("deepspeed", "train", feature="the PPO trainer")
    if "RANK" not in os.environ or _inherited_own_group(os.environ):
        # A parent's own group is not ours: its port is taken by the parent's store.
        own_port = os.environ.get("MASTER_PORT") if _OWN_GROUP not in os.environ else None
        port = own_port or str(_free_port())
        os.environ.update(
            {
                "RANK": "0",
                "WORLD_SIZE": "1",
                "LOCAL_RANK": "0",
                "MASTER_ADDR": "127.0.0.1",
                "MASTER_PORT": port,
                _OWN_GROUP: f"{os.getpid()}:{port}",
            }
        )
    elif not os.environ.get(_OWN_GROUP, "").startswith(f"{os.getpid()}:"):
        os.environ.pop(_OWN_GROUP, None)  # a launcher's group, started from a marked parent
    import torch.distributed as dist

    if not dist.is_initialized():
        from deepspeed.accelerator import get_accelerator
        from deepspeed.utils import groups

        # A group destroyed behind DeepSpeed's back (an in-process vLLM engine shutting down
        # tears down torch.distributed) leaves its cached world group stale: "Group ... is not
        # registered" at the next engine. Drop DeepSpeed's references before starting anew.
        release = getattr(groups, "_release_process_group_references", None)
        if release is not None:
            release()

        accelerator = get_accelerator()
        if accelerator.device_name() != "cpu":
            # One device per rank, before anything allocates on the default one.
            accelerator.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        deepspeed.init_distributed(dist_backend=accelerator.communication_backend_name())
    return dist.get_rank(), dist.get_world_size()


class Ranks:
    """Reductions over the processes of the group (no-ops for a group of one).

    Args:
        world_size: Number of processes.
    """

    def __init__(self, world_size: int) -> None:
        self.world_size = world_size

    def _all_reduce(self, values: list[float], op: str = "sum") -> list[float]:
        import torch.distributed as dist
        from deepspeed.accelerator import get_accelerator

        # NCCL reduces only tensors on the rank's device (gloo's CPU ones stay on the CPU).
        device = get_accelerator().current_device_name()
        tensor = torch.tensor(values, dtype=torch.float64, device=device)
        dist.all_reduce(tensor, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
        return [float(v) for v in tensor.tolist()]

    def mean(self, value: float) -> float:
        """``value`` averaged over the ranks."""
        if self.world_size == 1:
            return value
        return self._all_reduce([value])[0] / self.world_size

    def max(self, value: float) -> float:
        """The largest ``value`` of any rank."""
        if self.world_size == 1:
            return value
        return self._all_reduce([value], "max")[0]

    def mean_metrics(self, metrics: dict[str, Any]) -> dict[str, Any]:
        """Every numeric metric averaged over the ranks (the others are dropped)."""
        if self.world_size == 1:
            return metrics
        keys = sorted(k for k, v in metrics.items() if isinstance(v, (int, float)))
        values = self._all_reduce([float(metrics[k]) for k in keys])
        return {k: v / self.world_size for k, v in zip(keys, values, strict=True)}


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def deepspeed_config(config: RunConfig, world_size: int) -> dict[str, Any]:
    """The DeepSpeed JSON config of a run, RL or SFT (``deepspeed.extra`` merged in last).

    Args:
        config: The run's config; its
            :meth:`~rllm_adapters.trainer.config.RunConfig.deepspeed_batch` gives the
            micro-batch and the gradient accumulation steps.
        world_size: Number of processes.
    """
    ds = config.deepspeed
    micro, gas = config.deepspeed_batch()
    zero: dict[str, Any] = {"stage": ds.zero_stage}
    if ds.offload_optimizer:
        zero["offload_optimizer"] = {"device": "cpu"}
    out: dict[str, Any] = {
        "train_micro_batch_size_per_gpu": micro,
        "gradient_accumulation_steps": gas,
        "train_batch_size": micro * gas * world_size,
        "gradient_clipping": config.optim.max_grad_norm,
        "zero_optimization": zero,
        "bf16": {"enabled": ds.bf16},
        "steps_per_print": 10**9,
        "wall_clock_breakdown": False,
        "zero_allow_untested_optimizer": True,
    }
    _merge(out, ds.extra)
    return out


def build_engine(
    module: torch.nn.Module,
    lr: float,
    optim: Any,
    ds_config: dict[str, Any],
    lr_factor: Callable[[], float],
) -> Any:
    """A DeepSpeed engine over ``module`` with torch AdamW and warm-up times ``lr_factor()``.

    Args:
        module: The network (its parameters with ``requires_grad`` are optimised).
        lr: Peak learning rate.
        optim: The optimizer settings (:class:`~rllm_adapters.trainer.config.OptimConfig`).
        ds_config: The DeepSpeed JSON config (:func:`deepspeed_config`).
        lr_factor: Called at every scheduler step: the learning-rate schedule's factor now.
    """
    import deepspeed

    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=lr, betas=optim.betas, eps=optim.eps, weight_decay=optim.weight_decay
    )
    warmup = optim.warmup_steps

    def factor(step: int) -> float:
        ramp = min(1.0, (step + 1) / warmup) if warmup else 1.0
        return ramp * lr_factor()

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    engine, _, _, _ = deepspeed.initialize(
        model=module,
        optimizer=optimizer,
        lr_scheduler=scheduler,
        config=ds_config,
    )
    return engine


def apply_lr_schedule(engine: Any) -> None:
    """Set ``engine``'s learning rates to its schedule's value now.

    ``LambdaLR`` evaluates the factor at each scheduler step, that is right after the
    previous optimizer step. When the factor changes between steps (the trainer's schedule
    moves once per iteration), the next step would still use the old value; call this after
    changing it so the next step uses the new one.
    """
    scheduler = getattr(engine, "lr_scheduler", None)
    if scheduler is None:
        return
    groups = scheduler.optimizer.param_groups
    for group, base, factor in zip(groups, scheduler.base_lrs, scheduler.lr_lambdas, strict=True):
        group["lr"] = base * factor(scheduler.last_epoch)
    scheduler._last_lr = [group["lr"] for group in groups]


class GracefulStop:
    """Within the block, SIGINT and SIGTERM only record themselves (main thread only).

    The first one is remembered and the previous handler reinstalled, so a second one acts
    as it would without the trainer (``KeyboardInterrupt`` or termination). The trainer asks
    :meth:`Ranks.max` whether any rank got one, so every rank stops after the same iteration.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    @property
    def name(self) -> str | None:
        """The signal's name, or ``None`` when none came."""
        return None if self.signum is None else signal.Signals(self.signum).name

    def __enter__(self) -> GracefulStop:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: object) -> None:
        if self.signum is None:
            self.signum = signum
        signal.signal(signum, self._restore_value(signum))
        _log.warning(
            "received %s: finishing the current iteration, then checkpoint and stop "
            "(send it again to stop now, without a checkpoint)",
            signal.Signals(signum).name,
        )

    def _restore_value(self, signum: int) -> Any:
        previous = self._previous.get(signum)
        return signal.SIG_DFL if previous is None else previous

    def __exit__(self, *exc: object) -> None:
        for sig in self._previous:
            signal.signal(sig, self._restore_value(sig))
        self._previous.clear()
