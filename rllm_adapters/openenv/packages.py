"""OpenEnv packages (manifest, app, Dockerfile) of every registered id (``deploy/openenv``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rllm_adapters.error import AdapterConfigError


def _slug(env_id: str) -> str:
    return env_id.split("/", 1)[-1].lower()


def openenv_package(env_id: str) -> dict[str, str]:
    """The files of ``env_id``'s OpenEnv package: ``{relative path: text}``.

    ``openenv.yaml`` (the manifest ``openenv validate`` and ``openenv push`` read),
    ``server/app.py`` (the ``app`` it names, and a ``main()``) and a ``Dockerfile`` built from
    the repository root. The packages live in ``deploy/openenv/<id>/``; a test checks that
    they equal what this function writes.
    """
    import rllm_envs

    if env_id in rllm_envs.list_multiagent_envs():
        # Served as its one model seat (rllm/TicTacToe-v0), but OpenEnv validates no such package.
        raise AdapterConfigError(
            f"{env_id} is multi-agent: OpenEnv 0.10's validation calls multi-agent packages "
            "unsupported and needs an oracle within 0.1 of the maximum reward, while the best "
            "play from some openings is a draw. Serve its one model seat with "
            f"`python -m rllm_adapters.serve {env_id}` instead."
        )
    if env_id not in rllm_envs.list_envs():
        raise AdapterConfigError(f"Expects a registered id, actual: {env_id!r}")
    slug = _slug(env_id)
    family = slug.rsplit("-", 1)[0]
    manifest = f"""\
# OpenEnv manifest of {env_id} (written by rllm_adapters.openenv.openenv_package).
spec_version: 1
name: rllm-{slug}
version: {rllm_envs.__version__}
description: {json.dumps(rllm_envs.list_envs()[env_id])}
type: space
runtime: fastapi
app: server.app:app
port: 8000
validation:
  reward:
    range: [0.0, 1.0]
    oracle_tolerance: 0.0
    floor_margin: 0.1
  resources:
    cpu: 1.0
    memory_mb: 2048
    disk_mb: 2048
    episode_timeout_s: 300.0
  network:
    mode: no-network
  capabilities:
    verifier:
      kind: reward_channel
  types:
    tags: [rllm-envs, {family}]
"""
    app = f'''\
"""OpenEnv entry point of {env_id}: ``app`` for uvicorn, ``main()`` to serve it."""

import sys

from rllm_adapters.openenv import create_app
from rllm_adapters.openenv import main as serve_main

app = create_app("{env_id}")


def main() -> None:
    """Serve {env_id} (``python -m rllm_adapters.serve`` with its options)."""
    serve_main(["{env_id}", *sys.argv[1:]])


if __name__ == "__main__":
    main()
'''
    dockerfile = f"""\
# {env_id} over OpenEnv. Build from the repository root:
#   docker build -f deploy/openenv/{slug}/Dockerfile -t rllm-{slug} .
#   docker run -p 8000:8000 -e RLLM_SERVE_TOKEN=<a long secret> rllm-{slug}
# Off loopback the server needs the token; clients send `Authorization: Bearer <token>`.
# Ids that run programs (Code, SWE) sandbox them with firejail or bubblewrap, which need
# namespaces inside the container (e.g. `docker run --privileged`; see docs/sandbox.md).
FROM python:3.11-slim
# python3: the sandbox's interpreter is /usr/bin/python3 (this image's own is in /usr/local);
# rllm-sandbox: the unprivileged user sandboxed programs run as (the server runs as root).
# The installed package (hidden tests) is under /usr, which the sandbox hides from programs.
RUN apt-get update && apt-get install -y --no-install-recommends firejail bubblewrap g++ \\
    python3 && rm -rf /var/lib/apt/lists/* \\
    && useradd --system --user-group --no-create-home --shell /usr/sbin/nologin rllm-sandbox
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir ".[openenv]"
EXPOSE 8000
CMD ["python", "-m", "rllm_adapters.serve", "{env_id}", "--host", "0.0.0.0", "--port", "8000"]
"""
    return {
        "openenv.yaml": manifest,
        "server/__init__.py": f'"""OpenEnv server of {env_id}."""\n',
        "server/app.py": app,
        "Dockerfile": dockerfile,
    }


def write_openenv_packages(folder: str | os.PathLike[str]) -> list[str]:
    """Write every registered id's OpenEnv package under ``folder/<id>/``; return the folders."""
    import rllm_envs

    root = Path(folder)
    written = []
    for env_id in rllm_envs.list_envs():
        target = root / _slug(env_id)
        for name, text in openenv_package(env_id).items():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            (target / name).write_text(text, encoding="utf-8")
        written.append(str(target))
    return written
