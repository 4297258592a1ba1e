"""The unbiased pass@k estimator; defined in :mod:`rllm_agents.passk` (a lower layer)."""

from __future__ import annotations

from rllm_agents.passk import mean_pass_at_k, pass_at_k

__all__ = ["pass_at_k", "mean_pass_at_k"]
