"""What the wheel installs: only ``rllm_*`` top-level packages, so it never shadows another
project's (``adapters`` and ``benchmarks`` are names other distributions own)."""

from __future__ import annotations

from pathlib import Path

import pytest
from setuptools import find_packages

ROOT = Path(__file__).resolve().parents[1]


def test_the_wheel_installs_only_rllm_top_level_packages() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    top_level = {name.split(".")[0] for name in find_packages(str(ROOT), include=include)}
    assert {"rllm_envs", "rllm_agents", "rllm_adapters"} <= top_level
    assert all(name.startswith("rllm_") for name in top_level), top_level
