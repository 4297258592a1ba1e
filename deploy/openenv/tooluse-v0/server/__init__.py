"""OpenEnv server of rllm/ToolUse-v0."""
