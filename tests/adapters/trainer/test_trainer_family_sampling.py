"""The env family's decoding (token limit, stop strings) reaches every caller that leaves it open:
the rollout CLI and the trainer's rollouts."""

from __future__ import annotations

import pytest

from rllm_adapters.backends.base import SamplingParams
from rllm_adapters.rollout.config import DEFAULT_MAX_TOKENS, family_sampling
from rllm_agents import make_agent


def test_family_limit_and_stops_unless_given():
    base = SamplingParams(temperature=0.7, stop=("###",))
    tool = family_sampling("rllm/ToolUse-v1", base)
    hints = make_agent("rllm/ToolUse-v1").sampling_hints()
    assert tool.max_tokens == hints["max_tokens"]
    assert tool.stop == ("###", *hints["stop"])
    assert tool.temperature == 0.7
    # An explicit limit wins; the family's stops still apply (its parser needs them).
    given = family_sampling("rllm/ToolUse-v1", base, max_tokens=7)
    assert (given.max_tokens, given.stop) == (7, tool.stop)
    # Agent kwargs are the agent's own: a limit set there is the family limit.
    own = family_sampling("rllm/Math-v1", base, agent_kwargs={"max_tokens": 11})
    assert own.max_tokens == 11


def test_unknown_family_gets_the_default():
    assert family_sampling("my/Unregistered-v0", SamplingParams()).max_tokens == DEFAULT_MAX_TOKENS


def test_trainer_rollouts_use_the_family_decoding(tmp_path):
    pytest.importorskip("torch")
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.rollouts import RolloutCollector

    def sampling(rollout):
        config = config_from_dict(
            {
                "env": "rllm/ToolUse-v1",
                "rollout": rollout,
                "train": {"output_dir": str(tmp_path)},
            }
        )
        return RolloutCollector(config, show_progress=False)._rollout_config(0, 1, False).sampling

    hints = make_agent("rllm/ToolUse-v1").sampling_hints()
    open_limit = sampling({})
    assert (open_limit.max_tokens, open_limit.stop) == (hints["max_tokens"], hints["stop"])
    assert sampling({"max_tokens": 5}).max_tokens == 5
