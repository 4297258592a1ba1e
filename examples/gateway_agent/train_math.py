"""Train an agent that only speaks the OpenAI API, with our GRPO trainer, through the gateway.

The agent (:mod:`math_agent`, next to this file) imports nothing of ours. This driver:

1. starts the gateway on a checkpoint (``--model``; it launches a vLLM server) with an
   episode store;
2. each iteration, draws ``rllm/Math-v1`` tasks, opens one gateway session per sample and
   runs the agent with the session's base URL -- the gateway records every call
   token-exactly -- then ends each session with its reward;
3. hands the recorded trajectories to :class:`rllm_adapters.trainer.trainer.PPOTrainer` (GRPO),
   whose weight pushes go to the gateway, which hot-swaps them into the engine.

The reward is the env's own score plus an optional brevity term (``--brevity``): the tiny
random test model never solves a problem, so without it GRPO would have no signal to learn
from; with a real model set ``--brevity 0``::

    python examples/gateway_agent/train_math.py --model tiny --iterations 3
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from math_agent import solve  # noqa: E402

ENV_ID = "rllm/Math-v1"


def train(
    *,
    model: str = "tiny",
    output_dir: str | Path = "runs/gateway-math",
    iterations: int = 3,
    num_tasks: int = 2,
    group_size: int = 4,
    max_tokens: int = 24,
    brevity: float = 0.5,
    lr: float = 1e-3,
    seed: int = 0,
    engine_args: tuple[str, ...] = ("--dtype=float32", "--max-model-len=2048"),
) -> dict[str, Any]:
    """Run the loop above; return the trainer's history and where everything was written."""
    import gymnasium as gym

    import rllm_envs  # noqa: F401
    from rllm_adapters.gateway import GatewayConfig
    from rllm_adapters.gateway.client import GatewayClient, GatewayWeightSync
    from rllm_adapters.gateway.server import GatewayServer
    from rllm_adapters.gateway.sessions import score_with_env
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer

    out = Path(output_dir)
    out.mkdir(parents=True, exist_ok=True)
    store_path = out / "episodes.db"
    gateway = GatewayServer(
        GatewayConfig(
            model=model,
            served_model_name="policy",
            engine_args=list(engine_args),
            port=0,
            store=str(store_path),
            run="gateway-math",
        )
    ).start()
    client = GatewayClient(gateway.url)
    weights = GatewayWeightSync(client, out / "weights", keep=None)
    store = gateway.gateway.store
    env = gym.make(ENV_ID)
    cap = 4 * max_tokens  # characters

    def episode(job: tuple[int, int, int, str, str, int]) -> dict[str, Any]:
        group, sample, task_seed, task_id, question, iteration = job
        session = client.create_session(
            env_id=ENV_ID,
            task_id=task_id,
            seed=task_seed,
            group=group,
            sample=sample,
            run=f"gateway-math-{iteration}",
        )
        sid = session["session_id"]
        try:
            reply = solve(
                question,
                base_url=session["base_url"],
                model="policy",
                max_tokens=max_tokens,
                temperature=1.0,
            )
        except Exception as e:  # the agent failed: the episode earns nothing
            return client.reward(sid, 0.0, info={"agent_error": str(e)})
        scored = score_with_env(ENV_ID, reply, seed=task_seed)
        reward = scored["reward"] + brevity * (1.0 - min(len(reply), cap) / cap)
        return client.reward(sid, reward, info={**scored["info"], "env_reward": scored["reward"]})

    def rollout_fn(policy: Any, iteration: int) -> list[Any]:
        jobs = []
        for group in range(num_tasks):
            task_seed = seed * 1_000_003 + iteration * num_tasks + group
            question, info = env.reset(seed=task_seed)
            task_id = str(info["task_id"])
            jobs += [(group, s, task_seed, task_id, question, iteration) for s in range(group_size)]
        with ThreadPoolExecutor(len(jobs)) as pool:
            done = list(pool.map(episode, jobs))
        hashes = {d["hash"] for d in done}
        return [
            e.trajectory
            for e in store.episodes(run=f"gateway-math-{iteration}")
            if e.hash in hashes
        ]

    config = config_from_dict(
        {
            "model": model,
            "env": ENV_ID,
            "rollout": {
                "num_tasks": num_tasks,
                "group_size": group_size,
                "max_tokens": max_tokens,
                "temperature": 1.0,
            },
            "algorithm": {
                "advantage": "grpo",
                "kl_coef": 0.0,
                "ppo_epochs": 1,
                "mini_batch_size": num_tasks * group_size,
                "micro_batch_size": num_tasks * group_size,
            },
            "optim": {"lr": lr},
            "train": {"iterations": iterations, "output_dir": str(out / "run"), "seed": seed},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    try:
        with PPOTrainer(config, rollout_fn=rollout_fn, policy=weights) as trainer:
            history = trainer.train()
        metrics = client.metrics()
    finally:
        env.close()
        client.close()
        gateway.stop()
    return {
        "history": history,
        "store": str(store_path),
        "run_dir": str(out / "run"),
        "weights": [str(p) for p in weights.versions],
        "gateway_metrics": metrics,
    }


def main() -> None:
    """Command line of :func:`train`."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--output-dir", default="runs/gateway-math")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--num-tasks", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--max-tokens", type=int, default=24)
    parser.add_argument("--brevity", type=float, default=0.5)
    args = parser.parse_args()
    result = train(
        model=args.model,
        output_dir=args.output_dir,
        iterations=args.iterations,
        num_tasks=args.num_tasks,
        group_size=args.group_size,
        max_tokens=args.max_tokens,
        brevity=args.brevity,
    )
    for row in result["history"]:
        print(
            json.dumps({k: row[k] for k in ("rollout/reward", "batch/update_skipped") if k in row})
        )
    print(f"episodes in {result['store']}; trained model in {result['run_dir']}/final_model")


if __name__ == "__main__":
    main()
