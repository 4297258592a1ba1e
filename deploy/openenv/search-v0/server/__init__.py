"""OpenEnv server of rllm/Search-v0."""
