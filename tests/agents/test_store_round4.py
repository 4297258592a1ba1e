"""Episode store, blind-attack round 4 (issue #31, session 24): values a writer can store that a
reader could not read back, or that would read as something else.

Each test fails on the store before these fixes.
"""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from rllm_agents.error import AgentConfigError
from rllm_agents.store import DamagedEpisode, EpisodeStore
from rllm_agents.store import episode_store as episode_store_module
from tests.agents.test_store import make_trajectory

LONG = 7**6000  # 5,071 digits: past Python's default int-to-string limit (4,300)


def _with_info(i: int, **info):
    trajectory = make_trajectory(i)
    last = dataclasses.replace(trajectory.steps[-1], info={**trajectory.steps[-1].info, **info})
    return dataclasses.replace(trajectory, steps=[*trajectory.steps[:-1], last])


@pytest.fixture
def raised_digit_limit():
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)  # as some numeric libraries and apps do, process-wide
    yield
    sys.set_int_max_str_digits(old)


def test_an_integer_no_default_reader_parses_is_refused_at_put(tmp_path, raised_digit_limit):
    """att31s24 F2: a writer that raised the limit stored such an integer and was told it was
    stored; every default reader then failed on get, trajectories and verify (a bare
    ValueError), and lost the good episodes beside it."""
    with EpisodeStore(tmp_path / "ep.db") as store:
        store.put(make_trajectory(0), run="run")
        with pytest.raises(AgentConfigError, match="integer too long to store.*Nothing was"):
            store.put(_with_info(1, x=LONG), run="run")
        with pytest.raises(AgentConfigError, match="integer too long"):
            store.put(make_trajectory(2), run="run", env_kwargs={"seed": LONG})
        assert store.count(run="run") == 1


def test_at_the_default_limit_the_refusal_is_the_stores_own(tmp_path):
    with EpisodeStore(tmp_path / "ep.db") as store:
        with pytest.raises(AgentConfigError, match="integer too long"):
            store.put(_with_info(1, x=LONG), run="run")  # was json's bare ValueError
        assert store.count() == 0


def test_an_unreadable_stored_record_is_reported_with_its_id(tmp_path, monkeypatch):
    """A record such an integer made before the check (or by another tool) is a damaged episode
    with its id to every reader, never an exception that hides the rest of the run."""
    db = tmp_path / "ep.db"
    monkeypatch.setattr(episode_store_module, "_check_readable", lambda values: None)
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with EpisodeStore(db) as store:
            for i in range(3):
                store.put(make_trajectory(i), run="run")
            bad = store.put(_with_info(3, x=LONG), run="run")
    finally:
        sys.set_int_max_str_digits(old)
    with EpisodeStore(db) as store:
        damaged = store.verify()
        assert [e.id for e in damaged] == [bad.id]
        assert "cannot be read here" in damaged[0].reason
        with pytest.raises(DamagedEpisode) as raised:
            store.get(bad.id)
        assert raised.value.id == bad.id
        with pytest.raises(DamagedEpisode):
            store.trajectories(run="run")
        assert store.count(run="run") == 4


@pytest.mark.parametrize("key", [1, (1, 2), None])
def test_metadata_keys_that_are_not_strings_are_stored_as_strings(tmp_path, key):
    """att31s24 F4a: a non-string metadata key raised a bare AttributeError in put."""
    trajectory = dataclasses.replace(make_trajectory(0), metadata={key: "value"})
    with EpisodeStore(tmp_path / "ep.db") as store:
        put = store.put(trajectory, run="run")
        assert store.get(put.id).trajectory.metadata == {str(key): "value"}


@pytest.mark.parametrize("verdict", ["false", "True", 0.5, 2, [True], {"ok": True}])
def test_a_verdict_that_is_not_a_bool_is_refused(tmp_path, verdict):
    """att31s24 F4b: info["is_correct"] = "false" was stored as correct (pass@1 1.0)."""
    with EpisodeStore(tmp_path / "ep.db") as store:
        with pytest.raises(AgentConfigError, match=r"is_correct'\] to be a bool"):
            store.put(_with_info(0, is_correct=verdict), run="run")
        assert store.count() == 0


@pytest.mark.parametrize(
    ("verdict", "correct"), [(True, True), (np.bool_(False), False), (1, True), (None, False)]
)
def test_bools_of_every_kind_are_stored_as_they_read(tmp_path, verdict, correct):
    with EpisodeStore(tmp_path / "ep.db") as store:
        put = store.put(_with_info(0, is_correct=verdict), run="run")
        assert store.get(put.id).is_correct is correct


def _nested(depth: int) -> object:
    value: object = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def test_nesting_no_default_reader_parses_is_refused_at_put(tmp_path):
    """att31t F4: a writer that raised its recursion limit stored info nested 3,000 deep; every
    reader with the default limit then failed on it (and on the whole run's trajectories)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(100_000)
    try:
        with EpisodeStore(tmp_path / "ep.db") as store:
            with pytest.raises(AgentConfigError, match="nested too deeply.*Nothing was"):
                store.put(_with_info(0, deep=_nested(3_000)), run="run")
            assert store.count() == 0
    finally:
        sys.setrecursionlimit(old)


@pytest.mark.parametrize(
    "info",
    [{"deep": _nested(900)}, {"text": "a\udc00b"}, {"\ud800": 1}],
    ids=["nested-900", "surrogate-value", "surrogate-key"],
)
def test_values_a_store_cannot_keep_get_its_own_error(tmp_path, info):
    """att31t F5: nesting past the default limit raised a bare RecursionError, a lone surrogate
    a bare UnicodeEncodeError."""
    with EpisodeStore(tmp_path / "ep.db") as store:
        with pytest.raises(AgentConfigError, match="Nothing was written"):
            store.put(_with_info(0, **info), run="run")
        assert store.count() == 0
        store.put(_with_info(1, deep=_nested(50)), run="run")  # ordinary nesting is kept
        assert store.count() == 1


@pytest.mark.parametrize("reward", [10**400, -(10**309), 2**1024])
def test_a_reward_past_floats_range_gets_the_stores_own_error(tmp_path, reward):
    """att31u (low): an int step reward outside float's range raised a bare OverflowError."""
    trajectory = make_trajectory(0)
    last = dataclasses.replace(trajectory.steps[-1], reward=reward)
    trajectory = dataclasses.replace(trajectory, steps=[*trajectory.steps[:-1], last])
    with EpisodeStore(tmp_path / "ep.db") as store:
        with pytest.raises(AgentConfigError, match="sum to a float.*Nothing was written"):
            store.put(trajectory, run="run")
        assert store.count() == 0


@pytest.mark.parametrize(
    "info", [{1: "int", "1": "str"}, {"x": [{True: 1, "True": 2}]}], ids=["top", "nested"]
)
def test_keys_that_are_one_as_strings_are_refused(tmp_path, info):
    """att31t F6 (borderline): {1: "int-key", "1": "str-key"} was stored as {"1": "str-key"}
    without a word."""
    with EpisodeStore(tmp_path / "ep.db") as store:
        with pytest.raises(AgentConfigError, match="distinct as strings.*Nothing was written"):
            store.put(_with_info(0, data=info), run="run")
        assert store.count() == 0
