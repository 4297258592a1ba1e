"""How the update weighs tokens, steps and samplers: scripted episodes through the real trainer.

* a short leftover mini-batch (groups without signal dropped) counts for its share of a full one;
* two ranks with different token counts give the gradient of one process over all episodes;
* importance weights for the sampler/trainer mismatch scale (or mask) the policy loss;
* the learning-rate schedule's new value applies from the iteration's first step.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import os
import socket

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

from rllm_adapters.trainer import algorithms as alg  # noqa: E402
from rllm_adapters.trainer.config import config_from_dict  # noqa: E402
from rllm_agents.trajectory import Step, Trajectory  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _episode(
    group: int, sample: int, reward: float, length: int = 3, logprob: float | None = None
) -> Trajectory:
    completion = [5 + (sample + k) % 20 for k in range(length)]
    step = Step(
        prompt_ids=[1, 2, 3, 4],
        completion_ids=completion,
        logprobs=[] if logprob is None else [logprob] * length,
        response="x",
        action="x",
        reward=reward,
        terminated=True,
        info={"reward_components": {"correct": reward}, "is_correct": reward >= 1.0},
    )
    return Trajectory(
        env_id="scripted",
        task_id=f"task-{group}",
        group=group,
        sample=sample,
        initial_observation="q",
        steps=[step],
        finish="terminated",
    )


def _config(tmp_path, *, num_tasks=2, group_size=2, **algorithm):
    return config_from_dict(
        {
            "model": "tiny",
            "rollout": {
                "backend": "transformers",
                "num_tasks": num_tasks,
                "group_size": group_size,
            },
            "algorithm": {
                "advantage": "grpo",
                "ppo_epochs": 1,
                "mini_batch_size": 2,
                "micro_batch_size": 1,
                **algorithm,
            },
            "optim": {"lr": 1e-3, "max_grad_norm": 0.0},
            "train": {"iterations": 2, "output_dir": str(tmp_path / "run"), "resume": False},
            "logging": {"progress": False, "tensorboard": False, "samples_per_iteration": 0},
        }
    )


def _spy_normalizers(monkeypatch) -> list[float]:
    seen: list[float] = []
    original = alg.policy_loss

    def spy(*args, **kwargs):
        seen.append(kwargs["normalizer"])
        return original(*args, **kwargs)

    monkeypatch.setattr(alg, "policy_loss", spy)
    return seen


def test_a_short_leftover_mini_batch_counts_for_its_share(tmp_path, monkeypatch):
    from rllm_adapters.trainer.trainer import PPOTrainer

    # 4 groups of 2; group 3 has no spread and is dropped: 6 rows in mini-batches of 4 and 2.
    lengths = {0: 3, 1: 5, 2: 7, 3: 4}
    episodes = [
        _episode(g, s, float(s if g < 3 else 0.5), lengths[g]) for g in range(4) for s in range(2)
    ]
    config = _config(tmp_path, num_tasks=4, mini_batch_size=4, micro_batch_size=2)
    seen = _spy_normalizers(monkeypatch)
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as trainer:
        steps = []
        original_step = trainer.actor.step
        trainer.actor.step = lambda *a, **k: (steps.append(1), original_step(*a, **k))
        metrics = trainer.step()
    assert metrics["batch/samples_skipped"] == 2 and len(steps) == 2
    kept_tokens = 2 * (3 + 5 + 7)
    # Every micro-batch of both steps divides by the same count: the batch's tokens per full
    # mini-batch, so the 2-row step weighs half of the 4-row one, as if the dropped (zero
    # advantage) episodes had filled it.
    assert seen == pytest.approx([kept_tokens * 4 / 6] * len(seen))
    assert len(seen) == 3


def test_importance_weights_scale_or_mask_the_policy_loss(tmp_path):
    from rllm_adapters.trainer.trainer import PPOTrainer

    batch: list[Trajectory] = []
    # Lengths differ within a group, so the token-mean policy loss is not 0.
    config = _config(tmp_path, mini_batch_size=4)
    config.optim.lr = 1e-12  # the weights stay put across the runs below
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(batch)) as trainer:

        def run(mode, logprob):
            batch[:] = [
                _episode(g, s, float(s), 2 + 3 * s, logprob) for g in range(2) for s in range(2)
            ]
            trainer.config.algorithm.importance_sampling = mode
            return trainer.step()

        plain = run(None, -60.0)
        # The sampler gave every token a tiny probability: trainer/sampler ratios are huge.
        truncated = run("token_truncate", -60.0)
        masked = run("sequence_mask", -60.0)
        likely = run("token_truncate", -1e-4)  # the sampler saw them as near certain
    assert "policy/is_ratio" not in plain and plain["loss/policy"] != 0.0
    assert truncated["policy/is_ratio"] == pytest.approx(3.0)
    assert truncated["loss/policy"] == pytest.approx(3.0 * plain["loss/policy"], rel=1e-4)
    assert masked["policy/is_masked"] == 1.0 and masked["loss/policy"] == 0.0
    assert 0.0 < likely["policy/is_ratio"] < 1.0 and likely["policy/is_masked"] == 0.0


def test_linear_schedule_moves_from_the_iterations_first_step(tmp_path):
    from rllm_adapters.trainer.trainer import PPOTrainer

    episodes = [_episode(g, s, float(s)) for g in range(2) for s in range(2)]
    config = _config(tmp_path, mini_batch_size=2)
    config.optim.lr_schedule = "linear"
    config.train.iterations = 2
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as trainer:
        used = []
        original = trainer.actor.step

        def step(*args, **kwargs):
            used.append(trainer.actor.optimizer.param_groups[0]["lr"])
            return original(*args, **kwargs)

        trainer.actor.step = step
        history = trainer.train()
    # Factor 1 - iteration / 2: iteration 1 at 1e-3 and iteration 2 at 5e-4, each step.
    assert used == pytest.approx([1e-3, 1e-3, 5e-4, 5e-4])
    assert [h["optim/lr"] for h in history] == pytest.approx([1e-3, 5e-4])


def _weights(trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.actor.module.state_dict().items()}


@pytest.mark.parametrize("fused", [False, True], ids=["old_logp_pass", "one_step_per_batch"])
def test_a_step_past_max_step_kl_is_undone(tmp_path, fused):
    """The step is taken, its KL measured on its mini-batch, and undone past the bound."""
    from rllm_adapters.trainer.trainer import PPOTrainer

    episodes = [_episode(g, s, float(s), 2 + s) for g in range(2) for s in range(2)]
    config = _config(tmp_path, mini_batch_size=4 if fused else 2, max_step_kl=1e-12)
    config.optim.lr = 0.05  # a large step: its KL is far above the bound
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as trainer:
        before = _weights(trainer)
        assert trainer.actor.optimizer.state_dict()["state"] == {}  # no step yet
        metrics = trainer.step()
        after = _weights(trainer)
        # The step did move the policy (its KL was measured above 0), then was put back:
        # weights as before, and no Adam moments or step count; the rest of the update skipped.
        assert metrics["policy/step_undone"] == 1.0 and metrics["policy/step_kl"] > 1e-6
        assert metrics["policy/early_stopped"] == 1.0
        assert all(torch.equal(before[k], after[k]) for k in before)
        assert trainer.actor.optimizer.state_dict()["state"] == {}
        # A bound the step stays inside keeps it.
        trainer.config.algorithm.max_step_kl = 1e6
        kept = trainer.step()
    assert kept["policy/step_undone"] == 0.0
    assert kept["policy/step_kl"] > 1e-6
    assert any(not torch.equal(before[k], v) for k, v in _weights(trainer).items())


def test_a_step_past_max_step_kl_is_shortened_before_it_is_undone(tmp_path):
    """s35: undoing every step past the bound froze FrozenLake runs for good (every later
    first step went past it too); a step is now halved until it is within the bound."""
    from rllm_adapters.trainer.trainer import PPOTrainer

    episodes = [_episode(g, s, float(s), 2 + s) for g in range(2) for s in range(2)]

    def one_step(bound: float, where: str) -> tuple[dict, dict, dict]:
        config = _config(tmp_path / where, mini_batch_size=4, max_step_kl=bound)  # one step
        config.optim.lr = 0.003
        with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as trainer:
            before = _weights(trainer)
            metrics = trainer.step()
            return metrics, before, _weights(trainer)

    full, start, whole = one_step(1e6, "full")
    assert full["policy/step_scale"] == 1.0 and full["policy/step_kl"] > 1e-6
    # A bound below the whole step's KL: the weights are the start plus the reported share of
    # the step (a half, a quarter, ... a 32nd), or the start where none is within the bound.
    short, begun, kept = one_step(full["policy/step_kl"] / 2, "short")
    assert all(torch.equal(start[k], begun[k]) for k in start)  # the same start
    scale = short["policy/step_scale"]
    assert scale in [0.0, *(2.0**-i for i in range(1, 6))]
    assert short["policy/step_undone"] == float(scale == 0.0)
    assert short["policy/step_kl"] == pytest.approx(full["policy/step_kl"], rel=1e-4)
    for k, v in kept.items():
        if torch.is_floating_point(v):
            assert torch.allclose(v, start[k] + scale * (whole[k] - start[k]), atol=1e-6), k


def test_max_step_kl_needs_the_plain_optimizer(tmp_path):
    from rllm_adapters.error import AdapterConfigError

    with pytest.raises(AdapterConfigError, match="zero_stage: 0"):
        config_from_dict(
            {
                **_config(tmp_path).to_dict(),
                "algorithm": {"max_step_kl": 0.1, "mini_batch_size": 2, "micro_batch_size": 1},
                "deepspeed": {"zero_stage": 2},
            }
        )


# ---------------------------------------------------------------------- two ranks


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_episodes(rank: int) -> list[Trajectory]:
    # Rank 0 gets short completions, rank 1 long ones (4x the tokens).
    length = 2 if rank == 0 else 8
    return [_episode(2 * rank + g, s, float(s + g), length) for g in range(2) for s in range(2)]


def _grad_worker(rank: int, world: int, port: int, out: str, tmp: str) -> None:
    os.environ.update(
        RANK=str(rank),
        WORLD_SIZE=str(world),
        LOCAL_RANK=str(rank),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        OMP_NUM_THREADS="1",
    )
    torch.set_num_threads(1)
    from pathlib import Path

    from rllm_adapters.trainer.trainer import PPOTrainer

    if world == 1:
        episodes = _rank_episodes(0) + _rank_episodes(1)
        tasks, mini = 4, 8
    else:
        episodes = _rank_episodes(rank)
        tasks, mini = 2, 4
    config = _config(Path(tmp) / f"w{world}r{rank}", num_tasks=tasks, mini_batch_size=mini)
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as trainer:
        grads: dict[str, list[float]] = {}
        original = trainer.actor.step

        def step(*args, **kwargs):
            for name, p in trainer.actor.module.named_parameters():
                if p.grad is not None:
                    grads[name] = p.grad.flatten()[:64].tolist()
            return original(*args, **kwargs)

        trainer.actor.step = step
        trainer.step()
    if rank == 0:
        Path(out).write_text(json.dumps(grads))


def _grads(world: int, tmp_path) -> dict[str, list[float]]:
    ctx = multiprocessing.get_context("spawn")
    out = tmp_path / f"grads{world}.json"
    port = _port()
    procs = [
        ctx.Process(target=_grad_worker, args=(r, world, port, str(out), str(tmp_path)))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=600)
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    return json.loads(out.read_text())


def test_two_ranks_give_the_gradient_of_one_process_over_all_tokens(tmp_path):
    """DeepSpeed averages ranks' gradients: each rank divides by the global tokens / ranks."""
    one = _grads(1, tmp_path)
    two = _grads(2, tmp_path)
    assert one.keys() == two.keys() and one
    worst = 0.0
    for name in one:
        a, b = torch.tensor(one[name]), torch.tensor(two[name])
        scale = float(a.abs().max().clamp(min=1e-8))
        worst = max(worst, float((a - b).abs().max()) / scale)
    assert worst < 1e-3, worst
    assert math.isfinite(worst)
