from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs
from rllm_envs.error import DependencyNotInstalled, require


def test_every_row_is_registered_under_the_namespace():
    for entry in rllm_envs.ENVS:
        assert entry.id.startswith("rllm/") and entry.id in gym.registry
        assert gym.registry[entry.id].entry_point == entry.entry_point
        assert entry.description and "\n" not in entry.description
    assert set(rllm_envs.list_envs()) == {e.id for e in rllm_envs.ENVS}


def test_unknown_id_suggests_the_closest():
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean `rllm/FrozenLake-v0`"):
        rllm_envs.make("rllm/FrozenLak-v0")
    with pytest.raises(gym.error.NameNotFound):  # our error is also Gymnasium's
        rllm_envs.make("rllm/Nope-v0")


def test_unknown_kwarg_suggests_the_closest():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Did you mean `difficulty`"):
        rllm_envs.make("rllm/FrozenLake-v0", dificulty=2)


def test_make_and_make_vec_pass_kwargs():
    env = rllm_envs.make("rllm/FrozenLake-v0", map_name="4x4")
    assert env.reset(seed=0)[1]["map"][0] == "SFFF"
    venv = rllm_envs.make_vec("rllm/FrozenLake-v0", num_envs=2, vectorization_mode="async")
    try:
        obs, _ = venv.reset(seed=0)
        assert all("FrozenLake" in o for o in obs)
    finally:
        venv.close()


def test_import_is_light():
    import subprocess
    import sys

    heavy = "{'torch', 'transformers', 'vllm', 'ray', 'datasets'}"
    code = f"import sys, rllm_envs; print(sorted({heavy} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_require_names_the_extra():
    with pytest.raises(DependencyNotInstalled, match=r'pip install "rllm-envs\[search\]"'):
        require("surely_not_a_module_xyz", "search")
    assert require("json", "none").dumps([1]) == "[1]"


def test_rows_carry_identity_and_lookups_find_every_id():
    for row in (*rllm_envs.ENVS, *rllm_envs.MULTIAGENT_ENVS):
        assert rllm_envs.env_entry(row.id) is row
        assert row.family and ":" in row.spec
    assert rllm_envs.env_entry("rllm_envs:rllm/Math-v0").family == "Math"
    assert rllm_envs.env_entry("rllm/TicTacToe-v0").opponents == {"player_1": "heuristic"}
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean `rllm/Debate-v0`"):
        rllm_envs.env_entry("rllm/Debat-v0")
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Cannot import"):
        rllm_envs.resolve("rllm_agents.agent:Nope")
