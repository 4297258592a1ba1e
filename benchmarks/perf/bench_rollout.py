"""Rollout throughput: the async loop against raw vLLM, and env/generation overlap.

1. ``rollout_single_turn`` vs ``raw_llm_generate``: generated tokens/s of a single-turn rollout
   on ``rllm/Math-v0`` (reset, agent, chat template, vLLM, grading) against ``LLM.generate`` on
   the same prompt ids with the same sampling, on the same in-process vLLM-CPU engine with the
   tiny model. Goal: >= 0.9x.
2. ``rollout_slow_env_overlap``: a multi-turn env whose steps take a fixed time (a stand-in
   for a sandboxed code run: a blocking wait, calibrated to half the pure-generation time)
   against the bound where generation and env time overlap fully, ``max(T_gen, T_env)``.
   ``T_gen`` is the same rollout with instant env steps; ``T_env`` the total step time divided
   by the env workers. A lock-step loop would take ``T_gen + T_env`` (about 0.67x of the
   bound). Goal: >= 0.8x.

Run: ``.venv/bin/python -m pytest benchmarks/perf/bench_rollout.py --benchmark-only``.

The model is the tiny one by default; ``RLLM_BENCH_MODEL=smollm2-135m-instruct`` runs the same
benchmarks on the real model (:mod:`adapters.models`, 16 episodes x 64 tokens) and
``RLLM_BENCH_DTYPE=bfloat16`` (default ``float32``) picks the engine dtype, so the dtype is
chosen by measurement::

    VLLM_CPU_KVCACHE_SPACE=1 RLLM_BENCH_MODEL=smollm2-135m-instruct \
        .venv/bin/python -m pytest benchmarks/perf/bench_rollout.py --benchmark-only -k single
"""

from __future__ import annotations

import os
import random
import time

import gymnasium as gym
import pytest

pytest.importorskip("vllm")

import rllm_envs  # noqa: E402
from adapters.backends.base import SamplingParams  # noqa: E402
from adapters.rollout import (  # noqa: E402
    EnvPool,
    RolloutConfig,
    RolloutStats,
    rollout,
    rollout_stream,
)
from rllm_agents import ChatTokenizer, make_agent  # noqa: E402

MATH = "rllm/Math-v0" if any(e.id == "rllm/Math-v0" for e in rllm_envs.ENVS) else None
SINGLE_TURN_ENV = MATH or "rllm/FrozenLake-v0"
RESULTS: dict[str, tuple[int, float]] = {}
MAX_NUM_SEQS = 16
#: A model name or folder (``adapters.models``) and the engine dtype.
MODEL = os.environ.get("RLLM_BENCH_MODEL", "tiny")
DTYPE = os.environ.get("RLLM_BENCH_DTYPE", "float32")


def sizes(benchmark) -> tuple[int, int]:
    """(episodes, max_tokens): small when timing is disabled (the CI smoke run)."""
    if benchmark.disabled:
        return (8, 16)
    return (64, 64) if MODEL == "tiny" else (16, 64)


def _engine(max_num_seqs: int | None):
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from adapters.backends.vllm import VLLMPolicy
    from adapters.models import resolve_model

    extra = {} if max_num_seqs is None else {"max_num_seqs": max_num_seqs}
    engine = VLLMPolicy(
        resolve_model(MODEL),
        dtype=DTYPE,
        max_model_len=2048,
        seed=0,
        distributed_executor_backend="uni",
        **extra,
    )
    # Warm up (first batches compile/allocate).
    engine.generate_batch([[1, 2, 3]] * 4, SamplingParams(max_tokens=8))
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


def test_raw_llm_generate(benchmark, policy):
    import vllm

    episodes, max_tokens = sizes(benchmark)
    prompts = first_prompts(SINGLE_TURN_ENV, episodes, ChatTokenizer(policy.tokenizer))
    params = [
        # No per-request seed: vLLM-CPU crashes on seeded chunked prefills (the backend drops
        # them on CPU too, so both sides sample the same way).
        vllm.SamplingParams(max_tokens=max_tokens, temperature=1.0, logprobs=0)
        for _ in range(episodes)
    ]
    inputs = [{"prompt_token_ids": p} for p in prompts]
    totals = {"tokens": 0, "seconds": 0.0}

    def run():
        start = time.perf_counter()
        outputs = policy.llm.generate(inputs, params, use_tqdm=False)
        totals["seconds"] += time.perf_counter() - start
        totals["tokens"] += sum(len(o.outputs[0].token_ids) for o in outputs)

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    RESULTS["raw"] = (totals["tokens"], totals["seconds"])
    benchmark.extra_info.update(
        env=SINGLE_TURN_ENV, episodes=episodes, max_tokens=max_tokens, model=MODEL, dtype=DTYPE
    )


def test_rollout_single_turn(benchmark, policy):
    episodes, max_tokens = sizes(benchmark)
    config = RolloutConfig(
        num_envs=episodes,
        sampling=SamplingParams(max_tokens=max_tokens, temperature=1.0, seed=0),
        max_turns=1,
        progress=False,
    )
    totals = {"tokens": 0, "seconds": 0.0, "runs": 0}
    # Envs are built once and reused, as a trainer does across iterations.
    pool = EnvPool(SINGLE_TURN_ENV, episodes)

    def run():
        start = time.perf_counter()
        trajectories = rollout(pool, policy, config, num_tasks=episodes)
        totals["seconds"] += time.perf_counter() - start
        totals["runs"] += 1
        totals["tokens"] += sum(t.num_completion_tokens for t in trajectories)

    benchmark.pedantic(run, rounds=3, iterations=1, warmup_rounds=1)
    # The env's own CPU work per round (reset + grading), for reading the ratio on a small
    # CPU box where generation is cheap: it shares the cores (and the GIL) with the engine.
    start = time.perf_counter()
    for g, worker in enumerate(pool.workers):
        worker.env.reset(seed=g)
        worker.env.step("The answer is \\boxed{42}.")
    env_cpu = time.perf_counter() - start
    pool.close()
    raw_tokens, raw_seconds = RESULTS.get("raw", (0, 0.0))
    ours = totals["tokens"] / totals["seconds"]
    raw = raw_tokens / raw_seconds if raw_seconds else float("nan")
    benchmark.extra_info.update(
        baseline="test_raw_llm_generate",
        metric="throughput_ratio",
        ratio=ours / raw,
        goal=0.9,
        rollout_tokens_per_s=round(ours, 1),
        raw_tokens_per_s=round(raw, 1),
        env_cpu_s_per_round=round(env_cpu, 3),
        rollout_s_per_round=round(totals["seconds"] / totals["runs"], 3),
        env=SINGLE_TURN_ENV,
        model=MODEL,
        dtype=DTYPE,
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
            gym.make("rllm/FrozenLake-v0", desc=desc, max_turns=self.turns), self.delay
        )


def test_rollout_slow_env_overlap(benchmark, capped_policy):
    import asyncio

    episodes, max_tokens = sizes(benchmark)
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
    )
