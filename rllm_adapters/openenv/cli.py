"""``python -m rllm_adapters.serve ENV_ID ...``: the server's command line."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence

from rllm_adapters.error import AdapterConfigError
from rllm_adapters.gateway.config import is_loopback
from rllm_adapters.openenv.environment import served_ids
from rllm_adapters.openenv.limits import ServerLimits
from rllm_adapters.openenv.server import serve


def _client_tokens(parser: argparse.ArgumentParser, path: str | None) -> dict[str, str] | None:
    """The ``--client-tokens`` file's ``{client name: token}`` (exits with a message if bad)."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            if os.fstat(f.fileno()).st_mode & 0o077:
                # Anyone who reads it can pass as any client (as ssh refuses a shared key).
                parser.error(f"--client-tokens {path} is readable by others: chmod 600 it")
            tokens = json.load(f)
    except (OSError, ValueError) as e:
        parser.error(f"--client-tokens {path}: {e}")
    if not isinstance(tokens, dict):
        parser.error('--client-tokens must hold a JSON object {"client name": "token", ...}')
    return tokens


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m rllm_adapters.serve ENV_ID [--host] [--port] [--max-sessions] ...``."""
    parser = argparse.ArgumentParser(
        prog="python -m rllm_adapters.serve",
        description="Serve an rllm-envs environment over OpenEnv's HTTP/WebSocket protocol.",
    )
    parser.add_argument(
        "env_ids",
        nargs="+",
        help="registered ids, e.g. rllm/Math-v1; several are served under /<id>, 'all' = every id",
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--env-kwargs",
        default="{}",
        help="constructor kwargs as JSON (with several ids: {id: kwargs})",
    )
    parser.add_argument("--max-sessions", type=int, default=16)
    parser.add_argument("--session-timeout", type=float, default=600.0, help="idle seconds")
    parser.add_argument(
        "--max-message-mb", type=float, default=16.0, help="WebSocket message and HTTP body limit"
    )
    parser.add_argument("--header-timeout", type=float, default=10.0, help="seconds")
    parser.add_argument("--body-timeout", type=float, default=30.0, help="seconds")
    parser.add_argument(
        "--max-connections-per-client",
        type=int,
        default=None,
        help="open connections per client address (default: 2 x max-sessions + 8)",
    )
    parser.add_argument(
        "--max-connections",
        type=int,
        default=None,
        help="open connections in all, any address (default: half the open-file limit)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get("RLLM_SERVE_TOKEN"),
        help="bearer token clients must send (default: $RLLM_SERVE_TOKEN); needed off loopback",
    )
    parser.add_argument(
        "--client-tokens",
        default=None,
        metavar="FILE",
        help='a JSON file {"client name": "token", ...}: each client sends its own token and is '
        "counted (sessions, score-log attempts) by its name, whatever address it uses",
    )
    parser.add_argument(
        "--no-custom-tasks",
        action="store_true",
        help="refuse resets with options.task (client-written task records)",
    )
    parser.add_argument(
        "--score-log",
        default=None,
        metavar="PATH",
        help="grade privately: clients get reward 0 and no verdict, every finished episode's "
        "reward is appended to PATH (JSON lines); implies --no-custom-tasks",
    )
    parser.add_argument(
        "--score-reply-s",
        type=float,
        default=1.0,
        help="with --score-log: seconds from a step to the reply that ends its episode, so "
        "grading time does not show",
    )
    parser.add_argument(
        "--score-work-s",
        type=float,
        default=0.002,
        help="with --score-log: seconds of work an episode's last step is padded to, so "
        "grading work does not show in other sessions' replies",
    )
    parser.add_argument(
        "--max-frames-per-s",
        type=float,
        default=256.0,
        help="pings, pongs and fragments a connection may send a second (after a burst of 4 s "
        "of them); past that it is closed with 1008 FRAME_FLOOD",
    )
    parser.add_argument("--log-level", default="warning")
    args = parser.parse_args(argv)
    try:
        env_kwargs = json.loads(args.env_kwargs)
    except json.JSONDecodeError as e:
        parser.error(f"--env-kwargs is not JSON: {e}")
    if not isinstance(env_kwargs, dict):
        parser.error("--env-kwargs must be a JSON object")
    ids = list(served_ids()) if args.env_ids == ["all"] else args.env_ids
    try:
        limits = ServerLimits(
            max_sessions=args.max_sessions,
            session_timeout=args.session_timeout,
            max_message_mb=args.max_message_mb,
            header_timeout=args.header_timeout,
            body_timeout=args.body_timeout,
            max_connections_per_client=args.max_connections_per_client,
            max_connections=args.max_connections,
            token=args.token or None,
            client_tokens=_client_tokens(parser, args.client_tokens),
            allow_custom_tasks=not args.no_custom_tasks,
            score_log=args.score_log,
            score_reply_s=args.score_reply_s,
            score_work_s=args.score_work_s,
            max_frames_per_s=args.max_frames_per_s,
        )
        if not is_loopback(args.host) and limits.token is None and limits.client_tokens is None:
            raise AdapterConfigError(
                f"Serving on {args.host} (not loopback) needs --token (or RLLM_SERVE_TOKEN) "
                "or --client-tokens."
            )
    except AdapterConfigError as e:
        parser.error(str(e))
    serve(
        ids[0] if len(ids) == 1 else ids,
        host=args.host,
        port=args.port,
        env_kwargs=env_kwargs,
        limits=limits,
        log_level=args.log_level,
    )
