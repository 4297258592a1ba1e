"""The trainer config: validation with fixes in the messages, YAML files and overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.trainer.config import TrainerConfig, config_from_dict, load_config

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=[p.stem for p in CONFIGS])
def test_shipped_configs_load(path):
    import yaml

    from rllm_adapters.trainer.sft_config import is_sft_config, load_sft_config

    if is_sft_config(yaml.safe_load(path.read_text(encoding="utf-8"))):
        assert load_sft_config(path).kind == "sft"
        return
    config = load_config(path)
    assert isinstance(config, TrainerConfig)
    assert config_from_dict(config.to_dict()) == config


def test_frozenlake_proof_config_is_the_documented_setting():
    config = load_config(ROOT / "configs" / "frozenlake_ppo.yaml")
    assert config.env == "rllm/FrozenLake-v1"
    assert config.env_kwargs["map_name"] == "4x4"
    assert config.env_kwargs["is_slippery"] is False
    assert config.model == "tiny" and config.rollout.backend == "vllm"
    assert config.algorithm.advantage == "gae"


@pytest.mark.parametrize(
    "data, match",
    [
        ({"algorithm": {"advantage": "gea"}}, "Did you mean"),
        ({"algorithm": {"clip_ratio": 1.5}}, "clip_ratio"),
        ({"algorithm": {"mini_batch_size": 6, "micro_batch_size": 4}}, "multiple of"),
        (
            {
                "rollout": {"num_tasks": 3, "group_size": 1},
                "algorithm": {"mini_batch_size": 2, "micro_batch_size": 1},
            },
            "multiple of",
        ),
        (
            {"algorithm": {"advantage": "grpo"}, "rollout": {"group_size": 1, "num_tasks": 16}},
            "group_size",
        ),
        ({"rollout": {"backend": "vlm"}}, "Did you mean"),
        ({"deepspeed": {"zero_stage": 4}}, "zero_stage"),
        ({"deepspeed": {"offload_optimizer": True}}, "zero_stage"),
        ({"algorithm": {"adaptive_kl": True}}, "kl_coef"),
        ({"optim": {"lr": 0}}, "optim.lr"),
        ({"train": {"max_wall_s": -1}}, "max_wall_s"),
        ({"trian": {}}, "Did you mean"),
        ({"algorithm": {"epochs": 2}}, "algorithm.epochs"),
    ],
)
def test_invalid_configs_raise_with_a_fix(data, match):
    with pytest.raises(AdapterConfigError, match=match):
        config_from_dict(data)


def test_kind_names_the_variant():
    assert config_from_dict({}).kind == "rl"
    assert config_from_dict({"kind": "rl"}) == config_from_dict({})
    # An SFT config handed to the RL loader says what it is, not "unknown key".
    with pytest.raises(AdapterConfigError, match="`kind: rl` in an RL config, actual: 'sft'"):
        config_from_dict({"kind": "sft"})


def test_yaml_and_overrides(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "model: tiny\noptim: {lr: 1e-3, betas: [0.8, 0.9]}\n"
        "algorithm: {advantage: rloo}\nrollout: {group_size: 4, num_tasks: 4}\n"
    )
    config = load_config(path, ["train.iterations=7", "algorithm.kl_coef=0.05", "optim.lr=2e-4"])
    assert config.optim.lr == 2e-4  # YAML reads "2e-4" as a string; the config coerces it
    assert config.optim.betas == (0.8, 0.9)
    assert config.train.iterations == 7 and config.algorithm.kl_coef == 0.05
    assert config.optim.critic_lr == 2e-4
    assert config.algorithm.clip_ratio_high == config.algorithm.clip_ratio
    with pytest.raises(AdapterConfigError, match="override"):
        load_config(path, ["iterations"])


def test_cli_prints_resolved_config(capsys):
    from rllm_adapters.train import main

    assert (
        main(
            [
                "--config",
                str(ROOT / "configs" / "frozenlake_ppo.yaml"),
                "--print-config",
                "optim.lr=0.01",
            ]
        )
        == 0
    )
    assert '"lr": 0.01' in capsys.readouterr().out
