"""OpenEnv's client for an rllm-envs server, and a Gymnasium env whose episodes run on one."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from rllm_adapters.openenv.protocol import TextAction, TextObservation, TextState
from rllm_envs.error import require

_client = require("openenv.core.env_client", "openenv")
_client_types = require("openenv.core.client_types", "openenv")


class RllmEnvClient(_client.EnvClient):  # type: ignore[name-defined]
    """OpenEnv's WebSocket client for an rllm-envs server (async; ``.sync()`` for sync use).

    ``reset(seed=, options=)`` and ``step(TextAction(text=...))`` return OpenEnv
    ``StepResult`` objects whose ``observation`` is a :class:`TextObservation`.
    """

    def _step_payload(self, action: TextAction) -> dict[str, Any]:
        return {"text": action.text}

    def _parse_result(self, payload: dict[str, Any]) -> Any:
        obs = TextObservation(
            **payload.get("observation", {}),
            reward=payload.get("reward"),
            done=payload.get("done", False),
        )
        return _client_types.StepResult(
            observation=obs, reward=payload.get("reward"), done=payload.get("done", False)
        )

    def _parse_state(self, payload: dict[str, Any]) -> TextState:
        return TextState(**payload)

    async def settle(self) -> tuple[float, dict[str, float]]:
        """End the session's episode where it stands (an rllm-envs server's ``settle``)."""
        response = await self._send_and_receive({"type": "settle"})
        data = response.get("data") or {}
        return float(data.get("reward", 0.0)), dict(data.get("reward_components") or {})


class RemoteTextEnv(gym.Env[str, str]):
    """A ``gymnasium.Env[str, str]`` whose episodes run on an rllm-envs OpenEnv server.

    Steps go over one WebSocket session; the spaces are the served env's. Close it to end
    the session. A pickled copy opens its own session and replays the current episode (same
    seed, options and actions), so for deterministic envs it continues where the original is.
    A ``max_turns`` reset option reaches the served env (the rollout loop passes its own), and
    :meth:`settle` ends an episode the driver stops without a step.

    Args:
        base_url: The server, e.g. ``"http://127.0.0.1:8000"``.
        message_timeout: Seconds to wait for each reply.
        token: The server's bearer token, when it has one.
    """

    metadata = {"render_modes": []}

    def __init__(
        self, base_url: str, *, message_timeout: float = 60.0, token: str | None = None
    ) -> None:
        from rllm_envs.spaces import action_space, observation_space

        self.base_url = base_url
        self.message_timeout = message_timeout
        self.token = token
        headers = {"Authorization": f"Bearer {token}"} if token else None
        self._client = RllmEnvClient(
            base_url=base_url, message_timeout_s=message_timeout, headers=headers
        ).sync()
        self._client.connect()
        self.observation_space = observation_space()
        self.action_space = action_space()
        self._episode: tuple[int | None, dict[str, Any] | None, list[str]] | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start a remote episode."""
        super().reset(seed=seed)
        result = self._client.reset(seed=seed, options=options)
        self._episode = (seed, options, [])
        return result.observation.text, dict(result.observation.info)

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Send the model's text; returns the Gymnasium 5-tuple."""
        text = action if isinstance(action, str) else str(action)
        result = self._client.step(TextAction(text=text))
        if self._episode is not None:
            self._episode[2].append(text)
        obs = result.observation
        return obs.text, float(result.reward or 0.0), obs.terminated, obs.truncated, obs.info

    def state(self) -> TextState:
        """The remote session's :class:`TextState`."""
        return self._client.state()

    def settle(self) -> tuple[float, dict[str, float]]:
        """End the remote episode where it stands; its closing reward and components.

        What :meth:`rllm_envs.core.TextEnv.settle` pays, for a driver that stops the episode
        without a step (the rollout loop does, through its env workers, when the context is
        full: att38c F2 kept FrozenLake's progress, 0.495 a map, on this path).
        """
        return self._client.settle()

    def close(self) -> None:
        """End the session."""
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()

    def __getstate__(self) -> dict[str, Any]:
        # A session is a live socket: a copy opens its own session and replays the episode.
        episode = self._episode
        if episode is not None:
            episode = (episode[0], episode[1], list(episode[2]))
        return {
            "base_url": self.base_url,
            "timeout": self.message_timeout,
            "token": self.token,
            "episode": episode,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["base_url"], message_timeout=state["timeout"], token=state.get("token")
        )
        if state["episode"] is not None:
            seed, options, actions = state["episode"]
            self.reset(seed=seed, options=options)
            for action in actions:
                self.step(action)
