"""Leaderboard runs, the main job and the pytest-benchmark performance suite."""
