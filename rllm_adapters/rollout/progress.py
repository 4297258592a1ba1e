"""The rollout's progress bar (episodes, generated tokens/s, mean reward) on stderr."""

from __future__ import annotations

import sys
from typing import Any

from rllm_adapters.rollout.config import RolloutStats

__all__ = ["progress_bar", "update_progress"]


def progress_bar(total: int, desc: str, enabled: bool) -> Any:
    """A tqdm bar, or ``None`` when disabled or tqdm is missing."""
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # progress is optional
        return None
    return tqdm(total=total, desc=desc, unit="ep", dynamic_ncols=True, file=sys.stderr)


def update_progress(bar: Any, stats: RolloutStats) -> None:
    """One more episode finished."""
    if bar is None:
        return
    bar.update(1)
    bar.set_postfix(
        tok_s=f"{stats.tokens_per_second:.0f}", reward=f"{stats.mean_reward:.3f}", refresh=False
    )
