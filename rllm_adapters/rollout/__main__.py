"""``python -m rllm_adapters.rollout`` (see :mod:`rllm_adapters.rollout.cli`)."""

from rllm_adapters.rollout.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
