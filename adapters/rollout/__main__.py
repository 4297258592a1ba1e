"""``python -m adapters.rollout`` (see :mod:`adapters.rollout.cli`)."""

from adapters.rollout.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
