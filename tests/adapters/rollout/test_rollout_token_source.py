"""Token exactness as it happened: the engine's own report of each turn's prompt ids is
compared with the trajectory's, and re-tokenised or mismatched ids are recorded as such."""

from __future__ import annotations

import pytest

from rllm_adapters.backends.base import Generation, Policy, SamplingParams
from rllm_adapters.rollout import RolloutConfig, rollout

pytest.importorskip("torch")


class Reporting(Policy):
    """Wraps a backend and keeps the prompt ids it reports for every request."""

    def __init__(self, inner: Policy, *, tamper=None) -> None:
        self.inner = inner
        self.tokenizer = inner.tokenizer
        self.max_model_len = inner.max_model_len
        self.name = inner.name
        self.tamper = tamper
        self.reported: list[tuple[int, ...]] = []

    async def generate(self, prompt_ids, params: SamplingParams) -> Generation:
        generation = await self.inner.generate(prompt_ids, params)
        if self.tamper is not None:
            self.tamper(generation)
        assert generation.prompt_ids is not None, "the engine reports the prompt it saw"
        self.reported.append(tuple(generation.prompt_ids))
        return generation


def config(**changes):
    base = dict(
        num_envs=2,
        group_size=2,
        sampling=SamplingParams(max_tokens=6, seed=0),
        max_turns=3,
        progress=False,
    )
    return RolloutConfig(**{**base, **changes})


def assert_engine_saw_the_trajectory(policy: Reporting, trajectories) -> None:
    steps = [tuple(s.prompt_ids) for t in trajectories for s in t.steps]
    assert sorted(steps) == sorted(policy.reported)  # every turn, and only those turns
    for t in trajectories:
        assert t.token_source == "engine" and t.token_exact
        assert t.num_turns >= 2 or t.steps[-1].terminated


def test_engine_prompt_ids_equal_the_trajectory_each_turn(hf_policy):
    policy = Reporting(hf_policy)
    trajectories = rollout("rllm/FrozenLake-v1", policy, config(), num_tasks=1)
    assert_engine_saw_the_trajectory(policy, trajectories)


def test_vector_env_path_records_the_same(hf_policy):
    import gymnasium as gym

    policy = Reporting(hf_policy)
    vec = gym.make_vec("rllm/FrozenLake-v1", num_envs=2, vectorization_mode="sync", max_turns=3)
    try:
        trajectories = rollout(vec, policy, config(), num_episodes=2)
    finally:
        vec.close()
    assert_engine_saw_the_trajectory(policy, trajectories)


def _retokenized(generation: Generation) -> None:
    generation.extra["ids_from_text"] = True


def _other_prompt(generation: Generation) -> None:
    generation.prompt_ids = [*(generation.prompt_ids or []), 0]


@pytest.mark.parametrize(
    ("tamper", "source"),
    [(_retokenized, "retokenized"), (_other_prompt, "prompt_mismatch")],
    ids=["retokenized", "prompt_mismatch"],
)
def test_lost_exactness_is_recorded_not_assumed(hf_policy, tamper, source):
    policy = Reporting(hf_policy, tamper=tamper)
    trajectories = rollout(
        "rllm/FrozenLake-v1", policy, config(group_size=1, num_envs=1), num_tasks=1
    )
    (t,) = trajectories
    assert t.token_source == source and not t.token_exact
    assert t.metadata["token_exact_lost_at_turn"] == 0
    assert t.to_dict()["token_source"] == source


def test_chat_mode_is_server_templated(hf_policy):
    (t,) = rollout(
        "rllm/FrozenLake-v1",
        hf_policy,
        config(group_size=1, num_envs=1, mode="chat", max_turns=1),
        num_tasks=1,
    )
    assert t.token_source == "server_template" and not t.token_exact
