"""OpenEnv server of rllm/Countdown-v0."""
