"""``python -m adapters.serve ENV_ID``: serve an rllm-envs env over OpenEnv's protocol.

See :mod:`adapters.openenv` for the server, its limits and the client.
"""

from adapters.openenv import main

if __name__ == "__main__":
    main()
