from __future__ import annotations

import copy
import pickle

import numpy as np
from gymnasium.spaces.utils import flatten, flatten_space, unflatten
from gymnasium.vector.utils import (
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)
from hypothesis import given
from hypothesis import strategies as st

from rllm_envs.spaces import UnicodeText, action_space, observation_space


def test_contains_any_unicode_within_length():
    space = UnicodeText(16)
    assert "What is 85 + 63?" in space
    assert "½ 中文 😀 \x00" in space
    assert "" in space
    assert "x" * 17 not in space
    assert b"bytes" not in space and 5 not in space


def test_sample_is_seeded_and_valid():
    a, b = UnicodeText(32, seed=1), UnicodeText(32, seed=1)
    samples = [a.sample() for _ in range(20)]
    assert samples == [b.sample() for _ in range(20)]
    assert all(s in a for s in samples)


def test_equality_pickle_and_defaults():
    assert observation_space() == observation_space()
    assert action_space().max_length > observation_space().max_length
    space = UnicodeText(10)
    assert pickle.loads(pickle.dumps(space)) == space
    assert UnicodeText(10) != UnicodeText(11)


@given(st.text(max_size=64))
def test_flatten_round_trip(text):
    space = UnicodeText(64)
    flat = flatten(space, text)
    assert flat.shape == flatten_space(space).shape
    assert unflatten(space, flat) == text


def test_shared_memory_is_a_live_view_of_real_text():
    space = UnicodeText(32)
    shm = create_shared_memory(space, n=2)
    view = read_from_shared_memory(space, shm, n=2)
    write_to_shared_memory(space, 0, "héllo 😀", shm)
    write_to_shared_memory(space, 1, "\ud800 surrogate", shm)
    assert tuple(view) == ("héllo 😀", "\ud800 surrogate")
    snapshot = copy.deepcopy(view)
    write_to_shared_memory(space, 0, "changed", shm)
    assert snapshot == ("héllo 😀", "\ud800 surrogate") and view[0] == "changed"
    assert isinstance(snapshot, tuple) and view[0:1] == ("changed",)
    assert np.asarray(view._buffer).shape == (2, 32)
