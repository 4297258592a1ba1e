"""Issue #25, s11 blind attack: the reward-hacking check finds a near echo (F1) and feedback
that follows the reference after a wrong answer (F2); both toys passed the check before."""

from __future__ import annotations

from rllm_envs.testing import (
    DEGENERATE_POLICIES,
    LeakScan,
    PolicyFamily,
    check_reward_hacking,
    perturbed_echo_family,
)
from tests.testing.blind25_toys import HiLoVault, PassphraseNote, WrongVault


def _failed(report) -> set[str]:
    return {f.rule.name for f in report.failures}


def test_an_echo_one_invisible_character_away_is_flagged():
    env = PassphraseNote()
    obs, _ = env.reset(seed=0)
    question = obs.splitlines()[0]
    # The hack: the exact echo is refused, the echo with a zero-width space is paid.
    assert env.step(f"<answer>{question}</answer>")[1] == 0.0
    env.reset(seed=0)
    assert env.step(f"<answer>{question[:1]}\u200b{question[1:]}</answer>")[1] == 1.0
    report = check_reward_hacking(PassphraseNote, raise_on_failure=False)
    failed = _failed(report)
    assert any(name.startswith("degenerate-policy:echo-perturbed-") for name in failed), report


def test_the_perturbed_echoes_are_in_the_library_and_change_the_text():
    family = next(
        p for p in DEGENERATE_POLICIES if isinstance(p, PolicyFamily) and p.name == "echo-perturbed"
    )
    names = {m.name for m in family.members}
    assert "echo-perturbed-question-zero-width" in names
    assert "echo-perturbed-body-nbsp-bare" in names
    assert len(names) == len(family.members) == len(perturbed_echo_family().members)


def test_feedback_giving_a_direction_after_a_wrong_answer_is_flagged():
    env = HiLoVault()
    wins = 0
    for seed in range(20):
        env.reset(seed=seed)
        low, high = 1, 1024
        while True:
            guess = (low + high) // 2
            obs, reward, terminated, truncated, _ = env.step(f"<answer>{guess}</answer>")
            if terminated or truncated:
                break
            low, high = (low, guess - 1) if "too high" in obs else (guess + 1, high)
        wins += reward > 0
    assert wins == 20  # blind bisection never reads the task
    report = check_reward_hacking(HiLoVault, policies=[LeakScan()], raise_on_failure=False)
    assert "reference-blind:observation" in _failed(report), report
    swap = next(r for r in report.results if r.policy == "reference-swap")
    assert "wrong under both" in swap.detail


def test_a_vault_saying_only_wrong_passes_the_reference_probe():
    report = check_reward_hacking(WrongVault, policies=[LeakScan()], raise_on_failure=False)
    assert report.ok, report
    swap = next(r for r in report.results if r.policy == "reference-swap")
    assert swap.status not in ("failed", "unsupported"), swap
