"""LoRA (PEFT) in the RL and SFT trainers: only adapters train, merged weights reach the rollout
engine, checkpoints resume, the final model is a plain folder, an adapter folder resolves to
its merged model, and the leaderboard plays both."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")
pytest.importorskip("peft")

from rllm_adapters.error import AdapterConfigError  # noqa: E402
from rllm_adapters.trainer.config import config_from_dict  # noqa: E402
from rllm_adapters.trainer.models import apply_lora, merged_state_dict  # noqa: E402
from tests.adapters.helpers import lora_grpo_config  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

AGENT = "rllm_agents.agent:FrozenLakeBoardAgent"


def _lora_model(tiny_path):
    from rllm_adapters.trainer.config import LoraSettings
    from rllm_adapters.trainer.models import load_causal_lm

    torch.manual_seed(0)
    lm = apply_lora(load_causal_lm(str(tiny_path)), LoraSettings(r=4, alpha=8.0))
    with torch.no_grad():  # B starts at 0: give the adapters an update to merge
        for name, p in lm.named_parameters():
            if "lora_B" in name:
                p.normal_(0.0, 0.5)
    return lm


def test_merged_state_dict_equals_peft_merge_and_loads_into_the_base(tiny_path):
    import copy

    from transformers import AutoModelForCausalLM

    lm = _lora_model(tiny_path)
    trainable = [n for n, p in lm.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    ours = merged_state_dict(lm)
    theirs = copy.deepcopy(lm).merge_and_unload().state_dict()
    assert ours.keys() == theirs.keys()
    for name, value in theirs.items():
        torch.testing.assert_close(ours[name], value)
    base = AutoModelForCausalLM.from_pretrained(str(tiny_path))
    assert set(ours) == set(base.state_dict())
    # The adapted weights differ from the base, and merging did not touch the model.
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(ours[q], base.state_dict()[q])
    assert torch.equal(
        lm.get_base_model().state_dict()[q.replace(".weight", ".base_layer.weight")],
        base.state_dict()[q],
    )


def test_lora_settings_are_validated():
    with pytest.raises(AdapterConfigError, match="lora.r"):
        config_from_dict({"lora": {"r": -1}})
    with pytest.raises(AdapterConfigError, match="target_modules"):
        config_from_dict({"lora": {"r": 4, "target_modules": []}})
    with pytest.raises(AdapterConfigError, match="Unknown key `lora.rank`"):
        config_from_dict({"lora": {"rank": 4}})
    assert not config_from_dict({}).lora.enabled
    assert config_from_dict({"lora": {"r": 8}}).lora.enabled


def _rl_config(tmp_path, name="rl", **train):
    return lora_grpo_config(tmp_path / name, **train)


@pytest.mark.slow
def test_rl_with_lora_trains_syncs_checkpoints_and_the_leaderboard_loads_it(tmp_path):
    from transformers import AutoModelForCausalLM

    from rllm_adapters.models import resolve_model
    from rllm_adapters.trainer.trainer import PPOTrainer

    config = _rl_config(tmp_path)
    with PPOTrainer(config) as trainer:
        params = list(trainer.actor.module.parameters())
        optimized = [p for g in trainer.actor.optimizer.param_groups for p in g["params"]]
        # Only the adapters are in the optimizer.
        assert 0 < sum(p.numel() for p in optimized) < sum(p.numel() for p in params) / 10
        before = {k: v.clone() for k, v in trainer.actor_state_dict().items()}
        trainer.train()
        after = trainer.actor_state_dict()
        policy_state = trainer.policy.model.state_dict()
    assert set(after) == set(before)
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert changed and all("proj" in k for k in changed)
    # The rollout engine serves the merged weights.
    for name in changed:
        assert torch.equal(policy_state[name], after[name])

    # The final model is a plain folder with the merged weights; the adapter sits next to it.
    final = tmp_path / "rl" / "final_model"
    loaded = AutoModelForCausalLM.from_pretrained(str(final)).state_dict()
    for name in changed:
        torch.testing.assert_close(loaded[name], after[name])
    adapter = tmp_path / "rl" / "final_model_adapter"
    assert (adapter / "adapter_config.json").is_file()
    assert not (final / "adapter_config.json").exists()
    # An adapter folder resolves to its base model with the adapter merged in.
    os.environ["RLLM_MODEL_CACHE"] = str(tmp_path / "cache")
    try:
        merged = resolve_model(str(adapter))
    finally:
        del os.environ["RLLM_MODEL_CACHE"]
    assert merged.startswith(str(tmp_path / "cache"))
    merged_state = AutoModelForCausalLM.from_pretrained(merged).state_dict()
    for name in changed:
        torch.testing.assert_close(merged_state[name], after[name], rtol=1e-5, atol=1e-6)

    # The checkpoint resumes the adapters (the base is rebuilt from the model folder).
    config = _rl_config(tmp_path, iterations=2)
    with PPOTrainer(config) as resumed:
        assert resumed.iteration == 1
        state = resumed.actor_state_dict()
        for name in changed:
            torch.testing.assert_close(state[name], after[name])

    # The leaderboard plays the merged folder and the adapter folder.
    from benchmarks.leaderboard.players import EvalEpisode, make_player

    os.environ["RLLM_MODEL_CACHE"] = str(tmp_path / "cache")
    try:
        for model in (final, adapter):
            policy = make_player(
                f"hf:{model}",
                temperature=0.0,
                max_tokens=2,
                agent=AGENT,
                agent_kwargs={"system_prompt": None},
            )
            try:
                spec = EvalEpisode(
                    env_id="rllm/FrozenLake-v1", row=0, task_index=10**9, sample=0, seed=0
                )
                records = list(policy.play([spec], {"difficulty": 1, "max_turns": 2}))
            finally:
                policy.close()
            assert len(records) == 1 and records[0].turns >= 1
    finally:
        del os.environ["RLLM_MODEL_CACHE"]


@pytest.mark.slow
def test_rl_with_lora_pushes_merged_weights_to_vllm(tmp_path):
    pytest.importorskip("vllm")
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rllm_adapters.backends.base import SamplingParams
    from rllm_adapters.trainer.trainer import PPOTrainer
    from tests.adapters.helpers import hf_greedy

    config = _rl_config(tmp_path)
    config.rollout.backend = "vllm"
    config.rollout.engine_kwargs = {"max_model_len": 1024, "dtype": "float32"}
    with PPOTrainer(config) as trainer:
        with torch.no_grad():  # a large adapter update, so greedy decoding changes
            for name, p in trainer.actor.module.named_parameters():
                if "lora_B" in name:
                    p.normal_(0.0, 1.0)
        trainer.push_weights()
        state = trainer.actor_state_dict()
        tokenizer = AutoTokenizer.from_pretrained(trainer.model_path)
        prompt = tokenizer.encode("The lake is frozen and", add_special_tokens=False)
        (out,) = trainer.policy.generate_batch(
            [prompt], SamplingParams(max_tokens=8, temperature=0.0)
        )
        model = AutoModelForCausalLM.from_pretrained(trainer.model_path)
    model.load_state_dict(state)  # the merged weights
    # vLLM may stop at an end-of-turn token; hf_greedy runs on.
    assert out.completion_ids
    assert out.completion_ids == hf_greedy(model.eval(), prompt, 8)[: len(out.completion_ids)]


@pytest.fixture(scope="module")
def oracle_store(tmp_path_factory, tiny_path):
    from transformers import AutoTokenizer

    from benchmarks.distill import oracle_episodes
    from rllm_agents.store import EpisodeStore

    path = tmp_path_factory.mktemp("store") / "episodes.db"
    episodes = oracle_episodes(range(12), AutoTokenizer.from_pretrained(tiny_path))
    with EpisodeStore(path) as store:
        store.put_many(episodes, run="teacher", model="oracle")
    return path


@pytest.mark.slow
def test_sft_with_lora_learns_and_saves_a_merged_model(tmp_path, oracle_store):
    from transformers import AutoModelForCausalLM

    from rllm_adapters.trainer.sft import SFTTrainer
    from rllm_adapters.trainer.sft_config import sft_config_from_dict

    config = sft_config_from_dict(
        {
            "model": "tiny",
            "data": {"store": str(oracle_store), "correct": True},
            "sft": {"epochs": 2, "max_length": 512, "micro_batch_size": 2},
            "lora": {"r": 8, "alpha": 16.0},
            "optim": {"lr": 2e-2},
            "train": {"output_dir": str(tmp_path / "sft"), "seed": 0},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    trainer = SFTTrainer(config)
    history = trainer.train()
    assert history[-1]["sft/loss"] < history[0]["sft/loss"]
    state = trainer.state_dict()
    loaded = AutoModelForCausalLM.from_pretrained(str(tmp_path / "sft" / "final_model"))
    for name, value in loaded.state_dict().items():
        torch.testing.assert_close(value, state[name])
    assert (tmp_path / "sft" / "final_model_adapter" / "adapter_config.json").is_file()
