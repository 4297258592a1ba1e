"""Metrics sinks and the learning-curve plot."""

from __future__ import annotations

import math

import pytest

from rllm_adapters.trainer.metrics import MetricsLogger, read_metrics
from rllm_envs.error import DependencyNotInstalled


def test_jsonl_appends_and_cleans_values(tmp_path):
    logger = MetricsLogger(tmp_path, tensorboard=False)
    logger.log({"rollout/success": 0.5, "kl/ref": math.nan, "note": "x"}, step=1)
    logger.close()
    again = MetricsLogger(tmp_path, tensorboard="auto")  # appends (resumed runs)
    again.log({"rollout/success": 1.0, "time_s": 3}, step=2)
    again.close()
    rows = read_metrics(tmp_path / "metrics.jsonl")
    assert rows[0] == {"iteration": 1, "rollout/success": 0.5, "kl/ref": None, "note": "x"}
    assert rows[1]["iteration"] == 2


def test_tensorboard_required_when_asked(tmp_path):
    try:
        import torch.utils.tensorboard  # noqa: F401
    except ImportError:
        with pytest.raises(DependencyNotInstalled, match="tensorboard"):
            MetricsLogger(tmp_path, tensorboard=True)
    else:
        MetricsLogger(tmp_path, tensorboard=True).close()
        assert (tmp_path / "tensorboard").is_dir()


def test_plot_learning_curve(tmp_path):
    pytest.importorskip("matplotlib")
    from rllm_adapters.trainer.metrics import plot_learning_curve

    logger = MetricsLogger(tmp_path, tensorboard=False)
    for i in range(1, 4):
        logger.log({"time_s": 10.0 * i, "rollout/success": i / 3, "rollout/reward": i / 3}, step=i)
    logger.close()
    out = plot_learning_curve(
        tmp_path / "metrics.jsonl", tmp_path / "curve.png", title="t", random_success=0.012
    )
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
