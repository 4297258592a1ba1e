"""Multi-agent episodes: a model plays its agents through ``rllm_agents``, scripts play the rest.

Who plays whom is part of the env's identity: the registry row's ``opponents``
(:class:`rllm_envs.EnvEntry`) maps the agents a scripted player takes to its kind (TicTacToe:
``{"player_1": "heuristic"}``); every other agent is the model's. In cooperative envs
(solver-judge, debate) the row lists none, so the model plays every agent (self-play).

Each agent the model plays keeps its own conversation in the row's agent
(:func:`rllm_agents.make_agent`): the system prompt for its role, its observations as user
turns, its replies as assistant turns, and its action read by the one answer rule of
:mod:`rllm_envs.text` (``<think>`` handling). An agent's conversation opens at its first turn
to act; observations it gets while it waits ("your reply is ignored") are not shown to it.
Every request carries the end-of-turn stop ids the single-agent rollout loop passes
(:func:`end_of_turn_stop_ids`), so generation stops at the end of the turn whatever the
model's generation config says.

:func:`play_episode` runs one episode with a model; :func:`play_scripted_episode` runs one with
scripted players only (the leaderboard's ``oracle``/``random`` baselines), with the same
bookkeeping (:class:`MultiAgentEpisode`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import rllm_envs
from rllm_adapters.backends.base import Policy, SamplingParams
from rllm_agents.agent import Agent, make_agent
from rllm_agents.chat import ChatTokenizer, Message
from rllm_envs.multiagent import ScriptedPolicy

__all__ = [
    "MultiAgentEpisode",
    "end_of_turn_stop_ids",
    "play_episode",
    "play_scripted_episode",
    "players",
]


@dataclass
class MultiAgentEpisode:
    """One finished multi-agent episode, seen from the agents the evaluated policy played.

    Attributes:
        env_id: The env.
        task_id: The task's id.
        controlled: The agents the evaluated policy played (the rest were scripted).
        returns: Sum of rewards per agent (every agent).
        correct: Whether each agent ended correct (``info["is_correct"]``).
        invalid: Invalid actions per agent.
        turns: Joint steps.
        tokens: Completion tokens the model produced (0 for scripted play).
        messages: The conversation of each agent the model played.
    """

    env_id: str
    task_id: str
    controlled: tuple[str, ...]
    returns: dict[str, float]
    correct: dict[str, bool]
    invalid: dict[str, int]
    turns: int = 0
    tokens: int = 0
    messages: dict[str, list[Message]] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        """Mean return of the controlled agents."""
        return sum(self.returns[a] for a in self.controlled) / len(self.controlled)

    @property
    def success(self) -> bool:
        """Whether every controlled agent ended correct (a win, in a game)."""
        return all(self.correct[a] for a in self.controlled)

    @property
    def invalid_actions(self) -> int:
        """Invalid actions of the controlled agents."""
        return sum(self.invalid[a] for a in self.controlled)

    @classmethod
    def start(
        cls, env_id: str, agents: Sequence[str], controlled: Sequence[str], infos: Mapping
    ) -> MultiAgentEpisode:
        """The bookkeeping of an episode just reset (``infos`` from ``reset``)."""
        return cls(
            env_id=env_id,
            task_id=str(infos[agents[0]]["task_id"]),
            controlled=tuple(controlled),
            returns=dict.fromkeys(agents, 0.0),
            correct=dict.fromkeys(agents, False),
            invalid=dict.fromkeys(agents, 0),
        )

    def add(self, rewards: Mapping[str, float], infos: Mapping[str, Any]) -> None:
        """Count one joint step."""
        self.turns += 1
        for agent, reward in rewards.items():
            self.returns[agent] += float(reward)
            self.correct[agent] = bool(infos[agent]["is_correct"])
            self.invalid[agent] += bool(infos[agent]["invalid_action"])


def players(env_id: str, agents: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """``(controlled agents, {scripted agent: kind})`` from the env's registry row."""
    opponents = dict(rllm_envs.env_entry(env_id).opponents)
    return [a for a in agents if a not in opponents], opponents


def end_of_turn_stop_ids(
    policy: Policy, chat_template_kwargs: Mapping[str, Any] | None = None
) -> tuple[int, ...]:
    """The end-of-turn ids of ``policy``'s chat template (what the rollout loop stops on).

    From :class:`rllm_agents.chat.ChatTokenizer` (the tokenizer's EOS and the first token of
    the template's end-of-turn text); empty for a backend without a local tokenizer (a chat
    API ends turns on the server).
    """
    if not policy.supports_token_ids:
        return ()
    chat = ChatTokenizer(policy.tokenizer, chat_template_kwargs=chat_template_kwargs)
    return tuple(sorted(chat.end_of_turn_ids))


async def play_episode(
    env: Any,
    policy: Policy,
    *,
    env_id: str,
    sampling: SamplingParams,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
    agent: str | type[Agent] | None = None,
    agent_kwargs: Mapping[str, Any] | None = None,
    chat_template_kwargs: Mapping[str, Any] | None = None,
) -> MultiAgentEpisode:
    """Play one episode of a parallel multi-agent env with a model for its controlled agents.

    Args:
        env: The ``ParallelEnv`` (from :func:`rllm_envs.make_parallel`); it is reset here.
        policy: The model backend.
        env_id: The env's id (its registry row names the agent class and the opponents).
        sampling: Sampling settings; the end-of-turn stop ids are added, and a seed moves on
            by one per joint step.
        seed: Reset seed; the scripted opponents are seeded with ``seed + 1``.
        options: Reset options (``{"index": i}``).
        agent: Agent override (name, class or ``"module:Class"``); default from the row.
        agent_kwargs: Passed to the agent (``system_prompt=``, ``think=``).
        chat_template_kwargs: Passed to the chat template when finding the stop ids.

    Returns:
        The episode's bookkeeping and the model's conversations.
    """
    observations, infos = await asyncio.to_thread(env.reset, seed=seed, options=dict(options or {}))
    agents = list(env.possible_agents)
    controlled, opponents = players(env_id, agents)
    episode = MultiAgentEpisode.start(env_id, agents, controlled, infos)
    scripted = {
        a: ScriptedPolicy(kind, seed=None if seed is None else seed + 1)
        for a, kind in opponents.items()
    }
    stop_ids = set(sampling.stop_token_ids) | set(
        end_of_turn_stop_ids(policy, chat_template_kwargs)
    )
    base = sampling.with_(stop_token_ids=tuple(sorted(stop_ids)))
    chats: dict[str, Agent] = {}
    pending: dict[str, float] = dict.fromkeys(controlled, 0.0)  # reward since the last turn

    async def reply(name: str, params: SamplingParams) -> str:
        chat = chats.get(name)
        if chat is None:
            chat = chats[name] = make_agent(env_id, agent, **dict(agent_kwargs or {}))
            chat.reset(str(observations[name]), infos[name])
        else:
            chat.observe(str(observations[name]), pending[name], False, False, infos[name])
        pending[name] = 0.0
        generation = await policy.chat(chat.messages, params, chat.tools)
        episode.tokens += len(generation.completion_ids or ())
        return chat.act(generation.text)

    while env.agents:
        acting = [a for a in env.agents if infos[a]["acting"]]
        params = base if base.seed is None else base.with_(seed=base.seed + episode.turns)
        mine = [a for a in acting if a in controlled]
        texts = await asyncio.gather(*(reply(a, params) for a in mine))
        actions = {a: scripted[a](env, a) for a in acting if a in scripted}
        actions.update(zip(mine, texts, strict=True))
        observations, rewards, _, _, infos = await asyncio.to_thread(env.step, actions)
        episode.add(rewards, infos)
        for name in pending:
            pending[name] += float(rewards.get(name, 0.0))
    for name, chat in chats.items():
        episode.messages[name] = list(chat.messages)
    return episode


def play_scripted_episode(
    env: Any,
    kind: str,
    *,
    env_id: str,
    seed: int | None = None,
    options: Mapping[str, Any] | None = None,
) -> MultiAgentEpisode:
    """Play one episode with the scripted player ``kind`` in the model's seats.

    The opponents of the registry row keep their own kind (seeded with ``seed + 1``), so a
    baseline and a model face the same opponents.
    """
    _, infos = env.reset(seed=seed, options=dict(options or {}))
    agents = list(env.possible_agents)
    controlled, opponents = players(env_id, agents)
    episode = MultiAgentEpisode.start(env_id, agents, controlled, infos)
    me = ScriptedPolicy(kind, seed=seed)
    others = {
        a: ScriptedPolicy(k, seed=None if seed is None else seed + 1) for a, k in opponents.items()
    }
    while env.agents:
        actions = {a: others.get(a, me)(env, a) for a in env.agents if infos[a]["acting"]}
        _, rewards, _, _, infos = env.step(actions)
        episode.add(rewards, infos)
    return episode
