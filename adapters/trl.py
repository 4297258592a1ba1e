"""TRL adapter: rllm-envs as reward functions, datasets and tool environments for ``GRPOTrainer``.

Three pieces in TRL's published interfaces (``trl>=1.16``, ``pip install "rllm-envs[trl]"``):

* :class:`EnvReward` -- a reward function ``f(prompts, completions, **columns) ->
  list[float | None]`` that scores each completion by stepping a fresh episode of a
  single-turn env (``rllm/Math-v0``, ``rllm/Code-v0``) on the row's task.
* :func:`env_dataset` -- a ``datasets.Dataset`` of an env's tasks: a ``prompt`` column (chat
  messages from the env family's agent, or the plain observation) plus ``env_id``,
  ``task_index``, ``seed`` and ``task_id`` columns that the reward function and the
  environment class read back.
* :func:`environment_class` -- an ``environment_factory`` class for multi-turn tool envs
  (``rllm/ToolUse-v0``, ``rllm/Search-v0``): one typed, documented method per tool (from the
  env's ``info["tools"]`` schemas), ``reset(**row) -> str`` returning the first observation,
  and ``get_reward() -> float`` returning the env's reward for the episode.

::

    from trl import GRPOConfig, GRPOTrainer
    from adapters.trl import EnvReward, env_dataset, environment_class

    # single-turn: the env is the reward
    dataset = env_dataset("rllm/Math-v0", num_tasks=256)
    trainer = GRPOTrainer(model, reward_funcs=EnvReward("rllm/Math-v0"), train_dataset=dataset,
                          args=GRPOConfig(...))

    # multi-turn tools: the env is the environment
    ToolUse = environment_class("rllm/ToolUse-v0", env_kwargs={"python": False})
    dataset = env_dataset("rllm/ToolUse-v0", num_tasks=256, include_observation=False)
    trainer = GRPOTrainer(model, environment_factory=ToolUse, train_dataset=dataset,
                          args=GRPOConfig(...))
"""

from __future__ import annotations

import inspect
import json
import keyword
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium as gym

from rllm_envs.error import InvalidEnvConfig, require

__all__ = ["EnvReward", "EnvToolEnvironment", "env_dataset", "environment_class"]


def _make_env(env_id: str, env_kwargs: Mapping[str, Any] | None) -> gym.Env:
    import rllm_envs  # noqa: F401  (registers the ids)

    return gym.make(env_id, **dict(env_kwargs or {})).unwrapped


def _completion_text(completion: Any) -> str:
    """The text of a TRL completion: a string, or the assistant messages' content."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        parts = []
        for message in completion:
            if isinstance(message, Mapping) and message.get("role", "assistant") == "assistant":
                content = message.get("content")
                if isinstance(content, str):
                    parts.append(content)
                elif isinstance(content, Sequence):
                    parts.extend(str(c.get("text", "")) for c in content if isinstance(c, Mapping))
        return "".join(parts)
    return str(completion)


def _column(columns: Mapping[str, Any], name: str, i: int) -> Any:
    values = columns.get(name)
    if values is None:
        return None
    try:
        return values[i]
    except (IndexError, TypeError):
        return None


class EnvReward:
    """A TRL reward function backed by a single-turn rllm-envs environment.

    For completion ``i`` it resets the env on the row's task (columns ``task_index`` and
    ``seed`` from :func:`env_dataset`, or a ``task`` record column), steps it once with the
    completion's text and returns the reward. Rows without a task (or of another env, by the
    ``env_id`` column) get ``None``, which TRL skips for that sample.

    Args:
        env_id: A registered single-turn env id (e.g. ``"rllm/Math-v0"``).
        env_kwargs: Env constructor kwargs (must match the dataset's).
        name: The name TRL logs the reward under (default: from the env id).
        component: Return this reward component instead of the weighted reward (e.g.
            ``"correct"``).
    """

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        name: str | None = None,
        component: str | None = None,
    ) -> None:
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self.component = component
        self.__name__ = name or env_id.split("/")[-1].replace("-", "_").lower() + "_reward"
        self._env: gym.Env | None = None

    @property
    def env(self) -> gym.Env:
        """The env used for scoring (made on first use)."""
        if self._env is None:
            self._env = _make_env(self.env_id, self.env_kwargs)
        return self._env

    def score(
        self,
        completion: Any,
        *,
        task_index: int | None = None,
        seed: int | None = None,
        task: Mapping[str, Any] | None = None,
    ) -> float:
        """Reward of one completion on one task (the first step of a fresh episode)."""
        options: dict[str, Any] = (
            {"task": dict(task)}
            if task is not None
            else {"index": int(task_index) if task_index is not None else 0}
        )
        self.env.reset(seed=None if seed is None else int(seed), options=options)
        _, reward, _, _, info = self.env.step(_completion_text(completion))
        if self.component is not None:
            return float(info["reward_components"].get(self.component, 0.0))
        return float(reward)

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float | None]:
        """Score each completion on its row's task (TRL's reward-function interface)."""
        rewards: list[float | None] = []
        for i, completion in enumerate(completions):
            env_id = _column(columns, "env_id", i)
            task = _column(columns, "task", i)
            task_index = _column(columns, "task_index", i)
            if (env_id is not None and env_id != self.env_id) or (
                task is None and task_index is None
            ):
                rewards.append(None)
                continue
            rewards.append(
                self.score(
                    completion,
                    task_index=task_index,
                    seed=_column(columns, "seed", i),
                    task=json.loads(task) if isinstance(task, str) else task,
                )
            )
        return rewards

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_env"] = None  # rebuilt in the receiving process
        return state


def env_dataset(
    env_id: str,
    *,
    num_tasks: int,
    env_kwargs: Mapping[str, Any] | None = None,
    start: int = 0,
    seed: int = 0,
    conversational: bool = True,
    agent: Any = None,
    include_observation: bool = True,
) -> Any:
    """A ``datasets.Dataset`` of ``num_tasks`` tasks of an env, for TRL trainers.

    Row ``k`` is task index ``start + k`` (modulo the source size), reset with seed
    ``seed + k``. Columns: ``prompt``, ``env_id``, ``task_index``, ``seed``, ``task_id``.

    Args:
        env_id: The env id.
        num_tasks: Rows.
        env_kwargs: Env constructor kwargs.
        start: First task index.
        seed: Base reset seed.
        conversational: ``prompt`` as chat messages (the family agent's system prompt and the
            first observation as the user turn) instead of the plain observation text.
        agent: Agent override for the messages (name, class or instance; see
            :func:`rllm_agents.make_agent`).
        include_observation: Put the first observation in the prompt. Pass ``False`` with
            :func:`environment_class`, whose ``reset`` returns the observation and TRL
            appends it to the last user message.

    Returns:
        The dataset.
    """
    datasets = require("datasets", "trl", feature="env_dataset")
    from rllm_agents.agent import make_agent

    if num_tasks < 1:
        raise InvalidEnvConfig(f"Expects `num_tasks` >= 1, actual: {num_tasks!r}.")
    env = _make_env(env_id, env_kwargs)
    size = len(env.tasks) if hasattr(env, "tasks") else None
    rows: dict[str, list[Any]] = {
        k: [] for k in ("prompt", "env_id", "task_index", "seed", "task_id")
    }
    for k in range(num_tasks):
        index = start + k if not size else (start + k) % size
        observation, info = env.reset(seed=seed + k, options={"index": index})
        text = observation if include_observation else ""
        if conversational:
            messages = make_agent(env_id, agent).reset(text, info)
            prompt: Any = [{"role": m["role"], "content": m["content"]} for m in messages]
        else:
            prompt = text
        rows["prompt"].append(prompt)
        rows["env_id"].append(env_id)
        rows["task_index"].append(index)
        rows["seed"].append(seed + k)
        rows["task_id"].append(str(info.get("task_id")))
    env.close()
    return datasets.Dataset.from_dict(rows)


# --------------------------------------------------------------------- tool environments

_JSON_TYPES: dict[str, Any] = {
    "string": str,
    "number": float,
    "integer": int,
    "boolean": bool,
    "array": list,
    "object": dict,
}


def _python_type(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type", "string")
    if isinstance(kind, list):
        types = [_JSON_TYPES.get(k, str) for k in kind if k != "null"]
        out = types[0]
        for t in types[1:]:
            out = out | t
        return out
    return _JSON_TYPES.get(kind, str)


class EnvToolEnvironment:
    """Base of the classes :func:`environment_class` builds (one env episode per instance).

    TRL calls ``reset(**row)`` before each rollout, the tool methods when the model calls
    tools, and ``get_reward()`` at the end. Each tool call is sent to the env as a
    ``<tool_call>{...}</tool_call>`` action; the env's observation (the tool's result, or an
    error the model can read) is the method's return value.
    """

    env_id: str = ""
    env_kwargs: dict[str, Any] = {}
    #: Tool schemas (OpenAI format) the class exposes.
    tool_schemas: list[dict[str, Any]] = []

    def __init__(self) -> None:
        self._env = _make_env(self.env_id, self.env_kwargs)
        self.total_reward = 0.0
        self.done = True
        self.turns = 0
        self.last_info: dict[str, Any] = {}

    def reset(self, **row: Any) -> str | None:
        """Start an episode on the row's task (``task_index``/``seed`` columns); return its text."""
        index = row.get("task_index")
        seed = row.get("seed")
        options = {"index": int(index)} if index is not None else None
        observation, info = self._env.reset(
            seed=None if seed is None else int(seed), options=options
        )
        self.total_reward, self.done, self.turns, self.last_info = 0.0, False, 0, dict(info)
        return str(observation)

    def _call_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if self.done:
            return "The episode has ended; no more tool calls are accepted."
        action = "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"
        observation, reward, terminated, truncated, info = self._env.step(action)
        self.turns += 1
        self.total_reward += float(reward)
        self.done = bool(terminated or truncated)
        self.last_info = dict(info)
        return str(observation)

    def get_reward(self) -> float:
        """The env's total reward for the episode so far."""
        return self.total_reward


def _tool_method(schema: Mapping[str, Any]) -> Callable[..., str]:
    function = schema.get("function", schema)
    name = str(function["name"])
    params = function.get("parameters") or {}
    properties: Mapping[str, Any] = params.get("properties") or {}
    required = set(params.get("required") or [])
    for arg in properties:
        if not arg.isidentifier() or keyword.iskeyword(arg):
            raise InvalidEnvConfig(f"Tool {name!r} has an argument {arg!r} that is not a name.")

    def method(self: EnvToolEnvironment, **kwargs: Any) -> str:
        return self._call_tool(name, {k: v for k, v in kwargs.items() if v is not None})

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    ordered = sorted(properties, key=lambda a: a not in required)
    for arg in ordered:
        kind = _python_type(properties[arg])
        if arg not in required:
            kind = kind | None
        annotations[arg] = kind
        parameters.append(
            inspect.Parameter(
                arg,
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                annotation=kind,
                default=inspect.Parameter.empty if arg in required else None,
            )
        )
    annotations["return"] = str
    args_doc = "\n".join(
        f"    {arg}: {str(properties[arg].get('description') or arg).strip()}" for arg in ordered
    )
    description = str(function.get("description") or name).strip()
    doc = f"{description}\n\n"
    if args_doc:
        doc += f"Args:\n{args_doc}\n\n"
    doc += "Returns:\n    The tool's result, or an error message to read and correct."
    method.__name__ = method.__qualname__ = name
    method.__doc__ = doc
    method.__annotations__ = annotations
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    return method


def environment_class(
    env_id: str,
    env_kwargs: Mapping[str, Any] | None = None,
    *,
    probe_tasks: int = 64,
    tools: Sequence[Mapping[str, Any]] | None = None,
) -> type[EnvToolEnvironment]:
    """Build an ``environment_factory`` class for a multi-turn tool env.

    TRL reads the tools from the class's public methods (names, type hints, docstrings), so
    the class gets one method per tool the env can offer: the union of ``info["tools"]`` over
    the first ``probe_tasks`` tasks (or the given ``tools`` schemas). A tool an episode does
    not offer returns the env's error message when called.

    Args:
        env_id: The env id (its ``info["tools"]`` holds OpenAI-format schemas).
        env_kwargs: Env constructor kwargs.
        probe_tasks: Tasks reset to collect the tool schemas.
        tools: Explicit schemas instead of probing.

    Returns:
        A subclass of :class:`EnvToolEnvironment`; pass it as ``environment_factory``.
    """
    env_kwargs = dict(env_kwargs or {})
    if tools is None:
        env = _make_env(env_id, env_kwargs)
        found: dict[str, dict[str, Any]] = {}
        size = len(env.tasks) if hasattr(env, "tasks") else probe_tasks
        for index in range(min(probe_tasks, size)):
            _, info = env.reset(seed=index, options={"index": index})
            for schema in info.get("tools") or []:
                function = schema.get("function", schema)
                found.setdefault(str(function["name"]), dict(schema))
        env.close()
        tools = list(found.values())
    if not tools:
        raise InvalidEnvConfig(
            f"{env_id} declares no tools in info['tools']; use EnvReward for single-turn envs."
        )
    reserved = {"reset", "get_reward"}
    namespace: dict[str, Any] = {
        "env_id": env_id,
        "env_kwargs": env_kwargs,
        "tool_schemas": [dict(t) for t in tools],
        "__doc__": f"TRL environment for ``{env_id}`` (tools: "
        + ", ".join(str(t.get("function", t)["name"]) for t in tools)
        + ").",
        "__module__": __name__,
    }
    for schema in tools:
        method = _tool_method(schema)
        if method.__name__ in reserved or method.__name__.startswith("_"):
            raise InvalidEnvConfig(f"Tool name {method.__name__!r} clashes with TRL's protocol.")
        namespace[method.__name__] = method
    class_name = "".join(ch for ch in env_id.split("/")[-1].title() if ch.isalnum()) + "Environment"
    return type(class_name, (EnvToolEnvironment,), namespace)
