"""Task records a client passes (``reset(options={"task": record})``) in every env.

A passed record never passes for one of the source's tasks (its id is ``custom-<digest>``, the
client's id kept as ``client_id``, and ``info["custom_task"]`` says so), a reset that fails on
its arguments leaves the previous episode as it was, and a record is size-capped.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

from rllm_envs.core import CUSTOM_ID_PREFIX, MAX_TASK_CHARS, TextEnv
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.frozenlake import FrozenLakeEnv
from tests.envs.conformance import ALL_ENTRIES, make_or_skip

_SINGLE = [pytest.param(e.id, id=e.id) for e in ALL_ENTRIES]


@pytest.mark.parametrize("env_id", _SINGLE)
def test_a_passed_record_never_carries_a_source_task_id(env_id):
    with make_or_skip(env_id) as env:
        _, source_info = env.reset(seed=0, options={"index": 0})
        source_id = source_info["task_id"]
        assert source_info["custom_task"] is False
        record = dict(env.unwrapped.task)  # the source's own task, with its id
        assert record["id"] == source_id
        obs, info = env.reset(seed=0, options={"task": record})
        assert info["task_id"] != source_id
        assert info["task_id"].startswith(CUSTOM_ID_PREFIX)
        assert info["custom_task"] is True and info["task_index"] is None
        assert env.unwrapped.task["client_id"] == source_id
        # Replaying the played record is the same custom task (same id, same text).
        replay_obs, replay = env.reset(seed=0, options={"task": env.unwrapped.task})
        assert replay["task_id"] == info["task_id"] and replay_obs == obs
        # The same content under another client id is the same custom task.
        _, other = env.reset(seed=0, options={"task": {**record, "id": "mine-7"}})
        assert other["task_id"] == info["task_id"]
        assert env.unwrapped.task["client_id"] == "mine-7"


def test_a_custom_math_task_with_a_real_id_pays_under_its_own_id():
    with gym.make("rllm/Math-v1") as env:
        _, real = env.reset(seed=0, options={"index": 0})
        record = {"id": real["task_id"], "problem": "What is 1+1?", "answer": "2"}
        _, info = env.reset(options={"task": record})
        assert info["task_id"].startswith("custom-") and info["task_id"] != real["task_id"]
        _, reward, _, _, step = env.step("\\boxed{2}")
        assert reward == 1.0  # custom tasks are a feature: they are graded...
        assert step["task_id"] == info["task_id"] and step["custom_task"] is True  # ...as such


def test_a_custom_frozenlake_map_with_a_real_id_pays_under_its_own_id():
    with gym.make("rllm/FrozenLake-v1") as env:
        _, real = env.reset(seed=0)
        _, info = env.reset(options={"task": {"id": real["task_id"], "map": ["SG"]}})
        assert info["task_id"].startswith("custom-") and info["task_id"] != real["task_id"]
        _, reward, terminated, _, step = env.step("Right")
        assert reward == 1.0 and terminated
        assert step["task_id"] == info["task_id"] and step["custom_task"] is True


_BAD_RESETS = [
    pytest.param({"options": {"task": {"problem": "What is 1+1?"}}}, id="unusable-record"),
    pytest.param({"options": {"task": "not a record"}}, id="record-not-a-dict"),
    pytest.param({"options": {"index": 10**12}}, id="index-out-of-range"),
    pytest.param({"options": {"index": 0, "task": {}}}, id="index-and-task"),
    pytest.param({"options": {"indx": 0}}, id="unknown-option"),
    pytest.param({"seed": 5, "options": {"task": {"problem": "1+1?"}}}, id="seed-and-bad-record"),
    pytest.param({"seed": -1, "options": {"task": {"problem": "1+1?", "answer": "2"}}}, id="seed"),
    pytest.param(
        {"options": {"task": {"problem": "x" * (MAX_TASK_CHARS + 1), "answer": "2"}}},
        id="oversized-record",
    ),
]


def _snapshot(env: TextEnv) -> tuple:
    return dict(env.task or {}), env.task_index, env.turn, env.np_random.bit_generator.state


@pytest.mark.parametrize("reset", _BAD_RESETS)
def test_a_failed_reset_leaves_the_previous_episode_as_it_was(reset):
    with gym.make("rllm/Math-v1") as env:
        _, info = env.reset(seed=3)
        unwrapped = env.unwrapped
        assert isinstance(unwrapped, TextEnv)
        before = _snapshot(unwrapped)
        with pytest.raises((InvalidEnvConfig, ValueError, IndexError, gym.error.Error)):
            env.reset(**reset)
        after = _snapshot(unwrapped)
        assert after == before
        _, reward, _, _, step = env.step(unwrapped.oracle_action())
        assert reward == 1.0 and step["task_id"] == info["task_id"]


def test_a_family_start_that_fails_ends_the_episode():
    class Broken(FrozenLakeEnv):
        fail = False

        def _start(self, task):
            if self.fail:
                raise RuntimeError("the family could not start")
            return super()._start(task)

    env = Broken()
    env.reset(seed=0)
    env.fail = True
    with pytest.raises(RuntimeError):
        env.reset(seed=1)
    with pytest.raises(gym.error.ResetNeeded):
        env.step("Right")


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param(["S" + "F" * 31 + "G"], id="33-columns"),
        pytest.param(["SG"] + ["FF"] * 32, id="33-rows"),
        pytest.param(["S" + "F" * 999] + ["F" * 1000] * 998 + ["F" * 999 + "G"], id="1000x1000"),
        pytest.param("SG", id="a-string"),
        pytest.param([["S", "G"]], id="rows-not-strings"),
    ],
)
def test_frozenlake_refuses_maps_larger_than_its_generator_makes(rows):
    with gym.make("rllm/FrozenLake-v1") as env:
        with pytest.raises(InvalidEnvConfig, match="map"):
            env.reset(options={"task": {"map": rows}})


def test_frozenlake_plays_the_largest_map_its_generator_makes():
    rows = ["S" + "F" * 31] + ["F" * 32] * 30 + ["F" * 31 + "G"]
    with gym.make("rllm/FrozenLake-v1") as env:
        _, info = env.reset(options={"task": {"map": rows}})
        assert info["map"] == rows and info["custom_task"] is True


def test_a_custom_task_id_does_not_depend_on_what_the_policy_never_sees():
    # info is shown to agents: an id that hashed the answer could be tested against guesses.
    with gym.make("rllm/Math-v1") as env:
        ids = set()
        for answer in ("41", "42"):
            _, info = env.reset(options={"task": {"problem": "What is 6 x 7?", "answer": answer}})
            ids.add(info["task_id"])
        assert len(ids) == 1
        _, other = env.reset(options={"task": {"problem": "What is 6 x 8?", "answer": "48"}})
        assert other["task_id"] not in ids
