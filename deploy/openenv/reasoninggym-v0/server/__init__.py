"""OpenEnv server of rllm/ReasoningGym-v0."""
