"""OpenEnv server of rllm/Math-v1."""
