"""``python -m rllm_agents.store``: see :mod:`rllm_agents.store.cli`."""

import sys

from rllm_agents.store.cli import main

if __name__ == "__main__":
    sys.exit(main())
