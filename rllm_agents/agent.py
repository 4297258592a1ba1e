"""Agents: turn env observations into chat messages and model replies into env actions.

An :class:`Agent` keeps one conversation. ``reset(observation, info)`` opens it (system prompt,
the first observation as a user turn, tool schemas from ``info["tools"]``), ``act(response)``
records the model's reply and returns the action for ``env.step``, and ``observe(...)`` turns
the env's feedback into the next message(s).

Which agent an env gets is part of the env's identity: its registry row
(:class:`rllm_envs.EnvEntry`) names the agent class as a ``"module:Class"`` path and the
agent's kwargs for the variant, and :func:`make_agent` reads the row (an id the registry does
not know gets :class:`GenericAgent`). A new family names its agent in its row -- one of these
classes, :class:`GenericAgent` with a ``system_prompt`` in ``agent_kwargs``, or a class in the
family's own module -- without touching this package. Observations are self-contained by the
env contract, so family agents differ mostly in their system prompt and in how feedback is
presented (tool results go back as ``tool`` messages).

``<think>`` handling: the whole reply (thinking included) stays in the message history and in
the token ids. The *action* is the answer part of the reply under the one rule of
:mod:`rllm_envs.text` (the env parsers read it the same way): the text after the last
``</think>``; a reply that left a ``<think>`` open (cut at the token limit) has no answer, so
its action is the empty string (the env treats it as an invalid action, never as an error).
Pass ``think="keep"`` to send the raw reply instead.

Decoding per family: each agent carries the ``max_tokens`` a reply of its family needs and its
``stop`` strings (:meth:`Agent.sampling_hints`), sized for small instruct models (a 135M model
needs a few lines of working for arithmetic, one line for a move). Callers that leave the
token limit to the env (the leaderboard's model policies) use them; an explicit limit wins.
Stop strings are only those the family's parser reads without their closing text: the text of
a reply ends *before* its stop string, so ``</action>`` (FrozenLake reads ``<action>Right``)
and ``</tool_call>`` (one call per turn, so the model waits for the tool's result instead of
inventing one) are stops, while ``</answer>`` (Countdown needs it) is not.

Demonstrations: a family agent may show one worked exchange of an *invented* task (user,
assistant and tool messages) between the system prompt and the real task
(:attr:`Agent.default_demonstration`, ``demonstration=`` to replace it, ``None`` to drop it).
A small instruct model copies a format it has seen far more reliably than it follows one
described in words: SmolLM2-135M-Instruct never wrote a parseable tool call, search or verdict
under three system prompts, and does after one shown exchange
(``tests/agents/test_real_model.py``). A demonstration is
part of the prompt (never trained on as a completion) and never one of the env's tasks. The
demonstrations live with the envs (:mod:`rllm_envs.demonstrations`), which pay nothing for a
reply that copies one (0 in every reward component).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import rllm_envs
from rllm_envs import demonstrations
from rllm_envs.error import InvalidEnvConfig, UnknownEnvironment, did_you_mean
from rllm_envs.text import answer_text

__all__ = [
    "Agent",
    "CodeAgent",
    "FrozenLakeAgent",
    "FrozenLakeBoardAgent",
    "GenericAgent",
    "MATH_DEMONSTRATION",
    "MathAgent",
    "SEARCH_DEMONSTRATION",
    "TOOL_DEMONSTRATION",
    "ToolAgent",
    "agent_class_for",
    "agent_names",
    "make_agent",
    "strip_think",
    "tool_schemas",
]

Message = dict[str, Any]
_DEFAULT = object()


def strip_think(text: str) -> str:
    """The answer part of a reply (:func:`rllm_envs.text.answer_text`; ``""`` if unfinished)."""
    return answer_text(text)


class Agent:
    """Base agent: a conversation of chat messages for one episode at a time.

    Subclasses usually only set ``default_system_prompt``; override :meth:`system_prompt_for`
    to choose the prompt from the task (``info``), and :meth:`format_observation` or
    :meth:`observe` to present feedback differently.

    Args:
        system_prompt: The system message (``None`` for none); defaults to the class's
            prompt for the task (:meth:`system_prompt_for`). A prompt given here is used
            as is for every task.
        think: ``"strip"`` (default) sends the answer part of the reply as the action
            (:mod:`rllm_envs.text`); ``"keep"`` sends the whole reply.
        max_tokens: Most tokens per reply for this family (default: the class's
            ``default_max_tokens``; ``None`` leaves it to the caller).
        stop: Stop strings (default: the class's ``default_stop``).
        demonstration: Messages of a worked example shown before the task (default: the
            class's, chosen by :meth:`demonstration_for`; ``None`` or ``()`` for none).
    """

    #: Name used by :func:`make_agent` (``agent="math"``).
    name: ClassVar[str] = "base"
    default_system_prompt: ClassVar[str | None] = None
    #: Most tokens one reply of this family needs (``None``: the caller's limit).
    default_max_tokens: ClassVar[int | None] = None
    #: Stop strings of this family (the parser must read a reply cut before them).
    default_stop: ClassVar[tuple[str, ...]] = ()
    #: A worked exchange of an invented task shown before the real one (see the module doc).
    default_demonstration: ClassVar[tuple[Message, ...]] = ()

    def __init__(
        self,
        *,
        system_prompt: Any = _DEFAULT,
        think: str = "strip",
        max_tokens: Any = _DEFAULT,
        stop: Any = _DEFAULT,
        demonstration: Any = _DEFAULT,
    ) -> None:
        if think not in ("strip", "keep"):
            raise InvalidEnvConfig(f"Expects `think` in ('strip', 'keep'), actual: {think!r}.")
        self.max_tokens: int | None = (
            self.default_max_tokens if max_tokens is _DEFAULT else max_tokens
        )
        if self.max_tokens is not None and (
            not isinstance(self.max_tokens, int) or self.max_tokens < 1
        ):
            raise InvalidEnvConfig(
                f"Expects `max_tokens` to be an int >= 1 or None, actual: {self.max_tokens!r}."
            )
        self.stop: tuple[str, ...] = tuple(self.default_stop if stop is _DEFAULT else stop)
        self._prompt_given = system_prompt is not _DEFAULT
        self.system_prompt: str | None = (
            self.default_system_prompt if system_prompt is _DEFAULT else system_prompt
        )
        self._demonstration_given = demonstration is not _DEFAULT
        self.demonstration: tuple[Message, ...] = (
            _check_demonstration(demonstration)
            if self._demonstration_given
            else self.default_demonstration
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
        prompt = self.system_prompt if self._prompt_given else self.system_prompt_for(info)
        if prompt:
            self.messages.append({"role": "system", "content": prompt})
        shown = self.demonstration if self._demonstration_given else self.demonstration_for(info)
        self.messages.extend(dict(m) for m in shown)
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
        new = [{"role": "user", "content": self.format_observation(observation, info, first=False)}]
        self.messages.extend(new)
        return new

    def system_prompt_for(self, info: Mapping[str, Any]) -> str | None:
        """The system prompt for the task ``info`` describes (the class default here)."""
        return self.system_prompt

    def demonstration_for(self, info: Mapping[str, Any]) -> tuple[Message, ...]:
        """The worked example shown before the task ``info`` describes (the class default)."""
        return self.demonstration

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


_DEMO_ROLES = ("user", "assistant", "tool")


def _check_demonstration(messages: Any) -> tuple[Message, ...]:
    """``messages`` as a tuple of chat messages; raise on anything a chat template cannot take."""
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


#: The math families' worked example (a boxed final answer after one line of working); the
#: envs know it (:mod:`rllm_envs.demonstrations`) and pay nothing for a copy.
MATH_DEMONSTRATION: tuple[Message, ...] = demonstrations.MATH.messages

#: The tool families' worked example: the first call of an invented task with an invented tool.
TOOL_DEMONSTRATION: tuple[Message, ...] = demonstrations.TOOL.messages

#: The search family's worked example: the first search of a question on an invented person.
SEARCH_DEMONSTRATION: tuple[Message, ...] = demonstrations.SEARCH.messages


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
    default_max_tokens = 64
    default_stop = ("</action>",)


class FrozenLakeBoardAgent(FrozenLakeAgent):
    """FrozenLake with compact feedback: ``"You moved Right."`` and the board rows with ``P``.

    The rllm-envs observations are self-contained prose, which is what a pretrained model
    needs but costs a tiny from-scratch model (a 787-token BPE) about 180 tokens per turn: a
    16-turn episode is then a 3.8k-token sequence, and attention over it dominates a CPU
    training step. This agent shows a one-line rule and the bare board on the first turn and
    the outcome plus the board on later turns (about 25 tokens each), built from the env's
    documented ``info`` keys. The env, its rewards and its action parser are unchanged.
    Select it with ``agent="frozenlake-board"`` or
    ``rollout.agent: rllm_agents.agent:FrozenLakeBoardAgent`` in a trainer config.

    Args:
        full_first: Show the env's whole first observation instead of the one-line rule.
        **kwargs: As for every agent (``system_prompt``, ``think``).
    """

    name = "frozenlake-board"
    #: The first turn's rule line (the board follows).
    rule = "Reach G, avoid H. Reply Left, Down, Right or Up."

    def __init__(self, *, full_first: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.full_first = full_first

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
        return "\n".join([head, *board])


class MathAgent(Agent):
    r"""``rllm/Math``: step-by-step reasoning with the final answer in one ``\boxed{}``."""

    name = "math"
    default_system_prompt = (
        "Solve the problem step by step. Keep the working short. At the end, put the final "
        "answer, and nothing else, in a single \\boxed{}."
    )
    default_max_tokens = 384
    # Shown, not described: SmolLM2-135M boxed none of 200 held-out arithmetic answers without
    # it and 79% with it (benchmarks/results/real_model_rl.json). Its numbers above 10 put it
    # outside every procedural task.
    default_demonstration = MATH_DEMONSTRATION


_LANGUAGES = {"python": ("Python 3", "python"), "cpp": ("C++17", "cpp")}


class CodeAgent(Agent):
    """``rllm/Code``: the code the task asks for in one fenced block; test feedback as user turns.

    The system prompt follows the task's kind and language, so it never contradicts the task
    text: ``info["kind"]`` ``"stdin"`` asks for a complete program reading standard input and
    writing standard output; ``"functional"`` for the named function or class that *returns*
    the answer (no printing, no reading input); ``"assert"`` for the code hidden tests call.
    The language is ``info["language"]`` when the env reports it, else ``language`` (the
    registry sets ``"cpp"`` for ``rllm/CodeCpp-v0``).

    Args:
        language: ``"python"`` (default) or ``"cpp"``.
        **kwargs: As for every agent (``system_prompt``, ``think``).
    """

    name = "code"
    default_max_tokens = 512
    default_system_prompt = (
        "You are a competitive programmer. Write the code the task asks for, in the form it "
        "asks for, in one fenced code block."
    )

    def __init__(self, *, language: str = "python", **kwargs: Any) -> None:
        if language not in _LANGUAGES:
            raise InvalidEnvConfig(
                f"Expects `language` in {sorted(_LANGUAGES)}, actual: {language!r}."
            )
        super().__init__(**kwargs)
        self.language = language

    def system_prompt_for(self, info: Mapping[str, Any]) -> str | None:
        """The prompt for the task's kind (``info["kind"]``) and language."""
        language = info.get("language") or self.language
        label, fence = _LANGUAGES.get(str(language), _LANGUAGES["python"])
        head = "You are a competitive programmer. "
        kind = info.get("kind")
        if kind == "stdin":
            return head + (
                f"Reply with one complete {label} program in a ```{fence} code block. The "
                "program reads the input from standard input and writes the answer to "
                "standard output."
            )
        if kind == "functional":
            return head + (
                f"Reply with the {label} function or class the task names, complete with any "
                f"imports, in a ```{fence} code block. It returns the answer: it does not "
                "print it and does not read input."
            )
        if kind == "assert":
            return head + (
                f"Reply with the {label} code the task asks for in a ```{fence} code block; "
                "hidden tests will call it."
            )
        return self.system_prompt


class ToolAgent(Agent):
    """Tool envs (``rllm/ToolUse``, ``rllm/Search``): schemas from ``info["tools"]``.

    The schemas reach the chat template's ``tools=`` argument (see
    :class:`rllm_agents.chat.ChatTokenizer`). Feedback on a reply in which the env read tool
    calls (``info["tool_calls"]``, what the env parsed, not a guess from the text) goes back
    as a ``tool`` message; other feedback as a user message.
    """

    name = "tool"
    default_system_prompt = (
        'You can call tools. To call one, write <tool_call>{"name": ..., "arguments": '
        "{...}}</tool_call> and wait for its result. Give your final answer in the format the "
        "task asks for."
    )
    default_max_tokens = 192
    default_stop = ("</tool_call>",)

    def demonstration_for(self, info: Mapping[str, Any]) -> tuple[Message, ...]:
        """A search exchange when the env offers ``search``, else a function-call exchange.

        Both are invented tasks with invented tools or passages, so a copied call earns
        nothing (an unknown tool or a wrong answer).
        """
        names = {
            str((t.get("function") or t).get("name"))
            for t in info.get("tools") or ()
            if isinstance(t, Mapping)
        }
        return SEARCH_DEMONSTRATION if "search" in names else TOOL_DEMONSTRATION

    def observe(
        self,
        observation: str,
        reward: float,
        terminated: bool,
        truncated: bool,
        info: Mapping[str, Any],
    ) -> list[Message]:
        """Results of the calls the env read go back as ``tool`` messages."""
        called = isinstance(info, Mapping) and bool(info.get("tool_calls"))
        role = "tool" if called else "user"
        new = [{"role": role, "content": self.format_observation(observation, info, first=False)}]
        self.messages.extend(new)
        return new


_BUILTIN: tuple[type[Agent], ...] = (
    GenericAgent,
    FrozenLakeAgent,
    FrozenLakeBoardAgent,
    MathAgent,
    CodeAgent,
    ToolAgent,
)


def _registry_row(env_id: str) -> rllm_envs.EnvEntry | None:
    try:
        return rllm_envs.env_entry(env_id)
    except UnknownEnvironment:
        return None


def _resolve_agent(path: str) -> type[Agent]:
    cls = rllm_envs.resolve(path)
    if not (isinstance(cls, type) and issubclass(cls, Agent)):
        raise InvalidEnvConfig(f"Expects {path!r} to name an Agent subclass, actual: {cls!r}.")
    return cls


def agent_names() -> dict[str, type[Agent]]:
    """``{name: class}`` of the agents :func:`make_agent` knows by name (built-in + registry)."""
    names = {cls.name: cls for cls in _BUILTIN}
    for row in (*rllm_envs.ENVS, *rllm_envs.MULTIAGENT_ENVS):
        cls = _resolve_agent(row.agent)
        names.setdefault(cls.name, cls)
    return names


def agent_class_for(env_id: str) -> type[Agent]:
    """The agent class the registry names for ``env_id`` (:class:`GenericAgent` if unknown)."""
    row = _registry_row(env_id)
    return _resolve_agent(row.agent) if row is not None else GenericAgent


def make_agent(
    env_id: str | None = None,
    agent: str | type[Agent] | Agent | None = None,
    **kwargs: Any,
) -> Agent:
    """Build the agent for ``env_id`` (its registry row), or the one ``agent`` names.

    Args:
        env_id: The env id; its registry row names the agent class and its kwargs when
            ``agent`` is ``None``. Ids outside the registry get :class:`GenericAgent`.
        agent: Override: an :class:`Agent` instance (returned as is), a subclass, a name
            (:func:`agent_names`: ``"generic"``, ``"math"``, ``"code"``, ``"tool"``, ...) or a
            ``"module:Class"`` path (e.g. the agent a checkpoint was trained with). The
            row's ``agent_kwargs`` still apply when the override is the row's class or a
            subclass of it.
        **kwargs: Passed to the agent class (``system_prompt=``, ``think=``); they win over
            the row's ``agent_kwargs``.

    Returns:
        A fresh agent (or the given instance).
    """
    if isinstance(agent, Agent):
        return agent
    row = _registry_row(env_id) if env_id else None
    default = _resolve_agent(row.agent) if row is not None else GenericAgent
    cls: type[Agent]
    if agent is None:
        cls = default
    elif isinstance(agent, str) and ":" in agent:
        cls = _resolve_agent(agent)
    elif isinstance(agent, str):
        names = agent_names()
        if agent not in names:
            raise InvalidEnvConfig(
                f"Unknown agent {agent!r}; known: {sorted(names)}." + did_you_mean(agent, names)
            )
        cls = names[agent]
    elif isinstance(agent, type) and issubclass(agent, Agent):
        cls = agent
    else:
        raise InvalidEnvConfig(
            f"Expects `agent` to be an Agent, an Agent subclass or a name, actual: {agent!r}."
        )
    row_kwargs = copy.deepcopy(row.agent_kwargs) if row is not None else {}
    if not issubclass(cls, default):
        row_kwargs = {}
    return cls(**{**row_kwargs, **kwargs})


def tool_schemas(info: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
    """``info["tools"]`` if the env declares tools (OpenAI function-calling format)."""
    tools = info.get("tools")
    return tools if tools else None
