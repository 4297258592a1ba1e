r"""verifiers adapter: every rllm-envs id as a ``vf.Environment`` (``load_environment``).

``pip install "rllm-envs[verifiers]"`` (verifiers' classic ``vf.Environment`` API, 0.3.x).
:func:`load_environment` is what verifiers-based tools look for (``vf-eval``, prime-rl)::

    import verifiers as vf
    from adapters.verifiers import load_environment

    env = load_environment("rllm/Math-v0", num_examples=64, difficulty=3)
    results = env.evaluate_sync(client, model="my-model", rollouts_per_example=4)

or from the command line, with this module as the environment module::

    vf-eval adapters.verifiers -a '{"env": "rllm/Math-v0"}' -m my-model \
        --api-base-url http://127.0.0.1:8000/v1 -n 16

* Single-turn ids (``max_turns == 1``: Math, Code) become a ``vf.SingleTurnEnv``: a dataset of
  the env's tasks (prompt = the family agent's messages for the first observation) and a
  rubric whose reward is the env's own reward for the completion.
* Multi-turn ids (FrozenLake, CodeMultiTurn, ToolUse, Search) become an :class:`RllmMultiTurnEnv`
  (``vf.MultiTurnEnv``) whose ``env_response`` steps a fresh episode of our env with each
  model reply and returns the agent's feedback messages; the rubric's reward is the episode
  return. Tool envs expose their tools the way our agents do: the system prompt describes
  them and the model calls them in text (``<tool_call>{...}</tool_call>``); their OpenAI
  schemas are in each row's ``info["tools"]``. Tool results come back as user messages.

Every row carries ``info = {"env_id", "env_kwargs", "seed", "task_index", "task_id"}``, so
rewards are reproducible: the rubric replays the row's task with the same seed. Named reward
components, ``is_correct`` and ``invalid_action`` are logged as metrics (weight 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import gymnasium as gym

from rllm_envs.error import InvalidEnvConfig, require

vf = require("verifiers", "verifiers", feature="The verifiers adapter")

__all__ = ["load_environment", "env_dataset", "EnvRubric", "RllmMultiTurnEnv", "completion_text"]


def _make(info: Mapping[str, Any]) -> gym.Env:
    import rllm_envs

    env_kwargs = info.get("env_kwargs") or {}
    if isinstance(env_kwargs, str):  # datasets may store nested dicts as JSON text
        env_kwargs = json.loads(env_kwargs)
    return rllm_envs.make(info["env_id"], **env_kwargs)


def _reset(env: gym.Env, info: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    return env.reset(seed=int(info["seed"]), options={"index": int(info["task_index"])})


def completion_text(completion: Any) -> str:
    """The text of the last assistant message of a verifiers completion (or the string)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        role = message.get("role") if isinstance(message, Mapping) else None
        if role is None:
            role = getattr(message, "role", None)
        if role == "assistant":
            content = message.get("content") if isinstance(message, Mapping) else message.content
            if isinstance(content, list):  # content parts
                return "".join(
                    p.get("text", "") if isinstance(p, Mapping) else str(p) for p in content
                )
            return content or ""
    return ""


def env_dataset(
    env_id: str,
    *,
    num_examples: int = 100,
    env_kwargs: Mapping[str, Any] | None = None,
    start: int = 0,
    seed: int = 0,
) -> Any:
    """A ``datasets.Dataset`` of an env's tasks in verifiers' format.

    Row ``k`` is task ``start + k`` reset with seed ``seed + k``. Columns: ``prompt`` (chat
    messages from the family's agent), ``answer`` (the oracle's first action, for reference)
    and ``info`` (what the rubric needs to replay the task; ``info["env_id"]`` routes rows).
    """
    datasets = require("datasets", "verifiers", feature="env_dataset")
    from rllm_agents.agent import make_agent

    if num_examples < 1:
        raise InvalidEnvConfig(f"Expects `num_examples` >= 1, actual: {num_examples!r}.")
    kwargs = dict(env_kwargs or {})
    import rllm_envs

    env = rllm_envs.make(env_id, **kwargs)
    size = len(env.unwrapped.tasks) if hasattr(env.unwrapped, "tasks") else None
    rows: dict[str, list[Any]] = {k: [] for k in ("prompt", "answer", "info")}
    for k in range(num_examples):
        index = start + k if not size else (start + k) % size
        info = {
            "env_id": env_id,
            "env_kwargs": json.dumps(kwargs),
            "seed": seed + k,
            "task_index": index,
        }
        observation, env_info = _reset(env, info)
        messages = make_agent(env_id).reset(observation, env_info)
        tools = env_info.get("tools")
        rows["prompt"].append([{"role": m["role"], "content": m["content"]} for m in messages])
        try:
            answer = env.unwrapped.oracle_action()  # type: ignore[attr-defined]
        except NotImplementedError:
            answer = ""
        rows["answer"].append(answer)
        rows["info"].append(
            {
                **info,
                "task_id": str(env_info.get("task_id")),
                "tools": json.dumps(tools) if tools else "",
            }
        )
    env.close()
    return datasets.Dataset.from_dict(rows)


# -------------------------------------------------------------------------------- rubric


def _single_turn_outcome(state: Any) -> dict[str, Any]:
    """Step the row's task with the completion once per rollout (cached in the state)."""
    outcome = state.get("rllm")
    if outcome is None:
        from rllm_agents.agent import make_agent

        info = state["info"]
        env = _make(info)
        try:
            observation, env_info = _reset(env, info)
            agent = make_agent(info["env_id"])
            agent.reset(observation, env_info)
            action = agent.act(completion_text(state["completion"]))
            _, reward, _, _, step_info = env.step(action)
        finally:
            env.close()
        outcome = {"return": float(reward), "info": step_info}
        state["rllm"] = outcome
    return outcome


def _outcome(state: Any) -> dict[str, Any]:
    return state.get("rllm") or _single_turn_outcome(state)


class _Metric:
    """A named metric reading one value of the episode outcome (verifiers keys by __name__)."""

    def __init__(self, name: str, key: str, component: bool = False) -> None:
        self.__name__ = name
        self.key = key
        self.component = component

    def __call__(self, state: Any, **kwargs: Any) -> float:
        info = _outcome(state)["info"]
        if self.component:
            return float(info.get("reward_components", {}).get(self.key, 0.0))
        return float(bool(info.get(self.key)))


def env_reward(state: Any, **kwargs: Any) -> float:
    """The env's return for the rollout: the reward (single-turn) or the episode return."""
    return float(_outcome(state)["return"])


class EnvRubric(vf.Rubric):  # type: ignore[name-defined]
    """A rubric whose reward is our env's reward; components and flags logged as metrics.

    Args:
        components: Reward component names to log (the env's ``default_reward_weights``).
    """

    def __init__(self, components: list[str] | tuple[str, ...] = (), **kwargs: Any) -> None:
        super().__init__(funcs=[env_reward], weights=[1.0], **kwargs)
        self.add_metric(_Metric("is_correct", "is_correct"))
        self.add_metric(_Metric("invalid_action", "invalid_action"))
        for name in components:
            self.add_metric(_Metric(f"component_{name}", name, component=True))


# ------------------------------------------------------------------------ multi-turn env


class RllmMultiTurnEnv(vf.MultiTurnEnv):  # type: ignore[name-defined]
    """A ``vf.MultiTurnEnv`` whose ``env_response`` steps one episode of an rllm-envs env.

    Each rollout gets a fresh env and agent (in ``setup_state``), reset on the row's task.
    The model's replies are the actions; the episode ends when our env says so
    (``final_env_response``) or at verifiers' ``max_turns`` (then the last reply is still
    stepped before scoring). The rollout's reward is the episode return.
    """

    async def setup_state(self, state: Any) -> Any:
        """Start the row's episode."""
        from rllm_agents.agent import make_agent

        info = state["info"]
        env = _make(info)
        observation, env_info = _reset(env, info)
        agent = make_agent(info["env_id"])
        agent.reset(observation, env_info)
        state["rllm_env"], state["rllm_agent"] = env, agent
        state["rllm_steps"], state["rllm_return"], state["rllm_done"] = 0, 0.0, False
        state["rllm_info"] = env_info
        return state

    def _step(self, state: Any, reply: str) -> list[dict[str, Any]]:
        env, agent = state["rllm_env"], state["rllm_agent"]
        action = agent.act(reply)
        observation, reward, terminated, truncated, info = env.step(action)
        state["rllm_steps"] += 1
        state["rllm_return"] += float(reward)
        state["rllm_info"] = info
        state["rllm_done"] = bool(terminated or truncated)
        new = agent.observe(observation, float(reward), terminated, truncated, info)
        # The OpenAI chat API wants a tool_call_id on tool messages; ours are text tool calls.
        return [
            {"role": "user" if m["role"] == "tool" else m["role"], "content": m["content"]}
            for m in new
        ]

    async def env_response(self, messages: Any, state: Any, **kwargs: Any) -> Any:
        """Step our env with the model's last reply; the feedback is the next user turn."""
        response = self._step(state, completion_text(messages))
        if state["rllm_done"]:
            state["final_env_response"] = response
        return response

    @vf.cleanup
    async def finish_episode(self, state: Any) -> None:
        """Step a reply verifiers stopped on (max_turns), record the outcome, close the env."""
        env = state.get("rllm_env")
        if env is None:
            return
        try:
            replies = len(state.get("trajectory", []))
            if not state["rllm_done"] and replies > state["rllm_steps"]:
                last = state["trajectory"][-1]["completion"]
                self._step(state, completion_text(last))
            state["rllm"] = {"return": state["rllm_return"], "info": state["rllm_info"]}
        finally:
            env.close()
            state["rllm_env"] = state["rllm_agent"] = None


# ------------------------------------------------------------------------- entry point


def load_environment(
    env_id: str | None = None,
    num_examples: int = 100,
    num_eval_examples: int | None = None,
    seed: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    env: str | None = None,
    **kwargs: Any,
) -> Any:
    """A ``vf.Environment`` for an rllm-envs id (verifiers' ``load_environment`` hook).

    Args:
        env_id: A registered single-agent id (default ``rllm/Math-v0``).
        num_examples: Rows of the training dataset (tasks ``0..n-1``, seeds ``seed + k``).
        num_eval_examples: Rows of the eval dataset (the tasks after the training ones);
            default ``num_examples``.
        seed: Base reset seed.
        env_kwargs: Constructor kwargs of the env (variants); plain ``**kwargs`` are merged in,
            so ``load_environment("rllm/Math-v0", difficulty=3)`` works.
        env: The id under another name, for verifiers' own loader (``vf-eval adapters.verifiers
            -a '{"env": "rllm/Math-v0"}'``), which takes ``env_id`` for the module name.
        **kwargs: More env constructor kwargs.

    Returns:
        A ``vf.SingleTurnEnv`` (single-turn ids) or :class:`RllmMultiTurnEnv`.

    Raises:
        UnknownEnvironment: For an unknown id. InvalidEnvConfig: For bad kwargs.
    """
    import rllm_envs

    if env_id is not None and env is not None and env_id != env:
        raise InvalidEnvConfig(f"Pass the id once: `env_id`={env_id!r} and `env`={env!r}.")
    env_id = env_id or env or "rllm/Math-v0"
    merged = {**dict(env_kwargs or {}), **kwargs}
    probe = rllm_envs.make(env_id, **merged)
    max_turns = int(getattr(probe.unwrapped, "max_turns", 1))
    components = list(getattr(probe.unwrapped, "default_reward_weights", {}))
    probe.close()
    n_eval = num_examples if num_eval_examples is None else num_eval_examples
    dataset = env_dataset(env_id, num_examples=num_examples, env_kwargs=merged, seed=seed)
    eval_dataset = env_dataset(
        env_id, num_examples=n_eval, env_kwargs=merged, start=num_examples, seed=seed + 10**6
    )
    rubric = EnvRubric(components)
    # verifiers reloads an env in its worker processes as `load_environment(env_id, **env_args)`
    # of the *module* named env_id: this module, with the arguments that rebuild this env.
    env_args = {"env": env_id, "num_examples": num_examples, "seed": seed, **merged}
    if num_eval_examples is not None:
        env_args["num_eval_examples"] = num_eval_examples
    common = dict(
        dataset=dataset,
        eval_dataset=eval_dataset,
        rubric=rubric,
        env_id=__name__,
        env_args=env_args,
    )
    if max_turns == 1:
        return vf.SingleTurnEnv(**common)
    return RllmMultiTurnEnv(max_turns=max_turns, **common)
