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
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean `rllm/FrozenLake-v1`"):
        rllm_envs.make("rllm/FrozenLak-v0")
    with pytest.raises(gym.error.NameNotFound):  # our error is also Gymnasium's
        rllm_envs.make("rllm/Nope-v0")


def test_unknown_kwarg_suggests_the_closest():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Did you mean `difficulty`"):
        rllm_envs.make("rllm/FrozenLake-v1", dificulty=2)


def test_make_and_make_vec_pass_kwargs():
    env = rllm_envs.make("rllm/FrozenLake-v1", map_name="4x4")
    assert env.reset(seed=0)[1]["map"][0] == "SFFF"
    venv = rllm_envs.make_vec("rllm/FrozenLake-v1", num_envs=2, vectorization_mode="async")
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
    assert rllm_envs.env_entry("rllm_envs:rllm/Math-v1").family == "Math"
    assert rllm_envs.env_entry("rllm/TicTacToe-v0").opponents == {"player_1": "heuristic"}
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean `rllm/Debate-v1`"):
        rllm_envs.env_entry("rllm/Debat-v0")
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Cannot import"):
        rllm_envs.resolve("rllm_agents.agent:Nope")


def test_an_old_version_makes_the_current_one_and_says_what_changed():
    import warnings

    from rllm_envs import VersionMovedWarning, current_id, env_entry, list_envs

    moved = {old: row for row in rllm_envs.ENVS for old in row.previous}
    assert moved, "some env changed behaviour since v0"
    for old, row in moved.items():
        assert old not in list_envs()  # the table lists current versions only
        with pytest.warns(VersionMovedWarning, match=row.id):
            assert current_id(old) == row.id
        with pytest.warns(VersionMovedWarning), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Gymnasium's own "out of date" note
            env = gym.make(old)
        assert type(env.unwrapped).__name__ == rllm_envs.resolve(row.entry_point).__name__
        env.close()
        with pytest.warns(VersionMovedWarning):
            assert env_entry(old) is row
    with warnings.catch_warnings():
        warnings.simplefilter("error", VersionMovedWarning)
        for row in rllm_envs.ENVS:
            assert current_id(row.id) == row.id


def test_an_old_multiagent_version_makes_the_current_one():
    rows = [row for row in rllm_envs.MULTIAGENT_ENVS if row.previous]
    assert rows
    for row in rows:
        for old in row.previous:
            with pytest.warns(rllm_envs.VersionMovedWarning):
                env = rllm_envs.make_parallel(old)
            assert type(env).__name__ == rllm_envs.resolve(row.entry_point).__name__
            env.close()


@pytest.mark.parametrize("env_id", ["rllm/Countdown-v1", "rllm/Math-v1", "rllm/FrozenLake-v1"])
@pytest.mark.parametrize("maker", ["rllm_envs.make", "gymnasium.make"])
def test_a_refused_first_reset_leaves_the_env_usable(env_id: str, maker: str) -> None:
    """Issue #31 (F1): Gymnasium's PassiveEnvChecker marked its checked reset done before the
    reset ran, so after a refused first reset every step raised TypeError."""
    import gymnasium

    import rllm_envs
    from rllm_envs.error import InvalidEnvConfig

    env = rllm_envs.make(env_id) if maker == "rllm_envs.make" else gymnasium.make(env_id)
    with pytest.raises(InvalidEnvConfig):
        env.reset(options={"index": -1})
    obs, _ = env.reset(seed=1)
    assert isinstance(obs, str) and obs
    obs, reward, terminated, truncated, info = env.step("an answer")
    assert isinstance(obs, str) and isinstance(info, dict)
    env.close()
