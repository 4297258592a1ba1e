"""``python -m rllm_adapters.gateway``: see :mod:`rllm_adapters.gateway.server`."""

import sys

from rllm_adapters.gateway.server import main

if __name__ == "__main__":
    sys.exit(main())
