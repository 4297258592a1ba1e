"""The SkyRL-Gym adapter through SkyRL-Gym's own API: its registry, ``skyrl_gym.make``,
``init``/``step`` returning ``BaseTextEnvStepOutput``, metrics and their aggregation."""

from __future__ import annotations

import json

import pytest

skyrl_gym = pytest.importorskip("skyrl_gym", reason='needs `pip install "rllm-envs[skyrl]"`')

from skyrl_gym.envs.base_text_env import BaseTextEnv  # noqa: E402

import rllm_envs  # noqa: E402
from rllm_adapters.error import AdapterConfigError  # noqa: E402
from rllm_adapters.skyrl import (  # noqa: E402
    SETUP_HOOK,
    RllmTextEnv,
    ids_with_one_model_seat,
    ray_runtime_env_hook,
    register_all,
    skyrl_dataset,
)
from rllm_envs.testing import GARBAGE  # noqa: E402

ALL_IDS = ids_with_one_model_seat()
#: Multi-agent ids played from their one model seat against the row's scripted opponents.
GAMES = [i for i in ALL_IDS if i in rllm_envs.list_multiagent_envs()]


def _make_or_skip(env_id, **kwargs):
    try:
        return skyrl_gym.make(env_id, **kwargs)
    except rllm_envs.DependencyNotInstalled as e:
        pytest.skip(str(e))


def _play(env, policy, limit=200):
    chat, _ = env.init([])
    outputs = []
    for _ in range(limit):
        out = env.step(policy(env))
        outputs.append(out)
        if out["done"]:
            return chat, outputs
    raise AssertionError("the episode did not end")


def test_every_id_is_in_skyrls_registry():
    assert set(rllm_envs.list_envs()) <= set(ALL_IDS) and "rllm/TicTacToe-v0" in GAMES
    assert "rllm/Debate-v1" not in ALL_IDS  # every seat is the model's
    assert set(ALL_IDS) <= set(skyrl_gym.registry)
    assert register_all() == ALL_IDS  # idempotent


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_the_oracle_solves_every_id_through_skyrl_gym(env_id):
    for seed in range(2):
        env = _make_or_skip(env_id, env_config={}, extras={"seed": seed})
        assert isinstance(env, BaseTextEnv) and isinstance(env, skyrl_gym.Env)
        assert env.spec.id == env_id
        chat, outputs = _play(env, lambda e: e.env.unwrapped.oracle_action())
        assert chat[-1]["role"] == "user" and chat[-1]["content"]
        assert set(outputs[-1]) >= {"observations", "reward", "done", "metadata"}
        json.dumps(outputs[-1]["metadata"])  # plain data, ready for SkyRL's logs
        if env_id in GAMES:  # against a heuristic opponent the oracle wins or draws
            assert sum(o["reward"] for o in outputs) >= 0.0 and outputs[-1]["done"]
            env.close()
            continue
        assert sum(o["reward"] for o in outputs) == pytest.approx(1.0)
        assert outputs[-1]["observations"] == [] and outputs[-1]["metadata"]["is_correct"]
        for out in outputs[:-1]:
            assert out["done"] is False and out["observations"]
            assert all(m["role"] in ("user", "assistant", "system") for m in out["observations"])
        metrics = env.get_metrics()
        assert metrics["is_correct"] == 1.0 and metrics["turns"] == len(outputs)
        env.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_garbage_earns_at_most_zero(env_id):
    env = _make_or_skip(env_id, env_config={}, extras={"seed": 0})
    _, outputs = _play(env, lambda e: GARBAGE)
    assert sum(o["reward"] for o in outputs) <= 0.0
    assert env.get_metrics()["is_correct"] == 0.0
    env.close()


def test_rewards_equal_the_gymnasium_envs_and_extras_pick_the_task():
    env_id = "rllm/FrozenLake-v1"
    extras = {"seed": 4, "task_index": 17, "env_kwargs": json.dumps({"difficulty": 2})}
    env = skyrl_gym.make(env_id, env_config={}, extras=extras)
    local = rllm_envs.make(env_id, difficulty=2)
    obs, info = local.reset(seed=4, options={"index": 17})
    chat, meta = env.init([])
    assert obs in chat[-1]["content"] and meta["task_index"] == 17
    for move in ["Down", "Right", "nonsense", "Down", "Right", "Right", "Down"]:
        out = env.step(move)
        _, reward, terminated, truncated, step_info = local.step(move)
        assert out["reward"] == reward and out["done"] == (terminated or truncated)
        assert out["metadata"]["invalid_action"] == step_info["invalid_action"]
        if out["done"]:
            break
    env.close()


def test_env_config_kwargs_apply_and_row_extras_override_them():
    from omegaconf import OmegaConf

    config = OmegaConf.create({"env_kwargs": {"difficulty": 3}})
    env = skyrl_gym.make("rllm/Math-v1", env_config=config, extras={"seed": 0})
    assert env.env_kwargs == {"difficulty": 3}
    env = skyrl_gym.make(
        "rllm/Math-v1", env_config=config, extras={"env_kwargs": {"difficulty": 5}}
    )
    assert env.env_kwargs == {"difficulty": 5}
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="has no argument"):
        skyrl_gym.make("rllm/Math-v1", env_config={}, extras={"env_kwargs": {"dificulty": 1}})


def test_a_task_record_in_the_extras_is_played():
    local = rllm_envs.make("rllm/Math-v1")
    local.reset(seed=0, options={"index": 3})
    task = local.unwrapped.task
    env = RllmTextEnv("rllm/Math-v1", extras={"task": task})
    chat, meta = env.init([])
    assert meta["task_index"] is None and meta["task_id"].startswith("custom-")
    assert env.step(local.unwrapped.oracle_action())["reward"] == 1.0


def test_dataset_rows_replay_through_skyrl_make_and_metrics_aggregate():
    rows = skyrl_dataset("rllm/Math-v1", num_examples=3, seed=10)
    assert [r["seed"] for r in rows] == [10, 11, 12]
    metrics = []
    for row in rows:
        extras = {k: v for k, v in row.items() if k not in ("prompt", "env_class")}
        env = skyrl_gym.make(row["env_class"], env_config={}, extras=extras)
        chat, _ = env.init(row["prompt"])
        assert chat == row["prompt"]
        env.step(env.env.unwrapped.oracle_action())
        metrics.append(env.get_metrics())
        env.close()
    summary = RllmTextEnv.aggregate_metrics(metrics)
    assert summary["is_correct"] == 1.0 and summary["return"] == 1.0


def test_max_turns_extra_ends_the_episode_after_that_many_replies():
    env = skyrl_gym.make("rllm/FrozenLake-v1", env_config={}, extras={"seed": 0, "max_turns": 2})
    env.init([])
    first = env.step("nonsense")
    assert first["done"] is False and first["observations"]
    second = env.step("nonsense")
    assert second["done"] is True and second["observations"] == []
    assert env.get_metrics()["turns"] == 2
    # Without the extra the env's own limit applies.
    env = skyrl_gym.make("rllm/FrozenLake-v1", env_config={}, extras={"seed": 0})
    env.init([])
    assert env.step("nonsense")["done"] is False and env.step("nonsense")["done"] is False
    with pytest.raises(AdapterConfigError, match="max_turns"):
        skyrl_gym.make("rllm/Math-v1", env_config={}, extras={"max_turns": 0})


def test_the_max_turns_extra_is_the_envs_turn_limit_so_its_last_turn_settles():
    """s37 att37g F3: the extra cut episodes the env did not know would end: FrozenLake kept
    the walk's progress (0.549 a map, never reaching the goal). The env is told."""
    env = skyrl_gym.make(
        "rllm/FrozenLake-v1",
        env_config={},
        extras={
            "seed": 0,
            "max_turns": 3,
            "env_kwargs": {
                "desc": ["SFFF", "FHFH", "FFFH", "HFFG"],
                "reward_weights": {"progress": 1.0},
            },
        },
    )
    env.init([])
    rewards = [env.step(move)["reward"] for move in ("Right", "Right", "Down")]
    assert env.env.unwrapped.max_turns == 3 and sum(rewards) == pytest.approx(0.0)


def test_specs_are_plain_data_for_other_processes():
    spec = skyrl_gym.spec("rllm/Math-v1")
    assert spec.entry_point == "rllm_adapters.skyrl:RllmTextEnv"
    assert spec.kwargs == {"env_id": "rllm/Math-v1"}


def test_the_ray_runtime_env_hook_adds_our_setup_hook_and_keeps_the_rest():
    skyrl_env = {"env_vars": {"VLLM_USE_V1": "1"}}  # what SkyRL's initialize_ray passes
    assert ray_runtime_env_hook(skyrl_env) == {**skyrl_env, "worker_process_setup_hook": SETUP_HOOK}
    assert skyrl_env == {"env_vars": {"VLLM_USE_V1": "1"}}  # not modified in place
    assert ray_runtime_env_hook(None) == {"worker_process_setup_hook": SETUP_HOOK}
    assert ray_runtime_env_hook({"worker_process_setup_hook": SETUP_HOOK})
    with pytest.raises(AdapterConfigError, match="call rllm_adapters.skyrl.register_all"):
        ray_runtime_env_hook({"worker_process_setup_hook": "mine.setup"})


@pytest.mark.slow
def test_a_ray_task_builds_our_envs_under_skyrls_own_ray_init(monkeypatch):
    """SkyRL's stock entry point calls ``ray.init(runtime_env={"env_vars": ...})`` itself and
    builds envs in its ``skyrl_entrypoint`` Ray task; ``RAY_RUNTIME_ENV_HOOK`` registers our ids
    there with no change to that call. (SkyRL's trainer itself needs GPUs: its ``ray.init`` call
    is reproduced here as its ``initialize_ray`` makes it.)"""
    ray = pytest.importorskip("ray")
    if ray.is_initialized():
        pytest.skip("another test owns the Ray runtime in this process")
    monkeypatch.setenv("RAY_RUNTIME_ENV_HOOK", "rllm_adapters.skyrl.ray_runtime_env_hook")

    # Defined here so Ray ships it by value: the worker never imports this test module (which
    # imports rllm_adapters.skyrl); only Ray's setup hook registers our ids there.
    def play_in_worker(env_id: str, seed: int, max_turns: int | None) -> dict:
        import sys

        import skyrl_gym as worker_gym

        extras = {"seed": seed, "task_index": seed}
        if max_turns is not None:
            extras["max_turns"] = max_turns
        env = worker_gym.make(env_id, env_config={}, extras=extras)
        env.init([])
        total, turns = 0.0, 0
        while True:
            out = env.step(env.env.unwrapped.oracle_action())
            total, turns = total + out["reward"], turns + 1
            if out["done"]:
                break
        env.close()
        return {
            "return": total,
            "turns": turns,
            "test_module_imported": "tests.adapters.test_skyrl" in sys.modules,
        }

    ray.init(
        num_cpus=1,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"VLLM_USE_V1": "1"}},
    )
    try:
        play = ray.remote(num_cpus=1)(play_in_worker)
        lake = ray.get(play.remote("rllm/FrozenLake-v1", 3, None))
        math = ray.get(play.remote("rllm/Math-v1", 1, None))
        capped = ray.get(play.remote("rllm/FrozenLake-v1", 3, 1))
    finally:
        ray.shutdown()
    assert not lake["test_module_imported"]
    assert lake["return"] == 1.0 and lake["turns"] > 1
    assert math == {"return": 1.0, "turns": 1, "test_module_imported": False}
    assert capped["turns"] == 1 and capped["return"] == 0.0
