"""OpenEnv server of rllm/CodeCpp-v0."""
