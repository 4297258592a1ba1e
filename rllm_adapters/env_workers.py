"""Env workers: one env each, stepped off the event loop.

The rollout loop talks to every env through the same three coroutines (``reset``, ``step``,
``close``), so where the env lives is a choice:

* :class:`ThreadEnvWorker` -- the env in this process, each call run in a thread pool (the
  default; sandboxed code runs in subprocesses, so threads overlap it with generation).
* :class:`ProcessEnvWorker` -- the env in its own process (CPU-heavy pure-Python envs that would
  hold the GIL), talking over a pipe.
* :class:`rllm_adapters.ray_workers.RayEnvWorker` -- the env in a Ray actor, on any node.

Envs are described by an :class:`EnvFactory` (an id plus kwargs, picklable) or any picklable
zero-argument callable returning a ``gymnasium.Env``.
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

__all__ = ["EnvFactory", "EnvWorker", "ProcessEnvWorker", "ThreadEnvWorker", "reset_env"]


@dataclass(frozen=True)
class EnvFactory:
    """A picklable recipe for an env: ``gymnasium.make(env_id, **kwargs)``.

    Attributes:
        env_id: A registered id (``rllm_envs`` is imported first so its ids exist).
        kwargs: Constructor kwargs.
    """

    env_id: str
    kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> gym.Env:
        """Build the env."""
        import rllm_envs  # noqa: F401  (registers the rllm/ ids in worker processes)

        return gym.make(self.env_id, **self.kwargs)


def reset_env(
    env: gym.Env,
    seed: int | None = None,
    options: dict[str, Any] | None = None,
    max_turns: int | None = None,
) -> tuple[Any, dict[str, Any]]:
    """``env.reset``; ``max_turns``: the caller's own turn limit for the episode.

    An rllm env is told it (the ``max_turns`` reset option), so the episode ends on the
    env's last turn where the caller stops it: an episode cut short otherwise keeps what
    its last turn would have settled (FrozenLake's progress: +0.83 a map with the rollout's
    ``max_turns=12``, s36 att36i). Other envs are reset as they are.
    """
    if max_turns is not None and _settles(env):
        options = {**(options or {}), "max_turns": max_turns}
    return env.reset(seed=seed, options=options)


def _settles(env: gym.Env) -> bool:
    """Whether ``env`` is an rllm env, here or served.

    A served one is a ``RemoteTextEnv`` (att38c F2: the loop's turn limit and a full context
    never reached the served env, which kept FrozenLake's progress: 0.535 and 0.495 a map).
    """
    import sys

    from rllm_envs.core import TextEnv

    unwrapped = env.unwrapped
    if isinstance(unwrapped, TextEnv):
        return True
    client = sys.modules.get("rllm_adapters.openenv.client")  # loaded if one was made
    return client is not None and isinstance(unwrapped, client.RemoteTextEnv)


def settle_env(env: gym.Env) -> tuple[float, dict[str, float]]:
    """End ``env``'s running episode where it stands; its closing reward and components.

    An rllm env settles it (:meth:`rllm_envs.core.TextEnv.settle`: FrozenLake's progress
    refund); other envs have nothing to settle (``0.0, {}``).
    """
    if _settles(env):
        return env.unwrapped.settle()  # type: ignore[attr-defined]
    return 0.0, {}


class EnvWorker:
    """Interface of an env living somewhere; all methods are coroutines."""

    env_id: str = ""

    async def reset(
        self,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """``env.reset`` in the worker (:func:`reset_env`)."""
        raise NotImplementedError

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.step`` in the worker."""
        raise NotImplementedError

    async def settle(self) -> tuple[float, dict[str, float]]:
        """:func:`settle_env` in the worker: the loop stops the episode without a step.

        A worker that cannot reach its env's ``settle`` settles for nothing (``0.0, {}``).
        """
        return 0.0, {}

    async def close(self) -> None:
        """``env.close`` and release the worker."""


def _spec_id(env: gym.Env) -> str:
    spec = getattr(env, "spec", None)
    return spec.id if spec is not None else type(env.unwrapped).__name__


class ThreadEnvWorker(EnvWorker):
    """An env in this process; calls run in ``executor`` (a thread pool).

    Args:
        env: The env, or a callable building it.
        executor: Where blocking calls run (``None``: asyncio's default executor).
    """

    def __init__(self, env: gym.Env | Callable[[], gym.Env], executor: Executor | None = None):
        self.env = env if isinstance(env, gym.Env) else env()
        self.env_id = _spec_id(self.env)
        self.executor = executor

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def reset(
        self,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """``env.reset`` in the executor."""
        return await self._run(lambda: reset_env(self.env, seed, options, max_turns))

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.step`` in the executor."""
        return await self._run(self.env.step, action)

    async def settle(self) -> tuple[float, dict[str, float]]:
        """:func:`settle_env` in the executor."""
        return await self._run(settle_env, self.env)

    async def close(self) -> None:
        """Close the env."""
        self.env.close()


def _process_main(conn: Any, factory: Callable[[], gym.Env]) -> None:
    env = None
    try:
        env = factory()
        conn.send(("ok", _spec_id(env)))
        while True:
            command, payload = conn.recv()
            try:
                if command == "reset":
                    result: Any = reset_env(env, **payload)
                elif command == "step":
                    result = env.step(payload)
                elif command == "settle":
                    result = settle_env(env)
                elif command == "close":
                    conn.send(("ok", None))
                    return
                else:
                    raise ValueError(f"unknown command {command!r}")
                conn.send(("ok", result))
            except Exception as e:
                conn.send(("error", e))
    except (EOFError, KeyboardInterrupt):
        return
    except Exception as e:
        conn.send(("error", e))
    finally:
        if env is not None:
            env.close()
        conn.close()


class ProcessEnvWorker(EnvWorker):
    """An env in its own process (``spawn``), driven over a pipe.

    Args:
        factory: A picklable callable building the env (e.g. :class:`EnvFactory`).
        context: Multiprocessing start method.
    """

    def __init__(self, factory: Callable[[], gym.Env], context: str = "spawn") -> None:
        ctx: Any = mp.get_context(context)
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_process_main, args=(child, factory), daemon=True)
        self._process.start()
        child.close()
        self._lock = threading.Lock()
        status, value = self._conn.recv()
        if status != "ok":
            self._process.join(timeout=5)
            raise value
        self.env_id = value

    def _call(self, command: str, payload: Any) -> Any:
        with self._lock:
            self._conn.send((command, payload))
            status, value = self._conn.recv()
        if status != "ok":
            raise value
        return value

    async def reset(
        self,
        seed: int | None = None,
        options: dict[str, Any] | None = None,
        max_turns: int | None = None,
    ) -> tuple[Any, dict[str, Any]]:
        """``env.reset`` in the worker process."""
        payload = {"seed": seed, "options": options, "max_turns": max_turns}
        return await asyncio.to_thread(self._call, "reset", payload)

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """``env.step`` in the worker process."""
        return await asyncio.to_thread(self._call, "step", action)

    async def settle(self) -> tuple[float, dict[str, float]]:
        """:func:`settle_env` in the worker process."""
        return await asyncio.to_thread(self._call, "settle", None)

    async def close(self) -> None:
        """Close the env and join the process."""
        if self._process.is_alive():
            try:
                await asyncio.to_thread(self._call, "close", None)
            except (BrokenPipeError, EOFError, OSError):
                pass
        self._process.join(timeout=10)
        if self._process.is_alive():
            self._process.kill()
            self._process.join(timeout=5)
        self._conn.close()
