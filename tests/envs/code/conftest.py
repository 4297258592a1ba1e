"""Skip the code tests with the reason when no sandbox can run here."""

from __future__ import annotations

import pytest

from rllm_envs.sandbox import SandboxUnavailable, select_backend


@pytest.fixture(scope="session", autouse=True)
def sandbox_available():
    try:
        return select_backend()
    except SandboxUnavailable as e:
        pytest.skip(f"no sandbox: {e}")
