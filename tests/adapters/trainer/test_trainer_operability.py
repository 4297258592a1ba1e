"""Operating a run: samples.jsonl and its Markdown view, new config checks, a clean stop on
SIGTERM with a checkpoint, and tied-embedding checkpoints without a second lm_head copy."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.trainer.config import config_from_dict
from rllm_adapters.trainer.metrics import render_samples_markdown

ROOT = Path(__file__).resolve().parents[3]


def _record(iteration, sample, reward, correct, advantage, response):
    return {
        "iteration": iteration,
        "task_id": "math-7",
        "group": 0,
        "sample": sample,
        "reward": reward,
        "reward_components": {"format": 1.0, "correct": float(correct)},
        "correct": correct,
        "advantage": advantage,
        "finish": "terminated",
        "steps": [{"response": response, "reward": reward, "observation": ""}],
    }


def test_samples_render_as_markdown_with_components_side_by_side(tmp_path):
    path = tmp_path / "run" / "samples.jsonl"
    path.parent.mkdir()
    rows = [
        _record(1, 0, 0.1, False, None, "\\boxed{42}"),
        _record(2, 0, 1.1, True, 0.7071, "so ```x``` is \\boxed{7}"),
        _record(2, 1, 0.1, False, -0.7071, "no | idea\nat all"),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = render_samples_markdown(path)
    assert "## Iteration 1" in text and "## Iteration 2" in text
    assert "| # | task | reward | correct | format | is_correct | advantage | finish |" in text
    assert "| 1 | math-7 | 1.100 | 1.000 | 1.000 | yes | +0.707 | terminated |" in text
    assert "| 1 | math-7 | 0.100 | 0.000 | 1.000 | no | skipped | terminated |" in text
    # A completion containing a fence gets a longer one.
    assert "````text\nso ```x``` is \\boxed{7}\n````" in text
    last = render_samples_markdown(path, iterations=1)
    assert "## Iteration 1" not in last and "## Iteration 2" in last

    from rllm_adapters.train import main

    out = tmp_path / "samples.md"
    assert main(["--samples", str(path), "--out", str(out), "--last", "1"]) == 0
    assert out.read_text() == last


@pytest.mark.parametrize(
    ("section", "values", "match"),
    [
        ("algorithm", {"advantage": "gae", "dynamic_sampling": True}, "grpo"),
        (
            "algorithm",
            {"advantage": "grpo", "dynamic_sampling": True, "skip_zero_signal_groups": False},
            "skip_zero_signal_groups",
        ),
        (
            "algorithm",
            {"advantage": "grpo", "dynamic_sampling": True, "kl_coef": 0.1, "kl_mode": "reward"},
            "kl_mode",
        ),
        ("algorithm", {"dynamic_sampling_max_rounds": 0}, "dynamic_sampling_max_rounds"),
        ("logging", {"samples_per_iteration": -1}, "samples_per_iteration"),
    ],
)
def test_invalid_new_options_say_how_to_fix_them(section, values, match):
    data = {
        "rollout": {"num_tasks": 2, "group_size": 2},
        "algorithm": {"mini_batch_size": 4, "micro_batch_size": 4},
    }
    data[section] = {**data.get(section, {}), **values}
    with pytest.raises(AdapterConfigError, match=match):
        config_from_dict(data)


def test_zero_signal_filter_applies_to_group_estimators_without_kl_in_the_returns():
    def algo(**kwargs):
        data = {"algorithm": {"mini_batch_size": 4, "micro_batch_size": 4, **kwargs}}
        return config_from_dict(data).algorithm

    assert algo(advantage="grpo").filters_zero_signal
    assert algo(advantage="rloo", kl_coef=0.1, kl_mode="loss").filters_zero_signal
    assert not algo(advantage="grpo", kl_coef=0.1, kl_mode="reward").filters_zero_signal
    assert not algo(advantage="gae").filters_zero_signal
    assert not algo(advantage="grpo", skip_zero_signal_groups=False).filters_zero_signal


def _wait_for(predicate, proc, limit_s):
    # A guard against a hung child, not an assertion on speed.
    deadline = time.monotonic() + limit_s
    while not predicate():
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


@pytest.mark.slow
def test_sigterm_finishes_the_iteration_writes_a_checkpoint_and_exits_cleanly(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("deepspeed")
    import yaml

    out = tmp_path / "run"
    config = {
        "model": "tiny",
        "env": "rllm/FrozenLake-v1",
        "env_kwargs": {"map_name": "4x4", "is_slippery": False, "max_turns": 3},
        "rollout": {
            "backend": "transformers",
            "num_tasks": 2,
            "group_size": 2,
            "max_tokens": 2,
            "agent": "rllm_agents.agent:FrozenLakeBoardAgent",
        },
        "algorithm": {"advantage": "gae", "mini_batch_size": 2, "micro_batch_size": 2},
        "optim": {"lr": 1e-3},
        "train": {"iterations": 100_000, "output_dir": str(out), "resume": False},
        "logging": {"progress": False, "tensorboard": False},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"
    stderr = tmp_path / "stderr.txt"
    with stderr.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "rllm_adapters.train", "--config", str(path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            metrics = out / "metrics.jsonl"
            started = _wait_for(
                lambda: metrics.is_file() and metrics.read_text().count("\n") >= 1, proc, 900
            )
            assert started, stderr.read_text()[-4000:]
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(timeout=900)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = stderr.read_text()
    assert code == 0, log[-4000:]
    assert "received SIGTERM" in log and "stopped by SIGTERM" in log
    assert "Traceback" not in log
    rows = [json.loads(line) for line in metrics.read_text().splitlines()]
    state = json.loads((out / "checkpoint" / "trainer_state.json").read_text())
    # The checkpoint is of the last finished iteration, well before the configured end.
    assert state["iteration"] == rows[-1]["iteration"] == len(rows) < 100_000
    assert (out / "checkpoint" / "actor" / state["tag"]).is_dir()
    assert (out / "final_model" / "config.json").is_file()
    assert (out / "samples.jsonl").read_text().count("\n") == 4 * len(rows)


@pytest.mark.slow
def test_tied_embedding_checkpoint_stores_the_embedding_once_and_reloads_tied(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("deepspeed")
    from safetensors import safe_open
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from rllm_adapters.tiny_model import tiny_model_path
    from rllm_adapters.trainer.trainer import PPOTrainer

    src = tiny_model_path()
    model_config = AutoConfig.from_pretrained(src)
    model_config.tie_word_embeddings = True
    torch.manual_seed(0)
    tied = AutoModelForCausalLM.from_config(model_config)
    tied.save_pretrained(tmp_path / "tied")
    AutoTokenizer.from_pretrained(src).save_pretrained(tmp_path / "tied")

    config = config_from_dict(
        {
            "model": str(tmp_path / "tied"),
            "rollout": {"backend": "transformers", "num_tasks": 1, "group_size": 2},
            "algorithm": {"advantage": "grpo", "mini_batch_size": 2, "micro_batch_size": 2},
            "train": {"output_dir": str(tmp_path / "run"), "resume": False},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    with PPOTrainer(config, rollout_fn=lambda policy, iteration: []) as trainer:
        lm = trainer.actor.module.lm
        assert lm.lm_head.weight is lm.model.embed_tokens.weight
        with torch.no_grad():  # as if trained: the saved weights differ from the initial ones
            lm.model.embed_tokens.weight.add_(0.05 * torch.randn_like(lm.lm_head.weight))
        out = trainer.save_model(tmp_path / "saved")
        ids = torch.tensor([[1, 5, 9, 42, 7]])
        with torch.no_grad():
            expected = lm(input_ids=ids).logits
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        keys = list(f.keys())
    assert "model.embed_tokens.weight" in keys
    assert not [k for k in keys if k.startswith("lm_head")]
    reloaded = AutoModelForCausalLM.from_pretrained(out)
    assert reloaded.lm_head.weight is reloaded.model.embed_tokens.weight
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=ids).logits, expected)
