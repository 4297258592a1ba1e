"""Drive a gateway from a training loop: sessions, rewards and the trainer's new weights.

The agent itself needs none of this (it only sees an OpenAI base URL); the loop that hands
out tasks uses :class:`GatewayClient` to open a session per episode and send its reward, and
gives the trainer a :class:`GatewayWeightSync` as its ``policy`` so each update reaches the
served engines::

    client = GatewayClient("http://127.0.0.1:8400")
    session = client.create_session(env_id="rllm/Math-v1", seed=7, group=0, sample=1)
    run_agent(base_url=session["base_url"])          # any OpenAI-client program
    client.reward(session["session_id"], env="rllm/Math-v1", seed=7)

    trainer = PPOTrainer(config, rollout_fn=..., policy=GatewayWeightSync(client, "runs/w"))
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rllm_envs.error import require

__all__ = ["GatewayClient", "GatewayWeightSync"]


class GatewayClient:
    """A small synchronous client of the gateway's own routes.

    Args:
        url: The gateway's root, e.g. ``"http://127.0.0.1:8400"``.
        api_key: The client token (when the gateway has ``api_keys``).
        admin_key: The admin token (weight swaps).
        timeout: Seconds per request (a weight swap waits for calls in flight).
    """

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        admin_key: str | None = None,
        timeout: float = 600.0,
    ) -> None:
        self._httpx = require("httpx", "gateway", feature="the gateway client")
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.admin_key = admin_key
        self.timeout = timeout
        self._client = self._httpx.Client(timeout=timeout)

    def _headers(self, admin: bool = False) -> dict[str, str]:
        token = self.admin_key if admin else self.api_key
        return {"Authorization": f"Bearer {token}"} if token else {}

    def _post(self, path: str, body: Mapping[str, Any], admin: bool = False) -> dict[str, Any]:
        response = self._client.post(self.url + path, json=dict(body), headers=self._headers(admin))
        if response.status_code >= 400:
            raise RuntimeError(f"{path}: HTTP {response.status_code}: {response.text[:500]}")
        return dict(response.json())

    def _get(self, path: str) -> dict[str, Any]:
        response = self._client.get(self.url + path, headers=self._headers())
        if response.status_code >= 400:
            raise RuntimeError(f"{path}: HTTP {response.status_code}: {response.text[:500]}")
        return dict(response.json())

    def create_session(self, **fields: Any) -> dict[str, Any]:
        """Open a session; returns ``{"session_id", "base_url", "run"}``.

        A session on a scorer's task also gets ``task_id``, ``index`` and ``seed``: the episode
        the scorer replays, ``reset(seed=seed, options={"index": index})``, which the harness
        plays too (the seed is the task's, not the one sent).

        Args:
            **fields: ``session_id``, ``env_id``, ``task_id``, ``seed``, ``index``, ``group``,
                ``sample``, ``run``, ``metadata`` (a session to be scored names its env and
                ``seed``/``index`` here: the task is fixed when it opens).
        """
        return self._post("/sessions", fields)

    def session(self, session_id: str) -> dict[str, Any]:
        """An open session's calls so far, last reply and generated token count."""
        return self._get(f"/sessions/{session_id}")

    def reward(
        self,
        session_id: str,
        reward: float | None = None,
        *,
        env: str | None = None,
        seed: int | None = None,
        index: int | None = None,
        info: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """End a session with a reward, or with ``env``'s scorer on its last reply.

        ``env`` must be one of the gateway's scorers (its operator's ``--scorer``) and the
        session's ``env_id``; the task is the one the session opened with (``seed``/``index``
        may repeat it, another is refused). A number ``reward`` is kept as the client's
        (``info["reward_source"] == "client"``; grade fields under ``info["client_grade"]``),
        and a session with no call ends unstored (409 ``no_calls``).

        Returns:
            The stored episode's id and hash, the reward and whether it is token-exact.
        """
        body: dict[str, Any]
        if env is not None:
            body = {"env": env}
            if seed is not None:
                body["seed"] = seed
            if index is not None:
                body["index"] = index
        elif reward is not None:
            body = {"reward": float(reward), "info": dict(info or {})}
        else:
            raise ValueError("Pass `reward=` or `env=`.")
        return self._post(f"/sessions/{session_id}/reward", body)

    def swap_weights(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """Hot-swap the launched engines' weights from a Hugging Face folder."""
        return self._post("/admin/weights", {"path": str(Path(path).resolve())}, admin=True)

    def metrics(self) -> dict[str, Any]:
        """The gateway's ``/metrics``."""
        return self._get("/metrics")

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()


class GatewayWeightSync:
    """Pass as the trainer's ``policy``: each weight push is written out and hot-swapped.

    :meth:`update_weights` takes what the trainer's ``push_weights`` sends (``(name, tensor)``
    pairs, or a folder), writes the tensors as ``<directory>/v<N>/model.safetensors`` and asks
    the gateway to reload its engines from there; calls in flight finish on the old weights,
    and every recorded call names the version that served it.

    A tied-embedding model's ``lm_head.weight`` may be left at the old weights by vLLM's
    reload from a folder (``shared/PLATFORM.md``); the models our trainer trains by default
    are untied.

    Args:
        client: The gateway client (with the admin token when the gateway has one).
        directory: Where weight versions are written.
        keep: How many versions to keep on disk (``None``: all).
    """

    def __init__(
        self, client: GatewayClient, directory: str | os.PathLike[str], *, keep: int | None = 2
    ) -> None:
        self.client = client
        self.directory = Path(directory)
        self.keep = keep
        self.version = 0
        self.versions: list[Path] = []
        self.name = f"gateway:{client.url}"

    def update_weights(self, weights: Any) -> None:
        """Write ``weights`` (pairs or a folder) as a new version and hot-swap the engines."""
        if isinstance(weights, (str, os.PathLike)):
            folder = Path(weights)
        else:
            from safetensors.torch import save_file

            items: Iterable[tuple[str, Any]] = (
                weights.items() if hasattr(weights, "items") else weights
            )
            self.version += 1
            folder = self.directory / f"v{self.version}"
            folder.mkdir(parents=True, exist_ok=True)
            tensors = {str(n): t.detach().cpu().contiguous() for n, t in items}
            save_file(tensors, str(folder / "model.safetensors"))
            self.versions.append(folder)
        self.client.swap_weights(folder)
        if self.keep is not None:
            while len(self.versions) > self.keep:
                shutil.rmtree(self.versions.pop(0), ignore_errors=True)

    def close(self) -> None:
        """Nothing to release (the gateway outlives the trainer)."""
