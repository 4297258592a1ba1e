"""An episode the rollout loop stops without a step (a full context) is settled by its env.

s37 att37g F2: a policy walked towards FrozenLake's goal, then filled its context with
rambling; the loop ended the episode without telling the env, so the progress shaping the
walk earned (refunded by the env when an episode ends without the goal) was kept: 0.549 a
map, never reaching the goal.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the ids)
from rllm_adapters.backends.base import Generation, Policy, SamplingParams
from rllm_adapters.rollout import RolloutConfig, rollout
from rllm_envs.frozenlake import FrozenLakeEnv

pytest.importorskip("transformers")

MAP = ["SFFF", "FHFH", "FFFH", "HFFG"]
WEIGHTS = {"progress": 1.0}


class RightThenRamble(Policy):
    """A fake policy for this test only: "Right" twice, then replies that fill the context."""

    name = "right-then-ramble"

    def __init__(self, tokenizer, max_model_len: int) -> None:
        self.tokenizer = tokenizer
        self.max_model_len = max_model_len
        self.end = tokenizer.convert_tokens_to_ids("<|im_end|>")
        self.filler = tokenizer.encode(" zz", add_special_tokens=False)

    async def generate(self, prompt_ids, params: SamplingParams) -> Generation:
        moves = self.tokenizer.decode(prompt_ids).count("You moved")
        if moves < 2:
            ids = [*self.tokenizer.encode("<action>Right</action>", add_special_tokens=False)]
            ids.append(self.end)
            return Generation("<action>Right</action>", ids, [0.0] * len(ids), "stop")
        ids = (self.filler * params.max_tokens)[: params.max_tokens]
        return Generation(self.tokenizer.decode(ids), ids, [0.0] * len(ids), "length")


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import AutoTokenizer

    from rllm_adapters.tiny_model import tiny_model_path

    return AutoTokenizer.from_pretrained(str(tiny_model_path()))


def config(backend: str = "thread", max_turns: int | None = None) -> RolloutConfig:
    return RolloutConfig(
        num_envs=2,
        env_backend=backend,
        mode="tokens",
        progress=False,
        seed=0,
        max_turns=max_turns,
        sampling=SamplingParams(max_tokens=300),
    )


def assert_settled(trajectories) -> None:
    assert trajectories and all(t.finish == "context" for t in trajectories)
    for t in trajectories:
        walked = sum(s.info["reward_components"]["progress"] for s in t.steps)
        assert walked > 0  # the walk earned shaping ...
        settled = t.steps[-1].info["settled"]
        assert settled["reward_components"]["progress"] == pytest.approx(-walked)
        assert t.total_reward == pytest.approx(0.0)  # ... which the cut episode gives back


def test_the_env_settles_an_episode_stopped_where_it_stands():
    env = FrozenLakeEnv(desc=MAP, reward_weights=WEIGHTS)
    assert env.settle() == (0.0, {})  # no episode yet
    env.reset(seed=0)
    earned = sum(env.step("Right")[1] for _ in range(2))
    assert earned > 0
    assert env.closing_reward() == env.closing_reward()  # a query: the episode goes on
    reward, components = env.settle()
    assert reward == pytest.approx(-earned) and components == {"progress": reward}
    assert env.settle() == (0.0, {})  # settled once
    with pytest.raises(gym.error.ResetNeeded):
        env.step("Right")


def test_an_env_without_shaping_settles_for_nothing():
    env = gym.make("rllm/Math-v1")
    env.reset(seed=0)
    assert env.unwrapped.settle() == (0.0, {})


@pytest.mark.parametrize("backend", ["thread", "process"])
def test_a_full_context_settles_the_episode_on_its_worker(tokenizer, backend):
    trajectories = rollout(
        "rllm/FrozenLake-v1",
        RightThenRamble(tokenizer, max_model_len=1200),
        config(backend),
        num_tasks=2,
        env_kwargs={"desc": MAP, "reward_weights": WEIGHTS},
    )
    assert_settled(trajectories)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_full_context_settles_a_vector_envs_episode(tokenizer, mode):
    """att38c F3: an AsyncVectorEnv's sub-envs were not settled (0.509 a map)."""
    vec = gym.make_vec(
        "rllm/FrozenLake-v1",
        num_envs=2,
        vectorization_mode=mode,
        desc=MAP,
        reward_weights=WEIGHTS,
    )
    try:
        trajectories = rollout(
            vec, RightThenRamble(tokenizer, max_model_len=1200), config(), num_episodes=2
        )
    finally:
        vec.close()
    assert_settled(trajectories)


@pytest.mark.integration
def test_a_served_env_takes_the_loops_turn_limit_and_settles_a_full_context(tokenizer, tmp_path):
    """att38c F2: through `RemoteTextEnv` (the documented env over the server) the loop's
    `max_turns` and a full context never reached the served env, which kept FrozenLake's
    progress: 0.535 and 0.495 a map without the goal. The reset option and a `settle`
    message reach it now."""
    import functools
    import json

    pytest.importorskip("openenv.core.env_server")
    from rllm_adapters.openenv import RemoteTextEnv
    from tests.adapters.test_openenv_faults import _free_port, _start, _stop

    port = _free_port()
    kwargs = json.dumps({"desc": MAP, "reward_weights": WEIGHTS})
    proc = _start(port, tmp_path / "server.log", "--env-kwargs", kwargs, "--max-sessions", "4")
    try:
        remote = functools.partial(RemoteTextEnv, f"http://127.0.0.1:{port}")
        cut = rollout(remote, RightThenRamble(tokenizer, max_model_len=1200), config(), num_tasks=2)
        assert_settled(cut)
        policy = RightThenRamble(tokenizer, max_model_len=100_000)
        turns = rollout(remote, policy, config(max_turns=3), num_tasks=2)
    finally:
        _stop(proc)
    for t in turns:  # the served env's own truncation, on the loop's last turn
        assert t.steps[-1].truncated and t.total_reward == pytest.approx(0.0)
