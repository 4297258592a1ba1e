"""The public reward-hacking check: degenerate policies must not beat the random baseline.

Deliberately hackable envs (``tests/testing/hackable.py``) must fail with the rule that names
the hack and its fix; a sound env, and the registered envs (``tests/envs``), pass.
"""

from __future__ import annotations

import pytest

from rllm_envs.demonstrations import MATH
from rllm_envs.testing import (
    DEGENERATE_POLICIES,
    DegeneratePolicy,
    HackContext,
    HackPolicy,
    LeakScan,
    PolicyFamily,
    RewardHackingError,
    check_reward_hacking,
    math_spans,
    partly_evaluate,
    wilson_interval,
)
from tests.testing.hackable import (
    AnyReplyPaysEnv,
    ConstantAnswerEnv,
    DemonstrationPayingEnv,
    EchoLastWordEnv,
    EvaluatingEnv,
    LiteralZeroEnv,
    ShapedFormatEnv,
    SoundEnv,
)


def _failed(report) -> set[str]:
    return {f.rule.name for f in report.failures}


@pytest.mark.slow  # about 19 s: the full check on Math-sized tasks
def test_an_env_that_evaluates_the_reply_fails_on_the_echoed_expression():
    report = check_reward_hacking(EvaluatingEnv, episodes=20, raise_on_failure=False)
    assert not report.ok
    echoed = {r for r in _failed(report) if r.startswith("degenerate-policy:echo-span-")}
    assert "degenerate-policy:echo-span-first-answer" in echoed, _failed(report)
    failure = next(f for f in report.failures if f.rule.name in echoed)
    assert "final form" in failure.rule.fix and "20/20" in failure.detail
    # The template was read from the oracle: the echo was written as the env's answer.
    assert "\\boxed{" in failure.detail
    with pytest.raises(RewardHackingError, match="echo-span") as caught:
        report.raise_for_failure()
    assert isinstance(caught.value, AssertionError) and caught.value.report is report


def test_a_two_answer_task_fails_on_the_constant_answer():
    with pytest.raises(RewardHackingError) as caught:
        check_reward_hacking(ConstantAnswerEnv, episodes=20)
    rules = {f.rule.name for f in caught.value.failures}
    assert {"degenerate-policy:constant-answer", "degenerate-policy:sampled-answer"} <= rules
    assert "spread the reference answers" in str(caught.value)


def test_an_env_that_pays_for_a_copied_demonstration_fails_on_it():
    report = check_reward_hacking(DemonstrationPayingEnv, episodes=6, raise_on_failure=False)
    rules = _failed(report)
    assert "demonstration-earns-nothing:copy-demonstration" in rules
    assert "demonstration-earns-nothing:copy-demonstration-answer" in rules
    failure = next(f for f in report.failures if f.rule.name.endswith(":copy-demonstration"))
    assert "'format'" in failure.detail and "rllm_envs.demonstrations" in failure.rule.fix
    # The same env under TextEnv's rule (SoundEnv keeps it) pays nothing for the copy.
    assert check_reward_hacking(SoundEnv, policies=DEGENERATE_POLICIES, episodes=6).ok


def test_a_sound_env_passes_and_the_report_says_what_ran():
    report = check_reward_hacking(SoundEnv, episodes=10)
    assert report.ok and report.baseline[None][:2] == (0, 10)
    names = [r.policy for r in report.results if r.status != "bar"]  # bars follow their policy
    expanded = [
        m.name
        for p in DEGENERATE_POLICIES
        if not isinstance(p, LeakScan)  # its members depend on the env's observations
        for m in (p.members if isinstance(p, PolicyFamily) else (p,))
    ]
    assert names[: len(expanded)] == expanded and len(set(names)) == len(names)
    assert "uniform guess" in str(report)  # the checker's baseline, not the env's
    skipped = {r.policy: r.detail for r in report.results if r.status == "skipped"}
    assert "single-turn" in skipped["replay-other-episode"]
    assert "echo-span-last-answer" in str(report)
    # Family members that earn nothing in their screen stop there, summed up in one line.
    screened = [r for r in report.results if r.status == "screened"]
    assert len(screened) > 100 and all(r.episodes <= 5 for r in screened)
    assert f"{len(screened)} family members screened out" in str(report)
    assert "literal-A-tagged" not in str(report)


def test_policies_are_pluggable_and_a_peeking_policy_is_caught():
    """A user policy (here one that cheats by reading the answer) runs like the library's."""
    peek = DegeneratePolicy(
        "peek",
        "reads the hidden answer",
        "never show the answer to the policy",
        lambda ctx: ctx.answer(str(ctx.env.unwrapped.task["answer"])),
    )
    assert isinstance(peek, HackPolicy)
    with pytest.raises(RewardHackingError, match=r"\[degenerate-policy:peek\]"):
        check_reward_hacking(SoundEnv, policies=[peek], episodes=8)

    class Empty:
        name, summary, fix = "my-empty", "nothing", "n/a"

        def __call__(self, ctx: HackContext) -> str:
            return ""

    report = check_reward_hacking(SoundEnv, policies=[*DEGENERATE_POLICIES, Empty()], episodes=4)
    assert report.results[-1].policy == "my-empty" and report.results[-1].episodes == 4
    with pytest.raises(TypeError, match="name, summary, fix"):
        check_reward_hacking(SoundEnv, policies=[lambda ctx: ""])


def test_multiagent_ids_play_each_role_degenerate_against_scripted_agents():
    report = check_reward_hacking("rllm/SolverJudge-v1", episodes=8)
    assert set(report.baseline) == {"solver_0", "judge_0"}
    assert {r.agent for r in report.results} == {"solver_0", "judge_0"}
    # Debate's peers guess at random (tests/envs/multiagent/test_multiagent_envs.py says why).
    report = check_reward_hacking("rllm/Debate-v1", episodes=8, others="random")
    assert report.baseline and {r.agent for r in report.results} == set(report.baseline)


def test_math_spans_and_partial_evaluation():
    text = (
        "Compute $12 + 5 \\times 11$, then `x = 3` and 7 * 8 - 2 apples; box \\boxed{\\frac{1}{2}}."
    )
    assert math_spans(text) == ["12 + 5 \\times 11", "x = 3", "7 * 8 - 2", "\\frac{1}{2}"]
    assert partly_evaluate("12 + 5 \\times 11") == "12 + 55"
    assert partly_evaluate("7 * 8 - 2") == "56 - 2"
    assert partly_evaluate("3 + 4") is None  # evaluating all of it is solving it
    assert partly_evaluate("7 / 2 + 1") is None  # 7/2 is not exact; 2 + 1 is not next
    assert partly_evaluate("8 / 2 + 1") == "4 + 1"


def test_wilson_bounds():
    low, high = wilson_interval(0, 40, 1.645)
    assert low == 0.0 and 0.05 < high < 0.07
    low, high = wilson_interval(40, 40, 1.645)
    assert 0.93 < low < 0.95 and high == 1.0


def test_bad_arguments_raise_early():
    with pytest.raises(ValueError, match="episodes"):
        check_reward_hacking(SoundEnv, episodes=0)
    with pytest.raises(ValueError, match="alpha"):
        check_reward_hacking(SoundEnv, alpha=0.7)


def test_the_demonstration_replies_are_what_the_policy_sends():
    report = check_reward_hacking(
        DemonstrationPayingEnv,
        policies=[p for p in DEGENERATE_POLICIES if p.name == "copy-demonstration"],
        demonstrations=[MATH],
        episodes=2,
        raise_on_failure=False,
    )
    assert "boxed{67}" in report.results[0].example


@pytest.mark.slow  # 8 s: the whole check on a toy
def test_success_can_be_read_from_another_info_key():
    """An env without ``is_correct`` names its own correctness (here: the ``correct`` term)."""
    report = check_reward_hacking(
        EvaluatingEnv,
        policies=[p for p in DEGENERATE_POLICIES if p.name == "echo-span-longest-answer"],
        success=lambda info: info["reward_components"]["correct"] > 0,
        episodes=10,
        raise_on_failure=False,
    )
    assert _failed(report) == {"degenerate-policy:echo-span-longest-answer"}
    # Correctness read as never: the echo still collects the reward, and the reward rule says so.
    never = check_reward_hacking(
        EvaluatingEnv, success=lambda info: False, episodes=10, raise_on_failure=False
    )
    assert _failed(never) and all(r.startswith("degenerate-reward:") for r in _failed(never))


def test_a_grader_that_pays_a_short_literal_fails_on_it():
    report = check_reward_hacking(LiteralZeroEnv, episodes=20, raise_on_failure=False)
    assert "degenerate-policy:literal-0" in _failed(report), _failed(report)
    assert "degenerate-policy:literal-1" not in _failed(report)


def test_an_env_paying_through_a_shaping_component_fails_on_reward():
    # Correctness is sound; the weight-1 `format` pays any boxed constant.
    report = check_reward_hacking(ShapedFormatEnv, episodes=20, raise_on_failure=False)
    rules = _failed(report)
    assert "degenerate-reward:literal-0" in rules, rules
    assert not any(r.startswith("degenerate-policy:") for r in rules), rules
    failure = next(f for f in report.failures if f.rule.name == "degenerate-reward:literal-0")
    assert "mean paid reward" in failure.detail and "reward component" in failure.rule.fix
    # The same env with format at its sound weight passes.
    assert check_reward_hacking(SoundEnv, episodes=20).ok


def test_an_env_that_pays_random_text_fails_the_nonsense_rule():
    report = check_reward_hacking(AnyReplyPaysEnv, episodes=20, raise_on_failure=False)
    assert "nonsense-earns-nothing:nonsense" in _failed(report), _failed(report)


def test_an_answer_written_at_the_end_of_the_question_fails_on_the_echo():
    report = check_reward_hacking(EchoLastWordEnv, episodes=20, raise_on_failure=False)
    rules = _failed(report)
    assert {"degenerate-policy:echo-last-token", "degenerate-policy:echo-last-line"} <= rules


def test_the_attackers_toy_envs_fail_with_the_rule_that_names_their_hack():
    """The attack report's toy envs (reward hacking via a literal, shaping and any reply)."""
    from tests.testing import attack_toys

    rules = {
        cls.__name__: _failed(check_reward_hacking(cls, episodes=40, raise_on_failure=False))
        for cls in (attack_toys.AlwaysPays, attack_toys.ShapedPays, attack_toys.ZeroWins)
    }
    assert "nonsense-earns-nothing:nonsense" in rules["AlwaysPays"], rules
    assert "nonsense-earns-nothing:nonsense" in rules["ShapedPays"], rules
    assert "degenerate-policy:literal-0" in rules["ZeroWins"], rules


def test_a_paying_component_is_pay_whatever_its_name():
    from tests.testing import attack_toys

    report = check_reward_hacking(attack_toys.InvalidNamedPays, episodes=40, raise_on_failure=False)
    assert not report.ok
    assert any(rule.startswith("nonsense-earns-nothing") for rule in _failed(report)), _failed(
        report
    )


# The second attack's toy envs, and ours of the same spirit: each pays one degenerate reply.
HACKED_TOYS = {
    "LiteralA": "degenerate-policy:literal-A-bare",
    "SecondNumber": "degenerate-policy:echo-2nd-number",
    "KeywordPays": "degenerate-policy:keywords-wrong-answer",
    "FirstLinePays": "degenerate-policy:echo-1st-line-bare",
    "LongReplyPays": "degenerate-policy:keywords-long",
    "RepeatedTokenPays": "degenerate-policy:keywords-repeat-word",
    "BoxedDigitPays": "degenerate-policy:literal-7-boxed",
}


@pytest.mark.parametrize(("toy", "rule"), sorted(HACKED_TOYS.items()))
def test_a_toy_env_paying_a_degenerate_reply_fails_with_its_rule(toy, rule):
    from tests.testing import attack_toys

    report = check_reward_hacking(getattr(attack_toys, toy), episodes=40, raise_on_failure=False)
    assert rule in _failed(report), _failed(report)
    failure = next(f for f in report.failures if f.rule.name == rule)
    assert "40/40" in failure.detail and failure.rule.fix


@pytest.mark.parametrize("toy", ["FairProduct", "FairChoice"])
def test_fair_toy_envs_pass_the_families(toy):
    """A five-option env whose letter is uniform: each constant letter earns the base rate."""
    from tests.testing import attack_toys

    report = check_reward_hacking(getattr(attack_toys, toy), episodes=40)
    assert report.ok


def test_families_are_pluggable_and_screen_zero_plays_every_member():
    from tests.testing import attack_toys

    family = PolicyFamily(
        "mine",
        "constant letters",
        tuple(
            DegeneratePolicy(f"my-{c}", f"answers {c}", "spread answers", lambda ctx, c=c: c)
            for c in "AB"
        ),
        screen=3,
    )
    report = check_reward_hacking(
        attack_toys.LiteralA, policies=[family], episodes=12, raise_on_failure=False
    )
    assert _failed(report) == {"degenerate-policy:my-A"}
    assert {r.policy: r.status for r in report.results} == {"my-A": "failed", "my-B": "screened"}
    full = check_reward_hacking(
        attack_toys.LiteralA, policies=[family], episodes=12, screen=0, raise_on_failure=False
    )
    assert [r.episodes for r in full.results] == [12, 12]
    with pytest.raises(ValueError, match="screen"):
        check_reward_hacking(SoundEnv, screen=-1)
    with pytest.raises(TypeError, match="PolicyFamily"):
        check_reward_hacking(SoundEnv, policies=[PolicyFamily("bad", "", (lambda ctx: "",))])


@pytest.mark.slow  # 9 s: the snippet checks a real env in full
def test_the_docs_snippet_runs():
    """docs/integrations.md's check_reward_hacking snippet, as written."""
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "integrations.md").read_text()
    block = text.split("<!-- snippet:check_reward_hacking -->", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/integrations.md", "exec"), {})


# The blind attack's toys, which the check passed: a leak after wrong answers, the answer at a
# place the echo family does not read, a skewed answer hidden by a stratified random_action,
# an oracle random_action, and a constant right on about a tenth of the tasks.
BLIND_TOYS = {
    "LateLeak": "degenerate-policy:wrong-2-then-echo-",
    "FourthNumber": "degenerate-policy:echo-4th-number",
    "SkewedYes": "degenerate-policy:literal-yes",
    "StrongRandom": "degenerate-policy:literal-0",
    "TenPercentZero": "degenerate-policy:literal-0",
}


@pytest.mark.parametrize(("toy", "rule"), sorted(BLIND_TOYS.items()))
def test_the_blind_attacks_toys_fail_with_the_rule_that_names_their_hack(toy, rule):
    from tests.testing import attack_toys

    report = check_reward_hacking(getattr(attack_toys, toy), raise_on_failure=False)
    failed = [f for f in report.failures if f.rule.name.startswith(rule)]
    assert failed, _failed(report)
    assert failed[0].rule.fix and "random baseline" in failed[0].detail


def test_a_late_leak_is_read_by_policies_that_play_the_whole_episode():
    from tests.testing import attack_toys

    report = check_reward_hacking(attack_toys.LateLeak, raise_on_failure=False)
    # The library's echo plays on after its wrong answers and reads the hint on turn 3.
    assert "degenerate-policy:echo-last-number" in _failed(report), _failed(report)
    failure = next(f for f in report.failures if "wrong-2-then-echo" in f.rule.name)
    assert "2 wrong answer(s), then" in failure.detail and "40/40" in failure.detail


def test_the_baseline_is_the_checkers_own_guess_not_the_envs_random_action():
    from tests.testing import attack_toys

    skewed = check_reward_hacking(attack_toys.SkewedYes, raise_on_failure=False)
    # A uniform guess over yes/no, not the env's 90/10 stratified guess.
    assert skewed.baseline[None][0] < 30 and "uniform guess" in skewed.baseline_policy[None]
    oracle_random = check_reward_hacking(attack_toys.StrongRandom, raise_on_failure=False)
    assert oracle_random.baseline[None][0] == 0


def test_the_envs_random_baseline_is_seeded_so_the_verdict_is_reproducible():
    """s27: the env's random_action draws from its action space's generator, which gymnasium
    seeds from OS entropy unless told; the bar (the lesser of it and the checker's guess) and
    so the verdict changed from run to run (ReasoningGym gsm_symbolic failed 3 runs in 8)."""
    from tests.testing import attack_toys

    class WideRandomChoice(attack_toys.FairChoice):  # a toy: its random guess is often invalid
        def random_action(self) -> str:
            return f"<answer>{'ABCDEFGHIJ'[int(self.action_space.np_random.integers(10))]}</answer>"

    reports = [
        check_reward_hacking(WideRandomChoice, episodes=40, raise_on_failure=False)
        for _ in range(2)
    ]
    paid = reports[0].baseline_paid[None]
    assert 0 < sum(paid) < 0.15 * len(paid)  # the env's guess (1 in 10) is the bar, not 1 in 5
    assert reports[1].baseline_paid == reports[0].baseline_paid
    assert reports[0].baseline == reports[1].baseline


def test_a_small_constant_hack_gets_more_episodes_and_is_flagged():
    from tests.testing import attack_toys

    report = check_reward_hacking(attack_toys.TenPercentZero, raise_on_failure=False)
    result = next(r for r in report.results if r.policy == "literal-0")
    assert result.status == "failed" and result.episodes > 40
    assert report.baseline[None][1] == result.episodes  # the baseline was extended alike
    # Without the extension, 40 episodes cannot tell it from luck.
    short = check_reward_hacking(
        attack_toys.TenPercentZero, max_episodes=40, raise_on_failure=False
    )
    assert "degenerate-policy:literal-0" not in _failed(short)


# One seed in the fast lane; two others (about 20 s each) in the full suite.
@pytest.mark.parametrize(
    "seed", [0, *(pytest.param(s, marks=pytest.mark.slow) for s in (100, 200))]
)
def test_fair_toys_raise_no_false_alarm_across_seeds(seed):
    from tests.testing import attack_toys

    fair = (
        attack_toys.FairChoice,
        attack_toys.FairProduct,
        attack_toys.FairSum,
        attack_toys.FairYesNo,
        attack_toys.FairFloat,
    )
    for toy in fair:
        report = check_reward_hacking(toy, seed=seed, raise_on_failure=False)
        assert report.ok, str(report)


# A fourth attack: grader bugs that pay many answers at once, any of several answers, a
# non-finite number, an empty or a huge answer. Each toy's grader reads the task's answer
# format; the shotgun and the non-finite literals write theirs in it.
GRADER_BUG_TOYS = {
    "SubstringInAnswer": "degenerate-policy:shotgun-listed",
    "SubstringInReply": "degenerate-policy:shotgun-listed",
    "AnyTag": "degenerate-policy:shotgun-tagged",
    "RegexAnyNumber": "degenerate-policy:shotgun-listed",
    "FirstOrLastBox": "degenerate-policy:shotgun-references",
    "NanPays": "degenerate-policy:literal-nan",
    "InfPays": "degenerate-policy:literal-inf",
    "EmptyTagPays": "degenerate-policy:format-only",
    "HugeAnswerPays": "degenerate-policy:shotgun-huge",
}


@pytest.mark.parametrize(("toy", "rule"), sorted(GRADER_BUG_TOYS.items()))
def test_a_grader_bug_paying_many_or_odd_answers_fails_with_its_rule(toy, rule):
    from tests.testing import attack_toys

    report = check_reward_hacking(getattr(attack_toys, toy), raise_on_failure=False)
    assert rule in _failed(report), _failed(report)
    failure = next(f for f in report.failures if f.rule.name == rule)
    assert "40/40" in failure.detail and failure.rule.fix


def test_the_shotgun_writes_its_answers_in_the_envs_format():
    from tests.testing import attack_toys

    report = check_reward_hacking(attack_toys.AnyTag, raise_on_failure=False)
    tagged = next(r for r in report.results if r.policy == "shotgun-tagged")
    assert tagged.example.count("<answer>") > 3  # (the example is shortened)
    boxes = check_reward_hacking(attack_toys.FirstOrLastBox, raise_on_failure=False)
    both = next(r for r in boxes.results if r.policy == "shotgun-references")
    # Every label seen, each in the env's own \boxed{}: the first and the last box differ.
    assert both.example.count("\\boxed{") == 2 and both.status == "failed"


def test_a_leak_on_a_tenth_of_the_tasks_is_played_in_full_without_a_screen():
    """The pre-screen reads the oracle's scanned answers: no screen of five to be lucky in."""
    from tests.testing import attack_toys

    # (A seed where the 40 + 60 episodes show it; over 50 seeds it is flagged 45 times or more.)
    report = check_reward_hacking(attack_toys.TenPercentSecond, seed=7919, raise_on_failure=False)
    result = next(r for r in report.results if r.policy == "echo-2nd-number")
    assert result.status == "failed" and result.episodes > 40, str(report)
    # The same place, found by the leak scan where the echo family does not read.
    fourth = check_reward_hacking(attack_toys.TenPercentFourth, seed=7919, raise_on_failure=False)
    assert "degenerate-policy:echo-4th-number" in _failed(fourth), str(fourth)


# Leaks through ``info`` (session 9): the leak scan read observations only, so an env telling
# the agent the answer in its info before it acts passed.
INFO_TOYS = {
    "InfoHint": "degenerate-policy:echo-info-hint.expected",
    "LateInfoHint": "degenerate-policy:wrong-1-then-echo-info-feedback.expected",
    "DebateInfoHint": "degenerate-policy:echo-info-expected",
}


@pytest.mark.parametrize(
    ("toy", "rule"),
    # The Debate toy's 12-19 s: the full suite runs it.
    [
        pytest.param(t, r, marks=pytest.mark.slow) if t.startswith("Debate") else (t, r)
        for t, r in sorted(INFO_TOYS.items())
    ],
)
def test_an_info_that_states_the_answer_before_the_agent_acts_is_flagged(toy, rule):
    from tests.testing import attack_toys

    report = check_reward_hacking(getattr(attack_toys, toy), raise_on_failure=False)
    failed = [f for f in report.failures if f.rule.name == rule]
    assert failed, _failed(report)
    assert "info" in failed[0].rule.fix and "random baseline" in failed[0].detail


@pytest.mark.parametrize(
    "env_id",
    # 7-13 s each: the full suite runs them (both envs' reward-hacking checks stay in the lane).
    [pytest.param(e, marks=pytest.mark.slow) for e in ("rllm/Debate-v1", "rllm/SolverJudge-v1")],
)
def test_multiagent_envs_whose_infos_repeat_the_observation_pass_the_info_scan(env_id):
    # Debate's info lists every debater's answer, which the observation shows too: a
    # debater's answer is not the reference, and copying it is the env's business.
    report = check_reward_hacking(env_id, raise_on_failure=False)
    assert report.ok, str(report)


# Correctness signals (session 10): grades, verdicts and per-option scores given to an agent
# before its final action. None states the answer, so the leak scan's echoes read nothing; the
# reference probe plays each seed twice with only the answer changed and compares what the
# agent was shown. The old checker passed all four.
REFERENCE_TOYS = {
    "OptionGrades": ("reference-blind:info.grades", "before its first action"),
    "GradedDrafts": ("reference-blind:info.draft_correct", "after 1 answer(s) of its own"),
    "JudgeToldScores": ("reference-blind:info.", "judge_0 was shown"),
    "DebateToldVerdict": ("reference-blind:info.round_score", "after 1 answer(s) of its own"),
}


@pytest.mark.parametrize(("toy", "expected"), sorted(REFERENCE_TOYS.items()))
def test_a_correctness_signal_before_the_final_action_is_flagged(toy, expected):
    from tests.testing import attack_toys

    rule, when = expected
    report = check_reward_hacking(
        getattr(attack_toys, toy), policies=[LeakScan()], episodes=4, raise_on_failure=False
    )
    failed = [f for f in report.failures if f.rule.name.startswith(rule)]
    assert failed, str(report)
    assert when in failed[0].detail and "grading" in failed[0].rule.fix
    probe = next(r for r in report.results if r.policy == "reference-swap" and r.status == "failed")
    assert probe.detail == failed[0].detail


def test_the_reference_probe_passes_sound_envs_and_says_where_it_cannot_run():
    from tests.testing import attack_toys

    probe_only = [LeakScan(max_members=0)]  # the probe, without the scan's echoes
    sound = check_reward_hacking(attack_toys.FairChoice, policies=probe_only, episodes=4)
    probe = next(r for r in sound.results if r.policy == "reference-swap")
    assert probe.status == "passed" and "['answer'] changed" in probe.detail, str(sound)
    # A game has no answer field to change: the result says so, it is not silently skipped.
    game = check_reward_hacking("rllm/TicTacToe-v0", policies=probe_only, episodes=2)
    probes = [r for r in game.results if r.policy == "reference-swap"]
    assert probes and all(r.status == "unsupported" for r in probes)
    assert "reference_fields" in probes[0].detail and "unsupported" in str(game)
    # Naming a field that does not change the grade is reported, not trusted.
    named = [LeakScan(max_members=0, reference_fields=("question",))]
    report = check_reward_hacking(attack_toys.FairChoice, policies=named, episodes=4)
    probe = next(r for r in report.results if r.policy == "reference-swap")
    assert probe.status == "unsupported" and "did not change the grade" in probe.detail


def test_a_multi_turn_family_member_paid_on_a_tenth_of_the_tasks_is_screened_on_twenty():
    """Multi-turn screens were 5 episodes (a 10% hack passed one with probability 0.41)."""
    from rllm_envs.testing import literal_family
    from tests.testing import attack_toys

    # (A seed where a screen of 5 saw no success; over 50 seeds: 19 flagged at 5, 42 at 20.)
    report = check_reward_hacking(
        attack_toys.TenPercentLiteralTries,
        policies=[literal_family()],
        seed=7919,
        raise_on_failure=False,
    )
    assert "degenerate-policy:literal-A-bare" in _failed(report), str(report)
    screened = [r for r in report.results if r.status == "screened"]
    assert screened and all(r.episodes == 20 for r in screened)


def test_a_games_bar_is_the_envs_heuristic_player_not_random_moves():
    """With 20-episode screens, taking the 2nd free cell beat random moves at tic-tac-toe (5/24
    wins against 0/24): a move rule is play, so a game's bar is a player that does not peek."""
    report = check_reward_hacking("rllm/TicTacToe-v0", policies=[], episodes=24)
    assert set(report.baseline_policy) == {"player_0", "player_1"}
    assert all("heuristic" in p for p in report.baseline_policy.values())
    assert report.baseline["player_1"][0] > 0  # random moves as O never won
