"""ChatTokenizer: token-exact appending, glue for cut/stopped/ended replies, rewriting templates."""

from __future__ import annotations

import copy

import pytest

transformers = pytest.importorskip("transformers")

from rllm_adapters.tiny_model import tiny_model_path  # noqa: E402
from rllm_agents.chat import ChatTokenizer  # noqa: E402
from rllm_agents.error import AgentConfigError  # noqa: E402

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate arithmetic.",
            "parameters": {"type": "object", "properties": {"expr": {"type": "string"}}},
        },
    }
]

# A Qwen3-style template that rewrites history: earlier assistant turns lose their <think>
# section, and the last assistant turn after the last user turn gets an empty think block.
REWRITING_TEMPLATE = (
    "{%- set ns = namespace(last_user=-1) %}"
    "{%- for m in messages %}{%- if m.role == 'user' %}{%- set ns.last_user = loop.index0 %}"
    "{%- endif %}{%- endfor %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' %}"
    "{%- set content = m.content.split('</think>')[-1].lstrip('\\n') %}"
    "{%- if loop.index0 > ns.last_user %}"
    "{{- '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' + content + '<|im_end|>\\n' }}"
    "{%- else %}{{- '<|im_start|>assistant\\n' + content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}{{- '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@pytest.fixture(scope="module")
def tokenizer():
    return transformers.AutoTokenizer.from_pretrained(str(tiny_model_path()))


@pytest.fixture(scope="module")
def chat(tokenizer):
    return ChatTokenizer(tokenizer)


def ids(tokenizer, text):
    return tokenizer.encode(text, add_special_tokens=False)


def test_closer_is_chatml_end_of_turn(chat, tokenizer):
    assert tokenizer.decode(chat.closer_ids) == "<|im_end|>\n"
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") in chat.end_of_turn_ids


def test_initial_prompt_is_the_template(chat, tokenizer):
    messages = [{"role": "system", "content": "S"}, {"role": "user", "content": "What is 2+2?"}]
    prompt = chat.initial_prompt(messages, TOOLS)
    text = tokenizer.decode(prompt)
    assert text == tokenizer.apply_chat_template(
        messages, tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert '"name": "calculator"' in text and text.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("ending", ["eos", "cut", "stop_string"])
def test_append_keeps_sampled_ids_and_closes_the_turn(chat, tokenizer, ending):
    messages = [{"role": "user", "content": "Move."}]
    prompt = chat.initial_prompt(messages)
    reply = ids(tokenizer, "<think>go down</think> <action>Do")  # a cut mid-word reply
    if ending == "eos":
        reply = ids(tokenizer, "<action>Down</action><|im_end|>")
    elif ending == "stop_string":
        reply = ids(tokenizer, "<action>Down</action>\n\nmore")  # ids run past the stop
    new = [{"role": "user", "content": "You moved down."}]
    nxt = chat.append(prompt, reply, new)
    assert nxt[: len(prompt) + len(reply)] == prompt + reply
    tail = tokenizer.decode(nxt[len(prompt) + len(reply) :])
    # Exactly one end-of-turn between the reply and the next user turn.
    assert (
        tail
        == ("\n" if ending == "eos" else "<|im_end|>\n")
        + "<|im_start|>user\nYou moved down.<|im_end|>\n<|im_start|>assistant\n"
    )


def test_appended_sequence_equals_full_template_for_chatml(chat, tokenizer):
    # With ChatML (no history rewriting) appending gives exactly the template's rendering.
    history = [{"role": "system", "content": "S"}, {"role": "user", "content": "first"}]
    prompt = chat.initial_prompt(history, TOOLS)
    for turn in range(3):
        reply_text = f"reply {turn} ü ☃"
        reply = ids(tokenizer, reply_text + "<|im_end|>")
        feedback = [{"role": "user", "content": f"feedback {turn}\n  indented"}]
        prompt = chat.append(prompt, reply, feedback, TOOLS)
        history += [{"role": "assistant", "content": reply_text}, *feedback]
    full = tokenizer.apply_chat_template(
        history, tools=TOOLS, tokenize=False, add_generation_prompt=True
    )
    assert tokenizer.decode(prompt) == full
    assert prompt == ids(tokenizer, full)


def test_tool_messages_use_the_template_role(chat, tokenizer):
    prompt = chat.initial_prompt([{"role": "user", "content": "q"}], TOOLS)
    reply = ids(tokenizer, '<tool_call>{"name": "calculator"}</tool_call><|im_end|>')
    nxt = chat.append(prompt, reply, [{"role": "tool", "content": "4"}], TOOLS)
    tail = tokenizer.decode(nxt[len(prompt) + len(reply) :])
    assert tail == "\n<|im_start|>user\n<tool_response>\n4\n</tool_response><|im_end|>\n" + (
        "<|im_start|>assistant\n"
    )


def test_history_rewriting_template_keeps_what_was_sampled(tokenizer):
    rewriting = copy.deepcopy(tokenizer)
    rewriting.chat_template = REWRITING_TEMPLATE
    chat = ChatTokenizer(rewriting)
    prompt = chat.initial_prompt([{"role": "user", "content": "q"}])
    reply = ids(tokenizer, "<think>secret plan</think>Down<|im_end|>")
    nxt = chat.append(prompt, reply, [{"role": "user", "content": "ok"}])
    assert nxt[: len(prompt) + len(reply)] == prompt + reply
    assert "secret plan" in tokenizer.decode(nxt)  # the template would have dropped it
    assert tokenizer.decode(nxt[len(prompt) + len(reply) :]) == (
        "\n<|im_start|>user\nok<|im_end|>\n<|im_start|>assistant\n"
    )


def test_glue_for_a_completion_ending_with_a_different_eos(chat, tokenizer):
    eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert chat.glue_ids([5, eot]) == chat.closer_ids
    assert chat.glue_ids([]) == chat.closer_ids


def test_needs_a_chat_template(tokenizer):
    bare = copy.deepcopy(tokenizer)
    bare.chat_template = None
    with pytest.raises(AgentConfigError, match="chat template"):
        ChatTokenizer(bare)
