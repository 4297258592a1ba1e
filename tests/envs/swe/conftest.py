"""Skip the SWE tests with the reason when no sandbox can run here; stop the pools after."""

from __future__ import annotations

import pytest

from rllm_envs.sandbox import SandboxUnavailable, select_backend
from rllm_envs.swe import close_pools


@pytest.fixture(scope="session", autouse=True)
def sandbox_available():
    try:
        backend = select_backend()
    except SandboxUnavailable as e:
        pytest.skip(f"no sandbox: {e}")
    yield backend
    close_pools()
