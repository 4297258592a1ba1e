"""The verifiers adapter: every id as a ``vf.Environment``, scored through verifiers' own
rollout loop and rubric.

Here the model is an oracle (or a garbage writer) plugged in at ``get_model_response``, the one
place a verifiers env asks a model; everything else (``init_state``, ``setup_state``,
``env_response``, stop conditions, cleanup, ``Rubric.score_rollout``, ``evaluate``) is
verifiers' code. ``test_verifiers_eval.py`` runs ``vf-eval`` against a real vLLM server.
"""

from __future__ import annotations

import json
import time

import pytest

vf = pytest.importorskip("verifiers", reason='needs `pip install "rllm-envs[verifiers]"`')

import rllm_envs  # noqa: E402
from adapters.verifiers import RllmMultiTurnEnv, completion_text, load_environment  # noqa: E402
from rllm_agents.agent import make_agent  # noqa: E402
from rllm_envs.testing import GARBAGE  # noqa: E402

ALL_IDS = list(rllm_envs.list_envs())


def _response(text: str):
    from verifiers.types import Response, ResponseMessage

    message = ResponseMessage(content=text, finish_reason="stop", is_truncated=False)
    return Response(id="scripted", created=int(time.time()), model="scripted", message=message)


def _scripted(env, policy: str):
    """Give ``env`` a scripted model: the env's oracle, or the conformance kit's garbage."""

    async def get_model_response(state, prompt, *args, **kwargs):
        if policy == "garbage":
            return _response(GARBAGE)
        live = state.get("rllm_env")  # multi-turn: the episode's own env knows the next move
        text = live.unwrapped.oracle_action() if live is not None else state["answer"]
        return _response(text)

    env.get_model_response = get_model_response
    return env


def _load_or_skip(env_id, **kwargs):
    try:
        return load_environment(env_id, **kwargs)
    except rllm_envs.DependencyNotInstalled as e:
        pytest.skip(str(e))


def _evaluate(env, n):
    client = vf.ClientConfig(api_base_url="http://127.0.0.1:9/v1", api_key_var="NO_KEY")
    return env.evaluate_sync(client, model="scripted", num_examples=n, max_concurrent=2)


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_every_id_is_a_verifiers_environment_of_the_right_kind(env_id):
    env = _load_or_skip(env_id, num_examples=2)
    assert isinstance(env, vf.Environment)
    probe = rllm_envs.make(env_id)
    multi = probe.unwrapped.max_turns > 1
    probe.close()
    assert isinstance(env, RllmMultiTurnEnv) == multi
    assert isinstance(env, vf.SingleTurnEnv) == (not multi)
    row = env.dataset[0]
    info = row["info"]
    assert info["env_id"] == env_id
    local = rllm_envs.make(env_id)
    obs, local_info = local.reset(seed=info["seed"], options={"index": info["task_index"]})
    assert row["prompt"][-1]["content"] == make_agent(env_id).reset(obs, local_info)[-1]["content"]
    if local_info.get("tools"):
        assert json.loads(info["tools"]) == local_info["tools"]
    local.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_the_oracle_scores_one_through_the_rubric(env_id):
    env = _scripted(_load_or_skip(env_id, num_examples=3), "oracle")
    results = _evaluate(env, 3)
    rewards = [o["reward"] for o in results["outputs"]]
    assert rewards == [pytest.approx(1.0)] * 3, results["outputs"][0].get("error")
    assert all(o["metrics"]["is_correct"] == 1.0 for o in results["outputs"])


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_garbage_scores_at_most_zero_and_is_flagged(env_id):
    env = _scripted(_load_or_skip(env_id, num_examples=2), "garbage")
    outputs = _evaluate(env, 2)["outputs"]
    assert all(o["reward"] <= 0.0 for o in outputs)
    assert all(o["metrics"]["is_correct"] == 0.0 for o in outputs)
    assert all(o["metrics"]["invalid_action"] == 1.0 for o in outputs)


@pytest.mark.parametrize("env_id", ["rllm/Math-v0", "rllm/FrozenLake-v0", "rllm/ToolUse-v0"])
def test_rubric_rewards_equal_the_envs_for_the_same_completions(env_id):
    env = _scripted(_load_or_skip(env_id, num_examples=3), "oracle")
    outputs = _evaluate(env, 3)["outputs"]
    for output in outputs:
        info = output["info"]
        local = rllm_envs.make(env_id)
        agent = make_agent(env_id)
        obs, local_info = local.reset(seed=info["seed"], options={"index": info["task_index"]})
        agent.reset(obs, local_info)
        total = 0.0
        replies = [m for m in output["completion"] if m["role"] == "assistant"]
        for message in replies:
            _, reward, terminated, truncated, _ = local.step(agent.act(completion_text([message])))
            total += reward
            if terminated or truncated:
                break
        local.close()
        assert output["reward"] == pytest.approx(total)


def test_env_kwargs_reach_the_env_and_bad_ones_fail_early():
    env = load_environment("rllm/Math-v0", num_examples=2, difficulty=4)
    assert json.loads(env.dataset[0]["info"]["env_kwargs"]) == {"difficulty": 4}
    assert env.env_id == "adapters.verifiers"  # the module verifiers' workers reload it from
    assert env.env_args == {"env": "rllm/Math-v0", "num_examples": 2, "seed": 0, "difficulty": 4}
    with pytest.raises(rllm_envs.InvalidEnvConfig, match="has no argument"):
        load_environment("rllm/Math-v0", dificulty=4)
    with pytest.raises(rllm_envs.UnknownEnvironment):
        load_environment("rllm/Maths-v0")


def test_verifiers_own_loader_finds_this_module():
    from verifiers.utils.env_utils import load_environment as vf_load

    env = vf_load("adapters.verifiers", env="rllm/FrozenLake-v0", num_examples=2)
    assert isinstance(env, RllmMultiTurnEnv) and env.env_id == "adapters.verifiers"
    again = vf_load(env.env_id, **env.env_args)  # what verifiers' env workers do
    assert again.dataset["info"] == env.dataset["info"]
