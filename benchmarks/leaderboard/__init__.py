"""Leaderboard: evaluate policies on every registered env, merge runs into a report.

``python -m benchmarks.leaderboard run --policy oracle`` evaluates one policy;
``python -m benchmarks.leaderboard report RUN_DIR...`` merges runs into Markdown and HTML.
"""

from benchmarks.leaderboard.passk import mean_pass_at_k, pass_at_k
from benchmarks.leaderboard.runner import LeaderboardConfig, run, summarize

__all__ = ["LeaderboardConfig", "run", "summarize", "pass_at_k", "mean_pass_at_k"]
