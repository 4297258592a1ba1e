"""OpenEnv server of rllm/CodeMultiTurn-v1."""
