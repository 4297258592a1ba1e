"""OpenEnv server of rllm/CodeMultiTurn-v0."""
