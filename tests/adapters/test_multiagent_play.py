"""Multi-agent model play (rllm_adapters.multiagent_play) with a fake backend and a fake tokenizer.

``FakeChatMLTokenizer`` and ``FakeBackend`` are test doubles: a character-level ChatML
tokenizer (``<|im_end|>`` is one id) and a backend that records every request and answers
from a script. They show what the play loop sends, without a model.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

import rllm_envs
from rllm_adapters.backends.base import Generation, Policy, SamplingParams
from rllm_adapters.multiagent_play import (
    end_of_turn_stop_ids,
    play_episode,
    play_scripted_episode,
    players,
)

IM_END, IM_START, EOS = 1, 2, 3
_SPECIAL = {"<|im_end|>": IM_END, "<|im_start|>": IM_START, "<|endoftext|>": EOS}


class FakeChatMLTokenizer:
    """Test double: ChatML rendering, one id per character, one id per special token."""

    chat_template = "chatml (fake)"
    eos_token_id = EOS

    def apply_chat_template(self, messages, tools=None, tokenize=False, add_generation_prompt=True):
        text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        ids, i = [], 0
        while i < len(text):
            for token, tid in _SPECIAL.items():
                if text.startswith(token, i):
                    ids.append(tid)
                    i += len(token)
                    break
            else:
                ids.append(ord(text[i]) + 16)
                i += 1
        return ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        inverse = {v: k for k, v in _SPECIAL.items()}
        return "".join(
            ("" if skip_special_tokens else inverse[i]) if i in inverse else chr(i - 16)
            for i in ids
        )


class FakeBackend(Policy):
    """Test double: records each request's prompt text and sampling; replies from a script."""

    name = "fake"

    def __init__(self, reply: str) -> None:
        self.tokenizer = FakeChatMLTokenizer()
        self.reply = reply
        self.requests: list[tuple[str, SamplingParams]] = []

    async def generate(self, prompt_ids: Sequence[int], params: SamplingParams) -> Generation:
        self.requests.append((self.tokenizer.decode(prompt_ids, skip_special_tokens=False), params))
        # Play the first empty cell of the last board shown (rows like " O | 2 | 3").
        last_turn = self.requests[-1][0].rsplit("<|im_start|>user\n", 1)[-1]
        rows = [line for line in last_turn.splitlines() if line.count("|") == 2]
        free = [c.strip() for row in rows[-3:] for c in row.split("|") if c.strip().isdigit()]
        text = self.reply.format(cell=free[0] if free else "5")
        ids = self.tokenizer.encode(text) + [IM_END]
        return Generation(text=text, completion_ids=ids)


def _play(backend: FakeBackend, env_id: str, **kwargs: Any) -> Any:
    env = rllm_envs.make_parallel(env_id)
    sampling = SamplingParams(max_tokens=16, temperature=0.0, seed=7, stop_token_ids=(99,))
    return asyncio.run(
        play_episode(env, backend, env_id=env_id, sampling=sampling, seed=0, **kwargs)
    )


def test_end_of_turn_stop_ids_come_from_the_chat_template():
    assert set(end_of_turn_stop_ids(FakeBackend("x"))) == {IM_END, EOS}


def test_every_request_carries_the_end_of_turn_stop_ids():
    backend = FakeBackend("<think>pick a free cell</think><move>{cell}</move>")
    episode = _play(backend, "rllm/TicTacToe-v0")
    assert backend.requests, "the model was never asked"
    for _, params in backend.requests:
        assert {IM_END, EOS, 99} <= set(params.stop_token_ids)
    # Seeds move on per joint step, so turns are not sampled alike.
    assert len({p.seed for _, p in backend.requests}) == len(backend.requests)
    assert episode.controlled == ("player_0",) and episode.tokens > 0


def test_model_play_goes_through_the_registry_agent():
    backend = FakeBackend("<think>the centre, or any free cell</think><move>{cell}</move>")
    episode = _play(backend, "rllm/TicTacToe-v0")
    prompt, _ = backend.requests[0]
    # The system prompt of the row's agent opens the conversation.
    assert prompt.startswith(
        "<|im_start|>system\n" + rllm_envs.agent_spec("rllm/TicTacToe-v0").system_prompt
    )
    messages = episode.messages["player_0"]
    assert messages[0]["role"] == "system"
    # Thinking stays in the history; the action is the answer part, a legal move.
    assert messages[2]["content"].startswith("<think>")
    assert episode.invalid_actions == 0


def test_a_reply_cut_while_thinking_is_no_move():
    backend = FakeBackend("<move>{cell}</move> <think>on second thought")
    episode = _play(backend, "rllm/TicTacToe-v0")
    assert episode.invalid_actions == 1 and not episode.success


def test_players_and_opponents_come_from_the_registry():
    assert players("rllm/TicTacToe-v0", ["player_0", "player_1"]) == (
        ["player_0"],
        {"player_1": "heuristic"},
    )
    agents = list(rllm_envs.make_parallel("rllm/Debate-v1").possible_agents)
    assert players("rllm/Debate-v1", agents) == (agents, {})


@pytest.mark.parametrize("env_id", sorted(rllm_envs.list_multiagent_envs()))
def test_scripted_oracle_episodes_succeed(env_id):
    env = rllm_envs.make_parallel(env_id)
    episode = play_scripted_episode(env, "oracle", env_id=env_id, seed=0)
    assert episode.turns >= 1 and episode.invalid_actions == 0
    if env_id != "rllm/TicTacToe-v0":  # the oracle may only draw against the heuristic
        assert episode.success
