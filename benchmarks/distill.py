"""Distillation recipe: teacher episodes -> SFT of the tiny model -> RL from the SFT checkpoint.

On random 4x4 FrozenLake maps (``rllm/FrozenLake-v1`` at difficulty 1: a fresh map per task
with a guaranteed safe path, 20% holes, not slippery), fully offline on CPU::

    python -m benchmarks.distill --out runs/distill                # the whole recipe
    python -m benchmarks.distill --out runs/distill --stage teacher  # episodes only

1. **Teacher** (``--teacher``): ``oracle`` (the env's ``oracle_action()``, shortest safe
   path) or any model policy spec of the leaderboard -- ``vllm:<folder or hub id>``,
   ``hf:<folder>`` (a checkpoint), ``openai:<base url>:<model>`` -- plays the SFT task indices.
   Its episodes go into an episode store (``<out>/episodes.db``, run ``teacher``). Oracle
   episodes are tokenised for the student exactly as the rollout loop would have built them
   (:func:`rllm_adapters.trainer.sft.retokenize`); a model teacher's episodes are rebuilt the same
   way at SFT time (``data.retokenize``) when its tokenizer is not the student's.
2. **SFT** (``configs/frozenlake_sft.yaml``): the tiny model on the solved teacher episodes
   (rejection sampling: ``data.correct: true``), packed, loss on the replies only.
3. **RL** (``configs/frozenlake_distill_rl.yaml``): GRPO with the RL trainer from
   ``<out>/sft/final_model``, on fresh random maps.

Evaluation: greedy play on **held-out maps**: task indices from ``--eval-start`` on, never
used by SFT (indices ``[0, n_teacher)``) nor by RL (the trainer's own task draws are
reproduced from its seeds and checked; any overlap would be skipped and reported). Success
rates come with 95% Wilson intervals, before SFT (the untrained tiny model), after every SFT
epoch, and every few RL iterations. Writes ``<out>/results.json`` and ``<out>/curves.png``;
``--results``/``--docs`` copy them to the committed places.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.provenance import provenance

ENV_ID = "rllm/FrozenLake-v1"
#: Difficulty 1 = random 4x4 maps with a guaranteed path (not the fixed Gymnasium 4x4).
#: A 10-move budget: every 4x4 map needs exactly 6 (S and G sit in opposite corners); the
#: env's default of 16 only makes failing episodes (and CPU evaluation) longer.
ENV_KWARGS: dict[str, Any] = {
    "difficulty": 1,
    "max_turns": 10,
    "reward_weights": {"invalid_action": -0.1},
}
AGENT = "rllm_agents.agent:FrozenLakeBoardAgent"
AGENT_KWARGS: dict[str, Any] = {"system_prompt": None}
#: Held-out maps start here (far from the SFT range ``[0, n_teacher)``).
EVAL_START = 1_000_000_000
SFT_CONFIG = "configs/frozenlake_sft.yaml"
RL_CONFIG = "configs/frozenlake_distill_rl.yaml"
TEACHER_RUN = "teacher"


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def _log(message: str) -> None:
    print(f"[distill] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------- teacher


def oracle_episodes(
    task_indices: Sequence[int],
    tokenizer: Any,
    *,
    env_id: str = ENV_ID,
    env_kwargs: dict[str, Any] | None = None,
    seed: int = 0,
) -> list[Any]:
    """The env's oracle plays each task; episodes tokenised for ``tokenizer``'s model.

    The agent is the one the student trains with, so the prompts are exactly those the
    student's rollouts will show it; each reply is the oracle's move.
    """
    import gymnasium as gym

    import rllm_envs  # noqa: F401  (registers the envs)
    from rllm_adapters.trainer.sft import retokenize
    from rllm_agents.agent import make_agent
    from rllm_agents.chat import ChatTokenizer
    from rllm_agents.trajectory import Step, Trajectory, to_jsonable

    chat = ChatTokenizer(tokenizer)
    env = gym.make(env_id, **(ENV_KWARGS if env_kwargs is None else env_kwargs))
    base: Any = env.unwrapped
    out = []
    try:
        for group, index in enumerate(task_indices):
            agent = make_agent(env_id, AGENT, **AGENT_KWARGS)
            observation, info = env.reset(seed=seed + group, options={"index": int(index)})
            agent.reset(str(observation), info)
            trajectory = Trajectory(
                env_id=env_id,
                task_id=str(info.get("task_id")),
                seed=seed + group,
                group=group,
                initial_observation=str(observation),
                initial_info=to_jsonable(dict(info)),
                metadata={"policy": "oracle", "agent": type(agent).__name__},
            )
            done = False
            while not done:
                reply = base.oracle_action()
                action = agent.act(reply)
                observation, reward, terminated, truncated, info = env.step(action)
                trajectory.steps.append(
                    Step(
                        prompt_ids=[],
                        completion_ids=[],
                        logprobs=[],
                        response=reply,
                        action=action,
                        observation=str(observation),
                        reward=float(reward),
                        terminated=bool(terminated),
                        truncated=bool(truncated),
                        info=to_jsonable(dict(info)),
                    )
                )
                done = bool(terminated or truncated)
                if not done:
                    agent.observe(str(observation), float(reward), False, False, info)
            trajectory.finish = "terminated" if trajectory.steps[-1].terminated else "truncated"
            trajectory.messages = list(agent.messages)
            out.append(retokenize(trajectory, chat))
    finally:
        env.close()
    return out


def model_episodes(
    spec: str,
    task_indices: Sequence[int],
    *,
    max_tokens: int,
    temperature: float = 0.0,
    seed: int = 0,
) -> list[Any]:
    """A model teacher (a leaderboard spec: ``vllm:``, ``hf:``, ``openai:``) plays the tasks."""
    from benchmarks.leaderboard.model_player import parse_spec
    from rllm_adapters.backends import make_policy
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.rollout import RolloutConfig, rollout

    backend, model, base_url = parse_spec(spec)
    kwargs: dict[str, Any] = {"base_url": base_url} if base_url else {}
    policy = make_policy(backend, model, **kwargs)
    try:
        config = RolloutConfig(
            num_envs=32,
            sampling=SamplingParams(max_tokens=max_tokens, temperature=temperature, seed=None),
            seed=seed,
            agent_kwargs=dict(AGENT_KWARGS),
            progress=False,
        )
        return rollout(
            ENV_ID,
            policy,
            config,
            tasks=[int(i) for i in task_indices],
            agent=AGENT,
            env_kwargs=ENV_KWARGS,
        )
    finally:
        policy.close()


# ---------------------------------------------------------------------- evaluation


def evaluate(
    model_path: str,
    task_indices: Sequence[int],
    *,
    backend: str,
    max_tokens: int,
    unseen: Sequence[bool] | None = None,
) -> dict[str, Any]:
    """Greedy play of ``model_path`` on each task once; success rate and Wilson interval.

    ``unseen`` marks the tasks whose map layout the training data never showed: their
    success rate is reported too (``unseen_layouts``).
    """
    from rllm_adapters.backends import make_policy
    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.rollout import RolloutConfig, rollout

    started = time.perf_counter()
    kwargs: dict[str, Any] = {}
    if backend == "vllm":
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
        kwargs = {"max_model_len": 4096, "dtype": "float32"}
    policy = make_policy(backend, model_path, **kwargs)
    try:
        config = RolloutConfig(
            num_envs=64,
            sampling=SamplingParams(max_tokens=max_tokens, temperature=0.0, seed=None),
            agent_kwargs=dict(AGENT_KWARGS),
            progress=False,
        )
        trajectories = rollout(
            ENV_ID,
            policy,
            config,
            tasks=[int(i) for i in task_indices],
            agent=AGENT,
            env_kwargs=ENV_KWARGS,
        )
    finally:
        policy.close()
    wins = sum(t.is_correct for t in trajectories)
    n = len(trajectories)
    low, high = wilson(wins, n)
    invalid = [s.info.get("invalid_action", False) for t in trajectories for s in t.steps]
    extra: dict[str, Any] = {}
    if unseen is not None:
        # rollout() returns the episodes in task order (group, then sample).
        picked = [t for t, u in zip(trajectories, unseen, strict=True) if u]
        k = sum(t.is_correct for t in picked)
        extra["unseen_layouts"] = {
            "success": k / max(len(picked), 1),
            "ci95": list(wilson(k, len(picked))),
            "n": len(picked),
        }
    return {
        **extra,
        "success": wins / max(n, 1),
        "ci95": [low, high],
        "successes": wins,
        "n": n,
        "mean_turns": sum(t.num_turns for t in trajectories) / max(n, 1),
        "invalid_action_rate": sum(map(bool, invalid)) / max(len(invalid), 1),
        "eval_s": round(time.perf_counter() - started, 2),
    }


def rl_task_indices(config: Any, iterations: int) -> set[int]:
    """The task indices the RL trainer draws in ``iterations`` iterations (one process).

    The trainer resets task group ``g`` of iteration ``i`` with its rollout seed plus ``g``
    and the env draws the task from that seed: replaying the resets gives the indices.
    """
    import gymnasium as gym

    import rllm_envs  # noqa: F401
    from rllm_adapters.trainer.rollouts import RolloutCollector

    collector = RolloutCollector(config, rank=0, world_size=1, show_progress=False)
    env = gym.make(config.env, **config.env_kwargs)
    out: set[int] = set()
    try:
        for it in range(iterations):
            seed = collector.seed(it)
            for g in range(config.rollout.num_tasks):
                _, info = env.reset(seed=seed + g)
                out.add(int(info["task_index"]))
    finally:
        env.close()
        collector.close()
    return out


# ---------------------------------------------------------------------- the recipe


def _maps(indices: Sequence[int]) -> list[tuple[str, ...]]:
    import gymnasium as gym

    import rllm_envs  # noqa: F401

    env = gym.make(ENV_ID, **ENV_KWARGS)
    try:
        tasks = env.unwrapped.tasks  # type: ignore[attr-defined]
        return [tuple(tasks[int(i)]["map"]) for i in indices]
    finally:
        env.close()


def run(args: argparse.Namespace, argv: Sequence[str] | None = None) -> dict[str, Any]:
    """The whole recipe; returns the results dict (also written to ``<out>/results.json``).

    ``argv``, the command-line arguments, is recorded in the results as their command.
    """
    import torch

    from rllm_adapters.tiny_model import tiny_model_path
    from rllm_adapters.trainer.config import load_config
    from rllm_adapters.trainer.metrics import read_metrics
    from rllm_adapters.trainer.sft_config import load_sft_config
    from rllm_agents.store import EpisodeStore

    torch.set_num_threads(max(1, args.threads))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.resume:
        # A fresh run: the trainers would otherwise resume their old checkpoints.
        for name in ("sft", "rl"):
            shutil.rmtree(out / name, ignore_errors=True)
        for name in ("episodes.db", "episodes.db-wal", "episodes.db-shm"):
            (out / name).unlink(missing_ok=True)
    timings: dict[str, float] = {}
    t_all = time.perf_counter()
    student = str(tiny_model_path())
    teacher_tasks = list(range(args.n_teacher))
    db = out / "episodes.db"

    # 1. teacher episodes into the store
    t0 = time.perf_counter()
    if args.teacher == "oracle":
        from transformers import AutoTokenizer

        episodes = oracle_episodes(teacher_tasks, AutoTokenizer.from_pretrained(student))
    else:
        episodes = model_episodes(args.teacher, teacher_tasks, max_tokens=args.max_tokens)
    with EpisodeStore(db) as store:
        store.put_many(episodes, run=TEACHER_RUN, model=args.teacher, env_kwargs=ENV_KWARGS)
    teacher_success = sum(t.is_correct for t in episodes) / max(len(episodes), 1)
    timings["teacher_s"] = time.perf_counter() - t0
    _log(
        f"teacher {args.teacher}: {len(episodes)} episodes, success {teacher_success:.3f}, "
        f"{timings['teacher_s']:.1f}s -> {db}"
    )
    if args.stage == "teacher":
        return {"teacher_episodes": len(episodes), "teacher_success": teacher_success}

    # the RL run's configuration decides which maps it trains on: keep them out of the eval
    rl_overrides = [
        f"model={out / 'sft' / 'final_model'}",
        f"train.output_dir={out / 'rl'}",
        f"train.iterations={args.rl_iterations}",
        f"rollout.backend={args.backend}",
        "logging.progress=false",
    ]
    rl_config = load_config(args.rl_config, rl_overrides)
    rl_tasks = rl_task_indices(rl_config, args.rl_iterations)
    held_out: list[int] = []
    skipped = 0
    index = args.eval_start
    while len(held_out) < args.n_eval:
        if index in rl_tasks or index < args.n_teacher:
            skipped += 1
        else:
            held_out.append(index)
        index += 1
    teacher_maps = set(_maps(teacher_tasks))
    eval_maps = _maps(held_out)
    unseen = [m not in teacher_maps for m in eval_maps]
    layout_overlap = 1.0 - sum(unseen) / len(eval_maps)
    evaluate_kwargs = {"backend": args.backend, "max_tokens": args.max_tokens, "unseen": unseen}

    def eval_model(path: str, label: str) -> dict[str, Any]:
        result = evaluate(path, held_out, **evaluate_kwargs)
        lo, hi = result["ci95"]
        _log(
            f"{label}: success {result['success']:.3f} [{lo:.3f}, {hi:.3f}] on "
            f"{result['n']} held-out maps ({result['eval_s']:.1f}s)"
        )
        if "unseen_layouts" in result:
            u = result["unseen_layouts"]
            _log(f"  on the {u['n']} maps with a layout not in the SFT data: {u['success']:.3f}")
        return result

    # 2. before SFT
    t0 = time.perf_counter()
    before = eval_model(student, "before SFT")
    timings["eval_before_s"] = time.perf_counter() - t0

    # 3. SFT: `python -m rllm_adapters.train` with the SFT config (a process of its own: DeepSpeed's
    # process group and vLLM's in-process engine do not share one process)
    t0 = time.perf_counter()
    sft_overrides = [
        f"data.store={db}",
        f"data.run={TEACHER_RUN}",
        f"data.retokenize={str(args.teacher != 'oracle').lower()}",
        f"train.output_dir={out / 'sft'}",
        f"sft.epochs={args.sft_epochs}",
        "logging.progress=false",
    ]
    load_sft_config(args.sft_config, sft_overrides)  # fail early on a bad config
    _train(args.sft_config, sft_overrides, out / "sft.log")
    timings["sft_s"] = time.perf_counter() - t0
    after_sft = eval_model(str(out / "sft" / "final_model"), "after SFT")
    sft_metrics = read_metrics(out / "sft" / "metrics.jsonl")
    sft_selection = {k: v for k, v in sft_metrics[0].items() if k.startswith("data/")}

    # 4. RL from the SFT checkpoint, in segments with a held-out evaluation after each
    t0 = time.perf_counter()
    rl_eval_time = 0.0
    rl_curve: list[dict[str, Any]] = [{"iteration": 0, **_short(after_sft)}]
    done = 0
    result = after_sft
    while done < args.rl_iterations:
        done = min(done + args.rl_eval_every, args.rl_iterations)
        segment = [o for o in rl_overrides if not o.startswith("train.iterations=")]
        _train(args.rl_config, [*segment, f"train.iterations={done}"], out / "rl.log")
        t_eval = time.perf_counter()
        result = eval_model(str(out / "rl" / "final_model"), f"RL iteration {done}")
        rl_curve.append({"iteration": done, **_short(result)})
        rl_eval_time += time.perf_counter() - t_eval
    timings["rl_s"] = time.perf_counter() - t0 - rl_eval_time
    timings["rl_eval_s"] = rl_eval_time
    after_rl = result
    timings["total_s"] = time.perf_counter() - t_all

    rl_metrics = read_metrics(out / "rl" / "metrics.jsonl")
    results = {
        **provenance("benchmarks.distill", argv),
        "env": ENV_ID,
        "env_kwargs": ENV_KWARGS,
        "agent": AGENT,
        "student": "tiny (Qwen2, hidden 128, 2 layers, random init)",
        "teacher": args.teacher,
        "teacher_episodes": len(episodes),
        "teacher_success": teacher_success,
        "sft_data": sft_selection,
        "held_out": {
            "n_maps": len(held_out),
            "task_indices": [held_out[0], held_out[-1]],
            "skipped_as_trained_on": skipped,
            "layout_seen_in_sft_data": layout_overlap,
            "decoding": "greedy",
        },
        "success": {"before_sft": before, "after_sft": after_sft, "after_rl": after_rl},
        "curves": {
            "sft_eval": [
                {"step": 0, "epoch": 0, **_short(before)},
                {
                    "step": sft_metrics[-1]["iteration"],
                    "epoch": args.sft_epochs,
                    **_short(after_sft),
                },
            ],
            "sft_train": [
                {
                    "step": m["iteration"],
                    "loss": m["sft/loss"],
                    "token_accuracy": m["sft/token_accuracy"],
                }
                for m in sft_metrics
            ],
            "rl_eval": rl_curve,
            "rl_train": [
                {
                    "iteration": m["iteration"],
                    "success": m.get("rollout/success"),
                    "reward": m.get("rollout/reward"),
                }
                for m in rl_metrics
            ],
        },
        "settings": {
            "n_teacher": args.n_teacher,
            "n_eval": args.n_eval,
            "sft_epochs": args.sft_epochs,
            "rl_iterations": args.rl_iterations,
            "rl_episodes_per_iteration": rl_config.rollout.batch_size,
            "backend": args.backend,
            "max_tokens": args.max_tokens,
            "threads": args.threads,
            "sft_config": args.sft_config,
            "rl_config": args.rl_config,
        },
        "timings_s": {k: round(v, 1) for k, v in timings.items()},
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    plot(results, out / "curves.png")
    return results


def _train(config: str, overrides: Sequence[str], log: Path) -> None:
    """``python -m rllm_adapters.train --config <config> <overrides>``, output into ``log``."""
    import subprocess

    command = [sys.executable, "-m", "rllm_adapters.train", "--config", config, *overrides]
    _log(" ".join(command[1:]))
    with log.open("a", encoding="utf-8") as f:
        subprocess.run(command, check=True, stdout=f, stderr=subprocess.STDOUT)


def _short(result: dict[str, Any]) -> dict[str, Any]:
    return {"success": result["success"], "ci95": result["ci95"], "n": result["n"]}


def plot(results: dict[str, Any], path: Path) -> Path:
    """Three panels: SFT loss, held-out success through SFT, held-out success through RL."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = results["curves"]
    n = results["held_out"]["n_maps"]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    train = curves["sft_train"]
    axes[0].plot([r["step"] for r in train], [r["loss"] for r in train], label="loss")
    axes[0].set_xlabel("SFT optimizer step")
    axes[0].set_ylabel("completion-token NLL")
    ax0b = axes[0].twinx()
    ax0b.plot(
        [r["step"] for r in train],
        [r["token_accuracy"] for r in train],
        color="tab:orange",
        label="token accuracy",
    )
    ax0b.set_ylim(0, 1.02)
    ax0b.set_ylabel("token accuracy", color="tab:orange")
    axes[0].set_title("SFT on teacher episodes")

    def band(ax: Any, xs: list[Any], rows: list[dict[str, Any]], label: str) -> None:
        ys = [r["success"] for r in rows]
        ax.plot(xs, ys, marker="o", label=label)
        ax.fill_between(xs, [r["ci95"][0] for r in rows], [r["ci95"][1] for r in rows], alpha=0.2)

    sft_eval = curves["sft_eval"]
    band(axes[1], [r["epoch"] for r in sft_eval], sft_eval, f"held-out success (n={n})")
    axes[1].set_xlabel("SFT epoch (0 = before SFT)")
    axes[1].set_title("Held-out maps through SFT (greedy, 95% Wilson)")
    rl_eval = curves["rl_eval"]
    band(axes[2], [r["iteration"] for r in rl_eval], rl_eval, f"held-out success (n={n})")
    rl_train = [r for r in curves["rl_train"] if r["success"] is not None]
    axes[2].plot(
        [r["iteration"] for r in rl_train],
        [r["success"] for r in rl_train],
        alpha=0.6,
        label="training success (sampled)",
    )
    axes[2].set_xlabel("RL iteration (GRPO)")
    axes[2].set_title("RL from the SFT checkpoint")
    for ax in axes[1:]:
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("success rate")
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right", fontsize=8)
    axes[0].grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m benchmarks.distill", description=__doc__)
    p.add_argument("--out", default="runs/distill", help="run folder")
    p.add_argument("--stage", choices=("all", "teacher"), default="all")
    p.add_argument(
        "--teacher", default="oracle", help="oracle | vllm:<model> | hf:<path> | openai:<url>:<m>"
    )
    p.add_argument("--n-teacher", type=int, default=1000, help="SFT task indices [0, n)")
    p.add_argument("--n-eval", type=int, default=200, help="held-out maps")
    p.add_argument("--eval-start", type=int, default=EVAL_START)
    p.add_argument("--sft-epochs", type=int, default=4)
    p.add_argument("--rl-iterations", type=int, default=10)
    p.add_argument("--rl-eval-every", type=int, default=10)
    p.add_argument("--backend", choices=("vllm", "transformers"), default="vllm")
    p.add_argument("--max-tokens", type=int, default=3, help="per turn (eval and teacher)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--sft-config", default=SFT_CONFIG)
    p.add_argument("--rl-config", default=RL_CONFIG)
    p.add_argument(
        "--resume", action="store_true", help="keep <out>'s store and checkpoints (resume)"
    )
    p.add_argument("--results", default=None, help="also copy results.json here")
    p.add_argument("--docs", default=None, help="also copy curves.png into this folder")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks.distill``."""
    args = _parser().parse_args(argv)
    results = run(args, argv)
    out = Path(args.out)
    if args.stage == "all":
        if args.results:
            Path(args.results).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / "results.json", args.results)
        if args.docs:
            Path(args.docs).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(out / "curves.png", Path(args.docs) / "curves.png")
        s = results["success"]
        _log(
            "held-out success (n={n}): before SFT {b:.3f}, after SFT {a:.3f}, after RL {r:.3f}; "
            "total {t:.0f}s".format(
                n=results["held_out"]["n_maps"],
                b=s["before_sft"]["success"],
                a=s["after_sft"]["success"],
                r=s["after_rl"]["success"],
                t=results["timings_s"]["total_s"],
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
