"""Cost of reading tool calls and of tool-env steps, against plain ``json.loads``.

* Parsing a typical Hermes/Qwen reply (reasoning, two ``<tool_call>`` blocks) with
  :func:`rllm_envs.tools.parse_tool_calls`, against ``json.loads`` of the same two call bodies
  (the least any parser must do). Goal: within 10x.
  Both sides read the same two calls (the benchmark checks the parsed calls equal them).
* Parsing an adversarial 256k-character reply (deeply nested unclosed JSON objects), against
  the same kind of reply 8x shorter (32k): the work must grow linearly, not quadratically.
  Goal: at most 16x the time (linear is 8x; quadratic would be 64x).
* One ``rllm/ToolUse-v1`` step (an exact calculator call through the registry) and one
  ``rllm/Search-v1`` step (a BM25 search of the default corpus), for the record (no baseline,
  so no ratio row).

Ratios are of medians (:mod:`benchmarks.perf._ratios`).
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the ids)
from benchmarks.perf._ratios import median_ratio, record
from rllm_envs.tools import parse_tool_calls

CALLS = [
    {"name": "get_product", "arguments": {"name": "Zorbi Lamp"}},
    {"name": "calculator", "arguments": {"expression": "3 * 12.95 + 2 * 7.50"}},
]
BODIES = [json.dumps(c) for c in CALLS]
REPLY = (
    "<think>I need both prices before adding them up, so I will look up the lamp first and "
    "compute the total once I have it.</think>\nLet me check.\n"
    + "\n".join(f"<tool_call>\n{b}\n</tool_call>" for b in BODIES)
)
_NESTED = '{"name": "x", "arguments": ' * 10_000
ADVERSARIAL = _NESTED[:262_144]
ADVERSARIAL_SHORT = _NESTED[:32_768]


def test_json_loads_two_calls(benchmark):
    benchmark.extra_info.update(label="`json.loads` of the two call bodies")
    loaded = benchmark(lambda: [json.loads(b) for b in BODIES])
    assert loaded == CALLS
    record(benchmark)


def test_parse_hermes_reply(benchmark):
    benchmark.extra_info.update(
        label="`parse_tool_calls`: a Hermes reply (reasoning, 2 `<tool_call>` blocks)",
        baseline="test_json_loads_two_calls",
        baseline_label="`json.loads` of the two call bodies",
        goal=10,
        work=[1, "replies"],
    )
    parsed = benchmark(parse_tool_calls, REPLY)
    assert [{"name": c.name, "arguments": c.arguments} for c in parsed.calls] == CALLS
    median_ratio(benchmark)


def test_parse_adversarial_32k(benchmark):
    benchmark.extra_info.update(label="`parse_tool_calls`: 32k chars of nested unclosed JSON")
    parsed = benchmark(parse_tool_calls, ADVERSARIAL_SHORT)
    assert not parsed.calls
    record(benchmark)


def test_parse_adversarial_256k(benchmark):
    benchmark.extra_info.update(
        label="`parse_tool_calls`: 256k chars of nested unclosed JSON (8x longer)",
        baseline="test_parse_adversarial_32k",
        baseline_label="the same reply cut to 32k chars",
        goal=16,
        work=[1, "replies"],
    )
    parsed = benchmark(parse_tool_calls, ADVERSARIAL)
    assert not parsed.calls
    median_ratio(benchmark)


def _stepper(env_id, **kwargs):
    env = gym.make(env_id, **kwargs)
    env.reset(seed=0)

    def step():
        _, _, terminated, truncated, _ = env.step(env.unwrapped.oracle_action())
        if terminated or truncated:
            env.reset()

    return step


def test_tooluse_oracle_step(benchmark):
    benchmark.extra_info.update(note="calculator/look-up/date tools through the registry")
    benchmark(_stepper("rllm/ToolUse-v1", python=False))


def test_search_oracle_step(benchmark):
    pytest.importorskip("bm25s")
    benchmark.extra_info.update(note="BM25 top-3 over the 560-passage default corpus")
    benchmark(_stepper("rllm/Search-v1"))
