"""``python -m rllm_adapters.serve ENV_ID``: serve an rllm-envs env over OpenEnv's protocol.

See :mod:`rllm_adapters.openenv` for the server, its limits and the client.
"""

from rllm_adapters.openenv import main

if __name__ == "__main__":
    main()
