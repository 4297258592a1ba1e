"""The curriculum sampler's rules: deterministic, no model, no env."""

from __future__ import annotations

import json
import math

import pytest

from rllm_adapters.curriculum import CurriculumConfig, CurriculumSampler
from rllm_adapters.error import AdapterConfigError
from rllm_adapters.trainer.config import config_from_dict


def _adaptive(**kwargs):
    settings = {"kind": "adaptive", "levels": [1, 2, 3], "band": (0.3, 0.8), "window": 4}
    return CurriculumSampler(CurriculumConfig(**{**settings, **kwargs}), seed=0)


def test_uniform_gives_every_level_an_equal_share_even_one_task_at_a_time():
    sampler = CurriculumSampler(CurriculumConfig(kind="uniform", levels=[1, 2, 3]))
    assert sampler.sample(4, 0) == [1, 2, 3, 1]
    assert sampler.sample(2, 1) == [2, 3]
    one_at_a_time = [sampler.sample(1, i)[0] for i in range(6)]
    assert one_at_a_time == [1, 2, 3, 1, 2, 3]
    assert sampler.level == 3  # the frontier of uniform sampling is the hardest level
    assert sampler.update() == 0


def test_adaptive_promotes_above_the_band_after_a_full_window():
    sampler = _adaptive(replay=0.0)
    assert sampler.sample(3, 0) == [1, 1, 1]
    sampler.record(1, [True, True, True])
    assert sampler.update() == 0  # 3 episodes < window (4): no decision yet
    sampler.record(1, [True])
    assert sampler.success(1) == 1.0
    assert sampler.update() == 1
    assert sampler.level == 2 and sampler.since_move == 0
    assert sampler.sample(2, 1) == [2, 2]


def test_adaptive_stays_inside_the_band_and_demotes_below_it():
    sampler = _adaptive(replay=0.0, start=2)
    sampler.record(2, [True, False, True, False])  # 0.5: inside [0.3, 0.8]
    assert sampler.update() == 0 and sampler.level == 2
    sampler.record(2, [False, False, False, False])  # window now 0.0
    assert sampler.update() == -1
    assert sampler.level == 1 and sampler.demotions == 1


def test_band_edges_do_not_move_and_the_ends_of_levels_hold():
    sampler = _adaptive(replay=0.0, band=(0.25, 0.75))
    sampler.record(1, [True, True, True, False])  # exactly 0.75: not above the band
    assert sampler.update() == 0
    low = _adaptive(replay=0.0)
    low.record(1, [False] * 4)
    assert low.update() == 0 and low.level == 1  # nothing below the easiest level
    top = _adaptive(replay=0.0, start=3)
    top.record(3, [True] * 4)
    assert top.update() == 0 and top.level == 3


def test_a_move_needs_min_episodes_at_the_new_level():
    sampler = _adaptive(replay=0.0, window=2, min_episodes=3)
    sampler.record(1, [True, True, True])
    assert sampler.update() == 1
    # Episodes at other levels do not count towards the next decision.
    sampler.record(1, [True] * 5)
    sampler.record(2, [True, True])
    assert sampler.update() == 0
    sampler.record(2, [True])
    assert sampler.update() == 1 and sampler.level == 3


def test_replay_sends_a_fraction_of_tasks_to_lower_levels_deterministically():
    def draws(seed):
        sampler = CurriculumSampler(
            CurriculumConfig(kind="adaptive", levels=[1, 2, 3], start=3, replay=0.25), seed
        )
        return sampler.sample(4000, 0)

    levels = draws(7)
    assert levels == draws(7)
    assert levels != draws(8)
    lower = [v for v in levels if v < 3]
    assert abs(len(lower) / len(levels) - 0.25) < 0.03
    # Replay picks uniformly among the lower levels.
    assert abs(lower.count(1) - lower.count(2)) < 0.15 * len(lower)
    easiest = CurriculumSampler(CurriculumConfig(kind="adaptive", levels=[1, 2, 3], replay=0.9))
    assert set(easiest.sample(100, 0)) == {1}


def test_schedule_follows_the_iterations():
    config = CurriculumConfig(
        kind="schedule", levels=[1, 2, 3], schedule=[[0, 1], [3, 2], [5, 3]], replay=0.0
    )
    sampler = CurriculumSampler(config)
    levels = [sampler.sample(1, it)[0] for it in range(7)]
    assert levels == [1, 1, 1, 2, 2, 3, 3]
    assert sampler.level == 3
    sampler.record(3, [True] * 100)
    assert sampler.update() == 0  # a schedule ignores success


def test_metrics_cover_every_level_and_count_episodes_since_the_last_call():
    sampler = _adaptive(replay=0.0)
    sampler.record(1, [True, False])
    metrics = sampler.metrics()
    assert metrics["curriculum/level"] == 1.0
    assert metrics["curriculum/level_index"] == 0.0
    assert metrics["curriculum/success/1"] == 0.5
    assert metrics["curriculum/episodes/1"] == 2.0
    assert math.isnan(metrics["curriculum/success/3"])
    assert metrics["curriculum/episodes/3"] == 0.0
    assert sampler.metrics()["curriculum/episodes/1"] == 0.0


def test_state_dict_round_trips_through_json():
    sampler = _adaptive(replay=0.5)
    sampler.record(1, [True] * 4)
    sampler.update()
    sampler.sample(10, 1)
    sampler.record(2, [False, True])
    state = json.loads(json.dumps(sampler.state_dict()))
    restored = _adaptive(replay=0.5)
    restored.load_state_dict(state)
    assert restored.state_dict() == sampler.state_dict()
    assert restored.sample(50, 2) == sampler.sample(50, 2)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kind": "linear"}, "curriculum.kind"),
        ({"levels": []}, "non-empty"),
        ({"levels": [1, 1]}, "without repeats"),
        ({"band": (0.9, 0.2)}, "low <= high"),
        ({"window": 0}, "window"),
        ({"replay": 1.0}, "replay"),
        ({"start": 9}, "start"),
        ({"kind": "schedule"}, "starting at iteration 0"),
        ({"kind": "schedule", "schedule": [[0, 1], [0, 2]]}, "increasing"),
        ({"kind": "schedule", "schedule": [[0, 7]]}, "one of `curriculum.levels`"),
    ],
)
def test_invalid_curricula_raise_with_a_fix(kwargs, match):
    with pytest.raises(AdapterConfigError, match=match):
        CurriculumConfig(**kwargs)


def test_trainer_config_reads_the_curriculum_and_round_trips():
    data = {
        "env": "rllm/Math-v1",
        "rollout": {
            "curriculum": {
                "kind": "schedule",
                "levels": [1, 2],
                "schedule": {0: 1, 10: 2},
                "band": [0.2, 0.9],
            }
        },
    }
    config = config_from_dict(data)
    curriculum = config.rollout.curriculum
    assert isinstance(curriculum, CurriculumConfig)
    assert curriculum.schedule == [(0, 1), (10, 2)]
    assert curriculum.band == (0.2, 0.9)
    again = config_from_dict(json.loads(json.dumps(config.to_dict())))
    assert again.rollout.curriculum == curriculum
    with pytest.raises(AdapterConfigError, match="rollout.curriculum.levle"):
        config_from_dict({"rollout": {"curriculum": {"levle": [1]}}})
    with pytest.raises(AdapterConfigError, match="remove it from `env_kwargs`"):
        config_from_dict({"env_kwargs": {"difficulty": 2}, "rollout": {"curriculum": {}}})
