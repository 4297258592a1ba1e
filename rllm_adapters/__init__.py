"""rllm_adapters: rollout loop, policy backends (vLLM, OpenAI-compatible, transformers), trainers.

Heavy dependencies are imported lazily inside the adapters that need them.
"""
