"""Agents: turn env observations into chat messages and model replies into env actions.

An :class:`Agent` keeps one conversation. ``reset(observation, info)`` opens it (system prompt,
the first observation as a user turn, tool schemas from ``info["tools"]``), ``act(response)``
records the model's reply and returns the action for ``env.step``, and ``observe(...)`` turns
the env's feedback into the next message(s).

One agent class per env family plus :class:`GenericAgent`; :func:`make_agent` picks the class
from the env id (``"rllm/Math-v0"`` -> family ``"Math"`` -> :class:`MathAgent`) and can be
overridden with a class, an instance or a registered name. Observations are self-contained by
the env contract, so family agents differ mostly in their system prompt and in how feedback is
presented (tool results go back as ``tool`` messages).

``<think>`` handling: the whole reply (thinking included) stays in the message history and in
the token ids. The *action* is the text after the last ``</think>``; a reply that opened a
``<think>`` and never closed it (cut at the token limit) has no answer, so its action is the
empty string (the env treats it as an invalid action, never as an error). Pass
``think="keep"`` to send the raw reply instead.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from rllm_envs.error import InvalidEnvConfig, did_you_mean

__all__ = [
    "AGENTS",
    "Agent",
    "CodeAgent",
    "FrozenLakeAgent",
    "GenericAgent",
    "MathAgent",
    "ToolAgent",
    "agent_class_for",
    "env_family",
    "make_agent",
    "strip_think",
    "tool_schemas",
]

Message = dict[str, Any]
_DEFAULT = object()
_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_FAMILY_RE = re.compile(r"^(?:[^/:]+[/:])*(?P<family>[^/:]+?)(?:-v\d+)?$")


def env_family(env_id: str) -> str:
    """The family part of an env id: ``"rllm/Math-v0"`` -> ``"Math"``."""
    match = _FAMILY_RE.match(env_id)
    return match.group("family") if match else env_id


def strip_think(text: str) -> str:
    """The answer part of a reply: after the last ``</think>``; ``""`` if a think is unclosed."""
    if _THINK_CLOSE in text:
        return text.rsplit(_THINK_CLOSE, 1)[1].strip()
    if _THINK_OPEN in text:
        return ""
    return text


class Agent:
    """Base agent: a conversation of chat messages for one episode at a time.

    Subclasses usually only set ``default_system_prompt``; override :meth:`format_observation`
    or :meth:`observe` to present feedback differently.

    Args:
        system_prompt: The system message (``None`` for none); defaults to the class's
            ``default_system_prompt``.
        think: ``"strip"`` (default) sends the text after the last ``</think>`` as the action;
            ``"keep"`` sends the whole reply.
    """

    #: Name used by :func:`make_agent` (``agent="math"``).
    name: ClassVar[str] = "base"
    default_system_prompt: ClassVar[str | None] = None

    def __init__(self, *, system_prompt: Any = _DEFAULT, think: str = "strip") -> None:
        if think not in ("strip", "keep"):
            raise InvalidEnvConfig(f"Expects `think` in ('strip', 'keep'), actual: {think!r}.")
        self.system_prompt: str | None = (
            self.default_system_prompt if system_prompt is _DEFAULT else system_prompt
        )
        self.think = think
        self.messages: list[Message] = []
        self.tools: list[dict[str, Any]] | None = None
        self._last_action_was_tool_call = False

    # ------------------------------------------------------------------ episode API

    def reset(self, observation: str, info: Mapping[str, Any]) -> list[Message]:
        """Start a conversation from the env's first observation; return all its messages."""
        tools = info.get("tools") if isinstance(info, Mapping) else None
        self.tools = [dict(t) for t in tools] if tools else None
        self.messages = []
        if self.system_prompt:
            self.messages.append({"role": "system", "content": self.system_prompt})
        self.messages.append(
            {"role": "user", "content": self.format_observation(observation, info, first=True)}
        )
        self._last_action_was_tool_call = False
        return list(self.messages)

    def act(self, response: str) -> str:
        """Record the model's reply and return the action for ``env.step``."""
        self.messages.append({"role": "assistant", "content": response})
        action = strip_think(response) if self.think == "strip" else response
        self._last_action_was_tool_call = "<tool_call>" in action
        return action

    def observe(
        self,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
    ) -> list[Message]:
        """Turn the env's feedback into the message(s) appended to the conversation."""
        new = [{"role": "user", "content": self.format_observation(observation, info, first=False)}]
        self.messages.extend(new)
        return new

    def format_observation(self, observation: str, info: Mapping[str, Any], *, first: bool) -> str:
        """The text of a user turn for ``observation`` (the observation itself by default)."""
        return observation

    def __repr__(self) -> str:
        return f"{type(self).__name__}(system_prompt={self.system_prompt!r}, think={self.think!r})"


class GenericAgent(Agent):
    """Any text env: observations as user turns, replies as actions."""

    name = "generic"


class FrozenLakeAgent(Agent):
    """``rllm/FrozenLake``: a short system prompt asking for one tagged move per turn."""

    name = "frozenlake"
    default_system_prompt = (
        "You are an agent on a frozen lake. Each turn, think briefly if you need to, then reply "
        "with exactly one move inside <action></action>: Left, Down, Right or Up."
    )


class MathAgent(Agent):
    r"""``rllm/Math``: step-by-step reasoning with the final answer in ``\boxed{}``."""

    name = "math"
    default_system_prompt = (
        "Solve the problem step by step. Put only the final answer in \\boxed{} at the end."
    )


class CodeAgent(Agent):
    """``rllm/Code``: a complete program in one fenced code block; test feedback as user turns."""

    name = "code"
    default_system_prompt = (
        "You are a competitive programmer. Reply with one complete Python 3 program in a "
        "```python code block that reads standard input and writes standard output."
    )


class ToolAgent(Agent):
    """Tool envs (``rllm/ToolUse``, ``rllm/Search``): schemas from ``info["tools"]``.

    The schemas reach the chat template's ``tools=`` argument (see
    :class:`rllm_agents.chat.ChatTokenizer`); the reply after a tool call is sent back as a
    ``tool`` message, other feedback as a user message.
    """

    name = "tool"
    default_system_prompt = (
        'You can call tools. To call one, write <tool_call>{"name": ..., "arguments": '
        "{...}}</tool_call>. Give your final answer in the format the task asks for."
    )

    def observe(
        self,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
    ) -> list[Message]:
        """Tool results go back as ``tool`` messages."""
        role = "tool" if self._last_action_was_tool_call else "user"
        new = [{"role": role, "content": self.format_observation(observation, info, first=False)}]
        self.messages.extend(new)
        return new


#: Family name (from the env id) -> agent class. Unlisted families get :class:`GenericAgent`.
AGENTS: dict[str, type[Agent]] = {
    "FrozenLake": FrozenLakeAgent,
    "Math": MathAgent,
    "Code": CodeAgent,
    "ToolUse": ToolAgent,
    "Search": ToolAgent,
}

_BY_NAME: dict[str, type[Agent]] = {
    cls.name: cls for cls in (GenericAgent, FrozenLakeAgent, MathAgent, CodeAgent, ToolAgent)
}


def agent_class_for(env_id: str) -> type[Agent]:
    """The agent class for an env id (by family; :class:`GenericAgent` if unknown)."""
    return AGENTS.get(env_family(env_id), GenericAgent)


def make_agent(
    env_id: str | None = None,
    agent: str | type[Agent] | Agent | None = None,
    **kwargs: Any,
) -> Agent:
    """Build the agent for ``env_id``, or the one ``agent`` names.

    Args:
        env_id: The env id; selects the family's agent when ``agent`` is ``None``.
        agent: Override: an :class:`Agent` instance (returned as is), a subclass, a name
            (``"generic"``, ``"frozenlake"``, ``"math"``, ``"code"``, ``"tool"``) or a
            ``"module:Class"`` path (e.g. the agent a checkpoint was trained with).
        **kwargs: Passed to the agent class (``system_prompt=``, ``think=``).

    Returns:
        A fresh agent (or the given instance).
    """
    if isinstance(agent, Agent):
        return agent
    if isinstance(agent, str) and ":" in agent:
        module, _, name = agent.partition(":")
        try:
            agent = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as e:
            raise InvalidEnvConfig(f"Cannot import agent class {agent!r}: {e}") from e
    if isinstance(agent, str):
        if agent not in _BY_NAME:
            raise InvalidEnvConfig(
                f"Unknown agent {agent!r}; known: {sorted(_BY_NAME)}."
                + did_you_mean(agent, _BY_NAME)
            )
        return _BY_NAME[agent](**kwargs)
    if isinstance(agent, type) and issubclass(agent, Agent):
        return agent(**kwargs)
    if agent is not None:
        raise InvalidEnvConfig(
            f"Expects `agent` to be an Agent, an Agent subclass or a name, actual: {agent!r}."
        )
    cls = agent_class_for(env_id) if env_id else GenericAgent
    return cls(**kwargs)


def tool_schemas(info: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
    """``info["tools"]`` if the env declares tools (OpenAI function-calling format)."""
    tools = info.get("tools")
    return tools if tools else None
