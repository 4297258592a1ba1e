"""Leaderboard runs: fixed evaluation episodes, results written episode by episode, resumable.

A run directory holds ``meta.json`` (config and :func:`benchmarks.provenance.provenance`),
``episodes.jsonl`` (one :class:`~benchmarks.leaderboard.protocol.EpisodeRecord` per line,
appended and flushed as each episode ends), ``summary.json`` (metrics per env) and, with
``transcripts=True``, ``transcripts.jsonl`` (each episode's conversation). Running the
same config into the same directory again skips the episodes already recorded.

Every env with a task seed is evaluated in its evaluation universe
(:data:`rllm_envs.tasks.EVAL_TASK_SEED`: questions, answers and worlds no training seed
shares) unless ``split="train"`` or the column's ``env_kwargs`` set ``task_seed``.

An env can be evaluated under several settings, each its own leaderboard column: an entry
``"<env id>@<variant>"`` in ``envs`` is the env with ``env_kwargs["<env id>@<variant>"]``, e.g.
``rllm/FrozenLake-v1`` on the trained map next to ``rllm/FrozenLake-v1@random-4x4`` on random
maps of the same size (:data:`FROZENLAKE_RANDOM_4X4`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import rllm_envs
from benchmarks.leaderboard.passk import mean_pass_at_k
from benchmarks.leaderboard.players import make_player
from benchmarks.leaderboard.protocol import (
    ColumnJob,
    EpisodeRecord,
    EvalEpisode,
    Player,
    is_multiagent,
)
from benchmarks.provenance import provenance
from rllm_envs.error import InvalidEnvConfig
from rllm_envs.tasks import EVAL_TASK_SEED

#: Random 4x4 maps (not slippery): the generalisation column next to a policy trained on one map.
FROZENLAKE_RANDOM_4X4 = ("rllm/FrozenLake-v1@random-4x4", {"size": 4, "is_slippery": False})


def base_env_id(column: str) -> str:
    """The env id of a leaderboard column (``"<env id>@<variant>"`` or a plain id)."""
    return column.partition("@")[0]


@dataclass
class LeaderboardConfig:
    """What a leaderboard run evaluates.

    Attributes:
        policy: Policy spec (see :mod:`benchmarks.leaderboard.players`).
        envs: Env ids, or ``"<env id>@<variant>"`` columns (the env with that entry's
            ``env_kwargs``); empty means every registered env, single- and multi-agent.
        n_tasks: Evaluation tasks per env (task indices ``0..n_tasks-1``).
        k: Samples per task (pass@k is reported for this k).
        seed: Base seed; episode seeds derive from it, identical for every policy.
        env_kwargs: Constructor kwargs per env id.
        name: Run name (directory name); defaults to a slug of ``policy``.
        policy_kwargs: Settings of model policies (``temperature``, ``max_tokens``,
            ``concurrency``, ``agent``, ``agent_kwargs``, ``engine_kwargs``,
            ``env_settings``; see :class:`~benchmarks.leaderboard.model_player.ModelPlayer`).
        transcripts: Write each episode's conversation to ``transcripts.jsonl`` (a model's
            chat; a scripted policy's observations and actions; multi-agent: the model's agents).
        split: ``"eval"`` (default): envs with a task seed play the evaluation universe
            (:data:`rllm_envs.tasks.EVAL_TASK_SEED`); ``"train"``: their default seed, the
            universe training draws from. A ``task_seed`` in ``env_kwargs`` wins.
    """

    policy: str
    envs: list[str] = field(default_factory=list)
    n_tasks: int = 20
    k: int = 1
    seed: int = 0
    env_kwargs: dict[str, dict[str, Any]] = field(default_factory=dict)
    name: str = ""
    policy_kwargs: dict[str, Any] = field(default_factory=dict)
    transcripts: bool = False
    split: str = "eval"

    def __post_init__(self) -> None:
        if self.split not in ("eval", "train"):
            raise InvalidEnvConfig(
                f"Expects `split` to be 'eval' or 'train', actual: {self.split!r}."
            )
        known = {**rllm_envs.list_envs(), **rllm_envs.list_multiagent_envs()}
        if not self.envs:
            self.envs = list(known)
        for column in self.envs:
            env_id = base_env_id(column)
            if env_id not in known:
                raise InvalidEnvConfig(
                    f"Unknown env id `{env_id}` in `envs`."
                    + rllm_envs.error.did_you_mean(env_id, known)
                )
        if self.n_tasks < 1 or self.k < 1:
            raise InvalidEnvConfig(
                f"Expects n_tasks >= 1 and k >= 1, actual n_tasks={self.n_tasks}, k={self.k}."
            )
        if not self.name:
            self.name = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.policy)


def eval_episodes(
    env_id: str, n_tasks: int, k: int, seed: int, n_source: int, column: str = ""
) -> list[EvalEpisode]:
    """The fixed evaluation episodes of one env: task ``i % n_source``, sample ``j``."""
    return [
        EvalEpisode(env_id, i, i % n_source, j, seed + i * k + j, column)
        for i in range(n_tasks)
        for j in range(k)
    ]


def _load_records(path: Path) -> list[EpisodeRecord]:
    if not path.exists():
        return []
    records = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                records.append(EpisodeRecord(**json.loads(line)))
            except (json.JSONDecodeError, TypeError):
                break  # a line cut by an interruption: everything before it is kept
    return records


def universe_kwargs(env_id: str, env_kwargs: dict[str, Any], split: str) -> dict[str, Any]:
    """``env_kwargs`` with the evaluation universe's ``task_seed`` for ``split="eval"``.

    Only for envs that take a ``task_seed`` and only when ``env_kwargs`` does not set one.
    """
    import inspect

    if split != "eval" or "task_seed" in env_kwargs:
        return dict(env_kwargs)
    cls = rllm_envs.resolve(rllm_envs.env_entry(env_id).entry_point)
    if "task_seed" not in inspect.signature(cls.__init__).parameters:
        return dict(env_kwargs)
    return {**env_kwargs, "task_seed": EVAL_TASK_SEED}


def source_size(env_id: str, env_kwargs: dict[str, Any]) -> int:
    """Number of tasks in the env's task source (evaluation rows cycle through them)."""
    if is_multiagent(env_id):
        ma_env = rllm_envs.make_parallel(env_id, **env_kwargs)
        size = len(ma_env.tasks)
        ma_env.close()
        return size
    env = gym.make(env_id, **env_kwargs)
    base: Any = env.unwrapped  # an rllm_envs TextEnv
    size = len(base.tasks)
    env.close()
    return size


def run(
    config: LeaderboardConfig,
    out_dir: str | Path,
    *,
    player: Player | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run (or resume) a leaderboard run; returns its summary (also saved as summary.json)."""
    from rich.progress import Progress

    run_dir = Path(out_dir) / config.name
    run_dir.mkdir(parents=True, exist_ok=True)
    meta_path, episodes_path = run_dir / "meta.json", run_dir / "episodes.jsonl"
    config_dict = asdict(config)
    if meta_path.exists():
        # Through LeaderboardConfig: a run recorded before a setting existed has its default.
        previous = asdict(
            LeaderboardConfig(**json.loads(meta_path.read_text(encoding="utf-8"))["config"])
        )
        if previous != config_dict:
            raise InvalidEnvConfig(
                f"{run_dir} holds a run with another config ({previous}); pass another "
                "--name or --out to start a new run, or the same settings to resume it."
            )
    if player is None:
        transcripts = run_dir / "transcripts.jsonl" if config.transcripts else None
        player = make_player(config.policy, transcripts=transcripts, **config.policy_kwargs)
    records = _load_records(episodes_path)
    # Rewrite the file without a possibly cut last line before appending.
    with episodes_path.open("w", encoding="utf-8") as f:
        f.writelines(json.dumps(asdict(r)) + "\n" for r in records)
    meta = {
        "config": config_dict,
        "policy": player.config(),
        # When the run (re)started, the commit, the machine and the package versions.
        "provenance": provenance(),
        "resumed_with": len(records),
    }
    meta_path.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    done = {(r.env_id, r.row, r.sample) for r in records}
    jobs = []
    for column in config.envs:
        env_id = base_env_id(column)
        kwargs = universe_kwargs(env_id, config.env_kwargs.get(column, {}), config.split)
        specs = eval_episodes(
            env_id, config.n_tasks, config.k, config.seed, source_size(env_id, kwargs), column
        )
        todo = [s for s in specs if (column, s.row, s.sample) not in done]
        jobs.append(ColumnJob(column, todo, kwargs))
    total = sum(len(j.episodes) for j in jobs)
    try:
        with (
            Progress(disable=not progress, transient=True) as bar,
            episodes_path.open("a", encoding="utf-8") as out,
        ):
            task = bar.add_task(f"{config.name}", total=total)

            def keep(column: str, record: EpisodeRecord) -> None:
                record.env_id = column  # the column it belongs to (a variant's label)
                out.write(json.dumps(asdict(record)) + "\n")
                out.flush()
                records.append(record)
                bar.advance(task)

            play_columns = getattr(player, "play_columns", None)
            if play_columns is not None:  # every column at once (a model: one engine)
                bar.update(task, description=f"{config.name}: {len(jobs)} envs at once")
                play_columns(jobs, keep)
            else:
                for job in jobs:
                    bar.update(task, description=f"{config.name}: {job.column}")
                    for record in player.play(job.episodes, job.env_kwargs):
                        keep(job.column, record)
    finally:
        player.close()
    summary = summarize(records, config)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary


def format_rate(records: Iterable[EpisodeRecord]) -> float:
    r"""Share of the policy's turns whose reply the env could use (no ``invalid_action``).

    Every env flags a reply it cannot parse (no ``\boxed{}``, no tool call or answer, no code
    block, no move) with ``info["invalid_action"]``, so this is the format rate of boxed
    answers, tool calls, code blocks and moves alike (NaN without turns).
    """
    rs = list(records)
    turns = sum(r.turns for r in rs)
    if not turns:
        return float("nan")
    return 1.0 - min(sum(r.invalid_actions for r in rs), turns) / turns


def _mean_metrics(records: list[EpisodeRecord]) -> dict[str, float]:
    """The mean of each env-specific metric over the records that report it."""
    values: dict[str, list[float]] = defaultdict(list)
    for r in records:
        for name, value in (r.metrics or {}).items():
            values[name].append(float(value))
    return {name: float(np.mean(v)) for name, v in values.items()}


def summarize(records: Iterable[EpisodeRecord], config: LeaderboardConfig) -> dict[str, Any]:
    """Metrics per env (pass@1, pass@k, reward, turns, tokens, wall time, format rate)."""
    by_env: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for r in records:
        by_env[r.env_id].append(r)
    envs = {}
    for env_id in config.envs:
        rs = by_env.get(env_id, [])
        if not rs:
            continue
        groups: dict[int, list[bool]] = defaultdict(list)
        for r in rs:
            groups[r.row].append(r.success)
        counts = [(len(v), sum(v)) for v in groups.values()]
        envs[env_id] = {
            "episodes": len(rs),
            "pass@1": mean_pass_at_k(counts, 1),
            f"pass@{config.k}": mean_pass_at_k(counts, config.k),
            "mean_reward": float(np.mean([r.reward for r in rs])),
            "mean_turns": float(np.mean([r.turns for r in rs])),
            "mean_tokens": float(np.mean([r.tokens for r in rs])),
            "wall_s": float(sum(r.wall_s for r in rs)),
            "format_rate": format_rate(rs),
            **_mean_metrics(rs),
        }
    overall = float(np.mean([m["pass@1"] for m in envs.values()])) if envs else float("nan")
    return {
        "run": config.name,
        "policy": config.policy,
        "k": config.k,
        "envs": envs,
        "overall_pass@1": overall,
    }
