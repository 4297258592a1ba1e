"""OpenEnv server of rllm/SWE-v0."""
