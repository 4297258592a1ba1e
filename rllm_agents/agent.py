"""Agents: turn env observations into chat messages and model replies into env actions.

An :class:`Agent` keeps one conversation. ``reset(observation, info)`` opens it (system prompt,
a worked example, the first observation as a user turn, tool schemas from ``info["tools"]``),
``act(response)`` records the model's reply and returns the action for ``env.step``, and
``observe(...)`` turns the env's feedback into the next message(s).

Nothing here is per family. What an env family wants from a chat agent -- system prompt,
worked example, token limit, stop strings -- is data in the family's folder
(:class:`rllm_envs.spec.AgentSpec`, named by its registry row), and :func:`make_agent` reads
it. The agent classes differ only in turn logic: :class:`GenericAgent` (feedback as user
turns), :class:`ToolAgent` (results of the calls the env read go back as ``tool`` messages)
and :class:`FrozenLakeBoardAgent` (compact board feedback for tiny models).

``<think>`` handling: the whole reply (thinking included) stays in the message history and in
the token ids. The *action* is the answer part of the reply under the one rule of
:mod:`rllm_envs.text` (the env parsers read it the same way): the text after the last
``</think>``; a reply that left a ``<think>`` open (cut at the token limit) has no answer, so
its action is the empty string (the env treats it as an invalid action, never as an error).
Pass ``think="keep"`` to send the raw reply instead.

Decoding: the spec's ``max_tokens`` and ``stop`` (:meth:`Agent.sampling_hints`) are what a
reply of the family needs; callers that leave the token limit to the env use them, and an
explicit limit wins. A reply ends *before* its stop string, so a family's stops are only
strings its parser reads without their closing text.

Demonstrations are part of the prompt (never trained on as a completion) and never one of
the env's tasks; the envs pay nothing for a reply that copies one
(:mod:`rllm_envs.demonstrations`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import rllm_envs
from rllm_agents.error import AgentConfigError
from rllm_envs.error import UnknownEnvironment, did_you_mean
from rllm_envs.spec import AgentSpec, Message, check_demonstration
from rllm_envs.text import answer_text

__all__ = [
    "Agent",
    "FrozenLakeBoardAgent",
    "GenericAgent",
    "ToolAgent",
    "agent_class_for",
    "agent_names",
    "make_agent",
    "strip_think",
    "tool_schemas",
]

_DEFAULT = object()


def strip_think(text: str) -> str:
    """The answer part of a reply (:func:`rllm_envs.text.answer_text`; ``""`` if unfinished)."""
    return answer_text(text)


class Agent:
    """Base agent: a conversation of chat messages for one episode at a time.

    Defaults come from the env family's spec (:class:`rllm_envs.spec.AgentSpec`); every one
    can be overridden. Subclasses change turn logic: :meth:`format_observation` or
    :meth:`observe` present feedback differently.

    Args:
        spec: The family's spec (default: an empty one, as for an env outside the registry).
        system_prompt: The system message (``None`` for none); default: the spec's prompt for
            the task. A prompt given here is used as is for every task.
        think: ``"strip"`` (default) sends the answer part of the reply as the action
            (:mod:`rllm_envs.text`); ``"keep"`` sends the whole reply.
        max_tokens: Most tokens per reply (default: the spec's; ``None`` leaves it to the
            caller).
        stop: Stop strings (default: the spec's).
        demonstration: Messages of a worked example shown before the task (default: the
            spec's for the task; ``None`` or ``()`` for none).
    """

    #: Name used by :func:`make_agent` (``agent="tool"``) and by specs (``turns``).
    name: ClassVar[str] = "base"

    def __init__(
        self,
        spec: AgentSpec | None = None,
        *,
        system_prompt: Any = _DEFAULT,
        think: str = "strip",
        max_tokens: Any = _DEFAULT,
        stop: Any = _DEFAULT,
        demonstration: Any = _DEFAULT,
    ) -> None:
        if think not in ("strip", "keep"):
            raise AgentConfigError(f"Expects `think` in ('strip', 'keep'), actual: {think!r}.")
        if spec is not None and not isinstance(spec, AgentSpec):
            raise AgentConfigError(f"Expects `spec` to be an AgentSpec, actual: {spec!r}.")
        self.spec = spec or AgentSpec()
        self.max_tokens: int | None = self.spec.max_tokens if max_tokens is _DEFAULT else max_tokens
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise AgentConfigError(
                f"Expects `max_tokens` to be an int >= 1 or None, actual: {self.max_tokens!r}."
            )
        self.stop: tuple[str, ...] = tuple(self.spec.stop if stop is _DEFAULT else stop)
        self._prompt_given = system_prompt is not _DEFAULT
        self.system_prompt: str | None = (
            self.spec.system_prompt if system_prompt is _DEFAULT else system_prompt
        )
        self._demonstration_given = demonstration is not _DEFAULT
        self.demonstration: tuple[Message, ...] = (
            check_demonstration(demonstration)
            if self._demonstration_given
            else self.spec.demonstration
        )
        self.think = think
        self.messages: list[Message] = []
        self.tools: list[dict[str, Any]] | None = None

    # ------------------------------------------------------------------ episode API

    def reset(self, observation: str, info: Mapping[str, Any]) -> list[Message]:
        """Start a conversation from the env's first observation; return all its messages."""
        info = info if isinstance(info, Mapping) else {}
        tools = info.get("tools")
        self.tools = [dict(t) for t in tools] if tools else None
        self.messages = []
        prompt = self.system_prompt_for(info)
        if prompt:
            self.messages.append({"role": "system", "content": prompt})
        self.messages.extend(dict(m) for m in self.demonstration_for(info))
        self.messages.append(
            {"role": "user", "content": self.format_observation(observation, info, first=True)}
        )
        return list(self.messages)

    def act(self, response: str) -> str:
        """Record the model's reply and return the action for ``env.step``."""
        self.messages.append({"role": "assistant", "content": response})
        return answer_text(response) if self.think == "strip" else response

    def observe(
        self,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
    ) -> list[Message]:
        """Turn the env's feedback into the message(s) appended to the conversation."""
        role = self.feedback_role(info if isinstance(info, Mapping) else {})
        new = [{"role": role, "content": self.format_observation(observation, info, first=False)}]
        self.messages.extend(new)
        return new

    def feedback_role(self, info: Mapping[str, Any]) -> str:
        """The chat role of a feedback turn (``"user"``)."""
        return "user"

    def system_prompt_for(self, info: Mapping[str, Any]) -> str | None:
        """The system prompt for the task ``info`` describes (one given to the agent wins)."""
        return self.system_prompt if self._prompt_given else self.spec.system_prompt_for(info)

    def demonstration_for(self, info: Mapping[str, Any]) -> tuple[Message, ...]:
        """The worked example shown before the task (one given to the agent wins)."""
        if self._demonstration_given:
            return self.demonstration
        return self.spec.demonstration_for(info)

    def sampling_hints(self) -> dict[str, Any]:
        """``{"max_tokens": ..., "stop": (...)}`` this family's replies need (set keys only)."""
        hints: dict[str, Any] = {}
        if self.max_tokens is not None:
            hints["max_tokens"] = self.max_tokens
        if self.stop:
            hints["stop"] = self.stop
        return hints

    def format_observation(self, observation: str, info: Mapping[str, Any], *, first: bool) -> str:
        """The text of a user turn for ``observation`` (the observation itself by default)."""
        return observation

    def __repr__(self) -> str:
        return f"{type(self).__name__}(system_prompt={self.system_prompt!r}, think={self.think!r})"


class GenericAgent(Agent):
    """Any text env: observations as user turns, replies as actions."""

    name = "generic"


class ToolAgent(Agent):
    """Tool envs: schemas from ``info["tools"]``, call results as ``tool`` messages.

    The schemas reach the chat template's ``tools=`` argument (see
    :class:`rllm_agents.chat.ChatTokenizer`). Feedback on a reply in which the env read tool
    calls (``info["tool_calls"]``, what the env parsed, not a guess from the text) goes back
    as a ``tool`` message; other feedback as a user message.
    """

    name = "tool"

    def feedback_role(self, info: Mapping[str, Any]) -> str:
        """``"tool"`` when the env read tool calls in the reply, else ``"user"``."""
        return "tool" if info.get("tool_calls") else "user"


class FrozenLakeBoardAgent(Agent):
    """FrozenLake with compact feedback: ``"You moved Right."`` and the board rows with ``P``.

    The env's observations are self-contained prose, which is what a pretrained model needs
    but costs a tiny from-scratch model many tokens per turn, and attention over a long
    episode dominates a CPU training step. This agent shows a one-line rule and the bare board
    on the first turn and the outcome plus the board on later turns, built from the env's
    documented ``info`` keys. The env, its rewards and its action parser are unchanged.
    Select it with ``agent="frozenlake-board"`` (``rollout.agent`` in a trainer config).

    Args:
        spec: As for every agent.
        full_first: Show the env's whole first observation instead of the one-line rule.
        show_position: End each turn with the player's cell in words (``At row 2, column
            1.``, counted from 1 as the env's prose does): a from-scratch model then need not
            learn to find ``P`` on the board before it can act on where it is.
        **kwargs: As for every agent (``system_prompt``, ``think``).
    """

    name = "frozenlake-board"
    #: The first turn's rule line (the board follows).
    rule = "Reach G, avoid H. Reply Left, Down, Right or Up."

    def __init__(
        self,
        spec: AgentSpec | None = None,
        *,
        full_first: bool = False,
        show_position: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(spec, **kwargs)
        self.full_first = full_first
        self.show_position = show_position

    def format_observation(self, observation: str, info: Mapping[str, Any], *, first: bool) -> str:
        """A rule line (first turn) or the outcome line, then the board rows with ``P``."""
        rows = info.get("map")
        position = info.get("position")
        if (first and self.full_first) or not rows or not position:
            return observation
        row, col = int(position[0]), int(position[1])
        board = [
            "".join("P" if (r, c) == (row, col) else ch for c, ch in enumerate(line))
            for r, line in enumerate(rows)
        ]
        if first:
            head = self.rule
        elif info.get("invalid_action"):
            head = "Invalid action."
        else:
            head = observation.split("\n", 1)[0]
        tail = [f"At row {row + 1}, column {col + 1}."] if self.show_position else []
        return "\n".join([head, *board, *tail])


_BUILTIN: tuple[type[Agent], ...] = (GenericAgent, ToolAgent, FrozenLakeBoardAgent)


def _spec_of(env_id: str | None) -> AgentSpec:
    """The registered spec of ``env_id``; an empty one for ids outside the registry."""
    if not env_id:
        return AgentSpec()
    try:
        return rllm_envs.agent_spec(env_id)
    except UnknownEnvironment:
        return AgentSpec()


def agent_names() -> dict[str, type[Agent]]:
    """``{name: class}`` of the agents :func:`make_agent` knows by name."""
    return {cls.name: cls for cls in _BUILTIN}


def agent_class_for(env_id: str) -> type[Agent]:
    """The agent class of ``env_id``'s turn logic (:class:`GenericAgent` if unknown)."""
    return agent_names()[_spec_of(env_id).turns]


def _agent_class(agent: str | type[Agent]) -> type[Agent]:
    if isinstance(agent, type) and issubclass(agent, Agent):
        return agent
    if isinstance(agent, str) and ":" in agent:
        cls = rllm_envs.resolve(agent)
        if not (isinstance(cls, type) and issubclass(cls, Agent)):
            raise AgentConfigError(f"Expects {agent!r} to name an Agent subclass, actual: {cls!r}.")
        return cls
    if isinstance(agent, str):
        names = agent_names()
        if agent not in names:
            raise AgentConfigError(
                f"Unknown agent {agent!r}; known: {sorted(names)}." + did_you_mean(agent, names)
            )
        return names[agent]
    raise AgentConfigError(
        f"Expects `agent` to be an Agent, an Agent subclass or a name, actual: {agent!r}."
    )


def make_agent(
    env_id: str | None = None,
    agent: str | type[Agent] | Agent | None = None,
    **kwargs: Any,
) -> Agent:
    """Build the agent for ``env_id`` from its family's spec, or the one ``agent`` names.

    Args:
        env_id: The env id; its registry row's :class:`~rllm_envs.spec.AgentSpec` gives the
            turn logic and the defaults. Ids outside the registry get :class:`GenericAgent`
            with no prompt.
        agent: Override of the turn logic: an :class:`Agent` instance (returned as is), a
            subclass, a name (:func:`agent_names`: ``"generic"``, ``"tool"``,
            ``"frozenlake-board"``) or a ``"module:Class"`` path (e.g. the agent a checkpoint
            was trained with). The env's spec still gives the defaults.
        **kwargs: Passed to the agent class (``system_prompt=``, ``think=``, ...); they win
            over the spec.

    Returns:
        A fresh agent (or the given instance).
    """
    if isinstance(agent, Agent):
        return agent
    spec = _spec_of(env_id)
    cls = agent_names()[spec.turns] if agent is None else _agent_class(agent)
    return cls(spec, **kwargs)


def tool_schemas(info: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
    """``info["tools"]`` if the env declares tools (OpenAI function-calling format)."""
    tools = info.get("tools")
    return tools if tools else None
