"""The agent-facing spec of an env family, as plain data.

An env's first observation is self-contained (a model with no chat template can solve it);
what a *chat* agent adds -- a system prompt, one worked exchange of an invented task, the
token limit a reply needs and the stop strings its parser reads -- is the family's knowledge
too, so it lives in the family's folder (``rllm_envs/<family>/spec.py``) and its registry row
points at it (:attr:`rllm_envs.EnvEntry.spec`). The agent layer reads it
(:func:`rllm_agents.make_agent`); nothing in ``rllm_agents`` is per family.

Prompts and demonstrations may depend on the task: ``select`` names the ``info`` key(s) (for
example ``("language", "kind")`` for code tasks or ``"role"`` for multi-agent envs) whose
value(s), joined by ``/``, pick an entry of ``system_prompts`` / ``demonstrations``; other
values get the defaults. No Gymnasium import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rllm_envs.error import InvalidEnvConfig

__all__ = ["AgentSpec", "Message", "check_demonstration"]

Message = dict[str, Any]

_DEMO_ROLES = ("user", "assistant", "tool")
#: Turn logics the agent layer provides (:func:`rllm_agents.agent_names`).
TURNS = ("generic", "tool", "frozenlake-board")


def check_demonstration(messages: Any) -> tuple[Message, ...]:
    """``messages`` as a tuple of chat messages; raise on anything a chat template cannot take.

    Raises:
        InvalidEnvConfig: Not a sequence of ``{"role", "content"}`` messages ending with the
            assistant's reply.
    """
    if messages is None:
        return ()
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise InvalidEnvConfig(
            "Expects `demonstration` to be a list of {'role', 'content'} messages or None, "
            f"actual: {messages!r}."
        )
    out = []
    for m in messages:
        if (
            not isinstance(m, Mapping)
            or m.get("role") not in _DEMO_ROLES
            or not isinstance(m.get("content"), str)
        ):
            raise InvalidEnvConfig(
                f"Expects each demonstration message to have a role in {_DEMO_ROLES} and a "
                f"string content, actual: {m!r}."
            )
        out.append({"role": m["role"], "content": m["content"]})
    if out and out[-1]["role"] != "assistant":
        raise InvalidEnvConfig(
            "Expects a demonstration to end with the assistant's reply (the real task follows "
            f"as the next user turn), actual last role: {out[-1]['role']!r}."
        )
    return tuple(out)


@dataclass(frozen=True)
class AgentSpec:
    """How a chat agent plays one env family.

    Attributes:
        turns: The turn logic: ``"generic"`` (feedback as user turns), ``"tool"`` (results of
            the calls the env read go back as ``tool`` messages and ``info["tools"]`` reaches
            the chat template) or ``"frozenlake-board"`` (compact board feedback).
        system_prompt: The default system message (``None`` for none).
        demonstration: One worked exchange of an invented task shown before the real one
            (the envs pay nothing for a copy: :mod:`rllm_envs.demonstrations`).
        max_tokens: Most tokens one reply of the family needs (``None``: the caller's).
        stop: Stop strings; the family's parser must read a reply cut before them.
        select: The ``info`` key, or keys, whose values (joined by ``/``) pick from
            ``system_prompts`` and ``demonstrations`` (``None``: always the defaults).
        system_prompts: ``{selected value: prompt}``.
        demonstrations: ``{selected value: demonstration}``.
    """

    turns: str = "generic"
    system_prompt: str | None = None
    demonstration: tuple[Message, ...] = ()
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    select: str | tuple[str, ...] | None = None
    system_prompts: Mapping[str, str] = field(default_factory=dict)
    demonstrations: Mapping[str, tuple[Message, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.turns not in TURNS:
            raise InvalidEnvConfig(f"Expects `turns` in {TURNS}, actual: {self.turns!r}.")
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise InvalidEnvConfig(
                f"Expects `max_tokens` to be an int >= 1 or None, actual: {self.max_tokens!r}."
            )
        object.__setattr__(self, "stop", tuple(self.stop))
        object.__setattr__(self, "demonstration", check_demonstration(self.demonstration))
        object.__setattr__(
            self,
            "demonstrations",
            {key: check_demonstration(demo) for key, demo in self.demonstrations.items()},
        )

    def _key(self, info: Mapping[str, Any]) -> str | None:
        if self.select is None:
            return None
        keys = (self.select,) if isinstance(self.select, str) else self.select
        return "/".join(str(info.get(key)) for key in keys)

    def system_prompt_for(self, info: Mapping[str, Any]) -> str | None:
        """The system prompt for the task ``info`` describes."""
        key = self._key(info)
        return (
            self.system_prompt if key is None else self.system_prompts.get(key, self.system_prompt)
        )

    def demonstration_for(self, info: Mapping[str, Any]) -> tuple[Message, ...]:
        """The worked exchange shown before the task ``info`` describes."""
        key = self._key(info)
        return (
            self.demonstration if key is None else self.demonstrations.get(key, self.demonstration)
        )
