"""TRL's ``rollout_func`` hook with :class:`rllm_adapters.trl.EnvRollout`: multi-turn envs train
through ``GRPOTrainer`` on CPU (tiny model), token-exact, rewarded with the episode return;
``EnvReward`` refuses multi-turn ids and names the fix."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")
pytest.importorskip("datasets")

import rllm_envs  # noqa: E402
from rllm_adapters.error import AdapterConfigError  # noqa: E402
from rllm_adapters.trl import EnvReward, EnvRollout, env_dataset  # noqa: E402
from tests.adapters.helpers import grpo_args  # noqa: E402

LAKE = "rllm/FrozenLake-v1"


@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        (LAKE, {}),
        ("rllm/CodeMultiTurn-v1", {}),
        ("rllm/Math-v1", {"max_turns": 3}),
        ("rllm/TicTacToe-v0", {}),
    ],
)
def test_env_reward_refuses_multi_turn_ids_with_the_fix(env_id, kwargs):
    with pytest.raises(AdapterConfigError, match="EnvRollout"):
        EnvReward(env_id, kwargs)


def test_env_reward_still_takes_single_turn_ids():
    EnvReward("rllm/Math-v1")
    EnvReward("rllm/Countdown-v1")


@pytest.fixture(scope="module")
def tiny():
    from rllm_adapters.tiny_model import tiny_model_path

    return tiny_model_path()


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:You are using 'rollout_func'")
@pytest.mark.parametrize(
    ("env_id", "env_kwargs"),
    [
        (LAKE, {"max_turns": 3}),
        ("rllm/Search-v1", {}),
        ("rllm/CodeMultiTurn-v1", {"max_turns": 2}),
        ("rllm/TicTacToe-v0", {}),  # the model's seat against the row's heuristic opponent
    ],
)
def test_grpo_trainer_trains_a_multi_turn_env_through_rollout_func(
    tiny, tmp_path, env_id, env_kwargs
):
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    if env_id == "rllm/Search-v1":
        pytest.importorskip("bm25s")
    dataset = env_dataset(env_id, num_tasks=4, env_kwargs=env_kwargs)
    rollout = EnvRollout(env_id, dataset, env_kwargs=env_kwargs, max_turns=3)
    seen = []

    def recording(prompts, trainer):
        out = rollout(prompts, trainer)
        seen.append(out)
        return out

    trainer = GRPOTrainer(
        model=str(tiny),
        reward_funcs=rollout.reward,
        rollout_func=recording,
        args=grpo_args(tmp_path, max_steps=1),
        train_dataset=dataset,
    )
    trainer.train()
    assert trainer.state.global_step == 1
    assert any(f"rewards/{rollout.__name__}/mean" in h for h in trainer.state.log_history)
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    multi = 0
    for out in seen:
        for ids, lps, mask in zip(
            out["completion_ids"], out["logprobs"], out["env_mask"], strict=True
        ):
            assert len(ids) == len(lps) == len(mask) and mask[0] == 1
            assert all(lp <= 0.0 for lp in lps)
            if 0 in mask:  # feedback tokens between two replies: a real second turn
                multi += 1
                feedback = tokenizer.decode([t for t, m in zip(ids, mask, strict=True) if m == 0])
                assert "user" in feedback
    if env_id != "rllm/TicTacToe-v0":  # an illegal move (the tiny model's) ends a game
        assert multi, "no episode reached a second turn"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:You are using 'rollout_func'")
def test_rollout_returns_match_the_env_on_the_same_replies(tiny, tmp_path):
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    from rllm_agents.agent import make_agent

    dataset = env_dataset(LAKE, num_tasks=2, env_kwargs={"max_turns": 2})
    rollout = EnvRollout(LAKE, dataset, env_kwargs={"max_turns": 2})
    trainer = GRPOTrainer(
        model=str(tiny),
        reward_funcs=rollout.reward,
        rollout_func=rollout,
        args=grpo_args(tmp_path, max_steps=1),
        train_dataset=dataset,
    )
    out = rollout(list(dataset["prompt"]), trainer)
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    for i, row in enumerate(dataset):
        ids, mask = out["completion_ids"][i], out["env_mask"][i]
        replies, current = [], []
        for t, m in zip(ids, mask, strict=True):
            if m:
                current.append(t)
            elif current:
                replies.append(current)
                current = []
        if current:
            replies.append(current)
        env = rllm_envs.make(LAKE, max_turns=2)
        agent = make_agent(LAKE)
        obs, info = env.reset(seed=row["seed"], options={"index": row["task_index"]})
        agent.reset(obs, info)
        total = 0.0
        for reply in replies:
            _, r, term, trunc, _ = env.step(
                agent.act(tokenizer.decode(reply, skip_special_tokens=True))
            )
            total += r
            if term or trunc:
                break
        assert out["env_return"][i] == pytest.approx(total)


def test_a_multi_agent_id_is_one_seat_against_the_registry_opponents():
    from rllm_adapters.trl import SeatEnv

    env = SeatEnv("rllm/TicTacToe-v0")
    assert env.seat == "player_0" and env.opponents == {"player_1": "heuristic"}
    returns = []
    for seed in range(4):
        env.reset(seed=seed, options={"index": seed})
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.oracle_action())
            total, done = total + reward, terminated or truncated
        returns.append(total)
    assert min(returns) >= 0.0 and max(returns) == 1.0  # the oracle never loses
    env.reset(seed=0, options={"index": 0})
    _, reward, terminated, _, info = env.step("garbage")
    assert reward < 0 and terminated and info["invalid_action"]
    with pytest.raises(AdapterConfigError, match="model seats"):
        SeatEnv("rllm/Debate-v1")


def test_rollout_max_turns_is_the_envs_turn_limit(tiny):
    """s37 att37g F4: EnvRollout cut episodes at its `max_turns` without telling the env, so
    FrozenLake kept the walk's progress (0.575 a map, never reaching the goal). A fake model
    (named so: it stands in for the policy only) always replies Right."""
    import types

    import torch
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    reply = tokenizer.encode("Right", add_special_tokens=False) + [tokenizer.eos_token_id]

    class FakeModel:
        device, training = "cpu", False

        def eval(self) -> None: ...

        def train(self, mode: bool = True) -> None: ...

        def generate(self, input_ids, attention_mask, max_new_tokens, **kwargs):
            new = torch.tensor([reply] * input_ids.shape[0])
            scores = [torch.zeros(input_ids.shape[0], len(tokenizer)) for _ in reply]
            return types.SimpleNamespace(sequences=torch.cat([input_ids, new], 1), scores=scores)

    kwargs = {"desc": ["SFFF", "FHFH", "FFFH", "HFFG"], "reward_weights": {"progress": 1.0}}
    dataset = env_dataset(LAKE, num_tasks=2, env_kwargs=kwargs)
    rollout = EnvRollout(LAKE, dataset, env_kwargs=kwargs, max_turns=3)
    trainer = types.SimpleNamespace(
        processing_class=tokenizer,
        use_vllm=False,
        accelerator=types.SimpleNamespace(unwrap_model=lambda m: m),
        model=FakeModel(),
        args=types.SimpleNamespace(max_completion_length=16, temperature=1.0, top_p=1.0),
    )
    out = rollout([row["prompt"] for row in dataset], trainer)
    assert out["env_return"] == pytest.approx([0.0, 0.0])  # walked right, never reached G
