"""OpenEnv server of rllm/FrozenLake-v0."""
