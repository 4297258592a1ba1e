"""OpenEnv server of rllm/Code-v0."""
