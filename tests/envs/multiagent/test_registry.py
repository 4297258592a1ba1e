from __future__ import annotations

import doctest
import subprocess
import sys

import pettingzoo
import pytest

import rllm_envs
import rllm_envs.multiagent.base
from rllm_envs.multiagent import ScriptedPolicy


def test_every_row_is_listed_and_registered_with_pettingzoo():
    ids = {e.id for e in rllm_envs.MULTIAGENT_ENVS}
    assert set(rllm_envs.list_multiagent_envs()) == ids
    for entry in rllm_envs.MULTIAGENT_ENVS:
        assert entry.id.startswith("rllm/") and entry.description and "\n" not in entry.description
        assert entry.id in pettingzoo.parallel_registry and entry.id in pettingzoo.aec_registry
    assert not ids & set(rllm_envs.list_envs()), "an id is both single- and multi-agent"


def test_unknown_id_suggests_the_closest():
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean `rllm/TicTacToe-v0`"):
        rllm_envs.make_parallel("rllm/TicTacTo-v0")
    with pytest.raises(rllm_envs.UnknownEnvironment, match="Did you mean `rllm/TicTacToe-v0`"):
        rllm_envs.make_aec("rllm/TicTacToe-v1")
    with pytest.raises(rllm_envs.UnknownEnvironment, match="single-agent"):
        rllm_envs.make_parallel("rllm/FrozenLake-v1")


def test_unknown_kwarg_suggests_the_closest():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Did you mean `opening_plies`"):
        rllm_envs.make_parallel("rllm/TicTacToe-v0", opening_plys=1)


def test_kwargs_reach_the_env_in_both_forms():
    env = rllm_envs.make_parallel("rllm/TicTacToe-v0", opening_plies=0)
    assert env.opening_plies == 0
    aec = rllm_envs.make_aec("rllm/TicTacToe-v0", opening_plies=3)
    assert aec.unwrapped.opening_plies == 3
    assert pettingzoo.make("parallel", "rllm/TicTacToe-v0", opening_plies=1).opening_plies == 1


def test_import_does_not_load_env_modules():
    code = (
        "import sys, rllm_envs; "
        "print(sorted(m for m in sys.modules if m.startswith('rllm_envs.multiagent')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_scripted_policy_validates_its_kind_and_env():
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="Did you mean `oracle`"):
        ScriptedPolicy("oracel")
    env = rllm_envs.make_parallel("rllm/TicTacToe-v0")
    obs, infos = env.reset(seed=0)
    waiting = next(a for a in env.agents if not infos[a]["acting"])
    assert ScriptedPolicy("oracle")(env, waiting) == ""
    with pytest.raises(rllm_envs.InvalidEnvConfig):
        ScriptedPolicy("oracle")(object(), "player_0")


def test_base_module_doctests():
    result = doctest.testmod(rllm_envs.multiagent.base, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
