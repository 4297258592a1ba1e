"""A group's shared prompt runs once (``algorithm.share_prompt``): same numbers, less work."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rllm_adapters.trainer.models import ActionScorer, load_causal_lm, shared_prefix_length  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _relative_gap(a, b):
    """Largest difference relative to the tensor's largest entry (summation order varies)."""
    return float((a - b).abs().max() / b.abs().max().clamp(min=1e-12))


def _group(prompt_len=30, lengths=(5, 10, 3, 7), seed=0):
    g = torch.Generator().manual_seed(seed)
    prompt = torch.randint(5, 500, (prompt_len,), generator=g)
    B, A = len(lengths), max(lengths)
    ids = torch.zeros(B, prompt_len + A, dtype=torch.long)
    attention = torch.zeros_like(ids)
    positions = torch.zeros(B, A, dtype=torch.long)
    targets = torch.zeros_like(positions)
    mask = torch.zeros(B, A)
    for b, n in enumerate(lengths):
        ids[b, :prompt_len] = prompt
        ids[b, prompt_len : prompt_len + n] = torch.randint(5, 500, (n,), generator=g)
        attention[b, : prompt_len + n] = 1
        positions[b, :n] = torch.arange(prompt_len - 1, prompt_len - 1 + n)
        targets[b, :n] = ids[b, prompt_len : prompt_len + n]
        mask[b, :n] = 1
    return ids, attention, positions, targets, mask


def test_shared_prefix_length_stops_at_the_first_difference_and_the_first_scored_token():
    ids, _, positions, _, mask = _group()
    assert shared_prefix_length(ids, positions, mask) == 29  # the prompt but its last token
    ids[2, 12] += 1
    assert shared_prefix_length(ids, positions, mask) == 12
    assert shared_prefix_length(ids, positions, mask, minimum=16) == 0
    assert shared_prefix_length(ids[:1], positions[:1], mask[:1]) == 0


def test_scores_and_gradients_equal_the_full_rows(tiny_path):
    torch.manual_seed(0)
    scorer = ActionScorer(load_causal_lm(str(tiny_path)), 0.7, value_head=True)
    with torch.no_grad():
        scorer.value_head.weight.normal_()
    ids, attention, positions, targets, mask = _group()
    shared = shared_prefix_length(ids, positions, mask)

    def run(prefix):
        scorer.zero_grad()
        logp, entropy, values = scorer(ids, attention, positions, targets, True, prefix)
        ((logp + 0.1 * entropy + values) * mask).sum().backward()
        grads = {n: p.grad.clone() for n, p in scorer.named_parameters() if p.grad is not None}
        return (logp.detach(), entropy.detach(), values.detach()), grads

    full, full_grads = run(0)
    once, once_grads = run(shared)
    for a, b in zip(full, once, strict=True):
        torch.testing.assert_close(a * mask, b * mask, atol=1e-5, rtol=1e-5)
    assert full_grads.keys() == once_grads.keys()
    for name, grad in full_grads.items():
        assert _relative_gap(once_grads[name], grad) < 1e-4, name


@pytest.mark.slow
def test_update_draws_whole_groups_and_shares_their_prompts(tmp_path):
    pytest.importorskip("deepspeed")
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer
    from rllm_agents.trajectory import Step, Trajectory

    def episode(group, sample):
        prompt = [3 + (group * 7 + k) % 50 for k in range(24)]
        step = Step(
            prompt_ids=prompt,
            completion_ids=[60 + sample, 61, 62 + group][: 2 + sample % 2],
            logprobs=[],
            response="x",
            action="x",
            reward=float(sample % 2),
            terminated=True,
            info={"reward_components": {}, "is_correct": bool(sample % 2)},
        )
        return Trajectory(
            env_id="scripted",
            task_id=f"t{group}",
            group=group,
            sample=sample,
            initial_observation="q",
            steps=[step],
            finish="terminated",
        )

    episodes = [episode(g, s) for g in range(2) for s in range(4)]
    config = config_from_dict(
        {
            "model": "tiny",
            "rollout": {"backend": "transformers", "num_tasks": 2, "group_size": 4},
            "algorithm": {
                "advantage": "grpo",
                "ppo_epochs": 1,
                "mini_batch_size": 8,
                "micro_batch_size": 4,
            },
            "optim": {"lr": 1e-3, "max_grad_norm": 0.0},
            "train": {"iterations": 1, "output_dir": str(tmp_path / "run"), "resume": False},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as trainer:
        from rllm_adapters.trainer.batch import trajectories_to_batch

        batch = trajectories_to_batch(episodes)
        order = trainer._update_order(batch)
        assert sorted(order) == list(range(8))
        assert {tuple(sorted(batch.groups[order[:4]].tolist()))} == {(order[0] // 4,) * 4}
        shared_seen = []
        original = trainer.actor.module.forward

        def forward(*args):
            shared_seen.append(args[5])
            return original(*args)

        trainer.actor.module.forward = forward
        grads = {}
        step = trainer.actor.step

        def capture(*args, **kwargs):
            for name, p in trainer.actor.module.named_parameters():
                if p.grad is not None:
                    grads[name] = p.grad.clone()
            return step(*args, **kwargs)

        trainer.actor.step = capture
        trainer.step()
        shared_grads = dict(grads)
        # The same update without sharing, from the same weights (lr 0 keeps them).
        trainer.config.algorithm.share_prompt = False
        for group in trainer.actor.optimizer.param_groups:
            group["lr"] = 0.0
    assert shared_seen == [23, 23]  # each micro-batch is one group; its prompt but the last token
    with PPOTrainer(config, rollout_fn=lambda policy, it: list(episodes)) as plain:
        plain.config.algorithm.share_prompt = False
        grads.clear()
        step = plain.actor.step

        def capture_plain(*args, **kwargs):
            for name, p in plain.actor.module.named_parameters():
                if p.grad is not None:
                    grads[name] = p.grad.clone()
            return step(*args, **kwargs)

        plain.actor.step = capture_plain
        plain.step()
    assert grads.keys() == shared_grads.keys()
    for name, grad in grads.items():
        assert _relative_gap(shared_grads[name], grad) < 1e-4, name
