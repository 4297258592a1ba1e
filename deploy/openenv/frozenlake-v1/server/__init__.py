"""OpenEnv server of rllm/FrozenLake-v1."""
