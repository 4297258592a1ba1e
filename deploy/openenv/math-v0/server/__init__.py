"""OpenEnv server of rllm/Math-v0."""
