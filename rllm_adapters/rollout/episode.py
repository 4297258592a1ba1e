"""One episode's turn loop, shared by the async env-worker path and the vector-env path.

An episode is an :class:`EpisodeState` (typed: spec, agent, trajectory, next prompt, turn, the
reply waiting for its env step) driven by :class:`EpisodeRunner` in three moves:

1. :meth:`EpisodeRunner.start` -- the agent reads the reset observation; the first prompt.
2. :meth:`EpisodeRunner.decide` -- the policy generates the next reply; the agent reads its
   action (``None``: the next prompt would not fit the context).
3. :meth:`EpisodeRunner.advance` -- the env's transition is recorded as a
   :class:`~rllm_agents.trajectory.Step`; the episode ends, or the agent observes and the next
   prompt is appended to the token sequence.

:meth:`EpisodeRunner.run` is the whole loop on one env worker; the vector-env path
(:mod:`rllm_adapters.rollout.vector`) calls the same three moves for all sub-envs in lock-step.

Token exactness is recorded as what happened (``Trajectory.token_source``): ``"engine"`` when
every prompt was built by appending ids and every completion id came from the engine (and the
engine's reported prompt ids, when it reports them, equal the trajectory's); ``"retokenized"``
when a backend returned text only and its ids were re-tokenised; ``"prompt_mismatch"`` when the
engine reports having seen other prompt ids; ``"server_template"`` for chat APIs.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rllm_adapters.backends.base import Generation, Policy, SamplingParams
from rllm_adapters.env_workers import EnvWorker
from rllm_adapters.rollout.config import EpisodeSpec, RolloutConfig
from rllm_agents.agent import Agent, make_agent
from rllm_agents.chat import ChatTokenizer
from rllm_agents.trajectory import Step, Trajectory, to_jsonable

__all__ = ["AgentLike", "EpisodeRunner", "EpisodeState", "PendingTurn"]

AgentLike = str | type[Agent] | Agent | None
Transition = tuple[Any, Any, Any, Any, Any]


@dataclass
class PendingTurn:
    """A generated reply waiting for its env step.

    Attributes:
        generation: What the policy returned.
        prompt: The prompt ids the reply continues (the server's, for chat APIs).
        action: The agent's reading of the reply, sent to ``env.step``.
    """

    generation: Generation
    prompt: list[int]
    action: str


@dataclass
class EpisodeState:
    """Where one episode stands.

    Attributes:
        spec: Which episode (group, sample, reset seed).
        agent: The episode's own agent (its conversation).
        trajectory: What has been recorded so far.
        prompt: The next turn's prompt ids (token mode; ``[]`` for chat APIs).
        turn: Model turns taken.
        started: ``perf_counter`` at reset.
        pending: The reply waiting for its env step, if any.
    """

    spec: EpisodeSpec
    agent: Agent
    trajectory: Trajectory
    prompt: list[int]
    turn: int = 0
    started: float = field(default_factory=time.perf_counter)
    pending: PendingTurn | None = None


class EpisodeRunner:
    """Runs episodes of one rollout: an agent per episode, one policy, one chat tokenizer.

    Args:
        policy: The backend.
        chat: The token-exact chat tokenizer, or ``None`` for the backend's chat API.
        config: The rollout settings.
        agent_spec: Agent override (name, class or instance); default from the env id.
    """

    def __init__(
        self,
        policy: Policy,
        chat: ChatTokenizer | None,
        config: RolloutConfig,
        agent_spec: AgentLike,
    ) -> None:
        self.policy = policy
        self.chat = chat
        self.config = config
        self.agent_spec = agent_spec
        self._prototypes: dict[str, Agent] = {}

    def new_agent(self, env_id: str) -> Agent:
        """A fresh agent for one episode: a copy of the rollout's agent for ``env_id``.

        The agent is built once per env id; every episode gets its own copy, since concurrent
        episodes hold their own conversations.
        """
        prototype = self._prototypes.get(env_id)
        if prototype is None:
            prototype = self._prototypes[env_id] = make_agent(
                env_id, self.agent_spec, **self.config.agent_kwargs
            )
        return copy.deepcopy(prototype)

    def params(self, prompt_len: int, episode: int, turn: int) -> SamplingParams | None:
        """This turn's sampling parameters, or ``None`` when the prompt leaves no room."""
        sampling = self.config.sampling
        changes: dict[str, Any] = {}
        limit = self.policy.max_model_len
        if limit is not None and self.chat is not None:
            budget = limit - prompt_len
            if budget < 1:
                return None
            if budget < sampling.max_tokens:
                changes["max_tokens"] = budget
        if sampling.seed is not None:
            changes["seed"] = (sampling.seed + 1_000_003 * episode + 7_919 * turn) % 2**31
        if self.chat is not None:
            extra = set(sampling.stop_token_ids) | set(self.chat.end_of_turn_ids)
            if extra != set(sampling.stop_token_ids):
                changes["stop_token_ids"] = tuple(sorted(extra))
        return sampling.with_(**changes) if changes else sampling

    # ------------------------------------------------------------------ the moves

    def start(
        self, observation: Any, info: Mapping[str, Any], env_id: str, spec: EpisodeSpec
    ) -> EpisodeState:
        """Begin an episode from its reset ``(observation, info)``."""
        agent = self.new_agent(env_id)
        messages = agent.reset(str(observation), info)
        tokens = self.chat is not None
        trajectory = Trajectory(
            env_id=env_id,
            task_id=None if info.get("task_id") is None else str(info.get("task_id")),
            seed=spec.seed,
            group=spec.group,
            sample=spec.sample,
            initial_observation=str(observation),
            initial_info=to_jsonable(dict(info)),
            token_exact=tokens,
            token_source="engine" if tokens else "server_template",
            metadata={
                "policy": self.policy.name,
                "mode": "tokens" if tokens else "chat",
                "agent": type(agent).__name__,
            },
        )
        prompt = self.chat.initial_prompt(messages, agent.tools) if self.chat is not None else []
        return EpisodeState(spec, agent, trajectory, prompt)

    async def decide(self, state: EpisodeState) -> str | None:
        """Generate the next reply; its action, or ``None`` when the context is full."""
        params = self.params(len(state.prompt), state.spec.index, state.turn)
        if params is None:
            return None
        agent = state.agent
        if self.chat is not None:
            generation = await self.policy.generate(state.prompt, params)
            prompt = state.prompt
        else:
            generation = await self.policy.chat(agent.messages, params, agent.tools)
            prompt = list(generation.prompt_ids or [])
        state.pending = PendingTurn(generation, prompt, agent.act(generation.text))
        return state.pending.action

    def advance(self, state: EpisodeState, transition: Transition) -> str | None:
        """Record the env's transition; the finish reason, or ``None`` to go on."""
        pending = state.pending
        if pending is None:
            raise RuntimeError("advance() needs a reply from decide() first.")
        state.pending = None
        observation, reward, terminated, truncated, info = transition
        generation = pending.generation
        step = Step(
            prompt_ids=list(pending.prompt),
            completion_ids=list(generation.completion_ids or []),
            logprobs=[float(x) for x in (generation.logprobs or [])],
            response=generation.text,
            action=pending.action,
            observation=str(observation),
            reward=float(reward),
            terminated=bool(terminated),
            truncated=bool(truncated),
            info=to_jsonable(dict(info)),
            finish_reason=generation.finish_reason,
        )
        state.trajectory.steps.append(step)
        self._note_token_source(state.trajectory, generation, pending.prompt)
        state.turn += 1
        if step.terminated or step.truncated:
            return "terminated" if step.terminated else "truncated"
        if self.config.max_turns is not None and state.turn >= self.config.max_turns:
            return "truncated"
        new_messages = state.agent.observe(step.observation, step.reward, False, False, info)
        if self.chat is not None:
            state.prompt = self.chat.append(
                pending.prompt, step.completion_ids, new_messages, state.agent.tools
            )
        return None

    def settle(self, state: EpisodeState, closing: tuple[float, dict[str, float]]) -> None:
        """Add the env's closing reward to the last step of an episode stopped without one.

        The loop stops an episode so when the context is full; ``closing`` is what the env
        settled (:func:`~rllm_adapters.env_workers.settle_env`).
        """
        reward, components = closing
        steps = state.trajectory.steps
        if not steps or (reward == 0.0 and not components):
            return
        last = steps[-1]
        last.reward += reward
        last.info["settled"] = {"reward": reward, "reward_components": components}

    def finish(self, state: EpisodeState, end: str) -> Trajectory:
        """Close the episode's trajectory (``end`` is its ``finish``)."""
        trajectory = state.trajectory
        trajectory.finish = end
        trajectory.messages = list(state.agent.messages)
        trajectory.metadata["wall_s"] = round(time.perf_counter() - state.started, 4)
        if self.config.check_token_exact and trajectory.token_exact:
            trajectory.check_token_exact()
        return trajectory

    def _note_token_source(
        self, trajectory: Trajectory, generation: Generation, prompt: list[int]
    ) -> None:
        if self.chat is None or trajectory.token_source != "engine":
            return
        if generation.extra.get("ids_from_text"):
            trajectory.token_source = "retokenized"
        elif generation.prompt_ids is not None and list(generation.prompt_ids) != prompt:
            trajectory.token_source = "prompt_mismatch"
        else:
            return
        trajectory.token_exact = False
        trajectory.metadata["token_exact_lost_at_turn"] = len(trajectory.steps) - 1

    async def run(self, worker: EnvWorker, spec: EpisodeSpec) -> Trajectory:
        """Play one whole episode on ``worker``."""
        observation, info = await worker.reset(
            seed=spec.seed, options=spec.options, max_turns=self.config.max_turns
        )
        state = self.start(observation, info, worker.env_id, spec)
        while True:
            action = await self.decide(state)
            if action is None:
                self.settle(state, await worker.settle())
                return self.finish(state, "context")
            end = self.advance(state, await worker.step(action))
            if end is not None:
                return self.finish(state, end)
