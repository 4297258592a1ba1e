"""verifiers 0.4 adapter: verifiers' own loader finds our taskset, env and harness by taskset id,
the taskset yields every id's tasks with the family agent's prompt (multi-agent ids: the first
seat's, with every seat named for the env's roles), and the eval config runs locally.
(Rollouts against a real vLLM server: test_verifiers_eval.py.)"""

from __future__ import annotations

import importlib.metadata

import pytest

pytest.importorskip("verifiers.v1", reason='needs `pip install "rllm-envs[verifiers]"`')

import verifiers.v1 as vf  # noqa: E402
from verifiers.v1.utils.loaders import (  # noqa: E402
    default_harness_id,
    environment_class,
    harness_class,
    resolve_env_config,
    taskset_class,
)

import rllm_adapters.verifiers as adapter  # noqa: E402
import rllm_envs  # noqa: E402
from rllm_adapters.error import AdapterConfigError
from rllm_agents.agent import make_agent  # noqa: E402

TASKSET = adapter.TASKSET_ID
SINGLE_AGENT_IDS = list(rllm_envs.list_envs())
#: Multi-agent ids with one model seat (the registry row scripts the others).
ONE_SEAT_IDS = [
    i for i in rllm_envs.list_multiagent_envs() if len(rllm_envs.env_entry(i).opponents) == 1
]
#: Multi-agent ids whose every seat is the model's (verifiers' multi-agent path).
JOINT_IDS = [i for i in rllm_envs.list_multiagent_envs() if not rllm_envs.env_entry(i).opponents]


def _env(env_id, **taskset):
    config = resolve_env_config({"taskset": {"id": TASKSET, "env_id": env_id, **taskset}})
    return vf.load_environment(config)


def test_verifiers_own_loader_resolves_our_plugin():
    assert taskset_class(TASKSET) is adapter.RllmTaskset
    assert environment_class(TASKSET) is adapter.RllmEnv
    assert default_harness_id(TASKSET) == TASKSET
    assert harness_class(TASKSET) is adapter.RllmChatHarness
    env = _env("rllm/Math-v1")
    assert isinstance(env, adapter.RllmEnv)
    assert isinstance(env.config, adapter.RllmEnvConfig)
    # The seat runs locally: no remote sandbox, no tunnel, nothing on the network.
    assert env.config.agent.runtime.type == "subprocess"
    assert not adapter.RllmChatHarness.EXECUTES_CODE


@pytest.mark.parametrize("env_id", SINGLE_AGENT_IDS + ONE_SEAT_IDS)
def test_the_taskset_yields_every_ids_tasks_with_the_agents_prompt(env_id):
    try:
        env = _env(env_id, num_tasks=2, start=3, seed=7)
        tasks = list(env.taskset)
    except rllm_envs.DependencyNotInstalled as e:
        pytest.skip(str(e))
    assert len(tasks) == 2
    for k, task in enumerate(tasks):
        data = task.data
        assert isinstance(task, adapter.RllmTask)
        assert (data.env_id, data.seed) == (env_id, 7 + k)
        local = adapter._new_env(env_id, {})
        obs, info = local.reset(seed=data.seed, options={"index": data.task_index})
        local.close()
        expected = make_agent(env_id).reset(obs, info)
        assert [(m.role, m.content) for m in data.prompt] == [
            ("user" if m["role"] == "tool" else m["role"], m["content"]) for m in expected
        ]
        assert data.id == str(info["task_id"])
        assert data.max_turns == int(local.unwrapped.max_turns)


def test_verifiers_views_select_tasks():
    env = _env("rllm/FrozenLake-v1", num_tasks=10)
    picked = list(env.taskset.shuffle(seed=1).take(3))
    assert len(picked) == 3 and len({t.data.task_index for t in picked}) == 3


@pytest.mark.parametrize("env_id", JOINT_IDS)
def test_a_multi_agent_ids_tasks_name_every_seat_and_each_seat_role_is_a_verifiers_role(env_id):
    env = _env(env_id, num_tasks=2, start=1, seed=5)
    tasks = list(env.taskset)
    local = rllm_envs.make_parallel(env_id)
    for k, task in enumerate(tasks):
        data = task.data
        observations, infos = local.reset(seed=5 + k, options={"index": data.task_index})
        assert data.seats == list(local.possible_agents) and len(data.seats) > 1
        first = next(a for a in local.agents if infos[a]["acting"])
        expected = make_agent(env_id).reset(observations[first], infos[first])
        assert [(m.role, m.content) for m in data.prompt] == [
            (m["role"], m["content"]) for m in expected
        ]
        # Every seat's role is an agent of the env verifiers loaded (--env.<role>.*), local.
        for seat in data.seats:
            role = getattr(env.config, infos[seat]["role"])
            assert isinstance(role, vf.AgentConfig) and role.runtime.type == "subprocess"
    local.close()
    assert JOINT_IDS == ["rllm/SolverJudge-v1", "rllm/Debate-v1"]


def test_roles_are_configured_per_role_through_verifiers_config():
    config = resolve_env_config(
        {
            "taskset": {"id": TASKSET, "env_id": "rllm/SolverJudge-v1"},
            "judge": {"max_turns": 1},
        }
    )
    assert isinstance(config, adapter.RllmEnvConfig)
    assert config.judge.max_turns == 1 and config.solver.max_turns is None


def test_bad_configs_are_refused_with_the_reason():
    with pytest.raises(AdapterConfigError, match="num_tasks"):
        list(_env("rllm/Math-v1", num_tasks=0).taskset)
    with pytest.raises(rllm_envs.UnknownEnvironment):
        list(_env("rllm/Maths-v0").taskset)


def test_eval_config_names_our_taskset_and_a_local_endpoint():
    config = adapter.eval_config(
        "rllm/Math-v1", model="m", base_url="http://127.0.0.1:1/v1", num_tasks=3, num_rollouts=2
    )
    assert config.env.taskset.id == TASKSET and config.env.taskset.num_tasks == 3
    assert config.num_rollouts == 2 and config.push is False and config.rich is None
    assert config.client.base_url == "http://127.0.0.1:1/v1"
    assert isinstance(config.env, adapter.RllmEnvConfig)


def test_an_old_verifiers_is_refused_with_the_fix(monkeypatch):
    real = importlib.metadata.version
    monkeypatch.setattr(
        importlib.metadata, "version", lambda name: "0.3.1" if name == "verifiers" else real(name)
    )
    with pytest.raises(rllm_envs.DependencyNotInstalled, match=r"verifiers >= 0.4.*0\.3\.1"):
        adapter._require_v1()
