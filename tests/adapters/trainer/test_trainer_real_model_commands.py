"""The real-model commands at tiny scale: the stage timings and the TRL counterpart run and
write their results files (the real runs use the same code on SmolLM2-135M)."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("deepspeed")

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]

TINY_MATH = {
    "model": "tiny",
    "env": "rllm/Math-v1",
    "env_kwargs": {"difficulty": 1, "families": ["arithmetic"]},
    "rollout": {
        "backend": "transformers",
        "num_tasks": 2,
        "group_size": 2,
        "max_tokens": 6,
        "temperature": 1.0,
    },
    # The untrained model rarely solves one: keep groups without a reward spread, so every
    # iteration runs its update.
    "algorithm": {
        "advantage": "grpo",
        "mini_batch_size": 4,
        "micro_batch_size": 2,
        "skip_zero_signal_groups": False,
    },
    "optim": {"lr": 1.0e-4},
    "train": {"iterations": 2, "output_dir": "runs/unused"},
    "logging": {"tensorboard": False},
}


def _config_file(tmp_path):
    import yaml

    data = json.loads(json.dumps(TINY_MATH))
    data["train"]["output_dir"] = str(tmp_path / "run")
    path = tmp_path / "tiny_math.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_stage_timings_of_each_variant(tmp_path):
    from benchmarks.real_model_stages import STAGES, main

    out = tmp_path / "stages.json"
    assert (
        main(["--config", str(_config_file(tmp_path)), "--iterations", "1", "--out", str(out)]) == 0
    )
    record = json.loads(out.read_text())
    assert set(record["variants"]) == {"two_steps", "no_share", "full", "lora"}
    for name, variant in record["variants"].items():
        assert variant["iterations"] == 1, name
        assert set(variant["stages_s"]) == set(STAGES)
        assert variant["stages_s"]["rollout"] > 0 and variant["stages_s"]["iteration"] > 0
        assert variant["max_rss_gib"] > 0
    # Two optimizer steps need the old log-prob pass; one step does not.
    assert record["variants"]["two_steps"]["stages_s"]["old_logprob"] > 0
    assert record["variants"]["full"]["stages_s"]["old_logprob"] == 0
    assert "lora.r=16" in record["variants"]["lora"]["overrides"]
    assert "algorithm.share_prompt=false" in record["variants"]["no_share"]["overrides"]


def test_trl_counterpart_trains_the_same_setting(tmp_path):
    pytest.importorskip("trl")
    from benchmarks.real_model_trl import grpo_args, main
    from rllm_adapters.trainer.config import load_config

    path = _config_file(tmp_path)
    args = grpo_args(load_config(path), tmp_path / "trl", 3)
    # One optimizer update per generation batch of num_tasks x group_size episodes.
    assert args.num_generations == 2 and args.generation_batch_size == 4
    assert args.per_device_train_batch_size * args.gradient_accumulation_steps == 4
    assert args.learning_rate == 1.0e-4 and args.loss_type == "dapo" and args.beta == 0.0
    out = tmp_path / "trl.json"
    # The updates to match come from our run's results file (--ours).
    ours = tmp_path / "ours.json"
    ours.write_text(json.dumps({"training": {"iterations": 3, "updates": 1}}))
    assert main(["--config", str(path), "--ours", str(ours), "--skip-eval", "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    training = record["training"]
    assert training["updates"] == 1 and len(training["reward"]) == 1
    # Generation and scoring are timed apart, inside the step.
    assert len(training["generate_and_score_s"]) == 1
    assert 0 < training["generate_and_score_s"][0] <= training["step_s"][0]
    assert (tmp_path / "run_trl" / "final_model" / "config.json").is_file()
    # A wall limit stops TRL after the update that crosses it, as train.max_wall_s does ours.
    capped = tmp_path / "capped.json"
    argv = ["--config", str(path), "--updates", "3", "--max-wall-s", "0", "--skip-eval"]
    assert main([*argv, "--out", str(capped)]) == 0
    assert json.loads(capped.read_text())["training"]["updates"] == 1
