"""An OpenAI-compatible gateway that serves trained checkpoints and records sessions.

Point any OpenAI client at it and it is an ordinary chat/completions server in front of one or
more engines (vLLM servers it launches on a checkpoint our trainer wrote, or any
OpenAI-compatible URL). Point the client at a *session* URL, ``/sessions/{id}/v1``, and every
call is also recorded token-exactly -- the engine's prompt ids, generated ids and logprobs --
into the episode store as one trajectory per session, which the GRPO/PPO trainer and SFT read
as they read rollouts; a reward ends the session (a number, or one of our envs' scorers).
That is how an agent written against the ``openai`` client alone becomes training data.

* :mod:`rllm_adapters.gateway.server` -- ``python -m rllm_adapters.gateway``,
  :class:`GatewayServer`.
* :mod:`rllm_adapters.gateway.app` -- the HTTP routes, limits, auth and metrics.
* :mod:`rllm_adapters.gateway.engines` -- launched vLLM servers, routing and weight hot swap.
* :mod:`rllm_adapters.gateway.sessions` -- recording and storing trajectories.
* :mod:`rllm_adapters.gateway.checkpoint` -- which folder to serve for a name, run or checkpoint.
* :mod:`rllm_adapters.gateway.client` -- open sessions, send rewards, push trainer weights.

Routing, retries, rate limits and load balancing are the gateway's own rather than LiteLLM's
Router: LiteLLM's OpenAI routes drop vLLM's ``prompt_token_ids`` from streamed chat replies and
refuse token-id prompts on ``/completions`` (both needed for token-exact records). Its ``/vllm``
pass-through keeps them, and ``--engine <litellm>/vllm`` records through it; measured by
``benchmarks/perf/bench_litellm.py`` (see the gateway section of ``docs/integrations.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rllm_adapters.gateway.config import GatewayConfig

if TYPE_CHECKING:
    from rllm_adapters.gateway.client import GatewayClient, GatewayWeightSync
    from rllm_adapters.gateway.server import GatewayServer

__all__ = ["GatewayClient", "GatewayConfig", "GatewayServer", "GatewayWeightSync"]


def __getattr__(name: str) -> Any:
    # httpx, starlette and uvicorn load only when the gateway is used.
    if name == "GatewayServer":
        from rllm_adapters.gateway.server import GatewayServer

        return GatewayServer
    if name in ("GatewayClient", "GatewayWeightSync"):
        from rllm_adapters.gateway import client

        return getattr(client, name)
    raise AttributeError(name)
