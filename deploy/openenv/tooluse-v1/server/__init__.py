"""OpenEnv server of rllm/ToolUse-v1."""
