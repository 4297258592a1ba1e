"""The OpenEnv ``Environment`` that plays one rllm-envs (Gymnasium) env.

Every live one is registered, so a shutdown can close them all.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from rllm_adapters.openenv.protocol import (
    TextAction,
    TextObservation,
    TextState,
    _types,
    check_reset_args,
    jsonable,
    public_kwargs,
)
from rllm_adapters.private_seeds import SeedMask
from rllm_adapters.trl import SeatEnv, one_seat_env, one_seat_ids
from rllm_envs.core import TextEnv
from rllm_envs.error import require
from rllm_envs.multiagent.base import MultiAgentTextEnv, _check_option_names

_interfaces = require("openenv.core.env_server.interfaces", "openenv")


#: The last observation of a privately graded episode (``GymTextEnvironment(scores=...)``).
PRIVATE_END = "Episode over. It is graded privately: the server keeps its reward."

# Every live environment of this process, so a shutdown can close them all.
_LIVE: weakref.WeakSet[GymTextEnvironment] = weakref.WeakSet()
_LIVE_LOCK = threading.Lock()


def served_ids() -> dict[str, str]:
    """Every id OpenEnv serves, with its description (:func:`rllm_adapters.trl.one_seat_ids`).

    OpenEnv's protocol has one actor per session, and OpenEnv 0.10 has no multi-agent scene
    (its ``openenv validate`` calls them unsupported), so ids whose every seat is the model's
    (``rllm/SolverJudge-v1``, ``rllm/Debate-v1``) are not served.
    """
    return one_seat_ids()


def _reseed_episode(env: Any) -> None:
    """Give ``env``'s random generators (and a one-seat game's) states of the server's own.

    In place, so every holder of a generator (Gymnasium's lake shares the env's) draws from
    the new state.
    """
    import secrets

    import numpy as np

    inner = getattr(env, "unwrapped", env)
    holders = [env, inner, getattr(getattr(inner, "env", None), "unwrapped", None)]
    seen: set[int] = set()
    for holder in holders:
        # Every generator it holds: a game's opponent draws from its own (`SeatEnv._rng`,
        # att38f F1: TicTacToe's opponent stayed the client's seed's, 33/60 wins foreseen).
        for generator in list(vars(holder).values()) if holder is not None else []:
            if isinstance(generator, np.random.Generator) and id(generator) not in seen:
                seen.add(id(generator))
                fresh = np.random.default_rng(secrets.randbits(128))
                generator.bit_generator.state = fresh.bit_generator.state


class GymTextEnvironment(_interfaces.Environment):  # type: ignore[name-defined]
    """An OpenEnv ``Environment`` that plays one rllm-envs (Gymnasium) env.

    One instance per session: OpenEnv's server calls the factory for each WebSocket session.
    A multi-agent id with one model seat (``rllm/TicTacToe-v0``) is that seat's game against
    the registry row's scripted opponents (:class:`rllm_adapters.trl.SeatEnv`).

    Args:
        env_id: A registered id, e.g. ``"rllm/FrozenLake-v1"``.
        env_kwargs: Constructor kwargs (variants), checked like :func:`rllm_envs.make`.
        scores: Private grading: each finished episode's record (the operator's task id, the
            return, ``is_correct``, the last reward components) goes to ``scores`` instead of
            the client, whose steps then all get reward 0, an info of the task id alone and,
            at the end, :data:`PRIVATE_END` for the last observation. Feedback inside an
            episode stays (a tool's result, a board, a multi-try env's "try again").

    Raises:
        AdapterConfigError: For a multi-agent id with several model seats.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(
        self,
        env_id: str,
        env_kwargs: Mapping[str, Any] | None = None,
        *,
        scores: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        super().__init__()
        self.env_id = env_id
        self.env_kwargs = dict(env_kwargs or {})
        self._scores = scores
        self._task_id: Any = None  # the operator's (unmasked) id of the episode's task
        self._return = 0.0
        self.env: Any = one_seat_env(env_id, self.env_kwargs)
        # The operator's seeds: task ids keyed by them, error messages without them (issue
        # #31, att31s24 F1, att31t F1/F2).
        self._mask = SeedMask(self.env_kwargs)
        self._state = TextState(env_id=env_id, env_kwargs=public_kwargs(self.env_kwargs))
        with _LIVE_LOCK:
            _LIVE.add(self)

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> TextObservation:
        """Start an episode; ``options`` are the env's reset options (``index``, ``task``).

        The arguments are checked first (``ValueError``), and the env checks its options
        before it changes anything: a reset that raises leaves the session's episode as it
        was. Only when the env itself failed to start (it raised after its checks) is the
        episode ended (``state.done``; a step then asks for a reset).
        """
        check_reset_args(seed, episode_id, options)
        if isinstance(self.env, SeatEnv):  # a game ignores PettingZoo's probe; clients may not
            _check_option_names(options or {}, probe=False)
        try:
            obs, info = self.env.reset(seed=seed, options=options)
        except Exception:
            if not self._episode_live():
                self._state.done = True  # the env may be half-started: no step until a reset
            raise
        if self._scores is not None:
            # Private grading: a client's seed may pick the task, never the episode's own
            # randomness (a slippery lake's slips, an opponent's moves): a client that chose
            # its seed knew every slip and won 60/60 where an optimal policy wins 8/60
            # (att38e F1). The env's generators go on from a state of the server's.
            _reseed_episode(self.env)
        task = (options or {}).get("task")
        self._task_id, self._return = info.get("task_id"), 0.0
        env_task = getattr(getattr(self.env, "unwrapped", None), "task", None)
        client_id = env_task.get("client_id") if isinstance(env_task, dict) else None
        # A client's board on which the opponents end the game before the seat's first move
        # (x_agent the opponent, one move from its win): over at reset, said so (done).
        over = isinstance(self.env, SeatEnv) and not self._episode_live()
        self._state = TextState(
            episode_id=episode_id,
            step_count=0,
            env_id=self.env_id,
            env_kwargs=public_kwargs(self.env_kwargs),
            task_id=None if info.get("task_id") is None else self._mask.task_id(info["task_id"]),
            custom_task=task is not None,
            client_task_id=None if task is None or client_id is None else str(client_id),
            seed=seed,
            done=over,
        )
        return TextObservation(text=obs, info=self._shown(info), terminated=over, done=over)

    def scrubbed(self, text: str) -> str:
        """``text`` (an error message for the client) without the operator's seeds."""
        return self._mask.text(text)

    def _shown(self, info: Mapping[str, Any]) -> Any:
        """``info`` for the wire: strict JSON, its task id keyed by the operator's seeds."""
        if self._mask.active and info.get("task_id") is not None:
            info = {**info, "task_id": self._mask.task_id(info["task_id"])}
        return jsonable(info)

    def _episode_live(self) -> bool:
        """Whether the env still plays an episode (after a reset that raised).

        A refused reset (a bad option, checked before anything changes) leaves it; a start that
        failed ends it. A one-seat game (:class:`rllm_adapters.trl.SeatEnv`) plays while its
        seat is among the game's agents: it was marked done after every refused reset, so a
        TicTacToe client's episode ended on a bad ``index`` (issue #31, T2).
        """
        inner = getattr(self.env, "unwrapped", None)
        if isinstance(inner, TextEnv):
            return not inner.done
        game = getattr(getattr(inner, "env", None), "unwrapped", None)
        if isinstance(game, MultiAgentTextEnv):
            return game.task is not None and getattr(inner, "seat", None) in game.agents
        return False

    def step(self, action: Any, timeout_s: float | None = None, **kwargs: Any) -> TextObservation:
        """Apply the model's text; raises ``ResetNeeded`` outside an episode (a clear error)."""
        text = action.text if isinstance(action, TextAction) else str(action)
        payload = self.step_payload(text)
        return TextObservation(
            **payload["observation"], reward=payload["reward"], done=payload["done"]
        )

    def step_payload(self, text: str) -> dict[str, Any]:
        """:meth:`step` as OpenEnv's wire payload (``observation``, ``reward``, ``done``).

        The server's hot path: the same fields as the serialized :class:`TextObservation`,
        without building and dumping the model for every step.
        """
        if self._state.done:
            raise gym.error.ResetNeeded(
                "No episode is running in this session: send a reset before stepping."
            )
        obs, reward, terminated, truncated, info = self.env.step(text)
        self._state.step_count += 1
        done = bool(terminated or truncated)
        self._state.done = done
        if self._scores is None:
            shown = self._shown(info)
        else:
            self._return += float(reward)
            if done:
                self._scores(self._score(info, bool(terminated), bool(truncated)))
                obs = PRIVATE_END
            # The task id as the reset showed it (keyed by the operator's seeds).
            shown, reward = {"task_id": self._state.task_id, "graded_privately": True}, 0.0
        observation = {
            "text": obs,
            "terminated": bool(terminated),
            "truncated": bool(truncated),
            "info": shown,
            "metadata": {},
        }
        return {"observation": observation, "reward": float(reward), "done": done}

    def settle(self) -> dict[str, Any]:
        """End the running episode where it stands: its closing reward and components.

        :meth:`rllm_envs.core.TextEnv.settle` for a client that stops an episode without a
        step (a rollout loop whose context is full, through :class:`RemoteTextEnv`).
        Private grading has no closing reward for the client: refused there.
        """
        if self._scores is not None:
            raise ValueError("A privately graded server does not settle episodes for clients.")
        from rllm_adapters.env_workers import settle_env

        reward, components = settle_env(self.env) if not self._state.done else (0.0, {})
        self._state.done = True
        return {"reward": float(reward), "reward_components": jsonable(components)}

    def _score(self, info: Mapping[str, Any], terminated: bool, truncated: bool) -> dict[str, Any]:
        """The record of an episode that just ended (private grading)."""
        return {
            "env_id": self.env_id,
            "task_id": jsonable(self._task_id),
            "custom_task": self._state.custom_task,
            "client_task_id": self._state.client_task_id,
            "episode_id": self._state.episode_id,
            "steps": self._state.step_count,
            "return": jsonable(self._return),
            "is_correct": jsonable(info.get("is_correct")),
            "reward_components": jsonable(info.get("reward_components")),
            "terminated": terminated,
            "truncated": truncated,
        }

    @property
    def state(self) -> TextState:
        """The session's :class:`TextState`."""
        return self._state

    def get_metadata(self) -> Any:
        """OpenEnv metadata: the id, its one-line description and the class docstring."""
        import rllm_envs

        games = rllm_envs.list_multiagent_envs()
        game = self.env.env if self.env_id in games else self.env.unwrapped  # SeatEnv's game
        description = {**rllm_envs.list_envs(), **games}.get(self.env_id, self.env_id)
        return _types.EnvironmentMetadata(
            name=self.env_id,
            description=description,
            readme_content=type(game).__doc__,
            version=self.env_id.rsplit("-", 1)[-1],
        )

    def close(self) -> None:
        """Close the env (stops any sandbox it holds). Idempotent."""
        env, self.env = self.env, None
        if env is not None:
            env.close()
        with _LIVE_LOCK:
            _LIVE.discard(self)


def close_all_environments() -> int:
    """Close every live :class:`GymTextEnvironment` of this process; returns how many."""
    with _LIVE_LOCK:
        live = list(_LIVE)
    for env in live:
        env.close()
    return len(live)
