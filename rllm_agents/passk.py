"""The unbiased pass@k estimator (Chen et al., 2021, "Evaluating Large Language Models...").

It lives with the agents' episode records so the episode store (:mod:`rllm_agents.store`) can
use it without reaching up into ``benchmarks``; :mod:`benchmarks.leaderboard.passk` re-exports it.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

__all__ = ["pass_at_k", "mean_pass_at_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of pass@k from ``n`` samples of which ``c`` are correct.

    ``1 - C(n - c, k) / C(n, k)``, computed as a product so it is exact in floating point for
    large ``n`` (no huge binomials).

    Raises:
        ValueError: If the counts are inconsistent (``0 <= c <= n``, ``1 <= k <= n``).
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"Expects 0 <= c <= n and 1 <= k <= n, actual n={n}, c={c}, k={k}.")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def mean_pass_at_k(samples: Iterable[tuple[int, int]], k: int) -> float:
    """Mean pass@k over tasks given ``(n, c)`` per task; tasks with ``n < k`` are skipped."""
    values = [pass_at_k(n, c, k) for n, c in samples if n >= k]
    return float(np.mean(values)) if values else float("nan")
