"""OpenEnv server of rllm/Countdown-v1."""
