"""Blind red-team s17 (att25e): four more reasoning shortcuts of rllm/ReasoningGym-v0 families.

* syllogism: the quantifiers alone ("Yes" iff the conclusion starts with "Some"; a table of
  quantifier moods fitted on training draws does better), never which terms they link;
* acre: the light of a shown example with exactly the test case's objects, else
  "undetermined" (no blicket inference);
* gcd: the common factors among 2, 3, 5 and 7 only (no Euclid);
* knights_knaves: the statements' template (names and role words replaced) looked up among
  training draws, against the best *truth pattern* (its answers name the question's people,
  so a literal constant and ``random_action()`` understate the base rate).

Committed in ``surface.KNOWN_TELLS``: refused for held-out evaluation, a warning when used for
training. The shortcuts are the red team's policies; each must still beat its baseline by the
margin on evaluation draws, or the entry should go.
"""

from __future__ import annotations

import re
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable

import pytest

pytest.importorskip("reasoning_gym", reason='needs `pip install "rllm-envs[reasoning-gym]"`')

import gymnasium as gym  # noqa: E402

import rllm_envs  # noqa: E402, F401
from rllm_envs.reasoning_gym import scoring  # noqa: E402
from rllm_envs.reasoning_gym import tasks as rg_tasks  # noqa: E402

ENV_ID = "rllm/ReasoningGym-v0"


def _syllogism(question: str) -> str:
    conclusion = re.search(r"follow that:\n(.*)\?", question)
    return "Yes" if conclusion is not None and conclusion.group(1).startswith("Some") else "No"


def _acre(question: str) -> str:
    def objects(text: str) -> frozenset[str]:
        return frozenset(x.strip() for x in text.split(","))

    shown = re.findall(r"^(.*) → (on|off|undetermined)$", question, re.M)
    case = re.search(r"New test case:\n(.*)\n", question)
    if case is None:
        return "undetermined"
    test = objects(case.group(1))
    return next((light for seen, light in shown if objects(seen) == test), "undetermined")


def _gcd(question: str) -> str:
    numbers = [int(x) for x in re.findall(r"\d+", question.split("numbers:")[1].split("Give")[0])]
    common = 1
    for p in (2, 3, 5, 7):
        while all(x % (common * p) == 0 for x in numbers):
            common *= p
    return str(common)


SHORTCUTS: dict[str, Callable[[str], str]] = {
    "syllogism": _syllogism,
    "acre": _acre,
    "gcd": _gcd,
}


def _eval_stream(family: str):
    from rllm_envs.reasoning_gym.balance import BalancedTasks
    from rllm_envs.tasks import EVAL_SEED_START

    return BalancedTasks(family, task_seed=EVAL_SEED_START)


def _rate(policy: Callable[[str], str], tasks: list[dict]) -> float:
    return sum(
        scoring.grade(f"<answer>{policy(t['question'])}</answer>", t).correct for t in tasks
    ) / len(tasks)


def assert_beats_the_best_constant(family: str, policy: Callable[[str], str]) -> None:
    """``policy`` answers 150 evaluation draws of ``family`` 0.05 above its best constant."""
    source = _eval_stream(family)
    tasks = [source.task(i) for i in range(150)]
    constant = max(Counter(t["answer"] for t in tasks).values()) / len(tasks)
    assert _rate(policy, tasks) > constant + 0.05, family


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(SHORTCUTS))
def test_the_shortcut_beats_the_best_constant_on_evaluation_draws(family):
    assert_beats_the_best_constant(family, SHORTCUTS[family])


# ------------------------------------------------------------------ knights_knaves

_VERBS = (
    r"\b(stated|said|claimed|asserted|commented|declared|remarked|mentioned|noted|told you "
    r"that|says|that|exclaimed|expressed)\b"
)


def _knights_parts(question: str) -> tuple[str, list[str], str, str]:
    """``(template, names, truth word, lie word)`` of a knights_knaves question."""
    roles = re.search(r"inhabited only by (\w+) and (\w+)\.", question)
    meet = re.search(r"You meet \d+ inhabitants: (.*?)\. ", question)
    assert roles is not None and meet is not None
    names = [n.strip() for n in re.split(r",\s*(?:and\s+)?|\s+and\s+", meet.group(1)) if n.strip()]
    truth, lie = (w[:-1] if w.endswith("s") else w for w in roles.groups())
    body = question.split(meet.group(0))[1].split("So who is")[0]
    for k, name in enumerate(names):
        body = re.sub(r"\b" + re.escape(name) + r"\b", f"P{k + 1}", body)
    body = re.sub(r"\b" + re.escape(truth) + r"\w*", "T", body)
    body = re.sub(r"\b" + re.escape(lie) + r"\w*", "L", body)
    body = re.sub(r"[^\w\s]", " ", re.sub(_VERBS, " ", body))
    return " ".join(body.split()), names, truth, lie


def _knights_answer(names: list[str], truth: str, lie: str, pattern: tuple[bool, ...]) -> str:
    return (
        ", and ".join(
            f"{n} is a {truth if v else lie}" for n, v in zip(names, pattern, strict=False)
        )
        + "."
    )


@pytest.mark.slow
def test_knights_knaves_templates_from_training_beat_the_best_truth_pattern():
    from rllm_envs.reasoning_gym.balance import BalancedTasks

    table: defaultdict[str, Counter[tuple[bool, ...]]] = defaultdict(Counter)
    for seed in range(3):
        source = BalancedTasks("knights_knaves", task_seed=seed)
        for i in range(600):
            task = source.task(i)
            template, names, truth, _ = _knights_parts(task["question"])
            pattern = tuple(
                bool(re.search(re.escape(n) + r" is an? " + re.escape(truth), task["answer"]))
                for n in names
            )
            table[template][pattern] += 1
    tasks = [_eval_stream("knights_knaves").task(i) for i in range(150)]
    patterns = [(True, True), (True, False), (False, True), (False, False)]

    def memory(question: str) -> str:
        template, names, truth, lie = _knights_parts(question)
        seen = table.get(template)
        pattern = seen.most_common(1)[0][0] if seen else (False,) * len(names)
        return _knights_answer(names, truth, lie, pattern)

    def constant(pattern: tuple[bool, ...]) -> Callable[[str], str]:
        def policy(question: str) -> str:
            _, names, truth, lie = _knights_parts(question)
            return _knights_answer(names, truth, lie, pattern)

        return policy

    best_pattern = max(_rate(constant(p), tasks) for p in patterns)
    assert _rate(memory, tasks) > best_pattern + 0.05


@pytest.mark.parametrize("family", [*sorted(SHORTCUTS), "knights_knaves"])
def test_a_family_with_a_shortcut_is_refused_for_held_out_evaluation_and_warns(family, monkeypatch):
    from rllm_envs.reasoning_gym import reasoning_gym_env
    from rllm_envs.reasoning_gym.surface import KNOWN_TELLS

    assert family in KNOWN_TELLS
    monkeypatch.setattr(rg_tasks.ReasoningGymTasks, "surface_tell", lambda self: None)
    assert rg_tasks.ReasoningGymTasks(family).held_out_reason() is not None
    reasoning_gym_env._WARNED.discard(family)
    with pytest.warns(UserWarning, match=re.escape(KNOWN_TELLS[family][:40])):
        gym.make(ENV_ID, dataset=family, size=4).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gym.make(ENV_ID, dataset=family, size=4).close()
