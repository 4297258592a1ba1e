"""The SFT trainer: loss only on completion tokens, packing equivalence, rejection sampling,
resume, dispatch from ``python -m rllm_adapters.train``, and checkpoints the RL trainer and the
leaderboard load."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("deepspeed")

from rllm_adapters.error import AdapterConfigError  # noqa: E402
from rllm_adapters.trainer.sft import (  # noqa: E402
    Example,
    PackedScorer,
    make_batch,
    pack_rows,
    select_episodes,
    sft_loss,
)
from rllm_adapters.trainer.sft_config import (  # noqa: E402
    SFTDataConfig,
    is_sft_config,
    sft_config_from_dict,
)
from rllm_agents.trajectory import Step, Trajectory  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _episode(prompt, completions, observations=(), *, reward=1.0, correct=True, exact=True):
    """A multi-turn trajectory: prompt, completion, observation, completion, ..."""
    steps = []
    ids = list(prompt)
    for k, completion in enumerate(completions):
        last = k == len(completions) - 1
        steps.append(
            Step(
                prompt_ids=list(ids),
                completion_ids=list(completion),
                logprobs=[],
                response="x",
                action="x",
                reward=reward if last else 0.0,
                terminated=last,
                info={"is_correct": correct and last},
            )
        )
        ids += list(completion)
        if not last:
            ids += list(observations[k])
    return Trajectory(env_id="test", task_id=str(prompt[0]), steps=steps, token_exact=exact)


def _episodes(n, seed=0):
    g = torch.Generator().manual_seed(seed)

    def r(k):
        return torch.randint(3, 600, (k,), generator=g).tolist()

    return [
        _episode(r(5 + i % 4), [r(2), r(3), r(1 + i % 3)], [r(4), r(3 + i % 2)]) for i in range(n)
    ]


@pytest.fixture(scope="module")
def scorer(tiny_path):
    from rllm_adapters.trainer.models import load_causal_lm

    torch.manual_seed(0)
    return PackedScorer(load_causal_lm(str(tiny_path)))


# ---------------------------------------------------------------------- rows and loss


def test_multi_turn_episode_is_one_sequence_with_completion_mask():
    t = _episode([1, 2, 3], [[4, 5], [6]], [[7, 8]])
    ex = Example.of(t)
    assert ex.ids == (1, 2, 3, 4, 5, 7, 8, 6)
    assert ex.mask == (0, 0, 0, 1, 1, 0, 0, 1)
    batch = make_batch([ex], [[0]], pad_id=0)
    # Each completion token is predicted from the position before it.
    assert batch.positions[0].tolist() == [2, 3, 6]
    assert batch.targets[0].tolist() == [4, 5, 6]


def test_gradients_come_only_from_completion_tokens(scorer):
    examples = [Example.of(t) for t in _episodes(3)]
    batch = make_batch(examples, pack_rows([len(e.ids) for e in examples], 256), pad_id=0)
    captured = {}

    def keep(module, args, out):
        out.last_hidden_state.retain_grad()
        captured["hidden"] = out.last_hidden_state

    handle = scorer.lm.model.register_forward_hook(keep)  # the backbone
    try:
        scorer.zero_grad()
        loss, _ = sft_loss(scorer, batch)
        loss.backward()
    finally:
        handle.remove()
    grad = captured["hidden"].grad.abs().sum(-1)[0]
    # The positions whose output predicts a completion token, and no other, get a gradient.
    predicting = set()
    start = 0
    for i in pack_rows([len(e.ids) for e in examples], 256)[0]:
        e = examples[i]
        predicting |= {start + t - 1 for t, m in enumerate(e.mask) if m}
        start += len(e.ids)
    nonzero = {int(i) for i in torch.nonzero(grad > 0).flatten()}
    assert nonzero == predicting
    # And the prompt/observation tokens are never targets.
    assert int(batch.action_mask.sum()) == sum(e.completion_tokens for e in examples)


def test_packed_loss_equals_unpacked_loss(scorer):
    examples = [Example.of(t) for t in _episodes(6)]
    lengths = [len(e.ids) for e in examples]
    unpacked = make_batch(examples, pack_rows(lengths, 10_000, packing=False), pad_id=0)
    rows = pack_rows(lengths, 64)
    assert len(rows) < len(examples) and any(len(r) > 1 for r in rows)
    packed = make_batch(examples, rows, pad_id=0)
    with torch.no_grad():
        a, sa = sft_loss(scorer, unpacked)
        b, sb = sft_loss(scorer, packed)
    assert sa["tokens"] == sb["tokens"]
    assert float(a) == pytest.approx(float(b), rel=1e-5, abs=1e-5)
    # Position ids restart for every episode.
    assert packed.position_ids[0, 0] == 0 and (packed.position_ids == 0).sum() >= len(examples)


def test_pack_rows_respects_max_length():
    lengths = [50, 30, 30, 20, 90, 10]
    rows = pack_rows(lengths, 100)
    assert sorted(i for r in rows for i in r) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in r) <= 100 for r in rows)
    assert len(rows) == 3


# ---------------------------------------------------------------------- filters


def test_filters_reject_by_correctness_reward_length_and_duplicates():
    good = _episode([1, 2], [[3]], reward=1.0)
    wrong = _episode([5, 2], [[3]], reward=0.0, correct=False)
    low = _episode([6, 2], [[3]], reward=0.5)
    long = _episode([7] * 50, [[3]])
    inexact = _episode([8, 2], [[3]], exact=False)
    empty = _episode([9, 2], [[]])
    data = SFTDataConfig(files=["unused"], correct=True, min_reward=1.0, max_tokens=20)
    kept, report = select_episodes([good, wrong, low, long, inexact, empty, good], data)
    assert kept == [good]
    assert report.rejected == {
        "correct": 1,
        "reward": 1,
        "length": 1,
        "not_token_exact": 1,
        "no_completion": 1,
        "duplicate": 1,
    }
    assert report.metrics()["data/episodes_kept"] == 1.0
    everything, _ = select_episodes([good, wrong, good], SFTDataConfig(files=["x"], dedup=False))
    assert len(everything) == 3


def test_retokenize_rebuilds_a_teacher_episode_for_the_student(tiny_path):
    from transformers import AutoTokenizer

    from rllm_adapters.trainer.sft import retokenize
    from rllm_agents.chat import ChatTokenizer

    chat = ChatTokenizer(AutoTokenizer.from_pretrained(tiny_path))
    t = _episode([1], [[1], [1]], [[1]])
    t.messages = [
        {"role": "user", "content": "board 1"},
        {"role": "assistant", "content": "Down"},
        {"role": "user", "content": "board 2"},
        {"role": "assistant", "content": "Right"},
    ]
    out = retokenize(t, chat)
    out.check_token_exact()
    text = chat.decode(out.token_ids(), skip_special_tokens=False)
    assert "board 1" in text and "board 2" in text
    produced = [chat.decode(s.completion_ids, skip_special_tokens=False) for s in out.steps]
    assert produced == ["Down<|im_end|>", "Right<|im_end|>"]
    assert [s.reward for s in out.steps] == [s.reward for s in t.steps]


def test_config_validation_and_dispatch():
    assert is_sft_config({"kind": "sft"}) and is_sft_config({"sft": {}})
    assert not is_sft_config({"rollout": {}}) and not is_sft_config({"kind": "rl", "sft": {}})
    with pytest.raises(AdapterConfigError, match="data.store"):
        sft_config_from_dict({})
    with pytest.raises(AdapterConfigError, match="sft.epochs"):
        sft_config_from_dict({"data": {"files": ["a.jsonl"]}, "sft": {"epochs": 0}})
    with pytest.raises(AdapterConfigError, match="Unknown key `sft.epoch`"):
        sft_config_from_dict({"data": {"files": ["a.jsonl"]}, "sft": {"epoch": 2}})
    config = sft_config_from_dict({"data": {"files": "a.jsonl"}, "sft": {"max_length": 64}})
    assert config.data.files == ["a.jsonl"] and config.max_tokens == 64


def test_sft_config_is_a_variant_of_the_rl_config():
    from rllm_adapters.trainer.config import OutputConfig, RunConfig, TrainerConfig

    config = sft_config_from_dict({"data": {"files": ["a.jsonl"]}, "optim": {"lr": 1e-3}})
    rl = TrainerConfig()
    assert isinstance(config, RunConfig) and isinstance(config.train, OutputConfig)
    # The shared sections are one class each, validated the same way.
    for name in ("optim", "deepspeed", "logging"):
        assert type(getattr(config, name)) is type(getattr(rl, name))
    with pytest.raises(AdapterConfigError, match="optim.lr"):
        sft_config_from_dict({"data": {"files": ["a.jsonl"]}, "optim": {"lr": 0}})
    with pytest.raises(AdapterConfigError, match="train.max_wall_s"):
        sft_config_from_dict({"data": {"files": ["a.jsonl"]}, "train": {"max_wall_s": 0}})
    with pytest.raises(AdapterConfigError, match="Unknown key `train.iterations`"):
        sft_config_from_dict({"data": {"files": ["a.jsonl"]}, "train": {"iterations": 3}})
    with pytest.raises(AdapterConfigError, match="`kind: sft`"):
        sft_config_from_dict({"kind": "rl", "data": {"files": ["a.jsonl"]}})
    assert config.train.output_dir == "runs/sft"
    assert sft_config_from_dict(config.to_dict()) == config


def test_sft_and_rl_build_their_deepspeed_config_with_one_function():
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.distributed import deepspeed_config

    sft = sft_config_from_dict(
        {
            "data": {"files": ["a.jsonl"]},
            "sft": {"micro_batch_size": 3, "gradient_accumulation_steps": 2},
            "optim": {"max_grad_norm": 0.5},
            "deepspeed": {"zero_stage": 2, "extra": {"zero_optimization": {"overlap_comm": True}}},
        }
    )
    ds = deepspeed_config(sft, world_size=2)
    assert ds["train_micro_batch_size_per_gpu"] == 3
    assert ds["gradient_accumulation_steps"] == 2
    assert ds["train_batch_size"] == sft.sft.rows_per_step * 2 == 12
    assert ds["gradient_clipping"] == 0.5
    assert ds["zero_optimization"] == {"stage": 2, "overlap_comm": True}
    rl = config_from_dict({"algorithm": {"mini_batch_size": 16, "micro_batch_size": 4}})
    ds = deepspeed_config(rl, world_size=1)
    assert (ds["train_micro_batch_size_per_gpu"], ds["gradient_accumulation_steps"]) == (4, 4)
    assert ds["train_batch_size"] == 16


# ---------------------------------------------------------------------- the trainer


def _sft_config(tmp_path, store, name="sft", **sft):
    return sft_config_from_dict(
        {
            "model": "tiny",
            "data": {"store": str(store), "correct": True},
            "sft": {
                "epochs": 2,
                "max_length": 512,
                "micro_batch_size": 2,
                "gradient_accumulation_steps": 1,
                **sft,
            },
            "optim": {"lr": 1e-3},
            "train": {"output_dir": str(tmp_path / name), "seed": 0},
            "logging": {"progress": False, "tensorboard": False},
        }
    )


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
def test_sft_learns_resumes_exactly_and_feeds_rl_and_leaderboard(tmp_path, oracle_store):
    from rllm_adapters.trainer.sft import SFTTrainer

    full = SFTTrainer(_sft_config(tmp_path, oracle_store, "full"))
    assert full.total_steps == 2 * full.steps_per_epoch >= 4
    history = full.train()
    assert len(history) == full.total_steps
    assert history[-1]["sft/loss"] < history[0]["sft/loss"]
    assert history[0]["data/episodes_kept"] >= 1
    final = full.state_dict()

    # Stopped half-way, then the same config again: resumes at the same row of the same epoch.
    half = full.total_steps // 2 + 1
    first = SFTTrainer(_sft_config(tmp_path, oracle_store, "split", max_steps=half))
    first.train()
    second = SFTTrainer(_sft_config(tmp_path, oracle_store, "split"))
    assert second.iteration == half
    second.train()
    resumed = second.state_dict()
    for name, value in final.items():
        torch.testing.assert_close(resumed[name], value, rtol=1e-5, atol=1e-6)

    model = tmp_path / "full" / "final_model"
    assert (model / "config.json").is_file() and (model / "tokenizer.json").is_file()

    # The RL trainer starts from the folder (`model:` in its config) and updates it.
    from rllm_adapters.trainer.config import config_from_dict
    from rllm_adapters.trainer.trainer import PPOTrainer

    rl_config = config_from_dict(
        {
            "model": str(model),
            "env": "rllm/FrozenLake-v1",
            "env_kwargs": {"difficulty": 1, "max_turns": 4},
            "rollout": {
                "backend": "transformers",
                "num_tasks": 1,
                "group_size": 2,
                "max_tokens": 3,
                "agent": "rllm_agents.agent:FrozenLakeBoardAgent",
                "agent_kwargs": {"system_prompt": None},
            },
            "algorithm": {"advantage": "grpo", "mini_batch_size": 2, "micro_batch_size": 2},
            "train": {"iterations": 1, "output_dir": str(tmp_path / "rl")},
            "logging": {"progress": False, "tensorboard": False},
        }
    )
    with PPOTrainer(rl_config) as rl:
        start = {k: v.clone() for k, v in rl.actor_state_dict().items()}
        for name, value in final.items():
            torch.testing.assert_close(start[name], value)
        rl.train()
    assert (tmp_path / "rl" / "final_model" / "config.json").is_file()

    # The leaderboard plays it as `hf:<folder>`.
    from benchmarks.leaderboard.players import EvalEpisode, make_player

    policy = make_player(
        f"hf:{model}",
        temperature=0.0,
        max_tokens=3,
        agent="rllm_agents.agent:FrozenLakeBoardAgent",
        agent_kwargs={"system_prompt": None},
    )
    try:
        spec = EvalEpisode(env_id="rllm/FrozenLake-v1", row=0, task_index=10**9, sample=0, seed=0)
        records = list(policy.play([spec], {"difficulty": 1, "max_turns": 4}))
    finally:
        policy.close()
    assert len(records) == 1 and records[0].turns >= 1


@pytest.mark.slow
def test_train_cli_runs_an_sft_config(tmp_path, oracle_store):
    import yaml

    from rllm_adapters.train import main

    config = tmp_path / "sft.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "kind": "sft",
                "model": "tiny",
                "data": {"store": str(oracle_store), "run": "teacher"},
                "sft": {"max_steps": 2, "max_length": 256},
                "train": {"output_dir": str(tmp_path / "cli")},
                "logging": {"progress": False, "tensorboard": False},
            }
        )
    )
    assert main(["--config", str(config)]) == 0
    assert (tmp_path / "cli" / "final_model" / "model.safetensors").is_file()
    assert (tmp_path / "cli" / "metrics.jsonl").read_text().count("\n") == 2
