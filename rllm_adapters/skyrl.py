"""SkyRL-Gym adapter: every rllm-envs id with one model seat as a SkyRL-Gym ``BaseTextEnv``.

``pip install "rllm-envs[skyrl]"``. Importing this module registers every single-agent id (and
each multi-agent id with one model seat, see :func:`register_all`) in
``skyrl_gym``'s registry under the same name, so SkyRL's trainers make them the way they make
their own envs::

    import skyrl_gym
    import rllm_adapters.skyrl  # registers "rllm/Math-v1", "rllm/FrozenLake-v1", ...

    env = skyrl_gym.make("rllm/FrozenLake-v1", env_config={}, extras={"seed": 0})
    chat, metadata = env.init([])           # the agent's messages for the first observation
    out = env.step("Down")                  # {"observations", "reward", "done", "metadata"}

In a SkyRL dataset, set ``env_class`` to the id and put ``seed``, ``task_index`` (or ``task``,
a task record), ``env_kwargs`` and optionally ``max_turns`` (SkyRL's extra: the episode ends
after that many replies, or earlier when our env ends it) in the row's extras;
:func:`skyrl_dataset` writes such rows. ``env_config`` may carry ``env_kwargs`` for every env
of a run (row extras override them).

SkyRL's trainer builds envs inside Ray tasks, in processes that never imported this module,
so its registry there lacks our ids (``No registered env with id``). Register them in every
Ray worker with Ray's own setup hook, which runs :func:`register_all` at worker start. SkyRL's
stock entry points call ``ray.init`` themselves (with only ``env_vars`` in the runtime env), so
give the hook through Ray's ``RAY_RUNTIME_ENV_HOOK``, which Ray applies to that call::

    RAY_RUNTIME_ENV_HOOK=rllm_adapters.skyrl.ray_runtime_env_hook \
        python -m skyrl.train.entrypoints.main_base ...

In your own driver, ``ray.init(runtime_env={"worker_process_setup_hook":
"rllm_adapters.skyrl.register_all"})`` does the same (or call
``rllm_adapters.skyrl.register_all()`` first thing in your SkyRL entry point task). Each id is
registered with a string entry point (``rllm_adapters.skyrl:RllmTextEnv`` and the id as a
kwarg), so its spec is plain data that crosses process boundaries.

Observations after the first are the env family's feedback messages (our agents' format; tool
results as user turns); the step ``reward`` is the env's reward and ``metadata`` its ``info``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.trl import one_seat_env, one_seat_ids
from rllm_envs.error import require
from rllm_envs.utils import to_jsonable

skyrl_gym = require("skyrl_gym", "skyrl", feature="The SkyRL-Gym adapter")
_base = require("skyrl_gym.envs.base_text_env", "skyrl")

__all__ = ["RllmTextEnv", "ray_runtime_env_hook", "register_all", "skyrl_dataset"]

#: Ray's ``worker_process_setup_hook`` that registers our ids in a worker.
SETUP_HOOK = "rllm_adapters.skyrl.register_all"


def _mapping(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, str):  # parquet rows may hold nested dicts as JSON text
        return dict(json.loads(value)) if value.strip() else {}
    if hasattr(value, "items"):  # dict or omegaconf DictConfig
        return {str(k): v for k, v in value.items()}
    raise AdapterConfigError(f"Expects a mapping of env kwargs, actual: {type(value).__name__}.")


class RllmTextEnv(_base.BaseTextEnv):  # type: ignore[name-defined]
    """A SkyRL-Gym text env playing one episode of an rllm-envs env.

    Args:
        env_id: The rllm-envs id (bound by the registry entry).
        env_config: SkyRL's per-run env config; its ``env_kwargs`` go to the env constructor.
        extras: The dataset row's extras: ``seed`` (reset seed), ``task_index`` or ``task``
            (a task record), ``env_kwargs`` (override the config's); unknown keys are ignored.
    """

    def __init__(
        self, env_id: str, env_config: Any = None, extras: Mapping[str, Any] | None = None
    ) -> None:
        from rllm_agents.agent import make_agent

        super().__init__()
        extras = dict(extras or {})
        config = _mapping(getattr(env_config, "get", lambda *_: None)("env_kwargs"))
        self.env_id = env_id
        self.env_kwargs = {**config, **_mapping(extras.get("env_kwargs"))}
        self.env: Any = one_seat_env(env_id, self.env_kwargs)
        self.agent = make_agent(env_id)
        self.max_turns = int(getattr(self.env.unwrapped, "max_turns", 1))
        if extras.get("max_turns") is not None:
            limit = extras["max_turns"]
            if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
                raise AdapterConfigError(f"Expects extras `max_turns` >= 1, actual: {limit!r}.")
            self.max_turns = int(limit)
        self.seed = None if extras.get("seed") is None else int(extras["seed"])
        self.options: dict[str, Any] | None = None
        if extras.get("task") is not None:
            self.options = {"task": _mapping(extras["task"])}
        elif extras.get("task_index") is not None:
            self.options = {"index": int(extras["task_index"])}
        self.episode_return = 0.0
        self.last_info: dict[str, Any] = {}

    def init(self, prompt: Any = None) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Reset the episode; return the agent's messages for the first observation.

        The env's first observation is self-contained, so it replaces SkyRL's dataset prompt
        (rows made by :func:`skyrl_dataset` carry exactly these messages).
        """
        from rllm_adapters.env_workers import reset_env

        # The episode ends where `max_turns` stops it, on the env's own last turn (s37 att37g:
        # FrozenLake's progress was kept by an episode this adapter cut).
        observation, info = reset_env(self.env, self.seed, self.options, self.max_turns)
        self.turns, self.episode_return, self.last_info = 0, 0.0, info
        messages = self.agent.reset(observation, info)
        return [{"role": m["role"], "content": m["content"]} for m in messages], to_jsonable(info)

    def step(self, action: str) -> Any:
        """One model reply: the env's reward, ``done``, and the feedback as new messages."""
        self.turns += 1
        text = self.agent.act(action if isinstance(action, str) else str(action))
        observation, reward, terminated, truncated, info = self.env.step(text)
        self.episode_return += float(reward)
        self.last_info = info
        done = bool(terminated or truncated or self.turns >= self.max_turns)
        new = (
            []
            if done
            else self.agent.observe(observation, float(reward), terminated, truncated, info)
        )
        observations = [
            {"role": "user" if m["role"] == "tool" else m["role"], "content": m["content"]}
            for m in new
        ]
        return _base.BaseTextEnvStepOutput(
            observations=observations,
            reward=float(reward),
            done=done,
            metadata=to_jsonable(info),
            postprocessed_action=text,
        )

    def get_metrics(self) -> dict[str, Any]:
        """Per-episode metrics: return, correctness, turns, invalid actions."""
        return {
            "return": self.episode_return,
            "is_correct": float(bool(self.last_info.get("is_correct"))),
            "turns": self.turns,
            "invalid_action": float(bool(self.last_info.get("invalid_action"))),
        }

    def close(self) -> None:
        """Close the env (stops any sandbox it holds)."""
        env, self.env = getattr(self, "env", None), None
        if env is not None:
            env.close()


def ids_with_one_model_seat() -> list[str]:
    """Every single-agent id, then the multi-agent ids with one seat the row does not script."""
    return list(one_seat_ids())


def register_all() -> list[str]:
    """Register every id with one model seat in ``skyrl_gym``'s registry (idempotent).

    Single-agent ids, and multi-agent ids whose other seats the registry row scripts
    (``rllm/TicTacToe-v0``: the model plays ``player_0`` against the heuristic ``player_1``;
    :class:`rllm_adapters.trl.SeatEnv`).

    Usable as Ray's ``worker_process_setup_hook`` (``"rllm_adapters.skyrl.register_all"``).
    """
    ids = []
    for env_id in ids_with_one_model_seat():
        if env_id not in skyrl_gym.registry:
            skyrl_gym.register(
                id=env_id, entry_point=f"{__name__}:RllmTextEnv", kwargs={"env_id": env_id}
            )
        ids.append(env_id)
    return ids


def ray_runtime_env_hook(runtime_env: Mapping[str, Any] | None) -> dict[str, Any]:
    """Ray's ``RAY_RUNTIME_ENV_HOOK``: the runtime env with :func:`register_all` as its setup hook.

    Ray calls it on the runtime env of every ``ray.init`` in a driver started with
    ``RAY_RUNTIME_ENV_HOOK=rllm_adapters.skyrl.ray_runtime_env_hook``, so SkyRL's own entry
    points (whose ``ray.init`` sets only ``env_vars``) build our envs in their Ray tasks. Under
    ``uv run`` Ray applies its own uv hook instead of this one: there, call :func:`register_all`
    first thing in your entry point task.

    Raises:
        AdapterConfigError: When the runtime env already names another setup hook (Ray runs
            one; call :func:`register_all` from yours).
    """
    merged = dict(runtime_env or {})
    hook = merged.get("worker_process_setup_hook")
    if hook is not None and hook != SETUP_HOOK:
        raise AdapterConfigError(
            f"The Ray runtime env already has worker_process_setup_hook={hook!r}; Ray runs one "
            f"setup hook, so call {SETUP_HOOK}() from it instead of setting RAY_RUNTIME_ENV_HOOK."
        )
    merged["worker_process_setup_hook"] = SETUP_HOOK
    return merged


def skyrl_dataset(
    env_id: str,
    *,
    num_examples: int,
    env_kwargs: Mapping[str, Any] | None = None,
    start: int = 0,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Rows for a SkyRL dataset: ``prompt``, ``env_class`` and the extras our env reads.

    Row ``k`` is task ``start + k`` with reset seed ``seed + k``; write the list to Parquet
    (e.g. ``datasets.Dataset.from_list(rows).to_parquet(path)``) for SkyRL's trainers.
    """
    if num_examples < 1:
        raise AdapterConfigError(f"Expects `num_examples` >= 1, actual: {num_examples!r}.")
    probe = one_seat_env(env_id, dict(env_kwargs or {}))
    size = len(probe.unwrapped.tasks) if hasattr(probe.unwrapped, "tasks") else None
    probe.close()
    rows = []
    for k in range(num_examples):
        index = start + k if not size else (start + k) % size
        extras = {"seed": seed + k, "task_index": index, "env_kwargs": json.dumps(env_kwargs or {})}
        env = RllmTextEnv(env_id, extras=extras)
        prompt, info = env.init()
        env.close()
        rows.append(
            {"prompt": prompt, "env_class": env_id, **extras, "task_id": str(info.get("task_id"))}
        )
    return rows


register_all()
