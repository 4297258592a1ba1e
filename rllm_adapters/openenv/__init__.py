r"""OpenEnv adapter: serve any rllm-envs id over OpenEnv's HTTP/WebSocket protocol, and a client.

Built on ``openenv`` 0.10's types and client (``pip install "rllm-envs[openenv]"``):
:class:`GymTextEnvironment` is an ``openenv`` ``Environment`` around one of our Gymnasium envs,
and :func:`create_app` serves it over OpenEnv's wire protocol with a session handler of our
own, so that a session belongs to its WebSocket (``/ws``): one env and one episode at a time
per socket, no HTTP route that creates, attaches to or closes sessions, and the limits of
:class:`ServerLimits` on every path. Stateless ``POST /reset`` gives a fresh env's first
observation; ``POST /step`` and ``GET /state`` answer 409 (no episode outlives a request).

Serve from the command line (``python -m rllm_adapters.serve --help``)::

    python -m rllm_adapters.serve rllm/Math-v1 --port 8000 --max-sessions 64 \
        --env-kwargs '{"difficulty": 3}'

and talk to it with OpenEnv's client protocol::

    from rllm_adapters.openenv import RllmEnvClient, TextAction

    with RllmEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0)
        print(result.observation.text)
        result = client.step(TextAction(text="\\boxed{42}"))
        print(result.reward, result.done, result.observation.info["is_correct"])

:class:`RemoteTextEnv` wraps that client as a ``gymnasium.Env[str, str]``, so anything that
steps our envs (the rollout loop, vector envs, the conformance kit) can step a remote one.

Limits (:class:`ServerLimits`, the CLI's options): live sessions (``CAPACITY_REACHED``, close
code 1013), idle sessions (``SESSION_TIMEOUT``, close code 4408), one size limit for WebSocket
messages and HTTP bodies, header and body timeouts, connections per client address, and a
bearer token (required off loopback). Every refusal has a code and a reason, and is one log
line. ``--score-log PATH`` grades privately: clients get reward 0 and no verdict, and each
finished episode's reward goes to ``PATH`` (:class:`ScoreLog`), so a client of an evaluation
server cannot learn its answers from rewards. On shutdown (SIGINT/SIGTERM) every live
session's env is closed, which stops any sandbox it holds. :func:`openenv_package` writes the
manifest, app and Dockerfile ``openenv validate`` and ``openenv push`` read.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rllm_adapters.openenv.cli import main
    from rllm_adapters.openenv.client import RemoteTextEnv, RllmEnvClient
    from rllm_adapters.openenv.environment import GymTextEnvironment, close_all_environments
    from rllm_adapters.openenv.limits import ScoreLog, ServerLimits
    from rllm_adapters.openenv.packages import openenv_package, write_openenv_packages
    from rllm_adapters.openenv.protocol import TextAction, TextObservation, TextState, jsonable
    from rllm_adapters.openenv.server import create_app, create_multi_app, serve

# Names are imported on first use (PEP 562): importing ``openenv`` pulls in gradio and fastmcp
# (seconds), and a user of one of this package's modules that needs none of it (the gateway
# reads ``limits``) neither waits for it nor needs the ``openenv`` extra installed.
_MODULE_OF = {
    "main": "cli",
    "RemoteTextEnv": "client",
    "RllmEnvClient": "client",
    "GymTextEnvironment": "environment",
    "close_all_environments": "environment",
    "ScoreLog": "limits",
    "ServerLimits": "limits",
    "openenv_package": "packages",
    "write_openenv_packages": "packages",
    "TextAction": "protocol",
    "TextObservation": "protocol",
    "TextState": "protocol",
    "jsonable": "protocol",
    "create_app": "server",
    "create_multi_app": "server",
    "serve": "server",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "TextAction",
    "TextObservation",
    "TextState",
    "GymTextEnvironment",
    "RllmEnvClient",
    "RemoteTextEnv",
    "create_app",
    "create_multi_app",
    "ServerLimits",
    "ScoreLog",
    "openenv_package",
    "write_openenv_packages",
    "serve",
    "close_all_environments",
    "jsonable",
    "main",
]
