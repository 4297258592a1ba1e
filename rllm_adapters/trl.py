"""TRL adapter: rllm-envs as reward functions, datasets and tool environments for ``GRPOTrainer``.

Three pieces in TRL's published interfaces (``trl>=1.16``, ``pip install "rllm-envs[trl]"``):

* :class:`EnvReward` -- a reward function ``f(prompts, completions, **columns) ->
  list[float | None]`` that scores each completion by stepping a fresh episode of a
  single-turn env (``rllm/Math-v1``, ``rllm/Code-v0``) on the row's task.
* :func:`env_dataset` -- a ``datasets.Dataset`` of an env's tasks: a ``prompt`` column (chat
  messages from the env family's agent, or the plain observation) plus ``env_id``,
  ``task_index``, ``seed`` and ``task_id`` columns that the reward function and the
  environment class read back.
* :func:`environment_class` -- an ``environment_factory`` class for multi-turn tool envs
  (``rllm/ToolUse-v1``, ``rllm/Search-v1``): one typed, documented method per tool (from the
  env's ``info["tools"]`` schemas), ``reset(**row) -> str`` returning the first observation,
  and ``get_reward() -> float`` returning the env's reward for the episode.

::

    from trl import GRPOConfig, GRPOTrainer
    from rllm_adapters.trl import EnvReward, env_dataset, environment_class

    # single-turn: the env is the reward
    dataset = env_dataset("rllm/Math-v1", num_tasks=256)
    trainer = GRPOTrainer(model, reward_funcs=EnvReward("rllm/Math-v1"), train_dataset=dataset,
                          args=GRPOConfig(...))

    # multi-turn tools: the env is the environment
    ToolUse = environment_class("rllm/ToolUse-v1", env_kwargs={"python": False})
    dataset = env_dataset("rllm/ToolUse-v1", num_tasks=256, include_observation=False)
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

from rllm_adapters.env_workers import reset_env
from rllm_adapters.error import AdapterConfigError
from rllm_envs.error import require

__all__ = [
    "EnvReward",
    "EnvRollout",
    "EpisodeReturn",
    "EnvToolEnvironment",
    "env_dataset",
    "environment_class",
    "one_seat_env",
    "one_seat_ids",
]


def one_seat_ids() -> dict[str, str]:
    """Every id one policy can play, with its description.

    The single-agent ids, then the multi-agent ids with one model seat (the registry row
    scripts the others, e.g. ``rllm/TicTacToe-v0``). Ids whose every seat is the model's
    (``rllm/SolverJudge-v1``, ``rllm/Debate-v1``) are not among them.
    """
    import rllm_envs

    ids = dict(rllm_envs.list_envs())
    for env_id, description in rllm_envs.list_multiagent_envs().items():
        env = rllm_envs.make_parallel(env_id)
        seats = set(env.possible_agents) - set(rllm_envs.env_entry(env_id).opponents)
        env.close()
        if len(seats) == 1:
            ids[env_id] = description
    return ids


def one_seat_env(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> Any:
    """The env of an id through :func:`rllm_envs.make`, or a multi-agent id's :class:`SeatEnv`.

    Raises:
        AdapterConfigError: For a multi-agent id with several model seats.
    """
    import rllm_envs

    if env_id in rllm_envs.list_multiagent_envs():
        return SeatEnv(env_id, env_kwargs)
    return rllm_envs.make(env_id, **dict(env_kwargs or {}))


def _make_env(env_id: str, env_kwargs: Mapping[str, Any] | None) -> Any:
    import rllm_envs

    if env_id in rllm_envs.list_multiagent_envs():
        return SeatEnv(env_id, env_kwargs)
    return gym.make(env_id, **dict(env_kwargs or {})).unwrapped


class SeatEnv:
    """A multi-agent env seen from its one model seat, the registry's scripted opponents playing.

    For ids whose registry row names scripted opponents for every seat but one
    (``rllm/TicTacToe-v0``: ``{"player_1": "heuristic"}``): ``reset``/``step`` are the
    single-agent API of that seat; each step also plays the opponents (and only them while the
    seat waits), and the reward is the seat's. Opponents draw from the reset seed.

    Raises:
        AdapterConfigError: For an id with more or fewer than one model seat.
    """

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> None:
        import numpy as np

        import rllm_envs

        self.env = rllm_envs.make_parallel(env_id, **dict(env_kwargs or {}))
        self.opponents = dict(rllm_envs.env_entry(env_id).opponents)
        seats = [a for a in self.env.possible_agents if a not in self.opponents]
        if len(seats) != 1:
            raise AdapterConfigError(
                f"{env_id} has {len(seats)} model seats ({seats}); this adapter plays one "
                "policy against the registry's scripted opponents, so it takes multi-agent ids "
                "with one model seat. Train this id with rllm_adapters.multiagent_play."
            )
        self.seat = seats[0]
        self.tasks = self.env.tasks
        self.max_turns = 2**31 - 1  # the game ends the episode
        self._rng = np.random.default_rng(0)
        self._infos: dict[str, Any] = {}
        self._last_obs = ""

    def _opponent_actions(self) -> dict[str, str]:
        return {
            a: self.env.scripted_action(kind, a, self._rng)
            for a, kind in self.opponents.items()
            if a in self.env.agents and self._infos.get(a, {}).get("acting")
        }

    def _wait(self, reward: float) -> tuple[str, float, bool, bool, dict[str, Any]]:
        observation = ""
        while True:
            if self.seat not in self.env.agents:
                return observation, reward, True, False, dict(self._infos.get(self.seat, {}))
            if self._infos[self.seat].get("acting"):
                return self._last_obs, reward, False, False, dict(self._infos[self.seat])
            obs, rewards, _, _, self._infos = self.env.step(self._opponent_actions())
            reward += float(rewards.get(self.seat, 0.0))
            self._last_obs = obs.get(self.seat, "")

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a game; return the seat's first observation (after the opponents' moves)."""
        import numpy as np

        obs, self._infos = self.env.reset(seed=seed, options=options)
        self._rng = np.random.default_rng(None if seed is None else seed + 1)
        self._last_obs = obs[self.seat]
        observation, _, _, _, info = self._wait(0.0)
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """The seat's move and the opponents' replies; the seat's reward for them."""
        actions = {self.seat: action, **self._opponent_actions()}
        obs, rewards, terminations, truncations, self._infos = self.env.step(actions)
        self._last_obs = obs.get(self.seat, "")
        reward = float(rewards.get(self.seat, 0.0))
        if terminations.get(self.seat) or truncations.get(self.seat):
            truncated = bool(truncations.get(self.seat)) and not terminations.get(self.seat)
            info = dict(self._infos.get(self.seat, {}))
            return self._last_obs, reward, not truncated, truncated, info
        return self._wait(reward)

    @property
    def unwrapped(self) -> SeatEnv:
        """Itself (Gymnasium's accessor, for code that unwraps envs)."""
        return self

    def oracle_action(self) -> str:
        """The env's oracle move for the seat."""
        return str(self.env.oracle_action(self.seat))

    def close(self) -> None:
        """Close the multi-agent env."""
        self.env.close()


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
        env_id: A registered single-turn env id (e.g. ``"rllm/Math-v1"``).
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
        if int(getattr(self.env.unwrapped, "max_turns", 1)) > 1:
            raise AdapterConfigError(
                f"{env_id} (with {self.env_kwargs or 'its default kwargs'}) is multi-turn: a "
                "reward function sees one completion, so it would score only the first turn. "
                f'Pass `rollout_func=EnvRollout("{env_id}", dataset)` and '
                "`reward_funcs=rollout.reward` to GRPOTrainer (or `environment_class` for "
                "tool envs)."
            )

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
        raise AdapterConfigError(f"Expects `num_tasks` >= 1, actual: {num_tasks!r}.")
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
            raise AdapterConfigError(f"Tool {name!r} has an argument {arg!r} that is not a name.")

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
        raise AdapterConfigError(
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
            raise AdapterConfigError(f"Tool name {method.__name__!r} clashes with TRL's protocol.")
        namespace[method.__name__] = method
    class_name = "".join(ch for ch in env_id.split("/")[-1].title() if ch.isalnum()) + "Environment"
    return type(class_name, (EnvToolEnvironment,), namespace)


# ------------------------------------------------------------------ multi-turn rollouts


class EpisodeReturn:
    """A TRL reward function returning the ``env_return`` field an :class:`EnvRollout` wrote."""

    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __call__(
        self, prompts: Sequence[Any], completions: Sequence[Any], **columns: Any
    ) -> list[float]:
        """The episode returns of the batch (TRL's reward-function interface)."""
        if "env_return" not in columns:
            raise AdapterConfigError(
                "No `env_return` column: pass the EnvRollout as GRPOTrainer's `rollout_func`."
            )
        return [float(r) for r in columns["env_return"]]


class EnvRollout:
    """A TRL ``rollout_func`` playing whole episodes of any env with the trainer's model.

    ``GRPOTrainer(..., rollout_func=rollout, reward_funcs=rollout.reward)`` trains on
    multi-turn envs without tools (FrozenLake, CodeMultiTurn, Search with text tool calls,
    any id): for each prompt of the batch the episode of its dataset row is played turn by
    turn, the model's replies stepped through the env and the family agent's feedback
    appended as the next user turn. Token-exact: ``completion_ids`` are the sampled tokens of
    every turn with the feedback tokens between them (``env_mask`` 0 on feedback, so only
    the model's tokens are trained); ``logprobs`` are the sampling logprobs. The episode
    return goes to :meth:`reward` through the ``env_return`` field.

    Generation uses the trainer's model with ``generate`` (the CPU/transformers path;
    ``use_vllm`` is refused). ``max_completion_length`` bounds each reply; the episode ends
    when the env does or after ``max_turns`` replies.

    Args:
        env_id: A registered id.
        dataset: The :func:`env_dataset` rows the trainer trains on (maps each prompt back to
            its ``task_index`` and ``seed``).
        env_kwargs: Env constructor kwargs (as for the dataset).
        max_turns: Most replies per episode (default: the env's own limit).
    """

    def __init__(
        self,
        env_id: str,
        dataset: Any,
        *,
        env_kwargs: Mapping[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> None:
        from rllm_agents.agent import make_agent

        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        probe = _make_env(env_id, self.env_kwargs)
        limit: Any = max_turns or getattr(probe, "max_turns", 1)
        self.max_turns = int(limit)
        probe.close()
        if self.max_turns < 1:
            raise AdapterConfigError(f"Expects `max_turns` >= 1, actual: {max_turns!r}.")
        self.agent_factory = lambda: make_agent(env_id)
        self._rows: dict[str, tuple[int, int]] = {}
        for row in dataset:
            self._rows.setdefault(
                self._key(row["prompt"]), (int(row["task_index"]), int(row["seed"]))
            )
        self.__name__ = env_id.split("/")[-1].replace("-", "_").lower() + "_return"
        #: The reward function to pass to ``GRPOTrainer`` (logged under ``rewards/<__name__>``).
        self.reward = EpisodeReturn(self.__name__)

    @staticmethod
    def _key(prompt: Any) -> str:
        return json.dumps(prompt, sort_keys=True, default=str)

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        """Play one episode per prompt; TRL's ``rollout_func`` interface."""
        torch = require("torch", "trl", feature="EnvRollout")
        if getattr(trainer, "use_vllm", False):
            raise AdapterConfigError(
                "EnvRollout generates with the trainer's model; set `use_vllm=False`."
            )
        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        args = trainer.args
        episodes: list[dict[str, Any]] = []
        for prompt in prompts:
            key = self._key(prompt)
            if key not in self._rows:
                raise AdapterConfigError(
                    "A prompt is not in the dataset EnvRollout was given; pass the same dataset "
                    "to EnvRollout and GRPOTrainer."
                )
            index, seed = self._rows[key]
            env = _make_env(self.env_id, self.env_kwargs)
            # Ends on the env's own last turn where `max_turns` stops it (s37 att37g).
            observation, info = reset_env(env, seed, {"index": index}, self.max_turns)
            agent = self.agent_factory()
            messages = agent.reset(observation, info)
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
            if isinstance(ids, Mapping):
                ids = ids["input_ids"]
            episodes.append(
                {
                    "env": env,
                    "agent": agent,
                    "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
                    "prompt_ids": list(ids),
                    "completion_ids": [],
                    "logprobs": [],
                    "mask": [],
                    "return": 0.0,
                    "done": False,
                }
            )
        eos = tokenizer.eos_token_id
        was_training = model.training
        model.eval()
        try:
            for _ in range(self.max_turns):
                live = [e for e in episodes if not e["done"]]
                if not live:
                    break
                self._generate(torch, model, tokenizer, args, live, eos)
                for e in live:
                    self._step(tokenizer, e)
        finally:
            model.train(was_training)
            for e in episodes:
                e["env"].close()
        return {
            "prompt_ids": [e["prompt_ids"] for e in episodes],
            "completion_ids": [e["completion_ids"] for e in episodes],
            "logprobs": [e["logprobs"] for e in episodes],
            "env_mask": [e["mask"] for e in episodes],
            "env_return": [e["return"] for e in episodes],
        }

    def _generate(
        self,
        torch: Any,
        model: Any,
        tokenizer: Any,
        args: Any,
        live: list[dict[str, Any]],
        eos: Any,
    ) -> None:
        contexts = [e["prompt_ids"] + e["completion_ids"] for e in live]
        width = max(len(c) for c in contexts)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
        input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts])
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        input_ids = input_ids.to(model.device)
        attention = attention.to(model.device)
        temperature = float(getattr(args, "temperature", 1.0) or 1.0)
        with torch.no_grad():
            out = model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=int(args.max_completion_length),
                do_sample=True,
                temperature=temperature,
                top_p=float(getattr(args, "top_p", 1.0) or 1.0),
                pad_token_id=pad,
                return_dict_in_generate=True,
                output_scores=True,
            )
            scores = torch.stack(out.scores, dim=1).float()
            logprobs = torch.log_softmax(scores, dim=-1)
        new = out.sequences[:, width:]
        for row, e in enumerate(live):
            tokens: list[int] = []
            lps: list[float] = []
            for t, token in enumerate(new[row].tolist()):
                tokens.append(token)
                lps.append(float(logprobs[row, t, token]))
                if token == eos:
                    break
            e["turn_ids"] = tokens
            e["completion_ids"] += tokens
            e["logprobs"] += lps
            e["mask"] += [1] * len(tokens)

    def _step(self, tokenizer: Any, e: dict[str, Any]) -> None:
        reply = tokenizer.decode(e["turn_ids"], skip_special_tokens=True)
        action = e["agent"].act(reply)
        observation, reward, terminated, truncated, info = e["env"].step(action)
        e["return"] += float(reward)
        e["messages"].append({"role": "assistant", "content": reply})
        if terminated or truncated:
            e["done"] = True
            return
        new = e["agent"].observe(observation, float(reward), terminated, truncated, info)
        before = e["messages"]
        after = before + [
            {"role": "user" if m["role"] == "tool" else m["role"], "content": m["content"]}
            for m in new
        ]
        rendered_before = tokenizer.apply_chat_template(before, tokenize=False)
        rendered_after = tokenizer.apply_chat_template(
            after, add_generation_prompt=True, tokenize=False
        )
        suffix = rendered_after[len(rendered_before) :]
        # The rendered reply ends with the end-of-turn token and what the template puts after
        # it; the sampled reply stops at that token (or was cut before it).
        eos_text = tokenizer.eos_token or ""
        tail = (
            rendered_before.rsplit(eos_text, 1)[1]
            if eos_text and eos_text in rendered_before
            else ""
        )
        glue = (
            tail
            if e["turn_ids"] and e["turn_ids"][-1] == tokenizer.eos_token_id
            else eos_text + tail
        )
        feedback = tokenizer.encode(glue + suffix, add_special_tokens=False)
        e["messages"] = after
        e["completion_ids"] += feedback
        e["logprobs"] += [0.0] * len(feedback)
        e["mask"] += [0] * len(feedback)
