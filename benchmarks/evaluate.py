"""Evaluate scripted policies (oracle, random) over registered environments.

The same episode protocol is used for every env and policy: episode ``i`` plays task index
``i`` (modulo the source size) with reset seed ``seed + i``, so results are reproducible and
policies are compared on identical tasks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym

import rllm_envs

#: A scripted policy: ``(unwrapped env, observation, info) -> action``.
Policy = Callable[[Any, str, dict[str, Any]], str]


def oracle_policy(env: Any, observation: str, info: dict[str, Any]) -> str:
    """The env's own expert (``env.oracle_action()``)."""
    return env.oracle_action()


def random_policy(env: Any, observation: str, info: dict[str, Any]) -> str:
    """The env's uniform random baseline (``env.random_action()``)."""
    return env.random_action()


POLICIES: dict[str, Policy] = {"oracle": oracle_policy, "random": random_policy}


@dataclass
class EvalResult:
    """Aggregate of one policy on one env."""

    env_id: str
    policy: str
    episodes: int
    success_rate: float
    mean_reward: float
    mean_turns: float
    wall_s: float


def evaluate(
    env_id: str,
    policy_name: str,
    *,
    episodes: int = 20,
    seed: int = 0,
    env_kwargs: dict[str, Any] | None = None,
    on_episode: Callable[[], None] | None = None,
) -> EvalResult:
    """Run ``episodes`` episodes of ``policy_name`` on ``env_id`` and aggregate them."""
    if policy_name not in POLICIES:
        raise rllm_envs.InvalidEnvConfig(
            f"Unknown policy `{policy_name}`; expects one of {sorted(POLICIES)}."
        )
    policy = POLICIES[policy_name]
    env = gym.make(env_id, **(env_kwargs or {}))
    base = env.unwrapped
    base.action_space.seed(seed)
    n_tasks = len(base.tasks)
    successes, rewards, turns = 0, 0.0, 0
    start = time.perf_counter()
    for i in range(episodes):
        observation, info = env.reset(seed=seed + i, options={"index": i % n_tasks})
        total, done = 0.0, False
        while not done:
            observation, reward, terminated, truncated, info = env.step(
                policy(base, observation, info)
            )
            total += float(reward)
            done = terminated or truncated
        successes += bool(info["is_correct"])
        rewards += total
        turns += info["turn"]
        if on_episode is not None:
            on_episode()
    env.close()
    return EvalResult(
        env_id=env_id,
        policy=policy_name,
        episodes=episodes,
        success_rate=successes / episodes,
        mean_reward=rewards / episodes,
        mean_turns=turns / episodes,
        wall_s=time.perf_counter() - start,
    )


def evaluate_all(
    env_ids: Iterable[str],
    policies: Iterable[str],
    *,
    episodes: int = 20,
    seed: int = 0,
    progress: bool = True,
) -> list[EvalResult]:
    """Evaluate every policy on every env, with a progress bar."""
    from rich.progress import Progress

    env_ids, policies = list(env_ids), list(policies)
    results = []
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("evaluating", total=len(env_ids) * len(policies) * episodes)
        for env_id in env_ids:
            for name in policies:
                bar.update(task, description=f"{env_id} / {name}")
                results.append(
                    evaluate(
                        env_id,
                        name,
                        episodes=episodes,
                        seed=seed,
                        on_episode=lambda: bar.advance(task),
                    )
                )
    return results


def as_records(results: Iterable[EvalResult]) -> list[dict[str, Any]]:
    """Results as plain dicts (for JSON)."""
    return [asdict(r) for r in results]
