"""Cost of reading tool calls and of tool-env steps, against plain ``json.loads``.

* Parsing a typical Hermes/Qwen reply (reasoning, two ``<tool_call>`` blocks) with
  :func:`rllm_envs.tools.parse_tool_calls`, against ``json.loads`` of the same two call bodies
  (the least any parser must do). Goal: within 10x.
* Parsing an adversarial 256k-character reply (deeply nested unclosed JSON objects), against
  the same baseline: bounded, not quadratic.
* One ``rllm/ToolUse-v0`` step (an exact calculator call through the registry) and one
  ``rllm/Search-v0`` step (a BM25 search of the default corpus), for the record.
"""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import rllm_envs  # noqa: F401  (registers the ids)
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
ADVERSARIAL = ('{"name": "x", "arguments": ' * 10_000)[:262_144]


def test_json_loads_two_calls(benchmark):
    benchmark(lambda: [json.loads(b) for b in BODIES])


def test_parse_hermes_reply(benchmark):
    benchmark.extra_info.update(baseline="test_json_loads_two_calls", goal=10)
    parsed = benchmark(parse_tool_calls, REPLY)
    assert len(parsed.calls) == 2


def test_parse_adversarial_256k(benchmark):
    benchmark.extra_info.update(baseline="test_json_loads_two_calls", note="bounded work")
    benchmark(parse_tool_calls, ADVERSARIAL)


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
    benchmark(_stepper("rllm/ToolUse-v0", python=False))


def test_search_oracle_step(benchmark):
    pytest.importorskip("bm25s")
    benchmark.extra_info.update(note="BM25 top-3 over the 560-passage default corpus")
    benchmark(_stepper("rllm/Search-v0"))
