"""``python -m adapters.gateway``: see :mod:`adapters.gateway.server`."""

import sys

from adapters.gateway.server import main

if __name__ == "__main__":
    sys.exit(main())
