"""The multi-agent conformance matrix: every id of ``rllm_envs.MULTIAGENT_ENVS``, and variants
of it, goes through the public conformance kit (:func:`rllm_envs.testing.check_multiagent_env`,
which runs PettingZoo's own tests and ours) rule by rule. Registering an env there enrols it
here; test names carry the id, the variant and the rule.
"""

from __future__ import annotations

import numpy as np
import pettingzoo
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test

from rllm_envs.error import InvalidEnvConfig
from rllm_envs.multiagent import MA_STEP_INFO_KEYS, MultiAgentTextEnv
from rllm_envs.testing import MULTIAGENT_RULES, check_multiagent_env, check_reward_hacking
from tests.envs.conformance import case_id, skip_if_skipped
from tests.envs.multiagent.conformance import (
    ALL_ENTRIES,
    ALL_IDS,
    make_aec_or_skip,
    make_or_skip,
)

#: Variants besides each id's registered defaults: team sizes, rounds, difficulty, openings.
VARIANTS = (
    ("rllm/SolverJudge-v1", {"n_solvers": 3, "difficulty": 3}),
    ("rllm/Debate-v1", {"n_debaters": 2, "n_rounds": 1}),
    ("rllm/Debate-v1", {"difficulty": 4}),
    ("rllm/TicTacToe-v0", {"opening_plies": 0}),
)
_ENTRY = {e.id: e for e in ALL_ENTRIES}
_CLASS_RULES = {"docstring", "render"}

CASES = [
    pytest.param(e.id, {}, rule, id=f"{e.id}-{rule}")
    for e in ALL_ENTRIES
    for rule in MULTIAGENT_RULES
] + [
    pytest.param(env_id, kwargs, rule, id=f"{case_id(env_id, kwargs)}-{rule}")
    for env_id, kwargs in VARIANTS
    for rule in MULTIAGENT_RULES
    if rule not in _CLASS_RULES
]


@pytest.mark.parametrize(("env_id", "kwargs", "rule"), CASES)
def test_contract(env_id, kwargs, rule):
    make_or_skip(env_id, **kwargs)
    report = check_multiagent_env(
        env_id, kwargs=kwargs, rules=[rule], nondeterministic=_ENTRY[env_id].nondeterministic
    )
    skip_if_skipped(report, rule)
    assert report.passed == [rule]


def test_every_variant_is_a_registered_id():
    assert {env_id for env_id, _ in VARIANTS} <= set(ALL_IDS)


# --------------------------------------------------------------- registry-only checks


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
@pytest.mark.filterwarnings("ignore:.*(NumPy array|probably should be):UserWarning")
@pytest.mark.xfail(
    strict=True,
    raises=AttributeError,
    reason="pettingzoo 1.27.0 api_test compares `observation.dtype` with the space's dtype and "
    "crashes on str observations ('str' object has no attribute 'dtype'); "
    "the kit's aec-api-test rule covers the same properties. When this passes, drop the xfail.",
)
def test_aec_api_test_unmodified(entry):
    api_test(make_aec_or_skip(entry.id), num_cycles=50)


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
def test_pettingzoo_registry_makes_both_forms(entry):
    make_or_skip(entry.id)
    par = pettingzoo.make("parallel", entry.id)
    assert isinstance(par, pettingzoo.ParallelEnv) and isinstance(par, MultiAgentTextEnv)
    aec = pettingzoo.make("aec", entry.id)
    assert isinstance(aec, pettingzoo.AECEnv)
    assert type(aec.unwrapped) is type(par)
    par_obs, _ = par.reset(seed=3)
    aec.reset(seed=3)
    assert aec.observe(aec.agent_selection) == par_obs[aec.agent_selection]


# ---------------------------------------------------- property tests (hypothesis)


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    actions=st.lists(st.text(max_size=300), min_size=1, max_size=24),
    seed=st.integers(0, 50),
)
def test_random_unicode_actions_for_every_agent_never_raise(entry, actions, seed):
    env = make_or_skip(entry.id)
    env.reset(seed=seed)
    pending = iter(actions)
    for action in pending:
        # Every live agent, acting or not, gets a fuzzed action.
        joint = {a: action if i == 0 else next(pending, action) for i, a in enumerate(env.agents)}
        obs, rewards, terms, truncs, infos = env.step(joint)
        for agent in obs:
            assert obs[agent] in env.observation_space(agent)
            assert np.isfinite(rewards[agent])
            assert set(MA_STEP_INFO_KEYS) <= set(infos[agent])
        if not env.agents:
            env.reset(seed=seed)


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(st.text(max_size=200), min_size=1, max_size=30), seed=st.integers(0, 50))
def test_random_unicode_actions_in_aec_form_never_raise(entry, actions, seed):
    env = make_aec_or_skip(entry.id)
    env.reset(seed=seed)
    for action in actions:
        obs, reward, terminated, truncated, info = env.last()
        assert obs in env.observation_space(env.agent_selection)
        env.step(None if terminated or truncated else action)
        if not env.agents:
            env.reset(seed=seed)


def _hacking_case(entry) -> object:
    # SolverJudge's roles are played degenerate in the contributors' lane by the checker's own
    # test (tests/testing/test_hacking.py, 8 episodes); its 24-episode run here is the costliest
    # of the lane and runs in the full suite.
    # TicTacToe's episodes of every degenerate move pattern take 6 s, Debate's 24 episodes
    # 6-15 s (its 8-episode run is in tests/testing/test_hacking.py): full suite too.
    slow = ("rllm/SolverJudge-v1", "rllm/TicTacToe-v0", "rllm/Debate-v1")
    marks = [pytest.mark.slow] if entry.id in slow else []
    return pytest.param(entry, id=entry.id, marks=marks)


@pytest.mark.parametrize("entry", [_hacking_case(e) for e in ALL_ENTRIES])
def test_reward_hacking(entry):
    """Each role played degenerate (the others scripted) earns no more than random play."""
    make_or_skip(entry.id).close()
    # A debater may adopt a peer's answer (that is debate; tests/envs/multiagent/
    # test_debate_copier.py bounds what a copier earns by what the copied debater earns), so
    # Debate's peers guess at random here: whatever a degenerate debater then earns, it earns
    # from the grader, not from a peer's work.
    others = "random" if entry.id.startswith("rllm/Debate-") else "heuristic"
    report = check_reward_hacking(entry.id, episodes=24, others=others)
    assert report.baseline  # every role was played


def test_a_refused_reset_changes_nothing_and_custom_tasks_are_marked():
    """A reset refused for a bad task record leaves the episode and the generator as they
    were (before, a seeded reset re-seeded first and only then refused the record), and an
    episode on a passed record says so in every agent's info."""
    import rllm_envs

    env = rllm_envs.make_parallel("rllm/SolverJudge-v1")
    _, infos = env.reset(seed=3)
    assert not any(info["custom_task"] for info in infos.values())
    task, agents = env.task, list(env.agents)
    state = env.np_random.bit_generator.state
    with pytest.raises(Exception, match="task"):
        env.reset(seed=99, options={"task": "not a record"})
    assert env.task is task and env.agents == agents
    assert env.np_random.bit_generator.state == state
    record = {k: task[k] for k in ("problem", "answer")}
    _, infos = env.reset(options={"task": record})
    assert all(info["custom_task"] for info in infos.values())
    assert env.task["id"].startswith("custom-")


@pytest.mark.parametrize("entry", ALL_ENTRIES, ids=ALL_IDS)
def test_every_unknown_reset_option_is_refused_and_changes_nothing(entry):
    """Issue #31 (T1): only names close to a known option were refused; ``{"zzz": 1}``
    started a drawn episode as if nothing had been asked. Every unknown name is refused now,
    as the single-agent envs do, before the generator or the episode changes."""
    import rllm_envs

    env = rllm_envs.make_parallel(entry.id)
    env.reset(seed=3)
    task, agents = env.task, list(env.agents)
    state = env.np_random.bit_generator.state
    for options in ({"zzz": 1}, {"index": 0, "difficulty": 2}, {"seed": 1}):
        with pytest.raises(InvalidEnvConfig, match="Unknown reset option"):
            env.reset(seed=99, options=options)
        assert env.task is task and env.agents == agents
        assert env.np_random.bit_generator.state == state
    env.close()
