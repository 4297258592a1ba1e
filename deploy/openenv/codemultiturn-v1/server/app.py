"""OpenEnv entry point of rllm/CodeMultiTurn-v1: ``app`` for uvicorn, ``main()`` to serve it."""

import sys

from rllm_adapters.openenv import create_app
from rllm_adapters.openenv import main as serve_main

app = create_app("rllm/CodeMultiTurn-v1")


def main() -> None:
    """Serve rllm/CodeMultiTurn-v1 (``python -m rllm_adapters.serve`` with its options)."""
    serve_main(["rllm/CodeMultiTurn-v1", *sys.argv[1:]])


if __name__ == "__main__":
    main()
