"""Registration: ``gym.make("rllm/SWE-v0")``, the row's spec and the shared tool agent."""

from __future__ import annotations

import json

import gymnasium as gym

import rllm_envs
from rllm_envs.swe import spec


def test_registry_row_is_the_spec():
    row = rllm_envs.env_entry("rllm/SWE-v0")
    assert rllm_envs.agent_spec("rllm/SWE-v0") is spec.SPEC
    assert row.nondeterministic and rllm_envs.resolve(row.scorer) is not None
    env = gym.make("rllm/SWE-v0")
    obs, info = env.reset(seed=0)
    assert isinstance(obs, str) and info["tools"]
    env.close()


def test_the_tool_agent_reads_the_spec():
    from rllm_agents import make_agent

    env = gym.make("rllm/SWE-v0")
    obs, info = env.reset(seed=0)
    agent = make_agent("rllm/SWE-v0")
    messages = agent.reset(obs, info)
    assert messages[0] == {"role": "system", "content": spec.SYSTEM_PROMPT}
    assert messages[1:3] == [dict(m) for m in spec.DEMONSTRATION]
    assert agent.sampling_hints() == {"max_tokens": spec.MAX_TOKENS, "stop": spec.STOP}
    assert agent.tools and json.dumps(agent.tools)
    action = agent.act(env.unwrapped.oracle_action())
    *_, reward, terminated, _, _ = env.step(action)
    assert reward == 1.0 and terminated
    env.close()


def test_trl_environment_class_works_unchanged():
    from rllm_adapters.trl import environment_class

    cls = environment_class("rllm/SWE-v0", probe_tasks=2)
    assert {"read_file", "apply_patch", "run_tests", "submit"} <= set(dir(cls))
    assert "start_line: First line to show" in cls.read_file.__doc__
    episode = cls()
    episode.reset(task_index=0, seed=0)
    assert "Applied" in episode.apply_patch(patch=episode._env.unwrapped.task["patch"])
    assert "resolved" in episode.submit() and episode.get_reward() == 1.0


def test_a_copy_of_the_worked_example_earns_nothing():
    env = gym.make("rllm/SWE-v0")
    env.reset(seed=0)
    *_, reward, terminated, _, info = env.step(spec.DEMONSTRATION[-1]["content"])
    assert reward == 0.0 and not terminated
    assert info["copied_demonstration"] == "swe" and info["invalid_action"]
    env.close()
