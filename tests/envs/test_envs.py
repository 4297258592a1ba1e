"""The conformance matrix: every registered id, and variants of it, goes through the public
conformance kit (:mod:`rllm_envs.testing`) rule by rule, plus the registry-only checks.

Registering an env in ``rllm_envs.ENVS`` enrols it here automatically; test names carry the id,
the variant's kwargs and the rule.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rllm_envs
from rllm_envs.core import STEP_INFO_KEYS, TextEnv
from rllm_envs.spaces import UnicodeText
from rllm_envs.testing import TEXT_ENV_RULES, check_reward_hacking, check_text_env
from tests.envs.conformance import (
    ALL_ENTRIES,
    ALL_IDS,
    VARIANTS,
    case_id,
    make_or_skip,
    skip_if_skipped,
)

_ENTRY = {e.id: e for e in ALL_ENTRIES}
#: (id, kwargs, rules not run, why): slippery ice defeats any policy now and then, so the
#: oracle's return is 1 only in expectation (tests/envs/frozenlake covers the slippery oracle).
_NOT_RUN = {
    ("rllm/FrozenLake-v1", "difficulty=5"): {"oracle": "slippery ice: no policy always wins"},
    ("rllm/FrozenLake-v1", "is_slippery=True"): {"oracle": "slippery ice: no policy always wins"},
}
#: Class-level rules are the same for every variant of a class: run them on the defaults only.
_CLASS_RULES = {"docstring", "step-before-reset"}
#: Families whose replies are judged by running programs or a project's tests: their variants run
#: in the full suite only (``slow``), like their own folders (the sandbox lane); the registered
#: defaults stay in the contributors' lane.
_JUDGED_BY_RUNNING = {"Code", "SWE"}
#: The hardest difficulty among each id's variants: the contributors' lane runs it (and the
#: registered default); the difficulties in between take the same code paths at sizes in between
#: and run in the full suite.
_HARDEST = {
    env_id: max(kw["difficulty"] for e, kw in VARIANTS if e == env_id and "difficulty" in kw)
    for env_id, kwargs in VARIANTS
    if "difficulty" in kwargs
}


def _variant_marks(env_id: str, kwargs: dict) -> list[pytest.MarkDecorator]:
    if _ENTRY[env_id].family in _JUDGED_BY_RUNNING:
        return [pytest.mark.slow]
    if set(kwargs) == {"difficulty"} and kwargs["difficulty"] != _HARDEST[env_id]:
        return [pytest.mark.slow]
    return []


CASES = [
    pytest.param(e.id, {}, rule, id=f"{e.id}-{rule}")
    for e in ALL_ENTRIES
    for rule in TEXT_ENV_RULES
] + [
    pytest.param(
        env_id,
        kwargs,
        rule,
        id=f"{case_id(env_id, kwargs)}-{rule}",
        marks=_variant_marks(env_id, kwargs),
    )
    for env_id, kwargs in VARIANTS
    for rule in TEXT_ENV_RULES
    if rule not in _CLASS_RULES
]


@pytest.mark.parametrize(("env_id", "kwargs", "rule"), CASES)
def test_contract(env_id, kwargs, rule):
    make_or_skip(env_id, **kwargs).close()
    key = (env_id, ",".join(f"{k}={v}" for k, v in kwargs.items()))
    if rule in _NOT_RUN.get(key, {}):
        pytest.skip(_NOT_RUN[key][rule])
    report = check_text_env(env_id, kwargs=kwargs, rules=[rule])
    skip_if_skipped(report, rule)
    assert report.passed == [rule]


def test_every_variant_is_a_registered_id():
    assert {env_id for env_id, _ in VARIANTS} <= set(ALL_IDS)


def test_nondeterministic_entries_skip_determinism_by_declaration():
    for entry in ALL_ENTRIES:
        if entry.nondeterministic:
            report = check_text_env(entry.id, rules=["determinism"], raise_on_failure=False)
            assert "declared nondeterministic" in report.skipped["determinism"]
            break


# ------------------------------------------------------------------ registry-only checks


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
def test_spaces_are_unicode_text(entry):
    env = make_or_skip(entry.id)
    assert isinstance(env.unwrapped, TextEnv)
    assert isinstance(env.observation_space, UnicodeText)
    assert isinstance(env.action_space, UnicodeText)
    env.close()


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
def test_rllm_make_rejects_typos(entry):
    make_or_skip(entry.id).close()
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="has no argument"):
        rllm_envs.make(entry.id, dificulty=2)


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(st.text(max_size=400), min_size=1, max_size=6), seed=st.integers(0, 50))
def test_random_unicode_actions_never_raise(entry, actions, seed):
    env = make_or_skip(entry.id).unwrapped
    env.reset(seed=seed)
    for action in actions:
        obs, reward, terminated, truncated, info = env.step(action)
        assert obs in env.observation_space
        assert 0.0 <= abs(reward) < float("inf")
        assert set(STEP_INFO_KEYS) <= set(info)
        if terminated or truncated:
            env.reset(seed=seed)
    env.close()


# ------------------------------------------------------------------ reward-hacking check

#: Ids (and variants) the public reward-hacking check fails today, with why. Strict xfails:
#: the day the env is fixed the test says so, and the entry must go.
_HACKABLE: dict[str, str] = {}
#: Variants checked besides every id: the answer formats and families of issue #25's table.
HACKING_VARIANTS: tuple[tuple[str, dict], ...] = (
    ("rllm/Math-v1", {"answer_format": "any"}),
    ("rllm/Math-v1", {"families": ["arithmetic", "fractions"], "difficulty": 3}),
    ("rllm/ToolUse-v1", {"families": ["arith"], "difficulty": 2}),
    ("rllm/FrozenLake-v1", {"map_name": "8x8"}),
)


def _hacking_case(env_id: str, kwargs: dict) -> object:
    entry = _ENTRY[env_id]
    marks = []
    if entry.family == "Code":  # each degenerate reply is judged in the sandbox
        marks.append(pytest.mark.slow)
    elif entry.family in ("SWE", "FrozenLake") or kwargs:
        # Each SWE reply is judged by running a project's tests; FrozenLake's multi-turn replay
        # policies play about 9,000 episodes (20 s); the variants repeat their id's policies on
        # other settings (8x8 maps, other answer formats): the full suite runs them.
        marks.append(pytest.mark.slow)
    key = case_id(env_id, kwargs)
    if key in _HACKABLE:
        marks.append(pytest.mark.xfail(strict=True, reason=_HACKABLE[key]))
    return pytest.param(env_id, kwargs, id=key, marks=marks)


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [_hacking_case(e.id, {}) for e in ALL_ENTRIES]
    + [_hacking_case(env_id, kwargs) for env_id, kwargs in HACKING_VARIANTS],
)
def test_reward_hacking(env_id, kwargs):
    """No degenerate policy beats the random baseline; copied demonstrations earn nothing."""
    make_or_skip(env_id, **kwargs).close()
    # Every id gets 40 episodes a policy; a variant, which repeats its id's policies on other
    # settings, half (its Wilson bounds still separate a paid policy from the random baseline;
    # the 8x8 lake took 120 s at 40).
    episodes = 6 if _ENTRY[env_id].family == "Code" else (20 if kwargs else 40)
    check_reward_hacking(env_id, kwargs=kwargs, episodes=episodes)
