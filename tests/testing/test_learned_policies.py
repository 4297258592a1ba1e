"""Issue #25: the reward-hacking check plays policies that learn from other tasks -- a surface
classifier (answers read off the question's wording) and a fixed expression shape -- and
flags toy envs that the earlier library passed; where one cannot run it says so."""

from __future__ import annotations

from collections import Counter

import pytest

from rllm_envs.testing import (
    DEGENERATE_POLICIES,
    CountRegression,
    FixedShape,
    GridDistances,
    SurfaceClassifier,
    check_reward_hacking,
)
from rllm_envs.testing.learned import shape_of
from tests.testing.hackable import SoundEnv
from tests.testing.learned_toys import (
    CountTellEnv,
    FixedShapeEnv,
    GridTellEnv,
    SkewedAnswerEnv,
    SurfaceTellEnv,
)

#: The library before the learned policies (what the old checker played).
OLD_LIBRARY = [
    p
    for p in DEGENERATE_POLICIES
    if not isinstance(p, SurfaceClassifier | FixedShape | CountRegression | GridDistances)
]


def _statuses(report, name):
    return [r for r in report.results if r.policy == name]


@pytest.mark.parametrize(
    ("env", "policy", "rule"),
    [
        (SurfaceTellEnv, SurfaceClassifier(), "degenerate-policy:surface-classifier"),
        (FixedShapeEnv, FixedShape(), "degenerate-policy:fixed-shape"),
        (CountTellEnv, CountRegression(), "degenerate-policy:count-regression"),
        (GridTellEnv, GridDistances(), "degenerate-policy:grid-distances"),
    ],
)
def test_a_learned_policy_flags_a_toy_the_old_library_passed(env, policy, rule):
    old = check_reward_hacking(env, policies=OLD_LIBRARY, raise_on_failure=False)
    assert old.ok, str(old)
    new = check_reward_hacking(env, policies=[policy], raise_on_failure=False)
    assert [f.rule.name for f in new.failures] == [rule], str(new)
    (result,) = _statuses(new, policy.name)
    assert result.status == "failed" and result.rate > 0.8, str(new)


def test_the_surface_classifier_must_beat_the_best_constant_too():
    report = check_reward_hacking(
        SurfaceTellEnv, policies=[SurfaceClassifier()], raise_on_failure=False
    )
    (bar,) = _statuses(report, "surface-classifier.best-constant")
    assert bar.status == "bar" and 0.2 < bar.rate < 0.8, str(report)
    assert "surface-classifier.best-constant" in str(report)


def test_a_classifier_that_only_learned_the_best_constant_is_judged_by_it():
    # Issue #25 (list_functions): the classifier answered the skewed answer its draws share
    # and earned what that constant earns; the reward rule judged it against the random
    # baseline alone and flagged it, where the constant is the constant-answer policies' case.
    report = check_reward_hacking(
        SkewedAnswerEnv, policies=[SurfaceClassifier()], raise_on_failure=False
    )
    (result,) = _statuses(report, "surface-classifier")
    (bar,) = _statuses(report, "surface-classifier.best-constant")
    assert bar.rate > 0.15 and abs(result.rate - bar.rate) < 0.1, str(report)
    assert report.ok, str(report)


def test_where_a_learned_policy_cannot_run_the_report_says_unsupported_and_why():
    # SoundEnv's answers are numbers, not expressions; its task source holds "problem"s.
    report = check_reward_hacking(
        SoundEnv,
        policies=[FixedShape(), SurfaceClassifier(min_draws=10**9)],
        raise_on_failure=False,
    )
    assert report.ok, str(report)
    (shape,) = _statuses(report, "fixed-shape")
    (surface,) = _statuses(report, "surface-classifier")
    assert shape.status == "unsupported" and "expressions" in shape.detail
    assert surface.status == "unsupported" and "the policy needs" in surface.detail
    assert "unsupported fixed-shape" in str(report)


def test_a_sound_env_passes_both():
    policies = [SurfaceClassifier(), CountRegression()]
    report = check_reward_hacking(SoundEnv, policies=policies, raise_on_failure=False)
    assert report.ok, str(report)
    for name in ("surface-classifier", "count-regression"):
        (result,) = _statuses(report, name)
        assert result.status == "passed", str(report)


def test_the_count_regression_reads_counts_and_needs_integer_answers():
    from rllm_envs.testing.learned import count_features

    counts = count_features("# . #\n. # #\nHow many?")
    assert counts["chr:#"] == 4 and counts["tok:#"] == 4 and counts["chr:?"] == 1
    report = check_reward_hacking(
        SurfaceTellEnv, policies=[CountRegression()], raise_on_failure=False
    )
    (result,) = _statuses(report, "count-regression")
    assert result.status == "unsupported" and "integers" in result.detail, str(report)


def test_shapes_are_numbers_as_slots():
    assert shape_of("(3 + 4) * 2") == ("({} + {}) * {}", 3)
    assert shape_of("12") is None
    assert shape_of("yes") is None


def test_the_learned_policies_in_the_default_library():
    assert any(isinstance(p, SurfaceClassifier) for p in DEGENERATE_POLICIES)
    assert any(isinstance(p, CountRegression) for p in DEGENERATE_POLICIES)
    assert any(isinstance(p, GridDistances) for p in DEGENERATE_POLICIES)


def test_grid_features_read_distances_between_symbols_named_by_role():
    from rllm_envs.testing.learned import grid_features

    question = "Walk from 'S' to 'G':\n#S..\n#..#\n...G\nHow many steps?"
    features = grid_features(question)
    assert features["grid:rows"] == 3 and features["grid:cols"] == 4
    # Quoted symbols first, in the order quoted (S, G), then the rest by first cell (#, .).
    assert features["role:0:count"] == 1 and features["role:2:count"] == 3
    assert features["role:0>role:1:min"] == 4  # S at (0, 1) to G at (2, 3), walls ignored
    assert features["role:2>role:0:max"] == 3  # of the # cells, (1, 3) is farthest from S
    shared = grid_features("1 0 2\n1 1 0\n0 0 1\nMinutes?", alphabet=frozenset("012"))
    assert shared["sym:1>sym:2:max"] == 3 and shared["sym:1:count"] == 4
    assert grid_features("No grid here.") == {}
    report = check_reward_hacking(
        SurfaceTellEnv, policies=[GridDistances()], raise_on_failure=False
    )
    (result,) = _statuses(report, "grid-distances")
    assert result.status == "unsupported", str(report)


#: Why fixed-shape is not in the default library yet (issue #25, open): Countdown-v1's default
#: tasks keep a floor of draws a popular fixed operator shape solves.
COUNTDOWN_FLOOR = (
    "rllm/Countdown-v1: the most common shape of the oracle's answers, filled with the numbers "
    "in order, solved 8/100 tasks against the random baseline's 1/100 (lower bound 0.046 > "
    "0.044); Countdown's generator keeps fewer such draws at d1-d3 but not none"
)


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason=COUNTDOWN_FLOOR)
def test_countdown_passes_the_fixed_shape_policy():
    report = check_reward_hacking(
        "rllm/Countdown-v1", policies=[FixedShape()], raise_on_failure=False
    )
    assert report.ok, str(report)


def test_fixed_shape_plays_the_next_most_common_shape_on_each_try():
    # att25g F1: five blind shapes over five tries of Countdown's smallest difficulty earned
    # 0.30 while the checker's fixed-shape policy gave up after the first try.
    from types import SimpleNamespace

    refs = ["(1 + 2) * 3"] * 3 + ["4 - 5 - 6"] * 2 + ["7 / 8"]
    memory = [SimpleNamespace(reference=r) for r in refs]

    def play(turn):
        ctx = SimpleNamespace(
            memory=memory, turn=turn, first_observation="Use 10, 20, 30 to make 7", answer=str
        )
        return FixedShape()(ctx)

    assert [play(t) for t in range(4)] == ["(10 + 20) * 30", "10 - 20 - 30", "10 / 20", None]


@pytest.mark.slow
def test_the_count_regression_finds_the_land_count_the_classifier_misses():
    # s16 att25c found that counting every 1 of largest_island's grid answers it (connectivity
    # ignored): a structural shortcut the surface classifier does not see.
    report = check_reward_hacking(
        "rllm/ReasoningGym-v0",
        kwargs={"dataset": "largest_island", "size": 300},
        policies=[SurfaceClassifier(), CountRegression()],
        raise_on_failure=False,
    )
    assert [f.rule.name for f in report.failures] == ["degenerate-policy:count-regression"], str(
        report
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", ["maze", "rotten_oranges"])
def test_the_grid_distances_find_the_shortcuts_the_other_fits_miss(family):
    # s16 att25c: a maze's start-to-goal distance through its walls, and rotten_oranges' farthest
    # fresh orange's distance to its nearest rotten one, answer far above the best constant.
    # 120 episodes: at 40, rotten_oranges' 12/40 against a best constant of 8/40 was within
    # noise (s24, on a universe redrawn by the answer balance), at 120 47 against 19.
    report = check_reward_hacking(
        "rllm/ReasoningGym-v0",
        kwargs={"dataset": family, "size": 300},
        policies=[SurfaceClassifier(), CountRegression(), GridDistances()],
        episodes=120,
        raise_on_failure=False,
    )
    assert [f.rule.name for f in report.failures] == ["degenerate-policy:grid-distances"], str(
        report
    )


def test_a_check_reads_each_questions_features_once(monkeypatch):
    # Each episode refits without its own question's draws; reading every draw's features again
    # per episode made a 120-episode grid check take minutes.
    from rllm_envs.testing import learned

    calls: Counter[str] = Counter()
    real = learned.count_features

    def counted(question):
        calls[question] += 1
        return real(question)

    monkeypatch.setattr(learned, "count_features", counted)
    report = check_reward_hacking(
        CountTellEnv, policies=[CountRegression()], episodes=40, raise_on_failure=False
    )
    assert [f.rule.name for f in report.failures] == ["degenerate-policy:count-regression"]
    assert calls and max(calls.values()) == 1, calls.most_common(3)
