"""OpenEnv server of rllm/Search-v1."""
