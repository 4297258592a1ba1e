"""Groups without a reward spread are dropped before the forward pass; dynamic sampling.

The trainer gets scripted episodes (``rollout_fn``) whose rewards decide which groups carry a
GRPO/RLOO signal, so every count below is known exactly.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

from rllm_adapters.trainer.config import config_from_dict  # noqa: E402
from rllm_agents.trajectory import Step, Trajectory  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


def _episode(group: int, sample: int, reward: float) -> Trajectory:
    step = Step(
        prompt_ids=[1, 2, 3, 4],
        completion_ids=[5 + sample, 6, 7],
        logprobs=[],
        response=f"answer {sample}",
        action=f"answer {sample}",
        reward=reward,
        terminated=True,
        info={
            "reward_components": {"format": 1.0, "correct": float(reward >= 1.0)},
            "is_correct": reward >= 1.0,
        },
    )
    return Trajectory(
        env_id="scripted",
        task_id=f"task-{group}",
        group=group,
        sample=sample,
        initial_observation="What is 2 + 2?",
        steps=[step],
        finish="terminated",
    )


class Script:
    """``rollout_fn`` returning one scripted batch per call: ``[[rewards of group 0], ...]``."""

    def __init__(self, *batches: list[list[float]]) -> None:
        self.batches = batches
        self.calls = 0

    def __call__(self, policy, iteration):
        rewards = self.batches[min(self.calls, len(self.batches) - 1)]
        self.calls += 1
        return [_episode(g, s, r) for g, group in enumerate(rewards) for s, r in enumerate(group)]


def _trainer(tmp_path, script, **algorithm):
    from rllm_adapters.trainer.trainer import PPOTrainer

    config = config_from_dict(
        {
            "model": "tiny",
            "rollout": {"backend": "transformers", "num_tasks": 2, "group_size": 2},
            "algorithm": {
                "advantage": "grpo",
                "ppo_epochs": 2,
                "mini_batch_size": 2,
                "micro_batch_size": 1,
                "entropy_coef": 0.01,
                **algorithm,
            },
            "optim": {"lr": 1e-3},
            "train": {"iterations": 1, "output_dir": str(tmp_path / "run"), "resume": False},
            "logging": {"progress": False, "tensorboard": False, "samples_per_iteration": 4},
        }
    )
    return PPOTrainer(config, rollout_fn=script)


def _spy(trainer, name, calls):
    original = getattr(trainer, name)

    def spy(batch, *args, **kwargs):
        calls.append(sorted(batch.groups.tolist()))
        return original(batch, *args, **kwargs)

    setattr(trainer, name, spy)


def _weights(trainer):
    return {k: v.clone() for k, v in trainer.actor_state_dict().items()}


def test_groups_without_spread_are_dropped_before_the_forward_pass(tmp_path):
    script = Script([[0.1, 0.1], [0.0, 1.0]])
    with _trainer(tmp_path, script) as trainer:
        scored, updated = [], []
        _spy(trainer, "_score", scored)
        _spy(trainer, "_update", updated)
        metrics = trainer.step()
        steps = trainer.actor.global_steps
    # Only group 1 reaches the scoring pass and the update.
    assert scored == [[1, 1]] and updated == [[1, 1]]
    assert steps == 2  # 2 epochs x one mini-batch of the 2 kept episodes
    assert metrics["batch/groups"] == 2
    assert metrics["batch/groups_skipped"] == 1
    assert metrics["batch/groups_with_signal"] == 1
    assert metrics["batch/samples_skipped"] == 2
    assert metrics["batch/update_skipped"] == 0
    # The rollout metrics still describe every episode, components side by side.
    assert metrics["rollout/episodes"] == 4
    assert metrics["reward_components/format"] == 1.0
    assert metrics["reward_components/correct"] == 0.25
    lines = (tmp_path / "run" / "samples.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [(r["group"], r["sample"]) for r in records] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert all(r["iteration"] == 1 for r in records)
    by_key = {(r["group"], r["sample"]): r for r in records}
    assert by_key[0, 0]["advantage"] is None  # dropped: not trained on
    assert by_key[1, 0]["advantage"] < 0 < by_key[1, 1]["advantage"]
    assert by_key[1, 1]["reward_components"] == {"format": 1.0, "correct": 1.0}
    assert by_key[1, 1]["correct"] is True and by_key[1, 1]["reward"] == 1.0
    assert by_key[1, 1]["steps"][0]["response"] == "answer 1"


@pytest.mark.parametrize("estimator", ["grpo", "rloo"])
def test_no_forward_or_backward_when_every_advantage_is_zero(tmp_path, caplog, estimator):
    script = Script([[0.1, 0.1], [0.1, 0.1]])
    with _trainer(tmp_path, script, advantage=estimator) as trainer:
        before = _weights(trainer)
        scored, updated = [], []
        _spy(trainer, "_score", scored)
        _spy(trainer, "_update", updated)
        forwards = []
        trainer.actor.module.register_forward_hook(lambda *a: forwards.append(1))
        with caplog.at_level("WARNING", logger="rllm_adapters.trainer.trainer"):
            metrics = trainer.step()
        assert scored == [] and updated == [] and forwards == []
        assert trainer.actor.global_steps == 0
        after = _weights(trainer)
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert metrics["batch/update_skipped"] == 1
    assert metrics["batch/groups_skipped"] == 2
    assert metrics["batch/samples_skipped"] == 4
    assert "loss/policy" not in metrics
    assert "update skipped" in caplog.text
    # The iteration still counts and its samples are logged.
    assert trainer.iteration == 1 and trainer.episodes == 4
    assert len((tmp_path / "run" / "samples.jsonl").read_text().splitlines()) == 4


def test_keeping_zero_signal_groups_is_an_option(tmp_path):
    script = Script([[0.1, 0.1], [0.1, 0.1]])
    with _trainer(tmp_path, script, skip_zero_signal_groups=False) as trainer:
        updated = []
        _spy(trainer, "_update", updated)
        metrics = trainer.step()
        assert trainer.actor.global_steps == 4
    assert updated == [[0, 0, 1, 1]]
    assert metrics["policy/advantage_abs"] == 0.0
    assert "batch/groups_skipped" not in metrics


def test_dynamic_sampling_collects_until_enough_groups_have_signal(tmp_path):
    script = Script(
        [[0.1, 0.1], [0.0, 0.0]],  # no signal
        [[0.0, 1.0], [0.5, 0.5]],  # one group with signal
        [[1.0, 0.0], [0.2, 0.7]],  # two more: one is surplus
    )
    with _trainer(tmp_path, script, dynamic_sampling=True) as trainer:
        updated = []
        _spy(trainer, "_update", updated)
        metrics = trainer.step()
    assert script.calls == 3
    # Groups of later rounds are renumbered: round 1's group 0 is 2, round 2's are 4 and 5.
    assert updated == [[2, 2, 4, 4]]
    assert metrics["batch/sampling_rounds"] == 3
    assert metrics["batch/groups"] == 6
    assert metrics["batch/groups_with_signal"] == 3
    assert metrics["batch/groups_surplus"] == 1
    assert metrics["batch/groups_skipped"] == 3
    assert metrics["batch/samples_skipped"] == 8
    assert metrics["rollout/episodes"] == 12
    assert trainer.episodes == 12


def test_dynamic_sampling_stops_after_its_extra_rounds(tmp_path):
    script = Script([[0.1, 0.1], [0.0, 0.0]])
    with _trainer(
        tmp_path, script, dynamic_sampling=True, dynamic_sampling_max_rounds=2
    ) as trainer:
        metrics = trainer.step()
        assert trainer.actor.global_steps == 0
    assert script.calls == 3  # the first round and 2 extra ones
    assert metrics["batch/sampling_rounds"] == 3
    assert metrics["batch/update_skipped"] == 1


def test_ranks_with_fewer_signal_groups_refill_with_zero_advantage_episodes(tmp_path):
    # Under several processes every rank must run the same number of optimizer steps.
    script = Script([[0.1, 0.1], [0.0, 1.0], [0.3, 0.3]])
    with _trainer(tmp_path, script) as trainer:
        episodes = script(None, 0)
        trainer.world_size = 2  # as if another rank kept 4 episodes
        trainer._max_over_ranks = lambda value: max(value, 4.0)
        metrics: dict = {}
        kept = trainer._select_for_update(episodes, metrics)
    assert [t.group for t in kept] == [1, 1, 0, 0]
    assert metrics["batch/groups_skipped"] == 2 and metrics["batch/samples_skipped"] == 2
